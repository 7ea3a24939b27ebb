"""Chapter 07, the "fp8_fit" record suite (``SUITES["fp8_fit"]``, ``tools/gpu_ch07.py --fit``):
two short experiments the "fp8" suite does not run, each with its prediction frozen before any
GPU run of it.

1. :func:`identification_experiment` — which fraction-bit count f (and which alignment group)
   the Tensor Core's FP8 accumulation keeps, on inputs that identify it in every configuration
   (:func:`asynctc.models.fp8.probe_operands`, :func:`asynctc.models.fp8.group_operands`):
   the swamping input of the "fp8" suite cannot (its small products vanish for every f ≤ 13
   without promotion); prediction :data:`asynctc.models.fp8.FIT_PREDICTION`.
2. :func:`promotion_cost` — why our promotion costs 16–20 % (:data:`PROMOTION_PREDICTION`): the
   promoting kernel, every k-tile, against the same kernel without promotion, with one consumer
   warpgroup (64×128 tile) and two (128×128: the same 64×128 per warpgroup), timed in one run,
   each output checked on sampled rows; and the static SASS of each build (FADD, FFMA,
   WARPGROUP.DEPBAR per k-tile loop).

Medians, never asserted on; no plots here."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..core import runtime
from ..models.fp8 import (EXPERIMENT_PROMOTE, FIT_K, FIT_PREDICTION, GROUP_K, fit_frac_bits,
                          fit_group, group_operands, identified_bits, probe_operands)
from .config import _fp32_out_config, fp8_config
from .launch import timing_problem

#: Elements fitted per run (rows × columns of C): the model holds rows · cols · K products.
ID_ROWS, ID_COLS = 4, 8
#: The square size the promotion-cost test times.
COST_SIZE = 4096

#: Written down on 2026-12-01, BEFORE any GPU run of :func:`promotion_cost`.
PROMOTION_PREDICTION = """\
Hypothesis (2026-12-01, before any GPU run of this test): our promotion is serialised with the
wgmma of the warpgroup that promotes. With PROMOTE = 1 the consumer issues k-tile k's wgmmas,
then wgmma.wait_group(0) waits for k-tile k itself (not k - 1) and only then runs its 64 FADD and
the zeroing of 64 accumulators before it may issue k-tile k + 1: every k-tile that warpgroup's
wgmma pipe drains, and only another consumer warpgroup can keep the Tensor Core busy meanwhile.
CUTLASS's FP8 accumulation waits the same way (warpgroup_wait<0> before its FADDs, every
mma_promotion_interval = 4 MMAs by default), so the drain is not ours alone: what the test asks is
whether a second consumer warpgroup covers it.
Predictions (4096^3, e4m3, C bf16, per-tensor scales; each warpgroup computes 64x128 per k-tile in
both builds; all four without clusters):
1. SASS: the promoting builds hold 64 FADD per k-tile loop (one per accumulator register of the
   thread) and one WARPGROUP.DEPBAR more than the unpromoted builds; no FFMA added.
2. Throughput kept by promotion every k-tile (promote 1 / promote 0): lower with one consumer
   warpgroup (64x128/c1) than with two (128x128/c2) - by at least 5 points. If instead the two
   keep the same fraction (within 3 points), the cost is not the drain but the FADDs' issue
   slots or register pressure, and the hypothesis is wrong.
3. With two consumers the fraction kept is 0.78-0.86 (the "fp8" record's 128x128 rows, with
   clusters of 2, kept 0.80-0.84; here every build runs without clusters).
"""

#: Promotion intervals (k-tiles) and sizes of :func:`promotion_intervals`; 0 = fast accumulation.
INTERVALS = (0, 1, 2, 4)
INTERVAL_SIZES = (4096, 8192)

#: Written down on 2026-12-02, BEFORE any GPU run of :func:`promotion_intervals`.
INTERVAL_PREDICTION = """\
Hypothesis (2026-12-02, before any GPU run of this test; the open thread of 2026-12-01): the
promotion's FADDs and its extra WARPGROUP.DEPBAR (wait_group 0 before the FADDs) serialise the
k-loop for every warpgroup, so the cost is paid once per promotion, not once per k-tile.
Test: PROMOTE = 0 (fast accumulation), 1, 2, 4 at one tile (128x128, two consumers, 6 stages, no
cluster; e4m3, C bf16, per-tensor scales), 4096^3 and 8192^3, in one run.
Predictions:
1. If the cost is per promotion, the loss scales with 1/P: kept (P / P=0) about 0.69 at P = 1
   (the fp8_fit record), 0.83 at P = 2, 0.91 at P = 4 (each within 0.04).
