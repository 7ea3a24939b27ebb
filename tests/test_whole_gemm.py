"""Chapter 06's whole kernel, ``kernels/hopper_gemm.cu`` (asynctc.warp_specialization.whole), on the
CPU: it stays one readable, switch-free file of at most 230 lines; it compiles to an sm_90a cubin
for fp16 and bf16 with setmaxnreg honoured; its SASS issues the same Tensor Core, TMA and mbarrier
instructions as rung 3's build of kernels/warp_specialization.cu (only the integer and branch
bookkeeping of rung 3's switches differs); its in-kernel descriptor is the course's descriptor
model's; the host side refuses bad shapes naming field, value and rule; the record suite and its
script run end to end on an emulated launch; 06 §4's walk through it (``show_kernel_part``) covers
the kernel's parts, each showing its lines, the consumers' k-loop held back until asked. On a
GPU: checked against float64 at several shapes."""
import re
import types
from pathlib import Path

import numpy as np
import pytest

from asynctc import suites
from asynctc.core import checks, runtime, sass
from asynctc.warp_specialization import WarpSpecializationError, _ws2, compile_ws, sass_registers
from asynctc import warp_specialization as W
from asynctc.warp_specialization import whole
from asynctc.warp_specialization import whole_suite as WS

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "asynctc" / "kernels" / "hopper_gemm.cu"
SCRIPT = ROOT / "tools" / "gpu_whole_gemm.py"


def test_one_readable_file_without_switches():
    text = KERNEL.read_text()
    lines = text.splitlines()
    assert len(lines) <= 230, len(lines)
    assert max(len(x) for x in lines) <= 100
    # the one conditional is the default of the dtype define; no #if / #ifdef / #else switches
    assert re.findall(r"^\s*#\s*(\w+)", text, re.M).count("ifndef") == 1
    assert not re.search(r"^\s*#\s*(if|ifdef|elif|else)\b", text, re.M)
    includes = re.findall(r'^#include "([^"]+)"', text, re.M)
    assert includes and all(i.startswith("ptx/") for i in includes), includes
    for ex in ("ch03.stage_fill", "ch04.kstep", "ch05.producer_step", "ch06.whole_kloop"):
        assert ex in text, ex
    for ch in ("03", "04", "05", "06"):
        assert f"── chapter {ch}:" in text, ch


@pytest.mark.parametrize("dtype", sorted(whole.DTYPES))
def test_compiles_for_sm90a_with_setmaxnreg(dtype):
    ck = whole.compile_whole(dtype)
    assert ck.cubin and ck.resources.spill_stores == 0
    r = sass_registers(ck)
    assert r["dealloc"] == [40] and r["alloc"] == [232], r


def test_sass_issues_what_rung_3_issues():
    """HGMMA (4 k-steps per k-tile), UTMALDG (A and B), the SYNCS family (init, arrive,
    expect_tx, try_wait) and USETMAXREG: the same counts as rung 3's fp16 build. What differs is
    bookkeeping: rung 3 has more branches and integer instructions (its loop over work items,
    which a persistent build needs, and the raster's divisions by runtime tile counts)."""
    mine = sass.opcode_counts(whole.compile_whole("float16").sass())
    r3 = sass.opcode_counts(compile_ws(_ws2("float16")).sass())

    def tensor_tma_sync(c):
        return {k: v for k, v in c.items() if re.match(r"(HGMMA|UTMA|SYNCS|USETMAXREG|WARPGROUP)", k)}
    assert tensor_tma_sync(mine) == tensor_tma_sync(r3)
    assert mine["HGMMA.64x256x16.F32"] == 4 and mine["UTMALDG.2D"] == 2
    assert sum(mine.values()) < sum(r3.values())


