"""asynctc.matmul on other libraries' device arrays: the protocols read on the CPU through fake
objects (a torch-like tensor, a CUDA Array Interface, a DLPack exporter), every refusal before
anything reaches the GPU, the plan cache and the stream chosen; on the GPU (marker ``gpu``) torch
tensors in and out against float64, transposed views, the caller's stream, and a CUDA-graph
capture."""
import sys
import types

import numpy as np
import pytest

import asynctc
from asynctc import gemm as G
from asynctc.gemm import fastpath as F
from asynctc.gemm import interop as I
from asynctc.warp_specialization import WarpSpecializationError

_next_ptr = [0x7F00_0000_0000]


def _alloc(nbytes):
    p = _next_ptr[0]
    _next_ptr[0] += -(-max(nbytes, 1) // 4096) * 4096 + 4096
    return p


class _Dtype:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return f"torch.{self.name}"


class _Device:
    def __init__(self, kind="cuda", index=0):
        self.type, self.index = kind, index

    def __str__(self):
        return f"{self.type}:{self.index}" if self.type == "cuda" else self.type


_DT = {name: _Dtype(name, 4 if name == "float32" else 2)
       for name in ("float16", "bfloat16", "float32")}
_CUDA0 = _Device()


class FakeTensor:
    """What asynctc reads of a torch tensor: data_ptr(), shape, stride(), element_size(), dtype,
    device (module name "torch")."""

    def __init__(self, shape, dtype="float16", strides=None, ptr=None, device=None):
        self._size = 4 if dtype == "float32" else 2
        self.shape = tuple(shape)
        self._strides = strides or (shape[1], 1)
        self.dtype = _DT[dtype]
        self._ptr = _alloc(shape[0] * shape[1] * self._size) if ptr is None else ptr
        self.device = device or _CUDA0

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides

    def element_size(self):
        return self._size

    def new_empty(self, shape, dtype):
        return sys.modules["torch"].empty(shape, dtype=dtype, device=self.device)

    @property
    def T(self):
        return FakeTensor(self.shape[::-1], self.dtype.name, self._strides[::-1], self._ptr,
                          self.device)

    def __getitem__(self, idx):           # a[:, c0:c1] — a view with an offset
        c0, c1 = idx[1].start or 0, self.shape[1] if idx[1].stop is None else idx[1].stop
        return FakeTensor((self.shape[0], c1 - c0), self.dtype.name, self._strides,
                          self._ptr + c0 * self._strides[1] * self._size, self.device)

    def copy_(self, src):                 # recorded: (destination, source)
        COPIES.append((self, src))
        return self


#: FakeTensor.copy_ calls of a test (cleared by the no_gpu fixture's users that read it).
COPIES: list = []


FakeTensor.__module__ = "torch"


class FakeCAI:
    def __init__(self, shape, typestr="<f2", strides=None, ptr=None, stream=None, version=3):
        size = int(typestr[-1])
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "strides": strides, "version": version,
            "data": (_alloc(shape[0] * shape[1] * size) if ptr is None else ptr, False),
            "stream": stream}
        self.device = types.SimpleNamespace(id=0)        # read only where it stands for CuPy


class FakeDLPack:
    """A DLPack exporter that says kDLCUDA (its capsule is a host array's: the layout is real)."""

    def __init__(self, host, device=(2, 0)):
        self.host, self.dev = host, device

    def __dlpack__(self, stream=None, **kw):
        self.stream_asked = stream
        return self.host.__dlpack__()

    def __dlpack_device__(self):
        return self.dev


@pytest.fixture
def fake_torch(monkeypatch):
    """torch as far as asynctc calls it: current_stream(dev).cuda_stream, empty/zeros, dtypes."""
    made = []

    def empty(shape, dtype, device):
        dev = device if isinstance(device, _Device) else _Device("cuda", int(device.split(":")[1]))
        t = FakeTensor(shape, dtype.name, device=dev)
        made.append(t)
        return t
    mod = types.SimpleNamespace(
        cuda=types.SimpleNamespace(current_stream=lambda dev: types.SimpleNamespace(
            cuda_stream=0xABC0 + dev)),
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: 0xABC0 + dev),
        empty=empty, zeros=empty, made=made, **_DT)
    monkeypatch.setitem(sys.modules, "torch", mod)
    return mod


