"""Chapter 07: FP8 — the formats, scales, quantisation, the Tensor Core's accumulation, the FP8 GEMM.

Where things live:

* :mod:`asynctc.models.fp8` — the numerics, no GPU: the formats (:data:`FORMATS`,
  :func:`fp8_format`), scales and saturating quantisation (:func:`amax_scale`, :func:`quantize`,
  :func:`quantize_a` / :func:`quantize_b` per 1×128 / 128×128 block, :func:`dequantize`,
  :func:`random_fp8`), the align-and-truncate model of the Tensor Core's accumulation
  (:func:`tc_dot`, :func:`model_gemm`, :func:`model_gemm_block`, :func:`fit_frac_bits`, the frozen
  :data:`ACC_PREDICTION`), and the elementwise bounds the GEMM is checked against
  (:func:`accumulation_bound`, :func:`block_scaled_bound`, :func:`check_fp8_gemm`,
  :func:`check_fp8_block`). Errors: :class:`FP8Error` (a ``ValueError``) naming field, value and
  rule.
* ``config.py`` — the FP8 GEMM's configurations: chapter 06's top rung with an fp8 dtype
  (:func:`fp8_config`), the tile chosen by the shape (:func:`fp8_shape_config`), the
  per-block-scale variants (:func:`block_configs`), and the lists checked and timed
  (:func:`correctness_configs`, :func:`timed_configs`).
* ``launch.py`` — running and checking it: :func:`verify_fp8` (and :func:`verify_block_scaled`;
  :func:`show_checks`, chapter 07 §3 in one call),
  the shapes each config is checked on (:func:`shapes_for`, :data:`CHECK_SHAPES`),
  :func:`check_all`; the baseline cuBLASLt FP8 GEMM (:func:`scaled_mm`,
  :func:`scaled_mm_blockwise`, through ``torch._scaled_mm``).
* ``suite.py`` — the "fp8" record suite (``SUITES["fp8"]``, :func:`measure_fp8`: the accumulation
  experiment, every check, the timings) and the tables and summary of its record; never plots.
* ``identify.py`` — the "fp8_fit" record suite (``SUITES["fp8_fit"]``, :func:`measure_fp8_fit`,
  ``tools/gpu_ch07.py --fit``): the runs that identify the fraction bits and the alignment group
  (:func:`identification_experiment`, prediction :data:`FIT_PREDICTION`) and the promotion-cost
  test with one and two consumer warpgroups (:func:`promotion_cost`,
  :data:`PROMOTION_PREDICTION`), and the promotion-interval test (:func:`promotion_intervals`,
  :data:`INTERVAL_PREDICTION`, ``tools/gpu_ch07.py --intervals``); never plots.
* ``swizzle_suite.py`` — the "fp8_swizzle" record suite (``SUITES["fp8_swizzle"]``,
  :func:`measure_fp8_swizzle`, ``tools/gpu_ch07.py --swizzle``): the mixed-operand builds and
  e4m3 under each swizzle checked against float64, then e4m3 timed under the 128-, 64-, 32- and no
  swizzle beside the fp16 top rung (prediction :data:`SWIZZLE_PREDICTION`); never plots.
* ``figures.py`` — notebook 07's figures (the FP8 value grids, the accumulation plot) and the
  lines it prints from the "fp8" and "swizzle" records (the speed table, verdicts and claims as
  ``*_note`` functions), 07 §5's lookups (:func:`swamp_errors`, :func:`normal_errors`,
  :func:`promote_tflops`); reads records, never times anything.
* ``seed.py`` — the seed article's 4096³ table beside our rungs, under the datasheet peak and the
  peak at the measured clock (:func:`seed_comparison`); reads records only.
* ``exercises.py`` — ``ch07.quantize``, ``ch07.block_scale``, ``ch07.round_trip``,
  ``ch07.promote_interval``; the code exercise ``ch07.promotion``.

Every public name of these is re-exported here (``from asynctc import fp8; fp8.quantize``). A
constant a function reads at call time is read in the file that uses it: to shorten a run, set
``fp8.suite.EXPERIMENT_K`` or ``fp8.launch.CHECK_SHAPES``, not the copy here.

**Per-block scales in the kernel** (``WSConfig(block_scales=True)``, the kernel's BLOCK_SCALES):
a k-tile of 128 fp8 elements is exactly one scale block along K, so with ``promote`` = 1 the
consumer multiplies each k-tile's wgmma sums by sa[row, kt] · sb[n-block, kt] as it adds them
into the fp32 totals — the scales never enter the Tensor Core's reduced-precision sum.
:func:`quantize_a` / :func:`quantize_b` → :func:`verify_block_scaled` (float64 of the dequantised
inputs, :func:`block_scaled_bound`); :func:`model_gemm_block` is the model of that kernel.

**Mixed operands** (``WSConfig(dtype=A, b_dtype=B)``, the kernel's ``DT_B``): A e4m3 and B e5m2 or
the reverse — wgmma's .atype and .btype are independent for FP8 (PTX ISA §9.7.15.5.2), SASS
``QGMMA…F32.E4M3.E5M2`` / ``.E5M2.E4M3``; B's tensor map box is in B's dtype and the launch checks
B against it. :func:`operand_dtypes` names the pair (refusing non-FP8 operands), :func:`mixed_configs`
are the builds checked; a build of one format sets no DT_B (its cubin is unchanged).

**The FP8 GEMM** is chapter 06's warp-specialized kernel with DT = 2 / 3
(:class:`asynctc.warp_specialization.WSConfig` with an fp8 dtype): :func:`verify_fp8` checks it
against float64 of the dequantised inputs with :func:`accumulation_bound`; ``SUITES["fp8"]``
(:func:`measure_fp8`, ``tools/gpu_ch07.py --record``) runs the experiment and times it against
cuBLASLt's FP8 GEMM (``torch._scaled_mm``) and our fp16 top rung in the same run.
"""

