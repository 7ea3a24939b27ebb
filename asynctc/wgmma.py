"""Chapter 04's wgmma kernels: compile, run, verify — single tiles and a mismatch demo.

Two kernel families, each with the course's three verbs:

* **single tile** (``kernels/wgmma.cu``): one warpgroup computes D (64×N fp32) = A (64×K) ·
  B (K×N) [+ C] with ``wgmma.mma_async`` for any supported (dtype, major-ness, swizzle, N, A from
  shared memory or registers). The host lays each operand tile out in shared memory exactly where
  :class:`asynctc.models.descriptors.OperandTile` says wgmma reads it and encodes the descriptors; the
  kernel copies the bytes and runs the wgmmas. :func:`compile_tile`, :func:`run_tile`,
  :func:`verify_tile`; :func:`supported_configs` lists every combination the instruction allows.
  :func:`run_tile_tma` / :func:`verify_tile_tma` do the same with both operands loaded by TMA
  boxes from tensor maps made from the same tiles (:func:`tma_configs`).
* **mismatch demo** (:func:`mismatch_demo`): the same, with the descriptors' swizzle field forced
  to a mode the data was not laid out in (compiled only on purpose, ``MISMATCH_LAYOUT``): the count
  of wrong elements, the permutation of A that wgmma actually read, and the wrong D predicted
  exactly by the layout model.
The throughput kernel and the chapter's record suite are in :mod:`asynctc.wgmma_peak`.

PTX ISA references: §9.7.15.5.2 (wgmma.mma_async), §9.7.15.5.1.1 (register fragments),
§9.7.15.5.1.2 (shared-memory layouts and the matrix descriptor), §9.7.15.7 (fence/commit/wait).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .models import descriptors as dsc
from .core import runtime
from .core.checks import U_ACC, U_FP64, Check, compare, gamma
from .core.memory import DeviceArray

#: dtype name → the kernels' ``DT`` code.
DTYPES = {"float16": 0, "bfloat16": 1, "float8_e4m3fn": 2, "float8_e5m2": 3}
#: Instruction N values the course builds and checks (PTX ISA allows every multiple of 8 to 256).
N_VALUES = (8, 16, 32, 64, 128, 256)
SWIZZLES = (0, 32, 64, 128)
SOURCES = ("smem", "registers")

#: Relative Frobenius error allowed for a single tile (fp32 output). 16-bit inputs: products are
#: exact in fp32 and K ≤ 128, so errors are ~1e-6. fp8: Hopper's fp8 wgmma accumulates with
#: reduced precision (DeepSeek-V3 Technical Report, 2024, §3.3.2: about 14 bits retained on H800).
TILE_TOLERANCE = {"float16": 1e-4, "bfloat16": 1e-4, "float8_e4m3fn": 2e-3, "float8_e5m2": 2e-3}


def np_dtype(name: str) -> np.dtype:
    """numpy dtype of a wgmma input type name (ml_dtypes for bfloat16 and fp8)."""
    name = dsc.dtype_name(name)
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


# --------------------------------------------------------------------------------------------------
# Single tile
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TileConfig:
    """One single-tile experiment: ``dtype``, instruction ``n``, the major-ness and swizzle of each
    operand, where A comes from, and ``k_steps`` wgmmas along K (K = k_steps × 16, or × 32 for fp8).

    ``a_source`` "smem" (``a_major``/``a_swizzle`` describe A's tile) or "registers" (A's fragments
    are loaded from global memory; A has no shared-memory layout, so ``a_major`` must stay "K").
    ``b_swizzle`` defaults to ``a_swizzle``. :meth:`validate` raises
    :class:`~asynctc.models.descriptors.DescriptorError` naming the field, value and rule.
    """

    dtype: str = "float16"
    n: int = 64
    a_major: str = "K"
    b_major: str = "K"
    a_swizzle: int = 128
    b_swizzle: int | None = None
    a_source: str = "smem"
    k_steps: int = 4

    def __post_init__(self):
        object.__setattr__(self, "dtype", dsc.dtype_name(self.dtype))
        if self.b_swizzle is None:
            object.__setattr__(self, "b_swizzle", self.a_swizzle)
        self.validate()

    def validate(self) -> None:
        if self.n not in N_VALUES:
            raise dsc.DescriptorError(f"n={self.n!r}: the course builds N in {N_VALUES} (PTX ISA "
                                      "§9.7.15.5.2 allows any multiple of 8 up to 256)")
        if self.a_source not in SOURCES:
            raise dsc.DescriptorError(f"a_source={self.a_source!r}: must be one of {SOURCES}")
        if isinstance(self.k_steps, bool) or not isinstance(self.k_steps, int) \
                or not 1 <= self.k_steps <= 8:
            raise dsc.DescriptorError(f"k_steps={self.k_steps!r}: 1..8 wgmmas along K")
        object.__setattr__(self, "b_major", dsc.check_major(self.b_major, self.dtype, "b_major"))
        am = dsc.check_major(self.a_major, self.dtype, "a_major")
        object.__setattr__(self, "a_major", am)
        if self.a_source == "registers" and am != "K":
            raise dsc.DescriptorError(
                "a_major='MN' with a_source='registers': A in registers is a fragment "
                "(PTX ISA §9.7.15.5.1.1), not a shared-memory layout; imm-trans-a exists only "
                "for A read through a descriptor. Use a_major='K'.")
        self.a_tile, self.b_tile  # noqa: B018 - build both tiles to run their checks

    @property
    def k(self) -> int:
        return self.k_steps * dsc.instruction_k(self.dtype)

    @property
    def a_tile(self) -> dsc.OperandTile:
        return dsc.OperandTile(64, self.k, self.dtype, self.a_major, self.a_swizzle)

    @property
    def b_tile(self) -> dsc.OperandTile:
        return dsc.OperandTile(self.n, self.k, self.dtype, self.b_major, self.b_swizzle)

    @property
    def entry(self) -> str:
        """The kernel entry point: wgmma_tile_ss_{a}{b} or wgmma_tile_rs_{b} (k / m)."""
        mk = {"K": "k", "MN": "m"}
        if self.a_source == "registers":
            return f"wgmma_tile_rs_{mk[self.b_major]}"
        return f"wgmma_tile_ss_{mk[self.a_major]}{mk[self.b_major]}"

    @property
    def b_offset(self) -> int:
        """Byte offset of B's tile from the (1024-aligned) shared-memory base; A's is 0."""
        if self.a_source == "registers":
            return 0
        return -(-self.a_tile.size_bytes // 1024) * 1024

    @property
    def shmem_bytes(self) -> int:
        """Dynamic shared memory of one launch: 1024 bytes of alignment slack + both tiles."""
        return 1024 + self.b_offset + self.b_tile.size_bytes

    @property
    def defines(self) -> dict:
        return dict(DT=DTYPES[self.dtype], N=self.n, KSTEPS=self.k_steps)

    def label(self) -> str:
        sw = lambda s: f"{s}B" if s else "none"  # noqa: E731
        a = "A:regs" if self.a_source == "registers" else f"A:{self.a_major}/{sw(self.a_swizzle)}"
        return f"{self.dtype} n{self.n} {a} B:{self.b_major}/{sw(self.b_swizzle)}"

    def as_dict(self) -> dict:
        return {"dtype": self.dtype, "n": self.n, "a_major": self.a_major, "b_major": self.b_major,
                "a_swizzle": self.a_swizzle, "b_swizzle": self.b_swizzle,
                "a_source": self.a_source, "k_steps": self.k_steps}


def supported_configs(dtypes=tuple(DTYPES), ns=N_VALUES, swizzles=SWIZZLES,
                      k_steps: int = 4) -> list[TileConfig]:
    """Every (dtype, A source, A major, B major, swizzle, N) the instruction allows: f16/bf16 with
    both major-nesses of A (from shared memory) and B, A from registers with either B; fp8 K-major
    only. A and B share the swizzle mode."""
    out = []
    for dt in dtypes:
        majors = ("K",) if dsc.itemsize(dt) == 1 else ("K", "MN")
        for n in ns:
            for sw in swizzles:
                for am in majors:
                    for bm in majors:
                        out.append(TileConfig(dt, n, am, bm, sw, sw, "smem", k_steps))
                for bm in majors:
                    out.append(TileConfig(dt, n, "K", bm, sw, sw, "registers", k_steps))
    return out


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
    from . import tma
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


# --------------------------------------------------------------------------------------------------
# The deliberate mismatch
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class MismatchResult:
    """What happens when the descriptors claim ``descriptor_swizzle`` but the tiles were laid out
    with ``layout_swizzle``.

    ``reference`` (64×N, float64) is the right D; ``predicted`` the wrong D the layout model says the
    GPU computes (what wgmma reads through the wrong descriptors, multiplied in float64);
    ``measured`` the GPU's D (None when not run live). ``wrong_*`` count elements off by more than
    the dtype's tolerance × the largest |reference|. ``source_a`` (64×K int64): for each element
    (m, k) of A as wgmma read it, the flat index m'·K + k' of the element actually found there
    (-1: padding or outside the tile) — the permutation to plot. ``source_b`` likewise (N×K).
    """

    config: TileConfig
    layout_swizzle: int
    descriptor_swizzle: int
    reference: np.ndarray
    predicted: np.ndarray
    measured: np.ndarray | None
    source_a: np.ndarray
    source_b: np.ndarray

    def _wrong(self, d: np.ndarray) -> int:
        tol = TILE_TOLERANCE[self.config.dtype] * 10 * float(np.abs(self.reference).max())
        return int(np.count_nonzero(~(np.abs(d.astype(np.float64) - self.reference) <= tol)))

    @property
    def wrong_predicted(self) -> int:
        return self._wrong(self.predicted)

    @property
    def wrong_measured(self) -> int | None:
        return None if self.measured is None else self._wrong(self.measured)

    @property
    def measured_matches_prediction(self) -> bool | None:
        """True when the GPU's wrong D equals the model's prediction (fp32 rounding aside)."""
        if self.measured is None:
            return None
        m = self.measured.astype(np.float64)
        scale = float(np.abs(self.predicted).max()) or 1.0
        return bool(np.all(np.abs(m - self.predicted) <= 1e-3 * scale))

    @property
    def a_elements_moved(self) -> int:
        """Elements of A that wgmma read from the wrong place."""
        k = self.source_a.shape[1]
        want = np.arange(self.source_a.size).reshape(self.source_a.shape)
        return int(np.count_nonzero(self.source_a != want)) if k else 0

    def summary(self) -> str:
        sw = lambda s: f"{s}B" if s else "no"  # noqa: E731
        n = self.reference.size
        s = (f"tiles laid out with {sw(self.layout_swizzle)} swizzle, descriptors say "
             f"{sw(self.descriptor_swizzle)} swizzle: wgmma reads {self.a_elements_moved} of "
             f"{self.source_a.size} A elements from the wrong place; the model predicts "
             f"{self.wrong_predicted} of {n} D elements wrong")
        if self.measured is not None:
            s += (f"; the GPU got {self.wrong_measured} wrong, "
                  f"{'exactly as predicted' if self.measured_matches_prediction else 'NOT as predicted'}")
        return s


def _sources(tile: dsc.OperandTile, wrong: list[dsc.WgmmaDescriptor], base: int) -> np.ndarray:
    """Flat element index stored at each address wgmma reads through ``wrong`` (-1 if none)."""
    addr_ok = tile.addresses(base)
    inv = {int(x): i for i, x in enumerate(addr_ok.ravel())}
    kk = tile.instruction_k
    out = np.full((tile.mn, tile.k), -1, dtype=np.int64)
    for s, d in enumerate(wrong):
        rd = dsc.read_addresses(d, tile.major, tile.dtype, tile.mn)
        out[:, s * kk:(s + 1) * kk] = np.vectorize(lambda x: inv.get(int(x), -1))(rd)
    return out


def mismatch_demo(n: int = 64, dtype: str = "float16", layout_swizzle: int = 128,
                  descriptor_swizzle: int = 64, major: str = "K", rng=None,
                  live: bool | None = None) -> MismatchResult:
    """Lay A and B out for ``layout_swizzle`` but give wgmma descriptors whose swizzle field says
    ``descriptor_swizzle`` (same start, LBO and SBO), and see what comes out.

    The prediction needs no GPU: the layout model gives, for each element wgmma reads through the
    wrong descriptors, what the image holds there. ``live`` (default: when an sm_90 GPU is here)
    also runs the kernel compiled with ``MISMATCH_LAYOUT`` — the only way that define is ever set.
    Raises :class:`~asynctc.models.descriptors.DescriptorError` for equal modes (no mismatch) or invalid ones.
    """
    if layout_swizzle == descriptor_swizzle:
        raise dsc.DescriptorError(f"descriptor_swizzle={descriptor_swizzle}: equals layout_swizzle; "
                                  "a mismatch demo needs two different modes")
    dsc._check_span(descriptor_swizzle, "descriptor_swizzle")
    cfg = TileConfig(dtype, n, major, major, layout_swizzle, layout_swizzle, "smem", 4)
    rng = rng if rng is not None else np.random.default_rng()
    a, b = random_tile_operands(cfg, rng)
    at, bt = cfg.a_tile, cfg.b_tile
    a_img, b_img, _ = tile_images(a, b, cfg)

    def wrong(tile, base):
        out = []
        for d in tile.descriptors(base):
            out.append(dsc.WgmmaDescriptor(d.start_address, d.lbo, d.sbo, descriptor_swizzle, 0))
        return out
    wa, wb = wrong(at, 0), wrong(bt, 0)
    a_read = at.gather(a_img, wa).astype(np.float64)
    b_read = bt.gather(b_img, wb).astype(np.float64)
    predicted = a_read @ b_read.T
    src_a, src_b = _sources(at, wa, 0), _sources(bt, wb, 0)
    measured = None
    if live if live is not None else runtime.runs_live("sm_90a"):
        measured = run_tile(a, b, cfg, _mismatch_layout=dsc.LAYOUT_TYPE[descriptor_swizzle])
    return MismatchResult(cfg, layout_swizzle, descriptor_swizzle, tile_reference(a, b),
                          predicted, measured, src_a, src_b)


# --------------------------------------------------------------------------------------------------
# Figures for the chapter (matplotlib; replayed figures say so in their titles)
# --------------------------------------------------------------------------------------------------

def plot_layouts(major: str = "K", dtype: str = "float16", rows: int = 16, hide_offsets=()):
    """One panel per swizzle mode: for the first ``rows`` rows of a 64×64 (K-major A) or 64×64
    (MN-major) tile, the 16-byte chunk (0..7) of its 128-byte line that each 16-byte group of
    elements occupies — the canonical layout wgmma reads, drawn. Each panel's title gives the
    tile's LBO and SBO, except for the swizzle modes (bytes, 0 = none) in ``hide_offsets``, whose
    title says they are left to an exercise."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.6))
    k = 64 if dsc.itemsize(dtype) == 2 else 128
    for ax, sw in zip(axes, SWIZZLES):
        t = dsc.OperandTile(64, k, dtype, major, sw)
        addr = t.addresses()
        per = 16 // t.itemsize
        chunks = (addr % 128) // 16
        view = chunks[:rows, ::per] if major == "K" else chunks[::per, :rows].T
        ax.imshow(view, cmap="tab10", vmin=0, vmax=9, aspect="auto")
        for (i, j), v in np.ndenumerate(view):
            ax.text(j, i, int(v), ha="center", va="center", fontsize=6)
        offsets = "LBO, SBO: see the exercises" if sw in hide_offsets else f"LBO {t.lbo} B, SBO {t.sbo} B"
        ax.set_title(f"{'no' if sw == 0 else f'{sw}B'} swizzle\n{offsets}", fontsize=9)
        ax.set_xlabel("16-byte group along " + ("K" if major == "K" else "MN"))
        ax.set_xticks(range(0, view.shape[1], max(1, view.shape[1] // 8)))
        ax.set_yticks(range(0, view.shape[0], 2))
        ax.set_ylabel(("row (M)" if major == "K" else "k") if ax is axes[0] else "")
    fig.suptitle(f"{major}-major {dtype}: 16-byte chunk within its 128-byte line (≈ bank group)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_mismatch(r: MismatchResult, rows: int = 16):
    """Left: for the first ``rows`` rows of A as wgmma read it, per 16-byte group of K, the image row
    its values really came from; right: |D − reference| (measured when live, else predicted)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    k = r.source_a.shape[1]
    per = 16 // dsc.itemsize(r.config.dtype)
    src_row = np.where(r.source_a >= 0, r.source_a // k, -1)[:rows, ::per]
    im0 = axes[0].imshow(src_row, cmap="viridis", aspect="auto")
    for (i, j), v in np.ndenumerate(src_row):
        axes[0].text(j, i, int(v), ha="center", va="center", fontsize=7,
                     color="white" if v < src_row.max() / 2 else "black")
    fig.colorbar(im0, ax=axes[0], label="image row the value came from")
    axes[0].set_title(f"A as wgmma read it (rows 0–{rows - 1}): source row of each 16-byte group",
                      fontsize=9)
    axes[0].set_xlabel(f"16-byte group of K ({per} elements; 4 k16 steps)")
    axes[0].set_ylabel("row m wgmma thinks it read")
    axes[0].set_yticks(range(0, rows, 2))
    d = r.measured if r.measured is not None else r.predicted
    im = axes[1].imshow(np.abs(d - r.reference), cmap="magma", aspect="auto")
    fig.colorbar(im, ax=axes[1], label="|D − A·B|")
    axes[1].set_title(("measured" if r.measured is not None else "predicted") +
                      f" |D − A·B|: {r.wrong_measured if r.measured is not None else r.wrong_predicted}"
                      f" of {r.reference.size} wrong", fontsize=9)
    axes[1].set_xlabel("column n of D")
    axes[1].set_ylabel("row m of D")
    return fig


# --------------------------------------------------------------------------------------------------
# Exercise (auto-checked in the notebook)
# --------------------------------------------------------------------------------------------------

def _register_exercises():
    from .core.exercises import diagnosis, exercise, known_mistake

    @exercise("ch04.descriptor", "The 64-bit wgmma descriptor (an int) for k-step `step` of a tile "
              "mn×k of dtype, major-ness and swizzle, stored as TMA boxes from shared address base.")
    def _ch04_descriptor(mn: int, k: int, dtype: str, major: str, swizzle: int, step: int,
                         base: int) -> int:
        return dsc.OperandTile(mn, k, dtype, major, swizzle).descriptor(step, base).encode()

    @diagnosis("ch04.descriptor")
    def _ch04_descriptor_hint(answer, expected, mn, k, dtype, major, swizzle, step, base):
        return descriptor_diagnosis(answer, dsc.OperandTile(mn, k, dtype, major, swizzle), step, base)

    @exercise("ch04.sbo", "SBO in bytes of a K-major tile with the given swizzle (8 rows apart).")
    def _ch04_sbo(swizzle: int) -> int:
        return dsc.OperandTile(64, 64, "float16", "K", swizzle).sbo

    @diagnosis("ch04.sbo")
    def _ch04_sbo_hint(answer, expected, swizzle: int):
        t = dsc.OperandTile(64, 64, "float16", "K", swizzle)
        return known_mistake(answer, expected, [
            (t.row_pitch, f"that is one row ({t.row_pitch} bytes); SBO steps from one group of 8 rows "
                          "to the next."),
            (1024, "1024 is SBO with 128-byte swizzle (8 rows of 128 bytes); with "
                   f"{swizzle}-byte swizzle the rows are {t.row_pitch} bytes long."),
            (expected >> 4, "that is the encoded field value (bytes >> 4); the question asks for bytes."),
            (expected // t.itemsize, "you counted elements, not bytes."),
            (16, "16 bytes is LBO, which K-major swizzled layouts do not use (the ISA \"assumes 1\")."),
            (8, "8 is how many rows apart; SBO is the byte distance between them."),
        ])


def descriptor_diagnosis(answer: int, tile: dsc.OperandTile, step: int, base: int) -> str | None:
    """Why ``answer`` is not the descriptor of k-step ``step`` of ``tile`` at shared address
    ``base``: both are decoded field by field (:func:`asynctc.models.descriptors.decode`) and the
    wrong fields are named, with the rule each one breaks. None when they agree."""
    want = tile.descriptor(step, base)
    raw = {name: (int(answer) >> lo) & ((1 << w) - 1) for name, lo, w in dsc.FIELDS}
    try:
        got = dsc.decode(answer)
    except dsc.DescriptorError as e:
        unscaled = [f for f in ("start_address", "lbo", "sbo")
                    if raw[f] and raw[f] == getattr(want, f) & ((1 << 14) - 1)]
        if unscaled:
            shown = ", ".join(f"{f} {getattr(want, f):#x} >> 4 = {getattr(want, f) >> 4:#x}"
                              for f in unscaled)
            return (f"{', '.join(unscaled)}: a descriptor stores byte values >> 4 (16-byte units), "
                    f"so write {shown}; unshifted, the bytes spill into bits no field owns")
        return f"this does not decode: {e}"
    notes = []
    if got.start_address != want.start_address:
        if got.start_address == base:
            notes.append(f"start address {got.start_address:#x} is k-step 0's; k-step {step} starts "
                         "further down K")
        elif tile.major == "MN" and got.start_address == base + step * 32:
            notes.append(f"start address {got.start_address:#x}: +32 bytes per k-step holds for "
                         f"K-major tiles; in an MN-major tile one k16 step is {tile.instruction_k} "
                         f"K-rows of {tile.row_pitch} bytes")
        elif got.start_address == 16 * want.start_address:
            notes.append("start address: the field holds the address >> 4 (16-byte units), not bytes")
        else:
            notes.append(f"start address {got.start_address:#x} is not where k-step {step} begins "
                         f"(base {base:#x} plus {step} k16 steps)")
    if got.lbo != want.lbo or got.sbo != want.sbo:
        if (got.lbo, got.sbo) == (want.sbo, want.lbo):
            notes.append("LBO and SBO are swapped: " + _offset_rule(tile))
        else:
            for f, label in (("lbo", "LBO"), ("sbo", "SBO")):
                g, w = getattr(got, f), getattr(want, f)
                if g == w:
                    continue
                if g == 16 * w:
                    notes.append(f"{label}: the field holds the byte offset >> 4 (16-byte units), "
                                 "not bytes")
                else:
                    notes.append(f"{label} {g} B is wrong: " + _offset_rule(tile, f))
    if got.swizzle != want.swizzle:
        notes.append(f"the swizzle field holds mode {got.layout_type} ({got.swizzle or 'no'}"
                     f"{'-byte' if got.swizzle else ''} swizzle); the mode numbers are 0 none, "
                     "1 = 128-byte, 2 = 64-byte, 3 = 32-byte")
    if got.base_offset != want.base_offset:
        notes.append(f"base offset {got.base_offset}: the tile base is aligned to its swizzle "
                     f"pattern, so it is {want.base_offset}")
    return "; ".join(notes) + "." if notes else None


def _offset_rule(tile: dsc.OperandTile, which: str = "") -> str:
    """The rule for LBO/SBO of ``tile``'s layout, in words (see OperandTile.lbo / .sbo)."""
    if tile.major == "K":
        rules = {"lbo": "K-major swizzled layouts do not use LBO (the ISA \"assumes 1\": 16 bytes)"
                 if tile.swizzle else "without swizzle LBO steps to the next 16-byte K chunk (the "
                 "next box)",
                 "sbo": f"SBO steps 8 rows of MN, 8 × {tile.row_pitch}-byte rows"}
    elif tile.swizzle:
        rules = {"lbo": f"in an MN-major swizzled tile LBO steps to the next box along MN "
                        f"({tile.box_rows} K-rows × {tile.row_pitch} bytes)",
                 "sbo": f"SBO steps 8 K-rows of {tile.swizzle} bytes"}
    else:
        rules = {"lbo": "MN-major without swizzle: LBO steps 8 K-rows (128 bytes)",
                 "sbo": "MN-major without swizzle: SBO steps to the next 16-byte MN chunk (next box)"}
    return rules[which] if which else f"{rules['lbo']}; {rules['sbo']}"


_register_exercises()
