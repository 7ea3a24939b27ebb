"""Chapter 04 kernels: CPU tests (compile, SASS, host-side model of every launch, validation) and
GPU tests (single-tile correctness for every supported combination, the mismatch, the peak kernel)."""
import re

import numpy as np
import pytest

from asynctc.models import descriptors as D
from asynctc.core import sass
from asynctc import wgmma as W
from asynctc import wgmma_peak as WP
from fakes import FakeArray

# ---- compile + SASS (CPU) ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,n", [("float16", 8), ("bfloat16", 256), ("float8_e4m3fn", 64),
                                     ("float8_e5m2", 256)])
def test_tile_kernels_compile_to_gmma(dtype, n):
    cfgs = {c.entry: c for c in W.supported_configs((dtype,), (n,), (128,))}
    fp8 = D.itemsize(dtype) == 1
    assert set(cfgs) == ({"wgmma_tile_ss_kk", "wgmma_tile_rs_k"} if fp8 else
                         {"wgmma_tile_ss_kk", "wgmma_tile_ss_km", "wgmma_tile_ss_mk",
                          "wgmma_tile_ss_mm", "wgmma_tile_rs_k", "wgmma_tile_rs_m"})
    ck = W.compile_tile(next(iter(cfgs.values())))
    text = ck.sass()
    ops = sass.opcode_counts(text)
    op = "QGMMA" if fp8 else "HGMMA"
    kk = D.instruction_k(dtype)
    # every entry point of the module issues k_steps wgmmas of shape 64xNxK with fp32 accumulators
    # (sass.instructions stops at the lower-case 'x' of the shape, so read the text directly)
    shapes = re.findall(r"\b([HQ]GMMA)\.(\d+x\d+x\d+)\.F32", text)
    assert shapes and set(shapes) == {(op, f"64x{n}x{kk}")}
    tma_entries = 1 if fp8 else 4                                # wgmma_tile_tma_*
    assert len(shapes) == 4 * (len(cfgs) + tma_entries)
    assert "UTMALDG" in sass.class_counts(text)
    assert "WARPGROUP.ARRIVE" in ops and any(k.startswith("WARPGROUP.DEPBAR") for k in ops)
    assert ck.resources.spill_stores == 0
    if not fp8:
        lines = [ln for ln in text.splitlines() if "GMMA" in ln]
        assert any(".tnspA.tnspB" in ln for ln in lines)          # ss_mm
        assert any(re.search(r"HGMMA\S* R\d+, R\d+, gdesc", ln) for ln in lines)  # rs: A in registers


def test_peak_kernel_loop_is_pure_wgmma():
    ck = WP.compile_peak("float16", 256, "smem", 1)
    text = ck.sass()
    assert ck.resources.spill_stores == 0
    lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    arrive = [i for i, ln in enumerate(lines) if "WARPGROUP.ARRIVE" in ln]
    loop = lines[arrive[-1]:]
    end = next(i for i, ln in enumerate(loop) if "BRA" in ln)
    body = sass.instructions("\n".join(loop[:end + 1]))
    assert len(re.findall(r"HGMMA\.64x256x16\.F32", "\n".join(loop[:end + 1]))) == WP.PEAK_K_STEPS
    assert not any(op.startswith(("LD", "ST")) for op in body)     # no memory traffic in the loop
    ck8 = WP.compile_peak("float8_e4m3fn", 256, "registers", 1)
    assert "QGMMA" in sass.class_counts(ck8.sass())


# ---- the host side of every launch (CPU) ---------------------------------------------------------------

def test_supported_configs_cover_every_combination():
    cfgs = W.supported_configs()
    # 16-bit: (4 SS major pairs + 2 RS) × 4 swizzles × 6 N × 2 dtypes; fp8: (1 + 1) × 4 × 6 × 2
    assert len(cfgs) == 288 + 96
    assert len({c.label() for c in cfgs}) == len(cfgs)
    assert len(W.tile_modules(cfgs)) == 24


