"""Chapter 03 — TMA and mbarrier: run the kernels of ``kernels/tma.cu`` and check them.

* :func:`load_box` — one TMA load of a box under a swizzle mode; the raw shared memory comes back and
  is compared byte for byte with the model :meth:`asynctc.models.layout.SmemTile.scatter` (swizzle, row
  padding, bytes beyond the tile untouched). Boxes hanging past the tensor's edge (or starting at
  negative coordinates) check the out-of-bound fill: zeros ("zero") or NaN ("nan").
* :func:`store_box` — the reverse: a shared-memory image made by the model is TMA-stored; the global
  box must equal the data and nothing outside it may change.
* :func:`mbarrier_lifecycle` — the mbarrier life cycle recorded in the kernel (phase parity before and
  after expect_tx, complete_tx, stage reuse, arrival counts, a bounded wait that times out).
* :class:`CopyBench` — TMA vs vectorized loads vs cp.async copies by box size, against the
  device-to-device copy; suite ``tma_copy`` (:data:`SUITES`).

Every launch needs an sm_90 GPU (:class:`~asynctc.core.runtime.NoGPUError` otherwise); every argument is
validated in Python first (:mod:`asynctc.tma`, :class:`~asynctc.models.layout.SmemTile`). mbarrier waits in
these kernels are bounded: a kernel that times out reports it in its error word, and the Python side
raises :class:`MbarrierTimeout` — the GPU never hangs.

What lives where (every name below is re-exported here: ``from asynctc import tma; tma.load_box``):

* ``maps.py`` — tensor maps through cuda.core: :func:`encode` (the arguments of
  :func:`driver_args`, :func:`driver_args_table`), :func:`map_fields` (what a map contains,
  rows first), :func:`make_tensor_map`,
  :func:`tensor_map_for_tile` (validation is :mod:`asynctc.models.tensor_map`, re-exported here).
* ``launch.py`` — the kernels for one box: :func:`compile_tma`, :func:`kernel_sass`,
  :func:`load_box`, :func:`load_strided` (element strides, :data:`STRIDE_CASES`), :func:`store_box`,
  :class:`ByteCheck`, :class:`MbarrierTimeout`, :func:`swizzle_tiles`.
* ``lifecycle.py`` — the mbarrier life cycle: :data:`LIFECYCLE`, :data:`LIFECYCLE_OPEN`,
  :func:`mbarrier_lifecycle`, :func:`lifecycle_table`.
* ``suite.py`` — the record suite ``tma_copy``: :class:`CopyBench`, :func:`copy_config`,
  :func:`measure_tma_copy` and the tables read from its record (never plots).
* ``equal_bytes.py`` — the record suite ``tma_equal``: TMA beside the manual copies at equal bytes
  in flight per SM, small and large boxes (:func:`measure_equal_bytes`, :func:`equal_bytes.pairs`).
* ``checks.py`` — the record suite ``tma_checks``: the life cycle, the swizzle model and the
  zero fill run once on the GPU, so that replay prints what the GPU showed.
* ``design.py`` — chapter 03's "Design it": :func:`design` (a TMA copy's box, stages and CTAs per
  SM through Little's law, beside the records' runs), :func:`design_survey`.
* ``figures.py`` — :func:`plot_chunk_maps`, the bank groups of a box under each swizzle mode
  (draws only; never measures).
* ``exercises.py`` — the chapter's auto-checked exercises (registered on import).
* ``stage_fill.py`` — the code exercise ``ch03.stage_fill``: the producer's lines that fill one
  stage of two boxes, compiled into ``kernels/tma_stage.cu`` and judged by the mbarrier model.
"""

from ..models.tensor_map import TensorMapError, TensorMapSpec, _fail, validate  # noqa: F401
from . import exercises  # noqa: F401  (registers the chapter's exercises)
from . import stage_fill  # noqa: F401  (registers ch03.stage_fill)
from .launch import (  # noqa: F401
    CHECK_DTYPES, ERR_MBARRIER_TIMEOUT, KERNELS, SENTINEL, SOURCE, STRIDE_CASES, TAIL, ByteCheck,
    MbarrierTimeout, StridedLoad, check_box_start, compile_tma, decode_error, expected_box,
    kernel_sass, load_box, load_strided, store_box, strided_box, swizzle_tiles)
from .design import CopyDesign, design, design_survey  # noqa: F401  (chapter 03's "Design it")
from .figures import plot_box_over_tensor, plot_chunk_maps  # noqa: F401
from .lifecycle import LIFECYCLE, LIFECYCLE_OPEN, LifecycleRun, lifecycle_table, mbarrier_lifecycle  # noqa: F401
from .maps import (  # noqa: F401
    driver_args, driver_args_table, encode, make_tensor_map, map_fields, tensor_map_for_tile)
from .suite import (  # noqa: F401
    BOXES, COPY_COLS, COPY_ROWS, SMEM_BUDGET, SUITES, VARIANTS, CopyBench, CopyConfig, by_box,
    bytes_in_flight, compare_by_box_size, copy_config, describe_copy, measure_tma_copy,
    summarize_tma_copy)
from . import equal_bytes  # noqa: E402
from .equal_bytes import measure_equal_bytes, summarize_equal_bytes  # noqa: F401,E402

from . import checks  # noqa: E402
from .checks import measure_tma_checks, summarize_tma_checks  # noqa: F401,E402

SUITES = {**SUITES, **equal_bytes.SUITES, **checks.SUITES}
