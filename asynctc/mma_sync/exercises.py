"""Chapter 01 — the exercises auto-checked in notebooks/01_synchronous (registered on import):
``ch01.smem_bytes`` (the teacher's checkpoint), ``ch01.hmma_per_ktile`` and ``ch01.costliest_part``,
each with its diagnosis of known mistakes. The code exercise ``ch01.two_rows`` lives in
``two_rows.py``."""

from __future__ import annotations

from ..core import exercises as _ex
from .config import DEFAULT_TILE, MmaSyncTile


# ---- chapter 01 -----------------------------------------------------------------------------------

@_ex.exercise("ch01.smem_bytes", "Shared-memory bytes of ONE stage (one A tile and one B tile, fp16) for a "
              "bm×bn×bk CTA tile.")
def _ch01_smem(bm: int, bn: int, bk: int) -> int:
    return MmaSyncTile(bm, bn, bk).smem_bytes // 2


@_ex.diagnosis("ch01.smem_bytes")
def _ch01_smem_hint(answer, expected, bm: int, bn: int, bk: int) -> str | None:
    a, b = bm * bk * 2, bk * bn * 2
    known = _ex.known_mistake(answer, expected, [
        (a, f"that is the A tile alone (bm×bk = {bm}×{bk}); one stage holds an A tile and a B tile."),
        (b, f"that is the B tile alone (bk×bn = {bk}×{bn}); one stage holds an A tile and a B tile."),
        (bm * bk + bk * bn, "you counted elements, not bytes: fp16 is 2 bytes per element."),
        (bm * bn * 2, "that is the size of the C tile (bm×bn); a stage holds the operands: A is bm×bk, "
                      "B is bk×bn."),
        (2 * (a + b), "twice too large: one stage, not the kernel's two buffers — or did you take 4 "
                      "bytes per element? fp16 is 2."),
        ((a + b) / 1024, "that is in KiB; the question asks for bytes."),
        (2 * a, "you counted the A tile twice; B is bk×bn, not bm×bk."),
        (2 * b, "you counted the B tile twice; A is bm×bk, not bk×bn."),
        ((a + b) * 8, "that is bits; the question asks for bytes."),
    ])
    if known or not isinstance(answer, (int, float)):
        return known
    generic = _ex.generic_hint(answer, expected)
    if generic not in ("too large.", "too small."):
        return generic                                    # off by a simple factor: it says which
    return (f"{generic} Recount on its own each of A's tile (bm×bk = {bm}×{bk} elements) and B's "
            f"(bk×bn = {bk}×{bn}), then bytes: 2 per fp16 element. Nothing else is in a stage.")


@_ex.exercise("ch01.hmma_per_ktile", "How many mma.sync.m16n8k16 (HMMA) instructions does one warp issue per "
              "k-tile, for a wm×wn warp tile and a bk-deep k-tile? (bm, bn: the CTA tile, optional.)")
