# %% [markdown]
# # 09 — Blackwell: `tcgen05` and Tensor Memory
#
# **Learning goal.** Move a Hopper GEMM's mental model to Blackwell (sm_100a). You will
#
# 1. see why the accumulator left the register file: what a 128×256 fp32 tile costs in registers
#    with `wgmma` (chapter 04), and what it costs in **Tensor Memory** ([TMEM](../docs/glossary.md#tmem)) with `tcgen05.mma`;
# 2. take both descriptors of `tcgen05.mma` apart bit by bit — the 32-bit **instruction descriptor**
#    and the 64-bit sm_100 **shared-memory descriptor** — and see exactly where the latter differs
#    from the wgmma one;
# 3. allocate TMEM (`tcgen05.alloc`), learn which warp may read which lanes, and draw where the
#    accumulator lands for M = 64, 128 and 256, one CTA or a **CTA pair** (two CTAs of a cluster
#    sharing one MMA);
# 4. follow one GEMM tile through a CPU **emulation** of the whole data path (TMA swizzle → smem
#    descriptor → MMA → TMEM → `tcgen05.ld` → registers → D), checked against float64, and watch it
#    catch a wrong descriptor;
# 5. map every Hopper instruction of the earlier chapters to its Blackwell counterpart, SASS names
#    on both sides.
#
# There is no sm_100 GPU behind this course's records: everything numeric below is a **model** (pure
# Python, written from the PTX ISA), or a kernel compiled to an sm_100a cubin and disassembled. No
# Blackwell number is measured here.

# %% output varies
import dataclasses

import numpy as np
import matplotlib.pyplot as plt

from asynctc.models import descriptors
from asynctc.core import exercises, notebook
from asynctc.models import emulate, tmem
from asynctc.models import tcgen05 as tc

notebook.banner("sm_100a", measured=False)

# %% [markdown]
# **Terms used from here on.**
#
# * `cta_group::1` — a `tcgen05` instruction of one CTA: its MMA writes that CTA's TMEM.
# * `cta_group::2`, a **CTA pair** — two CTAs of one cluster (cluster ranks 2k and 2k + 1) that
#   share one MMA: each CTA keeps its own rows of A and D (in its shared memory and TMEM) and one
#   part of B, which the MMA reads from both CTAs; one thread of the pair issues it.
# * **Layout A, B, D, F** — the PTX ISA's names (its *data path layout* figures) for where row i,
#   column j of D lands in TMEM, one per (M, `cta_group`); section 5 draws these four.
# * `.ws` — the *weight-stationary* variant `tcgen05.mma.ws` (one CTA, M ≤ 128), which this
#   chapter does not use; a few instruction-descriptor bits only matter for it.
#
# ## 1. Why Tensor Memory: the register bill of an accumulator
#
# A Hopper `wgmma.m64nNk16` keeps its 64×N fp32 accumulator in the registers of the warpgroup's 128
# threads: N/2 registers per thread (chapter 04's fragment picture). A 128×256 CTA tile therefore
# needs two warpgroups (two consumers) holding 128 accumulator registers per thread each: 32768
# values, half of the SM's register file (65536 32-bit registers). The cleanest way to see why the
# accumulator had to leave the registers: a 256×256 fp32 tile is 65536 values — **the whole
# register file**, before one address, loop counter or producer register, however it is split over
# warpgroups. (It is the file that is too small, not the 255 registers one thread may have.)
#
# On Blackwell the same 128×256 tile lives in TMEM: 128 lanes (one per row of D) × 256 columns of
# 32-bit cells, half of the 512 columns. TMEM is **per SM** (128 lanes × 512 columns × 4 bytes =
# 256 KiB), shared by the CTAs resident on it: each allocates its columns (section 4). While the
# MMAs run, no thread holds any of it; the epilogue pulls it out 32 columns at a time with
# `tcgen05.ld`.

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

# %% [markdown]
# ## 2. The instruction descriptor, bit by bit
#
# `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;` — one
# thread issues it. Everything about the shape and types is in the 32-bit `idesc`
# (PTX ISA §9.7.16.4.2 "Instruction Descriptor"):
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
# Bits 6, 23 and 29 are reserved. `.kind` and `.cta_group` are in the instruction, not the bits,
# but they decide what the bits may say — so the model carries them.

