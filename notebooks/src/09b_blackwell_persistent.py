# %% [markdown]
# # 09b — Deep dive: a persistent Blackwell GEMM (two accumulators, CLC, CTA pairs, block scales)
#
# ← back to the core lesson [09_blackwell](09_blackwell.ipynb)
#
# **Assumes** chapter 09's GEMM: one tile per CTA, one TMEM accumulator, so no epilogue overlaps the next MMAs.
#
# Here the kernel (`kernels/tcgen05_persistent.cu`) stays resident and walks many tiles.
#
# **What it adds:**
# - §1 three roles (a TMA warp, one MMA thread, four epilogue warps), **two TMEM accumulators**
# - §2 the TMEM map: both accumulators and the scales
# - §3 a **cluster launch control** (CLC) scheduler handing out tiles
# - §4 **block-scaled** `kind::mxf8f6f4`: 07's per-block scales in the Tensor Core, emulated
# - §5 the SASS: **CTA pairs** share one MMA and **multicast** A
# - §6 a labelled B200 **prediction**
# - Exercises (end)
#
# No sm_100 GPU here: kernels are compiled and disassembled, the protocol modelled; no Blackwell number is measured.

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc import tcgen05 as T
from asynctc.core import exercises, notebook
from asynctc.models import block_scale as bs
from asynctc.models import pipeline
from asynctc.models import tcgen05 as tc
from asynctc.models import tcgen05_sched as sched

notebook.banner("sm_100a", measured=False)

# %% [markdown]
# Chapter 09's Hopper → Blackwell table (§6), continued with the rows this kernel adds:

# %%
print(tc.migration_text(slice(tc.MIGRATION_CORE_ROWS, None)))

# %% [markdown]
# ## 1. The schedule: three roles, two accumulators
#
# The same mbarrier model as chapter 05 runs the protocol: `full`/`empty` per stage between the TMA
# warp and the MMA thread, `acc_full`/`acc_empty` per accumulator between the MMA thread and the
# epilogue. Tile t uses accumulator t % 2; the MMA thread waits `acc_empty[t % 2]` before its first
# MMA of tile t, and the epilogue arrives on it once its `tcgen05.ld` of tile t − 2 completed.

# %% output varies
two = sched.simulate_persistent(stages=4, tiles=6, k_tiles=8, accumulators=2)
one = sched.simulate_persistent(stages=4, tiles=6, k_tiles=8, accumulators=1)
fig, axes = plt.subplots(2, 1, figsize=(11, 5), dpi=80, layout="constrained", sharex=True)
sched.plot_persistent(two, ax=axes[0])
sched.plot_persistent(one, ax=axes[1])
plt.show()

# %%
assert two.diagnosis is None and one.diagnosis is None
assert two.total_cycles < one.total_cycles and two.overlap_cycles() > one.overlap_cycles()
print(f"two accumulators: {two.total_cycles:.0f} cycles, Tensor Core busy {two.mma_busy_fraction:.2f}")
print(f"one accumulator : {one.total_cycles:.0f} cycles, Tensor Core busy {one.mma_busy_fraction:.2f}")

# %% [markdown]
# The MMA thread's side of that handshake in the kernel (the pair leader's thread; `t` counts the
# tiles this CTA has done): wait until accumulator `t % 2` is empty, wait for each loaded stage,
# issue the MMAs into that accumulator (block-scaled: copy the stage's scales into TMEM first),
# commit the stage back to the producer, and after the last k-tile commit the accumulator to the
# epilogue:

# %%
notebook.show_source("tcgen05_persistent.cu", start=r"^          const u32 a = t & 1u;$",
                     end=r"else tcgen05_commit_multicast<2>\(smem_u32\(&acc_full")

# %% [markdown]
# ### Breaking the protocol
#
# Each variant is diagnosed, never hung. The ordering is checked by happens-before, not by timing:
# an MMA thread that does not wait on `acc_empty` is a race even when, with these cycle counts, the
# epilogue happened to be done.

