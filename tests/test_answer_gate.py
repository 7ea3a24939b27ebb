"""Cells that show an exercise's answer wait for it: "Run All" in a learner notebook never shows
the kernel's own lines before the learner's check passed (exercises.after / exercises.reveal)."""

import os
import re
from pathlib import Path

import pytest

from asynctc.core import exercises

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(exercises, "_opened", set())
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    monkeypatch.setenv("ASYNCTC_PROGRESS", "off")


def test_held_back_until_the_check_passes(fresh, capsys):
    assert exercises.after("ch02.wait_n") is False
    line = capsys.readouterr().out
    assert "held back until exercise ch02.wait_n passes" in line and "exercises.reveal('ch02.wait_n')" in line
    assert exercises.check("ch02.wait_n", 3, stages=4) is False           # a wrong answer opens nothing
    assert exercises.after("ch02.wait_n") is False
    assert exercises.check("ch02.wait_n", 2, stages=4) is True
    capsys.readouterr()
    assert exercises.after("ch02.wait_n") is True
    assert capsys.readouterr().out == ""                                   # open: the cell shows, quietly
    assert exercises.after("ch08.repair") is False                         # one exercise opens only its own


def test_reveal_opens_and_unknown_names_fail(fresh, capsys):
    exercises.reveal("ch06.consumer_loop")
    assert exercises.after("ch06.consumer_loop") is True
    with pytest.raises(KeyError):
        exercises.after("ch06.no_such_exercise")
    with pytest.raises(KeyError):
        exercises.reveal("ch06.no_such_exercise")


def test_the_build_opens_every_answer_cell(fresh, monkeypatch):
    monkeypatch.setenv("ASYNCTC_BUILDING_NOTEBOOKS", "1")
    assert exercises.after("ch06.consumer_loop") is True


def _answer_cells(src: Path):
    parts = re.split(r"^# %%", src.read_text(), flags=re.M)
    return [p for p in parts if p.startswith(" output answers a prediction")]


@pytest.mark.parametrize("src", sorted(SRC.glob("[0-9][0-9]_*.py")), ids=lambda p: p.stem)
def test_core_listings_that_answer_an_exercise_are_gated(src):
    """Every answer cell of a core lesson that prints source (the kernel's own lines) waits for the
    exercise it answers, and names one the notebook asks."""
    text = src.read_text()
    asked = set(re.findall(r'exercises\.check\("([\w.]+)"', text))
    for cell in _answer_cells(src):
        if not re.search(r"show_source|source_excerpt", cell):
            continue
        gate = re.search(r'if exercises\.after\("([\w.]+)"\):', cell)
        assert gate, f"{src.name}: an answer cell shows source without `if exercises.after(...)`:\n{cell[:300]}"
        assert gate[1] in asked, f"{src.name}: gated on {gate[1]}, which the notebook does not ask"


def test_run_all_in_a_learner_notebook_holds_the_answer_back(tmp_path, monkeypatch):
    """Chapter 06's learner notebook, executed top to bottom in replay as "Run All" would: the cell
    after the unanswered code exercise prints the held-back line, not the kernel's loop."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb_path = ROOT / "notebooks" / "06_warp_specialization.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    for k in ("ASYNCTC_BUILDING_NOTEBOOKS",):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("ASYNCTC_MODE", "replay")
    monkeypatch.setenv("ASYNCTC_PROGRESS", "off")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(nb_path.parent)}}).execute()
    gated = [c for c in nb.cells if c.cell_type == "code" and (
        'exercises.after("ch06.cuda_kloop"' in c.source or "capstone_cell(cuda_kloop" in c.source)]
    assert len(gated) == 3          # §1: what <0> and <1> cost (reader 78); §4: the whole kernel
                                    # with the capstone's loops in it (readers 125–127)
    for cell in gated:
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert "held back until exercise ch06.cuda_kloop passes" in text
        assert "full.wait(" not in text and "ring_wait(" not in text and "wait_bounded(" not in text and "phase ^ 1" not in text
        assert "previous k-tile's stage" not in text and "consumer(s): <0>" not in text


#: Lines that, together in one stored output, are deep dive 06e's exercise answered (rung 3's
#: consumer k-loop: the bounded wait, one group left in flight, the previous k-tile's release).
CONSUMER_LOOP_ANSWER = ("full.wait(pos.stage, pos.phase", "wgmma_wait_group<1>();", "empty.arrive(prev);")


@pytest.mark.parametrize("nb_path", sorted((ROOT / "notebooks").glob("[0-9][0-9]*.ipynb")), ids=lambda p: p.stem)
def test_no_learner_notebook_stores_the_consumer_loop(nb_path):
    """A reader found 07's promote listing printing the whole consumer loop, ungated: 06e's
    exercise answered two chapters later. No stored output of a learner notebook (core or deep
    dive) holds all of that loop's lines."""
    import json
    nb = json.loads(nb_path.read_text())
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + json.dumps(out.get("data", {}))
            assert not all(s in text for s in CONSUMER_LOOP_ANSWER), \
                f"{nb_path.name} cell {i} stores the consumer loop (ch06.consumer_loop's answer)"


