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


@pytest.mark.parametrize("diag,entry,match", [
    (1, "diag_setmaxnreg", r"\(C7508\) Potential Performance Loss: 'setmaxnreg' ignored"),
    (2, "diag_wgmma_serial", r"wgmma.mma_async instructions are serialized"),
    (2, "diag_wgmma_serial", r"\(C7517\) wgmma.wait_group is injected"),
    (4, "diag_wgmma_divergent", r"\(C7519\) .*serialized due to .*divergent path"),
    (3, "diag_spill", r"Registers are spilled to local memory in function 'diag_spill'"),
])
@pytest.mark.parametrize("cached", [False, True])
def test_ptxas_performance_diagnostics_surface(diag, entry, match, cached, tmp_path, monkeypatch):
    """ptxas prints these at "info" level (spills as "warning"); each must become a
    PerformanceWarning, on a fresh compile (empty cubin cache) and again when the cubin comes from
    the cache."""
    import re
    import warnings
    if not cached:
        monkeypatch.setenv("ASYNCTC_CACHE", str(tmp_path))
    runtime._memo.clear()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        compile_kernel("diagnostics.cu", entry, defines={"DIAG": diag})
    perf = [str(w.message) for w in got if issubclass(w.category, runtime.PerformanceWarning)]
    assert any(re.search(match, m) for m in perf), perf


def test_clean_kernel_has_no_performance_warning():
    import warnings
    runtime._memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", runtime.PerformanceWarning)
        compile_kernel("probe.cu", "probe")
    assert runtime.performance_diagnostics(compile_kernel("probe.cu", "probe").log) == []


def test_spills_in_the_resource_report_alone_are_reported():
    log = ("ptxas info    : Function properties for k\n"
           "ptxas         .     8 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads\n")
    assert runtime.performance_diagnostics(log) == ["k: 16 bytes spill stores, 24 bytes spill loads"]


def test_resources_parsed():
    from asynctc.mma_sync import compile_mma_sync
    r = compile_mma_sync("float16").resources
    assert 0 < r.registers <= 255 and r.spill_stores == 0


@pytest.mark.parametrize("grid,block,smem,msg", [
    (1, (32, 33), 0, "1056 threads per block"),
    ((1, 70000), 32, 0, "grid.y"),
    (1, 32, 300 * 1024, "exceeds the device's opt-in shared memory"),
    (0, 32, 0, "positive integers"),
    (1, 32, -1, "must be ≥ 0"),
])
def test_launch_config_rules(grid, block, smem, msg):
    with pytest.raises(LaunchConfigError, match=msg):
        runtime.check_launch(grid, block, smem)


@pytest.mark.parametrize("grid,block,msg", [
    (1, (1, 1, 128), r"block.z = 128; the limit is 64"),
    (1, (1, 1025), r"block.y = 1025; the limit is 1024"),
    (1, (2048,), r"block.x = 2048; the limit is 1024"),
    ((1, 1, 65536), 32, r"grid.z = 65536"),
    (2**31, 32, r"grid.x = 2147483648"),
    (True, 32, r"grid=True: must be 1–3 positive integers \(bools are not dimensions\)"),
    ((4, False), 32, r"bools are not dimensions"),
    (1, True, r"block=True"),
    (1.0, 32, r"grid=1.0: must be 1–3 positive integers"),
])
def test_launch_config_limits_per_dimension(grid, block, msg):
    with pytest.raises(LaunchConfigError, match=msg):
        runtime.check_launch(grid, block, 0)


def test_launch_config_accepts_numpy_integers():
    import numpy as np
    runtime.check_launch(np.int64(132), np.int32(128), np.int64(1024))
    runtime.check_launch((np.uint32(4), 2), (np.int16(32), 4), 0, cluster=np.int64(2))
    assert runtime.launch_config_kwargs(np.int64(8), np.int32(128))["grid"] == (8, 1, 1)
    runtime.check_launch(1, (16, 1, 64), 0)          # z = 64 is the limit, allowed


