"""Chapter 03 — the kernels of ``kernels/tma.cu`` for one box: compile (:func:`compile_tma`), TMA-load
a box and compare the raw shared memory with the model (:func:`load_box`, :func:`load_strided`),
TMA-store one (:func:`store_box`), and the tiles the GPU check sweeps (:func:`swizzle_tiles`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from ..core import runtime, sass
from ..core.memory import DeviceArray
from ..models.layout import SmemTile, dtype_of
from ..models.tensor_map import TensorMapSpec
from .maps import encode, tensor_map_for_tile


# ==================================================================================================
# Chapter 03's kernels
# ==================================================================================================

SOURCE = "tma.cu"
KERNELS = ("tma_load_dump", "tma_store_raw", "mbarrier_lifecycle", "copy_tma", "copy_ldg_sts",
           "copy_cp_async")
SENTINEL = 0xA5        # tma_load_dump fills shared memory with this byte before the load
TAIL = 256             # bytes past the tile that are dumped too (must stay SENTINEL)
ERR_MBARRIER_TIMEOUT = 1


class MbarrierTimeout(runtime.AsyncTCError):
    """A bounded mbarrier wait in a kernel gave up (the kernel reported it instead of hanging)."""


def decode_error(word: int) -> str:
    """Text for a kernel error word: 0 → "", else code and tag (the wait site)."""
    if word == 0:
        return ""
    code, tag = word & 0xFF, word >> 8
    what = {ERR_MBARRIER_TIMEOUT: "mbarrier wait timed out"}.get(code, f"error code {code}")
    return f"{what} (wait site {tag})"


def compile_tma(name: str, arch: str = "sm_90a", **defines) -> runtime.CompiledKernel:
    """Compile kernel ``name`` of ``tma.cu`` (one of :data:`KERNELS`). No GPU needed."""
    if name not in KERNELS:
        raise ValueError(f"name={name!r}: must be one of {KERNELS}")
    return runtime.compile_kernel(SOURCE, name, arch, defines=defines)


def kernel_sass(ck: runtime.CompiledKernel) -> str:
    """The disassembly of ``ck``'s own function (nvdisasm prints every kernel of the cubin)."""
    return sass.kernel_text(ck.sass(), ck.name)


def _random_tensor(shape, dtype: np.dtype, rng) -> np.ndarray:
    """Random bits of ``dtype`` with no zero bytes-wide elements and no NaN/Inf: floats are
    standard-normal values, integers random non-zero values."""
    if dtype.kind == "f" or dtype.name in ("bfloat16",) or "float8" in dtype.name:
        x = rng.standard_normal(shape, dtype=np.float32) * 4
        x = np.where(np.abs(x) < 0.05, 0.5, x)
        return x.astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), size=shape)
    x = np.where(x == 0, 7, x)
    return x.astype(dtype)


def expected_box(host: np.ndarray, start, box, fill: str = "zero") -> np.ndarray:
    """The box TMA reads from ``host`` (row-major, outermost first) at ``start`` (row-major element
    coordinates, may be negative or run past the edge): out-of-bound elements are 0 (or NaN)."""
    fill_v = 0 if fill == "zero" else np.nan
    out = np.full(box, fill_v, dtype=np.float64 if fill == "nan" else host.dtype).astype(host.dtype)
    src_sl, dst_sl = [], []
    for s, b, n in zip(start, box, host.shape):
        lo, hi = max(s, 0), min(s + b, n)
        if hi <= lo:
            return out
        src_sl.append(slice(lo, hi))
        dst_sl.append(slice(lo - s, hi - s))
    out[tuple(dst_sl)] = host[tuple(src_sl)]
    return out


@dataclasses.dataclass
class ByteCheck:
    """Outcome of a byte-exact comparison: ``what``, ``nbytes`` compared, ``mismatches``, the first
    mismatching offset (or -1), and ``note`` (which alternative model matched, when any)."""

    what: str
    nbytes: int
    mismatches: int
    first: int = -1
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "passed": self.passed}