def test_descriptor_is_the_models():
    """smem_desc(0) in the kernel = the descriptor model's template for rung 3's A and B tiles."""
    text = KERNEL.read_text()
    assert "(1ull << 62) | ((u64)(1024 >> 4) << 32) | ((u64)(16 >> 4) << 16)" in text
    want = (1 << 62) | ((1024 >> 4) << 32) | ((16 >> 4) << 16)
    assert _ws2("float16").descriptor_templates() == (want, want)
    assert _ws2("bfloat16").descriptor_templates() == (want, want)


def test_host_constants_match_the_kernel_and_rung_3():
    cfg = _ws2("float16")
    assert (whole.BM, whole.BN, whole.BK, whole.STAGES) == (cfg.bm, cfg.bn, cfg.bk, cfg.stages)
    assert whole.THREADS == cfg.threads and whole.SMEM_BYTES == cfg.shmem_bytes
    text = KERNEL.read_text()
    assert "BM = 128, BN = 256, BK = 64" in text and "STAGES = 4" in text
    assert len(Path(whole.__file__).read_text().splitlines()) <= 80


@pytest.mark.parametrize("shape,field", [((128, 300, 64), "N"), ((100, 256, 64), "M"),
                                         ((128, 256, 96), "K"), ((0, 256, 64), "M")])
def test_shapes_are_refused_naming_the_field(shape, field):
    with pytest.raises(WarpSpecializationError, match=rf"^{field}={shape['MNK'.index(field)]}: .*multiple"):
        whole.check_shapes(*shape)


# ---- the record suite, end to end on an emulated launch --------------------------------------

def _emulate_whole(monkeypatch, break_whole=False):
    """runtime.launch of hopper_gemm emulated in float64 (the kernel's contract: C = A · Bᵀ of B
    stored N×K), rung 3 through tests/test_tile_order.py's emulator."""
    from fakes import FakeArray, fake_timing
    from test_tile_order import _emulate, _emulated
    from asynctc.pipeline import launch as PL
    _emulated(monkeypatch, [])
    monkeypatch.setattr(PL, "DeviceArray", FakeArray)
    monkeypatch.setattr(whole, "DeviceArray", FakeArray)
    monkeypatch.setattr(WS, "DeviceArray", FakeArray)
    monkeypatch.setattr(whole.tma, "tensor_map_for_tile", lambda x, tile: (("map", x, tile), None))
    monkeypatch.setattr(whole, "compile_whole", lambda dt: types.SimpleNamespace(name="hopper_gemm"))

    def launch(ck, grid, block, *args, shmem_bytes=0, stream=None, cluster=None):
        if getattr(ck, "name", "") != "hopper_gemm":
            return _emulate(ck, grid, block, *args, shmem_bytes=shmem_bytes)
        ta, tb, c, m, n, k, err = args
        assert (grid, block, shmem_bytes) == (int(m) // 128 * (int(n) // 256), 384, whole.SMEM_BYTES)
        assert ta[2].rows == 128 and tb[2].rows == 256 and ta[2].cols == tb[2].cols == 64
        res = ta[1].h.astype(np.float64) @ tb[1].h.astype(np.float64).T
        if break_whole:
            res[0, 0] += 1.0
        c.h[...] = res.astype(c.h.dtype)
    monkeypatch.setattr(runtime, "launch", launch)
    fake_timing(monkeypatch)


def test_suite_dry_run_on_the_emulated_launch(monkeypatch):
    _emulate_whole(monkeypatch)
    monkeypatch.setattr(WS, "CHECKS", ((256, 512, 192, "float16"), (128, 256, 64, "bfloat16")))
    said = []
    res = WS.measure_whole(said.append, sizes=(512,))
    assert all(c["passed"] for c in res["checks"]) and "timings_skipped" not in res
    assert [r["kernel"] for r in res["rows"]] == list(WS.KERNELS) + list(WS.KERNELS[::-1])
    assert not any("error" in r for r in res["rows"]), res["rows"]
    s = WS.whole_summary(res)
    assert s["checks_passed"] and s["sizes"][512]["of_cublas"]["whole"] == pytest.approx(1.0)
    text = WS.summarize_whole(types.SimpleNamespace(results=res, label=lambda: "emulated"))
    assert "all passed" in text and "whole" in text and "(1.00 of cuBLAS)" in text


def test_a_wrong_result_is_recorded_not_raised(monkeypatch):
    _emulate_whole(monkeypatch, break_whole=True)
    monkeypatch.setattr(WS, "CHECKS", ((128, 256, 64, "float16"),))
    res = WS.measure_whole(lambda s: None, sizes=(512,))
    assert not res["checks"][0]["passed"] and res["timings_skipped"] and not res["rows"]
    s = WS.whole_summary(res)
    assert not s["checks_passed"] and s["failed"] and not s["sizes"]


def test_suite_is_registered_and_the_script_is_thin():
    assert suites.SUITES["whole_gemm"] == (WS.measure_whole, WS.summarize_whole, "sm_90a")
    src = SCRIPT.read_text()
    assert "whole_suite.measure_whole(" in src and "record_suite(" in src
    from fakes import assert_script_exits_2_without_a_gpu
    assert_script_exits_2_without_a_gpu(SCRIPT, "--out", "/tmp/asynctc_whole_gemm_test")


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k,dtype", [(128, 256, 64, "float16"), (512, 768, 1024, "float16"),
                                         (256, 512, 192, "float16"), (2048, 4096, 512, "float16"),
                                         (512, 768, 1024, "bfloat16")])