class FakePlan:
    built = []

    def __init__(self, key, ptrs):
        self.key, self.calls = key, []
        self.config = types.SimpleNamespace(label=lambda: "fake")
        FakePlan.built.append(key)

    def repoint(self, pa, pb, pc):
        self.ptrs = (pa, pb, pc)

    def launch(self, stream):
        self.calls.append((self.ptrs, stream))


@pytest.fixture
def no_gpu(monkeypatch):
    """The GPU side of matmul_device faked: plans record their launches."""
    FakePlan.built = []
    monkeypatch.setattr(F, "LaunchPlan", FakePlan)
    monkeypatch.setattr(F, "_plans", {})
    monkeypatch.setattr(F, "_torch_layouts", {})
    monkeypatch.setattr(F, "_device_id", lambda: 0)
    monkeypatch.setattr(F, "_stream", lambda h: ("stream", h))
    monkeypatch.setattr(F, "_default_handle", lambda: 0x5EED)
    monkeypatch.setattr(F, "_pointer_device", lambda p: 0)


def _only_plan():
    assert len(F._plans) == 1
    return next(iter(F._plans.values()))


# ---- the protocols ----------------------------------------------------------------------------------

def test_a_torch_tensor_is_read_through_its_attributes():
    t = FakeTensor((64, 128), "bfloat16")
    op = I.describe(t, "a")
    assert (op.kind, op.ptr, op.shape, op.strides, op.dtype, op.device) == \
        ("torch", t.data_ptr(), (64, 128), (256, 2), "bfloat16", 0)
    m = I.as_matrix(op, "a", may_transpose=False)
    assert (m.rows, m.cols, m.pitch, m.transposed) == (64, 128, 256, False)


def test_a_cuda_array_interface_is_read_with_its_strides_and_stream():
    x = FakeCAI((16, 40), "<f2", strides=(128, 2), stream=7)
    op = I.describe(x, "b")
    assert (op.kind, op.shape, op.strides, op.dtype, op.stream, op.device) == \
        ("cai", (16, 40), (128, 2), "float16", 7, None)
    assert I.describe(FakeCAI((3, 8)), "a").strides == (16, 2)       # strides None: C order
    assert I.describe(FakeCAI((3, 8), stream=9, version=2), "a").stream is None   # v2: no field


def test_a_dlpack_object_is_read_from_its_capsule_and_gets_our_stream():
    host = np.zeros((8, 24), np.float16)[:, :16]                    # rows of 48 bytes
    x = FakeDLPack(host)
    op = I.describe(x, "a", stream=0x5EED)
    assert (op.kind, op.ptr, op.shape, op.strides, op.dtype, op.device) == \
        ("dlpack", host.ctypes.data, (8, 16), (48, 2), "float16", 0)
    assert x.stream_asked == 0x5EED


def test_a_dlpack_object_in_host_memory_is_refused():
    with pytest.raises(WarpSpecializationError, match=r"a.__dlpack_device__\(\)=\(1, 0\): "
                                                      r"device type kDLCPU.*kDLCUDA = 2"):
        I.describe(FakeDLPack(np.zeros((2, 8), np.float16), device=(1, 0)), "a")


def test_a_torch_tensor_on_the_cpu_is_refused():
    with pytest.raises(WarpSpecializationError, match=r"a='torch tensor on cpu'.*\.cuda\(\)"):
        I.describe(FakeTensor((4, 8), device=_Device("cpu", None)), "a")


@pytest.mark.parametrize("x, field", [([[1.0, 2.0]], "a is a list"), (None, "b is a NoneType"),
                                      (3.0, "out is a float")])
def test_non_arrays_are_a_type_error_naming_the_field(x, field, no_gpu):
    args = {"a": FakeTensor((4, 8)), "b": FakeTensor((8, 8)), "out": FakeTensor((4, 8))}
    name = field.split("=")[0].split()[0]
    args[name] = x
    if name == "b" and x is None:
        with pytest.raises(TypeError, match=field):
            asynctc.matmul(args["a"], None)
        return
    with pytest.raises(TypeError, match=field):
        asynctc.matmul(args["a"], args["b"], args["out"])


# ---- strides TMA can and cannot express ------------------------------------------------------------