def _compare_bytes(what: str, got: np.ndarray, want: np.ndarray) -> ByteCheck:
    bad = np.flatnonzero(got != want)
    return ByteCheck(what, int(want.size), int(bad.size), int(bad[0]) if bad.size else -1)


def _alternatives(tile: SmemTile, box: np.ndarray) -> dict[str, np.ndarray]:
    """Images under other plausible models, to say *which* assumption failed if the main one does."""
    from ..models.layout import swizzle_address
    alts = {}
    if tile.swizzle and tile.inner_bytes < tile.swizzle:
        # rows packed at inner_bytes (no padding to the span), swizzle on the packed address
        r = np.arange(tile.rows)[:, None]
        c = np.arange(tile.cols)[None, :]
        off = swizzle_address(r * tile.inner_bytes + c * tile.itemsize, tile.swizzle)
        img = np.full(tile.size_bytes + TAIL, SENTINEL, np.uint8)
        src = np.ascontiguousarray(box).view(np.uint8).reshape(tile.rows, tile.cols, tile.itemsize)
        img[(off[..., None] + np.arange(tile.itemsize)).ravel()] = src.ravel()
        alts["packed rows (no padding to the swizzle span)"] = img
    plain = SmemTile(tile.rows, tile.cols, tile.dtype, 0)
    img = np.full(tile.size_bytes + TAIL, SENTINEL, np.uint8)
    img[: plain.size_bytes] = plain.scatter(box, fill=SENTINEL)
    alts["no swizzle at all"] = img
    return alts


def check_box_start(tile: SmemTile, start) -> None:
    """Refuse a box start whose innermost coordinate is not a multiple of 16 bytes.

    Measured on the H200 (driver 580.159, 2026-11-29): a uint8 box (64-byte rows, 64B swizzle)
    loaded at inner coordinate 120 (120 bytes) ended the kernel with CUDA_ERROR_ILLEGAL_INSTRUCTION,
    while starts of -16, 0, 112 bytes (uint8) and 240 / 480 bytes (fp16 / fp32, same coordinate)
    completed. The rule enforced here is the narrowest one consistent with those runs: the inner
    start, in bytes, must be a multiple of 16. Raises :class:`ValueError` naming the field and value.
    """
    inner_bytes = int(start[-1]) * np.dtype(tile.dtype).itemsize
    if inner_bytes % 16:
        raise ValueError(f"start={tuple(start)}: the innermost box coordinate is {inner_bytes} bytes "
                         "from the tensor's start; it must be a multiple of 16 bytes (a start of 120 "
                         "bytes faulted on the H200)")


