"""Record suite ``whole_gemm``: chapter 06's whole kernel (``kernels/hopper_gemm.cu``, :mod:`.whole`)
checked, then timed beside rung 3 (``kernels/warp_specialization.cu``, the same design) and cuBLAS.

:func:`measure_whole` never raises on a wrong result or a timed-out wait: each check is recorded
(``passed``, or ``error``), and when one failed the timings are skipped (a wrong kernel's speed is
never recorded) — so the record of a failing run still says what failed. :func:`whole_summary`
reads a record back (the notebook's numbers), :func:`summarize_whole` prints it. Never plots.
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from ..core import checks, records
from ..core.memory import DeviceArray
from . import whole
from .ladder import _ws2
from .launch import make_gemm

SUITE = "whole_gemm"
#: (M, N, K, dtype) of the checks: one tile, several tile rows and columns with 16 k-tiles, fewer
#: k-tiles (3) than stages, more tiles than SMs, bf16.
CHECKS = ((128, 256, 64, "float16"), (512, 768, 1024, "float16"), (256, 512, 192, "float16"),
          (2048, 4096, 512, "float16"), (512, 768, 1024, "bfloat16"), (1024, 1024, 4096, "bfloat16"))
SIZES = (4096, 8192)
KERNELS = ("cuBLAS", "rung 3", "whole")


def _check(m, n, k, dt, rng) -> dict:
    try:
        return whole.verify_whole(m, n, k, dt, rng).as_dict()
    except Exception as e:  # noqa: BLE001 - recorded, never raised: the record must be written
        return {"shape": [m, n, k], "config": f"hopper_gemm {dt}", "passed": False,
                "error": f"{type(e).__name__}: {e}"}


def measure_whole(progress=None, sizes=SIZES, dtype: str = "float16", reps: int = 10,
                  rounds: int = 2) -> dict:
    """Checks (:data:`CHECKS`), then at each size ``rounds`` rounds of cuBLAS, rung 3 and the
    whole kernel (the order reversed every other round), each output checked on sampled rows."""
    from ..core import bench
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    out: dict = {"checks": [], "rows": [], "baseline_library": bench.baseline_library()}
    for m, n, k, dt in CHECKS:
        out["checks"].append(_check(m, n, k, dt, rng))
        c = out["checks"][-1]
        say(f"check {m}x{n}x{k} {dt}: " + ("passed" if c["passed"] else
                                            f"FAILED {c.get('error') or c}"))
    if not all(c["passed"] for c in out["checks"]):
        out["timings_skipped"] = "a check failed: a wrong kernel's speed is not recorded"
        return out
    for size in sizes:
        try:
            a, b, da, db, dbt = P.device_problem(size, dtype, rng)
            sampled = checks.timed_output_reference(a, b, dtype, rng)
            dc = DeviceArray.poisoned((size, size), checks.np_dtype(dtype))
            run_whole, err = whole.launcher(da, dbt, dc)
            g3 = make_gemm(_ws2(dtype), da, dbt, dc)
            fns = {"whole": run_whole, "rung 3": g3.launcher()}
            if out["baseline_library"]:
                fns["cuBLAS"] = bench.cublas_gemm(da, db, dc)
        except Exception as e:  # noqa: BLE001 - recorded; the record is still written
            out["rows"].append({"kernel": "setup", "size": size, "dtype": dtype,
                                "error": f"{type(e).__name__}: {e}"})
            say(f"{size}³ setup FAILED: {out['rows'][-1]['error']}")
            continue
        for r in range(rounds):
            for name in (KERNELS if r % 2 == 0 else KERNELS[::-1]):
                if name not in fns:
                    continue
                row = {"kernel": name, "size": size, "dtype": dtype, "round": r}
                try:
                    dc.poison()
                    t = bench.time_gpu(fns[name], warmup=3, reps=reps, clock=True)
                    word = int(err.to_host()[0]) if name == "whole" else 0
                    if word:
                        raise RuntimeError(f"hopper_gemm {size}³: {P.decode_error(word, producer_warpgroup=True)}")
                    if name == "rung 3":
                        g3.check_error()
                    row.update(**t.as_dict(), tflops=bench.tflops(bench.gemm_flop(size, size, size),
                                                                  t.median_ms),
                               error_word=word)
                    if name == "cuBLAS":     # recorded, not raised (its split-K rounding)
                        row["rel_err_rows"] = sampled.check(dc).as_dict()
                    else:                    # raises when wrong: the row records the error
                        row["rel_err_rows"] = checks.check_sampled_rows(
                            dc, a, b, dtype, name, sampled=sampled).as_dict()
                    say(f"{size}³ {name} round {r}: {row['tflops']:.0f} TFLOP/s")
                except Exception as e:  # noqa: BLE001 - recorded; the other kernels still run
                    row["error"] = f"{type(e).__name__}: {e}"
                    say(f"{size}³ {name} round {r}: FAILED {row['error']}")
                out["rows"].append(row)
        del g3, fns, run_whole, da, db, dbt, dc
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def whole_summary(results: dict) -> dict:
    """What a record says: ``checks_passed`` (bool), ``n_checks``, ``worst_ratio`` (largest
    |C − ref| / bound over the checks), ``failed`` (the failing checks), and per size ``tflops``
    {kernel: mean of its rounds' medians} and ``of_cublas`` {kernel: its TFLOP/s / cuBLAS's}."""
    cs = results.get("checks", [])
    s = {"checks_passed": bool(cs) and all(c.get("passed") for c in cs), "n_checks": len(cs),
         "worst_ratio": max((c.get("worst_ratio", 0.0) for c in cs), default=float("nan")),
         "failed": [c for c in cs if not c.get("passed")], "sizes": {}}
    for row in results.get("rows", []):
        if "tflops" in row and "error" not in row:
            s["sizes"].setdefault(row["size"], {}).setdefault(row["kernel"], []).append(row["tflops"])
    for size, ks in s["sizes"].items():
        tf = {k: float(np.mean(v)) for k, v in ks.items()}
        s["sizes"][size] = {"tflops": tf, "of_cublas": {k: v / tf["cuBLAS"] for k, v in tf.items()}
                            if "cuBLAS" in tf else {}}
    return s


def whole_verdicts(results: dict, tolerance: float = 0.02) -> list[tuple[bool, str, str]]:
    """The chapter's sentences on a record, each (condition, if true, if false) for
    :func:`asynctc.core.notebook.verdict`: the checks, then per size the whole kernel beside rung 3
    (the same speed within ``tolerance``, or which is faster by how much) and cuBLAS."""
    s = whole_summary(results)
    worst = s["worst_ratio"]
    out = [(s["checks_passed"],
            f"Checked at {s['n_checks']} shapes (fp16 and bf16, fresh random inputs, C poisoned): "
            f"every element within its bound, the worst at {worst:.2f} of it.",
            f"A check failed ({s['failed'][0] if s['failed'] else 'no checks'}): the kernel is "
            "wrong, and its speed was not recorded.")]
    for size, d in sorted(s["sizes"].items()):
        of = d["of_cublas"]
        if "whole" not in of or "rung 3" not in of:
            continue
        x, y = of["whole"], of["rung 3"]
        head = f"{size}³ fp16: the whole kernel runs at {x:.2f} of cuBLAS, rung 3 at {y:.2f}"
        out.append((abs(x / y - 1) <= tolerance, f"{head}: the same speed within {tolerance:.0%}.",
                    f"{head}: the whole kernel is {'faster' if x > y else 'slower'} by "
                    f"{abs(x / y - 1):.0%}."))
    return out


def rung3_of_cublas(ladder_results: dict) -> dict:
    """{size: rung 3's fp16 TFLOP/s over cuBLAS's} from the ``warp_specialization`` record."""
    return {r["size"]: r["of_cublas"] for r in ladder_results["ladder"]
            if r.get("rung") == 3 and r["dtype"] == "float16"}



def not_run_yet(ladder_results: dict) -> str:
    """06 §4's line without a ``whole_gemm`` record: rung 3, the same design, beside cuBLAS."""
    return ("Not run on a GPU yet: there is no record whole_gemm. Rung 3, the same design, ran at "
            + " and ".join(f"{v:.2f} of cuBLAS at {n}³" for n, v in sorted(rung3_of_cublas(ladder_results).items()))
            + " (fp16).")