def test_every_launch_feeds_wgmma_the_operands(rng):
    """For every supported configuration, reading the host-made images back through the encoded
    descriptors (the layout model) returns exactly A and B."""
    for cfg in W.supported_configs():
        a, b = W.random_tile_operands(cfg, rng)
        a_img, b_img, descs = W.tile_images(a, b, cfg)
        assert a_img.size % 16 == 0 and b_img.size % 16 == 0
        assert cfg.shmem_bytes <= 227 * 1024
        bd = [D.decode(int(descs[2 * s + 1])).advanced(-cfg.b_offset) for s in range(cfg.k_steps)]
        assert np.array_equal(cfg.b_tile.gather(b_img, bd).view(np.uint8),
                              np.ascontiguousarray(b.T).view(np.uint8)), cfg.label()
        if cfg.a_source == "smem":
            ad = [D.decode(int(descs[2 * s])) for s in range(cfg.k_steps)]
            assert np.array_equal(cfg.a_tile.gather(a_img, ad).view(np.uint8), a.view(np.uint8))
            assert cfg.b_offset % cfg.b_tile.alignment == 0 and cfg.b_offset >= a_img.size


def test_register_fragment_model_covers_a_once():
    # The A fragment (ptx/wgmma.cuh): thread (warp w, lane g*4+t), register r, element e.
    for eb, kk in ((2, 16), (1, 32)):
        seen = np.zeros((64, kk), int)
        for w in range(4):
            for lane in range(32):
                g, t = divmod(lane, 4)
                for r in range(4):
                    row = 16 * w + g + 8 * (r & 1)
                    k = 2 * t + 8 * (r >> 1) if eb == 2 else 4 * t + 16 * (r >> 1)
                    seen[row, k:k + 4 // eb] += 1
        assert np.all(seen == 1)
    seen = np.zeros((64, 256), int)                 # accumulator fragment, N = 256
    for w in range(4):
        for lane in range(32):
            g, t = divmod(lane, 4)
            for i in range(128):
                seen[16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)] += 1
    assert np.all(seen == 1)


@pytest.mark.parametrize("kwargs,match", [
    (dict(dtype="float8_e4m3fn", b_major="MN"), "b_major='MN' with dtype=float8_e4m3fn: fp8"),
    (dict(dtype="float8_e5m2", a_major="MN"), "a_major='MN' with dtype=float8_e5m2: fp8"),
    (dict(a_major="MN", a_source="registers"), "A in registers is a fragment"),
    (dict(n=24), "n=24"),
    (dict(k_steps=9), "k_steps=9"),
    (dict(a_source="tmem"), "a_source='tmem'"),
    (dict(dtype="float32"), "dtype='float32'"),
    (dict(a_swizzle=64, k_steps=3), "inner \\(K\\) extent is 96 bytes"),
])
def test_tile_config_rejections(kwargs, match):
    with pytest.raises(D.DescriptorError, match=match):
        W.TileConfig(**kwargs)


def test_run_tile_rejects_bad_inputs_before_the_gpu(rng):
    cfg = W.TileConfig("float16", 64)
    a, b = W.random_tile_operands(cfg, rng)
    with pytest.raises(ValueError, match="a.shape=\\(64, 32\\)"):
        W.run_tile(a[:, :32], b, cfg)
    with pytest.raises(ValueError, match="b.shape"):
        W.run_tile(a, b[:, :32], cfg)
    with pytest.raises(ValueError, match="dtype"):
        W.run_tile(a.astype(np.float32), b, cfg)
    with pytest.raises(ValueError, match="c: shape"):
        W.run_tile(a, b, cfg, c=np.zeros((64, 32), np.float32))


def test_mismatch_demo_prediction_on_cpu(rng):
    r = W.mismatch_demo(64, "float16", 128, 64, rng=rng, live=False)
    assert r.measured is None and r.measured_matches_prediction is None
    assert r.wrong_predicted > 0.9 * r.reference.size
    assert r.source_a.shape == (64, 64) and r.a_elements_moved == 64 * 64 * 7 // 8
    assert "descriptors say 64B swizzle" in r.summary()
    with pytest.raises(D.DescriptorError, match="two different modes"):
        W.mismatch_demo(64, "float16", 128, 128, live=False)


