"""Tensor maps (TMA descriptors) made through cuda.core, validated in Python first.

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
address                globalAddress non-null and 16-byte aligned
shape                  every globalDim in 1 .. 2^31
strides                every globalStride (bytes, all but the innermost dimension) a multiple
                       of 16 and < 2^40; the innermost dimension contiguous. Strides of
                       dimensions of size 1 are never used, so they are not checked and are
                       replaced by a legal value before encoding.
box                    every boxDim in 1 .. 256; boxDim[0] × element size a multiple of 16 bytes
swizzle                0 / 32 / 64 / 128 bytes; when swizzled, boxDim[0] × element size ≤ the span
element_strides        every elementStride in 1 .. 8
oob_fill               "zero", or "nan" (NAN_REQUEST_ZERO_FMA) only for floating-point types
=====================  =====================================================================

Order convention: everything here is **row-major, outermost first**, like numpy shapes (the driver's
arrays are innermost first; cuda.core reverses them). ``box=(64, 64)`` on a (M, K) array is 64 rows
of 64 contiguous elements. Kernels take coordinates innermost first (column, row, ...).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from .layout import SWIZZLE_MODES, SmemTile, _norm_swizzle, dtype_of
from .runtime import AsyncTCError

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
MAX_DIM = 2**31
MAX_STRIDE = 2**40
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
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
    def box_bytes(self) -> int:
        """Bytes one load of this box writes to shared memory (the expect_tx count), OOB part
        included; with element strides, ceil(box[i] / element_strides[i]) elements per dimension."""
        n = self.dtype.itemsize
        for b, e in zip(self.box, self.element_strides):
            n *= -(-b // e)
        return n

    def smem_tile(self) -> SmemTile:
        """The shared-memory tile a load of this box fills: rows = product of the outer box
        dimensions, cols = the inner one (see :class:`asynctc.layout.SmemTile`)."""
        rows = int(np.prod(self.box[:-1], dtype=np.int64)) if self.rank > 1 else 1
        return SmemTile(rows, self.box[-1], self.dtype, self.swizzle)


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
    if isinstance(address, bool) or not isinstance(address, (int, np.integer)) or address <= 0:
        _fail("address", address, "globalAddress must be a non-null device address")
    if address % 16:
        _fail("address", f"{int(address):#x}", "globalAddress must be 16-byte aligned")
    for i, d in enumerate(shape_t):
        if not 1 <= d <= MAX_DIM:
            _fail(f"shape[{i}]", d, "every globalDim must be in 1 .. 2^31")
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
    return TensorMapSpec(dtype=dt, data_type=data_type, address=int(address), shape=shape_t,
                         strides=tuple(st), box=box_t, element_strides=es, swizzle=sw,
                         oob_fill=oob_fill, l2_promotion=int(l2_promotion))


# --------------------------------------------------------------------------------------------------
# Encoding through cuda.core (needs a GPU)
# --------------------------------------------------------------------------------------------------

_CAI_TYPESTR = {"UINT8": "|u1", "UINT16": "<u2", "UINT32": "<u4", "INT32": "<i4", "UINT64": "<u8",
                "INT64": "<i8", "FLOAT16": "<f2", "BFLOAT16": "<u2", "FLOAT32": "<f4",
                "FLOAT64": "<f8"}


class _View:
    """A ``__cuda_array_interface__`` of the validated spec: typestr of the TMA data type and the
    (size-1-dimension-fixed) byte strides, for ``StridedMemoryView.from_any_interface``."""

    def __init__(self, spec: TensorMapSpec, owner: Any):
        self._owner = owner   # keeps the allocation alive as long as the view
        self.__cuda_array_interface__ = {
            "shape": spec.shape, "typestr": _CAI_TYPESTR[spec.data_type],
            "data": (spec.address, False), "version": 3, "strides": spec.strides}


def encode(spec: TensorMapSpec, owner: Any = None):
    """Encode a validated :class:`TensorMapSpec` with cuda.core; returns a
    :class:`cuda.core.TensorMapDescriptor` (pass it straight to :func:`asynctc.runtime.launch`).
    Needs a GPU (the driver encodes the map)."""
    from cuda.core import _tensor_map as tm
    from cuda.core.utils import StridedMemoryView
    from . import runtime
    runtime.device()
    view = StridedMemoryView.from_any_interface(_View(spec, owner), stream_ptr=-1)
    swz = {0: tm.TensorMapSwizzle.NONE, 32: tm.TensorMapSwizzle.SWIZZLE_32B,
           64: tm.TensorMapSwizzle.SWIZZLE_64B, 128: tm.TensorMapSwizzle.SWIZZLE_128B}[spec.swizzle]
    fill = (tm.TensorMapOOBFill.NONE if spec.oob_fill == "zero"
            else tm.TensorMapOOBFill.NAN_REQUEST_ZERO_FMA)
    extra = {}
    if spec.l2_promotion:     # only when asked: the default call stays the one of chapter 03
        extra["l2_promotion"] = {64: tm.TensorMapL2Promotion.L2_64B,
                                 128: tm.TensorMapL2Promotion.L2_128B,
                                 256: tm.TensorMapL2Promotion.L2_256B}[spec.l2_promotion]
    return view.as_tensor_map(box_dim=spec.box, element_strides=spec.element_strides,
                              data_type=getattr(tm.TensorMapDataType, spec.data_type),
                              swizzle=swz, oob_fill=fill, **extra)


def make_tensor_map(arr, box: Sequence[int], *, swizzle: Any = 0,
                    element_strides: Sequence[int] | None = None, oob_fill: str = "zero",
                    shape: Sequence[int] | None = None, strides: Sequence[int] | None = None,
                    l2_promotion: int = 0):
    """A tensor map over device array ``arr`` (:class:`~asynctc.memory.DeviceArray`), validated.

    ``box``: row-major box dims (elements). ``shape``/``strides`` (bytes) default to ``arr``'s
    C-contiguous layout; pass them to describe a view of ``arr`` (it must lie inside ``arr``).
    Returns ``(descriptor, spec)``. Raises :class:`TensorMapError` before anything reaches the
    driver; :class:`~asynctc.runtime.NoGPUError` without a GPU.
    """
    spec = validate(address=arr.ptr, shape=tuple(arr.shape) if shape is None else shape,
                    dtype=arr.dtype, box=box, strides=strides, swizzle=swizzle,
                    element_strides=element_strides, oob_fill=oob_fill,
                    l2_promotion=l2_promotion)
    last = sum((d - 1) * s for d, s in zip(spec.shape, spec.strides)) + spec.dtype.itemsize
    if last > arr.nbytes:
        _fail("shape", spec.shape, f"with strides {spec.strides} the tensor spans {last} bytes, more "
                                   f"than the {arr.nbytes}-byte array it describes")
    return encode(spec, owner=arr), spec


def tensor_map_for_tile(arr, tile: SmemTile, *, oob_fill: str = "zero", l2_promotion: int = 0):
    """A 2-D tensor map over ``arr`` (rows × cols, row-major) whose box fills ``tile`` exactly:
    box = (tile.rows, tile.cols), swizzle = tile.swizzle. ``arr.dtype`` must have the tile's
    element size; ``l2_promotion`` as in :func:`validate`. Returns ``(descriptor, spec)``."""
    if np.dtype(arr.dtype).itemsize != tile.itemsize:
        _fail("dtype", np.dtype(arr.dtype).name, f"the tile holds {tile.itemsize}-byte elements "
                                                 f"({tile.dtype.name})")
    a = tile.tensor_map_args()
    return make_tensor_map(arr, a["box_dim"], swizzle=a["swizzle"], oob_fill=oob_fill,
                           l2_promotion=l2_promotion)
