# %% [markdown]
# # 07c — Deep dive: swizzle, TMA boxes and wgmma
#
# ← back to the core lesson [07_fp8_precision](07_fp8_precision.ipynb)
#
# **Assumes** the swizzle modes as bank maps (chapters 03, 04) and chapter 06's warp-specialized GEMM.
#
# The [seed article](../docs/glossary.md#seed-article) (the public tutorial this course checks) says the right swizzle is worth 10–20 %.
# Chapter 07 gives the headline number; here is where the loss comes from.
#
# **What it adds:**
# - §1 four swizzles counted by Nsight Compute (bank-conflict counters read 0: why); predictions beside measurements
# - §2 row-box variants: the number of TMA boxes, apart from the layout
# - §3 wgmma-only variants (`tma_once`): TMA taken out
# - §4 tile, stages, register budget: the other half of the seed's "layout" advice

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import notebook, records
from asynctc import fp8
from asynctc import swizzle as SW

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Four swizzles, counted
#
# The `swizzle` suite (`asynctc.swizzle`, `tools/gpu_swizzle.py`) builds chapter 06's rung 5 (fp16)
# with 128-, 64- and 32-byte swizzle and none — boxes, tensor maps, descriptors and k-step offsets
# all from one layout model — checks each against float64, reads Nsight Compute's shared-memory
# counters (one launch per variant, at one size) and times it beside cuBLAS. Before the run, the
# model predicted (`asynctc.swizzle.PREDICTION`): no variant has bank conflicts under wgmma;
# narrower swizzles cost only through TMA's narrower boxes. The bank model finds every layout
# conflict-free, for wgmma's reads and TMA's writes alike (unswizzled, each core matrix is 128
# contiguous bytes: [chapter 04](04_wgmma.ipynb) §3); but it is a model, since how wgmma reads
# shared memory is not documented. The same run also holds the row-box variants of section 2; this
# section reads the four swizzles.

# %% output varies
try:
    srec = records.load("swizzle")
except records.RecordError:
    srec = None
if srec is None:
    print("not measured yet: there is no swizzle record in data/ (the swizzle suite has not run "
          "on a GPU), so the seed's 10–20 % is neither confirmed nor refuted here.")
