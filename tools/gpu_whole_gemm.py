"""Chapter 06's whole kernel (kernels/hopper_gemm.cu) on the GPU: checked, then timed beside rung 3 and cuBLAS.

Run from the repository root on an sm_90 machine (about 1-2 minutes on an H200):

    python tools/gpu_whole_gemm.py --out $OUT --record   # write data/<gpu>/whole_gemm.json
                                                         #     (copied to $OUT)
    python tools/gpu_whole_gemm.py --quick               # the checks only

In order: the kernel compiled (fp16 and bf16, registers and spills printed); its checks
(asynctc.warp_specialization.whole_suite.CHECKS: fresh random inputs, poisoned output, every element
against float64 within a bound relative to |A|·|B|); then at 4096³ and 8192³ fp16, two rounds of
cuBLAS, rung 3 (kernels/warp_specialization.cu, the same design) and the whole kernel, the order
reversed in the second round, each timed output checked on sampled rows. A failed check or a timed-out
wait is recorded (the record is still written, without timings) and the script exits 1 after
writing it. Pytest: ``pytest -q -m gpu tests/test_whole_gemm.py``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.warp_specialization import whole, whole_suite  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_whole_gemm", whole_suite.SUITE, "compile + checks only")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    for dt in whole.DTYPES:
        r = whole.compile_whole(dt).resources
        say(f"compiled hopper_gemm {dt}: {r.registers} registers at entry, spills {r.spill_stores} B")
    if args.quick:
        rows = [whole_suite._check(m, n, k, dt, None) for m, n, k, dt in whole_suite.CHECKS]
        for c in rows:
            say(("passed " if c["passed"] else "FAILED ") + str(c))
        return 0 if all(c["passed"] for c in rows) else 1
    state = {}

    def measure():
        state["results"] = whole_suite.measure_whole(progress=say)
        return state["results"]

    rc = record_suite(whole_suite.SUITE, measure, whole_suite.summarize_whole, out_dir, say,
                      save=args.record)
    res = state.get("results") or {}
    if rc == 0 and (res.get("timings_skipped") or any("error" in r for r in res.get("rows", []))):
        say("WHOLE KERNEL FAILED a check or a timed run (recorded above)")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
