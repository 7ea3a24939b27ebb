# %% [markdown]
# # 01 — The synchronous model: SIMT tiles, then `ldmatrix` + `mma.sync`
#
# **In plain words.** Here the threads do everything themselves. They copy a slice of A and B into
# shared memory, wait until everyone is done, then multiply it on the Tensor Cores. While they copy,
# the Tensor Cores idle.
#
# **Where we are.** Chapter 00 suspected that threads which move their own operands cannot keep
# the Tensor Cores fed. This chapter builds the best such GEMM.
#
# **Learning goal.** Measure the *synchronous* way to use Tensor Cores; find what limits it.
#
# **The synchronous model.** Threads copy tiles global → registers → shared memory, then wait at
# `__syncthreads()`. Each warp then loads its [*fragments*](../docs/glossary.md#fragment) with
# [**`ldmatrix`**](../docs/glossary.md#ldmatrix), a warp-wide load from shared memory. A fragment
# is the warp's share of a tile, in its 32 lanes' registers. The warp multiplies them with
# **`mma.sync`**, Ampere's warp-wide Tensor Core instruction. First, for scale, a
# [**SIMT**](../docs/glossary.md#simt) GEMM (single instruction, multiple threads: a warp's 32
# threads run each scalar instruction together, on their own data).
#
# Deep dive: [01b — inside the synchronous kernel](01b_synchronous_anatomy.ipynb).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc import mma_sync, simt
from asynctc.core import bench, exercises, notebook, plots, records, runtime, sass, worklog

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. A SIMT tiled GEMM, in Python
#
# Each thread computes one element of C. A 16×16 block of threads stages a 16×16 tile of A and of
# B in shared memory. `cuda.syncthreads()` keeps any thread from reading a tile before it is
# complete, or overwriting it while it is read.
#
# Every multiply-add is one **FFMA**, SASS's fused fp32 multiply-add. It runs on one **CUDA
# core**: one of the SM's scalar fp32 lanes, not a Tensor Core.

# %%
import inspect
print(inspect.getsource(simt._kernel).split("@cuda.jit", 1)[1].split("return simt_gemm_kernel")[0])

# %% [markdown]
# The test is small and odd-sized, to exercise the edges. Without a GPU, numba's
# simulator runs it.

# %%
rng = np.random.default_rng()
a = rng.standard_normal((40, 36), dtype=np.float32)
b = rng.standard_normal((36, 50), dtype=np.float32)
c = simt.simt_gemm(a, b)
ref = a.astype(np.float64) @ b.astype(np.float64)
err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
assert np.isfinite(c).all() and err < 1e-5, err
print("SIMT GEMM 40×50×36 (fp32) matches float64 to < 1e-5:", err < 1e-5)

# %% [markdown]
# ## 2. The tuned synchronous Tensor Core GEMM
#
# ### What one `mma.sync.m16n8k16` does
#
# A whole warp issues it together. It multiplies a 16×16 tile of A (fp16 or bf16) by a 16×8 tile
# of B, and adds the product into a 16×8 fp32 tile of C.
#
# No lane has a whole tile. Each lane keeps a **fragment**: a fixed few elements of each operand,
# in its own registers. The PTX ISA fixes the pattern, and `ldmatrix` loads from shared memory in
# exactly that pattern (PTX ISA, *Matrix Fragments for mma.m16n8k16*).
#
# Going further: [01b §1](01b_synchronous_anatomy.ipynb) pictures which lane has each element of
# A, B and C, and lets you pick a lane.