2. If instead P = 2 and P = 4 keep no more than P = 1 + 0.05, the cost is per k-tile (the second
   accumulator set's register pressure or issue slots), not the drain: the hypothesis is wrong.
3. 8192^3 keeps the same fractions as 4096^3 within 0.03 at every P.
"""

def _interval_config(p: int):
    """The fixed tile of :func:`promotion_intervals` with promotion every ``p`` k-tiles."""
    return fp8_config(bn=128, stages=6, promote=p, cluster=1)


def _configs() -> dict:
    """The four builds of :func:`promotion_cost`: (consumers, promote) → WSConfig."""
    base = {p: fp8_config(bn=128, stages=6, promote=p, cluster=1) for p in (0, 1)}
    out = {}
    for p, c in base.items():
        out[(2, p)] = c
        out[(1, p)] = c.replace(bm=64, consumers=1, setmaxnreg=False)
    return out


def fit_configs() -> list:
    """Every build the suite compiles: the fp32-output builds of the experiment (promotion 0, 1, 4)
    and the four of the promotion-cost test."""
    return [_fp32_out_config(p) for p in EXPERIMENT_PROMOTE] + list(_configs().values())


def identification_experiment(rng, say, ks=FIT_K, group_ks=GROUP_K,
                              promotes=EXPERIMENT_PROMOTE) -> dict:
    """On the GPU: the probe input at each K of ``ks`` and the group input at each K of
    ``group_ks`` (M = 128, N = 256, C in fp32, no scales), promotion 0, 1 and 4; per run the model
    fitted to :data:`ID_ROWS` × :data:`ID_COLS` measured elements — f over 8 … 23 with groups of 32
    (:func:`fit_frac_bits`), and for the group input also (group, f) over 4/8/16/32 × 12/13/14
    (:func:`fit_group`). Every row records every f (pair) at the smallest mismatch, never one
    picked from a tie. Returns ``{"rows", "prediction", "m", "n", "identified"}``."""
    m, n = 128, 256
    rows = []
    for name, make, kk in (("probe", probe_operands, ks), ("group", group_operands, group_ks)):
        for k in kk:
            qa, qb = make(m, n, k, rng)
            for p in promotes:
                g = W.run_ws(qa, qb, _fp32_out_config(p))
                c = g.out.to_host()[:ID_ROWS, :ID_COLS]
                fit = fit_frac_bits(c, qa[:ID_ROWS], qb[:ID_COLS], promote=p)
                row = {"input": name, "k": k, "promote": p, "fit_set": fit["fits"],
                       "fit_unique": fit["unique"], "fit_exact": fit["exact"],
                       "fit_residual": fit["residual"], "fit_by_bits": fit["by_bits"]}
                if name == "group":
                    fg = fit_group(c, qa[:ID_ROWS], qb[:ID_COLS], promote=p)
                    row.update(group_fits=[list(x) for x in fg["fits"]], group_unique=fg["unique"],
                               group_exact=fg["exact"], group_residual=fg["residual"],
                               group_by=fg["by_group"])
                rows.append(row)
                say(f"{name} K={k} promote={p}: f ∈ {fit['fits']} ({'exact' if fit['exact'] else 'residual %.1e' % fit['residual']})"
                    + (f"; (group, f) ∈ {row['group_fits']}" if name == "group" else ""))
                del g
    ident = identified_bits(rows)
    return {"rows": rows, "prediction": FIT_PREDICTION, "m": m, "n": n,
            "identified": ident["consistent"], "inexact_runs": len(ident["inexact_rows"])}


def sass_counts(cfg) -> dict:
    """Static SASS of one build: FADD, FFMA, WARPGROUP.DEPBAR and QGMMA counts (the promoting
    builds' k-tile loop is the only place FADD occurs before the epilogue's scale multiply)."""
    from ..core import sass
    text = sass.disassemble(W.compile_ws(cfg).cubin)
    counts = sass.opcode_counts(text)

    def total(prefix):
        return sum(v for k, v in counts.items() if k.split(".")[0] == prefix or k.startswith(prefix))
    return {"FADD": total("FADD"), "FFMA": total("FFMA"),
            "WARPGROUP.DEPBAR": total("WARPGROUP.DEPBAR"), "QGMMA": total("QGMMA")}


def promotion_cost(rng, say, size: int = COST_SIZE, reps: int = 10, frac_bits: int = 13) -> dict:
    """Time the four builds of :data:`PROMOTION_PREDICTION` (consumers 1 and 2 × promote 0 and 1)
    on one pair of fresh e4m3 operands (per-tensor scales, C bf16) in the same run, each timed
    output checked on one random row per 128 (a wrong one raises); plus each build's static SASS
    counts. Returns ``{"rows", "kept": {consumers: promote1 / promote0}, "prediction"}``."""
    from ..core import bench
    from .suite import _time_ours
    flop = bench.gemm_flop(size, size, size)
    qa, qb, sa, sb, da, db, dsc, rows_idx, dc = timing_problem(size, rng)
    rows = []
    for (cons, p), cfg in _configs().items():
        t, chk, grid = _time_ours(cfg, da, db, dc, dsc, qa, qb, sa, sb, rows_idx, frac_bits, reps,
                                  f"{size}³ promotion cost")
        rows.append({"consumers": cons, "promote": p, "label": cfg.label(), "tile": cfg.tile_name,
                     **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                     "check_rows": chk.as_dict(), "grid": grid, "sass": sass_counts(cfg)})
        say(f"{size}³ {cfg.tile_name} promote {p}: {rows[-1]['tflops']:.0f} TFLOP/s, SASS "
            f"{rows[-1]['sass']}")
    del da, db, dc, dsc
    tf = {(r["consumers"], r["promote"]): r["tflops"] for r in rows}
    kept = {c: tf[(c, 1)] / tf[(c, 0)] for c in (1, 2)}
    return {"rows": rows, "kept": kept, "size": size, "prediction": PROMOTION_PREDICTION}


def promotion_intervals(rng, say, sizes=INTERVAL_SIZES, intervals=INTERVALS, reps: int = 10,
                        frac_bits: int = 13) -> dict:
    """Time :data:`INTERVAL_PREDICTION`'s builds (promotion every P k-tiles of ``intervals`` at one
    tile, :func:`_interval_config`) on fresh e4m3 operands per size (per-tensor scales, C bf16),
    in the same run, each timed output checked on one random row per 128 (a wrong one raises); plus
    each build's static SASS counts. Returns ``{"rows", "kept": {size: {P: P / fast}},
    "prediction"}`` (fast = P 0, the first of ``intervals``)."""
    from ..core import bench
    from .suite import _time_ours
    cfgs = {p: _interval_config(p) for p in intervals}
    runtime.precompile(list({repr(W.compile_job(c)): W.compile_job(c)
                             for c in cfgs.values()}.values()))
    counts = {p: sass_counts(c) for p, c in cfgs.items()}
    rows = []
    for size in sizes:
        flop = bench.gemm_flop(size, size, size)
        qa, qb, sa, sb, da, db, dsc, rows_idx, dc = timing_problem(size, rng)
        for p, cfg in cfgs.items():
            t, chk, grid = _time_ours(cfg, da, db, dc, dsc, qa, qb, sa, sb, rows_idx, frac_bits,
                                      reps, f"{size}³ promotion interval {p}")
            rows.append({"size": size, "promote": p, "label": cfg.label(), "tile": cfg.tile_name,
                         **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                         "check_rows": chk.as_dict(), "grid": grid, "sass": counts[p]})
            say(f"{size}³ {cfg.tile_name} promote {p}: {rows[-1]['tflops']:.0f} TFLOP/s")
        del da, db, dc, dsc
    tf = {(r["size"], r["promote"]): r["tflops"] for r in rows}
    kept = {s: {p: tf[(s, p)] / tf[(s, intervals[0])] for p in intervals} for s in sizes}
    return {"rows": rows, "kept": kept, "prediction": INTERVAL_PREDICTION}


def interval_table(results: dict) -> str:
    """The promotion-interval rows: size, P, TFLOP/s, kept (of fast accumulation), SASS counts."""
    pi = results.get("promotion_intervals")
    if not pi:
        return "no promotion-interval test in this record"
    lines = [f"{'size':>5s} {'P':>2s} {'TFLOP/s':>7s} {'kept':>5s}  SASS"]
    for r in pi["rows"]:
        k = pi["kept"].get(r["size"], pi["kept"].get(str(r["size"]), {}))
        v = k.get(r["promote"], k.get(str(r["promote"])))
        lines.append(f"{r['size']:5d} {r['promote']:2d} {r['tflops']:7.0f} {v:5.2f}  {r['sass']}")
    return "\n".join(lines)


def measure_fp8_fit(progress=None, experiment: bool = True, cost: bool = True,
                    intervals: bool = False) -> dict:
    """The "fp8_fit" suite: compile :func:`fit_configs` in parallel, then
    :func:`identification_experiment` and :func:`promotion_cost` (and with ``intervals``
    :func:`promotion_intervals`, ``tools/gpu_ch07.py --intervals``). About a minute on an H200
    (the intervals about one more)."""
    from ..core import records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    cfgs = fit_configs()
    jobs = list({repr(W.compile_job(c)): W.compile_job(c) for c in cfgs}.values())
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    out: dict = {}
    if experiment:
        out["identification"] = identification_experiment(rng, say)
    if cost:
        out["promotion_cost"] = promotion_cost(rng, say)
    if intervals:
        out["promotion_intervals"] = promotion_intervals(rng, say)
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def _set(fs) -> str:
    return "{" + ",".join(map(str, fs)) + "}"


def identification_table(results: dict) -> str:
    """Per run: input, K, promotion, every f at the smallest mismatch (exact or its residual), and
    for the group input every (group, f)."""
    exp = results.get("identification")
    if not exp:
        return "no identification experiment in this record"
    lines = [f"{'input':6s} {'K':>6s} {'P':>2s}  {'f (groups of 32)':24s} group/f"]
    for r in exp["rows"]:
        f = _set(r["fit_set"]) + ("" if r["fit_exact"] else f" ~{r['fit_residual']:.0e}")
        g = ""
        if r["input"] == "group":
            g = _set(f"{a}/{b}" for a, b in r["group_fits"]) + \
                ("" if r["group_exact"] else f" ~{r['group_residual']:.0e}")
        lines.append(f"{r['input']:6s} {r['k']:6d} {r['promote']:2d}  {f:24s} {g}")
    lines.append(f"f consistent with every bit-exact run: {exp['identified']}; runs matched by no f "
                 f"bit for bit: {exp['inexact_runs']}")
    return "\n".join(lines)


def promotion_table(results: dict) -> str:
    """The promotion-cost rows: tile, promote, TFLOP/s, SASS counts; and the fraction kept."""
    pc = results.get("promotion_cost")
    if not pc:
        return "no promotion-cost test in this record"
    lines = [f"{'tile':18s} {'P':>2s} {'TFLOP/s':>7s}  SASS"]
    for r in pc["rows"]:
        lines.append(f"{r['tile']:18s} {r['promote']:2d} {r['tflops']:7.0f}  {r['sass']}")
    for c, v in sorted(pc["kept"].items(), key=lambda x: int(x[0])):
        lines.append(f"{c} consumer warpgroup(s): promotion every k-tile keeps {v:.2f}")
    return "\n".join(lines)


def summarize_fp8_fit(rec) -> str:
    r = rec.results
    parts = [rec.label() if hasattr(rec, "label") else "fp8_fit", identification_table(r),
             promotion_table(r)]
    return "\n".join(parts + ([interval_table(r)] if r.get("promotion_intervals") else []))


SUITES = {"fp8_fit": (measure_fp8_fit, summarize_fp8_fit, "sm_90a")}
