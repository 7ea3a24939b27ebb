# %% [markdown]
# # 00 — Why asynchronous Tensor Core programming?
#
# **The question you bring.** Your GEMM runs on Tensor Cores, yet it reaches a fraction of the
# GPU's peak. Where did the rest go?
#
# **In plain words.** A GPU has two speed limits: how fast it moves bytes, and how fast it
# multiplies. A big matrix multiply should hit the math limit. It falls short when the threads that
# fetch the operands must also issue the math.
#
# **Learning goal.** Find how fast a Hopper GPU moves bytes and multiplies, place a GEMM on a
# roofline, and see why threads that move their own operands starve the Tensor Cores.
#
# **Words you need first:**
#
# * A **GEMM** is a general matrix multiply, C = A·B (M×K times K×N).
# * A **Tensor Core** is a matrix-multiply unit inside an SM: one instruction multiplies small tiles
#   of fp16/bf16 matrices.
# * An **SM** (streaming multiprocessor) is one of the GPU's identical cores. The H200 has 132, each
#   with registers, shared memory and four Tensor Cores.
# * A **warp** is 32 threads that run one instruction together.
# * [**PTX**](../docs/glossary.md#ptx) is NVIDIA's virtual instruction set. CUDA C++ compiles to
#   it. **NVRTC** is NVIDIA's compiler, called from Python. It turns CUDA C++ into
#   [**SASS**](../docs/glossary.md#sass), the GPU's machine code.
# * **cuBLAS** is NVIDIA's GEMM library: the yardstick every chapter measures against.
# * A **FLOP** is one floating-point operation; a multiply-add is two.
# * **TFLOP/s**: 10¹² FLOP per second.
# * A **roofline** plots FLOP/s against [arithmetic intensity](../docs/glossary.md#arithmetic-intensity):
#   FLOP done per byte moved from DRAM. It has two ceilings: DRAM bandwidth and
#   [peak](../docs/glossary.md#peak) math, the most FLOP/s the Tensor Cores can do.
#
# **Where this leads.** The rest of the course makes the operand copy run *while* the Tensor Cores
# compute. Copies become asynchronous: cp.async, then [TMA](../docs/glossary.md#tma), a tile-copy
# engine. Math becomes asynchronous: [wgmma](../docs/glossary.md#wgmma), Tensor Core math on shared
# memory, then tcgen05, Blackwell's Tensor Core instructions (chapter 09). Last comes
# [warp specialization](../docs/glossary.md#warp-specialization): some warps copy, others compute.
#
# The [seed article](../docs/glossary.md#seed-article), a public [worklog](../docs/glossary.md#worklog) on this subject, set this course's
# outline; chapter 10 checks its claims.
#
# **How to read these notebooks.** Run the cells in order. A cell that JupyterLab shows collapsed,
# as "…", is a *check*: it asserts that the sentence above it still matches the numbers printed,
# and fails loudly if a new measurement would flip it. You may skip it, or click it open to see
# the bound.

# %% output varies
from asynctc import why_async
from asynctc.core import bench, exercises, notebook, peak_card, plots, records

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Two ceilings, measured
#
# The suite `ceilings` times a device-to-device copy (`cuMemcpyAsync`) and cuBLAS fp16 and bf16
# GEMMs on random data, of growing size. The copy cycles through enough buffers to miss L2, the
# cache all SMs share, so it reads DRAM.
#
# **Predict before you run the cell.** The H200's datasheet rates its memory at 4.8 TB/s. A copy
# reads and writes each byte. How close does the best copy come to the rating?

# %% output answers a prediction
rec = records.load_or_measure("ceilings", why_async.measure_ceilings)
copy = rec.results["copy"]
top = max(copy, key=lambda c: c["gbps_rw"])
gbps = 2 * top["bytes"] / (top["median_ms"] * 1e-3) / 1e9      # bytes read + written, per second
print(f"device-to-device copy, best: 2 × {top['bytes'] >> 20} MiB / {top['median_ms']:.3f} ms = {gbps:.0f} GB/s, "
      f"{gbps / 4800:.2f} of the datasheet's 4.8 TB/s")
fig = plots.throughput_by_size(
    {"device-to-device copy": ([c["bytes"] >> 20 for c in copy], [c["gbps_rw"] for c in copy])},
    record=rec, title="Copy bandwidth (read + write)", ylabel="GB/s", xlabel="bytes copied (MiB)")

# %% [markdown]
# <details><summary>About these numbers</summary>
#
# The copy's time is the median of 20 samples. A sample runs a few copies in a row. None finds its
# bytes in L2.
#
# </details>