def test_a_transposed_b_is_read_as_the_other_layout_without_a_copy(no_gpu, fake_torch):
    a, w = FakeTensor((64, 256)), FakeTensor((512, 256))            # w: N×K, as a linear layer's
    c = asynctc.matmul(a, w.T)                                       # a @ w.T, B K×N as given
    plan = _only_plan()
    assert plan.key.b_major == "K" and plan.key.b_pitch == 512      # stored N×K, K-major
    assert plan.calls == [((a.data_ptr(), w.data_ptr(), c.data_ptr()), 0xABC0)]
    assert isinstance(c, FakeTensor) and c.shape == (64, 512) and c.dtype.name == "float16"
    asynctc.matmul(a, w, b_layout="NxK")                             # the same storage, said
    assert len(F._plans) == 1 and len(plan.calls) == 2


@pytest.mark.parametrize("make, field, rule", [
    (lambda: (FakeTensor((64, 256)).T, FakeTensor((64, 32))), r"a.strides=\(2, 512\)",
     r"stride along the last dimension must be the element size \(2 bytes\).*a.contiguous\(\)"),
    (lambda: (FakeTensor((64, 40), strides=(44, 1)), FakeTensor((40, 32))), r"a.strides=\(88, 2\)",
     r"row pitch of 88 bytes.*multiple of 16 bytes \(cuTensorMapEncodeTiled globalStrides\)"),
    (lambda: (FakeTensor((64, 64)), FakeTensor((64, 32), strides=(64, 2))), r"b.strides=\(128, 4\)",
     r"the last or the first dimension"),
    (lambda: (FakeTensor((64, 64))[:, 1:], FakeTensor((63, 32))), r"a address='0x[0-9a-f]+'",
     r"16-byte aligned base address.*2 bytes past.*contiguous"),
    (lambda: (FakeTensor((64, 64), ptr=0), FakeTensor((64, 32))), "a address='0x0'",
     "null pointer"),
    (lambda: (FakeTensor((64, 64)), FakeTensor((64, 32), ptr=0x7E00_0000_0008)),
     "b address='0x7e0000000008'", "16-byte aligned"),
])
def test_strides_and_addresses_tma_cannot_take_are_refused(make, field, rule, no_gpu, fake_torch):
    a, b = make()
    with pytest.raises(WarpSpecializationError, match=field) as e:
        asynctc.matmul(a, b)
    import re
    assert re.search(rule, str(e.value)), str(e.value)
    assert not F._plans


def test_a_contiguous_operand_with_rows_off_16_bytes_is_padded_on_the_current_stream(no_gpu, fake_torch):
    """K = 36 fp16 (72-byte rows): a contiguous A cannot be read by TMA as it is; matmul copies it
    into rows of 80 bytes (the padding never read) and runs on that, for A and for a transposed
    B alike; with an explicit stream= it refuses instead and says so."""
    COPIES.clear()
    a, w = FakeTensor((64, 36)), FakeTensor((24, 36))              # w: N×K, 72-byte rows
    asynctc.matmul(a, w.T)
    plan = _only_plan()
    assert (plan.key.a_pitch, plan.key.b_pitch, plan.key.b_major) == (80, 80, "K")
    assert [(d.shape, d.stride(), s.data_ptr() in (a.data_ptr(), w.data_ptr())) for d, s in COPIES] == \
        [((64, 36), (40, 1), True), ((24, 36), (40, 1), True)]
    (pa, pb, _pc), _stream = plan.calls[0]
    assert pa == COPIES[0][0].data_ptr() != a.data_ptr() and pb == COPIES[1][0].data_ptr()
    assert not F._torch_layouts                                     # a padded call is not proven
    with pytest.raises(WarpSpecializationError, match=r"a.strides=\(72, 2\).*padded by matmul itself "
                       r"when no stream= is given"):
        asynctc.matmul(a, w.T, stream=0xABC0)


# ---- out overlapping a or b, dtypes, devices ---------------------------------------------------------

def test_an_out_overlapping_an_input_is_refused_naming_both_byte_ranges(no_gpu):
    a = FakeTensor((64, 64))
    b = FakeTensor((64, 64))
    out = FakeTensor((64, 64), ptr=a.data_ptr() + 4096)            # the second half of a
    with pytest.raises(WarpSpecializationError, match=r"out='bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\)': "
                       r"overlaps a's bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\) by 4096 bytes") as e:
        asynctc.matmul(a, b, out)
    lo = a.data_ptr() + 4096
    assert f"[{lo:#x}, {lo + 8192:#x})" in str(e.value)
    with pytest.raises(WarpSpecializationError, match="overlaps b's bytes"):
        asynctc.matmul(a, b, b)                                      # out is b itself
    assert not F._plans


