"""asynctc.matmul (asynctc.gemm) — chapter 06's top rung for any shape (the EDGES build of
kernels/warp_specialization.cu). CPU: every validation error (field, value, rule), the config
choices, the pitched-upload layout, the EDGES builds compile to sm_90a with every rung's features
while the ladder's cubins stay byte-identical, and a dry run of matmul and of the "matmul" suite
against an emulator of the kernel's documented contract (reads within the tensor maps' dims,
stores clipped to M × N with row pitch ldc). GPU (marker gpu): awkward shapes against float64."""
import hashlib
import json
import re
import time
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import asynctc
from asynctc import pipeline as P
from asynctc import gemm as G
from asynctc import warp_specialization as W
from asynctc.warp_specialization import launch as WL
from asynctc.core import bench, checks, records, runtime, sass

from fakes import FakeArray
from test_suites import FakeTimer, fake_cublas

BF16 = np.dtype(ml_dtypes.bfloat16)


def _h(shape, dtype=np.float16):
    return np.ones(shape, dtype)


# ---- validation (CPU: every error before anything reaches the GPU) ---------------------------------

@pytest.mark.parametrize("call, field, rule", [
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), b_layout="KN"), "b_layout='KN'", "one of"),
    (lambda: asynctc.matmul([[1.0]], _h((1, 5))), "a is a list", "numpy array or an asynctc DeviceArray"),
    (lambda: asynctc.matmul(_h((3, 4, 1)), _h((4, 5))), r"a.shape=\(3, 4, 1\)", "must be 2-D"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4,))), r"b.shape=\(4,\)", "must be 2-D"),
    (lambda: asynctc.matmul(_h((3, 4), np.float32), _h((4, 5), np.float32)), "a.dtype='float32'",
     "float16"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5), BF16)), "b.dtype='bfloat16'",
     "must equal a.dtype 'float16'"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((5, 6))), r"b.shape=\(5, 6\)",
     "reads b as K×N: its K is 5, a.shape=\\(3, 4\\) has K=4"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((5, 6)), b_layout="NxK"), r"b.shape=\(5, 6\)",
     "reads b as N×K: its K is 6"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), out_dtype="float64"), "out_dtype='float64'",
     "'float32' or the input dtype"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), out_dtype="nonsense"), "out_dtype='nonsense'",
     "not a dtype"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), np.zeros((3, 6), np.float16)),
     r"out.shape=\(3, 6\)", r"must be \(M, N\) = \(3, 5\)"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), np.zeros((3, 5), np.float32),
                            out_dtype="float16"), "out.dtype='float32'", "must be out_dtype"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), np.zeros((3, 5), np.float64)),
     "out.dtype='float64'", "'float32' or the input dtype"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), config=P.PipelineConfig()), "config='PipelineConfig'",
     "must be a WSConfig"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), config=W.WSConfig(dtype="bfloat16")),
     "config.dtype='bfloat16'", "must be 'float16'"),
    (lambda: asynctc.matmul(_h((3, 4)), _h((4, 5)), config=W.WSConfig(b_major="K")),
     "config.b_major='K'", "must be 'MN'"),
])
def test_bad_inputs_are_refused_with_field_value_and_rule(call, field, rule):
    with pytest.raises(W.WarpSpecializationError, match=field) as e:
        call()
    assert re.search(rule, str(e.value)), str(e.value)
    assert isinstance(e.value, ValueError)


def test_device_rows_must_be_tma_aligned_and_the_message_says_pad_on_the_host():
    """A DeviceArray with rows of 14 bytes: TMA cannot read it in place (cuTensorMapEncodeTiled
    globalStrides multiple of 16); the error names field, value, rule and the way out."""
    a = FakeArray(np.ones((3, 7), np.float16))
    with pytest.raises(W.WarpSpecializationError) as e:
        G.check_tma_rows(a, "a")
    msg = str(e.value)
    assert msg.startswith("a.shape[1]=7: rows of 7 × 2 = 14 bytes")
    assert "multiple of 16 bytes" in msg and "cuTensorMapEncodeTiled" in msg
    assert "pass a numpy array to have it padded" in msg and "multiple of 8 elements" in msg
    G.check_tma_rows(FakeArray(np.ones((1, 7), np.float16)), "a")   # one row: no pitch used
    G.check_tma_rows(FakeArray(np.ones((3, 8), np.float16)), "a")
    bad = FakeArray(np.ones((3, 8), np.float16))
    bad.ptr = 0x1008
    with pytest.raises(W.WarpSpecializationError, match="a address='0x1008': TMA needs a 16-byte"):
        G.check_tma_rows(bad, "a")


