"""Chapter 05's pipeline model: mbarrier rules, the correct ring, the broken variants' diagnoses,
the depth sweep's sanity, the parameters' derivation from the records, figures and exercises."""
import dataclasses
import math

import pytest

from asynctc.core import exercises, records
from asynctc.models import pipeline as pl
from asynctc.models.pipeline import Deadlock, HardwareParams, Mbarrier, MbarrierError, Race, Span

HW = HardwareParams.from_records()
#: Parameter sets that put the ring in different regimes: the records, no latency and near-infinite
#: bandwidth (math-bound), a long latency, a narrow L2 path (bandwidth-bound).
REGIMES = {
    "records": HW,
    "fast_memory": dataclasses.replace(HW, tma_latency=0.0, dram_fraction=1e-6, issue_cycles=1.0),
    "long_latency": dataclasses.replace(HW, tma_latency=5000.0),
    "narrow_l2": dataclasses.replace(HW, l2_bytes_per_clk=12.0),
}


# ---- mbarrier ----------------------------------------------------------------------------------

def test_fresh_barrier_parity():
    b = Mbarrier(2)
    assert (b.phase, b.pending, b.tx) == (0, 2, 0)
    assert not b.test_wait(0) and b.test_wait(1)          # parity 1 = "the preceding phase"


def test_arrivals_complete_a_phase_and_reset():
    b = Mbarrier(2)
    assert not b.arrive()
    assert not b.test_wait(0)
    assert b.arrive()
    assert (b.phase, b.pending) == (1, 2)
    assert b.test_wait(0) and not b.test_wait(1)
    b.arrive(), b.arrive()
    assert b.phase == 2 and not b.test_wait(0) and b.test_wait(1)


def test_tx_count_keeps_the_phase_open_until_the_bytes_land():
    b = Mbarrier(1)
    assert not b.arrive_expect_tx(100)
    assert (b.pending, b.tx) == (0, 100) and not b.test_wait(0)
    assert not b.complete_tx(60)
    assert b.complete_tx(40)
    assert b.phase == 1 and b.tx == 0


def test_bytes_may_land_before_the_expect():
    b = Mbarrier(1)
    assert not b.complete_tx(50)
    assert b.tx == -50
    assert b.arrive_expect_tx(50) and b.phase == 1


def test_illegal_operations_raise():
    with pytest.raises(MbarrierError, match="init count=0"):
        Mbarrier(0)
    with pytest.raises(MbarrierError, match="init count"):
        Mbarrier(1 << 20)
    b = Mbarrier(1)
    b.expect_tx((1 << 20) - 1)
    with pytest.raises(MbarrierError, match="overflow"):
        b.expect_tx(1)
    with pytest.raises(MbarrierError, match="expect_tx"):
        Mbarrier(1).expect_tx(-1)
    c = Mbarrier(1)
    c.complete_tx((1 << 20) - 1)
    with pytest.raises(MbarrierError, match="underflow"):
        c.complete_tx(1)
    d = Mbarrier(1)
    d.arrive_expect_tx(16)                                   # pending 0, tx 16: the phase is open
    with pytest.raises(MbarrierError, match="beyond the count"):
        d.arrive()


def test_model_replays_the_gpu_lifecycle_table():
    """The parities the H200 showed in chapter 03's mbarrier_lifecycle kernel (tma.LIFECYCLE)."""
    from asynctc.tma import LIFECYCLE, LIFECYCLE_OPEN
    full, counter = Mbarrier(1, "full"), Mbarrier(64, "counter")
    steps = [lambda: None, lambda: full.arrive_expect_tx(2048), lambda: full.complete_tx(2048),
             lambda: (full.arrive_expect_tx(2048), full.complete_tx(2048)),
             lambda: [counter.arrive() for _ in range(63)], lambda: counter.arrive(), lambda: None]
    for (desc, name, p0, p1, _), k, step in zip(LIFECYCLE, LIFECYCLE_OPEN, steps, strict=True):
        step()
        bar = full if name == "full" else counter
        assert (int(bar.test_wait(0)), int(bar.test_wait(1))) == (p0, p1), desc
        assert bar.phase == k, desc                     # the table's "open" column


