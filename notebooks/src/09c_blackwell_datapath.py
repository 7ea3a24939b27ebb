# %% [markdown]
# # 09c — Deep dive: where the accumulator lands, and one tile through the data path
#
# ← back to the core lesson [09_blackwell](09_blackwell.ipynb)
#
# **Assumes** chapter 09: TMEM (128 lanes × 512 columns per SM, lane quarters per warp), the instruction and sm_100 descriptors.
#
# **What it adds:**
# - §1 the descriptors' refusals
# - §2 where D[i, j] lands in TMEM (M = 64, 128, 256; CTA pairs); `tcgen05.ld`'s cells
# - §3 one tile **emulated**, TMA swizzle → MMA → TMEM → registers, against float64
# - §4 the kernel refusing a GPU it cannot run on
# - §5 the core lesson's kernel, its SASS counted class by class
# - §6 Hopper → Blackwell, concept by concept (chapter 09 §6)
# - Exercise (end)
#
# A model of the hardware, not a run on it.

# %% output varies
import dataclasses

import numpy as np
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook
from asynctc.models import descriptors, emulate, tmem
from asynctc.models import tcgen05 as tc

notebook.banner("sm_100a", measured=False)

# %% [markdown]
# ## 1. The descriptors refuse bad values
#
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
# A wgmma descriptor and a tcgen05 descriptor of the same tile differ in bit 46 (chapter 09 §3), so
# each decoder rejects the other's values — a descriptor built for the wrong generation fails in
# Python, with the reason:

# %%
tile = descriptors.OperandTile(128, 64, "float16", "K", 128)
w = tile.descriptor(step=1, base_address=0x2000)
t = tc.Tcgen05Descriptor.from_operand_tile(tile, step=1, base_address=0x2000)
for decode, value in ((tc.Tcgen05Descriptor.decode, w.encode()),
                      (descriptors.WgmmaDescriptor.decode, t.encode())):
    try:
        decode(value)
    except descriptors.DescriptorError as e:
        print("DescriptorError:", e, "\n")

# %% [markdown]
# Every swizzle mode and major-ness: the tcgen05 descriptor of a tile is the wgmma one with bit 46
# set.

# %%
for sw in (0, 32, 64, 128):
    for mj in ("K", "MN"):
        tt = descriptors.OperandTile(64, 64, "bfloat16", mj, sw)
        for s in range(tt.k_steps):
            assert tc.Tcgen05Descriptor.from_operand_tile(tt, s).encode() == \
                tt.descriptor(s).encode() | 1 << 46
print("every swizzle mode and major-ness: tcgen05 = wgmma | 1 << 46:", True)

# %% [markdown]
# ## 2. Where the accumulator lands
#
# The "data path layout" figures of the PTX ISA (§9.7.16, *Data path layout organization*) say where
# row i, column j of D goes; the ISA names them **Layout A, B, D, F**, one per (M, `cta_group`).
# With one CTA and M = 128 (Layout D) row i is lane i. With M = 64 (Layout F) only lanes 0–15 of
# each warp's quarter are used. A CTA pair splits the MMA: each CTA
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
# ## 3. One tile through the whole data path — emulated, not run
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
# ## 4. The kernel refuses a GPU it cannot run on
#
# On any GPU that is not compute capability 10.0 — an H200 is 9.0 — chapter 09's kernel package
# refuses before it allocates or launches anything, and says why (here: the reason on this machine):

# %% output varies
from asynctc import tcgen05 as kernels

try:
    kernels.require_sm100()
    print("an sm_100 GPU is present: `kernels.verify_gemm(cfg)` runs the kernel against float64")
except Exception as e:  # noqa: BLE001  (the refusal is the lesson)
    print(type(e).__name__ + ":", e)

# %% [markdown]
# ## 5. The core lesson's kernel, counted in the SASS
#
# Chapter 09's GEMM compiled for one CTA and for a CTA pair, then counted in the SASS: instructions
# in the binary, not executions (a loop's body counts once).
#
# | SASS | PTX | count |
# |---|---|---|
# | `UTCHMMA` (`.2CTA`: pair) | `tcgen05.mma` | BK/16, unrolled |
# | `UTCBAR` | `tcgen05.commit` | a stage freed; D complete |
# | `LDTM` | `tcgen05.ld` | one, in the epilogue's loop |
# | `UTCATOMSWS` | `tcgen05.alloc` / `dealloc` | `FIND_AND_SET`: alloc, a retry loop; `AND`: dealloc |
# | `UTMALDG` | TMA load | A and B |
# | `SYNCS` | mbarrier ([03b §3](03b_tma_boxes.ipynb)) | `EXCH`: init, 2 per stage + done; `ARRIVE`; `PHASECHK`: waits, several per call |
# | `UCGABAR` | `barrier.cluster` | the pair's build only |

# %% output varies
for cfg in (kernels.GemmConfig("float16", 128, 256, 64, 4, 1), kernels.GemmConfig("float16", 256, 256, 64, 4, 2)):
    sm = kernels.sass_summary(cfg)
    print(f"{cfg.label():40s}", ", ".join(f"{k} {sm[k]}" for k in
                                           ("UTCHMMA", "UTCBAR", "LDTM", "UTCATOMSWS", "UTMALDG", "SYNCS", "UCGABAR")))
    parts = {cls: kernels.sass_parts(sm, cls) for cls in ("UTCATOMSWS", "SYNCS")}
    print(" " * 40, "; ".join(f"{c}: " + ", ".join(f"{k} {v}" for k, v in p.items()) for c, p in parts.items()))
    assert (sm["UTCHMMA"], sm["UTCBAR"], sm["UTMALDG"], sm["LDTM"]) == (cfg.bk // 16, 2, 2, 1)  # table
    assert parts["SYNCS"]["EXCH"] == 2 * cfg.stages + 1 and sm["spill_bytes"] == 0

# %% [markdown]
# ## 6. Hopper → Blackwell, concept by concept
#
# The same GEMM: Hopper's PTX, then Blackwell's, each with its SASS.

# %%
print(tc.migration_text(slice(tc.MIGRATION_CORE_ROWS)))

# %% [markdown]
# ## Exercise
#
# **1.** Which TMEM lanes (first, last) may warp 6 of a CTA read with `tcgen05.ld`? Answer a pair.

# %%
answer = ...
ok = exercises.check("ch09.lane_quarter", answer, warp=6)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
ok = exercises.check("ch09.lane_quarter", (64, 95), warp=6, solution=True)  # 32·(6 mod 4) … +31