# %%
for proto, what in sched.VARIANTS.items():
    d = sched.simulate_persistent(4, 6, 8, protocol=proto).diagnosis
    print(f"{proto} ({what})")
    if d is None:
        print("    → no diagnosis: the protocol is correct")
    elif isinstance(d, pipeline.Race):
        print(f"    → Race at tile {d.iteration}: {d.what}")
    else:
        print(f"    → Deadlock on {d.barrier}, blocked first: {d.who_waits[0]}; {d.why.split(';')[0]}")
assert isinstance(sched.simulate_persistent(4, 6, 8, protocol="missing_acc_empty_wait").diagnosis, pipeline.Race)

# %% [markdown]
# ## 2. The TMEM map: two accumulators and the scales
#
# 512 columns × 128 lanes. The f16 kernel with `bn = 256` fills all 512 columns with its two
# accumulators; the block-scaled kernel (`bn = 128`) keeps 8 scale columns per stage after them
# (4 for A, 4 for B; `tcgen05.cp.128x128b` writes 4 columns, the MMAs read bytes 0–3 of the first).

# %% output varies
from matplotlib.patches import Patch
cfg_bs = T.PersistentConfig("mxf8f6f4", "float8_e4m3fn", 1, 1, 128, 128, 4, "clc")
cfg_16 = T.PersistentConfig("f16", "bfloat16", 1, 1, 256, 64, 4, "static")
fig, ax = plt.subplots(figsize=(11, 2.6), dpi=80, layout="constrained")
colour = {"accumulator 0": "C0", "accumulator 1": "C1", "scales A": "C2", "scales B": "C3"}
for y, cfg in ((1, cfg_16), (0, cfg_bs)):
    for what, c0, w in cfg.tmem_map():
        ax.barh(y, w, left=c0, color=colour[what.split(",")[0]], edgecolor="k", height=0.7)
        if w >= 64:
            ax.text(c0 + w / 2, y, what, ha="center", va="center")
ax.set_yticks([1, 0], [f"{cfg_16.dtype}, bn={cfg_16.bn}", f"block-scaled e4m3, bn={cfg_bs.bn}"])
ax.set_xlim(0, 512); ax.set_xlabel("TMEM column (each spans all 128 lanes: lane = row of the tile)")
ax.legend(handles=[Patch(color=c, label=k) for k, c in colour.items()], fontsize=8,
          loc="upper left", bbox_to_anchor=(1.01, 1.0))
ax.set_title("TMEM maps of the persistent kernel (scales: 4 columns each per stage)")
plt.show()

# %%
for cfg in T.PERSISTENT_CONFIGS:
    print(f"{cfg.label():86s} TMEM {cfg.tmem_needed:3d} → alloc {cfg.tmem_columns}, smem {cfg.smem_bytes // 1024} KiB")

# %% [markdown]
# ## 3. The cluster launch control scheduler
#
# The grid holds one cluster per tile; a running cluster asks (`clusterlaunchcontrol.try_cancel`)
# to cancel a cluster that has not launched and takes its tile; the first "not cancelled" ends its
# loop. With uneven tiles the fast clusters simply take more:

