"""The zoo's latent variants under stress: BUG 5 (no fence / sync after ``mbarrier.init``), 6 (no
``fence.proxy.async`` between generic shared-memory writes and a TMA store) and 8 (the TMA store's
staging buffer rewritten before ``cp.async.bulk.wait_group.read``) end "ok" in the ring of
``kernels/pitfalls.cu`` on the H200. Here each gets the tightest window we can write and many
chances per launch (``pitfall_store_stress``, ``pitfall_init_race`` in the same file), and the host
names what went wrong: the first wrong element and whether it holds the previous or the next
iteration's value, or the number of CTAs whose arrival was lost.

A bug that still ends "ok" is reported as latent in that many runs — never as a symptom. Every
launch ends in bounded time (the init race's wait gives up after ``wait_ns``). Compiling needs no
GPU; the ``run_*`` functions need an sm_90a GPU. :func:`measure_latent` is what
``tools/gpu_ch08.py --latent-only`` runs; :func:`merge` puts its outcome into the pitfalls record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from pathlib import Path

import numpy as np

from ..core import runtime
from . import variants

ROOT = Path(__file__).resolve().parents[2]

STORE_ENTRY = "pitfall_store_stress"
INIT_ENTRY = "pitfall_init_race"
STORE_THREADS, INIT_THREADS = 128, 64
ROW_BYTES = 128                       # 64 fp16 per row, no swizzle
STORE_BUGS = {6: "FENCE", 8: "WAIT_READ"}
#: The init race's orderings (the kernel's INIT define).
INIT_MODES = {0: "fence.mbarrier_init + __syncthreads (correct)",
              1: "a volatile flag hand-off to the other warp, no fence, no bar.sync (BUG 5)",
              2: "no ordering: the other warp arrives after (cta % 64) × step clocks (BUG 5, racing)"}
#: What --latent-only sweeps: (rows per box, iterations per CTA) for the store stress.
STORE_SIZES = ((64, 64), (256, 32))
STORE_REPS = 4
INIT_STEPS = (0, 4, 32)               # clocks per CTA of the arrive's delay in mode 2
INIT_CTAS = 132 * 16
RING_TILES = (8, 255)
RING_REPS = 20
SANITIZED_LATENT = (5, 6, 8)
LATENT_SANITIZERS = ("racecheck", "synccheck")
CHILD_TIMEOUT_S = 180
_MARK = "PITFALLS-LATENT "


def _check_int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}={v!r}: must be an int")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name}={v}: must be in {lo}..{hi}")
    return int(v)


def store_defines(bug: int, fixed: bool, rows: int) -> dict:
    """The defines of ``pitfall_store_stress`` for BUG 6 or 8, broken or ``fixed``."""
    if bug not in STORE_BUGS:
        raise ValueError(f"bug={bug!r}: the store stress covers {sorted(STORE_BUGS)}")
    rows = _check_int("rows", rows, 8, 256)
    if rows % 8:
        raise ValueError(f"rows={rows}: must be a multiple of 8")
    d = {"SROWS": rows, "FENCE": 1, "WAIT_READ": 1}
    if not fixed:
        d[STORE_BUGS[bug]] = 0
    return d


def compile_store_stress(bug: int, fixed: bool = False, rows: int = 64,
                         arch: str = "sm_90a") -> runtime.CompiledKernel:
    return runtime.compile_kernel(variants.SOURCE, STORE_ENTRY, arch, defines=store_defines(bug, fixed, rows))


def compile_init_race(init: int, arch: str = "sm_90a") -> runtime.CompiledKernel:
    if init not in INIT_MODES:
        raise ValueError(f"init={init!r}: must be one of {sorted(INIT_MODES)} ({INIT_MODES})")
    return runtime.compile_kernel(variants.SOURCE, INIT_ENTRY, arch, defines={"INIT": int(init)})


def pattern(seed: int, ctas: int, iters: int, words: int) -> np.ndarray:
    """The kernel's ``stress_pattern`` for every (cta, iteration, 32-bit word): uint32
    ``ctas × iters × words`` (words = rows × 32)."""
    c = np.arange(ctas, dtype=np.uint32)[:, None, None]
    i = np.arange(iters, dtype=np.uint32)[None, :, None]
    w = np.arange(words, dtype=np.uint32)[None, None, :]
    with np.errstate(over="ignore"):
        x = (np.uint32(seed) + c * np.uint32(0x9E3779B1) + i * np.uint32(0x85EBCA77)
             + w * np.uint32(0xC2B2AE3D)).astype(np.uint32)
        x ^= x >> np.uint32(15)
        x *= np.uint32(0x2C1B3C6D)
        x ^= x >> np.uint32(12)
    return x


def check_store(got: np.ndarray, want: np.ndarray) -> dict:
    """The elementwise check of a store stress run (``got``, ``want``: uint32 ctas × iters × words):
    how many words are wrong, how many hold the previous iteration's value (the store read the
    buffer before the writes reached the async proxy), the next iteration's (it read the buffer after
    the next iteration overwrote it), poison (never written) or something else, and the first wrong
    word {cta, iteration, row, col (fp16 column), got, want, holds}."""
    bad = got != want
    n = int(bad.sum())
    out = {"words": int(got.size), "wrong": n, "previous": 0, "next": 0, "poison": 0, "other": 0,
           "first": None}
    if not n:
        return out
    prev = np.zeros_like(bad)
    nxt = np.zeros_like(bad)
    prev[:, 1:] = got[:, 1:] == want[:, :-1]
    nxt[:, :-1] = got[:, :-1] == want[:, 1:]
    poison = got == np.uint32(0xFFFFFFFF)
    out["previous"] = int((bad & prev).sum())
    out["next"] = int((bad & nxt & ~prev).sum())
    out["poison"] = int((bad & poison & ~prev & ~nxt).sum())
    out["other"] = n - out["previous"] - out["next"] - out["poison"]
    c, i, w = (int(x) for x in np.argwhere(bad)[0])
    holds = ("the previous iteration's" if prev[c, i, w] else "the next iteration's" if nxt[c, i, w]
             else "poison" if poison[c, i, w] else "neither neighbour's")
    out["first"] = {"cta": c, "iteration": i, "row": w // 32, "col": (w % 32) * 2,
                    "got": int(got[c, i, w]), "want": int(want[c, i, w]), "holds": holds}
    return out


def store_words(chk: dict) -> str:
    """One line: "ok" or the first wrong element and the counts."""
    if not chk["wrong"]:
        return "ok"
    f = chk["first"]
    return (f"wrong: first wrong element (row {f['row']}, col {f['col']}) of CTA {f['cta']}'s box "
            f"{f['iteration']}: got {f['got']:#010x}, want {f['want']:#010x} ({f['holds']} value); "
            f"{chk['wrong']} of {chk['words']} words wrong: {chk['previous']} previous, "
            f"{chk['next']} next, {chk['poison']} poison, {chk['other']} other")


def run_store_stress(bug: int, fixed: bool = False, rows: int = 64, iters: int = 64,
                     ctas: int | None = None, seed: int | None = None) -> dict:
    """One launch of the store stress for BUG 6 / 8 (``ctas`` CTAs, default two per SM), checked
    word for word on a poisoned output. Needs an sm_90a GPU."""
    from .. import tma
    from ..core.memory import DeviceArray
    iters = _check_int("iters", iters, 1, 4096)
    ck = compile_store_stress(bug, fixed, rows)
    info = runtime.device_info()
    ctas = _check_int("ctas", ctas if ctas is not None else 2 * (info.sm_count if info else 132), 1, 65535)
    seed = int(np.random.default_rng(seed).integers(1, 2**32 - 1))
    out = DeviceArray.poisoned((ctas * iters * rows, 64), np.float16)
    out_map = tma.make_tensor_map(out, (rows, 64), swizzle=0)[0]
    runtime.launch(ck, ctas, STORE_THREADS, out_map, np.int32(iters), np.uint32(seed),
                   shmem_bytes=rows * ROW_BYTES + 128)
    got = out.to_host().view(np.uint32).reshape(ctas, iters, rows * 32)
    chk = check_store(got, pattern(seed, ctas, iters, rows * 32))
    return {"bug": bug, "fixed": bool(fixed), "rows": rows, "iters": iters, "ctas": ctas,
            "words": store_words(chk), "check": chk}


def run_init_race(init: int, step_cycles: int = 0, ctas: int = INIT_CTAS,
                  wait_ns: int = 200_000) -> dict:
    """One launch of the init race (:data:`INIT_MODES`): how many CTAs lost their arrival (the
    bounded wait on phase 0 gave up) — words "lost: n of N CTAs ..." or "ok". Needs an sm_90a GPU."""
    from ..core.memory import DeviceArray
    ck = compile_init_race(init)
    ctas = _check_int("ctas", ctas, 1, 65535)
    step_cycles = _check_int("step_cycles", step_cycles, 0, 1 << 20)
    res = DeviceArray.from_host(np.zeros(ctas, np.uint32))
    nonce = int(np.random.default_rng().integers(1, 2**31))      # the flag's value (INIT=1)
    runtime.launch(ck, ctas, INIT_THREADS, res, np.uint32(step_cycles), np.uint32(wait_ns),
                   np.uint32(nonce))
    r = res.to_host()
    lost, passed = int((r == 1).sum()), int((r == 2).sum())
    if lost + passed != ctas:
        raise RuntimeError(f"init race: {ctas - lost - passed} of {ctas} CTAs wrote no result")
    by_delay = [int((r[d::64] == 1).sum()) for d in range(min(64, ctas))]
    words = "ok" if not lost else (f"lost: {lost} of {ctas} CTAs timed out on phase 0 (the one "
                                   f"arrival never completed it: it was not ordered after the init)")
    return {"init": init, "step_cycles": step_cycles, "ctas": ctas, "lost": lost,
            "lost_by_delay": by_delay, "words": words}


def ring_repeats(bug: int, tiles: int, reps: int) -> dict:
    """The ring variant ``bug`` (:func:`variants.run_variant`) ``reps`` times: {bug, tiles, runs,
    outcomes: {words: count}}."""
    outcomes: dict = {}
    for _ in range(reps):
        w = variants.run_variant(bug, tiles=tiles).words
        outcomes[w] = outcomes.get(w, 0) + 1
    return {"bug": bug, "tiles": tiles, "runs": reps, "outcomes": outcomes}


def _child(expr: str, timeout_s: int = CHILD_TIMEOUT_S):
    """Evaluate ``expr`` (with ``latent`` imported) in a child process, so that a sticky CUDA error
    cannot take the next runs' context; returns its JSON value, or {"words": "crash: ..."} /
    {"words": "timeout: ..."}."""
    code = (f"import json; from asynctc.pitfalls import latent; "
            f"print({_MARK!r} + json.dumps({expr}))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout_s, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"words": f"timeout: the child passed {timeout_s} s"}
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith(_MARK)), None)
    if line is None:
        err = [ln.strip() for ln in (p.stderr or "").splitlines() if ln.strip()]
        return {"words": f"crash: {err[-1][:300] if err else f'exit status {p.returncode}'}"}
    return json.loads(line[len(_MARK):])


def _store_expr(bug, fixed, rows, iters, reps):
    return f"[latent.run_store_stress({bug}, {fixed}, {rows}, {iters}) for _ in range({reps})]"


def stress_sanitizer_code(bug: int) -> str:
    """Python that runs the broken store stress of ``bug`` once, small (2 CTAs, 4 iterations of
    64 rows), and prints ``outcome: <words>`` — what compute-sanitizer runs."""
    store_defines(bug, False, 64)
    return ("from asynctc.pitfalls import latent; "
            f"print('outcome:', latent.run_store_stress({int(bug)}, False, 64, 4, ctas=2)['words'])")


def precompile_jobs() -> list[tuple]:
    """Every build :func:`measure_latent` launches, as :func:`asynctc.core.runtime.precompile`
    jobs (deduplicated: the fixed store build is one for BUG 6 and 8)."""
    jobs = {(variants.SOURCE, variants.ENTRY, (("BUG", b),)) for b in SANITIZED_LATENT}
    jobs |= {(variants.SOURCE, STORE_ENTRY, tuple(sorted(store_defines(b, f, r).items())))
             for b in STORE_BUGS for f in (True, False) for r, _ in STORE_SIZES}
    jobs |= {(variants.SOURCE, INIT_ENTRY, (("INIT", i),)) for i in INIT_MODES}
    return [(src, name, dict(d)) for src, name, d in sorted(jobs)]


def measure_latent(sanitize=None, progress=print, store_reps: int = STORE_REPS,
                   ring_reps: int = RING_REPS) -> dict:
    """The three latent bugs, many times each: the ring variants (:data:`RING_TILES` ×
    ``ring_reps``), the store stress for 6 and 8 broken and fixed (:data:`STORE_SIZES` ×
    ``store_reps``), the init race in every mode (mode 2 at each of :data:`INIT_STEPS`), and
    with ``sanitize`` (:func:`asynctc.pitfalls.suite.sanitize`) compute-sanitizer
    (:data:`LATENT_SANITIZERS`) on the ring's 5, 6, 8. A fixed build that is not
    "ok" raises RuntimeError (the stress kernel itself would be wrong); a crash of a broken one is
    recorded as its outcome. Returns {"ring", "store", "init", "sanitizer", "verdicts"}."""
    say = progress or (lambda s: None)
    runtime.precompile(precompile_jobs())              # the children then read the cubin cache
    out: dict = {"ring": [], "store": [], "init": [], "sanitizer": []}
    for bug in SANITIZED_LATENT:
        for tiles in RING_TILES:
            r = _child(f"latent.ring_repeats({bug}, {tiles}, {ring_reps})")
            r = r if "outcomes" in r else {"bug": bug, "tiles": tiles, "runs": ring_reps,
                                           "outcomes": {r["words"]: 1}}
            say(f"ring BUG={bug} tiles={tiles}: {r['outcomes']}")
            out["ring"].append(r)
    for bug in STORE_BUGS:
        for rows, iters in STORE_SIZES:
            for fixed in (True, False):
                rs = _child(_store_expr(bug, fixed, rows, iters, store_reps))
                if isinstance(rs, dict):                  # the child crashed or timed out
                    rs = [{"bug": bug, "fixed": fixed, "rows": rows, "iters": iters, **rs,
                           "check": None}]
                for r in rs:
                    say(f"store BUG={bug} {'fixed' if fixed else 'broken'} rows={rows} "
                        f"iters={iters}: {r['words']}")
                    if fixed and r["words"] != "ok":
                        raise RuntimeError(f"the fixed store stress (BUG {bug}, rows {rows}) did "
                                           f"not end ok: {r['words']}")
                out["store"].append({"bug": bug, "fixed": fixed, "rows": rows, "iters": iters,
                                     "runs": rs})
    for init, steps in ((0, (0,)), (1, (0,)), (2, INIT_STEPS)):
        for step in steps:
            r = _child(f"[latent.run_init_race({init}, {step}) for _ in range(4)]")
            rs = r if isinstance(r, list) else [{"init": init, "step_cycles": step, **r, "lost": None}]
            for x in rs:
                say(f"init race INIT={init} step={step}: {x['words']}")
                if init == 0 and x["words"] != "ok":
                    raise RuntimeError(f"the correct init (INIT=0) did not end ok: {x['words']}")
            out["init"].append({"init": init, "step_cycles": step, "runs": rs})
    if sanitize is not None:
        for bug in SANITIZED_LATENT:
            for tool in LATENT_SANITIZERS:
                r = sanitize(bug, tool, timeout_s=120)
                say(f"sanitizer BUG={bug} {tool:9s} {r['summary'] or r['rc']}")
                out["sanitizer"].append(r)
        for bug in STORE_BUGS:                 # the stress kernel's tightest window, small
            r = sanitize(bug, "racecheck", timeout_s=120, code=stress_sanitizer_code(bug))
            r["kernel"] = STORE_ENTRY
            say(f"sanitizer BUG={bug} racecheck ({STORE_ENTRY}) {r['summary'] or r['rc']}")
            out["sanitizer"].append(r)
    out["verdicts"] = verdicts(out)
    return out


def verdicts(latent: dict) -> dict:
    """Per latent bug ("5", "6", "8"), in words from the runs: "manifest in k of N runs: <the first
    symptom seen>" or "latent on this GPU in N runs" (every broken run ended ok); and the init
    race's two broken orderings on their own: "5_fence_only" (flag hand-off, INIT=1) and
    "5_no_order" (INIT=2)."""
    out = {}
    for bug in SANITIZED_LATENT:
        runs: list[str] = []
        for r in latent.get("ring", []):
            if r["bug"] == bug:
                runs += [w for w, n in r["outcomes"].items() for _ in range(n)]
        for s in latent.get("store", []):
            if s["bug"] == bug and not s["fixed"]:
                runs += [x["words"] for x in s["runs"]]
        if bug == 5:
            for s in latent.get("init", []):
                if s["init"] != 0:
                    runs += [x["words"] for x in s["runs"]]
        out[str(bug)] = _verdict(runs)
    for init, key in ((1, "5_fence_only"), (2, "5_no_order")):   # the init race's two orderings
        runs = [x["words"] for s in latent.get("init", []) if s["init"] == init for x in s["runs"]]
        if runs:
            out[key] = _verdict(runs)
    return out


def _verdict(runs: list[str]) -> str:
    bad = [w for w in runs if w != "ok"]
    return (f"manifest in {len(bad)} of {len(runs)} runs: {bad[0]}" if bad
            else f"latent on this GPU in {len(runs)} runs (every one ended ok)")


def merge(results: dict, latent: dict, provenance: dict | None = None) -> dict:
    """The pitfalls record's ``results`` with ``latent`` (and the run's provenance) set; the rest
    of the record is kept as it was."""
    return {**results, "latent": {**latent, **({"provenance": provenance} if provenance else {})}}


def summarize_latent(latent: dict) -> str:
    lines = ["latent variants under stress:"]
    for bug, v in latent["verdicts"].items():
        name = variants.BUGS[int(bug)][0] if bug.isdigit() else f"init race {bug[2:]}"
        lines.append(f"  BUG={bug[0]:>2} {name:20s} {v}")
    for s in latent.get("sanitizer", []):
        where = f" ({s['kernel']})" if s.get("kernel") else ""
        lines.append(f"  sanitizer BUG={s['bug']} {s['tool']:9s}{where} {s['summary'] or s['rc']}")
    return "\n".join(lines)


def recorded_verdict(bug, rec=None) -> str:
    """The recorded stress verdict of latent bug ``bug`` (5, 6 or 8, or a key of the init race's
    orderings: "5_fence_only", "5_no_order") from the pitfalls record's
    ``latent`` results, with the record's label; else a sentence saying it has not been run under
    stress yet (``tools/gpu_ch08.py --latent-only --record``)."""
    from ..core import records
    if bug not in SANITIZED_LATENT and bug not in ("5_fence_only", "5_no_order"):
        raise ValueError(f"bug={bug!r}: the latent variants are {SANITIZED_LATENT} (and the init "
                         "race's orderings '5_fence_only', '5_no_order')")
    if rec is None:
        rec = records.load_or_none("pitfalls")
    lat = (rec.results.get("latent") or {}) if rec is not None else {}
    v = lat.get("verdicts", {}).get(str(bug))
    if v is None:
        return "not run under stress yet (tools/gpu_ch08.py --latent-only --record)"
    date = str(lat.get("provenance", {}).get("date", "?"))[:10]
    return f"{v}  [{rec.provenance.get('gpu', '?')}, {date}]"