def test_a_device_array_out_overlapping_an_input_is_refused(monkeypatch):
    from asynctc.core.memory import DeviceArray

    class Buf:
        def __init__(self, p):
            self.handle = p
    a = DeviceArray((64, 64), np.float16, Buf(0x10000))
    b = DeviceArray((64, 64), np.float16, Buf(0x20000))
    out = DeviceArray((64, 64), np.float16, Buf(0x20000 + 2048))
    with pytest.raises(WarpSpecializationError, match=r"overlaps b's bytes \[0x20000, 0x22000\)"):
        asynctc.matmul(a, b, out)
    with pytest.raises(WarpSpecializationError, match="a address='0x0': a null pointer"):
        asynctc.matmul(DeviceArray((64, 64), np.float16, Buf(0)), b)


@pytest.mark.parametrize("make, field, rule", [
    (lambda: (FakeTensor((8, 16), "float32"), FakeTensor((16, 8), "float32"), None),
     "a.dtype='float32'", "one of"),
    (lambda: (FakeTensor((8, 16)), FakeTensor((16, 8), "bfloat16"), None), "b.dtype='bfloat16'",
     "must equal a.dtype 'float16'"),
    (lambda: (FakeTensor((8, 16)), FakeTensor((24, 8)), None), r"b.shape=\(24, 8\)",
     "its K is 24"),
    (lambda: (FakeTensor((8, 16)), FakeTensor((16, 8)), FakeTensor((8, 16))), r"out.shape=\(8, 16\)",
     "must be (M, N) = (8, 8)"),
    (lambda: (FakeTensor((8, 16)), FakeTensor((16, 8)), FakeTensor((8, 8), "bfloat16")),
     "out.dtype='bfloat16'", "'float32' or the input dtype"),
    (lambda: (FakeTensor((8, 16)), FakeTensor((16, 8), device=_Device("cuda", 1)), None),
     "b device='cuda:1'", "asynctc launches on cuda:0"),
    (lambda: (FakeTensor((8, 16)), np.ones((16, 8), np.float16), None), "b='numpy array'",
     "cannot be mixed with device operands"),
    (lambda: (FakeCAI((8, 16), "<f4"), FakeCAI((16, 8), "<f4"), None), "a.dtype='float32'",
     "one of"),
    (lambda: (FakeCAI((8, 16), "<V2"), FakeCAI((16, 8)), None), "a typestr='<V2'",
     "bfloat16 has no CUDA Array Interface typestr"),
])
def test_dtype_shape_and_device_mismatches_are_refused(make, field, rule, no_gpu, fake_torch):
    a, b, out = make()
    with pytest.raises(WarpSpecializationError, match=field) as e:
        asynctc.matmul(a, b, out)
    assert rule in str(e.value)
    assert not F._plans


def test_a_bare_cuda_array_interface_on_another_gpu_is_refused(no_gpu, monkeypatch):
    monkeypatch.setattr(F, "_pointer_device", lambda p: 3)
    with pytest.raises(WarpSpecializationError, match="a device='cuda:3'"):
        asynctc.matmul(FakeCAI((8, 16)), FakeCAI((16, 8)), FakeCAI((8, 8)))


# ---- plans cached, addresses re-pointed, the caller's stream ---------------------------------------

def test_plans_are_cached_by_what_determines_them_and_re_pointed_per_call(no_gpu, fake_torch):
    a, b = FakeTensor((128, 256)), FakeTensor((256, 512))
    c1 = asynctc.matmul(a, b)
    c2 = asynctc.matmul(FakeTensor((128, 256)), FakeTensor((256, 512)))     # new addresses
    plan = _only_plan()
    assert len(plan.calls) == 2 and plan.calls[0][0] != plan.calls[1][0]
    assert plan.calls[1][0][2] == c2.data_ptr() != c1.data_ptr()
    asynctc.matmul(a, b, FakeTensor((128, 512), "float32"))                # another out dtype
    asynctc.matmul(FakeTensor((128, 256), strides=(264, 1)), b)            # another row pitch
    keys = list(F._plans)
    assert len(keys) == 3
    assert {k.out_dtype for k in keys} == {"float16", "float32"}
    assert {k.a_pitch for k in keys} == {512, 528}


