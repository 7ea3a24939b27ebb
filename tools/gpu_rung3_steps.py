"""Chapter 06's rung 3 split into single changes: rung 2, a second consumer, setmaxnreg, the
128×256 tile — timed beside cuBLAS in one run (asynctc.warp_specialization.steps_suite).

Run from the repository root on an sm_90 machine (about a minute on an H200):

    python tools/gpu_rung3_steps.py --out $OUT --record   # write data/<gpu>/ws_rung3_steps.json
    python tools/gpu_rung3_steps.py --quick               # compile the four builds, one round of one rep
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.warp_specialization import steps_suite as steps  # noqa: E402
from asynctc.warp_specialization.launch import compile_ws  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_rung3_steps", steps.SUITE, "compile the builds, one round of one rep")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    for name, cfg in steps.step_configs().items():
        say(f"compiled {name}: {compile_ws(cfg).resources.registers} registers")
    if args.quick:
        res = steps.measure_steps(progress=say, rounds=1, reps=1)
        for r in steps.step_table(res):
            print(r)
        return 0
    return record_suite(steps.SUITE, lambda: steps.measure_steps(progress=say),
                        steps.summarize_steps, out_dir, say, save=args.record)


if __name__ == "__main__":
    sys.exit(main())
