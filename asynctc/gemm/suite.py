"""The GEMM's record suite ``matmul``: every check of :func:`asynctc.matmul`, then its timings.

:func:`measure_matmul` (compile, every case of :func:`~asynctc.gemm.matmul_cases` against float64,
then the launch :func:`asynctc.matmul` makes beside cuBLAS on the square sizes and chapter 06's
non-square shapes, and the cost of the ``EDGES`` build at 4096³), :func:`matmul_table` and
:func:`summarize_matmul` (the record as text). Writes records, never plots.
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from ..core import checks, runtime
from ..core.memory import DeviceArray
from ..warp_specialization.config import WAVE_FILL
from ..warp_specialization.launch import WSGemm, compile_job
from ..warp_specialization.suite import NONSQUARE_SHAPES
from .cases import case_config, check_matmul_case, matmul_cases
from .config import matmul_config
from .plan import MatmulPlan

MATMUL_SIZES = (4096, 8192)
MATMUL_DTYPES = ("float16", "bfloat16")
MATMUL_B_LAYOUTS = ("NxK", "KxN")
#: Where the cost of the EDGES build is timed against the same configuration without it.
EDGES_COST_SIZE = 4096


def matmul_jobs(shapes, dtypes=MATMUL_DTYPES, b_layouts=MATMUL_B_LAYOUTS, check: bool = True,
                sm_count: int | None = None) -> list:
    """Every compile job of the "matmul" suite: the checks' configs, the timed shapes' configs and
    their EDGES-off twins at :data:`EDGES_COST_SIZE`³."""
    cfgs = [case_config(c) for c in matmul_cases()] if check else []
    for shp in shapes:
        for dt in dtypes:
            for bl in b_layouts:
                c = matmul_config(*shp, dt, bl, sm_count=sm_count)
                cfgs.append(c)
                if shp == (EDGES_COST_SIZE,) * 3:
                    cfgs.append(c.replace(edges=False))
    return list({repr(compile_job(c)): compile_job(c) for c in cfgs}.values())


def measure_matmul(progress=None, sizes=MATMUL_SIZES, nonsquare=NONSQUARE_SHAPES,
                   dtypes=MATMUL_DTYPES, b_layouts=MATMUL_B_LAYOUTS, check: bool = True,
                   reps: int = 10) -> dict:
    """The "matmul" suite.

    1. Compile every configuration in parallel (:func:`asynctc.core.runtime.precompile`).
    2. ``check``: every case of :func:`matmul_cases` through :func:`matmul` against float64,
       every element (:func:`check_matmul_case`); the first failure raises (nothing is timed).
    3. For each square size and each of ``nonsquare`` (M, N, K), each dtype: fresh random operands
       on the device, cuBLAS (``bench.cublas_gemm``, A M×K · B K×N), then for each B layout the
       kernel launch :func:`matmul` makes (:class:`MatmulPlan`; host-side set-up not timed), its
       output checked on sampled rows. At :data:`EDGES_COST_SIZE`³ also the same configuration
       without EDGES, timed alternately with it (twice each, the faster median kept):
       ``edges_cost`` = t(EDGES) / t(no EDGES) − 1.
    Every timing measures the SM clock in flight (``bench.time_gpu(clock=True)``). Medians; never
    asserted on."""
    from ..core import bench, records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    sms = info.sm_count if info else None
    shapes = [(s, s, s) for s in sizes] + [tuple(x) for x in nonsquare]
    out: dict = {"checks": [], "rows": [], "edges_cost": [],
                 "baseline_library": bench.baseline_library(), "sm_count": sms,
                 "wave_fill": WAVE_FILL}
    jobs = matmul_jobs(shapes, dtypes, b_layouts, check, sms)
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    if check:
        for case in matmul_cases():
            c = check_matmul_case(case, rng)
            out["checks"].append({**case, "config": case_config(case).label(), **c.as_dict()})
            if not c.passed:
                raise RuntimeError(f"wrong: {c.label}: {c.as_dict()}")
        say(f"{len(out['checks'])} matmul checks passed, worst |C-ref|/bound "
            f"{max(x['worst_ratio'] for x in out['checks']):.3f}")
    for (m, n, k) in shapes:
        for dt in dtypes:
            a, b, bt = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt), rng)
            rows = checks.timed_output_reference(a, b, dt, rng)
            da, db, dbt = (DeviceArray.from_host(x) for x in (a, b, bt))
            dc = DeviceArray.poisoned((m, n), checks.np_dtype(dt))
            flop = bench.gemm_flop(m, n, k)
            base = {"m": m, "n": n, "k": k, "dtype": dt}
            cb = None
            if out["baseline_library"]:
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                cb = {**base, "kernel": "cuBLAS", **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms),
                      "rel_err_rows": rows.check(dc).as_dict()}   # recorded, not raised
                out["rows"].append(cb)
            for bl in b_layouts:
                dc.poison()
                plan = MatmulPlan(da, db if bl == "KxN" else dbt, dc, b_layout=bl)
                g = plan.gemm
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()
                lab = f"matmul B:{bl} {plan.config.label()}"
                row = {**base, "kernel": "matmul", "b_layout": bl, "label": lab,
                       "config": plan.config.as_dict(), "grid": g.grid, **t.as_dict(),
                       "tflops": bench.tflops(flop, t.median_ms),
                       "rel_err_rows": checks.check_sampled_rows(dc, a, b, dt, lab,
                                                                 sampled=rows).as_dict()}
                row["of_cublas"] = row["tflops"] / cb["tflops"] if cb else None
                out["rows"].append(row)
                say(f"{m}x{n}x{k} {dt} B:{bl}: {row['tflops']:.0f} TFLOP/s"
                    + (f" ({row['of_cublas']:.2f} of cuBLAS)" if cb else ""))
                if (m, n, k) == (EDGES_COST_SIZE,) * 3:
                    plain = WSGemm(plan.config.replace(edges=False), plan.gemm.a, plan.gemm.b, dc)
                    best = {}
                    for _ in range(2):
                        for what, gg in (("plain", plain), ("edges", g)):
                            dc.poison()
                            tt = bench.time_gpu(gg.launcher(), warmup=3, reps=reps, clock=True)
                            gg.check_error()
                            checks.check_sampled_rows(dc, a, b, dt, f"{what} {lab}", sampled=rows)
                            if what not in best or tt.median_ms < best[what].median_ms:
                                best[what] = tt
                    cost = {**base, "b_layout": bl, "label": plan.config.label(),
                            "edges_ms": best["edges"].median_ms, "plain_ms": best["plain"].median_ms,
                            "edges_tflops": bench.tflops(flop, best["edges"].median_ms),
                            "plain_tflops": bench.tflops(flop, best["plain"].median_ms),
                            "edges_cost": best["edges"].median_ms / best["plain"].median_ms - 1}
                    out["edges_cost"].append(cost)
                    say(f"EDGES cost {m}³ {dt} B:{bl}: {100 * cost['edges_cost']:+.1f} %")
                    del plain
                del plan, g
            del da, db, dbt, dc
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def matmul_table(results: dict) -> str:
    """matmul beside cuBLAS: TFLOP/s and fraction of cuBLAS per shape, dtype and B layout."""
    lines = [f"{'M×N×K':18s} {'dtype':9s} {'cuBLAS':>7s} {'B N×K':>7s} {'of cuBLAS':>9s} "
             f"{'B K×N':>7s} {'of cuBLAS':>9s}"]
    rows = results.get("rows", [])
    keys = list(dict.fromkeys((r["m"], r["n"], r["k"], r["dtype"]) for r in rows))
    for key in keys:
        mine = [r for r in rows if (r["m"], r["n"], r["k"], r["dtype"]) == key]
        cb = next((r["tflops"] for r in mine if r["kernel"] == "cuBLAS"), None)
        cells = []
        for bl in ("NxK", "KxN"):
            r = next((x for x in mine if x.get("b_layout") == bl), None)
            if r is None:
                cells += [f"{'-':>7s}", f"{'-':>9s}"]
            else:
                cells += [f"{r['tflops']:7.0f}",
                          f"{r['of_cublas']:9.2f}" if r.get("of_cublas") else f"{'-':>9s}"]
        m, n, k, dt = key
        cbs = f"{cb:7.0f}" if cb else f"{'-':>7s}"
        lines.append(f"{f'{m}×{n}×{k}':18s} {dt:9s} {cbs} " + " ".join(cells))
    return "\n".join(lines)


def recorded_run(rec, m: int, n: int, k: int, dtype: str = "float16") -> str:
    """06d §3's replay lines, from a ``matmul`` record under its label (GPU, driver, date). First
    whether M×N×K itself is recorded, so that another shape's numbers never read as the asked
    shape's (reader 117). Then every checked ``dtype`` shape in one count, with the worst
    |C − float64| / bound over all their checks, and those that share the asked M, each with its
    own worst (newcomer 54: a nearest shape by log distance read odd); where none shares M, the
    checked shape nearest M×N×K (the sum of |log| ratios). Last, the timed shape nearest M×N×K with
    ``matmul``'s TFLOP/s and share of cuBLAS (B K×N, ``matmul``'s default). A recorded shape is
    marked "(this shape)"."""
    import math

    def near(shapes):
        return min(shapes, key=lambda s: sum(abs(math.log(a / b)) for a, b in zip(s, (m, n, k))))

    def shape(s):
        return "×".join(map(str, s)) + (" (this shape)" if s == (m, n, k) else "")
    r = rec.results
    checks = [c for c in r["checks"] if c["dtype"] == dtype]
    worst = {}
    for c in checks:
        s = (c["m"], c["n"], c["k"])
        worst[s] = max(worst.get(s, 0.0), c["worst_ratio"])
    mine = sorted(s for s in worst if s[0] == m) or [near(worst)]
    rows = [x for x in r["rows"] if x["kernel"] == "matmul" and x["dtype"] == dtype and x["b_layout"] == "KxN"]
    ts = near({(x["m"], x["n"], x["k"]) for x in rows})
    t = next(x for x in rows if (x["m"], x["n"], x["k"]) == ts)
    asked = f"{m}×{n}×{k}"
    found = [what for what, hit in (("checked", (m, n, k) in worst), ("timed", ts == (m, n, k))) if hit]
    lead = (f"No run of {asked} is recorded." if not found else f"{asked} is recorded." if len(found) == 2
            else f"{asked} is recorded {found[0]} only.")
    which = f"with M = {m}" if mine[0][0] == m else "nearest in size"
    return (f"{rec.label()}\n{lead} Checked {len(worst)} {dtype} shapes, worst |C − float64| / bound "
            f"{max(worst.values()):.2f}; {which}: " + ", ".join(f"{shape(s)} {worst[s]:.2f}" for s in mine)
            + f".\nTimed, nearest: {shape(ts)}, {t['tflops']:.0f} TFLOP/s, {t['of_cublas']:.2f} of cuBLAS.")


def summarize_matmul(rec) -> str:
    """The "matmul" suite's summary: checks, the EDGES cost at 4096³, the configs chosen, the
    TFLOP/s table against cuBLAS."""
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "matmul"] + P.checks_lines(r)
    for c in r.get("edges_cost", []):
        lines.append(f"EDGES cost {c['m']}³ {c['dtype']} B:{c['b_layout']}: "
                     f"{100 * c['edges_cost']:+.1f} % ({c['edges_tflops']:.0f} vs "
                     f"{c['plain_tflops']:.0f} TFLOP/s without EDGES; {c['label']})")
    for lab in dict.fromkeys(x["label"] for x in r.get("rows", []) if x["kernel"] == "matmul"):
        shapes = sorted({f"{x['m']}×{x['n']}×{x['k']}" for x in r["rows"] if x.get("label") == lab})
        lines.append(f"config {lab}: {', '.join(shapes)}")
    lines.append(matmul_table(r))
    return "\n".join(lines)


SUITES = {"matmul": (measure_matmul, summarize_matmul, "sm_90a")}
