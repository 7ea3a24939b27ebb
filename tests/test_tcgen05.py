"""Chapter 09 kernels: CPU tests (every configuration compiles to sm_100a cubin, the SASS holds the
tcgen05 instruction classes and no spills, descriptors, validation, refusal on a GPU that is not
compute capability 10.0, the elementwise check can fail) and GPU tests (correctness against float64
on fresh random data; skipped with the reason unless a compute capability 10.0 GPU is present)."""
import numpy as np
import pytest

from asynctc.core import runtime
from asynctc import suites
from asynctc import tcgen05 as T
from asynctc.models.tcgen05 import InstrDescriptor, Tcgen05Descriptor
from asynctc.core.memory import DeviceArray

H200 = runtime.DeviceInfo(name="NVIDIA H200", cc=(9, 0), sm_count=132, max_sm_clock_khz=1980000,
                          mem_clock_khz=3201000, l2_bytes=62914560, smem_optin_bytes=232448,
                          driver_version=13000)
B300 = runtime.DeviceInfo(
    name="NVIDIA B300", cc=(10, 3), sm_count=148, max_sm_clock_khz=2032000, mem_clock_khz=4000000,
    l2_bytes=130023424, smem_optin_bytes=232448, driver_version=13000)


def _ids(cfgs):
    return [c.label().replace(" ", "_").replace(",", "") for c in cfgs]


# ---- compile + SASS (CPU) ---------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", T.SUITE_CONFIGS, ids=_ids(T.SUITE_CONFIGS))
def test_every_config_compiles_to_sm100a_with_tcgen05_sass(cfg):
    ck = T.compile_gemm(cfg)
    assert ck.arch == "sm_100a" and ck.cubin[:4] == b"\x7fELF"
    s = T.sass_summary(cfg)
    full = s["full"]
    slabs = cfg.bk // 64
    # one thread issues BK/16 MMAs per k-tile (unrolled): 4 per 64-element slab
    assert s["UTCHMMA"] == 4 * slabs
    assert s["UTCQMMA"] == 0
    # commits: one per stage release, one for the accumulator
    assert s["UTCBAR"] == 2
    # tcgen05.ld of 32 columns, in a loop over BN/32 chunks
    assert full.get("LDTM.x32") == 1
    # alloc (a retry loop of FIND_AND_SET) + dealloc (AND); relinquish_alloc_permit
    assert s["UTCATOMSWS"] >= 2 and s["UVIRTCOUNT"] == 1
    assert any(k.startswith("UTCATOMSWS") and "FIND_AND_SET" in k for k in full)
    assert any(k.startswith("UTCATOMSWS.AND") for k in full)
    # one TMA load of A and one of Bᵀ per slab
    assert s["UTMALDG"] == 2 * slabs
    assert s["SYNCS"] > 0
    # split by modifier (chapter 09's table): one mbarrier.init (EXCH) per full/empty stage barrier
    # and the done barrier; alloc's FIND_AND_SET and dealloc's AND make up UTCATOMSWS
    syncs, atoms = T.sass_parts(s, "SYNCS"), T.sass_parts(s, "UTCATOMSWS")
    assert sum(syncs.values()) == s["SYNCS"] and syncs["EXCH"] == 2 * cfg.stages + 1
    assert set(atoms) == {"FIND_AND_SET", "AND"} and sum(atoms.values()) == s["UTCATOMSWS"]
    # no local memory, no spills; the static shared memory the smem budget assumes
    assert s["LDL"] == 0 and s["STL"] == 0 and s["spill_bytes"] == 0
    assert s["static_smem"] == T.STATIC_SMEM
    pair_ops = {"UTCHMMA.2CTA", "UTCBAR.2CTA.MULTICAST", "UTMALDG.2D.2CTA", "UCGABAR_ARV",
                "UCGABAR_WAIT"}
    if cfg.cta_group == 2:
        assert pair_ops <= set(full), sorted(full)
        assert any(k.startswith("UTCATOMSWS.2CTA") for k in full)
        assert "UTCHMMA" not in full and "UTCBAR" not in full     # only the pair forms
    else:
        assert not pair_ops & set(full) and not any(".2CTA" in k for k in full)
        assert {"UTCHMMA", "UTCBAR", "UTMALDG.2D"} <= set(full)


