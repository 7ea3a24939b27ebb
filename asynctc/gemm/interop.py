"""The GEMM's operands from other libraries, zero-copy: torch tensors, CuPy arrays, any object with
``__cuda_array_interface__`` (v2/v3) or ``__dlpack__`` in device memory.

:func:`describe` turns one operand into an :class:`Operand` (pointer, shape, byte strides, dtype,
GPU, the producer's stream) without importing torch or CuPy (their tensors are read through their
own attributes; the protocols otherwise); :func:`as_matrix` checks that TMA can read it as it is
(:class:`Matrix`: rows, cols, row pitch, and whether B is stored K-major); :func:`check_overlap`
refuses an ``out`` that shares bytes with ``a`` or ``b``; :func:`resolve_stream` picks the stream
the launch goes on; :func:`new_result` allocates C of the caller's kind. Every refusal names the
field, the value and the rule, before anything reaches the GPU.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from ..core.checks import np_dtype

from ..warp_specialization.config import WarpSpecializationError, _fail

#: DLPack device type of CUDA device memory (dlpack.h DLDeviceType kDLCUDA).
KDL_CUDA = 2
_KDL_NAMES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 13: "kDLCUDAManaged"}
#: CUDA Array Interface typestr → dtype name (16-bit floats in, fp32 / 16-bit out).
_TYPESTR = {"<f2": "float16", "<f4": "float32", "<f8": "float64"}
#: TMA's address / row-pitch rule (cuTensorMapEncodeTiled: globalAddress 16-byte aligned, every
#: globalStride a multiple of 16 bytes).
ALIGN = 16


class OperandTypeError(WarpSpecializationError, TypeError):
    """An operand that is not an array at all (a list, None, a scalar): a :class:`TypeError`
    (and a :class:`WarpSpecializationError`, as every refusal of matmul's inputs)."""


def not_an_array(field: str, x) -> None:
    """Raise :class:`OperandTypeError` naming ``field``, the type and what is accepted."""
    raise OperandTypeError(f"{field} is a {type(x).__name__} ({x!r:.40}): must be a numpy array or an asynctc "
                           "DeviceArray, a torch tensor, a CuPy array, or an object with "
                           "__cuda_array_interface__ or __dlpack__ in device memory")


class Operand(NamedTuple):
    """One device operand as the protocols describe it: ``kind`` ("torch", "cupy", "cai",
    "dlpack", "asynctc"), ``ptr`` (device address), ``shape``, ``strides`` (bytes), ``dtype``
    (numpy name), ``itemsize``, ``device`` (GPU ordinal, None when the protocol does not say:
    ask the driver), ``stream`` (the producer's stream from the CAI ``stream`` field, else None),
    ``obj`` (the object itself), ``readonly``."""

    kind: str
    ptr: int
    shape: tuple
    strides: tuple
    dtype: str
    itemsize: int
    device: int | None
    stream: int | None
    obj: Any
    readonly: bool


def _module(x) -> str:
    return type(x).__module__.split(".")[0]


def is_foreign(x) -> bool:
    """True for an operand that :func:`describe` reads (not numpy, not asynctc's own arrays)."""
    if x is None or isinstance(x, np.ndarray):
        return False
    if _module(x) == "asynctc":
        return False
    return (_module(x) == "torch" and hasattr(x, "data_ptr")) or \
        hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__")


def is_dlpack_only(x) -> bool:
    """True for an operand read through DLPack (no torch attributes, no CUDA Array Interface)."""
    return not (_module(x) == "torch" and hasattr(x, "data_ptr")) and \
        not hasattr(x, "__cuda_array_interface__") and hasattr(x, "__dlpack__")


def _c_strides(shape, itemsize) -> tuple:
    out, acc = [], itemsize
    for d in reversed(shape):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def _torch(x, field: str) -> Operand:
    dev = x.device
    if dev.type != "cuda":
        _fail(field, f"torch tensor on {dev}", "asynctc.matmul reads device memory: move it to the "
                                              "GPU (.cuda()) or pass a numpy array")
    dt = str(x.dtype).removeprefix("torch.")
    size = x.element_size()
    return Operand("torch", int(x.data_ptr()), tuple(x.shape), tuple(s * size for s in x.stride()),
                   dt, size, dev.index if dev.index is not None else 0, None, x, False)


def _cai(x, field: str) -> Operand:
    cai = x.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError(f"{field}.__cuda_array_interface__: {type(cai).__name__}, must be a dict "
                        "(CUDA Array Interface)")
    if cai.get("mask") is not None:
        _fail(f"{field}.__cuda_array_interface__['mask']", "set", "masked arrays are not read")
    ts = cai.get("typestr")
    if ts not in _TYPESTR:
        _fail(f"{field} typestr", ts, f"one of {sorted(_TYPESTR)} ({', '.join(_TYPESTR.values())}); "
                                      "bfloat16 has no CUDA Array Interface typestr: pass it as a "
                                      "torch tensor or through DLPack")
    dt = _TYPESTR[ts]
    size = np.dtype(dt).itemsize
    shape = tuple(int(s) for s in cai["shape"])
    data = cai.get("data")
    if not (isinstance(data, tuple) and len(data) == 2):
        _fail(f"{field}.__cuda_array_interface__['data']", data, "must be (pointer, read_only)")
    strides = cai.get("strides")
    strides = _c_strides(shape, size) if strides is None else tuple(int(s) for s in strides)
    stream = cai.get("stream") if cai.get("version", 2) >= 3 else None
    if stream == 0:
        _fail(f"{field} CAI stream", 0, "0 is disallowed by the CUDA Array Interface v3 "
                                        "(1: legacy default stream, 2: per-thread default stream)")
    dev = None
    if _module(x) == "cupy":
        dev = int(x.device.id)
    kind = {"cupy": "cupy", "asynctc": "asynctc"}.get(_module(x), "cai")
    return Operand(kind, int(data[0] or 0), shape, strides, dt, size, dev, stream, x,
                   bool(data[1]))


def _dlpack(x, field: str, stream: int | None) -> Operand:
    dev_type, dev_id = x.__dlpack_device__()
    if dev_type != KDL_CUDA:
        _fail(f"{field}.__dlpack_device__()", (dev_type, dev_id),
              f"device type {_KDL_NAMES.get(dev_type, dev_type)}; asynctc.matmul reads CUDA device "
              f"memory (kDLCUDA = {KDL_CUDA}): move it to the GPU first")
    from cuda.core.utils import StridedMemoryView
    # the consumer stream goes to __dlpack__ (the producer orders its work before it); -1: none
    view = StridedMemoryView.from_dlpack(x, -1 if stream is None else stream)
    dt = np.dtype(view.dtype)
    shape = tuple(view.shape)
    strides = view.strides
    strides = (_c_strides(shape, dt.itemsize) if strides is None
               else tuple(int(s) * dt.itemsize for s in strides))
    return Operand("dlpack", int(view.ptr), shape, strides, dt.name, dt.itemsize, int(dev_id),
                   None, view, bool(view.readonly))


def describe(x, field: str, stream: int | None = None) -> Operand:
    """``x`` (a torch tensor, CuPy array, CUDA Array Interface or DLPack object in device memory)
    as an :class:`Operand`; ``stream`` (a handle) is the consumer stream handed to ``__dlpack__``.
    Raises :class:`TypeError` for anything else, naming ``field`` and the type."""
    if _module(x) == "torch" and hasattr(x, "data_ptr"):
        return _torch(x, field)
    if hasattr(x, "__cuda_array_interface__"):
        return _cai(x, field)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _dlpack(x, field, stream)
    not_an_array(field, x)


class Matrix(NamedTuple):
    """An operand as TMA reads it: ``ptr``, ``rows`` × ``cols`` stored row-major with ``pitch``
    bytes from row to row; ``transposed`` when the object's shape is the transpose of that
    storage (a ``.T`` / ``.mT`` view)."""

    ptr: int
    rows: int
    cols: int
    pitch: int
    transposed: bool

    def span(self, itemsize: int) -> tuple[int, int]:
        """The bytes [lo, hi) the matrix touches."""
        return self.ptr, self.ptr + (self.rows - 1) * self.pitch + self.cols * itemsize


def as_matrix(op: Operand, field: str, may_transpose: bool, tma_rows: bool = True) -> Matrix:
    """The storage of 2-D ``op`` that TMA can read as it is: unit stride along one dimension (the
    last one; with ``may_transpose`` the first one instead — a transposed view, read as the
    other B layout), a row pitch that is a multiple of 16 bytes and at least a row, a non-null
    base address aligned to 16 bytes (cuTensorMapEncodeTiled: globalAddress 16-byte aligned,
    globalStrides multiples of 16). ``tma_rows`` False (C, which the register epilogue writes
    when its rows are not 16-byte multiples): the pitch need only be whole elements. Raises
    :class:`WarpSpecializationError` naming the field, the value, TMA's rule and the fix."""
    if len(op.shape) != 2:
        _fail(f"{field}.shape", op.shape, "must be 2-D (a matrix)")
    (r, c), (s0, s1), size = op.shape, op.strides, op.itemsize
    fix = f"pass {field}.contiguous() (torch) / cupy.ascontiguousarray({field})"
    if op.ptr == 0 and r * c:
        _fail(f"{field} address", "0x0", "a null pointer is never device memory")
    if op.ptr % ALIGN and r * c:
        _fail(f"{field} address", hex(op.ptr),
              f"TMA needs a 16-byte aligned base address (cuTensorMapEncodeTiled globalAddress); "
              f"this one is {op.ptr % ALIGN} bytes past a 16-byte boundary (a view with an offset): "
              f"{fix}")
    if s1 == size or c == 1:                       # row-major storage: rows r, pitch s0
        rows, cols, pitch, tr = r, c, s0, False
    elif may_transpose and (s0 == size or r == 1):  # column-major: storage c × r, pitch s1
        rows, cols, pitch, tr = c, r, s1, True
    else:
        want = "the last or the first dimension" if may_transpose else "the last dimension"
        _fail(f"{field}.strides", (s0, s1),
              f"bytes; TMA reads rows of contiguous elements: the stride along {want} must be the "
              f"element size ({size} bytes): {fix}")
    if rows == 1:
        pitch = -(-cols * size // ALIGN) * ALIGN    # never used by TMA (one row)
    if pitch < cols * size or pitch % size or (tma_rows and pitch % ALIGN):
        if pitch == cols * size:               # contiguous already: only a padded copy helps
            fix = (f"a torch / CuPy {field} is padded by matmul itself when no stream= is given; "
                   f"else pass a copy whose row stride is a multiple of {ALIGN // size} elements")
        _fail(f"{field}.strides", (s0, s1),
              f"bytes: a row pitch of {pitch} bytes for rows of {cols} × {size} bytes; TMA needs "
              f"every row pitch to be a multiple of 16 bytes (cuTensorMapEncodeTiled "
              f"globalStrides) and at least one row: {fix}")
    return Matrix(op.ptr, rows, cols, pitch, tr)


def row_pitch_only(op: Operand, field: str, may_transpose: bool) -> bool:
    """True when ``op`` is contiguous (row- or, with ``may_transpose``, column-major), aligned,
    and the one thing TMA cannot take is its row pitch, not a multiple of 16 bytes (K = 4095 in
    fp16) — so a padded copy (:func:`padded_copy`) makes it readable. A strided view is refused
    as it is (its ``.contiguous()`` is then padded)."""
    try:
        as_matrix(op, field, may_transpose)
        return False
    except WarpSpecializationError as e:
        if "row pitch" not in str(e):
            return False
    (r, c), (s0, s1), size = op.shape, op.strides, op.itemsize
    if op.ptr % ALIGN:
        return False
    if s1 == size or c == 1:                       # row-major storage, contiguous rows
        return s0 == c * size
    return may_transpose and (s0 == size or r == 1) and s1 == r * size


def padded_copy(op: Operand, field: str):
    """A copy of torch / CuPy operand ``op`` whose rows start every 16 bytes (the row pitch
    rounded up; the padding is never read): a view of the same shape and kind, written on the
    library's current stream — the stream matmul then launches on, so the copy is ordered before
    the kernel and its memory is not reused before the kernel is done (both allocators are
    stream-ordered). A transposed view (B as ``w.T``) is padded in its storage orientation."""
    x = op.obj
    r, c = op.shape
    transposed = not (op.strides[1] == op.itemsize or c == 1)
    src = x.T if transposed else x
    rows, cols = src.shape
    pc = -(-cols * op.itemsize // ALIGN) * ALIGN // op.itemsize
    if op.kind == "torch":
        buf = src.new_empty((rows, pc), dtype=src.dtype)[:, :cols]
        buf.copy_(src)
    elif op.kind == "cupy":
        cp = sys.modules["cupy"]
        buf = cp.empty((rows, pc), dtype=src.dtype)[:, :cols]
        buf[...] = src
    else:
        raise AssertionError(op.kind)
    return buf.T if transposed else buf


def check_overlap(out: Matrix, osize: int, others, isize: int) -> None:
    """Refuse an ``out`` whose bytes meet those of ``a`` or ``b`` (the kernel reads A and B while
    it writes C): name both byte ranges. ``others``: (field, Matrix) pairs."""
    lo, hi = out.span(osize)
    for field, m in others:
        a_lo, a_hi = m.span(isize)
        if lo < a_hi and a_lo < hi:
            _fail("out", f"bytes [{lo:#x}, {hi:#x})",
                  f"overlaps {field}'s bytes [{a_lo:#x}, {a_hi:#x}) by "
                  f"{min(hi, a_hi) - max(lo, a_lo)} bytes: the kernel reads {field} while it "
                  f"writes out; pass a separate output (or none)")


def check_devices(ops, device_id: int, pointer_device=None) -> None:
    """Every operand on GPU ``device_id`` (the one asynctc launches on); an operand whose protocol
    does not say (a bare CUDA Array Interface) is asked of the driver by ``pointer_device(ptr)``."""
    for field, op in ops:
        dev = op.device
        if dev is None and pointer_device is not None and op.ptr:
            dev = pointer_device(op.ptr)
        if dev is not None and dev != device_id:
            _fail(f"{field} device", f"cuda:{dev}",
                  f"asynctc launches on cuda:{device_id}; every operand must live there "
                  f"(move it with .to('cuda:{device_id}'))")


def stream_handle(stream) -> int:
    """The CUstream handle of ``stream``: a cuda.core Stream, an int handle, an object with
    ``__cuda_stream__`` (CUDA stream protocol), a torch stream (``.cuda_stream``) or a CuPy stream
    (``.ptr``). Raises :class:`TypeError` for anything else."""
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream)
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, (int, np.integer)):
            return int(h)
    raise TypeError(f"stream: {type(stream).__name__} is not a CUDA stream (a cuda.core Stream, "
                    "an int handle, a torch or CuPy stream)")


def resolve_stream(ops, stream) -> int | None:
    """The handle the launch goes on: ``stream`` when given; else the current stream of the
    first torch operand's library (torch.cuda.current_stream()), else CuPy's current stream, else
    the CUDA Array Interface ``stream`` field of an operand (v3: the producer's stream; launching
    on it orders the GEMM after the producer's work); None: asynctc's own stream."""
    if stream is not None:
        return stream_handle(stream)
    kinds = {op.kind for _f, op in ops}
    if "torch" in kinds:
        torch = sys.modules["torch"]
        dev = next(op.device for _f, op in ops if op.kind == "torch")
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        return int(raw(dev)) if raw is not None else int(torch.cuda.current_stream(dev).cuda_stream)
    if "cupy" in kinds:
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    for _f, op in ops:
        if op.stream is not None:
            return int(op.stream)
    return None


def result_kind(ops) -> str:
    """Which kind of array C is when no ``out`` is given: the first operand's library."""
    for kind in ("torch", "cupy"):
        if any(op.kind == kind for _f, op in ops):
            return kind
    return "asynctc"


def new_result(kind: str, m: int, n: int, dtype: str, ops, stream_obj, zero: bool = False):
    """C (M×N, ``dtype``) of ``kind``: ``torch.empty`` (torch's caching allocator owns it) on the
    operands' GPU, ``cupy.empty``, else an asynctc DeviceArray on ``stream_obj``; zeros with
    ``zero`` (K = 0)."""
    if kind == "torch":
        torch = sys.modules["torch"]
        dev = next(op.device for _f, op in ops if op.kind == "torch")
        make = torch.zeros if zero else torch.empty
        return make((m, n), dtype=getattr(torch, dtype), device=f"cuda:{dev}")
    if kind == "cupy":
        cp = sys.modules["cupy"]
        return (cp.zeros if zero else cp.empty)((m, n), dtype=dtype)
    from ..core.memory import DeviceArray
    res = DeviceArray.empty((m, n), np_dtype(dtype), stream_obj)
    if zero and res.nbytes:
        res.buffer.fill(0, stream=stream_obj)
    return res


__all__ = ["ALIGN", "KDL_CUDA", "Matrix", "Operand", "OperandTypeError", "as_matrix",
           "check_devices", "check_overlap", "describe", "is_dlpack_only", "is_foreign",
           "new_result", "not_an_array", "resolve_stream", "result_kind", "stream_handle"]
