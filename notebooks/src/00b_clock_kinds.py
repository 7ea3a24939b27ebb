# %% [markdown]
# # 00b — Deep dive: the clock, the peak card, who moves the operands
#
# ← back to the core lesson [00_why_async](00_why_async.ipynb)
#
# **Assumes** chapter 00: the `ceilings` record, the [peak](../docs/glossary.md#peak) (SMs × 4096 × SM clock), 989 TFLOP/s at 1830 MHz.
#
# **What it adds:**
# - §1 three kinds of measured clock; one checked against another; cuBLAS's clock tracking its workload
# - §2 every record's peak, one row per record (the peak card)
# - §3 who moves the operands, chapter by chapter

# %% output varies
import asynctc
from asynctc import why_async
from asynctc.core import bench, notebook, records

notebook.banner("sm_90a")
rec = records.load_or_measure("ceilings", why_async.measure_ceilings)

# %% [markdown]
# ## 1. The three kinds of clock
#
# Hopper's peak is *SMs × 4096 × SM clock*. A running GPU sets its own clock. The course reads that
# clock in one of three ways, and every printed fraction names its kind (`bench.peak_text`, from
# the row's `sm_mhz_source`):
#
# | kind | how it is read | what it gives |
# |---|---|---|
# | **in-kernel** | the kernel reads its own SM clock | the clock while its Tensor Cores work |
# | **in flight** | a small probe kernel, beside the running GEMM, reads the SM clock | the GEMM's clock (all SMs share one) |
# | **probed after the sample** | the same probe, right after the GEMM | an upper bound on the clock, so a lower bound on the fraction of peak |
#
# In more detail:
#
# * **in-kernel**: the kernel reads `clock64` (SM cycles) against `%globaltimer` (nanoseconds)
#   itself. The peak kernels of chapters 01 and 04 do this.
# * **in flight**: some kernels cannot clock themselves (cuBLAS here, the course's own GEMMs
#   later). For them, `bench.time_gpu` runs a few more, untimed samples of the same launches. Beside
#   them, a small probe kernel (one [CTA](../docs/glossary.md#cta)) runs on a second,
#   high-priority stream. The probe reads `clock64` against `%globaltimer` *while* the GEMM runs.
#   All SMs share one graphics clock, so that is the GEMM's clock. A probe counts only if its
#   window lay inside the sample. The next cell checks the probe against chapter 04's wgmma peak
#   kernel, which clocks itself.
# * **probed after the sample**: the same probe, launched right *after* each timed sample. It reads
#   the clock once the Tensor Cores have stopped, and the clock recovers within microseconds. So it
#   is an **upper bound** on the clock during the GEMM. A fraction of peak at it is a **lower
#   bound**; quote the datasheet fraction beside it. Some records carry only this clock; newer ones
#   keep it beside the in-flight clock as `sm_mhz_after`.
#
# Later chapters refer back here, and `bench.clock_caveat` prints the caveat wherever a record's
# clock needs it. `nvidia-smi` read after the run shows an idle GPU, so no fraction divides by it.

# %% output varies
chk = bench.INFLIGHT_CHECK
for w, f, k in zip(chk["workloads"], chk["in_flight_mhz"], chk["in_kernel_mhz"]):
    print(f"{w}: probe {bench.CLOCK_KINDS[1]} {f:.0f} MHz, the kernel's own clock {k:.0f} MHz "
          f"({f / k - 1:+.1%})")
lo, hi = chk["after_mhz_range"]
print(f"the same probe, {bench.CLOCK_KINDS[2]} (these workloads and more): {lo:.0f}–{hi:.0f} MHz "
      f"({chk['gpu']}, {chk['date']}, {chk['script']})")
notebook.claim(all(abs(f / k - 1) < 0.005 for f, k in zip(chk["in_flight_mhz"], chk["in_kernel_mhz"]))
               and lo > max(chk["in_kernel_mhz"]),
               f"The probe {bench.CLOCK_KINDS[1]} reads the kernel's own clock within 0.5 %; "
               f"{bench.CLOCK_KINDS[2]}, it reads higher than both.", check=chk)
attr, boost = rec.provenance.get("max_sm_clock_mhz_attr"), bench.DATASHEET["boost_mhz"]
if attr:
    _ = notebook.claim(lo > boost and hi <= attr + 1,
                       f"Those {lo:.0f}–{hi:.0f} MHz lie above the datasheet's {boost} MHz \"boost clock\" "
                       f"and at most at {attr:.0f} MHz, the GPU's maximum SM clock as the driver reports "
                       "it (max_sm_clock_mhz_attr of the ceilings record, CU_DEVICE_ATTRIBUTE_CLOCK_RATE), which "
                       f"a GPU reaches when lightly loaded; the datasheet quotes its Tensor Core figures "
                       f"at {boost} MHz.", after=(lo, hi), max_sm_clock_mhz_attr=attr)

# %% [markdown]
# Which kind do this record's cuBLAS rows carry? The cell prints it, with the caveat where it
# applies, and beside it the two measurements the course has of the clock during *other* Tensor
# Core work: the in-kernel clocks of the kernels that saturate the Tensor Cores (chapters 01 and
# 04), and `nvidia-smi` sampled *during* 1.5 s of back-to-back cuBLAS GEMMs (chapter 01's deep dive, [01b](01b_synchronous_anatomy.ipynb)).

