"""Chapter 04's wgmma kernels: compile, run, verify — single tiles and a mismatch demo.

Two kernel families, each with the course's three verbs:

* **single tile** (``kernels/wgmma.cu``): one warpgroup computes D (64×N fp32) = A (64×K) ·
  B (K×N) [+ C] with ``wgmma.mma_async`` for any supported (dtype, major-ness, swizzle, N, A from
  shared memory or registers). The host lays each operand tile out in shared memory exactly where
  :class:`asynctc.models.descriptors.OperandTile` says wgmma reads it and encodes the descriptors; the
  kernel copies the bytes and runs the wgmmas. :func:`compile_tile`, :func:`run_tile`,
  :func:`verify_tile`; :func:`supported_configs` lists every combination the instruction allows.
  :func:`run_tile_tma` / :func:`verify_tile_tma` do the same with both operands loaded by TMA
  boxes from tensor maps made from the same tiles (:func:`tma_configs`).
* **mismatch demo** (:func:`mismatch_demo`): the same, with the descriptors' swizzle field forced
  to a mode the data was not laid out in (compiled only on purpose, ``MISMATCH_LAYOUT``): the count
  of wrong elements, the permutation of A that wgmma actually read, and the wrong D predicted
  exactly by the layout model.
The throughput kernel and the chapter's record suite are in :mod:`asynctc.wgmma_peak`.

What lives where (every name below is re-exported here: ``from asynctc import wgmma as W; W.run_tile``):

* ``config.py`` — :data:`DTYPES`, :data:`N_VALUES`, :data:`SWIZZLES`, :data:`SOURCES`,
  :func:`np_dtype`, :class:`TileConfig`, :func:`supported_configs` (no GPU, no launch).
* ``launch.py`` — :func:`compile_tile`, :func:`tile_images`, :func:`run_tile`, :func:`verify_tile`
  and its tolerance (:data:`FP8_ACC_U`, :func:`tile_tolerance`); the TMA-fed tile
  (:func:`tma_configs`, :func:`run_tile_tma`, :func:`verify_tile_tma`). Tests that fake the device
  patch ``DeviceArray`` and ``_tensor_map`` here, on ``asynctc.wgmma.launch``.
* ``design.py`` — chapter 04's "Design it": :func:`design` (one N and operand source through the
  bytes model of §8, beside the record), :func:`design_survey`, the model itself, and
  and :func:`small_n_held_out` (04b §4: the fitted RS floor tested on held-out N).
* ``mismatch.py`` — :class:`MismatchResult`, :func:`mismatch_demo`; :func:`wrong_reads` (chapter
  04 §2's table: what a wrong swizzle field or SBO makes wgmma read).
* ``figures.py`` — :func:`plot_layouts` (arrows from :func:`offset_steps`),
  :func:`offsets_table`, :func:`plot_mismatch`,
  :func:`plot_accumulator` (who holds each accumulator element),
  and what the lessons read from a "wgmma" record: :func:`peak_row`, :func:`clock_note` (draw and
  read; never measure).
* ``exercises.py`` — the chapter's auto-checked exercises (registered on import) and
  :func:`descriptor_diagnosis`.

PTX ISA references: §9.7.15.5.2 (wgmma.mma_async), §9.7.15.5.1.1 (register fragments),
§9.7.15.5.1.2 (shared-memory layouts and the matrix descriptor), §9.7.15.7 (fence/commit/wait).
"""

from ..core import runtime  # noqa: F401  (notebooks/04 asks W.runtime.runs_live)
from . import exercises  # noqa: F401  (registers the chapter's exercises)
from .config import (  # noqa: F401
    DTYPES, N_VALUES, SOURCES, SWIZZLES, TILE_TOLERANCE, TileConfig, np_dtype, supported_configs)
from .design import WgmmaDesign, design, design_survey, small_n_held_out  # noqa: F401  (04 §8, 04b §4)
from .exercises import descriptor_diagnosis  # noqa: F401
from .figures import (  # noqa: F401
    clock_note, offsets_table, peak_row, plot_accumulator, plot_layouts, plot_mismatch)
from .launch import (  # noqa: F401
    FP8_ACC_U, compare_tile, compile_tile, random_tile_operands, run_tile, run_tile_tma, tile_images,
    tile_modules, tile_reference, tile_scale, tile_tolerance, tma_configs, tma_entry, tma_geometry,
    tma_globals, verify_tile, verify_tile_tma)
from .mismatch import MismatchResult, mismatch_demo, wrong_reads  # noqa: F401
