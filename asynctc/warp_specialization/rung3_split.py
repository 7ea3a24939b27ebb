"""Chapter 06 §3: rung 2 → rung 3 taken apart into single changes, from the ``warp_specialization``
record and a compile (no GPU, no timing, no plotting).

Rung 3 changes three things at once over rung 2: one consumer warpgroup → two, the 128×128 tile →
128×256, and ``setmaxnreg`` (producer 40 / consumers 232). The record timed the step between them
(128×128 with two consumers, rung 4's sweep), so :func:`rung3_steps` lays the climb out one change
at a time:

* ``2``: rung 2, 128×128, one consumer (timed);
* ``a``: two consumers on the same 128×128 tile (timed; it runs with setmaxnreg on, which 64
  accumulators per thread do not need);
* ``b``: 128×256 with two consumers and *no* setmaxnreg (compiled here, never timed): does the
  wider tile need setmaxnreg? ptxas's count and spill bytes say;
* ``3``: 128×256, two consumers, setmaxnreg (rung 3, timed).

Rows timed at different in-flight clocks are compared per clock: FLOP per clock per SM
(TFLOP/s ÷ (SMs × the row's in-flight MHz)), so a step is not a clock change.
"""

from __future__ import annotations

from .config import WSConfig

#: (step, what it changes, the config's knobs); every config 4 stages, B K-major.
STEPS = (("2", "rung 2: 128×128, 1 consumer", dict(bm=128, bn=128, consumers=1, setmaxnreg=False)),
         ("a", "+ a second consumer, same tile", dict(bm=128, bn=128, consumers=2, setmaxnreg=True)),
         ("b", "128×256, 2 consumers, no setmaxnreg", dict(bm=128, bn=256, consumers=2, setmaxnreg=False)),
         ("3", "+ the 128×256 tile = rung 3", dict(bm=128, bn=256, consumers=2, setmaxnreg=True)))


def step_config(knobs: dict, dtype: str = "float16") -> WSConfig:
    """The :class:`WSConfig` of one of :data:`STEPS`' knob sets (4 stages)."""
    return WSConfig(dtype=dtype, stages=4, out_dtype=dtype, **knobs)


def rung3_steps(results: dict, size: int = 4096, dtype: str = "float16", compile_untimed: bool = True) -> list[dict]:
    """One dict per step of :data:`STEPS`: ``step``, ``what``, ``config``, ``regs`` (ptxas's
    count per thread at entry) and ``spill_bytes`` (from the record's register table, or compiled
    with NVRTC here for a build the record never timed, when ``compile_untimed``), ``entry`` (the
    registers each thread has at entry, 65536 / threads rounded down to 8), ``smem_share`` (the
    tile's shared-memory need at the Tensor Cores' rate, written and read, as a fraction of the
    SM's 128 B/clk: chapter 00 §4's arithmetic), and, when the record timed it at ``size``³:
    ``tflops``, ``mhz`` (the in-flight clock of that row) and ``per_clk`` (FLOP per clock per SM)."""
    from ..pipeline.trace import need_bytes_per_clk
    from ..why_async import SMEM_BYTES_PER_CLK_SM
    from .figures import register_budget
    from .config import _launch_regs
    rows = {r.get("label"): r for r in results["rows"] if r["size"] == size and r["dtype"] == dtype}
    regs = results.get("registers", {})
    out = []
    for step, what, knobs in STEPS:
        cfg = step_config(knobs, dtype)
        label = cfg.label()
        d = {"step": step, "what": what, "config": cfg, "entry": _launch_regs(cfg.threads),
             "smem_share": 2 * need_bytes_per_clk(cfg.pipeline_config()) / SMEM_BYTES_PER_CLK_SM,
             "regs": None, "spill_bytes": None, "tflops": None, "mhz": None, "per_clk": None}
        if label in regs:
            d.update(regs=regs[label]["ptxas"], spill_bytes=regs[label]["spill_bytes"])
        elif compile_untimed:
            b = register_budget(cfg)
            d.update(regs=b["ptxas"], spill_bytes=b["spill_bytes"])
        r = rows.get(label)
        if r is not None:
            d.update(tflops=r["tflops"], mhz=r["sm_mhz"],
                     per_clk=r["tflops"] * 1e12 / (results["sm_count"] * r["sm_mhz"] * 1e6))
        out.append(d)
    return out


def rung3_table(steps: list[dict], size: int = 4096) -> str:
    """:func:`rung3_steps` as a text table: per step, ptxas's registers (of those at entry), spill
    bytes, the shared-memory share, TFLOP/s at ``size``³, the in-flight clock, FLOP per clock per
    SM and the step per clock over the timed step above it ("not timed" where the record has none)."""
    head = (f"{'':>2} {'change':<37}{'regs':>9}{'spill':>6}{'smem':>6}{f'{size}³ TFLOP/s':>15}"
            f"{'MHz':>6}{'FLOP/clk/SM':>12}{'step':>8}")
    lines = [head]
    prev = None
    for d in steps:
        reg = f"{d['regs']}/{d['entry']}" if d["regs"] is not None else "–"
        spill = "–" if d["spill_bytes"] is None else f"{d['spill_bytes']}"
        row = f"{d['step']:>2} {d['what']:<37}{reg:>9}{spill:>6}{d['smem_share']:>6.0%}"
        if d["tflops"] is None:
            row += f"{'not timed':>15}"
        else:
            step = "" if prev is None else f"{d['per_clk'] / prev['per_clk'] - 1:+.1%}"
            row += f"{d['tflops']:>15.0f}{d['mhz']:>6.0f}{d['per_clk']:>12.0f}{step:>8}"
            prev = d
        lines.append(row)
    lines.append("regs: ptxas's / at entry; smem: of its 128 B/clk (00 §4); step: per clock, over the "
                 "timed row above")
    return "\n".join(lines)
