"""The GEMM itself: :func:`matmul` (``C = A · B`` on the Tensor Cores, any shape) and its plan.

:class:`MatmulPlan` checks the operands once (field, value and rule, before anything reaches the
GPU), picks the configuration (:func:`asynctc.gemm.config.choose_config`, the rule of
:func:`asynctc.gemm.matmul_config`), uploads host operands with padded rows and sets up the
:class:`~asynctc.gemm.EdgeGemm` launch; :func:`matmul` runs it.
"""

from __future__ import annotations

import numpy as np

from ..core import checks, runtime
from ..core.memory import DeviceArray
from ..warp_specialization.config import WSConfig, _fail
from .config import b_major_of, choose_config, operand_rules
from .fastpath import is_torch, matmul_device, matmul_torch
from .interop import Matrix, check_overlap, is_foreign, not_an_array
from .operands import TMA_ALIGN, EdgeGemm, Pitched, check_tma_rows, row_pitch, upload_pitched
from .splitk import SplitKGemm


def _is_device(x) -> bool:
    return isinstance(x, (DeviceArray, Pitched))


def _dtype_name(x) -> str:
    return np.dtype(x).name


def _span_matrix(x) -> Matrix:
    rows, cols = x.shape
    return Matrix(x.ptr, rows, cols, cols * x.dtype.itemsize, False)


def _check_device_overlap(a, b, out) -> None:
    """``out`` (a DeviceArray) must share no byte with a device ``a`` or ``b``."""
    others = [(w, _span_matrix(x)) for w, x in (("a", a), ("b", b))
              if isinstance(x, DeviceArray) and x.nbytes]
    check_overlap(_span_matrix(out), out.dtype.itemsize, others, np.dtype(a.dtype).itemsize)


