"""Record suite ``capstone_speed``: chapter 06's capstone in real CUDA (``kernels/capstone_cuda.cu``,
the loops of exercise ``ch06.cuda_kloop``), checked and then timed beside the ladder and cuBLAS.

First check C on the course's answer (:func:`.cuda_kloop.run` on every shape of
:data:`.capstone_build.SHAPES`: fresh fp16 inputs, C poisoned, every element against float64), so a
replayed notebook can say the record ran this kernel. Then, at 4096³ fp16 in one run (alternating
order, the SM clock measured in flight, each timed output checked on sampled rows against float64):

==========================  =====================================================================
kernel                      what it is
==========================  =====================================================================
``yours, 2 stages``         the capstone's loops (the course's answer, or the learner's text in
                            :func:`time_text`) on a persistent grid of one CTA per SM, fp32 C
``yours, 4 stages``         the same loops with a 4-stage ring
``yours, rung 3's tile``    the same loops built at rung 3's tile (:data:`.capstone_build.WIDE`:
                            128×256, 4 stages, fp16 C), checked first on :data:`WIDE_SHAPES`
``ladder at your shape``    the ladder's kernel built like the capstone: 128×128, two consumers,
                            setmaxnreg 40 / 232, persistent, 2 stages, fp32 C
``rung 1``, ``rung 3``      chapter 06's rungs 1 and 3 as the ladder runs them (128×256, fp16 C)
``cuBLAS``                  torch (else cupy), fp16 C
==========================  =====================================================================

The capstone writes fp32 C (64 MiB at 4096²) where the rungs and cuBLAS write fp16 (32 MiB);
"ladder at your shape" writes fp32 too, so it is the like-for-like row; "yours, rung 3's tile" is
rung 3's like-for-like row (it differs in the loops — ``wgmma_wait_group<0>`` where rung 3 keeps one
group in flight — and in its persistent grid). Never plots.
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from ..core import checks, records, runtime
from ..core.memory import DeviceArray
from . import capstone_build as cb
from . import cuda_kloop as K
from .ladder import RUNGS, _ws
from .launch import make_gemm

SUITE = "capstone_speed"
SIZE, DTYPE = 4096, "float16"
#: The rows in the order they are timed (:func:`speed_table` keeps it), then cuBLAS.
KERNELS = ("yours, 2 stages", "yours, 4 stages", "yours, rung 3's tile", "ladder at your shape", "rung 1",
           "rung 3")
#: The row of the loops built at rung 3's tile.
WIDE_ROW = KERNELS[2]
#: (M, N, K, stages, CTAs) of the wide build's check C: T = 5 and 7 k-tiles on 4 stages, 3 and 4
#: tiles per CTA, so a ring that restarts at each tile goes wrong.
WIDE_SHAPES = ((512, 768, 320, 4, 4), (1024, 1024, 448, 4, 8))


def ladder_configs(dtype: str = DTYPE) -> dict:
    """{row name: config} for the ladder's rows of :data:`KERNELS`."""
    return {"ladder at your shape": _ws(dtype).replace(consumers=2, setmaxnreg=True, persistent=True,
                                                       stages=2, out_dtype="float32"),
            "rung 1": RUNGS[0].make(dtype), "rung 3": RUNGS[2].make(dtype)}


