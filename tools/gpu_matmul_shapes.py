"""asynctc.matmul's shape means on the GPU: every candidate decision-table entry against cuBLAS.

Run from the repository root on an sm_90 machine with torch (about 2-3 minutes on an H200,
compiles included):

    python tools/gpu_matmul_shapes.py --out $OUT            # every case; results.json under $OUT
    python tools/gpu_matmul_shapes.py --out $OUT --quick    # one shape per class, fp16
    python tools/gpu_matmul_shapes.py --dry-run             # CPU: the cases and candidates
    python tools/gpu_matmul_shapes.py --dry-run --compile   # CPU: ... and compile every one

For each case of asynctc.gemm.shape_suite.sweep_cases() (cubes 512-2048, thin M 64-256 × 8192 ×
8192, decode M 1-16 × N = K 4096 and 8192; fp16 everywhere, bf16 on one shape per class and size;
B stored K×N and N×K) and each candidate entry of its class (CANDIDATES: split-K, tiles, stages,
a non-persistent grid; {} = today's rule): the entry set in asynctc.gemm.config.DECISIONS, one
call on torch tensors checked against float64 element by element (poisoned output), then GPU time
per call behind a delay kernel, alternating with torch.matmul (cuBLAS), medians. Prints one line
per candidate, then the winner per case (copy its entry into DECISIONS); results.json has the
table: shape, dtype, layout, candidate, TFLOP/s, ratio to cuBLAS, checked ok.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.gemm import shape_suite as S  # noqa: E402


def dry_run(quick: bool, compile_all: bool) -> int:
    """The cases, each candidate's configuration and the compile jobs, without a GPU."""
    from asynctc.core import runtime
    cases = S.sweep_cases(quick)
    for case in cases:
        print(f"{case['class']:7s} {case['m']}x{case['n']}x{case['k']} {case['dtype']} "
              f"B:{case['storage']}")
        for entry, cfg in S.candidate_configs(case, sm_count=132):
            print(f"    {entry!s:38s} {cfg.label()}")
    jobs = S.sweep_jobs(cases, sm_count=132)
    n = sum(len(S.candidate_configs(c, 132)) for c in cases)
    print(f"{len(cases)} cases, {n} candidate runs, {len(jobs)} compile jobs")
    if compile_all:
        runtime.precompile(jobs)
        print(f"compiled {len(jobs)} jobs for sm_90a")
    return 0


def main() -> int:
    ap = parser(__doc__, "out_matmul_shapes", "matmul_shapes", "one shape per class, fp16")
    ap.add_argument("--dry-run", action="store_true", help="list cases and candidates (no GPU)")
    ap.add_argument("--compile", action="store_true", help="with --dry-run: compile every job")
    args = ap.parse_args()
    if args.dry_run:
        return dry_run(args.quick, args.compile)
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started

    def measure():
        res = S.measure_shapes(progress=say, cases=S.sweep_cases(args.quick))
        (out_dir / "shapes_table.json").write_text(json.dumps(
            [{k: r.get(k) for k in ("class", "m", "n", "k", "dtype", "storage", "candidate",
                                    "config", "tflops", "cublas_tflops", "of_cublas",
                                    "checked_ok")} for r in res["rows"]], indent=1))
        return res
    return record_suite("matmul_shapes", measure, lambda rec: S.summarize_shapes(rec.results),
                        out_dir, say, save=args.record and not args.quick)


if __name__ == "__main__":
    sys.exit(main())
