"""Chapter 00-01 kernels on the GPU (marker gpu: skipped with the reason elsewhere)."""
import numpy as np
import pytest

from asynctc import gemm
from asynctc.memory import DeviceArray

pytestmark = pytest.mark.gpu


def test_device_array_roundtrip_and_poison(rng):
    x = rng.standard_normal((123, 77)).astype(np.float32)
    d = DeviceArray.from_host(x)
    assert np.array_equal(d.to_host(), x)
    d.poison()
    assert np.isnan(d.to_host()).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("tile", gemm.TILES, ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(128, 256, 64), (256, 512, 192), (384, 768, 320), (1024, 512, 2048)])
def test_mma_sync_gemm_correct(rng, dtype, tile, shape):
    try:
        gemm.check_shapes(*shape, tile)
    except ValueError:
        pytest.skip(f"shape {shape} is not a whole number of {tile.name} tiles")
    c = gemm.verify_mma_sync(*shape, dtype=dtype, tile=tile, seed=int(rng.integers(1 << 31)))
    assert c.passed, c


def test_mma_sync_gemm_fp32_output(rng):
    c = gemm.verify_mma_sync(256, 256, 128, "float16", out_f32=True, seed=int(rng.integers(1 << 31)))
    assert c.passed and c.rel_err < 1e-5, c


def test_every_element_written(rng):
    """A kernel that skipped a tile would leave NaN poison; check the full output explicitly."""
    a, b = gemm.random_operands(256, 384, 128, "float16", int(rng.integers(1 << 31)))
    out = gemm.mma_sync_gemm(a, b).to_host()
    assert np.isfinite(out.astype(np.float32)).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_sync_peak_kernel_correct(dtype):
    p = gemm.MmaSyncPeak(dtype, blocks=8, warps=4)
    c = p.check()
    assert c.passed, c


def test_simt_on_gpu(rng):
    from asynctc import simt
    assert not simt.simulated()
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((200, 170), dtype=np.float32)
    c = simt.simt_gemm(a, b)
    ref = a.astype(np.float64) @ b
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5


def test_too_much_shared_memory_is_refused_before_launch():
    from asynctc import runtime
    ck = gemm.compile_mma_sync("float16")
    with pytest.raises(runtime.LaunchConfigError, match="opt-in shared memory"):
        runtime.check_launch(1, 128, 300 * 1024, ck)