else:
    print(srec.label())
    print(SW.summarize_swizzle(srec, row_boxes=False))
    tab = [r for r in SW.swizzle_table(srec.results) if r["row_boxes"] == 1]   # the four swizzles
    by = {(r["size"], r["swizzle"]): r for r in tab}
    sizes = sorted({r["size"] for r in tab})
    of = {sw: [by[(sz, sw)]["of_128"] for sz in sizes if (sz, sw) in by] for sw in (64, 32, 0)}
    nrows = SW.ncu_rows(srec.results)
    has_row_boxes = any(r["row_boxes"] > 1 for r in SW.swizzle_table(srec.results))
    if nrows:
        reads = [r["bank_reads"] for r in nrows]
        blind = all(r["sass_lsu_shared"] == 0 and r["lsu_instructions"] == 0 for r in nrows)
        where = f"{nrows[0]['size']}³" if nrows[0]["size"] else "the size profiled"
        notebook.claim(blind and all(r["lsu_conflicts"] == 0 for r in nrows)
                       and max(reads) <= 1.02 * min(reads),
                       "Nsight Compute's LSU bank-conflict counters read 0 in every variant, but they are "
                       "blind here: the cubins hold no LDS/STS/LDSM/STSM (`SW.shared_lsu_instructions`, the "
                       "SASS LSU column) and the LSU pipe executed no shared-memory instruction — wgmma's "
                       "operand reads and TMA's writes do not pass through it. The evidence that is real: "
                       "the shared-memory bank reads, which count wgmma's and TMA's accesses too, are equal "
                       f"across all {len(nrows)} variants profiled — the four above and the row-box and "
                       f"wgmma-only variants below — (largest / smallest − 1 = "
                       f"{max(reads) / min(reads) - 1:.0e}) at {where}, as "
                       "the model predicts (the model assumes wgmma serves each 8-row × 16-byte core matrix "
                       "in one pass in every layout).", bank_reads=reads)
    nb = {r["swizzle"]: r for r in (nrows or []) if r["row_boxes"] == 1}
    if all(sw in nb and nb[sw]["tma_bytes"] and nb[sw]["duration_us"] for sw in (128, 64, 32, 0)):
        b128, t128 = nb[128]["tma_bytes"], nb[128]["duration_us"]
        notebook.claim(nb[0]["tma_bytes"] >= 1.9 * b128 and nb[32]["tma_bytes"] == b128
                       and nb[32]["duration_us"] > 1.3 * t128,
                       "Nsight Compute's TMA counter separates two causes. With no swizzle the boxes are "
                       "16 bytes wide and TMA reads "
                       f"{nb[0]['tma_bytes'] / b128:.1f}× the global bytes of the 128-byte variant "
                       "(half of every 32-byte sector unused); with a 32-byte swizzle it reads exactly "
                       f"the same bytes, yet the profiled launch takes {nb[32]['duration_us'] / t128:.2f}× "
                       f"as long (64-byte: {nb[64]['duration_us'] / t128:.2f}×). So for 32 bytes the cost "
                       "is not bytes. What is left changes three things at once: 4× the TMA box "
                       "operations per stage, 4× the row requests (of 32 bytes instead of 128), and the "
                       "layout wgmma reads"
                       + (" — section 2 takes the first apart from the other two." if has_row_boxes
                          else " — this record cannot tell them apart."),
                       tma_bytes={sw: nb[sw]["tma_bytes"] for sw in nb},
                       duration_us={sw: nb[sw]["duration_us"] for sw in nb})
    notebook.claim(max(of[64]) < 1.0 and min(of[32]) < 0.7 and max(of[0]) < min(of[32]),
                   f"Throughput, as a fraction of the 128-byte variant: 64-byte swizzle "
                   f"{min(of[64]):.2f}–{max(of[64]):.2f}, 32-byte {min(of[32]):.2f}–{max(of[32]):.2f}, "
                   f"none {min(of[0]):.2f}–{max(of[0]):.2f}.")
    outside = [r for r in tab if r["inside"] is False]
    notebook.verdict(not outside,
                     "Every swizzle variant landed inside the range predicted before the run.",
                     f"{len(outside)} of {len(tab)} swizzle measurements ({len(tab) // len(sizes)} "
                     f"variants × {len(sizes)} sizes) landed outside the range frozen before the run (asynctc.swizzle.PREDICTION, marked '!'): the model predicted no "
                     "conflicts — nothing measured contradicts it (equal bank reads) — and put the cost "
                     "of narrower swizzles in TMA's narrower boxes, which it underestimated badly for "
                     "32 bytes and none.")
    gain = 1 / max(of[64]) - 1
    notebook.verdict(0.10 <= gain <= 0.20,
                     f"So the seed's 10–20 % holds against the next-best mode: 128-byte over 64-byte "
                     f"swizzle is worth {gain:.0%} here.",
                     f"So the seed's 10–20 % is not what we measured: 128-byte over 64-byte swizzle is "
                     f"worth {gain:.0%}; the 128-byte swizzle runs {1 / max(of[32]):.2f}× as fast as the "
                     f"32-byte one and {1 / max(of[0]):.2f}× as fast as no swizzle — and nothing measured "
                     "points to bank conflicts as the cause (the LSU counters cannot see this kernel's "
                     "accesses; the bank reads are equal).")

# %% [markdown]
# The same four swizzles for **FP8** (e4m3, K-major, one CTA per cluster, C stored from registers),
# each checked against float64 first, beside the FP16 top rung in one run (record `fp8_swizzle`;
# the seed article suggests 64 or 32 bytes may suit FP8 better):

# %% output varies
fsw = records.load("fp8_swizzle")
print("\n".join(fp8.summarize_fp8_swizzle(fsw).splitlines()[:-1]))   # the table, less the prediction's text
best_narrow = max(t["of_128"] for t in fsw.results["table"] if t["swizzle"] != 128)
_ = notebook.verdict(best_narrow > 1.0,
                 f"For FP8 a narrower swizzle beat 128 bytes: {best_narrow:.2f} of it at best.",
                 f"For FP8 too, 128 bytes is fastest: the next-best mode keeps {best_narrow:.2f} of "
                 "it — the same order as FP16's.")

# %% [markdown]
# ## 2. Is it the number of TMA boxes?
#
# A narrower swizzle changes two things at once. The **layout**: rows of 64, 32 or 16 bytes in
# shared memory, which TMA writes as that many narrower row requests and wgmma reads through its
# descriptors. And the **number of boxes**: one `cp.async.bulk.tensor` per box, 2, 4, 8, 16 per
# stage (A and B), all issued by one producer thread. To take the second alone, the suite also
# loads the *128-byte* layout as **R boxes along the rows** (`WSConfig.row_boxes`, R = 2, 4, 8, 16:
# A as R boxes of 128/R rows, B of 256/R): each box lands where its rows belong, so the stage in
# shared memory is the same byte for byte (`SW.stage_dry_run` compares the images), the
# descriptors and wgmmas are unchanged, and the cubins differ only in the producer's 2R TMA loads.
# At R = 4 the producer issues as many boxes per stage as the 32-byte variant, at R = 8 as many as
# no swizzle — with 384 row requests of 128 bytes each instead of 1536 of 32 or 3072 of 16. The
# prediction, made before the run (the cell recomputes its table from the model):

