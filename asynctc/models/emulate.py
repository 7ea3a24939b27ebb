"""A CPU emulation of one Blackwell GEMM tile's data path, built from the course's models (chapter 09).

**It is a model, not a run**: nothing here executes on a GPU. It chains the models of the earlier
chapters and of this one, each written from the PTX ISA, so that a mistake in any link — a
descriptor that does not match the layout TMA wrote, a TMEM layout misread in the epilogue — shows
up as a wrong element:

1. **TMA side** — the A and B tiles are written into shared-memory images box by box with
   :meth:`asynctc.models.layout.SmemTile.scatter` (the swizzle model of chapter 03), laid out as
   :class:`asynctc.models.descriptors.OperandTile` stores TMA boxes.
2. **Descriptor side** — for every k-step, the sm_100 shared-memory descriptor
   (:class:`asynctc.models.tcgen05.Tcgen05Descriptor`) and the instruction descriptor
   (:class:`asynctc.models.tcgen05.InstrDescriptor`) say which bytes ``tcgen05.mma`` reads
   (:func:`asynctc.models.tcgen05.read_addresses`): the operands are gathered from the images.
   With ``cta_group=2`` each CTA holds M/2 rows of A and N/2 columns of B and its MMA reads the
   peer's B half too.
3. **MMA** — float64 products of the values read (inputs rounded to the dtype), accumulated into a
   float32 TMEM cell per element (``enable_input_d`` false on the first k-step).
4. **TMEM** — the accumulator is placed by :class:`asynctc.models.tmem.AccumulatorLayout` (the data
   path layout of the M and CTA group) at the columns :class:`~asynctc.models.tmem.TmemAllocator`
   handed out.
5. **Epilogue** — the four warps of a warpgroup issue ``tcgen05.ld`` (:func:`~asynctc.models.tmem.
   tcgen05_ld`, lane-quarter rule enforced) into per-thread registers; each register is put where
   the inverse of the data path layout says, into a NaN-poisoned output; every element must be
   written exactly once.

:func:`emulate_gemm` returns an :class:`EmulatedGemm` with the output, the float64 reference and a
check with an elementwise bound relative to |A|·|B|. Pass other descriptors (``a_descriptors`` /
``b_descriptors`` / ``idesc``) to see what a mismatch does.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from . import descriptors as _d
from .layout import dtype_of
from . import tmem as _tm
from .tcgen05 import InstrDescriptor, Tcgen05Descriptor, read_addresses

#: Shared-memory addresses the model places A and B at (aligned for every swizzle mode).
A_BASE = 0x0000
B_BASE = 0x8000


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` rounded to ``dtype`` (numpy / ml_dtypes), as that dtype."""
    return np.asarray(x, dtype=np.float64).astype(dtype_of(dtype))


def smem_image(tile: _d.OperandTile, values: np.ndarray) -> np.ndarray:
    """The shared-memory bytes (uint8, ``tile.size_bytes``) after TMA loaded ``values`` ((mn, k) of
    the tile's dtype) box by box: each box is :meth:`asynctc.models.layout.SmemTile.scatter` of its slice,
    boxes ``tile.box_pitch`` bytes apart (chapter 03's swizzle model, not the descriptor model)."""
    v = np.asarray(values)
    if v.shape != (tile.mn, tile.k):
        raise ValueError(f"values.shape={v.shape}: expected (mn, k) = {(tile.mn, tile.k)}")
    box = tile.smem_tile()
    rowsmajor = v if tile.major == "K" else v.T         # box rows × inner extent
    out = np.zeros(tile.size_bytes, np.uint8)
    for j in range(tile.n_boxes):
        part = np.ascontiguousarray(rowsmajor[:, j * tile.box_cols:(j + 1) * tile.box_cols])
        out[j * tile.box_pitch:(j + 1) * tile.box_pitch] = box.scatter(part)
    return out


def gather(image: np.ndarray, base: int, desc: Tcgen05Descriptor, major: str, dtype: str,
           mn: int) -> np.ndarray:
    """The ``(mn, K)`` operand one ``tcgen05.mma`` reads through ``desc`` from ``image`` (placed at
    shared address ``base``); bytes outside the image read as 0."""
    return gather_bytes(image, read_addresses(desc, major, dtype, mn) - base, dtype)


def gather_bytes(image: np.ndarray, addr: np.ndarray, dtype: str) -> np.ndarray:
    """The ``dtype`` values whose first bytes are at ``addr`` (an int array of offsets into the
    uint8 ``image``), in ``addr``'s shape; bytes outside the image read as 0. Chapter 09c's
    :func:`gather` and the Hopper emulation (:mod:`asynctc.models.emulate_sm90`) both read this way."""
    es = dtype_of(dtype).itemsize
    idx = np.asarray(addr)[..., None] + np.arange(es)
    ok = (idx >= 0) & (idx < image.size)
    raw = np.where(ok, image[np.clip(idx, 0, image.size - 1)], 0).astype(np.uint8)
    return raw.reshape(-1).view(dtype_of(dtype)).reshape(np.shape(addr))


