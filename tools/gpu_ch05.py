"""Chapter 05 on the GPU in one command: the pipelined GEMM's checks, depth sweep, variants, traces.

Run from the repository root on an sm_90 machine (about 2-4 minutes on an H200):

    python tools/gpu_ch05.py --out $OUT            # everything; details under $OUT
    python tools/gpu_ch05.py --out $OUT --record   # ... and write data/<gpu>/pipeline.json
                                                   #     (copied to $OUT/pipeline.json)
    python tools/gpu_ch05.py --quick               # compile + correctness matrix only

In order: (1) every variant compiled in parallel processes (the cubin cache is then warm);
(2) the correctness matrix — every dtype × tile × stages × B layout × wait_pending, the fp16/bf16
output and the traced kernel, on 512×768×1024 and 256×256×192, fresh random inputs, poisoned
output, every element within k·2^-21·(|A|·|B|) + output rounding of float64 — stopping at the
first failure, which is printed; (3) the depth sweep (stages 1-6 for 128×128×64 with 1 and 2
consumer warpgroups and 128×256×64, 4096³ and 8192³, fp16 and bf16) with cuBLAS timed in the same
run, wait_pending 0 vs 1 and trace on vs off for every (tile, stages); (4) the traces of fp16
4096³ decoded (JSON + raw .npz per config under OUT/traces). The compact tables come last.
mbarrier waits in the kernel are bounded: a protocol error ends as "mbarrier wait timed out".
Equivalent pytest run of the checks: ``pytest -q -m gpu tests/test_pipeline.py``.
"""
import json
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc import pipeline as P  # noqa: E402
from asynctc.core import runtime  # noqa: E402


def main() -> int:
    ap = parser(__doc__, "out_ch05", "pipeline", "compile + correctness matrix only",
                out_help="folder for results.json and traces/")
    ap.add_argument("--sizes", default=",".join(map(str, P.SWEEP_SIZES)),
                    help="square sizes of the sweep, comma-separated")
    args = ap.parse_args()
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started

    if args.quick:
        jobs = [P.compile_job(c) for c in P.correctness_configs()]
        say(f"compiling {len(jobs)} variants")
        runtime.precompile(jobs)
        for c in P.correctness_configs():
            r = P.compile_pipeline(c).resources
            if r.spill_stores or r.spill_loads:
                say(f"SPILLS {c.label()}: {r}")
        try:
            rows = P.check_matrix(progress=None)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            say("FAILED (first failure above)")
            return 1
        (out_dir / "checks.json").write_text(json.dumps(rows, indent=1))
        worst = max(r["worst_ratio"] for r in rows)
        say(f"{len(rows)} checks passed, worst |C-ref|/bound {worst:.3f}")
        return 0

    sizes = tuple(int(s) for s in args.sizes.split(","))
    traces = out_dir / "traces"

    def wrote():
        return (f"wrote {out_dir / 'results.json'} and {len(list(traces.glob('*.json')))} "
                f"traces under {traces}")

    def summary(rec):
        regs = {}
        for c in P.sweep_configs():
            ck = P.compile_pipeline(c)
            regs[c.label()] = (ck.resources.registers, ck.resources.spill_stores)
        spills = [k for k, v in regs.items() if v[1]]
        return "\n".join([
            f"registers: {sorted({v[0] for v in regs.values()})}; spills in {spills or 'none'}", "",
            "wait_pending 0 vs 1 and trace cost (TFLOP/s):", P.variants_table(rec.results), "",
            P.summarize_pipeline(rec)])

    return record_suite("pipeline", lambda: P.measure_pipeline(progress=say, sizes=sizes,
                                                               trace_dir=traces),
                        summary, out_dir, say, save=args.record, wrote=wrote)


if __name__ == "__main__":
    sys.exit(main())