# %%
print(SW.PREDICTION_ROW_BOXES)
assert SW.row_box_markdown() in SW.PREDICTION_ROW_BOXES

# %% [markdown]
# What the run measured: each row-box variant beside the swizzle variant that issues as many TMA
# loads per stage, as a fraction of the one-box 128-byte variant at both sizes, and Nsight
# Compute's profiled launch (µs, and its ratio to 128 B ×1):

# %% output varies
boxes = SW.box_count_rows(srec.results) if srec is not None else []
if not boxes:
    print("not measured yet: this swizzle record was made before the row-box variants "
          "(tools/gpu_swizzle.py adds them)")
else:
    print(srec.label())
    print(SW.box_count_text(srec.results))
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=80, layout="constrained")
    for side, colour, what in (("swizzle", "tab:red", "narrower swizzle, one box along the rows"),
                               ("row_box", "tab:blue", "128-byte swizzle, R boxes along the rows")):
        es = [(r["loads"], r[side]) for r in boxes if r[side]]
        for k_sz, box_size in enumerate(sizes):
            ax.plot([n for n, _ in es], [e["of_128"][box_size] for _, e in es], "o-" if k_sz == 0 else "s--",
                    color=colour, alpha=1.0 if k_sz == 0 else 0.6, label=f"{what}, {box_size}³")
        for n_loads, ent in es:
            if ent["variant"] != "128":
                ax.annotate(ent["name"], (n_loads, min(ent["of_128"].values())), textcoords="offset points",
                            xytext=(6, -12 if side == "swizzle" else 6), fontsize=8, color=colour)
    ax.set_xscale("log", base=2)
    ax.set_xticks([r["loads"] for r in boxes], [str(r["loads"]) for r in boxes])
    ax.set_xlim(1.7, 1.25 * max(r["loads"] for r in boxes))
    ax.set_xlabel("TMA loads per stage (A and B)")
    ax.set_ylabel("TFLOP/s / 128 B ×1 (same run)")
    ax.set_ylim(0, 1.1)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"swizzle layout or number of TMA boxes?\n{srec.label()}", fontsize=10)
    plt.show()