def test_peak_flop_and_limits():
    p = WP.WgmmaPeak("float16", 64, "smem", 4, ctas_per_sm=2, sm_count=132)
    assert p.flop == 264 * p.iters * 4 * 4 * 2 * 64 * 64 * 16
    with pytest.raises(ValueError, match="chains=8"):
        WP.compile_peak("float16", 64, "smem", 8)
    assert WP.datasheet_tflops(132, 1980) == pytest.approx(1070.5, abs=0.1)
    assert WP.luo_per_sm_clock(256) == pytest.approx(3324, abs=1)


# ---- GPU ---------------------------------------------------------------------------------------------

CONFIGS = W.supported_configs()


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.label().replace(" ", "-") for c in CONFIGS])
def test_tile_correct(cfg, rng):
    c = W.verify_tile(cfg, rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [W.TileConfig("float16", 64, "MN", "K", 64),
                                 W.TileConfig("bfloat16", 256, "K", "MN", 32, a_source="registers"),
                                 W.TileConfig("float8_e4m3fn", 128, "K", "K", 0)],
                         ids=["f16-mn-k-64B", "bf16-rs-mn-32B", "e4m3-none"])
def test_tile_accumulates_into_c(cfg, rng):
    c = W.verify_tile(cfg, rng, with_c=True)
    assert c.passed, c.as_dict()


TMA_CONFIGS = W.tma_configs()


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", TMA_CONFIGS, ids=[c.label().replace(" ", "-") for c in TMA_CONFIGS])
def test_tma_fed_tile_correct(cfg, rng):
    """TMA writes each operand through a tensor map made from the tile's SmemTile; the descriptors
    made from the same tile read it: D must be right."""
    c = W.verify_tile_tma(cfg, rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("layout,desc", [(128, 64), (64, 0), (0, 32)])
def test_mismatch_is_wrong_exactly_as_predicted(layout, desc, rng):
    r = W.mismatch_demo(64, "float16", layout, desc, rng=rng, live=True)
    assert r.wrong_measured > 0
    assert r.measured_matches_prediction, r.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,n,src,chains", [("float16", 256, "smem", 1),
                                                ("float16", 8, "registers", 8),
                                                ("bfloat16", 128, "smem", 2),
                                                ("float8_e4m3fn", 256, "smem", 1)])
def test_peak_kernel_result(dtype, n, src, chains):
    c = WP.WgmmaPeak(dtype, n, src, chains, iters=None).check()
    assert c.passed, c.as_dict()


# ---- a CPU dry run of the launch ABI ---------------------------------------------------------------
# The kernels cannot run here, so the host code is driven against an emulator of their documented
# behaviour (argument order, image copy to a 1024-aligned base, descriptors + base, scale-d / C,
# output layout). It catches plumbing mistakes (wrong argument order, offsets, sizes) before a GPU
# run; whether the hardware agrees with the layout model is what the GPU tests decide.

