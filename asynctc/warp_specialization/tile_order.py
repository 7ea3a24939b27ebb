"""Chapter 06's persistent tile orders: the group-M raster the kernel computes, and the Hilbert
order table it reads (``tile_order="hilbert"``, ``kernels/tile_order.cuh``).

A work item is a tile, or with ``cluster=2`` a pair of tiles along M (a *cluster row* × a tile
column). :func:`raster_item` mirrors the kernel's ``tile_origin`` (group-M raster);
:func:`hilbert_cells` walks a Hilbert curve over the enclosing power-of-two square of the item
grid and skips the cells outside it (any grid shape); :func:`order_table` packs that walk as the
kernel's table (entry = cluster row << 16 | tile column); :func:`table_item` mirrors the kernel's
``tile_from_table``. Why a table and not the curve on the GPU: the rank of a cell among the valid
cells of a curve over a larger square has no closed form, so a CTA would walk the curve from its
start on the producer's single thread; the table is one 4-byte load per tile.
"""

from __future__ import annotations

import numpy as np

from .config import _fail

#: Largest item grid the packed table holds: cluster rows < 2^15, tile columns < 2^16.
MAX_ROWS, MAX_COLS = 1 << 15, 1 << 16


def hilbert_xy(side: int, d: int) -> tuple[int, int]:
    """Cell (row, col) at distance ``d`` along the Hilbert curve over a ``side`` × ``side`` square
    (``side`` a power of two): two bits of ``d`` per level, lowest level first; each quadrant's
    sub-curve is reflected / transposed so that the walk moves one cell at a time."""
    r = c = 0
    s, t = 1, d
    while s < side:
        qc = (t >> 1) & 1                 # quadrant: right half?
        qr = (t ^ qc) & 1                 # quadrant: lower half?
        if qr == 0:                       # the sub-curves of the upper quadrants turn
            if qc == 1:
                r, c = s - 1 - r, s - 1 - c
            r, c = c, r
        r, c = r + s * qr, c + s * qc
        t >>= 2
        s <<= 1
    return r, c


def hilbert_cells(rows: int, cols: int) -> list[tuple[int, int]]:
    """Every cell of a ``rows`` × ``cols`` grid once, in the order of the Hilbert curve over the
    enclosing power-of-two square (cells outside the grid skipped)."""
    for name, v in (("rows", rows), ("cols", cols)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            _fail(name, v, "the item grid's size: a positive integer")
    side = 1
    while side < max(rows, cols):
        side <<= 1
    out = []
    for d in range(side * side):
        r, c = hilbert_xy(side, d)
        if r < rows and c < cols:
            out.append((r, c))
    return out


def item_grid(cfg, m: int, n: int) -> tuple[int, int]:
    """(cluster rows, tile columns) of an exact launch of ``cfg`` on M × N."""
    return m // cfg.bm // cfg.cluster, n // cfg.bn


def order_table(rows: int, cols: int, order: str = "hilbert") -> np.ndarray:
    """The kernel's order table (int32, one entry per work item): entry i = (cluster row << 16) |
    tile column of the i-th item of ``order`` ("hilbert": :func:`hilbert_cells`)."""
    if order != "hilbert":
        _fail("order", order, "the kernel reads a table for 'hilbert' only ('raster' is computed)")
    if rows >= MAX_ROWS or cols >= MAX_COLS:
        _fail("grid", (rows, cols), f"the packed table holds < {MAX_ROWS} cluster rows and "
                                    f"< {MAX_COLS} tile columns")
    return np.array([(r << 16) | c for r, c in hilbert_cells(rows, cols)], dtype=np.int32)


def table_item(table: np.ndarray, item: int, rank: int, bm: int, bn: int,
               cluster: int) -> tuple[int, int]:
    """(m0, n0) of work item ``item`` for cluster rank ``rank``: the kernel's ``tile_from_table``."""
    e = int(table[item])
    return ((e >> 16) * cluster + rank) * bm, (e & 0xFFFF) * bn


def raster_item(item: int, tiles_m: int, tiles_n: int, rank: int, bm: int, bn: int,
                group_m: int, cluster: int) -> tuple[int, int]:
    """(m0, n0) of work item ``item``: the kernel's ``tile_origin`` (group-M raster over cluster
    rows, walked column by column within each group)."""
    group = max(group_m // cluster, 1)
    rows_m = tiles_m // cluster
    per_group = group * tiles_n
    first_m = item // per_group * group
    rows = min(rows_m - first_m, group)
    in_group = item % per_group
    return ((first_m + in_group % rows) * cluster + rank) * bm, in_group // rows * bn


def walk(cfg, m: int, n: int) -> list[tuple[int, int]]:
    """The (m0, n0) of rank 0 of every work item of ``cfg`` on M × N, in item order: what the
    persistent CTAs take, CTA b items b, b + grid, ..."""
    rows, cols = item_grid(cfg, m, n)
    if cfg.tile_order == "raster":
        return [raster_item(i, rows * cfg.cluster, cols, 0, cfg.bm, cfg.bn, cfg.group_m,
                            cfg.cluster) for i in range(rows * cols)]
    t = order_table(rows, cols, cfg.tile_order)
    return [table_item(t, i, 0, cfg.bm, cfg.bn, cfg.cluster) for i in range(len(t))]
