"""Test set-up: the ``gpu`` marker skips, with the reason, wherever kernels cannot run live."""
import os

import pytest

from asynctc.core import runtime

# The tests read the answer key (asynctc.core.exercises.expected); check() writes no progress file.
os.environ.setdefault("ASYNCTC_ANSWER_KEY", "1")
os.environ.setdefault("ASYNCTC_PROGRESS", "off")


def pytest_collection_modifyitems(config, items):
    for item in items:
        m = item.get_closest_marker("gpu")
        if m is None:
            continue
        arch = m.kwargs.get("arch", "sm_90a")
        if not runtime.runs_live(arch):
            item.add_marker(pytest.mark.skip(reason=f"needs a live {arch} GPU: "
                                                    f"{runtime.why_not_live(arch)}"))


@pytest.fixture
def rng():
    """A fresh, unseeded generator: every run draws new inputs (seed printed on failure)."""
    import numpy as np
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


class _EverySymptomSeen(set):
    def __contains__(self, item):
        return True


@pytest.fixture(autouse=True)
def _capstone_hints_at_their_second_tier(request, monkeypatch):
    """A tiered hint (asynctc.core.exercises.tiered: the capstone's and those tests/test_hint_tiers.py
    lists) tells a symptom's rule only at its second miss in a session.
    Tests that quote a rule see the second tier at once; tests marked ``tiers`` see the real
    session state, empty at their start."""
    from asynctc.core import exercises
    monkeypatch.setattr(exercises, "_seen", set() if request.node.get_closest_marker("tiers")
                        else _EverySymptomSeen())


@pytest.fixture
def twice(capsys):
    """``twice(name, answer, **kw)``: check a wrong ``answer`` to exercise ``name`` twice (each must
    fail) and return the two printed outputs: a tiered hint's first miss, then its second."""
    from asynctc.core import exercises

    def run(name, answer, **kw):
        out = []
        for _ in range(2):
            assert not exercises.check(name, answer, **kw)
            out.append(capsys.readouterr().out)
        return out
    return run


@pytest.fixture
def tiers(twice):
    """``tiers(name, answer, symptom, question, rule, **kw)``: :func:`twice`, then the two-tier
    contract: the first miss tells the symptom and the question (and ``SECOND``), never the rule;
    the second, the symptom and the rule, without the question or ``SECOND``. Returns both outputs."""
    from asynctc.core import exercises

    def run(name, answer, symptom, question, rule, **kw):
        one, two = twice(name, answer, **kw)
        assert symptom in one and question in one and exercises.SECOND in one, one
        assert rule not in one, one
        assert symptom in two and rule in two and question not in two and exercises.SECOND not in two, two
        return one, two
    return run
