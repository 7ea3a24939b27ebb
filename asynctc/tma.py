"""Chapter 03 — TMA and mbarrier: run the kernels of ``kernels/tma.cu`` and check them.

* :func:`load_box` — one TMA load of a box under a swizzle mode; the raw shared memory comes back and
  is compared byte for byte with the model :meth:`asynctc.models.layout.SmemTile.scatter` (swizzle, row
  padding, bytes beyond the tile untouched). Boxes hanging past the tensor's edge (or starting at
  negative coordinates) check the out-of-bound fill: zeros ("zero") or NaN ("nan").
* :func:`store_box` — the reverse: a shared-memory image made by the model is TMA-stored; the global
  box must equal the data and nothing outside it may change.
* :func:`mbarrier_lifecycle` — the mbarrier life cycle recorded in the kernel (phase parity before and
  after expect_tx, complete_tx, stage reuse, arrival counts, a bounded wait that times out).
* :class:`CopyBench` — TMA vs vectorized loads vs cp.async copies by box size, against the
  device-to-device copy; suite ``tma_copy`` (:data:`SUITES`).

Every launch needs an sm_90 GPU (:class:`~asynctc.core.runtime.NoGPUError` otherwise); every argument is
validated in Python first (:mod:`asynctc.tma`, :class:`~asynctc.models.layout.SmemTile`). mbarrier waits in
these kernels are bounded: a kernel that times out reports it in its error word, and the Python side
raises :class:`MbarrierTimeout` — the GPU never hangs.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

import numpy as np

from .core import bench, records, runtime
from .core.memory import DeviceArray
from .models.layout import SmemTile, dtype_of
from .models.tensor_map import (  # noqa: F401  (re-exported: the chapter's whole tensor-map story)
    TensorMapError, TensorMapSpec, _fail, validate)


# --------------------------------------------------------------------------------------------------
# Encoding through cuda.core (needs a GPU)
# --------------------------------------------------------------------------------------------------

_CAI_TYPESTR = {"UINT8": "|u1", "UINT16": "<u2", "UINT32": "<u4", "INT32": "<i4", "UINT64": "<u8",
                "INT64": "<i8", "FLOAT16": "<f2", "BFLOAT16": "<u2", "FLOAT32": "<f4",
                "FLOAT64": "<f8"}


class _View:
    """A ``__cuda_array_interface__`` of the validated spec: typestr of the TMA data type and the
    (size-1-dimension-fixed) byte strides, for ``StridedMemoryView.from_any_interface``."""

    def __init__(self, spec: TensorMapSpec, owner: Any):
        self._owner = owner   # keeps the allocation alive as long as the view
        self.__cuda_array_interface__ = {
            "shape": spec.shape, "typestr": _CAI_TYPESTR[spec.data_type],
            "data": (spec.address, False), "version": 3, "strides": spec.strides}


def encode(spec: TensorMapSpec, owner: Any = None):
    """Encode a validated :class:`TensorMapSpec` with cuda.core; returns a
    :class:`cuda.core.TensorMapDescriptor` (pass it straight to :func:`asynctc.core.runtime.launch`).
    Needs a GPU (the driver encodes the map)."""
    from cuda.core import _tensor_map as tm
    from cuda.core.utils import StridedMemoryView
    runtime.device()
    view = StridedMemoryView.from_any_interface(_View(spec, owner), stream_ptr=-1)
    swz = {0: tm.TensorMapSwizzle.NONE, 32: tm.TensorMapSwizzle.SWIZZLE_32B,
           64: tm.TensorMapSwizzle.SWIZZLE_64B, 128: tm.TensorMapSwizzle.SWIZZLE_128B}[spec.swizzle]
    fill = (tm.TensorMapOOBFill.NONE if spec.oob_fill == "zero"
            else tm.TensorMapOOBFill.NAN_REQUEST_ZERO_FMA)
    extra = {}
    if spec.l2_promotion:     # only when asked: the default call stays the one of chapter 03
        extra["l2_promotion"] = {64: tm.TensorMapL2Promotion.L2_64B,
                                 128: tm.TensorMapL2Promotion.L2_128B,
                                 256: tm.TensorMapL2Promotion.L2_256B}[spec.l2_promotion]
    return view.as_tensor_map(box_dim=spec.box, element_strides=spec.element_strides,
                              data_type=getattr(tm.TensorMapDataType, spec.data_type),
                              swizzle=swz, oob_fill=fill, **extra)


def make_tensor_map(arr, box: Sequence[int], *, swizzle: Any = 0,
                    element_strides: Sequence[int] | None = None, oob_fill: str = "zero",
                    shape: Sequence[int] | None = None, strides: Sequence[int] | None = None,
                    l2_promotion: int = 0):
    """A tensor map over device array ``arr`` (:class:`~asynctc.core.memory.DeviceArray`), validated.

    ``box``: row-major box dims (elements). ``shape``/``strides`` (bytes) default to ``arr``'s
    C-contiguous layout; pass them to describe a view of ``arr`` (it must lie inside ``arr``).
    Returns ``(descriptor, spec)``. Raises :class:`TensorMapError` before anything reaches the
    driver; :class:`~asynctc.core.runtime.NoGPUError` without a GPU.
    """
    spec = validate(address=arr.ptr, shape=tuple(arr.shape) if shape is None else shape,
                    dtype=arr.dtype, box=box, strides=strides, swizzle=swizzle,
                    element_strides=element_strides, oob_fill=oob_fill,
                    l2_promotion=l2_promotion)
    last = sum((d - 1) * s for d, s in zip(spec.shape, spec.strides)) + spec.dtype.itemsize
    if last > arr.nbytes:
        _fail("shape", spec.shape, f"with strides {spec.strides} the tensor spans {last} bytes, more "
                                   f"than the {arr.nbytes}-byte array it describes")
    return encode(spec, owner=arr), spec


def tensor_map_for_tile(arr, tile: SmemTile, *, oob_fill: str = "zero", l2_promotion: int = 0):
    """A 2-D tensor map over ``arr`` (rows × cols, row-major) whose box fills ``tile`` exactly:
    box = (tile.rows, tile.cols), swizzle = tile.swizzle. ``arr.dtype`` must have the tile's
    element size; ``l2_promotion`` as in :func:`validate`. Returns ``(descriptor, spec)``."""
    if np.dtype(arr.dtype).itemsize != tile.itemsize:
        _fail("dtype", np.dtype(arr.dtype).name, f"the tile holds {tile.itemsize}-byte elements "
                                                 f"({tile.dtype.name})")
    a = tile.tensor_map_args()
    return make_tensor_map(arr, a["box_dim"], swizzle=a["swizzle"], oob_fill=oob_fill,
                           l2_promotion=l2_promotion)


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
    text = ck.sass()
    m = re.search(rf"^\.text\.{re.escape(ck.name)}:\s*$(.*?)(?=^\s*//-+ \.text\.|\Z)", text,
                  re.S | re.M)
    return m.group(1) if m else ""


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
    from .models.layout import swizzle_address
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
    from .models.tensor_map import validate as _validate
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
# The mbarrier life cycle
# --------------------------------------------------------------------------------------------------

#: What each recorded step of ``mbarrier_lifecycle`` is, and the parities it must show:
#: (description, barrier, test_wait.parity(0), test_wait.parity(1), wait result or None).
LIFECYCLE = (
    ("init(full, count=1): phase 0 in progress", "full", 0, 1, None),
    ("arrive.expect_tx(full, box bytes): arrival done, bytes pending, phase 0 still open", "full",
     0, 1, None),
    ("TMA complete_tx brought the bytes: phase 0 complete, phase 1 open (waited on parity 0)",
     "full", 1, 0, 1),
    ("stage reused: expect_tx + second box, phase 1 complete (waited on parity 1)", "full", 0, 1, 1),
    ("counter barrier (count 64) after 63 arrivals: phase 0 open", "counter", 0, 1, None),
    ("64th arrival: phase 0 complete (waited on parity 0)", "counter", 1, 0, 1),
    ("bounded wait on parity 1 that nobody completes: timed out, reported, no hang", "counter",
     1, 0, 0),
)


@dataclasses.dataclass
class LifecycleRun:
    """The recorded steps (list of dicts), the data checks and the error words of one run."""

    steps: list[dict]
    boxes_ok: bool
    err: tuple[int, int]
    tx_bytes: int

    @property
    def passed(self) -> bool:
        return (self.boxes_ok and self.err[0] == 0
                and self.err[1] == (ERR_MBARRIER_TIMEOUT | 6 << 8)
                and all(s["as_expected"] for s in self.steps))


def mbarrier_lifecycle(box_rows: int = 16, cols: int = 64, timeout_tries: int = 64,
                       rng=None) -> LifecycleRun:
    """Run the ``mbarrier_lifecycle`` kernel on a fresh random fp16 tensor of 2·box_rows × cols
    and decode its log (see :data:`LIFECYCLE`). ``box_rows`` × ``cols`` × 2 bytes is the
    expect_tx count; the two boxes read back must equal the tensor's halves."""
    tile = SmemTile(box_rows, cols, "float16", 0)
    if tile.box_bytes > 8192:
        raise ValueError(f"box_rows×cols×2 = {tile.box_bytes} B: keep the box ≤ 8192 bytes")
    if tile.box_bytes < 256:
        raise ValueError(f"box_rows×cols×2 = {tile.box_bytes} B: the kernel checksums the first "
                         "256 bytes of the stage; use a box of at least 256 bytes")
    if not 1 <= timeout_tries <= 10000:
        raise ValueError(f"timeout_tries={timeout_tries}: must be 1..10000")
    rng = rng if rng is not None else np.random.default_rng()
    host = _random_tensor((2 * box_rows, cols), np.dtype(np.float16), rng)
    src = DeviceArray.from_host(host)
    desc, spec = tensor_map_for_tile(src, tile)
    ck = compile_tma("mbarrier_lifecycle")
    log = DeviceArray.poisoned((len(LIFECYCLE), 8), np.uint32)
    boxes = DeviceArray.poisoned(2 * tile.box_bytes, np.uint8)
    err = DeviceArray.from_host(np.zeros(2, np.uint32))
    u32 = np.uint32
    runtime.launch(ck, 1, 64, desc, np.int32(box_rows), u32(tile.box_bytes), log, boxes,
                   u32(timeout_tries), err, shmem_bytes=tile.size_bytes + 1024)
    e = tuple(int(x) for x in err.to_host())
    raw = log.to_host()
    got_boxes = boxes.to_host()
    want_boxes = host.view(np.uint8).ravel()
    halves = [want_boxes[: tile.box_bytes], want_boxes[tile.box_bytes:]]
    xor = [int(np.bitwise_xor.reduce(h[:256].view(np.uint32))) for h in halves]
    steps = []
    for i, (desc_txt, bar, p0, p1, res) in enumerate(LIFECYCLE):
        r = raw[i]
        waited = None if r[3] == 0xFFFFFFFF else int(r[3])
        result = None if r[4] == 0xFFFFFFFF else int(r[4])
        ok = int(r[0]) == i and int(r[1]) == p0 and int(r[2]) == p1 and result == res
        if i == 2:
            ok = ok and int(r[5]) == xor[0]
        if i == 3:
            ok = ok and int(r[5]) == xor[1]
        steps.append({"step": i, "what": desc_txt, "barrier": bar, "parity0_done": int(r[1]),
                      "parity1_done": int(r[2]), "waited_parity": waited, "wait_result": result,
                      "stage_xor": int(r[5]), "timer_ns_low32": int(r[6]), "as_expected": bool(ok)})
    return LifecycleRun(steps, bool(np.array_equal(got_boxes, want_boxes)), e, tile.box_bytes)


