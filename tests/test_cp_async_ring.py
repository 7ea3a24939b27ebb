"""Chapter 02's model of one thread's cp.async ring (asynctc.cp_async_ring), its timeline figure and
the notebook helpers of asynctc.cp_async_show: CPU only, from the committed record."""
from __future__ import annotations

import pytest

from asynctc import cp_async_figures, cp_async_ring as R


def test_no_wait_reads_the_first_pass_over_the_ring_before_it_lands():
    steps = R.run(4, None)
    assert [s.stale for s in steps] == [True, True, True] + [False] * 5
    assert all(s.held is None for s in steps[:3])
    assert R.gemm_from_reads(steps) > 0.1


@pytest.mark.parametrize("stages", [2, 3, 4, 6])
def test_wait_stages_minus_two_is_the_largest_safe_wait(stages):
    right = R.run(stages, stages - 2, ktiles=12)
    assert not any(s.stale for s in right) and R.gemm_from_reads(right) < 1e-12
    assert any(s.stale for s in R.run(stages, stages - 1, ktiles=12))
    assert R.run(stages, stages - 1, ktiles=12)[0].held is None        # k-tile 0 read at once


def test_wait_zero_is_right_but_waits_for_later_k_tiles_too():
    zero, two = R.run(4, 0), R.run(4, 2)
    assert not any(s.stale for s in zero)
    assert zero[-1].end > two[-1].end
    assert sum(s.start > s.wait_from for s in zero) > sum(s.start > s.wait_from for s in two)


def test_one_stage_waits_for_its_own_copies():
    steps = R.run(1, 0, latency=1000, work=300)
    assert not any(s.stale for s in steps)
    assert [s.start for s in steps[:2]] == [1000, 2300]                 # copy, wait, compute
    assert all(s.stale for s in R.run(1, None))


def test_a_stale_read_holds_the_k_tile_one_ring_earlier():
    steps = R.run(1, None, ktiles=6, latency=250, work=100)
    later = [s for s in steps if s.held is not None and s.stale]
    assert later and all(s.held < s.kt for s in later)


@pytest.mark.parametrize("kw, field", [(dict(stages=0, wait=0), "stages"), (dict(stages=4, wait=-1), "wait"),
                                       (dict(stages=4, wait=True), "wait"), (dict(stages=4, wait=0, ktiles=0), "ktiles"),
                                       (dict(stages=4, wait=0, work=0), "work")])
def test_bad_input_names_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        R.run(**kw)


def test_show_states_what_the_reads_did():
    assert "3 of 8 reads stale" in R.show(4, None)
    assert "every read fresh" in R.show(4, 2)


@pytest.mark.parametrize("stages", [2, 3, 4, 6])
def test_no_safe_or_early_wait_copies_into_a_slot_still_filling(stages):
    """Chapter 02 §2's caption: for every N ≤ S − 1 (even the early-reading S − 1) a slot's next copy
    is issued no earlier than its previous copy landed; with S − 1 exactly then (the bars touch)."""
    for n in range(stages):
        steps = R.run(stages, n, ktiles=12)
        gaps = [b.issued - a.landed for a, b in zip(steps, steps[stages:])]
        assert min(gaps) >= 0, (n, gaps)
        if n == stages - 1:
            assert gaps[0] == 0
    late = R.run(stages, stages, ktiles=12)                    # N = S: the copy starts too soon
    assert late[stages].issued < late[0].landed


def test_timeline_has_a_panel_per_run():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = cp_async_figures.plot_group_timeline({f"N={n}": R.run(4, n) for n in (0, 2, 3)}, stages=4)
    assert len(fig.axes) == 3
    plt.close(fig)


def test_show_helpers_print_and_hold_on_the_record(capsys):
    from asynctc import cp_async_show
    from asynctc.core import records
    rec = records.load("cp_async")
    cp_async_show.checks(rec)
    cp_async_show.overlap(rec, records.load("mma_sync").results["peak"])
    out = capsys.readouterr().out
    assert "checks passed" in out and "Verdict:" in out