def test_a_proven_layout_checks_only_the_new_addresses(no_gpu, fake_torch):
    """The second call with the same shapes, strides, dtypes and GPU skips what the first proved
    (F._torch_layouts) but still refuses a bad address or an overlapping out."""
    a, b, out = FakeTensor((64, 128)), FakeTensor((128, 256)), FakeTensor((64, 256))
    asynctc.matmul(a, b, out)
    assert len(F._torch_layouts) == 1
    a2, b2, out2 = FakeTensor((64, 128)), FakeTensor((128, 256)), FakeTensor((64, 256))
    asynctc.matmul(a2, b2, out2)
    plan = _only_plan()
    assert [p for p, _s in plan.calls] == [(a.data_ptr(), b.data_ptr(), out.data_ptr()),
                                            (a2.data_ptr(), b2.data_ptr(), out2.data_ptr())]
    with pytest.raises(WarpSpecializationError, match="overlaps b's bytes"):
        asynctc.matmul(a2, b2, FakeTensor((64, 256), ptr=b2.data_ptr() + 256))
    with pytest.raises(WarpSpecializationError, match="a address='0x[0-9a-f]+8'"):
        asynctc.matmul(FakeTensor((64, 128), ptr=a.data_ptr() + 8), b2, out2)
    with pytest.raises(WarpSpecializationError, match="out address='0x0'"):
        asynctc.matmul(a2, b2, FakeTensor((64, 256), ptr=0))
    c = asynctc.matmul(a2, b2)                                  # the allocating layout: its own
    assert c.shape == (64, 256) and len(F._torch_layouts) == 2 and len(plan.calls) == 3
    asynctc.matmul(a, b)
    assert len(plan.calls) == 4 and fake_torch.made[-1].shape == (64, 256)


def test_the_launch_goes_on_the_callers_stream(no_gpu, fake_torch):
    a, b = FakeTensor((64, 64)), FakeTensor((64, 64))
    asynctc.matmul(a, b)
    asynctc.matmul(a, b, stream=0x77)                                       # an int handle
    asynctc.matmul(a, b, stream=types.SimpleNamespace(cuda_stream=0x78))   # a torch stream
    asynctc.matmul(a, b, stream=types.SimpleNamespace(__cuda_stream__=lambda: (0, 0x79)))
    asynctc.matmul(FakeCAI((64, 64), stream=0x55), FakeCAI((64, 64)), FakeCAI((64, 64)))  # CAI
    asynctc.matmul(FakeCAI((64, 64)), FakeCAI((64, 64)), FakeCAI((64, 64)))  # none: ours
    d = FakeDLPack(np.zeros((64, 64), np.float16))
    asynctc.matmul(d, FakeCAI((64, 64)), FakeCAI((64, 64)))                 # DLPack: ours, asked
    streams = [s for p in F._plans.values() for _ptrs, s in p.calls]
    assert streams == [0xABC0, 0x77, 0x78, 0x79, 0x55, None, 0x5EED]
    assert d.stream_asked == 0x5EED
    with pytest.raises(TypeError, match="stream: str is not a CUDA stream"):
        asynctc.matmul(a, b, stream="s")


def test_results_are_of_the_callers_kind(no_gpu, fake_torch, monkeypatch):
    c = asynctc.matmul(FakeTensor((8, 16), "bfloat16"), FakeTensor((16, 24), "bfloat16"),
                       out_dtype="float32")
    assert isinstance(c, FakeTensor) and c.dtype.name == "float32" and c.shape == (8, 24)
    assert fake_torch.made == [c]
    made = []
    fake_cupy = types.SimpleNamespace(empty=lambda shape, dtype: made.append((shape, dtype)) or
                                      FakeCAI(shape), cuda=types.SimpleNamespace(
                                          get_current_stream=lambda: types.SimpleNamespace(ptr=0xC0)))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    x = FakeCAI((8, 16))
    monkeypatch.setattr(I, "_module", lambda o: "cupy" if isinstance(o, FakeCAI) else
                        type(o).__module__.split(".")[0])
    asynctc.matmul(x, FakeCAI((16, 24)))
    assert made == [((8, 24), "float16")]
    assert [s for p in F._plans.values() for _q, s in p.calls][-1] == 0xC0


def test_empty_problems_launch_nothing(no_gpu, fake_torch):
    c = asynctc.matmul(FakeTensor((0, 16)), FakeTensor((16, 8)))
    assert c.shape == (0, 8)
    z = asynctc.matmul(FakeTensor((8, 0)), FakeTensor((0, 8)))             # K = 0: zeros
    assert z.shape == (8, 8)
    assert not F._plans


# ---- on the GPU: torch tensors ----------------------------------------------------------------------

def _torch_or_skip():
    return pytest.importorskip("torch")


