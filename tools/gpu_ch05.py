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
import argparse
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asynctc import pipeline as P  # noqa: E402
from asynctc.core import records, runtime  # noqa: E402



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out_ch05"),
                    help="folder for results.json and traces/ (default: $OUT)")
    ap.add_argument("--record", action="store_true", help="write data/<gpu>/pipeline.json")
    ap.add_argument("--quick", action="store_true", help="compile + correctness matrix only")
    ap.add_argument("--sizes", default=",".join(map(str, P.SWEEP_SIZES)),
                    help="square sizes of the sweep, comma-separated")
    args = ap.parse_args()
    t0 = time.time()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not runtime.runs_live("sm_90a"):
        print(f"no live sm_90a GPU: {runtime.why_not_live('sm_90a')}")
        return 2
    info = runtime.device_info()
    print(f"{info.name}, {info.sm_count} SMs, max SM clock {info.max_sm_clock_khz / 1000:.0f} MHz, "
          f"smem opt-in {info.smem_optin_bytes} B, NVRTC "
          f"{'.'.join(map(str, runtime.nvrtc_version()))}", flush=True)

    def say(s):
        print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

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
    try:
        rec = records.measure("pipeline", lambda: P.measure_pipeline(
            progress=say, sizes=sizes, trace_dir=out_dir / "traces"))
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        say("FAILED (first failure above); nothing recorded")
        return 1
    r = rec.results
    (out_dir / "results.json").write_text(json.dumps(rec.to_json(), indent=1))
    regs = {}
    for c in P.sweep_configs():
        ck = P.compile_pipeline(c)
        regs[c.label()] = (ck.resources.registers, ck.resources.spill_stores)
    spills = [k for k, v in regs.items() if v[1]]
    say(f"wrote {out_dir / 'results.json'} and {len(list((out_dir / 'traces').glob('*.json')))} "
        f"traces under {out_dir / 'traces'}")
    if args.record:
        path = records.save(rec)
        shutil.copy(path, out_dir / path.name)   # $OUT comes back from the GPU machine; data/ not
        print("wrote", path, "and", out_dir / path.name)
    print()
    print(f"registers: {sorted({v[0] for v in regs.values()})}; spills in {spills or 'none'}")
    print()
    print("wait_pending 0 vs 1 and trace cost (TFLOP/s):")
    print(P.variants_table(r))
    print()
    print(P.summarize_pipeline(rec))
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
