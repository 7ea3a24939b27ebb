"""Chapter 01's synchronous Tensor Core GEMM (``kernels/mma_sync.cu``): compile, run, verify.

``C = A · B`` with A (M×K) and B (K×N) row-major fp16 or bf16, C (M×N) row-major in the input dtype
(or fp32), fp32 accumulation in ``mma.sync.aligned.m16n8k16`` (PTX ISA, "Warp-level matrix
multiply-accumulate instructions: mma"). Three verbs, as in every kernel family of the course:

* :func:`compile_mma_sync` — NVRTC → cubin for sm_90a (works without a GPU);
* :func:`mma_sync_gemm` — validate the inputs in Python, then launch (needs a GPU of that arch);
* :func:`verify_mma_sync` — fresh random inputs, poisoned output, float64 reference.

What lives where (every name below is re-exported here: ``from asynctc import mma_sync;
mma_sync.launcher``):

* ``config.py`` — :data:`DTYPES`, :class:`MmaSyncTile`, :data:`DEFAULT_TILE`, :data:`TILES`, the
  kernel's defines (:func:`_defines`), :data:`ABLATIONS`, :func:`check_shapes` (no GPU, no launch).
* ``launch.py`` — :func:`compile_mma_sync`, :func:`compile_mma_sync_ablation`,
  :func:`mma_sync_gemm`, :func:`run_gemm` (shared with chapter 02), :func:`launcher`,
  :func:`verify_mma_sync`, :func:`check_tiles`. Tests that fake the device patch ``DeviceArray``
  here, on ``asynctc.mma_sync.launch`` (and on ``asynctc.mma_sync.peak`` for the peak kernel).
* ``peak.py`` — the register-only ceiling: :data:`PEAK_CHAINS`, :data:`PEAK_ITERS`,
  :func:`compile_mma_sync_peak`, :class:`MmaSyncPeak`, :func:`clock_record_mhz`.
* ``suite.py`` — the record suite ``mma_sync`` (:data:`SUITES`): its sizes and shapes
  (:data:`MMA_SIZES`, :data:`CHECK_SHAPES`, :data:`TIMED_CHECK_SHAPE`, …), :func:`measure_mma_sync`,
  :func:`measure_mma_sync_anatomy`, :func:`summarize_mma_sync`, :func:`ceiling_row`,
  :func:`vs_cublas_lines` (never plots). A test that shrinks the suite patches those constants on
  ``asynctc.mma_sync.suite``.
* ``figures.py`` — :func:`plot_vs_cublas`, :func:`plot_tile_hierarchy` (never measure).
* ``lesson.py`` — the notebook's §5 table: :func:`why_rows`, :func:`why_table` (the cells compute
  and guard §5's numbers themselves).
* ``exercises.py`` — the chapter's auto-checked exercises (registered on import).
* ``two_rows.py`` — the code exercise ``ch01.two_rows`` (a numba kernel, two rows of C per thread,
  run in numba's simulator without a GPU) and its judge (registered on import).

The chapter's checking vocabulary (:mod:`asynctc.core.checks`: :class:`Check`, :func:`compare`,
:func:`random_operands`, …) and :func:`~asynctc.core.bench.peak_tflops` are re-exported too.
"""

from ..core.bench import peak_tflops  # noqa: F401 (used by the chapter's notebook)
from ..core.checks import (  # noqa: F401  (the chapter's checking vocabulary)
    FULL_CHECK_MAX, U_ACC, Check, SampledReference, abs_reference, check_gemm, check_sampled_rows,
    compare, exact_operands, gamma, np_dtype, random_operands, reference, square_problem,
    timed_output_reference)
from . import exercises, two_rows  # noqa: F401  (register the chapter's exercises)
from .config import (  # noqa: F401
    ABLATIONS, DEFAULT_TILE, DTYPES, TILES, MmaSyncTile, _defines, check_shapes)
from .launch import (  # noqa: F401
    check_tiles, compile_mma_sync, compile_mma_sync_ablation, launcher, mma_sync_gemm, run_gemm,
    verify_mma_sync)
from .figures import plot_tile_hierarchy, plot_vs_cublas  # noqa: F401
from .lesson import why_rows, why_table  # noqa: F401
from .peak import (  # noqa: F401
    PEAK_CHAINS, PEAK_ITERS, MmaSyncPeak, clock_record_mhz, compile_mma_sync_peak)
from .suite import (  # noqa: F401
    ABLATION_SIZE, CHECK_SHAPES, IN_KERNEL_CLOCK, MMA_SIZES, PEAK_CONFIGS, SIMT_SIZES, SUITES,
    TIMED_CHECK_SHAPE, best_mma_rows, ceiling_row, check_timed_binaries, cublas_rows, measure_mma_sync,
    measure_mma_sync_anatomy, summarize_anatomy, summarize_mma_sync, vs_cublas_lines)