def summarize_whole(rec: records.Record) -> str:
    s = whole_summary(rec.results)
    lines = [f"{rec.label()}", f"checks: {s['n_checks']}, "
             + ("all passed" if s["checks_passed"] else f"FAILED: {s['failed']}")
             + f", worst |C-ref|/bound {s['worst_ratio']:.3f}"]
    for size, d in sorted(s["sizes"].items()):
        lines.append(f"{size}³: " + ", ".join(
            f"{k} {v:.0f} TFLOP/s" + (f" ({d['of_cublas'][k]:.2f} of cuBLAS)" if d["of_cublas"] else "")
            for k, v in d["tflops"].items()))
    if rec.results.get("timings_skipped"):
        lines.append(f"timings skipped: {rec.results['timings_skipped']}")
    return "\n".join(lines)


SUITES = {SUITE: (measure_whole, summarize_whole, "sm_90a")}


def show_status(ladder_results: dict) -> None:
    """Deep dive 06d §4's cell in one call: on a GPU, check the whole kernel now at 512×768×1024 (raises
    :class:`asynctc.core.notebook.ClaimError` if an element misses its bound); then the ``whole_gemm``
    record's generated verdicts (the checks, the time beside rung 3 and cuBLAS), or, before its first
    GPU run, rung 3's fractions of cuBLAS (:func:`not_run_yet`)."""
    from ..core import notebook, runtime
    if runtime.runs_live("sm_90a"):
        c = whole.verify_whole(512, 768, 1024)
        notebook.claim(c.passed, f"Checked now at 512×768×1024: every element within its bound "
                                 f"(the worst at {c.worst:.2f} of it).", worst=c.worst)
    rec = records.load_or_none(SUITE)
    if rec is None:
        print(not_run_yet(ladder_results))
        return
    print(rec.label())
    for v in whole_verdicts(rec.results):
        notebook.verdict(*v)
