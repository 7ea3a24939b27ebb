"""Chapter 09 deep dive, the persistent tcgen05 GEMM: CPU tests (every configuration compiles to an
sm_100a cubin whose SASS holds the instructions it is built from — pinned by their nvdisasm names —
validation naming field/value/rule, refusal before the GPU off compute capability 10.0) and GPU
tests (against float64; skipped with the reason unless a compute capability 10.0 GPU is present)."""
import numpy as np
import pytest

from asynctc import tcgen05 as T
from asynctc.core import runtime
from asynctc.core.memory import DeviceArray
from asynctc.models.block_scale import BlockScaledIdesc
from asynctc.models.tcgen05 import InstrDescriptor

H200 = runtime.DeviceInfo(name="NVIDIA H200", cc=(9, 0), sm_count=132, max_sm_clock_khz=1980000,
                          mem_clock_khz=3201000, l2_bytes=62914560, smem_optin_bytes=232448,
                          driver_version=13000)


def _ids(cfgs):
    return [c.label().replace(" ", "_").replace(",", "") for c in cfgs]


@pytest.mark.parametrize("cfg", T.PERSISTENT_CONFIGS, ids=_ids(T.PERSISTENT_CONFIGS))
def test_persistent_sass_holds_its_instructions(cfg):
    ck = T.compile_persistent(cfg)
    assert ck.arch == "sm_100a" and ck.cubin[:4] == b"\x7fELF"
    s = T.persistent_sass_summary(cfg)
    full = s["full"]
    steps = 4 * (cfg.bk // cfg.atom_k)                 # K = 32 bytes per MMA, unrolled per k-tile
    pair = cfg.cta_group == 2
    if cfg.kind == "mxf8f6f4":
        assert s["UTCQMMA"] == steps and s["UTCHMMA"] == 0
        assert full.get("UTCCP.T.S.128dp128bit") == 2          # A and B scale tiles per stage
        assert s["UTMALDG"] == 2 * (cfg.bk // cfg.atom_k) + 2  # + the two scale boxes
    else:
        assert s["UTCHMMA"] == steps and s["UTCQMMA"] == 0 and s["UTCCP"] == 0
        assert full.get("UTCHMMA.2CTA" if pair else "UTCHMMA") == steps
    # commits: the stage's empty barrier and the accumulator's acc_full
    assert s["UTCBAR"] == 2
    if cfg.cluster_size > 1:
        commits = {k for k in full if k.startswith("UTCBAR")}
        # a pair: both commits multicast (empty to every CTA, acc_full to the pair); one-CTA groups:
        # the stage's commit multicasts to both groups, acc_full stays local
        assert commits == ({"UTCBAR.2CTA.MULTICAST"} if pair else {"UTCBAR", "UTCBAR.MULTICAST"})
        assert {"UCGABAR_ARV", "UCGABAR_WAIT"} <= set(full)
    # the scheduler: try_cancel → UGETNEXTWORKID (.SELFCAST alone, .BROADCAST for a cluster)
    if cfg.sched == "clc":
        want = "UGETNEXTWORKID.BROADCAST" if cfg.cluster_size > 1 else "UGETNEXTWORKID.SELFCAST"
        assert full.get(want) == 1, sorted(full)
    else:
        assert s["UGETNEXTWORKID"] == 0
    # A multicast across the two MMA groups of a cluster
    if cfg.cluster_n == 2:
        assert full.get("UTMALDG.2D.MULTICAST.2CTA" if pair else "UTMALDG.2D.MULTICAST") == 1
    else:
        assert not any("MULTICAST" in k for k in full if k.startswith("UTMALDG"))
    if pair:
        assert any(k.startswith("UTCATOMSWS.2CTA.FIND_AND_SET") for k in full)
    assert full.get("LDTM.x32") == 1 and any("FIND_AND_SET" in k for k in full)
    assert s["LDL"] == 0 and s["STL"] == 0 and s["spill_bytes"] == 0
    assert s["static_smem"] == T.STATIC_SMEM
    assert cfg.smem_bytes + s["static_smem"] <= T.SMEM_LIMIT


def test_query_cancel_has_no_instruction_of_its_own():
    """query_cancel decodes the 16-byte response in ordinary registers: after the LDS.128 of the
    response, no CLC opcode other than UGETNEXTWORKID appears (nvdisasm 13.x)."""
    text = T.compile_persistent(T.PERSISTENT_CONFIGS[0]).sass()
    ops = {ln.split()[1] for ln in text.splitlines() if ln.strip().startswith("/*") and
           len(ln.split()) > 1}
    assert any(o.startswith("UGETNEXTWORKID") for o in ops)
    assert not any("CLC" in o or "CANCEL" in o for o in ops)


def test_descriptors_are_the_models():
    cfg = T.PERSISTENT_CONFIGS[3]
    assert cfg.idesc == InstrDescriptor("float16", "float16", "float32", 256, 256, cta_group=2).encode()
    bsc = T.PERSISTENT_CONFIGS[-1]
    assert bsc.idesc == BlockScaledIdesc("float8_e4m3fn", "float8_e4m3fn", 128, 128).encode() == \
        (16 << 17) | (1 << 23) | (1 << 27)
    assert bsc.tmem_columns == 512 and bsc.tmem_needed == 256 + 32
    assert [w for _, _, w in bsc.tmem_map()][:2] == [128, 128]


@pytest.mark.parametrize("kwargs,field", [
    (dict(kind="f8f6f4"), "kind='f8f6f4'"),
    (dict(dtype="float8_e4m3fn"), "dtype='float8_e4m3fn'"),
    (dict(cta_group=3), "cta_group=3"),
    (dict(cluster_n=4), "cluster_n=4"),
    (dict(sched="stream_k"), "sched='stream_k'"),
    (dict(bn=48), "bn=48"),
    (dict(bk=96), "bk=96"),
    (dict(stages=0), "stages=0"),
    (dict(bn=256, stages=8), "stages=8"),
    (dict(kind="mxf8f6f4", dtype="float8_e4m3fn", bn=256, bk=128), "kind='mxf8f6f4'"),
    (dict(bn=128.0), "bn=128.0"),
])
def test_config_validation_names_field_value_rule(kwargs, field):
    with pytest.raises(T.Tcgen05Error) as e:
        T.PersistentConfig(**kwargs)
    msg = str(e.value)
    assert msg.startswith(field + ":") and len(msg) > len(field) + 20, msg


def test_grid_per_scheduler():
    clc = T.PersistentConfig(cta_group=2, cluster_n=2, bn=256)
    assert clc.units(4096, 4096) == 16 * 8 and clc.grid(4096, 4096) == (4 * 128, 1, 1)
    static = T.PersistentConfig(sched="static")
    assert static.grid(8192, 8192, 148) == (148, 1, 1)


@pytest.fixture
def no_gpu_allowed(monkeypatch):
    def boom(*_a, **_k):
        raise AssertionError("reached the GPU")
    monkeypatch.setattr(DeviceArray, "from_host", classmethod(boom))
    monkeypatch.setattr(DeviceArray, "poisoned", classmethod(boom))
    monkeypatch.setattr(runtime, "launch", boom)


@pytest.mark.parametrize("info", [H200, None])
def test_run_refuses_before_touching_the_gpu(monkeypatch, no_gpu_allowed, info):
    monkeypatch.setattr(runtime, "device_info", lambda: info)
    a = np.ones((128, 64), np.float16)
    with pytest.raises(T.WrongGPUError, match=r"tcgen05 needs sm_100 \(compute capability 10\.0\)"):
        T.run_persistent(a, a.T.copy(), T.PersistentConfig())
    with pytest.raises(T.WrongGPUError):            # the refusal comes before operand checks
        T.run_persistent(a[:, :36], a[:, :36].T.copy(), T.PersistentConfig())


def test_operands_checked():
    from asynctc.tcgen05.persistent import check_operands
    cfg = T.PERSISTENT_CONFIGS[-1]
    a = np.zeros((128, 256), np.uint8).view(T._np_dtype("float8_e4m3fn"))
    b = np.zeros((256, 128), np.uint8).view(T._np_dtype("float8_e4m3fn"))
    with pytest.raises(T.Tcgen05Error, match=r"^sfa=\(128, 4\)"):
        check_operands(a, b, cfg, np.zeros((128, 4), np.uint8), np.zeros((128, 8), np.uint8))
    with pytest.raises(T.Tcgen05Error, match=r"^K=192"):
        check_operands(a[:, :192], b[:192], cfg)
    assert check_operands(a, b, cfg, np.zeros((128, 8), np.uint8), np.zeros((128, 8), np.uint8)) == \
        (128, 128, 256)


@pytest.mark.gpu(arch="sm_100a")
@pytest.mark.parametrize("cfg", [c for c in T.PERSISTENT_CONFIGS if c.kind == "f16"],
                         ids=_ids([c for c in T.PERSISTENT_CONFIGS if c.kind == "f16"]))
def test_persistent_matches_float64(cfg, rng):
    for m, n, k in ((3 * cfg.bm + 40, 5 * cfg.bn * cfg.cluster_n - 24, 8 * cfg.bk + 8),
                    (cfg.bm, cfg.bn, cfg.bk)):
        a, b = T.random_operands(m, n, k, cfg.dtype, rng)
        chk = T.compare(T.run_persistent(a, b, cfg), a, b, T.GemmConfig(cfg.dtype))
        assert chk.passed, chk.as_dict()


@pytest.mark.gpu(arch="sm_100a")
def test_block_scaled_matches_float64(rng):
    from asynctc.models import block_scale as bs
    cfg = T.PERSISTENT_CONFIGS[-1]
    m, n, k = 256 + 40, 384, 512
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    dt = T._np_dtype(cfg.dtype)
    a8, b8 = a.astype(dt), b.astype(dt)
    sfa = rng.integers(121, 134, (m, k // 32)).astype(np.uint8)
    sfb = rng.integers(121, 134, (n, k // 32)).astype(np.uint8)
    c = T.run_persistent(a8, b8, cfg, sfa, sfb)
    xa = a8.astype(np.float64) * np.repeat(bs.ue8m0(sfa), 32, axis=1)
    xb = b8.astype(np.float64) * np.repeat(bs.ue8m0(sfb), 32, axis=1).T
    ref, mag = xa @ xb, np.abs(xa) @ np.abs(xb)
    assert np.all(np.abs(c - ref) <= k * 2.0 ** -22 * mag)
