"""asynctc.core.bench without a GPU: the sampling logic of time_gpu (driven by a fake timer), the
one definition of peak, and the delay/clock kernel's compilation. Nothing here times anything."""
import math

import numpy as np
import pytest

from asynctc.core import bench, runtime


class FakeTimer:
    """A GPU timeline: each launch of ``fn`` advances it by ``kernel_ms``, a flush by 0.05 ms, a
    spin by its length; events read the timeline. Records the order of operations."""

    def __init__(self, kernel_ms: float, mhz: float = 1755.0, flight_mhz: float = 1650.0,
                 probe_lag_ms: float = 0.0):
        self.t = 0.0
        self.kernel_ms = kernel_ms
        self.mhz = mhz                     # after a sample
        self.flight_mhz = flight_mhz       # during the launches
        self.probe_lag_ms = probe_lag_ms   # how late an in-flight probe starts
        self.ops: list = []
        self.spins: dict[int, int] = {}
        self.windows: dict[int, tuple] = {}

    def fn(self):
        self.t += self.kernel_ms
        self.ops.append("launch")

    def event(self):
        self.ops.append("event")
        return self.t

    def elapsed_ms(self, e0, e1):
        return e1 - e0

    def sync(self):
        pass

    def flush(self):
        self.t += 0.05
        self.ops.append("flush")

    def spin(self, slot, ns):
        t0 = self.t * 1e6
        self.t += ns / 1e6
        self.spins[slot] = ns
        self.windows[slot] = (0, int(ns * self.mhz / 1e3), int(t0), int(t0 + ns))
        self.ops.append(("spin", slot))

    def probe_in_flight(self, slot, ns, skip_ns):
        # starts beside the delay kernel (enqueued next) and measures after skip_ns: t not advanced
        t0 = (self.t + self.probe_lag_ms) * 1e6 + skip_ns
        self.windows[slot] = (0, int(ns * self.flight_mhz / 1e3), int(t0), int(t0 + ns))
        self.ops.append(("probe", slot))

    def records(self, slots):
        return [self.windows.get(s) for s in slots]

    def clock_mhz(self, slots):
        return [self.mhz for s in slots if s in self.spins]


def _launches_between_events(ops):
    out, inside, n = [], False, 0
    for op in ops:
        if op == "event":
            if inside:
                out.append(n)
            inside, n = not inside, 0
        elif op == "launch" and inside:
            n += 1
    return out


def test_launches_per_sample_rule():
    assert bench.launches_per_sample(0.010, 1.0) == 100        # 10 µs kernel: 100 launches ≥ 1 ms
    assert bench.launches_per_sample(0.3, 1.0) == 4             # ceil(1 / 0.3)
    assert bench.launches_per_sample(5.0, 1.0) == 1             # long kernels: one launch
    assert bench.launches_per_sample(1e-6, 1.0, max_launches=256) == 256
    assert bench.launches_per_sample(0.0, 1.0, max_launches=64) == 64    # below event resolution
    assert bench.launches_per_sample(float("nan"), 1.0, max_launches=8) == 8
    with pytest.raises(ValueError, match="max_launches"):
        bench.launches_per_sample(1.0, 1.0, max_launches=0)


@pytest.mark.parametrize("kernel_ms,n", [(0.010, 100), (0.25, 4), (3.0, 1), (1e-5, 256)])
def test_time_gpu_samples_last_at_least_1ms(kernel_ms, n):
    ft = FakeTimer(kernel_ms)
    t = bench.time_gpu(ft.fn, warmup=2, reps=5, timer=ft)
    assert t.launches_per_sample == n
    per_sample = _launches_between_events(ft.ops)
    assert per_sample == [1] + [n] * 5               # the sizing launch, then 5 samples of n
    assert all(math.isclose(x, kernel_ms) for x in t.samples_ms)   # per-launch, not per-sample
    assert n * kernel_ms >= 1.0 or n == 256
    d = t.as_dict()
    for k in ("median_ms", "p10_ms", "p90_ms", "reps"):      # the fields notebooks read
        assert k in d
    assert d["reps"] == 5 and d["launches_per_sample"] == n and d["flush"] == "sample"
    assert "sm_mhz" not in d                          # no clock asked for