#: Lines of a stored output that answer chapter 05's exercise 2 (the producer's refill: its wait on
#: empty with the previous fill's parity) and the producer half of 06's capstone.
PRODUCER_ANSWER = ("empty.wait(pos.stage, pos.phase ^ 1u", "empty.wait(ts, tp ^ 1u")


#: The producer's load as each deep dive's listing would print it. 05c §2 prints the prologue's
#: ``load_stage(ta, tb, base + kt …)`` (no answer), so only the refill's own load counts there.
PRODUCER_LOAD = {"06e_your_gemm_on_the_cpu": "load_stage(ta, tb", "06b_ws_anatomy": "load_stage(ta, tb",
                 "05c_pipeline_variants": "load_stage(ta, tb, base + ts"}


@pytest.mark.parametrize("nb", sorted(PRODUCER_LOAD))
def test_deep_dive_06e_stores_no_answer_of_05_or_06(nb):
    """Readers 105-107: 06e §2's listing printed rung 3's producer loop, ungated. 03, 04 and 05 link
    to 06e ("your GEMM so far"), so it showed 05's exercise 2 and 06's capstone ahead of them. No
    stored output of 06e's learner notebook holds the producer's wait, 05b's parities or the consumer
    loop; its source names no parity formula (§5 breaks the consumers' parity beside the course's).
    05c §2 (linked from 05's exercise 2) prints the kernel's refill step only after that exercise
    passes: its learner notebook stores neither the step's wait nor its load."""
    import json
    from asynctc.pipeline import producer_step
    path = ROOT / "notebooks" / f"{nb}.ipynb"
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        text = "".join(cell["source"]) + "".join(
            "".join(o.get("text", "")) + json.dumps(o.get("data", {})) for o in cell.get("outputs", []))
        assert not any(s in text for s in PRODUCER_ANSWER), f"{path.name} cell {i} shows the producer's wait"
        assert PRODUCER_LOAD[nb] not in text, f"{path.name} cell {i} shows the producer's load"
        assert producer_step.HEAD.strip() not in text, f"{path.name} cell {i} shows 05's refill step"
        if nb.startswith("06"):     # 05c §5 names its broken variants' parities beside 05's own
            assert not re.search(r"//\s*S\s*\+\s*1\)\s*%\s*2", text), f"{path.name} cell {i}: 05b's empty parity"
        # reader 113: 05c §5's table gave exercise 2's wrong parity, (t // S) % 2: the right one by negation
        assert not re.search(r"\(t\s*//\s*S\)\s*%\s*2", text), f"{path.name} cell {i}: 05 ex. 2's wrong parity"
        assert "empty.arrive(prev);" not in text or "wgmma_wait_group<1>" not in text, path.name


def test_05c_holds_back_the_wrong_empty_parity_until_05s_exercise_2_passes():
    """05c §5 prints the wrong_empty_parity variant's parity only from a cell gated on 05's exercise 2
    (its table names the row without it); the solution notebook shows it."""
    import json
    from asynctc.models import pipeline as mp
    formula = mp.VARIANTS["wrong_empty_parity"]
    assert "(t // S) % 2" in formula
    cells = {v: json.loads((ROOT / "notebooks" / v / "05c_pipeline_variants.ipynb").read_text())["cells"]
             for v in (".", "solutions")}
    gated = [c for c in cells["."] if 'mp.VARIANTS["wrong_empty_parity"]' in "".join(c["source"])]
    assert len(gated) == 1 and 'if exercises.after("ch05.producer_step"' in "".join(gated[0]["source"])
    assert "answer" in gated[0]["metadata"]["tags"] and not gated[0]["outputs"]
    shown = ["".join(o.get("text", "")) for c in cells["solutions"] for o in c.get("outputs", [])]
    assert any(formula in t for t in shown)


def test_a_pass_recorded_before_a_restart_still_opens(monkeypatch, tmp_path, capsys):
    """A reader restarted the kernel: chapter 06 said "yours ✓ passed" (from the progress file) but
    held its listing back until the check ran again. A correct attempt on file opens the cell; a
    solution run's or a wrong one's does not."""
    import json
    monkeypatch.setattr(exercises, "_opened", set())
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    f = tmp_path / "progress.jsonl"
    monkeypatch.setenv("ASYNCTC_PROGRESS", str(f))
    rows = [{"exercise": "ch02.wait_n", "status": "wrong", "solution": False},
            {"exercise": "ch03.stage_fill", "status": "correct", "solution": True},
            {"exercise": "ch06.consumer_loop", "status": "correct", "solution": False}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert exercises.after("ch06.consumer_loop") is True
    assert exercises.after("ch02.wait_n") is False
    assert exercises.after("ch03.stage_fill") is False
    assert "held back until exercise ch03.stage_fill passes" in capsys.readouterr().out
