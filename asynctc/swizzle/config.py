"""Chapter 07's swizzle experiment, its variants: chapter 06's rung 5 (:func:`base_config`:
128×256×64, two consumer warpgroups, four stages, persistent; fp16, B K-major) under each swizzle
(:func:`swizzle_variants`), the 128-byte layout loaded as R row boxes (:func:`row_box_variants`)
and "wgmma only" (:func:`tma_once_variants`), in the order of :func:`variants`; their keys and
names in records and tables (:func:`variant_key`, :func:`variant_name`), the TMA loads per stage,
and the numbers the kernel takes from each config's defines (:func:`kernel_layout`)."""

from __future__ import annotations

from .. import warp_specialization as W

#: The swizzle spans measured, widest first (128 is the ladder's).
SWIZZLES = W.SWIZZLES

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


def _key(swizzle, row_boxes=1, tma_once=False) -> str:
    if tma_once:
        return f"{swizzle}once"
    return str(swizzle) if row_boxes == 1 else f"{swizzle}x{row_boxes}"


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
