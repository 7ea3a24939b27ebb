"""Chapter 07: the swizzle claim measured, and the tile / stage / register budget table.

The seed article says the right shared-memory swizzle is worth 10-20 %. This module runs the
*same* warp-specialized kernel (chapter 06's rung 5: 128×256×64, two consumer warpgroups, four
stages, persistent; fp16, B K-major) with the operand tiles under a 128-, 64-, 32-byte or no
swizzle (:attr:`asynctc.warp_specialization.WSConfig.swizzle`). Everything that depends on the
swizzle — the TMA boxes and the tensor maps' swizzle, the stage layout (``k_boxes`` boxes along
K per operand), the wgmma descriptor templates (layout type, LBO, SBO), the m64-atom and k-step
offsets — comes from one layout model, :meth:`WSConfig.stage_tiles` (:class:`asynctc.models.
descriptors.OperandTile`, whose boxes are :class:`asynctc.models.layout.SmemTile`).

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

import dataclasses
import json
import re
from pathlib import Path

import numpy as np

from . import warp_specialization as W
from .core.memory import DeviceArray
from .models import descriptors as D
from .models.layout import BANK_BYTES, BANKS, SmemTile

#: Bytes one shared-memory wavefront delivers: one 4-byte word from each of the 32 banks.
WAVEFRONT_BYTES = BANKS * BANK_BYTES

#: The swizzle spans measured, widest first (128 is the ladder's).
SWIZZLES = W.SWIZZLES

#: Square sizes timed (fp16).
SIZES = (4096, 8192)

#: Row-box counts R of the ``128B ×R boxes`` variants: A and B each loaded as R TMA boxes along
#: the rows under the 128-byte swizzle, 2R box operations per stage — as many as the 64-byte (2),
#: 32-byte (4) and unswizzled (8) variants issue, and 16 (8-row A boxes) beyond.
ROW_BOXES = (2, 4, 8, 16)


def base_config(dtype: str = "float16") -> W.WSConfig:
    """Chapter 06's rung 5 (persistent, 128×256×64, two consumers, four stages, B K-major) with C
    in the input dtype: the kernel the swizzle experiment varies."""
    return W.RUNGS[4].make(dtype).replace(out_dtype=dtype, b_major="K")


def swizzle_variants(dtype: str = "float16") -> list[W.WSConfig]:
    """:func:`base_config` under each swizzle of :data:`SWIZZLES` (one box along the rows)."""
    return [base_config(dtype).replace(swizzle=s) for s in SWIZZLES]


def row_box_variants(dtype: str = "float16") -> list[W.WSConfig]:
    """:func:`base_config` (128-byte swizzle) with A and B loaded as R boxes along the rows, R in
    :data:`ROW_BOXES` (:attr:`asynctc.warp_specialization.WSConfig.row_boxes`)."""
    return [base_config(dtype).replace(row_boxes=r) for r in ROW_BOXES]


def tma_once_variants(dtype: str = "float16") -> list[W.WSConfig]:
    """:func:`swizzle_variants` with ``tma_once`` (:attr:`asynctc.warp_specialization.WSConfig.
    tma_once`): the stages loaded once, then read by wgmma over and over — "wgmma only"."""
    return [c.replace(tma_once=True) for c in swizzle_variants(dtype)]


def variants(dtype: str = "float16") -> list[W.WSConfig]:
    """Every variant the experiment runs, in this order: :func:`swizzle_variants` (128, 64, 32,
    none), then :func:`row_box_variants` (128 B × 2, 4, 8, 16 boxes), then
    :func:`tma_once_variants` (128, 64, 32, none, wgmma only)."""
    return swizzle_variants(dtype) + row_box_variants(dtype) + tma_once_variants(dtype)


def variant_key(cfg: W.WSConfig) -> str:
    """The key of a variant in a record: ``"128"``, ``"64"``, ``"32"``, ``"0"`` (the swizzle, as
    the first record has them), ``"128x2"`` .. ``"128x16"`` (128-byte swizzle, R row boxes) or
    ``"128once"`` .. ``"0once"`` (wgmma only: stages loaded once)."""
    return _key(cfg.swizzle, cfg.row_boxes, cfg.tma_once)


def variant_name(swizzle: int, row_boxes: int = 1, tma_once: bool = False) -> str:
    """Short name for tables: ``128B``, ``64B``, ``32B``, ``none``, ``128B ×8 boxes``,
    ``32B wgmma only``."""
    sw = f"{swizzle}B" if swizzle else "none"
    if tma_once:
        return f"{sw} wgmma only"
    return sw if row_boxes == 1 else f"{sw} ×{row_boxes} boxes"


def tma_loads_per_stage(cfg: W.WSConfig) -> int:
    """cp.async.bulk.tensor issues per stage (A and B): 2 · k_boxes · row_boxes (2, 4, 8, 16 for
    128 / 64 / 32 / no swizzle; 2R for R row boxes) — what the cubin's UTMALDG count shows. For a
    ``tma_once`` variant: per stage of its one and only fill."""
    return 2 * cfg.k_boxes * cfg.row_boxes


# --------------------------------------------------------------------------------------------------
# The bank model
# --------------------------------------------------------------------------------------------------

def wavefronts(addresses, width: int) -> int:
    """Wavefronts one shared-memory request needs: ``addresses`` (byte addresses, one per element or
    lane) each reading ``width`` bytes. Every 4-byte word touched lies in bank (word mod 32); a
    wavefront delivers one word per bank (the same word to any number of readers), so the request
    takes the largest number of distinct words in one bank (≥ 1). Raises :class:`ValueError` for
    an empty request or a ``width`` below 1."""
    a = np.asarray(addresses, dtype=np.int64).ravel()
    if a.size == 0:
        raise ValueError("addresses: an empty request")
    if width < 1:
        raise ValueError(f"width={width}: bytes per access must be ≥ 1")
    first, last = a // BANK_BYTES, (a + width - 1) // BANK_BYTES
    words = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
    return int(np.bincount(words % BANKS, minlength=BANKS).max())


def ideal_wavefronts(addresses, width: int) -> int:
    """The fewest wavefronts the bytes of a request could take: distinct words / 32, rounded up."""
    a = np.asarray(addresses, dtype=np.int64).ravel()
    first, last = a // BANK_BYTES, (a + width - 1) // BANK_BYTES
    words = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
    return max(1, -(-words.size // BANKS))


def read_conflicts(addr: np.ndarray, itemsize: int, rows: int = 8, kbytes: int = 16) -> dict:
    """Conflict factor of reading an operand in blocks of ``rows`` rows × ``kbytes`` bytes of K.

    ``addr``: ``(mn, k)`` byte addresses of the operand's elements (what the reader fetches: the
    descriptor model's :meth:`OperandTile.addresses` for wgmma); blocks start at multiples of
    ``rows`` and ``kbytes``. The default block is one core matrix (8 rows × 16 bytes = 128 bytes),
    the unit of every wgmma canonical layout (PTX ISA §9.7.15.5.1.2.1). Returns ``blocks``,
    ``wavefronts`` (sum), ``ideal`` (sum), ``factor`` (wavefronts / ideal: 1.0 is conflict-free)
    and ``worst`` (the largest per-block ratio)."""
    addr = np.asarray(addr, dtype=np.int64)
    mn, k = addr.shape
    per = kbytes // itemsize
    if per < 1 or kbytes % itemsize or mn % rows or k % per:
        raise ValueError(f"blocks of {rows} rows × {kbytes} bytes do not tile a {mn}×{k} operand of "
                         f"{itemsize}-byte elements")
    total = ideal = 0
    worst = 0.0
    blocks = 0
    for r in range(0, mn, rows):
        for c in range(0, k, per):
            blk = addr[r:r + rows, c:c + per]
            w, i = wavefronts(blk, itemsize), ideal_wavefronts(blk, itemsize)
            total, ideal, blocks = total + w, ideal + i, blocks + 1
            worst = max(worst, w / i)
    return {"blocks": blocks, "wavefronts": total, "ideal": ideal, "factor": total / ideal,
            "worst": worst}


def plain_rows_conflicts(row_bytes: int, rows: int = 64, dtype: str = "float16", block_rows: int = 8,
                         kbytes: int = 16) -> dict:
    """The counterfactual: a tile stored row after row with no swizzle, ``row_bytes`` per row (what a
    TMA box ``row_bytes`` wide without swizzle leaves), read in the same 8-row × 16-byte blocks.
    128-byte rows put all 8 rows of a block in the same 4 banks (8 wavefronts), 64-byte rows 4,
    32-byte rows 2, 16-byte rows 1. No wgmma descriptor can read such a layout with rows wider
    than 16 bytes (the canonical layouts have no row pitch field): it is what ``ldmatrix`` or
    ``ld.shared`` of a core matrix would meet."""
    t = SmemTile(rows, row_bytes // np.dtype(dtype).itemsize, dtype, 0)
    return read_conflicts(t.offsets(), t.itemsize, block_rows, kbytes)


def tma_write_conflicts(tile: SmemTile) -> dict:
    """Wavefronts TMA needs to write one box if it writes the box's bytes in 128-byte pieces of
    consecutive rows (rows of ``inner_bytes``; 128 / inner_bytes rows per piece): each piece lands
    in :meth:`SmemTile.offsets`. Returns the same fields as :func:`read_conflicts`."""
    rows_per = max(1, WAVEFRONT_BYTES // tile.inner_bytes)
    off = tile.offsets()
    total = ideal = 0
    worst = 0.0
    for r in range(0, tile.rows, rows_per):
        blk = off[r:r + rows_per]
        w, i = wavefronts(blk, tile.itemsize), ideal_wavefronts(blk, tile.itemsize)
        total, ideal = total + w, ideal + i
        worst = max(worst, w / i)
    return {"blocks": -(-tile.rows // rows_per), "wavefronts": total, "ideal": ideal,
            "factor": total / ideal, "worst": worst}


def bank_model(cfg: W.WSConfig) -> dict:
    """The bank model of one variant: for A (one m64 atom) and B (the bn × 64 tile), the conflict
    factor of wgmma's core-matrix reads through the variant's own descriptors (``a_read``,
    ``b_read``; also in 8-row × 32-byte blocks, one k-step: ``a_read_kstep``), of TMA's writes of
    each box (``a_write``, ``b_write``), and the geometry TMA pays for: ``k_boxes`` per operand,
    ``tma_box_row_bytes`` (bytes per box row = bytes per row request), ``tma_loads_per_stage``
    (cp.async.bulk.tensor issues per stage, row boxes included) and
    ``tma_row_requests_per_stage`` (box rows per stage: the row boxes split the same rows);
    ``row_boxes`` and ``variant`` (:func:`variant_key`); ``plain_rows``:
    the factor a plain (unswizzled) tile with this variant's box width would have."""
    ta, tb = cfg.stage_tiles()
    atom = D.OperandTile(64, ta.k, ta.dtype, "K", ta.swizzle)
    es = ta.itemsize
    assert ta.n_boxes == tb.n_boxes == cfg.k_boxes
    out = {"swizzle": cfg.swizzle, "row_boxes": cfg.row_boxes, "variant": variant_key(cfg),
           "k_boxes": ta.n_boxes, "tma_box_row_bytes": ta.box_cols * es,
           "tma_loads_per_stage": tma_loads_per_stage(cfg),
           "tma_row_requests_per_stage": ta.n_boxes * ta.box_rows + tb.n_boxes * tb.box_rows,
           "descriptor_a": str(D.decode(cfg.descriptor_templates()[0])),
           "descriptor_b": str(D.decode(cfg.descriptor_templates()[1]))}
    for name, t in (("a", ta), ("b", tb)):
        read_tile = atom if name == "a" else t
        out[f"{name}_read"] = read_conflicts(read_tile.addresses(), es)["factor"]
        out[f"{name}_read_kstep"] = read_conflicts(read_tile.addresses(), es, 8, 32)["factor"]
        out[f"{name}_write"] = tma_write_conflicts(t.smem_tile())["factor"]
    out["plain_rows"] = plain_rows_conflicts(ta.box_cols * es)["factor"]
    return out