# %% [markdown]
# ### The kernel
#
# The kernel (`asynctc/kernels/mma_sync.cu`) and its data path, all by the threads (`LDSM`
# is `ldmatrix`, `HMMA` is `mma.sync`):
#
# ```
# global ──LDG.128──▶ registers ──STS.128──▶ shared (swizzled) ──LDSM──▶ fragments ──HMMA──▶ fp32 acc
#                     └─ next k-tile, issued before this k-tile's math ─┘        __syncthreads()
# ```
#
# Each CTA computes a 128×128 tile of C. Each of its warps computes a 64×64 **warp tile**,
# pictured below.
#
# The loop walks K in [**k-tiles**](../docs/glossary.md#k-tile): 64-deep slices of A and B that a
# CTA holds in shared memory at a time. `LDG.128` and `STS.128` are a thread's 16-byte load from global
# memory and its store to shared memory.
#
# The shared tiles are [**swizzled**](../docs/glossary.md#swizzle): their chunks sit at
# XOR-permuted places. So the lanes of one `ldmatrix` spread over the banks instead of queueing
# on one: a [bank conflict](../docs/glossary.md#bank-conflict).
#
# Two shared buffers (`buf`) mean one barrier per k-tile. One loop step:
#
# 1. Load the *next* k-tile into registers (`load_global`).
# 2. Run this k-tile's math (`mma_ktile`) one **k16 step** at a time, 16 deep along K. Each step
#    loads fragments with `ldmatrix`, then issues one `mma.sync` per 16×8 tile of the warp's C.
#    The right panel shows them.
# 3. Store the registers into the other buffer (`store_shared`).

# %%
fig = mma_sync.plot_tile_hierarchy(mma_sync.DEFAULT_TILE)

# %%
ck = mma_sync.compile_mma_sync("float16")
notebook.show_source(ck, start=r"for \(int kt = 0; kt < KT", end=r"^  }$", ptx_last=True,
                     ptx=("ldmatrix_x4", "ldmatrix_x4_trans", "mma_sync_m16n8k16"),
                     more=(("gemm_tile.cuh", r"^__device__ __forceinline__ void load_fragments", r"^}"),
                           ("gemm_tile.cuh", r"^template <bool kLoad = true>", r"^}")))

# %% [markdown]
# ### SASS: what the GPU will execute
#
# NVRTC compiled the kernel to a [**cubin**](../docs/glossary.md#cubin): the binary for one GPU
# architecture, here sm_90a. Its `HMMA` carries the shape, `.16816.F32`; `LDSM` is plain `.M88`
# or transposed `.MT88`. `LDG`/`STG` load and store global memory, `STS` stores to
# shared memory, `BAR` is `__syncthreads`. `LDL` would load local memory, a spilled register; the
# table leaves out a class with no instruction, and here there is none:

# %% output varies
text = ck.sass()
classes = {k: sass.CLASSES[k] for k in ("HMMA", "LDSM", "LDG", "STS", "BAR", "STG", "LDL")}
print(notebook.sass_table(ck, classes))   # notebook.how(notebook.sass_table) prints its code
print("\n" + sass.excerpt(text, r"HMMA\.16816", context=0, limit=4))
counts = sass.class_counts(text)
assert counts["HMMA"] > 0 and counts["LDSM"] > 0, counts
assert ck.resources.spill_stores == 0, "the tuned tile must not spill"

# %% [markdown]
# ## 3. Correctness first
#
# Tiles are named `BMxBNxBK/wWMxWN`: the CTA tile, then the warp tile. `/2cta` caps the registers
# so that two CTAs fit on an SM. Each check draws fresh random inputs. It fills the output with
# NaN, so an unwritten element fails. It compares every element with `float64`, against an
# [elementwise bound](../docs/glossary.md#elementwise-bound). A failing kernel is not timed.

# %% output varies
rec = records.load_or_measure("mma_sync", mma_sync.measure_mma_sync)
checks = rec.results["checks"]
shown = [c for c in checks if c["tile"] == mma_sync.DEFAULT_TILE.name and c["dtype"] == "float16"]
for c in shown:
    print(f"{c['dtype']:8s} M,N,K={str(tuple(c['shape'])):18s} tile {c['tile']:24s} "
          f"max |C−ref|/(|A|·|B|) {c['max_err']:.1e} (tol {c['tol']:.1e})  {'passed' if c['passed'] else 'FAILED'}")
assert checks and all(c["passed"] for c in checks)
print(f"and {len(checks) - len(shown)} more checks (bfloat16, the other tiles): all passed")

# %% [markdown]
# ## 4. Measured: the synchronous kernel beside cuBLAS and beside `mma.sync`'s own ceiling
#
# One run timed cuBLAS (`wgmma` and TMA on Hopper), our GEMM's five tiles, a ceiling kernel and,
# for scale, the SIMT GEMM. The figure shows our **mma.sync GEMM**'s best tile per
# size; the first printed line, all five. The **`mma.sync` ceiling** is a register-only kernel that
# issues `mma.sync` back to back, at the GEMM's **occupancy** (warps resident per SM). The
# chapter's goal is half of cuBLAS at 4096³.
#
# **Predict before you run the cell.** Our kernel uses the same Tensor Cores as cuBLAS. What
# fraction of cuBLAS does it reach at 4096³: below 0.3, 0.3–0.6, or above 0.6?

