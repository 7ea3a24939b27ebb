"""Tensor Memory (TMEM), the accumulator store of Blackwell's ``tcgen05.mma`` (chapter 09).

Each sm_100 SM has **128 lanes × 512 columns of 32-bit cells** (256 KiB) of TMEM, shared by the
CTAs resident on it: each CTA allocates columns of it and addresses its own (an allocation blocks
while another resident CTA holds the columns). This module models, in plain Python, one SM's:

* **addresses** — a TMEM address is 32 bits, lane in bits 31-16 and column in bits 15-0
  (:func:`address`, :func:`split_address`);
* **allocation** — ``tcgen05.alloc`` takes whole columns (all 128 lanes), a power of two between 32
  and 512; ``tcgen05.dealloc`` gives them back; ``tcgen05.relinquish_alloc_permit`` promises that
  this CTA will allocate no more (:class:`TmemAllocator`);
* **who may touch which lanes** — warp *w* of a warpgroup reaches lanes 32·(w mod 4) … +31 only
  (:func:`lane_window`, :func:`reader_warp`, :func:`check_lane_access`);
* **where the accumulator lands** — the "data path layout" of D for each M and CTA group
  (:class:`AccumulatorLayout`);
* **which thread gets which cell** — ``tcgen05.ld`` shapes .32x32b, .16x64b, .16x128b, .16x256b
  (:func:`ld_fragment`, :func:`tcgen05_ld`);
* pictures of all of it (:func:`tmem_map`, :func:`plot_tmem`, :func:`plot_ld_fragment`).

Sources (PTX ISA 9.x, §9.7.16 "Tensor Core 5th Generation Family Instructions"):

* §9.7.16 "Tensor Memory" (subsection numbers vary between ISA versions): 128 lanes × 512 columns
  of 32-bit cells per CTA; address = lane << 16 | column. "Access restrictions": a warp of a warpgroup accesses the 32-lane quarter given by its
  warp id mod 4 (warp 0: lanes 0-31, warp 1: 32-63, warp 2: 64-95, warp 3: 96-127).
* "tcgen05.alloc / dealloc / relinquish_alloc_permit": nCols a power of 2 in [32, 512]; alloc and
  dealloc are warp-wide and issued by the same warp; alloc blocks while the columns are taken; all
  TMEM must be freed before the kernel exits; after relinquish_alloc_permit the CTA may not alloc.
* §9.7.16.2.3 "Data Movement Shape", "Matrix fragments for shape .32x32b / .16x64b / .16x128b /
  .16x256b" (Figures "Matrix Fragment for shape …"). The figures are images that could not be read
  here; the thread ↔ cell tables below agree with two independent transcriptions of them: CUTLASS's
  ``Copy_Traits<SM100_TMEM_LOAD_{32dp32b,16dp64b,16dp128b,16dp256b}Nx>`` (ThrID/ValID/DstLayout in
  include/cute/atom/copy_traits_sm100.hpp) and Apache TVM's ``tcgen05_ld_st`` table. .16x256b is
  the mma.sync m16n8 accumulator pattern.
* "Data path layout organization" (§9.7.16.10.5 in the ISA version TVM cites), Layouts A, B, D, F:
  where row i, column j of D lands. D: M=128, cta_group::1 — lane i, column j. F: M=64,
  cta_group::1 — lanes 0-15 of each warp's quarter (lane 32·(i div 16) + i mod 16), column j.
  A: M=256, cta_group::2 — each CTA holds 128 rows, lane i. B: M=128, cta_group::2 — each CTA holds
  64 rows, folded: lane i + 64·(j div N/2), column j mod N/2. Layout names from the PTX figures; the
  mappings agree with CUTLASS's ``UMMA::tmem_frg::make`` (1SM M=64 "half subpartitions", M=128;
  2SM M_MMA=64 "2x2" interleaved, M_MMA=128; include/cute/atom/mma_traits_sm100.hpp) and TVM's
  ``tmem_datapath_layout``.

Model choices that the ISA does not specify: the allocator hands out the lowest free range aligned
to its own size (the hardware's placement is not documented; kernels must use the address alloc
returns, never assume one).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..core.runtime import AsyncTCError

LANES = 128
COLUMNS = 512
CELL_BITS = 32
LANES_PER_WARP = 32

SECTION_TMEM = "PTX ISA §9.7.16 'Tensor Memory' (tcgen05)"
SECTION_ALLOC = "PTX ISA §9.7.16 'tcgen05.alloc / tcgen05.dealloc / tcgen05.relinquish_alloc_permit'"
SECTION_LD = "PTX ISA §9.7.16.2.3 'Data Movement Shape' (matrix fragments)"
SECTION_LAYOUT = "PTX ISA §9.7.16 'Data path layout organization' (Layouts A-G)"


class TmemError(AsyncTCError, ValueError):
    """A TMEM request the hardware would reject (or hang on); the message names field, value, rule."""


# --------------------------------------------------------------------------------------------------
# Addresses and lanes
# --------------------------------------------------------------------------------------------------

def _int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TmemError(f"{name}={v!r}: must be an integer")
    return int(v)


def address(lane: int, column: int) -> int:
    """The 32-bit TMEM address of (lane, column): ``lane << 16 | column`` (Tensor Memory addressing)."""
    lane, column = _int("lane", lane), _int("column", column)
    if not 0 <= lane < LANES:
        raise TmemError(f"lane={lane}: TMEM has lanes 0..{LANES - 1} ({SECTION_TMEM})")
    if not 0 <= column < COLUMNS:
        raise TmemError(f"column={column}: TMEM has columns 0..{COLUMNS - 1} ({SECTION_TMEM})")
    return lane << 16 | column


def split_address(taddr: int) -> tuple[int, int]:
    """(lane, column) of a 32-bit TMEM address. Raises :class:`TmemError` outside TMEM."""
    taddr = _int("taddr", taddr)
    if not 0 <= taddr < (1 << 32):
        raise TmemError(f"taddr={taddr:#x}: a TMEM address is 32 bits")
    lane, column = taddr >> 16, taddr & 0xFFFF
    address(lane, column)
    return lane, column


def lane_window(warp: int) -> tuple[int, int]:
    """(first, last) TMEM lane that warp ``warp`` (its id in the CTA) may access: warp w reaches the
    quarter 32·(w mod 4) … 32·(w mod 4) + 31 (PTX ISA §9.7.16, Tensor Memory access restrictions)."""
    w = _int("warp", warp)
    if w < 0:
        raise TmemError(f"warp={w}: must be ≥ 0")
    q = w % 4
    return (LANES_PER_WARP * q, LANES_PER_WARP * q + LANES_PER_WARP - 1)


def reader_warp(lane: int, warps=range(4)) -> int:
    """The one warp of ``warps`` (ids in the CTA, four in a row, e.g. an epilogue's 2..5) whose
    :func:`lane_window` contains TMEM lane ``lane``: the warp that may ``tcgen05.ld`` it."""
    lane = split_address(address(lane, 0))[0]
    found = [w for w in warps if lane_window(w)[0] <= lane <= lane_window(w)[1]]
    if len(found) != 1:
        raise TmemError(f"lane={lane}: warps {list(warps)} give {len(found)} readers, not one "
                        f"(warp w reaches lanes 32·(w mod 4) … +31; {SECTION_TMEM})")
    return found[0]


def check_lane_access(warp: int, lanes) -> None:
    """Raise :class:`TmemError` if warp ``warp`` touches a lane outside its quarter."""
    lo, hi = lane_window(warp)
    bad = sorted({int(x) for x in np.ravel(lanes) if not lo <= int(x) <= hi})
    if bad:
        raise TmemError(f"warp={warp} touches lanes {bad[:4]}{'…' if len(bad) > 4 else ''}: warp "
                        f"{warp} (rank {warp % 4} in its warpgroup) may access lanes {lo}-{hi} "
                        f"only ({SECTION_TMEM}, access restrictions)")


# --------------------------------------------------------------------------------------------------
# Allocation
# --------------------------------------------------------------------------------------------------

def check_alloc_columns(ncols: Any) -> int:
    """``nCols`` of tcgen05.alloc/dealloc: a power of two, 32 ≤ nCols ≤ 512. Raises TmemError."""
    if isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer)):
        raise TmemError(f"ncols={ncols!r}: a number of columns (int) ({SECTION_ALLOC})")
    n = int(ncols)
    if not 32 <= n <= COLUMNS or n & (n - 1):
        raise TmemError(f"ncols={n}: tcgen05.alloc takes a power of two between 32 and {COLUMNS} "
                        f"columns (32, 64, 128, 256, 512) ({SECTION_ALLOC})")
    return n


def columns_for(n_cells: int) -> int:
    """The smallest legal allocation holding ``n_cells`` columns (a power of two ≥ 32)."""
    c = 32
    while c < n_cells:
        c *= 2
    if c > COLUMNS:
        raise TmemError(f"{n_cells} columns: more than the {COLUMNS} of one CTA's TMEM")
    return c


@dataclasses.dataclass
class Allocation:
    column: int
    ncols: int
    warp: int

    @property
    def address(self) -> int:
        return address(0, self.column)


class TmemAllocator:
    """The TMEM allocator of one CTA, as ``tcgen05.alloc`` / ``dealloc`` /
    ``relinquish_alloc_permit`` see it.

    :meth:`alloc` returns the TMEM address (lane 0, first column) that the instruction would write
    to shared memory. Errors (:class:`TmemError`): a column count that is not a power of two in
    [32, 512]; an alloc after :meth:`relinquish_alloc_permit`; an alloc that does not fit (on the
    GPU it would block until another CTA on the SM frees columns — within one CTA, a deadlock); a
    dealloc that does not match an allocation (address and nCols) or comes from another warp;
    :meth:`check_all_freed` with columns still allocated (a kernel must free TMEM before it exits).
    Placement (lowest free range aligned to its size) is a model choice.
    """

    def __init__(self) -> None:
        self.allocations: list[Allocation] = []
        self.permit = True

    def free_columns(self) -> int:
        return COLUMNS - sum(a.ncols for a in self.allocations)

    def alloc(self, ncols: int, warp: int = 0) -> int:
        n = check_alloc_columns(ncols)
        if not self.permit:
            raise TmemError(f"alloc(ncols={n}) after relinquish_alloc_permit: the CTA promised to "
                            f"allocate no more TMEM ({SECTION_ALLOC})")
        taken = np.zeros(COLUMNS, bool)
        for a in self.allocations:
            taken[a.column:a.column + a.ncols] = True
        for start in range(0, COLUMNS, n):
            if not taken[start:start + n].any():
                self.allocations.append(Allocation(start, n, _int("warp", warp)))
                return address(0, start)
        raise TmemError(f"alloc(ncols={n}): only {self.free_columns()} of {COLUMNS} columns are "
                        f"free (not {n} together); tcgen05.alloc would block until they are "
                        f"freed — by this CTA, a deadlock ({SECTION_ALLOC})")

    def dealloc(self, taddr: int, ncols: int, warp: int = 0) -> None:
        n = check_alloc_columns(ncols)
        lane, col = split_address(taddr)
        for i, a in enumerate(self.allocations):
            if a.column == col and lane == 0:
                if a.ncols != n:
                    raise TmemError(f"dealloc(ncols={n}) of the allocation at column {col}: it has "
                                    f"{a.ncols} columns; dealloc frees exactly what alloc "
                                    f"returned ({SECTION_ALLOC})")
                if a.warp != warp:
                    raise TmemError(f"dealloc by warp {warp}: columns {col}.. were allocated by "
                                    f"warp {a.warp}; the same warp must free them "
                                    f"({SECTION_ALLOC})")
                del self.allocations[i]
                return
        raise TmemError(f"dealloc(taddr={taddr:#x}): no allocation starts at lane {lane}, column "
                        f"{col} ({SECTION_ALLOC})")

    def relinquish_alloc_permit(self) -> None:
        self.permit = False

    def check_all_freed(self) -> None:
        if self.allocations:
            cols = [(a.column, a.ncols) for a in self.allocations]
            raise TmemError(f"(column, ncols) {cols} still allocated at kernel exit: all TMEM "
                            f"must be deallocated before the kernel exits ({SECTION_ALLOC})")

    def column_owner(self) -> np.ndarray:
        """``(512,)`` int array: index of the allocation holding each column, -1 when free."""
        out = np.full(COLUMNS, -1, int)
        for i, a in enumerate(self.allocations):
            out[a.column:a.column + a.ncols] = i
        return out


# --------------------------------------------------------------------------------------------------
# Where D lands: data path layouts
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class AccumulatorLayout:
    """Where an ``m`` × ``n`` fp32 accumulator of ``tcgen05.mma.cta_group::<cta_group>`` lives in
    each CTA's TMEM (dense, no .ws; one 32-bit cell per element).

    With ``cta_group=2`` CTA *c* of the pair holds rows c·M/2 … of D (and of A) and all N columns.
    :meth:`lane` / :meth:`column` give, for local row ``i`` (0 ≤ i < :attr:`cta_m`) and column ``j``,
    the TMEM lane and the column offset from the allocation's first column. Raises
    :class:`TmemError` for an (m, cta_group) pair tcgen05.mma does not have (M ∈ {64, 128} with one
    CTA, {128, 256} with two) or an n outside 8…256 step 8 (16 with two CTAs).
    """

    m: int
    n: int
    cta_group: int = 1

    def __post_init__(self):
        cg = self.cta_group
        ms = {1: (64, 128), 2: (128, 256)}.get(cg)
        if ms is None:
            raise TmemError(f"cta_group={cg!r}: 1 or 2 ({SECTION_LAYOUT})")
        if self.m not in ms:
            raise TmemError(f"m={self.m}: with cta_group::{cg} M is {ms[0]} or {ms[1]} "
                            f"({SECTION_LAYOUT})")
        step = 8 * cg
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) \
                or not step <= self.n <= 256 or self.n % step:
            raise TmemError(f"n={self.n!r}: {step}…256 in steps of {step} with cta_group::{cg} "
                            "(PTX ISA §9.7.16.2.1 'Matrix Shape')")

    @property
    def name(self) -> str:
        """The PTX ISA figure: "Layout A" (M=256, pair), "B" (M=128, pair), "D" (M=128), "F" (M=64)."""
        return {(1, 128): "Layout D", (1, 64): "Layout F", (2, 256): "Layout A",
                (2, 128): "Layout B"}[(self.cta_group, self.m)]

    @property
    def cta_m(self) -> int:
        """Rows of D in each CTA."""
        return self.m // self.cta_group

    @property
    def folded(self) -> bool:
        """True for Layout B: the 64 rows use all 128 lanes, the column halves side by side."""
        return self.cta_group == 2 and self.m == 128

    @property
    def columns(self) -> int:
        """TMEM columns the accumulator occupies: N, or N/2 for Layout B."""
        return self.n // 2 if self.folded else self.n

    @property
    def alloc_columns(self) -> int:
        """The tcgen05.alloc request that holds it: :attr:`columns` rounded up to a power of 2 ≥ 32."""
        return columns_for(self.columns)

    def lane(self, i, j):
        """TMEM lane of local row ``i``, column ``j`` (ints or broadcastable int arrays)."""
        i, j = np.asarray(i), np.asarray(j)
        if self.m == 64 and self.cta_group == 1:
            return 32 * (i // 16) + i % 16 + 0 * j
        if self.folded:
            return i + 64 * (j // (self.n // 2))
        return i + 0 * j

    def column(self, i, j):
        """Column offset (from the allocation's first column) of local row ``i``, column ``j``."""
        i, j = np.asarray(i), np.asarray(j)
        if self.folded:
            return j % (self.n // 2) + 0 * i
        return j + 0 * i

    def maps(self) -> tuple[np.ndarray, np.ndarray]:
        """``(cta_m, n)`` arrays: lane and column offset of every element of a CTA's D."""
        i = np.arange(self.cta_m)[:, None]
        j = np.arange(self.n)[None, :]
        return self.lane(i, j), self.column(i, j)

    def inverse(self) -> tuple[np.ndarray, np.ndarray]:
        """``(128, columns)`` arrays: the local row and the column of D held by each cell, -1 where
        the cell holds nothing (e.g. lanes 16-31 of each quarter in Layout F)."""
        rows = np.full((LANES, self.columns), -1, int)
        cols = np.full((LANES, self.columns), -1, int)
        lane, col = self.maps()
        i = np.broadcast_to(np.arange(self.cta_m)[:, None], lane.shape)
        j = np.broadcast_to(np.arange(self.n)[None, :], lane.shape)
        rows[lane, col] = i
        cols[lane, col] = j
        return rows, cols

    def lanes_used(self) -> np.ndarray:
        return np.unique(self.maps()[0])

    def describe(self) -> str:
        per = f"each CTA of the pair holds {self.cta_m} rows" if self.cta_group == 2 else \
            f"{self.cta_m} rows"
        return (f"{self.m}×{self.n} fp32, cta_group::{self.cta_group} ({self.name}): {per}, "
                f"{len(self.lanes_used())} lanes × {self.columns} columns used, "
                f"tcgen05.alloc {self.alloc_columns} columns")


# --------------------------------------------------------------------------------------------------
# tcgen05.ld: which thread gets which cell
# --------------------------------------------------------------------------------------------------

#: shape → (lanes, columns per repetition, registers per repetition, largest .num).
LD_SHAPES = {"32x32b": (32, 1, 1, 128), "16x64b": (16, 2, 1, 128), "16x128b": (16, 4, 2, 64),
             "16x256b": (16, 8, 4, 32)}
LD_NUMS = (1, 2, 4, 8, 16, 32, 64, 128)


def _check_shape(shape: str, num: int) -> tuple[int, int, int, int]:
    s = str(shape).lstrip(".")
    if s not in LD_SHAPES:
        raise TmemError(f"shape={shape!r}: tcgen05.ld shapes modelled here are "
                        f"{sorted(LD_SHAPES)} ({SECTION_LD})")
    lanes, cols, regs, top = LD_SHAPES[s]
    if isinstance(num, bool) or num not in LD_NUMS or num > top:
        raise TmemError(f"num={num!r}: .x1 … .x{top} in powers of two for .{s} (at most 128 "
                        f"registers per thread) ({SECTION_LD})")
    return lanes, cols, regs, num


def ld_fragment(shape: str = "32x32b", num: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """For ``tcgen05.ld.sync.aligned.<shape>.x<num>.b32``: two ``(32, registers)`` int arrays, the
    lane offset and the column offset (from ``taddr``) of the cell each thread's register ``r``
    receives. Registers per thread: num (.32x32b, .16x64b), 2·num (.16x128b), 4·num (.16x256b)."""
    lanes, cols, regs, num = _check_shape(shape, num)
    s = str(shape).lstrip(".")
    t = np.arange(32)[:, None]
    r = np.arange(regs * num)[None, :]
    if s == "32x32b":
        lane, col = t + 0 * r, r + 0 * t
    elif s == "16x64b":
        lane, col = t // 4 + 8 * (t % 2) + 0 * r, (t // 2) % 2 + 2 * r
    elif s == "16x128b":
        lane, col = t // 4 + 8 * (r % 2), t % 4 + 4 * (r // 2)
    else:  # 16x256b
        lane, col = t // 4 + 8 * ((r // 2) % 2), r % 2 + 2 * (t % 4) + 8 * (r // 4)
    return lane, col


def tcgen05_ld(tmem: np.ndarray, warp: int, taddr: int, shape: str = "32x32b",
               num: int = 1) -> np.ndarray:
    """What ``tcgen05.ld.<shape>.x<num>`` executed by warp ``warp`` at TMEM address ``taddr`` puts
    in each thread's registers: a ``(32, registers)`` array of ``tmem``'s dtype (``tmem`` is one
    CTA's ``(128, 512)`` array of cells). Raises :class:`TmemError` when the warp would touch lanes
    outside its quarter or columns past 511."""
    lane0, col0 = split_address(taddr)
    dl, dc = ld_fragment(shape, num)
    lanes, cols = lane0 + dl, col0 + dc
    check_lane_access(warp, lanes)
    if cols.max() >= COLUMNS:
        raise TmemError(f"taddr column {col0} + {int(dc.max()) + 1} columns of .{shape}.x{num} "
                        f"runs past column {COLUMNS - 1} ({SECTION_TMEM})")
    return np.asarray(tmem)[lanes, cols]


# --------------------------------------------------------------------------------------------------
# Pictures
# --------------------------------------------------------------------------------------------------

def tmem_map(layout: AccumulatorLayout, by: str = "warp") -> np.ndarray:
    """``(128, columns)`` int array for drawing: per cell the warp that reads it (``by="warp"``:
    lane // 32), the row of D it holds (``"row"``, local to the CTA), or the column of D
    (``"column"``); -1 where the cell holds no element."""
    rows, cols = layout.inverse()
    if by == "row":
        return rows
    if by == "column":
        return cols
    if by == "warp":
        return np.where(rows >= 0, np.arange(LANES)[:, None] // 32, -1)
    raise ValueError(f"by={by!r}: 'warp', 'row' or 'column'")


def plot_tmem(layout: AccumulatorLayout, by: str = "warp", ax=None):
    """TMEM lanes (rows of the picture) × allocated columns, coloured by warp / row / column of D;
    empty cells white, warp quarters marked. By warp the four colours are named in the legend (a
    discrete key); by row or column a colour bar gives the value. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    data = tmem_map(layout, by)
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=80, layout="constrained")
    else:
        fig = ax.figure
    warps = LANES // 32
    colours = plt.get_cmap("tab10").colors[:warps]
    cmap = (ListedColormap(colours) if by == "warp" else plt.get_cmap("viridis")).with_extremes(bad="white")
    im = ax.imshow(np.ma.masked_less(data, 0), cmap=cmap, aspect="auto", interpolation="nearest",
                   **({"vmin": -0.5, "vmax": warps - 0.5} if by == "warp" else {}))
    for q in (32, 64, 96):
        ax.axhline(q - 0.5, color="k", lw=0.6)
    ax.set_xlabel(f"TMEM column (of {layout.alloc_columns} allocated)")
    ax.set_ylabel("TMEM lane")
    ax.set_title(f"M={layout.m}, N={layout.n}, cta_group::{layout.cta_group} (the PTX ISA's {layout.name})\n"
                 f"coloured by {'the warp that may read it' if by == 'warp' else 'D ' + by}",
                 fontsize=9)
    handles = []
    if by == "warp":
        handles += [Patch(fc=colours[w], label=f"warp {w} of the warpgroup: lanes {32 * w}–{32 * w + 31}")
                    for w in range(warps)]
    else:
        fig.colorbar(im, ax=ax, shrink=0.8, label=f"{by} of D held in the cell (per CTA)")
    handles.append(plt.Line2D([], [], color="k", lw=0.8, label="32-lane quarter (warp w reads w mod 4)"))
    if (data < 0).any():
        handles.append(plt.Rectangle((0, 0), 1, 1, fc="white", ec="0.5", lw=0.6,
                                     label="white: cell holds no element of D"))
    ax.legend(handles=handles, fontsize=7.5, loc="upper center",
              bbox_to_anchor=(0.5, -0.2 if by == "warp" else -0.16), ncol=1, frameon=False)
    return fig


def plot_ld_fragment(shape: str = "16x256b", num: int = 1):
    """The cells one warp's ``tcgen05.ld.<shape>.x<num>`` reads, each labelled with the thread
    (lane id 0..31) that receives it — the chapter-03 bank-map style."""
    from ..core import plots
    dl, dc = ld_fragment(shape, num)
    lanes, cols, _, _ = _check_shape(shape, num)
    grid = np.full((lanes, int(dc.max()) + 1), -1, int)
    grid[dl, dc] = np.broadcast_to(np.arange(32)[:, None], dl.shape)
    return plots.bank_map(grid, title=f"tcgen05.ld.{shape}.x{num}: thread receiving each cell",
                          row_label="lane (from taddr)", col_label="column (from taddr)",
                          value_label="thread receiving the cell (lane id 0–31 of the warp)")


def columns_hint(answer, m: int = 128, n: int = 256, cta_group: int = 1, accumulators: int = 1) -> str:
    """Chapter 09's ``ch09.tmem_columns`` hint (:mod:`asynctc.models.tcgen05` registers it): each known
    mistake in two tiers (:func:`asynctc.core.exercises.tiered`): what the answer counted, and a
    question pointing at 09 §1 (one lane per row: a column per column of D) or §4 (the sizes
    tcgen05.alloc takes); at the next miss, the rule."""
    from ..core.exercises import tiered as cut
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return "answer with a number of TMEM columns (an int)."
    k, lay = accumulators, AccumulatorLayout(m, n, cta_group)
    cols, both, sizes = lay.columns, accumulators * lay.columns, " Which sizes does tcgen05.alloc take (§4)?"
    if k > 1:
        if a == lay.alloc_columns:
            return cut(f"{a} columns hold one {m}×{n} accumulator.", " How many does the kernel keep side "
                       f"by side (§1)?", f" The kernel keeps {k} (§1: the MMAs fill one while "
                       "the epilogue reads the other out), side by side in one allocation.")
        if a == cols:
            return cut(f"{a} columns: that is one accumulator's {n} columns, not yet a legal request.",
                       " How many accumulators does the kernel keep (§1)?" + sizes,
                       f" The kernel keeps {k} of them (§1), and tcgen05.alloc takes a power of two ≥ 32.")
        if a == both and a & (a - 1):
            return cut(f"{k} × {cols} columns is what the accumulators use.", sizes,
                       " tcgen05.alloc takes a power of two ≥ 32 (and at most 512): round up.")
        if a in (cols // k, columns_for(max(cols // k, 1))):
            return cut(f"{a} columns are fewer than one accumulator's {cols}.",
                       f" How many columns does one {m}×{n} accumulator fill, one lane per row (§1)?",
                       f" Each accumulator needs all of its N = {n} columns (one fp32 per row in every "
                       f"column); {k} of them need {k} times that, not a share of it.")
        if a == -(-both // 32):
            return cut(f"{a} is {both} / 32.", " In what unit does tcgen05.alloc take its size (§4)?",
                       " That is a count of 32-column blocks; tcgen05.alloc takes its size in columns, one "
                       "per column of each accumulator, a power of two from 32 to 512.")
        if a == k * lay.alloc_columns and a != columns_for(both):
            return cut(f"you rounded each accumulator up on its own and added ({k} × {lay.alloc_columns}).",
                       " How many allocations hold them (the exercise), so where does the rounding go?",
                       f" One allocation holds both: add the {k} × {cols} columns first, then round up once.")
        if a > columns_for(both) and not a & (a - 1) and a <= 512:
            return cut(f"{a} columns hold them, but it is more than they need.",
                       f" How many columns do {k} accumulators of N = {n} fill (§1)?",
                       f" {k} × {cols} columns round up to a smaller power of two.")
    if a in {c * rows * n for c in (1, k) for rows in (m, lay.cta_m)}:   # one's or all
        return cut(f"{a} is the number of 32-bit cells.",
                   " What does tcgen05.alloc count, and how many lanes does one column span (§4)?",
                   " tcgen05.alloc counts columns, and every column spans all the lanes — one lane per row of D.")
    if a == m or a == lay.cta_m:
        return cut(f"{a} is the number of rows of D.", " Do rows go to lanes or to columns (§1)?",
                   " Rows of D go to lanes, not to columns; columns hold N.")
    if a == -(-n // 32):
        return cut(f"{a} is N/32, a count of 32-column blocks.", " In what unit does tcgen05.alloc take "
                   "its size (§4)?", " tcgen05.alloc takes its size in columns (one per column of D), a "
                   "power of two from 32 to 512.")
    if a < 32:
        return cut(f"you asked for {a} column{'s' if a != 1 else ''}.", " What is the smallest request tcgen05.alloc takes (§4)?",
                   f" tcgen05.alloc takes columns, at least 32 of them: one per column of D (N = {n}), "
                   "rounded up to a power of two.")
    if a & (a - 1):
        return cut(f"{a} is not a power of two.", sizes,
                   " tcgen05.alloc takes a power of two ≥ 32 columns (and at most 512): round up.")
    if a > 512:
        return cut(f"you asked for {a} columns.", " How many columns does a CTA's TMEM have (§4)?",
                   " A CTA has 512 columns of TMEM in all.")
    return cut(f"{a} columns do not fit {k} {m}×{n} fp32 accumulator{'s' if k > 1 else ''}.",
               " How many columns does each fill, one row of D per lane (§1)?" + sizes,
               " One fp32 accumulator per 32-bit cell: with one CTA each row of D sits in one lane, so each "
               "column of D needs one TMEM column" + (f", {k} accumulators side by side" if k > 1 else "")
               + "; round up to a power of two ≥ 32.")
