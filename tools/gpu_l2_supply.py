"""Chapter 05 §5's open question measured: the bytes per clock L2 and TMA feed one SM in the GEMM's
own access pattern, with the wgmmas removed (asynctc.pipeline.supply_suite).

Run from the repository root on an sm_90 machine (about a minute on an H200):

    python tools/gpu_l2_supply.py --out $OUT --record   # write data/<gpu>/l2_supply.json (copied to $OUT)
    python tools/gpu_l2_supply.py --quick               # compile both builds and run each once

Each of supply.CONFIGS at 4096³ fp16: the GEMM (kernels/pipeline.cu, checked on sampled rows against
float64) and its LOADS_ONLY=1 build (the same ring, no wgmma, no store; its error word must stay 0),
two rounds in alternating order, the SM clock measured in flight.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.pipeline import supply_suite as supply  # noqa: E402
from asynctc.pipeline.launch import compile_pipeline  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_l2_supply", supply.SUITE, "compile both builds, one round of one rep")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    for kw in supply.CONFIGS:
        cfg = supply.config(**kw)
        for lo in (0, 1):
            ck = compile_pipeline(cfg, hooks={"LOADS_ONLY": lo})
            say(f"compiled {cfg.tile_name} s{cfg.stages} LOADS_ONLY={lo}: {ck.resources.registers} registers")
    if args.quick:
        res = supply.measure_supply(progress=say, rounds=1, reps=1)
        print(supply.supply_table(res))
        return 0
    return record_suite(supply.SUITE, lambda: supply.measure_supply(progress=say),
                        supply.summarize_supply, out_dir, say, save=args.record)


if __name__ == "__main__":
    sys.exit(main())
