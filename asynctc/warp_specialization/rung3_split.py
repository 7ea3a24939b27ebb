"""Chapter 06 §3: rung 2 → rung 3 in single changes, as a table and the numbers its sentence rests
on, from the ``ws_rung3_steps`` record (:mod:`.steps_suite`: every step timed in one run beside
cuBLAS) and a compile (no GPU, no timing, no plotting).

Rung 3 changes three things over rung 2: one consumer warpgroup → two, the 128×128 tile →
128×256, and ``setmaxnreg`` (producer 40 / consumers 232). The record times them one at a time
(:data:`.steps_suite.STEPS`); :func:`rung3_steps` adds what explains them: ptxas's registers per
thread against those each thread has at entry, the spill bytes of the wide build without
setmaxnreg (compiled here with NVRTC), and the tile's shared-memory need (chapter 00 §4's
arithmetic).
"""

from __future__ import annotations

from .config import _launch_regs


def rung3_steps(results: dict, spills: bool = True) -> list[dict]:
    """One dict per step of a ``ws_rung3_steps`` record's results (its :func:`.steps_suite.step_table`
    rows, cuBLAS left out): ``step``, ``after``, ``tflops``, ``sm_mhz``, ``of_cublas``, ``gain``
    (TFLOP/s over the ``after`` step's, minus 1), plus ``config`` (its :class:`WSConfig`), ``what``
    (the change, from the record), ``regs`` (ptxas's count per thread, from the record), ``entry``
    (registers per thread at entry: 65536 / threads rounded down to 8), ``smem_share`` (the tile's
    operand bytes written and read at the Tensor Cores' rate, of the SM's 128 B/clk) and, for the
    128×256 build without setmaxnreg when ``spills``, ``spill_bytes`` (compiled here)."""
    from ..pipeline.trace import need_bytes_per_clk
    from ..why_async import SMEM_BYTES_PER_CLK_SM
    from .figures import register_budget
    from .steps_suite import step_configs, step_table
    cfgs = step_configs(results.get("dtype", "float16"))
    what = {s[0]: s[2] for s in results["steps"]}
    out = []
    for row in step_table(results):
        if row["step"] not in cfgs:
            continue
        cfg = cfgs[row["step"]]
        d = {**row, "config": cfg, "what": what[row["step"]], "regs": results["registers"].get(row["step"]),
             "entry": _launch_regs(cfg.threads),
             "smem_share": 2 * need_bytes_per_clk(cfg.pipeline_config()) / SMEM_BYTES_PER_CLK_SM,
             "spill_bytes": None}
        if spills and cfg.bn == 256 and not cfg.setmaxnreg:
            d["spill_bytes"] = register_budget(cfg)["spill_bytes"]
        out.append(d)
    return out


def rung3_table(steps: list[dict]) -> str:
    """:func:`rung3_steps` as a text table: per step, ptxas's registers of those at entry, the
    shared-memory share, TFLOP/s, the in-flight clock, the fraction of the same run's cuBLAS and
    the gain over the step it was made from."""
    lines = [f"{'step':<21}{'regs':>8}{'smem':>6}{'TFLOP/s':>9}{'MHz':>6}{'cuBLAS':>8}  gain"]
    for d in steps:
        gain = "" if d["gain"] is None else f"{d['gain']:+.1%} over {d['after']}"
        spill = "" if d["spill_bytes"] is None else f", {d['spill_bytes']} B spilled"
        lines.append(f"{d['step']:<21}{d['regs']:>4}/{d['entry']:<3}{d['smem_share']:>6.0%}{d['tflops']:>9.0f}"
                     f"{d['sm_mhz']:>6.0f}{d['of_cublas']:>8.3f}  {gain}{spill}")
    lines.append("regs: ptxas's / at entry; smem: of its 128 B/clk (00 §4); medians of the run's rounds")
    return "\n".join(lines)


def rung3_numbers(results: dict) -> dict:
    """06 §3's numbers on rung 2 → rung 3 from a ``ws_rung3_steps`` record: ``table``
    (:func:`rung3_table`), each step's ``gain`` (``consumers``: a second consumer; ``wider``: the
    128×256 tile; ``regs``: setmaxnreg), ``wide`` (the 128×256 step's row, no setmaxnreg), ``share2``
    (rung 2's shared-memory share) and ``fits`` (the wide tile fits in its registers at entry, no spills)."""
    steps = {d["step"]: d for d in rung3_steps(results)}
    wide = steps["128x256"]
    return {"table": rung3_table(list(steps.values())), "wide": wide, "share2": steps["rung 2"]["smem_share"],
            "consumers": steps["two consumers"]["gain"], "wider": wide["gain"],
            "regs": steps["setmaxnreg (rung 3)"]["gain"],
            "fits": wide["spill_bytes"] == 0 and wide["regs"] <= wide["entry"]}
