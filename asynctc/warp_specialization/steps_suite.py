"""Record suite ``ws_rung3_steps``: rung 2 → rung 3 of chapter 06's ladder, one change at a time.

Rung 3 changes three things at once: one consumer warpgroup becomes two, the tile grows from
128×128 to 128×256, and setmaxnreg moves registers from the producer to the consumers (40 / 232).
This suite times the builds that take those steps one by one, beside cuBLAS, in one run
(alternating order, the SM clock measured in flight), at 4096³ fp16. Each step's gain is over the
build named in its ``after`` column:

=======================  ========================================================  ===============
step                     build                                                     after
=======================  ========================================================  ===============
``rung 2``               128×128, one consumer, no setmaxnreg (the ladder's rung 2)
``two consumers``        128×128, two consumers (64 rows each), no setmaxnreg      rung 2
``128x256``              128×256, two consumers, no setmaxnreg (154 registers fit)  two consumers
``setmaxnreg (rung 3)``  128×256, two consumers, setmaxnreg 40 / 232 (rung 3)      128x256
``setmaxnreg at 128``    128×128, two consumers, setmaxnreg (a side row)            two consumers
=======================  ========================================================  ===============

Every build is checked on sampled rows against float64 before its time is kept. Never plots.
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from ..core import checks, records
from ..core.memory import DeviceArray
from .ladder import _ws, _ws2
from .launch import make_gemm

SUITE = "ws_rung3_steps"
SIZE, DTYPE = 4096, "float16"
#: The steps, in order: (name, the build its gain is over, what changed).
STEPS = (("rung 2", None, "the ladder's rung 2"),
         ("two consumers", "rung 2", "a second consumer warpgroup, same 128×128 tile"),
         ("128x256", "two consumers", "the 128×256 tile, registers as they come"),
         ("setmaxnreg (rung 3)", "128x256", "setmaxnreg 40 / 232"),
         ("setmaxnreg at 128", "two consumers", "setmaxnreg on the 128×128 tile (a side row)"))


def step_configs(dtype: str = DTYPE) -> dict:
    """{step name: its WSConfig} (:data:`STEPS`)."""
    two = _ws(dtype).replace(consumers=2)
    return {"rung 2": _ws(dtype), "two consumers": two, "128x256": two.replace(bn=256),
            "setmaxnreg (rung 3)": _ws2(dtype), "setmaxnreg at 128": two.replace(setmaxnreg=True)}


def measure_steps(progress=None, rounds: int = 3, reps: int = 10, size: int = SIZE) -> dict:
    """:data:`STEPS` and cuBLAS at ``size``³, ``rounds`` rounds (order reversed every other round)."""
    from ..core import bench
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    out: dict = {"rows": [], "size": size, "dtype": DTYPE, "baseline_library": bench.baseline_library(),
                 "steps": [list(s) for s in STEPS], "registers": {}}
    a, b, da, db, dbt = P.device_problem(size, DTYPE, rng)
    sampled = checks.timed_output_reference(a, b, DTYPE, rng)
    dc = DeviceArray.poisoned((size, size), checks.np_dtype(DTYPE))
    gemms = {name: make_gemm(cfg, da, dbt, dc) for name, cfg in step_configs().items()}
    for name, g in gemms.items():
        out["registers"][name] = g.ck.resources.registers
    fns = {name: g.launcher() for name, g in gemms.items()}
    if out["baseline_library"]:
        fns["cuBLAS"] = bench.cublas_gemm(da, db, dc)
    order = list(fns)
    flop = bench.gemm_flop(size, size, size)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            dc.poison()
            t = bench.time_gpu(fns[name], warmup=3, reps=reps, clock=True)
            row = {"kernel": name, "size": size, "dtype": DTYPE, "round": r, **t.as_dict(),
                   "tflops": bench.tflops(flop, t.median_ms)}
            if name == "cuBLAS":
                row["rel_err_rows"] = sampled.check(dc).as_dict()
            else:
                gemms[name].check_error()
                row["rel_err_rows"] = checks.check_sampled_rows(dc, a, b, DTYPE, name,
                                                                sampled=sampled).as_dict()
            out["rows"].append(row)
            say(f"{name:18s} round {r}: {row['tflops']:.0f} TFLOP/s at {t.sm_mhz:.0f} MHz")
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def step_table(results: dict) -> list[dict]:
    """Per step (:data:`STEPS`, then cuBLAS): the medians over rounds of TFLOP/s and of the
    in-flight clock, the fraction of cuBLAS (the median of each round's ratio to that round's
    cuBLAS), and the gain over the build in ``after`` (None for rung 2 and cuBLAS)."""
    from ..core.bench import round_ratio
    rows = results["rows"]
    tf, out = {}, []
    for name, after, _what in [tuple(s) for s in results["steps"]] + [("cuBLAS", None, "")]:
        mine = [r for r in rows if r["kernel"] == name]
        if not mine:
            continue
        tf[name] = float(np.median([r["tflops"] for r in mine]))
        out.append({"step": name, "after": after, "tflops": tf[name],
                    "sm_mhz": float(np.median([r["sm_mhz"] for r in mine])),
                    "of_cublas": round_ratio(rows, name, "cuBLAS"),
                    "gain": tf[name] / tf[after] - 1 if after in tf else None})
    return out


def summarize_steps(rec: records.Record) -> str:
    lines = [rec.label(), f"{'step':20s} {'TFLOP/s':>8s} {'MHz':>6s} {'of cuBLAS':>9s}  gain"]
    for r in step_table(rec.results):
        frac = r["of_cublas"] if r["of_cublas"] is not None else float("nan")
        gain = f"{r['gain']:+.1%} over {r['after']}" if r["gain"] is not None else ""
        lines.append(f"{r['step']:20s} {r['tflops']:8.0f} {r['sm_mhz']:6.0f} {frac:9.3f}  {gain}")
    return "\n".join(lines)


SUITES = {SUITE: (measure_steps, summarize_steps, "sm_90a")}