# %%
idesc = tc.InstrDescriptor("bfloat16", "bfloat16", "float32", m=128, n=256)
print(idesc.ptx())
print(idesc.table())

# %%
assert idesc.encode() == 0x08400490
assert tc.InstrDescriptor.decode(idesc.encode()) == idesc
print("encode → decode round trip:", True)

# %% [markdown]
# Bad values never reach a GPU; each error names the field, the value and the rule:

# %%
for bad in (dict(m=256), dict(n=12), dict(a_dtype="bfloat16", b_dtype="bfloat16", d_dtype="float16"),
            dict(kind="f8f6f4", a_dtype="e2m1", b_dtype="e4m3", a_major="MN"), dict(sparse=1)):
    args = dict(a_dtype="float16", b_dtype="float16", d_dtype="float32", m=128, n=128)
    args.update(bad)
    try:
        tc.InstrDescriptor(**args)
    except descriptors.DescriptorError as e:
        print("DescriptorError:", e, "\n")

# %% [markdown]
# ## 3. The sm_100 shared-memory descriptor, and how it differs from wgmma's
#
# PTX ISA §9.7.16.4.1 "Shared Memory Descriptor" — 64 bits. The table is printed from the model's
# field list (`tc.SDESC_FIELDS`), the one its encoder, decoder and error messages use:

# %%
print(tc.sdesc_layout())

# %% [markdown]
# The canonical layouts (K-major / MN-major, none / 32 / 64 / 128-byte swizzle) are the ones of
# chapter 04, so the same operand tile gives the same start, LBO and SBO. The sm_100 swizzle codes
# 2/4/6 are sm_90's 1/2/3 one bit higher — so for those modes the two descriptors of one tile differ
# in a single bit: 46.

# %%
tile = descriptors.OperandTile(128, 64, "float16", "K", 128)
w = tile.descriptor(step=1, base_address=0x2000)
t = tc.Tcgen05Descriptor.from_operand_tile(tile, step=1, base_address=0x2000)
print(tile.describe())
print(t.table())
print(f"\nwgmma   descriptor = {w.encode():#018x}")
print(f"tcgen05 descriptor = {t.encode():#018x}   (xor = {w.encode() ^ t.encode():#x} = bit 46)")

# %%
assert t.encode() ^ w.encode() == 1 << 46
for sw in (0, 32, 64, 128):
    for mj in ("K", "MN"):
        tt = descriptors.OperandTile(64, 64, "bfloat16", mj, sw)
        for s in range(tt.k_steps):
            assert tc.Tcgen05Descriptor.from_operand_tile(tt, s).encode() == \
                tt.descriptor(s).encode() | 1 << 46
print("every swizzle mode and major-ness: tcgen05 = wgmma | 1 << 46:", True)

# %% [markdown]
# Because of that one bit, each decoder rejects the other's values — a descriptor built for the
# wrong generation fails in Python, with the reason:

# %%
for decode, value in ((tc.Tcgen05Descriptor.decode, w.encode()),
                      (descriptors.WgmmaDescriptor.decode, t.encode())):
    try:
        decode(value)
    except descriptors.DescriptorError as e:
        print("DescriptorError:", e, "\n")

# %% [markdown]
# ## 4. Tensor Memory: allocation and who may read what
#
# TMEM is 128 lanes × 512 columns of 32-bit cells (256 KiB) **per SM**, shared by the CTAs resident
# on that SM: a CTA uses the columns it allocated, addressed `lane << 16 | column`. That sharing is
# why `tcgen05.alloc` can block (another resident CTA has taken the columns) and why a CTA that will
# allocate no more says so (`relinquish_alloc_permit`). `tmem.TmemAllocator` models one SM's 512
# columns.
#
# * `tcgen05.alloc` (one warp) takes whole columns — all 128 lanes — in powers of two from 32 to
#   512, writes the address to shared memory, and **blocks** if the columns are not free (taken by
#   this CTA or another one resident on the SM);
#   `tcgen05.dealloc` (the same warp) gives them back, all of them before the kernel exits;
#   `tcgen05.relinquish_alloc_permit` promises no further allocations.
# * A warp may only touch the 32-lane quarter given by its rank in its warpgroup: warp *w* reaches
#   lanes 32·(w mod 4) … +31. So the epilogue needs four warps — one per quarter — to read D.

