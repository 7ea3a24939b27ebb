"""Chapter 06's record suite ``ws_limit``: what limits the top rung, measured beside cuBLAS.

:func:`measure_limit` times rung 7's schedule at each raster width of :data:`GROUPS` beside cuBLAS
(``ROUNDS`` rounds, every output checked on sampled rows) and records with it the Nsight Compute
counters it is given (``ncu``: what ``tools/gpu_ch06_limit.py`` gathers first, running
:func:`ncu_child` under Nsight Compute, asking for :data:`METRICS`, and reading its launches with
:func:`attribute`). :func:`summary_rows` / :func:`summarize_limit` read the record back as text;
:func:`asynctc.warp_specialization.limit.limit_rows` as rows, and
:func:`asynctc.warp_specialization.figures.plot_raster` draws it. Writes records, never plots.

Why: the ladder's top rung (rung 7) reaches 0.98 / 0.99 of cuBLAS at 4096³ / 8192³ (fp16), not the
issue's 1.00. Per clock it does *more* than cuBLAS at 8192³ and less at 4096³. This suite asks
the hardware what differs, at 4096³ and 8192³:

(1) Nsight Compute (run by tools/gpu_ch06_limit.py when `ncu` is there; in a child process, at
    ncu's default locked base clock so every kernel runs at the same clock): per size, rung 7 at
    each raster width of NCU_GROUPS and then cuBLAS once — which kernel cuBLAS runs (its name
    carries its tile, cluster and schedule), launch shape, elapsed cycles, L2 traffic and
    throughput, DRAM bytes, TMA bytes.
(2) The raster width of the persistent tile order (GROUP_M tile rows per group; the ladder's is 8)
    at 4096³ and 8192³, fp16 and bf16, beside cuBLAS in the same run: ROUNDS rounds of cuBLAS then
    every width (bench.time_gpu, clock in flight, every output checked on sampled rows); each
    width's ratio is its median over the rounds against cuBLAS's median.

Predictions, written before the runs (2026-11-30).
First run (one width, 4096³ only for the timings): cuBLAS's kernel at 4096³ is a 128×256 or
256×128 tile with a 2-CTA cluster like ours, so the per-clock gap comes from the schedule, not the
tile; L2 throughput below 70 % for both (not an L2 wall); GROUP_M moves rung 7 by ≤ 1 % at 4096³.
What happened: cuBLAS runs nvjet 256×128 (1×2 cluster) at 4096³ and 320×128 (1×2, 3 stages) at
8192³; at the locked clock ours needs 1.0 % / 0.3 % more cycles; L2 throughput 46 / 50 % (ours)
against 38 / 42 %; ours reads 0.19 / 2.10 GB from DRAM against 0.15 / 1.25 GB — 1.7× at 8192³;
group_m 2..32 at 4096³: 0.977–0.988 of cuBLAS.
Second run (this version): at 8192³ a wider raster group (16 or 32 tile rows) cuts rung 7's DRAM
reads towards cuBLAS's 1.25 GB (the group's A and B then fit the 60 MiB L2 better); since the
H200 runs this size power-limited, fewer DRAM bytes should buy clock: rung 7 at group_m 16
reaches ≥ 1.00 of cuBLAS at 8192³ (fp16 and bf16); at 4096³ (A and B nearly fit L2 whole) the
width changes nothing beyond ±1 % and the gap stays 1–2 %. What happened: both held (8192³ 1.01,
4096³ 0.987 with groups of 16), and our kernel moved ~20 % more bytes through L2 (`lts__t_bytes`)
than cuBLAS, which our per-k-tile arithmetic does not explain.
Third run (this version adds L2 sectors by source: the SMs, and the fabric between the two L2
partitions; writes): prediction — the extra L2 bytes are fabric traffic (data fetched from the far
L2 partition, counted again where it lands), not more requests from the SMs: ours and cuBLAS's SM
read sectors within 5 % of each other, ours with ≥ 1.3× cuBLAS's fabric sectors.
"""

from __future__ import annotations

import statistics

import numpy as np

from .. import pipeline as P
from ..core import bench, checks, runtime
from ..core.memory import DeviceArray
from .config import WSConfig
from .ladder import RUNG_BY_NAME
from .launch import compile_job, make_gemm

SIZES = (4096, 8192)
GROUPS = (4, 8, 16, 32)
NCU_GROUPS = (8, 16, 32)
DTYPES = ("float16", "bfloat16")
DTYPE = "float16"   # what ncu profiles
ROUNDS = 3

#: Counters asked of Nsight Compute per kernel (those this ncu knows; names from the Nsight Compute
#: Profiling Guide's metric structure unit__counter.rollup).
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.max",
    "sm__cycles_elapsed.avg.per_second",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "lts__t_bytes.sum",
    "lts__t_sectors_srcunit_tex.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sectors_op_write.sum",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_op_read_hit_rate.pct",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "l1tex__data_bank_reads.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "launch__grid_size",
    "launch__block_size",
    "launch__cluster_dim_x",
    "launch__cluster_dim_y",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
)


