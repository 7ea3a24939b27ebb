"""Chapter 03 (TMA, mbarrier): the kernels compile for sm_90a with the SASS they should have (CPU);
GPU tests (marker ``gpu``) check them on fresh random data with poisoned outputs."""
import numpy as np
import pytest

from asynctc import tma
from asynctc.core import sass
from asynctc.models.layout import SmemTile


def counts(ck):
    return sass.class_counts(tma.kernel_sass(ck))


@pytest.mark.parametrize("name, must, must_not", [
    ("tma_load_dump", {"UTMALDG", "SYNCS", "FENCE_ASYNC"}, {"UTMASTG"}),
    ("tma_store_raw", {"UTMASTG", "FENCE_ASYNC"}, {"UTMALDG"}),
    ("mbarrier_lifecycle", {"UTMALDG", "SYNCS"}, set()),
    ("copy_tma", {"UTMALDG", "UTMASTG", "SYNCS"}, {"LDG", "STG", "LDGSTS"}),
    ("copy_ldg_sts", {"LDG", "STS", "LDS", "STG"}, {"UTMALDG", "LDGSTS"}),
    ("copy_cp_async", {"LDGSTS", "LDGDEPBAR", "DEPBAR"}, {"UTMALDG", "LDG"}),
])
def test_tma_copy_kernels_sass(name, must, must_not):
    c = counts(tma.compile_tma(name))
    assert must <= set(c), f"{name}: {c}"
    assert not (must_not & set(c)), f"{name}: {c}"


def test_mbarrier_sass_names():
    ops = set(sass.opcode_counts(tma.kernel_sass(tma.compile_tma("mbarrier_lifecycle"))))
    for op in ("SYNCS.EXCH.64", "SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64.TRYWAIT"):
        assert op in ops


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_tma_ranks_compile(rank):
    ops = sass.opcode_counts(tma.kernel_sass(tma.compile_tma("tma_load_dump", RANK=rank)))
    assert ops.get(f"UTMALDG.{rank}D", 0) == 1, sorted(ops)
    ops = sass.opcode_counts(tma.kernel_sass(tma.compile_tma("tma_store_raw", RANK=rank)))
    assert ops.get(f"UTMASTG.{rank}D", 0) == 1, sorted(ops)


def test_expected_box_oob(rng):
    host = rng.standard_normal((10, 16)).astype(np.float32) + 5
    box = tma.expected_box(host, (-2, 12), (4, 8))
    assert np.array_equal(box[2:, :4], host[0:2, 12:16])
    assert np.all(box[:2] == 0) and np.all(box[:, 4:] == 0)
    assert np.all(tma.expected_box(host, (20, 0), (4, 8)) == 0)
    assert np.isnan(tma.expected_box(host, (8, 0), (4, 8), "nan")[2:]).all()


def test_copy_configs_fit():
    for br, bc in tma.BOXES:
        for v in tma.VARIANTS:
            c = tma.copy_config(v, br, bc)
            assert 1024 <= c.box_bytes <= 32768
            assert c.ctas_per_sm * (c.smem_bytes + 1024) <= 228 * 1024
    with pytest.raises(ValueError, match="variant='dma'"):
        tma.copy_config("dma", 8, 32)
    with pytest.raises(ValueError, match=r"box\[0\]=512"):
        tma.copy_config("tma", 512, 32)


def test_lifecycle_table_is_consistent():
    # parity rule (PTX ISA, mbarrier.test_wait/try_wait): while phase k is open,
    # test_wait.parity(k % 2) is false and the other is true (it names phase k - 1, complete)
    assert len(tma.LIFECYCLE_OPEN) == len(tma.LIFECYCLE)
    for (what, bar, p0, p1, res), k in zip(tma.LIFECYCLE, tma.LIFECYCLE_OPEN):
        assert (p0, p1) == (int(k % 2 != 0), int(k % 2 != 1)), what


