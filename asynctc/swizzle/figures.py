"""Chapter 07, notebook 07's tile / stage / register budget table (issue 12), from chapter 06's
record and the cubins (compiled, never run or timed here): :func:`budget_table`,
:func:`budget_markdown`."""

from __future__ import annotations

import json
from pathlib import Path

from .. import warp_specialization as W


def _load_record(record):
    if record is None:
        from ..core import records
        return records.load("warp_specialization")
    if isinstance(record, (str, Path)):
        return json.loads(Path(record).read_text())
    return record


def budget_table(record=None, dtype: str = "float16", compile_cubins: bool = True) -> list[dict]:
    """Rows for notebook 07: chapter 06's tile sweep (rung 4, :data:`asynctc.warp_specialization.
    TILE_SWEEP` within 227 KiB) and rung 3's / rung 5's defaults, in ``dtype``.

    Each row: ``tile`` ("bm×bn×bk"), ``stages``, ``consumers``, ``regs_producer`` /
    ``regs_consumer`` (setmaxnreg's counts; without setmaxnreg both the count at entry),
    ``regs_ptxas`` (ptxas's per-thread count at entry), ``spill_bytes``, ``accumulators`` (fp32
    per consumer thread), ``smem_bytes`` (dynamic + static shared memory per CTA; the static part
    from the cubin when ``compile_cubins``), ``cubin_registers`` / ``cubin_spill_bytes`` (the
    cubin's ptxas report, compiled here — to set beside the record's), and
    ``tflops_4096`` / ``tflops_8192`` from the record (None where it has no such row), with
    ``of_cublas_4096`` / ``of_cublas_8192``. ``record``: a :class:`asynctc.core.records.Record`, its
    JSON dict, a path, or None for ``data/<gpu>/warp_specialization.json``. Registers and spills
    come from the record's ``registers`` where it has the config, else from compiling the cubin
    (``compile_cubins``; no GPU needed) — ``source`` says which."""
    rec = _load_record(record)
    res = rec.results if hasattr(rec, "results") else rec.get("results", rec)
    cfgs = [W.RUNGS[2].make(dtype), W.RUNGS[4].make(dtype)]
    for c in W.tile_sweep_configs(dtype, limit=227 * 1024):
        if c not in cfgs:
            cfgs.append(c)
    rows_rec = res.get("rows", [])
    regs_rec = res.get("registers", {})
    out = []
    for c in cfgs:
        label = c.label()
        row = {"label": label, "rung": W.rung_of(c), "tile": f"{c.bm}x{c.bn}x{c.bk}",
               "stages": c.stages, "consumers": c.consumers, "persistent": c.persistent,
               "accumulators": c.accumulators, "smem_bytes": c.smem_total}
        ck = None
        if compile_cubins:                   # the cubin's own counts, beside the record's
            ck = W.compile_ws(c)
            row.update(cubin_registers=ck.resources.registers,
                       cubin_spill_bytes=ck.resources.spill_stores,
                       smem_bytes=c.shmem_bytes + ck.resources.shared_bytes)
        r = regs_rec.get(label)
        if r is not None:
            row.update(regs_ptxas=r.get("ptxas"), spill_bytes=r.get("spill_bytes"),
                       regs_producer=r.get("producer"), regs_consumer=r.get("consumer"),
                       source="record")
        elif ck is not None:
            split = W.register_split(c)
            row.update(regs_ptxas=ck.resources.registers, spill_bytes=ck.resources.spill_stores,
                       regs_producer=split.get("producer"), regs_consumer=split.get("consumer"),
                       source="cubin")
        else:
            row.update(regs_ptxas=None, spill_bytes=None, regs_producer=None, regs_consumer=None,
                       source="none")
        for size in W.LADDER_SIZES:
            t = next((x["tflops"] for x in rows_rec if x.get("label") == label
                      and x.get("size") == size and x.get("kernel") != "cuBLAS"), None)
            cub = next((x["tflops"] for x in rows_rec if x.get("kernel") == "cuBLAS"
                        and x.get("size") == size and x.get("dtype") == dtype), None)
            row[f"tflops_{size}"] = t
            row[f"of_cublas_{size}"] = t / cub if t is not None and cub else None
        out.append(row)
    return out


def budget_markdown(rows: list[dict]) -> str:
    """:func:`budget_table` rows as a markdown table (— for a missing value)."""
    def f(x, fmt=""):
        return "—" if x is None else format(x, fmt)
    lines = ["| rung | tile | stages | consumers | regs producer / consumer | spills (B) | "
             "smem per CTA (KiB) | TFLOP/s 4096³ | TFLOP/s 8192³ | of cuBLAS 8192³ |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['rung']} | {r['tile']}/c{r['consumers']}"
                     f"{' persistent' if r['persistent'] else ''} | {r['stages']} | "
                     f"{r['consumers']} | {f(r['regs_producer'])} / {f(r['regs_consumer'])} | "
                     f"{f(r['spill_bytes'])} | {r['smem_bytes'] / 1024:.0f} | "
                     f"{f(r['tflops_4096'], '.0f')} | {f(r['tflops_8192'], '.0f')} | "
                     f"{f(r['of_cublas_8192'], '.2f')} |")
    return "\n".join(lines)