# %% [markdown]
# ## 2. The datasheet peak, computed — and what cuBLAS reaches
#
# Hopper's Tensor Cores do **4096 dense fp16/bf16 FLOP per clock per SM** (fp32 accumulation).
# The datasheet multiplies that by the SMs and the 1830 MHz boost clock. A busy GPU picks its own,
# lower clock.
#
# **The course's one [peak](../docs/glossary.md#peak) formula** is SMs × 4096 FLOP/clk × the SM clock
# measured **in flight**: while the kernel runs, so each run has its own peak. The datasheet's peak is printed beside it;
# [00b](00b_clock_kinds.ipynb) reads other clocks.
#
# **Predict before you run the cell.** What fraction of the peak does cuBLAS's best GEMM reach:
# under 0.5, 0.5 to 0.75, or above 0.75?

# %% output answers a prediction
gemms = rec.results["cublas"]
sms, mhz, kind = rec.provenance["sm_count"], bench.measured_clock_mhz(gemms), bench.rows_clock_kind(gemms)
if caveat := bench.clock_caveat(kind):            # empty for a clock read while the GEMMs ran
    print(caveat)
peak = why_async.Peak(sms * 4096 * mhz / 1e6, mhz, kind, sms)   # FLOP/clk × MHz = 10⁶ FLOP/s; in TFLOP/s
sheet = sms * 4096 * bench.DATASHEET["boost_mhz"] / 1e6       # the same at the boost clock
g = max(gemms, key=lambda g: g["tflops"])                     # cuBLAS's best GEMM
tf = 2 * g["m"] * g["n"] * g["k"] / (g["median_ms"] * 1e-3) / 1e12   # FLOP / seconds, in TFLOP/s
print(f"peak      = {sms} SMs × 4096 FLOP/clk × {mhz:.0f} MHz ({kind}, this run) = {peak.tflops:.0f} TFLOP/s")
print(f"datasheet = {sms} SMs × 4096 FLOP/clk × {bench.DATASHEET['boost_mhz']} MHz (boost) = {sheet:.0f} TFLOP/s")
print(f"cuBLAS best, this run ({g['dtype']}): 2 × {g['m']}·{g['n']}·{g['k']} / {g['median_ms']:.3f} ms = {tf:.0f} TFLOP/s")
print(f"  of peak: {notebook.ratio(tf, peak.tflops, 'TFLOP/s')}; of datasheet: {notebook.ratio(tf, sheet, 'TFLOP/s')}")
fig = plots.throughput_by_size(why_async.cublas_series(gemms), peak=peak.tflops,
                               peak_label=f"peak: {peak.label} =", record=rec,
                               title="cuBLAS GEMM throughput")

# %% [markdown]
# This chapter's [record](../docs/glossary.md#record), `ceilings`, gives two cuBLAS figures: the
# best GEMM above and 4096³ fp16, which every record times. The next cell compares the second
# across records, then prints the peak card. Its first row is this chapter's peak.
#
# Its `notebook.require(...)` line stops the notebook if the record no longer supports the
# sentence beside it. The course hides long arithmetic in named helpers.
# `notebook.how(name)` prints any helper's code. Try `notebook.how(peak_card.show_card)` here.

# %% output answers a prediction
runs = why_async.cublas_4096_runs(rec)              # {record: cuBLAS 4096³ fp16 TFLOP/s in its run}
lo, hi = min(runs.values()), max(runs.values())
print(f"cuBLAS float16 4096³ across {len(runs)} records: {lo:.0f} … {hi:.0f} TFLOP/s; "
      f"{rec.suite}: {runs.get(rec.suite, float('nan')):.0f} (its best, {g['dtype']} {g['m']}·{g['n']}·{g['k']}: {tf:.0f})")
notebook.require(hi / lo < 1.06, "cuBLAS's 4096³ fp16 figure differs by a few percent between runs", lo=lo, hi=hi)
card = peak_card.show_card()   # notebook.how(peak_card.show_card) prints its code

# %% [markdown]
# <details><summary>About these numbers</summary>
#
# Each record is one run with its own SM clock, so each card row has its own peak. Every ratio
# divides by its own run's cuBLAS (chapter 10 says why they differ). The datasheet's row is for the SXM board,
# the socketed module. [00b §2](00b_clock_kinds.ipynb) reads the rows.
#
# </details>

# %% [markdown]
# cuBLAS, our yardstick, is checked against float64, element by element. The tolerance, the
# [elementwise bound](../docs/glossary.md#elementwise-bound), scales with |A|·|B|:


