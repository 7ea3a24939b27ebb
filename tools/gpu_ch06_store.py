"""Chapter 06's "why": does rung 7's TMA-store epilogue need the persistent grid? (suite ws_store_ablation)

Run from the repository root on an sm_90 machine with torch (about 2 minutes on an H200):

    python tools/gpu_ch06_store.py --out $OUT            # details in $OUT/results.json
    python tools/gpu_ch06_store.py --out $OUT --record   # ... and write data/<gpu>/ws_store_ablation.json
    python tools/gpu_ch06_store.py --quick               # compile + the float64 checks only

What it measures: asynctc.warp_specialization.store_suite. Rungs 3, 5, 6, 7 and two variants the
ladder lacks — rung 3 with the TMA store (one tile per CTA) and rung 5 with the TMA store
(persistent, no cluster) — each first checked against float64 (fresh random inputs, a poisoned
output, the elementwise |A|·|B| bound), then 3 rounds of cuBLAS and every variant interleaved at
4096³ and 8192³, fp16 and bf16; medians, each variant's fraction of cuBLAS and the verdicts the
notebook prints. The prediction, written before the first run: docs/NOTES.md, "Chapter 06: does
the TMA store need the persistent grid?". Same as ``python -m asynctc record ws_store_ablation``,
with the output folder and --quick.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.warp_specialization import store_suite as SS  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_ws_store", "ws_store_ablation", "compile + the float64 checks only")
    ap.add_argument("--reps", type=int, default=20, help="launches per timing sample set")
    args = ap.parse_args()
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    from asynctc.core import runtime
    runtime.precompile(SS.store_jobs())
    say(f"compiled {', '.join(SS.NAMES)} (fp16, bf16)")
    if args.quick:
        return record_suite("ws_store_ablation", lambda: SS.measure_store(say, args.reps, sizes=()),
                            SS.summarize_store, out_dir, say, save=False)
    return record_suite("ws_store_ablation", lambda: SS.measure_store(say, args.reps),
                        SS.summarize_store, out_dir, say, save=args.record)


if __name__ == "__main__":
    sys.exit(main())
