"""Chapter 06's limit, measured: the top rung and cuBLAS under Nsight Compute, and the top rung's
raster width timed beside cuBLAS.

Run from the repository root on an sm_90 machine with torch (about 2 minutes on an H200):

    python tools/gpu_ch06_limit.py --out $OUT            # details in $OUT/results.json
    python tools/gpu_ch06_limit.py --out $OUT --record   # ... and write data/<gpu>/ws_limit.json
    python tools/gpu_ch06_limit.py --orders --out $OUT [--record]   # suite ws_orders instead

What it measures and why, with the predictions written before each run:
asynctc.warp_specialization.limit_suite (the "ws_limit" suite). This script adds what the suite
cannot do inside the package: (1) Nsight Compute (when `ncu` is here; in a child process, at ncu's
default locked base clock so every kernel runs at the same clock) over the suite's ncu_child —
per size, rung 7 at each raster width of NCU_GROUPS and then cuBLAS once; (2) the suite's timings
(measure_limit), recorded together with those counters.
With --orders it runs the "ws_orders" suite instead (asynctc.warp_specialization.order_suite; no
ncu; about 1-2 minutes with its compiles): rung 8 as the ladder runs it, with l2_promotion 128 and
256, with the A evict_last L2 hint and with the Hilbert tile order, and cuBLAS interleaved, at
4096³ and 8192³, fp16 and bf16, printing each variant's ratio to cuBLAS and to rung 8.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import find_ncu, ncu_metrics, ncu_profile, parser, record_suite, start  # noqa: E402
from asynctc.core.ncu import metric_base  # noqa: E402
from asynctc.warp_specialization import limit_suite as LS  # noqa: E402
from asynctc.warp_specialization import order_suite as OS  # noqa: E402

NCU_TIMEOUT_S = 200


def run_ncu(say) -> dict:
    """Nsight Compute's counters of LS.ncu_child's launches (this script rerun with --ncu-child
    under ncu), attributed to ours / cuBLAS per size; ``available`` False with ``why`` when ncu
    is absent, knows none of the counters, times out or saw no cuBLAS launch."""
    ncu = find_ncu()
    if not ncu:
        return {"available": False, "why": "no ncu / nv-nsight-cu-cli here"}
    out = {"available": False, "ncu": ncu, "clock_control": "ncu default (base clock, locked)"}
    asked = ncu_metrics(ncu, LS.METRICS, metric_base)
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
    kernels = LS.attribute(rows, metrics)
    if not any(k["who"] == "cuBLAS" for k in kernels):
        out["why"] = (f"ncu gave {len(rows)} launches, none of them cuBLAS after ours (rc "
                      f"{p.returncode}): {(p.stdout + p.stderr)[-1500:]}")
        out["kernels"] = kernels
        return out
    out["available"] = True
    out["kernels"] = kernels
    return out


def main() -> int:
    ap = parser(__doc__, "out_ws_limit", "ws_limit", "ncu only, no timings")
    ap.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute")
    ap.add_argument("--reps", type=int, default=20, help="launches per timing sample set")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--orders", action="store_true",
                    help="time rung 8's L2 / tile-order variants (suite ws_orders) instead")
    args = ap.parse_args()
    if args.ncu_child:
        return LS.ncu_child()
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    from asynctc.core import runtime
    if args.orders:
        runtime.precompile(OS.order_jobs())
        say(f"compiled rung 8's variants {[n for n, _ in OS.VARIANTS]}")
        return record_suite("ws_orders", lambda: OS.measure_orders(say, args.reps),
                            OS.summarize_orders, out_dir, say, save=args.record)
    runtime.precompile(LS.limit_jobs())
    say(f"compiled rung 7 at group_m {LS.GROUPS}")
    ncu = {"available": False, "why": "--no-ncu"} if args.no_ncu else run_ncu(say)
    say("ncu: " + ("counters taken" if ncu.get("available") else f"not used: {ncu.get('why')}"))
    (out_dir / "ncu.json").write_text(json.dumps(ncu, indent=1))
    if args.quick:
        print(json.dumps(ncu, indent=1)[:4000])
        return 0
    return record_suite("ws_limit", lambda: LS.measure_limit(say, ncu, args.reps), LS.summarize_limit,
                        out_dir, say, save=args.record)


if __name__ == "__main__":
    sys.exit(main())
