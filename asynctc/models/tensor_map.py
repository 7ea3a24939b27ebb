"""Tensor-map rules: what ``cuTensorMapEncodeTiled`` accepts, checked in Python (no GPU needed).

The encoding itself (through cuda.core, on a GPU) is :func:`asynctc.tma.make_tensor_map`.

A tensor map tells the Tensor Memory Accelerator where a tensor lives in global memory (address,
dimensions, byte strides, element type) and which box one ``cp.async.bulk.tensor`` moves (box
dimensions, element strides, shared-memory swizzle, out-of-bound fill). It is encoded by the driver
(``cuTensorMapEncodeTiled``, CUDA driver API, "Tensor Map Object Management") — here always through
cuda.core's ``StridedMemoryView.as_tensor_map`` — and passed to a kernel by value as a
``const __grid_constant__`` 128-byte parameter (``TmaDesc`` in ``kernels/ptx/tma.cuh``).

The driver answers a bad argument with a bare ``CUDA_ERROR_INVALID_VALUE``. So every rule of
``cuTensorMapEncodeTiled`` the course can break is checked here first, and a violation raises
:class:`TensorMapError` (a ``ValueError``) that names the field, the value and the rule:

=====================  =====================================================================
field                  rule (cuTensorMapEncodeTiled, CUDA 13 driver API documentation)
=====================  =====================================================================
rank                   1 ≤ tensorRank ≤ 5
dtype                  one of CUtensorMapDataType (8-bit types travel as UINT8)
address                an integer, 0 < globalAddress < 2^64, 16-byte aligned
shape                  every globalDim in 1 .. 2^31 (see :data:`MAX_DIM` for the source)
strides                every globalStride (bytes, all but the innermost dimension) a multiple
                       of 16 and < 2^40; the innermost dimension contiguous. Strides of
                       dimensions of size 1 are never used, so they are not checked and are
                       replaced by a legal value before encoding.
box                    every boxDim in 1 .. 256; boxDim[0] × element size a multiple of 16 bytes
swizzle                0 / 32 / 64 / 128 bytes; when swizzled, boxDim[0] × element size ≤ the span
element_strides        every elementStride in 1 .. 8; the innermost one must be 1 (PTX ISA
                       §5.5.3.2 "Traversal-Stride": 1 in dimension 0 for non-interleaved
                       layouts; the driver ignores it, "TMA doesn't support the stride for
                       dimension zero", so a stride there would silently load the whole inner
                       box dimension)
oob_fill               "zero", or "nan" (NAN_REQUEST_ZERO_FMA) only for floating-point types
box bytes              (not a driver rule: what one load may do) the bytes one load writes,
                       :attr:`TensorMapSpec.box_bytes`, ≤ 2^20 − 1 (the mbarrier tx-count range,
                       PTX ISA "mbarrier: tx-count") and ≤ 227 KiB (the largest shared memory
                       one block may opt in to on sm_90, CUDA C++ Programming Guide, "Compute
                       Capabilities"); the smem tile with its swizzle padding ≤ 227 KiB too
=====================  =====================================================================

Order convention: everything here is **row-major, outermost first**, like numpy shapes (the driver's
arrays are innermost first; cuda.core reverses them). ``box=(64, 64)`` on a (M, K) array is 64 rows
of 64 contiguous elements. Kernels take coordinates innermost first (column, row, ...).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from .layout import _norm_swizzle, dtype_of, SmemTile, SWIZZLE_MODES
from ..core.runtime import AsyncTCError

#: numpy dtype name → CUtensorMapDataType enumerator name. TMA copies bits: 8-bit float types (and
#: int8) travel as UINT8, which leaves the bytes unchanged.
DATA_TYPES = {
    "uint8": "UINT8", "int8": "UINT8", "float8_e4m3fn": "UINT8", "float8_e5m2": "UINT8",
    "uint16": "UINT16", "int16": "UINT16",
    "uint32": "UINT32", "int32": "INT32", "uint64": "UINT64", "int64": "INT64",
    "float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT32", "float64": "FLOAT64",
}
FLOAT_TYPES = {"FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64"}

MAX_RANK = 5
#: globalDim limit. The cuda.h of CUDA 13.5 (the toolkit headers the course installs from pip)
#: documents cuTensorMapEncodeTiled's globalDim as "non-zero and less than or equal to 2^31"; the
#: cuda.h of CUDA 13.0 (the H200's driver generation) and older online copies say 2^32. The course
#: enforces the stricter 2^31 of the newer text (nothing it does needs larger dimensions); it has
#: not measured which of the two the driver actually enforces.
MAX_DIM = 2**31
MAX_STRIDE = 2**40
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
#: Largest tx-count one mbarrier phase can carry: the tx-count range is [-(2^20 - 1), 2^20 - 1]
#: (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier", "tx-count").
MAX_TX_BYTES = 2**20 - 1
#: Largest dynamic shared memory one block may opt in to on sm_90: 227 KiB (CUDA C++ Programming
#: Guide, "Compute Capabilities", table "Technical Specifications per Compute Capability").
MAX_SMEM_BYTES = 227 * 1024
#: The source every message cites.
SOURCE = "cuTensorMapEncodeTiled, CUDA driver API"


class TensorMapError(AsyncTCError, ValueError):
    """A tensor-map argument breaks a cuTensorMapEncodeTiled rule; raised before the driver sees it."""


def _fail(field: str, value: Any, rule: str) -> None:
    raise TensorMapError(f"{field}={value!r}: {rule} ({SOURCE})")


@dataclasses.dataclass(frozen=True)
class TensorMapSpec:
    """The validated arguments of one tiled tensor map (row-major order, outermost first).

    ``dtype`` numpy dtype of the elements; ``data_type`` the CUtensorMapDataType name it travels
    as; ``address`` global address (int); ``shape`` elements per dimension; ``strides`` bytes per
    dimension (size-1 dimensions already given a legal stride); ``box`` elements per dimension;
    ``element_strides``; ``swizzle`` span in bytes (0 none); ``oob_fill`` "zero" or "nan".
    """

    dtype: np.dtype
    data_type: str
    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: int
    oob_fill: str
    l2_promotion: int = 0

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def loaded_box(self) -> tuple[int, ...]:
        """Elements one load of this box brings per dimension (row-major, outermost first): for
        every outer dimension ``ceil(box[i] / element_strides[i])``, for the innermost dimension
        ``box[-1]`` whatever its element stride. cuTensorMapEncodeTiled (CUDA driver API, "Tensor
        Map Object Management"): "if the elementStrides[i] is not equal to one, then TMA loads
        ceil(boxDim[i] / elementStrides[i]) number of elements along i-th dimension", and "the
        first element of this array [the innermost dimension] is ignored since TMA doesn't
        support the stride for dimension zero" (non-interleaved maps, the only kind the course
        makes; PTX ISA §5.5.3.2 "Traversal-Stride": there it "must always be 1"). :func:`validate`
        refuses an innermost stride ≠ 1; the rule is applied here anyway
        so that the model stays the driver's for any spec."""
        outer = tuple(-(-b // e) for b, e in zip(self.box[:-1], self.element_strides[:-1]))
        return outer + (self.box[-1],)

    @property
    def box_bytes(self) -> int:
        """Bytes one load of this box writes to shared memory — the ``mbarrier.arrive.expect_tx``
        count (PTX ISA, mbarrier "tx-count"): ``prod(loaded_box) × itemsize``, the out-of-bound
        part included. Always equals ``smem_tile().box_bytes``."""
        n = self.dtype.itemsize
        for b in self.loaded_box:
            n *= b
        return n

    def smem_tile(self) -> SmemTile:
        """The shared-memory tile a load of this box fills: rows = product of the outer
        :attr:`loaded_box` dimensions (``ceil(box[i] / element_strides[i])``), cols = ``box[-1]``
        (see :class:`asynctc.models.layout.SmemTile`). Its ``box_bytes`` equals :attr:`box_bytes`."""
        lb = self.loaded_box
        rows = int(np.prod(lb[:-1], dtype=np.int64)) if self.rank > 1 else 1
        return SmemTile(rows, lb[-1], self.dtype, self.swizzle)


def _ints(field: str, v: Any, n: int | None = None) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        v = (v,)
    try:
        t = tuple(v)
    except TypeError:
        _fail(field, v, "must be a sequence of integers")
    for x in t:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            _fail(field, v, "must contain integers only")
    if n is not None and len(t) != n:
        _fail(field, v, f"must have one entry per tensor dimension ({n})")
    return tuple(int(x) for x in t)


def validate(*, address: int, shape: Sequence[int], dtype: Any, box: Sequence[int],
             strides: Sequence[int] | None = None, swizzle: Any = 0,
             element_strides: Sequence[int] | None = None, oob_fill: str = "zero",
             l2_promotion: int = 0) -> TensorMapSpec:
    """Check tensor-map arguments against the cuTensorMapEncodeTiled rules (no GPU needed).

    ``address`` device address (int); ``shape`` row-major dims; ``dtype`` numpy dtype or name;
    ``box`` row-major box dims; ``strides`` row-major **byte** strides (default C-contiguous);
    ``swizzle`` 0/32/64/128; ``element_strides`` row-major (default all 1); ``oob_fill``
    "zero" | "nan"; ``l2_promotion`` 0 (none), 64, 128 or 256 bytes (CUtensorMapL2promotion: the
    L2 fetch granularity of the loads). Returns the normalised :class:`TensorMapSpec`; raises
    :class:`TensorMapError` naming the field, the value and the rule.
    """
    shape_t = _ints("shape", shape)
    rank = len(shape_t)
    if not 1 <= rank <= MAX_RANK:
        _fail("rank", rank, f"a tensor map has 1 to {MAX_RANK} dimensions (tensorRank)")
    try:
        dt = dtype_of(dtype)
    except TypeError:
        _fail("dtype", dtype, "not a numpy dtype")
    if dt.name not in DATA_TYPES:
        _fail("dtype", dt.name, f"no CUtensorMapDataType for it; supported: {sorted(DATA_TYPES)}")
    size = dt.itemsize
    if isinstance(address, bool) or not isinstance(address, (int, np.integer)):
        _fail("address", address, f"globalAddress must be an integer device address, not "
                                  f"{type(address).__name__}")
    if address <= 0:
        _fail("address", address, "globalAddress must be a non-null device address")
    if address >= 2**64:
        _fail("address", f"{int(address):#x}", "globalAddress must be < 2^64 (a 64-bit pointer)")
    if address % 16:
        _fail("address", f"{int(address):#x}", "globalAddress must be 16-byte aligned")
    for i, d in enumerate(shape_t):
        if not 1 <= d <= MAX_DIM:
            _fail(f"shape[{i}]", d, "every globalDim must be in 1 .. 2^31 (the CUDA 13.5 cuda.h text; "
                                    "CUDA 13.0's says 2^32; the course keeps the stricter one)")
    if strides is None:
        st = [size] * rank
        for i in range(rank - 2, -1, -1):
            st[i] = st[i + 1] * shape_t[i + 1]
    else:
        st = list(_ints("strides", strides, rank))
    if shape_t[-1] > 1 and st[-1] != size:
        _fail("strides[-1]", st[-1], f"the innermost dimension must be contiguous (stride = element "
                                     f"size {size} bytes); TMA has no stride for dimension 0")
    st[-1] = size
    # Dimensions of size 1 are never stepped over: give them a legal stride instead of checking.
    for i in range(rank - 2, -1, -1):
        if shape_t[i] == 1:
            inner = st[i + 1] * shape_t[i + 1]
            st[i] = max(16, -(-inner // 16) * 16)
            continue
        if st[i] <= 0 or st[i] % 16:
            _fail(f"strides[{i}]", st[i], "every globalStride must be a positive multiple of 16 bytes")
        if st[i] >= MAX_STRIDE:
            _fail(f"strides[{i}]", st[i], "every globalStride must be < 2^40 bytes")
    box_t = _ints("box", box, rank)
    for i, b in enumerate(box_t):
        if not 1 <= b <= MAX_BOX:
            _fail(f"box[{i}]", b, f"every boxDim must be in 1 .. {MAX_BOX}")
    inner_bytes = box_t[-1] * size
    if inner_bytes % 16:
        _fail("box[-1]", box_t[-1], f"the inner box dimension is {inner_bytes} bytes ({box_t[-1]} × "
                                    f"{size} B); boxDim[0] × element size must be a multiple of 16 bytes")
    try:
        sw = _norm_swizzle(swizzle)
    except ValueError:
        _fail("swizzle", swizzle, f"must be one of {sorted(SWIZZLE_MODES)} (bytes; CUtensorMapSwizzle)")
    if sw and inner_bytes > sw:
        _fail("box[-1]", box_t[-1], f"the inner box dimension is {inner_bytes} bytes, more than the "
                                    f"{sw}-byte swizzle span: with swizzle it must be ≤ the swizzle size")
    es = (1,) * rank if element_strides is None else _ints("element_strides", element_strides, rank)
    for i, e in enumerate(es):
        if not 1 <= e <= MAX_ELEMENT_STRIDE:
            _fail(f"element_strides[{i}]", e, f"every elementStride must be in 1 .. {MAX_ELEMENT_STRIDE}")
    if es[-1] != 1:
        _fail("element_strides[-1]", es[-1],
              "the innermost element stride must be 1 (PTX ISA §5.5.3.2 'Traversal-Stride': \"for "
              "non-interleaved layout, the traversal stride in dimension 0 must always be 1\"); "
              "the driver ignores it (\"the first element of this array is ignored since TMA "
              f"doesn't support the stride for dimension zero\"), so TMA would load all "
              f"{box_t[-1]} inner elements, not ceil({box_t[-1]}/{es[-1]}); to skip inner "
              "elements, load them and skip them in shared memory")
    data_type = DATA_TYPES[dt.name]
    if oob_fill not in ("zero", "nan"):
        _fail("oob_fill", oob_fill, "must be 'zero' (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) or 'nan' "
                                    "(NAN_REQUEST_ZERO_FMA)")
    if oob_fill == "nan" and data_type not in FLOAT_TYPES:
        _fail("oob_fill", oob_fill, f"NaN fill needs a floating-point tensorDataType; {dt.name} "
                                    f"travels as {data_type}")
    if l2_promotion not in (0, 64, 128, 256):
        _fail("l2_promotion", l2_promotion, "must be 0 (none), 64, 128 or 256 bytes "
                                            "(CUtensorMapL2promotion)")
    spec = TensorMapSpec(dtype=dt, data_type=data_type, address=int(address), shape=shape_t,
                         strides=tuple(st), box=box_t, element_strides=es, swizzle=sw,
                         oob_fill=oob_fill, l2_promotion=int(l2_promotion))
    nbytes = spec.box_bytes
    if nbytes > MAX_TX_BYTES:
        _fail("box", box_t, f"one load of this box writes {nbytes} bytes, more than an mbarrier "
                            f"phase's tx-count can carry (2^20 - 1 = {MAX_TX_BYTES}; PTX ISA, "
                            "mbarrier tx-count range)")
    tile_bytes = spec.smem_tile().size_bytes
    if tile_bytes > MAX_SMEM_BYTES:
        _fail("box", box_t, f"one load of this box fills {tile_bytes} bytes of shared memory "
                            f"(swizzle padding included), more than the {MAX_SMEM_BYTES} bytes "
                            "(227 KiB) one block may have on sm_90 (CUDA C++ Programming Guide, "
                            "Compute Capabilities)")
    return spec
