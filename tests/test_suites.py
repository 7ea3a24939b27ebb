"""A CPU dry run of the record suites whose measurement code issue 9 changed (ceilings, mma_sync,
cp_async): the GPU is replaced by an emulator of each kernel's documented result (the GEMMs compute
A·B in fp32, the peak kernel ITERS·(A·B) and its clock record, the shared-memory copy its sums),
sizes are shrunk, and time_gpu runs its real sampling logic against a fake timer. It catches
plumbing mistakes (arguments, record fields, checks wired to the wrong output, summaries that
cannot read their own record) before the one GPU run; timings here mean nothing."""
import dataclasses
import time

import numpy as np
import pytest

from asynctc import cp_async, mma_sync, why_async
from asynctc.core import bench, checks, records, runtime
from fakes import FakeArray


@dataclasses.dataclass
class FakeKernel:
    source: str
    name: str
    arch: str
    defines: dict
    resources: runtime.Resources = dataclasses.field(default_factory=lambda: runtime.Resources(
        registers=128))


def fake_compile(source, name, arch="sm_90a", defines=None, extra_options=None):
    return FakeKernel(source, name, arch, dict(defines or {}))


def emulate(ck, grid, block, *args, shmem_bytes=0, stream=None, cluster=None):
    if ck.name in ("gemm_mma_sync", "gemm_cp_async"):
        a, b, out, m, n, k = args
        assert (int(m), int(n), int(k)) == (a.shape[0], b.shape[1], a.shape[1])
        assert grid == (int(m) // ck.defines["BM"]) * (int(n) // ck.defines["BN"])
        c = a.h.astype(np.float32) @ b.h.astype(np.float32)
        out.h[...] = c.astype(out.dtype)
    elif ck.name == "mma_sync_peak":
        a, b, out, clk = args
        p = a.h.astype(np.float32) @ b.h.astype(np.float32)
        out.h[...] = (ck.defines["ITERS"] * p.astype(np.float64)).astype(np.float32)
        clk.h.reshape(-1, 4)[:] = (1000, 1000 + 1_755_000, 5_000, 5_000 + 1_000_000)   # 1755 MHz
    elif ck.name.startswith("smem_copy_"):
        src, dst = args
        bb, it = ck.defines["B"], ck.defines["ITERS"]
        t = src.h.reshape(grid, it, bb, bb).astype(np.float64)
        dst.h[...] = np.roll(t, -1, axis=3).sum(axis=1).reshape(-1).astype(np.float32)
    else:
        raise AssertionError(f"no emulation of {ck.name}")


class FakeTimer:
    """time_gpu's timer: host wall time stands in for GPU time; the clock probe reads 1713 MHz."""

    def __init__(self, stream=None, slots=0):
        self.spins = set()

    def event(self):
        return time.perf_counter() * 1e3

    def elapsed_ms(self, e0, e1):
        return max(e1 - e0, 1e-4)

    def sync(self):
        pass

    def flush(self):
        pass

    def spin(self, slot, ns):
        self.spins.add(slot)

    def clock_mhz(self, slots):
        return [1713.0 for s in slots if s in self.spins]

    def probe_in_flight(self, slot, ns, skip_ns):
        pass

    def records(self, slots):          # no in-flight window: time_gpu falls back to the probe after
        return [None for _ in slots]


def fake_cublas(a, b, out, stream=None):
    def run():
        out.h[...] = (a.h.astype(np.float32) @ b.h.astype(np.float32)).astype(out.dtype)
    return run


INFO = runtime.DeviceInfo(name="NVIDIA H200 (emulated)", cc=(9, 0), sm_count=4,
                          max_sm_clock_khz=1980000, mem_clock_khz=3201000, l2_bytes=1 << 20,
                          smem_optin_bytes=232448, driver_version=13000)


@pytest.fixture
def emulated_gpu(monkeypatch):
    for mod in (mma_sync.launch, mma_sync.peak, cp_async, why_async, checks):   # the uploaders
        monkeypatch.setattr(mod, "DeviceArray", FakeArray)
    monkeypatch.setattr(runtime, "compile_kernel", fake_compile)
    monkeypatch.setattr(runtime, "launch", emulate)
    monkeypatch.setattr(runtime, "check_launch", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "precompile", lambda jobs, workers=None: list(jobs))
    monkeypatch.setattr(runtime, "device_info", lambda: INFO)
    monkeypatch.setattr(runtime, "default_stream", lambda: None)
    monkeypatch.setattr(bench, "_CudaTimer", FakeTimer)
    real_time_gpu = bench.time_gpu

    def quick(fn, **kw):                       # the real sampling code, 2 samples of 1 launch
        kw.update(reps=2, warmup=1, launches=1)
        return real_time_gpu(fn, **kw)
    monkeypatch.setattr(bench, "time_gpu", quick)
    monkeypatch.setattr(bench, "baseline_library", lambda: "emulated")
    monkeypatch.setattr(bench, "cublas_gemm", fake_cublas)
    monkeypatch.setattr(bench, "sustained", lambda fn, **k: (fn(), {"ms": 1.0, "samples": 20,
                                                                    "sm_mhz": 1700.0,
                                                                    "power_w": 650.0})[1])
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {"sm_mhz": 1980})
    monkeypatch.setattr(checks, "FULL_CHECK_MAX", 256)             # 512 takes the sampled path
    monkeypatch.setattr(mma_sync.suite, "TIMED_CHECK_SHAPE", (3 * 128, 512, 128))
    monkeypatch.setattr(mma_sync.suite, "CHECK_SHAPES", ((128, 256, 64), (256, 512, 96)))
    monkeypatch.setattr(mma_sync.suite, "MMA_SIZES", (256, 512))
    monkeypatch.setattr(mma_sync.suite, "SIMT_SIZES", ())
    monkeypatch.setattr(mma_sync.suite, "ABLATION_SIZE", 256)
    monkeypatch.setattr(mma_sync.peak, "PEAK_ITERS", 64)
    monkeypatch.setattr(cp_async, "CHECK_SHAPES", ((128, 256, 64),))
    monkeypatch.setattr(cp_async, "SIZES", (256, 512))
    monkeypatch.setattr(cp_async, "BF16_SIZES", (256,))
    monkeypatch.setattr(cp_async, "SMEM_ITERS", 4)
    monkeypatch.setattr(why_async, "COPY_MIB", (1,))
    monkeypatch.setattr(why_async, "CUBLAS_SIZES", (256, 512))


