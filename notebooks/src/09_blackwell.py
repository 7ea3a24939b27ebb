# %% [markdown]
# # 09 — Blackwell: `tcgen05` and Tensor Memory
#
# **Learning goal.** Carry a Hopper GEMM's mental model over to Blackwell (sm_100a), whose Tensor
# Core instructions are the `tcgen05.*` family: `tcgen05.mma` takes wgmma's place. You will
#
# 1. see why the accumulator left the register file for **Tensor Memory** ([TMEM](../docs/glossary.md#tmem));
# 2. take apart both descriptors of `tcgen05.mma` — the 32-bit
#    [instruction descriptor](../docs/glossary.md#instruction-descriptor) and the 64-bit sm_100
#    **shared-memory descriptor** — and see where the latter differs from wgmma's;
# 3. allocate TMEM (`tcgen05.alloc`) and learn which warp may read which lanes;
# 4. read the chapter's kernel, compiled to sm_100a, and map each Hopper instruction to its
#    Blackwell counterpart.
#
# There is no sm_100 GPU behind this course's records: everything numeric below is a **model** or
# comes from a compiled kernel, never from a run. Sections 1–4 are **modelled** (pure Python, from
# the PTX ISA); sections 5–6 **compile** the kernel to an sm_100a cubin and **disassemble** it;
# time, TFLOP/s and % of peak are **not measured** (that needs an sm_100 GPU).

# %% output varies
from asynctc.models import descriptors
from asynctc.core import exercises, notebook
from asynctc.models import tmem
from asynctc.models import tcgen05 as tc

notebook.banner("sm_100a", measured=False)

# %% [markdown]
# **Terms used from here on.**
#
# * `cta_group::1` — a `tcgen05` instruction of one CTA: its MMA writes that CTA's TMEM.
# * `cta_group::2`, a [CTA pair](../docs/glossary.md#cta-pair) — two CTAs of one cluster (ranks 2k
#   and 2k + 1) sharing one MMA, which one thread of the pair issues; each CTA keeps its own rows of
#   A and D and a part of B.
# * `.ws` — the *weight-stationary* variant `tcgen05.mma.ws` (not used here).
#
# ## 1. Why Tensor Memory: the register bill of an accumulator
#
# On Hopper, `wgmma.m64nNk16` keeps its 64×N fp32 accumulator in the registers of the warpgroup's
# 128 threads: N/2 registers per thread. A 128×256 CTA tile takes two warpgroups of 128 accumulator
# registers per thread: half the SM's register file (65536 32-bit registers). A 256×256 tile
# (65536 values) takes **all of it**, however it is split: the file is too small, not the 255
# registers one thread may have.
#
# On Blackwell the 128×256 tile lives in TMEM: 128 lanes (one per row of D) × 256 of its 512
# columns of 32-bit cells. TMEM is **per SM** (128 × 512 × 4 bytes = 256 KiB),
# shared by the CTAs resident on it; each allocates its own columns (section 4).
# While the MMAs run, no thread holds any of it. This kernel's epilogue copies it into registers
# 32 columns at a time (`tcgen05.ld.32x32b.x32`).

# %%
M_TILE, N_TILE = 128, 256
wgmma_regs = N_TILE // 2                      # m64nNk16: N/2 fp32 registers per thread
warpgroups = M_TILE // 64
lay = tmem.AccumulatorLayout(M_TILE, N_TILE)
print(f"{M_TILE}×{N_TILE} fp32 accumulator")
print(f"  Hopper wgmma : {warpgroups} warpgroups × 128 threads × {wgmma_regs} registers "
      f"= {warpgroups * 128 * wgmma_regs * 4 // 1024} KiB of registers, held for the whole main loop")
print(f"  Blackwell    : {lay.describe()}")
print(f"                 = {lay.alloc_columns} of {tmem.COLUMNS} TMEM columns "
      f"({lay.alloc_columns * tmem.LANES * 4 // 1024} KiB), 0 registers until the epilogue; "
      f"one tcgen05.ld.32x32b.x32 puts 32 of them in each thread's registers at a time")
fig = tmem.plot_tmem(lay, by="warp")          # lane = row of D; each warp reads its 32-lane quarter

# %% [markdown]
# ## 2. The instruction descriptor, bit by bit
#
# `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;` — one
# thread issues it (`enable_input_d` false overwrites D instead of adding to it). The shape and
# the types are all in the 32-bit `idesc` (PTX ISA §9.7.16.4.2 "Instruction Descriptor"):
#
# | bits | field | kind::f16 values |
# |---|---|---|
# | 0–1 | sparsity selector | 0 (dense) |
# | 2 | sparsity | 0 dense, 1 sparse |
# | 3 | saturate | 0 (integer kinds only) |
# | 4–5 | D type | F16 0, F32 1 |
# | 7–9 / 10–12 | A / B type | F16 0, BF16 1 (f8f6f4: E4M3 0, E5M2 1, E2M3 3, E3M2 4, E2M1 5) |
# | 13 / 14 | negate A / B | 0, 1 |
# | 15 / 16 | transpose A / B | 0 K-major, 1 MN-major |
# | 17–22 | N >> 3 | N = 8…256 |
# | 24–28 | M >> 4 | 64, 128 (one CTA); 128, 256 (CTA pair) |
# | 30–31 | maximum shift | 0 (`.ws` only) |
#
# Bits 6, 23 and 29 are reserved. `.kind` (the operand family) and `.cta_group` are in the
# instruction, not the bits, but they decide what the bits may say, so the model carries them.

