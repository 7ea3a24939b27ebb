"""Chapter 07: the swizzle claim measured, and the tile / stage / register budget table.

The seed article says the right shared-memory swizzle is worth 10-20 %. This package runs the
*same* warp-specialized kernel (chapter 06's rung 5: 128×256×64, two consumer warpgroups, four
stages, persistent; fp16, B K-major) with the operand tiles under a 128-, 64-, 32-byte or no
swizzle (:attr:`asynctc.warp_specialization.WSConfig.swizzle`). Everything that depends on the
swizzle — the TMA boxes and the tensor maps' swizzle, the stage layout (``k_boxes`` boxes along
K per operand), the wgmma descriptor templates (layout type, LBO, SBO), the m64-atom and k-step
offsets — comes from one layout model, :meth:`WSConfig.stage_tiles` (:class:`asynctc.models.
descriptors.OperandTile`, whose boxes are :class:`asynctc.models.layout.SmemTile`).

Where things live:

* ``config.py`` — the variants (:func:`variants`: :func:`swizzle_variants`,
  :func:`row_box_variants`, :func:`tma_once_variants`), their keys and names, the TMA loads per
  stage, the numbers the kernel takes from each config's defines (:func:`kernel_layout`).
* ``prediction.py`` — the bank model of each variant (:func:`bank_model`, its markdown tables) and
  the predictions frozen before the GPU runs (:data:`PREDICTION`, :func:`predicted_ratio`).
* ``dry_run.py`` — the kernel replayed in numpy: one stage's address arithmetic
  (:func:`stage_dry_run`) and what a ``tma_once`` launch computes (:func:`tma_once_reference`).
* ``launch.py`` — the checks (:func:`check_variants`, :func:`verify_tma_once`,
  :class:`TmaOnceSampled`) and the LSU instructions of a cubin (:func:`shared_lsu_instructions`).
* ``suite.py`` — the "swizzle" record suite (:func:`measure_swizzle`, :data:`NCU_METRICS`) and the
  tables and summary of its record (:func:`swizzle_table`, :func:`summarize_swizzle` ...).
* ``figures.py`` — notebook 07's tile / stage / register budget table (:func:`budget_table`).
* Elsewhere: the bank model itself in :mod:`asynctc.models.banks` (:func:`wavefronts`,
  :func:`read_conflicts` ...), Nsight Compute's command line and CSV in :mod:`asynctc.core.ncu`
  (:func:`parse_ncu_csv`, :func:`metric_base`); both re-exported here, as is every public name
  of the files above (``from asynctc import swizzle as S; S.variants()``). A constant a function
  reads at call time is read in the file that uses it (``S.launch.CHECK_SHAPES``, not the copy
  here).

Three pieces, each usable without a GPU:

* **The bank model** (:func:`wavefronts`, :func:`read_conflicts`, :func:`bank_model`): shared
  memory has 32 banks of 4 bytes (bank = (address / 4) mod 32) and serves one 4-byte word per bank
  per *wavefront* (128 bytes); a request needs as many wavefronts as the largest number of
  distinct words any one bank must deliver. Applied to what wgmma reads through the descriptors
  (8-row × 16-byte core matrices, :func:`asynctc.models.descriptors.read_addresses`) it predicts
  the conflict factor of every variant; applied to a plain row-major tile read the same way it
  shows what the swizzle prevents. :data:`PREDICTION` froze the result before the GPU run.
* **The dry run** (:func:`stage_dry_run`): the kernel's own address arithmetic (its defines:
  boxes, box pitches, atom and k-step offsets, descriptor templates) replayed on one stage in
  numpy — TMA side by :meth:`SmemTile.scatter`, wgmma side by the descriptor model — so a wrong
  offset is a wrong operand element before any GPU run.
* **The budget table** (:func:`budget_table`): chapter 06's tile sweep (rung 4) with registers,
  spills and shared memory per CTA from the cubins and TFLOP/s from the H200 record.

``SUITES["swizzle"]`` (``tools/gpu_swizzle.py``) checks every variant against float64, times them
at 4096³ and 8192³ beside cuBLAS, and (when Nsight Compute is there) stores its counters.

**Row boxes** (:data:`ROW_BOXES`): the first run left two causes of the narrow swizzles' loss
confounded — a narrower swizzle also means more TMA boxes per stage (:attr:`WSConfig.k_boxes`).
The ``128B ×R boxes`` variants keep the 128-byte layout byte for byte (:func:`stage_dry_run`
shows the same stage image) but load A and B as R boxes each along the rows
(:attr:`WSConfig.row_boxes`), so that a stage takes as many box operations as the 64-byte (R = 2),
32-byte (4) and unswizzled (8) variants — 16 goes one step further (8-row A boxes). Same bytes,
same 128-byte box rows, same expect_tx, one elected producer thread; only the box count changes.

**wgmma only** (:func:`tma_once_variants`): the row boxes left two causes — TMA's narrow row
requests, or wgmma reading the narrow layouts. The ``tma_once`` variants
(:attr:`WSConfig.tma_once`, one per swizzle) take TMA out of the loop: the producer fills the
four stages once and afterwards only arrives on their full barriers, so the consumers' wgmmas read
the same stages again and again. They compute a different product on purpose
(:func:`tma_once_reference` says which, and the checks hold them to it); their TFLOP/s is wgmma
throughput on reused stages, not a GEMM anyone can use.

Sources: CUDA C++ Programming Guide "Shared Memory" (32 banks, 4-byte words) and "Tensor Memory
Access" (swizzle patterns); PTX ISA §9.7.15.5.1.2 (wgmma canonical layouts, descriptors); CUDA
driver API ``cuTensorMapEncodeTiled`` (box and swizzle rules); Nsight Compute Profiling Guide
(``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld``: wavefronts beyond the ideal of LSU
shared loads — wgmma and TMA do not go through the LSU pipe).
"""

