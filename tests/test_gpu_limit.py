"""The ``ws_limit`` suite (asynctc.warp_specialization.limit_suite) and its run script
tools/gpu_ch06_limit.py (chapter 06's limit under Nsight Compute), proven on the CPU: the script
stops with exit 2 and one line without a live sm_90a GPU; the suite compiles the configurations it
will time, attributes ncu's launches to ours / cuBLAS per size, and prints its summary from a
record."""
import sys
import types
from pathlib import Path


from asynctc import suites
from asynctc import warp_specialization as W
from asynctc.warp_specialization import limit_suite as LS

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


def test_the_suite_is_in_the_package_and_the_script_runs_it():
    """The measurement lives in the package (a suite, never plotting); the script is a thin run
    script around it (Nsight Compute first, then the suite's measure and summary)."""
    assert suites.SUITES["ws_limit"] == (LS.measure_limit, LS.summarize_limit, "sm_90a")
    import ast
    tree = ast.parse(Path(LS.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names} | {n.module or "" for n in ast.walk(tree)
                                     if isinstance(n, ast.ImportFrom)}
    assert not any("matplotlib" in m or m == "plots" or "figures" in m for m in imported), imported
    tool = _load()
    assert tool.LS is LS and not hasattr(tool, "measure") and not hasattr(tool, "METRICS")
    src = SCRIPT.read_text()
    assert "LS.measure_limit(" in src and "LS.summarize_limit" in src and "LS.ncu_child()" in src


def test_exits_2_without_a_gpu(tmp_path):
    from fakes import assert_script_exits_2_without_a_gpu
    assert_script_exits_2_without_a_gpu(SCRIPT, "--out", tmp_path, cwd=ROOT)


def test_configs_are_rung_7_with_the_raster_width():
    L = LS
    base = W.RUNG_BY_NAME["tma_store"].make("float16")
    assert L.top(8) == base                      # the ladder's top rung is group_m 8
    for g in set(L.GROUPS) | set(L.NCU_GROUPS):
        cfg = L.top(g)
        assert cfg.defines["GROUP_M"] == g
        assert cfg.replace(group_m=8) == base    # nothing else differs
    assert 8 in L.GROUPS and 8 in L.NCU_GROUPS
    assert L.top(8, "bfloat16") == W.RUNG_BY_NAME["tma_store"].make("bfloat16")


def test_ncu_launches_are_attributed_per_size():
    L = LS
    ms = ["gpu__time_duration.sum"]
    ours = {"Kernel Name": "gemm_warp_specialized", ms[0]: 10.0}
    rows = [{"Kernel Name": "fill_kernel", ms[0]: 1.0}]                    # before ours: dropped
    rows += [ours] * len(L.NCU_GROUPS) + [{"Kernel Name": "nvjet_hsh_256x128", ms[0]: 9.0}]
    rows += [ours] * len(L.NCU_GROUPS) + [{"Kernel Name": "sm90_xmma_gemm_f16f16", ms[0]: 70.0},
                                          {"Kernel Name": "splitKreduce_kernel", ms[0]: 1.0}]
    k = L.attribute(rows, ms)
    want = []
    for size, cub in zip(L.SIZES, (1, 2)):
        want += [(size, "ours", g) for g in L.NCU_GROUPS] + [(size, "cuBLAS", None)] * cub
    assert [(x["size"], x["who"], x.get("group_m")) for x in k] == want
    assert [x["kernel"] for x in k if x["who"] == "cuBLAS"][0].startswith("nvjet")


def test_summary_from_a_record():
    L = LS
    ncu = {"available": True, "kernels": L.attribute(
        [{"Kernel Name": "gemm_warp_specialized", "gpu__time_duration.sum": 180000.0,
          "launch__cluster_dim_x": 2.0, "launch__cluster_dim_y": 1.0}] * len(L.NCU_GROUPS)
        + [{"Kernel Name": "nvjet_x", "gpu__time_duration.sum": 175000.0}], L.METRICS)}
    rows = []
    for rnd, (cb, ours) in enumerate(((760.0, 745.0), (770.0, 760.0), (750.0, 740.0))):
        rows.append({"size": 4096, "dtype": "float16", "round": rnd, "kernel": "cuBLAS",
                     "tflops": cb, "sm_mhz": 1650.0})
        rows += [{"size": 4096, "dtype": "float16", "round": rnd, "kernel": "ours", "group_m": g,
                  "tflops": ours + g, "sm_mhz": 1600.0} for g in L.GROUPS]
    res = {"ncu": ncu, "sizes": [4096], "dtypes": ["float16"], "groups": list(L.GROUPS),
           "rounds": 3, "rows": rows}
    res["summary"] = L.summary_rows(res)
    s8 = next(r for r in res["summary"] if r.get("group_m") == 8)
    assert s8["tflops"] == 753.0 and s8["of_cublas"] == 753.0 / 760.0     # medians, not means
    assert abs(s8["clock_of_cublas"] - 1600 / 1650) < 1e-12
    rec = types.SimpleNamespace(results=res, label=lambda: "NVIDIA H200 · test")
    text = L.summarize_limit(rec)
    assert "nvjet_x" in text and "180.0" in text and "2x1" in text and "group_m=16" in text
    assert f"{753 / 760:.3f} of cuBLAS" in text
    rec.results = {**res, "ncu": {"available": False, "why": "--no-ncu"}}
    assert "ncu: not used (--no-ncu)" in L.summarize_limit(rec)


def test_compiles_for_sm90a():
    L = LS
    assert [j[2]["GROUP_M"] for j in L.limit_jobs()] == [4, 4, 8, 8, 16, 16, 32, 32]
    ck = W.compile_ws(L.top(16))
    assert ck.resources.registers > 0


def test_ncu_metrics_keeps_known_counters_and_launch_statistics(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_common
    finally:
        sys.path.remove(str(SCRIPT.parent))
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'NVIDIA (R) Nsight Compute'; "
                    "echo 'Version 2099.1'; else echo 'Device GH100'; echo 'dram__bytes  DRAM bytes'; "
                    "echo 'lts__t_bytes  L2 bytes'; fi\n")
    fake.chmod(0o755)
    got = gpu_common.ncu_metrics(str(fake), ["dram__bytes_read.sum", "lts__t_bytes.sum",
                                             "sm__made_up.sum", "launch__grid_size"],
                                 lambda m: m.split(".", 1)[0].replace("_read", ""))
    assert got["version"] == "Version 2099.1"
    assert got["metrics"] == ["dram__bytes_read.sum", "lts__t_bytes.sum", "launch__grid_size"]
    assert got["metrics_missing"] == ["sm__made_up.sum"]
    assert "why" in gpu_common.ncu_metrics(str(tmp_path / "absent"), ["x__y"], str)


def test_ncu_profile_runs_the_child_and_parses_its_launches(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_common
    finally:
        sys.path.remove(str(SCRIPT.parent))
    fake = tmp_path / "ncu"          # echoes its arguments as a launch, in ncu's raw CSV form
    fake.write_text("#!/bin/sh\necho '==PROF== profiling'\necho '\"ID\",\"Kernel Name\",\"args\"'\n"
                    "echo '\"\",\"\",\"\"'\necho \"\\\"0\\\",\\\"k\\\",\\\"$*\\\"\"\n")
    fake.chmod(0o755)
    rows, p = gpu_common.ncu_profile(str(fake), ["a__b.sum", "c__d.sum"], str(SCRIPT), 30,
                                     "-k", "regex:x")
    assert p is not None and p.returncode == 0 and len(rows) == 1 and rows[0]["Kernel Name"] == "k"
    args = rows[0]["args"]
    assert "--metrics a__b.sum,c__d.sum -k regex:x" in args and args.endswith(f"{SCRIPT} --ncu-child")
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    assert gpu_common.ncu_profile(str(slow), ["a__b.sum"], str(SCRIPT), 0.5) == ([], None)
