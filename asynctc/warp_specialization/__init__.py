"""Chapter 06's kernel ladder: warp specialization past chapter 05 — compile, run, verify, measure.

``kernels/warp_specialization.cu`` computes ``C = A · B`` (A M×K, B K×N, fp16 or bf16; C M×N fp32,
or the input dtype) with chapter 05's ring of TMA-filled stages (same boxes, swizzle, descriptors:
:mod:`asynctc.pipeline`), but the warpgroups specialise: warpgroup 0 is the *producer* (one of its
threads issues every TMA load, the others leave), warpgroups 1..``consumers`` are *consumers*
(wgmma only). The protocol (full/empty mbarriers per stage, phase parity from a ring counter that
carries across tiles, release order, why it cannot deadlock) is written out at the top of the
kernel source (:func:`source`).

Each rung of the chapter's ladder is a compile-time switch of that one file, listed in
:data:`RUNGS` (9 rungs, each built from the one before) with what changes and the prediction
written before the run:

1. ``ch05`` — chapter 05's best configuration, run through :mod:`asynctc.pipeline` (the reference);
2. ``ws`` — one producer, one consumer warpgroup (128×128 tile: the consumer owns two m64 atoms);
3. ``ws_setmaxnreg`` — two consumers (128×256, 64 rows each), ``setmaxnreg`` 40 / 232,
   ``__launch_bounds__(384, 1)``;
4. ``tile`` — the fastest (tile, stages) of :data:`TILE_SWEEP` within the shared-memory budget;
5. ``persistent`` — grid = SMs, static group-M tile order, the producer runs ahead across tiles;
6. ``cluster`` — clusters of 2 CTAs along M, each multicasting half of the shared B tile;
7. ``tma_store`` — the epilogue through shared memory (stmatrix) and a TMA store;
8. ``raster`` — a wider group-M raster (:data:`RASTER_GROUP_M` = 16 tile rows per group);
9. ``pingpong`` — ping-pong consumers: each warpgroup a whole 128×128 tile, the k-loops ordered
   by an mbarrier pair so one's epilogue runs under the other's wgmmas (:data:`PINGPONG_TILE`).

``kernels/hopper_gemm.cu`` is rung 3 written out whole, without the switches: one file a learner
reads top to bottom (:mod:`.whole` its host side, :mod:`.whole_suite` its record ``whole_gemm``).

The verbs, as in every kernel family: :func:`compile_ws` (NVRTC → cubin for sm_90a, no GPU),
:func:`run_ws` (validate in Python, then launch), :func:`verify_ws` (fresh random inputs,
poisoned output, float64, elementwise bound — :func:`asynctc.pipeline.compare_elementwise`).
:class:`WSConfig` validates every knob (:class:`WarpSpecializationError` names field, value and
rule). ``SUITES["warp_specialization"]`` (``tools/gpu_ch06.py --record``) checks every rung, then
times the ladder beside cuBLAS; ``SUITES["ws_limit"]`` (``tools/gpu_ch06_limit.py``) times the top
rung's raster width beside cuBLAS, with Nsight Compute's counters. The public GEMM built on the
top rung, :func:`asynctc.matmul`, is :mod:`asynctc.gemm` (which imports this package; this package
never imports it).

Where things live (every name is re-exported here: ``from asynctc import warp_specialization as W;
W.<name>``):

* ``base.py`` — constants (dtypes, swizzles, stage range, register limits),
  :class:`WarpSpecializationError` and ``_fail`` (re-exported by ``config.py``);
* ``config.py`` — :class:`WSConfig` and its validation, and the rules that pick a configuration
  for a shape: :func:`shape_tile` (the tile), :func:`most_stages` (the stages);
* ``variants.py`` — the rules of the variants beyond the ladder's base (mixed FP8 operands, row
  boxes, split-K, stages loaded once, ping-pong), called by ``WSConfig.validate``;
* ``launch.py`` — :func:`source`, :func:`compile_ws`, register counts from the cubin, shape and
  operand checks, :class:`WSGemm`, :func:`make_gemm`, :func:`run_ws`, :func:`verify`,
  :func:`run_broken` / :data:`BREAKS`, the correctness matrix (:func:`correctness_configs`,
  :func:`check_all`);
* ``trace.py`` — the trace buffer decoded (:func:`decode_trace`), its metrics, a synthetic trace;
* ``ladder.py`` — :class:`Rung`, :data:`RUNGS` with their frozen predictions, :func:`rung_of`,
  :func:`parse_rungs`, :func:`config_label`, rung 4's tile sweep;
* ``suite.py`` — the ``warp_specialization`` record suite (:func:`measure_ladder`,
  :func:`measure_nonsquare`) and its tables and summary; never plots;
* ``limit.py`` — what limits the top rung as models (:func:`smem_traffic`,
  :func:`descriptor_rows_read`, :func:`wave_efficiency`, how each epilogue writes C:
  :func:`epilogue_stores`) and a ``ws_limit`` record read back
  (:func:`read_kernel_name`, :func:`limit_rows`);
* ``limit_suite.py`` — the ``ws_limit`` record suite (:func:`measure_limit`, its summary);
  never plots;
* ``figures.py`` — the notebook's helpers: the protocol read from the kernel source and drawn
  (:func:`plot_protocol`), register budgets, :func:`plot_ladder` (with each rung's change and
  prediction: :func:`predicted_tflops`), the ladder at a glance (:func:`ladder_summary`,
  :func:`prediction_check`, :func:`pingpong_note`), trace windows and tables,
  :func:`plot_raster`; never times;
* ``exercises.py`` — chapter 06's auto-checked exercises (registered on import);
* ``consumer_loop.py`` — deep dive 06e's code exercise ``ch06.consumer_loop``: the learner's consumer k-loop
  compiled into rung 3 (NVRTC), read (``asynctc/core/loop_reader.py``) and judged with chapter 05's ring model
  and the ordering checker; the listing lines it leaves out until it is answered (:data:`LOOP_LINES`), and those it always
  leaves out (:data:`PRODUCER_LINES`: 05's and 06's answers).
* ``whole_kloop.py`` — deep dive 06f's warm-up ``ch06.whole_kloop``: chapter 06's capstone in
  short names, both roles' loops of a persistent CTA over several tiles, read, judged, run in chapter 05's ring model and the
  emulator, and drawn as the ring model's timeline (:func:`~.whole_kloop.plot_loops`).
* ``rung_notes.py`` — the generated sentences on rungs 3–8 (06 §3, 06c §9) (:func:`rung_note`),
  and 06 §3's ladder table (:func:`rung_table`);
* ``lesson.py`` — 06 §3's and 06c §3's helpers: the bands' table (:func:`prediction_table`, guards nothing), one row
  of it read in words (:func:`row_reading`, a guard), what each rung changes, from the configs (:func:`~.lesson.rung_changes`, a guard), the epilogue's arithmetic (:func:`show_epilogue`, a guard), each rung's parent (:data:`~.lesson.OVER`),
  and a walk through ``kernels/hopper_gemm.cu`` part by part (:func:`show_kernel_part`);
* ``rung3_split.py`` — rung 2 → rung 3 in single changes: the ``ws_rung3_steps`` record, registers, spills and shared-memory need (:func:`rung3_steps`, :func:`rung3_numbers`);
* ``design.py`` — 06c §3's "Design it": a design through chapter 05's ring model beside the record (:func:`design`), and its question as exercise ``ch06.design_tma_store`` (checked by the solution cell);
  ``rung_exercises.py`` — 06c §9's exercises on rungs 6 and 7, judged by the cluster ring model and
  the epilogue's stmatrix layout (:func:`staging_position`);
* ``rung_diff.py`` — what a rung adds: :func:`rung_diff` diffs two rungs' builds of the kernel
  source, switches resolved, with the file's line numbers (no GPU, no compiler);
* ``tile_order.py`` — the persistent tile orders (group-M raster mirror, the Hilbert order table);
  ``order_suite.py`` — the ``ws_orders`` record suite (rung 8's L2 / tile-order variants);
* ``store_suite.py`` — the ``ws_store_ablation`` record suite (rung 7's TMA store without the
  persistent grid, and without clusters; its table, generated verdicts and frozen predictions).
* ``whole.py`` — the host side of ``kernels/hopper_gemm.cu`` (rung 3 in one switch-free file,
  chapter 06 §4): :func:`~.whole.compile_whole`, :func:`~.whole.check_shapes`,
  :func:`~.whole.launcher`, :func:`~.whole.verify_whole`; written to be read whole;
  ``steps_suite.py`` — record ``ws_rung3_steps``: rung 2 → rung 3 one change at a time, beside cuBLAS;
  ``capstone_build.py`` — the capstone's loops spliced into kernels/capstone.cu, built, run;
  ``capstone_suite.py`` — its record ``capstone`` (the answer and wrong variants on the GPU);
  ``capstone_speed.py`` — record ``capstone_speed``: the real-CUDA capstone checked, then timed beside
  the ladder and cuBLAS;
  ``capstone_read.py`` — 06 §4's walk through that kernel with the learner's loops, block by block,
  and why a row of 06 §1's SASS table differs (:func:`~.capstone_read.differences`);
  ``cuda_kloop.py`` / ``cuda_kloop_cpu.py`` — chapter 06's exercise 1b, the capstone ``ch06.cuda_kloop``:
  both roles written in the real wrappers (kernels/capstone_cuda.cu), compiled by NVRTC, run on the CPU through
  host stand-ins (kernels/capstone_cuda_host.h) against float64, and on a GPU;
  ``whole_suite.py`` — its ``whole_gemm`` record suite (checks, then timed beside rung 3 and
  cuBLAS) and the sentences read from it (:func:`~.whole_suite.whole_verdicts`); never plots.

PTX ISA references: "setmaxnreg" (register reconfiguration per warpgroup; the count must be known
at entry: ``__launch_bounds__`` / ``.maxnreg``), "mbarrier" (arrive, expect_tx, try_wait.parity),
"cp.async.bulk.tensor", §9.7.15 wgmma; CUDA C++ Programming Guide "Compute Capabilities" (64K
registers and 228 KiB shared memory per SM, 227 KiB per CTA).
"""

