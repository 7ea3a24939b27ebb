"""Chapter 05's pipelined GEMM: CPU tests (every config compiles to sm_90a with the expected SASS,
the device-side descriptor arithmetic matches asynctc.models.descriptors, validation, the comparison, the
trace decoder) and GPU tests (every configuration against float64, the trace)."""
import re
from pathlib import Path

import numpy as np
import pytest

from asynctc.models import descriptors as D
from asynctc import pipeline as P
from asynctc.core import sass
from asynctc.models.layout import SmemTile

LIMIT = 227 * 1024   # sm_90's opt-in shared memory per block (no GPU here to ask)


def representative_configs():
    """Every tile × every stage count that fits (fp16, B K-major, default wait), then per tile
    bf16 with B MN-major, wait_pending 0, the traced kernel and the fp16 output."""
    out = []
    for bm, bn, c in P.TILES:
        for s in P.STAGE_RANGE:
            if P.fits(dict(bm=bm, bn=bn, consumers=c, stages=s), LIMIT):
                out.append(P.PipelineConfig(bm=bm, bn=bn, consumers=c, stages=s))
        out += [P.PipelineConfig(dtype="bfloat16", bm=bm, bn=bn, consumers=c, stages=3, b_major="MN"),
                P.PipelineConfig(bm=bm, bn=bn, consumers=c, stages=3, wait_pending=0),
                P.PipelineConfig(bm=bm, bn=bn, consumers=c, stages=2, trace=True, b_major="MN"),
                P.PipelineConfig(dtype="bfloat16", bm=bm, bn=bn, consumers=c, stages=2,
                                 out_dtype="bfloat16")]
        if P.fits(dict(bm=bm, bn=bn, consumers=c, stages=3, ctas_per_sm=2), LIMIT):
            out.append(P.PipelineConfig(bm=bm, bn=bn, consumers=c, stages=3, ctas_per_sm=2))
    return out


