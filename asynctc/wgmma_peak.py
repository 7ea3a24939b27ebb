"""Chapter 04's throughput kernel (``kernels/wgmma_peak.cu``, :class:`WgmmaPeak`): steady-state
wgmma with no memory traffic in the loop, by N and by operand source (SS: A from shared memory,
RS: A from registers), and the chapter's record suite.

``SUITES["wgmma"]`` (``python -m asynctc record wgmma``) checks every supported single-tile
combination of :mod:`asynctc.wgmma` on fresh random data, then measures throughput and reports
TFLOP/s, FLOP per SM per clock at the SM clock measured inside the kernel, the per-clock peak at
that clock (SMs × FLOP/clk/SM × clock) with the datasheet figure beside it, and Luo et al.'s H800
figures.
"""

from __future__ import annotations

import numpy as np

from .core import bench, runtime
from .core.checks import U_ACC, Check, compare, exact_operands, gamma
from .core.memory import DeviceArray
from .core.runtime import precompile
from .models import descriptors as dsc
from .wgmma import (DTYPES, FP8_ACC_U, N_VALUES, SOURCES, TileConfig, mismatch_demo, np_dtype,
                    supported_configs, tile_images, tile_modules, tile_reference, tma_configs,
                    verify_tile, verify_tile_tma)


# --------------------------------------------------------------------------------------------------
# Throughput
# --------------------------------------------------------------------------------------------------

#: Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture" (IPDPS 2024), wgmma
#: m64nNk16 f32.f16 SS on random data, H800 PCIe (114 SMs), TFLOP/s by N.
LUO_H800_TFLOPS = {256: 665, 128: 660, 64: 648, 32: 472, 16: 284, 8: 158}
LUO_H800_SMS = 114
#: Assumed H800 PCIe boost clock for the per-clock conversion of Luo et al.'s numbers (the H100
#: PCIe product brief's 1755 MHz; the paper's own clock is not restated here).
LUO_H800_ASSUMED_MHZ = 1755.0
#: Dense Tensor Core FLOP per clock per SM on sm_90 (H100 whitepaper): fp16/bf16 4096, fp8 8192
#: (one definition: :data:`asynctc.core.bench.FLOP_PER_CLK_PER_SM`).
DATASHEET_FLOP_PER_CLK_SM = bench.FLOP_PER_CLK_PER_SM
PEAK_K_STEPS = 4


