"""The GEMM on device arrays of other libraries: plans cached by what determines them, tensor
maps found per address, one driver launch on the caller's stream.

:func:`matmul_device` is what :func:`asynctc.matmul` runs when an operand is a CuPy array or
another ``__cuda_array_interface__`` / ``__dlpack__`` object: it reads the operands
(:mod:`asynctc.gemm.interop`), checks them (field, value, rule), finds the :class:`LaunchPlan` of
the shapes, dtypes, B storage, row pitches and GPU (:data:`_plans`, a dict keyed by
:class:`PlanKey`) and launches. :func:`matmul_torch` runs for torch tensors: a layout (shapes,
strides, dtypes, devices) checked once is remembered (:class:`_Proven`), so a later call checks
only its addresses (non-null, 16-byte aligned, ``out`` apart from ``a`` and ``b``), allocates C
with ``a.new_empty`` and reads torch's current stream through its raw handle.

A plan is built once: configuration, compiled kernel, grid, cluster, dynamic shared-memory
opt-in, the constant arguments, one ``CUlaunchConfig`` per stream. Per call only what moved is
found: the tensor map of each address (kept per address, :data:`MAPS_PER_OPERAND` per operand,
the oldest re-pointed with ``TensorMapDescriptor.replace_address`` past that) and the packed
kernel parameters of each address triple; the launch is one ``cuLaunchKernelEx``
(``cuda.core.launch`` where the driver bindings cannot be used). Nothing synchronises, so a call
can be captured in a CUDA graph; the error word of a timed-out mbarrier wait is read by
:func:`check_errors` (which waits for the GPU).
"""

from __future__ import annotations

import functools
import sys
from typing import NamedTuple

import numpy as np

from ..core import runtime
from ..core.checks import np_dtype
from ..warp_specialization.config import _fail
from . import interop as I
from .config import b_major_of, choose_config, operand_rules


class _Foreign:
    """A device allocation someone else owns, seen as :class:`~asynctc.gemm.Pitched` expects its
    ``array``: ``ptr``, ``shape`` (rows, pitch in elements), ``dtype``, ``nbytes`` (the span)."""

    def __init__(self, ptr: int, rows: int, pitch: int, dtype, nbytes: int):
        self.ptr, self.shape, self.dtype, self.nbytes = ptr, (rows, pitch), np.dtype(dtype), nbytes

    def _launch_arg(self):
        return np.uint64(self.ptr)


class _Address:
    """A CUDA Array Interface whose address alone changes: what ``replace_address`` reads (the
    shape and byte strides are those the map was encoded with)."""

    def __init__(self, rows: int, cols: int, pitch: int, itemsize: int):
        self.__cuda_array_interface__ = {
            "shape": (rows, cols), "typestr": "<u2" if itemsize == 2 else "<f4",
            "data": (0, False), "version": 3, "strides": (pitch, itemsize)}

    def at(self, ptr: int) -> "_Address":
        self.__cuda_array_interface__["data"] = (ptr, False)
        return self


class PlanKey(NamedTuple):
    """What determines a launch: problem, dtypes, how B is stored, the row pitches (bytes) and the
    GPU. Addresses are not in it: they are re-pointed per call."""

    m: int
    n: int
    k: int
    dtype: str
    out_dtype: str
    b_major: str
    a_pitch: int
    b_pitch: int
    c_pitch: int
    device: int


#: Tensor maps kept per operand, one per address seen (a loop that alternates between a few
#: buffers, as ``c = matmul(a, b)`` does with torch's caching allocator, finds its maps encoded);
#: past this many addresses the oldest map is re-pointed (cuTensorMapReplaceAddress).
MAPS_PER_OPERAND = 8