# ---- the correct protocol ------------------------------------------------------------------------

@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize("P", [0, 1])
@pytest.mark.parametrize("S", range(1, 7))
def test_correct_protocol_never_deadlocks_nor_races(S, P, consumers, regime):
    if S == 1 and P == 1:
        with pytest.raises(ValueError, match="stages ≥ 2"):
            pl.simulate(S, P, consumers, 4, REGIMES[regime])
        return
    for K in (1, 2, S, S + 1, 37):
        sc = pl.simulate(S, P, consumers, K, REGIMES[regime])
        assert sc.diagnosis is None, (K, sc.diagnosis)
        tma = {s.k: s for s in sc.spans if s.kind == "tma"}
        mma = [s for s in sc.spans if s.kind == "mma"]
        assert sorted(tma) == list(range(K))
        assert sorted((s.k, s.lane) for s in mma) == [(k, f"wg{w}") for k in range(K)
                                                      for w in range(consumers)]
        for s in mma:
            assert s.stage == s.k % S and s.start >= tma[s.k].end       # read after all bytes landed
        for t, s in tma.items():
            if t >= S:                                                  # written after the last read
                assert s.start >= max(m.end for m in mma if m.k == t - S)
        tc = sorted((s.start, s.end) for s in mma)                      # one Tensor Core queue
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(tc, tc[1:]))
        assert 0 < sc.math_fraction <= 1 and sc.tflops_per_sm > 0


def test_summary_numbers():
    sc = pl.simulate(4, 1, 2, 64, HW)
    flop = 2 * 128 * 256 * 64 * 64
    assert sc.tflops_per_sm == pytest.approx(flop / sc.total_cycles * HW.clock_mhz * 1e6 / 1e12)
    assert sc.tflops_gpu() == pytest.approx(sc.tflops_per_sm * HW.sm_count)
    tiles = 32 * 16                                                   # 4096² in 128×256 tiles
    assert sc.tflops_gpu(4096, 4096) == pytest.approx(sc.tflops_gpu() * tiles / 132 / math.ceil(tiles / 132))
    # math-bound here: wgmma time of 64 k-tiles over the main loop
    assert sc.math_fraction == pytest.approx(64 * 2 * 128 * 256 * 64 / HW.mma_flop_per_clk
                                             / (sc.main_loop[1] - sc.main_loop[0]))
    assert sc.full_wait_cycles == sum(s.end - s.start for s in sc.spans if s.kind == "wait_full")
    assert "TFLOP/s per SM" in sc.summary()


def test_a_schedule_prints_as_one_short_line():
    """A cell that ends in simulate(...) shows the inputs, math_fraction and the diagnosis on one
    line, not every span (reader 4: a 20,000-character dump)."""
    sc = pl.simulate(6, 1, 1, 32, HW)
    text = repr(sc)
    assert "\n" not in text and len(text) < 120
    assert text.startswith("Schedule(S=6, P=1, consumers=1, k_tiles=32, ")
    assert f"math_fraction={sc.math_fraction:.2f}, diagnosis=None" in text
    dead = repr(pl.simulate(4, 1, 2, 8, HW, protocol="swapped_barriers"))
    assert "diagnosis=Deadlock at k-tile 0 on empty[0]" in dead and "math_fraction" not in dead
    assert "diagnosis=Race at k-tile 0 on stage 0" in repr(pl.simulate(4, 1, 2, 8, HW,
                                                                       protocol="full_parity_flipped"))


def test_span_summary_of_plain_tuples():
    """What the GPU trace is compared on: two overlapping wgmmas and a gap in a 0..1000 loop."""
    spans = [("wg0", "wait_full", 0, 0, 0, 100), ("wg0", "mma", 0, 0, 100, 400),
             ("wg1", "mma", 0, 0, 300, 600), ("wg1", "wait_full", 0, 0, 0, 300),
             ("wg0", "mma", 1, 1, 800, 1000), ("tma", "tma", 0, 0, -500, 0), ("tma", "tma", 1, 1, 0, 700)]
    r = pl.span_summary(spans)
    assert r["main_loop"] == (0, 1000)
    assert r["math_fraction"] == pytest.approx((600 - 100 + 200) / 1000)
    assert (r["full_wait_cycles"], r["tma_cycles"], r["mma_cycles"]) == (400, 600, 800 / 3)


