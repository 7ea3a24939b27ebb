"""Record suite ``l2_supply``: how fast the ring is fed when nothing reads it.

Chapter 05 §5 asks why more stages stop paying. Its hypothesis was that L2 and TMA deliver each SM
fewer bytes per clock than the math needs. This suite measures that supply in the GEMM's own access
pattern: the same kernel (``kernels/pipeline.cu``), the same grid, tile order, tensor maps, ring and
mbarriers, built once as is and once with ``LOADS_ONLY=1`` (the consumers issue no wgmma and store
no C). Both builds are timed in the same run, alternating, with the SM clock measured in flight.

``supply`` (bytes per clock per SM) = every CTA's k-tiles × stage bytes / (time × SM clock × SMs).
``need`` = the bytes one k-tile brings / the clocks its wgmmas take at the Tensor Core peak
(:func:`asynctc.pipeline.trace.need_bytes_per_clk`). The GEMM build is checked on sampled rows against float64; the
loads-only build's error word must stay 0 (every wait completed: the ring ran to its end).

:func:`measure_supply` measures (GPU), :func:`supply_rows` and :func:`supply_table` read the record.
Never plots.
"""

from __future__ import annotations

import numpy as np

from ..core import runtime
from .config import PipelineConfig
from .trace import need_bytes_per_clk

SUITE = "l2_supply"
SIZE, DTYPE = 4096, "float16"
#: The worklog's pipeline steps: 128×128 with one consumer at 1–4 stages, and 128×256 with two at 4.
CONFIGS = tuple(dict(bm=128, bn=128, consumers=1, stages=s) for s in (1, 2, 3, 4)) + (
    dict(bm=128, bn=256, consumers=2, stages=4),)


def config(bm: int, bn: int, consumers: int, stages: int) -> PipelineConfig:
    """The sweep's build of a tile (C in the input dtype, one CTA per SM, B K-major)."""
    return PipelineConfig(dtype=DTYPE, bm=bm, bn=bn, consumers=consumers, stages=stages,
                          out_dtype=DTYPE, wait_pending=1 if stages > 1 else 0, ctas_per_sm=1)