class LaunchPlan:
    """One :class:`PlanKey` set up for launching, once: ``config`` (:func:`choose_config`),
    ``gemm`` (the :class:`~asynctc.gemm.EdgeGemm` built and checked on the first call's
    addresses: compiled kernel, grid, cluster, error word), the ``cuda.core.LaunchConfig``, the
    dynamic shared-memory opt-in, and the launch arguments that never change. :meth:`repoint`
    finds the tensor maps of new addresses; :meth:`launch` is one ``cuda.core.launch``."""

    def __init__(self, key: PlanKey, ptrs: tuple[int, int, int]):
        from ..warp_specialization.launch import c_store_box
        from .operands import Pitched, _tile_map
        from .splitk import edge_gemm
        self.key = key
        m, n, k = key.m, key.n, key.k
        dt, odt = np_dtype(key.dtype), np_dtype(key.out_dtype)
        self.config = cfg = choose_config(m, n, k, key.dtype, key.b_major, key.out_dtype,
                                          c_rows_aligned=key.c_pitch % I.ALIGN == 0)
        b_rows, b_cols = (n, k) if key.b_major == "K" else (k, n)
        shapes = ((m, k, key.a_pitch, dt), (b_rows, b_cols, key.b_pitch, dt),
                  (m, n, key.c_pitch, odt))

        def pitched(i, ptr):
            rows, cols, pitch, d = shapes[i]
            span = (rows - 1) * pitch + cols * d.itemsize
            return Pitched(_Foreign(ptr, rows, pitch // d.itemsize, d, span), rows, cols)
        # C goes through a tensor map only with the TMA-store epilogue (16-bit C): an fp32 C is
        # stored by the threads, and its 64×64 chunk would not fit a 128-byte swizzle row
        tiles = (cfg.a_box, cfg.b_load_box, c_store_box(cfg) if cfg.tma_store else None)
        self._encode = [lambda p, i=i: _tile_map(pitched(i, p), tiles[i]) for i in range(3)]
        self._views = [_Address(r, c, p, d.itemsize) for r, c, p, d in shapes]
        pa, pb, pc = ptrs
        self.gemm = g = edge_gemm(cfg, pitched(0, pa), pitched(1, pb), pitched(2, pc))
        # split-K: the GEMM writes the plan's workspace (ldc = N), the reduction writes C
        self._split = cfg.split_k > 1
        self.maps = [{pa: g.ta}, {pb: g.tb}, {pc: g.tc} if cfg.tma_store else {}]
        self.kernel = g.ck.kernel()
        if cfg.shmem_bytes + g.ck.resources.shared_bytes > runtime.STATIC_SMEM_LIMIT:
            runtime._set_max_dynamic_smem(self.kernel, int(cfg.shmem_bytes))
        self.launch_config = _launch_config(**runtime.launch_config_kwargs(
            g.grid, cfg.threads, cfg.shmem_bytes, g.cluster))
        self._raw = _raw_launcher(self.kernel, g.grid, cfg.threads, cfg.shmem_bytes, cfg.cluster)
        self._params: dict = {}             # address triple -> packed kernel parameters
        i32, u64 = np.int32, np.uint64
        self._static = (i32(g.m), i32(g.n), i32(g.k), u64(g.desc_a0), u64(g.desc_b0),
                        u64(g.err.ptr), u64(0), u64(0), i32(g.ldc))
        if self._split and g.fixup:         # the in-kernel sum: workspace and counters
            self._static += (u64(g.workspace.ptr), u64(g.flags.ptr))
        self._last = None
        self.repoint(pa, pb, pc)

    def _map(self, i: int, ptr: int):
        maps = self.maps[i]
        d = maps.get(ptr)
        if d is None:
            if len(maps) < MAPS_PER_OPERAND:
                d = self._encode[i](ptr)
            else:
                d = maps.pop(next(iter(maps)))
                d.replace_address(self._views[i].at(ptr))
                self._params.clear()        # packed parameters may hold the old map
            maps[ptr] = d
        return d

    def repoint(self, pa: int, pb: int, pc: int) -> None:
        """The launch arguments for these addresses (nothing to do when they are the last
        call's): each operand's tensor map for its address, C's pointer."""
        if self._last == (pa, pb, pc):
            return
        ta, tb = self._map(0, pa), self._map(1, pb)
        tc = self._map(2, pc) if self.config.tma_store else ta   # unused without the TMA store
        into_ws = self._split and not self.gemm.fixup             # partials only: C by the sum
        self.args = (ta, tb, tc, np.uint64(self.gemm.workspace.ptr if into_ws else pc)) + \
            self._static
        if into_ws:
            self._reduce_args = self.gemm.reduce_args(np.uint64(pc))
        self._last = triple = (pa, pb, pc)
        if self._raw is not None:
            ph = self._params.get(triple)
            if ph is None:
                ph = self._params[triple] = (self._raw.pack(list(self.args)), self.args)
            self._packed = ph[0]

    def launch(self, handle: int | None) -> None:
        """One launch on the stream of CUstream ``handle`` (None: asynctc's own stream)."""
        if handle is None:
            handle = _default_handle()
        if self._raw is not None:
            self._raw(handle, self._packed)
        else:
            _cuda_launch()(_stream(handle), self.launch_config, self.kernel, *self.args)
        if self._split and not self.gemm.fixup:     # the fixed-order sum of the partials into C
            from .splitk import REDUCE_THREADS
            runtime.launch(self.gemm.reduce_ck, self.gemm.reduce_grid, REDUCE_THREADS,
                           *self._reduce_args, stream=_stream(handle))

    def check_error(self) -> None:
        self.gemm.check_error()


@functools.lru_cache(maxsize=1)
def _cuda_launch():
    from cuda.core import launch
    return launch


def _launch_config(**kw):
    from cuda.core import LaunchConfig
    return LaunchConfig(**kw)


def _raw_launcher(kernel, grid: int, threads: int, shmem: int, cluster: int):
    """A launch through the driver with the parameters packed once per address triple:
    ``run(handle, packed)`` is one ``cuLaunchKernelEx`` (cluster dimension as a launch
    attribute, one ``CUlaunchConfig`` per stream); ``run.pack(args)`` packs the arguments as
    ``cuda.core.launch`` would (its ``ParamHolder``). None where those are not importable (then
    ``cuda.core.launch`` is called per call)."""
    try:
        from cuda.bindings import driver as dr
        from cuda.core._kernel_arg_handler import ParamHolder
    except ImportError:
        return None
    f, ok, configs = dr.CUfunction(int(kernel.handle)), dr.CUresult.CUDA_SUCCESS, {}

    def config(handle: int):
        cf = dr.CUlaunchConfig()
        cf.gridDimX, cf.gridDimY, cf.gridDimZ = grid, 1, 1
        cf.blockDimX, cf.blockDimY, cf.blockDimZ = threads, 1, 1
        cf.sharedMemBytes, cf.hStream = int(shmem), handle
        if cluster > 1:
            at = dr.CUlaunchAttribute()
            at.id = dr.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            at.value.clusterDim.x = cluster
            dim = at.value.clusterDim           # a view of the attribute's union
            dim.y = dim.z = 1
            cf.attrs, cf.numAttrs = [at], 1
        configs[handle] = cf
        return cf

    def run(handle: int, packed) -> None:
        (err,) = dr.cuLaunchKernelEx(configs.get(handle) or config(handle), f, packed.ptr, 0)
        if err != ok:
            raise RuntimeError(f"cuLaunchKernelEx: {err.name}")
    run.pack = ParamHolder
    return run


_plans: dict[PlanKey, LaunchPlan] = {}


def launch_plan(key: PlanKey, ptrs) -> LaunchPlan:
    """The cached :class:`LaunchPlan` of ``key`` (built on first use with ``ptrs``)."""
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = LaunchPlan(key, tuple(ptrs))
    return plan


def plan_label(m: int, n: int, k: int, dtype: str, b_storage: str) -> str | None:
    """The configuration label of the cached plan for an M×N×K ``dtype`` problem whose B is
    stored ``b_storage`` ("KxN": MN-major, "NxK": K-major); None if no such call was made."""
    major = "MN" if b_storage == "KxN" else "K"
    for key, plan in _plans.items():
        if (key.m, key.n, key.k, key.dtype, key.b_major) == (m, n, k, dtype, major):
            return plan.config.label()
    return None


def check_errors() -> None:
    """Wait for asynctc's launches and raise :class:`RuntimeError` if any cached plan's kernel
    reported a timed-out mbarrier wait (the bounded waits end a hang with an error word)."""
    if _plans:
        runtime.device().sync()
    for plan in list(_plans.values()):
        plan.check_error()


_streams: dict[int, object] = {}


def _stream(handle):
    """A cuda.core Stream for a CUstream handle (cached: wrapping is not free)."""
    if handle is None:
        return runtime.default_stream()
    s = _streams.get(handle)
    if s is None:
        from cuda.core import Stream
        s = _streams[handle] = Stream.from_handle(handle)
    return s


def _pointer_device(ptr: int) -> int:
    from cuda.bindings import driver
    err, dev = driver.cuPointerGetAttribute(
        driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
    if err != driver.CUresult.CUDA_SUCCESS:
        _fail("address", hex(ptr), f"not device memory the driver knows ({err.name})")
    return int(dev)


def _default_handle() -> int:
    return int(runtime.default_stream().handle)


@functools.lru_cache(maxsize=None)
def _device_id() -> int:
    return int(runtime.device().device_id)


class _Proven(NamedTuple):
    """What a first call proved about a layout of torch tensors: the plan's key, the bytes each
    operand spans (for the overlap check of later addresses), C's shape and torch dtype when
    matmul allocates it, and the GPU."""

    key: PlanKey
    spans: tuple[int, int, int]
    result_dtype: object
    device: int


#: torch layouts (shapes, strides, dtypes, devices, b_layout, out_dtype) already validated.
_torch_layouts: dict[tuple, _Proven] = {}


def is_torch(x) -> bool:
    return type(x).__module__ == "torch" and hasattr(x, "data_ptr")


def matmul_torch(a, b, out=None, *, b_layout: str = "KxN", out_dtype=None, stream=None):
    """:func:`matmul_device` for torch tensors, with a first call's checks remembered per layout
    (:class:`_Proven`): a later call with the same shapes, strides, dtypes and GPU checks only
    its addresses (non-null, 16-byte aligned, ``out`` apart from ``a`` and ``b``) and launches.
    Anything unusual goes through :func:`matmul_device`, which says what is wrong."""
    lkey = (b_layout, out_dtype, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(),
            b.dtype, b.device)
    if out is not None:
        lkey += (out.shape, out.stride(), out.dtype, out.device)
    proven = _torch_layouts.get(lkey)
    pa, pb = a.data_ptr(), b.data_ptr()
    if proven is None or not pa or not pb or (pa | pb) & 15:
        return matmul_device(a, b, out, b_layout=b_layout, out_dtype=out_dtype, stream=stream,
                             _layout_key=lkey)
    if out is None:
        key = proven.key
        out = a.new_empty((key.m, key.n), dtype=proven.result_dtype)
        pc = out.data_ptr()
    else:
        pc = out.data_ptr()
        sa, sb, sc = proven.spans
        if not pc or pc & 15 or (pc < pa + sa and pa < pc + sc) or (pc < pb + sb and pb < pc + sc):
            return matmul_device(a, b, out, b_layout=b_layout, out_dtype=out_dtype, stream=stream)
    handle = _torch_stream(proven.device) if stream is None else I.stream_handle(stream)
    plan = _plans[proven.key]
    plan.repoint(pa, pb, pc)
    plan.launch(handle)
    return out


def _torch_stream(device: int) -> int:
    """torch's current stream on ``device``: its raw handle where torch exposes it (0.1 µs
    against several for ``torch.cuda.current_stream(device).cuda_stream``)."""
    raw = getattr(sys.modules["torch"]._C, "_cuda_getCurrentRawStream", None)
    return int(raw(device)) if raw is not None else \
        int(sys.modules["torch"].cuda.current_stream(device).cuda_stream)


def matmul_device(a, b, out=None, *, b_layout: str = "KxN", out_dtype=None, stream=None,
                  _layout_key=None):
    """:func:`asynctc.matmul` for device operands of other libraries (see its docstring): returns
    ``out``, or a new C of the caller's kind (torch in → torch out)."""
    from ..core.memory import DeviceArray
    b_major = b_major_of(b_layout)
    allocated = out is None
    fields = (("a", a), ("b", b)) + ((("out", out),) if out is not None else ())
    for f, x in fields:
        if isinstance(x, np.ndarray):
            _fail(f, "numpy array", "a host array cannot be mixed with device operands: put it on "
                                    "the GPU too (torch.from_numpy(x).cuda(), cupy.asarray(x))")
        if not (I.is_foreign(x) or isinstance(x, DeviceArray)):
            I.not_an_array(f, x)
    dl = [f for f, x in fields if I.is_dlpack_only(x)]
    ops = [(f, I.describe(x, f)) for f, x in fields if f not in dl]
    handle = None
    if dl:                      # DLPack: the producer orders its work before our stream
        handle = I.resolve_stream(ops, stream)
        handle = _default_handle() if handle is None else handle
        ops += [(f, I.describe(x, f, handle)) for f, x in fields if f in dl]
        ops.sort(key=lambda fo: ("a", "b", "out").index(fo[0]))
    opd = dict(ops)
    oa, ob = opd["a"], opd["b"]
    if out_dtype is not None:
        out_dtype = np.dtype(out_dtype).name if not isinstance(out_dtype, str) else out_dtype
        out_dtype = str(out_dtype).removeprefix("torch.")
    oc = opd.get("out")
    m, n, k, out_dtype = operand_rules(oa.dtype, ob.dtype, oa.shape, ob.shape, b_layout, out_dtype,
                                       None if oc is None else (oc.dtype, oc.shape, oc.readonly))
    padded = False
    for f, op, tr in (("a", oa, False), ("b", ob, True)):
        # a contiguous operand whose rows are not 16-byte multiples (K = 4095 in fp16): a padded
        # copy on the library's current stream, when matmul launches there too (no stream=)
        if op.kind in ("torch", "cupy") and stream is None and I.row_pitch_only(op, f, tr):
            opd[f] = I.describe(I.padded_copy(op, f), f)
            ops = [(g, opd[g] if g == f else o) for g, o in ops]
            padded = True
    oa, ob = opd["a"], opd["b"]
    ma = I.as_matrix(oa, "a", may_transpose=False)
    mb = I.as_matrix(ob, "b", may_transpose=True)
    if mb.transposed:                       # a .T view: the storage is the other layout
        b_major = "K" if b_major == "MN" else "MN"
    mc = None
    if out is not None:
        mc = I.as_matrix(opd["out"], "out", may_transpose=False, tma_rows=False)
        I.check_overlap(mc, opd["out"].itemsize, (("a", ma), ("b", mb)), oa.itemsize)
    dev = _device_id()
    I.check_devices(ops, dev, _pointer_device)
    if not dl:
        handle = I.resolve_stream(ops, stream)
    s = _stream(handle)
    if out is None:
        kind = I.result_kind(ops)
        out = I.new_result(kind, m, n, out_dtype, ops, s, zero=(k == 0))
        if k == 0 or m == 0 or n == 0:
            return out
        mc = I.as_matrix(I.describe(out, "out"), "out", may_transpose=False,
                         tma_rows=False)
    elif m == 0 or n == 0:
        return out
    elif k == 0:
        _zero(mc, np.dtype(out_dtype).itemsize, s)
        return out
    key = PlanKey(m, n, k, oa.dtype, out_dtype, b_major, ma.pitch, mb.pitch, mc.pitch, dev)
    plan = launch_plan(key, (ma.ptr, mb.ptr, mc.ptr))
    plan.repoint(ma.ptr, mb.ptr, mc.ptr)
    plan.launch(handle)
    if _layout_key is not None and not padded and all(op.kind == "torch" for _f, op in ops):
        spans = tuple(x.span(z)[1] - x.ptr for x, z in ((ma, oa.itemsize), (mb, ob.itemsize),
                                                        (mc, np.dtype(np_dtype(out_dtype)).itemsize)))
        _torch_layouts[_layout_key] = _Proven(
            key, spans, getattr(sys.modules["torch"], out_dtype) if allocated else None, dev)
    return out


def _zero(mc, size: int, stream) -> None:
    from cuda.bindings import driver
    (err,) = driver.cuMemsetD2D8Async(mc.ptr, mc.pitch, 0, mc.cols * size, mc.rows,
                                      int(stream.handle))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemsetD2D8Async: {err}")