def prediction_markdown(dtype: str = "float16") -> str:
    """The bank model of every variant of :func:`swizzle_variants` as a markdown table, with the
    prediction for the GPU run (see :data:`PREDICTION`)."""
    rows = [bank_model(c) for c in swizzle_variants(dtype)]
    lines = [f"Bank model, {base_config(dtype).label()}, per swizzle "
             "(factor = wavefronts / ideal; 1.00 = conflict-free):", "",
             "| swizzle | boxes along K | bytes per box row | TMA loads per stage | TMA row requests "
             "per stage | wgmma A read | wgmma B read | A read per k-step | TMA write | plain rows "
             "of that width |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sw = f"{r['swizzle']} B" if r["swizzle"] else "none"
        lines.append(f"| {sw} | {r['k_boxes']} | {r['tma_box_row_bytes']} | "
                     f"{r['tma_loads_per_stage']} | {r['tma_row_requests_per_stage']} | "
                     f"{r['a_read']:.2f} | {r['b_read']:.2f} | {r['a_read_kstep']:.2f} | "
                     f"{max(r['a_write'], r['b_write']):.2f} | {r['plain_rows']:.2f} |")
    return "\n".join(lines)


def row_box_markdown(dtype: str = "float16") -> str:
    """The row-box variants (:func:`row_box_variants`) beside the 128-byte one as a markdown
    table: TMA loads per stage, rows per A / B box, bytes per box row, box rows per stage, whether
    :func:`stage_dry_run`'s stage image equals the 128-byte variant's (same inputs), and the
    swizzle variant that issues as many loads per stage."""
    base = base_config(dtype)
    same_loads = {tma_loads_per_stage(c): variant_name(c.swizzle) for c in swizzle_variants(dtype)}
    ref = stage_dry_run(base, np.random.default_rng(0), image=True)["image"]
    lines = [f"Row boxes, {base.label()}, 128-byte swizzle:", "",
             "| variant | TMA loads per stage | rows per A box / B box | bytes per box row | "
             "TMA row requests per stage | stage image = 128 B ×1 | as many loads as |",
             "|---|---|---|---|---|---|---|"]
    for c in [base] + row_box_variants(dtype):
        m = bank_model(c)
        img = stage_dry_run(c, np.random.default_rng(0), image=True)["image"]
        lines.append(f"| {variant_name(c.swizzle, c.row_boxes)} | {m['tma_loads_per_stage']} | "
                     f"{c.a_box.rows} / {c.b_load_box.rows} | {m['tma_box_row_bytes']} | "
                     f"{m['tma_row_requests_per_stage']} | "
                     f"{'yes' if np.array_equal(img, ref) else 'NO'} | "
                     f"{same_loads.get(m['tma_loads_per_stage'], '—')} |")
    return "\n".join(lines)


#: Written BEFORE the first GPU run of the swizzle experiment (2026-11-30: frozen in commit ef336ed
#: at 11:49 UTC; the swizzle record data/h200/swizzle.json is dated 11:55 UTC), from
#: :func:`prediction_markdown` and the SASS of the four cubins; kept as written.
PREDICTION = """\
Bank model, ws float16 128x256x64/c2 s4 B:K regs:40/232 persistent out:float16, per swizzle (factor = wavefronts / ideal; 1.00 = conflict-free):

| swizzle | boxes along K | bytes per box row | TMA loads per stage | TMA row requests per stage | wgmma A read | wgmma B read | A read per k-step | TMA write | plain rows of that width |
|---|---|---|---|---|---|---|---|---|---|
| 128 B | 1 | 128 | 2 | 384 | 1.00 | 1.00 | 1.00 | 1.00 | 8.00 |
| 64 B | 2 | 64 | 4 | 768 | 1.00 | 1.00 | 1.00 | 1.00 | 4.00 |
| 32 B | 4 | 32 | 8 | 1536 | 1.00 | 1.00 | 1.00 | 1.00 | 2.00 |
| none | 8 | 16 | 16 | 3072 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |

Prediction for the H200 run:
- Bank conflicts: none in any variant. Every wgmma canonical layout is conflict-free by construction (a core matrix is 8 rows x 16 bytes in 8 distinct 16-byte bank groups); what the swizzle buys is that TMA can *produce* that layout from a row-major global tile with wide boxes. Without a swizzle the boxes must be 16 bytes wide (one core-matrix column), so that a 128-byte K row is 8 boxes.
- Nsight Compute: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st = 0 and smsp__sass_inst_executed_op_shared_ld/st = 0 for all four: the cubins contain no LDS/STS/LDSM/STSM (register epilogue; wgmma and TMA bypass the LSU pipe), so these counters cannot see the swizzle. l1tex__data_bank_reads / _writes equal across the four within 2 % (same bytes, no conflicts).
- Throughput (fraction of the 128-byte variant, same run): 64 B 0.97-1.00; 32 B 0.90-1.00; none 0.50-0.90 — any loss comes from TMA (2x, 4x, 8x the boxes and row requests of narrower rows; 16-byte rows are half a 32-byte L2 sector), not from bank conflicts. The seed's 10-20 % is then a statement about TMA box width, or about an ldmatrix/ld.shared kernel reading an unswizzled tile (8 / 4 / 2-way conflicts above), not about swizzle modes under wgmma.
"""

#: Written 2026-11-30 BEFORE the first GPU run of the row-box variants (after the swizzle record
#: data/h200/swizzle.json of 11:55 UTC, whose numbers it quotes), from :func:`row_box_markdown` and
#: the SASS of their cubins; appended to :data:`PREDICTION`, whose earlier text is unchanged.
PREDICTION_ROW_BOXES = """\
Row boxes, ws float16 128x256x64/c2 s4 B:K regs:40/232 persistent out:float16, 128-byte swizzle:

| variant | TMA loads per stage | rows per A box / B box | bytes per box row | TMA row requests per stage | stage image = 128 B ×1 | as many loads as |
|---|---|---|---|---|---|---|
| 128B | 2 | 128 / 256 | 128 | 384 | yes | 128B |
| 128B ×2 boxes | 4 | 64 / 128 | 128 | 384 | yes | 64B |
| 128B ×4 boxes | 8 | 32 / 64 | 128 | 384 | yes | 32B |
| 128B ×8 boxes | 16 | 16 / 32 | 128 | 384 | yes | none |
| 128B ×16 boxes | 32 | 8 / 16 | 128 | 384 | yes | — |

Prediction for the H200 run of the row boxes (written 2026-11-30, before it; the first run measured 64 B 0.955-0.963, 32 B 0.48-0.51, none 0.29-0.31 of 128 B with equal bank reads, and 32 B reading the same TMA bytes as 128 B):
- Checks: every row-box variant matches float64 (same layout, same descriptors; the cubins differ only in the producer's 2R UTMALDG).
- Throughput (fraction of 128 B ×1, same run): ×2 0.97-1.01; ×4 0.97-1.01; ×8 0.97-1.01; ×16 0.85-1.01. The loss of the narrow swizzles tracks the TMA row requests per stage (768 / 1536 / 3072 narrow rows of 64 / 32 / 16 bytes against 384 rows of 128 bytes), which the row boxes leave at 384 rows of 128 bytes: one producer thread issuing 4-16 boxes per ~1600-cycle k-tile is far from any issue limit. At ×16 (32 boxes, 1 KiB A boxes) a per-box cost could begin to show.
- Nsight Compute: TMA load bytes equal to 128 B ×1 in every row-box variant; profiled duration within 3 % of it for ×2-×8.
- What each outcome means: (1) ×4 and ×8 inside 0.97-1.01 while 32 B and none lost 50 % and 70 % with the same number of box operations: the NUMBER of TMA boxes is not the cause (a refuted as "box count"); the loss lies in the narrow layouts themselves — TMA's narrower row requests (bytes per request) or wgmma's fetch of the 32-byte / interleaved layout (b) — which this experiment cannot split (next: wgmma alone on a stage loaded once, per layout). (2) ×4 near 0.5 and ×8 near 0.3 (the narrow variants' ratios at equal box counts): box count explains the loss (a), and the layout wgmma reads does not matter. (3) Between: both contribute; the row-box ratio at equal box count is the part (a) explains, the rest is the layout's.
"""

PREDICTION = PREDICTION + "\n" + PREDICTION_ROW_BOXES

#: Written 2026-11-30 BEFORE the first GPU run of the wgmma-only variants (after the row-box
#: record of that day, whose numbers it quotes): kept as written; appended to :data:`PREDICTION`.
PREDICTION_TMA_ONCE = """\
wgmma only (tma_once), ws float16 128x256x64/c2 s4 B:K regs:40/232 persistent out:float16: the producer fills the 4 stages once (the CTA's first tile, k-tiles 0-3) and afterwards only arrives on full[s] (mbarrier.arrive, no expect_tx, no copy); the consumers' wgmmas read stage i mod 4 over and over through the same descriptors. C is then not A·B (asynctc.swizzle.tma_once_reference says what it is; the checks hold every variant to it). Its TFLOP/s is wgmma throughput on reused stages, not a GEMM.

Prediction for the H200 run (written 2026-11-30, before it; with TMA the record has 64 B 0.955-0.963, 32 B 0.47-0.51, none 0.30 of 128 B; 128 B loaded as 2-8 row boxes 0.97-1.00; at the in-flight clock the with-TMA k-tile takes ~1100-1300 cycles per CTA for 128 B, ~2700-2800 for 32 B and ~4500 for none, i.e. 1.8 cycles per 32-byte and 1.5 per 16-byte box row):
- Checks: all four match tma_once_reference elementwise (same consumers and epilogue; the producer's plain arrive completes each later phase with a tx-count of 0).
- 128 B wgmma only: 1.00-1.15 of 128 B with TMA (no global loads at all; the k-tile approaches the ~1024 cycles of the Tensor Core's dense fp16 rate).
- 64 B, 32 B and none wgmma only: 0.97-1.01 of 128 B wgmma only. Reason: every layout's core matrices are conflict-free (bank model) and the bank reads were equal with TMA; the narrow variants' k-tile times fit a TMA cost per box row (768 / 1536 / 3072 rows of 64 / 32 / 16 bytes against 384 of 128) — which this variant removes. Confidence: moderate (the fit has one parameter per width, and wgmma's internal fetch of the 32-byte and interleaved layouts is not documented).
- Nsight Compute (where taken): TMA load bytes of the wgmma-only variants only the first fill, 132 CTAs × 4 stages × 48 KiB ≈ 26 MB at 4096³ (their TMA twins: ~1.6 GB); shared-memory bank reads equal to their TMA twins'.
- What each outcome means, for 32 B and none, with the wgmma share of the loss s = (1 - wgmma-only ratio) / (1 - with-TMA ratio), both as fractions of their own 128 B variant in the same run: (1) s <= 0.2 at both sizes (wgmma-only 32 B >= ~0.90, none >= ~0.86): wgmma reads the narrow layouts at full rate; the loss is TMA's narrow row requests. (2) s >= 0.8: wgmma's fetch of those layouts is the cause; TMA keeps up. (3) Between: both contribute, s is wgmma's share.
"""

PREDICTION = PREDICTION + "\n" + PREDICTION_TMA_ONCE

#: The predicted range per swizzle of the wgmma-only variants, as fractions of 128 B wgmma only
#: (from :data:`PREDICTION_TMA_ONCE`); the 128-byte entry is against 128 B *with* TMA.
PREDICTED_RATIO_TMA_ONCE = {128: (1.00, 1.15), 64: (0.97, 1.01), 32: (0.97, 1.01), 0: (0.97, 1.01)}

#: The outcome of :data:`PREDICTION_TMA_ONCE` from the wgmma share of the loss s (frozen with it):
#: s ≤ TMA_SHARE_MAX → "tma", s ≥ WGMMA_SHARE_MIN → "wgmma", else "both".
TMA_SHARE_MAX, WGMMA_SHARE_MIN = 0.2, 0.8

#: The predicted throughput range per swizzle, as fractions of the 128-byte variant (from
#: :data:`PREDICTION`), for the summary's "inside the prediction?" column.
PREDICTED_RATIO = {128: (1.0, 1.0), 64: (0.97, 1.00), 32: (0.90, 1.00), 0: (0.50, 0.90)}

#: The predicted range per row-box count R (128-byte swizzle), as fractions of the one-box
#: 128-byte variant (from :data:`PREDICTION_ROW_BOXES`).
PREDICTED_RATIO_ROW_BOXES = {2: (0.97, 1.01), 4: (0.97, 1.01), 8: (0.97, 1.01), 16: (0.85, 1.01)}


def predicted_ratio(swizzle: int, row_boxes: int = 1) -> tuple[float, float] | None:
    """The frozen predicted range (fraction of 128 B ×1) of a variant, None if none was made."""
    if row_boxes == 1:
        return PREDICTED_RATIO.get(swizzle)
    return PREDICTED_RATIO_ROW_BOXES.get(row_boxes) if swizzle == 128 else None


# --------------------------------------------------------------------------------------------------
# The dry run: the kernel's address arithmetic on one stage, in numpy
# --------------------------------------------------------------------------------------------------

def _braced(v) -> list[int]:
    return [int(x) for x in str(v).strip("{}").split(",")]


def kernel_layout(cfg: W.WSConfig) -> dict:
    """The numbers the kernel uses for ``cfg``, read back from its defines (the kernel's defaults
    where the 128-byte build sets none): ``k_boxes``, ``k_box_elems``, ``a_kbox_bytes``,
    ``b_box_bytes``, ``a_atom_bytes``, ``a_tile_bytes`` (B's offset in a stage), ``a_ksteps`` /
    ``b_ksteps`` (byte offset of each k-step), ``desc_a0`` / ``desc_b0``, ``a_box`` / ``b_box``
    (the tensor maps' :class:`SmemTile`), ``row_boxes`` (``ROW_BOXES``, 1 where unset) and
    ``a_rbox_bytes`` / ``b_rbox_bytes`` (bytes from one row box to the next: the kernel's
    rows per box · 128)."""
    d = cfg.defines
    kst = 128 // 32
    a_kb = d.get("A_KSTEP_BYTES", 32)
    b_kb = d.get("B_KSTEP_BYTES", 32)
    da, db = cfg.descriptor_templates()
    return {"k_boxes": d.get("K_BOXES", 1), "k_box_elems": d.get("K_BOX_ELEMS", cfg.bk),
            "a_kbox_bytes": d.get("A_KBOX_BYTES", cfg.bm * 128),
            "b_box_bytes": d.get("B_BOX_BYTES", cfg.bn * 128),
            "a_atom_bytes": d.get("A_ATOM_BYTES", 64 * 128), "a_tile_bytes": cfg.bm * 128,
            "a_ksteps": _braced(d["A_KSTEP_OFFSETS"]) if "A_KSTEP_OFFSETS" in d else
            [s * a_kb for s in range(kst)],
            "b_ksteps": _braced(d["B_KSTEP_OFFSETS"]) if "B_KSTEP_OFFSETS" in d else
            [s * b_kb for s in range(kst)],
            "desc_a0": da, "desc_b0": db, "a_box": cfg.a_box, "b_box": cfg.b_load_box,
            "row_boxes": d.get("ROW_BOXES", 1),
            "a_rbox_bytes": cfg.bm // d.get("ROW_BOXES", 1) * 128,
            "b_rbox_bytes": cfg.bn // d.get("ROW_BOXES", 1) * 128}


def stage_dry_run(cfg: W.WSConfig, rng=None, layout: dict | None = None,
                  image: bool = False) -> dict:
    """Replay the kernel's data path for one k-tile in numpy and compare what wgmma would read with
    the operands.

    TMA side (``load_stage``): box j of A (rows m0.., columns kt·BK + j·K_BOX_ELEMS..) is written
    with the tensor map's :class:`SmemTile` (:meth:`~SmemTile.scatter`) at stage offset
    j · A_KBOX_BYTES; B's boxes at A_TILE + j · B_BOX_BYTES; with ROW_BOXES = R, box r along the
    rows (rows r · BM/R.. of A, r · BN/R.. of B) lands r · rows · 128 bytes further. wgmma side (``mma_ktile``): consumer
    cw's atom i at k-step s reads through ``desc_a0`` advanced by (cw·atoms + i) · A_ATOM_BYTES +
    A_KSTEP_OFFSETS[s] and ``desc_b0`` advanced by A_TILE + B_KSTEP_OFFSETS[s]
    (:func:`asynctc.models.descriptors.read_addresses`). ``layout`` overrides
    :func:`kernel_layout` (to show what a wrong number does). Returns ``a_wrong`` / ``b_wrong``
    (elements read wrong) and ``c_max_err`` (the k-tile's product against float64); with
    ``image``, also ``image``: the stage's bytes after the TMA side (uint8, to compare layouts:
    the same ``rng`` seed gives the same operands)."""
    if cfg.b_major != "K":
        raise W.WarpSpecializationError("stage_dry_run: K-major B only (the swizzle variants)")
    rng = rng if rng is not None else np.random.default_rng()
    L = kernel_layout(cfg) if layout is None else layout
    from .pipeline import np_dtype
    dt = np_dtype(cfg.dtype)
    bk, es = cfg.bk, W.itemsize(cfg.dtype)
    a = rng.standard_normal((cfg.bm, bk)).astype(dt)
    b = rng.standard_normal((cfg.bn, bk)).astype(dt)            # B stored N×K
    size = cfg.stage_bytes
    smem = np.zeros(size, np.uint8)
    nr = L.get("row_boxes", 1)
    for j in range(L["k_boxes"]):
        cols = slice(j * L["k_box_elems"], (j + 1) * L["k_box_elems"])
        for r in range(nr):
            for base, tile, x in ((j * L["a_kbox_bytes"] + r * L.get("a_rbox_bytes", 0), L["a_box"],
                                   a),
                                  (L["a_tile_bytes"] + j * L["b_box_bytes"] +
                                   r * L.get("b_rbox_bytes", 0), L["b_box"], b)):
                rows = slice(r * tile.rows, (r + 1) * tile.rows)
                img = tile.scatter(np.ascontiguousarray(x[rows, cols]).view(
                    np.uint8 if es == 1 else np.uint16))
                smem[base:base + img.size] = img
    da0, db0 = D.decode(L["desc_a0"]), D.decode(L["desc_b0"])
    kk = D.instruction_k(cfg.dtype)
    atoms = cfg.bm // cfg.consumers // 64
    got_a = np.zeros_like(a)
    got_b = np.zeros_like(b)

    def read(desc, mn):
        addr = D.read_addresses(desc, "K", cfg.dtype, mn)
        idx = addr[..., None] + np.arange(es)
        if idx.max() >= size or idx.min() < 0:
            raise IndexError(f"a descriptor reads byte {int(idx.max())} outside the {size}-byte stage")
        return smem[idx.reshape(-1)].view(dt).reshape(mn, kk)
    for s in range(bk // kk):
        ks = slice(s * kk, (s + 1) * kk)
        got_b[:, ks] = read(db0.advanced(L["a_tile_bytes"] + L["b_ksteps"][s]), cfg.bn)
        for cw in range(cfg.consumers):
            for i in range(atoms):
                off = (cw * atoms + i) * L["a_atom_bytes"] + L["a_ksteps"][s]
                r0 = (cw * atoms + i) * 64
                got_a[r0:r0 + 64, ks] = read(da0.advanced(off), 64)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    c = got_a.astype(np.float64) @ got_b.astype(np.float64).T
    out = {"a_wrong": int((got_a.view(np.uint16 if es == 2 else np.uint8) !=
                           a.view(np.uint16 if es == 2 else np.uint8)).sum()),
           "b_wrong": int((got_b.view(np.uint16 if es == 2 else np.uint8) !=
                           b.view(np.uint16 if es == 2 else np.uint8)).sum()),
           "c_max_err": float(np.abs(c - ref).max())}
    if image:
        out["image"] = smem
    return out


def shared_lsu_instructions(ck) -> dict:
    """LSU shared-memory instructions in a cubin's SASS (LDS, STS, LDSM, STSM, and ATOMS/LD/ST to
    shared): what Nsight Compute's ``..._pipe_lsu_mem_shared_...`` counters count. wgmma (HGMMA)
    and TMA (UTMALDG) are listed apart; they do not use the LSU pipe."""
    from .core import sass
    oc = sass.opcode_counts(ck.sass())
    lsu = {k: v for k, v in oc.items() if re.match(r"(LDS|STS|LDSM|STSM|ATOMS)\b", k.split(".")[0])}
    return {"lsu_shared": sum(lsu.values()), "lsu_opcodes": lsu,
            "hgmma": sum(v for k, v in oc.items() if k.startswith("HGMMA")),
            "utmaldg": sum(v for k, v in oc.items() if k.startswith("UTMALDG"))}

# --------------------------------------------------------------------------------------------------
# wgmma only: what a tma_once launch computes
# --------------------------------------------------------------------------------------------------

def tile_origin(cfg: W.WSConfig, item: int, tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """(m0, n0) of work item ``item`` in the kernel's group-M raster (``tile_origin`` in
    kernels/warp_specialization.cu, cluster 1): ``group_m`` tile rows walked column by column."""
    g = max(cfg.group_m, 1)
    per_group = g * tiles_n
    first_m = item // per_group * g
    rows = min(tiles_m - first_m, g)
    in_group = item % per_group
    return (first_m + in_group % rows) * cfg.bm, in_group // rows * cfg.bn


def tma_once_plan(cfg: W.WSConfig, m: int, n: int, k: int, grid: int) -> list[dict]:
    """What each output tile of a ``tma_once`` launch is made of, one dict per tile in the order
    the CTAs take them: ``cta``, ``m0`` / ``n0`` (the tile), ``src_m0`` / ``src_n0`` (the CTA's
    *first* tile, whose k-tiles 0..S−1 fill the S stages once) and ``counts`` (how many of the
    tile's T = K / bk k-tiles read stage j, j = 0..S−1).

    The producer and the consumers walk one ring counter i over all (tile, k-tile) pairs of the
    CTA (tiles b, b + grid, ...): the t-th tile's k-tile k is i = t·T + k and reads stage i mod S,
    which holds k-tile i of the first tile for i < S and never changes after. So the t-th tile
    reads stage j ``counts[j]`` = #{k < T : (t·T + k) mod S = j} times: T/S each when S divides
    T, else depending on t. Raises :class:`asynctc.warp_specialization.WarpSpecializationError`
    for a config without ``tma_once`` or a shape it refuses (:func:`asynctc.warp_specialization.
    check_shapes`: multiples of the tile, K ≥ S · bk), and for ``grid`` < 1."""
    if not cfg.tma_once:
        W._fail("cfg.tma_once", False, "tma_once_plan describes tma_once launches only")
    W.check_shapes(m, n, k, cfg)
    if not isinstance(grid, (int, np.integer)) or grid < 1:
        W._fail("grid", grid, "CTAs of the launch: an integer ≥ 1")
    tiles_m, tiles_n, t_k = W.tile_counts(cfg, m, n, k)
    s = cfg.stages
    out = []
    for cta in range(min(grid, tiles_m * tiles_n)):
        src = tile_origin(cfg, cta, tiles_m, tiles_n)
        for t, item in enumerate(range(cta, tiles_m * tiles_n, grid)):
            counts = np.bincount((t * t_k + np.arange(t_k)) % s, minlength=s)
            m0, n0 = tile_origin(cfg, item, tiles_m, tiles_n)
            out.append({"cta": cta, "m0": m0, "n0": n0, "src_m0": src[0], "src_n0": src[1],
                        "counts": [int(x) for x in counts]})
    return out


def tma_once_reference(a: np.ndarray, b: np.ndarray, cfg: W.WSConfig, m: int, n: int, k: int,
                       grid: int, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """The float64 C a ``tma_once`` launch must produce, and the |·| sum that scales its bound.

    ``a``: M×K, ``b``: B stored N×K (K-major, as the variants take it), any float dtype; ``grid``:
    the launch's CTAs (:attr:`asynctc.warp_specialization.WSGemm.grid`); ``rows``: the C rows
    wanted (default all), in that order. Per tile (:func:`tma_once_plan`): C = Σ_j counts[j] ·
    A[src_m0.., k-tile j] · B[src_n0.., k-tile j]ᵀ over the S stages — the CTA's first tile's
    first S k-tiles, whatever tile it computes. Returns ``(ref, mag)``, ``len(rows)`` × N each;
    ``mag`` = the same sum of |A|·|B|ᵀ (a sum of K products, like |A|·|B| for a GEMM)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != (m, k) or b64.shape != (n, k):
        W._fail("a, b", (a64.shape, b64.shape), f"A must be M×K = {(m, k)}, B stored N×K = {(n, k)}")
    plan = tma_once_plan(cfg, m, n, k, grid)
    rows = np.arange(m) if rows is None else np.asarray(rows, np.int64)
    ref = np.full((rows.size, n), np.nan)
    mag = np.full((rows.size, n), np.nan)
    bm, bn, bk = cfg.bm, cfg.bn, cfg.bk
    stages = {}
    for p in plan:
        want = (rows >= p["m0"]) & (rows < p["m0"] + bm)
        if not want.any():
            continue
        src = (p["src_m0"], p["src_n0"])
        if src not in stages:            # the S stage products of this CTA's one fill
            prods = []
            for j in range(cfg.stages):
                aj = a64[src[0]:src[0] + bm, j * bk:(j + 1) * bk]
                bj = b64[src[1]:src[1] + bn, j * bk:(j + 1) * bk]
                prods.append((aj @ bj.T, np.abs(aj) @ np.abs(bj).T))
            stages[src] = prods
        local = rows[want] - p["m0"]
        c = sum(cnt * pr[0][local] for cnt, pr in zip(p["counts"], stages[src]))
        g = sum(cnt * pr[1][local] for cnt, pr in zip(p["counts"], stages[src]))
        ref[want, p["n0"]:p["n0"] + bn] = c
        mag[want, p["n0"]:p["n0"] + bn] = g
    return ref, mag


def compare_tma_once(out: np.ndarray, ref: np.ndarray, mag: np.ndarray, k: int, out_dtype: str,
                     label: str = ""):
    """Element by element, as :func:`asynctc.pipeline.compare_elementwise` with ``ref`` / ``mag``
    given (:func:`tma_once_reference`): bound K · 2⁻²¹ · mag + 2 · the output's rounding · |ref|;
    an element left NaN (poison) counts as unwritten. Returns an
    :class:`asynctc.pipeline.ElementCheck`."""
    from . import pipeline as P
    o = np.asarray(out).astype(np.float64)
    if o.shape != ref.shape:
        W._fail("out", o.shape, f"must have the reference's shape {ref.shape}")
    bound = k * 2.0 ** -21 * mag + 2 * P.OUT_ROUNDING[out_dtype] * np.abs(ref)
    finite = np.isfinite(o)
    ratio = np.where(finite, np.abs(o - ref) / bound, np.inf)
    bad = ratio > 1.0
    first = tuple(int(x) for x in np.argwhere(bad)[0]) if bad.any() else None
    rel = float(np.linalg.norm(np.where(finite, o, 0.0) - ref) / np.linalg.norm(ref))
    return P.ElementCheck((ref.shape[0], ref.shape[1], k), label, float(ratio.max()),
                          int(np.count_nonzero(bad & finite)), int(np.count_nonzero(~finite)),
                          first, rel)


#: Shapes the wgmma-only variants are checked on (K ≥ 4 stages of 64): 12 tiles (one per CTA,
#: T = 16 = 4 · S); 256 tiles on 132 CTAs (CTAs take one or two tiles; T = 6, not a multiple of
#: S: a second tile reads the stages 1, 1, 2, 2 times instead of 2, 2, 1, 1); 4 tiles, T = 5.
TMA_ONCE_CHECK_SHAPES = ((512, 768, 1024), (2048, 4096, 384), (256, 512, 320))


def verify_tma_once(cfg: W.WSConfig, m: int, n: int, k: int, rng=None):
    """Run a ``tma_once`` ``cfg`` on fresh random inputs (poisoned output) and compare every
    element with :func:`tma_once_reference` for the launch's grid (:func:`compare_tma_once`)."""
    from . import pipeline as P
    if not cfg.tma_once:
        W._fail("cfg.tma_once", False, "verify_tma_once checks tma_once launches only "
                                       "(others: asynctc.warp_specialization.verify)")
    W.check_shapes(m, n, k, cfg)
    a, _, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    g = W.run_ws(a, bs, cfg)
    ref, mag = tma_once_reference(a, bs, cfg, m, n, k, g.grid)
    return compare_tma_once(g.out.to_host(), ref, mag, k, cfg.out_dtype, cfg.label())


class TmaOnceSampled:
    """The sampled rows of a *timed* ``tma_once`` output (as
    :class:`asynctc.core.checks.SampledReference`): every row when M ≤ ``checks.FULL_CHECK_MAX``,
    else one random row per 128-row band, against :func:`tma_once_reference` for ``grid``;
    :meth:`check` also counts poison anywhere in the output (every element written)."""

    def __init__(self, a, b, cfg: W.WSConfig, grid: int, rng=None):
        from .core import checks
        rng = rng if rng is not None else np.random.default_rng()
        m, k = a.shape
        n = b.shape[0]
        block = 1 if m <= checks.FULL_CHECK_MAX else 128
        starts = np.arange(0, m, block)
        self.rows = np.minimum(starts + rng.integers(0, block, size=len(starts)), m - 1)
        self.cfg, self.grid, self.shape = cfg, grid, (m, n, k)
        self.ref, self.mag = tma_once_reference(a, b, cfg, m, n, k, grid, self.rows)

    def check(self, out):
        """A :class:`asynctc.core.checks.Check` of the sampled rows; elements unwritten anywhere
        in ``out`` (NaN poison) are added to its ``unwritten``."""
        from .core import checks
        host = out.to_host() if hasattr(out, "to_host") else np.asarray(out)
        c = checks.compare(host[self.rows], self.ref, self.cfg.dtype, self.shape,
                           scale=self.mag)
        left = int(np.count_nonzero(~np.isfinite(host.astype(np.float32))))
        return dataclasses.replace(c, unwritten=max(c.unwritten, left))


# --------------------------------------------------------------------------------------------------
# Nsight Compute
# --------------------------------------------------------------------------------------------------

#: Counters asked of Nsight Compute per variant, where this ncu knows them (``--query-metrics``):
#: LSU shared-memory bank conflicts and instructions (what the seed's claim is usually measured
#: with), all bank reads/writes of L1/shared memory (wgmma and TMA included), wgmma instructions and
#: TMA bytes. Names from the Nsight Compute Profiling Guide's metric structure
#: (unit__counter_pipe_mem_op.rollup); an ncu that lacks one skips it and says so in the record.
NCU_METRICS = (
    "gpu__time_duration.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_bank_reads.sum",
    "l1tex__data_bank_writes.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
)


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` output: one dict per profiled launch (in launch order),
    column name → float, or the string where it is not a number. Everything before the header
    (the line whose first field is ``ID``), ncu's log lines (``==PROF==``, ``==ERROR==``) and the
    units row are skipped."""
    import csv
    import io
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    start = next((i for i, r in enumerate(rows) if r and r[0].strip() == "ID"), None)
    if start is None:
        return []
    head = rows[start]
    out = []
    for r in rows[start + 1:]:
        if len(r) != len(head) or not r[0].strip().isdigit():
            continue                                   # the units row, or a truncated line
        row = {}
        for k, v in zip(head, r):
            try:
                row[k] = float(v.replace(",", ""))
            except ValueError:
                row[k] = v
        out.append(row)
    return out


def metric_base(name: str) -> str:
    """``l1tex__data_bank_reads.sum`` → ``l1tex__data_bank_reads`` (the name ``ncu
    --query-metrics`` lists; the suffix is the roll-up)."""
    return name.split(".", 1)[0]


# --------------------------------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------------------------------

CHECK_SHAPES = ((512, 768, 1024), (256, 512, 192), (2048, 4096, 512))


def check_variants(configs=None, rng=None, progress=None) -> list[dict]:
    """Every variant on :data:`CHECK_SHAPES` against float64 (fresh random inputs, poisoned output,
    elementwise bound relative to |A|·|B|: :func:`asynctc.warp_specialization.verify`) — the
    wgmma-only ones on :data:`TMA_ONCE_CHECK_SHAPES` against what they compute
    (:func:`verify_tma_once`); raises :class:`RuntimeError` at the first failure."""
    rng = rng if rng is not None else np.random.default_rng()
    say = progress or (lambda _s: None)
    rows = []
    for cfg in configs if configs is not None else variants():
        for shape in TMA_ONCE_CHECK_SHAPES if cfg.tma_once else CHECK_SHAPES:
            chk = (verify_tma_once if cfg.tma_once else W.verify)(cfg, *shape, rng=rng)
            rows.append({"swizzle": cfg.swizzle, "row_boxes": cfg.row_boxes,
                         **({"tma_once": True} if cfg.tma_once else {}),
                         "variant": variant_key(cfg), "label": cfg.label(), "shape": list(shape),
                         **chk.as_dict()})
            if not chk.passed:
                raise RuntimeError(f"swizzle check failed: {cfg.label()} {shape}: {chk.as_dict()}")
        say(f"checked {cfg.label()}")
    return rows


def measure_swizzle(progress=None, sizes=SIZES, reps: int = 10, check: bool = True,
                    ncu: dict | None = None) -> dict:
    """The "swizzle" suite over :func:`variants` (the four swizzles, the 128-byte row-box
    variants, then the four wgmma-only ones), keyed by :func:`variant_key`: (1) compile them; registers, spills, SASS counts (LSU
    shared instructions, HGMMA, UTMALDG), TMA loads per stage and the bank model per variant; (2) ``check``:
    :func:`check_variants`; (3) per size in ``sizes`` (fp16, B K-major): cuBLAS and every
    variant on the same operands (once each), each timed output checked on sampled rows (a
    wgmma-only one against :func:`tma_once_reference`, :class:`TmaOnceSampled`, every element
    written); (4) ``ncu``: the
    Nsight Compute results gathered by ``tools/gpu_swizzle.py`` (a separate profiled process), kept
    as given. Medians; never asserted on."""
    from .core import bench, checks, records, runtime
    say = progress or (lambda _s: None)
    cfgs = variants()
    runtime.precompile([W.compile_job(c) for c in cfgs])
    out: dict = {"prediction": PREDICTION, "model": [], "variants": {}, "checks": [], "rows": [],
                 "baseline_library": bench.baseline_library()}
    for c in cfgs:
        ck = W.compile_ws(c)
        out["variants"][variant_key(c)] = {
            "label": c.label(), "swizzle": c.swizzle, "row_boxes": c.row_boxes,
            **({"tma_once": True} if c.tma_once else {}),
            "tma_loads_per_stage": tma_loads_per_stage(c), "registers": ck.resources.registers,
            "spill_bytes": ck.resources.spill_stores, "smem_bytes": c.smem_total,
            "defines": {k: v for k, v in c.defines.items()}, **shared_lsu_instructions(ck)}
        out["model"].append(bank_model(c))
    if check:
        out["checks"] = check_variants(cfgs, progress=say)
        say(f"{len(out['checks'])} checks passed")
    rng = np.random.default_rng()
    lib = out["baseline_library"]
    for size in sizes:
        flop = bench.gemm_flop(size, size, size)
        a, b = checks.random_operands(size, size, size, "float16", None)
        da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
        dbt = DeviceArray.from_host(np.ascontiguousarray(b.T))
        dc = DeviceArray.poisoned((size, size), np.dtype("float16"))
        sref = checks.timed_output_reference(a, b, "float16", rng)
        once_ref = {}                         # grid -> TmaOnceSampled (wgmma-only variants)
        if lib:
            t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
            out["rows"].append({"size": size, "kernel": "cuBLAS", "swizzle": None, **t.as_dict(),
                                "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": sref.check(dc).as_dict()})
            say(f"{size}³ cuBLAS: {out['rows'][-1]['tflops']:.0f} TFLOP/s")
        for c in cfgs:
            dc.poison()
            g = W.make_gemm(c, da, dbt, dc)
            t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
            g.check_error()
            if c.tma_once:
                if g.grid not in once_ref:
                    once_ref[g.grid] = TmaOnceSampled(a, b.T, c, g.grid, rng)
                chk = once_ref[g.grid].check(dc)
            else:
                chk = checks.check_sampled_rows(dc, a, b, "float16", c.label(), sampled=sref)
            if not chk.passed:
                raise RuntimeError(f"timed run wrong: {c.label()} {size}³: {chk.as_dict()}")
            out["rows"].append({"size": size, "kernel": "ours", "swizzle": c.swizzle,
                                "row_boxes": c.row_boxes,
                                **({"tma_once": True} if c.tma_once else {}),
                                "variant": variant_key(c),
                                "label": c.label(), **t.as_dict(),
                                "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": chk.as_dict(), "grid": g.grid})
            say(f"{size}³ {variant_name(c.swizzle, c.row_boxes, c.tma_once)}: "
                f"{out['rows'][-1]['tflops']:.0f} TFLOP/s"
                f"{' (wgmma on reused stages, not a GEMM)' if c.tma_once else ''}")
            del g
        del da, db, dbt, dc
    out["ncu"] = ncu if ncu is not None else {"available": False, "why": "not asked"}
    out["table"] = swizzle_table(out)
    out["table_tma_once"] = tma_once_rows(out)
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def _key(swizzle, row_boxes=1, tma_once=False) -> str:
    if tma_once:
        return f"{swizzle}once"
    return str(swizzle) if row_boxes == 1 else f"{swizzle}x{row_boxes}"


def _ncu_for(results: dict, swizzle, row_boxes: int = 1, tma_once: bool = False) -> dict:
    """Nsight Compute's counters of one variant ({} without them); ``swizzle`` may also be a
    :func:`variant_key` string."""
    n = results.get("ncu") or {}
    key = swizzle if isinstance(swizzle, str) else _key(swizzle, row_boxes, tma_once)
    return (n.get("variants") or {}).get(key, {}) if n.get("available") else {}


def _loads_per_stage(results: dict, swizzle: int, row_boxes: int, tma_once: bool = False) -> int:
    """TMA loads per stage of a variant: from the record where it has them, else from the
    configuration (a first-generation record has none)."""
    v = (results.get("variants") or {}).get(_key(swizzle, row_boxes, tma_once)) or {}
    if v.get("tma_loads_per_stage"):
        return int(v["tma_loads_per_stage"])
    return tma_loads_per_stage(base_config().replace(swizzle=swizzle, row_boxes=row_boxes,
                                                     tma_once=tma_once))


def swizzle_table(results: dict, tma_once: bool = False) -> list[dict]:
    """One row per (size, variant) with TMA in the loop, in the record's order (``tma_once=True``:
    the wgmma-only variants instead, their ``of_128`` against 128 B wgmma only — see
    :func:`tma_once_rows` for those set beside their TMA twins): ``swizzle``, ``row_boxes`` (1 for the
    swizzle variants and in a record from before the row boxes), ``variant`` (:func:`variant_key`),
    ``name`` (:func:`variant_name`), ``tma_loads_per_stage``, TFLOP/s, fraction of cuBLAS
    (``of_cublas``) and of the one-box 128-byte variant (``of_128``), the predicted range frozen
    before the run (:func:`predicted_ratio`; None where none was made) and whether the
    measurement is inside it, the model's conflict factor, and the Nsight Compute counters where
    they were taken. Code that wants only the four swizzles filters on ``row_boxes == 1``."""
    rows = results.get("rows", [])
    model = {m.get("variant", str(m["swizzle"])): m for m in results.get("model", [])}
    once = bool(tma_once)
    out = []
    for size in sorted({r["size"] for r in rows}):
        rs = [r for r in rows if r["size"] == size]
        cub = next((r["tflops"] for r in rs if r["kernel"] == "cuBLAS"), None)
        ref = next((r["tflops"] for r in rs if r.get("swizzle") == 128
                    and r.get("row_boxes", 1) == 1 and r["kernel"] == "ours"
                    and bool(r.get("tma_once")) == once), None)
        for r in rs:
            if r["kernel"] != "ours" or bool(r.get("tma_once")) != once:
                continue
            sw, rb = r["swizzle"], r.get("row_boxes", 1)
            key = _key(sw, rb, once)
            pred = None if once else predicted_ratio(sw, rb)
            of128 = r["tflops"] / ref if ref else None
            n = _ncu_for(results, key)
            out.append({"size": size, "swizzle": sw, "row_boxes": rb, "variant": key,
                        "name": variant_name(sw, rb, once),
                        **({"tma_once": True} if once else {}),
                        "tma_loads_per_stage": _loads_per_stage(results, sw, rb, once),
                        "tflops": r["tflops"],
                        "of_cublas": r["tflops"] / cub if cub else None, "of_128": of128,
                        "predicted": None if pred is None else list(pred),
                        "inside": None if of128 is None or pred is None
                        else bool(pred[0] - 0.005 <= of128 <= pred[1] + 0.005),
                        "model_conflicts": max(model[key]["a_read"], model[key]["b_read"])
                        if key in model else None,
                        "lsu_conflicts": n.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
                        "bank_reads": n.get("l1tex__data_bank_reads.sum")})
    return out


def tma_once_rows(results: dict) -> list[dict]:
    """The wgmma-only variants beside their TMA twins, one row per (size, swizzle) the record has
    a wgmma-only measurement for (empty for a record from before them): ``size``, ``swizzle``,
    ``name``, ``variant``; ``tflops`` (wgmma throughput on reused stages — NOT a GEMM: the
    stages are loaded once), ``of_128`` (fraction of 128 B wgmma only, same run; for 128 B
    itself: of 128 B *with* TMA), ``predicted`` / ``inside`` (:data:`PREDICTED_RATIO_TMA_ONCE`),
    ``with_tma_tflops`` / ``with_tma_of_128`` (the same swizzle with TMA, fraction of 128 B with
    TMA), ``over_tma`` (tflops / with_tma_tflops) and ``wgmma_share`` — the share of the with-TMA
    loss that remains without TMA, (1 − of_128) / (1 − with_tma_of_128), None for 128 B or where
    the with-TMA variant lost < 2 % (a share of nothing)."""
    out = []
    rows = results.get("rows", [])
    for size in sorted({r["size"] for r in rows}):
        rs = [r for r in rows if r["size"] == size and r["kernel"] == "ours"
              and r.get("row_boxes", 1) == 1]
        tma = {r["swizzle"]: r["tflops"] for r in rs if not r.get("tma_once")}
        once = {r["swizzle"]: r["tflops"] for r in rs if r.get("tma_once")}
        for sw in [x for x in SWIZZLES if x in once]:
            t, t128, o128 = tma.get(sw), tma.get(128), once.get(128)
            of = (once[sw] / t128 if t128 else None) if sw == 128 else \
                (once[sw] / o128 if o128 else None)
            w_of = t / t128 if t and t128 else None
            share = None
            if sw != 128 and of is not None and w_of is not None and w_of < 0.98:
                share = (1 - of) / (1 - w_of)
            pred = PREDICTED_RATIO_TMA_ONCE.get(sw)
            out.append({"size": size, "swizzle": sw, "name": variant_name(sw, 1, True),
                        "variant": _key(sw, 1, True), "tflops": once[sw], "of_128": of,
                        "predicted": list(pred) if pred else None,
                        "inside": None if of is None or pred is None
                        else bool(pred[0] - 0.005 <= of <= pred[1] + 0.005),
                        "with_tma_tflops": t, "with_tma_of_128": w_of,
                        "over_tma": once[sw] / t if t else None, "wgmma_share": share})
    return out


def tma_once_outcome(results: dict) -> dict:
    """Which outcome of :data:`PREDICTION_TMA_ONCE` the record shows: per size and narrow
    swizzle (32, 0) the ``wgmma_share`` s of :func:`tma_once_rows` and its class ("tma" for
    s ≤ :data:`TMA_SHARE_MAX`, "wgmma" for s ≥ :data:`WGMMA_SHARE_MIN`, else "both"), and
    ``outcome``: that class where all agree, "mixed" where they do not, None where the record has
    no wgmma-only rows (or lacks a twin). Also ``shares`` {(size, swizzle): s}."""
    rows = [r for r in tma_once_rows(results) if r["swizzle"] in (32, 0)]
    shares = {(r["size"], r["swizzle"]): r["wgmma_share"] for r in rows}
    if not rows or any(v is None for v in shares.values()):
        return {"outcome": None, "shares": shares, "classes": {}}

    def cls(v):
        return "tma" if v <= TMA_SHARE_MAX else "wgmma" if v >= WGMMA_SHARE_MIN else "both"
    classes = {k: cls(v) for k, v in shares.items()}
    kinds = set(classes.values())
    return {"outcome": kinds.pop() if len(kinds) == 1 else "mixed", "shares": shares,
            "classes": classes}


def tma_once_text(results: dict) -> str:
    """:func:`tma_once_rows` as a text table, headed so that nobody reads it as a GEMM ("" for a
    record without wgmma-only rows)."""
    rows = tma_once_rows(results)
    if not rows:
        return ""

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    lines = ["wgmma only (stages loaded once, then reused: wgmma throughput on reused stages, "
             "NOT a GEMM):",
             f"{'size':>5s} {'variant':>16s} {'TFLOP/s*':>8s} {'of 128B*':>8s} {'predicted':>10s} "
             f"{'with TMA':>8s} {'of 128B':>7s} {'*/TMA':>6s} {'wgmma share':>11s}"]
    for r in rows:
        pr = "—" if not r["predicted"] else f"{r['predicted'][0]:.2f}-{r['predicted'][1]:.2f}"
        mark = "" if r["inside"] is None else (" " if r["inside"] else "!")
        lines.append(f"{r['size']:>5d} {r['name']:>16s} {r['tflops']:8.0f} "
                     f"{f(r['of_128'], '.3f'):>7s}{mark} {pr:>10s} "
                     f"{f(r['with_tma_tflops'], '.0f'):>8s} {f(r['with_tma_of_128'], '.3f'):>7s} "
                     f"{f(r['over_tma'], '.2f'):>6s} {f(r['wgmma_share'], '.2f'):>11s}")
    lines.append("(* = wgmma only; of 128B* = of 128B wgmma only, for 128B wgmma only itself of 128B "
                 "with TMA; wgmma share = (1 - of 128B*) / (1 - of 128B): the part of the with-TMA "
                 "loss left without TMA; ! = outside PREDICTION_TMA_ONCE)")
    return "\n".join(lines)


def box_count_rows(results: dict) -> list[dict]:
    """The row-box experiment side by side, one row per number of TMA loads per stage (2, 4, 8,
    16, 32): ``loads``, then for the swizzle variant issuing that many (one box along the rows:
    128 B, 64 B, 32 B, none) and for the 128-byte variant loaded as that many row boxes (128 B
    ×1 .. ×16) — ``swizzle`` / ``row_box``, each None where the record has no such variant, else a
    dict: ``name`` (:func:`variant_name`), ``variant`` (:func:`variant_key`), ``of_128``
    ({size: fraction of the one-box 128-byte variant's TFLOP/s, same run}), ``duration_us``
    (Nsight Compute's profiled launch at :func:`ncu_size`, None without ncu) and
    ``ncu_of_128`` (that duration over the one-box 128-byte variant's). The 128-byte one-box
    variant (2 loads per stage) appears in both columns. Empty for a record without row boxes."""
    tab = swizzle_table(results)
    if not any(r["row_boxes"] > 1 for r in tab):
        return []
    ncu = {r["variant"]: r["duration_us"] for r in ncu_rows(results)}
    t128 = ncu.get("128")

    def entry(pick):
        rs = [r for r in tab if pick(r)]
        if not rs:
            return None
        key = rs[0]["variant"]
        us = ncu.get(key)
        return {"name": rs[0]["name"], "variant": key, "swizzle": rs[0]["swizzle"],
                "row_boxes": rs[0]["row_boxes"], "tma_loads_per_stage": rs[0]["tma_loads_per_stage"],
                "of_128": {r["size"]: r["of_128"] for r in rs}, "duration_us": us,
                "ncu_of_128": us / t128 if us and t128 else None}
    out = []
    for n in sorted({r["tma_loads_per_stage"] for r in tab}):
        out.append({"loads": n,
                    "swizzle": entry(lambda r: r["row_boxes"] == 1 and r["tma_loads_per_stage"] == n),
                    "row_box": entry(lambda r: r["swizzle"] == 128
                                     and r["tma_loads_per_stage"] == n
                                     and (r["row_boxes"] > 1 or n == 2))})
    return out


def box_count_text(results: dict) -> str:
    """:func:`box_count_rows` as a text table: TMA loads per stage, then for the swizzle variant
    and the 128-byte row-box variant issuing that many, the fraction of 128 B ×1 at each timed
    size and Nsight Compute's profiled µs (with its ratio to 128 B ×1). "" without row boxes."""
    rows = box_count_rows(results)
    if not rows:
        return ""
    sizes = sorted({s for r in rows for side in ("swizzle", "row_box") if r[side]
                    for s in r[side]["of_128"]})
    size_h = " / ".join(f"{s}³" for s in sizes)
    us_at = ncu_size(results)
    us_h = f"ncu µs{f' {us_at}³' if us_at else ''}"
    uw = max(11, len(us_h))

    def cell(e):
        if e is None:
            return f"{'—':>14s} {'':>{len(size_h)}s} {'':>{uw}s}"
        frac = " / ".join("—" if e["of_128"].get(s) is None else f"{e['of_128'][s]:.2f}"
                          for s in sizes)
        us = "—" if e["duration_us"] is None else (
            f"{e['duration_us']:.0f} ({e['ncu_of_128']:.2f})" if e["ncu_of_128"] else
            f"{e['duration_us']:.0f}")
        return f"{e['name']:>14s} {frac:>{len(size_h)}s} {us:>{uw}s}"
    head = f"{'variant':>14s} {size_h:>{len(size_h)}s} {us_h:>{uw}s}"
    lines = ["fraction of 128B ×1 (same run), and Nsight Compute's profiled launch (ratio to 128B ×1):",
             f"{'TMA loads':>9s} | {'one box along the rows (swizzle)':^{len(head)}s} | "
             f"{'128-byte swizzle, R row boxes':^{len(head)}s}",
             f"{'per stage':>9s} | {head} | {head}"]
    for r in rows:
        lines.append(f"{r['loads']:>9d} | {cell(r['swizzle'])} | {cell(r['row_box'])}")
    return "\n".join(lines)


def ncu_size(results: dict) -> int | None:
    """The cube size n (M = N = K) Nsight Compute profiled, or None where it cannot be told.

    ``tools/gpu_swizzle.py`` profiles one launch per variant at one size (its ``NCU_SIZE``), which
    is not the size of every timed row. A record that names it (``ncu["size"]``) is taken at its
    word; an older one is read from its own counters: the 128-byte variant's TMA load bytes
    (``l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld``) are exactly A once per column of
    tiles and B once per row of tiles, 2·n³·itemsize·(1/bn + 1/bm) bytes for the base
    configuration's tile (no cluster, so no multicast). The n that reproduces them exactly is the
    size; None if none does.
    """
    n = results.get("ncu") or {}
    if not n.get("available"):
        return None
    if n.get("size"):
        return int(n["size"])
    got = _ncu_for(results, 128).get("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum")
    if not got:
        return None
    cfg = base_config()
    es = np.dtype(cfg.dtype).itemsize

    def tma_bytes(size):
        return size * size * es * (size // cfg.bn) + size * size * es * (size // cfg.bm)
    guess = round((got / (es * (1 / cfg.bn + 1 / cfg.bm))) ** (1 / 3))
    for size in (guess - 1, guess, guess + 1):
        if size % cfg.bm == 0 and size % cfg.bn == 0 and tma_bytes(size) == got:
            return size
    return None


def _ncu_keys(results: dict, tma_once: bool = False) -> list[tuple[int, int, bool]]:
    """(swizzle, row_boxes, tma_once) of every variant Nsight Compute profiled, in
    :func:`variants` order (a first-generation record: the four swizzles); the wgmma-only ones
    only with ``tma_once``."""
    n = results.get("ncu") or {}
    have = set((n.get("variants") or {}) if n.get("available") else ())
    keys = [(c.swizzle, c.row_boxes, c.tma_once) for c in variants()
            if tma_once or not c.tma_once]
    return [k for k in keys if _key(*k) in have]


def ncu_rows(results: dict, tma_once: bool = False) -> list[dict]:
    """One row per variant profiled by Nsight Compute (empty without ncu), in :func:`variants`
    order — the wgmma-only variants only with ``tma_once`` (then each row has ``tma_once``):
    ``swizzle``, ``row_boxes``, ``variant``, ``name``, ``tma_loads_per_stage``, the size it
    ran at (:func:`ncu_size`), the LSU shared-memory instructions in its cubin's SASS
    (:func:`shared_lsu_instructions`, from the record), the LSU shared instructions executed and
    their bank conflicts (loads + stores), all shared-memory bank reads and writes of the L1/shared
    data path (wgmma and TMA included), the TMA load bytes and the profiled duration (µs). Code
    that wants only the four swizzles filters on ``row_boxes == 1``."""
    size = ncu_size(results)
    out = []
    for sw, rb, once in _ncu_keys(results, tma_once):
        n = _ncu_for(results, sw, rb, once)
        key = _key(sw, rb, once)

        def get(*names):
            vals = [n.get(x) for x in names]
            return None if any(v is None for v in vals) else sum(vals)
        out.append({
            "swizzle": sw, "row_boxes": rb, "variant": key, "name": variant_name(sw, rb, once),
            **({"tma_once": True} if once else {}),
            "tma_loads_per_stage": _loads_per_stage(results, sw, rb, once), "size": size,
            "sass_lsu_shared": (results.get("variants", {}).get(key) or {}).get("lsu_shared"),
            "lsu_instructions": get("smsp__sass_inst_executed_op_shared_ld.sum",
                                    "smsp__sass_inst_executed_op_shared_st.sum"),
            "lsu_conflicts": get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
            "bank_reads": get("l1tex__data_bank_reads.sum"),
            "bank_writes": get("l1tex__data_bank_writes.sum"),
            "tma_bytes": get("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"),
            "duration_us": None if n.get("gpu__time_duration.sum") is None
            else n["gpu__time_duration.sum"] / 1e3})
    return out


def ncu_text(results: dict, row_boxes: bool = True, tma_once: bool | None = None) -> str:
    """Nsight Compute's counters, one line per variant, headed by the size profiled ("" without
    ncu), with the TMA loads per stage and the duration relative to 128 B ×1 (``row_boxes=False``:
    the four swizzle variants only, without the 128-byte row-box ones; ``tma_once``, by default
    as ``row_boxes``: the wgmma-only variants too, last). The LSU columns
    count only LDS/STS-type instructions: a cubin without any (the ``SASS LSU`` column) shows 0
    there whatever its layout, since wgmma and TMA do not use the LSU pipe; the bank reads and
    writes count every shared-memory access."""
    once = row_boxes if tma_once is None else tma_once
    rows = [r for r in ncu_rows(results, once) if row_boxes or r["row_boxes"] == 1]
    if not rows:
        return ""
    size = rows[0]["size"]
    t128 = next((r["duration_us"] for r in rows if r["variant"] == "128"), None)

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    lines = [f"Nsight Compute, one launch per variant at "
             f"{f'{size}³' if size else 'a size the record does not name'} (not every timed size):",
             f"{'variant':>14s} {'TMA/stage':>9s} {'SASS LSU':>8s} {'LSU inst':>8s} {'LSU confl':>9s} "
             f"{'bank reads':>11s} {'bank writes':>11s} {'TMA bytes':>10s} {'µs':>6s} {'of 128B':>7s}"]
    for r in rows:
        rel = r["duration_us"] / t128 if t128 and r["duration_us"] else None
        lines.append(f"{r['name']:>14s} {r['tma_loads_per_stage']:>9d} "
                     f"{f(r['sass_lsu_shared'], 'd'):>8s} {f(r['lsu_instructions'], '.0f'):>8s} "
                     f"{f(r['lsu_conflicts'], '.0f'):>9s} {f(r['bank_reads'], '.4g'):>11s} "
                     f"{f(r['bank_writes'], '.4g'):>11s} {f(r['tma_bytes'], '.3g'):>10s} "
                     f"{f(r['duration_us'], '.0f'):>6s} {f(rel, '.2f'):>7s}")
    return "\n".join(lines)


def summarize_swizzle(rec, row_boxes: bool = True, tma_once: bool | None = None) -> str:
    """The short tables of a ``swizzle`` record: Nsight Compute's counters once per variant, at
    the size it profiled (:func:`ncu_text`); then per timed size and variant (the swizzles, then
    the 128-byte row boxes), TMA loads per stage, TFLOP/s, of cuBLAS, of the one-box 128-byte
    variant against the prediction and the model's conflict factor; then the wgmma-only variants
    beside their TMA twins (:func:`tma_once_text`, where the record has them). ``row_boxes=False``
    leaves the row-box variants out of both tables (:func:`box_count_text` sets them beside the
    swizzles); ``tma_once`` (by default as ``row_boxes``) keeps or leaves out the wgmma-only
    ones."""
    once = row_boxes if tma_once is None else tma_once
    res = rec.results if hasattr(rec, "results") else rec
    table = res.get("table") or swizzle_table(res)
    table = [r for r in table if row_boxes or r.get("row_boxes", 1) == 1]
    n = res.get("ncu") or {}
    why = str(n.get("why", "absent"))
    why = why if len(why) <= 160 else why[:157] + "..."
    lines = [f"swizzle experiment ({base_config().label()}): {len(res.get('checks', []))} "
             "checks passed", "Nsight Compute: " + ("yes" if n.get("available") else
                                                   f"not used ({why})")]
    if ncu_text(res, row_boxes, once):
        lines += [ncu_text(res, row_boxes, once), "timed:"]
    lines.append(f"{'size':>5s} {'variant':>14s} {'TMA/stage':>9s} {'TFLOP/s':>8s} {'cuBLAS':>7s} "
                 f"{'of 128B':>8s} {'predicted':>10s} {'model':>6s}")

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    for r in table:
        rb = r.get("row_boxes", 1)
        name = r.get("name") or variant_name(r["swizzle"], rb)
        loads = r.get("tma_loads_per_stage") or _loads_per_stage(res, r["swizzle"], rb)
        pr = "—" if not r.get("predicted") else f"{r['predicted'][0]:.2f}-{r['predicted'][1]:.2f}"
        mark = "" if r["inside"] is None else (" " if r["inside"] else "!")
        lines.append(f"{r['size']:>5d} {name:>14s} {loads:>9d} {r['tflops']:8.0f} "
                     f"{f(r['of_cublas'], '.2f'):>7s} {f(r['of_128'], '.3f'):>8s}{mark} {pr:>10s} "
                     f"{f(r['model_conflicts'], '.2f'):>6s}")
    if once and tma_once_text(res):
        lines.append(tma_once_text(res))
    lines.append("(! = outside the prediction frozen in asynctc.swizzle.PREDICTION; "
                 "of 128B = of the one-box 128-byte variant)")
    return "\n".join(lines)


SUITES = {"swizzle": (measure_swizzle, summarize_swizzle, "sm_90a")}


# --------------------------------------------------------------------------------------------------
# The tile / stage / register budget table (issue 12), from chapter 06's record and the cubins
# --------------------------------------------------------------------------------------------------

def _load_record(record):
    if record is None:
        from .core import records
        return records.load("warp_specialization")
    if isinstance(record, (str, Path)):
        return json.loads(Path(record).read_text())
    return record


def budget_table(record=None, dtype: str = "float16", compile_cubins: bool = True) -> list[dict]:
    """Rows for notebook 07: chapter 06's tile sweep (rung 4, :data:`asynctc.warp_specialization.
    TILE_SWEEP` within 227 KiB) and rung 3's / rung 5's defaults, in ``dtype``.

    Each row: ``tile`` ("bm×bn×bk"), ``stages``, ``consumers``, ``regs_producer`` /
    ``regs_consumer`` (setmaxnreg's counts; without setmaxnreg both the count at entry),
    ``regs_ptxas`` (ptxas's per-thread count at entry), ``spill_bytes``, ``accumulators`` (fp32
    per consumer thread), ``smem_bytes`` (dynamic + static shared memory per CTA; the static part
    from the cubin when ``compile_cubins``), ``cubin_registers`` / ``cubin_spill_bytes`` (the
    cubin's ptxas report, compiled here — to set beside the record's), and
    ``tflops_4096`` / ``tflops_8192`` from the record (None where it has no such row), with
    ``of_cublas_4096`` / ``of_cublas_8192``. ``record``: a :class:`asynctc.core.records.Record`, its
    JSON dict, a path, or None for ``data/<gpu>/warp_specialization.json``. Registers and spills
    come from the record's ``registers`` where it has the config, else from compiling the cubin
    (``compile_cubins``; no GPU needed) — ``source`` says which."""
    rec = _load_record(record)
    res = rec.results if hasattr(rec, "results") else rec.get("results", rec)
    cfgs = [W.RUNGS[2].make(dtype), W.RUNGS[4].make(dtype)]
    for c in W.tile_sweep_configs(dtype, limit=227 * 1024):
        if c not in cfgs:
            cfgs.append(c)
    rows_rec = res.get("rows", [])
    regs_rec = res.get("registers", {})
    out = []
    for c in cfgs:
        label = c.label()
        row = {"label": label, "rung": W.rung_of(c), "tile": f"{c.bm}x{c.bn}x{c.bk}",
               "stages": c.stages, "consumers": c.consumers, "persistent": c.persistent,
               "accumulators": c.accumulators, "smem_bytes": c.smem_total}
        ck = None
        if compile_cubins:                   # the cubin's own counts, beside the record's
            ck = W.compile_ws(c)
            row.update(cubin_registers=ck.resources.registers,
                       cubin_spill_bytes=ck.resources.spill_stores,
                       smem_bytes=c.shmem_bytes + ck.resources.shared_bytes)
        r = regs_rec.get(label)
        if r is not None:
            row.update(regs_ptxas=r.get("ptxas"), spill_bytes=r.get("spill_bytes"),
                       regs_producer=r.get("producer"), regs_consumer=r.get("consumer"),
                       source="record")
        elif ck is not None:
            split = W.register_split(c)
            row.update(regs_ptxas=ck.resources.registers, spill_bytes=ck.resources.spill_stores,
                       regs_producer=split.get("producer"), regs_consumer=split.get("consumer"),
                       source="cubin")
        else:
            row.update(regs_ptxas=None, spill_bytes=None, regs_producer=None, regs_consumer=None,
                       source="none")
        for size in W.LADDER_SIZES:
            t = next((x["tflops"] for x in rows_rec if x.get("label") == label
                      and x.get("size") == size and x.get("kernel") != "cuBLAS"), None)
            cub = next((x["tflops"] for x in rows_rec if x.get("kernel") == "cuBLAS"
                        and x.get("size") == size and x.get("dtype") == dtype), None)
            row[f"tflops_{size}"] = t
            row[f"of_cublas_{size}"] = t / cub if t is not None and cub else None
        out.append(row)
    return out


def budget_markdown(rows: list[dict]) -> str:
    """:func:`budget_table` rows as a markdown table (— for a missing value)."""
    def f(x, fmt=""):
        return "—" if x is None else format(x, fmt)
    lines = ["| rung | tile | stages | consumers | regs producer / consumer | spills (B) | "
             "smem per CTA (KiB) | TFLOP/s 4096³ | TFLOP/s 8192³ | of cuBLAS 8192³ |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['rung']} | {r['tile']}/c{r['consumers']}"
                     f"{' persistent' if r['persistent'] else ''} | {r['stages']} | "
                     f"{r['consumers']} | {f(r['regs_producer'])} / {f(r['regs_consumer'])} | "
                     f"{f(r['spill_bytes'])} | {r['smem_bytes'] / 1024:.0f} | "
                     f"{f(r['tflops_4096'], '.0f')} | {f(r['tflops_8192'], '.0f')} | "
                     f"{f(r['of_cublas_8192'], '.2f')} |")
    return "\n".join(lines)


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
