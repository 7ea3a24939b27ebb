"""A one-page run sheet for a teaching plan: the plan's table (docs/teaching/plan-*.md) cut to what a
teacher needs at the front of the room — when each block starts and ends, which sections are read,
which exercises are done in class and which go home, the teacher's minutes, and the buffer — with
the plan's prose left in the plan. Readers asked for it: the plans are exact but long.

``python -m asynctc.teaching.runsheet`` writes ``docs/teaching/run-sheet-6h.md`` from
``plan-6h.md`` (``--check``: fail if the file is not current); tests/test_teaching_plans.py holds it
to the plan."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .timing import BREAK_BLOCKS, plan_budget, plan_table_cells, plan_tables

DOCS = Path(__file__).resolve().parents[2] / "docs" / "teaching"
PLANS = {"plan-6h.md": "run-sheet-6h.md"}
_EXERCISE = re.compile(r"`(ch\d\d\.[a-z0-9_]+)`")
_DEEP_DIVE = re.compile(r"\b(\d\d[b-e])\b")


def _end(time: str, minutes: int) -> str:
    h, m = map(int, time.split(":"))
    t = h * 60 + m + minutes
    return f"{t // 60:02d}:{t % 60:02d}"


def _names(text: str) -> list[str]:
    out: list[str] = []
    for n in _EXERCISE.findall(text):
        if n not in out:
            out.append(n)
    return out


def _deep_dives(text: str) -> str:
    found: list[str] = []
    for d in _DEEP_DIVE.findall(text):
        if d not in found:
            found.append(d)
    return ", ".join(found)


def _homes() -> dict[str, str]:
    """Exercise name → the notebook (its number and letter, "10b") whose source checks it."""
    src = DOCS.parents[1] / "notebooks" / "src"
    out: dict[str, str] = {}
    for p in sorted(src.glob("[0-9][0-9]*_*.py")):
        for name in re.findall(r"exercises\.check\(\s*\"(ch\d\d\.[a-z0-9_]+)\"", p.read_text()):
            out.setdefault(name, p.name.split("_")[0])
    return out


def _named(names: list[str], homes: dict[str, str], chapter: str) -> str:
    """``names`` as code, each exercise of a deep dive followed by its notebook ("(10b)")."""
    return ", ".join(f"`{n}`" + (f" ({homes[n]})" if homes.get(n, chapter) != chapter else "") for n in names)


def sheet(plan: str = "plan-6h.md") -> str:
    """The run sheet's Markdown for ``plan`` (a file name under docs/teaching/)."""
    md = (DOCS / plan).read_text()
    rows = plan_table_cells(md)[0]
    budget = plan_budget(plan_tables(md)[0])
    title = md.splitlines()[0].lstrip("# ").strip()
    homes = _homes()
    lines = [f"# Run sheet: {title}", "",
             f"Generated from [{plan}]({plan}) by `python -m asynctc.teaching.runsheet`; do not edit. "
             "The plan holds the why and the what-to-say; this page holds the clock. Each lesson block "
             "ends with its [checkpoint](checkpoints.md) (3 min). *In class*: the sections read and the "
             "exercises done in the room; *home*: the exercises and deep dives that go home, a deep dive's "
             "exercise with its notebook "
             "([what-to-skip.md](what-to-skip.md)).", "",
             "| time | min | block | in class | exercises in class | teacher (deck + demo) | home |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        when = f"{r['time']}–{_end(r['time'], int(r['min']))}"
        if r["block"] in BREAK_BLOCKS or not re.match(r"\d\d", r["block"]):
            lines.append(f"| {when} | {r['min']} | **{r['block']}** |  |  |  |  |")
            continue
        home_ex = [n for n in _names(r.get("homework", "")) if n not in _names(r.get("what the learners do", ""))]
        chapter = r["block"][:2]
        home = _named(home_ex, homes, chapter)
        dives = _deep_dives(r.get("homework", ""))
        if dives:
            home += ("; " if home else "") + f"deep dives {dives}"
        teacher = (f"{r.get('deck') or 0} + {r.get('demo') or 0} min" if "demo" not in r["block"]
                   else "the block is the demo")
        cut = re.search(r"still writing at (\d\d:\d\d)", r.get("what the learners do", ""))
        cut = f" (still writing at {cut[1]}: the checkpoint, the rest home)" if cut else ""
        lines.append(f"| {when} | {r['min']} | {r['block']} | {r['sections']} | "
                     f"{(_named(_names(r.get('what the learners do', '')), homes, chapter) or '—') + cut} | "
                     f"{teacher} | {home or '—'} |")
    lines += ["", f"{budget.total} min: {budget.breaks} of breaks, {budget.other} of setup and wrap-up, "
              f"the model's {budget.model:.0f} for the sections read, {budget.checkpoints:.0f} of checkpoints, "
              f"{budget.deck + budget.demo:.0f} of the teacher's, and a buffer of {budget.buffer:.0f} "
              f"(`python -m asynctc.teaching.timing --plan docs/teaching/{plan}` shows it block by block)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if a run sheet is not current")
    args = p.parse_args(argv)
    stale = []
    for plan, out in PLANS.items():
        text, path = sheet(plan), DOCS / out
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(out)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(DOCS.parents[1])}")
    if stale:
        print(f"stale: {', '.join(stale)}: run python -m asynctc.teaching.runsheet", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
