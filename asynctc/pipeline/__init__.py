"""Chapter 05's kernel: a pipelined TMA + mbarrier + wgmma GEMM — compile, run, verify, trace, measure.

``kernels/pipeline.cu`` computes ``C = A · B`` (A M×K, B K×N, fp16 or bf16; C M×N fp32, or the
input dtype) with a ring of ``stages`` shared-memory stages. One thread issues TMA
(``cp.async.bulk.tensor``) loads of 64-wide k-tiles into the ring; every consumer warpgroup waits on
the stage's *full* mbarrier, runs ``wgmma.mma_async`` on it and, once ``wgmma.wait_group`` says its
wgmmas are complete, arrives on the stage's *empty* mbarrier so the stage can be refilled. The
protocol (phase parity, prologue, release order, why the producer cannot deadlock) is written out
at the top of the kernel source (:func:`source`).

Where things live (``from asynctc import pipeline as P`` re-exports every name below):

* ``config.py`` — the kernel's constants, :class:`RingTile` (shared with chapter 06),
  :class:`PipelineConfig` and its validation (:class:`PipelineError` names the field, the value
  and the rule), :func:`smem_limit_bytes`, the descriptors the kernel computes
  (:func:`device_descriptor`), the shape and operand rules (:func:`check_shapes`,
  :func:`check_operands`);
* ``launch.py`` — :func:`compile_pipeline`, :class:`PipelineGemm`, :func:`run_pipeline`,
  :func:`run_broken`, :func:`verify_pipeline`, the correctness matrix (:func:`correctness_configs`,
  :func:`check_matrix`), the timed configurations (:func:`sweep_configs`) and the operands
  (:func:`random_operands`, :func:`device_problem`);
* ``trace.py`` — :class:`TraceResult`, :func:`decode_trace`, :func:`trace_metrics`,
  :func:`ktile_peak_cycles`, :func:`decode_error`, :func:`synthetic_trace`, :func:`timeline_spans`;
* ``results.py`` — reading a record's rows: :func:`best_row`, :func:`cublas_row`, :func:`row_label`,
  the kernel's average k-tile (:func:`average_ktile_cycles`, :class:`KtileAverage`), 05 §5's
  lookups (:func:`loop_clocks_per_ktile`, :func:`sm_clocks_per_second`);
* ``suite.py`` — the "pipeline" suite: :func:`measure_pipeline`, the tables (:func:`depth_table`,
  :func:`variants_table`, :func:`checks_lines`), :func:`summarize_pipeline`, ``SUITES`` (never
  plots);
* ``figures.py`` — :func:`plot_trace`, :func:`plot_trace_beside_model` (a recorded CTA above the
  ring model's schedule; the numbers chapter 05 §5 reads off both, :func:`ktile_waits`, :func:`full_waits`, :func:`wait_floor`), :func:`flat_from` (where a depth
  sweep flattens),
  :func:`plot_depth`,
  :func:`model_beside_record` (the ring model's depth sweep beside the record's, in one sentence;
  the plateau in bytes per clock beside the fitted L2 cap, :func:`plateau_in_bytes`; never
  measures);
* ``figures_ring.py`` — §1's ring step by step: the ring model's run logged event by event
  (:func:`ring_moments`) and drawn one panel per moment (:func:`plot_ring_steps`), also with
  exercise 2's parity flipped (:func:`flipped_refill_parities`);
* ``lesson.py`` — the core lesson's one-line cells: :func:`show_parity_story` (§1, a ring without
  parity beside the kernel's), :func:`show_checks`, :func:`show_widths`,
  :func:`show_model_check` (the L2 cap on its fitted and held-out
  configurations, run in deep dive 05b §6),
  :func:`show_supply`, :func:`show_ktile_reading` (§5, one k-tile of the trace as a timeline); each prints a small table and asserts the sentences the markdown states;
* ``design.py`` — the L2 cap that brings the ring model closest to the depth sweep
  (:func:`closest_cap`, fitted once and cached; deep dive 05b §5); deep dive 05b §6's open experiment: one design (stages,
  wait_group, consumers, BN) through the ring model beside the record's run of it (:func:`design` → :class:`Design`), the course's answer
  (:func:`design_survey`); what the fitted cap explains and what only agrees with it
  (:func:`cap_evidence`).

The generic checks every TMA-fed GEMM shares live in :mod:`asynctc.core.checks` and are
re-exported here under their chapter-05 names: :func:`np_dtype`, :func:`b_shape`,
:func:`operand_dims` and :func:`check_out` (raising :class:`PipelineError`),
:func:`compare_elementwise`, :class:`ElementCheck`, ``OUT_ROUNDING``. The CPU model of the ring:
:mod:`asynctc.models.pipeline`.

The three verbs, as in every kernel family of the course:

* :func:`compile_pipeline` — NVRTC → cubin for sm_90a (works without a GPU);
* :func:`run_pipeline` — validate in Python, then launch (needs an sm_90 GPU);
* :func:`verify_pipeline` — fresh random inputs, poisoned output, float64 reference, an
  elementwise bound relative to ``|A|·|B|`` (:func:`compare_elementwise`).

:class:`PipelineConfig` holds the compile-time knobs (dtype, tile BM×BN×64, stages, consumer
warpgroups, B's major-ness, the ``wgmma.wait_group`` argument, tracing, output dtype) and checks
them. With ``trace=True`` the kernel records timestamped events; :func:`decode_trace` turns them
into spans and :func:`trace_metrics` into "math in flight" and "waiting on full barriers"
fractions.

``SUITES["pipeline"]`` (``python -m asynctc record pipeline``, or ``tools/gpu_ch05.py --record``)
checks every configuration, then sweeps the ring depth against cuBLAS timed in the same run.

PTX ISA references: "cp.async.bulk.tensor" (TMA loads), "mbarrier" (init, arrive, expect_tx,
try_wait.parity, phase completion, tx-count), "fence.mbarrier_init", §9.7.15.5.2 wgmma.mma_async,
§9.7.15.5.1.2 shared-memory matrix layouts and descriptor, §9.7.15.7 wgmma fence / commit_group /
wait_group; tensor maps: CUDA driver API cuTensorMapEncodeTiled.
"""