def _emulate(ck, grid, block, *args, shmem_bytes=0, stream=None):
    assert block == 128 and shmem_bytes >= 1024
    dt = {v: k for k, v in W.DTYPES.items()}[ck.defines["DT"]]
    n = ck.defines["N"]
    mis = ck.defines.get("MISMATCH_LAYOUT", -1)
    if ck.name.startswith("wgmma_tile_tma"):
        return _emulate_tma(ck, dt, n, *args, shmem_bytes=shmem_bytes)
    if ck.name.startswith("wgmma_tile"):
        a_img, a_bytes, b_img, b_bytes, b_off, descs, a_rm, c_in, d_out = args
        steps = ck.defines["KSTEPS"]
        outs, blocks, chains, iters = [d_out], 1, 1, 1
    else:
        a_img, a_bytes, b_img, b_bytes, b_off, descs, a_rm, out, clk = args
        steps, c_in, blocks, chains, iters = 4, None, grid, ck.defines["CHAINS"], ck.defines["ITERS"]
        clk.h.reshape(-1, 4)[:] = (1000, 1000 + 1_980_000, 5_000, 5_000 + 1_000_000)   # 1980 MHz
    raw = 0x10                                        # dynamic smem not 1024-aligned: the kernel pads
    base = (raw + 1023) // 1024 * 1024
    smem = np.zeros(shmem_bytes, np.uint8)
    a_bytes, b_bytes, b_off = int(a_bytes), int(b_bytes), int(b_off)
    assert a_bytes % 16 == 0 and b_bytes % 16 == 0
    assert base - raw + b_off + b_bytes <= shmem_bytes and base - raw + a_bytes <= shmem_bytes
    smem[base - raw:base - raw + a_bytes] = a_img.h.view(np.uint8).ravel()[:a_bytes]
    smem[base - raw + b_off:base - raw + b_off + b_bytes] = b_img.h.view(np.uint8).ravel()[:b_bytes]
    rs = "_rs_" in ck.name or ck.defines.get("SRC") == 1
    mk = {"k": "K", "m": "MN"}
    suffix = ck.name.rsplit("_", 1)[1] if ck.name.startswith("wgmma_tile") else "kk"
    am, bm = ("K", mk[suffix[-1]]) if rs else (mk[suffix[0]], mk[suffix[1]])
    npdt = W.np_dtype(dt)
    kk = D.instruction_k(dt)
    a_full = a_rm.h.view(npdt).reshape(64, steps * kk).astype(np.float64)

    def read(desc, major, mn):
        d = D.decode(int(desc) + (base >> 4))
        if mis >= 0:
            d = D.WgmmaDescriptor(d.start_address, d.lbo, d.sbo, D.SPAN_OF_LAYOUT_TYPE[mis], 0)
        addr = D.read_addresses(d, major, dt, mn) - raw
        idx = addr[..., None] + np.arange(npdt.itemsize)
        return smem[idx.reshape(-1)].view(npdt).reshape(mn, kk).astype(np.float64)

    acc = np.zeros((64, n))
    if c_in is not None and not isinstance(c_in, np.integer):
        acc = c_in.h.astype(np.float64)
    for s in range(steps):
        a = a_full[:, s * kk:(s + 1) * kk] if rs else read(descs.h[2 * s], am, 64)
        acc = acc + a @ read(descs.h[2 * s + 1], bm, n).T
    if ck.name.startswith("wgmma_tile"):
        d_out.h[...] = acc.astype(np.float32)
    else:
        out.h[...] = np.broadcast_to((iters * acc).astype(np.float32), out.h.shape)


def _emulate_tma(ck, dt, n, ta, tb, geo, b_off, descs, c_in, d_out, err, shmem_bytes):
    """TMA as asynctc.models.layout.SmemTile models it: box j of a tensor map lands at dst + offsets()."""
    raw = 0x20 + 8
    base = (raw + 1023) // 1024 * 1024
    smem = np.zeros(shmem_bytes + 2048, np.uint8)
    g = [int(x) for x in geo.h]
    for (arr, tile), (boxes, cols, pitch, nbytes), dst in ((ta, g[0:4], base),
                                                           (tb, g[4:8], base + int(b_off))):
        assert nbytes == tile.rows * tile.cols * tile.itemsize and cols == tile.cols
        src = arr.h.view(np.uint8).reshape(arr.h.shape[0], -1)
        off = tile.offsets()
        for j in range(boxes):
            box = src[:tile.rows, j * cols * tile.itemsize:(j + 1) * cols * tile.itemsize]
            idx = dst - raw + j * pitch + off[..., None] + np.arange(tile.itemsize)
            smem[idx.reshape(-1)] = box.reshape(-1)
    suffix = ck.name.rsplit("_", 1)[1]
    mk = {"k": "K", "m": "MN"}
    npdt = W.np_dtype(dt)
    kk = D.instruction_k(dt)

    def read(desc, major, mn):
        addr = D.read_addresses(D.decode(int(desc) + (base >> 4)), major, dt, mn) - raw
        idx = addr[..., None] + np.arange(npdt.itemsize)
        return smem[idx.reshape(-1)].view(npdt).reshape(mn, kk).astype(np.float64)
    acc = np.zeros((64, n)) if isinstance(c_in, np.integer) else c_in.h.astype(np.float64)
    for s in range(ck.defines["KSTEPS"]):
        acc = acc + read(descs.h[2 * s], mk[suffix[0]], 64) @ read(descs.h[2 * s + 1], mk[suffix[1]], n).T
    d_out.h[...] = acc.astype(np.float32)
    err.h[0] = 0