@pytest.mark.gpu
@pytest.mark.parametrize("tile", tma.swizzle_tiles(), ids=repr)
def test_tma_load_matches_swizzle_model(tile, rng):
    c = tma.load_box(tile, shape=(64, 4 * tile.cols + 16 // tile.itemsize * 3),
                         start=(int(rng.integers(0, 64 - tile.rows)), int(rng.integers(0, 3)) * tile.cols),
                         rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("tile", tma.swizzle_tiles(), ids=repr)
def test_tma_store_matches_swizzle_model(tile, rng):
    c = tma.store_box(tile, shape=(48, 3 * tile.cols), start=(5, tile.cols), rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("start", [(-3, -16), (40, 112), (-20, 120), (100, 0)])
@pytest.mark.parametrize("tile", [SmemTile(16, 64, "float16", 128), SmemTile(16, 32, "float32", 0),
                                  SmemTile(24, 64, "uint8", 64)], ids=repr)
def test_tma_oob_zero_fill(tile, start, rng):
    if start[1] * np.dtype(tile.dtype).itemsize % 16:
        pytest.skip("inner start not a multiple of 16 bytes: refused (test_tma_refuses_unaligned_start)")
    c = tma.load_box(tile, shape=(48, 128), start=start, rng=rng)
    assert c.passed, c.as_dict()
    if min(start) < 0:
        return                  # stores at negative coordinates are refused (see the test below)
    c = tma.store_box(tile, shape=(48, 128), start=start, rng=rng)
    assert c.passed, c.as_dict()


def test_tma_refuses_unaligned_start():
    """A uint8 box loaded at inner coordinate 120 (120 bytes) faulted on the H200: refused."""
    with pytest.raises(ValueError, match=r"120 bytes .* multiple of 16 bytes"):
        tma.load_box(SmemTile(24, 64, "uint8", 64), shape=(48, 128), start=(-20, 120))
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        tma.store_box(SmemTile(24, 64, "uint8", 64), shape=(48, 128), start=(8, 120))


def test_tma_store_refuses_negative_start():
    """A negative TMA store start faulted (illegal instruction) on the H200: refused in Python."""
    with pytest.raises(ValueError, match=r"start=\(-3, 16\): TMA store box coordinates must be ≥ 0"):
        tma.store_box(SmemTile(16, 64, "float16", 128), shape=(48, 128), start=(-3, 16))


@pytest.mark.gpu
def test_tma_oob_nan_fill(rng):
    c = tma.load_box(SmemTile(16, 64, "float16", 128), shape=(40, 96), start=(32, 64),
                         oob_fill="nan", rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
def test_mbarrier_lifecycle(rng):
    run = tma.mbarrier_lifecycle(rng=rng)
    assert run.passed, tma.lifecycle_table(run) + f"\nerr={run.err} boxes_ok={run.boxes_ok}"


@pytest.mark.gpu
@pytest.mark.parametrize("box", [(8, 32), (32, 64), (16, 256)])
def test_copy_variants_correct(box):
    cb = tma.CopyBench(rows=1024, cols=2048)
    for v in tma.VARIANTS:
        cfg = tma.copy_config(v, *box)
        cb.dst.poison()
        cb.launcher(cfg)()
        c = cb.check(cfg.name)
        assert c.passed, c.as_dict()


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_tx_probe_variant_compiles(rank):
    ck = tma.compile_tma("tma_load_dump", RANK=rank, TX_PROBE=1, MAX_TRIES=200000)
    assert "SYNCS.ARRIVE" in tma.kernel_sass(ck)


@pytest.mark.gpu
@pytest.mark.parametrize("case", tma.STRIDE_CASES, ids=str)
def test_tma_element_strides_write_what_the_model_says(case, rng):
    dt, box, es, sw = case
    r = tma.load_strided(dt, box, es, swizzle=sw, rng=rng)
    assert r.passed, r.as_dict()


@pytest.mark.gpu
def test_tma_ignores_the_innermost_element_stride(rng):
    # encoded behind validate's back: the driver loads the whole inner box (8192 bytes, not 4096)
    r = tma.load_strided("float16", (64, 64), (1, 1), shape=(256, 256), unchecked_inner_stride=2,
                         rng=rng)
    assert r.model_bytes == 8192 and r.passed, r.as_dict()
    early = tma.load_strided("float16", (64, 64), (1, 1), shape=(256, 256),
                             unchecked_inner_stride=2, tx_delta=-4096, rng=rng)
    assert early.timed_out or early.tx_exact is False, early.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("delta", [-16, 16])
def test_tx_probe_can_fail(delta, rng):
    r = tma.load_strided("float16", (64, 64), (2, 1), tx_delta=delta, rng=rng)
    # too many bytes: the phase never completes (timeout); too few: it completes early, or the
    # tx-count overshoots below zero and it never completes — never "exact"
    assert not r.passed and (r.timed_out or r.tx_exact is False), r.as_dict()


def test_compare_by_box_size_and_bytes_in_flight():
    """The generated comparison of chapter 03 §5: leaders per row width, ranges, spread, bytes in flight."""
    def row(variant, bc, size, gbps, stages, ctas):
        return {"variant": variant, "bc": bc, "br": size // (4 * bc), "box_bytes": size, "gbps": gbps,
                "stages": stages, "ctas_per_sm": ctas}
    results = {"device_copy": {"gbps": 100.0}, "copies": [
        row("tma", 32, 1024, 90, 4, 16), row("ldg_sts", 32, 1024, 80, 1, 16), row("cp_async", 32, 1024, 70, 4, 16),
        row("tma", 64, 1024, 95, 4, 16), row("ldg_sts", 64, 1024, 96, 1, 16), row("cp_async", 64, 1024, 60, 4, 16)]}
    assert tma.bytes_in_flight(results["copies"][0]) == 4 * 1024 * 16
    (c,) = tma.compare_by_box_size(results)
    assert c["leaders"] == ["tma", "ldg_sts"]
    assert c["lo"]["tma"] == pytest.approx(0.90) and c["hi"]["ldg_sts"] == pytest.approx(0.96)
    assert c["spread"] == pytest.approx(0.36)
    assert c["in_flight"] == {"tma": [65536], "ldg_sts": [16384], "cp_async": [65536]}


def test_same_tiles_table_reads_the_equal_loads_rows():
    """Chapter 03 §4: TMA beside cp.async at equal loads in flight, with the instructions each
    issues per box derived from the box (1 by one thread; one 16-byte cp.async per 16 bytes)."""
    from asynctc.tma import equal_bytes as E
    assert E.issue_counts("128x64") == {"box_bytes": 16384, "tma": 1, "cp_async": 1024,
                                        "cp_async_threads": 128, "cp_async_per_thread": 8}
    assert E.issue_counts("16x16")["cp_async_threads"] == 32
    row = lambda v, gbps: {"variant": v, "fp16_box": "128x64", "box_bytes": 16384, "kinds": ["loads"],
                           "in_flight_loads": 98304, "gbps": gbps}
    results = {"copies": [row("tma", 3600.0), row("cp_async", 3500.0), row("ldg_sts", 3000.0)]}
    (r,) = E.same_tiles(results, boxes=("128x64",))
    assert (r["tma_gbps"], r["cp_async_gbps"]) == (3600.0, 3500.0) and r["ratio"] == pytest.approx(3600 / 3500)
    assert "| 128×64 | 16384 | 1 (1 thread) | 1024 (128 threads × 8) | 3600 | 3500 | 1.03 |" in E.same_tiles_table([r])
    ok, same, differ = E.same_tiles_verdict([r])
    assert ok and "within 5%" in same and "1.03× cp.async" in differ
    assert not E.same_tiles_verdict([{**r, "ratio": 1.2}])[0]
    with pytest.raises(ValueError, match="64x64"):
        E.same_tiles(results, boxes=("64x64",))


def test_equal_bytes_plan_keeps_bytes_in_flight_equal_and_every_cta_resident():
    """The tma_equal suite's rows (compiled here, no GPU): within each box and definition the TMA,
    cp.async and ld+st rows hold the same bytes in flight per SM, and ptxas's registers and the
    shared memory let every CTA of a row be resident at once; small and large boxes are both swept."""
    from asynctc.tma import equal_bytes as E
    rows = E.plan()
    groups: dict = {}
    for r in rows:
        cfg = r["cfg"]
        assert r["resident_per_sm"] >= cfg.ctas_per_sm, cfg.name
        for kind in r["kinds"]:
            groups.setdefault((r["fp16_box"], kind), []).append(cfg)
    assert {b for b, _ in groups} == {f"{a}x{b}" for a, b in E.FP16_BOXES}
    for (box, kind), cfgs in groups.items():
        assert sorted(c.variant for c in cfgs) == ["cp_async", "ldg_sts", "tma"], (box, kind)
        assert len({E.in_flight(c, kind) for c in cfgs}) == 1, (box, kind, cfgs)
    sizes = {c.box_bytes for cs in groups.values() for c in cs}
    assert min(sizes) <= 1024 and max(sizes) >= 32768
    with pytest.raises(ValueError, match="fp16_box"):
        E.configs((48, 48))
    with pytest.raises(ValueError, match="kind"):
        E.in_flight(rows[0]["cfg"], "registers")
    from asynctc import suites, tma
    assert "tma_equal" in tma.SUITES and "tma_copy" in tma.SUITES and "tma_equal" in suites.SUITES


def test_gpu_ch02_ch03_equal_bytes_entry(monkeypatch, capsys, tmp_path):
    """`tools/gpu_ch02_ch03.py --equal-bytes --out D [--record]`: without a GPU it exits 2 with one
    line; with a stand-in measurement it writes results.json and data/<gpu>/tma_equal.json."""
    import json
    import sys
    import types
    from pathlib import Path
    from asynctc.core import records, runtime
    from asynctc.tma import equal_bytes as E
    root = Path(__file__).resolve().parent.parent
    path = root / "tools" / "gpu_ch02_ch03.py"
    monkeypatch.setattr(sys, "path", list(sys.path))
    mod = types.ModuleType("_tool_gpu_ch02_ch03")
    mod.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)
    if not runtime.runs_live("sm_90a"):
        monkeypatch.setattr(sys, "argv", ["gpu_ch02_ch03.py", "--equal-bytes", "--out", str(tmp_path / "a")])
        assert mod.main() == 2
        assert capsys.readouterr().out.startswith("no live sm_90a GPU")
    import gpu_common
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path / "data"))
    prov = json.loads((root / "data" / "h200" / "tma_copy.json").read_text())["provenance"]
    monkeypatch.setattr(records, "provenance_start", lambda: dict(prov))
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})
    monkeypatch.setattr(gpu_common, "start", lambda o, long_header=False: (
        Path(o).mkdir(parents=True, exist_ok=True) or Path(o), print))
    fake = {"bytes": 1, "rows": 1, "cols": 1, "device_copy": {"gbps": 100.0}, "copies": [
        {"variant": v, "fp16_box": "16x16", "box_bytes": 512, "kinds": ["smem"], "in_flight_smem": 8192,
         "in_flight_loads": 4096, "gbps": g} for v, g in (("tma", 50.0), ("ldg_sts", 60.0), ("cp_async", 55.0))]}
    monkeypatch.setattr(E, "measure_equal_bytes", lambda progress=None: fake)
    out = tmp_path / "o"
    monkeypatch.setattr(sys, "argv", ["gpu_ch02_ch03.py", "--equal-bytes", "--out", str(out), "--record"])
    assert mod.main() == 0
    [saved] = (tmp_path / "data").glob("*/tma_equal.json")
    doc = json.loads(saved.read_text())
    assert doc["suite"] == "tma_equal" and (out / "results.json").is_file() and (out / "tma_equal.json").is_file()
    assert "TMA/best manual" in capsys.readouterr().out
    assert E.pairs(doc["results"])[0]["ratio"] == pytest.approx(50 / 60)


