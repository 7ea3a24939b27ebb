"""The numba SIMT GEMM: correct in the CUDA simulator (CPU) and, with a GPU, on the device."""
import os
import subprocess
import sys

import numpy as np
import pytest

from asynctc import simt
from asynctc.core import runtime


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


def _run(code: str, **env_extra) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)


_GEMM = ("import numpy as np\n"
         "a = np.random.default_rng().standard_normal((20, 24)).astype(np.float32) + 3\n"
         "b = np.random.default_rng().standard_normal((24, 18)).astype(np.float32) + 3\n"
         "c = simt.simt_gemm(a, b)\n"
         "ref = a.astype(np.float64) @ b.astype(np.float64)\n"
         "bound = 1e-5 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))\n"
         "assert np.all(np.abs(c - ref) <= bound)\n")


@pytest.mark.skipif(runtime._driver_library_loadable(), reason="needs a machine without libcuda")
def test_numba_cuda_imported_first_is_reported_truthfully():
    """numba.cuda imported before asynctc on a GPU-less machine is in device mode: simulated()
    says so, and the SIMT GEMM raises the one-line fix instead of a numba driver error."""
    r = _run("import numba.cuda\n"
             "from asynctc import simt\n"
             "assert simt.simulated() is False, 'simulated() lied'\n"
             "try:\n"
             "    simt.simt_gemm(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32))\n"
             "except simt.SimulatorModeError as e:\n"
             "    print('RAISED', e)\n"
             "else:\n"
             "    raise SystemExit('no error')\n".replace("np.", "__import__('numpy')."))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "RAISED" in r.stdout and "NUMBA_ENABLE_CUDASIM=1" in r.stdout
    assert "driver library" not in r.stdout + r.stderr


@pytest.mark.skipif(runtime._driver_library_loadable(), reason="needs a machine without libcuda")
@pytest.mark.parametrize("order,env", [("asynctc first", {}),
                                       ("numba first, simulator set", {"NUMBA_ENABLE_CUDASIM": "1"})])
def test_simulator_mode_whatever_the_import_order(order, env):
    head = ("from asynctc import simt\nimport numba.cuda\n" if order == "asynctc first"
            else "import numba.cuda\nfrom asynctc import simt\n")
    r = _run(head + "assert simt.simulated() is True\n" + _GEMM + "print('OK')\n", **env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-2000:]
