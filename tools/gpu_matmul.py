"""asynctc.matmul on the GPU in one command: every check, then matmul beside cuBLAS.

Run from the repository root on an sm_90 machine (about 1-2 minutes on an H200):

    python tools/gpu_matmul.py --out $OUT            # checks + timings; details under $OUT
    python tools/gpu_matmul.py --out $OUT --record   # ... and write data/<gpu>/matmul.json
                                                     #     (copied to $OUT)
    python tools/gpu_matmul.py --quick               # compile + checks only

In order (asynctc.gemm.measure_matmul, the "matmul" suite): (1) every
configuration matmul picks for the checks and the timed shapes, and the EDGES-off twins, compiled
in parallel (runtime.precompile); (2) every case of matmul_cases() — awkward shapes from
{1, 7, 129, 1000, 4095}, fp16 and bf16, B K×N and N×K, fp32 and input-dtype outputs, the small
non-square table, a persistent shape with more tiles than SMs, DeviceArray operands — through
asynctc.matmul against float64, every element (elementwise |A|·|B| bound, poisoned output),
stopping at the first failure; (3) cuBLAS and matmul (both B layouts) at 4096³, 8192³ and the
non-square table (8192×8192×1024, 1024×8192×8192, 4096×4096×16384, 64/128/256×8192×8192), fp16
and bf16, each timed output checked on sampled rows; at 4096³ the EDGES build against the same
configuration without EDGES (the cost of edge handling). The summary (EDGES cost, configs chosen,
TFLOP/s and of-cuBLAS table) comes last. Equivalent pytest run of the checks:
``pytest -q -m gpu tests/test_matmul.py``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc import gemm as G  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_matmul", "matmul", "compile + checks only")
    ap.add_argument("--reps", type=int, default=10, help="timed samples per kernel (median)")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    kw = dict(progress=say, reps=args.reps)
    if args.quick:
        kw.update(sizes=(), nonsquare=())
    return record_suite("matmul", lambda: G.measure_matmul(**kw), G.summarize_matmul, out_dir, say,
                        save=args.record and not args.quick)


if __name__ == "__main__":
    sys.exit(main())