# %% output answers a prediction
fig = mma_sync.plot_vs_cublas(rec, mma_sync.DEFAULT_TILE)
plt.show()
at = {x.get("tile") or x["kernel"]: x["tflops"] for x in rec.results["sweep"]
      if (x["size"], x["dtype"]) == (4096, "float16")}          # the record's 4096³ fp16 rows
print("4096³ fp16, TFLOP/s:", ", ".join(f"{k} {v:.0f}" for k, v in at.items()), "\n")
if caveat := bench.clock_caveat(bench.rows_clock_kind([x for x in rec.results["sweep"] if x["dtype"] == "float16"])):
    print("GEMM sweep: " + caveat)                              # none for a clock read while the GEMMs ran
simt_ms = next(x["median_ms"] for x in rec.results["simt"] if x["size"] == 1024)
simt_tf = 2 * 1024**3 / (simt_ms * 1e-3) / 1e12                # 2·n³ FLOP / seconds, in TFLOP/s
sync_tf = max(x["tflops"] for x in mma_sync.best_mma_rows(rec.results, "float16") if x["size"] == 1024)
print(f"1024³: SIMT GEMM (fp32 FFMA) 2·1024³ / {simt_ms:.3f} ms = {simt_tf:.1f} TFLOP/s; "
      f"mma.sync GEMM {sync_tf:.0f} ({notebook.ratio(sync_tf, simt_tf, digits=0)}×)")
ours, cublas = at[mma_sync.DEFAULT_TILE.name], at["cuBLAS"]    # 4096³ fp16, both timed in this one run
frac = ours / cublas
head = f"4096³ fp16, default tile: {notebook.ratio(ours, cublas, 'TFLOP/s')} of cuBLAS"
_ = notebook.verdict(frac >= 0.5, f"{head}: the goal, 0.50, reached.", f"{head}: short of the goal, 0.50 (§5 says why).")

# %% [markdown]
# ## 5. Why the number is what it is
#
# The table takes the kernel apart at 4096³. Each **ablation** row removes work: timed, not
# checked.
#
# **Predict before you run the cell.** Which single removal gains more: the global → shared copy,
# or `ldmatrix`?

# %% output answers a prediction
print(mma_sync.why_table(rec), end="\n\n")   # notebook.how(mma_sync.why_table) prints its code

# %% answer [markdown]
# Two limits show.
#
# * **The warps stall on their own copy.** Of the two single removals, the global → shared copy
#   gains more than `ldmatrix`. On Hopper the [L1 cache](../docs/glossary.md#l1-cache) and shared memory are one unit with one data path, so a global load passes
#   through it too. Each operand byte crosses that path three times: into registers, into shared
#   memory, out through `ldmatrix`. The warps wait for it at `__syncthreads`.
# * **`mma.sync` has its own cap.** With no memory traffic, it reaches about 0.65 of the
#   [peak](../docs/glossary.md#peak). Four times the ceiling row's warps per SM gain a few percent
#   at most. NVIDIA does not say where the cap comes from. The full rate needs `wgmma` (chapter 04).
#
# Without the copy, the kernel would pass the goal (half of cuBLAS).

# %% output answers a prediction
abl = {r["variant"]: r["tflops"] for r in rec.results["ablation"]}     # 4096³ fp16, TFLOP/s
full, no_copy, no_ldsm = abl["full kernel"], abl["no global→shared copy"], abl["no ldmatrix"]
occ = {r["warps_per_cta"] * r["ctas_per_sm"]: r for r in rec.results["peak"] if r["dtype"] == "float16"}
w, most = mma_sync.DEFAULT_TILE.warps * mma_sync.DEFAULT_TILE.min_blocks, max(occ)
ceil, peak = occ[w]["tflops"], mma_sync.peak_tflops(rec.provenance["sm_count"], occ[w]["sm_mhz"])
print(f"§4's sweep → ablation: ours {ours:.0f} → {full:.0f}, cuBLAS {cublas:.0f} → {abl['cuBLAS']:.0f}")
card = bench.measured_clock_mhz([x for x in rec.results["sweep"] if x["dtype"] == "float16"])
print(f"ceiling / peak at {occ[w]['sm_mhz']:.0f} MHz ({bench.clock_kind(occ[w])}; 00's card: {card:.0f} MHz):", notebook.ratio(ceil, peak))
print(f"ceiling, {w} → {most} warps/SM:", notebook.ratio(occ[most]["tflops"], ceil))
gain_copy, gain_ldsm = no_copy / full, no_ldsm / full   # × ours, each single removal
print(f"minus the copy {gain_copy:.2f}×, minus ldmatrix {gain_ldsm:.2f}×: the larger single gain is",
      "the copy" if gain_copy > gain_ldsm else "ldmatrix")
