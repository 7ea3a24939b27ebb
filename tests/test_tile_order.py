"""Issue 20 §2's opt-in variants of chapter 06's top rung: L2 promotion on the operand tensor maps,
an L2 evict_last hint on A's loads, and the Hilbert tile order (asynctc.warp_specialization
.tile_order, kernels/tile_order.cuh). On the CPU: the orders are permutations of every tile for
many grid shapes, the config refuses bad values naming field, value and rule, the defaults leave
every define (so every ladder cubin: tests/test_matmul.py's manifest) as it was, the variants
compile without spills, and a launch emulated from the Python mirror of the device's table read
computes A·B (the table reaches the kernel as its last argument, the promotion reaches the tensor
maps). On the GPU: each variant elementwise against float64 at 4096³ and a shape whose item grid
is no power of two, fp16 and bf16 — the device's table decoding checked against the mirror's
order (a tile decoded wrongly stays poisoned or lands on another tile's rows)."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from asynctc import pipeline as P
from asynctc import warp_specialization as W
from asynctc.core import checks, runtime
from asynctc.warp_specialization import launch as WL
from asynctc.warp_specialization import order_suite as OS
from asynctc.warp_specialization import tile_order as T

sys.path.insert(0, str(Path(__file__).parent))
from fakes import FakeArray, assert_script_exits_2_without_a_gpu, fake_timing  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GRIDS = [(1, 1), (1, 7), (7, 1), (2, 2), (3, 5), (11, 13), (16, 16), (32, 32), (5, 64), (33, 2),
         (13, 11), (64, 48)]


def _top(dt="float16", **kw):
    return W.RUNG_BY_NAME["raster"].make(dt).replace(**kw)


# ---- the orders -----------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, cols", GRIDS)
def test_hilbert_order_is_a_permutation_of_every_cell(rows, cols):
    cells = T.hilbert_cells(rows, cols)
    assert len(cells) == rows * cols
    assert sorted(cells) == [(r, c) for r in range(rows) for c in range(cols)]
    table = T.order_table(rows, cols)
    assert table.dtype == np.int32 and table.shape == (rows * cols,)
    assert [(int(e) >> 16, int(e) & 0xFFFF) for e in table] == cells


@pytest.mark.parametrize("side", [1, 2, 4, 8, 16, 32])
def test_hilbert_curve_moves_one_cell_at_a_time_on_a_square(side):
    p = [T.hilbert_xy(side, d) for d in range(side * side)]
    assert p[0] == (0, 0) and len(set(p)) == side * side
    assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in zip(p, p[1:]))


def test_hilbert_keeps_the_cells_running_at_once_compact():
    """The first 64 cells of a 16 × 16 item grid (the 66 clusters of a 4096³ launch at once) are
    one 8 × 8 block: 8 cluster rows and 8 tile columns of operands in L2."""
    cells = T.hilbert_cells(16, 16)[:64]
    assert len({r for r, _ in cells}) == 8 and len({c for _, c in cells}) == 8


@pytest.mark.parametrize("shape", [(4096, 4096), (8192, 8192), (2816, 3328), (256, 256),
                                   (1280, 7936)])
@pytest.mark.parametrize("order", ["raster", "hilbert"])
def test_walk_covers_every_tile_once(shape, order):
    m, n = shape
    cfg = _top(tile_order=order)
    rows, cols = T.item_grid(cfg, m, n)
    w = T.walk(cfg, m, n)
    want = sorted((r * cfg.cluster * cfg.bm, c * cfg.bn) for r in range(rows) for c in range(cols))
    assert sorted(w) == want
    if order == "raster":          # the mirror of the kernel's tile_origin: rung 8's raster
        g = cfg.group_m // cfg.cluster
        assert all(m0 // (cfg.cluster * cfg.bm) < g for m0, _ in w[:g * cols])


def test_table_read_mirrors_the_device():
    src = (runtime.KERNEL_DIR / "tile_order.cuh").read_text()
    assert "m0 = ((e >> 16) * CLUSTER + (int)rank) * BM;" in src
    assert "n0 = (e & 0xFFFF) * BN;" in src
    t = T.order_table(3, 5)
    for item in range(15):
        r, c = T.hilbert_cells(3, 5)[item]
        assert T.table_item(t, item, 1, 128, 256, 2) == ((2 * r + 1) * 128, c * 256)
    with pytest.raises(W.WarpSpecializationError, match=r"^grid=\(32768, 1\): "):
        T.order_table(32768, 1)
    with pytest.raises(W.WarpSpecializationError, match=r"^order='raster': "):
        T.order_table(2, 2, "raster")
    with pytest.raises(W.WarpSpecializationError, match=r"^rows=0: "):
        T.hilbert_cells(0, 3)


# ---- the config -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(l2_promotion=96), r"^l2_promotion=96: 0 \(none\), 64, 128 or 256"),
    (dict(l2_promotion=True), r"^l2_promotion=True: must be an integer"),
    (dict(l2_promotion="128"), r"^l2_promotion='128': must be an integer"),
    (dict(l2_hint=1), r"^l2_hint=1: must be a bool"),
    (dict(tile_order="morton"), r"^tile_order='morton': one of \('raster', 'hilbert'\)"),
    (dict(tile_order="hilbert", edges=True), r"^tile_order='hilbert': .*edges=False"),
    (dict(l2_promotion=128, edges=True), r"^l2_promotion=128: .*edges=False"),
    (dict(l2_hint=True, edges=True), r"^l2_hint=True: .*edges=False"),
])
def test_bad_variant_fields_are_refused(kw, match):
    base = dict(bm=128, bn=256, consumers=2, stages=4, out_dtype="float16", persistent=True)
    with pytest.raises(W.WarpSpecializationError, match=match):
        W.WSConfig(**{**base, **kw})


def test_hint_needs_one_box_per_k_row():
    with pytest.raises(W.WarpSpecializationError, match=r"^l2_hint=True: .*row_boxes=1, here 2"):
        W.WSConfig(bm=128, bn=128, stages=4, persistent=True, row_boxes=2, l2_hint=True)


def test_defaults_set_no_define_and_each_variant_one():
    for dt in W.DTYPES:
        for c in W.rung_configs(dt) + [c for c in W.correctness_configs()
                                       if isinstance(c, W.WSConfig)]:
            if isinstance(c, W.WSConfig):
                assert (c.l2_promotion, c.l2_hint, c.tile_order) == (0, False, "raster")
                assert "L2_HINT" not in c.defines and "TILE_ORDER" not in c.defines
        top = _top(dt)
        for p in (64, 128, 256):     # host only: the same cubin as rung 8
            v = top.replace(l2_promotion=p)
            assert W.compile_job(v) == W.compile_job(top) and f"l2:{p}B" in v.label()
        assert W.compile_job(top.replace(l2_hint=True))[2] == {**top.defines, "L2_HINT": 1}
        assert W.compile_job(top.replace(tile_order="hilbert"))[2] == {**top.defines,
                                                                       "TILE_ORDER": 1}
    assert W.rung_of(_top(tile_order="hilbert")) == 8


def test_variants_compile_without_spills():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = W.compile_ws(_top()).resources.registers
        for kw in (dict(l2_hint=True), dict(tile_order="hilbert")):
            for dt in W.DTYPES:
                ck = W.compile_ws(_top(dt, **kw))
                assert ck.resources.spill_stores == 0 and ck.resources.registers <= base, kw

    def a_loads(cfg):        # rung 8's A load: UTMALDG.2D (B's is the .MULTICAST one)
        return [ln.split(";")[0].split("UTMALDG")[1] for ln in W.compile_ws(cfg).sass().splitlines()
                if "UTMALDG.2D " in ln]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain, hinted = a_loads(_top()), a_loads(_top(l2_hint=True))
    # the cache policy travels as the load's desc[...] operand (sm_90 SASS), on A's loads only
    assert plain and not any("desc[" in x for x in plain)
    assert hinted and all("desc[" in x for x in hinted)


# ---- the launch, emulated from the Python mirror --------------------------------------------------

def _emulate(ck, grid, block, *args, shmem_bytes=0, stream=None, cluster=None):
    """The ladder kernel's contract for an exact persistent launch: CTA b's cluster takes items
    b/cluster, + grid/cluster, ...; each item's tiles from the order table (last argument) through
    the mirror of tile_from_table, or the raster mirror."""
    cfg = ck.cfg
    ta, tb, tc, out, m, n, k = args[:7]
    a, b = ta[1].h, tb[1].h                             # A M×K, B stored N×K
    rows, cols = T.item_grid(cfg, int(m), int(n))
    table = args[-1].h if cfg.tile_order != "raster" else None
    cl = cfg.cluster
    for cta in range(grid):
        for item in range(cta // cl, rows * cols, grid // cl):
            rank = cta % cl
            if table is not None:
                m0, n0 = T.table_item(table, item, rank, cfg.bm, cfg.bn, cl)
            else:
                m0, n0 = T.raster_item(item, rows * cl, cols, rank, cfg.bm, cfg.bn, cfg.group_m, cl)
            blk = a[m0:m0 + cfg.bm].astype(np.float64) @ b[n0:n0 + cfg.bn].astype(np.float64).T
            out.h[m0:m0 + cfg.bm, n0:n0 + cfg.bn] = blk.astype(out.h.dtype)


def _emulated(monkeypatch, maps):
    class CK:
        pass

    def fake_compile(cfg, arch="sm_90a"):
        ck = CK()
        ck.cfg = cfg
        return ck

    def fake_map(x, tile, l2=0):
        maps.append(l2)
        return ("map", x, tile)
    monkeypatch.setattr(WL, "DeviceArray", FakeArray)
    monkeypatch.setattr(checks, "DeviceArray", FakeArray)
    monkeypatch.setattr(WL, "compile_ws", fake_compile)
    monkeypatch.setattr(WL, "_tile_map", fake_map)
    monkeypatch.setattr(WL, "max_active_clusters", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "check_launch", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "device_info", lambda: None)
    monkeypatch.setattr(runtime, "launch", _emulate)


@pytest.mark.parametrize("kw", [dict(tile_order="hilbert"), dict(l2_promotion=256), dict()])
def test_emulated_launch_computes_a_b(monkeypatch, kw):
    maps = []
    _emulated(monkeypatch, maps)
    cfg = _top(**kw)
    m, n, k = 11 * 256, 13 * 256, 128                    # 11 × 13 items: no power of two
    rng = np.random.default_rng(5)
    a, b, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    g = WL.WSGemm(cfg, FakeArray(a), FakeArray(bs))
    assert g.grid == 132
    assert (g.order is not None) == (cfg.tile_order == "hilbert")
    g.launcher()()
    c = checks.compare_elementwise(g.out.to_host(), a, b, cfg.out_dtype, cfg.label())
    assert c.passed, c.as_dict()
    assert maps[:2] == [cfg.l2_promotion] * 2 and (len(maps) == 2 or maps[2] == 0)


# ---- the suite and its run script -----------------------------------------------------------------

def test_suite_variants_and_summary():
    assert W.SUITES["ws_orders"] == (OS.measure_orders, OS.summarize_orders, "sm_90a")
    assert OS.variant("top") == W.RUNG_BY_NAME["raster"].make("float16")
    assert len(OS.order_jobs()) == 2 * 3          # top (= both l2 variants), hint, hilbert
    rows = [{"size": 4096, "dtype": "float16", "kernel": "cuBLAS", "tflops": 700.0, "sm_mhz": 1800}]
    rows += [{"size": 4096, "dtype": "float16", "kernel": "ours", "variant": v, "tflops": t,
              "sm_mhz": 1790} for v, t in (("top", 690.0), ("hilbert", 697.0))]
    s = OS.order_summary(rows, 4096, "float16", ["top", "hilbert"])
    assert s[2]["of_top"] == pytest.approx(697 / 690) and s[2]["of_cublas"] == pytest.approx(697 / 700)


def test_suite_dry_run_on_the_emulated_launch(monkeypatch):
    """measure_orders end to end on the emulated launch (every variant's table / maps, the
    interleaving, the sampled-row checks, the summary): what the GPU run does, at 512³."""
    from asynctc.core import bench
    from asynctc.pipeline import launch as PL
    _emulated(monkeypatch, [])
    monkeypatch.setattr(PL, "DeviceArray", FakeArray)
    from asynctc.warp_specialization import limit_suite as LS
    monkeypatch.setattr(LS, "DeviceArray", FakeArray)     # the rounds are timed by LS.time_rounds

    fake_timing(monkeypatch)
    said = []
    res = OS.measure_orders(said.append, sizes=(512,), dtypes=("bfloat16",), rounds=2)
    assert len(res["rows"]) == 2 * (1 + len(OS.VARIANTS)) and len(said) == 1
    assert [r.get("variant") for r in res["summary"]] == [None] + [n for n, _ in OS.VARIANTS]
    assert all(r["rel_err_rows"]["passed"] for r in res["rows"])
    rec = type("Rec", (), {"results": res, "label": lambda self: "emulated"})()
    text = OS.summarize_orders(rec)
    assert "hilbert" in text and "1.000 of top" in text


def test_orders_script_exits_2_without_a_gpu(tmp_path):
    assert_script_exits_2_without_a_gpu(ROOT / "tools" / "gpu_ch06_limit.py", "--orders", "--out", tmp_path,
                                        cwd=ROOT)


# ---- GPU ------------------------------------------------------------------------------------------

VARIANT_NAMES = [name for name, _ in OS.VARIANTS if name != "top"]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", W.DTYPES)
@pytest.mark.parametrize("name", VARIANT_NAMES)
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (2816, 3328, 1088)],
                         ids=["4096^3", "11x13_items"])
def test_variant_matches_float64(name, dt, shape, rng):
    c = W.verify(OS.variant(name, dt), *shape, rng=rng)
    assert c.passed, c.as_dict()
