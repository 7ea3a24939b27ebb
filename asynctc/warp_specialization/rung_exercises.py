"""Chapter 06 §4's exercises on rungs 6 and 7, judged by the course's models (registered on import).

``ch06.cluster_arrivals`` — rung 6 multicasts each CTA's half of B into both CTAs of a cluster of
2: how many arrivals must ``empty[s]`` count per phase? A wrong count is run through the cluster
ring model (:func:`asynctc.models.pipeline.cluster.simulate_cluster`), whose race or deadlock is
the hint: too few, and a producer refills a stage the peer CTA still reads; too many, and it waits
forever.

``ch06.store_position`` — rung 7's epilogue: where does accumulator ``acc[0][index]`` of a
consumer thread land in the 64×64 staging chunk that the TMA store writes out? The answer key is
:func:`staging_position`, which follows the kernel's own ``stmatrix.x4`` arithmetic
(:func:`~.launch.stmatrix_offsets`, the row address each lane gives) and the stmatrix fragment
rule, and agrees with the wgmma accumulator model (:func:`asynctc.models.fragments.wgmma_accumulator`);
a wrong (row, col) is matched against the usual slips (row and column swapped, the 8-row group, the
warp's 16 rows, lane / 4 and lane mod 4 swapped, the 64-column chunk, the swizzled column).
"""

from __future__ import annotations

from ..core import exercises as _ex
from ..models import fragments as _fr
from ..models.pipeline import MbarrierError
from ..models.pipeline.cluster import simulate_cluster
from .launch import stmatrix_offsets

#: Rung 6's consumers per CTA and CTAs per cluster (``ladder._cluster``).
CONSUMERS, CLUSTER = 2, 2
#: The consumer block of C one warpgroup stores in rung 7: 64 rows × BN = 256 columns, written
#: out as 64×64 chunks (``kChunksN`` = 4), 32 fp32 accumulators per thread per chunk.
ROWS, BN, CHUNK = 64, 256, 64


# ---- ch06.cluster_arrivals --------------------------------------------------------------------

def model_text(count: int, consumers: int = CONSUMERS, cluster: int = CLUSTER) -> str:
    """The cluster ring model's verdict on ``empty[s]`` counting ``count`` arrivals, in words."""
    try:
        run = simulate_cluster(count, consumers=consumers, cluster=cluster)
    except MbarrierError as e:
        return str(e)
    d = run.diagnosis
    if d is None:
        return (f"{run.k_tiles} k-tiles run with every refill ordered after every read of the "
                f"stage ({run.phases[0][0]} phases of each empty[s] completed, one per fill)")
    if hasattr(d, "what"):
        return f"a race at k-tile {d.iteration}: {d.what}"
    return f"a deadlock at k-tile {d.iteration}: {d.why}; the producer waits forever"


def _arrivals_hint(answer, consumers: int, cluster: int):
    if isinstance(answer, bool) or not isinstance(answer, int):
        return "an arrival count is a whole number"
    want = consumers * cluster
    model = (f"The cluster ring model (asynctc.models.pipeline.simulate_cluster({answer})) finds "
             f"{model_text(answer, consumers, cluster)}")
    if answer < 1:
        return f"mbarrier.init takes a count of 1..2^20−1. {model}"
    if answer in (128 * consumers, 128 * want):
        return (f"{answer} counts threads, but only the elected thread of each consumer warpgroup "
                f"arrives. {model}")
    if answer == consumers:
        return (f"{consumers} is rung 5's count: one arrival per consumer warpgroup of this CTA. "
                f"But the producer's multicast also writes the peer CTA's stage s. {model}. Who "
                "must have finished reading stage s before it is refilled?")
    if answer < want:
        return (f"too few: the phase completes before every reader of the stage has released it. "
                f"{model}")
    return (f"too many: a fill brings fewer arrivals than that, so the phase never completes. {model}")


@_ex.exercise("ch06.cluster_arrivals", "Rung 6: each CTA of a cluster of `cluster` CTAs has "
              "`consumers` consumer warpgroups, and each CTA's producer multicasts its half of B "
              "into stage s of every CTA of the cluster. How many arrivals must empty[s] count per "
              "phase (the count of mbarrier_init(empty[s], …))?", hint=_arrivals_hint)