def test_device_operands_are_checked_in_matmul(monkeypatch):
    monkeypatch.setattr(G.plan, "DeviceArray", FakeArray)      # the plan's operand type check
    a, b = FakeArray(np.ones((3, 7), np.float16)), FakeArray(np.ones((7, 8), np.float16))
    with pytest.raises(W.WarpSpecializationError, match=r"a.shape\[1\]=7: .*padded"):
        G.MatmulPlan(a, b)


def test_edge_operands_check_out_and_shapes():
    cfg = G.matmul_config(3, 5, 8, "float16", "KxN")
    a, b = FakeArray(np.ones((3, 8), np.float16)), FakeArray(np.ones((8, 8), np.float16))
    with pytest.raises(W.WarpSpecializationError, match=r"b.shape=\(16, 8\): B stored K×N must"):
        G.check_edge_operands(a, FakeArray(np.ones((16, 8), np.float16)), cfg, None)
    with pytest.raises(W.WarpSpecializationError, match=r"out=\(\(3, 7\), 'float16'\)"):
        G.check_edge_operands(a, b, cfg, FakeArray(np.ones((3, 7), np.float16)))
    assert G.check_edge_operands(a, b, cfg, None) == (3, 8, 8, 8)
    out = G.Pitched(FakeArray(np.ones((3, 16), np.float16)), 3, 8)
    assert G.check_edge_operands(a, b, cfg, out) == (3, 8, 8, 16)
    with pytest.raises(W.WarpSpecializationError, match=r"K=2147483648: must be in 1 .. 2\^31 - 1"):
        W.check_shapes(1, 1, 2**31, cfg)


def test_chapter_06_launch_refuses_the_edges_build_and_the_gemm_takes_only_it():
    """WSGemm (chapter 06) launches the exact builds; the EDGES build's operands are the GEMM's
    (EdgeGemm), and each refuses the other's config, naming where to go."""
    cfg = G.matmul_config(3, 5, 8, "float16", "KxN", sm_count=132)
    a, b = FakeArray(np.ones((3, 8), np.float16)), FakeArray(np.ones((8, 8), np.float16))
    with pytest.raises(W.WarpSpecializationError, match=r"^cfg.edges=True: .*asynctc.gemm.EdgeGemm"):
        W.WSGemm(cfg, a, b)
    with pytest.raises(W.WarpSpecializationError, match=r"^cfg.edges=False: EdgeGemm launches"):
        G.EdgeGemm(cfg.replace(edges=False), a, b)


def test_b_layout_is_checked_once_by_one_rule(monkeypatch):
    """One function holds the b_layout rule (gemm.b_major_of); a matmul call checks it once, and
    matmul and matmul_config refuse a bad one with the same message."""
    seen, real = [], G.config.b_major_of

    def counting(b_layout):
        seen.append(b_layout)
        return real(b_layout)
    for mod in (G.config, G.plan):
        monkeypatch.setattr(mod, "b_major_of", counting)
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": False)
    with pytest.raises(runtime.NoGPUError):         # valid: checked, configured, then no GPU here
        G.MatmulPlan(_h((7, 16)), _h((16, 5)))
    assert seen == ["KxN"]
    msgs = []
    for call in (lambda: G.matmul(_h((3, 4)), _h((4, 5)), b_layout="T"),
                 lambda: G.matmul_config(3, 5, 4, "float16", "T")):
        with pytest.raises(W.WarpSpecializationError) as e:
            call()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and msgs[0].startswith("b_layout='T': one of ['KxN', 'NxK']")


def test_empty_problems_launch_nothing(monkeypatch):
    monkeypatch.setattr(G.plan, "EdgeGemm", None)        # any launch attempt would fail
    r = asynctc.matmul(_h((0, 4)), _h((4, 6)))
    assert r.shape == (0, 6) and r.dtype == np.float16
    r = asynctc.matmul(_h((3, 4), BF16), _h((0, 4), BF16), b_layout="NxK")
    assert r.shape == (3, 0) and r.dtype == BF16
    r = asynctc.matmul(_h((3, 0)), _h((0, 6)), out_dtype="float32")
    assert r.shape == (3, 6) and r.dtype == np.float32 and not r.any()
    out = np.full((3, 6), 7.0, np.float32)
    assert asynctc.matmul(_h((3, 0)), _h((0, 6)), out) is out and not out.any()


