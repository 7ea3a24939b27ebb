"""One layout object for a shared-memory tile: where every element of a TMA box lands.

:class:`SmemTile` describes a 2-D tile of shared memory — ``rows`` × ``cols`` elements of ``dtype``,
``cols`` the contiguous (inner) dimension, stored under a TMA swizzle mode of 0 (none), 32, 64 or
128 bytes — and answers, in plain Python, the questions a kernel author needs answered:

* :meth:`SmemTile.byte_offset` — the shared-memory byte offset (from the tile base) at which TMA
  writes element ``(row, col)`` of the box (and from which a TMA store reads it);
* :meth:`SmemTile.bank` — the shared-memory bank (4-byte word mod 32) that byte lands in;
* :meth:`SmemTile.offsets` / :meth:`SmemTile.banks` — the same for the whole tile, as numpy arrays;
* :attr:`SmemTile.required_alignment` — the tile-base alignment for which the model is exact;
* :meth:`SmemTile.tensor_map_args` — the box and swizzle arguments of the tensor map that fills it.

The same object drives the tensor map (chapter 03, :mod:`asynctc.tma`) and the wgmma shared-memory
descriptor (chapter 04), so the two cannot disagree. **This API is stable**: other modules import
``SmemTile(rows, cols, dtype, swizzle)`` and ``byte_offset(row, col) -> int``.

The swizzle model (sources: CUDA C++ Programming Guide, "Tensor Memory Access", the swizzle-pattern
table and its pointer-offset formula; ``CUtensorMapSwizzle`` in the CUDA driver API,
``cuTensorMapEncodeTiled``: "Swizzle 16B chunks within {32,64,128}B span"):

1. Rows of the box are laid out one after another. Without swizzle a row occupies exactly its
   ``inner_bytes`` = ``cols × itemsize`` (a multiple of 16 bytes, a tensor-map rule). With a swizzle
   mode of span ``S`` bytes the inner box dimension must be ≤ ``S`` and each row occupies ``S``
   bytes (a narrower row is padded to the full swizzle width: the guide asks that shared memory "be
   allocated to accommodate the full swizzle width").
2. The swizzle permutes 16-byte chunks: for span ``S`` with ``n = log2(S / 16)`` (1, 2, 3 for 32,
   64, 128 B), address bits ``[4, 4+n)`` (the 16-byte chunk inside the span) are XORed with bits
   ``[7, 7+n)`` (the index of the 128-byte line, mod S/16). In CuTe's notation this is
   ``Swizzle<n, 4, 3>`` applied to byte addresses. The pattern repeats every ``8 × S`` bytes
   (128 B: 1024, 64 B: 512, 32 B: 256), which is why the tile base must be aligned to that many
   bytes for the pattern to start at row 0 — the guide's offset formula
   ``(smem_ptr / 128) % (S / 16)`` is exactly the line-index bits this model XORs in.

:func:`swizzle_address` applies step 2 to any byte offset; :func:`unswizzle_address` inverts it
(the XOR is its own inverse because bits 7.. are not changed).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

#: Swizzle modes by span in bytes: 0 means none. Names follow ``CUtensorMapSwizzle``.
SWIZZLE_MODES = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
                 64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}

#: Tile-base alignment (bytes) for which :meth:`SmemTile.byte_offset` is exact, per swizzle span:
#: the length after which the pattern repeats (CUDA C++ Programming Guide swizzle table). With no
#: swizzle, 128 bytes: the shared-memory operand of ``cp.async.bulk.tensor`` must be 128-byte
#: aligned (PTX ISA, "Tensor copy instructions: cp.async.bulk.tensor"; the guide's table lists
#: 128 bytes for every mode).
ALIGNMENT = {0: 128, 32: 256, 64: 512, 128: 1024}

#: Shared memory: 32 banks of 4 bytes (CUDA C++ Programming Guide, "Shared Memory" for cc 5.x+).
BANKS = 32
BANK_BYTES = 4


class LayoutError(ValueError):
    """A tile that no TMA box / swizzle mode can produce; the message names field, value and rule."""


def dtype_of(dtype: Any) -> np.dtype:
    """numpy dtype from a name or dtype: "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"
    (the last three through ml_dtypes), "float32", "uint8", "int8", ..."""
    if isinstance(dtype, str):
        if dtype in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e5m2fnuz",
                     "float8_e4m3fnuz"):
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, dtype))
        return np.dtype(dtype)
    if getattr(dtype, "__module__", "").startswith("ml_dtypes") or isinstance(dtype, type):
        return np.dtype(dtype)
    return np.dtype(dtype)


def _norm_swizzle(swizzle: Any) -> int:
    s = 0 if swizzle is None else swizzle
    if isinstance(s, str):
        t = s.strip().upper().replace("CU_TENSOR_MAP_SWIZZLE_", "").replace("SWIZZLE_", "")
        s = {"NONE": 0, "0": 0, "32B": 32, "64B": 64, "128B": 128, "32": 32, "64": 64,
             "128": 128}.get(t, s)
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or int(s) not in SWIZZLE_MODES:
        raise LayoutError(f"swizzle={swizzle!r}: must be 0 (none), 32, 64 or 128 (bytes of the "
                          "swizzle span, CUtensorMapSwizzle)")
    return int(s)


def swizzle_address(offset, swizzle: int):
    """Apply the TMA swizzle of span ``swizzle`` bytes to byte ``offset`` (int or integer array).

    ``offset`` is relative to a base aligned to :data:`ALIGNMENT` [swizzle]. Bits [4, 4+n) are
    XORed with bits [7, 7+n), n = log2(swizzle/16). ``swizzle`` 0 returns ``offset`` unchanged.
    """
    s = _norm_swizzle(swizzle)
    if s == 0:
        return offset
    mask = s // 16 - 1
    return offset ^ (((offset >> 7) & mask) << 4)


def unswizzle_address(offset, swizzle: int):
    """Inverse of :func:`swizzle_address` (the same XOR: bits 7.. are left unchanged)."""
    return swizzle_address(offset, swizzle)


@dataclasses.dataclass(frozen=True, init=False)
class SmemTile:
    """A ``rows`` × ``cols`` tile of ``dtype`` in shared memory under a TMA swizzle mode.

    Parameters
    ----------
    rows: number of rows (the outer box dimension; for a TMA box of rank > 2, the product of the
        outer dimensions). ≥ 1.
    cols: elements per row, the contiguous (inner) dimension. ``cols × itemsize`` must be a multiple
        of 16 bytes (cuTensorMapEncodeTiled: "boxDim[0] * elementSizeInBytes must be a multiple of
        16 bytes") and, when swizzled, ≤ the swizzle span.
    dtype: a numpy dtype or name ("float16", "bfloat16", "float32", "float8_e4m3fn", "uint8", ...).
    swizzle: 0 (none), 32, 64 or 128 — the swizzle span in bytes (also accepts None and the
        names "128B", "SWIZZLE_128B", "CU_TENSOR_MAP_SWIZZLE_128B").

    Raises :class:`LayoutError` (a ``ValueError``) naming the field, value and rule.

    Attributes: ``itemsize`` (bytes per element), ``inner_bytes`` (cols × itemsize), ``row_pitch``
    (bytes between rows in shared memory: inner_bytes without swizzle, the span with one),
    ``size_bytes`` (rows × row_pitch: the shared memory the tile occupies, padding included),
    ``required_alignment`` (bytes, see :data:`ALIGNMENT`).
    """

    rows: int
    cols: int
    dtype: np.dtype
    swizzle: int

    def __init__(self, rows: int, cols: int, dtype: Any = "float16", swizzle: Any = 0):
        for name, v in (("rows", rows), ("cols", cols)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise LayoutError(f"{name}={v!r}: must be a positive integer")
        try:
            dt = dtype_of(dtype)
        except (TypeError, AttributeError) as e:
            raise LayoutError(f"dtype={dtype!r}: not a numpy/ml_dtypes dtype ({e})") from None
        if dt.itemsize not in (1, 2, 4, 8) or dt.kind not in "fiuV":
            raise LayoutError(f"dtype={dt}: TMA moves 1-, 2-, 4- or 8-byte elements "
                              "(CUtensorMapDataType)")
        sw = _norm_swizzle(swizzle)
        object.__setattr__(self, "rows", int(rows))
        object.__setattr__(self, "cols", int(cols))
        object.__setattr__(self, "dtype", dt)
        object.__setattr__(self, "swizzle", sw)
        inner = self.inner_bytes
        if inner % 16:
            raise LayoutError(f"cols={cols}: the inner box dimension is {inner} bytes "
                              f"({cols} × {dt.itemsize} B); it must be a multiple of 16 bytes "
                              "(cuTensorMapEncodeTiled, boxDim[0] rule)")
        if sw and inner > sw:
            raise LayoutError(f"cols={cols}: the inner box dimension is {inner} bytes, more than the "
                              f"{sw}-byte swizzle span; with swizzle {sw} B a row may hold at most "
                              f"{sw // dt.itemsize} {dt.name} elements (cuTensorMapEncodeTiled: "
                              "inner dimension ≤ swizzle size)")

    # -- sizes ----------------------------------------------------------------------------------
    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def inner_bytes(self) -> int:
        """Bytes of one row of the box in global memory: ``cols × itemsize``."""
        return self.cols * self.itemsize

    @property
    def row_pitch(self) -> int:
        """Bytes between consecutive rows in shared memory (padding to the swizzle span included)."""
        return self.swizzle if self.swizzle else self.inner_bytes

    @property
    def size_bytes(self) -> int:
        """Shared memory the tile occupies: ``rows × row_pitch`` bytes."""
        return self.rows * self.row_pitch

    @property
    def box_bytes(self) -> int:
        """Bytes TMA transfers for one full box: ``rows × cols × itemsize`` — the ``expect_tx`` byte
        count of a load (padding is not transferred)."""
        return self.rows * self.inner_bytes

    @property
    def required_alignment(self) -> int:
        """Tile-base alignment in bytes for which :meth:`byte_offset` is exact: 1024 (128 B swizzle),
        512 (64 B), 256 (32 B), 128 (none; the cp.async.bulk.tensor minimum)."""
        return ALIGNMENT[self.swizzle]

    @property
    def swizzle_name(self) -> str:
        """The ``CUtensorMapSwizzle`` enumerator name of this mode."""
        return SWIZZLE_MODES[self.swizzle]

    # -- the model ------------------------------------------------------------------------------
    def _check_index(self, row: int, col: int) -> None:
        if not 0 <= row < self.rows:
            raise IndexError(f"row={row}: must be in [0, {self.rows})")
        if not 0 <= col < self.cols:
            raise IndexError(f"col={col}: must be in [0, {self.cols})")

    def byte_offset(self, row: int, col: int) -> int:
        """Shared-memory byte offset, from the tile base, of element ``(row, col)`` of the box.

        ``row`` in [0, rows), ``col`` in [0, cols). Exact when the tile base is aligned to
        :attr:`required_alignment`. Raises :class:`IndexError` outside the tile.
        """
        self._check_index(int(row), int(col))
        linear = int(row) * self.row_pitch + int(col) * self.itemsize
        return int(swizzle_address(linear, self.swizzle))

    def bank(self, row: int, col: int) -> int:
        """Shared-memory bank (0..31) of the first byte of element ``(row, col)``."""
        return (self.byte_offset(row, col) // BANK_BYTES) % BANKS

    def offsets(self) -> np.ndarray:
        """``(rows, cols)`` int64 array of :meth:`byte_offset` for every element."""
        r = np.arange(self.rows, dtype=np.int64)[:, None]
        c = np.arange(self.cols, dtype=np.int64)[None, :]
        return swizzle_address(r * self.row_pitch + c * self.itemsize, self.swizzle)

    def banks(self) -> np.ndarray:
        """``(rows, cols)`` int64 array of :meth:`bank` for every element."""
        return (self.offsets() // BANK_BYTES) % BANKS

    def chunk_map(self) -> np.ndarray:
        """``(rows, inner_bytes // 16)`` array: for each 16-byte chunk of each row of the box, the
        16-byte chunk index within its 128-byte line where it lands (its group of 4 banks, 0..7)."""
        r = np.arange(self.rows, dtype=np.int64)[:, None]
        c = np.arange(self.inner_bytes // 16, dtype=np.int64)[None, :]
        off = swizzle_address(r * self.row_pitch + c * 16, self.swizzle)
        return (off % 128) // 16

    def element_at(self) -> np.ndarray:
        """Inverse map: ``(size_bytes // itemsize,)`` int64 array giving, for each element slot of
        shared memory, the flat box index ``row * cols + col`` stored there, or -1 for padding."""
        out = np.full(self.size_bytes // self.itemsize, -1, dtype=np.int64)
        out[(self.offsets() // self.itemsize).ravel()] = np.arange(self.rows * self.cols)
        return out

    def scatter(self, box: np.ndarray, fill: int = 0) -> np.ndarray:
        """The bytes TMA would leave in shared memory after loading ``box`` (rows × cols of dtype),
        as a ``(size_bytes,)`` uint8 array; padding bytes hold ``fill``."""
        box = np.ascontiguousarray(box)
        if box.shape != (self.rows, self.cols) or box.dtype.itemsize != self.itemsize:
            raise ValueError(f"box: shape {box.shape} / itemsize {box.dtype.itemsize}, expected "
                             f"{(self.rows, self.cols)} / {self.itemsize}")
        out = np.full(self.size_bytes, fill, dtype=np.uint8)
        src = box.view(np.uint8).reshape(self.rows, self.cols, self.itemsize)
        idx = self.offsets()[..., None] + np.arange(self.itemsize)
        out[idx.ravel()] = src.ravel()
        return out

    def gather(self, smem: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`scatter`: read the ``(rows, cols)`` box (as ``dtype``) out of raw
        shared-memory bytes (uint8 array of at least ``size_bytes``)."""
        raw = np.ascontiguousarray(smem).view(np.uint8).ravel()
        if raw.size < self.size_bytes:
            raise ValueError(f"smem: {raw.size} bytes, the tile needs {self.size_bytes}")
        idx = self.offsets()[..., None] + np.arange(self.itemsize)
        return raw[idx.reshape(-1)].copy().view(self.dtype).reshape(self.rows, self.cols)

    def conflicts(self, row_of_lane, col_of_lane, bytes_per_lane: int | None = None) -> int:
        """Bank-conflict ways when the lanes of a warp access elements ``(row_of_lane[i],
        col_of_lane[i])``, each lane ``bytes_per_lane`` bytes (default one element; 4, 8 or 16 for
        vector accesses). Accesses wider than 4 bytes are served in phases of ``128 / bytes``
        lanes (8-byte: two half-warps, 16-byte: four quarter-warps); within a phase the cost is the
        largest number of distinct 4-byte words any one bank must deliver. Returns the worst phase:
        1 means conflict-free."""
        nb = int(bytes_per_lane or self.itemsize)
        lanes = list(zip(row_of_lane, col_of_lane))
        per_phase = 32 if nb <= 4 else 128 // nb
        worst = 1
        for p in range(0, len(lanes), per_phase):
            words: dict[int, set[int]] = {}
            for r, c in lanes[p:p + per_phase]:
                base = self.byte_offset(int(r), int(c))
                for w in range(base // BANK_BYTES, (base + nb - 1) // BANK_BYTES + 1):
                    words.setdefault(w % BANKS, set()).add(w)
            worst = max(worst, max(len(v) for v in words.values()))
        return worst

    # -- the tensor map that fills this tile --------------------------------------------------------
    def tensor_map_args(self) -> dict:
        """Keyword arguments for :func:`asynctc.tma.make_tensor_map` (and, through it,
        ``StridedMemoryView.as_tensor_map``): ``box_dim`` (rows, cols) in row-major order,
        ``swizzle`` (span in bytes), ``dtype``. Raises :class:`LayoutError` when ``rows`` > 256
        (cuTensorMapEncodeTiled: every boxDim ≤ 256)."""
        if self.rows > 256:
            raise LayoutError(f"rows={self.rows}: one TMA box has at most 256 rows "
                              "(cuTensorMapEncodeTiled: boxDim[i] ≤ 256); split the tile into "
                              "several boxes")
        if self.cols > 256:
            raise LayoutError(f"cols={self.cols}: one TMA box has at most 256 elements per row "
                              "(cuTensorMapEncodeTiled: boxDim[i] ≤ 256)")
        return {"box_dim": (self.rows, self.cols), "swizzle": self.swizzle, "dtype": self.dtype}

    def describe(self) -> str:
        """One line: shape, dtype, swizzle, bytes, alignment."""
        sw = f"{self.swizzle}B swizzle" if self.swizzle else "no swizzle"
        return (f"{self.rows}×{self.cols} {self.dtype.name}, {sw}: {self.inner_bytes} B per row, "
                f"pitch {self.row_pitch} B, {self.size_bytes} B in shared memory, base aligned to "
                f"{self.required_alignment} B")

    def __repr__(self) -> str:
        return f"SmemTile({self.rows}, {self.cols}, {self.dtype.name!r}, swizzle={self.swizzle})"