# %% output varies
if boxes:
    at = {r["loads"]: r for r in boxes}
    rq = {(c.swizzle, c.row_boxes): SW.bank_model(c)["tma_row_requests_per_stage"] for c in SW.variants()}

    def frac(e):
        lo, hi = min(e["of_128"].values()), max(e["of_128"].values())
        return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"

    def us(e, long=False):
        if e["ncu_of_128"] is None:
            return ""
        return f" (profiled launch {e['ncu_of_128']:.2f}× as long)" if long else f" ({e['ncu_of_128']:.2f}×)"
    pairs = [at[n] for n in (8, 16) if n in at and at[n]["swizzle"] and at[n]["row_box"]]
    narrow_lose = all(max(p["swizzle"]["of_128"].values()) < 0.7 for p in pairs)
    boxes_keep = all(min(p["row_box"]["of_128"].values()) >= 0.95 for p in pairs)
    notebook.claim(len(pairs) == 2 and narrow_lose and boxes_keep,
                   "At equal box count the narrow-swizzle variants lose and the row-box ones do not: "
                   + "; ".join(f"with {p['loads']} TMA loads per stage, {p['swizzle']['name']} keeps "
                               f"{frac(p['swizzle'])} of 128B ×1{us(p['swizzle'], True)} and "
                               f"{p['row_box']['name']} {frac(p['row_box'])}{us(p['row_box'])}"
                               for p in pairs)
                   + ". So the number of TMA boxes is not the cause, up to 16 per stage. The loss is in "
                   "the narrow layouts themselves: either TMA's narrow row requests (per stage "
                   f"{rq[(32, 1)]} of 32 bytes and {rq[(0, 1)]} of 16, against {rq[(128, 1)]} of 128 "
                   "bytes in every row-box variant) or wgmma reading those layouts — this experiment "
                   "does not separate the two (wgmma alone, on a stage loaded once per layout, would).",
                   **{f"{p['loads']}_{side}": min(p[side]["of_128"].values())
                      for p in pairs for side in ("swizzle", "row_box")})
    most = at[max(at)]["row_box"]
    if most and most["row_boxes"] > 8:
        most_cfg = SW.base_config().replace(row_boxes=most["row_boxes"])
        a_box_kib = most_cfg.a_box.rows * 128 / 1024
        notebook.claim(max(most["of_128"].values()) < 0.9
                       and rq[(128, most["row_boxes"])] == rq[(128, 1)],
                       f"Beyond that, boxes do cost: {most['name']} ({most['tma_loads_per_stage']} TMA "
                       f"loads per stage, A boxes of {most_cfg.a_box.rows} rows = {a_box_kib:g} KiB) keeps "
                       f"{frac(most)} of 128B ×1{us(most, True)} — with the same layout and the same "
                       f"{rq[(128, 1)]} row requests of 128 bytes, so this cost comes with the boxes "
                       "themselves: their number or their small size.",
                       of_128=max(most["of_128"].values()))
    rb = [r for r in SW.swizzle_table(srec.results) if r["row_boxes"] > 1]
    held = {}
    for r in rb:
        held[r["row_boxes"]] = held.get(r["row_boxes"], True) and r["inside"] is True
    by_r = {r["row_box"]["row_boxes"]: r["row_box"] for r in boxes if r["row_box"]}
    ins = [f"×{k}" for k in sorted(held) if held[k]]
    outs = [f"{by_r[k]['name']} at {frac(by_r[k])} (predicted {SW.predicted_ratio(128, k)[0]:.2f}–"
            f"{SW.predicted_ratio(128, k)[1]:.2f})" for k in sorted(held) if not held[k]]
    outcome1 = held.get(4) and held.get(8) and narrow_lose
    notebook.verdict(all(held.values()),
                     "Every row-box variant landed inside the range frozen before the run"
                     + (": the prediction's outcome (1), box count refuted as the cause." if outcome1
                        else "."),
                     f"Against the ranges frozen before the run: {', '.join(ins) or 'no variant'} "
                     "landed inside"
                     + (" — with 32B and none losing at the same box counts, that is the prediction's "
                        "outcome (1): box count refuted as the cause —" if outcome1 else "")
                     + f" and {', '.join(outs)} outside: the prediction allowed that a per-box cost "
                     "'could begin to show' at 32 boxes per stage, not one this large.")
ncu_rb = {r["row_box"]["row_boxes"]: r["row_box"]["ncu_of_128"] for r in boxes
          if r["row_box"] and r["row_box"]["row_boxes"] in (2, 4, 8) and r["row_box"]["ncu_of_128"]}
if ncu_rb:
    _ = notebook.verdict(all(v <= 1.03 for v in ncu_rb.values()),
                         "The prediction's Nsight Compute half held too: the profiled launches of ×2–×8 "
                         "are within 3 % of one box's (" + ", ".join(f"×{k} {v:.2f}×" for k, v in sorted(ncu_rb.items())) + ").",
                         "The prediction's Nsight Compute half (profiled launches of ×2–×8 within 3 % of one "
                         "box's) missed in part: " + ", ".join(f"×{k} {v:.2f}×" for k, v in sorted(ncu_rb.items()))
                         + " — a small cost of the boxes themselves already shows at 16 per stage, far from "
                         "the narrow swizzles' loss.")

# %% [markdown]
# ## 3. TMA or wgmma?
#
# Two suspects are left for the narrow layouts' loss: TMA writing them (768, 1536, 3072 row requests
# of 64, 32, 16 bytes per stage instead of 384 of 128) or wgmma reading them through their
# descriptors. To take TMA out, the suite runs each swizzle **wgmma only**
# (`WSConfig.tma_once`): the producer loads the four stages once — the first four k-tiles of the
# CTA's first tile — and for every later k-tile waits for the stage to be released as usual, then
# only *arrives* on its full barrier (a plain `mbarrier.arrive`: no `expect_tx`, no copy; with an
# arrival count of 1 and a tx-count of 0 that completes the phase). The consumers and the epilogue
# are untouched, so their wgmmas read stage *i* mod 4 over and over, through the same descriptors as
# before.
#
# This computes a **different product, on purpose**: every tile a CTA computes is a weighted sum of
# its first tile's four stage products (`SW.tma_once_plan` gives the weights: how many of the
# tile's k-tiles land on each stage, which depends on where the ring counter stands when the tile
# starts). The checks compare each variant's output with that sum (`SW.tma_once_reference`),
# element by element, every element written. Its TFLOP/s is wgmma throughput on reused stages — not a GEMM anyone can use.
# Below: what a CTA of a 2048 × 4096 × 384 launch on 132 CTAs computes (T = 6 k-tiles on 4
# stages), then the prediction made before the run.

