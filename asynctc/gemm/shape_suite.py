"""The shape sweep that fills :data:`asynctc.gemm.config.DECISIONS`: every candidate entry of the
decision table timed against cuBLAS per shape class, each result checked first.

:data:`SWEEP_SHAPES` (cubes 512–2048, thin M 64–256 × 8192 × 8192, decode M 1–16 × N = K 4096 and
8192), :data:`CANDIDATES` (per class: the table entries worth measuring — split-K counts, tiles,
stages, a non-persistent grid; ``{}`` is today's rule), :func:`sweep_cases` (the cross product,
trimmed: bf16 only on one shape per class and size), :func:`candidate_configs` (each entry made
into the configuration :func:`~asynctc.gemm.config.choose_config` would pick with it, duplicates
dropped), :func:`sweep_jobs` (their compile jobs), :func:`measure_shapes` (on torch tensors,
torch's current stream, as the ``matmul_host`` suite: per case one float64 reference on the GPU;
per candidate the entry set in :data:`~asynctc.gemm.config.DECISIONS`, the cached plans cleared,
one call into a poisoned output checked element by element against ``gemm_tolerance(K) ·
(|A|·|B|)``, then GPU time per call — calls queued behind a delay kernel, CUDA events around them
— alternating with ``torch.matmul`` (cuBLAS) for :data:`ROUNDS` rounds, medians), :func:`winners`
and :func:`summarize_shapes`. Needs torch with CUDA on an sm_90 GPU; writes no plot.
"""

from __future__ import annotations

import statistics

from ..core import runtime
from ..warp_specialization.config import WarpSpecializationError
from ..warp_specialization.launch import compile_job
from . import config as GC
from .splitk import SOURCE as REDUCE_SOURCE, ENTRY as REDUCE_ENTRY, reduce_defines

#: The swept shapes by class of :func:`~asynctc.gemm.config.shape_class` (M, N, K).
SWEEP_SHAPES = {
    "tiny": ((512, 512, 512),),
    "small": ((1024, 1024, 1024), (2048, 2048, 2048)),
    "thin": ((64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192)),
    "decode": tuple((m, 4096, 4096) for m in (1, 4, 16)),
    "decode_wide": tuple((m, 8192, 8192) for m in (1, 4, 16)),
}
#: Shapes also swept in bf16 (fp16 sweeps every shape): one per class and size.
BF16_SHAPES = ((1024, 1024, 1024), (64, 8192, 8192), (256, 8192, 8192), (1, 4096, 4096),
               (16, 8192, 8192))
#: --quick: one shape per class, fp16 only.
QUICK_SHAPES = ((1024, 1024, 1024), (64, 8192, 8192), (1, 8192, 8192))
DTYPES = ("float16", "bfloat16")
#: How B is stored: "KxN" (b K×N row-major) or "NxK" (w N×K, passed as ``w.T``).
STORAGES = ("KxN", "NxK")

#: Candidate decision-table entries per class ({} = today's rule). Split-K counts are chosen so
#: that tiles × splits is near the 132 SMs for the class's shapes (a 64-column tile of N = 4096 is
#: 64 tiles: × 2; bn = 128: × 4; ...); split_k is clipped to K's k-tiles by choose_config. Split-K
#: comes with the separate reduction (a second launch) and with the in-kernel fix-up (F).
F = {"splitk_fixup": True}
CANDIDATES = {
    "decode": ({}, {"split_k": 2}, {"split_k": 4}, {"split_k": 2, **F}, {"split_k": 4, **F},
               {"bn": 128, "split_k": 2, **F}, {"bn": 128, "split_k": 4, **F},
               {"bn": 256, "split_k": 4, **F}, {"bn": 256, "split_k": 8, **F}),
    "thin": ({}, {"split_k": 2, **F}, {"bn": 128, "split_k": 2}, {"bn": 128, "split_k": 2, **F},
             {"bn": 256, "split_k": 4, **F}, {"bm": 64, "consumers": 1, "bn": 128},
             {"stages": 4}, {"persistent": False}),
    "small": ({}, {"split_k": 2}, {"split_k": 2, **F}, {"split_k": 4, **F},
              {"bm": 64, "consumers": 1}, {"bm": 64, "consumers": 1, "bn": 128},
              {"bn": 128, "split_k": 2, **F}, {"persistent": False}, {"stages": 4},
              {"cluster": 1}),
}
CANDIDATES["decode_wide"] = CANDIDATES["decode"]
CANDIDATES["tiny"] = CANDIDATES["small"]
del F
#: Calls per timed sample, rounds per side (alternating ours and cuBLAS), as ``matmul_host``.
CALLS, ROUNDS = 40, 3


