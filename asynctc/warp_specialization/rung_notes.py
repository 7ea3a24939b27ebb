"""Chapter 06 §4's sentences on rungs 3–8, generated from the ``warp_specialization`` record.

Each note returns ``(holds, text, numbers)`` for :func:`asynctc.core.notebook.claim`: ``text``
states what the record measured (steps over the rung each rung was made from, beside the frozen
prediction band of :data:`~.figures.PREDICTION_BANDS`), ``holds`` is the condition under which the
sentence's conclusion is true, ``numbers`` what it rests on. Never times, never plots.

Also chapter 06 §1's table of the ring protocol's names (:func:`protocol_names`): one row per step
as chapters 05, 06 and 06e spell it, with the PTX read from the kernels' headers.
"""

from __future__ import annotations

from .figures import PREDICTION_BANDS, _fracs, ladder_ratio, prediction_check, trace_numbers

_SHORT = {"float16": "fp16", "bfloat16": "bf16"}


def _steps_text(values: dict) -> str:
    """Per size, the step's range over its dtypes: ``+2.4 … +2.6 % at 4096³, +0.0 … +0.1 % at 8192³``."""
    out = []
    for s in sorted({k[0] for k in values}):
        v = [values[k] - 1 for k in values if k[0] == s]
        lo, hi = min(v), max(v)
        out.append((f"{lo:+.1%}" if round(lo, 3) == round(hi, 3) else f"{lo:+.1%} … {hi:+.1%}")
                   + f" at {s}³")
    return ", ".join(out)


def _band_text(check: dict) -> str:
    where = "inside" if check["outside"] is None else check["outside"].removesuffix(" it")
    return f"{where} its prediction, {check['predicted']}"


def _trace(results: dict, n: int) -> dict | None:
    t = next((t for t in results.get("traces", []) if t["rung"] == n), None)
    return None if t is None else trace_numbers(t)


# Per rung of §4: the sentence's conclusion, as (condition on the record, clause, numbers); each
# condition is the one the chapter's prose leans on.
def _rung5(results):
    t3, t5 = _trace(results, 3), _trace(results, 5)
    small = min(k[0] for k in ladder_ratio(results, 3, 5))
    if not (t5 and len(t5["first_wait_cycles"]) > 1):
        return True, "", {}
    first, later = t5["first_wait_cycles"][0], t5["first_wait_cycles"][1]
    text = (f"Traced at {small}³, a CTA's first tile waits {first:.0f} cycles for its first "
            f"k-tile, later tiles {later:.0f}: their loads ran during the epilogue")
    return later < 0.5 * first, text, {"first_wait": t5["first_wait_cycles"],
                                       "rung3_first_wait": t3["first_wait_cycles"] if t3 else None}


def _rung6(results):
    v = ladder_ratio(results, 5, 6)
    flat = all(abs(x - 1) < 0.015 for x in v.values())
    t5, t6 = _trace(results, 5), _trace(results, 6)
    text = "Nothing measurable" if flat else "A measurable step"
    if t5 and t6:
        text += (f": the consumers' waits on full went {t5['wait_full']:.0%} → {t6['wait_full']:.0%} "
                 "of the loop (traced, 4096³)")
    return flat, text, {"wait_full": (t5 or {}).get("wait_full"), "wait_full_cluster": (t6 or {}).get("wait_full")}


def _rung7(results):
    steps = {n: min(ladder_ratio(results, PREDICTION_BANDS[n][1], n).values()) for n in (4, 5, 6, 7, 8)}
    biggest = all(steps[7] > steps[n] for n in steps if n != 7)
    return biggest, "The ladder's biggest step", {"steps": steps}


def _rung8(results):
    c = prediction_check(results, 8)
    return c["inside"], "", {}


_EXTRA = {5: _rung5, 6: _rung6, 7: _rung7, 8: _rung8}


def rung_note(results: dict, n: int) -> tuple[bool, str, dict]:
    """Rung ``n`` (5–8): what it measured over the rung it was made from (per size, over both
    dtypes), beside its frozen prediction band, and the conclusion §4 draws from it (see
    :data:`_EXTRA`). Raises KeyError for a rung without a note."""
    extra = _EXTRA[n]
    ref = PREDICTION_BANDS[n][1]
    values = ladder_ratio(results, ref, n)
    check = prediction_check(results, n)
    holds, clause, numbers = extra(results)
    text = (f"Rung {n}: {_steps_text(values)} over rung {ref}, {_band_text(check)}"
            + (f". {clause}." if clause else "."))
    return holds, text, {f"rung{n}_over_rung{ref}": values, **{k: v for k, v in numbers.items() if v is not None}}


