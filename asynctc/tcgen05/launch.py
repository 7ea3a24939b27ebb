"""Chapter 09's tcgen05 GEMM: compile (NVRTC → sm_100a cubin, any machine), SASS, and run.

:func:`compile_gemm`, :func:`sass_summary` (:data:`SASS_CLASSES`) need no GPU; :func:`require_sm100`
refuses anything but compute capability 10.0 before a driver allocation; :func:`check_operands`,
:func:`launcher`, :func:`run_gemm` validate, then launch.
"""

from __future__ import annotations

import numpy as np

from ..core import runtime
from ..core.memory import DeviceArray
from .config import (ARCH, ENTRY, SOURCE, SWIZZLE_BYTES, THREADS, WAIT_TAGS, GemmConfig,
                     WrongGPUError, _fail)


def compile_gemm(cfg: GemmConfig, arch: str = ARCH) -> runtime.CompiledKernel:
    """Compile the tcgen05 GEMM for ``cfg`` to cubin (no GPU needed).

    Raises :class:`Tcgen05Error` for an ``arch`` other than ``sm_100a`` (tcgen05 is an
    architecture-specific feature: sm_100a, not plain sm_100 or sm_90a), and
    :class:`~asynctc.core.runtime.CompileError` when NVRTC rejects the source.
    """
    if arch != ARCH:
        _fail("arch", arch, "tcgen05 instructions exist only for architecture-specific Blackwell "
              "targets; the course compiles them for sm_100a (PTX ISA, tcgen05 'Target ISA notes')")
    cfg.validate()
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines=cfg.defines)


#: Instruction classes of a tcgen05 GEMM in nvdisasm's names (nvdisasm 13.5, sm_100a).
SASS_CLASSES = {
    "UTCHMMA": r"^UTCHMMA\b",         # tcgen05.mma kind::f16 (.2CTA for cta_group::2)
    "UTCQMMA": r"^UTCQMMA\b",         # tcgen05.mma kind::f8f6f4 (not in this kernel)
    "UTCBAR": r"^UTCBAR\b",           # tcgen05.commit (.MULTICAST with a cta mask)
    "LDTM": r"^LDTM\b",               # tcgen05.ld
    "UTCATOMSWS": r"^UTCATOMSWS\b",   # tcgen05.alloc (FIND_AND_SET) / dealloc (AND)
    "UVIRTCOUNT": r"^UVIRTCOUNT\b",   # tcgen05.relinquish_alloc_permit (.DEALLOC.SMPOOL)
    "UTMALDG": r"^UTMALDG\b",         # TMA loads (.2CTA for the pair's form)
    "UTMACCTL": r"^UTMACCTL\b",       # prefetch.tensormap
    "SYNCS": r"^SYNCS\.",             # mbarrier init / arrive / try_wait
    "UCGABAR": r"^UCGABAR",           # barrier.cluster arrive / wait
    "BAR": r"^BAR\b",                 # __syncthreads
    "LDL": r"^LDL\b",                 # local memory: spills
    "STL": r"^STL\b",
}


def sass_summary(cfg: GemmConfig, arch: str = ARCH) -> dict:
    """Instruction-class counts of the compiled kernel (static counts in the SASS, not executed
    counts) plus ptxas's registers and spill bytes: ``{"UTCHMMA": 4, ..., "registers": 48,
    "spill_bytes": 0, "full": {opcode-with-modifiers: count}}``. No GPU needed."""
    from ..core import sass
    ck = compile_gemm(cfg, arch)
    text = sass.disassemble(ck.cubin)
    out: dict = {k: 0 for k in SASS_CLASSES}
    out.update(sass.class_counts(text, SASS_CLASSES))
    out["registers"] = ck.resources.registers
    out["static_smem"] = ck.resources.shared_bytes
    out["spill_bytes"] = ck.resources.spill_stores + ck.resources.spill_loads
    full = sass.opcode_counts(text)
    out["full"] = {op: c for op, c in sorted(full.items())
                   if op.split(".")[0] in set(SASS_CLASSES) | {"UCGABAR_ARV", "UCGABAR_WAIT"}}
    return out


def sass_parts(summary: dict, cls: str) -> dict[str, int]:
    """The count of class ``cls`` in a :func:`sass_summary` split by its first opcode modifier,
    ``.2CTA`` skipped: for "SYNCS" ``{"ARRIVE": 1, "EXCH": 9, "PHASECHK": 14}`` (mbarrier arrive,
    init, wait), for "UTCATOMSWS" ``{"AND": 1, "FIND_AND_SET": 2}`` (dealloc, alloc)."""
    out: dict[str, int] = {}
    for op, c in summary["full"].items():
        parts = op.split(".")
        if parts[0] == cls:
            key = next((p for p in parts[1:] if p != "2CTA"), "")
            out[key] = out.get(key, 0) + c
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------------------------------

def require_sm100() -> runtime.DeviceInfo:
    """Return the GPU's :class:`~asynctc.core.runtime.DeviceInfo` if it runs sm_100a code; otherwise
    raise :class:`WrongGPUError` with the reason. Makes no driver call beyond
    :func:`runtime.device_info`'s probe (so it is safe on any machine)."""
    info = runtime.device_info()
    if info is None:
        raise WrongGPUError("tcgen05 needs sm_100 (compute capability 10.0); no GPU is usable here ("
                            + (runtime.why_not_live(ARCH) or "none found") + ")")
    if tuple(info.cc) != runtime.ARCH_CC[ARCH]:
        extra = ""
        if info.cc[0] == 10:
            extra = (": sm_100a cubins run only on 10.0 (architecture-specific 'a' targets are not "
                     "forward compatible)")
        raise WrongGPUError(f"tcgen05 needs sm_100 (compute capability 10.0); this GPU is "
                            f"{info.cc[0]}.{info.cc[1]} ({info.name}){extra}")
    return info


