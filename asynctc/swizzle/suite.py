"""Chapter 07's swizzle experiment, the "swizzle" record suite (``SUITES["swizzle"]``,
``tools/gpu_swizzle.py``): :func:`measure_swizzle` (compile, the bank model, the checks, cuBLAS and
every variant timed on the same operands, Nsight Compute's counters as the script gathered them,
:data:`NCU_METRICS`) and the tables and summary of its record (:func:`swizzle_table`,
:func:`tma_once_rows`, :func:`tma_once_outcome`, :func:`box_count_rows`, :func:`ncu_rows`,
:func:`summarize_swizzle` ...). Medians, never asserted on; no plots."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..core.memory import DeviceArray
from .config import (SWIZZLES, _key, base_config, tma_loads_per_stage, variant_key, variant_name,
                     variants)
from .launch import TmaOnceSampled, check_variants, shared_lsu_instructions
from .prediction import (PREDICTED_RATIO_TMA_ONCE, PREDICTION, TMA_SHARE_MAX, WGMMA_SHARE_MIN,
                         bank_model, predicted_ratio)

#: Square sizes timed (fp16).
SIZES = (4096, 8192)

#: Counters asked of Nsight Compute per variant, where this ncu knows them (``--query-metrics``):
#: LSU shared-memory bank conflicts and instructions (what the seed's claim is usually measured
#: with), all bank reads/writes of L1/shared memory (wgmma and TMA included), wgmma instructions and
#: TMA bytes. Names from the Nsight Compute Profiling Guide's metric structure
#: (unit__counter_pipe_mem_op.rollup); an ncu that lacks one skips it and says so in the record.
NCU_METRICS = (
    "gpu__time_duration.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_bank_reads.sum",
    "l1tex__data_bank_writes.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
)


def measure_swizzle(progress=None, sizes=SIZES, reps: int = 10, check: bool = True,
                    ncu: dict | None = None) -> dict:
    """The "swizzle" suite over :func:`variants` (the four swizzles, the 128-byte row-box
    variants, then the four wgmma-only ones), keyed by :func:`variant_key`: (1) compile them; registers, spills, SASS counts (LSU
    shared instructions, HGMMA, UTMALDG), TMA loads per stage and the bank model per variant; (2) ``check``:
    :func:`check_variants`; (3) per size in ``sizes`` (fp16, B K-major): cuBLAS and every
    variant on the same operands (once each), each timed output checked on sampled rows (a
    wgmma-only one against :func:`tma_once_reference`, :class:`TmaOnceSampled`, every element
    written); (4) ``ncu``: the
    Nsight Compute results gathered by ``tools/gpu_swizzle.py`` (a separate profiled process), kept
    as given. Medians; never asserted on."""
    from ..core import bench, checks, records, runtime
    say = progress or (lambda _s: None)
    cfgs = variants()
    runtime.precompile([W.compile_job(c) for c in cfgs])
    out: dict = {"prediction": PREDICTION, "model": [], "variants": {}, "checks": [], "rows": [],
                 "baseline_library": bench.baseline_library()}
    for c in cfgs:
        ck = W.compile_ws(c)
        out["variants"][variant_key(c)] = {
            "label": c.label(), "swizzle": c.swizzle, "row_boxes": c.row_boxes,
            **({"tma_once": True} if c.tma_once else {}),
            "tma_loads_per_stage": tma_loads_per_stage(c), "registers": ck.resources.registers,
            "spill_bytes": ck.resources.spill_stores, "smem_bytes": c.smem_total,
            "defines": {k: v for k, v in c.defines.items()}, **shared_lsu_instructions(ck)}
        out["model"].append(bank_model(c))
    if check:
        out["checks"] = check_variants(cfgs, progress=say)
        say(f"{len(out['checks'])} checks passed")
    rng = np.random.default_rng()
    lib = out["baseline_library"]
    for size in sizes:
        flop = bench.gemm_flop(size, size, size)
        a, b = checks.random_operands(size, size, size, "float16", None)
        da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
        dbt = DeviceArray.from_host(np.ascontiguousarray(b.T))
        dc = DeviceArray.poisoned((size, size), np.dtype("float16"))
        sref = checks.timed_output_reference(a, b, "float16", rng)
        once_ref = {}                         # grid -> TmaOnceSampled (wgmma-only variants)
        if lib:
            t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
            out["rows"].append({"size": size, "kernel": "cuBLAS", "swizzle": None, **t.as_dict(),
                                "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": sref.check(dc).as_dict()})
            say(f"{size}³ cuBLAS: {out['rows'][-1]['tflops']:.0f} TFLOP/s")
        for c in cfgs:
            dc.poison()
            g = W.make_gemm(c, da, dbt, dc)
            t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
            g.check_error()
            if c.tma_once:
                if g.grid not in once_ref:
                    once_ref[g.grid] = TmaOnceSampled(a, b.T, c, g.grid, rng)
                chk = once_ref[g.grid].check(dc)
            else:
                chk = checks.check_sampled_rows(dc, a, b, "float16", c.label(), sampled=sref)
            if not chk.passed:
                raise RuntimeError(f"timed run wrong: {c.label()} {size}³: {chk.as_dict()}")
            out["rows"].append({"size": size, "kernel": "ours", "swizzle": c.swizzle,
                                "row_boxes": c.row_boxes,
                                **({"tma_once": True} if c.tma_once else {}),
                                "variant": variant_key(c),
                                "label": c.label(), **t.as_dict(),
                                "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": chk.as_dict(), "grid": g.grid})
            say(f"{size}³ {variant_name(c.swizzle, c.row_boxes, c.tma_once)}: "
                f"{out['rows'][-1]['tflops']:.0f} TFLOP/s"
                f"{' (wgmma on reused stages, not a GEMM)' if c.tma_once else ''}")
            del g
        del da, db, dbt, dc
    out["ncu"] = ncu if ncu is not None else {"available": False, "why": "not asked"}
    out["table"] = swizzle_table(out)
    out["table_tma_once"] = tma_once_rows(out)
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def _ncu_for(results: dict, swizzle, row_boxes: int = 1, tma_once: bool = False) -> dict:
    """Nsight Compute's counters of one variant ({} without them); ``swizzle`` may also be a
    :func:`variant_key` string."""
    n = results.get("ncu") or {}
    key = swizzle if isinstance(swizzle, str) else _key(swizzle, row_boxes, tma_once)
    return (n.get("variants") or {}).get(key, {}) if n.get("available") else {}


def _loads_per_stage(results: dict, swizzle: int, row_boxes: int, tma_once: bool = False) -> int:
    """TMA loads per stage of a variant: from the record where it has them, else from the
    configuration (a first-generation record has none)."""
    v = (results.get("variants") or {}).get(_key(swizzle, row_boxes, tma_once)) or {}
    if v.get("tma_loads_per_stage"):
        return int(v["tma_loads_per_stage"])
    return tma_loads_per_stage(base_config().replace(swizzle=swizzle, row_boxes=row_boxes,
                                                     tma_once=tma_once))


def swizzle_table(results: dict, tma_once: bool = False) -> list[dict]:
    """One row per (size, variant) with TMA in the loop, in the record's order (``tma_once=True``:
    the wgmma-only variants instead, their ``of_128`` against 128 B wgmma only — see
    :func:`tma_once_rows` for those set beside their TMA twins): ``swizzle``, ``row_boxes`` (1 for the
    swizzle variants and in a record from before the row boxes), ``variant`` (:func:`variant_key`),
    ``name`` (:func:`variant_name`), ``tma_loads_per_stage``, TFLOP/s, fraction of cuBLAS
    (``of_cublas``) and of the one-box 128-byte variant (``of_128``), the predicted range frozen
    before the run (:func:`predicted_ratio`; None where none was made) and whether the
    measurement is inside it, the model's conflict factor, and the Nsight Compute counters where
    they were taken. Code that wants only the four swizzles filters on ``row_boxes == 1``."""
    rows = results.get("rows", [])
    model = {m.get("variant", str(m["swizzle"])): m for m in results.get("model", [])}
    once = bool(tma_once)
    out = []
    for size in sorted({r["size"] for r in rows}):
        rs = [r for r in rows if r["size"] == size]
        cub = next((r["tflops"] for r in rs if r["kernel"] == "cuBLAS"), None)
        ref = next((r["tflops"] for r in rs if r.get("swizzle") == 128
                    and r.get("row_boxes", 1) == 1 and r["kernel"] == "ours"
                    and bool(r.get("tma_once")) == once), None)
        for r in rs:
            if r["kernel"] != "ours" or bool(r.get("tma_once")) != once:
                continue
            sw, rb = r["swizzle"], r.get("row_boxes", 1)
            key = _key(sw, rb, once)
            pred = None if once else predicted_ratio(sw, rb)
            of128 = r["tflops"] / ref if ref else None
            n = _ncu_for(results, key)
            out.append({"size": size, "swizzle": sw, "row_boxes": rb, "variant": key,
                        "name": variant_name(sw, rb, once),
                        **({"tma_once": True} if once else {}),
                        "tma_loads_per_stage": _loads_per_stage(results, sw, rb, once),
                        "tflops": r["tflops"],
                        "of_cublas": r["tflops"] / cub if cub else None, "of_128": of128,
                        "predicted": None if pred is None else list(pred),
                        "inside": None if of128 is None or pred is None
                        else bool(pred[0] - 0.005 <= of128 <= pred[1] + 0.005),
                        "model_conflicts": max(model[key]["a_read"], model[key]["b_read"])
                        if key in model else None,
                        "lsu_conflicts": n.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
                        "bank_reads": n.get("l1tex__data_bank_reads.sum")})
    return out


def tma_once_rows(results: dict) -> list[dict]:
    """The wgmma-only variants beside their TMA twins, one row per (size, swizzle) the record has
    a wgmma-only measurement for (empty for a record from before them): ``size``, ``swizzle``,
    ``name``, ``variant``; ``tflops`` (wgmma throughput on reused stages — NOT a GEMM: the
    stages are loaded once), ``of_128`` (fraction of 128 B wgmma only, same run; for 128 B
    itself: of 128 B *with* TMA), ``predicted`` / ``inside`` (:data:`PREDICTED_RATIO_TMA_ONCE`),
    ``with_tma_tflops`` / ``with_tma_of_128`` (the same swizzle with TMA, fraction of 128 B with
    TMA), ``over_tma`` (tflops / with_tma_tflops) and ``wgmma_share`` — the share of the with-TMA
    loss that remains without TMA, (1 − of_128) / (1 − with_tma_of_128), None for 128 B or where
    the with-TMA variant lost < 2 % (a share of nothing)."""
    out = []
    rows = results.get("rows", [])
    for size in sorted({r["size"] for r in rows}):
        rs = [r for r in rows if r["size"] == size and r["kernel"] == "ours"
              and r.get("row_boxes", 1) == 1]
        tma = {r["swizzle"]: r["tflops"] for r in rs if not r.get("tma_once")}
        once = {r["swizzle"]: r["tflops"] for r in rs if r.get("tma_once")}
        for sw in [x for x in SWIZZLES if x in once]:
            t, t128, o128 = tma.get(sw), tma.get(128), once.get(128)
            of = (once[sw] / t128 if t128 else None) if sw == 128 else \
                (once[sw] / o128 if o128 else None)
            w_of = t / t128 if t and t128 else None
            share = None
            if sw != 128 and of is not None and w_of is not None and w_of < 0.98:
                share = (1 - of) / (1 - w_of)
            pred = PREDICTED_RATIO_TMA_ONCE.get(sw)
            out.append({"size": size, "swizzle": sw, "name": variant_name(sw, 1, True),
                        "variant": _key(sw, 1, True), "tflops": once[sw], "of_128": of,
                        "predicted": list(pred) if pred else None,
                        "inside": None if of is None or pred is None
                        else bool(pred[0] - 0.005 <= of <= pred[1] + 0.005),
                        "with_tma_tflops": t, "with_tma_of_128": w_of,
                        "over_tma": once[sw] / t if t else None, "wgmma_share": share})
    return out


def tma_once_outcome(results: dict) -> dict:
    """Which outcome of :data:`PREDICTION_TMA_ONCE` the record shows: per size and narrow
    swizzle (32, 0) the ``wgmma_share`` s of :func:`tma_once_rows` and its class ("tma" for
    s ≤ :data:`TMA_SHARE_MAX`, "wgmma" for s ≥ :data:`WGMMA_SHARE_MIN`, else "both"), and
    ``outcome``: that class where all agree, "mixed" where they do not, None where the record has
    no wgmma-only rows (or lacks a twin). Also ``shares`` {(size, swizzle): s}."""
    rows = [r for r in tma_once_rows(results) if r["swizzle"] in (32, 0)]
    shares = {(r["size"], r["swizzle"]): r["wgmma_share"] for r in rows}
    if not rows or any(v is None for v in shares.values()):
        return {"outcome": None, "shares": shares, "classes": {}}

    def cls(v):
        return "tma" if v <= TMA_SHARE_MAX else "wgmma" if v >= WGMMA_SHARE_MIN else "both"
    classes = {k: cls(v) for k, v in shares.items()}
    kinds = set(classes.values())
    return {"outcome": kinds.pop() if len(kinds) == 1 else "mixed", "shares": shares,
            "classes": classes}


def tma_once_text(results: dict) -> str:
    """:func:`tma_once_rows` as a text table, headed so that nobody reads it as a GEMM ("" for a
    record without wgmma-only rows)."""
    rows = tma_once_rows(results)
    if not rows:
        return ""

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    lines = ["wgmma only (stages loaded once, then reused: wgmma throughput on reused stages, "
             "NOT a GEMM):",
             f"{'size':>5s} {'variant':>16s} {'TFLOP/s*':>8s} {'of 128B*':>8s} {'predicted':>10s} "
             f"{'with TMA':>8s} {'of 128B':>7s} {'*/TMA':>6s} {'wgmma share':>11s}"]
    for r in rows:
        pr = "—" if not r["predicted"] else f"{r['predicted'][0]:.2f}-{r['predicted'][1]:.2f}"
        mark = "" if r["inside"] is None else (" " if r["inside"] else "!")
        lines.append(f"{r['size']:>5d} {r['name']:>16s} {r['tflops']:8.0f} "
                     f"{f(r['of_128'], '.3f'):>7s}{mark} {pr:>10s} "
                     f"{f(r['with_tma_tflops'], '.0f'):>8s} {f(r['with_tma_of_128'], '.3f'):>7s} "
                     f"{f(r['over_tma'], '.2f'):>6s} {f(r['wgmma_share'], '.2f'):>11s}")
    lines.append("(* = wgmma only; of 128B* = of 128B wgmma only, for 128B wgmma only itself of 128B "
                 "with TMA; wgmma share = (1 - of 128B*) / (1 - of 128B): the part of the with-TMA "
                 "loss left without TMA; ! = outside PREDICTION_TMA_ONCE)")
    return "\n".join(lines)


def box_count_rows(results: dict) -> list[dict]:
    """The row-box experiment side by side, one row per number of TMA loads per stage (2, 4, 8,
    16, 32): ``loads``, then for the swizzle variant issuing that many (one box along the rows:
    128 B, 64 B, 32 B, none) and for the 128-byte variant loaded as that many row boxes (128 B
    ×1 .. ×16) — ``swizzle`` / ``row_box``, each None where the record has no such variant, else a
    dict: ``name`` (:func:`variant_name`), ``variant`` (:func:`variant_key`), ``of_128``
    ({size: fraction of the one-box 128-byte variant's TFLOP/s, same run}), ``duration_us``
    (Nsight Compute's profiled launch at :func:`ncu_size`, None without ncu) and
    ``ncu_of_128`` (that duration over the one-box 128-byte variant's). The 128-byte one-box
    variant (2 loads per stage) appears in both columns. Empty for a record without row boxes."""
    tab = swizzle_table(results)
    if not any(r["row_boxes"] > 1 for r in tab):
        return []
    ncu = {r["variant"]: r["duration_us"] for r in ncu_rows(results)}
    t128 = ncu.get("128")

    def entry(pick):
        rs = [r for r in tab if pick(r)]
        if not rs:
            return None
        key = rs[0]["variant"]
        us = ncu.get(key)
        return {"name": rs[0]["name"], "variant": key, "swizzle": rs[0]["swizzle"],
                "row_boxes": rs[0]["row_boxes"], "tma_loads_per_stage": rs[0]["tma_loads_per_stage"],
                "of_128": {r["size"]: r["of_128"] for r in rs}, "duration_us": us,
                "ncu_of_128": us / t128 if us and t128 else None}
    out = []
    for n in sorted({r["tma_loads_per_stage"] for r in tab}):
        out.append({"loads": n,
                    "swizzle": entry(lambda r: r["row_boxes"] == 1 and r["tma_loads_per_stage"] == n),
                    "row_box": entry(lambda r: r["swizzle"] == 128
                                     and r["tma_loads_per_stage"] == n
                                     and (r["row_boxes"] > 1 or n == 2))})
    return out


def box_count_text(results: dict) -> str:
    """:func:`box_count_rows` as a text table: TMA loads per stage, then for the swizzle variant
    and the 128-byte row-box variant issuing that many, the fraction of 128 B ×1 at each timed
    size and Nsight Compute's profiled µs (with its ratio to 128 B ×1). "" without row boxes."""
    rows = box_count_rows(results)
    if not rows:
        return ""
    sizes = sorted({s for r in rows for side in ("swizzle", "row_box") if r[side]
                    for s in r[side]["of_128"]})
    size_h = " / ".join(f"{s}³" for s in sizes)
    us_at = ncu_size(results)
    us_h = f"ncu µs{f' {us_at}³' if us_at else ''}"
    uw = max(11, len(us_h))

    def cell(e):
        if e is None:
            return f"{'—':>14s} {'':>{len(size_h)}s} {'':>{uw}s}"
        frac = " / ".join("—" if e["of_128"].get(s) is None else f"{e['of_128'][s]:.2f}"
                          for s in sizes)
        us = "—" if e["duration_us"] is None else (
            f"{e['duration_us']:.0f} ({e['ncu_of_128']:.2f})" if e["ncu_of_128"] else
            f"{e['duration_us']:.0f}")
        return f"{e['name']:>14s} {frac:>{len(size_h)}s} {us:>{uw}s}"
    head = f"{'variant':>14s} {size_h:>{len(size_h)}s} {us_h:>{uw}s}"
    lines = ["fraction of 128B ×1 (same run), and Nsight Compute's profiled launch (ratio to 128B ×1):",
             f"{'TMA loads':>9s} | {'one box along the rows (swizzle)':^{len(head)}s} | "
             f"{'128-byte swizzle, R row boxes':^{len(head)}s}",
             f"{'per stage':>9s} | {head} | {head}"]
    for r in rows:
        lines.append(f"{r['loads']:>9d} | {cell(r['swizzle'])} | {cell(r['row_box'])}")
    return "\n".join(lines)


def ncu_size(results: dict) -> int | None:
    """The cube size n (M = N = K) Nsight Compute profiled, or None where it cannot be told.

    ``tools/gpu_swizzle.py`` profiles one launch per variant at one size (its ``NCU_SIZE``), which
    is not the size of every timed row. A record that names it (``ncu["size"]``) is taken at its
    word; an older one is read from its own counters: the 128-byte variant's TMA load bytes
    (``l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld``) are exactly A once per column of
    tiles and B once per row of tiles, 2·n³·itemsize·(1/bn + 1/bm) bytes for the base
    configuration's tile (no cluster, so no multicast). The n that reproduces them exactly is the
    size; None if none does.
    """
    n = results.get("ncu") or {}
    if not n.get("available"):
        return None
    if n.get("size"):
        return int(n["size"])
    got = _ncu_for(results, 128).get("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum")
    if not got:
        return None
    cfg = base_config()
    es = np.dtype(cfg.dtype).itemsize

    def tma_bytes(size):
        return size * size * es * (size // cfg.bn) + size * size * es * (size // cfg.bm)
    guess = round((got / (es * (1 / cfg.bn + 1 / cfg.bm))) ** (1 / 3))
    for size in (guess - 1, guess, guess + 1):
        if size % cfg.bm == 0 and size % cfg.bn == 0 and tma_bytes(size) == got:
            return size
    return None


def _ncu_keys(results: dict, tma_once: bool = False) -> list[tuple[int, int, bool]]:
    """(swizzle, row_boxes, tma_once) of every variant Nsight Compute profiled, in
    :func:`variants` order (a first-generation record: the four swizzles); the wgmma-only ones
    only with ``tma_once``."""
    n = results.get("ncu") or {}
    have = set((n.get("variants") or {}) if n.get("available") else ())
    keys = [(c.swizzle, c.row_boxes, c.tma_once) for c in variants()
            if tma_once or not c.tma_once]
    return [k for k in keys if _key(*k) in have]


def ncu_rows(results: dict, tma_once: bool = False) -> list[dict]:
    """One row per variant profiled by Nsight Compute (empty without ncu), in :func:`variants`
    order — the wgmma-only variants only with ``tma_once`` (then each row has ``tma_once``):
    ``swizzle``, ``row_boxes``, ``variant``, ``name``, ``tma_loads_per_stage``, the size it
    ran at (:func:`ncu_size`), the LSU shared-memory instructions in its cubin's SASS
    (:func:`shared_lsu_instructions`, from the record), the LSU shared instructions executed and
    their bank conflicts (loads + stores), all shared-memory bank reads and writes of the L1/shared
    data path (wgmma and TMA included), the TMA load bytes and the profiled duration (µs). Code
    that wants only the four swizzles filters on ``row_boxes == 1``."""
    size = ncu_size(results)
    out = []
    for sw, rb, once in _ncu_keys(results, tma_once):
        n = _ncu_for(results, sw, rb, once)
        key = _key(sw, rb, once)

        def get(*names):
            vals = [n.get(x) for x in names]
            return None if any(v is None for v in vals) else sum(vals)
        out.append({
            "swizzle": sw, "row_boxes": rb, "variant": key, "name": variant_name(sw, rb, once),
            **({"tma_once": True} if once else {}),
            "tma_loads_per_stage": _loads_per_stage(results, sw, rb, once), "size": size,
            "sass_lsu_shared": (results.get("variants", {}).get(key) or {}).get("lsu_shared"),
            "lsu_instructions": get("smsp__sass_inst_executed_op_shared_ld.sum",
                                    "smsp__sass_inst_executed_op_shared_st.sum"),
            "lsu_conflicts": get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
            "bank_reads": get("l1tex__data_bank_reads.sum"),
            "bank_writes": get("l1tex__data_bank_writes.sum"),
            "tma_bytes": get("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"),
            "duration_us": None if n.get("gpu__time_duration.sum") is None
            else n["gpu__time_duration.sum"] / 1e3})
    return out


def ncu_text(results: dict, row_boxes: bool = True, tma_once: bool | None = None) -> str:
    """Nsight Compute's counters, one line per variant, headed by the size profiled ("" without
    ncu), with the TMA loads per stage and the duration relative to 128 B ×1 (``row_boxes=False``:
    the four swizzle variants only, without the 128-byte row-box ones; ``tma_once``, by default
    as ``row_boxes``: the wgmma-only variants too, last). The LSU columns
    count only LDS/STS-type instructions: a cubin without any (the ``SASS LSU`` column) shows 0
    there whatever its layout, since wgmma and TMA do not use the LSU pipe; the bank reads and
    writes count every shared-memory access."""
    once = row_boxes if tma_once is None else tma_once
    rows = [r for r in ncu_rows(results, once) if row_boxes or r["row_boxes"] == 1]
    if not rows:
        return ""
    size = rows[0]["size"]
    t128 = next((r["duration_us"] for r in rows if r["variant"] == "128"), None)

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    lines = [f"Nsight Compute, one launch per variant at "
             f"{f'{size}³' if size else 'a size the record does not name'} (not every timed size):",
             f"{'variant':>14s} {'TMA/stage':>9s} {'SASS LSU':>8s} {'LSU inst':>8s} {'LSU confl':>9s} "
             f"{'bank reads':>11s} {'bank writes':>11s} {'TMA bytes':>10s} {'µs':>6s} {'of 128B':>7s}"]
    for r in rows:
        rel = r["duration_us"] / t128 if t128 and r["duration_us"] else None
        lines.append(f"{r['name']:>14s} {r['tma_loads_per_stage']:>9d} "
                     f"{f(r['sass_lsu_shared'], 'd'):>8s} {f(r['lsu_instructions'], '.0f'):>8s} "
                     f"{f(r['lsu_conflicts'], '.0f'):>9s} {f(r['bank_reads'], '.4g'):>11s} "
                     f"{f(r['bank_writes'], '.4g'):>11s} {f(r['tma_bytes'], '.3g'):>10s} "
                     f"{f(r['duration_us'], '.0f'):>6s} {f(rel, '.2f'):>7s}")
    return "\n".join(lines)


def summarize_swizzle(rec, row_boxes: bool = True, tma_once: bool | None = None) -> str:
    """The short tables of a ``swizzle`` record: Nsight Compute's counters once per variant, at
    the size it profiled (:func:`ncu_text`); then per timed size and variant (the swizzles, then
    the 128-byte row boxes), TMA loads per stage, TFLOP/s, of cuBLAS, of the one-box 128-byte
    variant against the prediction and the model's conflict factor; then the wgmma-only variants
    beside their TMA twins (:func:`tma_once_text`, where the record has them). ``row_boxes=False``
    leaves the row-box variants out of both tables (:func:`box_count_text` sets them beside the
    swizzles); ``tma_once`` (by default as ``row_boxes``) keeps or leaves out the wgmma-only
    ones."""
    once = row_boxes if tma_once is None else tma_once
    res = rec.results if hasattr(rec, "results") else rec
    table = res.get("table") or swizzle_table(res)
    table = [r for r in table if row_boxes or r.get("row_boxes", 1) == 1]
    n = res.get("ncu") or {}
    why = str(n.get("why", "absent"))
    why = why if len(why) <= 160 else why[:157] + "..."
    lines = [f"swizzle experiment ({base_config().label()}): {len(res.get('checks', []))} "
             "checks passed", "Nsight Compute: " + ("yes" if n.get("available") else
                                                   f"not used ({why})")]
    if ncu_text(res, row_boxes, once):
        lines += [ncu_text(res, row_boxes, once), "timed:"]
    lines.append(f"{'size':>5s} {'variant':>14s} {'TMA/stage':>9s} {'TFLOP/s':>8s} {'cuBLAS':>7s} "
                 f"{'of 128B':>8s} {'predicted':>10s} {'model':>6s}")

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    for r in table:
        rb = r.get("row_boxes", 1)
        name = r.get("name") or variant_name(r["swizzle"], rb)
        loads = r.get("tma_loads_per_stage") or _loads_per_stage(res, r["swizzle"], rb)
        pr = "—" if not r.get("predicted") else f"{r['predicted'][0]:.2f}-{r['predicted'][1]:.2f}"
        mark = "" if r["inside"] is None else (" " if r["inside"] else "!")
        lines.append(f"{r['size']:>5d} {name:>14s} {loads:>9d} {r['tflops']:8.0f} "
                     f"{f(r['of_cublas'], '.2f'):>7s} {f(r['of_128'], '.3f'):>8s}{mark} {pr:>10s} "
                     f"{f(r['model_conflicts'], '.2f'):>6s}")
    if once and tma_once_text(res):
        lines.append(tma_once_text(res))
    lines.append("(! = outside the prediction frozen in asynctc.swizzle.PREDICTION; "
                 "of 128B = of the one-box 128-byte variant)")
    return "\n".join(lines)


SUITES = {"swizzle": (measure_swizzle, summarize_swizzle, "sm_90a")}