@pytest.mark.gpu
def test_gpu_equal_bytes_rows_copy_exactly():
    """Every tma_equal configuration of a small and a large box copies byte for byte (a smaller
    matrix than the suite's; nothing timed)."""
    from asynctc.tma import equal_bytes as E
    cb = tma.CopyBench(rows=1024, cols=2048)
    for row in E.plan():
        if row["fp16_box"] not in ("16x16", "128x128"):
            continue
        cb.dst.poison()
        cb.launcher(row["cfg"])()
        c = cb.check(row["cfg"].name)
        assert c.passed, c.as_dict()


def test_measure_equal_bytes_against_an_emulated_copy(monkeypatch):
    """measure_equal_bytes's host side with a stand-in GPU (tests/fakes.py's FakeArray; the launch
    copies src to dst; timings are made up and only flow through): every planned row is checked,
    then timed, and lands in the record with its bytes in flight; pairs() reads them back. A copy
    that loses a byte stops the suite."""
    from asynctc.core import bench, records, runtime
    from asynctc.tma import equal_bytes as E
    from asynctc.tma import suite as TS
    from fakes import FakeArray
    monkeypatch.setattr(E, "ROWS", 1024)
    monkeypatch.setattr(E, "COLS", 2048)
    monkeypatch.setattr(TS, "DeviceArray", FakeArray)
    monkeypatch.setattr(TS, "make_tensor_map", lambda arr, box: ((arr, tuple(box)), None))
    monkeypatch.setattr(runtime, "precompile", lambda jobs: None)
    monkeypatch.setattr(runtime, "device_info", lambda: None)
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})
    state = {"break": False}

    def launch(ck, grid, block, *args, shmem_bytes=0, **kw):
        src, dst = (args[0][0], args[1][0]) if ck.name == "copy_tma" else (args[0], args[1])
        dst.h[...] = src.h
        if state["break"]:
            dst.h.view(np.uint8)[0, 7] ^= 1
    monkeypatch.setattr(runtime, "launch", launch)
    monkeypatch.setattr(bench, "device_copy", lambda dst, src: (lambda: None))
    monkeypatch.setattr(bench, "time_gpu", lambda fn, reps=20: bench.Timing([0.5, 0.5, 0.5]))
    out = E.measure_equal_bytes()
    assert len(out["copies"]) == len(E.plan()) and out["bytes"] == 1024 * 2048 * 4
    for c in out["copies"]:
        assert c["in_flight_smem"] == c["stages"] * c["box_bytes"] * c["ctas_per_sm"]
        assert c["resident_per_sm"] >= c["ctas_per_sm"] and c["gbps"] > 0
    ps = E.pairs(out)
    assert {(p["fp16_box"], p["kind"]) for p in ps} == {(f"{a}x{b}", k) for a, b in E.FP16_BOXES
                                                        for k in ("smem", "loads")}
    assert all(p["ratio"] == pytest.approx(1.0) for p in ps)
    state["break"] = True
    with pytest.raises(RuntimeError, match="copy wrong"):
        E.measure_equal_bytes()


