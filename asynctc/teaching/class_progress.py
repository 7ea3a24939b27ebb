"""A class's progress during a session: ``python -m asynctc progress DIR``.

DIR holds one progress file per learner (the file ``exercises.check`` appends to,
:mod:`asynctc.core.progress`): ``DIR/alice.jsonl``, or ``DIR/alice/progress.jsonl`` (any
``*.jsonl`` under a learner's folder). On a JupyterHub each learner's file is
``~/.local/share/asynctc/progress.jsonl`` of their home (an installed wheel) or
``.asynctc/progress.jsonl`` in their checkout; on laptops a learner sets
``ASYNCTC_PROGRESS`` to a shared folder's ``<name>.jsonl`` before starting Jupyter.

An exercise counts as *tried* once the learner gave an answer: a ``wrong``, ``invalid`` or
``correct`` check. An ``unanswered`` one (the ``...`` still in place, as "Run All" leaves every
exercise) is not an attempt. The summary prints two tables: per learner, how many exercises are
correct of those tried, the exercises tried but not yet correct, the last one answered and when;
per exercise (in course order), how many learners solved it and how many tried it without
solving it yet, out of the class. Solution-cell checks are left out.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from ..core import progress


def progress_files(folder: Path) -> dict[str, list[Path]]:
    """learner → progress files (see the module docstring for the layout)."""
    folder = Path(folder)
    out: dict[str, list[Path]] = {}
    for p in sorted(folder.rglob("*.jsonl")):
        rel = p.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        out.setdefault(rel.parts[0] if len(rel.parts) > 1 else p.stem, []).append(p)
    return out


#: The statuses that mean the learner answered (``unanswered`` is a check with the ``...`` left in).
ANSWERED = ("wrong", "invalid", "correct")


def _answers(paths: list[Path]) -> list[dict]:
    """A learner's answered checks (solution cells left out), oldest first."""
    return sorted((d for p in paths for d in progress.attempts(p)
                   if not d.get("solution") and d.get("status") in ANSWERED),
                  key=lambda d: d.get("time", ""))


def summarize(folder: Path, now: _dt.datetime | None = None) -> str:
    """The class's progress as two markdown tables: one row per learner (sorted by name), then one
    row per exercise tried by anyone (in course order)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    rows = ["| learner | correct / tried | tried, not yet correct | last answered | when |",
            "|---|---:|---|---|---|"]
    files = progress_files(folder)
    by_exercise: dict[str, list[str]] = {}
    for learner, paths in files.items():
        tries = _answers(paths)
        best = progress.summary(tries)
        good = sorted(n for n, s in best.items() if s["status"] == "correct")
        open_ = sorted(n for n, s in best.items() if s["status"] != "correct")
        last, when = (tries[-1]["exercise"], _ago(tries[-1].get("time"), now)) if tries else ("", "")
        rows.append(f"| {learner} | {len(good)}/{len(best)} | {', '.join(open_)} | {last} | {when} |")
        for n, s in best.items():
            by_exercise.setdefault(n, []).append(s["status"])
    if not files:
        rows.append(f"| (no progress files under {folder}) | | | | |")
        return "\n".join(rows)
    from .grading import course_order
    order = course_order()
    rows += ["", f"| exercise | solved (of {len(files)} learners) | tried, not yet solved |",
             "|---|---:|---:|"]
    for n in sorted(by_exercise, key=lambda n: (order.get(n, len(order)), n)):
        solved = by_exercise[n].count("correct")
        rows.append(f"| {n} | {solved} | {len(by_exercise[n]) - solved} |")
    return "\n".join(rows)


def _ago(stamp: str | None, now: _dt.datetime) -> str:
    try:
        t = _dt.datetime.fromisoformat(stamp or "")
    except ValueError:
        return ""
    minutes = int((now - t).total_seconds() // 60)
    return f"{minutes} min ago" if minutes < 120 else t.strftime("%Y-%m-%d %H:%M")


def add_commands(sub) -> None:
    """The ``progress`` subcommand of ``python -m asynctc``."""
    pr = sub.add_parser("progress", help="summarise learners' progress files (during a session)")
    pr.add_argument("dir", metavar="DIR", help="DIR/<learner>.jsonl or DIR/<learner>/*.jsonl")


def cmd_progress(args) -> int:
    folder = Path(args.dir)
    if not folder.is_dir():
        import sys
        print(f"progress: {folder} is not a folder", file=sys.stderr)
        return 2
    print(summarize(folder))
    return 0


COMMANDS = {"progress": cmd_progress}
