# %% [markdown]
# # 10b — the claims in full: every part, and the public anchors
#
# ← back to the core lesson [10_claims](10_claims.ipynb)
#
# **Assumes** chapter 10's core lesson: how a verdict is made from a record and a band, and the two
# denominators of a "% of peak". **What it adds:** the public numbers the course cites as anchors,
# set beside ours once made comparable; and the full table, every part of every statement of the
# seed article with the chapter and record it comes from. Like chapter 10 it runs no kernel: it
# reads the records in `data/<gpu>/*.json`, so live and replay print the same.

# %% output varies
from asynctc import claims
from asynctc.core import notebook

notebook.banner("sm_90a")
recs = claims.load_records()
cl = claims.evaluate(recs)
an = claims.evaluate_anchors(recs)
_ = claims.check_written(cl, an)     # as in chapter 10, section 2

# %% [markdown]
# ## 1. The public anchors, beside ours
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
# ## 2. The full table (every part of every statement)
#
# Chapter 10's summary (its section 2), in full: per statement the chapter that measures it and the
# verdict, then each part with its verdict and our number (the record and the row it comes from),
# and the notes that give context without being judged. Long: read the statements you care about,
# first those marked "partly".

# %% output varies
print(claims.table_text(cl))
for c in cl:
    extra = claims.note(c, recs)
    if extra:
        print(f"\n{c.key}: {extra}")

# %% [markdown]
# **What you learned:** an anchor counts only once made comparable (a ratio inside its own run, a
# rate per SM per clock, one datasheet), and a "partly" is read part by part. **Back to**
# [chapter 10](10_claims.ipynb), section 5, for what the course has not measured yet.