def load_box(tile: SmemTile, shape=(256, 512), start=(0, 0), *, oob_fill: str = "zero",
             rng=None) -> ByteCheck:
    """TMA-load the box ``tile`` describes from a fresh random ``shape`` tensor at ``start`` (row,
    col; may hang past the edge or be negative) and compare the raw shared memory with the model.

    ``shape``: (rows, cols) of the global tensor in elements of ``tile.dtype``. With
    ``oob_fill="zero"`` the whole dump (tile, padding, 256 bytes past it) must equal the model byte
    for byte; with ``"nan"`` the in-bound elements must be equal and the out-of-bound ones NaN (the
    driver's NaN constant need not be numpy's). Returns :class:`ByteCheck`; raises
    :class:`MbarrierTimeout` if the load never completed, :class:`~asynctc.TensorMapError` for
    invalid arguments (before the GPU).
    """
    check_box_start(tile, start)
    rng = rng if rng is not None else np.random.default_rng()
    host = _random_tensor(tuple(shape), tile.dtype, rng)
    src = DeviceArray.from_host(host)
    desc, spec = tensor_map_for_tile(src, tile, oob_fill=oob_fill)
    ck = compile_tma("tma_load_dump", RANK=2)
    dump = tile.size_bytes + TAIL
    out = DeviceArray.poisoned(dump, np.uint8)
    err = DeviceArray.from_host(np.zeros(2, np.uint32))
    i32, u32 = np.int32, np.uint32
    runtime.launch(ck, 1, 128, desc, i32(start[1]), i32(start[0]), i32(0), i32(0), i32(0),
                   u32(spec.box_bytes), out, u32(dump), err, shmem_bytes=dump + 1024)
    e = int(err.to_host()[0])
    if e:
        raise MbarrierTimeout(f"tma_load_dump {tile!r} at {start}: {decode_error(e)}")
    got = out.to_host()
    box = expected_box(host, start, (tile.rows, tile.cols), oob_fill)
    if oob_fill == "nan":
        g = tile.gather(got).astype(np.float64)
        inb = ~np.isnan(box.astype(np.float64))
        bad = np.flatnonzero((inb & (g != box.astype(np.float64))) | (~inb & ~np.isnan(g)))
        return ByteCheck(f"load {tile!r} at {tuple(start)} of {tuple(shape)}, NaN fill",
                         int(box.size), int(bad.size), int(bad[0]) if bad.size else -1)
    want = np.concatenate([tile.scatter(box, fill=SENTINEL), np.full(TAIL, SENTINEL, np.uint8)])
    chk = _compare_bytes(f"load {tile!r} at {tuple(start)} of {tuple(shape)}", got, want)
    if not chk.passed:
        for name, img in _alternatives(tile, box).items():
            if np.array_equal(got, img):
                chk.note = f"the GPU matches the alternative model: {name}"
    return chk


@dataclasses.dataclass
class StridedLoad:
    """Outcome of one :func:`load_strided`: ``what``; ``model_bytes`` (the model's expect_tx count,
    :attr:`TensorMapSpec.box_bytes`); ``tx_bytes`` the count the kernel armed the mbarrier with;
    ``image`` the :class:`ByteCheck` of the shared-memory dump (tile, padding and a tail of
    untouched bytes) against the model; ``written_extent`` one past the last dumped byte that is
    not the sentinel (≈ the bytes TMA wrote, for the report); ``tx_exact`` whether the mbarrier's
    tx-count came out exactly 0 (True/False), None if the wait timed out; ``timed_out``."""

    what: str
    model_bytes: int
    tx_bytes: int
    image: ByteCheck
    written_extent: int
    tx_exact: bool | None
    timed_out: bool

    @property
    def passed(self) -> bool:
        """The image equals the model and the model's byte count completed the phase exactly."""
        return self.image.passed and self.tx_exact is True and not self.timed_out

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["image"] = self.image.as_dict()
        return {**d, "passed": self.passed}


def strided_box(host: np.ndarray, start, spec: TensorMapSpec) -> np.ndarray:
    """The elements a TMA load of ``spec`` at ``start`` (row-major coordinates, in bounds) brings:
    along each outer dimension every ``element_strides[i]``-th element of the box, along the
    innermost dimension the whole box (the driver ignores its element stride; see
    :attr:`TensorMapSpec.loaded_box`). Shape :attr:`TensorMapSpec.loaded_box`."""
    sl = [slice(s, s + b, e) for s, b, e in zip(start[:-1], spec.box[:-1], spec.element_strides[:-1])]
    sl.append(slice(start[-1], start[-1] + spec.box[-1]))
    for s, b, n in zip(start, spec.box, host.shape):
        if s < 0 or s + b > n:
            raise ValueError(f"start={tuple(start)}: the box must lie inside the tensor {host.shape}")
    out = host[tuple(sl)]
    assert out.shape == spec.loaded_box, (out.shape, spec.loaded_box)
    return out