# ---- compile + SASS (CPU) --------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", representative_configs(), ids=lambda c: c.label())
def test_config_compiles_to_the_expected_sass(cfg):
    ck = P.compile_pipeline(cfg)
    text = ck.sass()
    cls = sass.class_counts(text)
    # the k-tile's wgmmas: atoms × 4 k16 steps of m64n{BN}k16, fp32 accumulators, in the loop once
    suffix = "" if cfg.dtype == "float16" else ".BF16"
    shapes = re.findall(r"HGMMA\.64x(\d+)x16\.F32(\.BF16)?\b", text)
    assert shapes and set(shapes) == {(str(cfg.bn), suffix)}
    assert len(shapes) == 4 * cfg.atoms
    gmma = [ln for ln in text.splitlines() if "HGMMA" in ln]
    assert all(("tnspB" in ln) == (cfg.b_major == "MN") for ln in gmma)
    assert not any("tnspA" in ln for ln in gmma)
    # TMA loads (A box + B boxes, prologue and loop), mbarrier init / arrive / try_wait
    assert cls.get("UTMALDG", 0) >= 1 + cfg.b_boxes
    ops = sass.opcode_counts(text)
    assert any(o.startswith("SYNCS.EXCH") for o in ops)                 # mbarrier.init
    assert any(o.startswith("SYNCS.ARRIVE.TRANS64") for o in ops)       # arrive(.expect_tx)
    assert any(o.startswith("SYNCS.PHASECHK") for o in ops)             # try_wait.parity
    # wgmma.wait_group: the loop's argument, then 0 after the loop
    waits = set(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", text))
    assert waits == ({"0x1", "0x0"} if cfg.effective_wait_pending else {"0x0"})
    # no spills, no local memory
    assert ck.resources.spill_stores == 0 and ck.resources.spill_loads == 0
    assert "LDL" not in cls and "STL" not in cls
    assert ck.resources.registers <= 255
    assert ck.resources.registers * cfg.threads * cfg.ctas_per_sm <= 65536   # registers per SM
    assert ("SR_CLOCKLO" in text) == cfg.trace
    assert cfg.smem_total <= LIMIT


def test_prologue_and_loop_each_issue_a_stage():
    """One stage = one arrive.expect_tx and 1 + B-boxes TMA loads; the SASS has them in the
    prologue and in the loop (the MN-major B of a 256-wide tile is 4 boxes)."""
    cfg = P.PipelineConfig(bm=128, bn=256, consumers=2, stages=3, b_major="MN")
    assert cfg.b_boxes == 4
    text = P.compile_pipeline(cfg).sass()
    assert sass.class_counts(text)["UTMALDG"] >= 2 * (1 + cfg.b_boxes)


# ---- the layout model the kernel uses (CPU) ----------------------------------------------------------

@pytest.mark.parametrize("tile", P.TILES)
@pytest.mark.parametrize("b_major", P.B_MAJORS)
@pytest.mark.parametrize("dtype", list(P.DTYPES))
def test_device_descriptors_match_asynctc_descriptors(tile, b_major, dtype):
    """The kernel's descriptor arithmetic (host template + byte offsets >> 4) gives, for every stage,
    warpgroup, m64 atom and k-step, the descriptor asynctc.models.descriptors encodes for the tile at that
    address; and where TMA puts each element is where that descriptor makes wgmma read it."""
    bm, bn, c = tile
    cfg = P.PipelineConfig(dtype=dtype, bm=bm, bn=bn, consumers=c, stages=2, b_major=b_major)
    for base in (0x400, 0x800, 0x3c00):                    # 1024-aligned dynamic bases
        for s in range(cfg.max_stages(LIMIT)):
            stage = base + s * cfg.stage_bytes
            for ks in range(4):
                b_tile = cfg.b_tile
                want = b_tile.descriptor(ks, stage + bm * 128).encode()
                assert P.device_descriptor(cfg, "B", base, s, ks) == want
                for wg in range(c):
                    for atom in range(cfg.atoms):
                        at = stage + (wg * bm // c + 64 * atom) * 128
                        want = cfg.a_tile.descriptor(ks, at).encode()
                        assert P.device_descriptor(cfg, "A", base, s, ks, wg, atom) == want
    # the defines the kernel static_asserts against are the layout model's numbers
    d = cfg.defines
    assert d["A_KSTEP_BYTES"] == 32
    assert d["B_KSTEP_BYTES"] == (2048 if b_major == "MN" else 32)
    assert d["B_BOX_BYTES"] == cfg.b_tile.box_pitch
    # TMA side = descriptor side: A's box (bm rows) read as m64 atoms, B's boxes as B's tile
    base = 0x2000
    a_box = SmemTile(bm, 64, dtype, 128)
    assert cfg.a_box.tensor_map_args()["box_dim"] == (bm, 64)
    for atom in range(bm // 64):
        rows = slice(64 * atom, 64 * atom + 64)
        assert np.array_equal(cfg.a_tile.addresses(base + 64 * atom * 128),
                              base + a_box.offsets()[rows])
    bt = cfg.b_tile
    assert np.array_equal(bt.addresses(base), bt.tma_addresses(base))
    assert cfg.b_box.tensor_map_args()["box_dim"] == ((bn, 64) if b_major == "K" else (64, 64))
    assert cfg.b_boxes * cfg.b_box.size_bytes == bn * 128
    # expect_tx = the bytes of all boxes of a stage
    assert cfg.stage_bytes == a_box.size_bytes + cfg.b_boxes * cfg.b_box.size_bytes


def test_descriptor_templates_are_the_128B_swizzle_layouts():
    cfg = P.PipelineConfig(bm=128, bn=256, b_major="MN")
    da, db = (D.decode(x) for x in cfg.descriptor_templates())
    assert (da.start_address, da.lbo, da.sbo, da.swizzle) == (0, 16, 1024, 128)
    assert (db.start_address, db.lbo, db.sbo, db.swizzle) == (0, 8192, 1024, 128)
    cfg = P.PipelineConfig(bm=128, bn=256, b_major="K")
    db = D.decode(cfg.descriptor_templates()[1])
    assert (db.lbo, db.sbo, db.swizzle) == (16, 1024, 128)


# ---- validation (CPU) ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,field", [
    (dict(dtype="float32"), "dtype"),
    (dict(dtype="float8_e4m3fn"), "dtype"),
    (dict(bk=32), "bk"),
    (dict(bm=192), "bm"),
    (dict(bm=64, consumers=2), "bm"),
    (dict(bn=96), "bn"),
    (dict(bm=128, bn=256, consumers=1), "bn"),          # 256 accumulators per thread
    (dict(bm=256, bn=256, consumers=2), "bn"),
    (dict(consumers=3), "consumers"),
    (dict(stages=0), "stages"),
    (dict(stages=7), "stages"),
    (dict(bm=128, bn=256, stages=5), "stages"),         # 5 × 48 KiB > 227 KiB
    (dict(stages=1, wait_pending=1), "wait_pending"),
    (dict(wait_pending=2), "wait_pending"),
    (dict(b_major="N"), "b_major"),
    (dict(out_dtype="bfloat16"), "out_dtype"),
    (dict(stages=True), "stages"),
    (dict(ctas_per_sm=3), "ctas_per_sm"),
    (dict(bm=128, bn=128, stages=4, ctas_per_sm=2), "ctas_per_sm"),   # 2 × 130 KiB > 228 KiB
])
def test_bad_configs_are_refused_with_the_field(kw, field):
    with pytest.raises(P.PipelineError, match=rf"^{field}="):
        P.PipelineConfig(**kw).validate(LIMIT)


def test_stage_limits_follow_shared_memory():
    assert P.PipelineConfig(bm=128, bn=128, stages=6).validate(LIMIT) is None
    assert P.PipelineConfig(bm=128, bn=256, stages=4).smem_total <= LIMIT
    assert P.PipelineConfig(bm=128, bn=256, stages=4).max_stages(LIMIT) == 4
    assert P.PipelineConfig(bm=128, bn=128, stages=1).wait_pending == 0      # default for one stage
    with pytest.raises(P.PipelineError, match="at most 4 stages"):
        P.PipelineConfig(bm=256, bn=128, stages=5).validate(LIMIT)


def test_operands_are_checked_before_the_gpu():
    cfg = P.PipelineConfig(bm=128, bn=128, consumers=2, stages=2)
    a = np.zeros((256, 128), np.float16)
    bk = np.zeros((128, 128), np.float16)                 # N×K, K-major
    assert P.check_operands(a, bk, cfg) == (256, 128, 128)
    with pytest.raises(P.PipelineError, match=r"^a.dtype="):
        P.check_operands(a.astype(np.float32), bk, cfg)
    with pytest.raises(P.PipelineError, match=r"^M=200"):
        P.check_operands(np.zeros((200, 128), np.float16), bk, cfg)
    with pytest.raises(P.PipelineError, match=r"^K=96"):
        P.check_operands(np.zeros((256, 96), np.float16), np.zeros((128, 96), np.float16), cfg)
    with pytest.raises(P.PipelineError, match=r"^b.shape="):
        P.check_operands(a, np.zeros((128, 192), np.float16), cfg)
    with pytest.raises(P.PipelineError, match=r"^N=192"):
        P.check_operands(a, np.zeros((128, 192), np.float16), cfg.replace(b_major="MN"))
    with pytest.raises(P.PipelineError, match=r"^b="):
        P.check_operands(a, np.zeros((128, 256), np.float16)[:, ::2], cfg)
    with pytest.raises(P.PipelineError, match=r"^b.shape="):
        P.check_operands(a, np.zeros((128, 128, 1), np.float16), cfg)


def test_error_word_is_decoded():
    assert P.decode_error(0) == "ok"
    msg = P.decode_error(1 | ((2 | (3 << 4)) << 8))
    assert "empty barrier of stage 3" in msg and "timed out" in msg
    assert "full barrier of stage 0" in P.decode_error(1 | (1 << 8))


def test_error_word_names_role_barrier_stage_and_k_tile():
    """kernels/ring.cuh ring_wait_tag: code | barrier << 8 | stage << 12 | warpgroup << 16 |
    k-tile << 20 — each field decoded on its own (distinct values, so a swapped shift shows)."""
    word = 1 | (1 << 8) | (5 << 12) | (2 << 16) | (37 << 20)
    assert P.error_fields(word) == {"code": 1, "barrier": 1, "stage": 5, "warpgroup": 2,
                                    "k_tile": 37}
    msg = P.decode_error(word)
    assert "on the full barrier of stage 5 for k-tile 37" in msg
    assert "consumer 2 (warpgroup 2)" in msg and f"{word:#x}" in msg
    msg = P.decode_error(1 | (2 << 8) | (3 << 12) | (0 << 16) | (4095 << 20))
    assert "empty barrier of stage 3 for k-tile 4095" in msg and "the producer (thread 0 of consumer 0)" in msg
    ws = P.decode_error(word, producer_warpgroup=True)      # chapter 06: producer in warpgroup 0
    assert "consumer 1 (warpgroup 2)" in ws
    src = (Path(P.__file__).parent.parent / "kernels" / "ring.cuh").read_text()
    for shift in (4, 8, 12):        # the tag's fields, 8 bits below the word's (code in bits 0-7)
        assert f"<< {shift})" in src


def test_suite_is_registered():
    from asynctc import suites
    assert "pipeline" in suites.SUITES
    assert suites.SUITES["pipeline"][2] == "sm_90a"


def test_correctness_matrix_covers_every_combination():
    cfgs = P.correctness_configs(LIMIT)
    labels = [c.label() for c in cfgs]
    assert len(set(labels)) == len(labels)
    keys = {(c.dtype, (c.bm, c.bn, c.consumers), c.stages, c.b_major, c.wait_pending)
            for c in cfgs if not c.trace and c.out_dtype == "float32"}
    for dt in P.DTYPES:
        for tile in P.TILES:
            for s in P.STAGE_RANGE:
                for bm in P.B_MAJORS:
                    for wp in (0, 1):
                        kw = dict(dtype=dt, bm=tile[0], bn=tile[1], consumers=tile[2], stages=s,
                                  b_major=bm, wait_pending=wp)
                        assert ((dt, tile, s, bm, wp) in keys) == P.fits(kw, LIMIT)
    assert any(c.trace and c.wait_pending == 0 for c in cfgs)
    assert any(c.trace and c.wait_pending == 1 for c in cfgs)
    assert any(c.out_dtype != "float32" for c in cfgs)
    # every check shape is used by every tile, with many k-tiles and more stages than k-tiles
    for cfg in cfgs:
        used = []
        for shp in P.CHECK_SHAPES:
            try:
                P.check_shapes(*shp, cfg)
                used.append(shp)
            except P.PipelineError:
                pass
        assert len(used) == len(P.CHECK_SHAPES), cfg.label()
    assert max(s[2] for s in P.CHECK_SHAPES) // 64 >= 16
    assert min(s[2] for s in P.CHECK_SHAPES) // 64 < max(P.STAGE_RANGE)


# ---- the comparison (CPU) --------------------------------------------------------------------------

def test_elementwise_comparison_fails_on_one_wrong_element(rng):
    m, n, k = 64, 96, 1024
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    # fp32 accumulation in k order: what a correct kernel may produce
    acc = np.zeros((m, n), np.float32)
    for kk in range(0, k, 16):
        acc += (a[:, kk:kk + 16].astype(np.float32) @ b[kk:kk + 16].astype(np.float32))
    ok = P.compare_elementwise(acc, a, b, "float32")
    assert ok.passed and ok.worst < 0.2
    # one k16 step of one element missing (the element where that step's sum is largest: a
    # missing step is then ≥ ~3 standard deviations of a 16-term sum ≈ 12, the bound ≈ 0.3)
    step = a[:, 32:48].astype(np.float32) @ b[32:48].astype(np.float32)
    i, j = np.unravel_index(np.argmax(np.abs(step)), step.shape)
    bad = acc.copy()
    bad[i, j] -= step[i, j]
    c = P.compare_elementwise(bad, a, b, "float32")
    assert not c.passed and c.wrong == 1 and c.first_wrong == (i, j)
    # the bound is tight enough: an error the size of one average product |a·b| (2/π for
    # standard normals) on one element is caught, at K = 1024
    bad = acc.copy()
    bad[3, 3] += 2 / np.pi
    assert not P.compare_elementwise(bad, a, b, "float32").passed
    # one element left unwritten (poison)
    nan = acc.copy()
    nan[63, 95] = np.nan
    c = P.compare_elementwise(nan, a, b, "float32")
    assert not c.passed and c.unwritten == 1
    # fp16 output: the output's rounding is allowed, a one-ulp-of-fp32-output bug is not hidden
    h = acc.astype(np.float16)
    assert P.compare_elementwise(h, a, b, "float16").passed
    h2 = h.copy()
    i, j = np.unravel_index(np.argmax(np.abs(acc)), acc.shape)
    h2[i, j] = -h2[i, j]
    assert not P.compare_elementwise(h2, a, b, "float16").passed


# ---- the trace decoder (CPU) -----------------------------------------------------------------------

@pytest.mark.parametrize("consumers,stages,pending", [(2, 4, 1), (1, 1, 0), (2, 2, 0), (1, 6, 1)])
def test_trace_decoder_on_a_synthetic_buffer(consumers, stages, pending):
    T = 12
    buf = P.synthetic_trace(consumers, T, stages, pending, mma_cycles=100, load_cycles=300)
    assert buf.size == P.TRACE_CTAS * consumers * (P.TRACE_HEADER + 2 * P.TRACE_EVENTS)
    tr = P.decode_trace(buf, consumers, T, stages, pending)
    assert len(tr.ctas) == P.TRACE_CTAS
    assert [c["smid"] for c in tr.ctas] == list(range(P.TRACE_CTAS))
    assert all(c["dropped"] == [0] * consumers for c in tr.ctas)
    assert tr.ctas[1]["globaltimer_ns"] == 5_000_000_001
    assert all(c["sm_mhz"] == pytest.approx(1500, rel=0.01) for c in tr.ctas)
    for c in range(P.TRACE_CTAS):
        for w in range(consumers):
            sp = [s for s in tr.spans if s.lane == f"cta{c}/wg{w}"]
            kinds = [s.kind for s in sp]
            assert kinds.count("wait_full") == T and kinds.count("mma") == T
            assert kinds.count("release") == T - pending and kinds.count("epilogue") == 1
            assert all(s.end >= s.start >= 0 for s in sp)
            assert [s.k for s in sp if s.kind == "mma"] == list(range(T))
            assert all(s.stage == s.k % stages for s in sp if s.kind in ("mma", "wait_full"))
        tma = [s for s in tr.spans if s.lane == f"cta{c}/tma"]
        assert sorted(s.k for s in tma if s.kind == "tma") == list(range(T))
        assert len([s for s in tma if s.kind == "wait_empty"]) == T - stages
    # mma span = issue → the wait that proves it complete (pending = 0: exactly the 100 cycles)
    m = [s for s in tr.spans if s.kind == "mma" and s.lane == "cta0/wg0"]
    if pending == 0:
        assert all(s.end - s.start == 100 for s in m)
    else:
        assert all(s.end - s.start >= 200 for s in m[:-1])   # two k-tiles' math at least
    met = P.trace_metrics(tr)
    assert 0 < met["mean"]["math_in_flight"] <= 1
    assert 0 <= met["mean"]["wait_full_fraction"] < 1
    assert set(met["lanes"]) == {s.lane for s in tr.spans}


def test_trace_metrics_see_the_depth():
    """With loads 3× slower than a k-tile's math, one stage waits most of the time and a deep ring
    keeps the math busy — what the chapter's measured traces are compared with."""
    T = 32
    shallow = P.trace_metrics(P.decode_trace(P.synthetic_trace(1, T, 1, 0, 100, 300), 1, T, 1, 0),
                              ktile_cycles=100)
    deep = P.trace_metrics(P.decode_trace(P.synthetic_trace(1, T, 6, 1, 100, 300), 1, T, 6, 1),
                           ktile_cycles=100)
    assert shallow["mean"]["wait_full_fraction"] > 0.7
    assert shallow["mean"]["math_in_flight"] < 0.3
    assert shallow["mean"]["tensor_utilization"] < 0.3
    assert deep["mean"]["math_in_flight"] > 0.85
    assert deep["mean"]["wait_full_fraction"] < 0.15
    assert deep["mean"]["tensor_utilization"] > 0.85
    assert set(deep["ctas"]) == {f"cta{c}" for c in range(P.TRACE_CTAS)}
    # the utilization is k-tiles × peak cycles over the CTA's loop, exactly
    c0 = deep["ctas"]["cta0"]
    assert c0["tensor_utilization"] == pytest.approx(T * 100 / c0["loop_cycles"])
    cfg = P.PipelineConfig(bm=128, bn=256)
    assert P.ktile_peak_cycles(cfg) == 2 * 128 * 256 * 64 / 4096


def test_trace_decoder_counts_dropped_events():
    buf = P.synthetic_trace(1, 8, 2, 1, events=16, ctas=1)
    tr = P.decode_trace(buf, 1, 8, 2, 1, events=16)
    assert tr.ctas[0]["dropped"][0] > 0 and tr.ctas[0]["events"][0] > 16
    with pytest.raises(P.PipelineError, match="buf.size"):
        P.decode_trace(buf[:-1], 1, 8, 2, 1, events=16)


# ---- GPU -------------------------------------------------------------------------------------------

def _gpu_configs():
    try:
        return P.correctness_configs(LIMIT)
    except Exception:  # noqa: BLE001
        return []


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", _gpu_configs(), ids=lambda c: c.label())
def test_pipeline_matches_float64(cfg, rng):
    for shp in P.CHECK_SHAPES:
        c = P.verify_pipeline(cfg, *shp, rng=rng)
        assert c.passed, c.as_dict()


@pytest.mark.gpu
def test_chapter05s_live_sample_passes():
    lines = P.check_now()
    assert len(lines) == 2 and all(l.startswith("live: ") for l in lines)


@pytest.mark.gpu
@pytest.mark.parametrize("stages,pending", [(1, 0), (2, 1), (4, 0), (4, 1)])
def test_trace_on_the_gpu(stages, pending, rng):
    cfg = P.PipelineConfig(bm=128, bn=256, consumers=2, stages=stages, wait_pending=pending,
                           trace=True)
    m, n, k = 1024, 1024, 2048                               # 32 CTAs, 32 k-tiles
    a, b, bs = P.random_operands(m, n, k, cfg, rng)
    g = P.run_pipeline(a, bs, cfg)
    assert P.compare_elementwise(g.out.to_host(), a, b, "float32").passed
    tr = P.decode_trace(g.trace_buffer(), cfg.consumers, g.k_tiles, stages, pending)
    assert len(tr.ctas) == P.TRACE_CTAS
    assert all(c["dropped"] == [0, 0] for c in tr.ctas)
    assert all(500 < c["sm_mhz"] < 2500 for c in tr.ctas), [c["sm_mhz"] for c in tr.ctas]
    for c in range(P.TRACE_CTAS):
        for w in range(2):
            sp = [s for s in tr.spans if s.lane == f"cta{c}/wg{w}"]
            assert sum(s.kind == "mma" for s in sp) == g.k_tiles
            assert sum(s.kind == "release" for s in sp) == g.k_tiles - cfg.effective_wait_pending
            fulls = sorted((s for s in sp if s.kind == "wait_full"), key=lambda s: s.k)
            assert all(x.end <= y.start for x, y in zip(fulls, fulls[1:]))   # in program order
        tma = [s for s in tr.spans if s.lane == f"cta{c}/tma" and s.kind == "tma"]
        assert len(tma) == g.k_tiles
    met = P.trace_metrics(tr)["mean"]
    assert 0 < met["math_in_flight"] <= 1 and 0 <= met["wait_full_fraction"] < 1


@pytest.mark.gpu
@pytest.mark.parametrize("kind,barrier", [(1, "full"), (2, "empty")])
def test_broken_protocol_ends_in_an_error_not_a_hang(kind, barrier, rng):
    import time
    t0 = time.perf_counter()
    msg = P.run_broken(kind, rng=rng)
    assert f"on the {barrier} barrier" in msg and "timed out" in msg
    assert time.perf_counter() - t0 < 30
    # the context survives: a correct kernel still gives the right answer
    assert P.verify_pipeline(P.PipelineConfig(), 256, 256, 256, rng=rng).passed


def test_run_broken_knows_its_variants():
    with pytest.raises(P.PipelineError, match="^kind=3"):
        P.run_broken(3)


@pytest.mark.gpu
def test_run_pipeline_refuses_bad_inputs_before_launch(rng):
    cfg = P.PipelineConfig(bm=128, bn=128, consumers=2, stages=2)
    a, b, bs = P.random_operands(256, 256, 128, cfg, rng)
    with pytest.raises(P.PipelineError):
        P.run_pipeline(a[:200], bs, cfg)
    with pytest.raises(P.PipelineError):
        P.run_pipeline(a, b.astype(np.float32), cfg)


def test_figures_draw_from_data():
    import matplotlib
    matplotlib.use("Agg")
    tr = P.decode_trace(P.synthetic_trace(2, 16, 3, 1), 2, 16, 3, 1)
    fig = P.plot_trace(tr.as_dict(cta=0), k_max=8)
    assert fig.axes and len(fig.axes[0].patches) > 16
    res = {"sweep": [{"kernel": "cuBLAS", "dtype": "float16", "size": 4096, "tflops": 700.0}] +
           [{"kernel": "pipeline", "dtype": "float16", "size": 4096, "tile": "128x256x64/c2",
             "stages": s, "tflops": 100.0 * s} for s in (1, 2, 3, 4)]}
    fig = P.plot_depth(res)
    assert len(fig.axes[0].lines) == 2
    # /2cta series only when asked for (chapter 05's core leaves them to 05c), then drawn distinct
    # from their base (hollow markers); cuBLAS labelled per dtype
    res["sweep"] += [dict(r, tile="128x256x64/c2/2cta", tflops=r["tflops"]) for r in res["sweep"][1:3]]
    assert len(P.plot_depth(res).axes[0].lines) == 2
    fig = P.plot_depth(res, two_cta=True)
    lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
    two = next(ln for lab, ln in lines.items() if lab.startswith("128x256x64/c2/2cta"))
    assert two.get_markerfacecolor() == "white" and two.get_linestyle() == "--"
    assert any(lab.startswith("cuBLAS float16") for lab in lines)
    table = P.depth_table(res | {"sweep": [dict(r, resident_ctas=3) if r.get("stages") == 1 else r
                                           for r in res["sweep"]]})
    assert " 100 (3)" in table and "³" not in table


def test_model_beside_record_says_where_model_and_record_part():
    rows = lambda ts: [{"stages": s, "tflops": t, "fits": s <= 4} for s, t in enumerate(ts, 1)]  # noqa: E731
    meas = {1: 300.0, 2: 450.0, 3: 670.0, 4: 680.0}
    ok, text = P.model_beside_record(rows([370, 720, 810, 810, 810, 810]), meas)
    assert ok and text.startswith("No cap: model and record both flatten from S = 3, but at S = 4")
    assert "810 TFLOP/s, the record 680 (+19%)" in text and "widest gap is at S = 2, +60%" in text
    ok, text = P.model_beside_record(rows([290, 470, 690, 690, 690, 690]), meas, 40, closest=(41, 0.1))
    assert ok and text.startswith("Cap 40 B/clock/SM:") and "within 5% of the record at every" in text
    assert text.endswith("The best whole cap, 41 B/clock/SM, brings every recorded depth within 10%.")
    # without a cap, the best cap is not given away (the "Try it" asks for it)
    assert "best whole cap" not in P.model_beside_record(rows([370, 720, 810, 810, 810, 810]), meas,
                                                           closest=(41, 0.1))[1]
    # a capped model may part from the record in shape too: said, and not a failed claim
    ok, text = P.model_beside_record(rows([80, 90, 90, 90, 90, 90]), meas, 5)
    assert ok and "the model flattens from S = 2, the record from S = 3" in text
    # without a cap, a shape that parts from the record is the claim the chapter cannot make
    ok, _ = P.model_beside_record(rows([300, 400, 500, 700, 810, 810]), meas)
    assert not ok


def test_cap_evidence_separates_the_fit_from_the_tests():
    """§5's last line: the runs the cap was fitted on are counted apart from the designs that only
    agree with it, and the sentence says what the fit cannot say (the supply, measured elsewhere)."""
    ok, text = P.cap_evidence()
    assert ok and text.startswith("Known: the cap fits its 4 runs within ") and "the fit cannot say" in text
    ok, _ = P.cap_evidence(within=0.01)         # a bar no fit clears: the claim fails
    assert not ok


def test_closest_cap_scans_the_ring_model():
    """The best cap is the one whose worst recorded depth lies nearest the record; a record made
    by the model itself at cap 40 is found again, with no gap."""
    from asynctc.models.pipeline import HardwareParams, predict_depth_sweep
    made = {r["stages"]: r["tflops"] for r in predict_depth_sweep(HardwareParams.from_records(l2_bytes_per_clk=40),
                                                                   stages=[1, 2, 3, 4])}
    cap, gap = P.closest_cap(made, caps=range(30, 51, 5))
    assert cap == 40 and gap < 1e-9


def test_plateau_in_bytes_is_chapter_00s_arithmetic_beside_the_cap():
    """128×256×64 fp16: 48 KiB per 4.19 MFLOP = 48 B/clk/SM at 4096 FLOP/clk/SM; a cap of 42
    allows 0.875 of peak. The sentence holds only while the cap is below the need and the plateau
    below what the cap allows."""
    from asynctc.models.pipeline import HardwareParams
    hw = HardwareParams(clock_mhz=1000.0, sm_count=100)            # peak: 100 × 4096 × 1 GHz = 409.6 TFLOP/s
    ok, text = P.plateau_in_bytes({3: 300.0, 4: 320.0}, 42, hw=hw)
    lines = text.splitlines()
    assert ok and lines[0] == "A 128×256×64 fp16 k-tile: 48 KiB for 4.19 MFLOP (peak at the model's 1000 MHz)"
    assert lines[1].split()[-2:] == ["48", "B/clk/SM"] and lines[2].split()[-2:] == ["42", "B/clk/SM"]
    assert lines[3].endswith(" 0.88") and lines[4].endswith(" 0.78") and "(S = 4, 320 TFLOP/s)" in lines[4]
    assert lines[5] == ("The cap lies 6 B/clk/SM under the need; the plateau 0.09 of peak under what "
                        "the cap allows.")
    assert not P.plateau_in_bytes({4: 380.0}, 42, hw=hw)[0]      # 0.93 of peak: above what 42 allows
    assert not P.plateau_in_bytes({4: 300.0}, 48, hw=hw)[0]      # the cap no longer below the need
    cfg = P.PipelineConfig(bm=128, bn=128, consumers=1, stages=3)  # chapter 00 §4's tile: 64 B/clk/SM
    assert P.plateau_in_bytes({3: 300.0}, 42, cfg, hw)[1].splitlines()[1].split()[-2] == "64"


def test_trace_beside_model_finds_where_the_waits_stop():
    """A recorded CTA (here the ring model itself under a tight L2 cap, stored as a record's
    ``cta0`` entry) beside the uncapped model: its lanes come back as the model names them, the
    figure draws both on one axis, and the sentence holds only when the "GPU" keeps waiting."""
    from asynctc.models import pipeline as mp
    fast = mp.simulate(4, 1, 2, 16)
    slow = mp.simulate(4, 1, 2, 16, mp.HardwareParams.from_records(l2_bytes_per_clk=20))
    as_row = lambda sc: {"stages": 4, "wait_pending": 1, "tile": "128x256x64/c2", "dtype": "float16",  # noqa: E731
                         "size": 4096, "cta0": {"spans": [dict(s._asdict(), lane=f"cta0/{s.lane}")
                                                          for s in sc.spans]}}
    spans = P.timeline_spans(as_row(slow)["cta0"], k_max=6)
    assert {s.lane for s in spans} <= {"tma", "producer", "wg0", "wg1"} and max(s.k for s in spans) == 5
    assert not any(s.kind == "epilogue" for s in spans)
    fig = P.plot_trace_beside_model(as_row(slow), fast, k_max=10)
    assert len(fig.axes) == 2 and fig.axes[0].get_shared_x_axes().joined(*fig.axes)
    # 05 §5's numbers off both: the starved "GPU" waits at every k-tile from S on, the model does not
    gw, _ = P.ktile_waits(as_row(slow), k_max=10)
    mw, _ = P.ktile_waits(fast, k_max=10)
    assert min(gw[k] for k in range(4, 10)) > 50 and max(mw[k] for k in range(4, 10)) < 1


def test_model_bars_mean_what_the_trace_bars_mean():
    """05 §5's model row draws a group as the trace does: issue (its wait on full ended) → the
    wait_group that proves it done (its release); with wait_group(1) a group is still unproved
    when the next one issues, so the bars overlap, as the GPU's do."""
    from asynctc.models import pipeline as mp
    from asynctc.pipeline.figures import issue_to_proof
    ring = mp.simulate(4, 1, 2, 16)
    bars = {(s.lane, s.k): s for s in issue_to_proof(ring, k_max=8) if s.kind == "mma"}
    waits = {(s.lane, s.k): s.end for s in ring.spans if s.kind == "wait_full"}
    released = {(s.lane, s.k): s.start for s in ring.spans if s.kind == "release"}
    assert len(bars) == 16 and all(b.start == waits[x] and b.end == released[x] for x, b in bars.items())
    assert all(bars[w, k].end > bars[w, k + 1].start for w in ("wg0", "wg1") for k in range(7))


def test_depth_table_marks_occupancy_without_superscripts():
    res = {"sweep": [{"kernel": "cuBLAS", "dtype": "float16", "size": 4096, "tflops": 700.0}] +
           [{"kernel": "pipeline", "dtype": "float16", "size": 4096, "tile": "128x128x64/c1",
             "stages": s, "tflops": 513.0, "resident_ctas": 3 if s == 1 else 1} for s in (1, 2)]}
    lines = P.depth_table(res).splitlines()
    assert "513 (3)" in lines[1] and "513    " in lines[1] and "CTAs resident per SM" in lines[-1]


def test_depth_table_filters_dtypes_and_prints_no_nan():
    rows = [{"kernel": "pipeline", "dtype": dt, "size": 4096, "tile": "128x128x64/c1", "stages": 1,
             "tflops": 500.0} for dt in ("float16", "bfloat16")]
    res = {"sweep": [{"kernel": "cuBLAS", "dtype": "float16", "size": 4096, "tflops": 700.0}] + rows}
    both, fp16 = P.depth_table(res).splitlines(), P.depth_table(res, dtypes=("float16",)).splitlines()
    assert len(both) == 3 and len(fp16) == 2 and "bfloat16" not in "\n".join(fp16)
    assert "nan" not in "\n".join(both) and both[2].split()[-1] == "-"     # bf16: no cuBLAS row timed



def test_average_ktile_cycles_from_a_sweep_row():
    """Chapter 05 §5 and deep dive 05b set the traced CTAs' k-tile beside this one number."""
    row = {"kernel": "pipeline", "dtype": "float16", "size": 4096, "tile": "128x256x64/c2", "bm": 128,
           "bn": 256, "bk": 64, "stages": 4, "median_ms": 0.2, "resident_ctas": 1}
    res = {"sweep": [row, dict(row, stages=3, median_ms=0.9)], "sm_count": 132,
           "clocks_after": {"max_sm_mhz": 2000.0}}
    avg = P.average_ktile_cycles(res, "128x256x64/c2", "float16", 4096, 4)
    # 512 tiles on 132 SMs: 4 waves of 64 k-tiles; 0.2 ms at 2000 MHz = 400 000 cycles
    assert avg.ktiles_per_sm == 256 and avg.clock_mhz == 2000.0 and avg.median_ms == 0.2
    assert avg.cycles == pytest.approx(400_000 / 256)
    with pytest.raises(ValueError, match="stages=5"):
        P.average_ktile_cycles(res, "128x256x64/c2", "float16", 4096, 5)
    res["sweep"][0]["resident_ctas"] = 2
    with pytest.raises(ValueError, match="resident_ctas=2"):
        P.average_ktile_cycles(res, "128x256x64/c2", "float16", 4096, 4)

# ---- the ring protocol, executed step by step in Python (CPU) ----------------------------------------

class _Barrier:
    """An mbarrier: expected arrivals per phase, pending arrivals, tx-count, phase number."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self):
        assert self.pending > 0, "more arrivals than the barrier expects in this phase"
        self.pending -= 1
        self._maybe_complete()

    def arrive_expect_tx(self, nbytes):
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        assert self.tx >= 0
        self._maybe_complete()

    def try_wait(self, parity):
        # the phase with parity P has completed iff the current (incomplete) phase has the other one
        return (self.phase & 1) != parity


class Deadlock(AssertionError):
    pass


def _simulate(stages, consumers, wait_pending, k_tiles, rng, bug=None):
    """Run the kernel's loop (kernels/pipeline.cu, same statement order) for one CTA with random
    TMA and wgmma latencies and a random interleaving of the warpgroups. Checks: every wgmma
    reads the k-tile it expects; no TMA overwrites a stage a pending wgmma reads; no deadlock.
    ``bug`` injects a protocol error, to show that the checks catch it: "release_current" (release
    k instead of k − 1 while its group may still run), "parity" (the producer waits on the
    other parity), "prologue" (the prologue fills S − 1 stages and the loop loads k-tile r + S)."""
    S, pend = stages, (0 if stages == 1 else wait_pending)
    full = [_Barrier(1) for _ in range(S)]
    empty = [_Barrier(consumers) for _ in range(S)]
    content = [None] * S                 # k-tile held by each stage (after its TMA landed)
    readers = [set() for _ in range(S)]  # (wg, group id) of wgmma groups still reading the stage
    events = []                          # pending async completions: (kind, payload)
    groups = [[] for _ in range(consumers)]   # per warpgroup: pending groups (stage, id), in order
    consumed = [[] for _ in range(consumers)]
    version = [0]                        # bumped on every state change (deadlock detection)
    gid = [0]

    def issue_tma(s, kt):
        full[s].arrive_expect_tx(1)
        events.append(("tma", (s, kt)))
        version[0] += 1

    def wg_program(w):
        producer = w == 0
        if producer:
            for kt in range(min(S - (bug == "prologue"), k_tiles)):
                issue_tma(kt, kt)
        stage, phase, prev_stage, prev_phase = 0, 0, 0, 0
        for k in range(k_tiles):
            while not full[stage].try_wait(phase):
                yield "wait_full"
            assert content[stage] == k, f"wg{w} k={k}: stage {stage} holds {content[stage]}"
            gid[0] += 1
            readers[stage].add((w, gid[0]))
            groups[w].append((stage, gid[0]))
            events.append(("mma", w))
            consumed[w].append(k)
            version[0] += 1
            while len(groups[w]) > pend:                  # wgmma.wait_group(pend)
                yield "wait_group"
            r = k - pend
            rs, rp = (prev_stage, prev_phase) if pend else (stage, phase)
            if bug == "release_current":
                r, rs, rp = k, stage, phase
            if r >= 0:
                empty[rs].arrive()
                version[0] += 1
                if producer and r + S < k_tiles:
                    while not empty[rs].try_wait(rp ^ (bug == "parity")):
                        yield "wait_empty"
                    issue_tma(rs, r + S)
            prev_stage, prev_phase = stage, phase
            stage += 1
            if stage == S:
                stage, phase = 0, phase ^ 1
        while groups[w]:
            yield "wait_group"

    progs = {w: wg_program(w) for w in range(consumers)}

    def step(w):
        try:
            next(progs[w])
        except StopIteration:
            del progs[w]
            version[0] += 1

    while progs or events:
        if not events:                      # only the warpgroups can move: does any?
            v = version[0]
            for w in list(progs):
                step(w)
            if progs and version[0] == v:
                raise Deadlock(f"deadlock: every warpgroup waits, nothing in flight "
                               f"(S={S}, consumers={consumers}, pending={pend}, T={k_tiles})")
            continue
        choices = [("wg", w) for w in progs] + [("ev", i) for i in range(len(events))]
        kind, x = choices[rng.integers(len(choices))]
        if kind == "wg":
            step(x)
            continue
        what, payload = events.pop(x)
        version[0] += 1
        if what == "tma":
            s, kt = payload
            assert not readers[s], f"TMA of k-tile {kt} overwrites stage {s} while it is read"
            content[s] = kt
            full[s].complete_tx(1)
        else:   # the oldest pending group of warpgroup `payload` completes (in order)
            s, g = groups[payload].pop(0)
            readers[s].discard((payload, g))
    for w in range(consumers):
        assert consumed[w] == list(range(k_tiles))
    return True


@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize("stages", list(P.STAGE_RANGE))
@pytest.mark.parametrize("wait_pending", [0, 1])
def test_ring_protocol_never_deadlocks_or_overwrites(consumers, stages, wait_pending):
    """The kernel's statement order, run with random latencies and interleavings (300 runs per
    case, k-tile counts below, at and above the ring depth)."""
    if stages == 1 and wait_pending == 1:
        pytest.skip("refused by PipelineConfig")
    rng = np.random.default_rng(1000 * stages + 10 * consumers + wait_pending)
    for k_tiles in (1, 2, stages, stages + 1, 3 * stages + 2):
        for _ in range(60):
            assert _simulate(stages, consumers, wait_pending, k_tiles, rng)


@pytest.mark.parametrize("bug,error", [("release_current", "overwrites"), ("parity", "overwrites|deadlock"),
                                       ("prologue", "holds|deadlock")])
def test_ring_simulation_catches_protocol_errors(bug, error):
    rng = np.random.default_rng(7)
    with pytest.raises(AssertionError, match=error):
        for _ in range(200):
            _simulate(3, 2, 1, 10, rng, bug=bug)


def test_the_generic_checks_are_core_checks_under_chapter_05s_names():
    """One copy each, in asynctc.core.checks; the package re-exports them (operand_dims and
    check_out raise PipelineError)."""
    from asynctc.core import checks
    for name in ("np_dtype", "b_shape", "compare_elementwise", "ElementCheck", "OUT_ROUNDING"):
        assert getattr(P, name) is getattr(checks, name), name
    a = np.zeros((128, 64), np.float16)
    with pytest.raises(P.PipelineError, match="b.shape"):
        P.operand_dims(a, np.zeros((64, 32), np.float16), np.dtype(np.float16), "float16", "K")
    with pytest.raises(P.PipelineError, match="out="):
        P.check_out(np.zeros((1, 1), np.float32), 128, 32, np.dtype(np.float32))


def test_config_schedule_is_the_models_schedule():
    """The kernel's Python description and the ring model share one schedule
    (asynctc.models.pipeline.schedule): prologue min(S, T), r + S refilled with r = k − P."""
    from asynctc.models import pipeline as mp
    for s, wp in ((1, 0), (2, 1), (2, 0), (4, 1), (4, 0)):
        cfg = P.PipelineConfig(bm=128, bn=256, consumers=2, stages=s, wait_pending=wp)
        rs = cfg.schedule(16)
        assert rs == mp.ring_schedule(s, cfg.effective_wait_pending, 16, "kernel")
        assert rs.prologue == tuple(range(s))
        assert all(rs.lead(k) == s - cfg.effective_wait_pending for k in range(1, 16 - s))


def test_05_5_lookups_give_the_inline_expressions_values():
    """05 §5's named lookups return what the cell's inline record-digging gave before them."""
    from asynctc import pipeline as pl
    from asynctc.core import records
    from asynctc.models import pipeline as mp
    res = records.load("pipeline").results
    trace = pl.trace_of(res, "128x256x64/c2", stages=4)
    assert pl.loop_clocks_per_ktile(trace, cta=0) == trace["metrics"]["ctas"]["cta0"]["loop_cycles"] / 64
    assert pl.sm_clocks_per_second(res) == res["sm_count"] * mp.HardwareParams.from_records().clock_mhz * 1e6
    ring = mp.simulate(4, 1, 2, 64)
    for run in (trace, ring):
        wait = pl.ktile_waits(run)[0]
        assert pl.full_waits(run, range(4, 12)) == [wait.get(k, 0) for k in range(4, 12)]
    spans = pl.timeline_spans(trace["cta0"])                     # consumer 1's, as 05 §5's line 2 prints them
    assert pl.full_waits(trace, consumer=1) == [next(s.end - s.start for s in spans if (s.lane, s.kind, s.k)
                                                     == ("wg1", "wait_full", k)) for k in range(4, 12)]
