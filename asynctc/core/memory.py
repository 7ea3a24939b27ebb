"""Device arrays: a numpy-shaped view of a :class:`cuda.core.Buffer`.

Allocation is cuda.core's (the device's default memory resource); copies are cuda.core's
``Buffer.copy_from``/``copy_to`` on the course stream. This module adds only what the course needs
on top: a shape and dtype, host round trips, poisoning, and ``__cuda_array_interface__`` so that
numba, CuPy and PyTorch (the baselines) read the same memory without copies.
"""

from __future__ import annotations

import numpy as np

from . import runtime

#: Byte written over outputs before a run: 0xFF makes every fp16/bf16/fp32/fp64 element a NaN, so an
#: element the kernel never wrote fails any comparison with the reference.
POISON_BYTE = 0xFF


class DeviceArray:
    """A C-contiguous array in device memory.

    ``shape`` (tuple of ints), ``dtype`` (numpy dtype; ml_dtypes' bfloat16 / float8 types work),
    ``buffer`` (the owning :class:`cuda.core.Buffer`), ``ptr`` (device address, int).
    """

    def __init__(self, shape, dtype, buffer):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.buffer = buffer

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def empty(cls, shape, dtype, stream=None) -> "DeviceArray":
        """Allocate uninitialised device memory for ``shape`` × ``dtype``."""
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        s = stream or runtime.default_stream()
        buf = runtime.device().allocate(max(nbytes, 1), stream=s)
        return cls(shape, dtype, buf)

    @classmethod
    def from_host(cls, arr: np.ndarray, stream=None) -> "DeviceArray":
        """Copy a host array to a new device array (waits for the copy)."""
        from cuda.core import Buffer
        host = np.ascontiguousarray(arr)
        out = cls.empty(host.shape, host.dtype, stream)
        s = stream or runtime.default_stream()
        if host.nbytes:
            src = Buffer.from_handle(host.ctypes.data, host.nbytes, owner=host)
            out.buffer.copy_from(src, stream=s)
            s.sync()
        return out

    @classmethod
    def poisoned(cls, shape, dtype, stream=None) -> "DeviceArray":
        """Allocate and fill every byte with :data:`POISON_BYTE` (NaN in every float type)."""
        out = cls.empty(shape, dtype, stream)
        out.poison(stream)
        return out

    # -- use --------------------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ptr(self) -> int:
        return int(self.buffer.handle)

    def poison(self, stream=None) -> None:
        """Overwrite every byte with :data:`POISON_BYTE`, asynchronously on ``stream``."""
        self.buffer.fill(POISON_BYTE, stream=stream or runtime.default_stream())

    def to_host(self, stream=None) -> np.ndarray:
        """Copy to a new host array (waits for the stream first)."""
        from cuda.core import Buffer
        s = stream or runtime.default_stream()
        host = np.empty(self.shape, self.dtype)
        if host.nbytes:
            dst = Buffer.from_handle(host.ctypes.data, host.nbytes, owner=host)
            self.buffer.copy_to(dst, stream=s)
        s.sync()
        return host

    def _launch_arg(self):
        """What :func:`asynctc.core.runtime.launch` passes for this array: its cuda.core Buffer."""
        return self.buffer

    @property
    def __cuda_array_interface__(self) -> dict:
        typestr = self.dtype.str
        if self.dtype.kind == "V" or self.dtype.name in ("bfloat16",) or "float8" in self.dtype.name:
            typestr = f"<V{self.dtype.itemsize}"  # consumers see raw bytes of the right size
        return {"shape": self.shape, "typestr": typestr, "data": (self.ptr, False), "version": 3,
                "strides": None}

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name})"
