"""Nsight Compute, the one place the package runs it and reads it: find the command line
(:func:`find_ncu`), ask it which counters it knows (:func:`ncu_metrics`, names through
:func:`metric_base`), profile a child process (:func:`ncu_profile`: ``python <script>
--ncu-child`` under ``ncu --csv --page raw``) and parse its raw CSV page (:func:`parse_ncu_csv`).
The GPU scripts use it through ``tools/gpu_common.py``; the counters a chapter asks for are its
own (e.g. :data:`asynctc.swizzle.NCU_METRICS`).

Source: Nsight Compute CLI documentation (``--csv``, ``--page raw``, ``--print-units base``,
``--metrics``, ``--query-metrics``) and Profiling Guide (metric names unit__counter.rollup)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Callable


def find_ncu() -> str | None:
    """The Nsight Compute command line: ``ncu`` (or ``nv-nsight-cu-cli``) on PATH, else the newest
    of /usr/local/cuda*/bin/ncu and /opt/nvidia/nsight-compute/*/ncu; None when there is none."""
    import glob
    for name in ("ncu", "nv-nsight-cu-cli"):
        p = shutil.which(name)
        if p:
            return p
    for pat in ("/usr/local/cuda/bin/ncu", "/usr/local/cuda*/bin/ncu",
                "/opt/nvidia/nsight-compute/*/ncu"):
        hits = sorted(glob.glob(pat))
        if hits:
            return hits[-1]
    return None


def ncu_metrics(ncu: str, wanted, base: Callable[[str], str]) -> dict:
    """Ask ``ncu`` for its version and the counters it knows (``--query-metrics``): returns
    ``{"version", "metrics" (those of ``wanted`` it knows, or all where the query listed nothing;
    ``launch__*`` launch statistics always, the query does not list them), "metrics_missing"}``,
    or ``{"why": ...}`` when ncu does not answer. ``base`` maps a metric to the name the query
    lists (``l1tex__data_bank_reads.sum`` → ``l1tex__data_bank_reads``)."""
    import subprocess
    try:
        v = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30)
        q = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=60)
    except (subprocess.SubprocessError, OSError) as e:
        return {"why": f"ncu did not answer: {e}"}
    known = {ln.split()[0] for ln in q.stdout.splitlines() if ln.strip() and "__" in ln.split()[0]}
    metrics = [m for m in wanted if not known or m.startswith("launch__") or base(m) in known]
    return {"version": (v.stdout.strip().splitlines() or [""])[-1], "metrics": metrics,
            "metrics_missing": [m for m in wanted if m not in metrics]}


def ncu_profile(ncu: str, metrics, script: str, timeout: float, *filters: str):
    """Profile ``python <script> --ncu-child`` under ``ncu`` (raw CSV page, base units, the counters
    ``metrics``; ``filters`` such as ``-k regex:NAME --launch-count N``) and return ``(rows,
    process)``: the profiled launches in launch order (:func:`parse_ncu_csv`) and the finished
    process — or ``([], None)`` when it ran longer than ``timeout`` seconds."""
    import subprocess
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(metrics),
           *filters, sys.executable, str(Path(script).resolve()), "--ncu-child"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], None
    return parse_ncu_csv(p.stdout), p


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` output: one dict per profiled launch (in launch order),
    column name → float, or the string where it is not a number. Everything before the header
    (the line whose first field is ``ID``), ncu's log lines (``==PROF==``, ``==ERROR==``) and the
    units row are skipped."""
    import csv
    import io
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    start = next((i for i, r in enumerate(rows) if r and r[0].strip() == "ID"), None)
    if start is None:
        return []
    head = rows[start]
    out = []
    for r in rows[start + 1:]:
        if len(r) != len(head) or not r[0].strip().isdigit():
            continue                                   # the units row, or a truncated line
        row = {}
        for k, v in zip(head, r):
            try:
                row[k] = float(v.replace(",", ""))
            except ValueError:
                row[k] = v
        out.append(row)
    return out


def metric_base(name: str) -> str:
    """``l1tex__data_bank_reads.sum`` → ``l1tex__data_bank_reads`` (the name ``ncu
    --query-metrics`` lists; the suffix is the roll-up)."""
    return name.split(".", 1)[0]