def _np_dtype(name: str) -> np.dtype:
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


def check_operands(a: np.ndarray, b: np.ndarray, cfg: GemmConfig) -> tuple[int, int, int]:
    """Validate the host operands of :func:`run_gemm`; returns (M, N, K).

    ``a`` M×K and ``b`` K×N, both of ``cfg.dtype``; K a multiple of 8 (the TMA global row pitch,
    K × 2 bytes, must be a multiple of 16: cuTensorMapEncodeTiled). Raises :class:`Tcgen05Error`.
    """
    dt = _np_dtype(cfg.dtype)
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, np.ndarray):
            _fail(f"{name}", type(x).__name__, "must be a numpy array")
        if x.ndim != 2:
            _fail(f"{name}.shape", x.shape, "must be 2-D")
        if np.dtype(x.dtype) != dt:
            _fail(f"{name}.dtype", np.dtype(x.dtype).name, f"must be {dt.name} (cfg.dtype)")
    m, k = a.shape
    k2, n = b.shape
    if k2 != k:
        _fail("b.shape", b.shape, f"must be (K, N) with K = a.shape[1] = {k}")
    if min(m, n, k) < 1:
        _fail("a.shape", a.shape, "M, N and K must be ≥ 1")
    if k % 8:
        _fail("K", k, "must be a multiple of 8: each row of A and Bᵀ is a TMA global stride of "
              "K × 2 bytes, which must be a multiple of 16 (cuTensorMapEncodeTiled)")
    gx, gy, _ = cfg.grid(m, n)
    if gy > 65535:
        _fail("N", n, f"needs {gy} CTA columns; grid.y is limited to 65535")
    return m, n, k


def _decode_error(word: int) -> str:
    """The kernel's error word as a sentence: code (bits 0..7) and, for a timed-out wait, which."""
    code, tag = word & 0xFF, word >> 8
    if code == 2:
        return (f"error word {word:#x}: a CTA-pair kernel (cta_group=2) ran without a cluster of two "
                "CTAs; launch it with cluster=(2, 1, 1)")
    what = WAIT_TAGS.get(tag, f"tag {tag}")
    return f"error word {word:#x}: code {code} (1 = mbarrier wait timed out), {what}"


def launcher(cfg: GemmConfig, da: DeviceArray, dbt: DeviceArray, dc: DeviceArray,
             derr: DeviceArray, stream=None):
    """A callable that launches the kernel on device operands: ``da`` (M×K), ``dbt`` (Bᵀ, N×K),
    ``dc`` (M×N fp32), ``derr`` (one uint32). Checks the device first (:func:`require_sm100`)."""
    from .. import tma
    require_sm100()
    m, k = da.shape
    n = dbt.shape[0]
    ck = compile_gemm(cfg)
    ta, _ = tma.make_tensor_map(da, (cfg.rows_per_cta, 64), swizzle=SWIZZLE_BYTES)
    tb, _ = tma.make_tensor_map(dbt, (cfg.b_rows_per_cta, 64), swizzle=SWIZZLE_BYTES)
    grid = cfg.grid(m, n)
    runtime.check_launch(grid, THREADS, cfg.smem_bytes, ck)
    args = (ta, tb, dc, np.int32(m), np.int32(n), np.int32(k), np.uint64(cfg.a_desc),
            np.uint64(cfg.b_desc), np.uint32(cfg.idesc), derr)

    def run():
        runtime.launch(ck, grid, THREADS, *args, shmem_bytes=cfg.smem_bytes, stream=stream,
                       cluster=cfg.cluster)
    return run


def run_gemm(a: np.ndarray, b: np.ndarray, cfg: GemmConfig, stream=None) -> np.ndarray:
    """C = a · b on the GPU with the tcgen05 kernel; returns C (M×N float32, host).

    ``a`` (M×K) and ``b`` (K×N) numpy arrays of ``cfg.dtype``; any M, N ≥ 1 and K a multiple of 8
    (edges are zero-filled by TMA and not stored). Order of checks: the GPU first
    (:class:`WrongGPUError` on anything but compute capability 10.0 — nothing is allocated or
    launched), then the operands (:class:`Tcgen05Error`). The output is poisoned (NaN) before the
    launch. Raises :class:`RuntimeError` when the kernel reports a timed-out mbarrier wait.
    """
    require_sm100()
    check_operands(a, b, cfg)
    m, k = a.shape
    n = b.shape[1]
    da = DeviceArray.from_host(np.ascontiguousarray(a), stream)
    dbt = DeviceArray.from_host(np.ascontiguousarray(b.T), stream)
    dc = DeviceArray.poisoned((m, n), np.float32, stream)
    derr = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
    launcher(cfg, da, dbt, dc, derr, stream)()
    e = int(derr.to_host(stream)[0])
    if e:
        raise RuntimeError(f"tcgen05 GEMM {cfg.label()} on {m}x{n}x{k}: {_decode_error(e)}")
    return dc.to_host(stream)