goal = abl["cuBLAS"] / 2                                 # half of cuBLAS, TFLOP/s
print(f"without the copy {no_copy:.0f} TFLOP/s:", "past" if no_copy >= goal else "short of", f"the goal, {goal:.0f}")

# %% check
full0, copy0, ldsm0, skeleton = (abl[k] for k in ("full kernel", "no global→shared copy", "no ldmatrix",
                                                   "mma.sync + __syncthreads only"))   # the record's rows
notebook.require(abs(full0 / ours - 1) <= 0.05 and abs(abl["cuBLAS"] / cublas - 1) <= 0.05,
                 "§4's sweep and §5's ablation time the same kernels within 5 % (two timings of one live run)",
                 sweep=ours, ablation=full0, cublas_sweep=cublas, cublas_ablation=abl["cuBLAS"])
notebook.require(1.45 <= copy0 / full0 <= 1.75 and copy0 > ldsm0,
                 "without the copy the kernel is about 1.6× as fast, the larger single gain",
                 full=full0, no_copy=copy0, no_ldmatrix=ldsm0)
notebook.require(0.58 <= ceil / peak <= 0.72, "mma.sync alone reaches about 0.65 of the peak",
                 ceiling=ceil, peak=peak)
notebook.require(most >= 4 * w and 0.99 <= occ[most]["tflops"] / ceil <= 1.05,
                 f"{most // w}× the table's warps per SM gain a few percent at most",
                 by_warps_per_sm=str({k: r["tflops"] for k, r in occ.items()}))
notebook.require(copy0 / abl["cuBLAS"] >= 0.5,
                 "without the copy, the kernel would pass the goal, half of cuBLAS",
                 no_copy=copy0 / abl["cuBLAS"])
notebook.require(skeleton < ceil and full0 < skeleton,
                 "mma.sync + barriers is below the ceiling, our GEMM below both",
                 skeleton=skeleton, ceiling=ceil, ours=full0)
notebook.require(1.0 <= skeleton / copy0 <= 1.1, "removing both gains only a few percent more than the copy alone",
                 skeleton=skeleton, no_copy=copy0)

# %% [markdown]
# **Try it:** in the table's cell (two cells up, the one that prints the table), add the line
# `no_ldsm = 600` right under the line `full, no_copy, no_ldsm = …` (a kernel whose `ldmatrix`
# costs more) and rerun that cell. Predict first: which gain is larger?

# %% [markdown]
# **So:** the warps idle through every load. Chapter 02 runs the copy during the math, 03 takes
# it from the threads, and 04 removes `ldmatrix`. Going further: [01b §4](01b_synchronous_anatomy.ipynb) times every variant.
#
# <details><summary>About these numbers</summary>
#
# The peak line in §4's figure uses the SM clock read
# [in flight](../docs/glossary.md#in-flight) during its sweep, like 00's card. The ceiling's peak
# uses the clock its kernel read [in the kernel](../docs/glossary.md#in-kernel). The GPU picks a
# clock per workload; the `ceiling / peak` line prints both.
#
# </details>

# %% [markdown]
# **Play** (ungraded, no GPU needed). Type in a new cell:
#
# * `mma_sync.plot_tile_hierarchy(mma_sync.TILES[4])`: a narrower warp tile. How many `mma.sync` per
#   k16 step now? Find its TFLOP/s in `at`.
# * `sass.class_counts(mma_sync.compile_mma_sync("bfloat16").sass())`: does bf16 change the mix?
# * `simt.simt_gemm(a[:7], b)`: other odd shapes; compare with `a[:7] @ b` as §1 does.
#
# On a GPU, `python -m asynctc record mma_sync --no-save` reruns §4's sweep in about 52 s.
# Compare its 4096³ float16 line with `at`.

