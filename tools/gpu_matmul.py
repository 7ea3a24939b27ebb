"""asynctc.matmul on the GPU in one command: every check, then matmul beside cuBLAS.

Run from the repository root on an sm_90 machine (about 1-2 minutes on an H200):

    python tools/gpu_matmul.py --out $OUT            # checks + timings; details under $OUT
    python tools/gpu_matmul.py --out $OUT --record   # ... and write data/<gpu>/matmul.json
                                                     #     (copied to $OUT)
    python tools/gpu_matmul.py --quick               # compile + checks only

In order (asynctc.warp_specialization.measure_matmul, the "matmul" suite): (1) every
configuration matmul picks for the checks and the timed shapes, and the EDGES-off twins, compiled
in parallel (runtime.precompile); (2) every case of matmul_cases() — awkward shapes from
{1, 7, 129, 1000, 4095}, fp16 and bf16, B K×N and N×K, fp32 and input-dtype outputs, the small
non-square table, a persistent shape with more tiles than SMs, DeviceArray operands — through
asynctc.matmul against float64, every element (elementwise |A|·|B| bound, poisoned output),
stopping at the first failure; (3) cuBLAS and matmul (both B layouts) at 4096³, 8192³ and the
non-square table (8192×8192×1024, 1024×8192×8192, 4096×4096×16384, 64/128/256×8192×8192), fp16
and bf16, each timed output checked on sampled rows; at 4096³ the EDGES build against the same
configuration without EDGES (the cost of edge handling). The summary (EDGES cost, configs chosen,
TFLOP/s and of-cuBLAS table) comes last. Equivalent pytest run of the checks:
``pytest -q -m gpu tests/test_matmul.py``.
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

from asynctc import warp_specialization as W  # noqa: E402
from asynctc.core import records, runtime  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out_matmul"),
                    help="folder for results.json (default: $OUT)")
    ap.add_argument("--record", action="store_true", help="write data/<gpu>/matmul.json")
    ap.add_argument("--quick", action="store_true", help="compile + checks only")
    ap.add_argument("--reps", type=int, default=10, help="timed samples per kernel (median)")
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

    kw = dict(progress=say, reps=args.reps)
    if args.quick:
        kw.update(sizes=(), nonsquare=())
    try:
        rec = records.measure("matmul", lambda: W.measure_matmul(**kw))
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
    print(W.summarize_matmul(rec))
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