# ------------------------------------------------------------------------------------------------
# Chapter 06 §3's ladder as a small table (its sentences: the notebook's own arithmetic)
# ------------------------------------------------------------------------------------------------

#: What each rung adds, in a table's few words (the whole text: :data:`~.ladder.RUNGS`' ``what``).
ADDS = {1: "chapter 05's kernel", 2: "producer + 1 consumer, 128×128", 3: "2 consumers, 128×256, setmaxnreg",
        4: "best (tile, stages) of a sweep", 5: "persistent grid", 6: "clusters of 2, B multicast",
        7: "TMA-store epilogue", 8: "raster: group-M 8 → 16"}
#: The rung each step is measured over: rungs 2 and 3 over rung 1 (the split), the rest as
#: :data:`~.figures.PREDICTION_BANDS` compares them.
BASE = {2: 1, 3: 1, **{n: PREDICTION_BANDS[n][1] for n in (4, 5, 6, 7, 8)}}


def rung_table(results: dict, rungs, dtype: str = "float16") -> str:
    """Rungs ``rungs`` of a ``warp_specialization`` record's ladders as a text table, one row per
    rung: what it adds (:data:`ADDS`), the rung its step is over (:data:`BASE`), and per size the
    step (TFLOP/s over that rung's, minus 1) and the fraction of cuBLAS timed in the same run."""
    lad = {(r["size"], r["rung"]): r for r in results["ladder"] if r["dtype"] == dtype}
    sizes = sorted({s for s, _ in lad})
    head = f"{'rung':>4}  {'what it adds':<33}{'over':>5}" + "".join(f"{f'{s}³: step':>14}{'cuBLAS':>8}"
                                                                    for s in sizes)
    lines = [f"{_SHORT.get(dtype, dtype)}; step: TFLOP/s over the rung in 'over', minus 1; cuBLAS: "
             "the fraction of cuBLAS in the same run", head]
    for n in rungs:
        row = f"{n:>4}  {ADDS[n]:<33}{BASE.get(n, '–'):>5}"
        for s in sizes:
            step = (f"{lad[(s, n)]['tflops'] / lad[(s, BASE[n])]['tflops'] - 1:+.1%}" if n in BASE else "–")
            row += f"{step:>14}{lad[(s, n)]['of_cublas']:>8.2f}"
        lines.append(row)
    return "\n".join(lines)


def ladder_steps(results: dict) -> dict:
    """06 §3's numbers on the other rungs: ``r2``, ``r3``, ``r5``, ``r7``, ``r8`` (rung 2 and 3 over
    rung 1, 5 over 3, 7 over 6, 8 over 7: :func:`ladder_ratio`, per size and dtype), ``flat`` (rungs
    4 and 6's ratios over the rung before), ``first`` and ``later`` (cycles a rung-5 CTA's first and
    second tile wait for their first k-tile, traced at 4096³) and ``span`` ({5, 7, 8: "low … high" gain})."""
    r = {f"r{b}": ladder_ratio(results, a, b) for a, b in ((1, 2), (1, 3), (3, 5), (6, 7), (7, 8))}
    r["flat"] = [*ladder_ratio(results, 3, 4).values(), *ladder_ratio(results, 5, 6).values()]
    t5 = trace_numbers(next(t for t in results["traces"] if t["rung"] == 5))
    r["first"], r["later"] = t5["first_wait_cycles"][:2]
    r["span"] = {n: f"{min(v.values()) - 1:+.1%} … {max(v.values()) - 1:+.1%}"
                 for n, v in ((5, r["r5"]), (7, r["r7"]), (8, r["r8"]))}
    return r


# ---- one ring protocol, three spellings (chapter 06 §1) -------------------------------------------