def top(group_m: int = 8, dtype: str = DTYPE) -> WSConfig:
    """Rung 7: the ladder's top rung, with ``group_m`` tile rows per raster group."""
    return RUNG_BY_NAME["tma_store"].make(dtype).replace(group_m=group_m)


def ncu_child() -> int:
    """Per size of SIZES: one launch of rung 7 per width of NCU_GROUPS, then one cuBLAS GEMM, on
    the same operands."""
    rng = np.random.default_rng()
    for n in SIZES:
        a, b, da, db, dbt = P.device_problem(n, DTYPE, rng)
        dc = DeviceArray.poisoned((n, n), checks.np_dtype(DTYPE))
        for gm in NCU_GROUPS:
            g = make_gemm(top(gm), da, dbt, dc)
            g.launcher()()
            g.check_error()
        bench.cublas_gemm(da, db, dc)()
        runtime.default_stream().sync()
        del g, da, db, dbt, dc
    return 0


def attribute(rows: list[dict], metrics) -> list[dict]:
    """ncu's rows (launch order) as the child's kernels: per size of SIZES, ours (the kernel named
    gemm_warp_specialized) once per width of NCU_GROUPS, then every other kernel up to the next
    one of ours — cuBLAS's (a GEMM may be more than one kernel, e.g. a split-K reduction).
    Launches before the first of ours and after the last size are dropped."""
    kernels, ours_seen = [], 0
    for r in rows:
        name = str(r.get("Kernel Name", ""))
        ours = "gemm_warp_specialized" in name
        if ours:
            ours_seen += 1
        size_i = (ours_seen - 1) // len(NCU_GROUPS)
        if ours_seen == 0 or size_i >= len(SIZES):
            continue
        row = {"size": SIZES[size_i], "who": "ours" if ours else "cuBLAS", "kernel": name}
        if ours:
            row["group_m"] = NCU_GROUPS[(ours_seen - 1) % len(NCU_GROUPS)]
        kernels.append({**row, **{m: r.get(m) for m in metrics}})
    return kernels


def limit_jobs() -> list:
    """Every compile job of the suite: rung 7 at each width of GROUPS and NCU_GROUPS, each dtype."""
    return [compile_job(top(g, dt)) for g in sorted(set(GROUPS) | set(NCU_GROUPS)) for dt in DTYPES]


def measure_limit(progress=None, ncu: dict | None = None, reps: int = 20, sizes=SIZES,
                  dtypes=DTYPES, rounds: int = ROUNDS) -> dict:
    """The "ws_limit" suite: per size and dtype, ``rounds`` rounds of cuBLAS then rung 7 at every
    raster width of :data:`GROUPS` (``bench.time_gpu``, clock in flight, every output checked on
    sampled rows against float64); each width's ratio is its median over the rounds against
    cuBLAS's median (:func:`summary_rows`). ``ncu``: the Nsight Compute results to record with the
    timings (``tools/gpu_ch06_limit.py`` gathers them first; None: not profiled). Medians; never
    asserted on."""
    say = progress or (lambda _s: None)
    if ncu is None:
        ncu = {"available": False, "why": "not profiled (tools/gpu_ch06_limit.py runs Nsight Compute "
                                          "before the timings)"}
    rng = np.random.default_rng()
    out = {"ncu": ncu, "sizes": list(sizes), "dtypes": list(dtypes), "groups": list(GROUPS),
           "rounds": rounds, "rows": [], "baseline_library": bench.baseline_library()}
    for size in sizes:
        for dt in dtypes:
            out["rows"] += time_rounds(size, dt, {gm: top(gm, dt) for gm in GROUPS}, "group_m",
                                       rounds, reps, rng)
            summ = summary_for(out["rows"], size, dt, GROUPS)
            say(f"{size}³ {dt}: cuBLAS {summ[0]['tflops']:.0f} TFLOP/s; of cuBLAS by group_m "
                + ", ".join(f"{r['group_m']}: {r['of_cublas']:.3f}" for r in summ[1:]))
    out["summary"] = summary_rows(out)
    return out


def time_rounds(size: int, dt: str, configs: dict, field: str, rounds: int, reps: int,
                rng) -> list[dict]:
    """One size³ problem in ``dt`` on fresh random inputs: ``rounds`` rounds of cuBLAS, then each
    of ``configs`` ({name: WSConfig}) in turn (``bench.time_gpu``, clock in flight; the output
    poisoned before each timing and checked on sampled rows against float64 after). One row per
    timing; ours carry ``field: name`` and the config's label. Shared by this suite and
    :mod:`.order_suite`."""
    a, b, da, db, dbt = P.device_problem(size, dt, rng)
    ref = checks.timed_output_reference(a, b, dt, rng)
    flop = bench.gemm_flop(size, size, size)
    dc = DeviceArray.poisoned((size, size), checks.np_dtype(dt))
    gemms = {name: make_gemm(cfg, da, dbt, dc) for name, cfg in configs.items()}
    rows = []
    for rnd in range(rounds):
        dc.poison()
        t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
        rows.append({"size": size, "dtype": dt, "round": rnd, "kernel": "cuBLAS", **t.as_dict(),
                     "tflops": bench.tflops(flop, t.median_ms),
                     "rel_err_rows": ref.check(dc).as_dict()})
        for name, g in gemms.items():
            dc.poison()
            t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
            g.check_error()
            err = checks.check_sampled_rows(dc, a, b, dt, g.cfg.label(), sampled=ref)
            rows.append({"size": size, "dtype": dt, "round": rnd, "kernel": "ours", field: name,
                         "label": g.cfg.label(), **t.as_dict(),
                         "tflops": bench.tflops(flop, t.median_ms), "rel_err_rows": err.as_dict()})
    del gemms, da, db, dbt, dc
    return rows