def test_sass_does_not_depend_on_descriptor_values():
    """The descriptors are kernel parameters: UTCHMMA reads them from (uniform) registers."""
    text = T.compile_gemm(T.SUITE_CONFIGS[0]).sass()
    lines = [ln for ln in text.splitlines() if "UTCHMMA" in ln]
    assert lines and all("gdesc[UR" in ln and "idesc[UR" in ln for ln in lines)


def test_compile_refuses_other_architectures():
    with pytest.raises(T.Tcgen05Error, match=r"arch='sm_90a'.*sm_100a"):
        T.compile_gemm(T.GemmConfig(), arch="sm_90a")


# ---- descriptors (CPU) ------------------------------------------------------------------------------

def test_instruction_descriptor_bits():
    # f16 × f16 → f32, M=128, N=256, both K-major: D format 1 at bit 4, N>>3 = 32 at bit 17,
    # M>>4 = 8 at bit 24 (PTX ISA "Instruction descriptor", kind::f16). The kernel's descriptor
    # comes from the chapter's model (asynctc.models.tcgen05.InstrDescriptor).
    assert T.GemmConfig("float16", 128, 256).idesc == (1 << 4) | (32 << 17) | (8 << 24) == 0x08400010
    for cfg in T.SUITE_CONFIGS:
        g = InstrDescriptor.decode(cfg.idesc, cta_group=cfg.cta_group)
        assert (g.m, g.n, g.a_dtype, g.b_dtype, g.d_dtype) == (cfg.bm, cfg.bn, cfg.dtype, cfg.dtype, "float32")
        assert (g.a_major, g.b_major, g.sparse, g.saturate) == ("K", "K", 0, 0)


def test_smem_descriptor_bits():
    d = T.GemmConfig().a_desc
    # LBO 16 B -> 1 at bit 16; SBO 1024 B -> 64 at bit 32; version 0b001 at bit 46; 128B swizzle
    # = 2 at bit 61 (PTX ISA "Shared memory descriptor", tcgen05)
    assert d == (1 << 16) | (64 << 32) | (1 << 46) | (2 << 61) == 0x4000404000010000
    f = Tcgen05Descriptor.decode(d + (0x1A400 >> 4))
    assert (f.start_address, f.lbo, f.sbo, f.base_offset, f.lbo_mode, f.swizzle) == \
        (0x1A400, 16, 1024, 0, 0, "128B")
    assert T.GemmConfig().a_desc == T.GemmConfig().b_desc == d


# ---- validation (CPU) -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,field", [
    (dict(dtype="float8_e4m3fn"), "dtype='float8_e4m3fn'"),
    (dict(cta_group=3), "cta_group=3"),
    (dict(bm=64), "bm=64"),
    (dict(bm=256), "bm=256"),                       # M=256 needs the pair
    (dict(bm=128, cta_group=2), "bm=128"),
    (dict(bn=48), "bn=48"),
    (dict(bn=512), "bn=512"),
    (dict(bk=32), "bk=32"),
    (dict(bk=96), "bk=96"),
    (dict(stages=0), "stages=0"),
    (dict(stages=9), "stages=9"),
    (dict(bn=256, bk=256, stages=3), "stages=3"),   # 3 × 196608 B: over 227 KiB
    (dict(bn=128.0), "bn=128.0"),
    (dict(stages=True), "stages=True"),
])
def test_config_validation_names_field_value_rule(kwargs, field):
    with pytest.raises(T.Tcgen05Error) as e:
        T.GemmConfig(**kwargs)
    msg = str(e.value)
    assert msg.startswith(field + ":"), msg
    assert len(msg) > len(field) + 20                 # a rule follows


def test_smem_budget_edge():
    ok = T.GemmConfig("float16", 128, 256, 64, 4, 1)
    assert ok.smem_bytes + T.STATIC_SMEM <= T.SMEM_LIMIT
    with pytest.raises(T.Tcgen05Error, match=r"stages=5: .*227 KiB"):
        T.GemmConfig("float16", 128, 256, 64, 5, 1)
    assert T.GemmConfig(bn=96).tmem_columns == 128 and T.GemmConfig(bn=32).tmem_columns == 32
    assert T.GemmConfig("float16", 256, 256, 64, 4, 2).b_rows_per_cta == 128


