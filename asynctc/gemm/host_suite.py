"""The GEMM's record suite ``matmul_host``: :func:`asynctc.matmul` on torch tensors beside
``torch.matmul``, as a user's loop calls them — host cost, end to end, kernel time.

:func:`measure_matmul_host` (needs torch with CUDA on an sm_90 GPU): every configuration compiled
first; every shape of :data:`HOST_SHAPES` (cubes, thin M, decode M, chapter 06's non-square
shapes, unaligned shapes) × both dtypes × both B storages checked against float64 (on the GPU:
every element, bound ``gemm_tolerance(K) · (|A|·|B|)``, poisoned output and a fresh result) before
anything is timed; then per shape, alternating ours and torch's, three rounds each, medians:

* ``host_us`` — Python-side cost of one call: calls enqueued behind a delay kernel
  (``torch.cuda._sleep``), so the GPU runs none of them while the host is timed;
* ``e2e_us`` — back-to-back calls, wall clock from the first call to the synchronisation after
  the last, divided by the calls (what a loop sees: host cost where the kernel is shorter);
* ``kernel_us`` — the same calls queued behind a delay kernel, CUDA events around them: GPU time
  per call with no host cost in it (``torch.matmul`` is cuBLAS).

Both sides allocate their result (``c = f(a, b)``), on torch's current stream. A CUDA-graph
capture (``torch.cuda.graph``) of one call is replayed and checked. :func:`summarize_matmul_host`
prints the ratios by shape class. Writes records, never plots.
"""

from __future__ import annotations

import statistics
import time

from ..core import checks, runtime
from ..warp_specialization.launch import compile_job
from ..warp_specialization.suite import NONSQUARE_SHAPES
from .config import choose_config

#: The shape table, by class: (M, N, K).
HOST_SHAPES = {
    "cube": tuple((s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)),
    "thin": tuple((m, 8192, 8192) for m in (64, 128, 256)),
    "decode": tuple((m, nk, nk) for nk in (4096, 8192) for m in (1, 4, 16)),
    "nonsquare": tuple(s for s in NONSQUARE_SHAPES if s[0] > 256),
    "unaligned": ((1000, 1000, 1000), (4095, 4095, 4095), (129, 1000, 4095)),
}
QUICK_SHAPES = {"cube": ((1024, 1024, 1024),), "thin": ((64, 8192, 8192),),
                "decode": ((1, 4096, 4096),), "unaligned": ((1000, 1000, 1000),)}
HOST_DTYPES = ("float16", "bfloat16")
#: How B is stored: "KxN" (b K×N row-major: ``a @ b``) or "NxK" (w N×K row-major, as a linear
#: layer's weight: ``a @ w.T``, a transposed view read without a copy).
HOST_B_STORAGE = ("KxN", "NxK")
#: Calls per timed sample and samples per side.
CALLS, ROUNDS = 40, 3
#: Shape of the CUDA-graph capture check.
GRAPH_SHAPE = (1024, 1024, 1024)


def table(shapes=None) -> list[tuple[str, tuple[int, int, int]]]:
    """(class, shape) rows of ``shapes`` (default :data:`HOST_SHAPES`), each shape once."""
    out, seen = [], set()
    for cls, rows in (shapes or HOST_SHAPES).items():
        for s in rows:
            if tuple(s) not in seen:
                seen.add(tuple(s))
                out.append((cls, tuple(s)))
    return out


def host_jobs(rows, dtypes=HOST_DTYPES, storages=HOST_B_STORAGE, sm_count=None) -> list:
    """Compile jobs of every configuration the suite launches: torch results are row-major M×N,
    so C's rows are aligned when N · 2 bytes is a multiple of 16."""
    jobs = {}
    for _cls, (m, n, k) in rows + [("graph", GRAPH_SHAPE)]:
        for dt in dtypes:
            for st in storages:
                cfg = choose_config(m, n, k, dt, "MN" if st == "KxN" else "K", dt,
                                    c_rows_aligned=(n * 2) % 16 == 0, sm_count=sm_count)
                jobs[repr(compile_job(cfg))] = compile_job(cfg)
    return list(jobs.values())