def summary_for(rows: list[dict], size: int, dt: str, groups) -> list[dict]:
    """For one (size, dtype): cuBLAS's row, then one per raster width of ``groups`` — the median
    TFLOP/s and in-flight clock over the rounds, and (ours) the ratios to cuBLAS's medians."""
    sel = [r for r in rows if (r["size"], r["dtype"]) == (size, dt)]
    cb = [r for r in sel if r["kernel"] == "cuBLAS"]
    cbt = statistics.median(r["tflops"] for r in cb)
    cbc = statistics.median(r.get("sm_mhz") or 0.0 for r in cb)
    out = [{"size": size, "dtype": dt, "kernel": "cuBLAS", "tflops": cbt, "sm_mhz": cbc}]
    for gm in groups:
        rs = [r for r in sel if r["kernel"] == "ours" and r["group_m"] == gm]
        t = statistics.median(r["tflops"] for r in rs)
        c = statistics.median(r.get("sm_mhz") or 0.0 for r in rs)
        out.append({"size": size, "dtype": dt, "kernel": "ours", "group_m": gm, "tflops": t,
                    "sm_mhz": c, "of_cublas": t / cbt, "clock_of_cublas": c / cbc if cbc else None})
    return out


def summary_rows(res: dict) -> list[dict]:
    """:func:`summary_for` of every (size, dtype) of the record, in order."""
    return [r for size in res["sizes"] for dt in res["dtypes"]
            for r in summary_for(res["rows"], size, dt, res["groups"])]


def summarize_limit(rec) -> str:
    """The record as text: the Nsight Compute table (or why there is none), then each raster
    width's medians beside cuBLAS's."""
    res = rec.results
    lines = [rec.label()]
    n = res.get("ncu") or {}
    if n.get("available"):
        def f(k, m, scale=1.0, fmt=".0f"):
            v = k.get(m)
            return "-" if not isinstance(v, float) else format(v * scale, fmt)
        lines.append(f"{'size':>5s} {'who':6s} {'µs':>7s} {'Mcyc':>6s} {'MHz':>5s} {'gmma%el':>7s} "
                     f"{'L2 GB':>6s} {'L2%':>4s} {'DRAM GB':>7s} {'grid':>5s} {'cl':>3s} kernel")
        for k in n["kernels"]:
            lines.append(
                f"{k['size']:5d} {k['who']:6s} {f(k, 'gpu__time_duration.sum', 1e-3, '.1f'):>7s} "
                f"{f(k, 'sm__cycles_elapsed.max', 1e-6, '.3f'):>6s} "
                f"{f(k, 'sm__cycles_elapsed.avg.per_second', 1e-6):>5s} "
                f"{f(k, 'sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed', 1, '.1f'):>7s} "
                f"{f(k, 'lts__t_bytes.sum', 1e-9, '.1f'):>6s} "
                f"{f(k, 'lts__throughput.avg.pct_of_peak_sustained_elapsed'):>4s} "
                f"{f(k, 'dram__bytes_read.sum', 1e-9, '.2f'):>7s} {f(k, 'launch__grid_size'):>5s} "
                f"{f(k, 'launch__cluster_dim_x')}x{f(k, 'launch__cluster_dim_y')} "
                f"{k['kernel'][:70]}" + (f" group_m={k['group_m']}" if "group_m" in k else ""))
    else:
        lines.append(f"ncu: not used ({n.get('why')})")
    lines.append(f"raster width of rung 7 beside cuBLAS (medians of {res['rounds']} rounds):")
    for r in res["summary"]:
        what = "cuBLAS" if r["kernel"] == "cuBLAS" else f"group_m={r['group_m']}"
        ratio = (f"  {r['of_cublas']:.3f} of cuBLAS, clock {r['clock_of_cublas']:.3f}"
                 if "of_cublas" in r else "")
        lines.append(f"  {r['size']}³ {r['dtype']:8s} {what:11s} {r['tflops']:6.0f} TFLOP/s "
                     f"{r['sm_mhz']:5.0f} MHz{ratio}")
    return "\n".join(lines)


SUITES = {"ws_limit": (measure_limit, summarize_limit, "sm_90a")}