@pytest.mark.parametrize("grid,cluster,msg", [
    (16, 16, r"cluster=\(16, 1, 1\): 16 blocks per cluster; the portable cluster size is at most 8"),
    ((4, 4), (4, 4), r"16 blocks per cluster"),
    (6, 4, r"grid.x = 6 is not a multiple of cluster.x = 4"),
    ((8, 3), (2, 2), r"grid.y = 3 is not a multiple of cluster.y = 2"),
    (8, 0, r"cluster=0: must be 1–3 positive integers"),
    (8, True, r"cluster=True"),
])
def test_cluster_rules(grid, cluster, msg):
    with pytest.raises(LaunchConfigError, match=msg):
        runtime.check_launch(grid, 128, 0, cluster=cluster)
    with pytest.raises(LaunchConfigError, match=msg):
        runtime.launch_config_kwargs(grid, 128, 0, cluster=cluster)


def test_cluster_launch_config_counts_clusters():
    """cuda.core 1.2's LaunchConfig takes the grid in clusters when a cluster is given."""
    kw = runtime.launch_config_kwargs((132, 2), 128, 1024, cluster=(2, 1))
    assert kw == {"grid": (66, 2, 1), "block": (128, 1, 1), "shmem_size": 1024,
                  "cluster": (2, 1, 1)}
    assert runtime.launch_config_kwargs(8, 64) == {"grid": (8, 1, 1), "block": (64, 1, 1),
                                                   "shmem_size": 0}
    from cuda.core import LaunchConfig
    assert "cluster" in LaunchConfig.__init__.__doc__ and hasattr(LaunchConfig, "cluster")
    assert "number of clusters" in LaunchConfig.__doc__


def test_no_gpu_error_message_is_not_doubled(monkeypatch):
    monkeypatch.setenv("ASYNCTC_MODE", "replay")
    runtime.device.cache_clear()
    with pytest.raises(runtime.NoGPUError) as e:
        runtime.device()
    msg = str(e.value)
    assert msg == "cannot open GPU 0: ASYNCTC_MODE=replay is set"
    monkeypatch.delenv("ASYNCTC_MODE")
    monkeypatch.setattr(runtime, "device_info", lambda: None)
    with pytest.raises(runtime.NoGPUError) as e:
        runtime.device()
    assert str(e.value) == "cannot open GPU 0: no GPU on this machine"


@pytest.mark.parametrize("source", ["/etc/hostname", "../core/runtime.py", "ptx/../../__init__.py",
                                    "../kernels/probe.cu", "", None])
def test_compile_kernel_only_reads_kernels_dir(source):
    with pytest.raises(ValueError, match=r"source=.*(relative path inside kernels/|file name under)"):
        compile_kernel(source, "probe")


@pytest.mark.parametrize("source", ["/etc/hostname", "../core/runtime.py"])
def test_show_source_only_reads_kernels_dir(source):
    from asynctc.core import notebook
    with pytest.raises(ValueError, match=r"relative path inside kernels/"):
        notebook.show_source(source)
    assert "mbarrier_init" in notebook.show_source("ptx/mbarrier.cuh").data


def test_compile_kernel_refuses_a_link_out_of_kernels(tmp_path, monkeypatch):
    outside = tmp_path / "outside.cu"
    outside.write_text('extern "C" __global__ void probe() {}\n')
    kdir = tmp_path / "kernels"
    kdir.mkdir()
    (kdir / "link.cu").symlink_to(outside)
    monkeypatch.setattr(runtime, "KERNEL_DIR", kdir)
    with pytest.raises(ValueError, match=r"source='link.cu': resolves to .*outside kernels/"):
        compile_kernel("link.cu", "probe")


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


def test_compile_ptx_is_for_reading_cached_and_checks_its_arch(tmp_path, monkeypatch):
    """PTX without a GPU (NVRTC through cuda.bindings, no driver call), written once to the cache
    and read back from it; an unknown arch or a file outside kernels/ is refused."""
    monkeypatch.setenv("ASYNCTC_CACHE", str(tmp_path))
    text = runtime.compile_ptx("wgmma.cu", "sm_90a", {"DT": 0, "N": 64, "KSTEPS": 4})
    assert ".target sm_90a" in text and "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in text
    (cached,) = (tmp_path / "ptx").glob("*.ptx")
    cached.write_text(text + "// from the cache\n")
    assert runtime.compile_ptx("wgmma.cu", "sm_90a", {"DT": 0, "N": 64, "KSTEPS": 4}).endswith("// from the cache\n")
    with pytest.raises(ValueError, match="arch"):
        runtime.compile_ptx("wgmma.cu", "compute_90")
    with pytest.raises(ValueError, match="kernels/"):
        runtime.compile_ptx("../core/runtime.py")