from ..core.checks import OUT_ROUNDING, ElementCheck, compare_elementwise
from .config import (ACC_BUDGET, ALIGN_SLACK, B_MAJORS, BK, DTYPES, ENTRY, EVENT_KINDS,
                     REG_OVERHEAD, REGS_PER_SM, RESERVED_SMEM_PER_CTA, SMEM_PER_SM, SOURCE,
                     STAGE_RANGE, STATIC_SMEM, TILES, TRACE_CTAS, TRACE_EVENTS, TRACE_HEADER,
                     WAIT_TAGS, WAIT_ROLES, ERROR_FIELDS, PipelineConfig, PipelineError, RingTile, _fail, b_shape,
                     check_operands, check_out, check_shapes, device_descriptor, np_dtype,
                     operand_dims, smem_limit_bytes)
from . import supply_suite as supply
from .design import (Design, all_designs, cap_evidence, closest_cap, design, design_survey, show_design,
                     fitted_cap, measured_row)
from .figures import (SPAN_COLORS, flat_from, full_waits, ktile_waits, model_beside_record, plateau_in_bytes, plot_depth,
                      plot_trace, plot_trace_beside_model, wait_floor)
from .figures_ring import flipped_refill_parities, plot_ring_steps, ring_moments
from .launch import (BREAKS, CHECK_SHAPES, SWEEP_B_MAJOR, SWEEP_DTYPES, SWEEP_SIZES, SWEEP_TILES,
                     SWEEP_TWO_CTAS, PipelineGemm, check_matrix, check_now, compile_job, compile_pipeline,
                     correctness_configs, device_problem, fits, random_operands, run_broken,
                     run_pipeline, source, sweep_configs, tile_configs, verify_pipeline)
from .lesson import (ktile_clocks, ktile_reading, model_check, parity_story, show_checks, show_ktile_clocks,
                     show_ktile_reading, show_model_check, show_parity_story, show_supply, show_widths, smem_share,
                     trace_claims)
from . import producer_step                 # registers ch05.producer_step (the refill step, as CUDA C++)
from .results import (KtileAverage, average_ktile_cycles, best_by_width, best_row, best_tflops_by_width, cublas_row,
                      depth_sweep, loop_clocks_per_ktile, of_cublas, resident_by_depth, row_label,
                      sm_clocks_per_second, trace_of)
from .suite import (SUITES as _PIPELINE_SUITES, checks_lines, depth_table, measure_pipeline, summarize_pipeline,
                    variants_table)
from .trace import (FLOP_PER_CLK_SM, Span, TraceResult, _clock_mhz, decode_error, error_fields, decode_trace,
                    ktile_peak_cycles, synthetic_trace, timeline_spans, trace_metrics, trace_words)

SUITES = {**_PIPELINE_SUITES, **supply.SUITES}