def lifecycle_table(run_or_steps) -> str:
    """A fixed-width table of the recorded steps."""
    steps = run_or_steps.steps if isinstance(run_or_steps, LifecycleRun) else run_or_steps
    lines = [f"{'#':>2} {'bar':8s} {'P0 done':>7} {'P1 done':>7} {'wait':>6}  ok  step"]
    for s in steps:
        w = "-" if s["waited_parity"] is None else f"P{s['waited_parity']}:{s['wait_result']}"
        lines.append(f"{s['step']:>2} {s['barrier']:8s} {s['parity0_done']:>7} {s['parity1_done']:>7} "
                     f"{w:>6}  {'✓' if s['as_expected'] else '✗'}   {s['what']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# The copy benchmark
# --------------------------------------------------------------------------------------------------

#: Box shapes (rows, fp32 columns) swept by the benchmark: 1 KB .. 32 KB per copy, with 128-byte,
#: 256-byte and 1 KB rows.
BOXES = tuple((r, 32) for r in (8, 16, 32, 64, 128, 256)) + \
        tuple((r, 64) for r in (4, 8, 16, 32, 64, 128)) + \
        tuple((r, 256) for r in (1, 2, 4, 8, 16, 32))
VARIANTS = ("tma", "ldg_sts", "cp_async")
COPY_ROWS, COPY_COLS = 16384, 8192          # 512 MiB of fp32
SMEM_BUDGET = 220 * 1024                    # per SM, leaving room for static shared memory


@dataclasses.dataclass(frozen=True)
class CopyConfig:
    """One copy variant and box: ``variant`` ("tma" | "ldg_sts" | "cp_async"), box ``br`` × ``bc``
    fp32, ``stages`` (shared-memory stages per CTA), ``ctas_per_sm``, ``threads`` per CTA."""

    variant: str
    br: int
    bc: int
    stages: int
    ctas_per_sm: int
    threads: int

    @property
    def box_bytes(self) -> int:
        return self.br * self.bc * 4

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.box_bytes + 128

    @property
    def name(self) -> str:
        return f"{self.variant} {self.br}x{self.bc} ({self.box_bytes >> 10} KB) s{self.stages} " \
               f"x{self.ctas_per_sm}/SM"


def copy_config(variant: str, br: int, bc: int) -> CopyConfig:
    """Stages and CTAs per SM for a box: TMA and cp.async keep up to 64 KB in flight per CTA (2..4
    stages); the manual copy has one stage; as many CTAs per SM as shared memory allows, ≤ 16."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: must be one of {VARIANTS}")
    validate(address=1 << 20, shape=(COPY_ROWS, COPY_COLS), dtype="float32", box=(br, bc))
    if COPY_ROWS % br or COPY_COLS % bc:
        raise ValueError(f"box {br}x{bc}: must divide the {COPY_ROWS}x{COPY_COLS} matrix")
    box = br * bc * 4
    stages = 1 if variant == "ldg_sts" else max(2, min(4, 65536 // box))
    per_cta = stages * box + 128 + 1024
    ctas = max(1, min(16, SMEM_BUDGET // per_cta))
    return CopyConfig(variant, br, bc, stages, ctas, 32 if variant == "tma" else 128)


class CopyBench:
    """src, dst: ``rows`` × ``cols`` fp32 (fresh random data); :meth:`launcher` for each
    :class:`CopyConfig`; :meth:`check` compares dst with src byte for byte (dst poisoned first)."""

    def __init__(self, rows: int = COPY_ROWS, cols: int = COPY_COLS, seed=None):
        rng = np.random.default_rng(seed)
        self.rows, self.cols = rows, cols
        self.host = rng.standard_normal((rows, cols), dtype=np.float32)
        self.src = DeviceArray.from_host(self.host)
        self.dst = DeviceArray.poisoned((rows, cols), np.float32)
        self.nbytes = self.src.nbytes
        self.err = DeviceArray.from_host(np.zeros(1, np.uint32))
        self.sm_count = runtime.device_info().sm_count if runtime.device_info() else 132

    def launcher(self, cfg: CopyConfig, stream=None):
        ck = compile_tma(f"copy_{cfg.variant}", BR=cfg.br, BC=cfg.bc,
                         CSTAGES=max(2, cfg.stages))
        tiles_c = self.cols // cfg.bc
        tiles = (self.rows // cfg.br) * tiles_c
        grid = min(tiles, self.sm_count * cfg.ctas_per_sm)
        i32 = np.int32
        if cfg.variant == "tma":
            sdesc, _ = make_tensor_map(self.src, (cfg.br, cfg.bc))
            ddesc, _ = make_tensor_map(self.dst, (cfg.br, cfg.bc))
            args = (sdesc, ddesc, i32(tiles), i32(tiles_c), self.err)
        else:
            args = (self.src, self.dst, i32(tiles), i32(tiles_c), i32(self.cols))
        runtime.check_launch(grid, cfg.threads, cfg.smem_bytes, ck)

        def run():
            runtime.launch(ck, grid, cfg.threads, *args, shmem_bytes=cfg.smem_bytes, stream=stream)
        return run

    def check(self, what: str) -> ByteCheck:
        e = int(self.err.to_host()[0])
        if e:
            raise MbarrierTimeout(f"{what}: {decode_error(e)}")
        got = self.dst.to_host()
        return _compare_bytes(what, got.view(np.uint8).ravel(), self.host.view(np.uint8).ravel())


def measure_tma_copy() -> dict:
    """The device-to-device copy of the same 512 MiB, then every variant × box in :data:`BOXES`:
    a correctness run on a poisoned destination, then the timing (:func:`asynctc.core.bench.time_gpu`:
    median of 20 samples of enough back-to-back launches to last ≥ 1 ms, L2 flushed before each
    sample — 512 MiB is ten times the L2, so later launches of a sample stream from DRAM too).
    GB/s count bytes read + written (2 × 512 MiB per copy), as the ceilings suite does."""
    cb = CopyBench()
    out: dict = {"bytes": cb.nbytes, "rows": cb.rows, "cols": cb.cols, "copies": [],
                 "device_copy": None}
    t = bench.time_gpu(bench.device_copy(cb.dst, cb.src), reps=20)
    chk = cb.check("device copy")
    if not chk.passed:
        raise RuntimeError(f"device copy wrong: {chk.as_dict()}")
    out["device_copy"] = {**t.as_dict(), "gbps": bench.gbps(2 * cb.nbytes, t.median_ms)}
    for br, bc in BOXES:
        for v in VARIANTS:
            cfg = copy_config(v, br, bc)
            run = cb.launcher(cfg)
            cb.dst.poison()
            run()
            chk = cb.check(cfg.name)
            if not chk.passed:
                raise RuntimeError(f"copy wrong: {chk.as_dict()}")
            t = bench.time_gpu(run, reps=20)
            out["copies"].append({**dataclasses.asdict(cfg), "name": cfg.name,
                                  "box_bytes": cfg.box_bytes, **t.as_dict(),
                                  "gbps": bench.gbps(2 * cb.nbytes, t.median_ms)})
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def by_box(results: dict) -> list[dict]:
    """Per box shape: GB/s of each variant and its ratio to the device copy of the same run."""
    ceil = results["device_copy"]["gbps"]
    rows: dict[tuple, dict] = {}
    for c in results["copies"]:
        k = (c["br"], c["bc"])
        r = rows.setdefault(k, {"br": c["br"], "bc": c["bc"], "box_bytes": c["box_bytes"]})
        r[c["variant"]] = c["gbps"]
        r[c["variant"] + "_ratio"] = c["gbps"] / ceil
    return sorted(rows.values(), key=lambda r: (r["bc"], r["box_bytes"]))


def bytes_in_flight(copy: dict) -> int:
    """Bytes one SM can have on their way for a copy row of the ``tma_copy`` record: stages × box
    bytes × CTAs per SM (one stage of the manual copy, a ring of ``stages`` for TMA and cp.async)."""
    return copy["stages"] * copy["box_bytes"] * copy["ctas_per_sm"]


def compare_by_box_size(results: dict) -> list[dict]:
    """Per box size (bytes), over the row widths measured: each variant's range of fraction of the
    device copy (``lo``/``hi``), the variant ahead at each row width (``leaders``), the largest gap
    between the best and the worst variant at one row width (``spread``), and each variant's range
    of bytes in flight per SM (``in_flight``)."""
    ceil = results["device_copy"]["gbps"]
    out = []
    for size in sorted({c["box_bytes"] for c in results["copies"]}):
        cs = [c for c in results["copies"] if c["box_bytes"] == size]
        widths = sorted({c["bc"] for c in cs})
        frac = {(c["variant"], c["bc"]): c["gbps"] / ceil for c in cs}
        leaders = [max(VARIANTS, key=lambda v: frac.get((v, w), -1)) for w in widths]
        spread = max(max(frac[(v, w)] for v in VARIANTS) - min(frac[(v, w)] for v in VARIANTS)
                     for w in widths)
        out.append({"box_bytes": size, "widths": widths, "leaders": leaders, "spread": spread,
                    "lo": {v: min(frac[(v, w)] for w in widths) for v in VARIANTS},
                    "hi": {v: max(frac[(v, w)] for w in widths) for v in VARIANTS},
                    "in_flight": {v: sorted({bytes_in_flight(c) for c in cs if c["variant"] == v})
                                  for v in VARIANTS}})
    return out


def summarize_tma_copy(rec: records.Record) -> str:
    r = rec.results
    ceil = r["device_copy"]["gbps"]
    lines = [rec.label(), f"device-to-device copy (same run): {ceil:.0f} GB/s (read + write)",
             f"{'box':>10} {'bytes':>6} " + " ".join(f"{v:>16}" for v in VARIANTS)]
    for row in by_box(r):
        cells = " ".join(f"{row.get(v, float('nan')):7.0f} ({row.get(v + '_ratio', float('nan')):.2f})"
                         for v in VARIANTS)
        lines.append(f"{row['br']:>4}x{row['bc']:<5} {row['box_bytes'] >> 10:>4}KB {cells}")
    best = max(r["copies"], key=lambda c: c["gbps"] if c["variant"] == "tma" else -1)
    lines.append(f"best TMA: {best['name']}: {best['gbps']:.0f} GB/s = {best['gbps'] / ceil:.2f} of "
                 "the device copy (target ≥ 0.90)")
    return "\n".join(lines)


SUITES = {"tma_copy": (measure_tma_copy, summarize_tma_copy, "sm_90a")}


# --------------------------------------------------------------------------------------------------
# The GPU checks, as one list (used by tests/test_ch02_ch03_kernels.py and tools/gpu_ch02_ch03.py)
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


# --------------------------------------------------------------------------------------------------
# Exercises (auto-checked in notebooks/03_tma_mbarrier)
# --------------------------------------------------------------------------------------------------

from .core import exercises as _ex  # noqa: E402


@_ex.exercise("ch03.expect_tx", "The byte count for mbarrier.arrive.expect_tx before one TMA load of "
              "a rows×cols box of `dtype` (element strides 1).")
def _ch03_expect_tx(rows: int, cols: int, dtype: str) -> int:
    return validate(address=1 << 20, shape=(4096, 4096), dtype=dtype, box=(rows, cols)).box_bytes


@_ex.diagnosis("ch03.expect_tx")
def _ch03_expect_tx_hint(answer, expected, rows: int, cols: int, dtype: str) -> str | None:
    dt = dtype_of(dtype)
    k, n = dt.itemsize, rows * cols
    name = dt.name
    wrong_sizes = [(n * s, f"{s} byte{'s' if s > 1 else ''} per element? {name} is {k}.")
                   for s in (1, 2, 4, 8) if s != k]
    return _ex.known_mistake(answer, expected, [
        (n, f"you counted elements, not bytes: {name} is {k} byte{'s' if k > 1 else ''} per element."),
        *wrong_sizes,
        (2 * expected, "twice too large: one TMA load moves one box."),
        (rows * k, "that is one column of the box; it has rows×cols elements."),
        (cols * k, "that is one row of the box; it has rows×cols elements."),
        (expected * 8, "that is bits; expect_tx counts bytes."),
        (expected / 1024, "that is in KiB; expect_tx counts bytes."),
    ])


@_ex.exercise("ch03.bank_128B", "The shared-memory bank (0..31) of element (row, col) of a 64×64 fp16 "
              "tile loaded by TMA with 128-byte swizzle into a 1024-byte aligned buffer.")
def _ch03_bank_128B(row: int, col: int) -> int:
    return SmemTile(64, 64, "float16", 128).bank(row, col)


@_ex.diagnosis("ch03.bank_128B")
def _ch03_bank_128B_hint(answer, expected, row: int, col: int) -> str | None:
    swz = SmemTile(64, 64, "float16", 128)
    offset = swz.byte_offset(row, col)
    chunk, within = divmod(col * 2, 16)
    as_bytes = row * 128 + ((col // 16) ^ (row % 8)) * 16 + col % 16     # col taken as a byte index
    hint = _ex.known_mistake(answer, expected, [
        (SmemTile(64, 64, "float16", 0).bank(row, col),
         "that is the bank without swizzle: first XOR the 16-byte chunk index (col×2 // 16) with "
         "row % 8."),
        (chunk ^ (row % 8), "that is the swizzled 16-byte chunk — a group of four banks; the bank is "
                            "chunk×4 plus the 4-byte word inside the chunk."),
        (chunk, "that is the 16-byte chunk before the swizzle (and a chunk is four banks wide)."),
        (offset, "that is the byte offset; bank = (offset // 4) mod 32."),
        (offset // 4, "that is the 4-byte word index; the 32 banks repeat every 32 words: take it mod 32."),
        ((as_bytes // 4) % 32, "the columns are fp16 elements, 2 bytes each: byte = col × 2."),
        (((row * 128 + (chunk ^ row) * 16 + within) // 4) % 32 if row >= 8 else None,
         "the XOR uses row % 8 (the row's position inside its 1024-byte pattern), not the row."),
    ])
    if hint is None and not 0 <= answer < 32:
        return "a bank is a number 0..31 (32 banks of 4 bytes)."
    return hint
