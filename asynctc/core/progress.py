"""Each exercise attempt, one JSON line in a small progress file.

``exercises.check`` appends ``{"time", "exercise", "status", "solution"}`` for every call (and
``"message"``, the line it printed, when the answer was not correct) —
``status`` is ``correct``, ``wrong``, ``unanswered`` (the ``...`` is still there) or ``invalid``
(an answer in a form the exercise does not accept, or missing arguments). The file is:

* ``$ASYNCTC_PROGRESS`` when set (``off`` or an empty value: record nothing);
* else, when the package runs from a source checkout (a clone: ``pyproject.toml`` beside the
  package), ``.asynctc/progress.jsonl`` at that checkout's root — each clone its own progress, so a
  fresh clone starts with nothing passed;
* else (an installed wheel, a hub image) ``$XDG_DATA_HOME/asynctc/progress.jsonl``
  (``~/.local/share/asynctc/progress.jsonl``).

A chapter's banner says where (:func:`where`), once a session, until the first attempt is kept
(always, when ``$ASYNCTC_PROGRESS`` moves it).
``python -m asynctc grade`` gives every learner's notebook its own file. Writing it never fails a
check: an unwritable location is skipped silently.

A passing code exercise (not a solution cell) also keeps the learner's code, for later chapters to
run (:mod:`asynctc.core.answers`): ``<exercise>.py`` in :func:`answers_dir`, the folder
``<stem>.answers/`` beside the progress file (``.asynctc/progress.answers/`` in a checkout;
``alice.answers/`` beside a shared folder's ``alice.jsonl``). Recording off keeps nothing.
:func:`clear` forgets one chapter's attempts and kept answers (``python -m asynctc reset NN --progress``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path

ENV = "ASYNCTC_PROGRESS"
STATUSES = ("correct", "wrong", "unanswered", "invalid")


def path() -> Path | None:
    """The progress file, or None when recording is off."""
    env = os.environ.get(ENV)
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env).expanduser()
    root = checkout_root()
    if root is not None:
        return root / ".asynctc" / "progress.jsonl"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "asynctc" / "progress.jsonl"


#: The folder that holds the ``asynctc`` package (a checkout's root, or site-packages).
_PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent


def checkout_root() -> Path | None:
    """The root of the source checkout the package runs from (``pyproject.toml`` beside the
    package folder), or None for an installed wheel."""
    return _PACKAGE_PARENT if (_PACKAGE_PARENT / "pyproject.toml").is_file() else None


def where() -> str | None:
    """One short line saying where attempts and kept answers go, or None when recording is off."""
    p = path()
    if p is None:
        return None
    try:
        shown = "~/" + str(p.relative_to(Path.home()))
    except ValueError:
        shown = str(p)
    whose = "this checkout's" if checkout_root() is not None and p.parent.parent == checkout_root() \
        else "your"
    return f"(progress: {whose} attempts and passing answers are kept in {shown}; {ENV} moves it)"


def clear(chapter: str, p: Path | None = None) -> tuple[int, int]:
    """Forget chapter ``chapter``'s attempts (exercises ``ch<chapter>.…``) in the progress file ``p``
    (default :func:`path`) and delete its kept answers; returns (attempts removed, answers deleted).
    Lines that are not JSON, and other chapters' lines, stay."""
    p = path() if p is None else Path(p)
    if p is None:
        return 0, 0
    prefix = f"ch{chapter}."
    removed = 0
    if p.is_file():
        keep = []
        for ln in p.read_text().splitlines():
            try:
                d = json.loads(ln)
            except ValueError:
                d = None
            if isinstance(d, dict) and str(d.get("exercise", "")).startswith(prefix):
                removed += 1
            else:
                keep.append(ln)
        if removed:
            p.write_text("".join(ln + "\n" for ln in keep))
    deleted = 0
    d = answers_dir(p)
    if d is not None and d.is_dir():
        for f in sorted(d.glob(f"{prefix}*.py")):
            f.unlink()
            deleted += 1
        for f in d.glob(f"{prefix}*.json"):
            f.unlink()
    return removed, deleted


def held(chapter: str, p: Path | None = None) -> tuple[int, int]:
    """(attempts recorded, answers kept) for chapter ``chapter`` in the progress file ``p``."""
    p = path() if p is None else Path(p)
    if p is None:
        return 0, 0
    prefix = f"ch{chapter}."
    n = sum(1 for d in attempts(p) if str(d.get("exercise", "")).startswith(prefix))
    d = answers_dir(p)
    k = len(list(d.glob(f"{prefix}*.py"))) if d is not None and d.is_dir() else 0
    return n, k


def answers_dir(p: Path | None = None) -> Path | None:
    """The folder of kept answers beside the progress file ``p`` (default :func:`path`), or None
    when recording is off (see the module docstring)."""
    p = path() if p is None else Path(p)
    return None if p is None else p.with_name(p.stem + ".answers")


def record(exercise: str, status: str, solution: bool = False, message: str | None = None) -> None:
    """Append one attempt (see the module docstring); never raises for an unwritable file.
    ``message``: what the check printed for an answer that was not correct (kept to 300 characters)."""
    p = path()
    if p is None:
        return
    line = {"time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "exercise": exercise, "status": status, "solution": bool(solution)}
    if message and status != "correct":
        line["message"] = message[:300]
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("a") as f:
            f.write(json.dumps(line) + "\n")
    except OSError:
        pass


def attempts(p: Path | None = None) -> list[dict]:
    """Every attempt in the progress file ``p`` (default :func:`path`), oldest first; lines that
    are not JSON are skipped."""
    p = path() if p is None else Path(p)
    if p is None or not p.is_file():
        return []
    out = []
    for ln in p.read_text().splitlines():
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if isinstance(d, dict) and "exercise" in d:
            out.append(d)
    return out


def summary(rows: list[dict]) -> dict[str, dict]:
    """exercise → {"status": best status reached, "attempts": how many, "message": what the
    latest attempt was told (None once an attempt was correct)}: ``correct`` once any attempt was
    correct, else the latest status."""
    out: dict[str, dict] = {}
    for d in rows:
        s = out.setdefault(d["exercise"], {"status": d.get("status"), "attempts": 0, "message": None})
        s["attempts"] += 1
        if s["status"] != "correct":
            s["status"] = d.get("status")
            s["message"] = None if s["status"] == "correct" else d.get("message")
    return out