@pytest.fixture
def emulated(monkeypatch):
    monkeypatch.setattr(W.launch, "DeviceArray", FakeArray)      # the module that uploads
    monkeypatch.setattr(WP, "DeviceArray", FakeArray)
    monkeypatch.setattr(W.runtime, "launch", _emulate)
    monkeypatch.setattr(W.launch, "_tensor_map", lambda arr, tile: (arr, tile))


def test_dry_run_tma_tiles(emulated, rng):
    pytest.importorskip("asynctc.models.layout")
    cfgs = W.tma_configs()
    assert len(cfgs) == 72
    for cfg in cfgs:
        c = W.verify_tile_tma(cfg, rng, with_c=cfg.dtype == "bfloat16")
        assert c.passed, (cfg.label(), c.as_dict())


def test_dry_run_every_tile_config(emulated, rng):
    for cfg in W.supported_configs(ns=(8, 64, 256)):
        c = W.verify_tile(cfg, rng, with_c=cfg.n == 64)
        assert c.passed, (cfg.label(), c.as_dict())


def test_dry_run_mismatch_and_peak(emulated, rng):
    r = W.mismatch_demo(64, "float16", 128, 64, rng=rng, live=True)
    assert r.wrong_measured > 0 and r.measured_matches_prediction
    for args in (("float16", 256, "smem", 1), ("bfloat16", 16, "registers", 8),
                 ("float8_e5m2", 64, "smem", 1)):
        p = WP.WgmmaPeak(*args, ctas_per_sm=1, sm_count=2)
        assert p.check().passed
        p.launcher()()
        assert abs(p.measured_clock_mhz() - 1980) < 1e-6      # the emulator's clock record


def test_smem_model_of_wgmma_throughput():
    """The shared-memory bytes model: SS at fp16 = 8192·N/(64 + N) below N = 64, then 4096; RS
    always 4096; fp8 the same fraction of its 8192."""
    from asynctc import wgmma_peak as wp
    assert wp.smem_bytes_per_wgmma(8, "smem") == 2048 + 256
    assert wp.smem_bytes_per_wgmma(8, "registers") == 256
    for n in (8, 16, 32, 64, 128, 256):
        ss = wp.smem_model_flop_per_clk_sm(n, "smem")
        assert ss == pytest.approx(min(4096, 8192 * n / (64 + n)))
        assert wp.smem_model_flop_per_clk_sm(n, "registers") == 4096
        assert wp.smem_model_flop_per_clk_sm(n, "smem", "float8_e4m3fn") == pytest.approx(2 * ss)
    with pytest.raises(ValueError, match="source"):
        wp.smem_bytes_per_wgmma(8, "tmem")


