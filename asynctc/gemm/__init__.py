"""The GEMM to copy into your own work: :func:`matmul`, ``C = A · B`` on Hopper's Tensor Cores.

fp16 / bf16 in, fp32 accumulation, any M, N, K ≥ 1, B given K×N or N×K, C in fp32 or the input
dtype — chapter 06's top rung (:mod:`asynctc.warp_specialization`, rung 8) built with edge
handling (the ``EDGES`` define of ``kernels/warp_specialization.cu``). It is also
``asynctc.matmul``. This package imports chapter 06's configuration and launch; chapter 06 never
imports it.

Where things live (every name is re-exported here):

* ``config.py`` — **where matmul chooses its tile**: :func:`matmul_config` (the rule, in its
  docstring) and :func:`choose_config` (its lines: :func:`~asynctc.warp_specialization.shape_tile`
  for the tile and cluster, the epilogue, :func:`~asynctc.warp_specialization.most_stages`);
  :data:`B_LAYOUTS` and :func:`b_major_of`, the one check of ``b_layout``; the decision table
  per shape class (:data:`~asynctc.gemm.config.DECISIONS`, :func:`shape_class`) that changes the
  rule where a measurement showed a better choice;
* ``splitk.py`` — split-K: :class:`SplitKGemm` (fp32 partials in a workspace, summed in a fixed
  order by ``kernels/gemm_splitk.cu``) and :func:`edge_gemm` (the launch class of a config);
* ``operands.py`` — edge operands: :class:`Pitched` (a matrix with a row pitch),
  :func:`row_pitch`, :func:`pitched_host`, :func:`upload_pitched`, :func:`check_tma_rows`,
  :func:`check_edge_operands`, and :class:`EdgeGemm` (chapter 06's
  :class:`~asynctc.warp_specialization.WSGemm` for them);
* ``plan.py`` — :class:`MatmulPlan` (operands checked once, configuration chosen, uploads, the
  launch) and :func:`matmul`;
* ``interop.py`` — operands of other libraries, zero-copy: :func:`~asynctc.gemm.interop.describe`
  (torch tensors, CuPy arrays, ``__cuda_array_interface__``, ``__dlpack__``), the TMA stride
  rule (:func:`~asynctc.gemm.interop.as_matrix`), overlap and GPU checks, the caller's stream,
  the result of the caller's kind;
* ``fastpath.py`` — matmul on those operands: :class:`~asynctc.gemm.fastpath.LaunchPlan` cached
  by what determines it, tensor maps re-pointed per call, one launch on the caller's stream;
  :func:`check_errors`;
* ``cases.py`` — the cases matmul is checked on (:func:`matmul_cases`, :data:`AWKWARD_SHAPES`, …)
  and :func:`check_matmul_case` (float64, every element);
* ``host_suite.py`` — the ``matmul_host`` record suite: on torch tensors beside
  ``torch.matmul``, host µs per call, end to end, kernel time, a CUDA-graph capture
  (:func:`~asynctc.gemm.host_suite.measure_matmul_host`); never plots;
* ``goals.py`` — what matmul promises, judged from a ``matmul_host`` record
  (:data:`~asynctc.gemm.goals.GOALS`, :func:`~asynctc.gemm.goals.judge`); ``figures.py`` — its
  figure (:func:`~asynctc.gemm.figures.plot_matmul_ratios`); neither measures;
* ``suite.py`` — the ``matmul`` record suite (:func:`measure_matmul`, :func:`matmul_table`,
  :func:`summarize_matmul`, :func:`recorded_run`: 06d §3's replay line); never plots.
"""

from __future__ import annotations

from . import cases, config, fastpath, goals, host_suite, interop, operands, plan, splitk, suite  # noqa: F401
from .cases import (  # noqa: F401
    AWKWARD_SHAPES, COMBOS, PERSISTENT_EDGE_SHAPE, SMALL_NONSQUARE, case_config,
    check_matmul_case, matmul_cases,
)
from .fastpath import LaunchPlan, PlanKey, check_errors, matmul_device  # noqa: F401
from .interop import OperandTypeError  # noqa: F401
from .config import (  # noqa: F401
    B_LAYOUTS, DECISIONS, SHAPE_CLASSES, b_major_of, check_decisions, choose_config, matmul_config,
    shape_class,
)
from .operands import (  # noqa: F401
    TMA_ALIGN, EdgeGemm, Pitched, check_edge_operands, check_tma_rows, pitched_host, row_pitch,
    upload_pitched,
)
from .plan import MatmulPlan, matmul  # noqa: F401
from .splitk import SplitKGemm, edge_gemm  # noqa: F401
from .suite import (  # noqa: F401
    EDGES_COST_SIZE, MATMUL_B_LAYOUTS, MATMUL_DTYPES, MATMUL_SIZES, matmul_jobs, matmul_table, recorded_run,
    measure_matmul, summarize_matmul,
)

#: The package's record suites (:mod:`asynctc.suites`): "matmul" and "matmul_host".
SUITES = {**suite.SUITES, **host_suite.SUITES}