from __future__ import annotations

from ..models.fp8 import (A_BLOCK, ACC_PREDICTION, B_BLOCK, EXPERIMENT_K, EXPERIMENT_PROMOTE,
                          FORMATS, FRAC_BITS, GROUP, KTILE, TRUNCATIONS_PER_GROUP, U32, U_OUT,
                          FP8Error, Fp8Format, accumulation_bound, amax_scale, block_amax,
                          block_reference, block_scaled_bound, block_scaled_operands,
                          check_fp8_block, check_fp8_gemm, dequantize, expand_scales,
                          fit_frac_bits, fp8_format, model_gemm, model_gemm_block,
                          predict_swamp, prediction_table, quantize, quantize_a, quantize_b,
                          random_fp8, relative_errors, swamp_operands, tc_dot)
from ..models.fp8 import (ANCHOR, FIT_GROUPS, FIT_K, FIT_PREDICTION, GROUP_K, fit_group, fit_set,
                          group_operands, identification_table, identified_bits,
                          predict_identification, probe_operands)
from . import config, exercises, figures, identify, launch, seed, suite, swizzle_suite  # noqa: F401  (exercises registers ch07.*)
from .config import (FP8_SWIZZLES, MIXED_FP8_DEFINES, MIXED_PAIRS, PROMOTES, THIN_SHAPES,
                     block_configs, block_timed_config, mixed_configs, operand_dtype,
                     operand_dtypes, swizzle_config, swizzle_configs,
                     correctness_configs, fp8_config, fp8_shape_config, shape_configs,
                     timed_configs)
from .figures import (accumulator_claims, normal_errors, plot_accumulation, plot_bits_kept, plot_formats, positive_values,
                      promote_tflops, speed_names, swamp_errors, table_row, block_error_table)
from .seed import SEED_4096, seed_comparison, seed_table_text
from .launch import (CHECK_SHAPES, PERSISTENT_SHAPE, THIN_CHECK_SHAPES, check_all, scaled_mm,
                     scaled_mm_blockwise, shapes_for, show_checks, verify_block_scaled, verify_fp8)
from .identify import (COST_SIZE, ID_COLS, ID_ROWS, INTERVAL_PREDICTION, INTERVAL_SIZES,
                       INTERVALS, PROMOTION_PREDICTION, fit_configs, identification_experiment,
                       interval_table, measure_fp8_fit, promotion_cost, promotion_intervals,
                       promotion_table, sass_counts, summarize_fp8_fit)
from .identify import identification_table as fit_table
from .suite import (FIT_COLS, FIT_ROWS, GOAL, NONSQUARE_SHAPES, SIZES, SUITES,
                    accumulation_experiment, experiment_table, fitted_bits, measure_fp8,
                    measure_fp8_nonsquare, nonsquare_fp8_table, ratio_rows, summarize_fp8,
                    summary_table, time_block_scaled)

from .swizzle_suite import PREDICTION as SWIZZLE_PREDICTION
from .swizzle_suite import measure_fp8_swizzle, summarize_fp8_swizzle, swizzle_table

SUITES = {**SUITES, **identify.SUITES, **swizzle_suite.SUITES}