@dataclasses.dataclass
class EmulatedGemm:
    """Result of :func:`emulate_gemm`. ``d``: (M, N) float64 output assembled from the per-thread
    registers (NaN where nothing was written); ``reference``: float64 A·B of the rounded inputs;
    ``bound``: the elementwise bound (rel_tol × (|A|·|B|)); ``writes``: (M, N) count of writes."""

    idesc: InstrDescriptor
    swizzle: int
    d: np.ndarray
    reference: np.ndarray
    bound: np.ndarray
    writes: np.ndarray
    layout: _tm.AccumulatorLayout
    tmem: list
    taddr: list
    registers: dict
    a_descriptors: list
    b_descriptors: list
    ld_shape: str

    @property
    def error(self) -> np.ndarray:
        return np.abs(self.d - self.reference)

    @property
    def wrong(self) -> int:
        """Elements outside the bound, NaN or not written exactly once."""
        bad = ~(self.error <= self.bound) | (self.writes != 1)
        return int(bad.sum())

    @property
    def passed(self) -> bool:
        return self.wrong == 0

    def summary(self) -> str:
        i = self.idesc
        rel = float(np.nanmax(self.error / np.maximum(self.bound, 1e-300))) \
            if np.isfinite(self.d).any() else float("nan")
        return (f"emulated tcgen05.mma.cta_group::{i.cta_group}.kind::{i.kind} {i.a_dtype} "
                f"M={i.m} N={i.n} K={self.k} A {i.a_major}-major, "
                f"B {i.b_major}-major, swizzle {self.swizzle or 'none'}, {self.layout.name}, "
                f"epilogue tcgen05.ld.{self.ld_shape}: "
                f"{'PASS' if self.passed else 'FAIL'} ({self.wrong} of {self.d.size} elements "
                f"wrong; worst error / bound = {rel:.3g})")

    k: int = 0


def epilogue_plan(layout: _tm.AccumulatorLayout, shape: str = "32x32b") -> list[tuple]:
    """The ``tcgen05.ld`` instructions (warp, lane offset, column offset, shape, num) that read every
    used cell of ``layout`` once: each warp of the warpgroup reads its own lane quarter (only the
    16-lane halves that hold data for the 16-lane shapes), 32 columns (8 for narrow tiles) per
    instruction."""
    lanes, cols_per_rep, regs, top = _tm.LD_SHAPES[shape]
    used = set(int(x) for x in layout.lanes_used())
    chunk = 32 if layout.columns % 32 == 0 else 8
    if chunk % cols_per_rep:
        raise _tm.TmemError(f"shape={shape}: {cols_per_rep} columns per repetition do not divide "
                            f"{chunk}")
    num = chunk // cols_per_rep
    plan = []
    for warp in range(4):
        lo, _ = _tm.lane_window(warp)
        for half in range(0, 32, lanes):
            if not any(lo + half + x in used for x in range(lanes)):
                continue
            for c in range(0, layout.columns, chunk):
                plan.append((warp, lo + half, c, shape, num))
    return plan