def sweep_cases(quick: bool = False) -> list[dict]:
    """The cases swept: {"class", "m", "n", "k", "dtype", "storage"} — every shape of
    :data:`SWEEP_SHAPES` in fp16 and those of :data:`BF16_SHAPES` in bf16, both B storages
    (``quick``: :data:`QUICK_SHAPES`, fp16)."""
    out = []
    for cls, shapes in SWEEP_SHAPES.items():
        for s in shapes:
            if quick and s not in QUICK_SHAPES:
                continue
            for dt in DTYPES:
                if dt == "bfloat16" and (quick or s not in BF16_SHAPES):
                    continue
                for st in STORAGES:
                    out.append({"class": cls, "m": s[0], "n": s[1], "k": s[2], "dtype": dt,
                                "storage": st})
    return out


def candidate_configs(case: dict, sm_count: int | None = None) -> list[tuple[dict, object]]:
    """(entry, WSConfig) for each candidate of the case's class: the configuration
    :func:`~asynctc.gemm.config.choose_config` picks with ``{class: entry}`` as its table (C in the
    input dtype, row-major: aligned when N · 2 bytes is a multiple of 16). An entry the kernel
    refuses for this shape is left out; entries giving the same configuration are kept once
    (the first)."""
    m, n, k, dt = case["m"], case["n"], case["k"], case["dtype"]
    major = "MN" if case["storage"] == "KxN" else "K"
    out, seen = [], set()
    for entry in CANDIDATES[case["class"]]:
        try:
            cfg = GC.choose_config(m, n, k, dt, major, dt, c_rows_aligned=(n * 2) % 16 == 0,
                                   sm_count=sm_count, decisions={case["class"]: dict(entry)})
        except WarpSpecializationError:
            continue
        if cfg not in seen:
            seen.add(cfg)
            out.append((dict(entry), cfg))
    return out


def sweep_jobs(cases, sm_count: int | None = None) -> list:
    """Compile jobs of every candidate configuration (and its split-K reduction), once each."""
    jobs = {}
    for case in cases:
        for _e, cfg in candidate_configs(case, sm_count):
            jobs[repr(compile_job(cfg))] = compile_job(cfg)
            if cfg.split_k > 1:
                j = (REDUCE_SOURCE, REDUCE_ENTRY, reduce_defines(cfg))
                jobs[repr(j)] = j
    return list(jobs.values())


def _clear_plans() -> None:
    from . import fastpath
    fastpath._plans.clear()
    fastpath._torch_layouts.clear()