def test_time_gpu_flush_modes():
    ft = FakeTimer(0.010)
    bench.time_gpu(ft.fn, warmup=1, reps=4, timer=ft, flush="launch")
    assert ft.ops.count("flush") == 4                 # one flush before each single-launch sample
    assert _launches_between_events(ft.ops) == [1] * 4
    ft = FakeTimer(0.010)
    bench.time_gpu(ft.fn, warmup=1, reps=4, timer=ft, flush=True)
    assert ft.ops.count("flush") == 1 + 4             # the sizing launch, then once per sample
    i = [k for k, op in enumerate(ft.ops) if op == "flush"][-1]
    assert ft.ops[i + 1] == ("spin", 6)               # flush, delay, event: nothing between
    assert ft.ops[i + 2] == "event"
    ft = FakeTimer(0.010)
    bench.time_gpu(ft.fn, warmup=1, reps=4, timer=ft, flush=False)
    assert "flush" not in ft.ops
    with pytest.raises(ValueError, match="flush="):
        bench.time_gpu(ft.fn, timer=ft, flush="sometimes")


def test_time_gpu_fixed_launches_and_clock():
    ft = FakeTimer(0.5, mhz=1713.0)
    t = bench.time_gpu(ft.fn, warmup=0, reps=3, timer=ft, launches=7, clock=True)
    assert _launches_between_events(ft.ops) == [7, 7, 7]     # no sizing launch when fixed
    # the clock is the in-flight probes' (1650), the after-sample probe's (1713) kept beside it
    assert t.sm_mhz == pytest.approx(1650.0, rel=1e-3)
    d = t.as_dict()
    assert d["sm_mhz"] == pytest.approx(1650.0, rel=1e-3)
    assert d["sm_mhz_source"] == bench.CLOCK_INFLIGHT_SOURCE and d["sm_mhz_after"] == 1713.0
    assert d["clock_in_flight"] == "5/5"
    assert "(in flight)" in bench.peak_text({"tflops": 700.0, **d}, 132)
    # the after-sample probe follows the end event of each sample
    for k, op in enumerate(ft.ops):
        if op == ("spin", 1):
            assert ft.ops[k - 1] == "event"
    # each in-flight probe is launched right before its delay kernel, then the untimed launches
    probes = [k for k, op in enumerate(ft.ops) if isinstance(op, tuple) and op[0] == "probe"]
    assert len(probes) == 5
    for k in probes:
        assert ft.ops[k + 1][0] == "spin" and ft.ops[k + 2:k + 9] == ["launch"] * 7
    # a probe that starts late (it waited for the timed kernel's CTAs) does not count: the clock
    # falls back to the after-sample probe and says so
    late = FakeTimer(0.5, mhz=1713.0, probe_lag_ms=3.0)
    d = bench.time_gpu(late.fn, warmup=0, reps=3, timer=late, launches=7, clock=True).as_dict()
    assert d["sm_mhz"] == 1713.0 and d["sm_mhz_source"] == bench.CLOCK_PROBE_SOURCE
    assert d["clock_in_flight"] == "0/5"
    assert "(probed after the sample)" in bench.peak_text({"tflops": 700.0, **d}, 132)
    with pytest.raises(ValueError, match="launches"):
        bench.time_gpu(ft.fn, timer=ft, launches=0)
    with pytest.raises(ValueError, match="reps"):
        bench.time_gpu(ft.fn, timer=ft, reps=0)


def test_delay_covers_host_enqueue():
    assert bench.delay_ns(0.02, 100) == int(1e6 * (2 * 100 * 0.02 + 0.05))
    assert bench.delay_ns(0.0, 1) == 100_000                   # at least 0.1 ms
    assert bench.delay_ns(10.0, 1000) == 50_000_000            # at most 50 ms


def test_rotating_cycles():
    calls = []
    run = bench.rotating([lambda i=i: calls.append(i) for i in range(3)])
    for _ in range(7):
        run()
    assert calls == [0, 1, 2, 0, 1, 2, 0]
    with pytest.raises(ValueError):
        bench.rotating([])