# %% output varies
chk = next(g["check"] for g in gemms if "check" in g)
assert chk["passed"], chk
print(f"cuBLAS {chk['dtype']} {chk['shape']} vs float64: largest elementwise error "
      f"{chk['max_err']:.2g} × |A|·|B|; tolerance {chk['tol']:.2g} × |A|·|B|")

# %% [markdown]
# ## 3. The roofline: where each GEMM lives
#
# A kernel that does *F* FLOP and must move at least *B* bytes through DRAM has **arithmetic
# intensity** *F / B*.
#
# Below the **ridge point** (peak ÷ bandwidth) a kernel cannot be faster than
# bandwidth × intensity. Such a kernel is *memory-bound*. Above it, the Tensor Cores are the
# limit, *if* the kernel can feed them.
#
# A square fp16 GEMM of size *n* does 2n³ FLOP and moves at least 6n² bytes (A, B and C once):
# intensity n/3.
#
# The plot shows cuBLAS's measured bf16 GEMMs. An open marker is a skinny *decode-like*
# GEMM's computed bound, as in LLM token generation.
#
# **Predict before you run the cell.** The 1024³ GEMM has intensity 1024/3 ≈ 341 FLOP/byte. Is
# that right of the ridge? If so, does cuBLAS reach the roof there? Hint: count its 128×128 output
# tiles, each on one SM, and the SMs.

# %% output answers a prediction
bw = max(c["gbps_rw"] for c in copy)               # §1's copy bandwidth, GB/s
fig = plots.roofline(peak.tflops, bw, why_async.roofline_points(gemms, peak, bw),
                     measured_ceiling=max(g["tflops"] for g in gemms), record=rec,
                     title=f"Roofline (peak: {peak.label})")