# %%
idesc = tc.InstrDescriptor("bfloat16", "bfloat16", "float32", m=128, n=256)
print(idesc.ptx())
print(idesc.table())
assert idesc.encode() == 0x08400490 and tc.InstrDescriptor.decode(idesc.encode()) == idesc

# %% [markdown]
# ## 3. The sm_100 shared-memory descriptor, and how it differs from wgmma's
#
# PTX ISA §9.7.16.4.1 "Shared Memory Descriptor" — 64 bits. The table is printed from the model's
# field list (`tc.SDESC_FIELDS`), the one its encoder, decoder and error messages use:

# %%
print(tc.sdesc_layout())

# %% [markdown]
# The canonical layouts (K-major / MN-major; none, 32-, 64- or 128-byte swizzle) are chapter 04's,
# so one operand tile gives the same start, LBO and SBO. sm_100's swizzle field is three bits
# (61–63), sm_90's two (62–63); its codes 2/4/6 are sm_90's 1/2/3 read one bit lower, the same
# bits set. What differs is bit 46, the sm_100 descriptor's version field (1): the two descriptors
# of one tile differ in that bit alone.

# %%
tile = descriptors.OperandTile(128, 64, "float16", "K", 128)
w = tile.descriptor(step=1, base_address=0x2000)
t = tc.Tcgen05Descriptor.from_operand_tile(tile, step=1, base_address=0x2000)
print(t.table())
print(f"\nwgmma   descriptor = {w.encode():#018x}")
print(f"tcgen05 descriptor = {t.encode():#018x}   (xor = {w.encode() ^ t.encode():#x} = bit 46)")
assert t.encode() ^ w.encode() == 1 << 46

# %% [markdown]
# ## 4. Tensor Memory: allocation and who may read what
#
# TMEM is **per SM**; a CTA uses the columns it allocated, addressed `lane << 16 | column`.
#
# * `tcgen05.alloc` (one warp) takes whole columns (all 128 lanes) in powers of two from 32 to
#   512, writes the address to shared memory, and **blocks** while they are taken (by this CTA or
#   another resident one); `tcgen05.dealloc` (the same warp) gives them back.
# * Warp *w* may only touch lanes 32·(w mod 4) … +31, so the epilogue needs four warps to read D.
#
# `tmem.TmemAllocator` models one SM's 512 columns:

# %%
alloc = tmem.TmemAllocator()
acc = alloc.alloc(256, warp=1)
extra = alloc.alloc(128, warp=1)
print(f"alloc(256) → {acc:#010x}, alloc(128) → {extra:#010x}; {alloc.free_columns()} columns free")
for call in (lambda: alloc.alloc(256, warp=1), lambda: alloc.alloc(48, warp=1)):
    try:
        call()
    except tmem.TmemError as e:
        print("TmemError:", e)
alloc.dealloc(extra, 128, warp=1)
alloc.dealloc(acc, 256, warp=1)
alloc.check_all_freed()

# %% [markdown]
# ## 5. The kernel: compiled for sm_100a, disassembled here
#
# The chapter's GEMM (`asynctc.tcgen05`, `kernels/tcgen05.cu`) uses these pieces: a TMA producer
# warp, one MMA-issuing thread, TMEM allocated by one warp, `tcgen05.commit` to an mbarrier, four
# epilogue warps reading their lane quarters (`tcgen05.ld`). It compiles on any machine but runs
# only on an sm_100 GPU, so here it is compiled, never run.

# %% [markdown]
# The MMA-issuing thread's loop — one thread, not a warpgroup: wait until a stage is full, issue its
# `BK/16` MMAs into the accumulator in TMEM, and let `tcgen05.commit` arrive on the stage's *empty*
# barrier once those MMAs have read it (the producer warp waits on that barrier before reusing the
# stage). A last commit tells the epilogue warps that the accumulator is complete:

# %%
from asynctc import tcgen05 as kernels

notebook.show_source("tcgen05.cu", start=r"else if \(warp == 1\)", end=r"tcgen05_commit_multicast<2>\(smem_u32\(&done_bar\)")