# ---- the lines and figure notebook 03 prints (CPU, from small made-up records) -------------------

def _copy_row(variant, br, bc, gbps, stages, ctas):
    return {"variant": variant, "br": br, "bc": bc, "box_bytes": br * bc * 4, "gbps": gbps,
            "stages": stages, "ctas_per_sm": ctas, "name": f"{variant} {br}x{bc} s{stages} x{ctas}/SM"}


def test_tma_copy_summary_says_the_best_configuration_in_words():
    """summarize_tma_copy: a cell is GB/s (fraction of the device copy), the best TMA row is
    described with its stages and CTAs per SM spelled out (not the record's terse name)."""
    from asynctc.core import records
    res = {"device_copy": {"gbps": 4000.0}, "copies": [
        _copy_row("tma", 32, 256, 3800, 2, 3), _copy_row("ldg_sts", 32, 256, 3900, 1, 6),
        _copy_row("cp_async", 32, 256, 3700, 2, 3), _copy_row("tma", 8, 32, 3600, 4, 16),
        _copy_row("ldg_sts", 8, 32, 3000, 1, 16), _copy_row("cp_async", 8, 32, 2800, 4, 16)]}
    assert tma.describe_copy(res["copies"][0]) == "32x256 fp32 box (32 KB), 2 stages, 3 CTAs per SM"
    assert tma.describe_copy({**res["copies"][1], "stages": 1}).endswith("1 stage, 6 CTAs per SM")
    rec = records.Record(suite="tma_copy", results=res, provenance={})
    text = tma.summarize_tma_copy(rec)
    assert "each cell: GB/s (fraction of it)" in text
    assert text.splitlines()[-1] == ("best TMA: 32x256 fp32 box (32 KB), 2 stages, 3 CTAs per SM: "
                                     "3800 GB/s = 0.95 of the device copy")
    assert "x3/SM" not in text and "3800 (0.95)" in text
    one = tma.summarize_tma_copy(rec, row_bytes=128).splitlines()       # the 32-column (128 B) rows only
    assert [l.split()[0] for l in one[3:-1]] == ["8x32"]
    assert one[-1].startswith("best TMA (any row width): 32x256")
    with pytest.raises(ValueError, match="row_bytes=256: the record has rows of \\[128, 1024\\]"):
        tma.summarize_tma_copy(rec, row_bytes=256)