def test_operands_checked():
    cfg = T.GemmConfig()
    a = np.ones((64, 40), np.float16)
    with pytest.raises(T.Tcgen05Error, match=r"^K=36"):
        T.check_operands(np.ones((64, 36), np.float16), np.ones((36, 64), np.float16), cfg)
    with pytest.raises(T.Tcgen05Error, match=r"^b.shape=\(48, 64\)"):
        T.check_operands(a, np.ones((48, 64), np.float16), cfg)
    with pytest.raises(T.Tcgen05Error, match=r"^b.dtype='float32'"):
        T.check_operands(a, np.ones((40, 64), np.float32), cfg)
    with pytest.raises(T.Tcgen05Error, match=r"^a.shape=\(40,\)"):
        T.check_operands(np.ones(40, np.float16), np.ones((40, 64), np.float16), cfg)
    assert T.check_operands(a, np.ones((40, 24), np.float16), cfg) == (64, 24, 40)


# ---- refusal on a GPU that is not compute capability 10.0 (CPU) ------------------------------------

@pytest.fixture
def no_gpu_allowed(monkeypatch):
    """Any attempt to allocate or launch fails the test."""
    def boom(*_a, **_k):
        raise AssertionError("reached the GPU")
    monkeypatch.setattr(DeviceArray, "from_host", classmethod(boom))
    monkeypatch.setattr(DeviceArray, "empty", classmethod(boom))
    monkeypatch.setattr(runtime, "launch", boom)
    monkeypatch.setattr(runtime, "device", boom)


@pytest.mark.parametrize("info,expect", [
    (H200, r"tcgen05 needs sm_100 \(compute capability 10\.0\); this GPU is 9\.0 \(NVIDIA H200\)$"),
    (B300, r"this GPU is 10\.3 \(NVIDIA B300\): sm_100a cubins run only on 10\.0"),
    (None, r"tcgen05 needs sm_100 \(compute capability 10\.0\); no GPU is usable here"),
])
def test_run_refuses_before_touching_the_gpu(monkeypatch, no_gpu_allowed, info, expect):
    monkeypatch.setattr(runtime, "device_info", lambda: info)
    cfg = T.GemmConfig()
    a, b = T.random_operands(128, 128, 64, "float16")
    for call in (lambda: T.run_gemm(a, b, cfg), lambda: T.verify_gemm(cfg),
                 lambda: T.launcher(cfg, None, None, None, None), lambda: T.measure_tcgen05()):
        with pytest.raises(T.WrongGPUError, match=expect):
            call()
    # the refusal comes first even for bad operands
    with pytest.raises(T.WrongGPUError):
        T.run_gemm(a[:, :36], b[:36], cfg)


def test_suite_registered_for_sm100a():
    measure, summarize, arch = suites.SUITES["tcgen05"]
    assert measure is T.measure_tcgen05 and summarize is T.summarize_tcgen05 and arch == "sm_100a"


# ---- the check itself can fail (CPU) ---------------------------------------------------------------

def test_elementwise_check_catches_one_wrong_element(rng):
    cfg = T.GemmConfig()
    a, b = T.random_operands(96, 80, 512, "float16", rng)
    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    assert T.compare(exact, a, b, cfg).passed
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    i, j = rng.integers(96), rng.integers(80)
    wrong = exact.copy()
    wrong[i, j] += np.float32(4 * T.error_bound(512) * mag[i, j])
    chk = T.compare(wrong, a, b, cfg)
    assert not chk.passed and chk.bad == 1
    # the largest product missing from one element (a k-step read from the wrong place)
    p = a[i].astype(np.float64) * b[:, j].astype(np.float64)
    wrong = exact.copy()
    wrong[i, j] -= np.float32(p[np.argmax(np.abs(p))])
    assert not T.compare(wrong, a, b, cfg).passed
    unwritten = exact.copy()
    unwritten[i, j] = np.nan
    chk = T.compare(unwritten, a, b, cfg)
    assert not chk.passed and chk.unwritten == 1


