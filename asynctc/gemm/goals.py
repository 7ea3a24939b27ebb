"""What ``asynctc.matmul`` promises a user, judged from a ``matmul_host`` record (issue 19 §3).

:data:`GOALS` lists each promise: a class of shapes, the quantity (``kernel_of_torch``: kernel
time of ``torch.matmul`` / ours, both on one stream behind a delay kernel; ``e2e_of_torch``:
back-to-back host-launched calls; ``host_ratio``: our host µs per call / torch's) and the bound.
:func:`judge` returns, per goal, the worst row of the record and whether the bound holds there —
one wrong shape is enough to miss a goal. Pure: reads a record's rows, never measures, never
plots (:mod:`.figures` draws them).
"""

from __future__ import annotations

from typing import Callable, NamedTuple


class Goal(NamedTuple):
    name: str                        #: in the words of docs/gemm.md's table
    rows: Callable[[dict], bool]     #: which rows of the record it covers
    quantity: str                    #: a key of each row
    bound: float                     #: ≥ bound (ratios of torch) or ≤ bound (``host_ratio``)
    at_most: bool = False            #: True for "≤ bound"


def _cube(lo: int, hi: int) -> Callable[[dict], bool]:
    return lambda r: r["class"] == "cube" and lo <= r["m"] <= hi


def _cls(name: str) -> Callable[[dict], bool]:
    return lambda r: r["class"] == name


#: The promises, from issue 19 §2–§3.
GOALS = (
    Goal("cubes 512–2048, kernel time", _cube(512, 2048), "kernel_of_torch", 0.95),
    Goal("thin M 64–256, kernel time", _cls("thin"), "kernel_of_torch", 0.95),
    Goal("decode M 1–16, kernel time", _cls("decode"), "kernel_of_torch", 0.90),
    Goal("8192³, kernel time", _cube(8192, 8192), "kernel_of_torch", 1.00),
    Goal("non-square table, kernel time", _cls("nonsquare"), "kernel_of_torch", 1.00),
    Goal("cubes ≥ 1024, end to end", _cube(1024, 1 << 30), "e2e_of_torch", 0.90),
    Goal("thin M, end to end", _cls("thin"), "e2e_of_torch", 0.90),
    Goal("host µs per call, every shape", lambda r: True, "host_ratio", 1.00, at_most=True),
)


def row_label(r: dict) -> str:
    """``'1024×1024×1024 float16 B:KxN'`` — a row of the record, as the tables name it."""
    return f"{r['m']}×{r['n']}×{r['k']} {r['dtype']} B:{r['b_storage']}"


def judge(rows: list[dict], goals=GOALS) -> list[dict]:
    """Per goal: ``{"goal", "bound", "at_most", "rows", "worst", "worst_row", "met"}``; ``rows``
    is how many rows the goal covers (0: not measured — ``met`` is then ``None``, never True)."""
    out = []
    for g in goals:
        xs = [r for r in rows if g.rows(r)]
        if not xs:
            out.append({"goal": g.name, "bound": g.bound, "at_most": g.at_most, "rows": 0,
                        "worst": None, "worst_row": None, "met": None})
            continue
        pick = max if g.at_most else min
        w = pick(xs, key=lambda r: r[g.quantity])
        v = w[g.quantity]
        out.append({"goal": g.name, "bound": g.bound, "at_most": g.at_most, "rows": len(xs),
                    "worst": v, "worst_row": row_label(w),
                    "met": v <= g.bound if g.at_most else v >= g.bound})
    return out


def goals_table(rows: list[dict], compact: bool = False) -> str:
    """:func:`judge` as a Markdown table (docs/gemm.md's and chapter 06's deep dive 06d);
    ``compact=True`` leaves out the "at" column (which shape is the worst), for the core lesson."""
    head = ["goal", "bound", "worst measured"] + ([] if compact else ["at"]) + ["met"]
    lines = ["| " + " | ".join(head) + " |",
             "|---|---:|---:|" + ("" if compact else "---|") + "---|"]
    for j in judge(rows):
        rel = "≤" if j["at_most"] else "≥"
        if j["rows"] == 0:
            lines.append(f"| {j['goal']} | {rel} {j['bound']:.2f} | not measured |" + " |" * len(head[3:]))
            continue
        cells = [j["goal"], f"{rel} {j['bound']:.2f}", f"{j['worst']:.2f}"] + \
                ([] if compact else [j["worst_row"]]) + ["yes" if j["met"] else "**no**"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