def _operands(torch, m, n, k, dt, storage):
    """Fresh standard-normal operands rounded to ``dt``: (a, b as passed, b as K×N values)."""
    tdt = getattr(torch, dt)
    a = torch.randn(m, k, device="cuda").to(tdt)
    if storage == "KxN":
        b = torch.randn(k, n, device="cuda").to(tdt)
        return a, b, b
    w = torch.randn(n, k, device="cuda").to(tdt)
    return a, w.T, w.T


def check_against_float64(torch, c, a, b, out_dtype: str) -> dict:
    """Every element of ``c`` against the float64 product of the rounded inputs, within
    ``gemm_tolerance(K, out_dtype) · (|A|·|B|)``; non-finite elements (never written) fail."""
    ad, bd = a.double(), b.double()
    ref = ad @ bd
    bound = checks.gemm_tolerance(a.shape[1], out_dtype) * (ad.abs() @ bd.abs())
    err = (c.double() - ref).abs()
    finite = bool(torch.isfinite(c).all().item())
    ratio = float((err / bound.clamp_min(1e-300)).max().item()) if c.numel() else 0.0
    return {"passed": finite and ratio <= 1.0, "worst_ratio": ratio, "finite": finite}


def _delay(torch, us: float) -> None:
    torch.cuda._sleep(int(us * 2000))           # ~2 GHz: cycles for a delay, never a timing


