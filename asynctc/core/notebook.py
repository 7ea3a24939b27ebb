"""Small helpers for the notebooks: show kernel source and SASS, say where numbers come from."""

from __future__ import annotations

import os
import re

from . import runtime


def banner(arch: str = "sm_90a") -> None:
    """One line: does this notebook run its kernels live here, or replay recorded data, and why."""
    if os.environ.get("ASYNCTC_BUILDING_NOTEBOOKS"):
        line = ("STORED OUTPUTS: made in replay mode from the records in data/ when the course was "
                "built. Run the notebook to see what your machine does: live on an sm_90 GPU, "
                "replay elsewhere.")
    elif runtime.runs_live(arch):
        info = runtime.device_info()
        line = f"LIVE: kernels for {arch} run on this machine's {info.name}."
    else:
        line = (f"REPLAY: {runtime.why_not_live(arch)}. Kernels are compiled and disassembled here; "
                "measured figures come from data/ and say where and when they were measured.")
    print(line)


def show_source(target, start: str | None = None, end: str | None = None):
    """Display a kernel's CUDA C++ source (a :class:`~asynctc.core.runtime.CompiledKernel` or a file name
    under ``asynctc/kernels/``), optionally only from the first line matching ``start`` up to the
    first later line matching ``end`` (regular expressions). A file name outside ``kernels/``
    (absolute, ``..``) raises :class:`ValueError` (:func:`~asynctc.core.runtime.kernel_path`)."""
    from IPython.display import Code
    text = target.source_text() if hasattr(target, "source_text") else \
        runtime.kernel_path(target).read_text()
    if start:
        lines = text.splitlines()
        i = next((k for k, ln in enumerate(lines) if re.search(start, ln)), None)
        if i is None:
            raise ValueError(f"start={start!r}: no line of the source matches")
        j = len(lines)
        if end:
            j = next((k for k in range(i + 1, len(lines)) if re.search(end, lines[k])), len(lines)) + 1
        text = "\n".join(lines[i:j])
    return Code(text, language="cuda")


def sass_table(compiled, classes=None) -> str:
    """A small text table of instruction-class counts of a compiled kernel."""
    from . import sass
    counts = sass.class_counts(compiled.sass(), classes)
    r = compiled.resources
    lines = [f"{compiled.name} [{compiled.arch}]: {r.registers} registers/thread, "
             f"{r.spill_stores} bytes spilled"]
    lines += [f"  {k:10s} {v:5d}" for k, v in counts.items()]
    return "\n".join(lines)
