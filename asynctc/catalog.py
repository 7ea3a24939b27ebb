"""The course's kernels by name: what ``python -m asynctc sass <kernel>`` can disassemble.

:data:`COURSE_KERNELS` maps a name to a function that compiles that kernel (cubin, no GPU needed)
and returns a :class:`CourseKernel` — a :class:`~asynctc.core.runtime.CompiledKernel` that also
carries ``dynamic_smem_bytes``, the dynamic shared memory its family launches it with (ptxas
reports only the static part, ``resources.shared_bytes``; the course's big kernels use dynamic
shared memory, sized at launch from the tile's or the configuration's ``smem_bytes`` /
``shmem_bytes``). Each function takes no argument for its default configuration; the families
with dtypes also take ``dtype=`` (one of :data:`DTYPES` [name]; the first is the default).

For kernels whose dynamic shared memory depends on launch arguments (the chapter-03 TMA kernels),
the entry compiles the configuration the notebook shows and states that configuration in
``config``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .core import runtime
from .tma import KERNELS as _TMA_KERNELS


@dataclasses.dataclass
class CourseKernel(runtime.CompiledKernel):
    """A compiled course kernel plus how it is launched: ``dynamic_smem_bytes`` (bytes of dynamic
    shared memory per CTA at launch) and ``config`` (the configuration compiled, in words)."""

    dynamic_smem_bytes: int = 0
    config: str = ""

    @property
    def static_smem_bytes(self) -> int:
        """Static shared memory per CTA (``__shared__`` arrays), from ptxas's report."""
        return self.resources.shared_bytes

    @property
    def smem_bytes(self) -> int:
        """Static + dynamic shared memory per CTA."""
        return self.static_smem_bytes + self.dynamic_smem_bytes


def _wrap(ck: runtime.CompiledKernel, dynamic: int, config: str) -> CourseKernel:
    fields = {f.name: getattr(ck, f.name) for f in dataclasses.fields(runtime.CompiledKernel)}
    return CourseKernel(**fields, dynamic_smem_bytes=int(dynamic), config=config)


# ---- chapter 01 ----------------------------------------------------------------------------------

def _mma_sync(dtype: str = "float16") -> CourseKernel:
    from . import mma_sync
    t = mma_sync.DEFAULT_TILE
    return _wrap(mma_sync.compile_mma_sync(dtype, t), t.smem_bytes, f"{dtype}, tile {t.name}")


def _mma_sync_peak(dtype: str = "float16") -> CourseKernel:
    from . import mma_sync
    return _wrap(mma_sync.compile_mma_sync_peak(dtype), 0,
                 f"{dtype}, {mma_sync.PEAK_CHAINS} chains, {mma_sync.PEAK_ITERS} iterations")


# ---- chapter 02 ----------------------------------------------------------------------------------

def _cp_async(dtype: str = "float16") -> CourseKernel:
    from . import cp_async
    t = cp_async.DEFAULT_TILE
    return _wrap(cp_async.compile_cp_async(dtype, t), t.smem_bytes, f"{dtype}, tile {t.name}")


def _smem_pipeline(kind: str) -> Callable[[], CourseKernel]:
    def build() -> CourseKernel:
        from . import cp_async
        b = 16
        ck = runtime.compile_kernel("cp_async_smem_pipeline.cu", f"smem_copy_{kind}",
                                    defines=dict(B=b, ITERS=cp_async.SMEM_ITERS))
        return _wrap(ck, 0, f"{b}×{b} block, {cp_async.SMEM_ITERS} tiles")
    build.__doc__ = f"The {kind} shared-memory copy of the Luo et al. microbenchmark (16×16 block)."
    return build


# ---- chapter 03 ----------------------------------------------------------------------------------