# ---- GPU (compute capability 10.0 only) ------------------------------------------------------------

@pytest.mark.gpu(arch="sm_100a")
@pytest.mark.parametrize("cfg", T.SUITE_CONFIGS, ids=_ids(T.SUITE_CONFIGS))
def test_gemm_matches_float64(cfg, rng):
    for shape in T.check_shapes(cfg):
        chk = T.verify_gemm(cfg, shape, rng)
        assert chk.passed, chk.as_dict()


@pytest.mark.gpu(arch="sm_100a")
def test_gemm_larger_problem(rng):
    cfg = T.GemmConfig("bfloat16", 256, 256, 64, 4, 2)
    chk = T.verify_gemm(cfg, (1024 + 256, 768 + 32, 2048 + 8), rng)
    assert chk.passed, chk.as_dict()


def test_error_word_decoded():
    assert "empty mbarrier" in T._decode_error(1 | (1 << 8))
    assert "accumulator (done mbarrier)" in T._decode_error(1 | (3 << 8))
    assert "cluster=(2, 1, 1)" in T._decode_error(2)


@pytest.mark.parametrize("cfg", T.SUITE_CONFIGS, ids=_ids(T.SUITE_CONFIGS))
def test_mma_reads_what_tma_wrote(cfg):
    """The kernel's k-step addressing (kstep_offsets, the mirror of its formula) against the layout
    model: for each operand slab as TMA writes it (K-major, 128-byte swizzle, one box per 64
    elements of K), the descriptor of k-step s — start = stage part + offset, LBO 16, SBO 1024 —
    reads exactly elements k = 16 s .. 16 s + 15 of every row. The K-major SWIZZLE_128B canonical
    layout is the same for tcgen05 as for wgmma (PTX ISA 9.7.16.4 / 9.7.15.5.1.2), so the sm_90
    model of asynctc.models.descriptors applies."""
    from asynctc.models import descriptors as D
    base = 0x4000                                         # any 1024-aligned stage address
    for operand, rows in (("A", cfg.rows_per_cta), ("B", cfg.b_rows_per_cta)):
        tile = D.OperandTile(rows, cfg.bk, cfg.dtype, "K", 128)
        assert tile.box_pitch == rows * 128 and tile.n_boxes == cfg.bk // 64
        where = tile.tma_addresses(base)                  # (rows, bk): where TMA put each element
        offs = T.kstep_offsets(cfg, operand)
        assert offs == [tile.step_offset(s) for s in range(cfg.bk // 16)]
        for s, off in enumerate(offs):
            tc = Tcgen05Descriptor.decode(cfg.a_desc + ((base + off) >> 4))
            d = D.WgmmaDescriptor(tc.start_address, tc.lbo, tc.sbo, int(tc.swizzle.rstrip("B")))
            read = D.read_addresses(d, "K", cfg.dtype, rows)
            assert np.array_equal(read, where[:, 16 * s:16 * s + 16]), (operand, s)


def test_register_bill_motivates_tmem_and_its_figure_draws():
    """Chapter 09 §1: one 128×256 accumulator fits chapter 06's register split, two (or a 256×256
    tile) do not whatever the split — 65536 values need the whole file — while TMEM takes 256 / 512
    columns. The figure draws without measuring."""
    import matplotlib
    matplotlib.use("Agg")
    from asynctc.tcgen05 import figures, lesson
    bill = lesson.register_bill()
    assert [r["fits"] for r in bill] == [True, False, False]
    assert [r["tmem_cols"] for r in bill] == [256, 512, 256]          # per SM: the 256×256 is a pair's
    assert [r["ctas"] for r in bill] == [1, 1, 2]
    assert all(r["acc"] >= 65536 for r in bill[1:])
    assert [r["per_thread"] for r in bill] == [154, 282, 282]          # 128 + 26, then 256 + 26, of 232
    assert [r["total"] for r in bill] == [44544, 77312, 77312]          # 09 §1's story: 77312 > 65536
    fig = figures.accumulator_homes(bill)
    assert len(fig.axes) == 2
