"""Chapter 06 on the GPU in one command: the warp-specialization ladder's checks and timings.

Run from the repository root on an sm_90 machine (about 2-4 minutes on an H200):

    python tools/gpu_ch06.py --out $OUT            # everything; details under $OUT
    python tools/gpu_ch06.py --out $OUT --record   # ... and write
                                                   #     data/<gpu>/warp_specialization.json
                                                   #     (copied to $OUT)
    python tools/gpu_ch06.py --quick               # compile + correctness only
    python tools/gpu_ch06.py --rungs 1-5 ...       # only some rungs (e.g. after a failure)
    python tools/gpu_ch06.py --pingpong --out $OUT # rung 9 (ping-pong) beside rung 8 and cuBLAS
                                                   #     (about 1-2 minutes; --record writes
                                                   #     data/<gpu>/ws_pingpong.json)

In order: (1) every rung's variants compiled in parallel processes (runtime.precompile), with the
registers per role (entry / producer / consumers after setmaxnreg) and spills printed; (2) every
rung (fp16 and bf16, B K-major and MN-major, fp32 and input-dtype output, rung 4's whole tile
sweep, the persistent and cluster rungs on 2048×4096×512 = 256 tiles of 128×256, more than
the SMs) against float64 on fresh random inputs with a poisoned output and an elementwise bound,
stopping at the first failure, which is printed; the deliberately broken variant must end in an
error, not a hang;
(3) every rung at 4096³ and 8192³, fp16 and bf16, beside cuBLAS timed in the same run (medians);
each timed output checked on sampled rows. The ladder table (rung, TFLOP/s, of cuBLAS, prediction)
comes last, after the registers per role and the traces of rungs 3, 5, 6, 7 (fp16, first size:
Tensor Core use, math in flight, waiting on full barriers). Equivalent pytest run of the checks:
``pytest -q -m gpu tests/test_warp_specialization.py``.

``--pingpong``: the same suite for rungs 8 and 9 only, without the non-square shapes (checks of
both rungs' variants, both broken variants — the ping-pong one must end with the order barrier's
timeout — then cuBLAS, rung 8 and rung 9 at 4096³ and 8192³, fp16 and bf16, in one run, and the
traces of both rungs at the first size in fp16); prints the ratios (each over cuBLAS, 9 over 8)
and, per trace, how much of each consumer's epilogue the other consumer's wgmmas covered.
``--gantt`` also saves each traced rung's Gantt chart around CTA 0's first tile boundary to
$OUT/gantt_rung<N>.png. Details in $OUT/results.json; ``--record`` writes them as the record
``ws_pingpong`` (the ``warp_specialization`` record holds every rung and is not replaced). Pytest: ``pytest -q -m gpu tests/test_ws_pingpong.py``.
"""
import json
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc import warp_specialization as W  # noqa: E402
from asynctc.core import runtime  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_ch06", "warp_specialization", "compile + correctness only")
    ap.add_argument("--rungs", default="",
                    help="only these rungs, e.g. 1-5 (default: all; for a rerun without a failing "
                         "rung)")
    ap.add_argument("--sizes", default=",".join(map(str, W.LADDER_SIZES)),
                    help="square sizes of the ladder, comma-separated")
    ap.add_argument("--pingpong", action="store_true",
                    help="rung 9 (ping-pong consumers) beside rung 8 and cuBLAS, with traces")
    ap.add_argument("--gantt", action="store_true",
                    help="with --pingpong: save the traced rungs' Gantt charts as PNG")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started

    if args.quick:
        rungs = W.parse_rungs(args.rungs)
        cfgs = [c for c in W.correctness_configs() if W.rung_of(c) in rungs]
        jobs = list({repr(W.compile_job(c)): W.compile_job(c) for c in cfgs}.values())
        say(f"compiling {len(jobs)} variants")
        runtime.precompile(jobs)
        try:
            rows = W.check_all(cfgs, progress=say)
            say(f"broken variant: {W.run_broken(1)}")
            if 9 in rungs:
                say(f"broken ping-pong variant: {W.run_broken(2)}")
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            say("FAILED (first failure above)")
            return 1
        (out_dir / "checks.json").write_text(json.dumps(rows, indent=1))
        say(f"{len(rows)} checks passed, worst |C-ref|/bound "
            f"{max(r['worst_ratio'] for r in rows):.3f}")
        return 0

    sizes = tuple(int(s) for s in args.sizes.split(","))
    if args.pingpong:
        # its own record ("ws_pingpong"): the warp_specialization record holds every rung
        return record_suite("ws_pingpong",
                            lambda: W.measure_ladder(progress=say, sizes=sizes, rungs=(8, 9),
                                                     nonsquare=()),
                            lambda rec: _pingpong_summary(rec, out_dir, args.gantt), out_dir,
                            say, save=args.record)
    return record_suite("warp_specialization",
                        lambda: W.measure_ladder(progress=say, sizes=sizes, rungs=args.rungs),
                        W.summarize_ladder, out_dir, say, save=args.record)


def _pingpong_summary(rec, out_dir: Path, gantt: bool) -> str:
    if gantt:
        import matplotlib
        matplotlib.use("Agg")
        for t in rec.results.get("traces", []):
            fig = W.plot_top_trace(t)
            fig = getattr(fig, "figure", fig)
            fig.savefig(out_dir / f"gantt_rung{t['rung']}.png", dpi=120)
    return W.summarize_ladder(rec) + "\n\n" + W.pingpong_table(rec.results)


if __name__ == "__main__":
    sys.exit(main())