def host_us(torch, fn, calls: int = CALLS) -> float:
    """µs of host time per call, the calls enqueued behind a delay kernel."""
    torch.cuda.synchronize()
    _delay(torch, calls * 300.0)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def e2e_us(torch, fn, calls: int = CALLS) -> float:
    """µs per call of back-to-back calls, wall clock to the synchronisation after the last."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def kernel_us(torch, fn, calls: int = CALLS, host: float = 100.0) -> float:
    """µs of GPU time per call: the calls queued behind a delay kernel, events around them."""
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    _delay(torch, 2 * host * calls + 200.0)
    e0.record()
    for _ in range(calls):
        fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) * 1e3 / calls


def graph_check(torch, matmul) -> dict:
    """One call captured under ``torch.cuda.graph`` (after a warm-up on a side stream, as torch
    asks), replayed into a poisoned output, checked against float64."""
    m, n, k = GRAPH_SHAPE
    a, b, bv = _operands(torch, m, n, k, "float16", "KxN")
    out = torch.empty(m, n, device="cuda", dtype=torch.float16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        matmul(a, b, out)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        matmul(a, b, out)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    return {"shape": GRAPH_SHAPE, **check_against_float64(torch, out, a, bv, "float16")}


def measure_matmul_host(progress=None, shapes=None, dtypes=HOST_DTYPES, storages=HOST_B_STORAGE,
                        calls: int = CALLS, rounds: int = ROUNDS) -> dict:
    """The ``matmul_host`` suite (module docstring). Raises :class:`RuntimeError` without torch
    and CUDA, or at the first wrong element (nothing is then timed)."""
    import torch

    from ..core import bench, records
    from . import fastpath
    from .plan import matmul
    if not torch.cuda.is_available():
        raise RuntimeError("the matmul_host suite compares with torch.matmul: it needs torch "
                           "with CUDA (pip install 'asynctc[torch]')")
    say = progress or (lambda _s: None)
    info = runtime.device_info()
    rows = table(shapes)
    jobs = host_jobs(rows, dtypes, storages, info.sm_count if info else None)
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    out = {"checks": [], "rows": [], "calls": calls, "rounds": rounds,
           "torch": torch.__version__, "baseline_library": bench.baseline_library()}
    problems = []
    for cls, (m, n, k) in rows:
        for dt in dtypes:
            for st in storages:
                a, b, bv = _operands(torch, m, n, k, dt, st)
                poisoned = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
                matmul(a, b, poisoned)
                fresh = matmul(a, b)
                torch.cuda.synchronize()
                fastpath.check_errors()
                label = f"{m}x{n}x{k} {dt} B:{st}"
                for what, c in (("out", poisoned), ("result", fresh)):
                    c_ok = check_against_float64(torch, c, a, bv, dt)
                    out["checks"].append({"label": f"{label} {what}", "class": cls, **c_ok})
                    if not c_ok["passed"]:
                        raise RuntimeError(f"wrong: {label} ({what}): {c_ok}")
                problems.append((cls, (m, n, k), dt, st, a, b))
                del poisoned, fresh
    say(f"{len(out['checks'])} checks against float64 passed, worst |C-ref|/bound "
        f"{max(c['worst_ratio'] for c in out['checks']):.3f}")
    out["graph"] = graph_check(torch, matmul)
    if not out["graph"]["passed"]:
        raise RuntimeError(f"wrong under CUDA-graph capture: {out['graph']}")
    say("CUDA-graph capture: replay checked against float64")
    for cls, (m, n, k), dt, st, a, b in problems:
        sides = {"ours": lambda: matmul(a, b), "torch": lambda: torch.matmul(a, b)}
        got = {f"{s}_{q}": [] for s in sides for q in ("host_us", "e2e_us", "kernel_us")}
        for _ in range(rounds):
            for s, fn in sides.items():
                fn()
                h = host_us(torch, fn, calls)
                got[f"{s}_host_us"].append(h)
                got[f"{s}_e2e_us"].append(e2e_us(torch, fn, calls))
                got[f"{s}_kernel_us"].append(kernel_us(torch, fn, calls, h))
        med = {q: statistics.median(v) for q, v in got.items()}
        flop = 2 * m * n * k
        row = {"class": cls, "m": m, "n": n, "k": k, "dtype": dt, "b_storage": st, **med,
               "samples": got,
               "ours_tflops": flop / med["ours_kernel_us"] / 1e6,
               "torch_tflops": flop / med["torch_kernel_us"] / 1e6,
               "kernel_of_torch": med["torch_kernel_us"] / med["ours_kernel_us"],
               "e2e_of_torch": med["torch_e2e_us"] / med["ours_e2e_us"],
               "host_ratio": med["ours_host_us"] / med["torch_host_us"],
               "config": fastpath.plan_label(m, n, k, dt, st)}
        out["rows"].append(row)
        say(f"{cls:9s} {m}x{n}x{k} {dt} B:{st}: host {med['ours_host_us']:.1f} vs "
            f"{med['torch_host_us']:.1f} us, kernel {row['kernel_of_torch']:.2f}, "
            f"end to end {row['e2e_of_torch']:.2f} of torch")
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def summarize_matmul_host(rec) -> str:
    """The suite as text: checks, the graph capture, per row host µs (ours / torch), kernel and
    end-to-end speed as fractions of torch.matmul, and the worst row of each class."""
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "matmul_host"]
    cks = r.get("checks", [])
    if cks:
        lines.append(f"{len(cks)} checks against float64, "
                     f"{sum(c['passed'] for c in cks)} passed, worst |C-ref|/bound "
                     f"{max(c['worst_ratio'] for c in cks):.3f}")
    if "graph" in r:
        lines.append(f"CUDA-graph capture {r['graph']['shape']}: "
                     f"{'passed' if r['graph']['passed'] else 'FAILED'}")
    lines.append(f"{'class':9s} {'M×N×K':18s} {'dtype':9s} {'B':4s} {'host µs':>15s} "
                 f"{'kernel':>7s} {'e2e':>6s}  (ours/torch host; kernel, e2e as of torch)")
    for x in r.get("rows", []):
        lines.append(f"{x['class']:9s} {x['m']}×{x['n']}×{x['k']:<8} {x['dtype']:9s} "
                     f"{x['b_storage']:4s} {x['ours_host_us']:6.1f} / {x['torch_host_us']:5.1f} "
                     f"{x['kernel_of_torch']:7.2f} {x['e2e_of_torch']:6.2f}")
    for cls in dict.fromkeys(x["class"] for x in r.get("rows", [])):
        xs = [x for x in r["rows"] if x["class"] == cls]
        lines.append(f"worst {cls}: kernel {min(x['kernel_of_torch'] for x in xs):.2f}, end to end "
                     f"{min(x['e2e_of_torch'] for x in xs):.2f} of torch; host ratio up to "
                     f"{max(x['host_ratio'] for x in xs):.2f}")
    if r.get("rows"):
        from .goals import goals_table
        lines += ["", "goals (issue 19):", goals_table(r["rows"])]
    return "\n".join(lines)


SUITES = {"matmul_host": (measure_matmul_host, summarize_matmul_host, "sm_90a")}