class MatmulPlan:
    """One :func:`matmul` call set up: operands on the device (host ones uploaded, padded), the
    output, the configuration and the launchable :class:`~asynctc.gemm.EdgeGemm` (``.gemm``). :meth:`run` launches
    and returns the result as :func:`matmul` does; ``.gemm.launcher()`` is what a timing calls."""

    def __init__(self, a, b, out=None, *, b_layout: str = "KxN", out_dtype=None, config=None,
                 stream=None):
        b_major = b_major_of(b_layout)
        for what, x in (("a", a), ("b", b), ("out", out)):
            if x is None and what == "out":
                continue
            if not isinstance(x, (np.ndarray, DeviceArray)):
                not_an_array(what, x)
            if len(x.shape) != 2:
                _fail(f"{what}.shape", tuple(x.shape), "must be 2-D (a matrix)")
        dt = _dtype_name(a.dtype)
        if out_dtype is not None:
            try:
                out_dtype = _dtype_name(checks.np_dtype(out_dtype) if isinstance(out_dtype, str)
                                        else out_dtype)
            except TypeError:
                _fail("out_dtype", out_dtype, "not a dtype: 'float32' or the input dtype")
        c = None if out is None else (_dtype_name(out.dtype), tuple(out.shape),
                                      isinstance(out, np.ndarray) and not out.flags.writeable)
        m, n, k, out_dtype = operand_rules(dt, _dtype_name(b.dtype), a.shape, b.shape, b_layout,
                                           out_dtype, c)
        for what, x in (("a", a), ("b", b), ("out", out)):
            if isinstance(x, DeviceArray) and x.nbytes:
                if not x.ptr:
                    _fail(f"{what} address", "0x0", "a null pointer is never device memory")
                if what != "out":
                    check_tma_rows(x, what)
                elif x.ptr % TMA_ALIGN:
                    _fail("out address", hex(x.ptr), "must be 16-byte aligned (TMA store / the "
                                                     "epilogue's paired stores)")
        if isinstance(out, DeviceArray) and out.nbytes:
            _check_device_overlap(a, b, out)
        self.m, self.n, self.k, self.stream = m, n, k, stream
        self.dtype, self.out_dtype, self.b_layout = dt, out_dtype, b_layout
        self.user_out = out
        #: the result comes back as numpy unless a DeviceArray went in (or is the output)
        self.host_result = (out is None and not _is_device(a) and not _is_device(b)) or \
            isinstance(out, np.ndarray)
        self.gemm = None
        if m == 0 or n == 0 or k == 0:
            self.config = None                      # nothing to launch
            return
        device_c = isinstance(out, DeviceArray) or (out is None and not self.host_result)
        c_aligned = not device_c or (n * np.dtype(checks.np_dtype(out_dtype)).itemsize) % TMA_ALIGN == 0
        if config is None:
            config = choose_config(m, n, k, dt, b_major, out_dtype, c_rows_aligned=c_aligned)
        else:
            if not isinstance(config, WSConfig):
                _fail("config", type(config).__name__, "must be a WSConfig")
            for f, want in (("dtype", dt), ("b_major", b_major),
                            ("out_dtype", out_dtype)):
                if getattr(config, f) != want:
                    _fail(f"config.{f}", getattr(config, f), f"must be {want!r} for these operands")
            config = config.replace(edges=True, trace=False)
        self.config = config
        if not runtime.runs_live("sm_90a"):
            raise runtime.NoGPUError(
                f"asynctc.matmul runs on a Hopper GPU (sm_90: H100, H200); here: "
                f"{runtime.why_not_live('sm_90a')}. The operands (shapes, dtypes, layouts, out) were checked and are valid; "
                "`python -m asynctc doctor` says what this machine can do")
        da = a if isinstance(a, DeviceArray) else upload_pitched(np.asarray(a), stream)
        db = b if isinstance(b, DeviceArray) else upload_pitched(np.asarray(b), stream)
        if device_c:
            dc = out if out is not None else DeviceArray.poisoned((m, n), checks.np_dtype(out_dtype),
                                                                  stream)
        else:
            odt = checks.np_dtype(out_dtype)
            dc = Pitched(DeviceArray.poisoned((m, row_pitch(n, odt.itemsize)), odt, stream), m, n)
        launch = SplitKGemm if config.split_k > 1 else EdgeGemm     # split-K: its own launch
        self.gemm = launch(config, da, db, dc, stream)

    def run(self):
        """Launch (nothing for an empty problem), check the error word, return the result: the
        numpy array ``out`` or a new one (host result), else the DeviceArray."""
        m, n = self.m, self.n
        odt = checks.np_dtype(self.out_dtype)
        if self.gemm is None:                           # M, N or K = 0
            if self.user_out is None:
                if self.host_result:
                    return np.zeros((m, n), odt)
                res = DeviceArray.empty((m, n), odt, self.stream)
                if res.nbytes:
                    res.buffer.fill(0, stream=self.stream or runtime.default_stream())
                return res
            if isinstance(self.user_out, np.ndarray):
                self.user_out[...] = 0
            elif self.user_out.nbytes:
                self.user_out.buffer.fill(0, stream=self.stream or runtime.default_stream())
            return self.user_out
        self.gemm.launcher()()
        self.gemm.check_error()
        c = self.gemm.out
        if not self.host_result:
            return c
        host = c.to_host(self.stream)
        if isinstance(self.user_out, np.ndarray):
            self.user_out[...] = host
            return self.user_out
        return host


