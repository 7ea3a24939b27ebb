"""The GEMM's edge operands: matrices of any shape whose rows TMA can read, as they are or padded.

:class:`Pitched` (a rows × cols matrix inside a wider device array: a row pitch), :func:`row_pitch`
/ :func:`pitched_host` / :func:`upload_pitched` (host matrices uploaded with rows padded to a
multiple of 16 bytes), :func:`check_tma_rows` and :func:`check_edge_operands` (what the ``EDGES``
build of ``kernels/warp_specialization.cu`` accepts), and :class:`EdgeGemm`, chapter 06's
:class:`~asynctc.warp_specialization.WSGemm` for those operands (the launch :func:`asynctc.matmul`
makes).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import checks
from ..core.memory import DeviceArray
from ..warp_specialization import launch
from ..warp_specialization.config import WSConfig, _fail
from ..warp_specialization.launch import WSGemm, check_shapes

#: TMA's row rule (CUDA driver API cuTensorMapEncodeTiled: globalAddress 16-byte aligned, every
#: globalStride a multiple of 16 bytes): the alignment of a base address and of a row pitch, bytes.
TMA_ALIGN = 16


@dataclasses.dataclass(frozen=True)
class Pitched:
    """A ``rows`` × ``cols`` row-major matrix inside the device array ``array`` (rows × pitch
    elements): row r starts ``pitch`` elements after row r − 1, the ``pitch − cols`` elements
    after each row are padding that no kernel reads or writes. The tensor map gets the true dims
    (rows, cols) and the padded stride, so TMA zero-fills past ``cols`` and clips stores there."""

    array: DeviceArray
    rows: int
    cols: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ptr(self) -> int:
        return self.array.ptr

    @property
    def pitch(self) -> int:
        """Elements from one row to the next."""
        return self.array.shape[1]

    def to_host(self, stream=None) -> np.ndarray:
        """The rows × cols matrix (the padding dropped)."""
        return np.ascontiguousarray(self.array.to_host(stream)[:, :self.cols])


def row_pitch(cols: int, itemsize: int) -> int:
    """Elements per padded row: ``cols`` rounded up so that a row is a multiple of
    :data:`TMA_ALIGN` bytes (cuTensorMapEncodeTiled: globalStrides multiples of 16)."""
    per = TMA_ALIGN // math.gcd(TMA_ALIGN, itemsize)
    return max(per, -(-cols // per) * per)


def pitched_host(x: np.ndarray) -> np.ndarray:
    """``x`` (2-D) copied into a C-contiguous rows × :func:`row_pitch` array, zeros in the padding
    (the layout :func:`matmul` uploads); ``x`` itself (made contiguous) when its rows are already
    a multiple of 16 bytes."""
    rows, cols = x.shape
    pitch = row_pitch(cols, x.dtype.itemsize)
    if pitch == cols:
        return np.ascontiguousarray(x)
    out = np.zeros((rows, pitch), x.dtype)
    out[:, :cols] = x
    return out


def upload_pitched(x: np.ndarray, stream=None) -> Pitched:
    """Copy host matrix ``x`` to the device in the :func:`pitched_host` layout."""
    return Pitched(DeviceArray.from_host(pitched_host(x), stream), *x.shape)


def _dims(x) -> tuple[tuple[int, int], int]:
    """((rows, cols), row pitch in elements) of a :class:`Pitched` or a C-contiguous array."""
    if isinstance(x, Pitched):
        return x.shape, x.pitch
    return tuple(x.shape), x.shape[1]


def _tile_map(x, tile):
    """The tensor map of :class:`DeviceArray` or :class:`Pitched` ``x`` whose box fills ``tile``:
    a Pitched matrix gets its true dims and its padded row stride."""
    from .. import tma
    if not isinstance(x, Pitched):
        return launch._tile_map(x, tile)
    a = tile.tensor_map_args()
    size = x.dtype.itemsize
    return tma.make_tensor_map(x.array, a["box_dim"], swizzle=a["swizzle"], shape=x.shape,
                               strides=(x.pitch * size, size))[0]


def check_tma_rows(x, what: str) -> None:
    """Raise :class:`WarpSpecializationError` unless TMA can read/write ``x`` (a DeviceArray or
    :class:`Pitched`) as it is: base address 16-byte aligned and, when it has more than one row,
    a row pitch that is a multiple of 16 bytes (CUDA driver API cuTensorMapEncodeTiled:
    globalAddress aligned to 16 bytes, globalStrides multiples of 16; the stride of a dimension of
    size 1 is never used)."""
    (rows, cols), pitch = _dims(x)
    size = np.dtype(x.dtype).itemsize
    if x.ptr % TMA_ALIGN:
        _fail(f"{what} address", hex(x.ptr), "TMA needs a 16-byte aligned base address "
                                             "(cuTensorMapEncodeTiled globalAddress)")
    if rows > 1 and (pitch * size) % TMA_ALIGN:
        field = f"{what}.shape[1]" if not isinstance(x, Pitched) else f"{what}.pitch"
        _fail(field, pitch, f"rows of {pitch} × {size} = {pitch * size} bytes; TMA needs every row "
                            f"pitch to be a multiple of 16 bytes (cuTensorMapEncodeTiled "
                            f"globalStrides), i.e. a multiple of {TMA_ALIGN // math.gcd(TMA_ALIGN, size)} "
                            f"elements — pass a numpy array to have it padded")


def check_edge_operands(a, b, cfg: WSConfig, out) -> tuple[int, int, int, int]:
    """Operands of the ``edges`` build: ``a`` (M×K) and ``b`` (N×K with ``b_major`` "K", K×N with
    "MN") in ``cfg.dtype``, ``out`` (M×N, ``cfg.out_dtype``), each a :class:`DeviceArray` or a
    :class:`Pitched`, readable by TMA as they are (:func:`check_tma_rows`; ``out`` only with
    ``tma_store``, else its base 16-byte aligned). Returns (M, N, K, ldc) with ldc = C's row pitch
    in elements. Raises :class:`WarpSpecializationError`."""
    dt = checks.np_dtype(cfg.dtype)
    for what, x in (("a", a), ("b", b)):
        if np.dtype(x.dtype) != dt:
            _fail(f"{what}.dtype", str(np.dtype(x.dtype)), f"must be {cfg.dtype} (cfg.dtype)")
        if len(x.shape) != 2:
            _fail(f"{what}.shape", tuple(x.shape), "must be 2-D")
        check_tma_rows(x, what)
    m, k = a.shape
    n, k2 = b.shape if cfg.b_major == "K" else b.shape[::-1]
    if k2 != k:
        _fail("b.shape", tuple(b.shape), f"B stored {'N×K' if cfg.b_major == 'K' else 'K×N'} must "
                                         f"have K={k} to match a.shape={tuple(a.shape)}")
    check_shapes(m, n, k, cfg)
    if out is None:
        return m, n, k, n
    (rows, cols), ldc = _dims(out)
    odt = checks.np_dtype(cfg.out_dtype)
    if (rows, cols) != (m, n) or np.dtype(out.dtype) != odt:
        _fail("out", ((rows, cols), str(np.dtype(out.dtype))), f"must be {(m, n)} {odt}")
    if cfg.tma_store:
        check_tma_rows(out, "out")
    elif out.ptr % TMA_ALIGN:
        _fail("out address", hex(out.ptr), "must be 16-byte aligned (the epilogue stores element "
                                           "pairs as one 8-byte / 4-byte access)")
    return m, n, k, ldc


class EdgeGemm(WSGemm):
    """:class:`~asynctc.warp_specialization.WSGemm` for the ``EDGES`` build (``cfg.edges``): any
    M, N, K ≥ 1, operands :class:`DeviceArray` or :class:`Pitched` checked by
    :func:`check_edge_operands`, C written at its row pitch ``ldc``, Pitched matrices mapped with their true dims (:func:`_tile_map`)."""

    def check(self, a, b, out, scales, block_scales) -> tuple[int, int, int, int]:
        if not self.cfg.edges:
            _fail("cfg.edges", False, "EdgeGemm launches the EDGES build: cfg.edges must be True "
                                      "(asynctc.warp_specialization.WSGemm launches the others)")
        return check_edge_operands(a, b, self.cfg, out)

    def tensor_map(self, x, tile):
        return _tile_map(x, tile)

    def c_argument(self):
        return self.out.array if isinstance(self.out, Pitched) else self.out