def test_one_definition_of_peak():
    sheet = bench.DATASHEET
    # the datasheet figure is the formula at its own clock and SM count
    assert bench.peak_tflops(sheet["sm_count"], sheet["boost_mhz"]) == pytest.approx(
        sheet["dense_tflops"]["float16"], abs=0.1)
    assert bench.peak_tflops(132, 1830, 8192) == pytest.approx(sheet["dense_tflops"]["float8_e4m3fn"],
                                                               abs=0.1)
    row = {"tflops": 912.0, "sm_mhz": 1713.0, "sm_mhz_source": "in-kernel"}
    p = bench.peak_at_clock(row, 132)
    assert p["peak_tflops"] == pytest.approx(132 * 4096 * 1713e6 / 1e12)
    assert p["fraction"] == pytest.approx(912.0 / p["peak_tflops"])
    assert p["fraction_of_datasheet"] == pytest.approx(912.0 / 989.4)
    fp8 = bench.peak_at_clock({"tflops": 1870.0, "sm_mhz": 1755.0}, 132, "float8_e4m3fn")
    assert fp8["peak_tflops"] == pytest.approx(2 * bench.peak_tflops(132, 1755.0))
    text = bench.peak_text(row, 132)
    assert "1713 MHz" in text and "989" in text and "1830" in text
    # every printed fraction says which clock it divides by
    assert "(in-kernel)" in text
    probed = {**row, "sm_mhz_source": bench.CLOCK_PROBE_SOURCE}
    assert "(probed after the sample)" in bench.peak_text(probed, 132)
    assert bench.clock_kind({"sm_mhz": 1500.0}) == "clock of unknown source"
    for bad in ({"tflops": 1.0}, {"tflops": 1.0, "sm_mhz": float("nan")},
                {"tflops": 1.0, "sm_mhz": None}):
        with pytest.raises(ValueError, match="measured sm_mhz"):
            bench.peak_at_clock(bad, 132)


def test_measured_clock_of_rows():
    rows = [{"sm_mhz": 1700.0}, {"sm_mhz": 1800.0}, {"tflops": 1.0}, {"sm_mhz": 1750.0}]
    assert bench.measured_clock_mhz(rows) == 1750.0
    with pytest.raises(ValueError, match="re-record"):
        bench.measured_clock_mhz([{"tflops": 1.0}, {"sm_mhz": float("nan")}])


def test_wgmma_peak_uses_the_one_definition():
    from asynctc import wgmma_peak
    assert wgmma_peak.datasheet_tflops(132, 1713.0, "bfloat16") == bench.peak_tflops(132, 1713.0)
    assert wgmma_peak.DATASHEET_FLOP_PER_CLK_SM is bench.FLOP_PER_CLK_PER_SM


def test_clock_kernel_compiles_with_a_bounded_loop():
    ck = runtime.compile_kernel("bench_clock.cu", "clock_probe", "sm_90a")
    assert ck.resources.spill_stores == 0
    assert "i < (1u << 31)" in ck.source_text()           # ends even if %globaltimer were stuck


def test_timing_without_clock_is_nan():
    t = bench.Timing([1.0, 2.0, 3.0])
    assert np.isnan(t.sm_mhz) and t.as_dict()["reps"] == 3 and t.median_ms == 2.0


def test_clock_kind_of_rows_and_its_caveat():
    inflight = {"sm_mhz": 1650.0, "sm_mhz_source": bench.CLOCK_INFLIGHT_SOURCE, "sm_mhz_after": 1971.0}
    after = {"sm_mhz": 1971.0, "sm_mhz_source": bench.CLOCK_PROBE_SOURCE}
    kernel = {"sm_mhz": 1658.0, "sm_mhz_source": "in-kernel clock64/%globaltimer"}
    assert bench.rows_clock_kind([inflight, {"tflops": 1.0}, inflight]) == "in flight"
    assert bench.rows_clock_kind([after]) == "probed after the sample"
    # mixed rows list every kind, in CLOCK_KINDS order whatever the row order
    assert bench.rows_clock_kind([after, inflight]) == "in flight / probed after the sample"
    with pytest.raises(ValueError, match="re-record"):
        bench.rows_clock_kind([{"tflops": 1.0}, {"sm_mhz": float("nan")}])
    # the lower-bound caveat only where a clock was probed after the sample
    assert bench.clock_caveat("in flight") == "" and bench.clock_caveat("in-kernel") == ""
    one = bench.clock_caveat("probed after the sample")
    assert "upper bound" in one and "lower bound" in one and one.startswith("The clock was")
    mixed = bench.clock_caveat(bench.rows_clock_kind([after, inflight]))
    assert "lower bound" in mixed and mixed.startswith("Where the clock was")
    assert "does not say" in bench.clock_caveat(bench.clock_kind({"sm_mhz": 1500.0}))
    for bad in ("probed after", "in flight / nonsense", ""):
        with pytest.raises(ValueError, match="not a clock kind"):
            bench.clock_caveat(bad)
    # every kind clock_kind can return has a caveat (possibly empty), and the caveat follows the row
    for row in (inflight, after, kernel, {"sm_mhz": 1.0}):
        assert bench.clock_kind(row) in bench.CLOCK_KINDS
        assert ("lower bound" in bench.clock_caveat(bench.clock_kind(row))) == (row is after)
    # a row's clock in words: the after-sample probe beside an in-flight clock, not twice
    assert bench.clock_text(inflight) == "1650 MHz (in flight; probed after the sample: 1971 MHz)"
    assert bench.clock_text(after) == "1971 MHz (probed after the sample)"
    assert bench.clock_text({**after, "sm_mhz_after": 1971.0}) == "1971 MHz (probed after the sample)"
    assert bench.clock_text(kernel) == "1658 MHz (in-kernel)"
    with pytest.raises(ValueError, match="measured sm_mhz"):
        bench.clock_text({"tflops": 1.0})


