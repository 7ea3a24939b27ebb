"""Chapter 07's swizzle experiment, the bank model of each variant and the predictions frozen
before the GPU runs: :func:`bank_model` (the conflict factor of wgmma's core-matrix reads through
the variant's own descriptors and of TMA's box writes, by :mod:`asynctc.models.banks`, and the
geometry TMA pays for), its tables (:func:`prediction_markdown`, :func:`row_box_markdown`), the
frozen texts :data:`PREDICTION` (with :data:`PREDICTION_ROW_BOXES` and
:data:`PREDICTION_TMA_ONCE` appended) and their ranges (:func:`predicted_ratio`,
:data:`PREDICTED_RATIO_TMA_ONCE`, :data:`TMA_SHARE_MAX` / :data:`WGMMA_SHARE_MIN`)."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..models import descriptors as D
from ..models.banks import plain_rows_conflicts, read_conflicts, tma_write_conflicts
from .config import (base_config, row_box_variants, swizzle_variants, tma_loads_per_stage,
                     variant_key, variant_name)
from .dry_run import stage_dry_run


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