#: The ring protocol's steps: (step, 05's kernel names, 06 capstone's, 06e's (rung 3's), the helpers
#: that issue it as (kernel file, the helper's signature, the ptx/*.cuh wrappers its body calls,
#: " × n" after one it calls in a loop), a note on the PTX). An empty name tuple: that exercise leaves the step to the learner (06's ring
#: position, printed "(yours)") or to the kernel (06e's producer, printed "(kernel's)"). Names as
#: each exercise's in-scope list spells them.
PROTOCOL_STEPS = (
    ("wait for a fill (full)", ("full.wait",), ("full.wait",), ("full.wait",),
     (("ring.cuh", "bool ring_wait_bounded(", ("mbarrier_try_wait_parity",)),), "bounded loop"),
    ("arm + load a stage", ("load_stage",), ("full.arrive_expect_tx", "tma_load"), (),
     (("pipeline.cu", "void load_stage(", ("mbarrier_arrive_expect_tx", "tma_load_2d")),), ""),
    ("issue a k-tile's wgmmas", ("mma_ktile",), ("mma_ktile",), ("mma_ktile",),
     (("wgmma_ring.cuh", "void mma_ktile(", ("wgmma_fence", "wgmma_mma_async_ss × n",
                                             "wgmma_commit_group")),), ""),
    ("wait for wgmmas", ("wgmma_wait_group",), ("wgmma_wait_group<N>",),
     ("wgmma_wait_group<N>",), ((None, None, ("wgmma_wait_group",)),), ""),
    ("release a stage (empty)", ("empty.arrive",), ("empty.arrive",), ("empty.arrive",),
     (("ring.cuh", "void arrive(", ("mbarrier_arrive",)),
      ("warp_specialization.cu", "struct EmptyBarriers", ("mbarrier_arrive",))), ""),
    ("producer waits on empty", ("empty.wait",), ("empty.wait",), (),
     (("ring.cuh", "bool ring_wait_bounded(", ("mbarrier_try_wait_parity",)),), "bounded loop"),
    ("ring position", ("pos", "prev", "ts", "tp"), (), ("pos", "prev"), (),
     "no PTX: a counter in registers"),
)


def _helper_body(path, signature: str) -> str:
    """The text of the helper in ``path`` whose line contains ``signature``, to its closing brace
    at the signature line's indentation."""
    text = path.read_text()
    at = text.find(signature)
    if at < 0:
        raise ValueError(f"{path.name}: no helper {signature!r}")
    line_start = text.rfind("\n", 0, at) + 1
    indent = len(text[line_start:at]) - len(text[line_start:at].lstrip())
    end = text.find("\n" + " " * indent + "}", at)
    return text[at:end]


def _opcodes(wrapper: str) -> str:
    """The PTX opcodes (with qualifiers, without operands) that ``wrapper``'s asm issues, read
    from kernels/ptx/*.cuh by :func:`asynctc.core.notebook.ptx_instructions`. A qualifier that
    varies with the template's arguments (``<SHAPE><TYPES>`` of the macro-built wgmma) is left
    out, with the dot before it. ``wrapper`` may end in a count (``"wgmma_mma_async_ss × n"``),
    kept after the opcodes."""
    from ..core import notebook
    wrapper, _, count = wrapper.partition(" × ")
    ptx = notebook.ptx_instructions(wrapper).splitlines()[1].split(None, 1)[1]
    ops = "; ".join(i.split()[0].split("<")[0].rstrip(".") for i in ptx.split(";") if i.strip())
    return ops + (f" × {count}" if count else "")


def protocol_rows() -> list[tuple[str, str, str, str, str]]:
    """:data:`PROTOCOL_STEPS` as (step, 05, 06, 06e, PTX) strings. Each helper's body is read to
    check it still calls the wrappers named (``ValueError`` if not), and each wrapper's PTX is read
    from its header, so the PTX column follows the kernels."""
    from ..core import runtime
    rows = []
    for step, n05, n06, n06e, helpers, note in PROTOCOL_STEPS:
        wrappers = []
        for file, signature, calls in helpers:
            if file is not None:
                body = _helper_body(runtime.KERNEL_DIR / file, signature)
                for w in (c.partition(" × ")[0] for c in calls):
                    if w + "(" not in body and w + "<" not in body:
                        raise ValueError(f"{file}: {signature!r} no longer calls {w}")
            wrappers += [w for w in calls if w not in wrappers]
        ptx = "; ".join(_opcodes(w) for w in wrappers)
        ptx = ", ".join(p for p in (ptx, note) if p)
        rows.append((step, ", ".join(n05), ", ".join(n06) or "(yours)", ", ".join(n06e) or "(kernel's)",
                     ptx))
    return rows


def protocol_names(with_06e: bool = False) -> str:
    """Chapter 06 §1's table: one ring protocol, each step as chapter 05's kernel and 06's capstone
    name it (``with_06e``: and 06e's rung 3), and below each row, after "→", the PTX it issues
    (:func:`protocol_rows`)."""
    cols = 4 if with_06e else 3
    head = ("step", "05 (pipeline.cu)", "short name (06f)", "06e")[:cols]
    rows = protocol_rows()
    w = [max(len(r[i]) for r in [head, *rows]) for i in range(cols)]
    lines = ["  ".join(f"{c:{w[i]}s}" for i, c in enumerate(head)).rstrip()]
    for r in rows:
        lines += ["  ".join(f"{c:{w[i]}s}" for i, c in enumerate(r[:cols])).rstrip(), f"  → {r[4]}"]
    return "\n".join(lines)
