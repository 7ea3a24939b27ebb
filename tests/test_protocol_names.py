"""Chapter 06 §1's table of the ring protocol's names (``W.protocol_names``): each name is one its
exercise's in-scope list gives, and the PTX column is what the kernels' headers issue now."""
import re

import pytest

from asynctc.core import notebook
from asynctc.warp_specialization import rung_notes, whole_kloop
from notebook_cells import cell

#: The markdown cell holding each exercise's in-scope list, by a marker of its text.
IN_SCOPE = {1: "**Exercise 2 — fill the producer's refill step**",
            2: "**Warm-up exercise: both roles' loops in short names.**",
            3: "**Optional exercise: the capstone's consumer loop again, under rung 3's names.**"}


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


@pytest.mark.parametrize("column", sorted(IN_SCOPE))
def test_every_name_is_in_its_exercises_in_scope_list(column):
    text = cell(IN_SCOPE[column])
    names = [n for step in rung_notes.PROTOCOL_STEPS for n in step[column]]
    assert names
    missing = [n for n in names if not _named(n.replace("<N>", "<N>()"), text)]
    assert not missing, f"not in the in-scope list: {missing}"


def test_the_capstones_names_are_those_its_checker_reads():
    for step in rung_notes.PROTOCOL_STEPS:
        for n in step[2]:
            assert n.split("<")[0] in whole_kloop.IN_SCOPE, n


def _opcodes(wrapper):
    ptx = notebook.ptx_instructions(wrapper.partition(" × ")[0]).splitlines()[1].split(None, 1)[1]
    return [i.split()[0].split("<")[0].rstrip(".") for i in ptx.split(";") if i.strip()]


def test_the_ptx_column_is_what_the_headers_issue_now():
    rows = rung_notes.protocol_rows()
    assert [r[0] for r in rows] == [s[0] for s in rung_notes.PROTOCOL_STEPS]
    for (step, *_, helpers, note), row in zip(rung_notes.PROTOCOL_STEPS, rows):
        want = [o + (" × n" if w.endswith(" × n") else "")
                for _, _, calls in helpers for w in calls for o in _opcodes(w)]
        got = row[4]
        for o in want:
            assert o in got.split("; ") or f"{o}, {note}" in got.split("; "), (step, o, got)
        if not helpers:
            assert got == note
    by_step = {r[0]: r[4] for r in rows}
    assert by_step["wait for a fill (full)"] == \
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64, bounded loop"
    assert by_step["issue a k-tile's wgmmas"] == ("wgmma.fence.sync.aligned; wgmma.mma_async.sync.aligned"
                                                 " × n; wgmma.commit_group.sync.aligned")


def test_the_table_prints_every_step_and_its_ptx():
    text = rung_notes.protocol_names()
    for step, *_ in rung_notes.PROTOCOL_STEPS:
        assert step in text
    assert text.count("  → ") == len(rung_notes.PROTOCOL_STEPS)
    assert "06e" not in text.splitlines()[0]                   # 06 §1 shows 05's and the capstone's names
    assert rung_notes.protocol_names(with_06e=True).splitlines()[0].rstrip().endswith("06e")


def test_a_helper_that_stops_calling_its_wrapper_fails(tmp_path, monkeypatch):
    from asynctc.core import runtime
    (tmp_path / "ptx").symlink_to(runtime.KERNEL_DIR / "ptx")
    for f in ("pipeline.cu", "wgmma_ring.cuh", "warp_specialization.cu"):
        (tmp_path / f).symlink_to(runtime.KERNEL_DIR / f)
    (tmp_path / "ring.cuh").write_text((runtime.KERNEL_DIR / "ring.cuh").read_text()
                                       .replace("mbarrier_arrive((*this)[stage])", "(void)stage"))
    monkeypatch.setattr(runtime, "KERNEL_DIR", tmp_path)
    with pytest.raises(ValueError, match="no longer calls mbarrier_arrive"):
        rung_notes.protocol_rows()