def _record(suite, results):
    prov = {"gpu": INFO.name, "sm_count": INFO.sm_count, "max_sm_clock_mhz_attr": 1980.0,
            "date": "2026-11-30T00:00:00+00:00", "git_commit": "dryrun"}
    return records.Record(suite, prov, results, live=True)


def test_mma_sync_suite_dry_run(emulated_gpu, monkeypatch):
    anatomy = mma_sync.measure_mma_sync_anatomy
    monkeypatch.setattr(mma_sync.suite, "measure_mma_sync_anatomy", lambda: anatomy(256))
    r = mma_sync.measure_mma_sync()
    outs = {c.get("output") for c in r["checks"]}
    assert outs == {"float32", "float16", "bfloat16"}                # fp32 path + timed binaries
    assert all(c["passed"] and "max_err" in c for c in r["checks"])
    timed = [c for c in r["checks"] if c.get("timed_binary")]
    assert len(timed) == 2 * len(mma_sync.TILES)
    rows = [x for x in r["sweep"] if x["kernel"] == "mma.sync"]
    assert rows and all(x["check_timed"]["passed"] and x["sm_mhz"] == 1713.0 for x in rows)
    assert {x["check_timed"]["rows"] for x in rows if x["size"] == 512} == {4}   # one per band
    assert {x["check_timed"]["rows"] for x in rows if x["size"] == 256} == {256}  # in full
    cub = [x for x in r["sweep"] if x["kernel"] == "cuBLAS"]
    assert cub and all("sm_mhz" in x and "launches_per_sample" in x for x in cub)
    assert len(r["peak"]) == 2 * len(mma_sync.PEAK_CONFIGS)
    for p in r["peak"]:
        assert p["sm_mhz"] == pytest.approx(1755.0) and p["check"]["passed"]
        assert p["sm_mhz_source"].startswith("in-kernel")
    assert [x["variant"] for x in r["ablation"]][0] == "cuBLAS" and len(r["sustained"]) == 2
    text = mma_sync.summarize_mma_sync(_record("mma_sync", r))
    assert "1755 MHz" in text and "datasheet's 989 TFLOP/s at 1830 MHz" in text   # the legend, once
    assert text.count("datasheet's 989") == 1 and "of peak at 1755 MHz (in-kernel), " in text


def test_mma_sync_timed_check_catches_a_wrong_element(emulated_gpu, monkeypatch):
    """A kernel that gets one element of its timed (input-dtype) output wrong stops the suite,
    although its fp32-output variant is right."""
    def wrong(ck, grid, block, *args, **kw):
        emulate(ck, grid, block, *args, **kw)
        if ck.name == "gemm_mma_sync" and not ck.defines.get("OUT_F32"):
            out = args[2]
            out.h[0, 5] = out.h[0, 6]
    monkeypatch.setattr(runtime, "launch", wrong)
    with pytest.raises(RuntimeError, match="timed binary"):
        mma_sync.measure_mma_sync()


def test_cp_async_suite_dry_run(emulated_gpu):
    r = cp_async.measure_cp_async()
    assert all(c["passed"] for c in r["checks"])
    assert any(c.get("kernel") == "mma.sync" and c.get("timed_binary") for c in r["checks"])
    ch01 = [x for x in r["sweep"] if x["kernel"] == "mma.sync"]
    assert len(ch01) == len(cp_async.SIZES) + len(cp_async.BF16_SIZES) and all(x["sm_mhz"] == 1713.0 for x in ch01)
    assert len(r["smem"]) == 3
    for row in r["smem"]:
        assert row["src_bytes"] >= 2 * INFO.l2_bytes and row["sync"]["check"]["passed"]
    text = cp_async.summarize_cp_async(_record("cp_async", r))
    assert "this run" in text and "ch.01" in text
    assert "mma_sync record" in text or "no mma_sync record" in text


