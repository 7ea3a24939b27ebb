# %% [markdown]
# # 06b — Deep dive: the warp-specialized kernel taken apart
#
# ← back to the core lesson [06_warp_specialization](06_warp_specialization.ipynb)
#
# **Assumes** chapter 06: producer and consumer warpgroups, full/empty barriers, ring counter and phase parity, `setmaxnreg`, the ladder.
#
# **What it adds:**
# - §1 the seed's swapped protocol, run in chapter 05's CPU model until it deadlocks
# - §2 the producer's and the consumers' loops, from the kernel source
# - §3 the register budget, read from the cubin
# - §4 this chapter's names beside CUTLASS's
# - §5 correct first: every rung's float64 checks
# - §6 a descriptor bug the first cluster run found on the H200, replayed in the model
# - §7 each rung's step beside its prediction; the top rung's timeline; how each epilogue writes C

# %% output varies
import textwrap
import warnings

import numpy as np

from asynctc.core import exercises, notebook, records, runtime
from asynctc import pipeline as pl
from asynctc import warp_specialization as W
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")
rec = records.load("warp_specialization")
res = rec.results

# %% [markdown]
# ## 1. The seed's protocol, run
#
# The core lesson drew both protocols (its section 1). Chapter 05's discrete-event model runs
# both (its producer is one thread of consumer 0, as in chapter 05's kernel, but the barriers and
# their rules are these). The correct protocol finishes;
# the seed's ends in a diagnosed deadlock at the very first k-tile, instead of a hung GPU:

# %%
print(f"{'event':18s} {'this kernel':12s} seed")
for event in W.PROTOCOL_EVENTS:
    print(f"{event:18s} {W.protocol_from_source()[event]:12s} {W.seed_protocol()[event]}")
ok_run = mp.simulate(**mp.BUG_HUNT)
seed_run = mp.simulate(**mp.BUG_HUNT, protocol="swapped_barriers")
print("\ncorrect protocol:", "finishes" if ok_run.diagnosis is None else ok_run.diagnosis)
d = seed_run.diagnosis
print("seed's protocol:", mp.VARIANTS["swapped_barriers"])
print(f"  {type(d).__name__} at k-tile {d.iteration} on {d.barrier}[{d.stage}], parity {d.parity}, "
      f"waiting: {', '.join(map(mp.lane_name, d.who_waits))}")
print(textwrap.fill(d.why, 96, initial_indent="  ", subsequent_indent="  "))
assert ok_run.diagnosis is None and isinstance(d, mp.Deadlock) and d.barrier == "empty"
assert W.seed_protocol()["consumer waits"] == "empty" and W.protocol_from_source()["consumer waits"] == "full"

# %% [markdown]
# The producer sails through: a fresh full barrier passes parity 1 at once, and its own loads
# complete full. The consumers wait for a phase of empty that only their own arrivals could
# complete. (`tests/test_warp_specialization.py` also replays this kernel's own producer and
# consumer loops in Python, across tiles and in 2-CTA clusters, with random latencies; with the
# waits swapped the replay fails too.)
#
# ## 2. The top rung, from its source
#
# The core lesson showed rung 3's build. Here is the top rung's (rung 8: persistent, clusters of
# 2, TMA store), from the same source with its switches resolved. The producer is rung 3's loop;
# with a cluster its other 127 threads do not leave but wait at the closing `cluster_sync` (a peer
# may still arrive on this CTA's barriers). `load_stage`: `arrive.expect_tx` on full for the whole
# stage, A's box, then this CTA's half of B multicast into both CTAs of the cluster (mask `0x3`),
# completing on both CTAs' full[s] — half of the bytes each full[s] expects come from the peer.

# %%
top = W.compile_ws(W.TOP_RUNG.make("float16"))
display(notebook.show_source(top, start=r"^    // ---------------- producer warpgroup",
                             end=r"^    if constexpr \(CLUSTER == 1\) return;", variant=True,
                             omit=W.PRODUCER_LINES))                # 05's exercise 2, 06's capstone