from __future__ import annotations

from . import config, exercises, figures, ladder, launch, limit, limit_suite, suite, trace  # noqa: F401
from . import order_suite, tile_order  # noqa: F401  (issue 20: opt-in L2 / tile-order variants)
from . import store_suite  # noqa: F401  (does the TMA store need the persistent grid?)
from . import whole, whole_suite  # noqa: F401  (the whole kernel in one file: kernels/hopper_gemm.cu)
from . import steps_suite  # noqa: F401  (rung 2 → rung 3 one change at a time)
from . import capstone_build, capstone_read, capstone_suite  # noqa: F401  (the capstone's loops in a real kernel)
from . import consumer_loop  # noqa: F401  (registers ch06.consumer_loop)
from . import rung_exercises  # noqa: F401  (registers ch06.cluster_arrivals, ch06.store_position)
from . import whole_kloop  # noqa: F401  (registers ch06.whole_kloop, 06f's warm-up: the capstone in short names)
from . import cuda_kloop  # noqa: F401  (registers ch06.cuda_kloop, chapter 06's capstone in real CUDA)
from . import capstone_speed  # noqa: F401  (record capstone_speed: the real-CUDA capstone timed beside the ladder)
from .config import (  # noqa: F401
    B_MAJORS, BK, DEFAULT_SM_COUNT, DTYPES, FP8_DTYPES, INPUT_DTYPES, PRODUCER_MIN_REGS,
    REG_OVERHEAD, REGS_PER_SM, ROW_BYTES, SETMAXNREG_RANGE, STAGE_RANGE, STORE_STAGING, SWIZZLES,
    WAVE_FILL, WSConfig, WarpSpecializationError, _fail, _launch_regs, default_bk, is_fp8, itemsize,
    most_stages, shape_tile, wave_fill,
)
from .consumer_loop import LISTING_OMIT, LOOP_LINES, PRODUCER_LINES  # noqa: F401
from .rung_diff import RungDiff, build_lines, built_from, rung_diff  # noqa: F401
from .rung_exercises import model_text, staging_position, staging_text  # noqa: F401
from .rung_notes import ladder_steps, protocol_names, protocol_rows, rung_note, rung_table  # noqa: F401
from .lesson import (  # noqa: F401
    prediction_table, row_reading, show_epilogue, show_kernel_part,
)
from .rung3_split import rung3_numbers, rung3_steps, rung3_table  # noqa: F401
from .design import WSDesign, design, design_survey  # noqa: F401
from .figures import (  # noqa: F401
    PREDICTION_BANDS, PROTOCOL_EVENTS, RUNG_CHANGES, epilogue_note, ladder_ratio,
    ladder_summary, plot_ladder, pingpong_note, predicted_tflops, plot_protocol, plot_raster, plot_top_trace, prediction_check, protocol_from_source,
    register_budget, register_budget_table, seed_protocol, span_text,
    trace_numbers, trace_table, trace_window,
)
from .ladder import (  # noqa: F401
    PINGPONG_TILE, RASTER_GROUP_M, RUNG_BY_NAME, RUNGS, TILE_SWEEP, TOP_RUNG, TRACED_RUNGS, Rung, _ch05,
    recorded_rungs,
    _cluster, _persistent, _pingpong, _raster, _tile_default, _tma_store, _ws, _ws2, config_label,
    parse_rungs, rung_configs, rung_of, rung_of_record, tile_sweep_configs,
)
from .launch import (  # noqa: F401
    BREAKS, CHECK_SHAPES, ENTRY, PERSISTENT_SHAPE, SOURCE, WSGemm, c_store_box, check_all,
    check_block_scales, check_operands, check_shapes, compile_job, compile_without_launch_bounds,
    compile_ws, correctness_configs, grid_size, make_gemm, max_active_clusters, register_split,
    run_broken, run_ws, sass_registers, shapes_for, source, stmatrix_offsets, tile_counts, verify,
    verify_ws,
)
from .limit import (  # noqa: F401
    descriptor_rows_read, epilogue_store_lines, epilogue_stores, limit_rows, read_kernel_name,
    smem_traffic, smem_traffic_table, wave_efficiency,
)
from .limit_suite import measure_limit, summarize_limit  # noqa: F401
from .suite import (  # noqa: F401
    LADDER_DTYPES, LADDER_SIZES, NONSQUARE_RUNGS, NONSQUARE_SHAPES, WAVE_ALIGNED_SHAPES,
    ladder_predictions, ladder_rows, ladder_table, measure_ladder, measure_nonsquare,
    nonsquare_table, pingpong_table, summarize_ladder,
)
from .store_suite import (  # noqa: F401
    PREDICTION_DATE as STORE_PREDICTION_DATE, PREDICTIONS as STORE_PREDICTIONS, prediction_verdicts,
    store_findings, store_steps, store_table, store_verdicts, ws_bought,
)
from .trace import (  # noqa: F401
    decode_trace, pingpong_overlap, synthetic_trace, trace_metrics, trace_words,
)

#: The package's record suites (:mod:`asynctc.suites`): the ladder, and what limits its top rung.
SUITES = {**suite.SUITES, **limit_suite.SUITES, **order_suite.SUITES, **store_suite.SUITES,
          **steps_suite.SUITES, **capstone_suite.SUITES, **capstone_speed.SUITES,
          **whole_suite.SUITES}