def _equal_pair_rows(box, size, kind, tma_gbps, manual):
    rows = []
    for v, g in (("tma", tma_gbps), *manual.items()):
        rows.append({"variant": v, "kinds": [kind], "fp16_box": box, "box_bytes": size,
                     f"in_flight_{kind}": 65536, "gbps": g})
    return rows


def test_equal_note_is_the_sentence_of_chapter_03_and_flips_with_the_record():
    from asynctc.tma import equal_bytes as E
    res = {"copies": _equal_pair_rows("16x16", 512, "loads", 99.0, {"ldg_sts": 100.0, "cp_async": 90.0})
           + _equal_pair_rows("64x64", 8192, "loads", 100.0, {"ldg_sts": 98.0, "cp_async": 97.0})
           + _equal_pair_rows("16x16", 512, "smem", 60.0, {"ldg_sts": 100.0, "cp_async": 80.0})
           + _equal_pair_rows("64x64", 8192, "smem", 97.0, {"ldg_sts": 100.0, "cp_async": 99.0})}
    ok, text, numbers = E.equal_note(res)
    assert ok and numbers == {"loads": pytest.approx(0.99), "smem": pytest.approx(0.60)}
    assert "TMA runs at 0.99–1.02 of the faster manual copy" in text
    assert "falls to 0.60 (at the 16x16 fp16 box)" in text
    res["copies"][0]["gbps"] = 80.0                       # TMA behind at equal loads: no longer holds
    assert not E.equal_note(res)[0]
    with pytest.raises(ValueError, match="loads"):
        E.equal_note({"copies": _equal_pair_rows("16x16", 512, "smem", 60.0, {"ldg_sts": 100.0})})