# %%
alloc = tmem.TmemAllocator()
acc = alloc.alloc(256, warp=1)
extra = alloc.alloc(128, warp=1)
print(f"alloc(256) → {acc:#010x}, alloc(128) → {extra:#010x}; {alloc.free_columns()} columns free")
for call in (lambda: alloc.alloc(256, warp=1), lambda: alloc.alloc(48, warp=1),
             lambda: alloc.dealloc(extra, 128, warp=2)):
    try:
        call()
    except tmem.TmemError as e:
        print("TmemError:", e)
alloc.dealloc(extra, 128, warp=1)
alloc.dealloc(acc, 256, warp=1)
alloc.check_all_freed()
print("lane windows of a warpgroup's four warps 0..3:", [tmem.lane_window(w) for w in range(4)])

# %% [markdown]
# ## 5. Where the accumulator lands
#
# The "data path layout" figures of the PTX ISA (§9.7.16, *Data path layout organization*) say where
# row i, column j of D goes. With one CTA and M = 128 (Layout D) row i is lane i. With M = 64
# (Layout F) only lanes 0–15 of each warp's quarter are used. A CTA pair splits the MMA: each CTA
# holds M/2 rows of A and D and N/2 columns of B (its MMA reads the peer's B half). With M = 256
# (Layout A) each CTA's 128 rows again sit one per lane; with M = 128 (Layout B) each CTA's 64 rows
# use all 128 lanes, the two column halves folded side by side.

# %% output varies
fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=80, layout="constrained")
for ax, (m, cg) in zip(axes.ravel(), ((128, 1), (64, 1), (256, 2), (128, 2))):
    tmem.plot_tmem(tmem.AccumulatorLayout(m, 64, cg), by="row", ax=ax)
plt.show()

# %%
for m, cg in ((128, 1), (64, 1), (256, 2), (128, 2)):
    L = tmem.AccumulatorLayout(m, 64, cg)
    lane, col = L.maps()
    assert len(np.unique(lane * 1000 + col)) == lane.size     # one cell per element
    print(L.describe())

# %% [markdown]
# ### `tcgen05.ld`: from cells to registers
#
# The epilogue's warps copy TMEM into registers with `tcgen05.ld.sync.aligned.<shape>.x<n>.b32`.
# `.32x32b` is the simple one: thread i reads lane (quarter base + i), register r reads column r.
# `.16x256b` reads 16 lanes × 8 columns per repetition in the pattern of the `mma.sync` m16n8
# accumulator fragment (chapter 01). Each number is the thread that receives the cell:

# %% output varies
fig = tmem.plot_ld_fragment("16x256b", 1)
plt.show()
fig = tmem.plot_ld_fragment("32x32b", 8)
plt.show()

# %% [markdown]
# ## 6. One tile through the whole data path — emulated, not run
#
# `asynctc.models.emulate.emulate_gemm` chains the models: TMA writes A and B box by box under the
# swizzle (chapter 03's `SmemTile.scatter`); each k-step's sm_100 descriptors and the instruction
# descriptor say which bytes the MMA reads; the products (float64, inputs rounded to the dtype)
# accumulate into float32 TMEM cells placed by the data path layout; four warps `tcgen05.ld` their
# lane quarters; each register goes where the inverse layout says, into a NaN-poisoned D that must be
# written exactly once. The check is elementwise, relative to |A|·|B|.
#
# **This is a model of the hardware, not a run on it**: it can only be as right as the PTX facts it
# was written from. What it does prove is that those facts fit together — and it makes a mismatch
# visible before any GPU is involved.

# %%
rng = np.random.default_rng(2026)            # seeded: the printed lines are compared by nbval
for dt, m, n, cg, majors, sw in (("float16", 128, 256, 1, ("K", "K"), 128),
                                 ("bfloat16", 64, 24, 1, ("MN", "K"), 64),
                                 ("float16", 256, 128, 2, ("K", "MN"), 128),
                                 ("bfloat16", 128, 64, 2, ("MN", "MN"), 32)):
    i = tc.InstrDescriptor(dt, dt, "float32", m, n, *majors, cta_group=cg)
    a, b = emulate.random_problem(i, 64, rng)
    r = emulate.emulate_gemm(a, b, i, sw)
    assert r.passed, r.summary()
    print(("PASS" if r.passed else "FAIL"), f"{dt:8s} M={m:3d} N={n:3d} cta_group::{cg} "
          f"A {majors[0]}-major B {majors[1]}-major swizzle {sw:3d}: {r.layout.name}, "
          f"{r.wrong} of {r.d.size} elements wrong")