# ---- config choice (CPU) ------------------------------------------------------------------------------

def test_matmul_config_is_the_top_rung_correct_for_the_b_layout():
    nk = G.matmul_config(4096, 4096, 4096, "float16", "NxK", sm_count=132)
    assert nk == W.RUNG_BY_NAME["raster"].make("float16").replace(edges=True)   # rung 8 + EDGES
    kn = G.matmul_config(4096, 4096, 4096, "bfloat16", "KxN", sm_count=132)
    # cluster + MN-major B since the descriptor-address fix: the top rung for both layouts
    assert kn == W.RUNG_BY_NAME["raster"].make("bfloat16").replace(b_major="MN", edges=True)
    f32 = G.matmul_config(4096, 4096, 4096, "float16", "NxK", out_dtype="float32", sm_count=132)
    assert not f32.tma_store and f32.cluster == 2 and f32.out_dtype == "float32"
    odd = G.matmul_config(4096, 4095, 4096, "float16", "NxK", c_rows_aligned=False, sm_count=132)
    assert not odd.tma_store


@pytest.mark.parametrize("m, n, bm, bn, consumers", [
    (64, 8192, 64, 64, 1), (1, 8192, 64, 64, 1), (65, 8192, 128, 64, 2), (128, 8192, 128, 64, 2),
    (256, 8192, 128, 128, 2), (1024, 8192, 128, 256, 2), (8192, 8192, 128, 256, 2),
    (1000, 1000, 128, 64, 2), (4095, 4095, 128, 256, 2)])