notebook.show_source(top, start=r"^__device__ __forceinline__ void load_stage", end=r"^}", variant=True)

# %% [markdown]
# A consumer warpgroup: rung 3's loop, with two differences. `release` arrives on the peer CTA's
# empty[s] too (`mbarrier_arrive_remote` at the address `mapa` gives): the peer's producer
# multicasts into this CTA's stage, so it must wait for both CTAs' consumers (empty[s] counts
# CONSUMERS · 2 arrivals). And C leaves through `store_c_tma` (shared memory, then one TMA store
# per 64×64 chunk), which the consumer does not wait for before the next tile's k-loop.
# `show_source(..., variant=False)` shows the source with every variant's branches.

# %%
notebook.show_source(top, start=r"^    // ---------------- consumer warpgroups", end=r"^      tr\.event\(EV_STORE_END",
                     variant=True, omit=W.LOOP_LINES)          # its k-loop: deep dive 06e's exercise

# %% [markdown]
# ## 3. The register budget, from the cubin
#
# An SM has 65536 32-bit registers. With `__launch_bounds__(384, 1)` (one producer and two
# consumer warpgroups, one CTA per SM) ptxas knows each thread may have 65536 / 384 = 170,
# rounded down to the allocation unit of 8: **168 at entry**. `setmaxnreg` (PTX ISA,
# *setmaxnreg*; `.sync.aligned`: the whole warpgroup executes it) then moves registers between
# warpgroups: the producer's `setmaxnreg.dec 40` returns 128 × (168 − 40) registers, the
# consumers' `setmaxnreg.inc 232` takes them — 128 × 40 + 256 × 232 = 64512 ≤ 65536. A consumer
# thread of the 128×256 tile carries 64 × 256 / 128 = 128 fp32 accumulators.
#
# The table compiles four builds here and reads the counts from the cubin: ptxas's count at
# entry, and the immediates of `USETMAXREG.DEALLOC` / `.TRY_ALLOC` — what `setmaxnreg` became in
# SASS. The last build drops `__launch_bounds__`: ptxas then cannot know the count at entry and
# ignores `setmaxnreg` (ptxas warning C7508, see [setmaxnreg](../docs/glossary.md#setmaxnreg); `asynctc` turns it into a
# `PerformanceWarning`).

# %% output varies
budget_cfgs = [W.RUNGS[1].make("float16"), W.WSConfig(), W.WSConfig(setmaxnreg=False)]
budget = [W.register_budget(c) for c in budget_cfgs]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    no_bounds = W.compile_without_launch_bounds(W.WSConfig())
row = W.register_budget(W.WSConfig(), no_bounds)
budget.append({**row, "label": row["label"] + " (no launch bounds)"})
print(W.register_budget_table(budget))
print("\nptxas said, without launch bounds:", *[str(w.message).split(": ", 1)[1] for w in caught])
assert budget[1]["sass_dealloc"] == [40] and budget[1]["sass_alloc"] == [232]
assert budget[3]["dropped"] and any("C7508" in str(w.message) for w in caught)
assert all(r["total"] <= 65536 for r in budget[:3])

# %% [markdown]
# What the table says about this kernel:

# %% output varies
plain = budget[2]
_ = notebook.verdict(plain["spill_bytes"] == 0 and plain["ptxas"] <= plain["entry"],
                     f"Without setmaxnreg, ptxas fits the two-consumer kernel in {plain['ptxas']} registers "
                     f"per thread, no spills, under the {plain['entry']} at entry: for this tile setmaxnreg gives "
                     f"the consumers headroom ({budget[1]['consumer']} instead of {plain['entry']}), it does not "
                     "rescue a spilling kernel. It becomes necessary where a consumer needs more than the "
                     "count at entry.",
                     f"Without setmaxnreg, ptxas needs {plain['ptxas']} registers and spills "
                     f"{plain['spill_bytes']} bytes: here setmaxnreg is what keeps the accumulators in registers.")

# %% [markdown]
# `WSConfig` checks the budget in Python before anything compiles, and says which rule a request
# breaks:

