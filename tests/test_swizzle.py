"""asynctc.swizzle — chapter 07's swizzle experiment (CPU): the SWIZZLE build of chapter 06's kernel
derived from one layout model, the stage dry run that replays the kernel's address arithmetic, the
bank model and its frozen prediction, the SASS facts Nsight Compute's LSU counters depend on, the
suite's plumbing against an emulated kernel, and the tile / stage / register budget table; the
row-box variants (128-byte layout, R boxes along the rows): validation, defines, the same stage
image, R× the UTMALDG, the four swizzle cubins unchanged by the ROW_BOXES define; the wgmma-only
variants (tma_once: stages loaded once): validation, defines, their reference against a
brute-force emulation of the ring (and wrong stage mappings that it must reject), cubins, tables
and the outcome of their frozen prediction.
GPU (marker gpu): every variant against float64 (the wgmma-only ones against their reference)."""
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from asynctc import swizzle as S
from asynctc import warp_specialization as W
from asynctc.core import records, runtime
from asynctc.models import descriptors as D
from asynctc.models.layout import SmemTile

from fakes import FakeArray
from test_matmul import _host, emulate_edges, emulated  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parent.parent
BASE = S.base_config()


# ---- the SWIZZLE build: validation and the numbers it gets from the model ----------------------

def test_the_ladder_keeps_its_defines():
    """The default (128-byte) swizzle adds no define, so the ladder's cache keys and cubins stay
    (tests/test_matmul.py checks the cubins byte for byte against tests/ch06_ladder_cubins.json)."""
    for dt in W.DTYPES:
        for c in W.rung_configs(dt) + W.correctness_configs():
            if isinstance(c, W.WSConfig):
                assert c.swizzle == 128 and c.swizzle_defines() == {}
                assert "SWIZZLE" not in c.defines and "swizzle" not in c.label()
    assert BASE.replace(swizzle=64).label().endswith(" swizzle:64")


@pytest.mark.parametrize("kw, field, rule", [
    (dict(swizzle=48), "swizzle=48", "0 \\(none\\), 32, 64 or 128"),
    (dict(swizzle=True), "swizzle=True", "0 \\(none\\), 32, 64 or 128"),
    (dict(swizzle=64, b_major="MN"), "swizzle=64", "K-major B only"),
    (dict(swizzle=32, persistent=True, cluster=2), "swizzle=32", "cluster=1"),
])
def test_swizzle_validation_names_field_and_rule(kw, field, rule):
    with pytest.raises(W.WarpSpecializationError, match=f"^{field}: .*{rule}"):
        BASE.replace(**kw)


# swizzle → (boxes along K, elements per box, descriptor layout type, SBO)
GEOMETRY = {128: (1, 64, 1, 1024), 64: (2, 32, 2, 512), 32: (4, 16, 3, 256), 0: (8, 8, 0, 128)}