# %% output varies
gemms = rec.results["cublas"]
kind = bench.rows_clock_kind(gemms)               # the kind of the cuBLAS rows' clocks
clocks = [g["sm_mhz"] for g in gemms if g.get("sm_mhz")]
print(f"clock of the cuBLAS samples ({kind}): {min(clocks):.0f}–{max(clocks):.0f} MHz ({rec.label()})")
after = [g["sm_mhz_after"] for g in gemms
         if g.get("sm_mhz_after") and bench.clock_kind(g) != bench.CLOCK_KINDS[2]]
if after:
    print(f"kept beside it (sm_mhz_after, {bench.CLOCK_KINDS[2]}): {min(after):.0f}–{max(after):.0f} MHz")
if bench.clock_caveat(kind):
    print(bench.clock_caveat(kind))
try:
    mm, wg = records.load("mma_sync"), records.load("wgmma")
except records.RecordError as e:
    print("records of chapters 01 and 04 not available:", e)
else:
    inside = [r["sm_mhz"] for r in mm.results["peak"]] + [r["sm_mhz"] for r in wg.results["throughput"]]
    sus = next(x for x in mm.results["sustained"] if x["kernel"] == "cuBLAS")
    print(f"in-kernel clock of the Tensor-Core-saturating kernels of chapters 01 and 04: "
          f"{min(inside):.0f}–{max(inside):.0f} MHz ({wg.label()})")
    print(f"nvidia-smi during 1.5 s of back-to-back cuBLAS {sus['size']}³ (chapter 01): "
          f"{sus['sm_mhz']:.0f} MHz ({mm.label()})")
    probed = [g["sm_mhz"] for g in gemms if bench.clock_kind(g) == bench.CLOCK_KINDS[2]]
    rows_during = [g for g in gemms if g.get("sm_mhz") and bench.clock_kind(g) != bench.CLOCK_KINDS[2]]
    during = [g["sm_mhz"] for g in rows_during]
    if probed:
        notebook.claim(min(probed) > max(inside) and min(probed) > sus["sm_mhz"],
                       f"The cuBLAS clocks {bench.CLOCK_KINDS[2]} read higher than both.",
                       cublas_min=min(probed), in_kernel_max=max(inside), sustained=sus["sm_mhz"])
    if during:
        kd = bench.rows_clock_kind(rows_during)
        by_dt = {dt: [(g["m"], g["sm_mhz"]) for g in sorted(rows_during, key=lambda g: g["m"])
                      if g["dtype"] == dt] for dt in sorted({g["dtype"] for g in rows_during}, reverse=True)}
        trend = "; ".join(f"{dt} " + " → ".join(f"{mhz:.0f}" for _, mhz in pts) + " MHz"
                          for dt, pts in by_dt.items())
        trend += " (" + " / ".join(sorted({" → ".join(f"{m}³" for m, _ in pts)
                                           for pts in by_dt.values()})) + ")"
        falls = all(len(pts) > 1 and all(b[1] < a[1] for a, b in zip(pts, pts[1:]))
                    and pts[-1][1] < 0.95 * pts[0][1] for pts in by_dt.values())
        notebook.verdict(falls,
                         f"The cuBLAS clock ({kd}) falls as the size grows — {trend}: the same GPU, the "
                         "same library, more than 5 % apart. The clock follows the workload, which is why "
                         "each fraction names its own.",
                         f"The cuBLAS clock ({kd}) does not fall steadily with the size ({trend}): this "
                         "record does not show the clock following the workload, though each fraction "
                         "still names its own.")

# %% [markdown]
# So each size has its own peak (chapter 00 used the median clock). Each bf16 row against its own:

# %% output varies
for g in (g for g in gemms if g["dtype"] == "bfloat16"):
    print(f"cuBLAS bf16 {g['m']:5d}³ {g['tflops']:4.0f} TFLOP/s = "
          f"{bench.peak_text(g, rec.provenance['sm_count'], 'bfloat16')}")

# %% [markdown]
# ## 2. Every record's peak
#
# Each record measured its own SM clock, so each has its own peak: SMs × 4096 FLOP/clk × that
# clock. The peak card lists them, one row per record that states a peak:

# %% output varies
from asynctc.core import peak_card

card = peak_card.show_card()

# %% [markdown]
# ## 3. Who moves the operands, chapter by chapter
#
# Chapter 00 §4 ends on who moves the operands. Each later chapter changes that answer:
#
# | chapter | who moves the operands | who waits |
# |---|---|---|
# | 01 mma.sync | every thread, via registers | everyone, at `__syncthreads` |
# | 02 cp.async | threads issue copies that land later | the [consumer](../docs/glossary.md#consumer), for its [stage](../docs/glossary.md#stage) |
# | 03 TMA + [mbarrier](../docs/glossary.md#mbarrier) | one thread issues a tile; a copy engine moves it | the consumer, on an mbarrier |
# | 04 wgmma | TMA; `wgmma` reads shared memory itself | the [warpgroup](../docs/glossary.md#warpgroup) |
# | 05 pipelines | TMA, into a ring of stages, in advance | the consumer, when the ring runs dry |
# | 06 warp specialization | a [producer](../docs/glossary.md#producer) warpgroup that only loads | ideally nobody |
