"""The numba SIMT GEMM: correct in the CUDA simulator (CPU) and, with a GPU, on the device."""
import numpy as np
import pytest

from asynctc import simt


@pytest.mark.parametrize("m,n,k", [(17, 33, 20), (32, 16, 48)])
def test_simt_gemm_matches_float64(rng, m, n, k):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = simt.simt_gemm(a, b)
    ref = a.astype(np.float64) @ b
    assert np.isfinite(c).all()                 # output was poisoned with NaN: every element written
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5


def test_simt_rejects_bad_inputs():
    with pytest.raises(ValueError, match="need \\(M, K\\) @ \\(K, N\\)"):
        simt.simt_gemm(np.ones((4, 5), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match="float32"):
        simt.simt_gemm(np.ones((4, 5)), np.ones((5, 4)))