def test_ceilings_suite_dry_run(emulated_gpu):
    r = why_async.measure_ceilings()
    assert r["copy"][0]["pairs"] == 1 and r["copy"][0]["gbps_rw"] > 0
    assert [x["m"] for x in r["cublas"]] == [256, 512, 256, 512]
    for x in r["cublas"]:
        assert x["sm_mhz"] == 1713.0 and x["check"]["passed"]
    assert "clocks_after" in r["cublas"][1]
    text = why_async.summarize_ceilings(_record("ceilings", r))
    assert "1713 MHz" in text and "989" in text and "nvidia-smi" not in text


def test_wgmma_suite_dry_run(emulated_gpu, monkeypatch):
    """The wgmma suite's throughput loop: the timed binary and its 16-iteration copy both checked,
    the in-kernel clock the denominator, the datasheet beside it (kernels emulated as in
    tests/test_wgmma.py)."""
    from test_wgmma import _emulate

    from asynctc import wgmma as W
    from asynctc import wgmma_peak as WP
    monkeypatch.setattr(W.launch, "DeviceArray", FakeArray)      # the module that uploads
    monkeypatch.setattr(WP, "DeviceArray", FakeArray)
    monkeypatch.setattr(runtime, "launch", _emulate)
    monkeypatch.setattr(W.launch, "_tensor_map", lambda arr, tile: (arr, tile))
    few = W.supported_configs(ns=(64,))[:4]
    monkeypatch.setattr(WP, "supported_configs", lambda: few)
    monkeypatch.setattr(WP, "tma_configs", lambda: [])
    monkeypatch.setattr(WP, "peak_configs", lambda: [
        dict(dtype="float16", n=256, source="smem", chains=1, ctas_per_sm=2),
        dict(dtype="float16", n=8, source="registers", chains=8, ctas_per_sm=2),
        dict(dtype="float8_e4m3fn", n=256, source="smem", chains=1, ctas_per_sm=2)])
    r = WP.measure_wgmma()
    assert not r["failures"] and len(r["throughput"]) == 3
    for row in r["throughput"]:
        assert row["check"]["passed"] and row["check_layout"]["passed"]
        assert row["sm_mhz"] == pytest.approx(1980.0)                 # the emulator's clock record
        assert row["datasheet_tflops"] == pytest.approx(989.4 * (2 if "8" in row["dtype"] else 1),
                                                        abs=0.2)
        assert row["check"]["shape"][2] == row["iters"] * (64 if row["dtype"] == "float16" else 128)
    fp8 = r["throughput"][2]
    assert "completeness" in fp8["check_kind"] and fp8["check"]["tol"] == 1.0
    assert r["throughput"][0]["check_kind"].startswith("exact") and r["throughput"][0]["check"]["tol"] == 0
    assert r["throughput"][1]["check_kind"].startswith("exact")          # N=8, 8 chains: 8192 iters
    text = WP.summarize_wgmma(_record("wgmma", r))
    assert "1980 MHz" in text and "datasheet 989 at 1830 MHz" in text


def _as_in_flight(results, every: int = 0):
    """The rows of a committed record as a re-record with the in-flight probe would carry them
    (``every`` > 0: every ``every``-th row keeps its after-sample clock, a mixed record)."""
    import copy
    out, n = copy.deepcopy(results), 0

    def walk(x):
        nonlocal n
        if isinstance(x, dict):
            if bench.clock_kind(x) == "probed after the sample":
                n += 1
                if not (every and n % every == 0):
                    x.update(sm_mhz_after=x["sm_mhz"], sm_mhz=0.83 * x["sm_mhz"],
                             sm_mhz_source=bench.CLOCK_INFLIGHT_SOURCE)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(out)
    return out


@pytest.mark.parametrize("suite,summarize", [("ceilings", why_async.summarize_ceilings),
                                             ("mma_sync", mma_sync.summarize_mma_sync),
                                             ("cp_async", cp_async.summarize_cp_async)])
def test_summaries_name_the_records_clock_and_caveat_only_the_probe_after(suite, summarize):
    """A summary says how each clock was measured, from the rows, and carries the lower-bound caveat
    exactly when a clock it prints was probed after the sample — for the committed records (probed
    after) and for the same rows as a re-record in flight would carry them, all or some. (cp_async
    also prints the mma_sync record's clocks, which stay as committed.)"""
    try:
        rec = records.load(suite)
    except records.RecordError:
        pytest.skip(f"no committed {suite} record")
    caveat = bench.clock_caveat("probed after the sample")
    for every in (None, 0, 2, 3):                 # as committed, all in flight, two mixes
        results = rec.results if every is None else _as_in_flight(rec.results, every)
        text = summarize(records.Record(suite, rec.provenance, results))
        after = "(probed after the sample)" in text
        assert ("lower bound" in text) == after, (suite, every)
        if every is None:          # as committed (re-recorded in flight in the fourth session)
            assert (caveat in text) == after
        if every == 0:
            assert "(in flight)" in text and (suite == "cp_async" or not after)
