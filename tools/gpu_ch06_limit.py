"""Chapter 06's limit, measured: the top rung and cuBLAS under Nsight Compute, and the top rung's
raster width timed beside cuBLAS.

Run from the repository root on an sm_90 machine with torch (about 2 minutes on an H200):

    python tools/gpu_ch06_limit.py --out $OUT            # details in $OUT/results.json
    python tools/gpu_ch06_limit.py --out $OUT --record   # ... and write data/<gpu>/ws_limit.json

Why: the ladder's top rung (rung 7) reaches 0.98 / 0.99 of cuBLAS at 4096³ / 8192³ (fp16), not the
issue's 1.00. Per clock it does *more* than cuBLAS at 8192³ and less at 4096³. This script asks
the hardware what differs, at 4096³ and 8192³:

(1) Nsight Compute (when `ncu` is here; in a child process, at ncu's default locked base clock so
    every kernel runs at the same clock): per size, rung 7 at each raster width of NCU_GROUPS and
    then cuBLAS once — which kernel cuBLAS runs (its name carries its tile, cluster and schedule),
    launch shape, elapsed cycles, L2 traffic and throughput, DRAM bytes, TMA bytes.
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
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import find_ncu, ncu_metrics, ncu_profile, parser, record_suite, start  # noqa: E402
from asynctc.core.ncu import metric_base  # noqa: E402
from asynctc import warp_specialization as W  # noqa: E402
from asynctc import pipeline as P  # noqa: E402

SIZES = (4096, 8192)
GROUPS = (4, 8, 16, 32)
NCU_GROUPS = (8, 16, 32)
DTYPES = ("float16", "bfloat16")
DTYPE = "float16"   # what ncu profiles
ROUNDS = 3
NCU_TIMEOUT_S = 200

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


def top(group_m: int = 8, dtype: str = DTYPE) -> W.WSConfig:
    """Rung 7: the ladder's top rung, with ``group_m`` tile rows per raster group."""
    return W.RUNG_BY_NAME["tma_store"].make(dtype).replace(group_m=group_m)


def ncu_child() -> int:
    """Per size of SIZES: one launch of rung 7 per width of NCU_GROUPS, then one cuBLAS GEMM, on
    the same operands."""
    import numpy as np
    from asynctc.core import bench, runtime
    from asynctc.core.memory import DeviceArray
    rng = np.random.default_rng()
    for n in SIZES:
        a, b, da, db, dbt = P.device_problem(n, DTYPE, rng)
        dc = DeviceArray.poisoned((n, n), P.np_dtype(DTYPE))
        for gm in NCU_GROUPS:
            g = W.make_gemm(top(gm), da, dbt, dc)
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


def run_ncu(say) -> dict:
    ncu = find_ncu()
    if not ncu:
        return {"available": False, "why": "no ncu / nv-nsight-cu-cli here"}
    out = {"available": False, "ncu": ncu, "clock_control": "ncu default (base clock, locked)"}
    asked = ncu_metrics(ncu, METRICS, metric_base)
    out.update(asked)
    if "why" in asked:
        return out
    metrics = asked["metrics"]
    say(f"ncu: {len(metrics)} metrics ({len(out['metrics_missing'])} unknown to this ncu)")
    rows, p = ncu_profile(ncu, metrics, __file__, NCU_TIMEOUT_S)
    if p is None:
        out["why"] = f"ncu took more than {NCU_TIMEOUT_S} s"
        return out
    out["returncode"] = p.returncode
    kernels = attribute(rows, metrics)
    if not any(k["who"] == "cuBLAS" for k in kernels):
        out["why"] = (f"ncu gave {len(rows)} launches, none of them cuBLAS after ours (rc "
                      f"{p.returncode}): {(p.stdout + p.stderr)[-1500:]}")
        out["kernels"] = kernels
        return out
    out["available"] = True
    out["kernels"] = kernels
    return out


def measure(say, ncu: dict, reps: int, sizes=SIZES, dtypes=DTYPES, rounds: int = ROUNDS) -> dict:
    import numpy as np
    from asynctc.core import bench, checks
    from asynctc.core.memory import DeviceArray
    rng = np.random.default_rng()
    out = {"ncu": ncu, "sizes": list(sizes), "dtypes": list(dtypes), "groups": list(GROUPS),
           "rounds": rounds, "rows": [], "baseline_library": bench.baseline_library()}
    for size in sizes:
        for dt in dtypes:
            a, b, da, db, dbt = P.device_problem(size, dt, rng)
            ref = checks.timed_output_reference(a, b, dt, rng)
            flop = bench.gemm_flop(size, size, size)
            dc = DeviceArray.poisoned((size, size), P.np_dtype(dt))
            gemms = {gm: W.make_gemm(top(gm, dt), da, dbt, dc) for gm in GROUPS}
            for rnd in range(rounds):
                dc.poison()
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                out["rows"].append({"size": size, "dtype": dt, "round": rnd, "kernel": "cuBLAS",
                                    **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                                    "rel_err_rows": ref.check(dc).as_dict()})
                for gm, g in gemms.items():
                    dc.poison()
                    t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                    g.check_error()
                    err = checks.check_sampled_rows(dc, a, b, dt, g.cfg.label(), sampled=ref)
                    out["rows"].append({"size": size, "dtype": dt, "round": rnd, "kernel": "ours",
                                        "group_m": gm, "label": g.cfg.label(), **t.as_dict(),
                                        "tflops": bench.tflops(flop, t.median_ms),
                                        "rel_err_rows": err.as_dict()})
            del gemms, da, db, dbt, dc
            summ = summary_for(out["rows"], size, dt, GROUPS)
            say(f"{size}³ {dt}: cuBLAS {summ[0]['tflops']:.0f} TFLOP/s; of cuBLAS by group_m "
                + ", ".join(f"{r['group_m']}: {r['of_cublas']:.3f}" for r in summ[1:]))
    out["summary"] = summary_rows(out)
    return out


def summary_for(rows: list[dict], size: int, dt: str, groups) -> list[dict]:
    """For one (size, dtype): cuBLAS's row, then one per raster width of ``groups`` — the median
    TFLOP/s and in-flight clock over the rounds, and (ours) the ratios to cuBLAS's medians."""
    import statistics
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


def summarize(rec) -> str:
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


def main() -> int:
    ap = parser(__doc__, "out_ws_limit", "ws_limit", "ncu only, no timings")
    ap.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute")
    ap.add_argument("--reps", type=int, default=20, help="launches per timing sample set")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ncu_child:
        return ncu_child()
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    from asynctc.core import runtime
    runtime.precompile([W.compile_job(top(g, dt)) for g in sorted(set(GROUPS) | set(NCU_GROUPS))
                        for dt in DTYPES])
    say(f"compiled rung 7 at group_m {GROUPS}")
    ncu = {"available": False, "why": "--no-ncu"} if args.no_ncu else run_ncu(say)
    say("ncu: " + ("counters taken" if ncu.get("available") else f"not used: {ncu.get('why')}"))
    (out_dir / "ncu.json").write_text(json.dumps(ncu, indent=1))
    if args.quick:
        print(json.dumps(ncu, indent=1)[:4000])
        return 0
    return record_suite("ws_limit", lambda: measure(say, ncu, args.reps), summarize, out_dir, say,
                        save=args.record)


if __name__ == "__main__":
    sys.exit(main())
