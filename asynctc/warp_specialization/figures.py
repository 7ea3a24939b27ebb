"""Chapter 06's notebook helpers: the protocol read from the kernel, register budgets, plots.

:func:`protocol_from_source` (which mbarrier each protocol event uses, read from the kernel's own
source) and :func:`seed_protocol` (the seed article's swapped waits); :func:`register_budget` /
:func:`register_budget_table` (registers per role, from the cubin); :func:`plot_ladder` (with
each rung's change and frozen prediction, :func:`predicted_tflops`); a recorded
trace cut and read (:func:`trace_window`, :func:`plot_top_trace`, :func:`trace_numbers`,
:func:`trace_table`); :func:`plot_raster` (a ``ws_limit`` record's figure); for the core lesson,
:func:`plot_protocol` (both protocols drawn), :func:`ladder_summary` (the ladder at a glance) and
:func:`prediction_check` (each rung's step beside its frozen prediction, :data:`PREDICTION_BANDS`),
with :func:`ladder_ratio` and :func:`span_text`; the record-guarded sentences on rung 7's
epilogue (:func:`epilogue_note`) and rung 9 (:func:`pingpong_note`; rungs 2–8's clauses:
:mod:`.rung_notes`).
Reads records and compiles; never times anything (:mod:`.suite` and :mod:`.limit_suite` measure).
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from ..core import runtime
from .config import REGS_PER_SM, WSConfig
from .launch import compile_ws, register_split, sass_registers, source
from .limit import epilogue_stores, limit_rows

#: The protocol's events, in the words the notebook and the exercises use.
PROTOCOL_EVENTS = ("producer waits", "TMA completes", "consumer waits", "consumer arrives")


def _kernel_sections() -> tuple[str, str]:
    """The producer's and the consumers' branch of the kernel body (source text)."""
    text = source()
    body = text[text.index("gemm_warp_specialized("):]
    prod = body.index("// ---------------- producer warpgroup")
    cons = body.index("// ---------------- consumer warpgroups")
    return body[prod:cons], body[cons:]


def protocol_from_source() -> dict[str, str]:
    """Which mbarrier ("full" or "empty") each of :data:`PROTOCOL_EVENTS` uses, read from the
    kernel's own source (``kernels/warp_specialization.cu``): the barrier the producer's bounded
    wait names (``empty.wait(...)``, kernels/ring.cuh), the one its ``load_stage`` hands to TMA (``arrive.expect_tx`` and the TMA's
    ``complete_tx``: PTX ISA "cp.async.bulk.tensor" .mbarrier::complete_tx::bytes), the one the
    consumers wait on, and the one their release (``empty.arrive(s)``) arrives on. Raises ``ValueError`` if the
    source no longer says it in one way."""
    import re
    prod, cons = _kernel_sections()

    def one(rx: str, text: str, what: str) -> str:
        found = set(re.findall(rx, text))
        if len(found) != 1:
            raise ValueError(f"{what}: the kernel source names {sorted(found) or 'no'} barrier(s)")
        return found.pop()
    # the ring's barriers (kernels/ring.cuh StageBarriers): `full.wait(...)`, `full[stage]`
    return {"producer waits": one(r"\b(full|empty)\.wait\(", prod, "producer wait"),
            "TMA completes": one(r"load_stage\([^;]*?\b(full|empty)\[", prod, "producer load"),
            "consumer waits": one(r"\b(full|empty)\.wait\(", cons, "consumer wait"),
            "consumer arrives": one(r"\b(full|empty)\.arrive\(", cons, "consumer release")}


def seed_protocol() -> dict[str, str]:
    """The seed article's version: the *waits* swapped (the producer waits on full, the consumers on
    empty), arrivals and TMA completion as in :func:`protocol_from_source` — what
    :func:`asynctc.models.pipeline.simulate` runs as ``protocol="swapped_barriers"``."""
    p = protocol_from_source()
    return {**p, "producer waits": p["consumer waits"], "consumer waits": p["producer waits"]}


def register_budget(cfg: WSConfig, ck: runtime.CompiledKernel | None = None) -> dict:
    """The register budget of one CTA of ``cfg`` (one CTA per SM): per-thread registers at entry
    (``__launch_bounds__(threads, 1)``: 65536 / threads rounded down to 8), the producer's and the
    consumers' after ``setmaxnreg`` (:func:`register_split`), the CTA's total against the SM's
    65536, and what the cubin says (``ck``, compiled when not given): ptxas's count at entry, the
    USETMAXREG immediates, spills, and ``dropped`` (setmaxnreg asked for, absent from the SASS).
    PTX ISA "setmaxnreg"; CUDA C++ Programming Guide "Compute Capabilities" (64K registers/SM)."""
    ck = ck or compile_ws(cfg)
    split = register_split(cfg)
    sr = sass_registers(ck, cfg)
    if not cfg.setmaxnreg or sr["dropped"]:      # every warpgroup keeps what ptxas allocated
        split.update(producer=ck.resources.registers, consumer=ck.resources.registers,
                     total=ck.resources.registers * cfg.threads)
    if sr["dropped"]:                            # no launch bound: no count known at entry
        split["entry"] = ck.resources.registers
    return {"label": cfg.label(), "threads": cfg.threads, **split, "sm_limit": REGS_PER_SM,
            "accumulators": cfg.accumulators, "ptxas": ck.resources.registers,
            "spill_bytes": ck.resources.spill_stores, "sass_dealloc": sr["dealloc"],
            "sass_alloc": sr["alloc"], "dropped": sr["dropped"]}


def register_budget_table(rows: list[dict]) -> str:
    """Rows of :func:`register_budget` as text: per config, registers per thread by role, the CTA's
    total of the SM's 65536, and the SASS's USETMAXREG immediates."""
    w = max([58] + [len(r["label"]) for r in rows])
    lines = [f"{'config':{w}s} {'thr':>4s} {'entry':>5s} {'ptxas':>5s} {'prod':>4s} {'cons':>4s} "
             f"{'CTA total':>9s} {'acc':>4s}  SASS"]
    for r in rows:
        sass_txt = (f"USETMAXREG.DEALLOC {r['sass_dealloc']} .TRY_ALLOC {r['sass_alloc']}"
                    if r["sass_dealloc"] or r["sass_alloc"] else "no USETMAXREG")
        if r["dropped"]:
            sass_txt += " — setmaxnreg DROPPED (C7508)"
        lines.append(f"{r['label']:{w}s} {r['threads']:4d} {r['entry']:5d} {r['ptxas']:5d} "
                     f"{r['producer']:4d} {r['consumer']:4d} {r['total']:6d}/64K {r['accumulators']:4d}"
                     f"  {sass_txt}")
    return "\n".join(lines)


def plot_ladder(results: dict, size: int, dtype: str = "float16", record=None,
                changes: bool = False, predictions: bool = False):
    """The ladder of one (size, dtype) as horizontal bars against the cuBLAS row timed in the same
    run (:func:`asynctc.core.plots.ladder`), from a ``warp_specialization`` record's results.
    ``changes``: each bar labelled with what its rung adds (:data:`RUNG_CHANGES`) under its name.
    ``predictions``: each rung's frozen prediction (:data:`PREDICTION_BANDS`) as a range of TFLOP/s
    beside its bar — a fraction of cuBLAS times cuBLAS, a step times the measured rung it steps
    from. The axis starts at 0 (readers 138: a zoomed axis made rung 2's −15 % and rung 7's +8 % look
    far larger); the dashed line is "cuBLAS in this run" (each record times its own cuBLAS). Raises
    ``KeyError`` naming (size, dtype) when the record has no such ladder."""
    from ..core import plots
    rows = sorted((r for r in results["ladder"] if r["size"] == size and r["dtype"] == dtype),
                  key=lambda r: r["rung"])
    if not rows:
        raise KeyError(f"no ladder rows for size={size}, dtype={dtype!r} in this record")
    cb = next((r["tflops"] for r in results["rows"] if r["kernel"] == "cuBLAS"
               and r["size"] == size and r["dtype"] == dtype), None)
    labels = [f"{r['rung']} {r['name']}" + (f"\n{RUNG_CHANGES[r['rung']]}" if changes
                                           and r["rung"] in RUNG_CHANGES else "") for r in rows]
    values = [r["tflops"] for r in rows]
    band = [predicted_tflops(results, size, dtype, r["rung"]) for r in rows] if predictions else None
    return plots.ladder(labels, values, baseline=cb, baseline_label="cuBLAS in this run", record=record,
                        predicted=band,
                        width=8.5 if changes else 7.0, title=f"The ladder, {dtype} {size}³ (rung 1 at the top)")


def predicted_tflops(results: dict, size: int, dtype: str, n: int) -> tuple[float, float] | None:
    """Rung ``n``'s frozen prediction (:data:`PREDICTION_BANDS`) as a (low, high) range of TFLOP/s
    for one (size, dtype) ladder of a ``warp_specialization`` record: a predicted fraction of cuBLAS
    times cuBLAS's TFLOP/s; a predicted step times the TFLOP/s measured for the rung it steps from.
    None for a rung without a prediction (rung 1, chapter 05's kernel) or whose reference rung the
    record lacks."""
    if n not in PREDICTION_BANDS:
        return None
    kind, ref, lo, hi = PREDICTION_BANDS[n]
    if kind == "of cuBLAS":
        base = next(r["tflops"] for r in results["rows"] if r["kernel"] == "cuBLAS"
                    and r["size"] == size and r["dtype"] == dtype)
        return lo * base, hi * base
    base = next((r["tflops"] for r in results["ladder"] if (r["size"], r["dtype"], r["rung"])
                 == (size, dtype, ref)), None)
    return None if base is None else ((1 + lo) * base, (1 + hi) * base)


def trace_window(trace: dict, k_tiles: int, before: int = 4, after: int = 4) -> dict:
    """CTA 0's trace (a record's ``cta0``) cut to the ring counters around the first tile boundary:
    the last ``before`` k-tiles of the CTA's first tile, its epilogue, and the first ``after``
    k-tiles of its second tile (a persistent CTA's producer loads those during the epilogue)."""
    lo, hi = k_tiles - before, k_tiles + after
    spans = [s for s in trace["spans"] if lo <= s["k"] < hi
             and (s["kind"] != "epilogue" or s["k"] == k_tiles - 1)]
    return {**trace, "spans": spans}


def plot_top_trace(trace_row: dict, record=None, before: int = 4, after: int = 4):
    """Gantt chart of a recorded trace row (``results["traces"][i]``) around CTA 0's first tile
    boundary (:func:`trace_window`), drawn with chapter 05's :func:`asynctc.pipeline.plot_trace`."""
    cta0 = trace_row["cta0"]
    win = trace_window(cta0, cta0["k_tiles"], before, after)
    return P.plot_trace(win, title=f"rung {trace_row['rung']} ({trace_row['name']}), CTA 0, ring "
                                   f"counters {cta0['k_tiles'] - before}..{cta0['k_tiles'] + after - 1}"
                                   f" (tile boundary after {cta0['k_tiles'] - 1})", record=record,
                        producer_warpgroup=True)


def trace_numbers(trace_row: dict, rows: list[dict] | None = None) -> dict:
    """What one recorded trace says, per SM cycle (CTA 0 and the traced CTAs' means):
    ``wait_full`` (fraction of the consumers' loop waiting on full barriers), ``math_in_flight``
    (upper bound), ``tensor_use`` (k-tiles × :func:`asynctc.pipeline.ktile_peak_cycles` / loop
    cycles), ``epilogue_cycles`` (mean loop end → stores issued per tile), ``first_wait_cycles``
    (the consumers' wait for each tile's first k-tile: [first tile, mean of the later tiles]),
    ``load_cycles`` (median TMA issue → first use), ``ktile_cycles`` (loop cycles per k-tile),
    and, with the record's ``rows``, ``untraced_tflops`` of the same config (tracing costs the
    traced CTAs time)."""
    cta0, met = trace_row["cta0"], trace_row["metrics"]
    sp, kt = cta0["spans"], cta0["k_tiles"]
    epi = [s["end"] - s["start"] for s in sp if s["kind"] == "epilogue"]
    firsts: dict[int, list[float]] = {}
    for s in sp:
        if s["kind"] == "wait_full" and s["k"] % kt == 0:
            firsts.setdefault(s["k"] // kt, []).append(s["end"] - s["start"])
    first = [float(np.mean(firsts[t])) for t in sorted(firsts)]
    loads = [s["end"] - s["start"] for s in sp if s["kind"] == "tma"]
    ctas = met["ctas"]
    c0 = ctas.get("cta0", {})
    out = {"rung": trace_row["rung"], "label": trace_row["label"],
           "traced_tflops": trace_row["tflops_traced"],
           "wait_full": met["mean"].get("wait_full_fraction"),
           "math_in_flight": met["mean"].get("math_in_flight"),
           "tensor_use": met["mean"].get("tensor_utilization"),
           "epilogue_cycles": float(np.mean(epi)) if epi else None,
           "first_wait_cycles": [first[0], float(np.mean(first[1:]))] if len(first) > 1 else first,
           "load_cycles": float(np.median(loads)) if loads else None,
           "ktile_cycles": c0["loop_cycles"] / c0["k_tiles"] if c0.get("k_tiles") else None,
           "tiles": len(first)}
    if rows is not None:
        base = trace_row["label"].replace(" trace", "")
        out["untraced_tflops"] = next((r["tflops"] for r in rows if r.get("label") == base
                                       and r["size"] == trace_row["size"]), None)
    return out


def trace_table(results: dict) -> str:
    """:func:`trace_numbers` of every traced rung of a record, as text."""
    lines = [f"{'rung':>4s} {'untraced':>8s} {'traced':>6s} {'wait full':>9s} {'math≤':>5s} "
             f"{'TC use':>6s} {'cyc/k-tile':>10s} {'load cyc':>8s} {'epilogue':>8s} "
             f"{'1st wait: tile 0, later':>23s}"]
    for t in results.get("traces", []):
        n = trace_numbers(t, results["rows"])
        fw = n["first_wait_cycles"]
        later = f"{fw[1]:7.0f}" if len(fw) > 1 else f"{'-':>7s}"
        lines.append(f"{n['rung']:4d} {n['untraced_tflops'] or float('nan'):8.0f} "
                     f"{n['traced_tflops']:6.0f} {n['wait_full']:9.2f} {n['math_in_flight']:5.2f} "
                     f"{n['tensor_use']:6.2f} {n['ktile_cycles']:10.0f} {n['load_cycles']:8.0f} "
                     f"{n['epilogue_cycles']:8.0f} {fw[0]:15.0f} {later}")
    return "\n".join(lines)


def plot_raster(results: dict, record=None):
    """Two panels from a ``ws_limit`` record: rung 7's schedule at each raster width as a fraction
    of cuBLAS (medians over the rounds; per size and dtype), and — where Nsight Compute ran — the
    DRAM bytes it read at each profiled width beside cuBLAS's (dashed), per size."""
    import matplotlib.pyplot as plt
    summ = [r for r in limit_rows(results) if r["kernel"] == "ours"]
    ncu = limit_rows(results, "ncu")
    fig, axes = plt.subplots(1, 2 if ncu else 1, figsize=(11 if ncu else 6, 3.8), squeeze=False)
    ax = axes[0][0]
    colour = {size: f"C{i}" for i, size in enumerate(results["sizes"])}   # one colour per size
    for size in results["sizes"]:
        for dt, ls, mk in zip(results["dtypes"], ("-", "--"), ("o", "s")):
            rs = sorted((r for r in summ if (r["size"], r["dtype"]) == (size, dt)),
                        key=lambda r: r["group_m"])
            ax.plot([r["group_m"] for r in rs], [r["of_cublas"] for r in rs], ls, marker=mk,
                    color=colour[size], label=f"{size}³ {dt}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(results["groups"], [str(g) for g in results["groups"]])
    ax.set_xlabel("tile rows per raster group (GROUP_M)")
    ax.set_ylabel("of cuBLAS (same run)")
    ax.legend(fontsize=8)
    ax.set_title("Raster width: throughput against cuBLAS", fontsize=10)
    if ncu:
        ax2 = axes[0][1]
        for size in results["sizes"]:
            rs = sorted((r for r in ncu if r["size"] == size and r["who"] == "ours"),
                        key=lambda r: r["group_m"])
            ax2.plot([r["group_m"] for r in rs], [r["dram_gb"] for r in rs], marker="o",
                     color=colour[size], label=f"ours {size}³")
            cb = [r["dram_gb"] for r in ncu if r["size"] == size and r["who"] == "cuBLAS"]
            if cb:
                ax2.axhline(sum(cb), ls=":", color=colour[size], label=f"cuBLAS {size}³")
        ax2.set_xscale("log", base=2)
        gs = sorted({r["group_m"] for r in ncu if r["group_m"]})
        ax2.set_xticks(gs, [str(g) for g in gs])
        ax2.set_xlabel("tile rows per raster group (GROUP_M)")
        ax2.set_ylabel("DRAM bytes read, GB (Nsight Compute)")
        ax2.legend(fontsize=8)
        ax2.set_title("What it reads from DRAM (fp16, locked clock)", fontsize=10)
    if record is not None:
        fig.suptitle(record.label(), fontsize=8)
    fig.tight_layout()
    return fig


# ---- the core lesson's protocol figure and its ladder at a glance --------------------------------

#: The protocol figure's rows: (who acts, which event's barrier, the arrow's label).
_PROTOCOL_STEPS = (("producer", "producer waits", "wait on {b}[s]\nparity (f+1) mod 2"),
                   ("producer", "TMA completes", "arrive.expect_tx\non {b}[s]"),
                   ("TMA", "TMA completes", "bytes land:\ncomplete_tx on {b}[s]"),
                   ("consumers", "consumer waits", "wait on {b}[s]\nparity f mod 2"),
                   ("consumers", "consumer arrives", "arrive on {b}[s]\n(after wait_group)"))
_PROTOCOL_COLUMN = {"producer": 0.0, "TMA": 0.0, "full": 2.6, "empty": 4.2, "consumers": 6.6}


def _draw_protocol(ax, proto: dict, title: str, stuck_at: int | None = None,
                   hide: str | None = None) -> None:
    for name in ("producer", "full", "empty", "consumers"):
        x = _PROTOCOL_COLUMN[name]
        ax.plot([x, x], [0.75, 5.6], color="0.75", lw=1, zorder=0)
        ax.text(x, 5.9, name if name in ("producer", "consumers") else f"{name}[s]", ha="center",
                fontsize=12, weight="bold")
    for row, (who, event, text) in enumerate(_PROTOCOL_STEPS):
        y = 5.0 - row
        bar = proto[event]
        x0, x1 = _PROTOCOL_COLUMN[who], _PROTOCOL_COLUMN[bar]
        wait = "waits" in event
        blocked = stuck_at is not None and row >= stuck_at
        colour = "tab:red" if blocked else ("tab:purple" if wait else "tab:blue")
        if event == hide:            # left open for an exercise: the arrow stops short of both barriers
            bar, x1, colour = "?", _PROTOCOL_COLUMN["empty"] + 0.9, "0.45"
            ax.text(x1 - 0.15, y, "?", ha="right", va="center", fontsize=14, weight="bold", color=colour)
        ax.annotate("", xy=(x1, y), xytext=(x0, y),
                    arrowprops=dict(arrowstyle="->", color=colour, ls="--" if wait else "-", lw=2))
        ax.text((x0 + x1) / 2, y + 0.1, text.format(b=bar), ha="center", va="bottom", fontsize=11,
                color=colour, linespacing=1.1, bbox=dict(fc="white", ec="none", pad=0.5))
        if who == "TMA":
            ax.text(x0 - 0.15, y, "(TMA)", ha="right", va="center", fontsize=11)
        if stuck_at == row:
            ax.text(x1, 0.55, f"blocks here: nobody arrives on {bar}[s] before this wait",
                    ha="center", va="top", fontsize=11, color="tab:red")
    ax.set_xlim(-1.2, 7.6)
    ax.set_ylim(0.0 if stuck_at is not None else 0.5, 6.2)
    ax.axis("off")
    ax.set_title(title, fontsize=13, loc="left")


def plot_protocol(hide: str | None = None):
    """The producer/consumer protocol drawn twice from the same tables, one above the other: this
    kernel's, read from its source (:func:`protocol_from_source`), and the seed article's with the
    waits swapped (:func:`seed_protocol`), marked where it blocks (the consumers' first wait).
    ``hide``, one of :data:`PROTOCOL_EVENTS`, leaves that event's barrier open ("?") in both panels,
    for an exercise that asks it; anything else raises ``ValueError``."""
    import matplotlib.pyplot as plt
    if hide is not None and hide not in PROTOCOL_EVENTS:
        raise ValueError(f"hide={hide!r}: one of {PROTOCOL_EVENTS} or None")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 9.2), dpi=100, layout="constrained")
    _draw_protocol(ax, protocol_from_source(), "this kernel (read from its source)", hide=hide)
    _draw_protocol(ax2, seed_protocol(), "the seed's version: the waits swapped",
                   stuck_at=3, hide=hide)
    fig.supxlabel("purple, dashed: a wait (try_wait.parity); blue, solid: an arrival or complete_tx;\n"
                  "red: blocked. Time runs down; k-tile i sits in stage s = i mod S, fill f = i / S.",
                  fontsize=11)
    return fig


def ladder_ratio(results: dict, a: int, b: int) -> dict:
    """Rung ``b``'s TFLOP/s over rung ``a``'s, per (size, dtype) ladder of a ``warp_specialization``
    record's results."""
    lad = {(r["size"], r["dtype"], r["rung"]): r["tflops"] for r in results["ladder"]}
    return {(s, d): lad[(s, d, b)] / lad[(s, d, a)] for s, d, n in lad if n == b}


def span_text(ratios: dict) -> str:
    """The range of a dict of ratios as signed percentages: ``"+0.1% … +2.6%"``."""
    return f"{min(ratios.values()) - 1:+.1%} … {max(ratios.values()) - 1:+.1%}"


#: Each rung's frozen prediction (:data:`RUNGS`) as a band the record can be held to:
#: rung → (what is compared, the rung it is compared with, low, high). ``"of cuBLAS"``: the rung's
#: fraction of cuBLAS (rung 2's "~0.75" read as ±5 %); ``"step"``: its TFLOP/s over the other rung's,
#: minus 1 (rung 8's "+1 %" read as −0.5 … +3 %).
PREDICTION_BANDS = {2: ("of cuBLAS", None, 0.75 * 0.95, 0.75 * 1.05),
                    3: ("of cuBLAS", None, 0.90, 0.97),
                    4: ("step", 3, -0.03, 0.03),
                    5: ("step", 3, 0.03, 0.08),
                    6: ("step", 5, 0.0, 0.06),
                    7: ("step", 6, 0.01, 0.03),
                    8: ("step", 7, -0.005, 0.03)}


def prediction_check(results: dict, n: int) -> dict:
    """Rung ``n``'s measurement beside its prediction band (:data:`PREDICTION_BANDS`), over every
    (size, dtype) ladder of the record: ``measured`` and ``predicted`` (texts), ``inside`` (every
    ladder within the band), ``outside`` (None, or "above it", "below it", "partly above it",
    "partly below it", or "partly outside it" when ladders miss on both sides), ``values`` (per
    ladder). A step rung whose build is its parent's in every ladder (rung 4, when no tile of its
    sweep beat rung 3's: the same label, the same time) reads ``"same build as rung 3 (0 %)"``, not
    ``"+0.0% … +0.0%"``. ``each``: per ladder, its own (measured text, "inside" / "above" /
    "below"), the verdict a figure of that one ladder shows."""
    from .ladder import RUNGS
    kind, ref, lo, hi = PREDICTION_BANDS[n]
    if kind == "of cuBLAS":
        values = {(r["size"], r["dtype"]): r["of_cublas"] for r in results["ladder"] if r["rung"] == n}
        measured = f"{min(values.values()):.2f}–{max(values.values()):.2f} of cuBLAS"
        predicted = f"{lo:.2f}–{hi:.2f}"
        texts = {z: f"{v:.2f} of cuBLAS" for z, v in values.items()}
    else:
        values = ladder_ratio(results, ref, n)
        label = {(r["size"], r["dtype"], r["rung"]): r.get("label") for r in results["ladder"]}
        same_z = {z: v == 1 and label[z + (n,)] is not None and label[z + (n,)] == label[z + (ref,)]
                  for z, v in values.items()}
        same = all(same_z.values())
        measured = f"same build as rung {ref} (0 %)" if same else f"{span_text(values)} over rung {ref}"
        predicted = f"{lo:+.1%} … {hi:+.1%}"
        texts = {z: f"same build as rung {ref} (0 %)" if same_z[z] else f"{v - 1:+.1%} over rung {ref}"
                 for z, v in values.items()}
    vals = [v if kind == "of cuBLAS" else v - 1 for v in values.values()]
    each = {z: (texts[z], "inside" if lo <= w <= hi else "above" if w > hi else "below")
            for z, w in zip(values, vals)}
    inside = all(side == "inside" for _, side in each.values())
    outside = ("above it" if min(vals) > hi else "below it" if max(vals) < lo else
               "partly above it" if min(vals) >= lo else "partly below it" if max(vals) <= hi else
               "partly outside it")
    return {"rung": n, "name": RUNGS[n - 1].name, "measured": measured, "predicted": predicted,
            "inside": inside, "outside": None if inside else outside, "values": values, "each": each}


#: What each rung changes, in a few words (the full text: :data:`RUNGS`' ``what``).
RUNG_CHANGES = {1: "chapter 05's kernel: every warpgroup computes",
                2: "a producer warpgroup + 1 consumer, 128×128",
                3: "2 consumers on 128×256, setmaxnreg 40/232",
                4: "the fastest tile and stage count of a sweep",
                5: "a persistent grid (one CTA per SM)",
                6: "clusters of 2 CTAs, B multicast",
                7: "the epilogue through shared memory + TMA store",
                8: "a wider raster of tiles (16 rows per group)"}


def ladder_summary(results: dict) -> str:
    """The ladder at a glance: per rung, what it changes (:data:`RUNG_CHANGES`) and its fraction of
    cuBLAS (timed in the same run) in every (size, dtype) ladder of the record."""
    keys = sorted({(r["size"], r["dtype"]) for r in results["ladder"]},
                  key=lambda k: (k[0], k[1] != "float16", k[1]))
    frac = {(r["size"], r["dtype"], r["rung"]): r["of_cublas"] for r in results["ladder"]}
    short = {"float16": "fp16", "bfloat16": "bf16"}
    head = f"{'rung':15s} {'what it changes':48s} " + " ".join(f"{f'{s}³ {short.get(d, d)}':>10s}"
                                                                for s, d in keys)
    lines = [head, " " * 64 + "of cuBLAS".center(11 * len(keys))]
    for n in sorted({r["rung"] for r in results["ladder"]}):
        name = next(r["name"] for r in results["ladder"] if r["rung"] == n)
        lines.append(f"{f'{n} {name}':15s} {RUNG_CHANGES.get(n, ''):48s} "
                     + " ".join(f"{frac[(s, d, n)]:10.2f}" for s, d in keys))
    return "\n".join(lines)


def _fracs(results: dict, n: int) -> dict:
    return {(r["size"], r["dtype"]): r["of_cublas"] for r in results["ladder"] if r["rung"] == n}


def pingpong_note(results: dict, top: int = 8, pingpong: int = 9,
                  predicted: dict | None = None) -> tuple[bool, str, dict]:
    """The core lesson's line on rung 9, from a ``ws_pingpong`` record's results (rungs ``top`` and
    ``pingpong`` timed in one run): ``(holds, text, numbers)`` for
    :func:`asynctc.core.notebook.claim`. ``predicted``: size → (low, high) of rung 9 over rung 8,
    rung 9's frozen prediction by default. It holds when rung 9 is slower than rung 8 in every
    ladder (the text says the ladder's top stays rung 8)."""
    band = predicted or {4096: (0.97, 1.03), 8192: (0.96, 1.01)}
    lad = {(r["size"], r["dtype"], r["rung"]): r["tflops"] for r in results["ladder"]}
    r = {(s, d): lad[(s, d, pingpong)] / lad[(s, d, top)] for s, d, n in lad
         if n == pingpong and (s, d, top) in lad}
    lo, hi = min(r.values()), max(r.values())
    where = [("below" if v < band[s][0] else "above" if v > band[s][1] else "inside")
             for (s, _d), v in r.items() if s in band]
    side = where[0] if where and len(set(where)) == 1 else "partly outside"
    first = min(band)
    text = (f"Rung 9, ping-pong consumers (each consumer warpgroup a 128×128 tile of its own), was "
            f"built and timed beside rung {top} in a later run (record ws_pingpong): "
            f"{lo:.2f}–{hi:.2f} of rung {top}, {side} its prediction ({band[first][0]:.2f}–"
            f"{band[first][1]:.2f} at {first}³), so the ladder's top stays rung {top} "
            f"(deep dive 06c §8).")
    return hi < 1.0, text, {"rung9_over_rung8": r}


def epilogue_note(results: dict, dtype: str = "float16", sass_counts: bool = True) -> tuple[bool, str, dict]:
    """The sentence on why rung 7's TMA store pays, from a ``warp_specialization`` record's traces
    (rungs 6 and 7, 4096³): ``(holds, text, numbers)`` for :func:`asynctc.core.notebook.claim`.
    The store instructions of both rungs' SASS (compiled here, per warp: STG, STSM; UTMASTG per
    warpgroup) are checked against :func:`asynctc.warp_specialization.limit.epilogue_stores`, and
    named in the text with ``sass_counts`` (deep dive 06b; the core lesson leaves them out). It
    holds when they agree and the traced epilogue of rung 7 takes under 0.4 of rung 6's cycles per
    tile."""
    from ..core import sass
    from .ladder import RUNGS
    six, seven = (next(r for r in RUNGS if r.number == n).make(dtype) for n in (6, 7))
    k6, k7 = (sass.class_counts(compile_ws(c).sass()) for c in (six, seven))
    e = epilogue_stores(seven)
    warps = 4 * seven.consumers
    agree = (warps * k6.get("STG", 0) == e["register"]["instructions"]
             and warps * k7.get("STSM", 0) == e["tma"]["stmatrix"]
             and seven.consumers * k7.get("UTMASTG", 0) == e["tma"]["instructions"])
    t6, t7 = (trace_numbers(next(t for t in results["traces"] if t["rung"] == n)) for n in (6, 7))
    k_tiles = next(t for t in results["traces"] if t["rung"] == 6)["cta0"]["k_tiles"]
    six_sass, seven_sass = ((f"; its SASS: {k6.get('STG', 0)} STG per warp",
                             f"; {k7.get('STSM', 0)} STSM per warp") if sass_counts else ("", ""))
    text = (f"Traced at 4096³, the epilogue takes {t6['epilogue_cycles']:.0f} cycles per tile with "
            f"register stores (rung 6{six_sass}) and {t7['epilogue_cycles']:.0f} with the TMA store "
            f"(rung 7{seven_sass}), of about {k_tiles * t6['ktile_cycles']:.0f} per tile.")
    return (agree and t7["epilogue_cycles"] < 0.4 * t6["epilogue_cycles"], text,
            {"rung6": t6["epilogue_cycles"], "rung7": t7["epilogue_cycles"],
             "tile_cycles": k_tiles * t6["ktile_cycles"], "sass_agrees": agree})
