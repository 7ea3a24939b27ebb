"""Chapter 06's capstone in real CUDA (kernels/capstone_cuda.cu, the course's answer to
ch06.cuda_kloop): check C on every shape, then timed at 4096³ fp16 beside the ladder's build at the
same shape, rungs 1 and 3 and cuBLAS, in one run (asynctc.warp_specialization.capstone_speed).

Run from the repository root on an sm_90 machine (about a minute on an H100/H200):

    python tools/gpu_capstone_speed.py --out $OUT --record   # write data/<gpu>/capstone_speed.json
    python tools/gpu_capstone_speed.py --quick               # one round of one rep, not recorded
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.warp_specialization import capstone_speed as S  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_capstone_speed", S.SUITE, "one round of one rep, not recorded")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    if args.quick:
        print(S.table_text(S.measure_speed(progress=say, rounds=1, reps=1)))
        return 0
    return record_suite(S.SUITE, lambda: S.measure_speed(progress=say), S.summarize_speed, out_dir, say,
                        save=args.record)


if __name__ == "__main__":
    sys.exit(main())