def _tma(name: str) -> Callable[[], CourseKernel]:
    def build() -> CourseKernel:
        from . import tma
        from .models.layout import SmemTile
        if name == "tma_load_dump":
            t = SmemTile(64, 64, "float16", 128)
            return _wrap(tma.compile_tma(name, RANK=2), t.size_bytes + tma.TAIL + 1024,
                         f"{t!r} (dump of the tile + {tma.TAIL} B, 1 KiB alignment slack)")
        if name == "tma_store_raw":
            t = SmemTile(64, 64, "float16", 128)
            return _wrap(tma.compile_tma(name, RANK=2), t.size_bytes + 1024,
                         f"{t!r} (+ 1 KiB alignment slack)")
        if name == "mbarrier_lifecycle":
            t = SmemTile(16, 64, "float16", 0)
            return _wrap(tma.compile_tma(name), t.size_bytes + 1024,
                         f"{t!r} (mbarrier_lifecycle's default box, + 1 KiB alignment slack)")
        if not name.startswith("copy_"):
            raise ValueError(f"{name}: the catalogue has no launch configuration for this tma.cu "
                             "kernel; add one to asynctc/catalog.py")
        variant = name.removeprefix("copy_")
        cfg = tma.copy_config(variant, 32, 64)
        ck = tma.compile_tma(name, BR=cfg.br, BC=cfg.bc, CSTAGES=max(2, cfg.stages))
        return _wrap(ck, cfg.smem_bytes, cfg.name)
    build.__doc__ = f"Chapter 03's ``{name}`` (tma.cu)."
    return build


# ---- chapter 04 ----------------------------------------------------------------------------------

def _wgmma(dtype: str = "float16") -> CourseKernel:
    from . import wgmma
    cfg = wgmma.TileConfig(dtype, 128)
    return _wrap(wgmma.compile_tile(cfg), cfg.shmem_bytes, cfg.label())


def _wgmma_peak(dtype: str = "float16") -> CourseKernel:
    from . import wgmma, wgmma_peak
    n, chains = 256, 1
    cfg = wgmma.TileConfig(dtype, n, "K", "K", 128, 128, "smem", wgmma_peak.PEAK_K_STEPS)
    return _wrap(wgmma_peak.compile_peak(dtype, n, "smem", chains), cfg.shmem_bytes,
                 f"{cfg.dtype}, N={n}, A from shared memory, {chains} chain")


# ---- chapter 05 ----------------------------------------------------------------------------------

def _pipeline(dtype: str = "float16") -> CourseKernel:
    from . import pipeline
    cfg = pipeline.PipelineConfig(dtype=dtype, bm=128, bn=256, consumers=2, stages=4)
    return _wrap(pipeline.compile_pipeline(cfg), cfg.shmem_bytes, cfg.label())


# ---- chapter 06 ----------------------------------------------------------------------------------

def _warp_specialization(dtype: str = "float16") -> CourseKernel:
    from . import warp_specialization as ws
    cfg = ws.WSConfig(dtype=dtype, bm=128, bn=256, consumers=2, stages=4)
    return _wrap(ws.compile_ws(cfg), cfg.shmem_bytes, cfg.label())


def _hopper_gemm(dtype: str = "float16") -> CourseKernel:
    from .warp_specialization import whole
    return _wrap(whole.compile_whole(dtype), whole.SMEM_BYTES,
                 f"{dtype}, 128×256×64, 4 stages (chapter 06 §4's whole kernel in one file)")


def _gemm_splitk(dtype: str = "float16") -> CourseKernel:
    from . import warp_specialization as ws
    from .gemm import splitk
    cfg = ws.WSConfig(dtype=dtype, bm=64, bn=64, consumers=1, setmaxnreg=False, stages=4,
                      out_dtype=dtype, edges=True, split_k=2)
    return _wrap(splitk.compile_reduce(cfg), 0, f"{dtype} C, 2 splits (asynctc.matmul's split-K)")


# ---- chapter 09 ----------------------------------------------------------------------------------

def _pitfalls() -> CourseKernel:
    from .pitfalls import variants as V
    return _wrap(V.compile_variant(0), V.SMEM_BYTES, "BUG=0 (the correct ring; BUG=1..10 are the zoo's variants)")


def _tcgen05(dtype: str = "float16") -> CourseKernel:
    from . import tcgen05
    cfg = tcgen05.GemmConfig(dtype, 128, 256, 64, 4, 1)
    return _wrap(tcgen05.compile_gemm(cfg), cfg.smem_bytes, cfg.label() + " (sm_100a)")


def _tcgen05_pair(dtype: str = "float16") -> CourseKernel:
    from . import tcgen05
    cfg = tcgen05.GemmConfig(dtype, 256, 256, 64, 4, 2)
    return _wrap(tcgen05.compile_gemm(cfg), cfg.smem_bytes, cfg.label() + " (sm_100a)")


