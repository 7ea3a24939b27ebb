"""tools/gpu_ring_check.py's CPU parts: the old kernel tree read from git, old and new cubins built
with the same defines, the old/new table and its verdicts, the check of a broken variant's error
text against asynctc.pipeline.decode_error, and exit 2 without a live sm_90a GPU."""
import subprocess
import sys
import types
from pathlib import Path

import pytest

from asynctc import pipeline as P, warp_specialization as W
from asynctc.core import runtime

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tool() -> types.ModuleType:
    path = ROOT / "tools" / "gpu_ring_check.py"
    mod = types.ModuleType("_tool_gpu_ring_check")
    mod.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)
    return mod


@pytest.fixture(scope="module")
def old_tree(tool, tmp_path_factory):
    r = subprocess.run(["git", "cat-file", "-e", f"{tool.OLD_REV}^{{commit}}"], cwd=ROOT,
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"commit {tool.OLD_REV} not in this checkout's history")
    return tool.export_old_kernels(tool.OLD_REV, tmp_path_factory.mktemp("old_kernels"))


def test_old_tree_is_the_kernels_before_the_ring(old_tree):
    assert (old_tree / "pipeline.cu").is_file() and (old_tree / "ptx" / "mbarrier.cuh").is_file()
    assert not (old_tree / "ring.cuh").exists()          # the ring type came after
    assert "if (++stage == STAGES)" in (old_tree / "warp_specialization.cu").read_text()


def test_old_and_new_cubins_built_with_the_same_defines(tool, old_tree):
    cfgs = [W.RUNGS[0].make("float16"), W.RUNG_BY_NAME["raster"].make("float16")]
    pairs = tool.build_pairs(cfgs, old_tree)
    assert runtime.KERNEL_DIR == ROOT / "asynctc" / "kernels"      # restored
    for p, c in zip(pairs, cfgs):
        assert p["old"].defines == p["new"].defines == W.compile_job(c)[2]
        assert p["old"].name == p["new"].name
        assert p["same"] == (p["old"].cubin == p["new"].cubin)
    # the old tree's source differs (no ring.cuh), so its builds are its own, not cached new ones
    assert "RingState" not in (old_tree / "pipeline.cu").read_text()


def test_table_verdicts_against_the_run_noise(tool):
    rows = [dict(rung=1, label="a", dtype="float16", size=4096, same=False,
                 old_ms=[1.00, 1.01], new_ms=[1.005, 1.00]),
            dict(rung=2, label="b", dtype="float16", size=4096, same=False,
                 old_ms=[1.00, 1.00], new_ms=[1.05, 1.06]),
            dict(rung=3, label="c", dtype="float16", size=4096, same=True,
                 old_ms=[1.00, 1.00], new_ms=[1.00, 1.00])]
    table, noise = tool.summarize(rows)
    assert noise == pytest.approx(0.01)                    # rung 1's old spread, 1.01/1.00 − 1
    assert [r["verdict"] for r in rows] == ["ok", "SLOWER", "same cubin"]
    assert "run noise" in table and len(table.splitlines()) == 5


def test_broken_variant_text_names_the_wait(tool):
    word = 1 | (2 << 8) | (0 << 12) | (0 << 16) | (2 << 20)
    tool.must_name(P.decode_error(word))
    with pytest.raises(RuntimeError, match="for k-tile"):
        tool.must_name("mbarrier wait timed out (code 1) on the empty barrier of stage 0")


def test_without_a_live_gpu_exits_2(tool, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runtime, "runs_live", lambda arch: False)
    monkeypatch.setattr(runtime, "why_not_live", lambda arch: "no GPU here")
    monkeypatch.setattr(sys, "argv", ["gpu_ring_check.py", "--quick", "--out", str(tmp_path)])
    assert tool.main() == 2
    assert capsys.readouterr().out.strip() == "no live sm_90a GPU: no GPU here"
