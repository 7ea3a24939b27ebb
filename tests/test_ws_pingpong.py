"""Chapter 06's rung 9, ping-pong consumers (``PINGPONG=1``): CPU tests (the cubin and its SASS, the
config's refusals, the rung, the protocol replayed on an mbarrier model, the trace decoder and the
overlap measure on a hand-made buffer, the GPU script's ``--pingpong`` entry run against stand-ins)
and GPU tests (elementwise against float64 on fresh random inputs with a poisoned output, fp16 and
bf16, exact multiples of the tile with a partial last wave, shapes that are not multiples of the
tile through the EDGES build, and the broken order barrier ending in its decoded error)."""

import re
import sys
import warnings

import numpy as np
import pytest

from asynctc import pipeline as P
from asynctc import warp_specialization as W
from asynctc.core import checks, runtime, sass
from asynctc.core.memory import DeviceArray

from test_gpu_tools import _lines, _load, clean, gpu  # noqa: F401  (fixtures)
from test_pipeline import Deadlock, _Barrier   # chapter 05's mbarrier model (tests/)


def _pp_configs():
    return [c for c in W.correctness_configs() if isinstance(c, W.WSConfig) and c.pingpong]


def _compile(cfg):
    runtime._memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", runtime.PerformanceWarning)
        return W.compile_ws(cfg)