@pytest.mark.parametrize("sw", S.SWIZZLES)
def test_boxes_maps_and_descriptors_come_from_the_layout_model(sw):
    cfg = BASE.replace(swizzle=sw)
    nb, cols, lt, sbo = GEOMETRY[sw]
    ta, tb = cfg.stage_tiles()
    assert cfg.k_boxes == nb == ta.n_boxes == tb.n_boxes
    # the tensor maps: box (rows, one swizzle span of K), the swizzle itself
    assert cfg.a_box == SmemTile(cfg.bm, cols, "float16", sw) == ta.smem_tile()
    assert cfg.b_load_box == SmemTile(cfg.bn, cols, "float16", sw)
    assert cfg.a_box.tensor_map_args()["box_dim"] == (cfg.bm, cols)
    assert cfg.a_box.tensor_map_args()["swizzle"] == sw
    # the descriptor templates: layout type, LBO, SBO of the stage tiles
    da, db = (D.decode(x) for x in cfg.descriptor_templates())
    assert da.layout_type == db.layout_type == lt and da.sbo == db.sbo == sbo
    if sw:
        assert da.lbo == db.lbo == 16                       # unused ("assumed 1") when swizzled
    else:
        assert (da.lbo, db.lbo) == (cfg.bm * 16, cfg.bn * 16)   # next 16-byte K column = next box
    assert da.start_address == db.start_address == 0
    d = cfg.defines
    if sw == 128:
        return
    assert (d["SWIZZLE"], d["K_BOXES"], d["K_BOX_ELEMS"]) == (sw, nb, cols)
    assert d["K_BOXES"] * d["K_BOX_ELEMS"] == cfg.bk
    # no padding: the boxes fill the stage exactly, so expect_tx stays the stage's bytes
    assert d["K_BOXES"] * (d["A_KBOX_BYTES"] + d["B_BOX_BYTES"]) == cfg.stage_bytes
    assert d["A_KBOX_BYTES"] == ta.box_pitch and d["B_BOX_BYTES"] == tb.box_pitch
    assert d["A_ATOM_BYTES"] * (cfg.bm // 64) == d["A_KBOX_BYTES"]
    assert d["A_KSTEP_OFFSETS"] == "{" + ",".join(str(ta.step_offset(s)) for s in range(4)) + "}"
    assert d["B_KSTEP_OFFSETS"] == "{" + ",".join(str(tb.step_offset(s)) for s in range(4)) + "}"
    # every box starts on its swizzle pattern's repeat (TMA destination and base offset 0)
    assert d["A_KBOX_BYTES"] % ta.alignment == 0 and d["B_BOX_BYTES"] % tb.alignment == 0
    assert cfg.stage_bytes % 1024 == 0


def test_64B_swizzle_splits_a_64_element_row_into_two_boxes():
    """The issue's case: with a 64-byte swizzle a 64-element fp16 K row is two 64-byte swizzle
    atoms — two boxes of 32 elements along K, k-steps 0-1 in the first, 2-3 in the second."""
    cfg = BASE.replace(swizzle=64)
    ta, _ = cfg.stage_tiles()
    assert (ta.n_boxes, ta.box_cols, ta.box_pitch) == (2, 32, cfg.bm * 64)
    assert [ta.step_offset(s) for s in range(4)] == [0, 32, cfg.bm * 64, cfg.bm * 64 + 32]
    box = cfg.a_box
    assert box.inner_bytes == 64 and box.row_pitch == 64 and box.swizzle == 64
    # element (row 1, col 0) of box 1 = A[1, 32]: one 64-byte row down, no XOR yet (row 1 is the
    # second half of the first 128-byte line)
    assert box.byte_offset(1, 0) == 64 and box.byte_offset(2, 0) == 128 + 16


# ---- row boxes: the 128-byte layout loaded as R boxes along the rows ---------------------------

@pytest.mark.parametrize("kw, rule", [
    (dict(row_boxes=3), "must divide bm=128 into boxes of a multiple of 8 rows"),
    (dict(row_boxes=32), "must divide bm=128 into boxes of a multiple of 8 rows"),
    (dict(bm=64, consumers=1, row_boxes=16), "must divide bm=64 into boxes of a multiple of 8"),
    (dict(bn=64, row_boxes=16), "must divide bn=64 into boxes of a multiple of 8 rows"),
    (dict(row_boxes=0), "≥ 1"),
    (dict(row_boxes=-2), "≥ 1"),
    (dict(row_boxes=2, swizzle=64), "128-byte swizzle.*here swizzle=64"),
    (dict(row_boxes=2, b_major="MN"), "K-major B.*here b_major='MN'"),
    (dict(row_boxes=2, cluster=2), "cluster=1.*here cluster=2"),
    (dict(row_boxes=2, edges=True), "no edges.*here edges=True"),
])
def test_row_boxes_validation_names_field_and_rule(kw, rule):
    with pytest.raises(W.WarpSpecializationError, match=f"^row_boxes={kw['row_boxes']}: .*{rule}"):
        BASE.replace(**kw)
    with pytest.raises(W.WarpSpecializationError, match="^row_boxes=True: must be an integer"):
        BASE.replace(row_boxes=True)


def test_row_boxes_one_adds_no_define():
    """row_boxes=1 (the default) sets no ROW_BOXES define: every existing cache key and cubin
    stays (the ladder's: tests/test_matmul.py against tests/ch06_ladder_cubins.json; the four
    swizzle variants: test_swizzle_cubins_unchanged_by_row_boxes)."""
    for c in S.swizzle_variants() + [W.RUNGS[4].make("float16"), W._ws("float16")]:
        assert c.row_boxes == 1 and "ROW_BOXES" not in c.defines and "row_boxes" not in c.label()


@pytest.mark.parametrize("r", S.ROW_BOXES)
def test_row_boxes_change_only_the_boxes(r):
    """R row boxes: the tensor maps' boxes are bm/R and bn/R rows of one 128-byte swizzle row;
    every other define (layout, descriptors, k-steps) is the one-box variant's, and the stage
    bytes (expect_tx) are the same."""
    cfg = BASE.replace(row_boxes=r)
    assert cfg.a_box == SmemTile(cfg.bm // r, 64, "float16", 128)
    assert cfg.b_load_box == SmemTile(cfg.bn // r, 64, "float16", 128)
    assert cfg.a_box.tensor_map_args()["box_dim"] == (cfg.bm // r, 64)
    assert cfg.a_box.tensor_map_args()["swizzle"] == 128
    assert {k: v for k, v in cfg.defines.items() if k != "ROW_BOXES"} == BASE.defines
    assert cfg.defines["ROW_BOXES"] == r
    assert cfg.descriptor_templates() == BASE.descriptor_templates()
    assert cfg.stage_bytes == BASE.stage_bytes and cfg.smem_total == BASE.smem_total
    assert cfg.label() == BASE.label() + f" row_boxes:{r}"
    assert S.tma_loads_per_stage(cfg) == 2 * r and S.variant_key(cfg) == f"128x{r}"
    # every box starts on the 1024-byte repeat of the 128-byte swizzle
    assert (cfg.a_box.rows * 128) % 1024 == 0 and (cfg.b_load_box.rows * 128) % 1024 == 0


@pytest.mark.parametrize("r", S.ROW_BOXES)
@pytest.mark.parametrize("base", [BASE, BASE.replace(bm=256, bn=128)], ids=lambda c: c.tile_name)
def test_row_box_stage_image_equals_the_one_box_image(base, r):
    """The stage dry run of R row boxes leaves the same bytes in shared memory as the one-box
    128-byte variant (same operands), and wgmma reads every element right from it."""
    one = S.stage_dry_run(base, np.random.default_rng(5), image=True)
    many = S.stage_dry_run(base.replace(row_boxes=r), np.random.default_rng(5), image=True)
    assert np.array_equal(many.pop("image"), one.pop("image"))
    assert many == one == {"a_wrong": 0, "b_wrong": 0, "c_max_err": 0.0}


@pytest.mark.parametrize("wrong", ["64-byte row pitch", "one box", "off the repeat"])
def test_row_box_dry_run_catches_a_wrong_box_offset(wrong, rng):
    """The dry run can fail: row boxes landing at the wrong offset, or only the first one
    loaded, leave a different stage and wgmma reads wrong elements."""
    cfg = BASE.replace(row_boxes=4)
    lay = S.kernel_layout(cfg)
    assert (lay["row_boxes"], lay["a_rbox_bytes"], lay["b_rbox_bytes"]) == (4, 32 * 128, 64 * 128)
    if wrong == "64-byte row pitch":
        lay.update(a_rbox_bytes=32 * 64, b_rbox_bytes=64 * 64)
    elif wrong == "one box":
        lay["row_boxes"] = 1
    else:
        lay.update(a_rbox_bytes=32 * 128 + 128)           # a box 1 row late: not on 1024 B
    r = S.stage_dry_run(cfg, rng, layout=lay)
    assert r["a_wrong"] + r["b_wrong"] > 0 and r["c_max_err"] > 0


def test_row_box_prediction_was_frozen_from_the_model():
    """:data:`PREDICTION_ROW_BOXES` (appended to :data:`PREDICTION`, whose earlier text is
    unchanged) holds the live row-box table and one predicted range per R."""
    assert S.row_box_markdown() in S.PREDICTION_ROW_BOXES
    assert S.PREDICTION.endswith(S.PREDICTION_ROW_BOXES + "\n" + S.PREDICTION_TMA_ONCE)
    assert S.prediction_markdown() in S.PREDICTION.split(S.PREDICTION_ROW_BOXES)[0]
    assert "| yes |" in S.row_box_markdown() and "| NO |" not in S.row_box_markdown()
    assert set(S.PREDICTED_RATIO_ROW_BOXES) == set(S.ROW_BOXES)
    for r, (lo, hi) in S.PREDICTED_RATIO_ROW_BOXES.items():
        assert f"×{r} {lo:.2f}-{hi:.2f}" in S.PREDICTION_ROW_BOXES
        assert S.predicted_ratio(128, r) == (lo, hi)
    assert S.predicted_ratio(64) == S.PREDICTED_RATIO[64] and S.predicted_ratio(64, 2) is None
    assert "2026-11-30" in S.PREDICTION_ROW_BOXES


def test_variants_are_the_swizzles_then_the_row_boxes_then_wgmma_only():
    keys = [S.variant_key(c) for c in S.variants()]
    assert keys == ["128", "64", "32", "0", "128x2", "128x4", "128x8", "128x16",
                    "128once", "64once", "32once", "0once"]
    assert [S.tma_loads_per_stage(c) for c in S.variants()] == [2, 4, 8, 16, 4, 8, 16, 32,
                                                                 2, 4, 8, 16]
    assert [S.variant_name(c.swizzle, c.row_boxes, c.tma_once) for c in S.variants()][3:5] == \
        ["none", "128B ×2 boxes"]
    assert S.variant_name(32, 1, True) == "32B wgmma only" == S.tma_once_rows(
        {"rows": [{"size": 1, "kernel": "ours", "swizzle": 32, "tma_once": True,
                   "tflops": 1.0}]})[0]["name"]


# ---- the stage dry run: the kernel's address arithmetic in numpy --------------------------------

DRY = [BASE, BASE.replace(bm=256, bn=128), W._ws("float16"), BASE.replace(dtype="bfloat16",
                                                                             out_dtype="bfloat16"),
       W._ws2("float16").replace(edges=True, tma_store=True, out_dtype="float16"),
       W.WSConfig(dtype="float8_e4m3fn", out_dtype="bfloat16")]


@pytest.mark.parametrize("sw", S.SWIZZLES)
@pytest.mark.parametrize("base", DRY, ids=lambda c: c.label())
def test_stage_dry_run_reads_every_operand_element_right(base, sw, rng):
    r = S.stage_dry_run(base.replace(swizzle=sw), rng)
    assert r == {"a_wrong": 0, "b_wrong": 0, "c_max_err": 0.0}


@pytest.mark.parametrize("sw", (64, 32, 0))
@pytest.mark.parametrize("wrong", ["128B k-steps", "128B atom", "128B descriptors", "one box"])
def test_stage_dry_run_catches_a_number_not_from_the_model(sw, wrong, rng):
    """The dry run can fail: each number of the 128-byte layout, put into a narrower variant,
    makes wgmma read wrong elements."""
    cfg = BASE.replace(swizzle=sw)
    lay = S.kernel_layout(cfg)
    ref = S.kernel_layout(BASE)
    if wrong == "128B k-steps":
        lay.update(a_ksteps=ref["a_ksteps"], b_ksteps=ref["b_ksteps"])
    elif wrong == "128B atom":
        lay["a_atom_bytes"] = ref["a_atom_bytes"]
    elif wrong == "128B descriptors":
        lay.update(desc_a0=ref["desc_a0"], desc_b0=ref["desc_b0"])
    else:
        lay.update(k_boxes=1)           # the producer loads only the first box along K
    try:
        r = S.stage_dry_run(cfg, rng, layout=lay)
    except IndexError:
        return                          # a descriptor reading outside the stage: also caught
    assert r["a_wrong"] + r["b_wrong"] > 0 and r["c_max_err"] > 0


# ---- the bank model -------------------------------------------------------------------------------

def test_wavefronts_count_distinct_words_per_bank():
    lanes = np.arange(32)
    assert S.wavefronts(lanes * 4, 4) == 1                 # 32 banks, one word each
    assert S.wavefronts(np.zeros(32, int), 4) == 1         # one word broadcast
    assert S.wavefronts(lanes * 128, 4) == 32              # one bank, 32 words
    assert S.wavefronts(lanes * 8, 4) == 2                 # stride 2 words: 2-way
    assert S.wavefronts(lanes * 16, 16) == 4 == S.ideal_wavefronts(lanes * 16, 16)   # LDS.128
    assert S.wavefronts(np.arange(8) * 128, 16) == 8       # 8 rows of 128 B, same 16-byte column
    with pytest.raises(ValueError):
        S.wavefronts([], 4)


@pytest.mark.parametrize("sw", S.SWIZZLES)
def test_wgmma_reads_and_tma_writes_are_conflict_free_in_every_variant(sw):
    m = S.bank_model(BASE.replace(swizzle=sw))
    for k in ("a_read", "b_read", "a_read_kstep", "b_read_kstep", "a_write", "b_write"):
        assert m[k] == 1.0, (k, m[k])
    assert m["tma_loads_per_stage"] == 2 * GEOMETRY[sw][0]


def test_plain_rows_conflict_as_the_swizzle_would_prevent():
    """An unswizzled tile with 128-, 64-, 32-byte rows read in 8-row × 16-byte blocks: 8, 4, 2
    wavefronts per 128 bytes; 16-byte rows (the interleaved layout) 1."""
    assert [S.plain_rows_conflicts(b)["factor"] for b in (128, 64, 32, 16)] == [8, 4, 2, 1]
    # and the same tile *with* a 128-byte swizzle is conflict-free
    t = SmemTile(64, 64, "float16", 128)
    assert S.read_conflicts(t.offsets(), 2)["factor"] == 1.0


def test_prediction_was_frozen_from_the_model():
    """:data:`PREDICTION` holds the bank model's table as it was before the GPU run; the live model
    still gives it (a change to the model must leave the frozen text alone and say so)."""
    assert S.prediction_markdown() in S.PREDICTION
    assert "Prediction for the H200 run" in S.PREDICTION
    assert set(S.PREDICTED_RATIO) == set(S.SWIZZLES)
    for sw, (lo, hi) in S.PREDICTED_RATIO.items():
        name = "none" if sw == 0 else f"{sw} B"
        if sw != 128:
            assert f"{name} {lo:.2f}-{hi:.2f}" in S.PREDICTION


# ---- the cubins: what the LSU counters can see -----------------------------------------------------

@pytest.mark.parametrize("cfg", S.variants(), ids=S.variant_key)
def test_cubins_have_no_lsu_shared_traffic_and_one_tma_per_box(cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = W.compile_ws(cfg)
    s = S.shared_lsu_instructions(ck)
    assert s["lsu_shared"] == 0, s["lsu_opcodes"]     # ncu's LSU bank-conflict counters read 0
    assert s["utmaldg"] == 2 * cfg.k_boxes * cfg.row_boxes == S.tma_loads_per_stage(cfg)
    assert s["hgmma"] == 4                            # 4 k-steps × 1 atom per consumer
    assert ck.resources.spill_stores == 0 and ck.resources.registers == 168


#: sha256 of the four swizzle variants' cubins (NVRTC 13.5). Made before the ROW_BOXES define
#: existed (commit 496ebd2's kernel; recompiled after the define was added: equal); regenerated for
#: the ring type (kernels/ring.cuh: one bounded wait, a derived error tag), which changed every
#: chapter-06 cubin — the ROW_BOXES = 1 builds still add no define and compile the same code.
SWIZZLE_CUBINS = {"nvrtc": (13, 5), "128": "c0a18e84203e2a15eb84f30393a2bb1d4f461cf102d4aec2f25c70ec0b9472fa",
                  "64": "4885d5cd09c664ed9ffec8f094cc0068664ac6e9859c9856f35d76ad01f82727",
                  "32": "92865e865bb805691acc924893c3c169e178912e6f6abdfbe960b9f6a061a6a4",
                  "0": "19269fb59885792534f85bab4b25823923c1471fd07994d7c9c4fba3fcdc0efd"}


@pytest.mark.parametrize("cfg", S.swizzle_variants(), ids=S.variant_key)
def test_swizzle_cubins_unchanged_by_row_boxes(cfg):
    import hashlib
    if runtime.nvrtc_version() != SWIZZLE_CUBINS["nvrtc"]:
        pytest.skip(f"hashes made with NVRTC {SWIZZLE_CUBINS['nvrtc']}, this is "
                    f"{runtime.nvrtc_version()}: cubins differ across NVRTC versions")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = hashlib.sha256(W.compile_ws(cfg).cubin).hexdigest()
    assert got == SWIZZLE_CUBINS[S.variant_key(cfg)]


# ---- Nsight Compute output ------------------------------------------------------------------------

NCU_CSV = """==PROF== Connected to process 1234
==PROF== Profiling "gemm_warp_specialized": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","l1tex__data_bank_reads.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
"","","","","","",""
"0","1234","python","h","gemm_warp_specialized","1,073,741,824","0"
"1","1234","python","h","gemm_warp_specialized","1073741900","0"
==PROF== Disconnected from process 1234
"""


def test_parse_ncu_csv_skips_log_and_units():
    rows = S.parse_ncu_csv(NCU_CSV)
    assert len(rows) == 2
    assert rows[0]["l1tex__data_bank_reads.sum"] == 1073741824.0
    assert rows[1]["Kernel Name"] == "gemm_warp_specialized"
    assert S.parse_ncu_csv("==PROF== nothing\n") == []
    assert S.metric_base("l1tex__data_bank_reads.sum") == "l1tex__data_bank_reads"
    assert all("__" in S.metric_base(m) for m in S.NCU_METRICS)


def _tool():
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_swizzle", ROOT / "tools" / "gpu_swizzle.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FAKE_NCU = """#!/bin/sh
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.1.0.0";;
  --query-metrics) printf "Device GH100\nl1tex__data_bank_reads  Counter  # of bank reads\n%s\n" \
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld  Counter  # of conflicts";;
  *) echo "$@" > "$(dirname "$0")/args"
     echo '"ID","Kernel Name","l1tex__data_bank_reads.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"'
     echo '"","","sector","sector"'
     for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
       echo "\"$i\",\"gemm_warp_specialized\",\"$((100 + i))\",\"0\""; done;;
esac
"""


def test_gpu_tool_reads_ncu_and_keeps_what_it_lacks(tmp_path, monkeypatch):
    """The tool's ncu path against a stand-in ncu: the metrics it does not know are dropped and
    listed, the profile is asked for one launch per variant of the kernel, the rows are mapped to
    the variants (swizzles, then row boxes) in launch order."""
    tool = _tool()
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU)
    fake.chmod(0o755)
    monkeypatch.setattr(tool, "find_ncu", lambda: str(fake))
    r = tool.run_ncu(lambda s: None)
    assert r["available"] and r["version"] == "Version 2025.1.0.0"
    assert r["metrics"] == ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                            "l1tex__data_bank_reads.sum"]
    assert len(r["metrics_missing"]) == len(S.NCU_METRICS) - 2
    assert [r["variants"][S.variant_key(c)]["l1tex__data_bank_reads.sum"] for c in S.variants()] \
        == [100.0 + i for i in range(12)]
    args = (tmp_path / "args").read_text()
    assert "--launch-count 12" in args and "regex:gemm_warp_specialized" in args
    assert args.rstrip().endswith("--ncu-child")
    monkeypatch.setattr(tool, "find_ncu", lambda: None)
    r = tool.run_ncu(lambda s: None)
    assert not r["available"] and "no ncu" in r["why"]
    fake.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM'\n")
    monkeypatch.setattr(tool, "find_ncu", lambda: str(fake))
    r = tool.run_ncu(lambda s: None)
    assert not r["available"] and "ERR_NVGPUCTRPERM" in r["why"]


def test_gpu_tool_without_a_gpu_says_so():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_swizzle.py"), "--quick",
                        "--out", "/tmp/asynctc-swizzle-test"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "no live sm_90a GPU" in p.stdout


# ---- the suite against an emulated kernel -----------------------------------------------------------

def test_swizzle_suite_dry_run(emulated, monkeypatch):  # noqa: F811
    """measure_swizzle with the kernel emulated (tests/test_matmul.py's emulator: A·B through the
    tensor maps), the tensor maps checked to carry each variant's box and swizzle; then the
    summary reads its own record."""
    seen = []

    def launch(ck, grid, block, *args, **kw):
        cfg = ck.cfg
        assert args[0][2] == cfg.a_box and args[1][2] == cfg.b_load_box   # ("map", x, tile)
        assert (int(args[7]), int(args[8])) == cfg.descriptor_templates()
        seen.append(S.variant_key(cfg))
        if cfg.tma_once:                  # the ring walked as the kernel walks it
            m, n, k = (int(x) for x in args[4:7])
            assert grid == W.grid_size(cfg, m, n) and block == cfg.threads
            c = ring_emulation(_host(args[0][1]), _host(args[1][1]), cfg, m, n, k, grid)
            args[3].h[...] = c.astype(args[3].h.dtype)
        else:
            emulate_edges(ck, grid, block, *args, **kw)
    monkeypatch.setattr(runtime, "launch", launch)
    # set where they are read: measure_swizzle in swizzle/suite.py, check_variants in launch.py
    monkeypatch.setattr(S.suite, "DeviceArray", FakeArray)
    monkeypatch.setattr(S.suite, "shared_lsu_instructions", lambda ck: {"lsu_shared": 0})
    monkeypatch.setattr(S.launch, "CHECK_SHAPES", ((256, 512, 192),))
    monkeypatch.setattr(S.launch, "TMA_ONCE_CHECK_SHAPES", ((512, 768, 384),))
    monkeypatch.setattr("asynctc.core.checks.FULL_CHECK_MAX", 64)
    ncu = {"available": True, "variants": {str(s): {
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0.0,
        "l1tex__data_bank_reads.sum": 1e9, "gpu__time_duration.sum": 1e5 + i}
        for i, s in enumerate(S.variant_key(c) for c in S.variants())}}
    r = S.measure_swizzle(sizes=(256,), ncu=ncu)
    keys = [S.variant_key(c) for c in S.variants()]
    assert [c["variant"] for c in r["checks"]] == keys
    assert all(c["passed"] for c in r["checks"])
    assert set(seen) == set(keys)
    ours = [x for x in r["rows"] if x["kernel"] == "ours"]
    assert [x["variant"] for x in ours] == keys
    assert [x["row_boxes"] for x in ours] == [1, 1, 1, 1, 2, 4, 8, 16, 1, 1, 1, 1]
    assert [bool(x.get("tma_once")) for x in ours] == [False] * 8 + [True] * 4
    assert [c["shape"] for c in r["checks"] if c.get("tma_once")] == [[512, 768, 384]] * 4
    once = r["table_tma_once"]
    assert [t["variant"] for t in once] == ["128once", "64once", "32once", "0once"]
    assert once[0]["of_128"] is not None and once[1]["with_tma_of_128"] is not None
    assert all(x["check_rows"]["passed"] for x in r["rows"])
    assert len(r["table"]) == 8 and r["table"][0]["of_128"] == 1.0
    assert [t["tma_loads_per_stage"] for t in r["table"]] == [2, 4, 8, 16, 4, 8, 16, 32]
    assert r["table"][0]["lsu_conflicts"] == 0.0 and r["table"][0]["model_conflicts"] == 1.0
    assert r["table"][5]["model_conflicts"] == 1.0 and r["table"][5]["predicted"] == [0.97, 1.01]
    rj = json.loads(json.dumps(r))
    assert rj["variants"]["64"]["defines"]["SWIZZLE"] == 64
    assert rj["variants"]["128x8"]["defines"]["ROW_BOXES"] == 8
    assert rj["variants"]["128x8"]["tma_loads_per_stage"] == 16
    rows = S.ncu_rows(r)
    assert [x["variant"] for x in rows] == keys[:8] and rows[7]["tma_loads_per_stage"] == 32
    assert [x["variant"] for x in S.ncu_rows(r, tma_once=True)] == keys
    rec = records.Record("swizzle", {"gpu": "emulated", "date": "2026-12-02"}, r, live=True)
    text = S.summarize_swizzle(rec)
    assert "12 checks passed" in text and "Nsight Compute: yes" in text
    assert text.splitlines()[-1].startswith("(! = outside the prediction")
    timed = [ln for ln in text.splitlines() if ln.strip().startswith("256 ")]
    assert len(timed) == 12 and "128B ×16 boxes" in timed[7] and " 32 " in timed[7]
    assert "none wgmma only" in timed[-1] and "NOT a GEMM" in text
    assert "128B ×8 boxes" in S.ncu_text(r) and "32B wgmma only" in S.ncu_text(r)
    four = S.summarize_swizzle(rec, row_boxes=False)
    assert "wgmma only" not in four and "wgmma only" not in S.ncu_text(r, row_boxes=False)


# ---- wgmma only (tma_once): the stages loaded once ---------------------------------------------------

ONCE = S.tma_once_variants()


def test_tma_once_is_refused_outside_the_swizzle_base():
    for bad, field in ((dict(persistent=False), "persistent"), (dict(cluster=2), "cluster"),
                       (dict(b_major="MN"), "b_major"), (dict(row_boxes=2), "row_boxes"),
                       (dict(edges=True), "edges")):
        with pytest.raises(W.WarpSpecializationError, match=rf"tma_once=True: .*{field}="):
            BASE.replace(tma_once=True, **bad)
    with pytest.raises(W.WarpSpecializationError, match="tma_once=True: .*dtype="):
        W.WSConfig(dtype="float8_e4m3fn", out_dtype="bfloat16", persistent=True, tma_once=True)
    with pytest.raises(W.WarpSpecializationError, match="tma_once=1: must be a bool"):
        BASE.replace(tma_once=1)
    with pytest.raises(W.WarpSpecializationError, match=r"K=192: tma_once fills the 4 stages"):
        W.check_shapes(256, 512, 192, ONCE[0])
    W.check_shapes(256, 512, 256, ONCE[0])                      # K = 4 stages · 64: allowed
    W.check_shapes(256, 512, 192, BASE)                         # the others: unchanged
    with pytest.raises(W.WarpSpecializationError, match="cfg.tma_once=False"):
        S.tma_once_plan(BASE, 256, 512, 256, 4)
    with pytest.raises(W.WarpSpecializationError, match="grid=0"):
        S.tma_once_plan(ONCE[0], 256, 512, 256, 0)


def test_tma_once_defines_only_when_on():
    """tma_once=False emits no new define (every other cubin keeps its cache key and bytes:
    tests/test_matmul.py and test_swizzle_cubins_unchanged_by_row_boxes check the bytes);
    True adds TMA_ONCE=1 and nothing else, and the label says so."""
    for c in S.swizzle_variants() + S.row_box_variants():
        assert not c.tma_once and "TMA_ONCE" not in c.defines and "tma_once" not in c.label()
    for dt in W.DTYPES:
        for c in W.rung_configs(dt) + W.correctness_configs():
            if isinstance(c, W.WSConfig):
                assert "TMA_ONCE" not in c.defines
    for c, twin in zip(ONCE, S.swizzle_variants()):
        assert c.defines == {**twin.defines, "TMA_ONCE": 1}
        assert c.label() == twin.label() + " tma_once"
        assert (c.a_box, c.b_load_box) == (twin.a_box, twin.b_load_box)


@pytest.mark.parametrize("cfg", ONCE, ids=S.variant_key)
def test_tma_once_cubin_adds_one_plain_arrive_and_keeps_the_fill(cfg):
    """Against its TMA twin: the same UTMALDG (the one fill) and HGMMA, no spills, and exactly one
    more arrive without a transaction count (SYNCS.ARRIVE.TRANS64.A1T0: the producer's plain
    mbarrier.arrive for the later k-tiles)."""
    from asynctc.core import sass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck, twin = W.compile_ws(cfg), W.compile_ws(cfg.replace(tma_once=False))
    got, was = sass.opcode_counts(ck.sass()), sass.opcode_counts(twin.sass())
    for op in [k for k in set(got) | set(was) if k.startswith(("UTMALDG", "HGMMA"))]:
        assert got.get(op) == was.get(op), op
    arrive = "SYNCS.ARRIVE.TRANS64.A1T0"
    assert got.get(arrive, 0) == was.get(arrive, 0) + 1
    assert ck.resources.spill_stores == 0 and ck.resources.registers == twin.resources.registers


def ring_emulation(a, b, cfg, m, n, k, grid, mapping="kernel"):
    """Brute force: every CTA walks its tiles and k-tiles with one ring counter i, fills stage
    i mod S from its current tile while i < S and never again, and accumulates each k-tile's
    stage product in float64 — what the kernel does. ``mapping`` breaks it on purpose:
    "k_mod_s" (stage k mod S, restarting per tile), "refill" (every tile refills the stages
    with its own first S k-tiles), "gemm" (every k-tile its own data: A·B)."""
    bm, bn, bk, s = cfg.bm, cfg.bn, cfg.bk, cfg.stages
    a, b = a.astype(np.float64), b.astype(np.float64)
    tiles_m, tiles_n, t_k = m // bm, n // bn, k // bk
    c = np.full((m, n), np.nan)
    for cta in range(min(grid, tiles_m * tiles_n)):
        stage = [None] * s
        i = 0
        for item in range(cta, tiles_m * tiles_n, grid):
            m0, n0 = S.tile_origin(cfg, item, tiles_m, tiles_n)
            acc = np.zeros((bm, bn))
            for kk in range(t_k):
                j = kk % s if mapping == "k_mod_s" else i % s
                load = {"kernel": i < s, "k_mod_s": i < s, "refill": kk < s, "gemm": True}[mapping]
                if load:
                    src = kk if mapping in ("refill", "gemm") else i
                    stage[j] = (a[m0:m0 + bm, src * bk:(src + 1) * bk],
                                b[n0:n0 + bn, src * bk:(src + 1) * bk])
                acc += stage[j][0] @ stage[j][1].T
                i += 1
            c[m0:m0 + bm, n0:n0 + bn] = acc
    return c


def test_tma_once_reference_matches_the_ring_and_rejects_wrong_mappings():
    """12 tiles on 5 CTAs (CTAs 0 and 1 take three tiles, the others two), T = 6 k-tiles on 4
    stages (the t-th tile reads stages 2,2,1,1 / 1,1,2,2 times): the reference equals the
    brute-force ring; a per-tile stage index, per-tile refills and the plain product all fail
    its elementwise check — so does one element changed."""
    cfg = ONCE[2]
    m, n, k, grid = 512, 768, 384, 5
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    ref, mag = S.tma_once_reference(a, b, cfg, m, n, k, grid)
    plan = S.tma_once_plan(cfg, m, n, k, grid)
    assert len(plan) == 12 and sorted(p["cta"] for p in plan) == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4]
    assert [p["counts"] for p in plan if p["cta"] == 0] == [[2, 2, 1, 1], [1, 1, 2, 2], [2, 2, 1, 1]]
    good = ring_emulation(a, b, cfg, m, n, k, grid).astype(np.float16)
    chk = S.compare_tma_once(good, ref, mag, k, "float16")
    assert chk.passed and chk.unwritten == 0, chk
    for wrong in ("k_mod_s", "refill", "gemm"):
        c = ring_emulation(a, b, cfg, m, n, k, grid, wrong).astype(np.float16)
        assert not S.compare_tma_once(c, ref, mag, k, "float16").passed, wrong
    one = good.copy()
    one[300, 700] += np.float16(0.25) + abs(one[300, 700]) * np.float16(0.01)
    assert S.compare_tma_once(one, ref, mag, k, "float16").wrong == 1
    hole = good.copy()
    hole[5, 5] = np.nan
    assert S.compare_tma_once(hole, ref, mag, k, "float16").unwritten == 1
    rows = np.array([0, 131, 511])                               # the sampled-row form
    r2, m2 = S.tma_once_reference(a, b, cfg, m, n, k, grid, rows)
    assert np.array_equal(r2, ref[rows]) and np.array_equal(m2, mag[rows])


def test_tma_once_sampled_check_counts_poison_anywhere(monkeypatch):
    monkeypatch.setattr("asynctc.core.checks.FULL_CHECK_MAX", 64)     # one row per 128-row band
    cfg = ONCE[0]
    m, n, k, grid = 512, 768, 256, 3
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    out = ring_emulation(a, b, cfg, m, n, k, grid).astype(np.float16)
    samp = S.TmaOnceSampled(a, b, cfg, grid, rng)
    assert samp.rows.size == 4 and samp.check(out).passed
    out[np.setdiff1d(np.arange(m), samp.rows)[0], 3] = np.nan   # a row the sample skips
    assert not samp.check(out).passed
    wrong = ring_emulation(a, b, cfg, m, n, k, grid, "gemm").astype(np.float16)
    assert not samp.check(wrong).passed


def _once_record(tflops: dict) -> dict:
    """A swizzle record's results at one size: ``tflops`` {variant key: TFLOP/s}."""
    rows = [{"size": 4096, "kernel": "cuBLAS", "swizzle": None, "tflops": 800.0}]
    for key, t in tflops.items():
        once = key.endswith("once")
        rows.append({"size": 4096, "kernel": "ours", "swizzle": int(key.removesuffix("once")),
                     "row_boxes": 1, **({"tma_once": True} if once else {}), "tflops": t})
    return {"rows": rows, "model": [], "checks": []}


WITH_TMA = {"128": 700.0, "64": 670.0, "32": 350.0, "0": 210.0}


@pytest.mark.parametrize("once,outcome", [
    ({"128once": 760.0, "64once": 758.0, "32once": 752.0, "0once": 745.0}, "tma"),
    ({"128once": 760.0, "64once": 720.0, "32once": 390.0, "0once": 240.0}, "wgmma"),
    ({"128once": 760.0, "64once": 750.0, "32once": 570.0, "0once": 470.0}, "both"),
    ({"128once": 760.0, "64once": 750.0, "32once": 750.0, "0once": 240.0}, "mixed")])
def test_tma_once_rows_and_outcome(once, outcome):
    res = _once_record({**WITH_TMA, **once})
    rows = {r["swizzle"]: r for r in S.tma_once_rows(res)}
    assert rows[128]["of_128"] == once["128once"] / 700 and rows[128]["wgmma_share"] is None
    r32 = rows[32]
    assert r32["of_128"] == once["32once"] / once["128once"] and r32["with_tma_of_128"] == 0.5
    assert r32["wgmma_share"] == pytest.approx((1 - r32["of_128"]) / 0.5)
    assert r32["over_tma"] == once["32once"] / 350
    got = S.tma_once_outcome(res)
    assert got["outcome"] == outcome and set(got["shares"]) == {(4096, 32), (4096, 0)}
    text = S.tma_once_text(res)
    assert "NOT a GEMM" in text and "32B wgmma only" in text
    summary = S.summarize_swizzle(res)
    assert "none wgmma only" in summary and summary.splitlines()[-1].startswith("(! = outside")
    assert [t["variant"] for t in S.swizzle_table(res)] == ["128", "64", "32", "0"]
    assert [t["variant"] for t in S.swizzle_table(res, tma_once=True)] == \
        ["128once", "64once", "32once", "0once"]


def test_tma_once_outcome_of_a_record_without_them():
    assert S.tma_once_rows(_once_record(WITH_TMA)) == [] and S.tma_once_text(_once_record(WITH_TMA)) == ""
    assert S.tma_once_outcome(_once_record(WITH_TMA))["outcome"] is None
    res = records.load("swizzle").results                    # the H200 record of today: none yet
    if not any(r.get("tma_once") for r in res["rows"]):
        assert S.tma_once_outcome(res)["outcome"] is None
        assert "wgmma only" not in S.summarize_swizzle(res)


def test_tma_once_prediction_was_frozen_with_its_thresholds():
    p = S.PREDICTION_TMA_ONCE
    assert "2026-11-30" in p and "BEFORE" not in p and "before it" in p
    assert S.PREDICTION.endswith(p)
    for sw, (lo, hi) in S.PREDICTED_RATIO_TMA_ONCE.items():
        assert f"{lo:.2f}-{hi:.2f}" in p
    assert f"s <= {S.TMA_SHARE_MAX}" in p and f"s >= {S.WGMMA_SHARE_MIN}" in p


def test_swizzle_table_marks_measurements_outside_the_prediction():
    rows = [{"size": 8192, "kernel": "cuBLAS", "swizzle": None, "tflops": 760.0}] + \
        [{"size": 8192, "kernel": "ours", "swizzle": s, "tflops": t}
         for s, t in ((128, 720.0), (64, 718.0), (32, 500.0), (0, 500.0))] + \
        [{"size": 8192, "kernel": "ours", "swizzle": 128, "row_boxes": r, "tflops": t}
         for r, t in ((2, 722.0), (8, 360.0))]
    table = S.swizzle_table({"rows": rows, "model": []})
    rb = {r["row_boxes"]: r for r in table if r["row_boxes"] > 1}
    assert rb[2]["of_128"] == 722 / 720 and rb[2]["inside"]            # against 128 B ×1
    assert rb[8]["inside"] is False and rb[8]["tma_loads_per_stage"] == 16
    assert rb[8]["name"] == "128B ×8 boxes" and rb[8]["variant"] == "128x8"
    t = {r["swizzle"]: r for r in table if r["row_boxes"] == 1}
    assert t[128]["inside"] and t[64]["inside"] and t[0]["inside"]
    assert t[32]["inside"] is False and abs(t[64]["of_cublas"] - 718 / 760) < 1e-12
    text = S.summarize_swizzle({"rows": rows, "table": list(t.values()), "checks": []})
    assert "not used (absent)" in text and "!" in [ln for ln in text.splitlines() if "32B" in ln][0]


def _box_rows(tflops: dict, ncu_us: dict | None = None) -> dict:
    """A swizzle record's results with one size: ``tflops`` {variant key: TFLOP/s}, and Nsight
    Compute's durations (µs) per key where given."""
    rows = [{"size": 4096, "kernel": "cuBLAS", "swizzle": None, "tflops": 800.0}]
    for key, t in tflops.items():
        sw, _, rb = key.partition("x")
        rows.append({"size": 4096, "kernel": "ours", "swizzle": int(sw), "row_boxes": int(rb or 1),
                     "tflops": t})
    res = {"rows": rows, "model": []}
    if ncu_us:
        res["ncu"] = {"available": True, "size": 4096,
                      "variants": {k: {"gpu__time_duration.sum": v * 1e3} for k, v in ncu_us.items()}}
    return res


def test_box_count_rows_pair_each_row_box_variant_with_the_swizzle_of_as_many_loads():
    t = {"128": 700.0, "64": 665.0, "32": 350.0, "0": 210.0,
         "128x2": 701.0, "128x4": 699.0, "128x8": 680.0, "128x16": 434.0}
    us = {"128": 250.0, "32": 375.0, "128x4": 245.0, "128x16": 410.0}
    rows = S.box_count_rows(_box_rows(t, us))
    assert [r["loads"] for r in rows] == [2, 4, 8, 16, 32]
    pairs = {r["loads"]: (r["swizzle"] and r["swizzle"]["variant"],
                          r["row_box"] and r["row_box"]["variant"]) for r in rows}
    assert pairs == {2: ("128", "128"), 4: ("64", "128x2"), 8: ("32", "128x4"),
                     16: ("0", "128x8"), 32: (None, "128x16")}
    at8 = rows[2]
    assert at8["swizzle"]["of_128"] == {4096: 350 / 700} and at8["row_box"]["of_128"] == {4096: 699 / 700}
    assert at8["swizzle"]["ncu_of_128"] == 375 / 250 and at8["row_box"]["duration_us"] == 245
    assert rows[1]["row_box"]["duration_us"] is None and rows[1]["row_box"]["ncu_of_128"] is None
    text = S.box_count_text(_box_rows(t, us))
    line8 = next(ln for ln in text.splitlines() if ln.split("|")[0].strip() == "8")
    assert "32B" in line8 and "0.50" in line8 and "375 (1.50)" in line8
    assert "128B ×4 boxes" in line8 and "245 (0.98)" in line8
    line32 = next(ln for ln in text.splitlines() if ln.split("|")[0].strip() == "32")
    assert line32.split("|")[1].strip() == "—" and "0.62" in line32
    assert "ncu µs 4096³" in text


def test_box_count_rows_empty_without_row_boxes_and_summary_can_leave_them_out():
    four = {"128": 700.0, "64": 665.0, "32": 350.0, "0": 210.0}
    assert S.box_count_rows(_box_rows(four)) == [] and S.box_count_text(_box_rows(four)) == ""
    res = _box_rows({**four, "128x2": 701.0, "128x16": 434.0}, {"128": 250.0, "128x16": 410.0})
    res["checks"] = []
    full, four_only = S.summarize_swizzle(res), S.summarize_swizzle(res, row_boxes=False)
    assert "128B ×16 boxes" in full and "boxes" not in four_only
    assert "128B ×16 boxes" in S.ncu_text(res) and "boxes" not in S.ncu_text(res, row_boxes=False)
    assert sum("none" in ln for ln in four_only.splitlines()) == 1


def test_box_count_rows_from_the_h200_record():
    """The record the notebook reads: the pairs at equal box count and their ratios as recorded."""
    res = records.load("swizzle").results
    rows = {r["loads"]: r for r in S.box_count_rows(res)}
    tab = {(r["size"], r["variant"]): r["of_128"] for r in S.swizzle_table(res)}
    for n, (sw, rb) in {8: ("32", "128x4"), 16: ("0", "128x8"), 32: (None, "128x16")}.items():
        assert (rows[n]["swizzle"] or {}).get("variant") == sw and rows[n]["row_box"]["variant"] == rb
        for size, v in rows[n]["row_box"]["of_128"].items():
            assert v == tab[(size, rb)]
    assert rows[2]["row_box"]["ncu_of_128"] == 1.0


def test_swizzle_suite_is_registered():
    from asynctc import suites
    assert suites.SUITES["swizzle"] == (S.measure_swizzle, S.summarize_swizzle, "sm_90a")


# ---- the tile / stage / register budget table ------------------------------------------------------

def test_budget_table_from_the_h200_record():
    path = ROOT / "data" / "h200" / "warp_specialization.json"
    rec = json.loads(path.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = S.budget_table(rec)
    res = rec["results"]
    assert [r["rung"] for r in rows[:2]] == [3, 5]
    assert {(r["tile"], r["stages"]) for r in rows if r["rung"] in (3, 4)} == \
        {(f"{bm}x{bn}x64", s) for bm, bn, _, s in W.TILE_SWEEP}
    for r in rows:
        meas = [x for x in res["rows"] if x.get("label") == r["label"] and x.get("size") == 8192]
        assert r["tflops_8192"] == meas[0]["tflops"]
        assert r["smem_bytes"] == W.WSConfig(bm=int(r["tile"].split("x")[0]),
                                             bn=int(r["tile"].split("x")[1]),
                                             stages=r["stages"]).smem_total
        assert r["source"] == "record" and r["spill_bytes"] == 0
        assert r["cubin_registers"] == r["regs_ptxas"] and r["cubin_spill_bytes"] == 0
        assert (r["regs_producer"], r["regs_consumer"]) == (40, 232)
        assert 0.5 < r["of_cublas_8192"] < 1.1
    md = S.budget_markdown(rows)
    assert md.count("\n") == len(rows) + 1 and "| 5 | 128x256x64/c2 persistent | 4 |" in md


def test_budget_table_compiles_what_the_record_lacks(monkeypatch):
    rec = {"results": {"rows": [], "registers": {}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = S.budget_table(rec, dtype="bfloat16")
    assert all(r["source"] == "cubin" and r["tflops_4096"] is None for r in rows)
    assert all(r["regs_ptxas"] == 168 and r["spill_bytes"] == 0 for r in rows)
    assert "| — | — | — |" in S.budget_markdown(rows)


# ---- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("cfg", S.variants(), ids=S.variant_key)
def test_every_variant_matches_float64(cfg, rng):
    if cfg.tma_once:                       # a different product, on purpose: its own reference
        for shape in S.TMA_ONCE_CHECK_SHAPES:
            c = S.verify_tma_once(cfg, *shape, rng=rng)
            assert c.passed, c.as_dict()
        return
    for shape in S.CHECK_SHAPES:
        c = W.verify(cfg, *shape, rng=rng)
        assert c.passed, c.as_dict()

