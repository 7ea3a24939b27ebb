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


def fake_timing(monkeypatch):
    """Suites' timing on the CPU: ``bench.time_gpu`` runs its function once and reports 1 ms at
    1800 MHz, cuBLAS is a float64 matmul into the output, the baseline is called "emulated"."""
    from asynctc.core import bench

    class Timed:
        median_ms = 1.0

        def as_dict(self):
            return {"median_ms": 1.0, "sm_mhz": 1800.0}

    def time_gpu(fn, **kw):
        fn()
        return Timed()

    def cublas(da, db, dc):
        def run():
            dc.h[...] = (da.h.astype(np.float64) @ db.h.astype(np.float64)).astype(dc.h.dtype)
        return run
    monkeypatch.setattr(bench, "time_gpu", time_gpu)
    monkeypatch.setattr(bench, "cublas_gemm", cublas)
    monkeypatch.setattr(bench, "baseline_library", lambda: "emulated")


def assert_script_exits_2_without_a_gpu(script, *args, cwd=None):
    """A tools/gpu_*.py script run without a live sm_90a GPU exits 2 saying so (skips where one is)."""
    import subprocess
    import sys

    import pytest

    from asynctc.core import runtime
    if runtime.runs_live("sm_90a"):
        pytest.skip("a live sm_90a GPU is here: the script would run")
    p = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                       timeout=120, cwd=cwd)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout.strip().startswith("no live sm_90a GPU")


#: A correct body for chapter 06's exercise 1 (the consumers' k-loop), written as a learner would:
#: tests/test_consumer_loop.py and tests/test_exercises.py derive their mistakes from it.
CONSUMER_LOOP = """
full.wait(pos.stage, pos.phase, wg, k);
fence_accumulators(acc);
mma_ktile(acc, wgmma_desc_advance(da0, pos.stage * kStageBytes),
          wgmma_desc_advance(db0, pos.stage * kStageBytes));
wgmma_wait_group<1>();
fence_accumulators(acc);
if (k > 0 && elected) empty.arrive(prev);
prev = pos.stage;
pos.advance();
"""