# %%
once_cfg = SW.tma_once_variants()[2]
print(once_cfg.label())
for p in SW.tma_once_plan(once_cfg, 2048, 4096, 384, 132)[:2]:
    print(f"CTA {p['cta']}: tile ({p['m0']}, {p['n0']}) = Σ_j counts[j] · A·Bᵀ of stage j, stages "
          f"filled from tile ({p['src_m0']}, {p['src_n0']}), counts {p['counts']}")
print()
print(SW.PREDICTION_TMA_ONCE)

# %% output varies
once_rows = SW.tma_once_rows(srec.results) if srec is not None else []
once = SW.tma_once_outcome(srec.results) if once_rows else {"outcome": None}
if once["outcome"] is None:
    print("not measured yet: this swizzle record has no wgmma-only (tma_once) rows beside their "
          "TMA twins — tools/gpu_swizzle.py adds them — so TMA or wgmma stays open here.")
else:
    print(srec.label())
    print(SW.tma_once_text(srec.results))
    sh = once["shares"]
    by_once = {(r["size"], r["swizzle"]): r for r in once_rows}

    def share_text(sw):
        return ", ".join(f"{by_once[(sz, sw)]['of_128']:.2f} of 128B wgmma only at {sz}³ "
                         f"(with TMA {by_once[(sz, sw)]['with_tma_of_128']:.2f}; wgmma share "
                         f"{sh[(sz, sw)]:.2f})" for sz in sorted({k[0] for k in sh}))
    facts = f"32B wgmma only keeps {share_text(32)}; none keeps {share_text(0)}"
    conclusions = {
        "tma": f"{facts}. wgmma reads the 32-byte and the unswizzled layouts at full rate: the "
               "narrow swizzles' loss is TMA's — its narrow row requests, since the box count was "
               "ruled out above. The seed's swizzle advice is, on Hopper, advice about TMA.",
        "wgmma": f"{facts}. Without TMA the narrow layouts lose as much as with it: wgmma's own fetch "
                 "of those layouts is the cause, and TMA keeps up with them.",
        "both": f"{facts}. Both contribute: the wgmma share is the part of the loss that stays "
                "without TMA; the rest is TMA's narrow row requests.",
        "mixed": f"{facts}. The two narrow layouts (or the two sizes) do not agree on one cause "
                 f"(classes {once['classes']}): no single conclusion from this record.",
    }
    notebook.claim(once["outcome"] in conclusions, conclusions.get(once["outcome"], ""),
                   outcome=once["outcome"])
    held = [r for r in once_rows if r["inside"] is True]
    missed = [f"{r['name']} {r['size']}³ {r['of_128']:.2f} (predicted {r['predicted'][0]:.2f}–"
              f"{r['predicted'][1]:.2f})" for r in once_rows if r["inside"] is False]
    notebook.verdict(not missed and once["outcome"] == "tma",
                     "Every wgmma-only variant landed inside the range frozen before the run, and the "
                     "outcome is the predicted one (TMA).",
                     f"Against PREDICTION_TMA_ONCE (outcome predicted: TMA): {len(held)} of "
                     f"{len(once_rows)} inside; the outcome measured is '{once['outcome']}'"
                     + (f"; outside: {'; '.join(missed)}." if missed else "."))

# %% [markdown]
# ## 4. Tile, stages and the register budget
#
# The other half of the seed's "layout" advice is the tile and the stage count. Chapter 06's rung-4
# sweep measured them; here they are side by side with what each costs: registers per role (after
# `setmaxnreg`), spills, shared memory per CTA, and the throughput the record holds (fp16).

# %% output varies
budget = SW.budget_table(records.load("warp_specialization"), compile_cubins=False)
print(SW.budget_markdown(budget))
timed = [r for r in budget if r["tflops_8192"] is not None]
best = max(timed, key=lambda r: r["tflops_8192"])
worst = min(timed, key=lambda r: r["tflops_8192"])
_ = notebook.claim(all(r["spill_bytes"] == 0 for r in budget if r["spill_bytes"] is not None)
               and best["tflops_8192"] > worst["tflops_8192"],
               f"No configuration spills; at 8192³ the choice of tile and stages spans "
               f"{worst['tflops_8192']:.0f} ({worst['tile']}, {worst['stages']} stages) to "
               f"{best['tflops_8192']:.0f} TFLOP/s ({best['tile']}, {best['stages']} stages, "
               f"{'persistent' if best['persistent'] else 'one tile per CTA'}) — "
               f"{best['tflops_8192'] / worst['tflops_8192'] - 1:.0%} between the worst and the best.")