def emulate_gemm(a: np.ndarray, b: np.ndarray, idesc: InstrDescriptor, swizzle: int = 128, *,
                 a_descriptors: Sequence | Callable | None = None,
                 b_descriptors: Sequence | Callable | None = None,
                 read_idesc: InstrDescriptor | None = None, ld_shape: str = "32x32b",
                 rel_tol: float | None = None) -> EmulatedGemm:
    """Emulate D = A·B for one tile through the models (see the module docstring).

    ``a``: (M, K) and ``b``: (K, N) real arrays (rounded to ``idesc.a_dtype`` / ``b_dtype``);
    ``idesc``: the instruction descriptor the *data were laid out for* (types, M, N, majors,
    cta_group); ``swizzle``: 0/32/64/128 bytes for both operands. ``a_descriptors`` /
    ``b_descriptors``: the shared-memory descriptors the MMA is *given* — a list per CTA of lists
    per k-step, or a function ``(cta, step, correct) -> Tcgen05Descriptor``; default: the correct
    ones. ``read_idesc``: the instruction descriptor the MMA is *given* (default ``idesc``); a
    different transpose bit makes it read with the other major-ness. ``ld_shape``: the epilogue's
    tcgen05.ld shape ("32x32b", "16x64b", "16x128b", "16x256b"). ``rel_tol``: bound relative to
    |A|·|B| (default K·2^-22: fp32 accumulation over K).

    Raises :class:`asynctc.models.descriptors.DescriptorError` / :class:`asynctc.models.tmem.TmemError`
    for a layout or request the hardware rejects, ``ValueError`` for shapes that do not match.
    Supported: f16/bf16 inputs (K- or MN-major), fp8 (K-major), fp32 accumulators.
    """
    if idesc.kind == "tf32" or idesc.a_dtype.startswith(("float6", "float4")):
        raise _d.DescriptorError(f"{idesc.a_dtype}: the emulation covers f16/bf16 and fp8 inputs")
    if idesc.d_dtype != "float32":
        raise _d.DescriptorError(f"d_dtype={idesc.d_dtype!r}: the emulation models fp32 "
                                 "accumulators, one per 32-bit TMEM cell")
    ri = read_idesc or idesc
    m, n, cg = idesc.m, idesc.n, idesc.cta_group
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != m or b.shape[1] != n or a.shape[1] != b.shape[0]:
        raise ValueError(f"a.shape={a.shape}, b.shape={b.shape}: expected (M, K) and (K, N) with "
                         f"M={m}, N={n}")
    k = a.shape[1]
    kk = idesc.k
    if k % kk:
        raise ValueError(f"K={k}: a multiple of the instruction K={kk}")
    ar, br = round_to(a, idesc.a_dtype), round_to(b, idesc.b_dtype)
    cm, cn = idesc.cta_m, idesc.cta_n
    # 1. TMA side: one A image and one B image per CTA
    a_tiles, b_tiles, a_img, b_img = [], [], [], []
    for c in range(cg):
        ta = _d.OperandTile(cm, k, idesc.a_dtype, idesc.a_major, swizzle)
        tb = _d.OperandTile(cn, k, idesc.b_dtype, idesc.b_major, swizzle)
        a_tiles.append(ta)
        b_tiles.append(tb)
        a_img.append(smem_image(ta, ar[c * cm:(c + 1) * cm, :]))
        b_img.append(smem_image(tb, np.ascontiguousarray(br[:, c * cn:(c + 1) * cn].T)))

    # 2. descriptors: correct ones from the tiles, or the ones given
    def pick(given, tiles, base):
        out = []
        for c in range(cg):
            row = []
            for s in range(k // kk):
                good = Tcgen05Descriptor.from_operand_tile(tiles[c], s, base)
                if given is None:
                    row.append(good)
                elif callable(given):
                    row.append(given(c, s, good))
                else:
                    row.append(given[c][s])
            out.append(row)
        return out
    a_desc = pick(a_descriptors, a_tiles, A_BASE)
    b_desc = pick(b_descriptors, b_tiles, B_BASE)

    # 3./4. MMA into TMEM, through the data path layout
    layout = _tm.AccumulatorLayout(m, n, cg)
    lane_of, col_of = layout.maps()
    tmems, taddrs, allocators = [], [], []
    for c in range(cg):
        al = _tm.TmemAllocator()
        taddr = al.alloc(layout.alloc_columns, warp=0)
        allocators.append(al)
        taddrs.append(taddr)
        cells = np.full((_tm.LANES, _tm.COLUMNS), np.nan, np.float32)     # poisoned
        col0 = _tm.split_address(taddr)[1]
        for s in range(k // kk):
            a_s = gather(a_img[c], A_BASE, a_desc[c][s], ri.a_major, ri.a_dtype, cm).astype(np.float64)
            b_s = np.concatenate([gather(b_img[p], B_BASE, b_desc[p][s], ri.b_major, ri.b_dtype, cn)
                                  for p in range(cg)], axis=0).astype(np.float64)   # (N, kk)
            part = a_s @ b_s.T                                                   # (cm, N) float64
            if ri.negate_a != ri.negate_b:
                part = -part
            prev = 0.0 if s == 0 else cells[lane_of, col0 + col_of].astype(np.float64)
            cells[lane_of, col0 + col_of] = (prev + part).astype(np.float32)
        tmems.append(cells)

    # 5. epilogue: tcgen05.ld into registers, then into D by the inverse layout
    d = np.full((m, n), np.nan)
    writes = np.zeros((m, n), int)
    inv_row, inv_col = layout.inverse()
    regs: dict = {}
    for c in range(cg):
        col0 = _tm.split_address(taddrs[c])[1]
        for (warp, lane, coff, shape, num) in epilogue_plan(layout, ld_shape):
            r = _tm.tcgen05_ld(tmems[c], warp, _tm.address(lane, col0 + coff), shape, num)
            regs[(c, warp, lane, coff)] = r
            dl, dc = _tm.ld_fragment(shape, num)
            rows = inv_row[lane + dl, coff + dc]
            cols = inv_col[lane + dl, coff + dc]
            keep = rows >= 0
            gr, gc = c * cm + rows[keep], cols[keep]
            np.add.at(writes, (gr, gc), 1)
            d[gr, gc] = r[keep]
        allocators[c].dealloc(taddrs[c], layout.alloc_columns, warp=0)
        allocators[c].check_all_freed()

    ref = ar.astype(np.float64) @ br.astype(np.float64)
    mag = np.abs(ar.astype(np.float64)) @ np.abs(br.astype(np.float64))
    tol = rel_tol if rel_tol is not None else k * 2.0 ** -22
    res = EmulatedGemm(idesc, swizzle, d, ref, tol * mag + 1e-30, writes, layout, tmems, taddrs,
                       regs, a_desc, b_desc, ld_shape)
    res.k = k
    return res


def random_problem(idesc: InstrDescriptor, k: int = 64, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Fresh standard-normal A (M×K) and B (K×N) for ``idesc`` (never zeros or ±1)."""
    rng = rng if rng is not None else np.random.default_rng()
    return rng.standard_normal((idesc.m, k)), rng.standard_normal((k, idesc.n))
