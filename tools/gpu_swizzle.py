"""Chapter 07's swizzle experiment on the GPU in one command: the same kernel under a 128-, 64-,
32-byte and no swizzle, under the 128-byte swizzle loaded as 2, 4, 8, 16 TMA boxes along the
rows (same layout, as many box operations per stage as the narrow swizzles), and each swizzle
"wgmma only" (tma_once: the stages loaded once, then reused — wgmma without TMA in the loop; a
different product on purpose, checked against asynctc.swizzle.tma_once_reference) — checks,
Nsight Compute counters (if ncu is here), timings beside cuBLAS.

Run from the repository root on an sm_90 machine (about 3 minutes on an H200):

    python tools/gpu_swizzle.py --out $OUT            # everything; details in $OUT/results.json
    python tools/gpu_swizzle.py --out $OUT --record   # ... and write data/<gpu>/swizzle.json
                                                     #     (copied to $OUT)
    python tools/gpu_swizzle.py --quick               # compile + checks + ncu, no timings

In order: (1) the twelve variants of asynctc.swizzle.variants() (chapter 06's rung 5, fp16, B
K-major; swizzle 128 / 64 / 32 / 0, then 128 with row_boxes 2 / 4 / 8 / 16, then 128 / 64 / 32 / 0
with tma_once) compiled; (2) Nsight Compute, when `ncu` (or
`nv-nsight-cu-cli`) is on PATH or in /usr/local/cuda/bin or /opt/nvidia/nsight-compute: the
metrics of asynctc.swizzle.NCU_METRICS that this ncu knows (`ncu --query-metrics`), one launch per
variant at 4096³ in a child process (`--ncu-child`), kept in the record with the ncu version and
the metrics it lacked — or, where ncu is absent or refuses (counter permissions), the reason;
(3) asynctc.swizzle.measure_swizzle: every variant against float64 (poisoned output, elementwise
bound; the wgmma-only ones against what they compute), stopping at the first failure, then cuBLAS
and the twelve variants at 4096³ and 8192³ on the same operands (bench.time_gpu(clock=True), each
timed output checked on sampled rows). The prediction frozen before the run
(asynctc.swizzle.PREDICTION, with PREDICTION_TMA_ONCE last) is printed first; the short table
comes last (the wgmma-only block: TFLOP/s there is wgmma throughput on reused stages, not a GEMM).
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import find_ncu, ncu_metrics, ncu_profile, parser, record_suite, start  # noqa: E402
from asynctc import swizzle as S  # noqa: E402
from asynctc.core import runtime  # noqa: E402

NCU_SIZE = 4096
NCU_TIMEOUT_S = 150


def ncu_child() -> int:
    """One launch of each variant at NCU_SIZE³, in asynctc.swizzle.variants() order (what ncu
    profiles)."""
    import numpy as np
    from asynctc import warp_specialization as W
    from asynctc.core.memory import DeviceArray
    rng = np.random.default_rng()
    n = NCU_SIZE
    a = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
    bt = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
    da, db = DeviceArray.from_host(a), DeviceArray.from_host(bt)
    dc = DeviceArray.poisoned((n, n), np.dtype("float16"))
    for cfg in S.variants():
        g = W.make_gemm(cfg, da, db, dc)
        g.launcher()()
        g.check_error()                 # copies the error word back: the launch has finished
    return 0


def run_ncu(say) -> dict:
    ncu = find_ncu()
    if not ncu:
        return {"available": False, "why": "no ncu / nv-nsight-cu-cli on PATH, in /usr/local/cuda/bin "
                                           "or /opt/nvidia/nsight-compute"}
    out = {"available": False, "ncu": ncu}
    asked = ncu_metrics(ncu, S.NCU_METRICS, S.metric_base)
    out.update(asked)
    if "why" in asked:
        return out
    metrics = asked["metrics"]
    keys = [S.variant_key(c) for c in S.variants()]
    say(f"ncu: {len(metrics)} metrics ({len(out['metrics_missing'])} unknown to this ncu), "
        f"{len(keys)} launches at {NCU_SIZE}³")
    rows, p = ncu_profile(ncu, metrics, __file__, NCU_TIMEOUT_S,
                          "-k", "regex:gemm_warp_specialized", "--launch-count", str(len(keys)))
    if p is None:
        out["why"] = f"ncu took more than {NCU_TIMEOUT_S} s"
        return out
    out["returncode"] = p.returncode
    if len(rows) != len(keys):
        tail = (p.stdout + p.stderr)[-1500:]
        out["why"] = f"ncu gave {len(rows)} profiled launches, expected {len(keys)} " \
                     f"(rc {p.returncode}; ERR_NVGPUCTRPERM means no access to the counters): {tail}"
        return out
    out["available"] = True
    out["variants"] = {key: {m: r.get(m) for m in metrics} | {"kernel": r.get("Kernel Name")}
                       for key, r in zip(keys, rows)}
    return out


def main() -> int:
    ap = parser(__doc__, "out_swizzle", "swizzle", "compile, checks and ncu only")
    ap.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default=",".join(map(str, S.SIZES)),
                    help="square sizes timed, comma-separated")
    args = ap.parse_args()
    if args.ncu_child:
        return ncu_child()
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started

    print(S.PREDICTION, flush=True)
    from asynctc import warp_specialization as W
    runtime.precompile([W.compile_job(c) for c in S.variants()])   # the ncu child finds them cached
    say(f"compiled the {len(S.variants())} variants")
    ncu = {"available": False, "why": "--no-ncu"} if args.no_ncu else run_ncu(say)
    say("ncu: " + ("counters taken" if ncu.get("available") else f"not used: {ncu.get('why')}"))
    sizes = () if args.quick else tuple(int(s) for s in args.sizes.split(","))

    def keep_ncu():     # the counters survive a failed measurement
        (out_dir / "ncu.json").write_text(json.dumps(ncu, indent=1))

    return record_suite("swizzle", lambda: S.measure_swizzle(progress=say, sizes=sizes, ncu=ncu),
                        S.summarize_swizzle, out_dir, say, save=args.record and not args.quick,
                        on_failure=keep_ncu)


if __name__ == "__main__":
    sys.exit(main())