peak_tflops, bw_tbs = peak.tflops, bw / 1000      # the two ceilings: §2's peak, §1's copy in TB/s
ridge = peak_tflops / bw_tbs                      # FLOP per byte where the two ceilings meet
n = 1024                                          # a square fp16 GEMM, n × n × n
i = 2 * n**3 / (6 * n**2)                         # 2n³ FLOP / 6n² bytes
tiles = (n // 128) ** 2                           # its 128×128 output tiles, one SM each
cap = min(tiles, peak.sm_count) / peak.sm_count * peak_tflops   # only `tiles` SMs have a tile
print(f"ridge = {peak_tflops:.0f} TFLOP/s / {bw_tbs:.2f} TB/s = {ridge:.0f} FLOP/byte; {n}³: intensity "
      f"{i:.0f}, at most {tiles} / {peak.sm_count} × {peak_tflops:.0f} = {cap:.0f} TFLOP/s")
print(f"{n}³ is", "right of the ridge: compute-bound" if i > ridge else "left of the ridge: memory-bound")
g = next(g for g in gemms if g["dtype"] == "bfloat16" and g["m"] == 1024)   # the record's 1024³
print(f"cuBLAS measured 1024³ bf16: {g['tflops']:.0f} TFLOP/s")

# %% check
i0, tiles0, ridge0 = why_async.gemm_intensity(1024, 1024, 1024), 64, peak.tflops / (bw / 1000)
cap0 = tiles0 / peak.sm_count * peak.tflops
notebook.require(i0 > ridge0 and tiles0 < peak.sm_count and g["tflops"] < cap0,
                 "1024³ is right of the ridge, yet below the roof: its 64 tiles keep 64 SMs busy",
                 intensity=i0, ridge=ridge0, tflops=g["tflops"], cap=cap0)

# %% [markdown]
# **Try it:** change `peak_tflops` to 4000 and rerun the cell. Predict first: which side of the
# ridge now?

# %% [markdown]
# ## 4. Why Tensor Cores starve
#
# Large GEMMs sit far right of the ridge: their problem is *inside* the SM, which must consume
# 4096 FLOP every clock.
#
# A **CTA** (cooperative thread array) is CUDA's thread block, on one SM. Say each CTA
# computes a 128×128 tile of C. Count the bytes it must bring in:
#
# 1. One step along K brings a column of A's tile and a row of B's: 256 fp16 values.
#
# 2. They feed one multiply-add per output element: 2 × 128 × 128 FLOP.
#
# 3. So one byte feeds 64 FLOP. At 4096 FLOP per clock, that is **64 bytes every clock**, per SM.
#
# The threads that move those bytes must also issue the math.
#
# Shared memory serves **128 bytes per clock per SM**: 32 banks, 4 bytes each. At best, each
# operand byte is written once and read once. 01 §5 and [02b §4](02b_cp_async_microbenchmark.ipynb)
# count what the loads into registers really read. Source: CUDA C++ Programming Guide, *Compute Capabilities*.

# %% output varies
step_bytes, step_flop = (128 + 128) * 2, 2 * 128 * 128   # one K step: A's column + B's row (fp16); its FLOP
need = 4096 * step_bytes / step_flop                     # B/clk per SM the Tensor Cores consume
dram = bw * 1e9 / peak.sm_count / (peak.mhz * 1e6)       # B/clk per SM: bytes/s ÷ (SMs × clocks/s)
print(f"the 128×128 tile needs 4096 FLOP/clk × {step_bytes} B per K step / {step_flop} FLOP per K step = "
      f"{need:.0f} B/clk; DRAM gives "
      f"{bw:.0f} GB/s / ({peak.sm_count} SMs × {peak.mhz:.0f} MHz) = {dram:.1f} B/clk")
print("DRAM alone", "can feed" if dram >= need else "cannot feed", "the tile\n")
# the table: both tiles against shared memory, and DRAM's share
why_async.show_operand_feed(bw, peak)   # notebook.how(why_async.show_operand_feed) prints its code

# %% check
dram0 = bw * 1e9 / peak.sm_count / (peak.mhz * 1e6)      # the record's, not the editable `dram`
notebook.require(64 / dram0 >= 3, "DRAM supplies at most a third of the 128×128 tile's bytes", dram=dram0)

# %% [markdown]
# **So:** the 128×128 tile needs all of shared memory's bandwidth. DRAM supplies at most a third of
# its bytes (the last line). The rest must be L2 hits.
#
# Going further: [00b §3](00b_clock_kinds.ipynb) — who moves the operands, chapter by chapter.
# %% [markdown]
# **Play** (ungraded, no GPU needed). Type in a new cell:
#
# * `why_async.gemm_intensity(8192, 8192, 16)`, §3's open marker: raise the 16 until it passes `ridge`.
# * `plots.roofline(peak.tflops, bw / 2, why_async.roofline_points(gemms, peak, bw / 2))`: halve the
#   bandwidth; which measured GEMMs fall left of the ridge?
# * `64 / (8000e9 / peak.sm_count / (peak.mhz * 1e6))`: §4's last line at 8 TB/s. Does DRAM then
#   supply the 128×128 tile?
#
# On a GPU, `python -m asynctc record ceilings --no-save` reruns §1 in about 20 s. Compare its
# best copy with `bw`.

# %% [markdown]
# ## Exercises
#
# **1. A large GEMM that is not square.** A *rank-64 update*: C (4096×4096) = A (4096×64) · B
# (64×4096), all fp16 (2 bytes per element), reading A and B once and writing C once. §3's n/3 is
# for square GEMMs only, so count this one's FLOP and bytes. Give its arithmetic intensity (FLOP
# per byte), an expression or a number, within 0.1 %. A wrong answer gets a hint. Then print
# `answer < ridge` (§3's ridge point): is this large GEMM memory-bound?

# %%
answer = ...
ok = exercises.check("ch00.intensity", answer, m=4096, n=4096, k=64)

# %% [markdown]
# **2.** Which of these square sizes (M = N = K = n) are memory-bound on this GPU? Compute each
# size's intensity and compare it with §3's `ridge`. Give a list, in any order.

# %% output varies
sizes = [64, 128, 256, 512, 1024, 4096]
answer = ...
ok = exercises.check("ch00.memory_bound", answer, sizes=sizes, ridge=ridge)

# %% [markdown]
# <details><summary>Solutions</summary>The cell below is the worked solution (try the exercises first).</details>

# %% output varies
i1 = 2 * 4096 * 4096 * 64 / (2 * (4096 * 64 + 64 * 4096 + 4096 * 4096))
exercises.check("ch00.intensity", i1, m=4096, n=4096, k=64, solution=True)  # 2·M·N·K FLOP / 2 bytes × (M·K + K·N + M·N); C is 97 % of the bytes
notebook.require(i1 < ridge, "the 4096×4096×64 GEMM is left of the ridge", intensity=i1, ridge=ridge)
print(f"So: 4096×4096×64 is large, yet its intensity {i1:.0f} FLOP/byte is below the ridge "
      f"({ridge:.0f}): memory-bound. Size is not intensity.")

# %% output varies
ok = exercises.check("ch00.memory_bound", [s for s in sizes if s / 3 < ridge], sizes=sizes,
                     ridge=ridge, solution=True)

# %% [markdown]
# **What you learned.** The GPU's two ceilings; where a GEMM sits on the roofline;
# and why a large GEMM is limited inside the SM, by who moves the operands.
# **Next:** [chapter 01](01_synchronous.ipynb) measures the synchronous way to feed the Tensor Cores.