def test_small_n_as_modelled_reads_the_record():
    """Chapter 04 §7's three sentences on small N, as the check its plot cell asserts: true on rows
    that follow the bytes model with RS ahead of SS, false when any one of the three fails."""
    from asynctc import wgmma_peak as wp

    def rows(ss8=910.0, rs8=1257.0, rs16=2504.0):
        fpc = {(8, "smem"): ss8, (16, "smem"): 1631.0, (32, "smem"): 2712.0, (64, "smem"): 4063.0,
               (8, "registers"): rs8, (16, "registers"): rs16, (32, "registers"): 4058.0,
               (64, "registers"): 4059.0}
        return {"throughput": [{"dtype": "float16", "ctas_per_sm": 2, "n": n, "source": s, "chains": 1,
                                "flop_per_clk_sm": v} for (n, s), v in fpc.items()]}
    assert wp.small_n_as_modelled(rows())
    assert not wp.small_n_as_modelled(rows(ss8=700.0))        # SS off the bytes model
    assert not wp.small_n_as_modelled(rows(rs8=800.0))        # RS not ahead of SS at N = 8
    assert not wp.small_n_as_modelled(rows(rs16=4000.0))      # RS at the model's rate at N = 16
    from asynctc.core import records
    assert wp.small_n_as_modelled(records.load("wgmma").results)    # the committed H200 record


# ---- the lines notebook 04 prints from a "wgmma" record (CPU, made-up rows) ----------------------

def _tp(n, source, chains, tflops, mhz, ctas=2, dtype="float16", smi=1980.0):
    peak = 132 * 4096 * mhz * 1e6 / 1e12
    return {"dtype": dtype, "n": n, "source": source, "chains": chains, "ctas_per_sm": ctas,
            "tflops": tflops, "sm_mhz": mhz, "sm_mhz_source": "in-kernel clock64/%globaltimer",
            "flop_per_clk_sm": tflops * 1e12 / (132 * mhz * 1e6), "datasheet_tflops_at_clock": peak,
            "fraction_of_datasheet": tflops / peak, "clocks_after_nvidia_smi": {"sm_mhz": smi}}


def _results():
    return {"sm_count": 132, "throughput": [
        _tp(8, "smem", 1, 217.0, 1805, smi=1935.0), _tp(8, "smem", 8, 213.0, 1812),
        _tp(256, "smem", 1, 879.0, 1654), _tp(256, "registers", 1, 882.0, 1659),
        _tp(256, "smem", 1, 876.0, 1654, ctas=1)]}


def test_throughput_table_names_its_columns_and_can_fold_the_chains():
    res = _results()
    full = WP.throughput_table(res)
    assert len(full.splitlines()) == 1 + 5 + 2
    head = full.splitlines()[0].split()
    assert {"chains", "CTA/SM", "of", "clk", "sheet"} <= set(head)
    assert "chains: accumulators in flight" in full and "Luo H800: Luo et al." in full
    short = WP.throughput_table(res, all_chains=False)
    assert len(short.splitlines()) == 1 + 4 + 1 + 2
    assert "up to 8 accumulators in flight: within 1.8% of these at every N" in short
    assert WP.chains_spread(res) == pytest.approx(4 / 217)
    assert WP.chains_spread({"throughput": [_tp(8, "smem", 1, 1.0, 1800)]}) is None


def test_peak_row_and_clock_note():
    res = _results()
    assert W.peak_row(res)["tflops"] == 879.0                  # 1 accumulator, 2 CTAs per SM
    with pytest.raises(KeyError, match="N=64"):
        W.peak_row(res, n=64)
    below, yes, no = W.clock_note(res)
    assert below and yes == ("In-kernel SM clock under load: 1654–1812 MHz, below every nvidia-smi "
                             "reading after a run (1935–1980 MHz; 1980 after 4 of 5 runs).")
    res["throughput"][0]["sm_mhz"] = 1990.0                   # a run faster than nvidia-smi's reading
    assert not W.clock_note(res)[0]