# %% [markdown]
# Compiled for sm_100a here (no GPU needed), for one CTA and for a CTA pair, then counted in the
# SASS (static counts). The opcodes are nvdisasm's names; beside each, the PTX it comes from in
# these cubins (`asynctc.tcgen05.SASS_CLASSES`; the tests check the counts):
#
# | SASS | from the PTX |
# |---|---|
# | `UTCHMMA` (`.2CTA` for the pair) | `tcgen05.mma` |
# | `UTCBAR` | `tcgen05.commit` |
# | `LDTM` | `tcgen05.ld`, in the epilogue |
# | `UTCATOMSWS` | `tcgen05.alloc` / `tcgen05.dealloc`: the TMEM allocator |
# | `UVIRTCOUNT` (`.DEALLOC.SMPOOL`) | `tcgen05.relinquish_alloc_permit`: the CTA gives up its right to allocate more TMEM |
# | `UTMALDG` | the TMA loads (`cp.async.bulk.tensor`) |
# | `UTMACCTL` | `prefetch.tensormap`: the tensor maps fetched before the first TMA load |
# | `SYNCS` | mbarrier init, arrive and wait |
# | `UCGABAR` (`_ARV`, `_WAIT`) | `barrier.cluster.arrive` / `.wait`: only in the CTA-pair build, a cluster of two |
# | `BAR` | `__syncthreads` |
#
# The kernels are launched with the descriptors the models above encode:

# %% output varies
for cfg in (kernels.GemmConfig("float16", 128, 256, 64, 4, 1), kernels.GemmConfig("float16", 256, 256, 64, 4, 2)):
    sm = kernels.sass_summary(cfg)
    print(f"{cfg.label():40s}", {k: v for k, v in sm.items() if k != "full" and v})
    assert sm["UTCHMMA"] > 0 and sm["LDTM"] > 0 and sm["spill_bytes"] == 0
    assert cfg.idesc == tc.InstrDescriptor("float16", "float16", "float32", cfg.bm, cfg.bn,
                                           cta_group=cfg.cta_group).encode()
    assert cfg.a_desc == cfg.b_desc == tc.Tcgen05Descriptor(0, 16, 1024, "128B").encode()
print("the kernels' descriptors equal the models'")

# %% [markdown]
# ## 6. Hopper → Blackwell
#
# The same GEMM, instruction by instruction: per concept, Hopper's PTX and then Blackwell's, each
# with the SASS that nvdisasm prints for the sm_90a and sm_100a cubins compiled by this course
# ("—": none).

# %%
lines = []
for concept, *cells in tc.MIGRATION:
    lines.append(concept)
    for arch, ptx, sass in (("Hopper", *cells[:2]), ("Blackwell", *cells[2:])):
        sass = "" if sass == "—" else f"  · SASS {sass}"
        one = f"  {arch:10s}{ptx}{sass}"
        lines += [one] if len(one) <= 100 else [f"  {arch:10s}{ptx}", f"{'':12s}{sass.strip()}"]
assert max(map(len, lines)) <= 100
print("\n".join(lines))

# %% [markdown]
# **Deep dives:** [09c — where the accumulator lands, one tile emulated](09c_blackwell_datapath.ipynb)
# (data-path layouts, `tcgen05.ld`, a float64-checked emulation); [09b — a persistent Blackwell
# GEMM](09b_blackwell_persistent.ipynb): the table's last four rows (two TMEM accumulators, a
# cluster-launch-control scheduler, CTA pairs with multicast, block-scaled `kind::mxf8f6f4`).

# %% [markdown]
# Two rows are easy to misread. `wgmma.fence` orders a warpgroup's register accesses to its
# accumulator before the next `wgmma`; `tcgen05.mma` reads no matrix from registers, so it has no
# counterpart. `tcgen05.fence::before_thread_sync` / `::after_thread_sync` do a different job: they
# order a thread's tcgen05 operations around a thread synchronisation (a barrier, an mbarrier
# wait), so the sync orders them for other threads too (PTX ISA, *wgmma.fence*, *tcgen05.fence*).
#
# > **Claims not measured here.** "Blackwell GEMMs reach **90 %+ of peak**" is **not measured**
# > here (no sm_100 GPU), and no sentence of this chapter depends on it.
#
# ## Exercises
#
# **1.** How many TMEM columns must `tcgen05.alloc` request for a 128×96 fp32 accumulator (one CTA)?

# %%
answer = ...
ok = exercises.check("ch09.tmem_columns", answer, m=128, n=96)

# %% [markdown]
# **2.** This tcgen05 descriptor should describe k-step 1 of B — 256×64 bf16, K-major, 128-byte
# swizzle, stored at shared address 0x8000. One field is wrong: which? (Answer a field name of
# `Tcgen05Descriptor`: start_address, lbo, sbo, swizzle, base_offset, lbo_mode, version.)

# %%
value = tc.exercise_descriptor()          # one field of it is wrong
print(f"{value:#018x}")
answer = ...
ok = exercises.check("ch09.fix_descriptor", answer, value=value)

# %% [markdown]
# **What you learned:** the accumulator lives in TMEM; one thread issues the MMA from two
# descriptors; an mbarrier says when it is done. **Next:** [chapter 10](10_claims.ipynb), the seed article's claims.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch09.tmem_columns", 128, m=128, n=96, solution=True)  # lane = row; 96 columns → 2^k ≥ 32
got = tc.Tcgen05Descriptor.decode(value)
good = tc.Tcgen05Descriptor.from_operand_tile(descriptors.OperandTile(256, 64, "bfloat16", "K", 128),
                                              1, 0x8000)
print(got, good, sep="\n")
ok = exercises.check("ch09.fix_descriptor", "sbo", value=value, solution=True)  # 128 B; 1024 is right
