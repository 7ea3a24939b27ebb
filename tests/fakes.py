"""A host-memory stand-in for :class:`asynctc.core.memory.DeviceArray`, for tests that drive the
host code of a kernel family against an emulator of its launch (no GPU needed)."""
import numpy as np


class FakeArray:
    #: the next address handed out: each array gets its own 4 KiB-aligned range, as allocations
    #: do (asynctc.matmul refuses an out whose bytes meet an input's)
    _next = 0x1000

    def __init__(self, host):
        self.h = np.ascontiguousarray(host).copy()
        self.shape, self.dtype = self.h.shape, self.h.dtype
        self.ptr = FakeArray._next
        FakeArray._next += -(-max(self.h.nbytes, 1) // 4096) * 4096
        self.nbytes = self.h.nbytes

    @classmethod
    def from_host(cls, arr, stream=None):
        return cls(arr)

    @classmethod
    def empty(cls, shape, dtype, stream=None):
        return cls(np.zeros(shape, dtype))

    @classmethod
    def poisoned(cls, shape, dtype, stream=None):
        a = np.empty(shape, dtype)
        a.view(np.uint8)[...] = 0xFF
        return cls(a)

    def poison(self, stream=None):
        self.h.view(np.uint8)[...] = 0xFF

    def to_host(self, stream=None):
        return self.h.copy()

    @property
    def buffer(self):
        arr = self

        class Buf:
            def fill(self, v, stream=None):
                arr.h.view(np.uint8)[...] = v

            def copy_from(self, src, stream=None):
                arr.h.view(np.uint8)[...] = src._arr.h.view(np.uint8)
        b = Buf()
        b._arr = arr
        return b