# %%
for knobs in (dict(consumer_regs=240), dict(consumer_regs=160), dict(producer_regs=20)):
    try:
        W.WSConfig(**knobs)
    except W.WarpSpecializationError as refused:
        print(f"WSConfig({', '.join(f'{name}={value}' for name, value in knobs.items())}): {refused}")

# %% [markdown]
# **Exercise. The setmaxnreg budget.** If this kernel's producer warpgroup kept **56** registers per
# thread, what is the most `setmaxnreg.inc` could give each consumer thread?

# %%
answer = ...
ok = exercises.check("ch06.consumer_regs", answer, producer_regs=56, consumers=2)

# %% [markdown]
# The record made on the GPU kept the same counts for every timed build (ptxas of the GPU
# machine's NVRTC — another NVRTC version can differ from the table above by a register or so):

# %% output varies
print(rec.label())
seen = {}
for lab, v in res["registers"].items():
    key = (v["entry"], v["ptxas"], v["producer"], v["consumer"], v["total"], v["spill_bytes"],
           tuple(v["sass_dealloc"]), tuple(v["sass_alloc"]))
    seen.setdefault(key, []).append(lab)
for (entry, ptxas, prod, cons, total, spill, dealloc, alloc), labs in seen.items():
    print(f"{len(labs):2d} builds: entry {entry}, ptxas {ptxas}, producer {prod}, consumers {cons}, "
          f"CTA {total}, spills {spill} B, USETMAXREG {list(dealloc)}/{list(alloc)}  e.g. {labs[0]}")
assert all(v["spill_bytes"] == 0 and not v["setmaxnreg_dropped"] for v in res["registers"].values())

# %% [markdown]
# ## 4. CUTLASS's names
#
# **From this chapter's names to CUTLASS's** (chapter 05 maps the ring itself: `PipelineTmaAsync`,
# `PipelineState`, `producer_acquire` / `producer_commit` / `consumer_wait` / `consumer_release`,
# `ClusterBarrier`, `make_gmma_desc`, `elect_one_sync`). The kernel schedules
# (`include/cutlass/gemm/dispatch_policy.hpp`, kernels in `include/cutlass/gemm/kernel/`):
#
# | here | CUTLASS (sm90) |
# |---|---|
# | a producer warpgroup and one consumer warpgroup, one tile per CTA (not persistent) | `KernelTmaWarpSpecialized` (`sm90_gemm_tma_warpspecialized.hpp`: one MMA warpgroup, non-persistent) |
# | two consumer warpgroups on the **same** tile, each computing its rows (rungs 3–8; persistent from rung 5) | `KernelTmaWarpSpecializedCooperative` (`sm90_gemm_tma_warpspecialized_cooperative.hpp`, persistent) |
# | two consumer warpgroups on **different** tiles, taking turns (rung 9, deep dive 06c section 8) | `KernelTmaWarpSpecializedPingpong` (`sm90_gemm_tma_warpspecialized_pingpong.hpp`) |
# | FP8 without promotion (chapter 07, `promote=0`) | `KernelTmaWarpSpecialized…FP8FastAccum` (`KernelTmaWarpSpecializedCooperativeFP8FastAccum`, `…PingpongFP8FastAccum`) |
# | FP8 with promotion every P k-tiles (chapter 07, `promote=P`) | the FP8 mainloop's `mma_promotion_interval` (k32 MMAs between promotions, default 4 — one promotion per 128-element k-tile, i.e. our `promote=1`) with `GmmaFP8Accumulation` (`gemm/collective/fp8_accumulation.hpp`) |
# | the producer's `setmaxnreg.dec`, the consumers' `.inc` | `cutlass::arch::warpgroup_reg_dealloc<N>` / `warpgroup_reg_alloc<N>` |
# | one elected thread per consumer warpgroup releases a stage | `consumer_release`, one signalling thread per warpgroup: CUTLASS's convention, not a rule the PTX ISA text states |
#
# (Names checked against the CUTLASS source; nothing of its code is used here.)