def test_inflight_check_agrees_with_the_kernels_own_clock():
    c = bench.INFLIGHT_CHECK
    assert len(c["in_flight_mhz"]) == len(c["in_kernel_mhz"]) == len(c["workloads"])
    for f, k in zip(c["in_flight_mhz"], c["in_kernel_mhz"]):
        assert abs(f / k - 1) < 0.005
    lo, hi = c["after_mhz_range"]
    assert lo <= hi and lo > max(c["in_kernel_mhz"])


def test_cublas_baseline_pins_fp32_split_k_reduction(monkeypatch):
    """torch lets cuBLAS reduce split-K in 16 bits by default; the baseline switches that off and
    a record's provenance says what the setting was (a fake torch: no GPU here)."""
    import sys
    import types
    from asynctc.core import bench, records
    matmul = types.SimpleNamespace(allow_fp16_reduced_precision_reduction=True,
                                   allow_bf16_reduced_precision_reduction=True)
    fake = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=matmul)))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert bench.reduction_settings() == {
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": True,
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": True}
    assert bench.pin_fp32_reduction() == {"allow_fp16_reduced_precision_reduction": True,
                                          "allow_bf16_reduced_precision_reduction": True}
    assert matmul.allow_fp16_reduced_precision_reduction is False
    assert matmul.allow_bf16_reduced_precision_reduction is False
    monkeypatch.setattr(records, "provenance_start", lambda: {})
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})
    rec = records.measure("x", lambda: {})
    assert rec.provenance["cublas_reduction"] == {
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": False,
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": False}
    monkeypatch.delitem(sys.modules, "torch")
    assert bench.reduction_settings() == {} and bench.pin_fp32_reduction() == {}
    import inspect
    assert "pin_fp32_reduction()" in inspect.getsource(bench.cublas_gemm)


def test_peak_short_gives_both_denominators_and_the_legend_the_formula():
    """The short throughput form (chapter 01's table): both fractions of peak, the measured clock's
    first and named by kind, its MHz; the formula once, in peak_legend."""
    row = {"tflops": 912.0, "sm_mhz": 1713.0, "sm_mhz_source": "in-kernel"}
    p = bench.peak_at_clock(row, 132)
    text = bench.peak_short(row, 132)
    assert text == (f"{p['fraction']:.2f} of peak at 1713 MHz (in-kernel), "
                    f"{p['fraction_of_datasheet']:.2f} at the datasheet's")
    assert text.index(f"{p['fraction']:.2f}") < text.index(f"{p['fraction_of_datasheet']:.2f}")
    inflight = {**row, "sm_mhz_source": bench.CLOCK_INFLIGHT_SOURCE}
    assert "of peak at 1713 MHz (in flight), " in bench.peak_short(inflight, 132)
    probed = {**row, "sm_mhz_source": bench.CLOCK_PROBE_SOURCE}
    assert "at 1713 MHz (probed after the sample), " in bench.peak_short(probed, 132)
    assert "at 1500 MHz (clock of unknown source)" in bench.peak_short({"tflops": 1.0, "sm_mhz": 1500.0}, 132)
    legend = bench.peak_legend(132)
    assert "132 SMs × 4096 FLOP/clk/SM" in legend and "989 TFLOP/s at 1830 MHz" in legend
    assert "8192 FLOP/clk/SM" in bench.peak_legend(132, "float8_e4m3fn") and \
        "1979 TFLOP/s" in bench.peak_legend(132, "float8_e4m3fn")
    with pytest.raises(ValueError, match="sm_mhz"):
        bench.peak_short({"tflops": 1.0}, 132)
    with pytest.raises(ValueError, match="dtype"):
        bench.peak_legend(132, "int8")
