"""Chapter 06's warp-specialized GEMM ladder: CPU tests (every rung compiles to sm_90a with the SASS
it should have, setmaxnreg kept and reported, validation, the rung table, a Python replay of the
producer/consumer protocol across tiles) and GPU tests (every rung against float64)."""
import re
import warnings

import numpy as np
import pytest

from asynctc import pipeline as P
from asynctc import warp_specialization as W
from asynctc.core import runtime, sass

from test_pipeline import Deadlock, _Barrier   # chapter 05's mbarrier model (tests/)

LIMIT = 227 * 1024


def _ws_configs():
    """Every warp-specialized config the ladder and its checks compile (fp16 and bf16)."""
    return [c for c in W.correctness_configs() if isinstance(c, W.WSConfig)]


def _compile_quietly(cfg):
    """Compile with PerformanceWarning as an error (a fresh memo, so a cached cubin's ptxas log
    is replayed too)."""
    runtime._memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", runtime.PerformanceWarning)
        return W.compile_ws(cfg)


# ---- compile + SASS (CPU) --------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", _ws_configs(), ids=lambda c: c.label())
def test_rung_compiles_to_the_expected_sass(cfg):
    ck = _compile_quietly(cfg)
    text = ck.sass()
    cls = sass.class_counts(text)
    suffix = "" if cfg.dtype == "float16" else ".BF16"
    shapes = re.findall(r"HGMMA\.64x(\d+)x16\.F32(\.BF16)?\b", text)
    assert shapes and set(shapes) == {(str(cfg.bn), suffix)}
    assert len(shapes) == 4 * cfg.atoms                       # one k-tile: 4 k16 steps × atoms
    gmma = [ln for ln in text.splitlines() if "HGMMA" in ln]
    assert all(("tnspB" in ln) == (cfg.b_major == "MN") for ln in gmma)
    b_boxes = cfg.pipeline_config().b_boxes
    loads = re.findall(r"UTMALDG\.2D(\.MULTICAST)?\b", text)
    if cfg.cluster == 1:
        assert len(loads) == 1 + b_boxes and not any(loads)
    else:       # A alone, then this CTA's half of B multicast to both CTAs of the cluster
        assert loads.count("") == 1 and loads.count(".MULTICAST") == max(1, b_boxes // 2)
        assert cls.get("UCGABAR", 0) >= 2                          # cluster barrier, start + end
    assert ("UCGABAR" in cls) == (cfg.cluster == 2)
    ops = sass.opcode_counts(text)
    assert any(o.startswith("SYNCS.EXCH") for o in ops)                 # mbarrier.init
    assert any(o.startswith("SYNCS.ARRIVE.TRANS64") for o in ops)       # arrive(.expect_tx)
    assert any(o.startswith("SYNCS.PHASECHK") for o in ops)             # try_wait.parity
    waits = set(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", text))
    assert waits == {"0x1", "0x0"}
    assert ck.resources.spill_stores == 0 and ck.resources.spill_loads == 0
    assert "LDL" not in cls and "STL" not in cls
    assert ck.resources.registers <= W.register_split(cfg)["entry"]
    # rung 7: C through shared memory (stmatrix) and TMA stores; the others store from registers
    assert ("UTMASTG" in cls) == cfg.tma_store and ("STSM" in cls) == cfg.tma_store
    if not cfg.trace:                                # the trace records are plain stores
        assert ("STG" in cls) == (not cfg.tma_store)
    assert ("SR_CLOCKLO" in text) == cfg.trace
    if cfg.tma_store:
        assert cls["UTMASTG"] >= 1 and "FENCE.VIEW.ASYNC.S" in text
    setmax = re.findall(r"USETMAXREG\.(\w+)(?:\.\w+)*\s+(?:\w+,\s*)?(0x[0-9a-f]+)", text)
    if cfg.setmaxnreg:
        got = {(kind, int(v, 16)) for kind, v in setmax}
        assert ("DEALLOC", cfg.producer_regs) in got, setmax
        assert ("TRY_ALLOC", cfg.consumer_regs) in got, setmax
        assert runtime.performance_diagnostics(ck.log) == []
        assert "C7508" not in ck.log
    else:
        assert not setmax


def test_register_split_of_the_setmaxnreg_rung():
    """Rung 3: 384 threads at 1 CTA/SM start with 168 registers (ptxas's count); the producer
    gives back to 40, the consumers take 232: 128·40 + 256·232 = 64512 ≤ 65536."""
    cfg = W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16")
    ck = _compile_quietly(cfg)
    split = W.register_split(cfg)
    assert split == {"entry": 168, "producer": 40, "consumer": 232, "total": 64512}
    assert ck.resources.registers == 168
    text = ck.sass()
    assert re.search(r"USETMAXREG\.DEALLOC\.CTAPOOL 0x28\b", text)
    assert re.search(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL \w+, 0xe8\b", text)
    assert W.sass_registers(ck, cfg) == {"ptxas": 168, "dealloc": [40], "alloc": [232],
                                         "dropped": False}
    rung2 = W.RUNG_BY_NAME["ws"].make("float16")
    assert W.sass_registers(W.compile_ws(rung2), rung2)["dropped"] is False   # none asked


def test_dropped_setmaxnreg_is_a_performance_warning():
    """Without __launch_bounds__ ptxas cannot know the register count at entry and ignores every
    setmaxnreg (C7508): that must surface as a PerformanceWarning, and the SASS has no
    USETMAXREG — the rung's own compile (above) has neither the warning nor the loss."""
    cfg = W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16")
    runtime._memo.clear()
    with pytest.warns(runtime.PerformanceWarning, match=r"C7508.*setmaxnreg.*ignored"):
        ck = W.compile_without_launch_bounds(cfg)
    assert "USETMAXREG" not in ck.sass()
    assert W.sass_registers(ck, cfg)["dropped"] is True         # reported, not silent
    runtime._memo.clear()


def test_persistent_rung_differs_only_in_the_tile_loop():
    a = W.compile_ws(W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16")).sass()
    b = W.compile_ws(W.RUNG_BY_NAME["persistent"].make("float16")).sass()
    ca, cb = sass.class_counts(a), sass.class_counts(b)
    assert ca["HGMMA"] == cb["HGMMA"] and ca["UTMALDG"] == cb["UTMALDG"]
    # the persistent stride reads gridDim.x (constant bank 0, offset 0xc on sm_90); one tile per
    # CTA never does
    assert "c[0x0][0xc]" in b and "c[0x0][0xc]" not in a


# ---- rungs, validation (CPU) ------------------------------------------------------------------------

def test_rung_table():
    assert [r.number for r in W.RUNGS] == list(range(1, len(W.RUNGS) + 1))
    assert len({r.name for r in W.RUNGS}) == len(W.RUNGS)
    for r in W.RUNGS:
        assert r.what and r.prediction and "\n" not in r.what
        for dt in W.DTYPES:
            c = r.make(dt)
            assert c.dtype == dt and c.out_dtype == dt
    assert isinstance(W.RUNGS[0].make("float16"), P.PipelineConfig)
    assert W.RUNGS[0].make("float16") == P.PipelineConfig(bm=128, bn=256, consumers=2, stages=4,
                                                          out_dtype="float16")
    assert W.RUNG_BY_NAME["ws"].make("float16").consumers == 1
    assert W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16").setmaxnreg
    assert W.RUNG_BY_NAME["persistent"].make("float16").persistent
    assert W.RUNG_BY_NAME["cluster"].make("float16").cluster == 2
    assert W.RUNG_BY_NAME["tma_store"].make("float16").tma_store


def test_tile_sweep_fits_the_shared_memory_budget():
    got = {(c.bm, c.bn, c.stages) for c in W.tile_sweep_configs("float16", LIMIT)}
    assert got == {(128, 256, 3), (128, 256, 4), (256, 128, 3), (256, 128, 4),
                   (128, 128, 4), (128, 128, 5), (128, 128, 6)}
    for c in W.tile_sweep_configs("float16", LIMIT):
        assert c.smem_total <= LIMIT
    with pytest.raises(W.WarpSpecializationError, match=r"stages=5.*shared memory"):
        W.WSConfig(bm=128, bn=256, stages=5).validate(LIMIT)


@pytest.mark.parametrize("kw,field,rule", [
    (dict(stages=1), "stages", "deadlock"),
    (dict(stages=7), "stages", "2..6"),
    (dict(producer_regs=44), "producer_regs", "multiple of 8"),
    (dict(producer_regs=16), "producer_regs", "multiple of 8 in 24..256"),
    (dict(producer_regs=176), "producer_regs", "must not raise"),
    (dict(producer_regs=32), "producer_regs", "needs about"),
    (dict(consumer_regs=160), "consumer_regs", "must not lower"),
    (dict(consumer_regs=248), "consumer_regs", "above the SM's 65536"),
    (dict(consumers=1, bn=128), "consumer_regs", "must not lower"),
    (dict(bm=128, bn=256, consumers=1, setmaxnreg=False), "bn", "accumulators"),
    (dict(bm=192), "bm", "64, 128 or 256"),
    (dict(dtype="float32"), "dtype", "must be one of"),
    (dict(b_major="N"), "b_major", "must be one of"),
    (dict(setmaxnreg=1), "setmaxnreg", "bool"),
    (dict(persistent="yes"), "persistent", "bool"),
    (dict(stages=2.0), "stages", "integer"),
    (dict(cluster=3), "cluster", "1 or 2"),
    (dict(cluster=True), "cluster", "integer"),
    (dict(cluster=2, bn=64, bm=128), "bn", "≥ 128"),
    (dict(tma_store=True), "out_dtype", "input dtype"),
    (dict(tma_store=1, out_dtype="float16"), "tma_store", "bool"),
])
def test_bad_configs_are_refused_with_the_field(kw, field, rule):
    with pytest.raises(W.WarpSpecializationError, match=rf"^{field}=.*{rule}"):
        W.WSConfig(**kw)


def test_error_is_a_value_error_and_a_pipeline_error():
    with pytest.raises(ValueError):
        W.WSConfig(stages=1)
    assert issubclass(W.WarpSpecializationError, P.PipelineError)


def test_shapes_and_operands_are_checked_before_the_gpu():
    cfg = W.WSConfig()
    with pytest.raises(W.WarpSpecializationError, match=r"^N=384: .*multiple of 256"):
        W.check_shapes(256, 384, 128, cfg)
    with pytest.raises(W.WarpSpecializationError, match=r"^K=100"):
        W.check_shapes(256, 256, 100, cfg)
    a = np.zeros((256, 128), np.float16)
    b = np.zeros((256, 64), np.float16)                      # N×K with the wrong K
    with pytest.raises(W.WarpSpecializationError, match=r"^b.shape=\(256, 64\)"):
        W.WSGemm(cfg, a, b)
    with pytest.raises(W.WarpSpecializationError, match=r"^a.dtype='float32'"):
        W.WSGemm(cfg, a.astype(np.float32), b)


def test_cluster_shapes_grid_and_boxes():
    cfg = W.RUNG_BY_NAME["cluster"].make("float16")
    with pytest.raises(W.WarpSpecializationError, match=r"^M=384: .*multiple of 2 · 128"):
        W.check_shapes(384, 256, 128, cfg)
    assert W.grid_size(cfg, 4096, 4096, sm_count=132) == 132
    assert W.grid_size(cfg, 4096, 4096, sm_count=133) == 132      # whole clusters
    assert cfg.b_load_box.tensor_map_args()["box_dim"] == (128, 64)  # half of B's 256 rows
    cfg.replace(b_major="MN").validate()          # accepted since the descriptor-address fix
    assert cfg.replace(cluster=1).b_load_box.tensor_map_args()["box_dim"] == (256, 64)
    # the multicast half lands where chapter 05's full box put those rows: K-major rows are 128
    # bytes, so half a box is bn/2 · 128 bytes further, on the 1024-byte swizzle repeat
    assert (cfg.bn // 2 * 128) % 1024 == 0


def test_tma_store_staging_fits_and_is_counted():
    cfg = W.RUNG_BY_NAME["tma_store"].make("float16")
    assert cfg.shmem_bytes == 1024 + 4 * 49152 + 2 * W.STORE_STAGING
    assert cfg.smem_total <= LIMIT
    with pytest.raises(W.WarpSpecializationError, match=r"^stages=4: .*staging"):
        cfg.validate(smem_limit=220 * 1024)


@pytest.mark.parametrize("dtype", list(W.DTYPES))
def test_stmatrix_addresses_are_the_tma_store_layout(dtype):
    """Every lane's stmatrix row address (the kernel's arithmetic, W.stmatrix_offsets) is where the
    128-byte-swizzled 64×64 TMA box keeps that row's 8 columns; together the lanes of the 4 warps
    and 4 stmatrix.x4 per chunk cover every element once, and each 8-lane phase hits distinct
    bank groups (no conflicts)."""
    box = W.c_store_box(W.WSConfig(dtype=dtype, out_dtype=dtype))
    assert box.tensor_map_args()["box_dim"] == (64, 64)
    offs = box.offsets()
    seen = set()
    for w in range(4):
        for block in range(0, 8, 2):
            for lane in range(32):
                m = lane >> 3
                row = 16 * w + (lane & 7) + 8 * (m & 1)
                col = 8 * (block + (m >> 1))
                at = W.stmatrix_offsets(w, lane, block)
                assert list(offs[row, col:col + 8]) == [at + 2 * e for e in range(8)]
                seen.add((row, col))
            for m in range(4):          # one 8×8 matrix = one phase of 8 lanes × 16 bytes
                banks = {(W.stmatrix_offsets(w, 8 * m + r, block) // 16) % 8 for r in range(8)}
                assert len(banks) == 8
    assert len(seen) == 64 * 8


def test_persistent_grid_and_tile_counts():
    cfg = W.RUNG_BY_NAME["persistent"].make("float16")
    assert W.grid_size(cfg, 4096, 4096, sm_count=132) == 132
    assert W.grid_size(cfg, 256, 512, sm_count=132) == 4
    assert W.grid_size(cfg.replace(persistent=False), 4096, 4096, sm_count=132) == 512
    m, n, k = W.PERSISTENT_SHAPE
    assert (m // cfg.bm) * (n // cfg.bn) > 132                  # more tiles than SMs


def test_correctness_matrix_covers_every_rung():
    cc = W.correctness_configs()
    for r in W.RUNGS:
        for dt in W.DTYPES:
            base = r.make(dt)
            for bmaj in W.B_MAJORS:
                for odt in (dt,) if getattr(base, "tma_store", False) else ("float32", dt):
                    assert base.replace(b_major=bmaj, out_dtype=odt) in cc
    for dt in W.DTYPES:
        for c in W.tile_sweep_configs(dt):
            assert c in cc
    pers = [c for c in cc if isinstance(c, W.WSConfig) and c.persistent]
    assert pers and all(W.PERSISTENT_SHAPE in W.shapes_for(c) for c in pers)
    for c in cc:
        assert len(W.shapes_for(c)) >= 2


def test_every_config_has_its_rung():
    for r in W.RUNGS:
        for dt in W.DTYPES:
            assert W.rung_of(r.make(dt)) == r.number
    for c in W.tile_sweep_configs("float16"):
        assert W.rung_of(c) in (3, 4)
    assert {W.rung_of(c) for c in W.correctness_configs()} == {r.number for r in W.RUNGS}
    assert W.parse_rungs("1-5") == (1, 2, 3, 4, 5) and W.parse_rungs("2,7") == (2, 7)
    assert W.parse_rungs(None) == tuple(range(1, len(W.RUNGS) + 1))
    for bad in ("0-3", "x", f"1-{len(W.RUNGS) + 1}"):
        with pytest.raises(W.WarpSpecializationError, match=r"^rungs="):
            W.parse_rungs(bad)


@pytest.mark.parametrize("consumers", [1, 2])
def test_trace_decoder_on_a_synthetic_buffer(consumers):
    """Producer lane: one wait_empty and one tma span per k-tile over all tiles; every consumer:
    wait_full, mma, release per k-tile, one epilogue per tile; the metrics count the CTA's k-tiles
    over its tiles."""
    bn = 128 if consumers == 1 else 256
    cfg = W.WSConfig(bn=bn, consumers=consumers, setmaxnreg=consumers == 2, trace=True,
                     persistent=True)
    assert cfg.defines["TRACE"] == 1
    tiles, k_tiles = 3, 5
    buf = W.synthetic_trace(cfg, tiles, k_tiles)
    assert buf.size == W.trace_words(cfg)
    tr = W.decode_trace(buf, consumers, k_tiles, cfg.stages)
    kinds = {}
    for sp in tr.spans:
        kinds.setdefault((sp.lane, sp.kind), []).append(sp)
    n = tiles * k_tiles
    assert len(kinds[("cta0/tma", "tma")]) == n and len(kinds[("cta0/tma", "wait_empty")]) == n
    for w in range(1, consumers + 1):
        for kind, count in (("wait_full", n), ("mma", n), ("release", n), ("epilogue", tiles)):
            assert len(kinds[(f"cta0/wg{w}", kind)]) == count, (w, kind)
        assert sorted(sp.k for sp in kinds[(f"cta0/wg{w}", "epilogue")]) == [4, 9, 14]
    assert all(sp.end >= sp.start for sp in tr.spans)
    m = W.trace_metrics(tr, cfg)
    assert m["ctas"]["cta0"]["k_tiles"] == n
    assert 0 < m["mean"]["math_in_flight"] <= 1
    with pytest.raises(W.WarpSpecializationError, match=r"^buf.size="):
        W.decode_trace(buf[:-1], consumers, k_tiles, cfg.stages)


def test_traced_rungs_compile_without_spills():
    for n in W.TRACED_RUNGS:
        cfg = W.RUNGS[n - 1].make("float16").replace(trace=True)
        ck = _compile_quietly(cfg)
        assert ck.resources.spill_stores == 0 and "SR_CLOCKLO" in ck.sass()


def test_suite_is_registered():
    from asynctc import suites
    assert "warp_specialization" in suites.SUITES
    assert "asynctc.warp_specialization" in suites.CHAPTER_MODULES
    assert suites.SUITES["ws_limit"] == (W.measure_limit, W.summarize_limit, "sm_90a")
    assert suites.CHAPTER_MODULES.index("asynctc.gemm") == \
        suites.CHAPTER_MODULES.index("asynctc.warp_specialization") + 1


def test_package_files_are_named_in_its_docstring_and_never_import_later_chapters():
    """Chapter 06 is a package whose docstring names each of its files (and lists the 9 rungs of
    RUNGS); no file of it imports the GEMM built on it (asynctc.gemm) or chapter 07
    (asynctc.fp8), not even lazily inside a function."""
    import ast
    from pathlib import Path
    pkg = Path(W.__file__).parent
    files = sorted(p.name for p in pkg.glob("*.py") if p.name != "__init__.py")
    assert files and all(f"``{f}``" in W.__doc__ for f in files), files
    assert len(W.RUNGS) == 9 and all(f"{r.number}. ``{r.name}``" in W.__doc__ for r in W.RUNGS)
    for path in pkg.glob("*.py"):
        tree = ast.parse(path.read_text())
        assert ast.get_docstring(tree), path.name
        for node in ast.walk(tree):
            names = ([node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if isinstance(node, ast.ImportFrom) and node.level:
                names += [a.name for a in node.names]
            for name in names:
                assert not any(part in ("gemm", "fp8") for part in name.split(".")), \
                    f"{path.name} imports {name}"


def test_verify_leaves_fp8_configs_to_chapter_07():
    """An fp8 config is refused by chapter 06's verify (before anything reaches the GPU), naming
    the function that checks it: asynctc.fp8.verify_fp8."""
    cfg = W.WSConfig(dtype="float8_e4m3fn")
    with pytest.raises(W.WarpSpecializationError,
                       match=r"^cfg.dtype='float8_e4m3fn': .*asynctc\.fp8\.verify_fp8"):
        W.verify(cfg, 256, 256, 128)


def test_ladder_rows_pick_the_fastest_tile_and_ratio():
    rows = [{"kernel": "cuBLAS", "dtype": "float16", "size": 4096, "tflops": 600.0}]
    for i, cfg in enumerate(W.rung_configs("float16")):
        rows.append({"kernel": "ch05" if isinstance(cfg, P.PipelineConfig) else "ws",
                     "label": W.config_label(cfg), "dtype": "float16", "size": 4096,
                     **cfg.as_dict(), "tflops": 400.0 + i})
    lad = W.ladder_rows(rows, "float16", 4096, rows[0])
    assert [r["rung"] for r in lad] == list(range(1, len(W.RUNGS) + 1))
    best_sweep = max(r["tflops"] for r in rows[1:] if r["kernel"] == "ws" and not r["persistent"])
    assert lad[3]["tflops"] == best_sweep
    assert lad[0]["of_cublas"] == pytest.approx(400 / 600)
    text = W.ladder_table({"rows": rows, "ladder": lad})
    assert text.splitlines()[-2].startswith(" 4096 float16   8 raster")
    assert text.splitlines()[-1].startswith(" 4096 float16   9 pingpong")

    class Rec:
        results = {"rows": rows, "ladder": lad, "checks": [{"passed": True, "worst_ratio": 0.2}],
                   "broken": {"what": "x", "error": "GEMM: mbarrier wait timed out", "seconds": 2.1},
                   "registers": {"ws": {**W.register_split(W.WSConfig()), "ptxas": 168,
                                        "spill_bytes": 0}}}
    summary = W.summarize_ladder(Rec())
    assert "1/1 checks passed" in summary and "producer 40, consumers 232" in summary
    assert summary.splitlines()[-1] == text.splitlines()[-1]



# ---- the notebook's helpers (chapter 06) -----------------------------------------------------------

def test_protocol_is_read_from_the_kernel_source():
    """Who waits on and arrives on which barrier, as the kernel's source says it; the seed's
    version swaps the waits, and chapter 05's model diagnoses that as a deadlock on empty."""
    from asynctc.models import pipeline as mp
    p = W.protocol_from_source()
    assert p == {"producer waits": "empty", "TMA completes": "full", "consumer waits": "full",
                 "consumer arrives": "empty"}
    assert tuple(p) == W.PROTOCOL_EVENTS
    seed = W.seed_protocol()
    assert (seed["producer waits"], seed["consumer waits"]) == ("full", "empty")
    assert {k: seed[k] for k in ("TMA completes", "consumer arrives")} == \
        {k: p[k] for k in ("TMA completes", "consumer arrives")}
    assert mp.simulate(**mp.BUG_HUNT).diagnosis is None
    d = mp.simulate(**mp.BUG_HUNT, protocol="swapped_barriers").diagnosis
    assert isinstance(d, mp.Deadlock) and d.barrier == "empty" and d.iteration == 0


def test_the_core_lessons_ladder_helpers():
    """The core lesson's ladder at a glance: each rung's step over the rung it is held to, beside
    its frozen prediction (W.PREDICTION_BANDS), with the side on which a miss falls; the summary
    table has a row per rung; the protocol figure has both panels."""
    tflops = (700, 600, 700, 700, 728, 728, 760, 768)
    res = {"ladder": [{"size": 4096, "dtype": "float16", "rung": n, "name": W.RUNGS[n - 1].name,
                       "tflops": t, "of_cublas": t / 800} for n, t in zip(range(1, 9), tflops)]}
    assert W.ladder_ratio(res, 7, 8) == {(4096, "float16"): 768 / 760}
    assert W.span_text({1: 1.04, 2: 0.99}) == "-1.0% … +4.0%"
    p5 = W.prediction_check(res, 5)                     # +4 % over rung 3, predicted +3-8 %
    assert p5["inside"] and p5["outside"] is None and p5["measured"] == "+4.0% … +4.0% over rung 3"
    p7 = W.prediction_check(res, 7)                     # +4.4 % over rung 6, predicted +1-3 %
    assert not p7["inside"] and p7["outside"] == "above it" and p7["predicted"] == "+1.0% … +3.0%"
    p3 = W.prediction_check(res, 3)                     # 0.875 of cuBLAS, predicted 0.90-0.97
    assert p3["outside"] == "below it" and p3["measured"] == "0.88–0.88 of cuBLAS"
    assert W.prediction_check(res, 2)["inside"] and set(W.PREDICTION_BANDS) == set(range(2, 9))
    up = {3: 1.1}                                       # rung 3 at 8192³: 0.9625 of cuBLAS, inside
    two = {"ladder": res["ladder"] + [dict(r, size=8192, of_cublas=r["of_cublas"] * up.get(r["rung"], 1))
                                      for r in res["ladder"]]}
    assert W.prediction_check(two, 3)["outside"] == "partly below it"
    assert W.prediction_check(two, 3)["each"] == {(4096, "float16"): ("0.88 of cuBLAS", "below"),
                                                  (8192, "float16"): ("0.96 of cuBLAS", "inside")}
    text = W.ladder_summary(res).splitlines()
    assert len(text) == 2 + 8 and "4096³ fp16" in text[0] and text[-1].split()[-1] == "0.96"
    import matplotlib
    matplotlib.use("Agg")
    fig = W.plot_protocol()
    assert len(fig.axes) == 2
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_the_core_lessons_guarded_line_on_rung_9():
    """The line on rung 9 holds only while rung 9 is slower than rung 8 everywhere, and names the
    side of its prediction it fell on. (Rungs 2–8: tests/test_ws_design.py runs 06 §3's cells.)"""
    def pp(r98):
        return {"ladder": [{"size": s, "dtype": "float16", "rung": n, "tflops": t}
                           for s, v in r98.items() for n, t in ((8, 700), (9, 700 * v))]}
    ok, text, _ = W.pingpong_note(pp({4096: 0.92, 8192: 0.89}))
    assert ok and "0.89–0.92 of rung 8, below its prediction (0.97–1.03 at 4096³)" in text
    assert "06c §8" in text
    assert "inside its prediction" in W.pingpong_note(pp({4096: 0.98, 8192: 0.97}))[1]
    assert "partly outside" in W.pingpong_note(pp({4096: 0.98, 8192: 0.90}))[1]
    assert not W.pingpong_note(pp({4096: 1.01, 8192: 0.97}))[0]     # rung 9 on top somewhere


def test_protocol_figure_can_leave_one_barrier_open():
    """The core lesson's figure leaves the event its exercise asks open in both panels: that arrow's
    label names no barrier, every other label still does; an unknown event is refused."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = W.plot_protocol(hide="consumer arrives")
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert sum("arrive on ?[s]" in t for t in labels) == 2
    assert not any(t.startswith("arrive on empty") or t.startswith("arrive on full") for t in labels)
    assert sum(t.startswith("wait on") for t in labels) == 4
    plt.close(fig)
    with pytest.raises(ValueError, match="hide='consumer leaves'"):
        W.plot_protocol(hide="consumer leaves")


def test_nonsquare_table_keeps_every_measured_row_and_counts_the_rest():
    rows = [dict(m=64, n=512, k=512, dtype="float16", kernel="cuBLAS", tflops=100.0),
            dict(m=64, n=512, k=512, dtype="float16", kernel="ws", rung=3, skipped="M=64: too small"),
            dict(m=64, n=512, k=512, dtype="float16", kernel="ws", rung=5, skipped="M=64: too small"),
            dict(m=256, n=512, k=512, dtype="float16", kernel="cuBLAS", tflops=300.0),
            dict(m=256, n=512, k=512, dtype="float16", kernel="ws", rung=3, tflops=150.0, of_cublas=0.5),
            dict(m=256, n=512, k=512, dtype="float16", kernel="ws", rung=5, tflops=240.0, of_cublas=0.8)]
    text = W.nonsquare_table(rows).splitlines()
    assert text[0].split()[-2:] == ["rung", "5"] and len(text) == 2 + 2 + 2
    assert text[2].split() == ["64×512×512", "float16", "100", "-", "-"]
    assert text[3].split() == ["256×512×512", "float16", "300", "150", "0.50", "240", "0.80"]
    assert "2 of 4 (shape, dtype, rung) runs" in text[4] and text[5].strip().startswith("2 × M=64: too small (64×512×512; rung 3, rung 5)")


def test_protocol_reader_refuses_an_ambiguous_source(monkeypatch):
    text = W.source()
    bad = text.replace("empty.arrive(prev);", "full.arrive(prev);", 1)
    assert bad != text
    monkeypatch.setattr(W.figures, "source", lambda: bad)      # what protocol_from_source reads
    with pytest.raises(ValueError, match="consumer release"):
        W.protocol_from_source()


def test_register_budget_from_the_cubin():
    b = W.register_budget(W.WSConfig())
    assert (b["threads"], b["entry"], b["producer"], b["consumer"]) == (384, 168, 40, 232)
    assert b["total"] == 128 * 40 + 256 * 232 <= b["sm_limit"] == 65536
    assert b["sass_dealloc"] == [40] and b["sass_alloc"] == [232] and not b["dropped"]
    assert b["accumulators"] == 128 and b["spill_bytes"] == 0
    plain = W.register_budget(W.WSConfig(setmaxnreg=False))
    assert plain["producer"] == plain["consumer"] == plain["ptxas"] <= 168
    assert plain["total"] == plain["ptxas"] * 384 and plain["sass_alloc"] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", runtime.PerformanceWarning)
        ck = W.compile_without_launch_bounds(W.WSConfig())
    lost = W.register_budget(W.WSConfig(), ck)
    assert lost["dropped"] and lost["producer"] == lost["consumer"] == lost["entry"] == ck.resources.registers
    text = W.register_budget_table([b, plain, lost]).splitlines()
    assert len(text) == 4 and "USETMAXREG.DEALLOC [40] .TRY_ALLOC [232]" in text[1]
    assert "64512/64K" in text[1] and "DROPPED (C7508)" in text[3] and "no USETMAXREG" in text[2]


def test_wave_efficiency():
    top = W.RUNG_BY_NAME["raster"].make("float16")         # rung 8: 128×256 tiles
    assert W.wave_efficiency(top, 4096, 4096, 132, 66) == pytest.approx(256 / (66 * 4))
    assert W.wave_efficiency(top, 8448, 2048, 132, 66) == 1.0          # 528 tiles: 4 whole rounds
    assert W.wave_efficiency(W.WSConfig(), 128, 8192, 132) == pytest.approx(32 / 132)
    assert W.wave_efficiency(W.WSConfig(), 4096, 4096, 132) == pytest.approx(512 / (132 * 4))


def test_epilogue_stores_from_the_fragment_and_the_sass():
    """Rung 7's 128×256 tile, 16-bit C of 4096 columns: the register epilogue's warp store is 32
    words of 4 bytes in 8 rows (8 lines, 8 sectors half full), 64 per warp, 512 per tile; the TMA
    store writes 8 chunks of 64 whole 128-byte rows after 128 stmatrix.x4. The SASS of rungs 6
    and 7 has those counts (STG per warp; STSM per warp and UTMASTG per warpgroup)."""
    six, seven = W.RUNG_BY_NAME["cluster"].make("float16"), W.RUNG_BY_NAME["tma_store"].make("float16")
    e = W.epilogue_stores(seven)
    assert e["register"] == {"instructions": 512, "bytes": 128, "lines": 8, "sectors": 8, "fill": 0.5,
                             "line_requests": 4096}
    assert e["tma"] == {"instructions": 8, "bytes": 8192, "lines": 64, "sectors": 256, "fill": 1.0,
                        "line_requests": 512, "stmatrix": 128}
    assert W.epilogue_stores(six)["register"] == e["register"]       # the same tile and stores
    k6, k7 = (sass.class_counts(W.compile_ws(c).sass()) for c in (six, seven))
    assert (8 * k6["STG"], 8 * k7["STSM"], 2 * k7["UTMASTG"]) == (512, 128, 8) and "STG" not in k7
    f32 = W.epilogue_stores(seven.replace(tma_store=False, out_dtype="float32"))
    assert "tma" not in f32 and f32["register"]["bytes"] == 256 and f32["register"]["fill"] == 1.0
    one = W.epilogue_stores(W.RUNGS[1].make("float16"))     # rung 2: one consumer, two m64 atoms
    assert one["register"]["instructions"] == 4 * 2 * 32 and one["tma"]["instructions"] == 4
    lines = W.epilogue_store_lines(seven).splitlines()
    assert len(lines) == 2 and "4096 line requests" in lines[0] and "512 line requests" in lines[1]
    for bad in (dict(n=128), dict(n=True)):
        with pytest.raises(W.WarpSpecializationError, match="n="):
            W.epilogue_stores(seven, **bad)


def test_epilogue_note_reads_the_traces():
    """Chapter 06 §4's sentence: rung 6's and rung 7's traced epilogue per tile, the SASS counts."""
    from asynctc.core import records
    ok, text, numbers = W.epilogue_note(records.load("warp_specialization").results)
    assert ok and numbers["sass_agrees"] and numbers["rung7"] < 0.4 * numbers["rung6"]
    assert "64 STG per warp" in text and "16 STSM per warp" in text
    assert f"{numbers['rung6']:.0f} cycles per tile" in text


def test_smem_traffic_of_a_ktile():
    """128×256×64 fp16, two consumers: the TMA writes 48 KiB per k-tile, the wgmmas read
    2 × 4 × (2 KiB of A + 8 KiB of B) = 80 KiB, in 1024 Tensor Core clocks: 128 B/clk, the whole
    128 B/clk of shared memory. The TMA-store epilogue adds C's tile twice per tile."""
    top = W.RUNG_BY_NAME["raster"].make("float16")         # rung 8
    t = W.smem_traffic(top)
    assert (t["tma_write"], t["wgmma_read"], t["clocks"]) == (48 * 1024, 80 * 1024, 1024)
    assert "epilogue" not in t and t["total"] == 128 * 1024
    assert t["bytes_per_clk"] == 128 and t["of_wall"] == 1.0 and t["bound"] == 1.0
    t4 = W.smem_traffic(top, k=4096)                # 64 k-tiles share 2 × 64 KiB of C
    assert t4["epilogue"] == 2 * 128 * 256 * 2 / 64 and t4["bytes_per_clk"] == 130
    assert t4["bound"] == pytest.approx(128 / 130)
    assert W.smem_traffic(top, k=4033)["epilogue"] == t4["epilogue"]     # ⌈4033 / 64⌉ = 64
    assert "epilogue" not in W.smem_traffic(top.replace(tma_store=False), k=4096)
    wide = W.smem_traffic(W.WSConfig(bm=256, bn=128))      # 4 atoms each re-read 4 KiB of B
    assert wide["wgmma_read"] == 4 * 4 * (2 + 4) * 1024 and wide["bound"] == pytest.approx(128 / 144)
    one = W.smem_traffic(W.RUNGS[1].make("float16"))        # rung 2: 128×128, one consumer
    assert (one["total"], one["clocks"], one["bound"]) == (80 * 1024, 512, 0.8)
    assert W.smem_traffic(top, smem_bytes_per_clk=256)["bound"] == 1.0
    assert W.smem_traffic(top, smem_bytes_per_clk=64)["bound"] == 0.5
    for kw, field in ((dict(k=0), "k"), (dict(k=2.5), "k"), (dict(smem_bytes_per_clk=0), "smem_bytes")):
        with pytest.raises(W.WarpSpecializationError, match=rf"^{field}"):
            W.smem_traffic(top, **kw)
    table = W.smem_traffic_table([("rung 7", top)], k=4096)
    assert "130.0" in table and "0.98" in table
    rows = W.smem_traffic_table([("no K", top), ("K = 8192", top, 8192)], k=4096).splitlines()
    assert "130.0" in rows[1] and "129.0" in rows[2]


def test_descriptor_rows_read_shows_the_cluster_carry():
    """The decode experiment's result from the model: with the unmasked address of the second CTA
    (bit 24 set) box j of an MN-major B is read from K-row k + 2j; with the masked one from k."""
    cfg = W.RUNG_BY_NAME["cluster"].make("float16").replace(b_major="MN")
    desc_b0 = cfg.descriptor_templates()[1]
    base = 0x8000
    addr = (1 << 24) | base
    k = np.arange(16)[None, :]
    j = np.arange(256)[:, None] // 64
    right = W.descriptor_rows_read(cfg, desc_b0 + ((addr & 0x3FFFF) >> 4), base)
    wrong = W.descriptor_rows_read(cfg, desc_b0 + (addr >> 4), base)
    assert right.shape == (256, 16) and (right == k).all()
    assert (wrong == k + 2 * j).all()
    with pytest.raises(W.WarpSpecializationError, match="^desc=.*outside"):
        W.descriptor_rows_read(cfg, desc_b0 + (1 << 25), base)       # LBO + 8 KiB: box j at 2j
    with pytest.raises(W.WarpSpecializationError, match="^cfg.b_major"):
        W.descriptor_rows_read(W.WSConfig(), desc_b0, base)


def _fake_record():
    """A warp_specialization record's results with two ladder rows and one decoded synthetic
    trace (rung 7's config, 3 tiles of 5 k-tiles)."""
    cfg = W.RUNG_BY_NAME["raster"].make("float16").replace(trace=True)
    tr = W.decode_trace(W.synthetic_trace(cfg, 3, 5), cfg.consumers, 5, cfg.stages)
    untraced = cfg.replace(trace=False)
    rows = [{"kernel": "cuBLAS", "dtype": "float16", "size": 4096, "tflops": 700.0},
            {"kernel": "ws", "label": untraced.label(), "dtype": "float16", "size": 4096,
             **untraced.as_dict(), "tflops": 650.0}]
    ladder = [{"rung": 1, "name": "ch05", "dtype": "float16", "size": 4096, "label": "x",
               "tflops": 600.0, "of_cublas": 600 / 700, "prediction": "p"},
              {"rung": 7, "name": "tma_store", "dtype": "float16", "size": 4096,
               "label": untraced.label(), "tflops": 650.0, "of_cublas": 650 / 700, "prediction": "p"}]
    trace = {"rung": 7, "name": "tma_store", "label": cfg.label(), "size": 4096,
             "tflops_traced": 500.0, "metrics": W.trace_metrics(tr, cfg), "cta0": tr.as_dict(cta=0)}
    return {"rows": rows, "ladder": ladder, "traces": [trace]}


def test_trace_numbers_and_table_on_a_synthetic_trace():
    res = _fake_record()
    n = W.trace_numbers(res["traces"][0], res["rows"])
    assert n["tiles"] == 3 and n["untraced_tflops"] == 650.0 and n["traced_tflops"] == 500.0
    assert n["epilogue_cycles"] == pytest.approx(50)          # synthetic_trace's epilogue
    first, later = n["first_wait_cycles"]
    assert first > later >= 0                                  # the first tile waits for an empty ring
    assert n["ktile_cycles"] > 0 and 0 < n["wait_full"] < 1
    line = W.trace_table(res).splitlines()[1]
    assert line.split()[:3] == ["7", "650", "500"]


def test_trace_window_keeps_the_tile_boundary():
    tr = _fake_record()["traces"][0]["cta0"]
    win = W.trace_window(tr, 5, before=2, after=2)
    assert {s["k"] for s in win["spans"]} == {3, 4, 5, 6}
    assert [s["k"] for s in win["spans"] if s["kind"] == "epilogue"] == [4, 4]    # both consumers


def test_the_core_ladder_figure_shows_each_rungs_change_and_prediction():
    """The core lesson's ladder: each bar labelled with what its rung adds, each frozen prediction
    turned into TFLOP/s (a fraction of cuBLAS times cuBLAS; a step times the measured rung it steps
    from) and drawn beside its bar; none for rung 1 or where the reference rung is missing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = _fake_record()
    assert W.predicted_tflops(res, 4096, "float16", 1) is None
    assert W.predicted_tflops(res, 4096, "float16", 7) is None            # no rung 6 in it
    res["ladder"].append({**res["ladder"][1], "rung": 6, "name": "cluster", "tflops": 630.0})
    res["ladder"].append({**res["ladder"][1], "rung": 2, "name": "ws", "tflops": 520.0})
    assert W.predicted_tflops(res, 4096, "float16", 7) == pytest.approx((630 * 1.01, 630 * 1.03))
    assert W.predicted_tflops(res, 4096, "float16", 2) == pytest.approx((0.7125 * 700, 0.7875 * 700))
    fig = W.plot_ladder(res, 4096, "float16", changes=True, predictions=True)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "7 tma_store\n" + W.RUNG_CHANGES[7] and labels[0].startswith("1 ch05\n")
    assert {"predicted before the run", "cuBLAS in this run 700 TFLOP/s"} <= {t.get_text() for t in fig.legends[0].get_texts()}
    assert len(ax.containers) == 1 + 2          # the bars; rungs 2 and 7 (rung 6 steps from 5: absent)
    assert ax.get_xlim()[0] == 0 and "starts at" not in ax.get_xlabel()   # never zoomed (readers 138)
    plt.close("all")


def test_plots_draw_from_a_record():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = _fake_record()
    fig = W.plot_ladder(res, 4096, "float16")
    ax = fig.axes[0]
    assert {t.get_text() for t in ax.get_yticklabels()} == {"1 ch05", "7 tma_store"}
    assert any("cuBLAS in this run 700" in t.get_text() for t in fig.legends[0].get_texts())
    with pytest.raises(KeyError, match="size=8192"):
        W.plot_ladder(res, 8192, "float16")
    fig2 = W.plot_top_trace(res["traces"][0], before=2, after=2)
    assert "rung 7" in fig2.axes[0].get_title()
    plt.close("all")


def test_rung_of_record():
    for cfg in W.correctness_configs():
        row = {"config": W.config_label(cfg), **cfg.as_dict(), "passed": True}
        assert W.rung_of_record(row) == W.rung_of(cfg)

# ---- the protocol, replayed in Python (CPU) --------------------------------------------------------

def _replay(stages, consumers, tiles, k_tiles, rng, bug=None, ctas=1):
    """The kernel's producer and consumer loops (same statement order) for ``ctas`` CTAs of one
    cluster walking ``tiles`` tiles of ``k_tiles`` k-tiles, with random TMA / wgmma latencies and
    interleavings. A stage holds parts: A (own load) and B (with ``ctas`` = 2: two halves, each
    loaded by one CTA and multicast into both, completing on both CTAs' full barriers).
    Checks: every wgmma group reads the (tile, k-tile) it expects in every part; no TMA writes a
    stage a pending group reads (in any CTA it lands in); no deadlock; every consumer finishes
    every tile. ``bug``: "parity" (the producer waits with its own fill parity, not the
    preceding one), "release_current" (release k-tile k instead of k − 1 while its group may run),
    "swapped" (the seed's naming: the producer waits on full and consumers on empty),
    "local_release" (cluster: consumers release only their own CTA's empty barrier, which
    expects both CTAs' releases: the producers starve), "local_empty" (cluster: the same, with
    empty barriers counting only the own CTA's consumers — a peer's multicast may then land in a
    stage still being read)."""
    S, C = stages, ctas
    full = [[_Barrier(1) for _ in range(S)] for _ in range(C)]
    empty = [[_Barrier(consumers * (1 if bug == "local_empty" else C)) for _ in range(S)]
             for _ in range(C)]
    parts = ["A"] + ([f"B{r}" for r in range(C)] if C > 1 else ["B"])
    content = [[dict.fromkeys(parts) for _ in range(S)] for _ in range(C)]
    readers = [[set() for _ in range(S)] for _ in range(C)]
    events = []
    groups = {(c, w): [] for c in range(C) for w in range(consumers)}
    done_tiles = dict.fromkeys(groups, 0)
    version, gid = [0], [0]
    seq = [(t, k) for t in range(tiles) for k in range(k_tiles)]
    tx = {"A": 2, "B": 2, "B0": 1, "B1": 1}

    def producer(c):
        stage, phase = 0, 0
        for item in seq:
            wait_bar, par = ((full, phase) if bug == "swapped"
                             else (empty, phase ^ (bug != "parity")))
            while not wait_bar[c][stage].try_wait(par):
                yield
            full[c][stage].arrive_expect_tx(4)
            events.append(("tma", (stage, item, "A", (c,))))
            if C == 1:
                events.append(("tma", (stage, item, "B", (c,))))
            else:
                events.append(("tma", (stage, item, f"B{c}", tuple(range(C)))))   # multicast
            version[0] += 1
            stage += 1
            if stage == S:
                stage, phase = 0, phase ^ 1

    def release(c, s):
        for d in ((c,) if bug in ("local_release", "local_empty") else range(C)):
            empty[d][s].arrive()

    def consumer(c, w):
        stage, phase = 0, 0
        for t in range(tiles):
            prev = None
            for k in range(k_tiles):
                wait_bar = empty if bug == "swapped" else full
                while not wait_bar[c][stage].try_wait(phase):
                    yield
                got = content[c][stage]
                assert all(got[p] == (t, k) for p in parts), f"cta{c}/c{w}: stage {stage} holds {got}"
                gid[0] += 1
                readers[c][stage].add((w, gid[0]))
                groups[(c, w)].append((stage, gid[0]))
                events.append(("mma", (c, w)))
                version[0] += 1
                while len(groups[(c, w)]) > 1:                    # wgmma.wait_group 1
                    yield
                rel = stage if bug == "release_current" else prev
                if rel is not None:
                    release(c, rel)
                    version[0] += 1
                prev = stage
                stage += 1
                if stage == S:
                    stage, phase = 0, phase ^ 1
            while groups[(c, w)]:                                 # wgmma.wait_group 0
                yield
            if bug != "release_current":
                release(c, prev)
            version[0] += 1
            done_tiles[(c, w)] += 1

    progs = {**{("p", c): producer(c) for c in range(C)},
             **{(c, w): consumer(c, w) for c in range(C) for w in range(consumers)}}

    def step(x):
        try:
            next(progs[x])
        except StopIteration:
            del progs[x]
            version[0] += 1

    while progs or events:
        if not events:
            v = version[0]
            for x in list(progs):
                step(x)
            if progs and version[0] == v:
                raise Deadlock(f"deadlock (S={S}, consumers={consumers}, ctas={C}, "
                               f"tiles={tiles}, T={k_tiles})")
            continue
        choices = [("run", x) for x in progs] + [("ev", i) for i in range(len(events))]
        kind, x = choices[rng.integers(len(choices))]
        if kind == "run":
            step(x)
            continue
        what, payload = events.pop(x)
        version[0] += 1
        if what == "tma":
            s, item, part, dests = payload
            for d in dests:
                assert not readers[d][s], f"TMA of {item} overwrites stage {s} of cta{d} while it is read"
                content[d][s][part] = item
                full[d][s].complete_tx(tx[part])
        else:
            s, g = groups[payload].pop(0)
            readers[payload[0]][s].discard((payload[1], g))
    assert all(v == tiles for v in done_tiles.values())
    return True


class _Barrier(_Barrier):
    """Chapter 05's model, with the tx-count allowed below zero: a peer's multicast may complete
    on this CTA's full barrier before the local arrive.expect_tx (PTX ISA, mbarrier tx-count
    range); the pending arrival keeps the phase open meanwhile."""

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        self._maybe_complete()


@pytest.mark.parametrize("ctas", [1, 2])
@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize("stages", list(W.STAGE_RANGE))
def test_protocol_replay_across_tiles(consumers, stages, ctas):
    rng = np.random.default_rng(100 * stages + 10 * consumers + ctas)
    for tiles, k_tiles in ((1, 1), (1, stages + 1), (3, 2), (3, stages), (2, 2 * stages + 1)):
        for _ in range(15):
            assert _replay(stages, consumers, tiles, k_tiles, rng, ctas=ctas)


@pytest.mark.parametrize("bug,error,ctas", [("parity", "overwrites|deadlock|holds", 1),
                                            ("release_current", "overwrites|more arrivals|holds", 1),
                                            ("swapped", "deadlock|holds|overwrites", 1),
                                            ("local_release", "deadlock", 2),
                                            ("local_empty", "overwrites|holds", 2)])
def test_protocol_replay_catches_errors(bug, error, ctas):
    rng = np.random.default_rng(11)
    with pytest.raises(AssertionError, match=error):
        for _ in range(200):
            _replay(3, 2, 3, 5, rng, bug=bug, ctas=ctas)


# ---- GPU ------------------------------------------------------------------------------------------

def _gpu_configs():
    return W.correctness_configs()


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", _gpu_configs(), ids=W.config_label)
def test_rung_matches_float64(cfg, rng):
    for shp in W.shapes_for(cfg):
        c = W.verify(cfg, *shp, rng=rng)
        assert c.passed, c.as_dict()


@pytest.mark.gpu
def test_broken_protocol_ends_in_an_error_not_a_hang(rng):
    msg = W.run_broken(1, rng=rng)
    assert "mbarrier wait timed out" in msg and "empty barrier" in msg
    c = W.verify(W.WSConfig(), 256, 256, 128, rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
def test_run_ws_refuses_bad_inputs_before_launch(rng):
    cfg = W.WSConfig()
    a, b, bs = P.random_operands(256, 256, 128, cfg.pipeline_config(), rng)
    with pytest.raises(W.WarpSpecializationError, match=r"^M=64: "):
        W.run_ws(a[:64], bs, cfg)
    with pytest.raises(W.WarpSpecializationError, match=r"^M=128: .*cluster=2"):
        W.run_ws(a[:128], bs, W.RUNG_BY_NAME["cluster"].make("float16").replace(out_dtype="float32"))


def test_cluster_descriptor_address_is_masked():
    """The bug found on the H200: in a cluster launch the second CTA's shared-window address has bit
    24 set; added unmasked (addr >> 4) into a descriptor template it carries into the LBO field,
    +256 bytes — each 64-column box of an MN-major B read 2 K-rows late (decoded on the GPU). The
    kernel masks the address to the 18-bit shared-memory offset before adding it."""
    from asynctc.models import descriptors as dsc
    cfg = W.RUNG_BY_NAME["cluster"].make("float16").replace(b_major="MN")
    desc_b0 = cfg.pipeline_config().descriptor_templates()[1]
    addr = (1 << 24) | 0x8000                       # rank 1's address of a stage's B tile
    right = dsc.decode(desc_b0 + ((addr & 0x3FFFF) >> 4))
    wrong = dsc.decode(desc_b0 + (addr >> 4))
    assert right.start_address == 0x8000
    assert wrong.start_address == right.start_address          # the start field looks fine …
    assert wrong.lbo == right.lbo + 256                        # … the box stride is not
    src = W.source()
    assert "wgmma_desc_at(desc_a0" in src and "wgmma_desc_at(desc_b0" in src
    assert "(addr & 0x3FFFFu) >> 4" in (runtime.KERNEL_DIR / "ptx" / "common.cuh").read_text()


# ---- the tile chosen by the shape (shape_tile: matmul_config's, and the FP8 non-square configs') --

@pytest.mark.parametrize("m, n, sm, bm, consumers, bn, cluster", [
    (64, 8192, 132, 64, 1, 64, 1),        # thin M: one m64 atom, 128 tiles of 64 columns
    (1, 8192, 132, 64, 1, 64, 1),
    (65, 8192, 132, 128, 2, 64, 1),       # one 128-row tile row: no cluster partner
    (128, 8192, 132, 128, 2, 64, 1),
    (256, 8192, 132, 128, 2, 128, 2),     # 2 × 64 tiles of 128 columns fill 0.97 of the SMs
    (1024, 8192, 132, 128, 2, 256, 2),
    (8192, 8192, 132, 128, 2, 256, 2),
    (128, 65536, 132, 128, 2, 256, 1),    # bn 256 fills the waves, but one tile row: cluster 1
    (256, 2048, 132, 128, 2, 64, 1),      # two tile rows, bn 64: a multicast half is not a box
    (64, 1024, 4, 64, 1, 256, 1),         # few SMs: the widest tile fills them
])
def test_shape_tile_thin_m_and_wave_fill(m, n, sm, bm, consumers, bn, cluster):
    t = W.shape_tile(m, n, sm)
    assert t == {"bm": bm, "consumers": consumers, "bn": bn, "cluster": cluster}
    rows = -(-m // bm)
    # bn is the widest of 256, 128 that fills the waves to WAVE_FILL, else 64
    for wider in (256, 128):
        if wider > bn:
            assert W.wave_fill(rows * -(-n // wider), sm) < W.WAVE_FILL
    assert bn == 64 or W.wave_fill(rows * -(-n // bn), sm) >= W.WAVE_FILL


@pytest.mark.parametrize("m, n, k", [(64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192),
                                     (1000, 1000, 64), (129, 4097, 65), (4096, 4096, 4096),
                                     (3, 5, 8)])
def test_matmul_config_takes_its_tile_from_shape_tile(m, n, k, monkeypatch):
    from asynctc.gemm import config as _GC
    monkeypatch.setattr(_GC, "DECISIONS", {c: {} for c in _GC.SHAPE_CLASSES})   # the rule alone
    from asynctc import gemm as G
    for dt in W.DTYPES:
        c = G.matmul_config(m, n, k, dt, "NxK", sm_count=132)
        assert W.shape_tile(m, n, 132) == {"bm": c.bm, "consumers": c.consumers, "bn": c.bn,
                                           "cluster": c.cluster}


@pytest.mark.parametrize("args, field", [((0, 8, 132), "M"), ((8, 0, 132), "N"),
                                         ((8, 8, 0), "sm_count"), ((8.0, 8, 132), "M")])
def test_shape_tile_refuses_bad_arguments(args, field):
    with pytest.raises(W.WarpSpecializationError, match=rf"^{field}=.*positive integer"):
        W.shape_tile(*args)


def test_most_stages_takes_the_most_that_fit_and_raises_other_rules():
    c = W.most_stages(dict(dtype="float16", bm=128, bn=256, consumers=2, persistent=True,
                           cluster=2, tma_store=True, out_dtype="float16"))
    assert c.stages == 4           # 4 × 48 KiB + 2 × 16 KiB staging: 5 would not fit 227 KiB
    with pytest.raises(W.WarpSpecializationError, match="^stages=5"):
        c.replace(stages=5).validate(227 * 1024)
    assert W.most_stages(dict(dtype="float16", bm=64, bn=64, consumers=1,
                              setmaxnreg=False)).stages == 6
    with pytest.raises(W.WarpSpecializationError, match="^cluster=3"):
        W.most_stages(dict(dtype="float16", cluster=3))


def test_the_protocol_answers_which_barrier_from_the_source():
    """ch06.which_barrier (no longer asked in the core lesson: its question is one line of exercise
    1's consumer loop, tests/test_consumer_loop.py) still reads its answers from the kernel."""
    assert W.protocol_from_source()["consumer arrives"] == "empty"
    assert W.protocol_from_source()["consumer waits"] == "full"