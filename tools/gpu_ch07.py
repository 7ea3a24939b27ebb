"""Chapter 07's FP8 groundwork on the GPU in one command: compile, the accumulation experiment,
every FP8 variant against float64, and the timings against cuBLASLt FP8 and our fp16 top rung.

Run from the repository root on an sm_90 machine with torch (about 2 minutes on an H200):

    python tools/gpu_ch07.py --out $OUT            # everything; details in $OUT/results.json
    python tools/gpu_ch07.py --out $OUT --record   # ... and write data/<gpu>/fp8.json
                                                   #     (copied to $OUT)
    python tools/gpu_ch07.py --quick               # compile + experiment + checks, no timings

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
1×128 / 128×128 scales (else a row saying why). The short table comes last.
Equivalent pytest run of the checks: ``pytest -q -m gpu tests/test_fp8.py``.
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

from asynctc import fp8  # noqa: E402
from asynctc.core import records, runtime  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out_ch07"),
                    help="folder for results.json (default: $OUT)")
    ap.add_argument("--record", action="store_true", help="write data/<gpu>/fp8.json")
    ap.add_argument("--quick", action="store_true", help="compile, experiment and checks only")
    ap.add_argument("--sizes", default=",".join(map(str, fp8.SIZES)),
                    help="square sizes timed, comma-separated")
    args = ap.parse_args()
    t0 = time.time()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not runtime.runs_live("sm_90a"):
        print(f"no live sm_90a GPU: {runtime.why_not_live('sm_90a')}")
        return 2
    info = runtime.device_info()
    print(f"{info.name}, {info.sm_count} SMs, NVRTC {'.'.join(map(str, runtime.nvrtc_version()))}",
          flush=True)

    def say(s):
        print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

    sizes = () if args.quick else tuple(int(s) for s in args.sizes.split(","))
    try:
        rec = records.measure("fp8", lambda: fp8.measure_fp8(progress=say, sizes=sizes))
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        say("FAILED (first failure above); nothing recorded")
        return 1
    (out_dir / "results.json").write_text(json.dumps(rec.to_json(), indent=1))
    say(f"wrote {out_dir / 'results.json'}")
    if args.record and not args.quick:
        path = records.save(rec)
        shutil.copy(path, out_dir / path.name)   # $OUT comes back from the GPU machine; data/ not
        print("wrote", path, "and", out_dir / path.name)
    print()
    print(fp8.summarize_fp8(rec))
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