def measure_speed(progress=None, text: str | None = None, rounds: int = 3, reps: int = 10,
                  size: int = SIZE, check_shapes: bool = True) -> dict:
    """Check C on ``text`` (default the course's answer) when ``check_shapes``, then every row of
    :data:`KERNELS` and cuBLAS at ``size``³, ``rounds`` rounds (order reversed every other round).
    Raises :class:`RuntimeError` when a timed output is wrong or a capstone wait gave up."""
    from ..core import bench
    say = progress or (lambda _s: None)
    answer = K.solution()
    text = answer if text is None else text
    if size % cb.WIDE["bn"]:
        raise ValueError(f"size {size}: a multiple of {cb.WIDE['bn']}, the widest tile timed")
    rng = np.random.default_rng()
    out: dict = {"rows": [], "size": size, "dtype": DTYPE, "baseline_library": bench.baseline_library(),
                 "kernels": list(KERNELS), "checks": [], "is_course_answer": text == answer}
    wide_text = text
    try:
        wide_built = K.build(text, **cb.WIDE)
    except cb.LoopsCompileError:      # e.g. wgmma_mma_async_ss<128, …> written for BN
        wide_text, wide_built = answer, K.build(answer, **cb.WIDE)
    out["wide_is_course_answer"] = wide_text == answer
    wide = {k: v for k, v in cb.WIDE.items() if k != "stages"}
    if check_shapes:
        runs = [(text, shape, {}) for shape in cb.SHAPES] + [(wide_text, shape, wide) for shape in WIDE_SHAPES]
        for t, shape, kw in runs:
            r = K.run(t, *shape, rng=rng, **kw)
            out["checks"].append(dict(r.as_dict(), bn=kw.get("bn", cb.BN), out_dtype=kw.get("out_dtype", "float32")))
            say(("passed " if r.passed else "FAILED ") + r.says())
            if not r.passed:
                raise RuntimeError(f"check C failed: {r.says()}")
    a, b, da, db, dbt = P.device_problem(size, DTYPE, rng)
    sampled = {dt: checks.timed_output_reference(a, b, dt, rng) for dt in ("float16", "float32")}
    outs = {dt: DeviceArray.poisoned((size, size), checks.np_dtype(dt)) for dt in ("float16", "float32")}
    tiles = (size // cb.BM) * (size // cb.BN)
    ctas = min(runtime.device_info().sm_count, tiles)
    fns, errs, out_of = {}, {}, {}
    for stages in (2, 4):
        name = f"yours, {stages} stages"
        fns[name], errs[name] = cb.launcher(K.build(text, stages).kernel, da, dbt, outs["float32"],
                                                  stages, ctas)
        out_of[name] = "float32"
    wide_ctas = min(runtime.device_info().sm_count, (size // cb.BM) * (size // cb.WIDE["bn"]))
    fns[WIDE_ROW], errs[WIDE_ROW] = cb.launcher(wide_built.kernel, da, dbt,
                                                outs[cb.WIDE["out_dtype"]], cb.WIDE["stages"], wide_ctas,
                                                cb.WIDE["bn"])
    out_of[WIDE_ROW] = cb.WIDE["out_dtype"]
    gemms = {}
    for name, cfg in ladder_configs().items():
        out_of[name] = cfg.out_dtype
        gemms[name] = make_gemm(cfg, da, dbt, outs[cfg.out_dtype])
        fns[name] = gemms[name].launcher()
    if out["baseline_library"]:
        fns["cuBLAS"], out_of["cuBLAS"] = bench.cublas_gemm(da, db, outs["float16"]), "float16"
    out["ctas"], out["out_dtype"] = ctas, out_of
    flop = bench.gemm_flop(size, size, size)
    order = list(fns)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            dc = outs[out_of[name]]
            dc.poison()
            t = bench.time_gpu(fns[name], warmup=3, reps=reps, clock=True)
            word = int(errs[name].to_host()[0]) if name in errs else 0
            if word:
                raise RuntimeError(f"{name}: {cb.decode_error(word)}")
            if name in gemms and hasattr(gemms[name], "check_error"):
                gemms[name].check_error()
            row = {"kernel": name, "size": size, "dtype": DTYPE, "round": r, "out_dtype": out_of[name],
                   **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms)}
            row["rel_err_rows"] = checks.check_sampled_rows(dc, a, b, out_of[name], name,
                                                            sampled=sampled[out_of[name]]).as_dict()
            out["rows"].append(row)
            say(f"{name:22s} round {r}: {row['tflops']:.0f} TFLOP/s at {t.sm_mhz:.0f} MHz")
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


#: The row 06 §1's table leaves out once the run has :data:`WIDE_ROW`: yours at rung 3's tile is
#: then the like-for-like comparison (this row's gap to yours is untraced; the record keeps it).
LADDER_ROW = "ladder at your shape"


def speed_table(results: dict, lesson: bool = False) -> list[dict]:
    """Per row (:data:`KERNELS` order, then cuBLAS): medians over rounds of TFLOP/s and the
    in-flight clock, and the medians of each round's ratio to that round's rung 1 and cuBLAS
    (None where that row is missing); ``lesson``: without :data:`LADDER_ROW` when the run has
    :data:`WIDE_ROW`."""
    from ..core.bench import round_ratio
    rows = results["rows"]
    names = [k for k in list(results["kernels"]) + ["cuBLAS"] if any(r["kernel"] == k for r in rows)]
    if lesson and WIDE_ROW in names:
        names.remove(LADDER_ROW)
    out = []
    for name in names:
        mine = [r for r in rows if r["kernel"] == name]
        out.append({"kernel": name, "out_dtype": mine[0]["out_dtype"],
                    "tflops": float(np.median([r["tflops"] for r in mine])),
                    "sm_mhz": float(np.median([r["sm_mhz"] for r in mine])),
                    "of_rung1": round_ratio(rows, name, "rung 1"),
                    "of_cublas": round_ratio(rows, name, "cuBLAS")})
    return out


def table_text(results: dict, lesson: bool = False, answer: bool = False) -> str:
    """:func:`speed_table` as aligned lines (``lesson``: the notebook's rows; else every row;
    ``answer``: the capstone's rows named "answer", for a record, which ran the course's answer)."""
    f = lambda x: f"{x:9.2f}" if x is not None else f"{'—':>9s}"   # noqa: E731
    lines = [f"{'kernel':22s} {'C':>7s} {'TFLOP/s':>8s} {'MHz':>6s} {'of rung 1':>9s} {'of cuBLAS':>9s}"]
    for r in speed_table(results, lesson):
        name = r["kernel"].replace("yours, ", "answer, ", 1) if answer else r["kernel"]
        lines.append(f"{name:22s} {r['out_dtype']:>7s} {r['tflops']:8.0f} {r['sm_mhz']:6.0f} "
                     f"{f(r['of_rung1'])} {f(r['of_cublas'])}")
    return "\n".join(lines)


#: How close (as a fraction) the ladder's kernel at your shape must run to yours for the verdict to
#: put the gap to rung 1 on the shape alone.
SAME_SHAPE_TOL = 0.05


def wide_line(results: dict, answer: bool = False) -> str | None:
    """The verdict's sentence on :data:`WIDE_ROW` (None when the run has no such row): the loops
    built at rung 3's tile against rung 3 (per-round ratio) and cuBLAS, and what that ratio says —
    within :data:`SAME_SHAPE_TOL` of rung 3, the gap at 128×128 is the shape, not the loops
    (``answer``: said of the course's answer, "its loops")."""
    from ..core.bench import round_ratio
    t = {r["kernel"]: r for r in speed_table(results)}
    if WIDE_ROW not in t or "rung 3" not in t:
        return None
    r = round_ratio(results["rows"], WIDE_ROW, "rung 3")
    w = t[WIDE_ROW]
    whose = ("the course's answer (yours names N = 128, not BN)"
             if results.get("wide_is_course_answer") and not results.get("is_course_answer", True)
             else "its loops" if answer else "your loops")
    blas = f", {w['of_cublas']:.2f} of cuBLAS" if w["of_cublas"] is not None else ""
    checks = [c for c in results.get("checks", ()) if c.get("bn") == cb.WIDE["bn"]]
    passed = f"; check C passed on {sum(c['passed'] for c in checks)} of {len(checks)} shapes" if checks else ""
    head = f"Built at rung 3's tile (128×256, 4 stages, fp16 C{passed}), {whose} run {r:.2f} of rung 3{blas}: "
    if abs(r - 1) <= SAME_SHAPE_TOL:
        return head + "the gap at 128×128 is the shape (tile, stages, fp32 C), not the loops."
    if r < 1:
        return head + ("rung 3 is faster at its own tile; it keeps one wgmma group in flight "
                       "(wgmma_wait_group<1>), yours none (not traced further here).")
    return head + "faster than rung 3 at its own tile (yours is persistent, rung 3 is not)."


def verdict(results: dict, tile_gain: float | None = None, answer: bool = False) -> str:
    """The **So** under :func:`table_text`, generated from the same table: yours against rung 1
    and cuBLAS, what 4 stages give, then your loops at rung 3's tile (:func:`wide_line`). A run
    without that row (before it was timed) says instead what the 128×256 tile alone gained
    (``tile_gain``, default from the ``ws_rung3_steps`` record) and whether the ladder's kernel at
    your shape runs within :data:`SAME_SHAPE_TOL` of yours. ``answer``: said of the course's answer
    (a record's run), "the answer runs", not "your kernel runs"."""
    t = {r["kernel"]: r for r in speed_table(results)}
    y2, y4, lad = t["yours, 2 stages"], t["yours, 4 stages"], t["ladder at your shape"]
    blas = f" and {y2['of_cublas']:.2f} of cuBLAS" if y2["of_cublas"] is not None else ""
    out = (f"So: with 2 stages {'the answer' if answer else 'your kernel'} runs {y2['of_rung1']:.2f} of rung 1{blas}; "
           f"a 4-stage ring gives {y4['tflops'] / y2['tflops']:.2f}× that. ")
    wide = wide_line(results, answer)
    if wide is not None:             # the like-for-like row: the ladder's at your shape is left out
        return out + wide
    steps = records.load_or_none("ws_rung3_steps") if tile_gain is None and wide is None else None
    if steps is not None:
        from .steps_suite import step_table
        tile_gain = next(x["gain"] for x in step_table(steps.results) if x["step"] == "128x256")
    if tile_gain is not None:
        out += (f"Rung 1 also has the 128×256 tile: that tile alone gained {tile_gain:+.0%} over 128×128 "
                "(06c §3). ")
    r = lad["tflops"] / y2["tflops"]
    if abs(r - 1) <= SAME_SHAPE_TOL:
        return out + (f"The ladder's kernel built at your shape runs within {abs(r - 1):.0%} of yours: "
                      "the gap to rung 1 is the shape (128×128 tile, 2 stages, fp32 C), not your loops.")
    if r > 1:
        return out + (f"The ladder's kernel built at your shape runs {r:.2f}× yours: part of the gap to "
                      "rung 1 is in the loops, not only in the shape.")
    return out + (f"Yours runs {1 / r:.2f}× the ladder's kernel built at your shape; the two differ in more "
                  "than the loops (epilogue, tile order, bounded waits), and this course has not traced the gap.")


def summarize_speed(rec: records.Record) -> str:
    checked = sum(1 for c in rec.results.get("checks", ()) if c["passed"])
    return "\n".join([rec.label(), f"check C: {checked} of {len(rec.results.get('checks', ()))} shapes passed",
                      table_text(rec.results), verdict(rec.results)])


SUITES = {SUITE: (measure_speed, summarize_speed, "sm_90a")}


#: The ``ws_rung3_steps`` build nearest the capstone: 128×128, two consumers, setmaxnreg 40 / 232.
NEAREST_STEP = "setmaxnreg at 128"


def nearest_line(rec=None) -> str | None:
    """Without a ``capstone_speed`` record: the speed of the nearest build a record timed
    (:data:`NEAREST_STEP` of ``ws_rung3_steps``, beside rung 3 and cuBLAS of the same run), with
    what differs from the capstone said; None without that record either."""
    from .steps_suite import step_table
    rec = rec if rec is not None else records.load_or_none("ws_rung3_steps")
    if rec is None:
        return None
    t = {r["step"]: r for r in step_table(rec.results)}
    near, r3 = t[NEAREST_STEP], t["setmaxnreg (rung 3)"]
    blas = f", {near['of_cublas']:.2f} of cuBLAS" if near["of_cublas"] is not None else ""
    return (f"The nearest build a record timed ({rec.label()}), the ladder's kernel at 128×128 with two "
            f"consumers and setmaxnreg 40 / 232 like yours, but 4 stages, not persistent, fp16 C: "
            f"{near['tflops']:.0f} TFLOP/s{blas}, {near['tflops'] / r3['tflops']:.2f} of rung 3 in that run. "
            "Yours (2 stages, a persistent grid, fp32 C): not measured yet.")


#: Printed under the table: what makes its rows comparable, and what does not.
TABLE_NOTE = ("One run, one GPU, rows in alternating order; MHz: the SM clock measured while each row ran. "
              "C: the 128×128 rows write fp32 C (64 MiB at 4096²), the others fp16 (32 MiB). Against a table "
              "from another run or GPU (the ladder below), compare ratios, not TFLOP/s.")


def speed_cell(text: str, passed: bool = True) -> None:
    """06 §1's cell after the capstone (held until ``ch06.cuda_kloop`` passes): on a live sm_90a GPU,
    the learner's loops (``text``; the course's answer unless ``passed``) timed in this run beside
    the ladder's rows and cuBLAS (:func:`measure_speed`, one round, no shape checks: check C ran in
    the exercise); elsewhere the record's run of the course's answer, with its provenance."""
    from ..core import exercises as _ex
    if not _ex.after("ch06.cuda_kloop", held="your kernel's speed"):
        return
    if runtime.runs_live("sm_90a"):
        mine = text if passed else K.solution()
        whose = "your loops" if passed else "the course's answer"
        print(f"Timed now, {SIZE}³ fp16, one round ({whose}):")
        res = measure_speed(text=mine, rounds=1, reps=5, check_shapes=False)
        print(table_text(res, lesson=True))
        print(TABLE_NOTE)
        print(verdict(res))
        return
    rec = records.load_or_none(SUITE)
    if rec is None:
        print("No Hopper GPU here, and no record of this kernel's speed yet "
              "(python tools/gpu_capstone_speed.py --record on one writes it).")
        line = nearest_line()
        if line:
            print(line)
        return
    print(f"No Hopper GPU here. The record ran the course's answer to this exercise ({rec.label()}):")
    print(table_text(rec.results, lesson=True, answer=True))
    print(TABLE_NOTE)
    print(verdict(rec.results, answer=True))
