"""Chapter 04 on the GPU in one command: every wgmma check, the mismatch, the throughput sweep.

Run from the repository root on an sm_90 machine:

    python tools/gpu_ch04.py            # checks + sweep, prints a compact table (~1-2 minutes)
    python tools/gpu_ch04.py --save     # ... and writes data/<gpu>/wgmma.json (the "wgmma" record)
    python tools/gpu_ch04.py --quick    # checks only (no throughput sweep)

It runs, in order: the 384 single-tile combinations (dtype × A source × major-ness × swizzle × N,
fresh random data, poisoned outputs, float64 reference), a few accumulate-into-C tiles, the
TMA-fed tiles (72: TMA writes through tensor maps, the descriptors read), the deliberate
descriptor/layout mismatch (measured vs the model's prediction), and the throughput sweep by N and operand source. Failures are listed, never
hidden; nothing is recorded unless every check passed. Equivalent pytest run:
``pytest -q -m gpu tests/test_wgmma.py``.
"""
import argparse
import sys
import time
import traceback

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

from asynctc.core import records, runtime  # noqa: E402
from asynctc import wgmma as W
from asynctc import wgmma_peak as WP  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write data/<gpu>/wgmma.json")
    ap.add_argument("--quick", action="store_true", help="correctness only, no throughput sweep")
    args = ap.parse_args()
    t0 = time.time()
    info = runtime.device_info()
    if not runtime.runs_live("sm_90a"):
        print(f"no live sm_90a GPU: {runtime.why_not_live('sm_90a')}")
        return 2
    print(f"{info.name}, {info.sm_count} SMs, max SM clock {info.max_sm_clock_khz / 1000:.0f} MHz, "
          f"NVRTC {'.'.join(map(str, runtime.nvrtc_version()))}", flush=True)

    def say(s):
        print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

    failed = 0
    # Accumulate into C (scale-d = 1 from the first wgmma) on a few configurations.
    try:
        for cfg in (W.TileConfig("float16", 64, "MN", "K", 64),
                    W.TileConfig("bfloat16", 256, "K", "MN", 32, a_source="registers"),
                    W.TileConfig("float8_e4m3fn", 128, "K", "K", 0)):
            runtime.precompile(W.tile_modules([cfg]))
            c = W.verify_tile(cfg, with_c=True)
            say(f"C-accumulate {cfg.label()}: rel_err {c.rel_err:.2e} {'ok' if c.passed else 'FAIL'}")
            failed += not c.passed
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        failed += 1
    if args.quick:
        orig = WP.peak_configs
        WP.peak_configs = lambda: []  # noqa: E731
    try:
        rec = records.measure("wgmma", lambda: WP.measure_wgmma(progress=say, stop_on_failure=False))
    finally:
        if args.quick:
            WP.peak_configs = orig
    r = rec.results
    bad = [c for c in r["checks"] if not c["passed"]]
    by = {}
    for c in r["checks"]:
        key = (c["dtype"], ("TMA " if c.get("loader") == "tma" else "") +
               ("RS" if c["a_source"] == "registers" else f"SS {c['a_major']}"), c["b_major"])
        ok, n = by.get(key, (0, 0))
        by[key] = (ok + bool(c["passed"]), n + 1)
    print("\nsingle-tile checks (all N in 8..256, all swizzle modes):")
    for (dt, a, b), (ok, n) in sorted(by.items()):
        print(f"  {dt:14s} A {a:9s} B {b:2s}: {ok:3d}/{n:3d} {'ok' if ok == n else 'FAIL'}")
    for c in bad[:20]:
        print("  FAILED", c)
    print()
    print(WP.summarize_wgmma(rec))
    failed += len(r.get("failures", []))
    if args.save and not failed and not args.quick:
        print("wrote", records.save(rec))
    elif args.save:
        print("not saved: there were failures" if failed else "not saved: --quick")
    say(f"done, {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