def test_throughput_figure_draws_every_point_in_one_unit():
    """Chapter 04 §8: every point, the model's dashes and Luo's crosses are fractions of the
    per-clock peak, each run at its own in-kernel clock (reader 88: TFLOP/s at ~1800 MHz drawn above
    dashes scaled to 1654 MHz seemed to beat the model); the right axis reads them as TFLOP/s at the
    clock of the row the goal cell prints (N = 256 SS, 894 here)."""
    import types
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = {**_results(), "max_sm_mhz": 1980.0}
    fig = WP.plot_throughput(types.SimpleNamespace(results=res, label=lambda: "test"))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    rows = [x for x in res["throughput"] if x["dtype"] == "float16" and x["ctas_per_sm"] == 2
            and x["chains"] == 1]
    clocks = [x["sm_mhz"] for x in rows]
    assert (f"per-clock peak, 4096 FLOP/clk per SM\n(each point at its own in-kernel clock, "
            f"{min(clocks):.0f}–{max(clocks):.0f} MHz)") in labels
    ss = next(ln for ln in ax.get_lines() if ln.get_label() == "A from shared memory (SS)")
    want = sorted((x["n"], x["flop_per_clk_sm"] / 4096) for x in rows if x["source"] == "smem")
    assert list(ss.get_xdata()) == [n for n, _ in want]
    assert list(ss.get_ydata()) == pytest.approx([f for _, f in want])
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "model, SS")
    assert list(line.get_xdata()) == list(W.N_VALUES)
    assert line.get_ydata()[0] == pytest.approx(4 / 18) and line.get_ydata()[-1] == pytest.approx(1.0)
    assert "model: 0.22" in [t.get_text() for t in ax.texts]
    b = W.peak_row(res)                             # the goal cell's peak: sm_count × 4096 × its clock
    assert f"{res['sm_count'] * 4096 * b['sm_mhz'] / 1e6:.1f}" == "894.3"
    right = fig.axes[1] if len(fig.axes) > 1 else ax.child_axes[0]
    assert "TFLOP/s at N = 256's clock (1654 MHz)" == right.get_ylabel()
    plt.close(fig)


def test_layout_figure_offsets_come_from_the_model_and_hide_exercise_1():
    """Chapter 04 §3's arrows: each reaches the core matrix the model's LBO/SBO bytes lead to, LBO
    is unused exactly where one wgmma reads from one box, and the 64-byte SBO (exercise 1's answer,
    512 B) is not printed on the figure."""
    from asynctc.wgmma.figures import offset_steps
    unused = set()
    for major in ("K", "MN"):
        for sw in (0, 32, 64, 128):
            t = D.OperandTile(64, 64, "float16", major, sw)
            steps = offset_steps(t)                                # asserts the byte distances
            assert (steps["lbo"][1], steps["sbo"][1]) == (t.lbo, t.sbo)
            if steps["lbo"][0] is None:
                unused.add((major, sw))
    assert unused == {("K", 32), ("K", 64), ("K", 128), ("MN", 128)}
    assert offset_steps(D.OperandTile(64, 64, "float16", "MN", 64))["lbo"] == ((32, 0), 4096)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    texts = {}
    for major in ("K", "MN"):                                       # one figure per major-ness
        fig = W.plot_layouts("float16", major)
        texts[major] = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert fig.get_size_inches()[0] <= 8.5                      # legible at notebook width
        plt.close(fig)
    assert not any("exercise" in t for ts in texts.values() for t in ts)   # every step shows its value
    assert "LBO 4096 B" in texts["MN"] and "SBO 512 B" in texts["MN"] and "SBO 1024 B" in texts["K"]
    with pytest.raises(ValueError, match="major"):
        W.plot_layouts("float8_e4m3fn", "MN")
    # 04 §2's worked B: one panel, 128 n-rows in two boxes, LBO reaching the second box
    fig = W.plot_layouts("float16", "MN", (128,), mn=128, operand="B")
    (ax,) = [a for a in fig.axes if a.get_visible()]
    texts = [t.get_text() for t in ax.texts]
    assert {"SBO 1024 B", "LBO 8192 B", "0", "1"} <= set(texts)
    assert ax.get_ylabel().startswith("n (column of B)") and "of n" in ax.get_title()
    assert fig.get_size_inches()[0] <= 8.5
    plt.close(fig)
    # ... and as 04 §2 draws it: the three core matrices named (i, j), at start + i·SBO + j·LBO
    fig = W.plot_layouts("float16", "MN", (128,), mn=128, operand="B", names=True)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert {"(0, 0): start", "(1, 0): start + SBO, 1024 B", "(0, 1): start + LBO, 8192 B"} <= {
        t.get_text() for t in ax.texts}
    (zero,) = [t for t in ax.texts if t.get_text() == "(0, 0): start"]
    assert zero.get_position()[1] < 0 and zero.xy == (4, 0)    # above the grid, its arrow on (0, 0)
    assert "each k-row is drawn as a column" in ax.get_xlabel()   # k runs across: the text's k-rows
    plt.close(fig)
    with pytest.raises(ValueError, match="operand"):
        W.plot_layouts("float16", "MN", (128,), operand="C")


