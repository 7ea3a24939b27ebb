"""The course's GEMM from chapter 01 to 06: one running figure and a worklog entry per chapter.

Every step is a 4096³ float16 GEMM read from a record in ``data/`` (never typed here), with its
fraction of the cuBLAS timed in the *same run*. The records come from different runs at different
clocks: TFLOP/s compare only inside one run, the fraction of cuBLAS compares across runs.

``steps()`` the steps in course order; ``plot(upto="04")`` the running figure (later chapters faint);
``entry("02")`` a chapter's entry (we were at, suspected, changed, measured; next); ``show`` both.
Chapter 07 has an entry but no step on the figure: its GEMM is FP8, so it compares with the FP16
rung and cuBLASLt's FP8 GEMM of its own run (record ``fp8``), not with the FP16 cuBLAS.

Comparisons are generated from the numbers; :func:`entry` raises ``ClaimError`` when a
re-measurement flips the direction an entry's prose rests on (a change that no longer gains).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from . import records
from .notebook import require

SIZE, DTYPE = 4096, "float16"
CHAPTERS = ("01", "02", "03", "04", "05", "06")
#: The chapters with an entry: the figure's, then 07 (FP8; :func:`fp8_step`).
ENTRIES = CHAPTERS + ("07",)
#: A step timed by a later chapter's kernel: chapter 04 builds no GEMM, so its step (chapter 05's
#: kernel with one stage) is drawn and quoted from chapter 05 on; 04's entry quotes 04 §8.
TIMED_IN = {"04": "05"}
#: Chapter 01's default tile (``mma_sync.DEFAULT_TILE``, tests hold them equal), chapter 02's one-stage
#: build of it (cp.async alone), the fp16 box chapter 03 §4 compares TMA and cp.async at.
CH01_TILE, CH02_ONE_STAGE, CH03_BOX = "128x128x64/w64x64/2cta", "128x128x64/w64x64/s1/2cta", "128x64"


@dataclass(frozen=True)
class Step:
    """One GEMM's row: ``of_cublas`` = ``tflops`` / ``cublas`` (the same record's cuBLAS), ``record``
    its suite, ``config`` its build; ``main`` steps carry the thread, others are side points."""

    chapter: str
    label: str
    tflops: float
    cublas: float
    record: str
    config: dict = field(default_factory=dict)
    main: bool = True
    of_cublas = property(lambda self: self.tflops / self.cublas)


def _results(suite: str) -> dict:
    return records.load(suite).results


def _one(rows, what: str, **match) -> dict:
    """The one row of ``rows`` that matches (``size``/``dtype`` default to 4096³ float16)."""
    match = {"size": SIZE, "dtype": DTYPE, **match}
    hits = [r for r in rows if all(r.get(k) == v for k, v in match.items() if v is not None)]
    if len(hits) != 1:
        raise records.RecordError(f"{what}: {len(hits)} rows match {match} (want 1)")
    return hits[0]


def _best(rows, kernel: str) -> dict:
    return max((r for r in rows if (r["kernel"], r["size"], r["dtype"]) == (kernel, SIZE, DTYPE)),
               key=lambda r: r["tflops"])


def _tied_stages(rows) -> str:
    """02 §4's verdict in words: the stage counts of the cp.async rows (4096³ float16) within noise of
    the fastest (``bench.fastest``, as ``cp_async`` judges 02 §4): "3 stages", or "3 or 4 stages" for a tie."""
    from .bench import fastest
    tf = {(r["bk"], r["stages"]): r["tflops"] for r in rows
          if (r["kernel"], r["size"], r["dtype"]) == ("cp.async", SIZE, DTYPE)}
    top = fastest(tf)
    return " or ".join(map(str, sorted({s for _, s in top}))) + " stages"


def steps() -> list[Step]:
    """Every step at 4096³ float16, in course order. Raises ``RecordError`` when a row is missing."""
    def take(chapter, label, r, cub, suite, keys, main=True):
        return Step(chapter, label, r["tflops"], cub, suite, {k: r[k] for k in keys}, main)
    ms = _results("mma_sync")["sweep"]
    out = [take("01", "mma.sync", _one(ms, "mma_sync", kernel="mma.sync", tile=CH01_TILE),
                _one(ms, "mma_sync", kernel="cuBLAS")["tflops"], "mma_sync", ("tile",))]
    cs = _results("cp_async")["sweep"]
    cub, best = _one(cs, "cp_async", kernel="cuBLAS")["tflops"], _best(cs, "cp.async")
    out += [take("02", "cp.async, 1 stage", _one(cs, "cp_async", kernel="cp.async", tile=CH02_ONE_STAGE),
                 cub, "cp_async", ("tile", "stages"), main=False),
            take("02", f"cp.async, {_tied_stages(cs)}", best, cub, "cp_async", ("tile", "stages"))]
    ps = _results("pipeline")["sweep"]
    cub, keys = _one(ps, "pipeline", kernel="cuBLAS")["tflops"], ("tile", "consumers", "stages")
    for n in (1, 2, 3):                            # 128×128, one consumer: 1 stage is 04, 2 and 3 on the way
        r = _one(ps, "pipeline", kernel="pipeline", bm=128, bn=128, consumers=1, stages=n, ctas_per_sm=1)
        out.append(take("04", "TMA + wgmma, 1 stage", r, cub, "pipeline", keys) if n == 1 else
                   take("05", f"128×128, {n} stages", r, cub, "pipeline", keys, main=False))
    b = _best(ps, "pipeline")
    out.append(take("05", f"ring, {b['bm']}×{b['bn']}, {b['stages']} stages", b, cub, "pipeline", keys))
    ws = _results("warp_specialization")
    cub = _one(ws["rows"], "warp_specialization", kernel="cuBLAS")["tflops"]
    for n in range(2, 9):                          # rung 1 is chapter 05's kernel, re-timed
        r = _one(ws["ladder"], "ladder", rung=n)
        out.append(take("06", f"rung {n} {r['name']}", r, cub, "warp_specialization",
                        ("rung", "name", "label", "of_cublas"), main=n not in (2, 4)))
    return out


def tma_box() -> dict:
    """Chapter 03's worklog row, shown in deep dive 03b §2: at the 128×64 fp16 box, with equal
    global loads in flight per SM, the GB/s of TMA and of cp.async (record ``tma_equal``), the
    instructions each issues per box, and ``noise``: the smaller of the two rows' sample spreads
    ((p90 − p10) / median, :func:`~asynctc.core.bench.row_spread`)."""
    from .bench import row_spread
    rows = [c for c in _results("tma_equal")["copies"] if c["fp16_box"] == CH03_BOX and "loads" in c["kinds"]]
    row = {v: _one(rows, "tma_equal", size=None, dtype=None, variant=v) for v in ("tma", "cp_async")}
    gb = {v: r["gbps"] for v, r in row.items()}
    nbytes = rows[0]["box_bytes"]
    return {"box_bytes": nbytes, "tma_gbps": gb["tma"], "cp_async_gbps": gb["cp_async"],
            "ratio": gb["tma"] / gb["cp_async"], "cp_async_instructions": nbytes // 16,
            "noise": min(row_spread(r) for r in row.values())}


def wgmma_rate() -> float:
    """Chapter 04 §8's number (record ``wgmma``): the slowest fraction of the in-kernel-clock peak
    (4096 FLOP/clk/SM) of fp16 wgmma at N ≥ 64, SS and RS, one chain, two CTAs per SM."""
    fpc = [x["flop_per_clk_sm"] for x in _results("wgmma")["throughput"]
           if x["n"] >= 64 and (x["dtype"], x["chains"], x["ctas_per_sm"]) == (DTYPE, 1, 2)]
    if not fpc:
        raise records.RecordError("wgmma: no fp16 throughput row at N ≥ 64")
    return min(fpc) / 4096


def drawn(step: Step, upto: str) -> bool:
    """Whether the figure up to chapter ``upto`` draws ``step`` (:data:`TIMED_IN`)."""
    return TIMED_IN.get(step.chapter, step.chapter) <= upto


def fp8_step() -> dict:
    """Chapter 07's numbers at 4096³, one run (record ``fp8``): TFLOP/s of our FP8 top rung (chapter
    06's top rung on e4m3, 128×256, no promotion), the same build promoting every 4 k-tiles (its
    128×128 tile), our FP16 top rung, and cuBLASLt's FP8 GEMM with fast accumulation (never
    promotes). Raises ``RecordError`` when a row is missing."""
    rows = _results("fp8")["rows"]
    fp8 = "float8_e4m3fn"
    top = dict(kernel="ours", dtype=fp8, bn=256, cluster=2, tma_store=True, promote=0)
    return {"fp8": _one(rows, "fp8", **top)["tflops"],
            "fp8_promote4": _one(rows, "fp8", **{**top, "bn": 128, "promote": 4})["tflops"],
            "fp16": _one(rows, "fp8", kernel="ours", dtype=DTYPE)["tflops"],
            "cublaslt_fp8": _one(rows, "fp8", kernel="cuBLASLt", dtype=fp8, fast_accum=True)["tflops"]}


def _main(all_steps, chapter: str) -> Step:
    return [s for s in all_steps if s.chapter == chapter and s.main][-1]


def _fmt(s: Step) -> str:
    return f"{s.label}: {s.tflops:.0f} TFLOP/s, {s.of_cublas:.2f} of cuBLAS"


def _were(s: Step) -> str:
    return f"{s.chapter} {s.label}, {s.of_cublas:.2f} of cuBLAS"


#: Each entry's prose (written, not measured): what we suspected, what we changed and where the
#: learner wrote it, what comes next.
TEXT = {
    "01": ("the Tensor Cores: one mma.sync is a warp's 16×8×16 tile of multiply-adds.",
           "§2: ldmatrix and mma.sync (exercise 2: its HMMA per k-tile).",
           "02 suspects the copy: global → registers → shared memory."),
    "02": ("the register hop: each byte goes to a register, then to shared memory, while the math waits.",
           "§1–2: cp.async copies global → shared, into a ring of stages (exercise 1: the wait depth).",
           "03 suspects the instructions: one cp.async per 16 bytes."),
    "03": ("a copy engine could move a whole box for one instruction.",
           "TMA and its mbarrier (exercises: a stage's fill, 128-byte swizzle).",
           "no GEMM step here: mma.sync still needs ldmatrix; 04's wgmma reads shared memory itself."),
    "04": ("mma.sync itself: the full Tensor Core rate needs wgmma (01 §5).",
           "wgmma reads shared memory by descriptor (§3 exercise: the k-step).",
           "05 suspects the wait: each k-tile's load lands before its wgmma starts."),
    "05": ("one stage serialises load and math.",
           "a ring of stages (§2 exercise: the producer step), then a 128×256 tile, 2 consumers.",
           "06 suspects the loads: a consumer's thread issues them."),
    "06": ("the loads on a consumer's path, then launch waves (rounds of one CTA per SM), stores and tile order.",
           "a producer warpgroup (exercise 1: both roles' loops over several tiles), then rungs 5–8.",
           "07 feeds the same pipeline FP8."),
    "07": ("the number format: fp16 operands get half the Tensor Core rate of FP8 ones and move "
           "twice the bytes.",
           "e4m3 operands with a scale (§2) in 06's top rung (a k-tile 128 deep: the same 128 bytes "
           "a row); promotion into fp32 registers every P k-tiles (exercise 3: the promotion) buys "
           "back the accumulator's bits.",
           "08 breaks the pipeline on purpose: real bug reports, reproduced and fixed."),
}


def _rungs(all_steps) -> str:
    """Chapter 06's ladder from rung 1 (chapter 05's kernel in the ladder's run): the last column is
    the fraction over the rung before's; rung 3's row adds its fraction over rung 1 (06 §3 counts the
    split, rungs 2–3, as one change against rung 1)."""
    r1 = _one(_results("warp_specialization")["ladder"], "ladder", rung=1)
    prev, lines = r1["of_cublas"], [f"    {'rung':<22} {'TFLOP/s':>7} {'of cuBLAS':>9}  ÷ rung before"]
    lines.append(f"    {'rung 1 = 05, this run':<22} {r1['tflops']:7.0f} {prev:9.2f}")
    for s in (x for x in all_steps if x.chapter == "06"):
        split = (f"  (÷ rung 1: {s.of_cublas / r1['of_cublas']:.2f}×)"
                 if s.config.get("rung") == 3 else "")
        lines.append(f"    {s.label:<22} {s.tflops:7.0f} {s.of_cublas:9.2f}  {s.of_cublas / prev:5.2f}×{split}")
        prev = s.of_cublas
    return "\n".join(lines)


def entry(chapter: str) -> str:
    """Chapter ``chapter``'s worklog entry, numbers from the records. Raises ``ClaimError`` when the
    step no longer gains on the one before it (the entry's prose says it does)."""
    if chapter not in TEXT:
        raise ValueError(f"chapter={chapter!r}: the worklog has entries for {', '.join(ENTRIES)}")
    all_steps, (suspect, change, nxt) = steps(), TEXT[chapter]
    head = f"Worklog {chapter}"
    if chapter == "01":
        simt, now = min(_results("mma_sync")["simt"], key=lambda r: r["size"]), _main(all_steps, "01")
        sync = _one(_results("mma_sync")["sweep"], "mma_sync", size=simt["size"], kernel="mma.sync",
                    tile=CH01_TILE)["tflops"]
        require(sync > simt["tflops"], "mma.sync gains on the SIMT GEMM", simt=simt["tflops"], sync=sync)
        were = (f"the SIMT GEMM (§1 runs it in the simulator; §4 prints it timed on the GPU), "
                f"{simt['tflops']:.1f} TFLOP/s at {simt['size']}³ fp32")
        measured = f"{_fmt(now)}; at {simt['size']}³ {sync:.0f} TFLOP/s, {sync / simt['tflops']:.0f}× the SIMT"
    elif chapter == "03":
        t, were = tma_box(), _were(_main(all_steps, "02"))
        gap = abs(t["ratio"] - 1)                  # within noise: less than either row's sample spread
        same = (f"within noise (the timings' own spread: {100 * t['noise']:.1f} %)" if gap < t["noise"] else
                "the same bandwidth within 5 %" if gap < 0.05 else "not the same bandwidth")
        measured = (f"03b §2, a {t['box_bytes'] // 1024} KiB box: TMA {t['tma_gbps']:.0f}, cp.async "
                    f"{t['cp_async_gbps']:.0f} GB/s, {100 * gap:.1f} % apart: {same}, "
                    f"for 1 instruction instead of {t['cp_async_instructions']}")
    elif chapter == "04":
        were = _were(_main(all_steps, "02"))
        measured = (f"wgmma alone (§8): at least {wgmma_rate():.2f} of the peak from N = 64 on; "
                    "chapter 05 will time it in a GEMM")
    elif chapter == "07":
        f, were = fp8_step(), _were(_main(all_steps, "06"))
        require(f["fp8"] > f["fp16"], "FP8 gains on our FP16 rung", fp8=f["fp8"], fp16=f["fp16"])
        measured = (f"4096³: FP8 top rung {f['fp8']:.0f} TFLOP/s, {f['fp8'] / f['fp16']:.2f}× our FP16 rung "
                    f"({f['fp16']:.0f}) and {f['fp8'] / f['cublaslt_fp8']:.2f} of cuBLASLt FP8 "
                    f"({f['cublaslt_fp8']:.0f}, fast accumulation), all in one run; promoting every 4 "
                    f"k-tiles (128×128 tile, 4096³): {f['fp8_promote4']:.0f} TFLOP/s")
    else:
        order = [c for c in CHAPTERS if c != "03"]
        prev, now = _main(all_steps, order[order.index(chapter) - 1]), _main(all_steps, chapter)
        gain = now.of_cublas / prev.of_cublas
        require(gain > 1, f"chapter {chapter}'s change gained", were=prev.of_cublas, now=now.of_cublas)
        were, measured = _were(prev), f"{_fmt(now)}, up from {prev.of_cublas:.2f} in chapter {prev.chapter}"
        if prev.chapter in TIMED_IN:               # 04 times no GEMM: its step is 05 §4's sweep at S = 1
            p02 = _main(all_steps, "02")
            require(prev.of_cublas > p02.of_cublas, "one-stage TMA + wgmma gained on cp.async",
                    were=p02.of_cublas, now=prev.of_cublas)
            were = (f"TMA + wgmma, 1 stage (§4, S = 1; the figure's 04 point), {prev.of_cublas:.2f} of cuBLAS (tile "
                    f"{prev.config['tile']}), up from {p02.of_cublas:.2f} in chapter 02")
            one = _one(_results("pipeline")["sweep"], "pipeline", kernel="pipeline",   # like with like:
                       tile=now.config["tile"], stages=1, ctas_per_sm=1)["tflops"] / now.cublas  # 1 stage
            require(now.of_cublas > one, "the ring gained on its own tile at one stage",
                    were=one, now=now.of_cublas)
            measured = f"{_fmt(now)}; its own tile, {now.config['tile']}, at 1 stage: {one:.2f}"
    parts = [("we were at", were), ("we suspected", suspect), ("we changed", change),
             ("we measured", measured), ("next", nxt)]
    lines = [textwrap.fill(t, 100, initial_indent=f"  {k:<14}", subsequent_indent=" " * 16) for k, t in parts]
    if chapter == "06":
        lines.insert(4, _rungs(all_steps))
    return "\n".join([head, *lines])


def plot(upto: str = "06"):
    """The running figure: each step's fraction of cuBLAS, in course order, one band per chapter;
    steps of chapters up to ``upto`` drawn, later ones only named on the axis (their values would
    answer later chapters' predictions). Returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    if upto not in CHAPTERS:
        raise ValueError(f"upto={upto!r}: one of {', '.join(CHAPTERS)}")
    all_steps = steps()
    slots = []                                     # (chapter, step or None): 03 has a slot, no step
    for c in CHAPTERS:
        slots += [(c, s) for s in all_steps if s.chapter == c] or [(c, None)]
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.axhline(1.0, color="k", lw=1, ls="--")
    ax.text(-0.4, 0.985, "cuBLAS", va="top", fontsize=9)
    pts = [(x, s) for x, (c, s) in enumerate(slots) if s and drawn(s, upto)]   # later steps: not drawn
    main = [(x, s.of_cublas) for x, s in pts if s.main]
    side = [(x, s.of_cublas) for x, s in pts if not s.main]
    for pts_, fmt, ms in ((main, "-o", 7), (side, "s", 5)):
        ax.plot([x for x, _ in pts_], [y for _, y in pts_], fmt, lw=1.5, ms=ms, color="C0", zorder=3)
    for x, s in pts:
        ax.annotate(f"{s.of_cublas:.2f}", (x, s.of_cublas), textcoords="offset points",
                    xytext=(0, 7), ha="center", fontsize=8)
    x0 = 0
    for c in CHAPTERS:
        n = sum(1 for cc, _ in slots if cc == c)
        if c == upto or CHAPTERS.index(c) % 2:
            ax.axvspan(x0 - 0.5, x0 + n - 0.5, color="C1" if c == upto else "0.5",
                       alpha=0.15 if c == upto else 0.06, lw=0)
        ax.text(x0 + (n - 1) / 2, 1.08, c, ha="center", fontsize=9, weight="bold" if c == upto else None)
        x0 += n
    ax.plot([], [], "o", color="C0", label="the chapter's step")
    ax.plot([], [], "s", color="C0", ms=5, label="on the way")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xticks(range(len(slots)))
    ax.set_xticklabels([s.label if s else "TMA (no GEMM)" for _, s in slots], rotation=35,
                       ha="right", fontsize=8)
    for t, (c, s) in zip(ax.get_xticklabels(), slots):
        t.set_color("k" if (drawn(s, upto) if s else c <= upto) else "0.6")
    ax.set(xlim=(-0.5, len(slots) - 0.5), ylim=(0, 1.15), ylabel="fraction of cuBLAS (same run)")
    ax.set_title(f"The course's GEMM through chapter {upto}, 4096³ fp16, from the records\nruns differ in "
                 "clock: the fraction of the cuBLAS timed in the same run compares across them", fontsize=9)
    fig.tight_layout()
    return fig


def show(chapter: str) -> None:
    """The figure up to ``chapter``, then its entry: the chapter's worklog cell. Chapter 07's entry
    comes alone (FP8 has no step on the FP16 figure; module docstring)."""
    import matplotlib.pyplot as plt
    if chapter in CHAPTERS:
        plot(upto=chapter)
        plt.show()
    print(entry(chapter))