def test_bad_arguments_name_the_field():
    for kw, word in ((dict(stages=0), "stages"), (dict(wait_pending=2), "wait_pending"),
                     (dict(consumers=3), "consumers"), (dict(k_tiles=0), "k_tiles"),
                     (dict(protocol="nope"), "protocol")):
        args = dict(stages=2, wait_pending=1, consumers=2, k_tiles=4, params=HW) | kw
        with pytest.raises(ValueError, match=word):
            pl.simulate(**args)


# ---- broken protocols ----------------------------------------------------------------------------

EXPECTED = {  # S=4, P=1, 2 consumers, 16 k-tiles: (type, iteration, barrier, stage, parity, who, words)
    "wrong_empty_parity": (Deadlock, 0, "empty", 0, 0, ("producer",), "2 of its 2 arrivals"),
    "missing_release": (Deadlock, 4, "empty", 0, 0, ("producer",), "1 of its 2 arrivals"),
    "arrive_count_too_big": (Deadlock, 4, "empty", 0, 0, ("producer",), "254 of its 256 arrivals"),
    "expect_tx_too_large": (Deadlock, 0, "full", 0, 0, ("wg0", "wg1"), "tx-count 1024 bytes"),
    "swapped_barriers": (Deadlock, 0, "empty", 0, 0, ("wg0", "wg1"), "2 of its 2 arrivals"),
    "expect_tx_too_small": (Race, 0, None, 0, None, None, "16384 of 49152 bytes landed"),
    "full_parity_flipped": (Race, 0, None, 0, None, None, "0 of 49152 bytes landed"),
    "missing_empty_wait": (Race, 4, None, 0, None, None, "consumer 1's read of k-tile 0"),
}


def test_every_variant_has_an_expectation():
    assert set(EXPECTED) == set(pl.VARIANTS)


@pytest.mark.parametrize("variant", EXPECTED)
def test_variant_diagnosis(variant):
    kind, it, bar, stage, parity, who, words = EXPECTED[variant]
    d = pl.simulate(**pl.BUG_HUNT, params=HW, protocol=variant).diagnosis
    assert type(d) is kind
    assert (d.iteration, d.stage) == (it, stage)
    if kind is Deadlock:
        assert (d.barrier, d.parity, d.who_waits) == (bar, parity, who)
        assert words in d.why
    else:
        assert words in d.what


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("S", range(1, 7))
def test_variants_across_depths(S, regime):
    """The iteration each broken ring stops at follows from S, in every timing regime."""
    P, hw = min(1, S - 1), REGIMES[regime]
    run = lambda v, C=2: pl.simulate(S, P, C, 3 * S + 2, hw, protocol=v).diagnosis  # noqa: E731
    for v in ("missing_release", "arrive_count_too_big"):
        for C in (1, 2):
            d = run(v, C)
            assert isinstance(d, Deadlock) and (d.iteration, d.barrier, d.stage) == (S, "empty", 0)
    d = run("wrong_empty_parity")
    assert (d.iteration, d.barrier, d.parity, d.who_waits[0]) == (0, "empty", 0, "producer")
    assert (run("expect_tx_too_large").barrier, run("swapped_barriers").barrier) == ("full", "empty")
    for v in ("expect_tx_too_small", "full_parity_flipped"):
        assert isinstance(run(v), Race) and run(v).iteration == 0
    d = run("missing_empty_wait")                 # the other warpgroup's read is not ordered...
    assert isinstance(d, Race) and (d.iteration, d.stage) == (S, 0) and "consumer 1" in d.what
    assert run("missing_empty_wait", C=1) is None  # ...while the producer's own wait_group covers its own