# ---- compile + SASS (CPU) --------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", _pp_configs(), ids=lambda c: c.label())
def test_pingpong_compiles_to_the_expected_sass(cfg):
    """sm_90a cubin; one k-tile of HGMMA per consumer's whole tile (bm/64 atoms × 4 k16 steps);
    the setmaxnreg split; 2 · stages ring barriers + the 2 order barriers initialised; the order
    wait is an mbarrier try-wait (no named-barrier arrive: BAR.ARV never appears, BAR.SYNC only as
    the CTA-wide barrier 0 after the init and, with the TMA store, the warpgroups' own epilogue
    barriers 1 and 2 of 128 threads); no spills."""
    ck = _compile(cfg)
    assert ck.arch == "sm_90a" and ck.cubin[:4] == b"\x7fELF"
    text = ck.sass()
    suffix = "" if cfg.dtype == "float16" else ".BF16"
    shapes = re.findall(r"HGMMA\.64x(\d+)x16\.F32(\.BF16)?\b", text)
    assert set(shapes) == {(str(cfg.bn), suffix)} and len(shapes) == 4 * cfg.bm // 64
    ops = sass.opcode_counts(text)
    assert ops.get("SYNCS.EXCH.64", 0) == 2 * cfg.stages + 2
    assert any(o.startswith("SYNCS.PHASECHK") for o in ops)
    assert not any(o.startswith("BAR.ARV") for o in ops)
    bars = {b.strip() for b in re.findall(r"\bBAR\.SYNC(?:\.DEFER_BLOCKING)?\s+([^;]+);", text)}
    assert all(b == "0x0" or b.endswith(", 0x80") for b in bars), bars      # 128 threads
    assert ("UTMASTG" in sass.class_counts(text)) == cfg.tma_store
    setmax = {(k, int(v, 16)) for k, v in
              re.findall(r"USETMAXREG\.(\w+)(?:\.\w+)*\s+(?:\w+,\s*)?(0x[0-9a-f]+)", text)}
    assert {("DEALLOC", cfg.producer_regs), ("TRY_ALLOC", cfg.consumer_regs)} <= setmax
    assert ck.resources.spill_stores == 0 and ck.resources.spill_loads == 0
    waits = set(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", text))
    assert waits == {"0x1", "0x0"}


def test_pingpong_adds_only_the_order_barriers_to_the_same_tile():
    """The same tile and ring without PINGPONG: two mbarrier inits fewer, two try-waits fewer in
    the consumer's loop (the order wait) — and its defines have no PINGPONG key at all."""
    pp = W._pingpong("float16").replace(cluster=1, tma_store=False, out_dtype="float32")
    co = pp.replace(pingpong=False)
    assert "PINGPONG" not in co.defines and pp.defines["PINGPONG"] == 1
    a, b = (sass.opcode_counts(_compile(c).sass()) for c in (pp, co))
    assert a["SYNCS.EXCH.64"] == b["SYNCS.EXCH.64"] + 2
    assert a["SYNCS.PHASECHK.TRANS64.TRYWAIT"] > b["SYNCS.PHASECHK.TRANS64.TRYWAIT"]


def test_no_other_build_sets_pingpong():
    for c in W.correctness_configs():
        if isinstance(c, W.WSConfig) and not c.pingpong:
            assert "PINGPONG" not in c.defines and " pingpong" not in c.label()


# ---- config, rung -----------------------------------------------------------------------------------

def test_rung_9_is_pingpong_with_its_prediction():
    r = W.RUNGS[-1]
    assert (r.number, r.name) == (9, "pingpong") and W.RUNG_BY_NAME["pingpong"] is r
    assert "before any H200 run" in r.prediction and "rung 8" in r.prediction
    for dt in W.DTYPES:
        c = r.make(dt)
        assert c.pingpong and c.persistent and c.consumers == 2 and (c.bm, c.bn) == (128, 128)
        assert c.replace(pingpong=False, bn=256, stages=4) == W._raster(dt)   # rung 8 otherwise
        assert W.rung_of(c) == 9 and c.atoms == 2 and c.accumulators == 128
        assert c.pipeline_config().consumers == 1          # one reader of the whole stage
        assert c.smem_total <= 227 * 1024
    assert 9 in W.TRACED_RUNGS and W.parse_rungs("8-9") == (8, 9)
    assert W.rung_of(W._raster("float16")) == 8


@pytest.mark.parametrize("kw,field,rule", [
    (dict(bn=256), "bn", r"256 fp32 accumulators per thread, above 128"),
    (dict(bm=256), "bn", r"4 atoms"),
    (dict(consumers=1, bm=64), "pingpong", r"needs consumers=2"),
    (dict(persistent=False), "pingpong", r"needs persistent=True"),
    (dict(dtype="float8_e4m3fn", out_dtype="bfloat16"), "pingpong", r"needs dtype=float16 or"),
    (dict(swizzle=64, tma_store=False, cluster=1), "pingpong", r"needs swizzle=128"),
    (dict(row_boxes=2, tma_store=False, cluster=1), "pingpong", r"needs row_boxes=1"),
    (dict(tma_once=True, tma_store=False, cluster=1), "pingpong", r"needs tma_once=False"),
    (dict(pingpong=1), "pingpong", r"must be a bool"),
])
def test_pingpong_refusals_name_field_value_and_rule(kw, field, rule):
    base = dict(dtype="float16", bm=128, bn=128, consumers=2, stages=4, persistent=True,
                pingpong=True, out_dtype="float16")
    with pytest.raises(W.WarpSpecializationError, match=rf"^{field}=.*{rule}"):
        W.WSConfig(**{**base, **kw})


def test_broken_order_variant_needs_a_pingpong_config():
    assert 2 in W.BREAKS and "order barrier" in W.BREAKS[2]
    with pytest.raises(W.WarpSpecializationError, match=r"^cfg.pingpong=False: "):
        W.run_broken(2, cfg=W.WSConfig())
    assert P.WAIT_TAGS[3] == "order"
    word = 0x01 | (3 << 8) | (0 << 12) | (1 << 16) | (1 << 20)   # the kernel's tag for wg 1, tile 1
    msg = P.decode_error(word, producer_warpgroup=True)
    assert "order barrier" in msg and "consumer 0 (warpgroup 1" in msg


# ---- the protocol, replayed (kernel statement order, random latencies and interleavings) ----------

def _replay_pingpong(stages, tiles, k_tiles, rng, bug=None):
    """One CTA: the producer fills the ring with every tile's k-tiles in order; consumer w takes
    tiles j ≡ w (mod 2), moves its ring position over the other's tiles as the kernel's ring_skip
    does, waits on order[w] (parity (n mod 2) xor (w == 0)) before its tile, arrives on
    order[w xor 1] after issuing the tile's last k-tile, releases each stage it read (empty counts
    one arrival). Checks: each wgmma reads the (tile, k-tile) it expects; no TMA overwrites a stage
    a pending wgmma reads; no deadlock; the k-loops alternate (tile j's first wgmma after tile
    j − 1's last). ``bug``: "no_arrive" (consumer 1 never arrives: deadlock), "count2" (empty
    expects both consumers: deadlock), "skip_no_phase" (the skip forgets the phase flip)."""
    S = stages
    full = [_Barrier(1) for _ in range(S)]
    empty = [_Barrier(2 if bug == "count2" else 1) for _ in range(S)]
    order = [_Barrier(1), _Barrier(1)]
    content, readers = [None] * S, [set() for _ in range(S)]
    events, groups = [], {0: [], 1: []}
    version, gid, issued = [0], [0], []
    seq = [(t, k) for t in range(tiles) for k in range(k_tiles)]

    def producer():
        stage, phase = 0, 0
        for item in seq:
            while not empty[stage].try_wait(phase ^ 1):
                yield
            full[stage].arrive_expect_tx(1)
            events.append(("tma", (stage, item)))
            version[0] += 1
            stage += 1
            if stage == S:
                stage, phase = 0, phase ^ 1

    def consumer(w):
        stage, phase, mine = 0, 0, 0
        for t in range(tiles):
            if t % 2 != w:                                   # ring_skip(pos, T)
                s = stage + k_tiles
                if bug != "skip_no_phase":
                    phase ^= (s // S) & 1
                stage = s % S
                continue
            while not order[w].try_wait((mine & 1) ^ (w == 0)):
                yield
            mine += 1
            prev = None
            for k in range(k_tiles):
                while not full[stage].try_wait(phase):
                    yield
                assert content[stage] == (t, k), f"c{w}: stage {stage} holds {content[stage]}"
                gid[0] += 1
                readers[stage].add(gid[0])
                groups[w].append((stage, gid[0]))
                issued.append((t, k))
                events.append(("mma", w))
                version[0] += 1
                while len(groups[w]) > 1:                    # wgmma.wait_group 1
                    yield
                if prev is not None:
                    empty[prev].arrive()
                    version[0] += 1
                prev = stage
                stage += 1
                if stage == S:
                    stage, phase = 0, phase ^ 1
            if not (bug == "no_arrive" and w == 1):
                order[w ^ 1].arrive()
                version[0] += 1
            while groups[w]:                                 # wgmma.wait_group 0
                yield
            empty[prev].arrive()
            version[0] += 1

    progs = {"p": producer(), 0: consumer(0), 1: consumer(1)}

    def step(x):
        try:
            next(progs[x])
        except StopIteration:
            del progs[x]
            version[0] += 1

    while progs or events:
        if not events:
            v = version[0]
            for x in list(progs):
                step(x)
            if progs and version[0] == v:
                raise Deadlock(f"deadlock (S={S}, tiles={tiles}, T={k_tiles})")
            continue
        choices = [("run", x) for x in progs] + [("ev", i) for i in range(len(events))]
        kind, x = choices[rng.integers(len(choices))]
        if kind == "run":
            step(x)
            continue
        what, payload = events.pop(x)
        version[0] += 1
        if what == "tma":
            s, item = payload
            assert not readers[s], f"TMA of {item} overwrites stage {s} while it is read"
            content[s] = item
            full[s].complete_tx(1)
        else:
            s, g = groups[payload].pop(0)
            readers[s].discard(g)
    assert issued == seq, "the k-loops did not alternate tile by tile"
    return True


@pytest.mark.parametrize("stages", list(W.STAGE_RANGE))
def test_pingpong_protocol_replay(stages):
    rng = np.random.default_rng(7 + stages)
    for tiles, k_tiles in ((1, 1), (2, 1), (3, 2), (4, stages), (5, stages + 1), (4, 2 * stages + 3)):
        for _ in range(12):
            assert _replay_pingpong(stages, tiles, k_tiles, rng)


@pytest.mark.parametrize("bug,error", [("no_arrive", "deadlock"), ("count2", "deadlock"),
                                       ("skip_no_phase", "deadlock|holds|overwrites")])
def test_pingpong_protocol_replay_catches_errors(bug, error):
    rng = np.random.default_rng(3)
    with pytest.raises(AssertionError, match=error):
        for _ in range(100):
            _replay_pingpong(3, 4, 5, rng, bug=bug)


# ---- trace: decoder, overlap ------------------------------------------------------------------------

def _pingpong_buffer(cfg, T=3):
    """A trace as the kernel writes it for one CTA, two tiles of T = 3 k-tiles: consumer 1 (wg1)
    runs tile 0 (ring counters 0..2), consumer 2 (wg2) waits on its order barrier until wg1 has
    issued its last k-tile, then runs tile 1 (3..5) while wg1's epilogue runs."""
    slot = P.TRACE_HEADER + 2 * P.TRACE_EVENTS
    buf = np.zeros(W.trace_words(cfg), np.uint64)
    t0 = 1_000_000
    recs = {0: [], 1: [], 2: []}

    def ev(w, kind, stage, i, t):
        recs[w].append((t0 + t, kind | (stage << 4) | (i << 8)))
    for i in range(2 * T):
        ev(0, 1, i % cfg.stages, i, 1 + 3 * i)
        ev(0, 2, i % cfg.stages, i, 2 + 3 * i)
        ev(0, 0, i % cfg.stages, i, 3 + 3 * i)
    for w, first, order_end, start in ((1, 0, 92, 100), (2, T, 350, 360)):
        ev(w, 10, w - 1, first, 90 if w == 1 else 10)
        ev(w, 11, w - 1, first, order_end)
        for j in range(T):
            i, s = first + j, start + 100 * j
            ev(w, 3, i % cfg.stages, i, s - 5)
            ev(w, 4, i % cfg.stages, i, s)
            ev(w, 5, i % cfg.stages, i, s)
            ev(w, 6, i % cfg.stages, i, s + 90)
            if j:
                ev(w, 7, (i - 1) % cfg.stages, i - 1, s + 91)
        last = first + T - 1
        end = start + 100 * T
        ev(w, 8, last % cfg.stages, last, end)
        ev(w, 7, last % cfg.stages, last, end + 1)
        ev(w, 9, 0, last, end + (200 if w == 1 else 140))
    for w in range(3):
        base = w * slot
        buf[base:base + 3] = [5_000_000_000, t0, 7]
        buf[base + 3] = len(recs[w])
        for j, (clk, packed) in enumerate(recs[w]):
            buf[base + P.TRACE_HEADER + 2 * j] = clk
            g = 5_000_000_000 + (clk - t0) * 2 // 3
            buf[base + P.TRACE_HEADER + 2 * j + 1] = (g & 0xFFFFFFFF) << 32 | packed
    return buf


def test_trace_decoder_and_overlap_on_a_pingpong_buffer():
    cfg = W._pingpong("float16").replace(trace=True)
    tr = W.decode_trace(_pingpong_buffer(cfg), cfg.consumers, 3, cfg.stages)
    by = lambda lane, kind: sorted(s.k for s in tr.spans if s.lane == lane and s.kind == kind)  # noqa: E731
    assert by("cta0/wg1", "mma") == [0, 1, 2] and by("cta0/wg2", "mma") == [3, 4, 5]
    assert by("cta0/wg1", "wait_order") == [0] and by("cta0/wg2", "wait_order") == [3]
    assert by("cta0/wg1", "epilogue") == [2] and by("cta0/wg2", "epilogue") == [5]
    assert [s.stage for s in tr.spans if s.kind == "wait_order"] == [0, 1]
    met = W.trace_metrics(tr, cfg)
    assert met["ctas"]["cta0"]["k_tiles"] == 6                # both consumers' k-tiles
    o = W.pingpong_overlap(tr.as_dict(cta=0))
    # wg1's epilogue 400..600 lies under wg2's wgmmas 360..660; wg2's 660..800 under nothing
    assert o["epilogue_covered"] == pytest.approx(200 / 340) and o["epilogues"] == 2
    assert o["math_busy"] == pytest.approx(1.0)
    assert o["wait_order_cycles"] == pytest.approx((2 + 340) / 2)


def test_cooperative_trace_has_no_epilogue_overlap():
    cfg = W._raster("float16").replace(trace=True)
    tr = W.decode_trace(W.synthetic_trace(cfg, 3, 5), cfg.consumers, 5, cfg.stages)
    o = W.pingpong_overlap(tr.as_dict(cta=0))
    assert o["epilogues"] == 6 and o["epilogue_covered"] == pytest.approx(0.0)
    assert np.isnan(o["wait_order_cycles"])


# ---- the GPU script's entry, against stand-ins --------------------------------------------------------

def _fake_results():
    cfg = W._pingpong("float16").replace(trace=True)
    tr = W.decode_trace(_pingpong_buffer(cfg), cfg.consumers, 3, cfg.stages)
    rows = [{"kernel": "cuBLAS", "dtype": "float16", "size": 4096, "tflops": 800.0}]
    ladder = [{"rung": 8, "name": "raster", "dtype": "float16", "size": 4096, "label": "r8",
               "tflops": 790.0, "of_cublas": 790 / 800, "prediction": "p"},
              {"rung": 9, "name": "pingpong", "dtype": "float16", "size": 4096, "label": "r9",
               "tflops": 820.0, "of_cublas": 820 / 800, "prediction": "p"}]
    traces = [{"rung": 9, "name": "pingpong", "label": cfg.label(), "size": 4096,
               "tflops_traced": 700.0, "metrics": W.trace_metrics(tr, cfg),
               "cta0": tr.as_dict(cta=0)}]
    return {"rows": rows, "ladder": ladder, "traces": traces, "checks": [],
            "broken_pingpong": {"error": "x: mbarrier wait timed out on the order barrier"}}


def test_pingpong_table_prints_the_ratios():
    text = W.pingpong_table(_fake_results())
    line = next(ln for ln in text.splitlines() if ln.startswith(" 4096 float16"))
    assert line.split()[2:] == ["800", "790", "820", "0.988", "1.025", "1.038"]
    assert "trace rung 9 4096³: epilogue time under the other consumer's wgmmas 0.59" in text
    assert "broken ping-pong variant: mbarrier wait timed out on the order barrier" in text


def test_gpu_ch06_pingpong_times_rungs_8_and_9_only(gpu, monkeypatch, capsys):  # noqa: F811
    from pathlib import Path
    from asynctc.core import records
    out = Path(records.data_dir()).parent / "out"
    seen = {}
    monkeypatch.setattr(W, "measure_ladder", lambda **kw: seen.update(kw) or _fake_results())
    monkeypatch.setattr(W, "summarize_ladder", lambda rec: "LADDER")
    sys.argv = ["gpu_ch06.py", "--out", str(out), "--pingpong"]
    assert _load("gpu_ch06").main() == 0
    lines = _lines(capsys.readouterr().out)
    assert seen["rungs"] == (8, 9) and seen["nonsquare"] == () and seen["sizes"] == (4096, 8192)
    assert "LADDER" in lines and any(ln.startswith(" 4096 float16") for ln in lines)
    assert (out / "results.json").exists() and lines[-1] == "[t] done"
    assert not list(Path(records.data_dir()).rglob("*.json"))            # no record written
    sys.argv = ["gpu_ch06.py", "--out", str(out), "--pingpong", "--record"]
    assert _load("gpu_ch06").main() == 0
    written = sorted(p.name for p in Path(records.data_dir()).rglob("*.json"))
    assert written == ["ws_pingpong.json"]                 # its own record, never the ladder's


# ---- GPU ------------------------------------------------------------------------------------------------

#: Exact multiples of the 128×128 tile: a short K (3 k-tiles, fewer than the stages) with fewer
#: tiles than SMs (consumer 2 of most CTAs idle); 2048×4096 = 512 tiles (256 cluster pairs) on
#: 132 CTAs: 3.9 rounds, the last partial, CTAs with odd and even tile counts.
EXACT_SHAPES = ((256, 512, 192), (2048, 4096, 512))
#: Not multiples of the tile (the EDGES build): M, N, K all ragged, C rows 16-byte aligned for the
#: TMA store; and an odd N with the register epilogue.
EDGE_SHAPES = ((1000, 1064, 1000), (777, 1001, 328))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(W.DTYPES))
@pytest.mark.parametrize("shape", EXACT_SHAPES)
def test_pingpong_rung_matches_float64(dtype, shape, rng):
    for cfg in [c for c in _pp_configs() if c.dtype == dtype] + [W.RUNGS[-1].make(dtype)]:
        c = W.verify(cfg, *shape, rng=rng)
        assert c.passed, (cfg.label(), shape, c.as_dict())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(W.DTYPES))
