"""asynctc.matmul's shape means: split-K (WSConfig.split_k, the SPLIT_K define of the EDGES build,
kernels/gemm_splitk.cu) and the per-shape-class decision table of choose_config (DECISIONS).
CPU: every refusal names field, value and rule; the table's classes, lookup and clipping; today's
choices unchanged by an empty table; the split-K builds compile to sm_90a without atomics (the sum
is in a fixed order) and the default configurations' cubins are byte-identical to those built
before SPLIT_K existed (tests/matmul_edges_cubins.json). GPU (marker gpu): every split-K variant
against float64 element by element (|A|·|B| bound, poisoned output and workspace), both B layouts,
both dtypes, fp32 and 16-bit C, on awkward shapes; the same bits on a second run; the cached
fast path (torch tensors) with a split-K table entry."""
import hashlib
import json
import re
import warnings
from pathlib import Path

import pytest

import asynctc
from asynctc import gemm as G
from asynctc import pipeline as P
from asynctc import warp_specialization as W
from asynctc.core import checks, runtime
from asynctc.gemm import config as GC
from asynctc.gemm import splitk as SK
from asynctc.warp_specialization import launch as WL


def _cfg(**kw):
    base = dict(dtype="float16", bm=64, bn=64, consumers=1, setmaxnreg=False, stages=4,
                out_dtype="float16", edges=True, persistent=True, split_k=2)
    base.update(kw)
    return W.WSConfig(**base)


# ---- split-K configuration (CPU) ------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(split_k=0), r"split_k=0: splits of K per tile: 1..16"),
    (dict(split_k=17), r"split_k=17: splits of K per tile: 1..16"),
    (dict(split_k=True), r"split_k=True: must be an integer"),
    (dict(split_k=2.0), r"split_k=2.0: must be an integer"),
    (dict(edges=False), r"split_k=2: .*needs edges=True, here edges=False"),
    (dict(tma_store=True), r"split_k=2: .*needs tma_store=False, here tma_store=True"),
    (dict(split_k=1, splitk_fixup=True), r"splitk_fixup=True: .*needs split_k > 1, here split_k=1"),
    (dict(splitk_fixup=1), r"splitk_fixup=1: must be a bool"),
])
def test_split_k_refusals_name_field_value_rule(kw, match):
    with pytest.raises(W.WarpSpecializationError, match=match):
        _cfg(**kw)


def test_split_k_refuses_fp8():
    with pytest.raises(W.WarpSpecializationError, match=r"split_k=2: .*needs dtype=float16 or "
                                                        r"bfloat16, here dtype='float8_e4m3fn'"):
        W.WSConfig(dtype="float8_e4m3fn", bm=128, bn=128, consumers=2, stages=4,
                   out_dtype="float32", edges=True, split_k=2)


def test_split_k_defines_only_when_on():
    one = _cfg(split_k=1)
    assert "SPLIT_K" not in one.defines and "split_k" not in one.label()
    assert one.defines["OUT_F32"] == 0
    two = _cfg(split_k=3)
    assert two.defines["SPLIT_K"] == 3 and two.defines["OUT_F32"] == 1   # fp32 partials
    assert " split_k:3" in two.label() and two.out_dtype == "float16"
    fix = _cfg(split_k=3, splitk_fixup=True)
    assert fix.defines["SPLITK_FIXUP"] == 1 and fix.defines["OUT_F32"] == 0  # C in its dtype
    assert " split_k:3 fixup" in fix.label() and "SPLITK_FIXUP" not in two.defines
    for c in W.correctness_configs():
        if isinstance(c, W.WSConfig):
            assert c.split_k == 1 and "SPLIT_K" not in c.defines


