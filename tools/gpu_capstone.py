"""Chapter 06's capstone loops compiled into kernels/capstone.cu and run on the GPU, in one process.

Run from the repository root on an sm_90 machine (well under a minute on an H100/H200; each wrong
variant that deadlocks ends in one 2 s bounded wait):

    python tools/gpu_capstone.py --out $OUT --record   # write data/<gpu>/capstone.json (copied to $OUT)
    python tools/gpu_capstone.py --quick               # the course's answer only, not recorded

In order: each variant of asynctc.warp_specialization.capstone_suite.VARIANTS built (NVRTC seconds and
the SASS table beside the course's answer's); then the record suite ``capstone``: every variant on
every shape of capstone_build.SHAPES (fresh random fp16 inputs, C poisoned with NaN, every element
against float64; a wait that gave up is decoded from the kernel's error word). The wrong variants are
expected to fail (printed FAILED, recorded); the script exits 1 only when the course's answer or the
second passing form fails. Pytest: ``pytest -q -m gpu tests/test_capstone_build.py``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.warp_specialization import capstone_build as cb, capstone_suite as cs  # noqa: E402

PASSING = ("course", "wait_group<1>")


def main() -> int:
    ap = parser(__doc__, "out_capstone", cs.SUITE, "the course's answer only, not recorded")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    for name, what, text in cs.VARIANTS:
        table = cb.sass_table(text)
        say(f"built {name} ({what}) in {table.seconds:.1f} s (0 = cached):\n{table}")
    if args.quick:
        rows = [cs._one("course", cs.VARIANT_TEXT["course"], s, None) for s in cb.SHAPES]
        for r in rows:
            say(("passed " if r["passed"] else "FAILED ") + (r.get("says") or r.get("failed", "")))
        return 0 if all(r["passed"] for r in rows) else 1
    state = {}

    def measure():
        state["results"] = cs.measure_capstone(progress=say)
        return state["results"]

    rc = record_suite(cs.SUITE, measure, cs.summarize_capstone, out_dir, say, save=args.record)
    rows = (state.get("results") or {}).get("rows", [])
    if rc == 0 and not all(r["passed"] for r in rows if r["variant"] in PASSING):
        say("A PASSING FORM FAILED on the GPU (recorded above)")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