# %% [markdown]
# ## Exercises
#
# Wrong answers get a hint.
#
# **1. Two rows per thread.** Complete `two_rows`, §1's kernel with two elements of C per thread,
# in one column, so a 16×16 block covers 32 rows. Which row is `row2`? What does the inner loop add
# to `acc` and `acc2`? One read of `sB` must serve both. The check runs it on odd sizes against float64.

# %%
cuda = simt.numba_cuda()                 # numba.cuda (its simulator where there is no GPU)
from numba import float32
TILE = simt.TILE                         # 16
ROWS = 2 * TILE                          # rows of A a block stages (a GPU wants shapes as constants)


@cuda.jit
def two_rows(A, B, C):
    sA = cuda.shared.array((ROWS, TILE), float32)      # 2·TILE rows of A
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * 2 * TILE + ty
    row2 = ...                # your code
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc, acc2 = float32(0.0), float32(0.0)
    for k0 in range(0, K, TILE):
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        sA[ty + TILE, tx] = A[row2, k0 + tx] if row2 < M and k0 + tx < K else float32(0.0)
        sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
        cuda.syncthreads()
        for kk in range(TILE):
            ...                     # your code
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc
    if row2 < M and col < N:
        C[row2, col] = acc2


ok = exercises.check("ch01.two_rows", two_rows)

# %% [markdown]
# **2.** Section 2's SASS showed 128 `HMMA` for the default tile. That is one k-tile's count too:
# the loop's body is one k-tile, not unrolled. Predict how many `mma.sync.m16n8k16`
# one warp issues per k-tile with the tile `128x128x32/w64x32/2cta`, which the cell prints; §3
# reads the name. The solution counts `HMMA` in that kernel's SASS.

# %%
t = mma_sync.TILES[3]
print(t.name)                 # BMxBNxBK/wWMxWN/2cta, as §3 reads it
answer = ...
ok = exercises.check("ch01.hmma_per_ktile", answer, wm=t.wm, wn=t.wn, bk=t.bk, bm=t.bm, bn=t.bn)

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %% output varies
cuda = simt.numba_cuda()
from numba import float32
TILE = simt.TILE
ROWS = 2 * TILE                          # a constant: numba on a GPU wants shapes as constants


@cuda.jit
def two_rows(A, B, C):
    """C = A @ B, fp32. Each thread computes C[row, col] and C[row2, col]."""
    sA = cuda.shared.array((ROWS, TILE), float32)      # 2·TILE rows of A
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * 2 * TILE + ty
    row2 = row + TILE
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc, acc2 = float32(0.0), float32(0.0)
    for k0 in range(0, K, TILE):
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        sA[ty + TILE, tx] = A[row2, k0 + tx] if row2 < M and k0 + tx < K else float32(0.0)
        sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
        cuda.syncthreads()
        for kk in range(TILE):
            b = sB[kk, tx]              # one read of sB ...
            acc += sA[ty, kk] * b       # ... feeds two FFMAs
            acc2 += sA[ty + TILE, kk] * b
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc
    if row2 < M and col < N:
        C[row2, col] = acc2


exercises.check("ch01.two_rows", two_rows, solution=True)
t = mma_sync.TILES[3]                     # 128x128x32/w64x32/2cta
ck = mma_sync.compile_mma_sync("float16", t)
pred = (t.wm // 16) * (t.wn // 8) * (t.bk // 16)
exercises.check("ch01.hmma_per_ktile", pred, wm=t.wm, wn=t.wn, bk=t.bk, solution=True)
print("prediction matches the SASS HMMA count:", pred == sass.class_counts(ck.sass())["HMMA"])

# %% [markdown]
# ## Worklog
#
# One GEMM, 4096³ fp16, from here to chapter 06, as a fraction of cuBLAS. Each chapter ends on
# an entry like this.

# %% output answers a prediction
worklog.show("01")

# %% [markdown]
# **What you learned.** The synchronous data path, its SASS, and why it stays below cuBLAS.
# **Next:** [chapter 02](02_cp_async.ipynb).
