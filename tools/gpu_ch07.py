"""Chapter 07's FP8 groundwork on the GPU in one command: compile, the accumulation experiment,
every FP8 variant against float64, and the timings against cuBLASLt FP8 and our fp16 top rung.

Run from the repository root on an sm_90 machine with torch (about 2 minutes on an H200):

    python tools/gpu_ch07.py --out $OUT            # everything; details in $OUT/results.json
    python tools/gpu_ch07.py --out $OUT --record   # ... and write data/<gpu>/fp8.json
                                                   #     (copied to $OUT)
    python tools/gpu_ch07.py --quick               # compile + experiment + checks, no timings
    python tools/gpu_ch07.py --fit --record        # only the "fp8_fit" suite (under 90 s): the
                                                   #     runs that identify the fraction bits and
                                                   #     the group, and the promotion-cost test;
                                                   #     writes data/<gpu>/fp8_fit.json
    python tools/gpu_ch07.py --swizzle --out $OUT [--record]
                                                   # only the "fp8_swizzle" suite (under 3
                                                   #     minutes): mixed e4m3 × e5m2 and e4m3
                                                   #     under each swizzle checked against
                                                   #     float64, then e4m3 timed under the 128-,
                                                   #     64-, 32- and no swizzle beside the fp16
                                                   #     top rung; writes data/<gpu>/fp8_swizzle.json
    python tools/gpu_ch07.py --intervals --out $OUT  # only the promotion-interval test (about a
                                                   #     minute): promotion every 1, 2, 4 k-tiles
                                                   #     against fast accumulation, 4096³ and
                                                   #     8192³ (no --record: the fp8_fit record
                                                   #     is the whole suite's)
    python tools/gpu_ch07.py --fit --intervals --record  # the fp8_fit suite with the interval test

In order (asynctc.fp8.measure_fp8): (1) every FP8 variant (e4m3 and e5m2; chapter 06's rungs
with fp8 inputs; promoted variants every 1, 2, 4 k-tiles on 128×128) and the fp16 top rung
compiled in parallel, registers and spills per variant — with the per-block-scale variants
(BLOCK_SCALES: 1×128 A / 128×128 B scales applied at each k-tile's promotion; 128×128 plain and
top configuration in e4m3 and e5m2, 256×64 in e4m3); (2) the accumulation experiment: the
swamping input (one 32·32 product, then small positive ones) and random FP8 inputs, K = 256 ..
16384, without promotion and with promotion every 1 and 4 k-tiles, error against float64 and the
model's fraction bits fitted to the measured sums — printed beside the prediction written before
this run (asynctc.fp8.ACC_PREDICTION); (3) every FP8 variant against float64 of the dequantised
inputs (per-tensor scales, or for the block-scale variants per-block scales from quantising
inputs whose block magnitudes differ by up to e^6, asynctc.fp8.verify_block_scaled; poisoned
output, elementwise bound from the format and the fitted accumulator), stopping at the first
failure; (4) at 4096³ and 8192³: cuBLASLt FP8 (torch._scaled_mm, fast accumulation on and off),
our FP8 kernels, cuBLAS fp16 and our fp16 top rung, in the same run, each timed output checked on
sampled rows; at 8192³ also the block-scale top configuration (against the same configuration with
per-tensor scales: "block scales cost") and, where torch's build takes block scales, cuBLASLt with
1×128 / 128×128 scales (else a row saying why); (5) the FP8 top rung, e4m3 and e5m2, on chapter
06's non-square shapes and the square sizes beside cuBLASLt FP8 (asynctc.fp8.measure_fp8_nonsquare;
added after the last GPU run: about +1 minute). The short table comes last.
Equivalent pytest run of the checks: ``pytest -q -m gpu tests/test_fp8.py``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc import fp8  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_ch07", "fp8", "compile, experiment and checks only")
    ap.add_argument("--sizes", default=",".join(map(str, fp8.SIZES)),
                    help="square sizes timed, comma-separated")
    ap.add_argument("--fit", action="store_true",
                    help="only the fp8_fit suite: fraction-bit identification and promotion cost "
                         "(with --record: data/<gpu>/fp8_fit.json)")
    ap.add_argument("--swizzle", action="store_true",
                    help="only the fp8_swizzle suite: mixed FP8 and every swizzle checked, e4m3 "
                         "timed under each swizzle beside fp16 (with --record: "
                         "data/<gpu>/fp8_swizzle.json)")
    ap.add_argument("--intervals", action="store_true",
                    help="the promotion-interval test (promote 0/1/2/4 at one tile, 4096³ and "
                         "8192³); alone, or with --fit as part of the fp8_fit suite")
    args = ap.parse_args()
    if args.intervals and args.record and not args.fit:
        ap.error("--intervals alone is part of a suite; --fit --intervals --record writes the "
                 "fp8_fit record with it")
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    if args.intervals:
        run = (dict(intervals=True) if args.fit else
               dict(experiment=False, cost=False, intervals=True))
        return record_suite("fp8_fit", lambda: fp8.measure_fp8_fit(progress=say, **run),
                            fp8.summarize_fp8_fit, out_dir, say, save=args.record)
    if args.fit:
        return record_suite("fp8_fit", lambda: fp8.measure_fp8_fit(progress=say),
                            fp8.summarize_fp8_fit, out_dir, say, save=args.record)
    sizes = () if args.quick else tuple(int(s) for s in args.sizes.split(","))
    if args.swizzle:
        return record_suite("fp8_swizzle",
                            lambda: fp8.measure_fp8_swizzle(progress=say, sizes=sizes),
                            fp8.summarize_fp8_swizzle, out_dir, say,
                            save=args.record and not args.quick)
    return record_suite("fp8", lambda: fp8.measure_fp8(progress=say, sizes=sizes),
                        fp8.summarize_fp8, out_dir, say, save=args.record and not args.quick)


if __name__ == "__main__":
    sys.exit(main())
