"""asynctc.matmul on torch tensors beside torch.matmul: host µs per call, end to end, kernel time.

Run from the repository root on an sm_90 machine with torch (CUDA) installed (about 2-4 minutes on
an H200, most of it compiling):

    python tools/gpu_matmul_host.py --out $OUT            # checks + timings; details under $OUT
    python tools/gpu_matmul_host.py --out $OUT --record   # ... and write data/<gpu>/matmul_host.json
    python tools/gpu_matmul_host.py --quick               # four shapes, fewer calls
    python tools/gpu_matmul_host.py --fake-gpu            # no GPU: the Python-side cost of one
                                                          # call, every GPU call faked

The suite is asynctc.gemm.host_suite ("matmul_host"): every shape of HOST_SHAPES (cubes
256-8192, thin M 64-256, decode M 1-16 with N, K 4096-8192, chapter 06's non-square shapes,
unaligned shapes) × fp16/bf16 × B stored K×N or N×K (``a @ w.T``) checked against float64 on the
GPU (every element, |A|·|B| bound, poisoned outputs), a CUDA-graph capture replayed and checked,
then host µs per call (behind a delay kernel), back-to-back wall time and kernel time (CUDA
events behind a delay kernel), ours and torch.matmul alternating. ``--fake-gpu`` measures only
what this repository's Python adds per call (tensor description, checks, plan lookup, argument
tuple), with the tensor maps, the launch and torch faked.
"""
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.gemm import host_suite as H  # noqa: E402


class _Dtype:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return f"torch.{self.name}"


class _Device:
    type, index = "cuda", 0


_CUDA0 = _Device()


class _FakeTensor:
    """The attributes asynctc reads of a torch tensor, in fake device memory."""
    _next = 0x7F00_0000_0000

    def __init__(self, shape, dtype, strides=None):
        self.shape, self.dtype = tuple(shape), dtype
        self._strides = strides or (shape[1], 1)
        self._ptr = _FakeTensor._next
        _FakeTensor._next += -(-shape[0] * shape[1] * dtype.size // 4096) * 4096 + 4096
        self.device = _CUDA0

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides

    def element_size(self):
        return self.dtype.size

    def new_empty(self, shape, dtype):
        return _FakeTensor(shape, dtype)


_FakeTensor.__module__ = "torch"


def fake_gpu_host_cost(calls: int = 20000, shape=(4096, 4096, 4096), say=print) -> dict:
    """µs of Python per :func:`asynctc.matmul` call on torch-like tensors with every GPU call
    faked (tensor maps, launch configuration, launch, torch's allocator and stream): the host
    cost this repository adds, measured on any machine. Returns {"result_us", "out_us",
    "alternating_us", "plans"}."""
    from asynctc.core import runtime
    from asynctc.gemm import fastpath as F, operands as O
    import asynctc

    class Map:
        def replace_address(self, view):
            pass

    class Gemm:
        def __init__(self, cfg, a, b, out, stream=None):
            self.cfg, self.m, self.n, self.k = cfg, a.rows, out.cols, a.cols
            self.ta, self.tb, self.tc = Map(), Map(), Map()
            self.ck = types.SimpleNamespace(kernel=lambda: "kernel",
                                            resources=types.SimpleNamespace(shared_bytes=0))
            self.grid, self.cluster, self.ldc = 132, (cfg.cluster if cfg.cluster > 1 else None), \
                out.pitch
            self.desc_a0 = self.desc_b0 = 0
            self.err = types.SimpleNamespace(ptr=0x1000)

    f16 = _Dtype("float16", 2)
    torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(current_stream=lambda dev: types.SimpleNamespace(cuda_stream=7)),
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: 7),
        empty=lambda shape, dtype, device: _FakeTensor(shape, dtype), float16=f16,
        float32=_Dtype("float32", 4), bfloat16=_Dtype("bfloat16", 2))
    saved = {}

    def patch(obj, name, value):
        saved[(obj, name)] = getattr(obj, name)
        setattr(obj, name, value)
    old_torch = sys.modules.get("torch")
    sys.modules["torch"] = torch
    try:
        patch(O, "EdgeGemm", Gemm)
        patch(O, "_tile_map", lambda x, tile: Map())
        patch(F, "_launch_config", lambda **kw: kw)
        patch(F, "_cuda_launch", lambda: (lambda *a: None))

        def raw_launcher(*a):
            def run(handle, packed):
                return None
            run.pack = lambda args: types.SimpleNamespace(ptr=0)
            return run
        patch(F, "_raw_launcher", raw_launcher)
        patch(F, "_device_id", lambda: 0)
        patch(F, "_stream", lambda h: h)
        patch(F, "_plans", {})
        patch(F, "_torch_layouts", {})
        patch(runtime, "check_launch", lambda *a, **k: None)
        patch(runtime, "device_info", lambda: None)
        patch(runtime, "_set_max_dynamic_smem", lambda kernel, nbytes: None)
        m, n, k = shape
        a, b = _FakeTensor((m, k), f16), _FakeTensor((k, n), f16)
        out = _FakeTensor((m, n), f16)
        outs = [_FakeTensor((m, n), f16) for _ in range(2)]

        def per_call(fn, n_calls):
            fn()
            t0 = time.perf_counter()
            for _ in range(n_calls):
                fn()
            return (time.perf_counter() - t0) / n_calls * 1e6
        res = {"result_us": per_call(lambda: asynctc.matmul(a, b), calls),
               "out_us": per_call(lambda: asynctc.matmul(a, b, out), calls),
               "alternating_us": per_call(lambda: [asynctc.matmul(a, b, o) for o in outs],
                                          calls // 2) / 2,
               "plans": len(F._plans)}
    finally:
        for (obj, name), value in saved.items():
            setattr(obj, name, value)
        if old_torch is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = old_torch
    say(f"fake GPU, {m}x{n}x{k} fp16 torch-like tensors, {calls} calls: "
        f"{res['result_us']:.1f} us per c = matmul(a, b), {res['out_us']:.1f} us with out=, "
        f"{res['alternating_us']:.1f} us alternating two outs; {res['plans']} plan(s) built")
    return res


def main() -> int:
    ap = parser(__doc__, "out_matmul_host", "matmul_host", "four shapes, fewer calls")
    ap.add_argument("--calls", type=int, default=H.CALLS, help="calls per timed sample")
    ap.add_argument("--fake-gpu", action="store_true",
                    help="no GPU: the Python-side cost of one call, every GPU call faked")
    args = ap.parse_args()
    if args.fake_gpu:
        fake_gpu_host_cost()
        return 0
    started = start(args.out)
    if started is None:
        return 2
    out_dir, say = started
    kw = dict(progress=say, calls=args.calls)
    if args.quick:
        kw.update(shapes=H.QUICK_SHAPES, calls=min(args.calls, 20), rounds=2)
    return record_suite("matmul_host", lambda: H.measure_matmul_host(**kw),
                        H.summarize_matmul_host, out_dir, say,
                        save=args.record and not args.quick)


if __name__ == "__main__":
    sys.exit(main())
