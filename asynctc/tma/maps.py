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


#: Prefixes of the driver's enumerator names (cuda.h) that cuda.core's enum members drop (its
#: swizzle and interleave members keep one word: SWIZZLE_128B, but NONE).
_PREFIX = {"tensorDataType": "CU_TENSOR_MAP_DATA_TYPE_", "interleave": "CU_TENSOR_MAP_INTERLEAVE_",
           "swizzle": "CU_TENSOR_MAP_SWIZZLE_", "l2Promotion": "CU_TENSOR_MAP_L2_PROMOTION_",
           "oobFill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_"}


def driver_args(spec: TensorMapSpec) -> dict[str, Any]:
    """The arguments ``cuTensorMapEncodeTiled`` receives for ``spec``, by the driver's parameter
    names and in its order (arrays **innermost first**, as cuda.h states them; cuda.core reverses
    the row-major ones). ``globalStrides`` has one byte stride per dimension but the innermost.
    :func:`encode` passes exactly these (through cuda.core). No GPU needed."""
    return {
        "tensorDataType": "CU_TENSOR_MAP_DATA_TYPE_" + spec.data_type,
        "tensorRank": spec.rank,
        "globalAddress": hex(spec.address),
        "globalDim": spec.shape[::-1],
        "globalStrides": spec.strides[-2::-1],
        "boxDim": spec.box[::-1],
        "elementStrides": spec.element_strides[::-1],
        "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE",
        "swizzle": "CU_TENSOR_MAP_SWIZZLE_" + (f"{spec.swizzle}B" if spec.swizzle else "NONE"),
        "l2Promotion": "CU_TENSOR_MAP_L2_PROMOTION_" + (f"L2_{spec.l2_promotion}B" if spec.l2_promotion
                                                        else "NONE"),
        "oobFill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_" + ("NONE" if spec.oob_fill == "zero"
                                                      else "NAN_REQUEST_ZERO_FMA"),
    }


def driver_args_table(spec: TensorMapSpec) -> str:
    """:func:`driver_args` as a two-column text table (name, value)."""
    return "\n".join(f"{k:15s} {v}" for k, v in driver_args(spec).items())


def map_fields(spec: TensorMapSpec) -> str:
    """What a tensor map contains, one field a line, in the course's order (rows first, as
    :func:`validate` takes them; :func:`driver_args` gives the driver's order): the global
    address, the dims, the byte strides between rows (the driver is given every stride but the
    innermost, which is one element), the element type, the box and its bytes (the ``expect_tx``
    count of one copy), the swizzle and the out-of-bounds fill. No GPU needed."""
    if spec.rank == 2:
        dims = f"{spec.shape[0]} rows, {spec.shape[1]} columns"
        strides = f"{spec.strides[0]} B between rows"
        box = f"{spec.box[0]} rows, {spec.box[1]} columns"
    else:
        dims = " × ".join(map(str, spec.shape))
        strides = " × ".join(map(str, spec.strides[:-1])) + " B (outer dims)"
        box = " × ".join(map(str, spec.box))
    fill = "zeros" if spec.oob_fill == "zero" else "NaN"
    return "\n".join([
        f"address  {hex(spec.address)}",
        f"dims     {dims}",
        f"strides  {strides}",
        f"dtype    {spec.dtype.name}, {spec.dtype.itemsize} B",
        f"box      {box}: {spec.box_bytes} B",
        f"swizzle  {spec.swizzle or 'none'}{'B' if spec.swizzle else ''}; past the edge: {fill}"])


def _core_kwargs(spec: TensorMapSpec, tm) -> dict[str, Any]:
    """The keyword arguments of cuda.core's ``as_tensor_map`` for ``spec``: the enums of
    :func:`driver_args` (``tm``: ``cuda.core._tensor_map``); shape and strides travel in the view."""
    a = driver_args(spec)
    enum = {"tensorDataType": ("data_type", tm.TensorMapDataType),
            "interleave": ("interleave", tm.TensorMapInterleave),
            "swizzle": ("swizzle", tm.TensorMapSwizzle),
            "l2Promotion": ("l2_promotion", tm.TensorMapL2Promotion),
            "oobFill": ("oob_fill", tm.TensorMapOOBFill)}
    out = {}
    for name, (kw, cls) in enum.items():
        rest = a[name].removeprefix(_PREFIX[name])
        out[kw] = getattr(cls, rest) if hasattr(cls, rest) else getattr(cls, f"{name.upper()}_{rest}")
    return {"box_dim": spec.box, "element_strides": spec.element_strides, **out}


def encode(spec: TensorMapSpec, owner: Any = None):
    """Encode a validated :class:`TensorMapSpec` with cuda.core (the arguments of
    :func:`driver_args`); returns a :class:`cuda.core.TensorMapDescriptor` (pass it straight to
    :func:`asynctc.core.runtime.launch`). Needs a GPU (the driver encodes the map)."""
    from cuda.core import _tensor_map as tm
    from cuda.core.utils import StridedMemoryView
    runtime.device()
    view = StridedMemoryView.from_any_interface(_View(spec, owner), stream_ptr=-1)
    return view.as_tensor_map(**_core_kwargs(spec, tm))


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