def _cluster_arrivals(consumers: int, cluster: int) -> int:
    """One arrival per consumer warpgroup of every CTA that the multicast writes into (the kernel:
    ``mbarrier_init(empty[s], CONSUMERS * CLUSTER)``); checked with the cluster model."""
    want = consumers * cluster
    if simulate_cluster(want, consumers=consumers, cluster=cluster).diagnosis is not None:
        raise ValueError(f"consumers={consumers}, cluster={cluster}: the cluster model rejects {want}")
    return want


# ---- ch06.store_position ----------------------------------------------------------------------

def staging_position(thread: int, index: int) -> dict:
    """Where ``acc[0][index]`` of ``thread`` (0..127 in its consumer warpgroup; index 0..127 of
    the m64n256 accumulator) goes in rung 7's epilogue, following the kernel's ``store_c_tma``:
    ``chunk`` (the 64×64 staging chunk, 0..3), its ``row`` and ``col`` in that chunk, ``byte`` (its
    offset in the 128-byte-swizzled buffer), the stmatrix that stores it (``jl``: its first 8-column
    block, ``matrix``: which of the four 8×8 matrices) and ``address_lane`` (the lane whose row
    address that matrix row uses: stmatrix takes row r of matrix m from lane 8m + r, the data from
    every lane's register m, fragment row lane / 4, columns 2·(lane mod 4) and + 1).
    Raises ValueError for a thread or index out of range."""
    if not (isinstance(thread, int) and 0 <= thread < 128):
        raise ValueError(f"thread={thread!r}: a consumer warpgroup's thread, 0..127")
    if not (isinstance(index, int) and 0 <= index < BN // 2):
        raise ValueError(f"index={index!r}: an accumulator of m64n{BN}, 0..{BN // 2 - 1}")
    warp, lane = divmod(thread, 32)
    chunk, rest = divmod(index, 32)                  # 32 accumulators per 64-column chunk
    jl = 2 * (rest // 8)                             # each stmatrix.x4 stores 8 of them
    matrix, half = divmod(rest % 8, 2)               # register `matrix` of the x4, its low/high half
    address_lane = 8 * matrix + lane // 4            # gives the row (fragment row lane / 4)
    row_start = stmatrix_offsets(warp, address_lane, jl)
    byte = row_start + 2 * (2 * (lane % 4) + half)   # 16-bit C: two bytes per element
    row, within = divmod(byte, 128)
    col = 8 * ((within // 16) ^ (row % 8)) + (within % 16) // 2
    return {"chunk": chunk, "row": row, "col": col, "byte": byte, "jl": jl, "matrix": matrix,
            "address_lane": address_lane, "warp": warp, "lane": lane}


def _slips(thread: int, index: int) -> list[tuple[tuple[int, int], str]]:
    """(row, col) answers of the usual slips for this thread and index, each with its hint."""
    w, lane = divmod(thread, 32)
    g, t = divmod(lane, 4)
    h, b, e = (index >> 1) & 1, index >> 2, index & 1
    q = index // 32
    row, col = 16 * w + g + 8 * h, 8 * b + 2 * t + e - CHUNK * q
    swz = 8 * ((col // 8) ^ (row % 8)) + col % 8
    return [
        ((col, row), "row and column are swapped"),
        ((row, col + CHUNK * q), f"that column counts the warpgroup's {BN} columns; the staging "
                                 f"chunk holds 64 of them: index {index} is in chunk {q} "
                                 f"(32 accumulators per chunk), columns {CHUNK * q}..{CHUNK * q + 63}"),
        ((g + 8 * h, col), f"the row leaves out the warp's 16 rows: warp {w} (thread // 32) owns rows "
                           f"{16 * w}..{16 * w + 15}"),
        ((16 * w + g, col), f"the row leaves out the 8-row group: bit 1 of the index ({index} mod 4 "
                            f"= {index % 4}) picks row g + 8 over row g"),
        ((16 * w + g + 8 * e, col), "the 8-row group is bit 1 of the index (index mod 4 ≥ 2), not "
                                    "bit 0: bit 0 picks the column of the pair"),
        ((16 * w + t + 8 * h, 8 * b + 2 * g + e - CHUNK * q),
         f"lane {lane} = 4g + t has g = lane // 4 = {g} (its row) and t = lane mod 4 = {t} (its "
         "column pair); you swapped them"),
        ((row, col - e), f"registers 2p and 2p + 1 hold neighbouring columns: index {index} is odd, "
                         "the second of its pair (+1)" if e else ""),
        ((row, 8 * b + e - CHUNK * q), f"the column leaves out 2·t: lane {lane}'s pair starts at "
                                       f"column 2·(lane mod 4) = {2 * t} of its 8-column block"),
        ((row, swz), "that column is where the bytes sit after the 128-byte swizzle (16-byte chunk "
                     "c of row r stored at c xor (r mod 8)); the question asks the logical column, "
                     "the one TMA writes to C"),
    ]


def _store_hint(answer, thread: int, index: int):
    if not isinstance(answer, list) or len(answer) != 2:
        return "answer (row, col): two numbers"
    p = staging_position(thread, index)
    want = (p["row"], p["col"])
    got = tuple(answer)
    for value, hint in _slips(thread, index):
        if hint and value != want and got == value:
            return hint
    if not (0 <= got[0] < ROWS and 0 <= got[1] < CHUNK):
        return f"a staging chunk is {ROWS}×{CHUNK}: row and column are 0..63"
    if got[0] == want[0]:
        return (f"the row is right; the column is 8·(index // 4) + 2·(lane mod 4) + index mod 2, "
                f"minus 64 per chunk")
    if got[1] == want[1]:
        return "the column is right; the row is 16·warp + lane // 4 + 8·(bit 1 of the index)"
    if got == (thread, index):
        return (f"({thread}, {index}) are the question's thread and index: the answer is where "
                "that accumulator lands, its row and column in the 64×64 staging chunk")
    return _ex.tiered(f"both are off: row {got[0]} is in warp {got[0] // 16}'s rows "
                      f"{16 * (got[0] // 16)}..{16 * (got[0] // 16) + 15} of the chunk, column "
                      f"{got[1]} in its 8-column block {got[1] // 8}.",
                      f" Which warp is thread {thread} in and which row g within 8 is its lane, and "
                      f"which 8-column block and column pair does index {index} pick?",
                      " The row is 16·warp + lane // 4 + 8·(bit 1 of the index); the column "
                      "8·(index // 4) + 2·(lane mod 4) + index mod 2, minus 64 per chunk.")


@_ex.exercise("ch06.store_position", "Rung 7: thread `thread` (0..127) of a consumer warpgroup "
              "holds accumulator acc[0][`index`] of its m64n256 wgmma. In which row and column of "
              "its 64×64 staging chunk (chunk index // 32, columns 64·chunk..) does stmatrix put "
              "it? Answer (row, col).", hint=_store_hint)
def _store_position(thread: int, index: int) -> tuple[int, int]:
    """The kernel's stmatrix arithmetic (:func:`staging_position`), held to the wgmma accumulator
    model: raises AssertionError if the two disagree."""
    p = staging_position(thread, index)
    rows, cols = _fr.wgmma_accumulator(BN)
    assert (int(rows[thread, index]), int(cols[thread, index]) - CHUNK * p["chunk"]) == (p["row"], p["col"]), \
        "stmatrix arithmetic and the wgmma accumulator model disagree"
    return p["row"], p["col"]


def staging_text(thread: int, index: int) -> str:
    """:func:`staging_position` in two sentences, for the notebook after ``ch06.store_position``."""
    p = staging_position(thread, index)
    phys = (p["byte"] % 128) // 16
    return (f"Row {p['row']}, column {p['col']} of chunk {p['chunk']}. stmatrix takes that row's "
            f"address from lane {p['address_lane']}, not {p['lane']}, and the swizzle puts its 16-byte "
            f"chunk {p['col'] // 8} at {p['col'] // 8} xor ({p['row']} mod 8) = {phys}: byte {p['byte']}.")
