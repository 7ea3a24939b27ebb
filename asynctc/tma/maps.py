"""Chapter 03 — tensor maps through cuda.core: :func:`encode` a validated
:class:`~asynctc.models.tensor_map.TensorMapSpec`, :func:`make_tensor_map` over a device array,
:func:`tensor_map_for_tile` whose box fills a :class:`~asynctc.models.layout.SmemTile` (the
validation itself is :mod:`asynctc.models.tensor_map`; encoding needs a GPU)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import runtime
from ..models.layout import SmemTile
from ..models.tensor_map import TensorMapSpec, _fail, validate


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
    :class:`cuda.core.TensorMapDescriptor` (pass it straight to :func:`asynctc.core.runtime.launch`).
    Needs a GPU (the driver encodes the map)."""
    from cuda.core import _tensor_map as tm
    from cuda.core.utils import StridedMemoryView
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
    """A tensor map over device array ``arr`` (:class:`~asynctc.core.memory.DeviceArray`), validated.

    ``box``: row-major box dims (elements). ``shape``/``strides`` (bytes) default to ``arr``'s
    C-contiguous layout; pass them to describe a view of ``arr`` (it must lie inside ``arr``).
    Returns ``(descriptor, spec)``. Raises :class:`TensorMapError` before anything reaches the
    driver; :class:`~asynctc.core.runtime.NoGPUError` without a GPU.
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