@pytest.mark.parametrize("shape", EDGE_SHAPES)
def test_pingpong_edges_match_float64(dtype, shape, rng):
    from asynctc.gemm.operands import EdgeGemm
    m, n, k = shape
    top = W.RUNGS[-1].make(dtype).replace(edges=True)
    cfg = top if n * 2 % 16 == 0 else top.replace(tma_store=False, out_dtype="float32")
    a, b, bs = P.random_operands(m, n, k, P.PipelineConfig(dtype=dtype, b_major="K"), rng)
    out = DeviceArray.poisoned((m, n), checks.np_dtype(cfg.out_dtype))
    g = EdgeGemm(cfg, DeviceArray.from_host(a), DeviceArray.from_host(bs), out)
    g.launcher()()
    g.check_error()
    c = checks.compare_elementwise(out.to_host(), a, b, cfg.out_dtype, cfg.label())
    assert c.passed, (cfg.label(), shape, c.as_dict())


@pytest.mark.gpu
def test_broken_order_barrier_ends_in_its_error_not_a_hang(rng):
    msg = W.run_broken(2, rng=rng)
    assert "mbarrier wait timed out" in msg and "order barrier" in msg and "warpgroup 1" in msg
    c = W.verify(W.RUNGS[-1].make("float16"), *EXACT_SHAPES[0], rng=rng)
    assert c.passed, c.as_dict()