# %% [markdown]
# ## 5. Correct first
#
# Checked against float64 as in chapter 05, with the
# [elementwise bound](../docs/glossary.md#elementwise-bound) of the TMA-fed GEMMs,
# `K·2⁻²¹·(|A|·|B|) + 2·u_out·|ref|`. Live, the top rung runs now in fp16 and in bf16 on a shape with more
# tiles than SMs (each persistent CTA walks several tiles, the ring counter crosses tile
# boundaries). The record checked every rung × dtype × B layout × output dtype, and its broken
# variant (the last consumer never releases a stage) ended with an error, not a hang.

# %% output varies
top = W.TOP_RUNG
if runtime.runs_live("sm_90a"):
    for dt, shape in (("float16", W.CHECK_SHAPES[0]), ("bfloat16", W.PERSISTENT_SHAPE)):
        chk = W.verify(top.make(dt), *shape)
        print(f"live: {top.make(dt).label()} {shape}: worst |C−ref|/bound {chk.worst:.3f}, wrong "
              f"{chk.wrong}, unwritten {chk.unwritten}")
        assert chk.passed
print(rec.label())
for line in pl.checks_lines(res):
    print(line)
print("broken variant:", res["broken"]["error"].split(": ", 1)[-1], f"({res['broken']['seconds']:.1f} s)")
by_rung = {}
for c in res["checks"]:
    by_rung.setdefault(W.rung_of_record(c), []).append(c)
for n, cs in sorted(by_rung.items()):
    print(f"  rung {n}: {len(cs):3d} checks, worst |C−ref|/bound {max(c['worst_ratio'] for c in cs):.3f}")
assert all(c["passed"] for c in res["checks"]) and set(by_rung) == {r.number for r in W.recorded_rungs(res)}

# %% [markdown]
# ## 6. A bug found on the H200: a descriptor field that was not masked
#
# > The first ladder run on the GPU checked every cluster variant with B given K×N (MN-major) —
# > and the second CTA of every cluster was wrong, always the same elements. With [multicast](../docs/glossary.md#multicast) off
# > (each CTA loading all of B itself, same cluster launch) the same elements were wrong: not the
# > multicast. A decoding input (A a row selector, B filled with its own row index, then its
# > column index) showed what CTA rank 1 read: for the 64-column box j of B, **K-row k + 2j instead
# > of k** — box j read 256·j bytes late, as if the descriptor's LBO (the stride between boxes of
# > an MN-major operand) were 8192 + 256.
# >
# > The cause: the kernel built each descriptor as a template plus (shared address >> 4). In a
# > cluster launch, `cvta.to.shared` gives the second CTA an address with **bit 24** set (its
# > window in the cluster's shared space). Shifted by 4, that is bit 20 of the descriptor — inside
# > the LBO field (bits 16–29, in 16-byte units): +16 units, +256 bytes. The start-address field
# > (bits 0–13) looked right. K-major operands with 128-byte swizzle do not use LBO, which is why
# > B N×K, and A, were right. The fix (`smem_desc_addr` in `ptx/common.cuh`) masks the address to
# > its 18-bit shared-memory offset before adding it. The lesson: **mask every value to its field
# > before adding it to a packed word** — a carry out of one field lands, silently, in the next.
#
# The descriptor model (chapter 04) replays it on the CPU: the template for rung 6's B K×N, a B
# tile at shared offset 0x8000, the address with and without bit 24, decoded; then which K-row of
# its box each column reads in the first k16 step, from the model's address formula.

# %%
from asynctc.models import descriptors as dsc

bug_cfg = W.RUNG_BY_NAME["cluster"].make("float16").replace(b_major="MN")
desc_b0 = bug_cfg.descriptor_templates()[1]
b_tile = 0x8000                                 # a 1024-byte-aligned B tile in the stage
rank1 = (1 << 24) | b_tile                      # the second CTA's shared-window address
masked, unmasked = desc_b0 + ((rank1 & 0x3FFFF) >> 4), desc_b0 + (rank1 >> 4)
for what, d in (("masked (the fix)", masked), ("unmasked (the bug)", unmasked)):
    print(f"{what:19s} {d:#018x}  {dsc.decode(d)}")
