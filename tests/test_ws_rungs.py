"""Chapter 06 §4: rungs 5–8 one at a time — the cluster ring model behind ch06.cluster_arrivals,
the staging layout behind ch06.store_position, and the generated sentences on rungs 3–8."""

import copy

import numpy as np
import pytest

from asynctc import warp_specialization as W
from asynctc.core import records
from asynctc.models import fragments
from asynctc.models import pipeline as mp
from asynctc.warp_specialization import rung_exercises as RE


# ---- the cluster ring model -----------------------------------------------------------------------

def test_the_kernels_count_runs_clean_and_completes_a_phase_per_fill():
    run = mp.simulate_cluster(4)
    assert run.diagnosis is None and run.arrivals_per_fill == 4
    assert run.fills == [list(range(run.k_tiles))] * 2
    assert run.phases == [[run.k_tiles // run.stages] * run.stages] * 2


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("lag", [0.0, 25.0, 150.0])
def test_too_few_arrivals_refill_a_stage_someone_still_reads(count, lag):
    d = mp.simulate_cluster(count, lag=lag).diagnosis
    assert isinstance(d, mp.Race) and d.iteration == 4 and d.stage == 0
    assert f"completed a phase with {count} arrivals" in d.what


def test_rung_5s_count_races_with_the_peer_cta():
    """With CONSUMERS (rung 5's count) a CTA's own two releases complete the phase; the peer's
    consumers are the ones left out."""
    d = mp.simulate_cluster(2, lag=150.0).diagnosis
    assert isinstance(d, mp.Race) and "of CTA 1" in d.what


@pytest.mark.parametrize("count", [5, 8, 256])
def test_too_many_arrivals_deadlock_at_the_first_refill(count):
    d = mp.simulate_cluster(count).diagnosis
    assert isinstance(d, mp.Deadlock) and d.barrier == "empty" and d.iteration == 4
    assert f"{count - 4} of its {count} never come" in d.why


def test_other_cluster_shapes_and_bad_counts():
    assert mp.simulate_cluster(3, consumers=3, cluster=1).diagnosis is None
    assert mp.simulate_cluster(8, consumers=2, cluster=4).diagnosis is None
    assert isinstance(mp.simulate_cluster(4, consumers=2, cluster=4).diagnosis, mp.Race)
    with pytest.raises(mp.MbarrierError, match="1..2"):
        mp.simulate_cluster(0)
    with pytest.raises(ValueError, match="cluster"):
        mp.simulate_cluster(4, cluster=0)


def test_the_exercise_expects_the_kernels_init_count():
    """ch06.cluster_arrivals' answer is what the kernel's rung-6 build initialises empty[s] with."""
    assert RE._cluster_arrivals(2, 2) == 4
    init = [ln for ln in W.rung_diff("cluster", limit=None).splitlines()
            if ln.startswith("+") and "mbarrier_init(empty[s]" in ln]
    assert init and "CONSUMERS) * CLUSTER" in init[0]
    cfg = W.RUNG_BY_NAME["cluster"].make("float16")
    assert (cfg.consumers, cfg.cluster) == (RE.CONSUMERS, RE.CLUSTER)


# ---- the staging layout ---------------------------------------------------------------------------

def test_stmatrix_staging_agrees_with_the_wgmma_accumulator_model():
    """Every (thread, index): the kernel's stmatrix arithmetic puts the element where the wgmma
    fragment model says it is, each chunk position written exactly once."""
    rows, cols = fragments.wgmma_accumulator(256)
    seen = np.zeros((4, 64, 64), int)
    for t in range(128):
        for j in range(128):
            p = W.staging_position(t, j)
            assert (p["row"], 64 * p["chunk"] + p["col"]) == (rows[t, j], cols[t, j])
            assert p["byte"] == W.stmatrix_offsets(p["warp"], p["address_lane"], p["jl"]) \
                + 2 * (2 * (p["lane"] % 4) + j % 2)
            seen[p["chunk"], p["row"], p["col"]] += 1
    assert (seen == 1).all()


def test_staging_text_and_bad_arguments():
    text = W.staging_text(77, 46)
    assert "Row 43, column 26 of chunk 1" in text and "lane 27, not 13" in text
    with pytest.raises(ValueError, match="thread"):
        W.staging_position(128, 0)
    with pytest.raises(ValueError, match="index"):
        W.staging_position(0, 128)


# ---- the generated sentences ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def ladder():
    return records.load("warp_specialization").results


def test_rung_notes_hold_on_the_record(ladder):
    for n in (5, 6, 7, 8):
        ok, text, numbers = W.rung_note(ladder, n)
        assert ok, text
        assert text.startswith(f"Rung {n}: ") and "prediction" in text


def test_rung_notes_fail_when_the_record_moves(ladder):
    def scaled(rung, f, size=None):
        res = copy.deepcopy(ladder)
        for r in res["ladder"]:
            if r["rung"] == rung and size in (None, r["size"]):
                r["tflops"] *= f
                r["label"] += " (moved)" if rung == 4 else ""
        return res
    assert not W.rung_note(scaled(6, 1.05), 6)[0]             # the cluster bought something
    assert not W.rung_note(scaled(7, 0.95), 7)[0]             # rung 7 no longer the biggest step
    assert not W.rung_note(scaled(8, 1.05), 8)[0]             # outside rung 8's band
    late = copy.deepcopy(ladder)
    t5 = next(t for t in late["traces"] if t["rung"] == 5)
    first = W.trace_numbers(t5)["first_wait_cycles"][0]
    ok, text, _ = W.rung_note(late, 5)
    assert ok and f"first tile waits {first:.0f} cycles" in text


def test_rung_5s_sentence_needs_the_later_tiles_to_wait_less(ladder, monkeypatch):
    from asynctc.warp_specialization import rung_notes
    monkeypatch.setattr(rung_notes, "_trace", lambda res, n: {"first_wait_cycles": [1000.0, 900.0]})
    assert not W.rung_note(ladder, 5)[0]


def test_rung_table_shows_each_rungs_step_and_fraction_of_cublas(ladder):
    text = W.rung_table(ladder, range(5, 9))
    rows = text.splitlines()[2:]
    assert [r.split()[0] for r in rows] == ["5", "6", "7", "8"]
    lad = {(r["size"], r["rung"]): r for r in ladder["ladder"] if r["dtype"] == "float16"}
    step7 = lad[(4096, 7)]["tflops"] / lad[(4096, 6)]["tflops"] - 1
    assert f"{step7:+.1%}" in rows[2] and f"{lad[(4096, 7)]['of_cublas']:.2f}" in rows[2]
    assert "TMA-store epilogue" in rows[2] and rows[2].split()[3] == "6"      # over rung 6