def test_diagnoses_tell_the_variants_apart():
    ds = [pl.simulate(**pl.BUG_HUNT, params=HW, protocol=v).diagnosis for v in pl.VARIANTS]
    assert len(set(ds)) == len(ds)


# ---- depth sweep -----------------------------------------------------------------------------------

@pytest.mark.parametrize("regime", REGIMES)
def test_more_stages_never_slower(regime):
    rows = pl.predict_depth_sweep(REGIMES[regime])
    t = [r["tflops"] for r in rows]
    assert [r["stages"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(b >= a * 0.99 for a, b in zip(t, t[1:])), t
    assert [r["fits"] for r in rows] == [True] * 4 + [False] * 2     # 48 KB stages, 227 KB per CTA
    if regime in ("records", "long_latency"):
        assert t[2] > 1.5 * t[0]                                     # pipelining pays off
    if regime == "narrow_l2":                                        # plateau at the L2 → shared bound
        tile, hw, tiles = pl.Tile(), REGIMES[regime], 32 * 16
        bound = (tile.flop_per_ktile / (tile.stage_bytes / hw.l2_bytes_per_clk) * hw.clock_mhz * 1e6 / 1e12
                 * hw.sm_count * tiles / 132 / math.ceil(tiles / 132))
        assert 0.9 * bound <= t[-1] <= bound


def test_prediction_is_bounded_by_the_tensor_cores():
    for r in pl.predict_depth_sweep(HW):
        assert r["tflops"] <= HW.mma_flop_per_clk * HW.sm_count * HW.clock_mhz * 1e6 / 1e12
    assert "| 4 | 1 | 192 | yes |" in pl.H200_PREDICTION


# ---- parameters from the records --------------------------------------------------------------------

def test_params_follow_the_records():
    tma_rec, mma_rec = records.load("tma_copy"), records.load("wgmma")
    best = max(c["gbps"] for c in tma_rec.results["copies"] if c["variant"] == "tma")
    row = max((r for r in mma_rec.results["throughput"] if r["dtype"] == "float16" and r["n"] == 256
               and r["source"] == "smem"), key=lambda r: r["fraction_of_datasheet"])
    assert HW.clock_mhz == row["sm_mhz"]
    assert HW.mma_flop_per_clk == pytest.approx(4096 * row["fraction_of_datasheet"])
    assert HW.tma_bytes_per_clk == pytest.approx(best * 1e9 / 2 / 132 / (row["sm_mhz"] * 1e6))
    assert "tma_copy record" in HW.sources["tma_bytes_per_clk"]
    assert "wgmma record" in HW.sources["mma_flop_per_clk"]
    assert all(HW.sources[f.name] for f in dataclasses.fields(HW) if f.name != "sources")


def test_params_without_records(tmp_path, monkeypatch):
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    hw = HardwareParams.from_records()
    assert hw.tma_bytes_per_clk == HardwareParams.tma_bytes_per_clk
    assert hw.sources["tma_bytes_per_clk"] == "default (no record)"
    assert pl.simulate(3, 1, 2, 8, hw).diagnosis is None


def test_l2_cap_is_checked():
    # chapter 05 §5 lets the learner set the cap: a value the model would silently read as "no cap"
    # (0, a negative number) or cannot use (a string) is refused, naming the field
    assert HardwareParams.from_records(l2_bytes_per_clk=40).l2_bytes_per_clk == 40
    for bad in (0, -5.0, "40", True):
        with pytest.raises(ValueError, match=r"l2_bytes_per_clk=.*must be None \(no cap\)"):
            HardwareParams.from_records(l2_bytes_per_clk=bad)


def test_wave_dram_fraction():
    t = pl.Tile()
    # 4096²: 16 N tiles per row; 132 CTAs span 9 row blocks and all 16 column blocks
    want = (9 * 16384 + 16 * 32768) / (132 * 49152)
    assert pl.wave_dram_fraction(4096, 4096, t, 132) == pytest.approx(want)
    assert pl.wave_dram_fraction(128, 256, t, 132) == 1.0           # one CTA: every byte from DRAM


# ---- figures ------------------------------------------------------------------------------------------

def test_timeline_takes_model_and_plain_spans():
    import matplotlib
    matplotlib.use("Agg")
    sc = pl.simulate(3, 1, 2, 6, HW)
    fig = pl.plot_timeline(sc.spans, title="model")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["consumer 1", "consumer 0", "producer", "TMA"]
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1  # legend outside
    gpu = [("tma", "tma", 0, 0, 0, 900), ("wg0", "mma", 0, 0, 950, 1500), ("wg0", "wait_full", 0, 0, 0, 950)]
    fig = pl.plot_timeline(gpu, title="GPU", clock_mhz=1700.0)
    assert "µs" in fig.axes[0].get_xlabel()
    assert Span._make(gpu[0]).kind == "tma"
    fig = pl.plot_depth_sweep(pl.predict_depth_sweep(HW), measured={1: 300.0, 2: 600.0, 3: 700.0, 4: 710.0})
    assert fig.axes[0].get_xlabel() == "stages S"


def test_ring_figure_draws_the_parities_the_exercises_check():
    import matplotlib
    matplotlib.use("Agg")
    for S in range(1, 7):
        par = pl.ring_parities(S, 3 * S)
        assert par["stage"] == [k % S for k in range(3 * S)]
        assert par["full"] == [exercises.expected("ch05.full_parity", k=k, stages=S) for k in range(3 * S)]
        assert par["empty"] == [exercises.expected("ch05.empty_parity", t=k, stages=S) for k in range(3 * S)]
    fig = pl.plot_ring(4, 12)
    ring, grid = fig.axes[:2]
    assert "S = 4" in ring.get_title() and "S = 4" in grid.get_title()
    assert [t.get_text() for t in grid.texts] == [str(v) for v in pl.ring_parities(4, 12)["full"]
                                                  + pl.ring_parities(4, 12)["empty"]]
    labels = " ".join(t.get_text() for t in ring.texts)
    assert "wait_group(1)" in labels and "empty of k−1" in labels
    hidden = " ".join(t.get_text() for t in pl.plot_ring(4, 12, hide_pending=True).axes[0].texts)
    assert "wait_group(kPending)" in hidden and "k−kPending" in hidden and "wait_group(1)" not in hidden
    asked = pl.plot_ring(4, 12, parities=False)              # chapter 05 §1, before exercise 1
    assert len(asked.axes) == 1 and "S = 4" in asked.axes[0].get_title()
    assert not any(t.get_text() in ("0", "1") for t in asked.axes[0].texts)


# ---- exercises -----------------------------------------------------------------------------------------

def test_parity_exercises(capsys):
    for S in range(1, 7):
        for k in range(3 * S):
            assert exercises.expected("ch05.full_parity", k=k, stages=S) == (k // S) % 2
            assert exercises.expected("ch05.empty_parity", t=k, stages=S) == (k // S + 1) % 2
    assert exercises.check("ch05.full_parity", 1, k=5, stages=4)
    assert not exercises.check("ch05.full_parity", 0, k=5, stages=4)
    assert "phase before" in capsys.readouterr().out
    assert exercises.check("ch05.full_parity", 1, k=5, stages=1)   # one stage: a phase per k-tile
    assert exercises.check("ch05.empty_parity", 1, t=2, stages=4)
    assert not exercises.check("ch05.empty_parity", 0, t=2, stages=4)
    assert "fresh barrier" in capsys.readouterr().out
    assert not exercises.check("ch05.empty_parity", 1, t=4, stages=4)
    assert "waits forever" in capsys.readouterr().out


def test_parities_agree_with_the_simulated_ring():
    """The exercise answers are the parities the correct ring waits on without deadlock."""
    sc = pl.simulate(3, 1, 1, 12, HW)
    assert sc.diagnosis is None and len([s for s in sc.spans if s.kind == "wait_empty"]) == 12


def test_groups_pending_exercise(capsys):
    assert exercises.expected("ch05.groups_pending") == 1
    assert exercises.check("ch05.groups_pending", 1)
    assert not exercises.check("ch05.groups_pending", 0)
    assert "gaps between the wgmma bars" in capsys.readouterr().out
    assert not exercises.check("ch05.groups_pending", 2)            # not a choice


@pytest.mark.parametrize("variant", list(pl.VARIANTS))
def test_find_the_bug_exercise(variant, capsys):
    d = pl.simulate(**pl.BUG_HUNT, protocol=variant).diagnosis
    assert exercises.check("ch05.find_bug", variant, diagnosis=d)
    wrong = next(v for v in pl.VARIANTS if v != variant)
    assert not exercises.check("ch05.find_bug", wrong, diagnosis=d)
    assert "not quite — " in capsys.readouterr().out
    with pytest.raises(AssertionError, match="wrong"):
        exercises.check("ch05.find_bug", wrong, diagnosis=d, solution=True)


def test_frozen_params_reproduce_the_frozen_prediction():
    """The model run on the inputs listed in H200_PREDICTION gives the frozen table's TFLOP/s."""
    import re
    hw = pl.frozen_params()
    assert hw.clock_mhz == 1713 and hw.l2_bytes_per_clk is None and hw.ctas_per_sm == 1
    frozen = {int(s): int(t) for s, t in re.findall(r"^\| (\d) \| \d \| \d+ \| \w+ \| \d+ \| (\d+) \|",
                                                      pl.H200_PREDICTION, re.M)}
    assert len(frozen) == 6
    # the frozen table is the OLD model's: its own schedule reproduces it
    assert {r["stages"]: round(r["tflops"])
            for r in pl.predict_depth_sweep(hw, schedule="model_v1")} == frozen


def test_frozen_v2_prediction_is_what_the_corrected_model_computes():
    """H200_PREDICTION_V2 is prediction_v2_markdown() on the frozen inputs (kernel schedule), and it
    differs from the old model where the schedules differ: wait_group(0) at S = 2."""
    assert pl.prediction_v2_markdown() == pl.H200_PREDICTION_V2
    assert "wait_group(0) 746 (0.87), wait_group(1) 735 (0.85)" in pl.H200_PREDICTION_V2
    hw, kt = pl.frozen_params(), 64
    old = {P: pl.simulate(2, P, 2, kt, hw, schedule="model_v1").math_fraction for P in (0, 1)}
    new = {P: pl.simulate(2, P, 2, kt, hw).math_fraction for P in (0, 1)}
    assert old[1] > old[0] and new[0] > new[1]


@pytest.mark.parametrize("S,P", [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 1), (6, 0)])
def test_kernel_schedule_is_the_kernels(S, P):
    """ring_schedule('kernel'): prologue min(S, T), iteration k releases r = k − P and refills r + S
    — the loop of pipeline.cu, whose source says so (kt < STAGES in the prologue, r + STAGES in the
    refill, r = k − kPending)."""
    from asynctc.core import runtime
    src = (runtime.KERNEL_DIR / "pipeline.cu").read_text()
    for text in ("kt < STAGES && kt < T", "const int r = k - kPending;", "const int t = r + STAGES;",
                 "t < T && !broken", "full[ts], t, m0, n0"):
        assert text in src
    T = 12
    rs = pl.ring_schedule(S, P, T)
    assert rs.prologue == tuple(range(min(S, T)))
    for k in range(T):
        assert rs.release[k] == (k - P if k >= P else None)
        assert rs.refill[k] == (k - P + S if k >= P and k - P + S < T else None)
        assert rs.top[k] is None
    assert rs.load_order() == list(range(T))
    assert all(rs.lead(k) == S - P for k in range(P, T - S + P))


@pytest.mark.parametrize("S,P", [(1, 0), (2, 0), (2, 1), (4, 0), (4, 1)])
def test_model_issues_its_loads_in_the_schedules_iterations(S, P):
    """The simulated producer issues the TMA of k-tile t in the iteration the schedule names:
    after the release of t − S (for t ≥ S), never before it; with the old schedule one
    iteration later when P = 0."""
    T = 10
    for name in pl.SCHEDULES:
        sc = pl.simulate(S, P, 2, T, HW, schedule=name)
        assert sc.diagnosis is None
        rs = pl.ring_schedule(S, P, T, name)
        issued = {s.k: s.start for s in sc.spans if s.kind == "tma"}
        assert sorted(issued) == list(range(T))
        done = {s.k: s.end for s in sc.spans if s.kind == "wait_full" and s.lane == "wg0"}
        for k in range(T):
            t = rs.refill[k]
            if t is not None:
                assert issued[t] >= done[k]                  # after iteration k's full wait
                if k + 1 < T:
                    assert issued[t] <= done[k + 1]          # before iteration k + 1 has its data
        assert all(issued[t] > 0 for t in range(T) if t not in rs.prologue + rs.top[:1])
    if P == 0 and S > 1:
        old, new = pl.ring_schedule(S, 0, T, "model_v1"), pl.ring_schedule(S, 0, T)
        assert old.lead(3) == S - 1 and new.lead(3) == S


def test_ring_schedule_refuses_bad_input():
    for kw, field in ((dict(stages=0, wait_pending=0, k_tiles=4), "stages"),
                      (dict(stages=2, wait_pending=2, k_tiles=4), "wait_pending"),
                      (dict(stages=1, wait_pending=1, k_tiles=4), "wait_pending"),
                      (dict(stages=2, wait_pending=0, k_tiles=0), "k_tiles"),
                      (dict(stages=2, wait_pending=0, k_tiles=4, name="mine"), "name")):
        with pytest.raises(ValueError, match=field):
            pl.ring_schedule(**kw)
    with pytest.raises(ValueError, match="schedule"):
        pl.simulate(2, 1, 2, 4, HW, schedule="mine")


def test_find_bug_exercise_hides_one_variant():
    shown = pl.shown_variants()
    assert len(shown) == len(pl.VARIANTS) - 1
    hidden = (set(pl.VARIANTS) - set(shown)).pop()
    assert pl.mystery_diagnosis() == pl.simulate(**pl.BUG_HUNT, protocol=hidden).diagnosis
    assert pl._find_bug(pl.mystery_diagnosis()) == hidden
    held = pl.shown_variants(hold=True)       # 05c §5's table: 05 ex. 2's wrong parity held back
    assert set(held) == set(shown) and "(t // S) % 2" in shown["wrong_empty_parity"]
    assert "//" not in held["wrong_empty_parity"] and "exercise 2" in held["wrong_empty_parity"]


def test_recorded_gpu_traces_follow_the_kernel_schedule():
    """The GPU's own traces (pipeline record, CTA 0) load in the order ring_schedule('kernel')
    names: the prologue's min(S, T) k-tiles before warpgroup 0's first full wait ends, and k-tile
    t = r + S after warpgroup 0 released r and before it released r + 1 — not the old model's
    k + S − 1 whatever P."""
    rec = records.load("pipeline")
    checked = 0
    for t in rec.results["traces"]:
        if "cta0" not in t:
            continue
        tr, S, P = t["cta0"], t["stages"], t["wait_pending"]
        spans = tr["spans"]
        T = tr["k_tiles"]
        plan = pl.ring_schedule(S, P if S > 1 else 0, T)
        issue = {x["k"]: x["start"] for x in spans if x["kind"] == "tma"}
        rel = {x["k"]: x["end"] for x in spans if x["kind"] == "release" and x["lane"].endswith("wg0")}
        first_full = min(x["end"] for x in spans if x["kind"] == "wait_full" and x["k"] == 0)
        assert all(issue[k] <= first_full for k in plan.prologue if k in issue)
        for k in range(T):
            tt = plan.refill[k]
            r = plan.release[k]
            if tt is None or tt not in issue or r not in rel:
                continue
            assert issue[tt] >= rel[r], (S, P, k, tt)
            if r + 1 in rel:
                assert issue[tt] <= rel[r + 1], (S, P, k, tt)
            checked += 1
    assert checked > 50