def test_matmul_config_tiles_thin_and_short_problems(m, n, bm, bn, consumers, monkeypatch):
    from asynctc.gemm import config as _GC
    monkeypatch.setattr(_GC, "DECISIONS", {c: {} for c in _GC.SHAPE_CLASSES})   # the rule alone
    c = G.matmul_config(m, n, 8192, "float16", "NxK", sm_count=132)
    assert (c.bm, c.bn, c.consumers) == (bm, bn, consumers)
    assert c.edges and c.persistent and c.setmaxnreg == (consumers == 2)
    assert c.cluster == (2 if -(-m // bm) >= 2 and bn >= 128 else 1)
    rows, cols, _ = W.tile_counts(c, m, n, 8192)
    assert W.wave_fill(rows * cols, 132) >= W.WAVE_FILL or bn == 64
    c.validate(227 * 1024)
    assert c.stages == max(s for s in W.STAGE_RANGE if _fits(c.replace(stages=2), s))


def _fits(cfg, stages):
    try:
        cfg.replace(stages=stages).validate(227 * 1024)
        return True
    except W.WarpSpecializationError:
        return False


def test_matmul_config_refuses_bad_arguments():
    with pytest.raises(W.WarpSpecializationError, match="b_layout='T'"):
        G.matmul_config(8, 8, 8, "float16", "T")
    with pytest.raises(W.WarpSpecializationError, match="dtype='float32'"):
        G.matmul_config(8, 8, 8, "float32", "KxN")
    with pytest.raises(W.WarpSpecializationError, match="M=0"):
        G.matmul_config(0, 8, 8, "float16", "KxN")


def test_tile_counts_round_up_to_whole_clusters(monkeypatch):
    from asynctc.gemm import config as _GC
    monkeypatch.setattr(_GC, "DECISIONS", {c: {} for c in _GC.SHAPE_CLASSES})   # the rule alone
    c = G.matmul_config(129, 4097, 65, "float16", "NxK", sm_count=4)
    assert c.cluster == 2 and (c.bm, c.bn) == (128, 256)
    assert W.tile_counts(c, 129, 4097, 65) == (2, 17, 2)
    c = G.matmul_config(300, 4097, 65, "float16", "NxK", sm_count=4)
    assert W.tile_counts(c, 300, 4097, 65) == (4, 17, 2)        # 3 tile rows → 2 clusters
    assert W.grid_size(c, 300, 4097, sm_count=1000) == 4 * 17
    ladder = W._ws2("float16")
    assert W.tile_counts(ladder, 512, 768, 1024) == (4, 3, 16)


# ---- pitched upload (pure functions) ----------------------------------------------------------------

@pytest.mark.parametrize("cols, itemsize, pitch", [(1, 2, 8), (7, 2, 8), (8, 2, 8), (9, 2, 16),
                                                    (1000, 2, 1000), (4095, 2, 4096), (1, 4, 4),
                                                    (129, 4, 132)])
def test_row_pitch_is_16_bytes(cols, itemsize, pitch):
    assert G.row_pitch(cols, itemsize) == pitch and pitch * itemsize % 16 == 0


def test_pitched_host_layout(rng):
    x = rng.standard_normal((5, 7)).astype(np.float16)
    p = G.pitched_host(x)
    assert p.shape == (5, 8) and p.flags.c_contiguous
    np.testing.assert_array_equal(p[:, :7], x)
    assert not p[:, 7:].any()                           # zeros in the padding, never read
    y = rng.standard_normal((4, 16)).astype(BF16)[:, ::2]   # not contiguous, rows of 16 bytes
    q = G.pitched_host(y)
    assert q.shape == (4, 8) and q.flags.c_contiguous and (q == y).all()


# ---- compile: EDGES builds and the unchanged ladder (CPU) -------------------------------------------

def _edge_configs():
    """The configs matmul picks for its checks and timed shapes, plus every rung's features with
    EDGES (cluster, tma_store, persistent, fp32 register epilogue, both B layouts)."""
    out = {G.case_config(c): 1 for c in G.matmul_cases()}
    for dt in W.DTYPES:
        for shp in ((4096,) * 3,) + W.NONSQUARE_SHAPES:
            for bl in G.B_LAYOUTS:
                out[G.matmul_config(*shp, dt, bl, sm_count=132)] = 1
        out[W._cluster(dt).replace(edges=True, out_dtype="float32")] = 1
        out[W._ws(dt).replace(edges=True, b_major="MN", out_dtype="float32")] = 1
    return list(out)


@pytest.mark.parametrize("cfg", _edge_configs(), ids=lambda c: c.label())
def test_edges_build_compiles_with_the_rungs_features(cfg):
    runtime._memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", runtime.PerformanceWarning)
        ck = W.compile_ws(cfg)
    text = ck.sass()
    cls = sass.class_counts(text)
    assert ck.resources.spill_stores == 0 and "LDL" not in cls
    assert ("UTMASTG" in cls) == cfg.tma_store
    assert ("UCGABAR" in cls) == (cfg.cluster == 2)
    assert bool(re.search(r"UTMALDG\.2D\.MULTICAST", text)) == (cfg.cluster == 2)
    assert bool(re.findall(r"USETMAXREG", text)) == cfg.setmaxnreg
    assert re.findall(r"HGMMA\.64x(\d+)x16", text)[0] == str(cfg.bn)
    if not cfg.tma_store:                                   # clipped register stores
        assert "STG" in cls


def test_ladder_defines_have_no_edges():
    for cfg in W.correctness_configs():
        if isinstance(cfg, W.WSConfig):
            assert "EDGES" not in cfg.defines and " edges" not in cfg.label()
    assert W._ws2("float16").replace(edges=True).defines["EDGES"] == 1


def test_ladder_cubins_are_byte_identical_to_before_edges():
    """Every chapter-06 cubin (EDGES unset) equals the one built before the EDGES define existed
    (tests/ch06_ladder_cubins.json, NVRTC 13.5). A kernel change meant to alter the ladder must
    regenerate that file (and say so in its commit)."""
    doc = json.loads((Path(__file__).parent / "ch06_ladder_cubins.json").read_text())
    if tuple(doc["nvrtc"]) != runtime.nvrtc_version():
        pytest.skip(f"the manifest was made with NVRTC {doc['nvrtc']}, this is "
                    f"{runtime.nvrtc_version()}: cubins differ across NVRTC versions")
    jobs = {}
    for dt in W.DTYPES:
        for c in W.rung_configs(dt):
            jobs[repr(W.compile_job(c))] = W.compile_job(c)
    for c in W.correctness_configs():
        jobs[repr(W.compile_job(c))] = W.compile_job(c)
    jobs["broken"] = (W.SOURCE, W.ENTRY, {**W.WSConfig(stages=2).defines, "BREAK": 1})
    jobs["no_lb"] = (W.SOURCE, W.ENTRY, {**W._ws2("float16").defines, "LAUNCH_BOUNDS": 0})
    ws = [j for j in jobs.values() if j[0] == W.SOURCE]
    assert len(ws) == len(doc["cubins"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for src, name, d in ws:
            key = ",".join(f"{k}={v}" for k, v in sorted(d.items()))
            got = hashlib.sha256(runtime.compile_kernel(src, name, "sm_90a", defines=d).cubin)
            assert got.hexdigest() == doc["cubins"][key], key


# ---- dry run against an emulator of the EDGES kernel (CPU) ------------------------------------------

def _host(x):
    """The logical matrix a tensor map / pointer argument describes (FakeArray or Pitched)."""
    if isinstance(x, G.Pitched):
        return x.array.h[:x.rows, :x.cols]
    return x.h


def emulate_edges(ck, grid, block, *args, shmem_bytes=0, stream=None, cluster=None):
    """The EDGES kernel's contract: A, B read through their tensor maps' true dims (zeros beyond),
    C written row by row at pitch ldc, clipped to M × N; grid = grid_size; every element of C
    written once, nothing in the padding."""
    assert ck.name == W.ENTRY
    cfg = ck.cfg
    if cfg.edges:
        ta, tb, tc, out, m, n, k, _, _, err, _, _, ldc = args     # ... trace, scales, ldc
    else:                                                     # the ladder's build: no ldc
        ta, tb, tc, out, m, n, k, _, _, err, _, _ = args
        ldc = n
        assert int(m) % cfg.bm == 0 and int(n) % cfg.bn == 0 and int(k) % cfg.bk == 0
    m, n, k, ldc = int(m), int(n), int(k), int(ldc)
    assert grid == W.grid_size(cfg, m, n) and block == cfg.threads
    assert (cluster or 1) == cfg.cluster and shmem_bytes == cfg.shmem_bytes
    a = _host(ta[1]).astype(np.float32)
    b = _host(tb[1]).astype(np.float32)
    b = b.T if cfg.b_major == "K" else b
    assert a.shape == (m, k) and b.shape == (k, n)
    c = (a @ b).astype(out.dtype)
    flat = out.h.reshape(-1)
    assert ldc >= n and flat.size >= (m - 1) * ldc + n
    for r in range(m):
        flat[r * ldc:r * ldc + n] = c[r]
    if cfg.tma_store:
        assert tc[0] == "map" and tc[2] == W.c_store_box(cfg)


def _fake_compile(cfgs):
    def compile_ws(cfg, arch="sm_90a"):
        cfg.validate()
        ck = type("FakeKernel", (), {})()
        ck.name, ck.defines, ck.cfg = W.ENTRY, cfg.defines, cfg
        ck.resources = runtime.Resources(registers=168)
        cfgs.append(cfg)
        return ck
    return compile_ws


@pytest.fixture
def emulated(monkeypatch):
    import test_suites
    compiled = []
    # each module that makes device arrays or tensor maps, or compiles, gets the stand-in: chapter
    # 06's launch (WSGemm), the GEMM's modules, and the package name chapter 07 calls (W.compile_ws)
    for mod in (WL, G.operands, G.plan, G.cases, G.suite):
        monkeypatch.setattr(mod, "DeviceArray", FakeArray)
    monkeypatch.setattr(checks, "DeviceArray", FakeArray)
    fake_compile = _fake_compile(compiled)
    monkeypatch.setattr(WL, "compile_ws", fake_compile)
    monkeypatch.setattr(W, "compile_ws", fake_compile)
    for mod in (WL, G.operands):
        monkeypatch.setattr(mod, "_tile_map", lambda x, tile: ("map", x, tile))
    monkeypatch.setattr(WL, "max_active_clusters", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "launch", emulate_edges)
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": True)
    monkeypatch.setattr(runtime, "check_launch", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "precompile", lambda jobs, workers=None: list(jobs))
    monkeypatch.setattr(runtime, "device_info", lambda: test_suites.INFO)
    monkeypatch.setattr(runtime, "default_stream", lambda: None)
    monkeypatch.setattr(bench, "_CudaTimer", FakeTimer)
    real = bench.time_gpu
    monkeypatch.setattr(bench, "time_gpu", lambda fn, **kw: real(fn, **{**kw, "reps": 2,
                                                                         "warmup": 1,
                                                                         "launches": 1}))
    monkeypatch.setattr(bench, "baseline_library", lambda: "emulated")
    monkeypatch.setattr(bench, "cublas_gemm", fake_cublas)
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {"sm_mhz": 1980})
    return compiled


@pytest.mark.parametrize("case", [c for c in G.matmul_cases() if c["m"] * c["n"] * c["k"] < 2e8],
                         ids=lambda c: f"{c['m']}x{c['n']}x{c['k']}-{c['dtype']}-{c['b_layout']}"
                                       f"-{c['out_dtype']}-{c['operands']}")
def test_matmul_dry_run_gives_the_float64_answer(emulated, case, rng):
    """The host side (padding, pitches, ldc, tensor-map dims, grid, result slicing) with the
    kernel emulated: any plumbing mistake shows up as a wrong or unwritten element."""
    c = G.check_matmul_case(case, rng)
    assert c.passed, c.as_dict()
    assert emulated and emulated[-1] == G.case_config(case)


def test_dry_run_catches_an_unwritten_element(emulated, monkeypatch, rng):
    """The check can fail: an emulated kernel that skips C's last column leaves poison."""
    def skip_last(ck, grid, block, *args, **kw):
        emulate_edges(ck, grid, block, *args, **kw)
        out, n, ldc = args[3], int(args[5]), int(args[12])
        out.h.reshape(-1)[n - 1::ldc][:int(args[4])] = np.nan
    monkeypatch.setattr(runtime, "launch", skip_last)
    c = G.check_matmul_case(dict(m=7, n=7, k=7, dtype="float16", b_layout="KxN",
                                 out_dtype="float16", operands="host"), rng)
    assert not c.passed and c.unwritten == 7


def test_matmul_suite_dry_run(emulated, monkeypatch):
    monkeypatch.setattr(G.suite, "matmul_cases", lambda: [
        dict(m=129, n=7, k=70, dtype="float16", b_layout="KxN", out_dtype="float16",
             operands="host"),
        dict(m=129, n=7, k=136, dtype="bfloat16", b_layout="NxK", out_dtype="float32",
             operands="device")])
    monkeypatch.setattr(G.suite, "EDGES_COST_SIZE", 128)
    monkeypatch.setattr(checks, "FULL_CHECK_MAX", 64)
    r = G.measure_matmul(sizes=(128,), nonsquare=((64, 256, 128),))
    assert [c["passed"] for c in r["checks"]] == [True, True]
    mm = [x for x in r["rows"] if x["kernel"] == "matmul"]
    assert len(mm) == 2 * 2 * 2 and all(x["rel_err_rows"]["passed"] for x in mm)
    assert all(x["of_cublas"] > 0 and x["sm_mhz"] == 1713.0 for x in mm)
    assert len(r["edges_cost"]) == 4 and all("edges_cost" in x for x in r["edges_cost"])
    assert any(not c.edges for c in emulated) and any(c.edges for c in emulated)
    rec = records.Record("matmul", {"gpu": "emulated", "date": "2026-12-01"}, r, live=True)
    text = G.summarize_matmul(rec)
    assert "EDGES cost 128³ float16 B:NxK" in text and "64×256×128" in text
    assert text.splitlines()[-1].startswith("64×256×128")


def test_matmul_suite_is_registered():
    from asynctc import suites
    assert suites.SUITES["matmul"] == (G.measure_matmul, G.summarize_matmul, "sm_90a")


# ---- GPU ----------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("case", G.matmul_cases(),
                         ids=lambda c: f"{c['m']}x{c['n']}x{c['k']}-{c['dtype']}-{c['b_layout']}"
                                       f"-{c['out_dtype']}-{c['operands']}")
def test_matmul_matches_float64(case, rng):
    c = G.check_matmul_case(case, rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
def test_matmul_writes_into_out_and_refuses_unaligned_device_rows(rng):
    from asynctc.core.memory import DeviceArray
    a = rng.standard_normal((129, 1000)).astype(np.float16)
    b = rng.standard_normal((1000, 7)).astype(np.float16)
    out = np.full((129, 7), np.nan, np.float32)
    assert asynctc.matmul(a, b, out) is out
    assert P.compare_elementwise(out, a, b, "float32").passed
    with pytest.raises(W.WarpSpecializationError, match="pass a numpy array to have it padded"):
        asynctc.matmul(DeviceArray.from_host(a), DeviceArray.from_host(b))


def test_matmul_without_a_gpu_says_what_it_needs():
    """Valid inputs on a machine without an sm_90 GPU: a NoGPUError that names the GPU it needs and
    says the inputs were fine (bad inputs are refused first, by their own errors)."""
    if runtime.runs_live("sm_90a"):
        pytest.skip("this machine has an sm_90 GPU")
    a = np.ones((7, 16), np.float16) * np.float16(0.5)
    with pytest.raises(runtime.NoGPUError, match=r"asynctc.matmul runs on a Hopper GPU \(sm_90"):
        G.matmul(a, a.T.copy())
    with pytest.raises(W.WarpSpecializationError, match="b.dtype"):
        G.matmul(a, a.T.astype(np.float32))


def test_recorded_run_says_the_shape_is_not_recorded_then_reads_the_checked_and_timed_shapes():
    """06d §3 (moved from 06 §5) "Use it" in replay prints, under the record's label (GPU, date): whether the asked shape
    is recorded (reader 117), then every checked shape in one count with the worst error over all of
    them, and by name those with the asked M, each with its worst (newcomer 54: "the record's nearest"
    by a log distance picked 512×512×2048 while 1000×1000×1000 was also checked), then the timed
    shape nearest it; all read from the ``matmul`` record."""
    rec = records.load("matmul")
    text = G.recorded_run(rec, 1000, 700, 4096)
    head, checked, timed = text.split("\n")
    assert head == rec.label() and rec.provenance["gpu"] in head
    worst = {}
    for c in rec.results["checks"]:
        if c["dtype"] == "float16":
            s = (c["m"], c["n"], c["k"])
            worst[s] = max(worst.get(s, 0.0), c["worst_ratio"])
    mine = sorted(s for s in worst if s[0] == 1000)
    assert len(mine) >= 2 and (1000, 1000, 1000) in mine
    assert checked == (f"No run of 1000×700×4096 is recorded. Checked {len(worst)} float16 shapes, worst "
                       f"|C − float64| / bound {max(worst.values()):.2f}; with M = 1000: "
                       + ", ".join(f"{m}×{n}×{k} {worst[m, n, k]:.2f}" for m, n, k in mine) + ".")
    ts = re.search(r"^Timed, nearest: (\d+)×(\d+)×(\d+), ", timed).groups()
    row = next(r for r in rec.results["rows"] if r["kernel"] == "matmul" and r["dtype"] == "float16"
               and r["b_layout"] == "KxN" and [r["m"], r["n"], r["k"]] == [int(x) for x in ts])
    assert timed.endswith(f", {row['tflops']:.0f} TFLOP/s, {row['of_cublas']:.2f} of cuBLAS.")
    assert "(this shape)" not in text
    m, n, k = next((c["m"], c["n"], c["k"]) for c in rec.results["checks"] if c["dtype"] == "float16" and c["n"] < 64)
    own = G.recorded_run(rec, m, n, k).split("\n")[1]       # a recorded shape is named as itself
    assert own.startswith(f"{m}×{n}×{k} is recorded checked only. ") and f"{m}×{n}×{k} (this shape) " in own
    own = G.recorded_run(rec, 4096, 4096, 4096).split("\n")
    assert own[1].startswith("4096×4096×4096 is recorded timed only. ") and "; nearest in size: " in own[1]
    assert own[2].startswith("Timed, nearest: 4096×4096×4096 (this shape), ")


def test_the_build_label_has_a_key_to_its_fields():
    """06d §3 (was 06 §5): newcomer 54 met the label's ``B:MN``, ``edges`` and ``group_m`` unexplained; with
    ``legend=True`` a second line reads each field the label shows, and the plain label is unchanged."""
    cfg = G.matmul_config(1000, 700, 4096, sm_count=132)
    label, key = cfg.label(legend=True).split("\n")
    assert label == cfg.label() and key.startswith("  key: ")
    for field in ("B:MN", "edges", "group_m:16", f"s{cfg.stages}", f"/c{cfg.consumers}"):
        assert field in label
    for said in ("B:MN: B stored K×N", "edges: partial tiles", "group_m: rung 8's group-M",
                 f"s{cfg.stages}: {cfg.stages} stages", f"c{cfg.consumers}: {cfg.consumers} consumers"):
        assert said in key

