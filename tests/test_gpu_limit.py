"""tools/gpu_ch06_limit.py (chapter 06's limit under Nsight Compute), proven on the CPU: it stops
with exit 2 and one line without a live sm_90a GPU, compiles the configurations it will time,
attributes ncu's launches to ours / cuBLAS per size, and prints its summary from a record."""
import subprocess
import sys
import types
from pathlib import Path

import pytest

from asynctc import warp_specialization as W
from asynctc.core import runtime

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gpu_ch06_limit.py"


def _load() -> types.ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        mod = types.ModuleType("_tool_gpu_ch06_limit")
        mod.__file__ = str(SCRIPT)
        exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), mod.__dict__)
        return mod
    finally:
        sys.path.remove(str(SCRIPT.parent))


def test_exits_2_without_a_gpu(tmp_path):
    if runtime.runs_live("sm_90a"):
        pytest.skip("a live sm_90a GPU is here: the script would run")
    p = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout.strip().startswith("no live sm_90a GPU")


def test_configs_are_rung_7_with_the_raster_width():
    L = _load()
    base = W.RUNG_BY_NAME["tma_store"].make("float16")
    assert L.top(8) == base                      # the ladder's top rung is group_m 8
    for g in L.GROUPS:
        cfg = L.top(g)
        assert cfg.defines["GROUP_M"] == g
        assert cfg.replace(group_m=8) == base    # nothing else differs
    assert 8 in L.GROUPS


def test_ncu_launches_are_attributed_per_size():
    L = _load()
    ms = ["gpu__time_duration.sum"]
    rows = [{"Kernel Name": "fill_kernel", ms[0]: 1.0},                     # before ours: dropped
            {"Kernel Name": "gemm_warp_specialized", ms[0]: 10.0},
            {"Kernel Name": "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT", ms[0]: 9.0},
            {"Kernel Name": "gemm_warp_specialized", ms[0]: 80.0},
            {"Kernel Name": "sm90_xmma_gemm_f16f16", ms[0]: 70.0},
            {"Kernel Name": "splitKreduce_kernel", ms[0]: 1.0}]
    k = L.attribute(rows, ms)
    assert [(x["size"], x["who"]) for x in k] == [
        (L.SIZES[0], "ours"), (L.SIZES[0], "cuBLAS"), (L.SIZES[1], "ours"), (L.SIZES[1], "cuBLAS"),
        (L.SIZES[1], "cuBLAS")]
    assert k[1]["kernel"].startswith("nvjet") and k[2][ms[0]] == 80.0 and k[3]["kernel"].startswith("sm90")


def test_summary_from_a_record():
    L = _load()
    ncu = {"available": True, "kernels": L.attribute(
        [{"Kernel Name": "gemm_warp_specialized", "gpu__time_duration.sum": 180000.0,
          "launch__cluster_dim_x": 2.0, "launch__cluster_dim_y": 1.0},
         {"Kernel Name": "nvjet_x", "gpu__time_duration.sum": 175000.0}], L.METRICS)}
    res = {"ncu": ncu, "size": 4096, "dtype": "float16", "rows": [
        {"kernel": "cuBLAS", "when": "first", "tflops": 760.0, "sm_mhz": 1650.0},
        {"kernel": "ours", "group_m": 8, "tflops": 745.0, "sm_mhz": 1640.0, "of_cublas": 0.98},
        {"kernel": "cuBLAS", "when": "last", "tflops": 761.0, "sm_mhz": 1650.0}]}
    rec = types.SimpleNamespace(results=res, label=lambda: "NVIDIA H200 · test")
    text = L.summarize(rec)
    assert "nvjet_x" in text and "180.0" in text and "2x1" in text
    assert "group_m=8" in text and "0.980 of cuBLAS" in text
    rec.results = {**res, "ncu": {"available": False, "why": "--no-ncu"}}
    assert "ncu: not used (--no-ncu)" in L.summarize(rec)


def test_compiles_for_sm90a():
    L = _load()
    ck = W.compile_ws(L.top(16))
    assert ck.resources.registers > 0