print("\nK-row each 64-column box reads in k16 step 0 (k = 0..15):")
for what, d in (("masked", masked), ("unmasked", unmasked)):
    rows = W.descriptor_rows_read(bug_cfg, d, b_tile)
    for j in range(bug_cfg.bn // 64):
        print(f"  {what:8s} box {j}: rows {rows[64 * j, 0]:2d}..{rows[64 * j, -1]:2d}"
              + ("" if (rows[64 * j:64 * j + 64] == np.arange(16)).all() else f"  (k + {2 * j})"))
assert dsc.decode(unmasked).lbo - dsc.decode(masked).lbo == 256
assert (W.descriptor_rows_read(bug_cfg, unmasked, b_tile)
        == np.arange(16)[None, :] + 2 * (np.arange(256)[:, None] // 64)).all()

# %% [markdown]
# ## 7. The ladder's predictions, and inside the top rung
#
# These extend the core lesson [06](06_warp_specialization.ipynb), sections 3 and 4.

# %%
import matplotlib.pyplot as plt

# %% [markdown]
# Each rung's step beside its prediction, from the record (all four ladders; deep dive 06c gives
# each verdict in full):

# %% output varies
for n in [r.number for r in W.recorded_rungs(res)][1:]:
    p = W.prediction_check(res, n)
    head = f"rung {n} ({p['name']}): {p['measured']}, predicted {p['predicted']}"
    notebook.verdict(p["inside"], f"{head}: held.", f"{head}: {p['outside']}.")

# %% [markdown]
# ### Inside the top rung: a measured timeline
#
# The kernel can record, for thread 0 of every warpgroup of four CTAs, the SM clock at each event.
# Below, CTA 0 of the top rung (rung 8) around its first tile boundary: the last k-tiles of tile 0,
# the epilogue, the first k-tiles of tile 1 (ring counters, so tile 1 starts at 64). Drawn with
# chapter 05's `pl.plot_trace`: the producer's TMA loads in flight (one sub-row per stage), each
# consumer's waits on full and its wgmma groups, releases as ticks, the epilogue. Rung 5 below it,
# same window, stores C from registers.

# %% output varies
traces = {t["rung"]: t for t in res["traces"]}
for n in (8, 5):
    fig = W.plot_top_trace(traces[n], record=rec)
    plt.show()

# %% [markdown]
# What to look for: the producer issues tile 1's first loads before the consumers reach their
# epilogue, so the consumers' first waits of tile 1 are short, not an empty ring's fill. The
# epilogue bar is what differs between the two rungs:

# %% output varies
t5, t8 = (W.trace_numbers(traces[n], res["rows"]) for n in (5, 8))
notebook.claim(t8["epilogue_cycles"] < 0.5 * t5["epilogue_cycles"],
               f"Epilogue per tile: {t5['epilogue_cycles']:.0f} cycles in rung 5, "
               f"{t8['epilogue_cycles']:.0f} in rung 8.", rung5=t5["epilogue_cycles"],
               rung8=t8["epilogue_cycles"])
_ = notebook.claim(t8["wait_full"] > 0.1,
                   f"Rung 8's consumers still wait on full barriers {t8['wait_full']:.2f} of their loop.",
                   wait_full=t8["wait_full"])

# %% [markdown]
# ### How each epilogue writes C
#
# Rung 7's step, counted: the stores of both epilogues from the wgmma fragment's layout
# (`W.epilogue_stores`; a [sector](../docs/glossary.md#sector) is 32 bytes), then the traced
# epilogue with the store instructions of each rung's SASS (STG: a register store to global
# memory; STSM: [stmatrix](../docs/glossary.md#stmatrix)), checked against those counts.

# %% output varies
print(W.epilogue_store_lines(W.RUNGS[6].make("float16")))
ok, text, numbers = W.epilogue_note(res)
_ = notebook.claim(ok, text, **numbers)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
ok = exercises.check("ch06.consumer_regs", (65536 - 128 * 56) // (128 * 2) // 8 * 8,
                     producer_regs=56, consumers=2, solution=True)