def test_split_k_needs_a_k_tile_per_slice_and_multiplies_the_grid():
    cfg = _cfg(split_k=4)
    WL.check_shapes(1, 4096, 4 * 64, cfg)                         # 4 k-tiles: one each
    WL.check_shapes(1, 4096, 3 * 64 + 1, cfg)                     # 4 k-tiles (the last partial)
    with pytest.raises(W.WarpSpecializationError, match=r"split_k=4: K=192 has 3 k-tiles of 64"):
        WL.check_shapes(1, 4096, 192, cfg)
    assert WL.grid_size(cfg.replace(persistent=False), 1, 4096) == 64 * 4
    assert WL.grid_size(cfg, 1, 4096, sm_count=132) == 132
    assert WL.grid_size(cfg.replace(split_k=2), 1, 4096, sm_count=132) == 128


def test_reduce_defines_and_refusals():
    assert SK.reduce_defines(_cfg(split_k=5)) == {"SPLITS": 5, "OUT_KIND": 1}
    assert SK.reduce_defines(_cfg(out_dtype="float32"))["OUT_KIND"] == 0
    assert SK.reduce_defines(_cfg(dtype="bfloat16", out_dtype="bfloat16"))["OUT_KIND"] == 2
    with pytest.raises(W.WarpSpecializationError, match=r"cfg.split_k=1: the reduction sums ≥ 2"):
        SK.reduce_defines(_cfg(split_k=1))
    assert SK.reduce_grid(1, 1) == 1 and SK.reduce_grid(1, 4096) == 8
    assert SK.reduce_grid(8192, 8192) == SK.REDUCE_MAX_CTAS


def test_split_k_gemm_refuses_a_config_without_splits():
    with pytest.raises(W.WarpSpecializationError, match=r"cfg.split_k=1: SplitKGemm launches"):
        SK.SplitKGemm(_cfg(split_k=1), None, None)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("b_major", ["K", "MN"])
