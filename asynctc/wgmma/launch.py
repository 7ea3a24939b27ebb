"""Chapter 04 — compile, run and verify one wgmma tile (``kernels/wgmma.cu``): the host-made
shared-memory images and descriptors (:func:`tile_images`), :func:`run_tile` /
:func:`verify_tile`, and the TMA-fed variant (:func:`run_tile_tma` / :func:`verify_tile_tma`)."""

from __future__ import annotations

import numpy as np

from ..core import runtime
from ..core.checks import U_ACC, U_FP64, Check, compare, gamma
from ..core.memory import DeviceArray
from ..models import descriptors as dsc
from .config import SWIZZLES, TileConfig, np_dtype


def compile_tile(cfg: TileConfig, arch: str = "sm_90a", mismatch_layout: int = -1,
                 ) -> runtime.CompiledKernel:
    """Compile the single-tile kernel for ``cfg`` (no GPU needed). ``mismatch_layout`` ≥ 0 builds
    the deliberate-mismatch variant (see :func:`mismatch_demo`)."""
    defines = dict(cfg.defines)
    if mismatch_layout != -1:
        if mismatch_layout not in (0, 1, 2, 3):
            raise dsc.DescriptorError(f"mismatch_layout={mismatch_layout!r}: a swizzle-mode field "
                                      "value 0..3")
        defines["MISMATCH_LAYOUT"] = mismatch_layout
    return runtime.compile_kernel("wgmma.cu", cfg.entry, arch, defines=defines)


def tile_modules(configs) -> list[tuple[str, str, dict]]:
    """The distinct (source, entry, defines) compilations ``configs`` need (swizzle and major-ness
    of the same DT/N share a module: they differ only in data and entry point)."""
    seen, out = set(), []
    for c in configs:
        key = (c.dtype, c.n, c.k_steps)
        if key not in seen:
            seen.add(key)
            out.append(("wgmma.cu", "wgmma_tile_ss_kk", c.defines))
    return out


def tile_images(a: np.ndarray, b: np.ndarray, cfg: TileConfig):
    """Host-side shared-memory images and descriptors for one launch.

    ``a`` (64×K) and ``b`` (K×N) in ``cfg.dtype``. Returns ``(a_img, b_img, descs)``: uint8 images
    of A's and B's tiles (A's empty for A in registers) and a uint64 array of 2·k_steps descriptors
    (A's and B's per k-step, start addresses relative to the shared-memory base; A's are 0 for A
    in registers)."""
    at, bt = cfg.a_tile, cfg.b_tile
    b_img = bt.image(np.ascontiguousarray(b.T))
    descs = np.zeros(2 * cfg.k_steps, dtype=np.uint64)
    for s, d in enumerate(bt.descriptors(cfg.b_offset)):
        descs[2 * s + 1] = d.encode()
    if cfg.a_source == "registers":
        return np.zeros(16, np.uint8), b_img, descs
    a_img = at.image(a)
    for s, d in enumerate(at.descriptors(0)):
        descs[2 * s] = d.encode()
    return a_img, b_img, descs


def _check_inputs(a, b, cfg: TileConfig, c) -> None:
    dt = np_dtype(cfg.dtype)
    if np.dtype(a.dtype) != dt or np.dtype(b.dtype) != dt:
        raise ValueError(f"a.dtype={a.dtype}, b.dtype={b.dtype}: both must be {dt} (cfg.dtype)")
    if a.shape != (64, cfg.k):
        raise ValueError(f"a.shape={a.shape}: expected (64, K={cfg.k}) for {cfg.k_steps} k-steps")
    if b.shape != (cfg.k, cfg.n):
        raise ValueError(f"b.shape={b.shape}: expected (K={cfg.k}, N={cfg.n})")
    if c is not None and (c.shape != (64, cfg.n) or np.dtype(c.dtype) != np.float32):
        raise ValueError(f"c: shape {c.shape} / dtype {c.dtype}, expected (64, {cfg.n}) float32")