def measure_shapes(progress=None, cases=None, calls: int = CALLS, rounds: int = ROUNDS) -> dict:
    """Every candidate of every case (:func:`sweep_cases`) against cuBLAS; see the module
    docstring. Rows: case fields, ``candidate`` (the table entry), ``config`` (label),
    ``checked_ok``, ``worst_ratio``, ``kernel_us``, ``cublas_us``, ``tflops``, ``cublas_tflops``,
    ``of_cublas`` (cuBLAS time / ours). A candidate that fails its check is not timed. The module
    table is restored afterwards."""
    import torch

    from . import fastpath, host_suite as H
    from .plan import matmul
    from ..core import bench
    say = progress or (lambda _s: None)
    bench.pin_fp32_reduction()
    cases = sweep_cases() if cases is None else cases
    info = runtime.device_info()
    sms = info.sm_count if info else None
    jobs = sweep_jobs(cases, sms)
    say(f"compiling {len(jobs)} variants for {len(cases)} cases")
    runtime.precompile(jobs)
    saved = {key: dict(v) for key, v in GC.DECISIONS.items()}
    rows = []
    try:
        for case in cases:
            m, n, k, dt = case["m"], case["n"], case["k"], case["dtype"]
            a, b, bk = H._operands(torch, m, n, k, dt, case["storage"])
            flop = 2 * m * n * k
            tdt = getattr(torch, dt)
            for entry, cfg in candidate_configs(case, sms):
                GC.DECISIONS.clear()
                GC.DECISIONS.update({c: {} for c in GC.SHAPE_CLASSES})
                GC.DECISIONS[case["class"]] = dict(entry)
                _clear_plans()
                out = torch.full((m, n), float("nan"), dtype=tdt, device="cuda")
                matmul(a, b, out)
                torch.cuda.synchronize()
                fastpath.check_errors()
                chk = H.check_against_float64(torch, out, a, bk, dt)
                ran = [pl.config for pl in fastpath._plans.values()]
                row = {**case, "candidate": entry, "config": cfg.label(),
                       "checked_ok": chk["passed"], "worst_ratio": chk["worst_ratio"],
                       "ran_config": ran[0].label() if ran else None}
                if ran != [cfg]:                        # the plan must be the candidate's
                    row["checked_ok"] = False
                    row["why"] = f"the call ran {[c.label() for c in ran]}, not {cfg.label()}"
                if row["checked_ok"]:
                    matmul(a, b)                        # the layout without out, once untimed
                    ours, theirs = [], []
                    for _ in range(rounds):
                        ours.append(H.kernel_us(torch, lambda: matmul(a, b), calls))
                        theirs.append(H.kernel_us(torch, lambda: torch.matmul(a, b), calls))
                    row.update(kernel_us=statistics.median(ours),
                               cublas_us=statistics.median(theirs))
                    row.update(tflops=flop / row["kernel_us"] / 1e6,
                               cublas_tflops=flop / row["cublas_us"] / 1e6,
                               of_cublas=row["cublas_us"] / row["kernel_us"])
                rows.append(row)
                say(_line(row))
    finally:
        GC.DECISIONS.clear()
        GC.DECISIONS.update(saved)
        _clear_plans()
    return {"rows": rows, "sm_count": sms, "calls": calls, "rounds": rounds,
            "winners": winners(rows)}


def _line(r: dict) -> str:
    head = f"{r['m']}x{r['n']}x{r['k']} {r['dtype']} B:{r['storage']} {r['candidate']!s:38s}"
    if not r["checked_ok"]:
        return (f"{head} WRONG (worst |C-ref|/bound {r['worst_ratio']:.3g}) {r['config']}"
                f"{' — ' + r['why'] if r.get('why') else ''}")
    return (f"{head} {r['tflops']:6.0f} TFLOP/s  {r['of_cublas']:.3f} of cuBLAS "
            f"({r['cublas_tflops']:.0f})  {r['config']}")


def winners(rows) -> list[dict]:
    """Per (class, shape, dtype, storage): the checked candidate with the highest ratio to
    cuBLAS, beside today's ({}) ratio."""
    best: dict = {}
    for r in rows:
        if not r.get("checked_ok"):
            continue
        key = (r["class"], r["m"], r["n"], r["k"], r["dtype"], r["storage"])
        b = best.setdefault(key, {"class": key[0], "m": key[1], "n": key[2], "k": key[3],
                                  "dtype": key[4], "storage": key[5], "today": None})
        if r["candidate"] == {}:
            b["today"] = r["of_cublas"]
        if "of_cublas" not in b or r["of_cublas"] > b["of_cublas"]:
            b.update(candidate=r["candidate"], config=r["config"], of_cublas=r["of_cublas"])
    return list(best.values())


def summarize_shapes(results: dict) -> str:
    """The winners, one line per case, and the count of failed checks."""
    lines = [f"{'class':7s} {'M×N×K':16s} {'dtype':9s} {'B':4s} {'today':>6s} {'best':>6s}  "
             f"winner"]
    for w in results.get("winners", []):
        today = f"{w['today']:.3f}" if w.get("today") is not None else "-"
        lines.append(f"{w['class']:7s} {w['m']}×{w['n']}×{w['k']:<6} {w['dtype']:9s} "
                     f"{w['storage']:4s} {today:>6s} {w['of_cublas']:6.3f}  {w['candidate']} "
                     f"({w['config']})")
    bad = [r for r in results.get("rows", []) if not r.get("checked_ok")]
    lines.append(f"{len(bad)} candidate(s) failed their float64 check" if bad else
                 "every candidate passed its float64 check")
    return "\n".join(lines)