def load_strided(dtype: Any, box: Sequence[int], element_strides: Sequence[int], *,
                 shape: Sequence[int] | None = None, start: Sequence[int] | None = None,
                 swizzle: Any = 0, tx_delta: int = 0, unchecked_inner_stride: int | None = None,
                 rng=None) -> StridedLoad:
    """TMA-load a box with element strides and compare what TMA did with the model.

    ``dtype``; ``box`` and ``element_strides`` row-major (outermost first, rank 1..5); ``shape``
    of the fresh random tensor (default: twice the box, 16 elements more inside); ``start``
    row-major, the box in bounds (default: 1 along outer dimensions, 0 inner). The kernel arms the
    mbarrier with ``spec.box_bytes + tx_delta`` bytes (``tx_delta`` ≠ 0 is a negative control:
    the tx-count must then not come out exact, or the wait must time out) and, with
    ``TX_PROBE=1``, reports whether the phase's tx-count came out exactly zero.

    ``unchecked_inner_stride``: encode the map with this innermost element stride, which
    :func:`~asynctc.models.tensor_map.validate` refuses — to show on the GPU that the driver
    ignores it (the model used is then the driver's: the whole inner box).

    Returns :class:`StridedLoad`. Needs an sm_90 GPU.
    """
    from ..models.tensor_map import validate as _validate
    dt = dtype_of(dtype)
    box = tuple(int(b) for b in box)
    rank = len(box)
    es = tuple(int(e) for e in element_strides)
    if shape is None:
        shape = tuple(2 * b for b in box[:-1]) + (2 * box[-1] + 16 // dt.itemsize * 4,)
    if start is None:
        start = (1,) * (rank - 1) + (0,)
    rng = rng if rng is not None else np.random.default_rng()
    host = _random_tensor(tuple(shape), dt, rng)
    src = DeviceArray.from_host(host)
    spec = _validate(address=src.ptr, shape=tuple(shape), dtype=dt, box=box, swizzle=swizzle,
                     element_strides=es)
    if unchecked_inner_stride is not None:
        spec = dataclasses.replace(spec, element_strides=es[:-1] + (int(unchecked_inner_stride),))
    desc = encode(spec, owner=src)
    tile = spec.smem_tile()
    check_box_start(tile, start)
    loaded = strided_box(host, start, spec)
    tx = spec.box_bytes + int(tx_delta)
    dump = 2 * tile.size_bytes + TAIL
    ck = compile_tma("tma_load_dump", RANK=rank, TX_PROBE=1, MAX_TRIES=200000)
    out = DeviceArray.poisoned(dump, np.uint8)
    err = DeviceArray.from_host(np.zeros(2, np.uint32))
    c = [0] * 5
    for i, s_ in enumerate(reversed(tuple(start))):
        c[i] = int(s_)
    i32, u32 = np.int32, np.uint32
    runtime.launch(ck, 1, 128, desc, *[i32(v) for v in c], u32(tx), out, u32(dump), err,
                   shmem_bytes=dump + 1024)
    e = err.to_host()
    timed_out = int(e[0]) != 0
    got = out.to_host()
    want = np.full(dump, SENTINEL, np.uint8)
    want[: tile.size_bytes] = tile.scatter(loaded.reshape(tile.rows, tile.cols), fill=SENTINEL)
    what = (f"load {dt.name} box {box} element_strides {spec.element_strides} swizzle {spec.swizzle} "
            f"at {tuple(start)} (tx {tx}, model {spec.box_bytes})")
    img = _compare_bytes(what, got, want) if not timed_out else ByteCheck(what, dump, -1)
    nz = np.flatnonzero(got != SENTINEL)
    return StridedLoad(what=what, model_bytes=spec.box_bytes, tx_bytes=tx, image=img,
                       written_extent=int(nz[-1]) + 1 if nz.size else 0,
                       tx_exact=None if timed_out else bool(int(e[1]) == 1), timed_out=timed_out)


#: Element-stride cases for the GPU check (dtype, box, element_strides, swizzle), row-major.
STRIDE_CASES = (
    ("float16", (64, 64), (1, 1), 0),
    ("float16", (64, 64), (2, 1), 0),
    ("float16", (64, 64), (3, 1), 0),
    ("float16", (64, 64), (8, 1), 0),
    ("float16", (64, 64), (2, 1), 128),
    ("float32", (30, 32), (4, 1), 128),
    ("uint8", (17, 64), (5, 1), 64),
    ("float16", (4, 16, 64), (2, 3, 1), 0),
    ("bfloat16", (3, 5, 7, 32), (2, 1, 4, 1), 64),
)


def store_box(tile: SmemTile, shape=(256, 512), start=(0, 0), *, rng=None) -> ByteCheck:
    """TMA-store a random box from a shared-memory image made by ``tile.scatter`` into a poisoned
    ``shape`` tensor at ``start`` (row, col). The in-bound part of the box must equal the data, every
    other byte must still be poison (a store skips out-of-bound elements)."""
    if min(start) < 0:
        # Measured on the H200 (driver 580.159, 2026-11-29): a TMA *store* whose box starts at a
        # negative coordinate ended the kernel with CUDA_ERROR_ILLEGAL_INSTRUCTION, while loads at the
        # same coordinates zero-filled as documented. Boxes hanging past the far edge are clipped.
        raise ValueError(f"start={tuple(start)}: TMA store box coordinates must be ≥ 0 (a negative "
                         "start faulted on the H200; only the far edge may be out of bounds)")
    check_box_start(tile, start)
    rng = rng if rng is not None else np.random.default_rng()
    box = _random_tensor((tile.rows, tile.cols), tile.dtype, rng)
    raw = DeviceArray.from_host(tile.scatter(box, fill=0x5A))
    dst = DeviceArray.poisoned(tuple(shape), tile.dtype)
    desc, spec = tensor_map_for_tile(dst, tile)
    ck = compile_tma("tma_store_raw", RANK=2)
    i32, u32 = np.int32, np.uint32
    runtime.launch(ck, 1, 128, desc, i32(start[1]), i32(start[0]), i32(0), i32(0), i32(0), raw,
                   u32(tile.size_bytes), shmem_bytes=tile.size_bytes + 1024)
    got = dst.to_host().view(np.uint8).reshape(shape[0], -1)
    want = np.full(got.shape, 0xFF, np.uint8)
    r0, c0 = start
    rl, rh = max(r0, 0), min(r0 + tile.rows, shape[0])
    cl, ch = max(c0, 0), min(c0 + tile.cols, shape[1])
    if rh > rl and ch > cl:
        w = want.view(tile.dtype).reshape(shape)
        w[rl:rh, cl:ch] = box[rl - r0:rh - r0, cl - c0:ch - c0]
    return _compare_bytes(f"store {tile!r} at {tuple(start)} of {tuple(shape)}", got.ravel(),
                          want.ravel())


# --------------------------------------------------------------------------------------------------
# The GPU checks, as one list (used by tests/test_tma.py, tools/gpu_ch02_ch03.py and the tma_checks suite)
# --------------------------------------------------------------------------------------------------

CHECK_DTYPES = ("float16", "bfloat16", "float32", "float8_e4m3fn", "uint8")


def swizzle_tiles() -> list[SmemTile]:
    """Tiles for the swizzle model check: every mode × dtype at the widest row the mode allows, plus
    a narrower row under each swizzle (padding to the span) and odd row counts."""
    out = []
    for dt in CHECK_DTYPES:
        size = dtype_of(dt).itemsize
        for sw in (0, 32, 64, 128):
            span = sw or 128
            out.append(SmemTile(16, span // size, dt, sw))
            if sw and span // size // 2 * size >= 16:
                out.append(SmemTile(9, span // size // 2, dt, sw))
    return out