def test_plot_chunk_maps_draws_the_model():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = tma.plot_chunk_maps(swizzles=(0, 128))
    try:
        axes = fig.get_axes()
        assert [a.get_title() for a in axes] == ["swizzle none: 128 B rows", "swizzle 128: 128 B rows"]
        shown = axes[1].get_images()[0].get_array()
        assert np.array_equal(shown, SmemTile(8, 64, "float16", 128).chunk_map())
    finally:
        plt.close(fig)


def test_driver_args_are_the_encoders_arguments():
    """driver_args states what cuTensorMapEncodeTiled gets (innermost first), and encode's cuda.core
    keywords are built from it: every swizzle, fill and L2 promotion maps to cuda.core's enum."""
    from asynctc import tma
    spec = tma.validate(address=0x7F0000000000, shape=(4096, 2048), dtype="float16", box=(128, 64),
                        swizzle=128)
    a = tma.driver_args(spec)
    assert a["globalDim"] == (2048, 4096) and a["globalStrides"] == (4096,) and a["boxDim"] == (64, 128)
    assert a["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_128B" and a["tensorRank"] == 2
    assert list(a) == ["tensorDataType", "tensorRank", "globalAddress", "globalDim", "globalStrides",
                       "boxDim", "elementStrides", "interleave", "swizzle", "l2Promotion", "oobFill"]
    tm = pytest.importorskip("cuda.core._tensor_map")
    for sw in (0, 32, 64, 128):
        for oob in ("zero", "nan"):
            for l2 in (0, 64, 128, 256):
                s = tma.validate(address=0x7F0000000000, shape=(40, 4096), dtype="bfloat16", box=(8, 16),
                                 swizzle=sw, oob_fill=oob, l2_promotion=l2)
                k = tma.maps._core_kwargs(s, tm)
                assert k["swizzle"].name == ("NONE" if not sw else f"SWIZZLE_{sw}B")
                assert k["l2_promotion"].name == ("NONE" if not l2 else f"L2_{l2}B")
                assert k["oob_fill"].name == ("NONE" if oob == "zero" else "NAN_REQUEST_ZERO_FMA")
                assert k["data_type"].name == "BFLOAT16" and k["interleave"].name == "NONE"
                assert k["box_dim"] == (8, 16)


def test_map_fields_prints_what_the_map_contains():
    """map_fields (03 §1) lists the map's fields rows first, each from the spec: the address, the
    dims, the one stride the driver gets (bytes between rows), the element type, the box with its
    expect_tx bytes, the swizzle and the fill; a 3-D map and no swizzle print too."""
    from asynctc import tma
    spec = tma.validate(address=0x7F0000000000, shape=(4096, 2048), dtype="float16", box=(128, 64),
                        swizzle=128)
    lines = tma.map_fields(spec).splitlines()
    assert [ln.split()[0] for ln in lines] == ["address", "dims", "strides", "dtype", "box", "swizzle"]
    assert lines[0].endswith("0x7f0000000000") and "4096 rows, 2048 columns" in lines[1]
    assert f"{tma.driver_args(spec)['globalStrides'][0]} B between rows" in lines[2]
    assert "float16, 2 B" in lines[3] and lines[4].endswith(f"{spec.box_bytes} B") and "128 rows, 64" in lines[4]
    assert lines[5] == "swizzle  128B; past the edge: zeros"
    s3 = tma.validate(address=0x7F0000000000, shape=(4, 64, 32), dtype="float32", box=(2, 8, 32),
                      oob_fill="nan")
    out = tma.map_fields(s3)
    assert "4 × 64 × 32" in out and "swizzle  none; past the edge: NaN" in out


def test_plot_box_over_tensor_draws_the_map():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    spec = tma.validate(address=0x7F0000000000, shape=(4096, 4096), dtype="float16", box=(128, 64),
                        swizzle=128)
    fig = tma.plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032))
    try:
        axes = fig.get_axes() + [c for a in fig.get_axes() for c in a.child_axes]
        titles = [a.get_title() for a in axes]
        assert "global tensor 4096×4096 float16, row-major" in titles
        assert titles.count("box 1 in shared memory: 16384 B") == 1
        zoom = next(a for a in axes if "rows 4032 to 4160" in a.get_title())   # the zoom on the edge box
        assert list(zoom.get_yticks()) == [4032, 4096, 4160]       # its ticks are the rows its title names
        assert sorted(zoom.get_ylim()) == [4032, 4160]
        texts = [t.get_text() for a in axes for t in a.texts]
        assert "64 rows past the edge:\nfilled with zeros" in texts
    finally:
        plt.close(fig)


