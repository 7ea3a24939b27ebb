"""The "pitfalls" record: every kernel variant's outcome in words, and what compute-sanitizer's
memcheck, racecheck and synccheck say about the correct kernel and two broken ones. Nothing is
timed and nothing is plotted; ``tools/gpu_ch08.py`` runs it on the GPU and writes
``data/<gpu>/pitfalls.json``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import latent, variants

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
#: The variants run under compute-sanitizer: the correct kernel, a would-be hang (the bounded wait
#: ends it) and a shared-memory race (lane 0 releases the stage before its warp read it).
SANITIZED = (0, 1, 9)
SANITIZER_TIMEOUT_S = 240
ROOT = Path(__file__).resolve().parents[2]


def sanitizer_path() -> str | None:
    """compute-sanitizer on PATH or under CUDA_HOME / /usr/local/cuda, else None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for base in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if base and (Path(base) / "bin" / "compute-sanitizer").is_file():
            return str(Path(base) / "bin" / "compute-sanitizer")
    return None


def sanitizer_command(bug: int, tool: str, exe: str, code: str | None = None) -> list[str]:
    """The command line that runs variant ``bug`` once under ``tool`` (or the Python ``code``, which
    prints ``outcome: <words>``, e.g. a stress kernel of :mod:`.latent`)."""
    if tool not in SANITIZER_TOOLS:
        raise ValueError(f"tool={tool!r}: must be one of {SANITIZER_TOOLS}")
    code = code or ("from asynctc.pitfalls import variants; "
                    f"print('outcome:', variants.run_variant({int(bug)}, tiles=4).words)")
    extra = ["--racecheck-report", "hazard"] if tool == "racecheck" else []
    return [exe, "--tool", tool, *extra, sys.executable, "-c", code]


def parse_sanitizer(text: str) -> dict:
    """compute-sanitizer's output → {summary (the SUMMARY line), errors (int or None), excerpt
    (up to 6 lines of its first report), outcome (the variant's own words)}."""
    summary = next((ln.strip("= ").strip() for ln in text.splitlines() if "SUMMARY" in ln), "")
    m = re.search(r"(\d+)\s+(?:errors?|hazards?)", summary)
    report = [ln.strip("= ").rstrip() for ln in text.splitlines()
              if ln.startswith("=========") and "SUMMARY" not in ln and ln.strip("= ").strip()
              and "COMPUTE-SANITIZER" not in ln]
    outcome = next((ln.split("outcome:", 1)[1].strip() for ln in text.splitlines() if "outcome:" in ln), "")
    return {"summary": summary, "errors": int(m.group(1)) if m else None, "excerpt": report[:6],
            "outcome": outcome}


def sanitize(bug: int, tool: str, timeout_s: int = SANITIZER_TIMEOUT_S, exe: str | None = None,
             code: str | None = None) -> dict:
    """Run variant ``bug`` (or ``code``: :func:`sanitizer_command`) under compute-sanitizer ``tool``
    with a wall-clock limit; returns {bug, tool, summary, errors, excerpt, outcome, rc} (rc
    "timeout" when the limit passed)."""
    exe = exe or sanitizer_path()
    if exe is None:
        return {"bug": bug, "tool": tool, "summary": "compute-sanitizer not found", "errors": None,
                "excerpt": [], "outcome": "", "rc": None}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        p = subprocess.run(sanitizer_command(bug, tool, exe, code), capture_output=True, text=True,
                           timeout=timeout_s, env=env, cwd=str(ROOT))
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    return {"bug": bug, "tool": tool, **parse_sanitizer(text), "rc": rc}


VARIANT_TIMEOUT_S = 120
_MARK = "PITFALLS-OUTCOME "


def run_isolated(bug: int, tiles: int = 8, timeout_s: int = VARIANT_TIMEOUT_S) -> dict:
    """:func:`variants.run_variant` in a child process, so that a variant whose undefined
    behaviour ends in a sticky CUDA error (a fault, a misaligned address) cannot take the next
    variants' context with it. Returns :meth:`variants.Outcome.as_dict`; a child that dies or
    passes the time limit gives words "crash: <its last error line>" / "timeout: ..."."""
    import json
    code = ("import json; from asynctc.pitfalls import variants; "
            f"print({_MARK!r} + json.dumps(variants.run_variant({int(bug)}, tiles={int(tiles)}).as_dict()))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    key = variants.BUGS[bug][0]
    blank = {"bug": bug, "key": key, "errors": {}, "wrong": None, "log": []}
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout_s, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {**blank, "words": f"timeout: the child passed {timeout_s} s (the bounded waits did not end it)"}
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith(_MARK)), None)
    if line is None:
        err = [ln.strip() for ln in (p.stderr or "").splitlines() if ln.strip()]
        return {**blank, "words": f"crash: {err[-1][:300] if err else f'exit status {p.returncode}'}"}
    return json.loads(line[len(_MARK):])


def measure_pitfalls(sanitizer: bool = True, tiles: int = 8, progress=print, isolate: bool = True) -> dict:
    """Every variant once (each in its own process with ``isolate``: :func:`run_isolated`), then
    compute-sanitizer on :data:`SANITIZED` (each tool, with a timeout). The correct kernel must end
    "ok": otherwise RuntimeError (a broken baseline makes the broken variants meaningless)."""
    out = {"tiles": tiles, "variants": [], "sanitizer": []}
    for bug in sorted(variants.BUGS):
        o = run_isolated(bug, tiles) if isolate else variants.run_variant(bug, tiles=tiles).as_dict()
        if progress:
            progress(f"BUG={bug:2d} {o['key']:20s} {o['words']}")
        if bug == 0 and o["words"] != "ok":
            raise RuntimeError(f"the correct pitfalls kernel did not end ok: {o['words']}")
        out["variants"].append(o)
    if sanitizer:
        for bug in SANITIZED:
            for tool in SANITIZER_TOOLS:
                r = sanitize(bug, tool)
                if progress:
                    progress(f"sanitizer BUG={bug} {tool:9s} {r['summary'] or r['rc']}")
                out["sanitizer"].append(r)
    return out


def summarize(rec) -> str:
    lines = [f"pitfalls ({rec.label()}):"]
    for v in rec.results["variants"]:
        lines.append(f"  BUG={v['bug']:2d} {v['key']:20s} {v['words']}")
    for s in rec.results.get("sanitizer", []):
        lines.append(f"  sanitizer BUG={s['bug']} {s['tool']:9s} {s['summary'] or s['rc']}")
    if rec.results.get("latent"):
        lines.append(latent.summarize_latent(rec.results["latent"]))
    return "\n".join(lines)


SUITES = {"pitfalls": (measure_pitfalls, summarize, "sm_90a")}