def _ch01_hmma(wm: int, wn: int, bk: int, bm: int | None = None, bn: int | None = None) -> int:
    return (wm // 16) * (wn // 8) * (bk // 16)


@_ex.diagnosis("ch01.hmma_per_ktile")
def _ch01_hmma_hint(answer, expected, wm: int, wn: int, bk: int, bm: int | None = None,
                    bn: int | None = None) -> str | None:
    d = DEFAULT_TILE
    mt, nt, ks = wm // 16, wn // 8, bk // 16
    where = f"the third number of {bm}x{bn}x{bk}" if bm and bn else "as the question states"
    # (wrong count, hint, (the question naming the slip, "tile" read from §3's name or "mma" from §2,
    #  the axis the slip miscounts: M, N, K or "" for none))
    mistakes = [
        (mt * nt * (d.bk // 16), f"you used a k-tile of {d.bk} (the default tile's): this kernel's k-tile "
                                 f"is bk = {bk} ({where}).",
         (f"Which number of {bm}x{bn}x{bk} is the k-tile's depth?" if bm and bn else "How deep is the k-tile?",
          "tile", "K")),
        (mt * nt, f"that is one k16 step: a k-tile {bk} deep has {bk}/16 of them.",
         (f"How many k16 steps does a {bk}-deep k-tile hold?", "mma", "K")),
        (mt * (wn // 16) * ks, "one m16n8k16 covers 8 columns of N, not 16.",
         ("How many columns of N does one m16n8k16 cover?", "mma", "N")),
        ((wm // 8) * nt * ks, "one m16n8k16 covers 16 rows of M, not 8.",
         ("How many rows of M does one m16n8k16 cover?", "mma", "M")),
        (mt * nt * (bk // 8), "one mma.sync is 16 deep in K (the k16 of m16n8k16), not 8.",
         ("How deep in K is one m16n8k16?", "mma", "K")),
        (mt * nt * bk, "each mma.sync consumes 16 of K, so a k-tile takes bk/16 steps, not bk.",
         (f"How many k16 steps does a {bk}-deep k-tile hold?", "mma", "K")),
        (wm * wn * bk, "that counts multiply-adds; one mma.sync does 16×8×16 of them.",
         ("What does one instruction count for?", "mma", "")),
        (2 * wm * wn * bk, "that counts FLOP; one mma.sync does 2·16·8·16 of them.",
         ("What does one instruction count for?", "mma", "")),
        (_ch01_hmma(d.wm, d.wn, d.bk), _ex.tiered(
            f"that is also section 2's count for the default tile ({d.wm}×{d.wn} warp tile, k-tile "
            f"{d.bk}); if you reused it, redo it for a {wm}×{wn} warp tile and a k-tile {bk} deep.",
            " If not: how many rows, columns and k of the product does one m16n8k16 cover?",
            " If not, recount the three factors: M/16, N/8 and K/16."), ("Which numbers of the name are the warp tile?", "tile", "")),
    ]
    if bm and bn:
        warps = (bm // wm) * (bn // wn)
        mistakes.append((mt * nt * ks * warps,
                         f"that is per CTA: a {bm}×{bn} tile has ({bm}/{wm})·({bn}/{wn}) = {warps} warps; "
                         "the question asks for one warp.", ("How many warps did you count?", "tile", "")))
    # Several slips can give the same number (n16 and one k16 step when bk = 32; m8 and k8 always;
    # the default tile's k-tile of 64 when bk = 32): such an answer is asked one question that tells
    # them apart (what the learner took for each factor those slips are in), and at the next miss
    # gets every hint that explains it, the likeliest first.
    hit = [(h, f) for v, h, f in mistakes if _ex.known_mistake(answer, expected, [(v, h)])]
    hints = [_ex.told(h, rule=True) for h, _ in hit] if len(hit) > 1 else [h for h, _ in hit]
    if len(hints) > 1:
        n = {2: "two", 3: "three"}.get(len(hints), str(len(hints)))
        # what was miscounted: the direction (never the ratio, which would give the count) and the axis
        axis = [a for _, (_, _, a) in hit]
        along = " along " + " or ".join(a for a in "MNK" if a in axis) if all(axis) else ""
        many = "too many" if answer > expected else "too few"
        asked = " ".join(dict.fromkeys(q for _, (q, _, _) in hit))      # reader 110: each slip as a question
        sections = {"tile": "§3 reads the tile's name", "mma": "§2 says what one m16n8k16 covers"}
        cite = "; ".join(sections[k] for k in dict.fromkeys(k for _, (_, k, _) in hit))
        return _ex.tiered(f"{answer:g} counts {many} m16n8k16{along}: {n} different slips give it, "
                          "each in one factor of the count.",
                          f" Which one is yours ({cite})? {asked}",
                          " " + "; or ".join(f"({i}) {h.rstrip('.')}" for i, h in enumerate(hints, 1)) + ".")
    return hints[0] if hints else None


@_ex.exercise("ch01.costliest_part", "Which part of the chapter-01 kernel's data path costs more time: "
              "\"copy\" (global→shared by the threads) or \"ldmatrix\"? Predict; the check compares "
              "with the measured ablation (the mma_sync record's results[\"ablation\"]).",
              choices=("copy", "ldmatrix"),
              aliases={"the copy": "copy", "global→shared copy": "copy", "global->shared copy": "copy",
                       "ldsm": "ldmatrix", "the ldmatrix": "ldmatrix"})
def _ch01_costliest(ablation) -> str:
    t = {x["variant"]: x["tflops"] for x in ablation}
    return "copy" if t["no global→shared copy"] > t["no ldmatrix"] else "ldmatrix"


@_ex.diagnosis("ch01.costliest_part")
def _ch01_costliest_hint(answer, expected, ablation) -> str | None:
    t = {x["variant"]: x["tflops"] for x in ablation}
    full = t.get("full kernel")
    line = (f"the record says: full kernel {full:.0f} TFLOP/s, " if full else "the record says: ") + \
        (f"without the copy {t['no global→shared copy']:.0f}, without ldmatrix {t['no ldmatrix']:.0f} — "
         "removing the costlier part gains more.")
    if expected == "copy":
        return (line + " Equal bytes through the data path, but the copy also spends two instructions "
                "(LDG + STS) per 16 bytes of the warps' issue slots and 64 staging registers per thread.")
    return line + " On this GPU the fragment loads cost more than the copy."
