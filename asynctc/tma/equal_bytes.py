"""Chapter 03 — the record suite ``tma_equal``: TMA against the manual copies (ld.global/st.shared
and cp.async) with the *same bytes in flight per SM*, small boxes and large ones (fp16 boxes of
16×16 up to 128×128, copied as fp32 words by ``kernels/tma.cu``'s copy kernels).

Two definitions of "bytes in flight", both swept, each comparison made only between rows that
agree on it:

* ``smem``: shared-memory bytes the copy holds per SM = stages × box × CTAs per SM (chapter 03's
  :func:`~asynctc.tma.suite.bytes_in_flight`): TMA and cp.async with 2 stages × n CTAs beside the
  manual copy's 1 stage × 2n CTAs;
* ``loads``: global loads outstanding per SM = (stages − 1) × box × CTAs for the 2-stage rings (one
  stage is being written out), box × CTAs for the manual copy: all three at m CTAs per SM.

Every configuration is refused unless ptxas's registers, its shared memory and the thread count let
all its CTAs be resident on one SM at once (:func:`resident_per_sm`), so "equal" is what runs. Each
row is checked byte for byte on a poisoned destination before it is timed. Measures and tabulates;
never plots.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core import bench, records, runtime
from .suite import SMEM_BUDGET, CopyBench, CopyConfig

#: fp16 boxes (rows, fp16 columns); the copy kernels move them as fp32 words (columns / 2).
FP16_BOXES = ((16, 16), (32, 32), (64, 64), (128, 64), (256, 64), (128, 128))
SMALL_MAX, LARGE_MIN = 4096, 16384          # box bytes: "small" ≤ 4 KiB, "large" ≥ 16 KiB
ROWS, COLS = 8192, 8192                     # 256 MiB of fp32: four times the H200's L2
SM_SMEM = 228 * 1024                        # shared memory per SM (sm_90)
CTA_RESERVED = 1024                         # the driver's per-CTA reservation
MAX_CTAS, MAX_THREADS, REGS = 32, 2048, 65536
MANUAL = ("ldg_sts", "cp_async")


def _per_cta(box: int, stages: int) -> int:
    return stages * box + 128 + CTA_RESERVED


def configs(fp16_box, n: int | None = None, m: int | None = None) -> list[tuple[str, CopyConfig]]:
    """The configurations of one fp16 box, each tagged with the definition it belongs to:
    ("smem", ...) × 3 — TMA and cp.async 2 stages × n, ldg_sts 1 stage × 2n — and ("loads", ...) × 3
    — all three at m CTAs. ``n`` / ``m`` default to what shared memory holds (n ≤ 8, m ≤ 16);
    :func:`plan` lowers them until every CTA is resident."""
    r, c = fp16_box
    if (r, c) not in FP16_BOXES:
        raise ValueError(f"fp16_box={fp16_box!r}: must be one of {FP16_BOXES}")
    br, bc = r, c // 2
    box = br * bc * 4
    n = n if n is not None else max(1, min(8, SMEM_BUDGET // _per_cta(box, 2)))
    m = m if m is not None else max(1, min(16, SMEM_BUDGET // _per_cta(box, 2)))
    return [("smem", CopyConfig("tma", br, bc, 2, n, 32)),
            ("smem", CopyConfig("cp_async", br, bc, 2, n, 128)),
            ("smem", CopyConfig("ldg_sts", br, bc, 1, 2 * n, 128)),
            ("loads", CopyConfig("tma", br, bc, 2, m, 32)),
            ("loads", CopyConfig("cp_async", br, bc, 2, m, 128)),
            ("loads", CopyConfig("ldg_sts", br, bc, 1, m, 128))]


def in_flight(cfg: CopyConfig, kind: str) -> int:
    """Bytes in flight per SM under definition ``kind`` ("smem" | "loads")."""
    if kind == "smem":
        return cfg.stages * cfg.box_bytes * cfg.ctas_per_sm
    if kind == "loads":
        return max(1, cfg.stages - 1) * cfg.box_bytes * cfg.ctas_per_sm
    raise ValueError(f"kind={kind!r}: must be 'smem' or 'loads'")


def compile_config(cfg: CopyConfig) -> runtime.CompiledKernel:
    from .launch import compile_tma
    return compile_tma(f"copy_{cfg.variant}", BR=cfg.br, BC=cfg.bc, CSTAGES=max(2, cfg.stages))


def resident_per_sm(cfg: CopyConfig, ck: runtime.CompiledKernel) -> int:
    """CTAs of ``cfg`` one SM can hold at once: the least of the CTA limit, threads, registers
    (allocated per warp in units of 256) and shared memory (with the per-CTA reservation)."""
    warps = -(-cfg.threads // 32)
    regs_warp = -(-max(1, ck.resources.registers) * 32 // 256) * 256
    smem = cfg.smem_bytes + ck.resources.shared_bytes + CTA_RESERVED
    return min(MAX_CTAS, MAX_THREADS // cfg.threads, REGS // (regs_warp * warps), SM_SMEM // smem)


def _fits(cfg: CopyConfig, cache: dict) -> bool:
    key = dataclasses.astuple(cfg)
    if key not in cache:
        ck = compile_config(cfg)
        cache[key] = (ck.resources.registers, resident_per_sm(cfg, ck))
    return cache[key][1] >= cfg.ctas_per_sm


def box_plan(fp16_box, cache: dict | None = None) -> list[tuple[str, CopyConfig]]:
    """:func:`configs` of one box with n and m lowered until every configuration's CTAs are all
    resident on one SM (so its bytes in flight are what the row says)."""
    cache = {} if cache is None else cache
    cs = configs(fp16_box)
    n, m = cs[0][1].ctas_per_sm, cs[3][1].ctas_per_sm
    while n > 1 and not all(_fits(c, cache) for k, c in configs(fp16_box, n, m) if k == "smem"):
        n -= 1
    while m > 1 and not all(_fits(c, cache) for k, c in configs(fp16_box, n, m) if k == "loads"):
        m -= 1
    out = configs(fp16_box, n, m)
    for _, c in out:
        if not _fits(c, cache):
            raise ValueError(f"{c.name}: only {cache[dataclasses.astuple(c)][1]} CTAs per SM fit, "
                             f"not {c.ctas_per_sm}")
    return out


def plan() -> list[dict]:
    """Every row the suite measures (deduplicated), compiled and checked for residency (no GPU
    needed): {kinds, fp16_box, cfg, registers, resident_per_sm}."""
    rows: dict = {}
    cache: dict = {}
    for b in FP16_BOXES:
        for kind, cfg in box_plan(b, cache):
            key = dataclasses.astuple(cfg)
            if key in rows:
                rows[key]["kinds"].append(kind)
                continue
            regs, res = cache[key]
            rows[key] = {"kinds": [kind], "fp16_box": f"{b[0]}x{b[1]}", "cfg": cfg,
                         "registers": regs, "resident_per_sm": res}
    return list(rows.values())


def measure_equal_bytes(progress=None) -> dict:
    """Every row of :func:`plan` on one 256 MiB fp32 copy: a correctness run on a poisoned
    destination (byte for byte; a wrong copy raises RuntimeError and nothing is recorded), then
    :func:`asynctc.core.bench.time_gpu` (median of 20 samples ≥ 1 ms each, L2 flushed before each).
    GB/s count bytes read + written. The device-to-device copy of the same bytes is timed first."""
    say = progress or (lambda s: None)
    from .launch import SOURCE
    jobs = {(SOURCE, f"copy_{c.variant}", (("BR", c.br), ("BC", c.bc), ("CSTAGES", max(2, c.stages))))
            for b in FP16_BOXES for _, c in configs(b)}
    runtime.precompile([(s, n, dict(d)) for s, n, d in sorted(jobs)])   # the cubin cache, in parallel
    rows = plan()
    cb = CopyBench(ROWS, COLS)
    t = bench.time_gpu(bench.device_copy(cb.dst, cb.src), reps=20)
    out: dict = {"bytes": cb.nbytes, "rows": ROWS, "cols": COLS,
                 "device_copy": {**t.as_dict(), "gbps": bench.gbps(2 * cb.nbytes, t.median_ms)},
                 "copies": []}
    for row in rows:
        cfg = row["cfg"]
        run = cb.launcher(cfg)
        cb.dst.poison()
        run()
        chk = cb.check(cfg.name)
        if not chk.passed:
            raise RuntimeError(f"copy wrong: {chk.as_dict()}")
        t = bench.time_gpu(run, reps=20)
        gbps = bench.gbps(2 * cb.nbytes, t.median_ms)
        say(f"{row['fp16_box']:>8} fp16 {cfg.name:40s} {gbps:7.0f} GB/s")
        out["copies"].append({**dataclasses.asdict(cfg), "name": cfg.name, "fp16_box": row["fp16_box"],
                              "box_bytes": cfg.box_bytes, "kinds": row["kinds"],
                              "in_flight_smem": in_flight(cfg, "smem"),
                              "in_flight_loads": in_flight(cfg, "loads"),
                              "registers": row["registers"], "resident_per_sm": row["resident_per_sm"],
                              "checked_bytes": cb.nbytes, **t.as_dict(), "gbps": gbps})
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def pairs(results: dict) -> list[dict]:
    """TMA beside the manual copies at equal bytes in flight, from a ``tma_equal`` record's
    results: per (box, definition) {fp16_box, box_bytes, kind, in_flight, tma, ldg_sts, cp_async
    (GB/s), ratio = TMA / the faster manual copy}."""
    out = []
    for kind in ("smem", "loads"):
        groups: dict = {}
        for c in results["copies"]:
            if kind in c["kinds"]:
                groups.setdefault((c["box_bytes"], c["fp16_box"]), []).append(c)
        for (size, name), cs in sorted(groups.items()):
            by = {c["variant"]: c for c in cs}
            if "tma" not in by or not any(v in by for v in MANUAL):
                continue
            flights = {c[f"in_flight_{kind}"] for c in cs}
            if len(flights) != 1:
                raise ValueError(f"tma_equal record: {name} ({kind}) rows disagree on bytes in "
                                 f"flight: {sorted(flights)}")
            best = max(by[v]["gbps"] for v in MANUAL if v in by)
            out.append({"fp16_box": name, "box_bytes": size, "kind": kind, "in_flight": flights.pop(),
                        **{v: by[v]["gbps"] for v in ("tma", *MANUAL) if v in by},
                        "ratio": by["tma"]["gbps"] / best})
    return out


def equal_note(results: dict) -> tuple[bool, str, dict]:
    """Chapter 03's sentence on a ``tma_equal`` record's results: ``(holds, text, numbers)`` for
    :func:`asynctc.core.notebook.claim`. The text gives the range of TMA / the faster manual copy
    with equal global loads outstanding per SM, and the lowest ratio with equal shared memory held
    (and its box). It holds when the first stays above 0.95 at every box and the second falls
    below 0.8 at some box (what the chapter's text says)."""
    ps = pairs(results)
    loads = [p["ratio"] for p in ps if p["kind"] == "loads"]
    smem = {p["fp16_box"]: p["ratio"] for p in ps if p["kind"] == "smem"}
    if not loads or not smem:
        raise ValueError("tma_equal record: no rows for one of the definitions ('loads', 'smem')")
    worst = min(smem, key=smem.get)
    text = (f"With equal global loads outstanding per SM, TMA runs at {min(loads):.2f}–"
            f"{max(loads):.2f} of the faster manual copy at every box size; with equal shared "
            f"memory held it falls to {smem[worst]:.2f} (at the {worst} fp16 box).")
    return (min(loads) > 0.95 and smem[worst] < 0.8, text,
            {"loads": min(loads), "smem": smem[worst]})


def summarize_equal_bytes(rec: records.Record) -> str:
    r = rec.results
    lines = [rec.label(), f"device-to-device copy (same run): {r['device_copy']['gbps']:.0f} GB/s",
             f"{'fp16 box':>9} {'KiB':>4} {'kind':>5} {'in flight':>9} {'tma':>6} {'ldg_sts':>7} "
             f"{'cp_async':>8} {'TMA/best manual':>15}"]
    for p in pairs(r):
        lines.append(f"{p['fp16_box']:>9} {p['box_bytes'] / 1024:4.1f} {p['kind']:>5} "
                     f"{p['in_flight'] // 1024:7d}KB {p['tma']:6.0f} {p.get('ldg_sts', float('nan')):7.0f} "
                     f"{p.get('cp_async', float('nan')):8.0f} {p['ratio']:15.3f}")
    return "\n".join(lines)


SUITES = {"tma_equal": (measure_equal_bytes, summarize_equal_bytes, "sm_90a")}


# --------------------------------------------------------------------------------------------------
# Chapter 03's table: TMA against cp.async moving the same tiles
# --------------------------------------------------------------------------------------------------

#: The fp16 boxes chapter 03 tabulates: a small one, and chapter 05's stage boxes (B, then A).
SAME_TILE_BOXES = ("16x16", "64x64", "128x64")
CP_ASYNC_BYTES, CP_ASYNC_THREADS = 16, 128      # copy_cp_async: 16-byte copies by 128 threads


def issue_counts(fp16_box: str) -> dict:
    """Copy instructions that start one fp16 box ("RxC") in ``kernels/tma.cu``: TMA, one
    ``cp.async.bulk.tensor`` by one thread; cp.async (``copy_cp_async``), one 16-byte ``cp.async`` per
    16 bytes of the box, dealt out to up to 128 threads."""
    r, c = (int(x) for x in fp16_box.split("x"))
    copies = r * c * 2 // CP_ASYNC_BYTES
    threads = min(copies, CP_ASYNC_THREADS)
    return {"box_bytes": r * c * 2, "tma": 1, "cp_async": copies, "cp_async_threads": threads,
            "cp_async_per_thread": copies // threads}


def same_tiles(results: dict, boxes=SAME_TILE_BOXES) -> list[dict]:
    """Rows of chapter 03's table from a ``tma_equal`` record's results: per fp16 box, the bytes,
    the instructions each copy issues (:func:`issue_counts`) and the GB/s of TMA and cp.async with
    equal global loads outstanding per SM (:func:`pairs`, kind "loads"); ``ratio`` = TMA / cp.async."""
    by = {p["fp16_box"]: p for p in pairs(results) if p["kind"] == "loads"}
    missing = [b for b in boxes if b not in by or "cp_async" not in by[b]]
    if missing:
        raise ValueError(f"tma_equal record: no 'loads' rows with cp.async for boxes {missing}")
    return [{"fp16_box": b, **issue_counts(b), "tma_gbps": by[b]["tma"],
             "cp_async_gbps": by[b]["cp_async"], "ratio": by[b]["tma"] / by[b]["cp_async"]}
            for b in boxes]


def same_tiles_table(rows: list[dict]) -> str:
    """:func:`same_tiles` as a markdown table."""
    out = ["| fp16 box | bytes | TMA instructions | cp.async instructions | TMA GB/s "
           "| cp.async GB/s | TMA / cp.async |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['fp16_box'].replace('x', '×')} | {r['box_bytes']} | {r['tma']} (1 thread) | "
                   f"{r['cp_async']} ({r['cp_async_threads']} threads × {r['cp_async_per_thread']}) | "
                   f"{r['tma_gbps']:.0f} | "
                   f"{r['cp_async_gbps']:.0f} | {r['ratio']:.2f} |")
    return "\n".join(out)


def same_tiles_verdict(rows: list[dict], box: str = "128x64", within: float = 0.05):
    """``(condition, if_true, if_false)`` for :func:`asynctc.core.notebook.verdict`: at ``box`` (chapter
    05's A box), are TMA and cp.async within ``within`` of each other? Either sentence shows its
    division (TMA GB/s / cp.async GB/s = ratio)."""
    r = next(x for x in rows if x["fp16_box"] == box)
    head = (f"At the {box.replace('x', '×')} box ({r['box_bytes'] // 1024} KiB): TMA / cp.async = "
            f"{r['tma_gbps']:.0f} / {r['cp_async_gbps']:.0f} GB/s = {r['ratio']:.2f}×")
    return (abs(r["ratio"] - 1) < within,
            f"{head}, the same within {within:.0%}. TMA gains instructions there (1 instead of "
            f"{r['cp_async']}), not bandwidth.",
            f"{head}: TMA is {r['ratio']:.2f}× cp.async, from 1 instruction instead of {r['cp_async']}.")


def show_same_tiles(eq) -> None:
    """Chapter 03 §4's cell: the ``tma_equal`` record ``eq``'s label, :func:`same_tiles_table` and
    the verdict sentence at chapter 05's 128×64 box, generated from the record
    (:func:`same_tiles_verdict` through :func:`asynctc.core.notebook.verdict`)."""
    from IPython.display import display
    from ..core import notebook
    rows = same_tiles(eq.results)
    print(eq.label())
    display(notebook.Markdown(same_tiles_table(rows)))
    notebook.verdict(*same_tiles_verdict(rows))
