# %% [markdown]
# # 10b — the seed article in full: every claim, and the public anchors
#
# ← back to the core lesson [10_claims](10_claims.ipynb)
#
# **Assumes** chapter 10's core lesson: the two denominators of a "% of peak", and how a claim's
# verdict follows from its parts and their bands. **What it adds:** every quantitative statement of
# the [seed article](../docs/glossary.md#seed-article) beside the course's measurement, with its
# verdict; the public numbers the course cites as anchors, made comparable; every part in full; and
# what the course has not measured yet. Like chapter 10 it runs no kernel: it reads the records in
# `data/<gpu>/*.json`, so live and replay print the same.

# %% output varies
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from asynctc import claims
from asynctc.core import notebook

notebook.banner("sm_90a")
recs = claims.load_records()
cl = claims.evaluate(recs)
an = claims.evaluate_anchors(recs)
_ = claims.check_written(cl, an)     # the verdicts this text assumes

# %% [markdown]
# ## 1. Every claim, what we measured, the verdict
#
# Each statement is cut into parts, as chapter 10 cut a "% of peak" into its two denominators. A
# part tests one number from one record against a band: the one the statement gives ("1.5–2×"),
# or, for a vague word, the reading printed beside it ("a few cycles" as at most 10, "tens of KB"
# as 10–99 KiB). A part not measured says so, with what would measure it (section 5); nothing is
# guessed. One row per claim, in the seed's order; in "partly: 2 of 3 …" the numbers count its
# parts. A fraction of peak is the datasheet's, then (in brackets) the one at the measured clock.

# %% output varies
display(Markdown(claims.summary_markdown(cl)))

# %% [markdown]
# ## 2. The public anchors, beside ours
#
# The course cites a few public numbers as anchors: Triton's **Gluon** tutorials, the **fast.cu**
# Hopper GEMM worklog, **Luo et al.**'s Hopper microbenchmark paper, DeepSeek's **DeepGEMM**. None
# was measured on our GPU, clock, cuBLAS build or shape, so each comparison is made comparable:
#
# * a ratio to cuBLAS, each taken inside its own side's run (tolerance 2 %): cuBLAS's own rate
#   differs between runs (fp16 4096³ read 758–780 TFLOP/s over the first session's runs,
#   docs/NOTES.md);
# * a rate per SM per clock (Luo et al. measured an H800 PCIe with 114 SMs; their clock is the
#   `wgmma` record's stated assumption);
# * a fraction of the same datasheet.
#
# The words: ours matches, ours below, ours above; for a qualitative point of theirs, whether our
# records agree with it.

# %% output varies
print(claims.anchors_text(an))

# %% [markdown]
# Two of them in words: Luo et al.'s mma.sync fraction
# is the one anchor that matches under both denominators, and their wgmma rates per SM per clock are
# under ours at every N (their clock is an assumption, so read that one with care).

# %% output varies
by = {a.key: a for a in an}
notebook.claim(all(p.verdict == claims.MATCHES for p in by["luo_mma_sync"].parts),
               "Luo et al.'s ~63 %: " + "; ".join(p.ours for p in by["luo_mma_sync"].parts) + ".")
_ = notebook.claim(all(p.verdict == claims.ABOVE for p in by["luo_wgmma_n"].parts),
               "wgmma per SM per clock, ours against theirs: "
               + ", ".join(f"{p.value:.0f}/{p.theirs:.0f}" for p in by["luo_wgmma_n"].parts) + ".")

# %% [markdown]
# ## 3. The ratios, drawn
#
# One row per part whose number is a ratio, the seed's claims first, then the anchors. Grey is the
# claim's band (hatched when it is open at one end, such as "≥ 1.5×"); ● is ours: green inside the
# band (or matching the anchor), red outside, purple above or below the anchor's ✕.

# %% output varies
fig = claims.ratios_figure(cl, an)
plt.show()

# %% [markdown]
# ## 4. The full table (every part of every statement)
#
# Section 1's summary, in full: per statement the chapter that measures it and the verdict, then
# each part with its verdict and our number (the record and the row it comes from), and the notes
# that give context without being judged. Long: read the statements you care about, first those
# marked "partly".

# %% output varies
print(claims.table_text(cl))
for c in cl:
    extra = claims.note(c, recs)
    if extra:
        print(f"\n{c.key}: {extra}")

# %% [markdown]
# ## 5. What could not be measured here
#
# Each part below is "not measured here" or needs Blackwell. Each says what would measure it and,
# where a suite exists, the defines to run it with. Until then the course takes no side.

# %% output varies
print(claims.not_measured_text(cl, an))

# %% [markdown]
# **What you learned:** a claim is judged part by part, each part against a band from one record;
# an anchor counts only once made comparable (a ratio inside its own run, a rate per SM per clock,
# one datasheet). **Back to** [chapter 10](10_claims.ipynb).