# %% [markdown]
# Now every supported combination with fresh random inputs (the tests in
# `tests/test_tcgen05_models.py` do the same, plus fp8):

# %%
count = 0
for dt in ("float16", "bfloat16"):
    for cg, m in ((1, 64), (1, 128), (2, 128), (2, 256)):
        for n in ((16, 128) if cg == 2 else (8, 128)):
            for shape in tmem.LD_SHAPES:
                i = tc.InstrDescriptor(dt, dt, "float32", m, n, cta_group=cg)
                a, b = emulate.random_problem(i, 32)
                assert emulate.emulate_gemm(a, b, i, 128, ld_shape=shape).passed
                count += 1
print(f"{count} emulated tiles (2 dtypes × 4 (M, CTA group) × 2 N × 4 tcgen05.ld shapes): all match float64")

# %% [markdown]
# ### Breaking it on purpose
#
# Give the MMA a descriptor that says 64-byte swizzle for A while TMA wrote it with 128-byte swizzle
# — the bug of chapter 04, on Blackwell. Or forget to advance the start address by 32 bytes per
# k-step. Or flip the instruction descriptor's "transpose A" bit. The emulation reads exactly what
# such an MMA would read:

# %%
i = tc.InstrDescriptor("float16", "float16", "float32", 128, 128)
a, b = emulate.random_problem(i, 64, np.random.default_rng(7))
wrong = {
    "A descriptor says 64B swizzle": dict(a_descriptors=lambda c, s, d: d.replace(swizzle="64B")),
    "A start address never advanced": dict(
        a_descriptors=lambda c, s, d: d.replace(start_address=d.start_address - 32 * s)),
    "idesc transpose-A bit flipped": dict(read_idesc=dataclasses.replace(i, a_major="MN")),
}
for what, kw in wrong.items():
    r = emulate.emulate_gemm(a, b, i, 128, **kw)
    assert not r.passed and r.wrong > r.d.size // 2
    print(f"{what:32s}: FAIL, {r.wrong / r.d.size:.0%} of the elements wrong")

# %% [markdown]
# ## 7. The kernel: compiled for sm_100a, disassembled here
#
# The chapter's GEMM (`asynctc.tcgen05`, `kernels/tcgen05.cu`) uses exactly these pieces: a TMA
# producer warp, one MMA-issuing thread, TMEM allocated by one warp, `tcgen05.commit` to an mbarrier,
# four epilogue warps reading their lane quarters. It compiles to an sm_100a cubin on any machine;
# it runs only on a compute-capability-10.0 GPU, which this course's records do not have.

# %% [markdown]
# The MMA-issuing thread's loop — one thread, not a warpgroup: wait until a stage is full, issue its
# `BK/16` MMAs into the accumulator in TMEM, and let `tcgen05.commit` arrive on the stage's *empty*
# barrier once those MMAs have read it (the producer warp waits on that barrier before reusing the
# stage). A last commit tells the epilogue warps that the accumulator is complete:

# %%
from asynctc import tcgen05 as kernels

notebook.show_source("tcgen05.cu", start=r"else if \(warp == 1\)", end=r"tcgen05_commit_multicast<2>\(smem_u32\(&done_bar\)")

# %% [markdown]
# Compiled for sm_100a on this machine (no GPU needed), for one CTA and for a CTA pair. `UTCHMMA` is
# `tcgen05.mma` (`.2CTA` for the pair), `UTCBAR` the commit, `LDTM` the `tcgen05.ld` of the
# epilogue, `UTCATOMSWS` the TMEM allocator; the descriptors the kernels are launched with are the
# ones the models above encode:

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
# On any GPU that is not compute capability 10.0 — an H200 is 9.0 — the package refuses before it
# allocates or launches anything, and says why (here: the reason on this machine):