def bytes_moved(cfg: PipelineConfig, size: int = SIZE) -> int:
    """Bytes the ring brings into shared memory in one launch: every CTA's k-tiles × stage bytes."""
    return (size // cfg.bm) * (size // cfg.bn) * (size // cfg.bk) * cfg.stage_bytes


def per_clk_per_sm(nbytes: int, median_ms: float, sm_mhz: float, sms: int) -> float:
    return nbytes / (median_ms * 1e-3 * sm_mhz * 1e6 * sms)


def measure_supply(progress=None, rounds: int = 2, reps: int = 10) -> dict:
    """Each of :data:`CONFIGS` at 4096³ fp16, the GEMM and its loads-only build, ``rounds``
    rounds (order reversed every other round), each with the in-flight SM clock."""
    from ..core import bench, checks, records
    from ..core.memory import DeviceArray
    from .launch import PipelineGemm, device_problem
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    out: dict = {"rows": [], "sm_count": info.sm_count if info else None, "size": SIZE,
                 "dtype": DTYPE}
    a, b, da, db, dbt = device_problem(SIZE, DTYPE, rng)
    sampled = checks.timed_output_reference(a, b, DTYPE, rng)
    dc = DeviceArray.poisoned((SIZE, SIZE), checks.np_dtype(DTYPE))
    flop = bench.gemm_flop(SIZE, SIZE, SIZE)
    for r in range(rounds):
        for kw in (CONFIGS if r % 2 == 0 else CONFIGS[::-1]):
            cfg = config(**kw)
            for loads_only in ((False, True) if r % 2 == 0 else (True, False)):
                g = PipelineGemm(cfg, da, dbt, dc, hooks={"LOADS_ONLY": 1} if loads_only else None)
                dc.poison()
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()                       # a timed-out wait raises here
                row = {"tile": cfg.tile_name, "stages": cfg.stages, "loads_only": loads_only,
                       "round": r, **kw, "stage_bytes": cfg.stage_bytes,
                       "bytes": bytes_moved(cfg), "need": need_bytes_per_clk(cfg),
                       **t.as_dict()}
                if not loads_only:
                    c = checks.check_sampled_rows(dc, a, b, DTYPE, cfg.label(), sampled=sampled)
                    row.update(tflops=bench.tflops(flop, t.median_ms), max_err_rows=c.max_err)
                row["supply"] = per_clk_per_sm(row["bytes"], t.median_ms, t.sm_mhz, out["sm_count"])
                out["rows"].append(row)
                say(f"{cfg.tile_name} s{cfg.stages} {'loads only' if loads_only else 'GEMM      '}: "
                    f"{t.median_ms:.4f} ms at {t.sm_mhz:.0f} MHz, {row['supply']:.1f} B/clk/SM "
                    f"(need {row['need']:.0f})")
                del g
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def supply_rows(results: dict) -> list[dict]:
    """Per config (in :data:`CONFIGS` order): the medians over rounds of the GEMM's and the
    loads-only build's bytes per clock per SM, the need, and the GEMM's TFLOP/s."""
    out = []
    for kw in CONFIGS:
        rows = [r for r in results["rows"] if all(r[k] == v for k, v in kw.items())]
        gemm = [r for r in rows if not r["loads_only"]]
        loads = [r for r in rows if r["loads_only"]]
        if not gemm or not loads:
            continue
        out.append({**kw, "tile": gemm[0]["tile"], "need": gemm[0]["need"],
                    "gemm": float(np.median([r["supply"] for r in gemm])),
                    "loads_only": float(np.median([r["supply"] for r in loads])),
                    "tflops": float(np.median([r["tflops"] for r in gemm]))})
    return out


def supply_table(results: dict) -> str:
    """The record as a table: per tile and depth, what the math needs, what the GEMM moved, and
    what the ring alone moves (bytes per clock per SM)."""
    lines = [f"{'tile':16s} {'stages':>6s} {'math needs':>11s} {'GEMM moved':>11s} "
             f"{'loads alone':>12s}   (bytes/clk/SM)"]
    for r in supply_rows(results):
        lines.append(f"{r['tile']:16s} {r['stages']:6d} {r['need']:11.1f} {r['gemm']:11.1f} "
                     f"{r['loads_only']:12.1f}")
    return "\n".join(lines)


def summarize_supply(rec) -> str:
    return f"{rec.label()}\n{supply_table(rec.results)}"


def conclusion(results: dict, fitted_cap: float | None = None) -> tuple[bool, str]:
    """Chapter 05 §5's answer, generated from the record: whether the ring alone feeds each tile
    what its math needs. Returns (condition, sentence) for :func:`asynctc.core.notebook.claim`;
    the condition is what the sentence states (the 128×128 tile starved at its best depth, the
    128×256 tile fed above its need while its GEMM moves less than the ring can bring), so a
    re-measurement that flips either fails. ``fitted_cap``: 05b's fitted L2 cap, set beside it."""
    rows = supply_rows(results)
    small = max((r for r in rows if (r["bm"], r["bn"]) == (128, 128)), key=lambda r: r["loads_only"])
    big = next(r for r in rows if (r["bm"], r["bn"], r["stages"]) == (128, 256, 4))
    ok = small["loads_only"] < small["need"] and big["gemm"] < big["need"] < big["loads_only"]
    text = (f"128×128: the ring alone brings at most {small['loads_only']:.0f} B/clk/SM "
            f"(S = {small['stages']}), under the {small['need']:.0f} its math needs — L2 and TMA set "
            f"its pace. 128×256: the ring alone brings {big['loads_only']:.0f}, above its need of "
            f"{big['need']:.0f}, yet the GEMM moves {big['gemm']:.0f} — the limit is what the "
            f"loads-only build leaves out: the wgmmas, their waits and the store of C (chapter 06).")
    if fitted_cap is not None:
        ok = ok and abs(fitted_cap - big["loads_only"]) > 0.1 * big["loads_only"]
        text += (f" 05b's fitted cap, {fitted_cap:.0f} B/clk/SM, fits the depth sweep but is not "
                 f"the measured supply: a fitted number that agrees is not a measurement.")
    return ok, text


SUITES = {SUITE: (measure_supply, summarize_supply, "sm_90a")}