def _tcgen05_persistent(dtype: str = "float16") -> CourseKernel:
    from .tcgen05 import persistent as P
    cfg = P.PersistentConfig("f16", dtype, 1, 1, 128, 64, 4, "clc")
    return _wrap(P.compile_persistent(cfg), cfg.smem_bytes, cfg.label() + " (sm_100a)")


def _tcgen05_persistent_pair(dtype: str = "float16") -> CourseKernel:
    from .tcgen05 import persistent as P
    cfg = P.PersistentConfig("f16", dtype, 2, 2, 256, 64, 4, "clc")
    return _wrap(P.compile_persistent(cfg), cfg.smem_bytes, cfg.label() + " (sm_100a)")


def _tcgen05_block_scaled() -> CourseKernel:
    from .tcgen05 import persistent as P
    cfg = P.PersistentConfig("mxf8f6f4", "float8_e4m3fn", 1, 1, 128, 128, 4, "clc")
    return _wrap(P.compile_persistent(cfg), cfg.smem_bytes, cfg.label() + " (sm_100a)")


_GEMM_DTYPES = ("float16", "bfloat16")
_WGMMA_DTYPES = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")

#: name → function compiling that kernel (no GPU needed) and returning a :class:`CourseKernel`.
COURSE_KERNELS: dict[str, Callable[..., CourseKernel]] = {
    "mma_sync": _mma_sync,
    "mma_sync_peak": _mma_sync_peak,
    "cp_async": _cp_async,
    "cp_async_smem_pipeline_sync": _smem_pipeline("sync"),
    "cp_async_smem_pipeline_async": _smem_pipeline("async"),
    **{n: _tma(n) for n in _TMA_KERNELS},
    "wgmma": _wgmma,
    "wgmma_peak": _wgmma_peak,
    "pipeline": _pipeline,
    "warp_specialization": _warp_specialization,
    "hopper_gemm": _hopper_gemm,
    "gemm_splitk": _gemm_splitk,
    "pitfalls": _pitfalls,
    "tcgen05": _tcgen05,
    "tcgen05_pair": _tcgen05_pair,
    "tcgen05_persistent": _tcgen05_persistent,
    "tcgen05_persistent_pair": _tcgen05_persistent_pair,
    "tcgen05_block_scaled": _tcgen05_block_scaled,
}

#: name → the dtypes its function accepts as ``dtype=`` (the first is the default); kernels not
#: listed have no dtype choice.
DTYPES: dict[str, tuple[str, ...]] = {
    "mma_sync": _GEMM_DTYPES, "mma_sync_peak": _GEMM_DTYPES, "cp_async": _GEMM_DTYPES,
    "wgmma": _WGMMA_DTYPES, "wgmma_peak": _WGMMA_DTYPES, "pipeline": _GEMM_DTYPES,
    "warp_specialization": _GEMM_DTYPES, "hopper_gemm": _GEMM_DTYPES, "gemm_splitk": _GEMM_DTYPES,
    "tcgen05": _GEMM_DTYPES, "tcgen05_pair": _GEMM_DTYPES,
    "tcgen05_persistent": _GEMM_DTYPES, "tcgen05_persistent_pair": _GEMM_DTYPES,
}

#: Kernel files that are not course kernels: compiled only by tests (ptxas diagnostics), by
#: ``python -m asynctc doctor`` (the compile probe), by the timing machinery of
#: :mod:`asynctc.core.bench` (the delay and clock-probe kernels) or around a learner's answer by an
#: exercise's check (``tma_stage.cu``: chapter 03's stage fill, :mod:`asynctc.tma.stage_fill`; no
#: cache can hold a build of code not yet written; ``capstone.cu``: chapter 06's capstone loops,
#: :mod:`asynctc.warp_specialization.capstone_build`; ``capstone_cuda.cu``: deep dive 06f's capstone in
#: the real wrappers, :mod:`asynctc.warp_specialization.cuda_kloop`).
TEST_ONLY_SOURCES = ("diagnostics.cu", "probe.cu", "bench_clock.cu", "tma_stage.cu", "capstone.cu",
                     "capstone_cuda.cu")


def compile_all() -> dict[str, CourseKernel]:
    """Compile every entry of :data:`COURSE_KERNELS` with its default arguments (no GPU needed):
    ``{name: CourseKernel}``."""
    return {name: fn() for name, fn in COURSE_KERNELS.items()}