def test_descriptor_hint_names_the_box_a_k_step_crosses_into():
    """Checkpoint 04's trap: a K-major tile with 64-byte swizzle holds two k16 steps per box row, so
    k-step 2 starts in the second box, not 64 bytes after the base; the hint says so."""
    from asynctc.core import exercises
    from asynctc.models import descriptors as dsc
    kw = dict(mn=64, k=64, dtype="float16", major="K", swizzle=64, step=2, base=0x4000)
    want = exercises.expected("ch04.descriptor", **kw)
    assert dsc.decode(want).start_address == 0x5000
    wrong = dsc.encode(0x4040, 16, 512, 64)
    from asynctc.wgmma import exercises as wex
    tile = dsc.OperandTile(mn=64, k=64, dtype="float16", major="K", swizzle=64)
    hint = wex.descriptor_diagnosis(wrong, tile, 2, 0x4000)
    assert "holds 2 k16 steps, so k-step 2 starts in box 1, at 0x5000" in hint, hint


def test_plot_accumulator_boxes_one_threads_registers():
    """Chapter 04 §6's figure: thread 37 (warp 1, lane 5) boxed at its N/2 elements, each labelled
    with its register index, read from the model fragments.wgmma_accumulator_owner."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = W.plot_accumulator(n=16, thread=37)
    whole, ax = fig.axes[:2]                    # all of D; warp 1's rows 16-31, zoomed and labelled
    labels = sorted(int(t.get_text()) for t in ax.texts)
    assert labels == list(range(8)) and len(ax.patches) == 8
    assert min(t.get_fontsize() for t in ax.texts) >= 8      # readers could not read them at 8 px
    cells = {(round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in ax.patches}
    assert cells == {(r, c) for r in (17, 25) for c in (2, 3, 10, 11)}
    assert ax.get_ylim() == (31.5, 15.5) and len(whole.patches) == 8 + 1   # + the zoomed rows' frame
    plt.close(fig)
    with pytest.raises(ValueError, match="thread"):
        W.plot_accumulator(thread=128)


def test_offsets_table_states_the_rule_of_04_section_3():
    """04 §3's table: swizzled, SBO steps 8 rows down a box and LBO to the next box; without
    swizzle LBO steps along K and SBO along M in both major-nesses; an MN-major 128-byte k16 step
    is one box (LBO unused); the table prints no k-step starts (the exercise's answers)."""
    from asynctc import wgmma as W
    rows = {ln[:15].strip(): ln for ln in W.offsets_table("float16").splitlines()[1:]}
    assert len(rows) == 8
    assert "K + 8: 1024 B" in rows["MN-major, 128B"] and rows["MN-major, 128B"].endswith("unused")
    assert "k-step" not in W.offsets_table("float16")     # the starts answer ch04.kstep and the checkpoint
    assert not any(ln.endswith(("96", "6144", "4128")) for ln in rows.values())
    for major in ("K", "MN"):
        r = rows[f"{major}-major, none"]
        assert r.index("M + 8") < r.index("K + 8")          # SBO along M, LBO along K
    assert "M + 32: 4096 B" in rows["MN-major, 64B"]        # LBO: the next box along M
