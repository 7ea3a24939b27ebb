"""Chapter 09 (tcgen05) in one command, on whatever machine this is.

Run from the repository root:

    python tools/gpu_ch09.py            # compile + SASS of every variant; checks where possible
    python tools/gpu_ch09.py --save     # on compute capability 10.0: also write data/<gpu>/tcgen05.json

Always (any machine, GPU or not): every variant of asynctc.tcgen05.SUITE_CONFIGS is compiled to
sm_100a cubin and its SASS counted (UTCHMMA, UTCBAR, LDTM, UTCATOMSWS, UVIRTCOUNT, UTMALDG,
SYNCS, UCGABAR, spills), and so is every asynctc.tcgen05.PERSISTENT_CONFIGS variant of the
deep dive's persistent kernel (UTCHMMA / UTCQMMA, UTCCP, UGETNEXTWORKID, UTMALDG.MULTICAST).
On a GPU that is not compute capability 10.0 (e.g. the course's H200): the refusal path with the
real device probe — run_gemm / verify_gemm / the suite must raise WrongGPUError naming this GPU,
before anything is allocated.
On compute capability 10.0: every variant on every check shape against float64 (fresh random data,
poisoned output, elementwise bound), then the "tcgen05" suite (timings beside cuBLAS).
Details go to $OUT/ch09.json when $OUT is set; a short table is printed last. Exit status 1 if any
step failed.
"""
import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asynctc.core import records, runtime  # noqa: E402
from asynctc import tcgen05 as T  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write data/<gpu>/tcgen05.json (cc 10.0)")
    args = ap.parse_args()
    t0 = time.time()
    out: dict = {"nvrtc": ".".join(map(str, runtime.nvrtc_version())), "sass": [], "refusal": None,
                 "checks": [], "suite": None, "failures": []}
    info = runtime.device_info()
    out["gpu"] = None if info is None else {"name": info.name, "cc": list(info.cc)}
    print(f"GPU: {info.name + ' cc ' + '.'.join(map(str, info.cc)) if info else 'none'}; "
          f"NVRTC {out['nvrtc']}", flush=True)

    def say(s):
        print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

    # 1. compile + SASS, everywhere
    for cfg in T.SUITE_CONFIGS:
        try:
            s = T.sass_summary(cfg)
            out["sass"].append({"config": cfg.as_dict(), "label": cfg.label(), **s})
            if s["spill_bytes"] or not (s["UTCHMMA"] and s["UTCBAR"] and s["LDTM"]
                                        and s["UTCATOMSWS"]):
                out["failures"].append(f"SASS {cfg.label()}: {s}")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            out["failures"].append(f"compile {cfg.label()}: {type(e).__name__}: {e}")
    say(f"compiled {len(out['sass'])}/{len(T.SUITE_CONFIGS)} variants for sm_100a")
    out["persistent_sass"] = []
    for cfg in T.PERSISTENT_CONFIGS:            # the deep dive's persistent kernel (09b)
        try:
            s = T.persistent_sass_summary(cfg)
            out["persistent_sass"].append({"config": cfg.as_dict(), "label": cfg.label(), **s})
            mma = s["UTCQMMA"] if cfg.kind == "mxf8f6f4" else s["UTCHMMA"]
            if s["spill_bytes"] or not (mma and s["UTCBAR"] and s["LDTM"]) or \
                    (cfg.sched == "clc") != bool(s["UGETNEXTWORKID"]):
                out["failures"].append(f"SASS {cfg.label()}: {s}")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            out["failures"].append(f"compile {cfg.label()}: {type(e).__name__}: {e}")
    say(f"compiled {len(out['persistent_sass'])}/{len(T.PERSISTENT_CONFIGS)} persistent variants")

    live = info is not None and tuple(info.cc) == (10, 0)
    if not live:
        # 2. the refusal, with the real probe
        cfg = T.SUITE_CONFIGS[0]
        a, b = T.random_operands(256, 256, 128, cfg.dtype)
        msgs = []
        for name, call in (("run_gemm", lambda: T.run_gemm(a, b, cfg)),
                           ("verify_gemm", lambda: T.verify_gemm(cfg)),
                           ("measure_tcgen05", T.measure_tcgen05),
                           ("run_persistent", lambda: T.run_persistent(a, b, T.PERSISTENT_CONFIGS[0]))):
            try:
                call()
                out["failures"].append(f"{name} did not refuse on {out['gpu']}")
            except T.WrongGPUError as e:
                msgs.append(f"{name}: {e}")
            except Exception as e:  # noqa: BLE001
                out["failures"].append(f"{name} raised {type(e).__name__} instead: {e}")
        out["refusal"] = msgs
        for m in msgs:
            say(f"refused as it should: {m}")
    else:
        # 3. correctness, then the suite
        for cfg in T.SUITE_CONFIGS:
            for shp in T.check_shapes(cfg):
                try:
                    c = T.verify_gemm(cfg, shp)
                    out["checks"].append(c.as_dict())
                    if not c.passed:
                        out["failures"].append(f"{cfg.label()} {shp}: {c.as_dict()}")
                except Exception as e:  # noqa: BLE001
                    traceback.print_exc()
                    out["failures"].append(f"{cfg.label()} {shp}: {type(e).__name__}: {e}")
            say(f"checked {cfg.label()}")
        for cfg in (c for c in T.PERSISTENT_CONFIGS if c.kind == "f16"):
            m, n, k = 3 * cfg.bm + 40, 5 * cfg.bn * cfg.cluster_n - 24, 8 * cfg.bk + 8
            try:
                a, b = T.random_operands(m, n, k, cfg.dtype)
                c = T.compare(T.run_persistent(a, b, cfg), a, b, T.GemmConfig(cfg.dtype))
                out["checks"].append({"persistent": cfg.as_dict(), **c.as_dict()})
                if not c.passed:
                    out["failures"].append(f"{cfg.label()} {(m, n, k)}: {c.as_dict()}")
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                out["failures"].append(f"{cfg.label()} {(m, n, k)}: {type(e).__name__}: {e}")
            say(f"checked {cfg.label()}")
        if not out["failures"]:
            try:
                rec = records.measure("tcgen05", lambda: T.measure_tcgen05(progress=say))
                out["suite"] = rec.results
                if args.save:
                    say(f"wrote {records.save(rec)}")
                print(T.summarize_tcgen05(rec))
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                out["failures"].append(f"suite: {type(e).__name__}: {e}")

    if os.environ.get("OUT"):
        p = Path(os.environ["OUT"]) / "ch09.json"
        p.write_text(json.dumps(out, indent=1, default=str) + "\n")
        say(f"details in {p}")

    print("\nvariant                                       UTCHMMA UTCBAR LDTM ATOMSWS TMA  regs spill")
    for s in out["sass"]:
        full = s["full"]
        mma = next((k for k in full if k.startswith("UTCHMMA")), "-")
        print(f"{s['label']:45s} {s['UTCHMMA']:4d} {s['UTCBAR']:6d} {s['LDTM']:4d} "
              f"{s['UTCATOMSWS']:7d} {s['UTMALDG']:4d} {s['registers']:4d} {s['spill_bytes']:5d}  {mma}")
    if out["checks"]:
        ok = sum(c["passed"] for c in out["checks"])
        print(f"checks against float64: {ok}/{len(out['checks'])} passed")
    if out["refusal"] is not None:
        print(f"refusals on this GPU: {len(out['refusal'])}/4")
    for f in out["failures"]:
        print("FAILED", f)
    print("RESULT", "FAIL" if out["failures"] else "ok")
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