# %%
run = sched.clc_schedule(12, 4, [1, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
assert run.every_unit_once
for c, us in run.units.items():
    print(f"cluster {c}: units {us}")

# %% [markdown]
# ## 4. Block scales in TMEM — one tile emulated against float64
#
# `tcgen05.mma.kind::mxf8f6f4.block_scale.scale_vec::1X`: one UE8M0 scale per row of A and column
# of B for every 32 elements of K, read from TMEM; the instruction descriptor's scale factor IDs
# pick the byte. A wrong scale layout fails the elementwise check:

# %%
rng = np.random.default_rng(2026)
a, b, sfa, sfb = bs.random_block_problem(128, 256, rng)
r = bs.emulate_block_scaled(a, b, sfa, sfb)
assert r.passed
print(r.summary())
for w in bs.WRONG:
    bad = bs.emulate_block_scaled(a, b, sfa, sfb, wrong=w)
    assert not bad.passed
    print(f"{w:22s}: FAIL, {bad.wrong / bad.d.size:.0%} of the elements wrong")
print(bs.BlockScaledIdesc(n=128).ptx())

# %% [markdown]
# ## 5. The kernels, compiled for sm_100a and disassembled here
#
# `UGETNEXTWORKID` is `clusterlaunchcontrol.try_cancel` (`.SELFCAST` for one CTA,
# `.BROADCAST` with `.multicast::cluster::all`), `UTCCP` the scale copy, `UTCQMMA` the block-scaled
# MMA, `UTMALDG….MULTICAST` the shared A:

# %% output varies
for cfg in T.PERSISTENT_CONFIGS:
    sm = T.persistent_sass_summary(cfg)
    keys = [k for k in sm["full"] if k.startswith(("UGETNEXTWORKID", "UTCCP", "UTCQMMA", "UTCHMMA", "UTMALDG", "UTCBAR"))]
    print(f"{cfg.label():86s}", {k: sm["full"][k] for k in keys})
    assert sm["spill_bytes"] == 0

# %% [markdown]
# ## 6. A prediction for a B200 (labelled; not measured)
#
# The schedule of section 1, one CTA per SM, over its share of the tiles (CTA pairs: 128 × 256 of C
# per CTA), at the clock that turns 8192 FLOP/clock/SM × 148 SMs into the datasheet's dense peak.
# Read it as what this schedule allows if every assumption held: the model has no DRAM or L2
# contention between SMs, no clock drop under load and no instruction-issue limit. At 4096³ the
# last wave is the loss: 512 tiles over 148 SMs is 3.46 tiles per SM, run as 4.

# %%
display(notebook.Markdown(T.prediction_markdown()))
display(notebook.Markdown(T.anchors_markdown()))

# %%
# The one published Blackwell GEMM number above that we could read, beside the model's
pred = sched.predict_b200(8192, 8192, 8192)
anchor_tflops = 1081            # Gluon tutorial 12's pasted sample run: GB200, 8192³ fp16, with CLC
print(f"model (B200, 148 SMs): {pred['tflops']:.0f} TFLOP/s; Gluon tutorial kernel (GB200, 152 SMs): "
      f"{anchor_tflops} — {anchor_tflops / pred['tflops']:.2f} of the model")
assert anchor_tflops < 0.75 * pred["tflops"]

# %% [markdown]
# So the model is a ceiling for this schedule, not a forecast: a published tutorial kernel of the
# same size (one CTA per 128×256 tile, no CTA pairs, on a GB200 with 152 SMs) reaches about half of
# it; the model leaves out what such kernels plausibly pay — memory contention, the clock under
# load, issue limits — and the gap is not shown to consist of those.

# %% [markdown]
# ## Exercises
#
# **1.** How many TMEM columns does `tcgen05.alloc` request for two fp32 accumulators of
# `bn = 192` columns?

# %%
answer = ...
ok = exercises.check("ch09.acc_columns", answer, bn=192)

# %% [markdown]
# **2.** On which parity does the MMA thread wait `acc_empty[1]` before tile 5?

# %%
answer = ...
ok = exercises.check("ch09.acc_parity", answer, t=5)

# %% [markdown]
# **3.** Which scale factor ID does the MMA of k-step 3 of a 128-element fp8 k-tile use?

# %%
answer = ...
ok = exercises.check("ch09.scale_byte", answer, kstep=3)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch09.acc_columns", 512, bn=192, solution=True)  # 384 needed → power of two
exercises.check("ch09.acc_parity", 1, t=5, solution=True)        # round 5 // 2 = 2 → parity (2 & 1) ^ 1
exercises.check("ch09.scale_byte", 3, kstep=3, solution=True)    # byte k-step % 4 of the cell