# %% output varies
try:
    kernels.require_sm100()
    print("an sm_100 GPU is present: `kernels.verify_gemm(cfg)` runs the kernel against float64")
except Exception as e:  # noqa: BLE001  (the refusal is the lesson)
    print(type(e).__name__ + ":", e)

# %% [markdown]
# ## 8. Hopper → Blackwell
#
# The same GEMM, instruction by instruction (SASS names as nvdisasm prints them for sm_90a and
# sm_100a cubins compiled by this course):

# %%
head = ("", "Hopper PTX", "Hopper SASS", "Blackwell PTX", "Blackwell SASS")
rows = [head] + list(tc.MIGRATION)
widths = [max(len(r[c]) for r in rows) for c in range(5)]
for r in rows:
    print(" | ".join(x.ljust(wd) for x, wd in zip(r, widths)))

# %% [markdown]
# **Deep dive:** [09b — a persistent Blackwell GEMM](09b_blackwell_persistent.ipynb): two TMEM
# accumulators (the epilogue overlaps the next tile's MMAs), a cluster-launch-control scheduler,
# CTA pairs with multicast, block-scaled `kind::mxf8f6f4` — its rows of the table above are the last
# four (persistent tiles, scheduler, multicast, block scales).

# %% [markdown]
# Two rows are easy to misread. `wgmma.fence` orders a warpgroup's register accesses to its
# accumulator before the next `wgmma` (PTX ISA, *wgmma.fence*); `tcgen05.mma` takes no register
# operands, so it has no counterpart. `tcgen05.fence::before_thread_sync` and
# `::after_thread_sync` do a different job: they order a thread's tcgen05 operations (MMA, ld, st,
# alloc, …) before or after a thread synchronisation — a barrier, an mbarrier wait — so that the
# sync orders them for other threads too (PTX ISA, *tcgen05.fence*).
#
# What changes in the code: the accumulator is no longer a C++ array but a TMEM address; the MMA
# loop runs in one thread (the others are free for loads or the epilogue); "wait until the MMAs are
# done" becomes an mbarrier that `tcgen05.commit` arrives on — the same phase-parity waits as the
# TMA pipeline of chapter 05; and a CTA pair doubles M without doubling anyone's shared memory.
#
# > **Claims not measured here.** It is often said that Blackwell GEMMs reach **90 %+ of peak**.
# > This course has no sm_100 GPU: that claim is **not measured** here, and no sentence of this
# > chapter depends on it. A planned chapter 10 will set such claims beside what was measured.
#
# ## Exercises
#
# **1.** How many TMEM columns must `tcgen05.alloc` request for a 128×96 fp32 accumulator (one CTA)?

# %%
answer = ...
ok = exercises.check("ch09.tmem_columns", answer, m=128, n=96)

# %% [markdown]
# **2.** Which TMEM lanes (first, last) may warp 6 of a CTA read with `tcgen05.ld`? Answer a pair.

# %%
answer = ...
ok = exercises.check("ch09.lane_quarter", answer, warp=6)

# %% [markdown]
# **3.** This tcgen05 descriptor should describe k-step 1 of B — 256×64 bf16, K-major, 128-byte
# swizzle, stored at shared address 0x8000. One field is wrong: which? (Answer a field name of
# `Tcgen05Descriptor`: start_address, lbo, sbo, swizzle, base_offset, lbo_mode, version.)

# %%
value = tc.exercise_descriptor()          # one field of it is wrong
print(f"{value:#018x}")
answer = ...
ok = exercises.check("ch09.fix_descriptor", answer, value=value)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch09.tmem_columns", 128, m=128, n=96, solution=True)  # lane = row; 96 columns → 2^k ≥ 32
exercises.check("ch09.lane_quarter", (64, 95), warp=6, solution=True)  # 32·(6 mod 4) … +31
got = tc.Tcgen05Descriptor.decode(value)
good = tc.Tcgen05Descriptor.from_operand_tile(descriptors.OperandTile(256, 64, "bfloat16", "K", 128),
                                              1, 0x8000)
print(got, good, sep="\n")
ok = exercises.check("ch09.fix_descriptor", "sbo", value=value, solution=True)  # 128 B; 1024 is right