from __future__ import annotations

from ..core.ncu import metric_base, parse_ncu_csv
from ..models.banks import (WAVEFRONT_BYTES, ideal_wavefronts, plain_rows_conflicts,
                            read_conflicts, tma_write_conflicts, wavefronts)
from . import config, dry_run, figures, launch, prediction, suite  # noqa: F401
from .config import (ROW_BOXES, SWIZZLES, base_config, kernel_layout, row_box_variants,
                     swizzle_variants, tma_loads_per_stage, tma_once_variants, variant_key,
                     variant_name, variants)
from .dry_run import stage_dry_run, tile_origin, tma_once_plan, tma_once_reference
from .figures import budget_markdown, budget_table
from .launch import (CHECK_SHAPES, TMA_ONCE_CHECK_SHAPES, TmaOnceSampled, check_variants,
                     compare_tma_once, shared_lsu_instructions, verify_tma_once)
from .prediction import (PREDICTED_RATIO, PREDICTED_RATIO_ROW_BOXES, PREDICTED_RATIO_TMA_ONCE,
                         PREDICTION, PREDICTION_ROW_BOXES, PREDICTION_TMA_ONCE, TMA_SHARE_MAX,
                         WGMMA_SHARE_MIN, bank_model, predicted_ratio, prediction_markdown,
                         row_box_markdown)
from .suite import (NCU_METRICS, SIZES, SUITES, box_count_rows, box_count_text, measure_swizzle,
                    ncu_rows, ncu_size, ncu_text, summarize_swizzle, swizzle_table,
                    tma_once_outcome, tma_once_rows, tma_once_text)

__all__ = ["SWIZZLES", "SIZES", "ROW_BOXES", "PREDICTION", "PREDICTION_ROW_BOXES",
           "PREDICTED_RATIO", "PREDICTED_RATIO_ROW_BOXES", "predicted_ratio", "NCU_METRICS",
           "base_config", "swizzle_variants", "row_box_variants", "variants", "variant_key",
           "variant_name", "tma_loads_per_stage", "tma_once_variants", "PREDICTION_TMA_ONCE",
           "PREDICTED_RATIO_TMA_ONCE", "TMA_SHARE_MAX", "WGMMA_SHARE_MIN", "tile_origin",
           "tma_once_plan", "tma_once_reference", "compare_tma_once", "TMA_ONCE_CHECK_SHAPES",
           "verify_tma_once", "TmaOnceSampled", "tma_once_rows", "tma_once_outcome",
           "tma_once_text", "box_count_rows", "box_count_text", "row_box_markdown", "wavefronts", "ideal_wavefronts", "read_conflicts", "plain_rows_conflicts",
           "tma_write_conflicts", "bank_model", "prediction_markdown", "kernel_layout", "metric_base",
           "stage_dry_run", "shared_lsu_instructions", "parse_ncu_csv", "ncu_size", "ncu_rows",
           "ncu_text", "check_variants",
           "measure_swizzle", "swizzle_table", "summarize_swizzle", "budget_table",
           "budget_markdown", "SUITES"]