def test_plot_box_over_tensor_arrows_cross_no_other_panel():
    """03 §1's figure: each arrow runs from its box to its own panel's left edge and crosses no other
    panel, the zoom or an axis label (readers saw them cross the next panel's labels)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import ConnectionPatch
    spec = tma.validate(address=0x7F0000000000, shape=(4096, 4096), dtype="float16", box=(128, 64),
                        swizzle=128)
    fig = tma.plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032))
    try:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        g = fig.get_axes()[0]
        others = fig.get_axes()[1:] + list(g.child_axes)
        arrows = [a for a in fig.artists if isinstance(a, ConnectionPatch)]
        assert len(arrows) == 2
        for arrow in arrows:
            (x0, y0), (x1, y1) = (arrow.axesA.transData.transform(arrow.xy1),
                                  arrow.axesB.transData.transform(arrow.xy2))
            target = arrow.axesB
            for t in np.linspace(0, 0.98, 200):
                x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
                for a in others:
                    box = a.get_tightbbox(r) if a is not target else a.get_window_extent(r)
                    assert not box.contains(x, y) or (a is target and t > 0.97), (a.get_title(), t)
            assert abs(x1 - target.get_window_extent(r).x0) < 1      # lands on its panel's left edge
    finally:
        plt.close(fig)


def test_show_same_tiles_prints_table_and_verdict(capsys):
    from asynctc.core import records
    from asynctc.tma import equal_bytes as E
    rows = []
    for box, n in (("16x16", 512), ("64x64", 8192), ("128x64", 16384)):
        for v, g in (("tma", 3600.0), ("cp_async", 3500.0)):
            rows.append({"variant": v, "fp16_box": box, "box_bytes": n, "kinds": ["loads"],
                         "in_flight_loads": 98304, "gbps": g})
    E.show_same_tiles(records.Record("tma_equal", {}, {"copies": rows}))
    out = capsys.readouterr().out
    assert "the same within 5%" in out