def run_tile(a: np.ndarray, b: np.ndarray, cfg: TileConfig, c: np.ndarray | None = None,
             *, _mismatch_layout: int = -1, stream=None) -> np.ndarray:
    """D = a·b (+ c) on the GPU with one warpgroup; returns D (64×N float32, host).

    ``a`` 64×K and ``b`` K×N numpy arrays of ``cfg.dtype``; ``c`` optional 64×N float32 (then the
    first wgmma accumulates, scale-d = 1). Inputs are checked before anything reaches the GPU
    (:class:`ValueError`, :class:`~asynctc.models.descriptors.DescriptorError`); the output is poisoned
    first. Raises :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU.
    """
    _check_inputs(a, b, cfg, c)
    ck = compile_tile(cfg, mismatch_layout=_mismatch_layout)
    a_img, b_img, descs = tile_images(a, b, cfg)
    runtime.check_launch(1, 128, cfg.shmem_bytes, ck)
    dev = [DeviceArray.from_host(x, stream) for x in
           (a_img, b_img, descs, np.ascontiguousarray(a).view(np.uint8))]
    dc = DeviceArray.from_host(np.ascontiguousarray(c, np.float32), stream) if c is not None else None
    dd = DeviceArray.poisoned((64, cfg.n), np.float32, stream)
    u32 = np.uint32
    runtime.launch(ck, 1, 128, dev[0], u32(a_img.size if cfg.a_source == "smem" else 0), dev[1],
                   u32(b_img.size), u32(cfg.b_offset), dev[2], dev[3],
                   dc if dc is not None else np.uint64(0), dd,
                   shmem_bytes=cfg.shmem_bytes, stream=stream)
    return dd.to_host(stream)


def random_tile_operands(cfg: TileConfig, rng: np.random.Generator | None = None):
    """Fresh standard-normal A (64×K) and B (K×N) rounded to ``cfg.dtype`` (never zeros or ±1)."""
    rng = rng if rng is not None else np.random.default_rng()
    dt = np_dtype(cfg.dtype)
    a = rng.standard_normal((64, cfg.k), dtype=np.float32).astype(dt)
    b = rng.standard_normal((cfg.k, cfg.n), dtype=np.float32).astype(dt)
    return a, b


def tile_reference(a, b, c=None) -> np.ndarray:
    """float64 ``a @ b (+ c)`` of the rounded inputs."""
    r = a.astype(np.float64) @ b.astype(np.float64)
    return r + c.astype(np.float64) if c is not None else r


#: Unit roundoff assumed for wgmma's fp8 accumulation (about 14 bits kept, truncating; see above).
FP8_ACC_U = 2.0 ** -13


def tile_tolerance(cfg: TileConfig) -> float:
    """Elementwise bound of one tile, relative to |A|·|B| + |C|: γ_{K+1}(u) for K products summed
    (and C added) in the accumulator, u = 2^-23 for fp16/bf16 (fp32 accumulator, truncating:
    :mod:`asynctc.core.checks`) or 2^-13 for fp8 (about 14 bits kept), plus the float64
    reference's γ_K(2^-53)."""
    u = U_ACC if dsc.itemsize(cfg.dtype) == 2 else FP8_ACC_U
    return gamma(cfg.k + 1, u) + gamma(cfg.k, U_FP64)


def compare_tile(d: np.ndarray, ref: np.ndarray, cfg: TileConfig, scale=None) -> Check:
    """D against the float64 reference, elementwise: |D − ref| ≤ :func:`tile_tolerance` · scale
    (``scale`` = |A|·|B| + |C|; without it max(|ref|, RMS)); unwritten (NaN) counted, the worst
    element named (:func:`asynctc.core.checks.compare`)."""
    return compare(d, ref, cfg.dtype, (64, cfg.n, cfg.k), scale=scale, tol=tile_tolerance(cfg))


def tile_scale(a, b, c=None) -> np.ndarray:
    """|A|·|B| (+ |C|) in float64: the scale of a tile's elementwise bound."""
    return tile_reference(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)),
                          None if c is None else np.abs(c.astype(np.float64)))


def verify_tile(cfg: TileConfig, rng: np.random.Generator | None = None,
                with_c: bool = False) -> Check:
    """Run ``cfg`` on fresh random data (poisoned output) and compare with float64."""
    rng = rng if rng is not None else np.random.default_rng()
    a, b = random_tile_operands(cfg, rng)
    c = rng.standard_normal((64, cfg.n), dtype=np.float32) if with_c else None
    d = run_tile(a, b, cfg, c)
    return compare_tile(d, tile_reference(a, b, c), cfg, tile_scale(a, b, c))


# --------------------------------------------------------------------------------------------------
# Single tile, TMA-fed: what TMA writes is what the descriptor reads
# --------------------------------------------------------------------------------------------------