def test_whole_kernel_on_the_gpu(m, n, k, dtype):
    c = whole.verify_whole(m, n, k, dtype)
    assert c.passed, c.as_dict()


# ---- chapter 06's cell: "not run on a GPU yet" without the record, the verdicts with one ---------

def _chapter_cell() -> str:
    cells = re.split(r"(?m)^# %%.*$", (ROOT / "notebooks" / "src" / "06d_limits_and_gemm.py").read_text())
    (cell,) = [c for c in cells if "W.whole_suite.show_status(res)" in c]
    return cell


def _results(whole_tf: float, checks_pass: bool = True) -> dict:
    chk = [{"shape": [512, 768, 1024], "config": "hopper_gemm float16", "passed": checks_pass,
            "worst_ratio": 0.12}]
    if not checks_pass:
        return {"checks": chk, "rows": [], "timings_skipped": "a check failed"}
    rows = [{"kernel": k, "size": s, "dtype": "float16", "round": r, "tflops": tf}
            for s in (4096, 8192) for r in (0, 1)
            for k, tf in (("cuBLAS", 800.0), ("rung 3", 720.0), ("whole", whole_tf))]
    return {"checks": chk, "rows": rows}


def test_chapter_cell_without_and_with_the_record(tmp_path, monkeypatch, capsys):
    from asynctc import warp_specialization as W
    from asynctc.core import notebook, records
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": False)
    res = records.load("warp_specialization").results
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    ns = {"records": records, "W": W, "notebook": notebook, "res": res}
    exec(compile(_chapter_cell(), "06", "exec"), dict(ns))    # noqa: S102 - our source
    out = capsys.readouterr().out
    assert out.startswith("Not run on a GPU yet: there is no record whole_gemm. Rung 3, the same "
                          "design, ran at 0.89 of cuBLAS at 4096³ and 0.95 of cuBLAS at 8192³")
    prov = {k: "test" for k in records.REQUIRED_PROVENANCE}
    prov.update(gpu="NVIDIA H200", date="2026-12-03T00:00:00+00:00")
    for results, said in ((_results(720.0), ["every element within its bound, the worst at 0.12",
                                             "4096³ fp16: the whole kernel runs at 0.90 of cuBLAS, "
                                             "rung 3 at 0.90: the same speed within 2%."]),
                          (_results(680.0), ["the whole kernel is slower by 6%."]),
                          (_results(0.0, checks_pass=False), ["A check failed", "not recorded"])):
        records.save(records.Record("whole_gemm", prov, results), slug="h200")
        exec(compile(_chapter_cell(), "06", "exec"), dict(ns))    # noqa: S102
        out = capsys.readouterr().out
        assert "replayed: measured on NVIDIA H200" in out and "Not run" not in out
        for s in said:
            assert s in out, (s, out)


