"""Chapter 08 on the GPU in one command: every pitfalls kernel variant, then compute-sanitizer.

Run from the repository root on an sm_90 machine (about 1-3 minutes on an H200, most of it the
sanitizer runs):

    python tools/gpu_ch08.py --out $OUT            # every variant + sanitizer; results under $OUT
    python tools/gpu_ch08.py --out $OUT --record   # ... and write data/<gpu>/pitfalls.json
    python tools/gpu_ch08.py --quick               # the variants only, no sanitizer

Each variant of kernels/pitfalls.cu (asynctc.pitfalls.variants.BUGS) runs once on 8 boxes of
64 × 64 fp16 and ends with its outcome in words: "ok", a decoded bounded wait (which role timed out
on which barrier, stage and tile — 0.5 s per wait, never a hang) or the elementwise check naming the
first wrong element. Then compute-sanitizer memcheck, racecheck and synccheck run on the correct
kernel and two broken ones (asynctc.pitfalls.suite.SANITIZED), each with a 240 s limit. The correct
kernel must end "ok", else nothing is recorded. Nothing is timed.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.pitfalls import suite  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_ch08", "pitfalls", "the variants only, no compute-sanitizer")
    args = ap.parse_args()
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    return record_suite("pitfalls", lambda: suite.measure_pitfalls(sanitizer=not args.quick, progress=say),
                        suite.summarize, out_dir, say, save=args.record)


if __name__ == "__main__":
    sys.exit(main())