def tma_configs() -> list[TileConfig]:
    """The TMA-fed checks: f16, bf16 (all four major pairs) and e4m3 (K-major), every swizzle mode,
    N = 64 and 256, A and B from shared memory, K = 4 k-steps."""
    out = []
    for dt in ("float16", "bfloat16", "float8_e4m3fn"):
        majors = ("K",) if dsc.itemsize(dt) == 1 else ("K", "MN")
        for sw in SWIZZLES:
            for am in majors:
                for bm in majors:
                    for n in (64, 256):
                        out.append(TileConfig(dt, n, am, bm, sw, sw, "smem", 4))
    return out


def tma_entry(cfg: TileConfig) -> str:
    mk = {"K": "k", "MN": "m"}
    if cfg.a_source != "smem":
        raise dsc.DescriptorError("a_source='registers': the TMA-fed tile loads both operands "
                                  "through TMA into shared memory")
    return f"wgmma_tile_tma_{mk[cfg.a_major]}{mk[cfg.b_major]}"


def tma_globals(a: np.ndarray, b: np.ndarray, cfg: TileConfig):
    """The operands as TMA reads them from global memory, contiguous along their inner dimension:
    A 64×K (K-major) or K×64 (M-major); B N×K (K-major) or K×N (N-major)."""
    ga = a if cfg.a_major == "K" else a.T
    gb = b.T if cfg.b_major == "K" else b
    return np.ascontiguousarray(ga), np.ascontiguousarray(gb)


def tma_geometry(cfg: TileConfig) -> np.ndarray:
    """The kernel's 8 box numbers: per operand, boxes, box columns, box pitch (bytes), box bytes."""
    g = []
    for t in (cfg.a_tile, cfg.b_tile):
        g += [t.n_boxes, t.box_cols, t.box_pitch, t.box_rows * t.box_cols * t.itemsize]
    return np.array(g, dtype=np.uint32)


def _tensor_map(arr, tile):
    from .. import tma
    return tma.tensor_map_for_tile(arr, tile)[0]


def run_tile_tma(a: np.ndarray, b: np.ndarray, cfg: TileConfig, c: np.ndarray | None = None,
                 stream=None) -> np.ndarray:
    """D = a·b (+ c) with both operands loaded by TMA: one tensor map per operand made from the
    operand tile's :class:`~asynctc.models.layout.SmemTile` (:meth:`OperandTile.smem_tile`), one
    ``cp.async.bulk.tensor.2d`` per box, the descriptors from the same tiles. Returns D (64×N
    float32). Raises like :func:`run_tile`, and :class:`RuntimeError` when the mbarrier wait times
    out (the kernel reports it instead of hanging)."""
    _check_inputs(a, b, cfg, c)
    ck = runtime.compile_kernel("wgmma.cu", tma_entry(cfg), "sm_90a", defines=cfg.defines)
    _, _, descs = tile_images(a, b, cfg)
    runtime.check_launch(1, 128, cfg.shmem_bytes, ck)
    ga, gb = tma_globals(a, b, cfg)
    dga, dgb = DeviceArray.from_host(ga, stream), DeviceArray.from_host(gb, stream)
    ta, tb = _tensor_map(dga, cfg.a_tile.smem_tile()), _tensor_map(dgb, cfg.b_tile.smem_tile())
    geo = DeviceArray.from_host(tma_geometry(cfg), stream)
    dd = DeviceArray.from_host(descs, stream)
    dc = DeviceArray.from_host(np.ascontiguousarray(c, np.float32), stream) if c is not None else None
    out = DeviceArray.poisoned((64, cfg.n), np.float32, stream)
    err = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
    runtime.launch(ck, 1, 128, ta, tb, geo, np.uint32(cfg.b_offset), dd,
                   dc if dc is not None else np.uint64(0), out, err,
                   shmem_bytes=cfg.shmem_bytes, stream=stream)
    e = int(err.to_host(stream)[0])
    if e:
        raise RuntimeError(f"TMA-fed wgmma tile {cfg.label()}: mbarrier wait timed out (err word "
                           f"{e:#x}): the TMA loads did not deliver the expected bytes")
    return out.to_host(stream)


def verify_tile_tma(cfg: TileConfig, rng: np.random.Generator | None = None,
                    with_c: bool = False) -> Check:
    """:func:`run_tile_tma` on fresh random data, compared with float64."""
    rng = rng if rng is not None else np.random.default_rng()
    a, b = random_tile_operands(cfg, rng)
    c = rng.standard_normal((64, cfg.n), dtype=np.float32) if with_c else None
    return compare_tile(run_tile_tma(a, b, cfg, c), tile_reference(a, b, c), cfg,
                        tile_scale(a, b, c))