def matmul(a, b, out=None, *, b_layout: str = "KxN", out_dtype=None, config=None, stream=None):
    """``C = A · B`` on the Tensor Cores: chapter 06's top rung for any shape.

    ``a``: M×K; ``b``: K×N (``b_layout="KxN"``, numpy's ``a @ b``) or N×K (``"NxK"``: B
    transposed, K-major; the ``matmul`` record has both layouts equal on the cubes and K×N the
    faster one on thin M); numpy arrays or :class:`~asynctc.core.memory.DeviceArray`, float16
    or bfloat16 (ml_dtypes), both the same — or device arrays of other libraries, zero-copy:
    torch tensors, CuPy arrays, any ``__cuda_array_interface__`` (v2/v3) or ``__dlpack__``
    (kDLCUDA) object (:mod:`asynctc.gemm.fastpath`). Those may be strided views TMA can read:
    unit stride along the last dimension, row pitch a multiple of 16 bytes, base 16-byte aligned;
    a transposed ``b`` (``w.T``) is read as the other B layout without a copy. With them the
    launch goes on ``stream`` if given, else on the caller's current stream (torch's, CuPy's, or
    the CUDA Array Interface ``stream`` field), nothing waits for the GPU, and C is of the
    caller's kind (torch in → a ``torch.empty`` tensor out; CuPy → CuPy; else a DeviceArray);
    ``asynctc.gemm.check_errors()`` waits and reports a kernel that gave up.
    Products are accumulated in fp32 (wgmma ``.f32`` accumulators, PTX ISA §9.7.15); C is M×N in
    ``out_dtype``: "float32" or the input dtype (default: the input dtype, rounded to nearest).
    ``out``: optional M×N numpy array or DeviceArray to write (its dtype is then ``out_dtype``).

    Returns a numpy array of exactly M×N when no DeviceArray is involved (host operands are
    uploaded into buffers whose rows are padded to a multiple of 16 bytes; the tensor maps get the
    true dims, so TMA zero-fills past them), else a DeviceArray (``out`` itself when given).
    M = 0 or N = 0: an empty result; K = 0: zeros — without launching anything.

    The configuration is :func:`matmul_config`'s (or ``config``, a :class:`WSConfig` whose dtype,
    B layout and out dtype match; it is run with ``edges=True``): rung 8 (persistent, clusters of 2
    with B multicast, TMA-store epilogue, raster groups of 16 tile rows) in either B layout, a narrower tile where the shape
    would leave SMs idle. Edges: the tile counts and the k-loop round up, TMA
    fills what hangs past M, N, K with zeros (PTX ISA §5.5.3 tiled mode "Out of Boundary Access";
    cuTensorMapEncodeTiled oobFill), stores are clipped to M × N.

    Raises :class:`WarpSpecializationError` (a ``ValueError``) naming the field, the value and the
    rule, before anything reaches the GPU: ``b_layout`` not "KxN"/"NxK"; an operand that is not an
    array (:class:`~asynctc.gemm.interop.OperandTypeError`, also a :class:`TypeError`), not 2-D,
    not float16/bfloat16, or of another dtype than ``a``; K of ``b`` ≠ K of ``a``;
    ``out_dtype`` / ``out`` of the wrong dtype or shape; an ``out`` sharing bytes with ``a`` or
    ``b`` (both byte ranges named); a null device address; a host array mixed with device
    arrays; an operand on another GPU; a device array whose strides TMA cannot express (the
    stride, the rule and ``.contiguous()`` named); a DeviceArray whose base is not 16-byte aligned or whose rows (more than one) are not a multiple of
    16 bytes (cuTensorMapEncodeTiled: globalAddress 16-byte aligned, globalStrides multiples of
    16 — pass a numpy array to have it padded); a dimension ≥ 2^31 (32-bit TMA coordinates).
    :class:`RuntimeError` if an mbarrier wait timed out (the kernel gave up instead of hanging);
    :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU. The first call per
    configuration compiles the kernel (NVRTC → cubin, cached on disk).
    """
    if config is None and is_torch(a) and is_torch(b) and (out is None or is_torch(out)):
        return matmul_torch(a, b, out, b_layout=b_layout, out_dtype=out_dtype, stream=stream)
    if is_foreign(a) or is_foreign(b) or is_foreign(out):
        if config is not None:
            _fail("config", type(config).__name__, "device arrays of other libraries run "
                                                   "matmul_config's choice (config=None)")
        return matmul_device(a, b, out, b_layout=b_layout, out_dtype=out_dtype, stream=stream)
    return MatmulPlan(a, b, out, b_layout=b_layout, out_dtype=out_dtype, config=config,
                      stream=stream).run()