def peak_iters(n: int, chains: int) -> int:
    """Loop count giving every configuration about the same work per launch (~1 ms on an H200)."""
    return max(256, (2048 * 256) // (n * chains))


def max_chains(n: int) -> int:
    """Independent accumulators that fit in 128 registers: min(8, 256 / N)."""
    return max(1, min(8, 256 // n))


def compile_peak(dtype: str = "float16", n: int = 256, source: str = "smem", chains: int = 1,
                 iters: int | None = None, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile the throughput kernel (no GPU needed). Raises :class:`ValueError` for bad knobs."""
    name = dsc.dtype_name(dtype)
    if n not in N_VALUES:
        raise ValueError(f"n={n!r}: must be one of {N_VALUES}")
    if source not in SOURCES:
        raise ValueError(f"source={source!r}: must be one of {SOURCES}")
    if not 1 <= chains <= max_chains(n):
        raise ValueError(f"chains={chains}: 1..{max_chains(n)} for N={n} (chains × N/2 "
                         "accumulators ≤ 128 registers)")
    iters = iters or peak_iters(n, chains)
    return runtime.compile_kernel("wgmma_peak.cu", "wgmma_peak", arch,
                                  defines=dict(DT=DTYPES[name], N=n, SRC=int(source == "registers"),
                                               CHAINS=chains, ITERS=iters))


class WgmmaPeak:
    """Set-up for timing wgmma with no memory traffic: ``ctas_per_sm`` × SMs CTAs of one warpgroup.

    A is 64×KT and B KT×N (KT = 64 for 16-bit, 128 for fp8), K-major with 128-byte swizzle, random
    uniform(-1, 1) values. ``flop`` per launch = CTAs · ITERS · 4 · chains · 2·64·N·K_inst;
    :meth:`launcher` enqueues one launch; :meth:`check` runs once with a poisoned output and compares
    every CTA's every chain with ITERS·(A·B) in float64.
    """

    def __init__(self, dtype: str = "float16", n: int = 256, source: str = "smem", chains: int = 1,
                 ctas_per_sm: int = 2, sm_count: int | None = None, iters: int | None = None,
                 seed=None):
        self.dtype = dsc.dtype_name(dtype)
        self.n, self.source, self.chains = n, source, chains
        self.iters = iters or peak_iters(n, chains)
        if ctas_per_sm not in (1, 2, 3, 4):
            raise ValueError(f"ctas_per_sm={ctas_per_sm}: 1..4")
        self.ck = compile_peak(self.dtype, n, source, chains, self.iters)
        sms = sm_count or (runtime.device_info().sm_count if runtime.device_info() else 132)
        self.blocks = sms * ctas_per_sm
        self.ctas_per_sm = ctas_per_sm
        self.cfg = TileConfig(self.dtype, n, "K", "K", 128, 128,
                              "registers" if source == "registers" else "smem", PEAK_K_STEPS)
        rng = np.random.default_rng(seed)
        dt = np_dtype(self.dtype)
        self.a = rng.uniform(-1, 1, (64, self.cfg.k)).astype(np.float32).astype(dt)
        self.b = rng.uniform(-1, 1, (self.cfg.k, n)).astype(np.float32).astype(dt)
        kk = dsc.instruction_k(self.dtype)
        self.flop = self.blocks * self.iters * PEAK_K_STEPS * chains * 2 * 64 * n * kk
        self._dev = None

    def _device(self):
        if self._dev is None:
            a_img, b_img, descs = tile_images(self.a, self.b, self.cfg)
            self._a_bytes = a_img.size if self.source == "smem" else 0
            self._b_bytes = b_img.size
            self._dev = [DeviceArray.from_host(x) for x in
                         (a_img, b_img, descs, np.ascontiguousarray(self.a).view(np.uint8))]
            self.out = DeviceArray.poisoned((self.blocks, self.chains, 64, self.n), np.float32)
            self.clk = DeviceArray.poisoned((self.blocks, 4), np.uint64)
        return self._dev

    def measured_clock_mhz(self) -> float:
        """The SM clock during the last launch: median over CTAs of Δclock64 / Δ%globaltimer (MHz).
        Raises :class:`RuntimeError` if no launch wrote the clock record."""
        c = self.clk.to_host().astype(np.float64)
        dc, dt = c[:, 1] - c[:, 0], c[:, 3] - c[:, 2]
        ok = (dt > 0) & (dc > 0) & (c[:, 0] < 2**63)
        if not ok.any():
            raise RuntimeError("the clock record was not written")
        return float(np.median(dc[ok] / dt[ok]) * 1e3)

    def launcher(self, stream=None):
        dev = self._device()
        u32 = np.uint32
        runtime.check_launch(self.blocks, 128, self.cfg.shmem_bytes, self.ck)

        def run():
            runtime.launch(self.ck, self.blocks, 128, dev[0], u32(self._a_bytes), dev[1],
                           u32(self._b_bytes), u32(self.cfg.b_offset), dev[2], dev[3], self.out,
                           self.clk, shmem_bytes=self.cfg.shmem_bytes, stream=stream)
        return run

    #: Loop count of the layout check (see :meth:`check_layout`).
    CHECK_ITERS = 16

    def tolerance(self, iters: int | None = None) -> float | None:
        """Elementwise bound of the output after ``iters`` loop iterations (default: the timed
        count), relative to iters·(|A|·|B|), or None when no useful bound exists.

        Each accumulator receives m = iters × 4 wgmma results in sequence, each a K_inst-term dot
        product, so the error is at most γ_{m+K_inst}(u) · iters·(|A|·|B|) (Higham, recursive
        summation; a sum of equal terms really drifts by about m·u/2 — measured on the H200, N=8
        with 262144 accumulations drifted 0.8%). u = 2^-23 for fp16/bf16 (fp32 accumulator,
        truncating: :mod:`asynctc.core.checks`); for fp8, Hopper's wgmma keeps about 14 bits of the
        accumulator (DeepSeek-V3 Technical Report, 2024, §3.3.2), so u = 2^-13. Timed fp16/bf16
        loops give 9.8e-4 (N=256) up to 3.2e-2 (N=8, one chain: m = 262144) — still far below the
        error of a wrong element, ~|A·B|/(|A|·|B|) ≈ 0.1. The timed fp8 loop (m = 8192) has
        m·u ≥ 0.5: None.
        """
        iters = self.iters if iters is None else iters
        m = iters * PEAK_K_STEPS + dsc.instruction_k(self.dtype)
        u = U_ACC if dsc.itemsize(self.dtype) == 2 else FP8_ACC_U
        return gamma(m, u) if m * u < 0.5 else None

    def _run_and_compare(self, peak: "WgmmaPeak", tol: float) -> Check:
        run = peak.launcher()
        peak.out.poison()
        run()
        got = peak.out.to_host().reshape(-1, 64, self.n)
        ref = np.broadcast_to(peak.iters * tile_reference(peak.a, peak.b), got.shape)
        scale = peak.iters * tile_reference(np.abs(peak.a.astype(np.float64)),
                                            np.abs(peak.b.astype(np.float64)))
        return compare(got, ref, self.dtype, (64, self.n, self.cfg.k * peak.iters), scale=scale,
                       tol=tol)

    #: How the last :meth:`check` judged the timed binary (recorded beside it).
    check_kind: str = ""

    def check(self, rng=None) -> Check:
        """The timed binary itself (ITERS = ``self.iters``, the timed launch configuration) on a
        poisoned output, every CTA's every chain compared with iters·(A·B):

        * on exact-arithmetic operands (:func:`asynctc.core.checks.exact_operands`) where every
          partial sum of the iters·4 accumulations fits the accumulator exactly (fp16/bf16 with an
          fp32 accumulator, every configuration but N=8 with one chain): tolerance 0 — one wrong
          element, or one lost bit, fails;
        * else on the timing data within :meth:`tolerance` (fp16/bf16, N=8 with one chain:
          262144 accumulations), or, where no useful bound exists (fp8's long sums), within 1 —
          every element written, finite and no larger than iters·(|A|·|B|) plus the reference: a
          check of completeness only; the data path is then checked by :meth:`check_layout`.

        :attr:`check_kind` names which.
        """
        acc_bits = 24 if dsc.itemsize(self.dtype) == 2 else 13
        a, b, exact = exact_operands(self.a.shape, self.b.shape, self.dtype, self.iters,
                                     acc_bits, rng)
        if exact:
            twin = WgmmaPeak(self.dtype, self.n, self.source, self.chains, self.ctas_per_sm,
                             self.blocks // self.ctas_per_sm, iters=self.iters)
            twin.a, twin.b = a, b
            self.check_kind = "exact operands, tolerance 0"
            return self._run_and_compare(twin, 0.0)
        tol = self.tolerance()
        self.check_kind = ("timing data, elementwise gamma bound" if tol is not None
                           else "timing data, completeness only (fp8 accumulator: n*u >= 0.5)")
        return self._run_and_compare(self, 1.0 if tol is None else tol)

    def check_layout(self) -> Check:
        """Correctness of the data path with a tight bound: the same kernel source compiled with
        ITERS = :attr:`CHECK_ITERS` (64 accumulations: γ ≈ 8e-6 for fp16/bf16, 1.2e-2 for fp8),
        every CTA and chain compared elementwise."""
        short = WgmmaPeak(self.dtype, self.n, self.source, self.chains, self.ctas_per_sm,
                          self.blocks // self.ctas_per_sm, iters=self.CHECK_ITERS)
        short.a, short.b = self.a, self.b
        return self._run_and_compare(short, self.tolerance(self.CHECK_ITERS))


def peak_configs() -> list[dict]:
    """The throughput sweep: fp16 for every N × {SS, RS} × {1 accumulator, as many as fit}; then
    bf16 and e4m3 at N=256, and N=256 with one CTA per SM."""
    out = []
    for n in N_VALUES:
        for src in SOURCES:
            for ch in sorted({1, max_chains(n)}):
                out.append(dict(dtype="float16", n=n, source=src, chains=ch, ctas_per_sm=2))
    out.append(dict(dtype="bfloat16", n=256, source="smem", chains=1, ctas_per_sm=2))
    out.append(dict(dtype="float8_e4m3fn", n=256, source="smem", chains=1, ctas_per_sm=2))
    out.append(dict(dtype="float8_e4m3fn", n=256, source="registers", chains=1, ctas_per_sm=2))
    out.append(dict(dtype="float16", n=256, source="smem", chains=1, ctas_per_sm=1))
    return out


def peak_jobs(configs=None) -> list[tuple[str, str, dict]]:
    jobs = []
    for c in configs or peak_configs():
        iters = peak_iters(c["n"], c["chains"])
        jobs.append(("wgmma_peak.cu", "wgmma_peak",
                     dict(DT=DTYPES[c["dtype"]], N=c["n"], SRC=int(c["source"] == "registers"),
                          CHAINS=c["chains"], ITERS=iters)))
    return jobs


def datasheet_tflops(sm_count: int, sm_mhz: float, dtype: str = "float16") -> float:
    """SMs × dense FLOP/clk/SM × clock, in TFLOP/s (H100 whitepaper rates; the one definition is
    :func:`asynctc.core.bench.peak_tflops`)."""
    return bench.peak_tflops(sm_count, sm_mhz, bench.FLOP_PER_CLK_PER_SM[dtype])


def luo_per_sm_clock(n: int) -> float:
    """Luo et al.'s H800 figure for ``n`` as FLOP per clock per SM (at the assumed clock)."""
    return LUO_H800_TFLOPS[n] * 1e12 / (LUO_H800_SMS * LUO_H800_ASSUMED_MHZ * 1e6)


# The bytes model of small N lives with chapter 04's "Design it" (re-exported here for 04b and tests).
from .wgmma.design import (SMEM_BYTES_PER_CLK_SM, clocks_per_wgmma, rs_clocks_floor,  # noqa: E402,F401
                           smem_bytes_per_wgmma, smem_model_flop_per_clk_sm, smem_model_rows)


def small_n_as_modelled(results: dict, dtype: str = "float16", tolerance: float = 0.05) -> bool:
    """What chapter 04 §8 says of small N, checked on the record's rows with one accumulator: every
    SS point within ``tolerance`` of the bytes model; RS above SS at N = 8, 16 and 32 (it reads no
    A from shared memory); RS below 0.8 of the model at N = 8 and 16 (the fixed cost the model
    lacks, :func:`rs_clocks_floor`). ``KeyError`` if the record lacks one of those rows."""
    m = {(r["n"], r["source"]): r for r in smem_model_rows(results, dtype) if r["chains"] == 1}
    return (all(abs(r["ratio"] - 1) < tolerance for (_, src), r in m.items() if src == "smem")
            and all(m[n, "registers"]["measured"] > m[n, "smem"]["measured"] for n in (8, 16, 32))
            and all(m[n, "registers"]["ratio"] < 0.8 for n in (8, 16)))


def plot_smem_model(rec, dtype: str = "float16"):
    """Measured FLOP/clk/SM by N (SS and RS, every chain count) over the shared-memory model's
    prediction (:func:`smem_model_flop_per_clk_sm`), as a fraction of the Tensor Core rate; RS also
    with the per-instruction floor fitted from the record (:func:`rs_clocks_floor`)."""
    import matplotlib.pyplot as plt
    rows = smem_model_rows(rec.results, dtype)
    rate = DATASHEET_FLOP_PER_CLK_SM[dtype]
    k = dsc.instruction_k(dtype)
    fig, ax = plt.subplots(figsize=(7.5, 4.4), layout="constrained")
    fine = np.geomspace(min(N_VALUES), max(N_VALUES), 200)
    colours = {"smem": "tab:blue", "registers": "tab:red"}
    for src, name in (("smem", "SS"), ("registers", "RS")):
        model = [smem_model_flop_per_clk_sm(n, src, dtype) / rate for n in fine]
        ax.plot(fine, model, color=colours[src], lw=6, alpha=0.25,
                label=f"{name} model: Tensor Cores or {SMEM_BYTES_PER_CLK_SM} B/clk of shared memory")
        pts = [r for r in rows if r["source"] == src]
        one = sorted((r["n"], r["measured"] / rate) for r in pts if r["chains"] == 1)
        many = sorted((r["n"], r["measured"] / rate) for r in pts if r["chains"] > 1)
        ax.plot(*zip(*one), ls="none", color=colours[src], marker="o", ms=8,
                label=f"{name} measured, 1 accumulator")
        if many:
            ax.plot(*zip(*many), ls="none", color="k", marker="x", ms=5,
                    label=f"{name} measured, 2–8 accumulators")
    floor = rs_clocks_floor(rec.results, dtype)
    ax.plot(fine, [min(rate, 2 * 64 * n * k / floor) / rate for n in fine], color="tab:red", ls="--",
            lw=1, label=f"RS: a floor of {floor:.1f} clk per wgmma, fitted to the record")
    ax.set_xscale("log", base=2)
    ax.set_xticks(N_VALUES, [str(n) for n in N_VALUES])
    ax.minorticks_off()
    ax.set_ylim(0, 1.08)
    ax.set_xlabel(f"instruction N (m64nNk{k}, {dtype})")
    ax.set_ylabel(f"FLOP per clock per SM ÷ {rate}")
    ax.set_title(f"wgmma per SM clock against the shared-memory model\n{rec.label()}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def measure_wgmma(progress=None, stop_on_failure: bool = True) -> dict:
    """The "wgmma" suite: every supported single-tile combination checked on fresh random data
    (a failure stops the suite unless ``stop_on_failure`` is False; then failures are listed in
    ``results["failures"]`` and no throughput is measured), then the throughput sweep of
    :func:`peak_configs`. ``progress(str)`` is called with a line per stage."""
    from .core import records
    say = progress or (lambda _s: None)
    info = runtime.device_info()
    out: dict = {"checks": [], "throughput": [], "failures": [], "mismatch": [],
                 "sm_count": info.sm_count, "max_sm_mhz": info.max_sm_clock_khz / 1000,
                 "luo_h800_tflops": LUO_H800_TFLOPS, "luo_h800_sms": LUO_H800_SMS,
                 "luo_h800_assumed_mhz": LUO_H800_ASSUMED_MHZ}
    configs = supported_configs()
    jobs = tile_modules(configs) + peak_jobs()
    say(f"compiling {len(jobs)} modules")
    precompile(jobs)
    rng = np.random.default_rng()
    say(f"checking {len(configs)} single-tile combinations")
    for cfg in configs:
        try:
            c = verify_tile(cfg, rng)
            row = {**cfg.as_dict(), **c.as_dict()}
        except Exception as e:  # noqa: BLE001 - recorded, then raised or listed
            if stop_on_failure:
                raise
            row = {**cfg.as_dict(), "passed": False, "error": f"{type(e).__name__}: {e}"}
        out["checks"].append(row)
        if not row["passed"]:
            if stop_on_failure:
                raise RuntimeError(f"wgmma tile wrong: {cfg.label()}: {row}")
            out["failures"].append(cfg.label())
    say(f"checking {len(tma_configs())} TMA-fed tiles")
    for cfg in tma_configs():
        try:
            c = verify_tile_tma(cfg, rng)
            row = {**cfg.as_dict(), "loader": "tma", **c.as_dict()}
        except Exception as e:  # noqa: BLE001
            if stop_on_failure:
                raise
            row = {**cfg.as_dict(), "loader": "tma", "passed": False,
                   "error": f"{type(e).__name__}: {e}"}
        out["checks"].append(row)
        if not row["passed"]:
            if stop_on_failure:
                raise RuntimeError(f"TMA-fed wgmma tile wrong: {cfg.label()}: {row}")
            out["failures"].append("tma " + cfg.label())
    for ls, ds in ((128, 64), (64, 0)):
        r = mismatch_demo(64, "float16", ls, ds, rng=rng, live=True)
        out["mismatch"].append({"layout_swizzle": ls, "descriptor_swizzle": ds,
                                "wrong_measured": r.wrong_measured,
                                "wrong_predicted": r.wrong_predicted,
                                "matches_prediction": r.measured_matches_prediction})
        say(r.summary())
    if out["failures"]:
        say(f"{len(out['failures'])} failures: no throughput measured")
        return out
    say("throughput sweep")
    for pc in peak_configs():
        p = WgmmaPeak(pc["dtype"], pc["n"], pc["source"], pc["chains"], pc["ctas_per_sm"])
        chk, lay = p.check(), p.check_layout()
        if not (chk.passed and lay.passed):
            if stop_on_failure:
                raise RuntimeError(f"wgmma peak kernel wrong: {pc}: timed {chk.as_dict()}, "
                                   f"{p.CHECK_ITERS}-iteration {lay.as_dict()}")
            out["failures"].append(f"peak {pc}: {chk.as_dict()} / {lay.as_dict()}")
            continue
        t = bench.time_gpu(p.launcher(), warmup=3, reps=10, flush=False)
        clocks = records.nvidia_smi_clocks()
        mhz = p.measured_clock_mhz()          # in-kernel: clock64 over %globaltimer, last launch
        tf = bench.tflops(p.flop, t.median_ms)
        row = {**pc, "iters": p.iters, "blocks": p.blocks, "flop": p.flop, **t.as_dict(),
               "tflops": tf, "sm_mhz": mhz, "sm_mhz_source": "in-kernel clock64/%globaltimer",
               "clocks_after_nvidia_smi": clocks}
        at = bench.peak_at_clock(row, info.sm_count, pc["dtype"])
        sheet = at["peak_tflops"]
        row.update({"flop_per_clk_sm": tf * 1e12 / (info.sm_count * mhz * 1e6),
                    "datasheet_tflops_at_clock": sheet, "fraction_of_datasheet": tf / sheet,
                    "datasheet_tflops": at["datasheet_tflops"],
                    "fraction_of_datasheet_boost": at["fraction_of_datasheet"],
                    "registers": p.ck.resources.registers, "check": chk.as_dict(),
                    "check_layout": lay.as_dict(), "check_kind": p.check_kind})
        if pc["dtype"] == "float16" and pc["source"] == "smem" and pc["chains"] == 1:
            row["luo_h800_tflops"] = LUO_H800_TFLOPS[pc["n"]]
            row["luo_h800_flop_per_clk_sm"] = luo_per_sm_clock(pc["n"])
        out["throughput"].append(row)
        say(f"  {pc['dtype']} N={pc['n']} {pc['source']} chains={pc['chains']} "
            f"ctas/SM={pc['ctas_per_sm']}: {tf:.0f} TFLOP/s at {mhz:.0f} MHz in-kernel "
            f"({tf / sheet:.2f} of the per-clock peak at that clock, "
            f"{at['fraction_of_datasheet']:.2f} of the datasheet)")
    return out


def throughput_table(results: dict, all_chains: bool = True) -> str:
    """The throughput rows as a compact text table, with both fractions: ``of clk`` = of the
    per-clock peak at the row's in-kernel clock (SMs × FLOP/clk/SM × ``sm_mhz``; the record's
    ``fraction_of_datasheet`` field, named before the datasheet figure was printed beside it) and
    ``of sheet`` = of the datasheet figure (:data:`asynctc.core.bench.DATASHEET`, at 1830 MHz);
    a footer names every column. ``all_chains=False`` keeps the one-accumulator rows and says in
    one line how far the rows with more accumulators in flight are from them
    (:func:`chains_spread`)."""
    rows = [r for r in results["throughput"] if all_chains or r["chains"] == 1]
    lines = [f"{'dtype':14s} {'N':>4s} {'A from':9s} {'chains':>6s} {'CTA/SM':>6s} {'TFLOP/s':>8s} "
             f"{'MHz':>5s} {'FLOP/clk/SM':>11s} {'of clk':>6s} {'of sheet':>8s} {'Luo H800':>8s}"]
    for r in rows:
        luo = f"{r['luo_h800_tflops']:8d}" if "luo_h800_tflops" in r else " " * 8
        sheet = r["tflops"] / bench.DATASHEET["dense_tflops"][r["dtype"]]
        lines.append(f"{r['dtype']:14s} {r['n']:4d} {r['source']:9s} {r['chains']:6d} "
                     f"{r['ctas_per_sm']:6d} {r['tflops']:8.1f} {r['sm_mhz']:5.0f} "
                     f"{r['flop_per_clk_sm']:11.0f} {r['fraction_of_datasheet']:6.2f} {sheet:8.2f} {luo}")
    if not all_chains:
        spread = chains_spread(results)
        if spread is not None:
            lines.append(f"(rows with more chains, up to {max(r['chains'] for r in results['throughput'])}"
                         f" accumulators in flight: within {spread:.1%} of these at every N)")
    lines.append("chains: accumulators in flight; MHz: the SM clock measured in the kernel; "
                 "of clk: of SMs × FLOP/clk/SM × that clock;")
    lines.append(f"of sheet: of the datasheet ({bench.DATASHEET['dense_tflops']['float16']:.0f} "
                 f"TFLOP/s fp16/bf16, {bench.DATASHEET['dense_tflops']['float8_e4m3fn']:.0f} fp8, at "
                 f"{bench.DATASHEET['boost_mhz']} MHz); Luo H800: Luo et al.'s TFLOP/s on an H800 PCIe "
                 f"({LUO_H800_SMS} SMs)")
    return "\n".join(lines)


def chains_spread(results: dict) -> float | None:
    """The largest |TFLOP/s with c accumulators / TFLOP/s with one − 1| over the throughput rows
    that have a one-accumulator twin (same dtype, N, source, CTAs per SM); None if there are none."""
    one = {(r["dtype"], r["n"], r["source"], r["ctas_per_sm"]): r["tflops"]
           for r in results["throughput"] if r["chains"] == 1}
    d = [abs(r["tflops"] / one[k] - 1) for r in results["throughput"] if r["chains"] > 1
         and (k := (r["dtype"], r["n"], r["source"], r["ctas_per_sm"])) in one]
    return max(d) if d else None


def summarize_wgmma(rec) -> str:
    r = rec.results
    ok = sum(c["passed"] for c in r["checks"])
    errs = [c["rel_err"] for c in r["checks"] if c.get("rel_err") == c.get("rel_err") and "rel_err" in c]
    lines = [rec.label(), f"single-tile correctness: {ok}/{len(r['checks'])} combinations passed "
                          f"(worst rel_err {max(errs) if errs else float('nan'):.2e})"]
    for f in r.get("failures", []):
        lines.append(f"  FAILED {f}")
    for m in r.get("mismatch", []):
        lines.append(f"mismatch: layout {m['layout_swizzle']}B / descriptor {m['descriptor_swizzle']}B:"
                     f" {m['wrong_measured']} wrong (predicted {m['wrong_predicted']}), "
                     f"{'as predicted' if m['matches_prediction'] else 'NOT as predicted'}")
    if r["throughput"]:
        lines.append(throughput_table(r))
    best = [x for x in r["throughput"] if x["dtype"] == "float16" and x["n"] == 256
            and x["source"] == "smem" and x["ctas_per_sm"] == 2 and x["chains"] == 1]
    if best:
        b = best[0]
        lines.append(f"N=256 fp16 SS: {b['tflops']:.0f} TFLOP/s = "
                     + bench.peak_text(b, r["sm_count"], "float16") + "; Luo et al. H800: 665")
    return "\n".join(lines)


SUITES = {"wgmma": (measure_wgmma, summarize_wgmma, "sm_90a")}


def ss_model_fraction(n: int, dtype: str = "float16") -> float:
    """The bytes model's fraction of the Tensor Core rate for SS at instruction N
    (:func:`smem_model_flop_per_clk_sm` / :data:`DATASHEET_FLOP_PER_CLK_SM`): at fp16 N = 8,
    4 clocks of math in 16 + 2 of shared-memory reads, 0.22; 1.0 from N = 64. Chapter 04 §8's
    "Predict" and the dashes of :func:`plot_throughput`."""
    return smem_model_flop_per_clk_sm(n, "smem", dtype) / DATASHEET_FLOP_PER_CLK_SM[dtype]


def plot_throughput(rec):
    """Each run's fraction of the per-clock peak (FLOP per clock per SM ÷ 4096, each point at its
    own in-kernel clock, whose range the legend gives) by N with one accumulator, A from shared
    memory (SS) and from registers (RS); the bytes model's SS fraction (:func:`ss_model_fraction`,
    the text's "model") as dashes at each N, its N = 8 value written beside it; Luo et al.'s H800
    SS figures per SM·clock (at their assumed boost clock, :data:`LUO_H800_ASSUMED_MHZ`) as the
    same fraction. A right axis reads the fraction as TFLOP/s at the in-kernel clock of the row the
    chapter quotes (N = 256, SS: :func:`asynctc.wgmma.peak_row`), with the datasheet figure (989 at
    1830 MHz) on it. One unit for every point: a run at a faster clock cannot appear to beat the
    model (a reader saw TFLOP/s at 1800 MHz drawn above dashes scaled to 1654 MHz). Short legend
    entries: 04b §6 states the conversion, 04b's table the rows with more accumulators."""
    import matplotlib.pyplot as plt
    from .wgmma import peak_row
    r = rec.results
    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    rows = [x for x in r["throughput"] if x["dtype"] == "float16" and x["ctas_per_sm"] == 2]
    peak_fpc = DATASHEET_FLOP_PER_CLK_SM["float16"]
    for src in SOURCES:
        pts = sorted((x["n"], x["flop_per_clk_sm"] / peak_fpc) for x in rows
                     if x["source"] == src and x["chains"] == 1)
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=9 if src == "smem" else 5, lw=1.5,
                    ls="-" if src == "smem" else "--", zorder=3 if src == "smem" else 4,
                    color="tab:blue" if src == "smem" else "tab:red",
                    label="A from shared memory (SS)" if src == "smem" else "A from registers (RS)")
    head = peak_row(r, "float16", 256)
    mhz = head["sm_mhz"]
    sheet = head["datasheet_tflops_at_clock"]
    clocks = [x["sm_mhz"] for x in rows if x["chains"] == 1]
    ax.axhline(1.0, color="k", lw=1, ls=":",
               label=f"per-clock peak, {peak_fpc} FLOP/clk per SM\n(each point at its own "
                     f"{bench.clock_kind(head)} clock, {min(clocks):.0f}–{max(clocks):.0f} MHz)")
    model = [(n, ss_model_fraction(n)) for n in N_VALUES]
    ax.plot([n for n, _ in model], [f for _, f in model], ls="none", marker="_", ms=22,
            mew=2.5, color="tab:blue", alpha=0.6, label="model, SS")
    n0, f0 = min(model)                                          # the smallest N (8): the "Predict"
    ax.annotate(f"model: {f0:.2f}", (n0, f0), xytext=(16, -12),
                textcoords="offset points", fontsize=8, color="tab:blue")
    right = ax.secondary_yaxis("right", functions=(lambda f: f * sheet, lambda t: t / sheet))
    right.set_ylabel(f"TFLOP/s at N = 256's clock ({mhz:.0f} MHz)")
    boost = bench.DATASHEET["dense_tflops"]["float16"]
    ax.axhline(boost / sheet, color="tab:green", lw=1, ls="--",
               label=f"datasheet: {boost:.0f} TFLOP/s (right axis)")
    luo = [(n, luo_per_sm_clock(n) / peak_fpc) for n in N_VALUES]
    ax.plot(*zip(*luo), color="gray", marker="x", ls=":", label="Luo et al. (H800 SS, per clock)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(N_VALUES, [str(n) for n in N_VALUES])
    ax.set_xlabel("instruction N (m64nNk16, fp16 in, fp32 accumulate)")
    ax.set_ylabel("fraction of the per-clock peak")
    ax.set_title(f"wgmma throughput by N — {rec.label()}", fontsize=9)
    ax.minorticks_off()
    ax.legend(fontsize=8, loc="lower right")
    return fig