def _check_against_float64(torch, c, a, b):
    ref = a.double() @ b.double()
    bound = (a.double().abs() @ b.double().abs()) * (2.0 ** -7 if a.dtype == torch.bfloat16
                                                      else 2.0 ** -10) * 2 + 1e-30
    worst = ((c.double() - ref).abs() / bound).max().item()
    assert worst <= 1.0, worst


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, dt, transposed", [
    (256, 512, 384, "float16", False), (129, 1000, 4095, "bfloat16", False),
    (64, 1024, 2048, "bfloat16", True), (1, 4096, 512, "float16", True)])
def test_torch_in_torch_out_against_float64(m, n, k, dt, transposed):
    torch = _torch_or_skip()
    tdt = getattr(torch, dt)
    a = torch.randn(m, k, device="cuda").to(tdt)
    b = torch.randn(k, n, device="cuda").to(tdt)
    bb = b.T.contiguous().T if transposed else b
    c = asynctc.matmul(a, bb)
    assert isinstance(c, torch.Tensor) and c.dtype == tdt and c.shape == (m, n)
    out = torch.full((m, n), float("nan"), device="cuda")
    assert asynctc.matmul(a, bb, out) is out
    torch.cuda.synchronize()
    G.check_errors()
    _check_against_float64(torch, c, a, b)
    _check_against_float64(torch, out, a, b)


@pytest.mark.gpu
def test_torch_on_a_side_stream_and_in_a_cuda_graph():
    torch = _torch_or_skip()
    a = torch.randn(512, 1024, device="cuda").half()
    b = torch.randn(1024, 768, device="cuda").half()
    out = torch.empty(512, 768, device="cuda", dtype=torch.half)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        asynctc.matmul(a, b, out)                  # the current stream is s: it goes there
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        asynctc.matmul(a, b, out)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    _check_against_float64(torch, out, a, b)


# ---- the matmul_host suite and its script, on the CPU --------------------------------------------

def test_the_host_suite_table_covers_every_shape_class_once():
    from asynctc.gemm import host_suite as H
    rows = H.table()
    shapes = [s for _c, s in rows]
    assert len(shapes) == len(set(shapes))
    classes = {c for c, _s in rows}
    assert classes == {"cube", "thin", "decode", "nonsquare", "unaligned"}
    cubes = sorted(s[0] for c, s in rows if c == "cube")
    assert cubes[0] == 256 and cubes[-1] == 8192
    assert {s[0] for c, s in rows if c == "decode"} == {1, 4, 16}
    assert all(4096 <= s[1] <= 8192 and 4096 <= s[2] <= 8192 for c, s in rows if c == "decode")
    assert any(s[1] * 2 % 16 for c, s in rows if c == "unaligned")
    jobs = H.host_jobs(rows, sm_count=132)                     # compile jobs, no GPU needed
    assert jobs and len(jobs) == len({repr(j) for j in jobs})
    assert "matmul_host" in G.SUITES and "matmul" in G.SUITES


def test_the_host_summary_reads_a_record():
    from asynctc.gemm import host_suite as H
    row = {"class": "cube", "m": 1024, "n": 1024, "k": 1024, "dtype": "float16",
           "b_storage": "KxN", "ours_host_us": 9.5, "torch_host_us": 12.0, "kernel_of_torch": 0.97,
           "e2e_of_torch": 1.02, "host_ratio": 0.79}
    rec = types.SimpleNamespace(results={
        "checks": [{"passed": True, "worst_ratio": 0.01}], "graph": {"shape": (1024,) * 3,
                                                                    "passed": True},
        "rows": [row, {**row, "class": "decode", "m": 1, "kernel_of_torch": 0.8,
                       "e2e_of_torch": 0.9}]})
    text = H.summarize_matmul_host(rec)
    assert "1 checks against float64, 1 passed" in text and "CUDA-graph capture" in text
    assert "worst cube: kernel 0.97, end to end 1.02 of torch" in text
    assert "worst decode: kernel 0.80, end to end 0.90" in text


def test_the_host_script_fakes_the_gpu_and_builds_one_plan():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "tools"))
    import gpu_matmul_host as T
    lines = []
    res = T.fake_gpu_host_cost(calls=20, shape=(256, 512, 384), say=lines.append)
    assert res["plans"] == 1 and set(res) == {"result_us", "out_us", "alternating_us", "plans"}
    assert lines and "1 plan(s) built" in lines[0]
    assert "torch" not in sys.modules or not isinstance(sys.modules["torch"], types.SimpleNamespace)
