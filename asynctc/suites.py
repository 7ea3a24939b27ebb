"""The index of record suites: what ``python -m asynctc record <suite>`` measures and writes to
``data/``.

Each chapter module defines ``SUITES = {name: (measure, summarize, arch)}``: ``measure()`` returns
JSON-able results (correctness checks run first and a failed check stops the suite, so a wrong
kernel's speed is never recorded), ``summarize(record)`` prints a ratio table against the baseline
timed in the same run. :func:`run_suite` wraps a suite with provenance
(:func:`asynctc.core.records.measure`) and saves it. Suites never assert on timings.
A module may define several: :mod:`asynctc.warp_specialization` has "warp_specialization" (the
chapter 06 ladder) and "ws_limit" (what limits its top rung; ``tools/gpu_ch06_limit.py``);
:mod:`asynctc.gemm` has "matmul" (:func:`asynctc.matmul`'s checks and its timings beside cuBLAS;
``tools/gpu_matmul.py``).
"""

from __future__ import annotations

import importlib

from .core import records, runtime

#: The chapter modules, in course order; each may define ``SUITES``.
CHAPTER_MODULES = ("asynctc.why_async", "asynctc.mma_sync", "asynctc.cp_async", "asynctc.tma",
                   "asynctc.wgmma", "asynctc.wgmma_peak", "asynctc.pipeline",
                   "asynctc.warp_specialization", "asynctc.gemm", "asynctc.fp8", "asynctc.swizzle",
                   "asynctc.pitfalls", "asynctc.tcgen05")

SUITES: dict = {}


def _collect() -> None:
    for mod in CHAPTER_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name == mod:
                continue          # chapter not written yet
            raise
        SUITES.update(getattr(m, "SUITES", {}))


_collect()


def run_suite(name: str, save: bool = True) -> records.Record:
    """Measure suite ``name`` on this GPU, save it under ``data/`` and print its summary."""
    if name not in SUITES:
        raise ValueError(f"suite={name!r}: known suites are {sorted(SUITES)}")
    fn, summary, arch = SUITES[name]
    if not runtime.runs_live(arch):
        raise runtime.NoGPUError(f"suite {name} needs a live {arch} GPU: {runtime.why_not_live(arch)}")
    rec = records.measure(name, fn)
    if save:
        path = records.save(rec)
        print(f"wrote {path.relative_to(records.data_dir().parent) if path.is_relative_to(records.data_dir().parent) else path}")
    print(summary(rec))
    return rec