def test_a_failed_timed_run_is_recorded_and_the_others_still_run(monkeypatch):
    """A timed run whose error word is set (a wait that timed out) is a row with ``error``; rung 3
    and cuBLAS are still timed, the summary leaves the failed kernel out, the script would exit 1."""
    _emulate_whole(monkeypatch)
    monkeypatch.setattr(WS, "CHECKS", ((128, 256, 64, "float16"),))
    real = whole.launcher

    def launcher(a, b, c, stream=None):
        run, err = real(a, b, c, stream)
        if c.shape == (512, 512):              # the timed runs, not the checks
            err.h[0] = 1 | (0x00022 << 8)      # the empty barrier of stage 2, the producer
        return run, err
    monkeypatch.setattr(whole, "launcher", launcher)
    res = WS.measure_whole(lambda s: None, sizes=(512,), rounds=1)
    bad = [r for r in res["rows"] if "error" in r]
    assert [r["kernel"] for r in bad] == ["whole"] and "empty barrier of stage 2" in bad[0]["error"]
    assert {r["kernel"] for r in res["rows"] if "tflops" in r} == {"cuBLAS", "rung 3"}
    assert "whole" not in WS.whole_summary(res)["sizes"][512]["tflops"]


#: 06 §4's parts of hopper_gemm.cu: what each must show (the lines its markdown talks about).
PART_SHOWS = {
    "launch": r"(?s)tensor_map_for_tile\(a,.*tensor_map_for_tile\(b_nk,.*runtime\.launch\(ck, grid, THREADS",
    "barriers": r"(?s)mbarrier_init\(full0 \+ 8 \* s, 1\).*CONSUMERS\).*fence_mbarrier_init\(\).*const int wg",
    "producer": r"(?s)setmaxnreg_dec<40>.*empty0 \+ 8 \* stage, phase \^ 1u.*mbarrier_arrive_expect_tx"
                r".*tma_load_2d\(dst \+ kATileBytes.*phase \^= 1u;.*return;\n  \}$",
    "consumers": r"(?s)setmaxnreg_inc<232>.*wgmma_wait_group<0>\(\);.*mbarrier_arrive\(empty0 \+ 8 \* prev\)"
                 r".*__syncwarp\(\);$",
    "epilogue": r"(?s)the epilogue.*cvt_rn_x2_f32<DT>\(acc\[j\], acc\[j \+ 1\]\);\n  \}\n\}$",
}


@pytest.mark.parametrize("name", sorted(W.lesson.PARTS))
def test_the_walk_shows_each_part(name):
    text = W.show_kernel_part(name).data
    assert re.search(PART_SHOWS[name], text), name
    lines = text.splitlines()                  # comments: section headers, whole (a header may wrap)
    for i, line in enumerate(lines):
        if line.lstrip().startswith("//") and "──" not in line:
            head = next(x for x in reversed(lines[:i]) if not x.lstrip().startswith("//") or "──" in x)
            assert "──" in head and not lines[i - 1].rstrip().endswith("─"), (name, line)


def test_the_walk_holds_back_the_consumers_k_loop():
    held, shown = W.show_kernel_part("consumers", reveal=False).data, W.show_kernel_part("consumers").data
    assert "lines left out: the consumers' k-loop" in held and "wgmma_wait_group<1>" not in held
    assert "wgmma_wait_group<1>" in shown and "wait_bounded(full0 + 8 * stage, phase" in shown
    every = sum(len(W.show_kernel_part(n, comments=True).data.splitlines()) for n in W.lesson.PARTS)
    assert every < len(KERNEL.read_text().splitlines())      # parts, not the whole file again