@pytest.mark.parametrize("fixup", [False, True])
def test_split_k_builds_compile_without_atomics(dt, b_major, fixup):
    """The GEMM's split-K build and the reduction compile to sm_90a (no spills); no float atomic
    anywhere, and without the fix-up no atomic add at all (the reduction has no atomic): the sum
    of the splits is in a fixed order, deterministic. The fix-up's one atomic add is the integer
    count of a tile's finished splits."""
    cfgs = [_cfg(dtype=dt, b_major=b_major, out_dtype=dt, split_k=4, splitk_fixup=fixup),
            _cfg(dtype=dt, b_major=b_major, out_dtype="float32", bm=128, bn=128, consumers=2,
                 setmaxnreg=True, cluster=2 if b_major == "K" else 1, split_k=2,
                 splitk_fixup=fixup)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", runtime.PerformanceWarning)
        for cfg in cfgs:
            ck = W.compile_ws(cfg)
            assert ck.resources.spill_stores == 0, cfg.label()
            text = ck.sass()
            assert "HGMMA" in text and not re.search(r"\b(RED|ATOM\w*)\.\S*F(16|32|64)", text)
            # besides these, the only atomic is the error word's compare-and-swap
            adds = re.findall(r"\b(?:RED|ATOM\w*)\.\S*ADD\S*", text)
            assert adds == ["ATOMG.E.ADD.STRONG.GPU"] * len(adds), adds
            assert bool(adds) == fixup, cfg.label()
            if fixup:
                continue
            rt = SK.compile_reduce(cfg).sass()
            assert "STG" in rt and "RED." not in rt and "ATOM" not in rt


def test_default_configs_cubins_are_byte_identical_to_before_split_k(monkeypatch):
    """asynctc.matmul's rule (the decision table emptied) builds the cubins it built before the
    SPLIT_K define existed (tests/matmul_edges_cubins.json, NVRTC 13.5): a new variant leaves the
    default path's code generation alone."""
    monkeypatch.setattr(GC, "DECISIONS", {c: {} for c in G.SHAPE_CLASSES})
    doc = json.loads((Path(__file__).parent / "matmul_edges_cubins.json").read_text())
    if tuple(doc["nvrtc"]) != runtime.nvrtc_version():
        pytest.skip(f"the manifest was made with NVRTC {doc['nvrtc']}, this is "
                    f"{runtime.nvrtc_version()}: cubins differ across NVRTC versions")
    jobs = {}
    for s in doc["shapes"]:
        for dt in ("float16", "bfloat16"):
            for bl in ("KxN", "NxK"):
                j = W.compile_job(G.matmul_config(*s, dt, bl, sm_count=132))
                jobs[",".join(f"{k}={v}" for k, v in sorted(j[2].items()))] = j
    assert set(jobs) == set(doc["cubins"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, (src, name, d) in jobs.items():
            got = hashlib.sha256(runtime.compile_kernel(src, name, "sm_90a", defines=d).cubin)
            assert got.hexdigest() == doc["cubins"][key], key


# ---- the decision table (CPU) ----------------------------------------------------------------------

@pytest.mark.parametrize("m, n, k, cls", [
    (1, 4096, 4096, "decode"), (16, 8192, 8192, "decode_wide"), (16, 4096, 8192, "decode_wide"),
    (16, 4096, 4096, "decode"), (17, 8192, 8192, "thin"), (512, 512, 512, "tiny"),
    (256, 8192, 8192, "thin"), (256, 1024, 8192, "small"), (1024, 1024, 1024, "small"),
    (2048, 2048, 2048, "small"), (2049, 2048, 2048, "large"), (8192, 8192, 8192, "large"),
    (257, 8192, 8192, "large")])
def test_shape_classes(m, n, k, cls):
    assert G.shape_class(m, n, k) == cls


def test_every_decision_entry_beat_today_rule_on_every_swept_shape_of_its_class():
    """DECISIONS holds the shape sweep's winners (record matmul_shapes): each non-empty entry was
    faster than today's rule ({}) on every swept shape of its class, both B layouts, every dtype
    swept — a re-measurement that flips one fails here. An empty class had no such entry."""
    from asynctc.core import records
    rows = records.load("matmul_shapes").results["rows"]
    assert set(G.DECISIONS) == set(G.SHAPE_CLASSES)
    by_case: dict = {}
    for r in rows:
        assert r["checked_ok"], r
        cls = G.shape_class(r["m"], r["n"], r["k"])
        by_case.setdefault((cls, r["m"], r["n"], r["k"], r["dtype"], r["storage"]), []).append(r)
    for cls in G.SHAPE_CLASSES:
        cases = {key: rs for key, rs in by_case.items() if key[0] == cls}
        entry = G.DECISIONS[cls]
        if not cases:
            assert entry == {}, (cls, "an entry no sweep measured")
            continue

        def wins(e):
            for (_c, m, n, k, dt, st), rs in cases.items():
                major = "MN" if st == "KxN" else "K"
                pick = [GC.choose_config(m, n, k, dt, major, dt, c_rows_aligned=(n * 2) % 16 == 0,
                                         sm_count=132, decisions={cls: dict(x)}) for x in (e, {})]
                if pick[0] == pick[1]:
                    continue                                   # the same kernel as the rule
                ours = [r["of_cublas"] for r in rs if r["candidate"] == e]
                today = [r["of_cublas"] for r in rs if r["candidate"] == {}]
                if not ours or not today or ours[0] <= today[0]:
                    return False
            return True
        if entry:
            assert wins(entry), (cls, entry)
        else:
            cands = {json.dumps(r["candidate"], sort_keys=True) for rs in cases.values() for r in rs}
            beat = [c for c in cands if c != "{}" and wins(json.loads(c))]
            # what beat the rule everywhere by under 1 % was left out as noise
            for c in beat:
                gains = [next(r["of_cublas"] for r in rs if r["candidate"] == json.loads(c)) /
                         next(r["of_cublas"] for r in rs if r["candidate"] == {})
                         for rs in cases.values() if any(r["candidate"] == json.loads(c) for r in rs)]
                assert min(gains) < 1.01, (cls, c, min(gains))
    for m, n, k in [(1, 4096, 4096), (64, 8192, 8192), (1000, 1000, 1000), (8192, 8192, 8192)]:
        for bm in ("K", "MN"):
            today = GC.choose_config(m, n, k, "float16", bm, "float16", sm_count=132, decisions={})
            assert today.split_k == 1


def test_a_table_entry_changes_only_its_class_and_the_most_specific_key_wins():
    table = {"decode": {"split_k": 4, "bn": 128}, ("decode", "MN"): {"split_k": 2},
             ("decode", "MN", "bfloat16"): {"stages": 3, "persistent": False}}
    c = GC.choose_config(1, 4096, 4096, "float16", "K", "float16", sm_count=132, decisions=table)
    assert (c.split_k, c.bn, c.tma_store, c.edges) == (4, 128, False, True)
    c = GC.choose_config(1, 4096, 4096, "float16", "MN", "float16", sm_count=132, decisions=table)
    assert (c.split_k, c.bn) == (2, 64)
    c = GC.choose_config(1, 4096, 4096, "bfloat16", "MN", "bfloat16", sm_count=132,
                         decisions=table)
    assert (c.split_k, c.stages, c.persistent) == (1, 3, False)
    thin = GC.choose_config(64, 8192, 8192, "float16", "K", "float16", sm_count=132,
                            decisions=table)
    assert thin == GC.choose_config(64, 8192, 8192, "float16", "K", "float16", sm_count=132)


def test_split_k_is_clipped_to_the_k_tiles():
    t = {"decode": {"split_k": 8}}
    assert GC.choose_config(4, 4096, 200, "float16", "K", "float32", sm_count=132,
                            decisions=t).split_k == 4
    t = {"decode": {"split_k": 8, "splitk_fixup": True}}
    c = GC.choose_config(4, 4096, 64, "float16", "K", "float16", sm_count=132, decisions=t)
    assert c.split_k == 1 and c.tma_store and not c.splitk_fixup  # one k-tile: no split


def test_the_module_table_is_what_choose_config_reads(monkeypatch):
    monkeypatch.setitem(GC.DECISIONS, "decode", {"split_k": 2})
    assert GC.choose_config(1, 4096, 4096, "float16", "K", "float16", sm_count=132).split_k == 2
    monkeypatch.setitem(GC.DECISIONS, "decode", {"tile": 2})          # an edit gone wrong
    with pytest.raises(W.WarpSpecializationError, match=r"decisions\['decode'\]='tile'"):
        G.matmul_config(1, 4096, 4096)


@pytest.mark.parametrize("table, err, match", [
    ([], TypeError, r"decisions=list: must be a dict"),
    ({"huge": {}}, W.WarpSpecializationError, r"decisions key='huge': a class of"),
    ({("thin", "T"): {}}, W.WarpSpecializationError, r"decisions key=\('thin', 'T'\)"),
    ({("thin", "K", "float32"): {}}, W.WarpSpecializationError, r"decisions key=\('thin', 'K', "),
    ({"thin": 2}, W.WarpSpecializationError, r"decisions\['thin'\]=2: must be a dict"),
    ({"thin": {"swizzle": 64}}, W.WarpSpecializationError,
     r"decisions\['thin'\]='swizzle': a field of"),
    ({"decode": {"split_k": 40}}, W.WarpSpecializationError, r"split_k=40: splits of K per tile"),
    ({"decode": {"split_k": "2"}}, W.WarpSpecializationError,
     r"decisions\['decode'\]\['split_k'\]='2': must be an integer"),
    ({"decode": {"stages": 9}}, W.WarpSpecializationError, r"stages=9: 2..6"),
    ({"decode": {"bn": 96}}, W.WarpSpecializationError, r"bn"),
])
def test_bad_tables_are_refused(table, err, match):
    with pytest.raises(err, match=match):
        GC.choose_config(1, 4096, 4096, "float16", "K", "float16", sm_count=132, decisions=table)


# ---- GPU: every split-K variant against float64 -------------------------------------------------------

#: (M, N, K, split_k): decode and thin M, ragged K (the last k-tile partial; a split of one
#: k-tile), N not a multiple of the tile nor even, more work items than SMs (persistent walk).
SPLIT_CASES = [(1, 4096, 4096, 2), (7, 1000, 3001, 3), (16, 520, 200, 4), (64, 4099, 1024, 4),
               (129, 1000, 777, 2), (256, 2048, 1024, 8)]


def _split_config(m, n, k, dt, bl, odt, s, **kw):
    cls = G.shape_class(m, n, k)
    return GC.choose_config(m, n, k, dt, G.b_major_of(bl), odt,
                            decisions={cls: {"split_k": s, **kw}})


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, s", SPLIT_CASES)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("bl", ["KxN", "NxK"])
@pytest.mark.parametrize("odt", ["float32", "input"])
@pytest.mark.parametrize("fixup", [False, True])
def test_split_k_matches_float64(m, n, k, s, dt, bl, odt, fixup, rng):
    odt = dt if odt == "input" else odt
    a, b, bt = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt, b_major="K"), rng)
    cfg = _split_config(m, n, k, dt, bl, odt, s, splitk_fixup=fixup)
    assert cfg.splitk_fixup == (fixup and cfg.split_k > 1)
    assert cfg.split_k == min(s, -(-k // 64))
    c = asynctc.matmul(a, b if bl == "KxN" else bt, b_layout=bl, out_dtype=odt, config=cfg)
    res = checks.compare_elementwise(c, a, b, odt, cfg.label())
    assert res.passed, res.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [dict(bn=128), dict(bn=256), dict(persistent=False),
                                dict(bm=128, consumers=2, bn=128, cluster=2), dict(stages=2)])
@pytest.mark.parametrize("fixup", [False, True])
def test_split_k_with_other_tiles_matches_float64_and_is_deterministic(kw, fixup, rng):
    from asynctc.core.memory import DeviceArray
    m, n, k = 200, 3000, 2056               # K: 33 k-tiles, the last partial; rows 16-byte multiples
    a, b, bt = P.random_operands(m, n, k, P.PipelineConfig(dtype="bfloat16", b_major="K"), rng)
    cfg = _split_config(m, n, k, "bfloat16", "NxK", "bfloat16", 3, splitk_fixup=fixup, **kw)
    da, db = DeviceArray.from_host(a), DeviceArray.from_host(bt)
    outs = []
    for _ in range(2):                      # (with the fix-up: its counters back at zero)
        dc = DeviceArray.poisoned((m, n), checks.np_dtype("bfloat16"))
        plan = G.MatmulPlan(da, db, dc, b_layout="NxK", config=cfg)
        assert isinstance(plan.gemm, G.SplitKGemm)
        plan.run()
        outs.append(dc.to_host())
    res = checks.compare_elementwise(outs[0], a, b, "bfloat16", cfg.label())
    assert res.passed, res.as_dict()
    assert outs[0].tobytes() == outs[1].tobytes()           # a fixed-order sum: the same bits


@pytest.mark.gpu
@pytest.mark.parametrize("fixup", [False, True])
def test_split_k_through_the_cached_fast_path(monkeypatch, fixup, rng):
    torch = pytest.importorskip("torch")
    monkeypatch.setitem(GC.DECISIONS, "decode", {"split_k": 4, "splitk_fixup": fixup})
    monkeypatch.setattr(G.fastpath, "_plans", {})
    monkeypatch.setattr(G.fastpath, "_torch_layouts", {})
    m, n, k = 4, 4096, 4096
    a, b, _ = P.random_operands(m, n, k, P.PipelineConfig(dtype="float16", b_major="K"), rng)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    for _ in range(3):                                        # the first call and the cached ones
        out = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        asynctc.matmul(ta, tb, out)
        torch.cuda.synchronize()
        G.check_errors()
        res = checks.compare_elementwise(out.cpu().numpy(), a, b, "float16", "fast path split-K")
        assert res.passed, res.as_dict()
    plan = next(iter(G.fastpath._plans.values()))
    assert plan.config.split_k == 4 and plan.config.splitk_fixup == fixup


# ---- the shape sweep (CPU: its cases, candidates, compile jobs, winners; the script's dry run) ----

from asynctc.gemm import shape_suite as SS  # noqa: E402


def test_sweep_cases_cover_every_class_both_layouts_and_bf16_where_listed():
    cases = SS.sweep_cases()
    assert {c["class"] for c in cases} == {"tiny", "small", "thin", "decode", "decode_wide"}
    for c in cases:
        assert G.shape_class(c["m"], c["n"], c["k"]) == c["class"]
    fp16 = {(c["m"], c["n"], c["k"]) for c in cases if c["dtype"] == "float16"}
    assert fp16 == {s for shapes in SS.SWEEP_SHAPES.values() for s in shapes}
    bf16 = {(c["m"], c["n"], c["k"]) for c in cases if c["dtype"] == "bfloat16"}
    assert bf16 == set(SS.BF16_SHAPES)
    assert all(sum(1 for c in cases if (c["m"], c["n"], c["k"], c["dtype"]) == key) == 2
               for key in {(c["m"], c["n"], c["k"], c["dtype"]) for c in cases})
    quick = SS.sweep_cases(quick=True)
    assert {(c["m"], c["n"], c["k"]) for c in quick} == set(SS.QUICK_SHAPES)


def test_sweep_candidates_are_valid_distinct_and_start_with_today():
    for case in SS.sweep_cases():
        cands = SS.candidate_configs(case, sm_count=132)
        cfgs = [c for _e, c in cands]
        assert len(set(cfgs)) == len(cfgs)
        entry, first = cands[0]
        major = "MN" if case["storage"] == "KxN" else "K"
        assert entry == {} and first == GC.choose_config(
            case["m"], case["n"], case["k"], case["dtype"], major, case["dtype"], sm_count=132,
            decisions={})
        assert any(c.split_k > 1 for c in cfgs) and any(c.splitk_fixup for c in cfgs)
        for e, c in cands:
            GC.check_decisions({case["class"]: e})              # each entry fits the table
            assert c.edges and c.dtype == case["dtype"] and c.b_major == major


def test_sweep_jobs_compile_each_config_once_and_the_reduction_where_needed():
    cases = SS.sweep_cases(quick=True)
    jobs = SS.sweep_jobs(cases, sm_count=132)
    assert len({repr(j) for j in jobs}) == len(jobs)
    reduce_jobs = [j for j in jobs if j[0] == SK.SOURCE]
    assert reduce_jobs and all(set(j[2]) == {"SPLITS", "OUT_KIND"} for j in reduce_jobs)
    fixup = [j for j in jobs if j[2].get("SPLITK_FIXUP")]
    assert fixup and all(j[0] == W.SOURCE for j in fixup)


def test_winners_pick_the_best_checked_candidate():
    base = {"class": "decode", "m": 1, "n": 4096, "k": 4096, "dtype": "float16", "storage": "KxN"}
    rows = [{**base, "candidate": {}, "config": "a", "checked_ok": True, "of_cublas": 0.6},
            {**base, "candidate": {"split_k": 2}, "config": "b", "checked_ok": True,
             "of_cublas": 0.9},
            {**base, "candidate": {"split_k": 4}, "config": "c", "checked_ok": False,
             "worst_ratio": 3.0}]
    (w,) = SS.winners(rows)
    assert (w["candidate"], w["of_cublas"], w["today"]) == ({"split_k": 2}, 0.9, 0.6)
    text = SS.summarize_shapes({"rows": rows, "winners": [w]})
    assert "{'split_k': 2}" in text and "1 candidate(s) failed" in text
    assert "WRONG" in SS._line(rows[2]) and "0.900 of cuBLAS" in SS._line(
        {**rows[1], "tflops": 1.0, "cublas_tflops": 1.0})


def test_the_sweep_script_dry_runs_on_the_cpu(capsys):
    import sys
    tools = Path(__file__).resolve().parent.parent / "tools"
    sys.path.insert(0, str(tools))
    try:
        import gpu_matmul_shapes as script
    finally:
        sys.path.remove(str(tools))
    assert script.dry_run(quick=True, compile_all=False) == 0
    out = capsys.readouterr().out
    assert "decode_wide 1x8192x8192 float16 B:NxK" in out and "compile jobs" in out
    assert "split_k:4 fixup" in out


def test_measure_shapes_dry_run(monkeypatch):
    """measure_shapes end to end on fakes (no torch, no GPU): each candidate's entry is the table
    the call sees, its plan is the candidate's configuration, a wrong result is not timed, the
    module table comes back as it was."""
    import sys
    import types
    import test_suites
    from asynctc.gemm import fastpath as F, host_suite as H, plan as PL
    from asynctc.core import bench
    fake = types.SimpleNamespace(float16="f16", bfloat16="bf16",
                                 cuda=types.SimpleNamespace(synchronize=lambda: None),
                                 full=lambda shape, v, dtype, device: ("out", shape),
                                 matmul=lambda a, b: None)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(runtime, "device_info", lambda: test_suites.INFO)
    monkeypatch.setattr(runtime, "precompile", lambda jobs, workers=None: None)
    monkeypatch.setattr(bench, "pin_fp32_reduction", lambda: {})
    monkeypatch.setattr(H, "_operands", lambda torch, m, n, k, dt, st: ("a", (m, n, k, dt, st), "bk"))
    seen = []

    class Plan:
        def __init__(self, cfg):
            self.config = cfg

    def fake_matmul(a, b, out=None):
        m, n, k, dt, st = b
        cfg = GC.choose_config(m, n, k, dt, "MN" if st == "KxN" else "K", dt,
                               c_rows_aligned=(n * 2) % 16 == 0)
        F._plans["key"] = Plan(cfg)
        seen.append(cfg)
    monkeypatch.setattr(PL, "matmul", fake_matmul)
    monkeypatch.setattr(F, "check_errors", lambda: None)
    wrong = {"split_k": 4, "splitk_fixup": True}
    monkeypatch.setattr(H, "check_against_float64", lambda torch, c, a, b, dt: {
        "passed": GC.DECISIONS["decode_wide"] != wrong, "worst_ratio": 0.5})
    monkeypatch.setattr(H, "kernel_us", lambda torch, fn, calls: (fn(), 10.0)[1])
    before = {k: dict(v) for k, v in GC.DECISIONS.items()}
    cases = [c for c in SS.sweep_cases(quick=True) if c["class"] == "decode_wide"]
    res = SS.measure_shapes(cases=cases, calls=2, rounds=1)
    assert GC.DECISIONS == before and not F._plans
    rows = res["rows"]
    assert len(rows) == sum(len(SS.candidate_configs(c, test_suites.INFO.sm_count)) for c in cases)
    assert all(r["config"] == r["ran_config"] for r in rows)
    bad = [r for r in rows if not r["checked_ok"]]
    assert bad and all(r["candidate"] == wrong and "kernel_us" not in r for r in bad)
    good = [r for r in rows if r["checked_ok"]]
    assert all(r["of_cublas"] == 1.0 for r in good)
    assert len(res["winners"]) == len(cases)
    assert "WRONG" not in SS.summarize_shapes(res) and "failed their float64 check" in \
        SS.summarize_shapes(res)


@pytest.mark.parametrize("shape, dtype, want", [
    ((1, 8192, 8192), "float16", dict(bn=256, split_k=4, splitk_fixup=True)),
    ((4, 8192, 8192), "bfloat16", dict(bn=256, split_k=4, splitk_fixup=True)),
    ((512, 512, 512), "float16", dict(bm=64, consumers=1)),
    ((2048, 2048, 2048), "bfloat16", dict(cluster=1)),
])
def test_matmul_config_applies_the_decision_table_of_the_shape_class(shape, dtype, want):
    """matmul's configuration is the rule with its class's DECISIONS entry on top (the entries
    the sweep chose); the classes left empty keep the rule."""
    cfg = G.matmul_config(*shape, dtype, "KxN", sm_count=132)
    assert {f: getattr(cfg, f) for f in want} == want, cfg.label()
    for s in [(1, 4096, 4096), (64, 8192, 8192), (8192, 8192, 8192)]:
        ruled = GC.choose_config(*s, dtype, "MN", dtype, sm_count=132, decisions={})
        assert G.matmul_config(*s, dtype, "KxN", sm_count=132) == ruled
