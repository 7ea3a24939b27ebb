"""Runtime: compilation to cubin for both course architectures, errors, launch checks, modes."""
import subprocess
import sys

import pytest

from asynctc.core import runtime
from asynctc.core.runtime import CompileError, LaunchConfigError, compile_kernel


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_probe_compiles_to_cubin(arch):
    ck = compile_kernel("probe.cu", "probe", arch)
    assert ck.cubin[:4] == b"\x7fELF"          # cubin is an ELF image, not PTX text
    assert ck.arch == arch
    assert ".version" not in ck.cubin[:200].decode(errors="ignore")


def test_unknown_arch_rejected():
    with pytest.raises(ValueError, match=r"arch='compute_90'.*real architectures only"):
        compile_kernel("probe.cu", "probe", "compute_90")


def test_missing_file_and_kernel():
    with pytest.raises(ValueError, match="no such kernel file"):
        compile_kernel("nope.cu", "nope")
    with pytest.raises(CompileError, match="no kernel named 'nope'"):
        compile_kernel("probe.cu", "nope")


def test_compile_error_shows_log_and_kernel(tmp_path, monkeypatch):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void bad(float* x) { x[0] = undefined_symbol; }\n')
    monkeypatch.setattr(runtime, "KERNEL_DIR", tmp_path)
    with pytest.raises(CompileError) as e:
        compile_kernel("bad.cu", "bad", "sm_90a")
    msg = str(e.value)
    assert "bad.cu" in msg and "kernel bad" in msg and "undefined_symbol" in msg


def test_defines_change_the_cubin_and_are_validated():
    a = compile_kernel("mma_sync.cu", "gemm_mma_sync", defines={"DT": 0})
    b = compile_kernel("mma_sync.cu", "gemm_mma_sync", defines={"DT": 1})
    assert a.cubin != b.cubin
    with pytest.raises(ValueError, match="not a C identifier"):
        compile_kernel("probe.cu", "probe", defines={"1BAD": 1})


def test_ptxas_warnings_surface():
    from asynctc.mma_sync import MmaSyncTile, compile_mma_sync
    # A 128x128x64 tile with 64x32 warp tiles squeezed to 2 CTAs/SM (<= 128 registers) spills.
    with pytest.warns(UserWarning, match="spill"):
        runtime._memo.clear()
        compile_mma_sync("float16", MmaSyncTile(128, 128, 64, 64, 32, min_blocks=2))


def test_resources_parsed():
    from asynctc.mma_sync import compile_mma_sync
    r = compile_mma_sync("float16").resources
    assert 0 < r.registers <= 255 and r.spill_stores == 0


@pytest.mark.parametrize("grid,block,smem,msg", [
    (1, 1025, 0, "1025 threads per block"),
    ((1, 70000), 32, 0, "grid.y"),
    (1, 32, 300 * 1024, "exceeds the device's opt-in shared memory"),
    (0, 32, 0, "positive integers"),
    (1, 32, -1, "must be ≥ 0"),
])
def test_launch_config_rules(grid, block, smem, msg):
    with pytest.raises(LaunchConfigError, match=msg):
        runtime.check_launch(grid, block, smem)


def test_mode_override(monkeypatch):
    monkeypatch.setenv("ASYNCTC_MODE", "replay")
    assert runtime.mode() == "replay"
    assert not runtime.runs_live("sm_90a")
    assert "ASYNCTC_MODE=replay" in runtime.why_not_live("sm_90a")
    monkeypatch.setenv("ASYNCTC_MODE", "bogus")
    with pytest.raises(ValueError, match="ASYNCTC_MODE='bogus'"):
        runtime.mode()


def test_no_driver_call_without_libcuda():
    """On a machine without libcuda, detection must not start the probe (no driver call at all)."""
    if runtime._driver_library_loadable():
        pytest.skip("this machine has libcuda")
    code = ("import asynctc.core.runtime as r, subprocess\n"
            "calls=[]\n"
            "orig=subprocess.run\n"
            "subprocess.run=lambda *a, **k: calls.append(a) or orig(*a, **k)\n"
            "assert r.device_info() is None and r.mode() == 'replay'\n"
            "assert not calls, calls\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_doctor_runs():
    out = subprocess.run([sys.executable, "-m", "asynctc", "doctor"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "sm_90a" in out.stdout and "sm_100a" in out.stdout and "mode" in out.stdout
