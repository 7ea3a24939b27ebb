"""Chapter 02's notebook helpers: each prints a small table or a few lines and raises if what it shows
stops supporting the sentence the chapter's markdown states beside it (a re-measurement that flips a
conclusion stops the notebook instead of leaving a false sentence). No GPU of its own, no timing,
no plotting: the records come in as arguments.
"""

from __future__ import annotations

from . import cp_async
from .core import notebook


def checks(rec, rows: int = 8) -> None:
    """About ``rows`` of the record's float64 checks (dtype, shape, tile, error against its bound).
    Asserts §3's markdown: there are checks, and every one passed."""
    cs = rec.results["checks"]
    for c in cs[:: max(1, len(cs) // rows)]:
        print(f"{c['dtype']:8s} M,N,K={str(tuple(c['shape'])):18s} {c['tile']:28s} max |C−ref|/(|A|·|B|) "
              f"{c['max_err']:.1e} (tol {c['tol']:.1e})  {'passed' if c['passed'] else 'FAILED'}")
    assert cs and all(c["passed"] for c in cs), [c for c in cs if not c["passed"]][:3]
    print(f"all {len(cs)} checks passed")


def overlap(rec, peak_rows: list[dict], dtype: str = "float16", size: int = 4096) -> None:
    """§4's "why not chapter 01's ceiling", in clocks per k-tile of the best rung: the math at the
    ceiling's pace (``peak_rows``: the mma_sync record's ``results["peak"]``), shared memory at
    128 B/clk (cp.async writes each k-tile once, ldmatrix reads it twice), and the measured time.
    Each rate is per SM per clock at its own run's measured SM clock, so the two runs' clocks
    cancel. Asserts the markdown's sentence: the measured time lies between full overlap (the longer
    of math and shared memory) and none (their sum), and shared memory is no small part (over 0.8 of
    the math); prints the verdict through :func:`asynctc.core.notebook.claim`."""
    tile, best, ceil = cp_async.ceiling_rows(rec.results, peak_rows, dtype, size)
    sm = rec.provenance["sm_count"]

    def per_clk(r):                                                   # FLOP per clock per SM
        return r["tflops"] * 1e12 / (sm * r["sm_mhz"] * 1e6)

    flop = 2 * tile.bm * tile.bn * tile.bk
    written = (tile.bm + tile.bn) * tile.bk * 2                       # cp.async: A and B tiles, once
    smem_bytes = written + tile.warps * (tile.wm + tile.wn) * tile.bk * 2   # + ldmatrix: each warp its slices
    assert smem_bytes == 3 * written, (smem_bytes, written)
    math, smem, took = flop / per_clk(ceil), smem_bytes / cp_async.SMEM_BYTES_PER_CLK_SM, flop / per_clk(best)
    print(f"{tile.name}, one k-tile:\n"
          f"  math           {flop} FLOP / {per_clk(ceil):.0f} FLOP/clk = {math:.0f} clk\n"
          f"  shared memory  {smem_bytes} B / {cp_async.SMEM_BYTES_PER_CLK_SM} B/clk = {smem:.0f} clk\n"
          f"  measured       {flop} FLOP / {per_clk(best):.0f} FLOP/clk = {took:.0f} clk")
    full, none = max(math, smem), math + smem
    print(f"  full overlap   max({math:.0f}, {smem:.0f}) = {full:.0f} clk;  none: {math:.0f} + {smem:.0f} = "
          f"{none:.0f} clk;  measured / full = {took:.0f} / {full:.0f} = {took / full:.2f}")
    notebook.claim(full < took < none and smem > 0.8 * math,
                   f"Verdict: the copies and the math overlap only in part; a k-tile takes "
                   f"{took / full:.2f}× the time of full overlap.", math=math, smem=smem, took=took)
