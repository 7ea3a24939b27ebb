"""Split-K for :func:`asynctc.matmul`: the GEMM's K range cut into slices, summed in a fixed order.

A configuration with ``split_k`` S > 1 (:class:`~asynctc.warp_specialization.WSConfig`) builds
``kernels/warp_specialization.cu`` with ``SPLIT_K = S``: each tile is S work items, item s
computing k-tiles s · T / S .. (s + 1) · T / S − 1 and writing its fp32 partial tile into a
workspace (S · M rows of N floats). ``kernels/gemm_splitk.cu`` then adds, for every element of
C, the S partials in the order 0 .. S − 1 in fp32 and writes C in its dtype (round to nearest
even): the same inputs give the same bits whatever order the work items ran in (deterministic —
no atomics). It is what a small problem needs when its tiles alone would leave SMs idle (thin or
decode M: a 1 × 4096 × 4096 GEMM has 64 tiles of 64 columns for 132 SMs).

:class:`SplitKGemm` is :class:`~asynctc.gemm.EdgeGemm` with the workspace and the second launch;
:func:`edge_gemm` picks the class for a configuration; :func:`compile_reduce` compiles the
reduction (no GPU needed). The workspace belongs to the launch object: two launches of one
:class:`SplitKGemm` (or of one cached plan of :mod:`asynctc.gemm.fastpath`) on different streams
at once would share it — they must be ordered, as calls on one stream are.
"""

from __future__ import annotations

import numpy as np

from ..core import runtime
from ..core.memory import DeviceArray
from ..warp_specialization.config import WSConfig, _fail
from ..warp_specialization.launch import tile_counts
from .operands import EdgeGemm

SOURCE = "gemm_splitk.cu"
ENTRY = "splitk_reduce"
#: C's dtype → the reduction's OUT_KIND define.
OUT_KINDS = {"float32": 0, "float16": 1, "bfloat16": 2}
#: Threads per CTA of the reduction (its __launch_bounds__) and the most CTAs it launches.
REDUCE_THREADS = 256
REDUCE_MAX_CTAS = 132 * 8


def reduce_defines(cfg: WSConfig) -> dict:
    """The reduction's defines for ``cfg``: ``SPLITS`` (cfg.split_k ≥ 2) and ``OUT_KIND``."""
    if not isinstance(cfg, WSConfig) or cfg.split_k < 2:
        _fail("cfg.split_k", getattr(cfg, "split_k", None), "the reduction sums ≥ 2 splits")
    if cfg.out_dtype not in OUT_KINDS:
        _fail("cfg.out_dtype", cfg.out_dtype, f"one of {sorted(OUT_KINDS)}")
    return {"SPLITS": cfg.split_k, "OUT_KIND": OUT_KINDS[cfg.out_dtype]}


def compile_reduce(cfg: WSConfig, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile ``kernels/gemm_splitk.cu`` for ``cfg`` (no GPU needed)."""
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines=reduce_defines(cfg))


def reduce_grid(m: int, n: int) -> int:
    """CTAs of the reduction: one thread per column pair, at most :data:`REDUCE_MAX_CTAS`
    (grid-stride beyond)."""
    pairs = m * -(-n // 2)
    return max(1, min(REDUCE_MAX_CTAS, -(-pairs // REDUCE_THREADS)))


class SplitKGemm(EdgeGemm):
    """:class:`~asynctc.gemm.EdgeGemm` for ``cfg.split_k`` S > 1: the GEMM writes S fp32 partial
    tiles into ``workspace`` (a :class:`DeviceArray` of S · M × N float32, allocated once,
    poisoned when allocated, so a partial never written turns C NaN), then the reduction writes C
    (``cfg.splitk_fixup``: the last split of each tile does, inside the GEMM kernel, counting in
    ``flags`` — one u32 per tile and consumer warpgroup, zero between launches). ``ldc`` is what
    the GEMM kernel gets (N, the workspace's rows; with the fix-up C's row pitch), ``c_ldc`` C's
    own row pitch. :meth:`launcher` runs both launches (one with the fix-up)."""

    def __init__(self, cfg: WSConfig, a, b, out=None, stream=None, ck=None, scales=None,
                 block_scales=None):
        if not isinstance(cfg, WSConfig) or cfg.split_k < 2:
            _fail("cfg.split_k", getattr(cfg, "split_k", None), "SplitKGemm launches split_k ≥ 2 "
                                                                 "(EdgeGemm the others)")
        super().__init__(cfg, a, b, out, stream, ck, scales, block_scales)
        self.fixup = cfg.splitk_fixup
        self.c_ldc = self.ldc
        if not self.fixup:
            self.ldc = self.n
        self.workspace = DeviceArray.poisoned((cfg.split_k * self.m, self.n), np.float32, stream)
        self.flags = None
        self.reduce_ck = None
        if self.fixup:
            rows, cols, _ = tile_counts(cfg, self.m, self.n, self.k)
            self.flags = DeviceArray.from_host(np.zeros(rows * cols * cfg.consumers, np.uint32),
                                               stream)
        else:
            self.reduce_ck = compile_reduce(cfg)
            self.reduce_grid = reduce_grid(self.m, self.n)

    def c_argument(self):
        """What the GEMM kernel writes: the workspace (the reduction writes C), or with the
        fix-up C itself."""
        return self.c_output() if self.fixup else self.workspace

    def c_output(self):
        """C's pointer argument (what the reduction or the fix-up writes)."""
        return EdgeGemm.c_argument(self)

    def extra_args(self) -> tuple:
        """The GEMM kernel's arguments after ldc: (workspace, flags) with the fix-up, else none."""
        return (self.workspace, self.flags) if self.fixup else ()

    def reduce_args(self, c=None) -> tuple:
        """The reduction's arguments: workspace, C (``c``: a pointer, default this launch's C),
        M, N, C's row pitch."""
        i32 = np.int32
        return (self.workspace, self.c_output() if c is None else c, i32(self.m), i32(self.n),
                i32(self.c_ldc))

    def launcher(self):
        i32, u64 = np.int32, np.uint64
        args = (self.ta, self.tb, self.tc, self.c_argument(), i32(self.m), i32(self.n),
                i32(self.k), u64(self.desc_a0), u64(self.desc_b0), self.err,
                self.trace if self.trace is not None else u64(0), u64(0), i32(self.ldc),
                *self.extra_args())
        cfg = self.cfg
        rargs = None if self.fixup else self.reduce_args()

        def run():
            runtime.launch(self.ck, self.grid, cfg.threads, *args, shmem_bytes=cfg.shmem_bytes,
                           stream=self.stream, cluster=self.cluster)
            if rargs is not None:
                runtime.launch(self.reduce_ck, self.reduce_grid, REDUCE_THREADS, *rargs,
                               stream=self.stream)
        return run


def edge_gemm(cfg: WSConfig, a, b, out=None, stream=None) -> EdgeGemm:
    """The launch of ``cfg``'s EDGES build: :class:`SplitKGemm` when ``cfg.split_k`` > 1, else
    :class:`~asynctc.gemm.EdgeGemm`."""
    from . import operands          # looked up per call: a patch of operands.EdgeGemm holds
    cls = SplitKGemm if cfg.split_k > 1 else operands.EdgeGemm
    return cls(cfg, a, b, out, stream)
