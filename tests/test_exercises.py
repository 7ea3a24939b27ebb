"""The exercise checker: unanswered, right and wrong answers; a hint for every known mistake;
equivalent forms accepted; missing arguments answered with a sentence; solutions must assert."""
import re

import numpy as np
import pytest
from fakes import CONSUMER_LOOP

from asynctc.models import pipeline as _pipeline  # registers the ch05 exercises
from asynctc.models import tcgen05 as _tcgen05  # registers the ch09 exercises
import asynctc.suites  # noqa: F401  (imports every chapter module, which registers its exercises)
import asynctc.claims  # noqa: F401  (chapter 10 has no suite: registers its exercises)
from asynctc.core import exercises, records as _records
from asynctc.models import descriptors
from asynctc.pitfalls import exercises as _pitfalls, ordering as _ordering  # the ch08 exercises
from asynctc.warp_specialization import whole_kloop as _whole_kloop  # chapter 06's capstone

ABLATION = [{"variant": "full kernel", "tflops": 333.0},
            {"variant": "no global→shared copy", "tflops": 524.0},
            {"variant": "no ldmatrix", "tflops": 431.0},
            {"variant": "cuBLAS", "tflops": 764.0}]
SIZES = [64, 128, 256, 512, 1024, 4096]
RIDGE = 251.0

#: ch10.bound's pairs (ours ms, cuBLAS ms): the top rung at 8192³ bf16 as three runs recorded it.
_PAIRS = [(1.36502, 1.37786), (1.40021, 1.39946), (1.39072, 1.40333), (1.39035, 1.40226),
          (1.38698, 1.39189), (1.38864, 1.39779), (1.39099, 1.39600)]
_R = [c / o for o, c in _PAIRS]

#: The arguments each exercise is checked with in its notebook.
_STORE = list(_ordering.PROGRAMS["store"]["broken"])      # ch08.repair's broken program

KW = {
    "ch00.intensity": dict(m=4096, n=4096, k=64),          # a rank-64 update
    "ch00.memory_bound": dict(sizes=SIZES, ridge=RIDGE),
    "ch01.smem_bytes": dict(bm=128, bn=256, bk=32),
    "ch01.hmma_per_ktile": dict(wm=64, wn=32, bk=32, bm=128, bn=128),
    "ch01.costliest_part": dict(ablation=ABLATION),
    "ch01.two_rows": dict(),
    "ch02.ring_smem": dict(bm=128, bn=64, bk=32, ctas=1),
    "ch02.wait_n": dict(stages=4),
    "ch02.stages": dict(results=_records.load("cp_async").results),   # 02 §4's prediction
    "ch03.expect_tx": dict(rows=48, cols=32, dtype="float32"),
    "ch03.bank_128B": dict(row=3, col=20),
    "ch04.sbo": dict(swizzle=64),
    "ch04.descriptor": dict(mn=128, k=64, dtype="bfloat16", major="MN", swizzle=64, step=2,
                            base=0x4000),
    "ch05.full_parity": dict(k=5, stages=2),
    "ch05.empty_parity": dict(t=1, stages=4),
    "ch05.groups_pending": dict(),
    "ch05.find_bug": dict(diagnosis=_pipeline.simulate(**_pipeline.BUG_HUNT,
                                                       protocol="wrong_empty_parity").diagnosis),
    "ch06.consumer_regs": dict(producer_regs=56, consumers=2),
    "ch06.producer_wait": dict(tile=1, k=2, k_tiles=5, stages=4),
    "ch06.which_barrier": dict(event="consumer arrives"),
    "ch06.cluster_arrivals": dict(consumers=2, cluster=2),
    "ch06.store_position": dict(thread=77, index=46),
    "ch06.design_tma_store": dict(results=_records.load("warp_specialization").results),   # 06 §3's solution cell
    "ch07.quantize": dict(value=300.0),
    "ch07.block_scale": dict(amax=37.5),
    "ch07.round_trip": dict(value=10.0, amax=37.5),
    "ch07.promote_interval": dict(k=4096, target=1e-2),
    "ch07.fp8_speedup": dict(results=_records.load("fp8").results),   # 07 §4's check
    "ch08.name_bug": dict(diagnosis=_pitfalls.mystery_diagnosis()),
    "ch08.repair": dict(rule="store"),
    "ch08.first_misplaced": dict(base_offset=128),
    "ch09.tmem_columns": dict(m=128, n=96, accumulators=2),
    "ch09.lane_quarter": dict(warp=6),
    "ch09.fix_descriptor": dict(value=_tcgen05.exercise_descriptor("sbo")),
    "ch10.fraction_both": dict(tflops=759.4, sm_mhz=1679.0, sm_count=132, sm_mhz_after=1972.0),
    "ch10.verdict": dict(datasheet=0.687, measured=0.757, low=0.75, high=0.80),
    "ch10.bound": dict(pairs=_PAIRS),
    "ch10.bound_verdict": dict(pairs=_PAIRS, above=1.0),
    "ch10.values_hold": dict(pairs=_PAIRS, digits=2),
    "ch09.acc_columns": dict(bn=192),
    "ch09.acc_parity": dict(t=5),
    "ch09.scale_byte": dict(kstep=3),
    "ch03.swizzle_128b": dict(),
    "ch03.stage_fill": dict(),
    "ch04.encode": dict(),
    "ch04.kstep": dict(),
    "ch04.acc_owner": dict(r=43, c=20),
    "ch04.acc_owner_fn": dict(),
    "ch05.ring_parities": dict(),
    "ch05.producer_step": dict(),
    "ch06.consumer_loop": dict(),
    "ch06.whole_kloop": dict(),
    "ch06.cuda_kloop": dict(),
    "ch07.promotion": dict(),
    "ch09.mma_issue": dict(),
}


def _desc(start, lbo, sbo, mode):
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62


def _owner(r, c):
    """ch04.acc_owner_fn's answer: (thread, register) holding D[r][c] of a wgmma accumulator."""
    return 32 * (r // 16) + 4 * (r % 8) + (c % 8) // 2, 4 * (c // 8) + 2 * (r % 16 // 8) + c % 2


n = 512
_FLOP, _BYTES = 2 * 4096 * 4096 * 64, 2 * (4096 * 64 + 64 * 4096 + 4096 * 4096)   # KW's ch00.intensity
#: (exercise, wrong answer, words the hint must contain): one row per diagnosed mistake.
_MODE = {0: 0, 128: 1, 64: 2, 32: 3}

MISTAKES = [
    # code exercises: the learner's function, and the words of the hint that names its mistake
    ("ch03.swizzle_128b", lambda o: o, "no swizzle"),
    ("ch03.swizzle_128b", lambda o: o ^ ((o >> 7) << 4), "repeats every 8 rows"),
    ("ch03.swizzle_128b", lambda o: o ^ (((o >> 7) & 7) << 3), "keeps its place"),
    ("ch03.swizzle_128b", lambda o: (o // 128) * 128 + ((o % 128 // 16 + o // 128) % 8) * 16 + o % 16,
     "chunk 1 XOR (row 1 % 8)"),
    ("ch03.swizzle_128b", lambda o: (o + 128) % 2048, "row"),
    ("ch03.swizzle_128b", lambda o: 1.5, "your function returned 1.5 for offset 0; return an int"),
    ("ch03.swizzle_128b", 5, "pass your function"),
    ("ch04.encode", lambda a, lbo, sbo, w: a | lbo << 16 | sbo << 32 | _MODE[w] << 62, "value >> 4"),
    ("ch04.encode", lambda a, lbo, sbo, w: a >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | (w // 32) << 62,
     "your bits 62–63 hold 1, the mode of 128-byte swizzle; 32-byte swizzle is mode 3"),
    ("ch04.encode", lambda a, lbo, sbo, w: a >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | (3 - _MODE[w] if w else 0) << 62,
     "your bits 62–63 hold 0, the mode of no swizzle; 32-byte swizzle is mode 3"),
    ("ch04.encode", lambda a, lbo, sbo, w: a >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | _MODE[w] << 61,
     "swizzle_mode holds the right value, 3, but in the wrong bits: yours starts at bit 61, the field "
     "is bits 62–63"),
    ("ch04.encode", lambda a, lbo, sbo, w: a >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 30 | _MODE[w] << 62,
     "sbo holds the right value"),
    ("ch04.encode", lambda a, lbo, sbo, w: a >> 4 | (sbo >> 4) << 16 | (lbo >> 4) << 32 | _MODE[w] << 62,
     "lbo: bits 16–29 hold"),
    ("ch04.encode", lambda a, lbo, sbo, w: 1 << 64, "64 bits"),
    ("ch04.encode", lambda a, lbo, sbo, w: 1 / 0, "your code raised ZeroDivisionError"),
    ("ch04.kstep", lambda d, s, m: d + (32 if m == "K" else 2048) * s, "16× too far"),
    ("ch04.kstep", lambda d, s, m: d + ((16 if m == "K" else 1024) * s >> 4), "elements"),
    ("ch04.kstep", lambda d, s, m: d + (((32 if m == "K" else 2048) * s >> 4) << 16), "you changed LBO"),
    ("ch04.kstep", lambda d, s, m: d + (((32 if m == "K" else 2048) * s >> 4) << 32), "you changed SBO"),
    ("ch04.kstep", lambda d, s, m: d + (8192 * s >> 4), "does not cross into the next box"),
    ("ch04.kstep", lambda d, s, m: d | ((32 if m == "K" else 2048) * s >> 4), "OR-ed"),
    ("ch04.kstep", lambda d, s, m: d + (s << 62), "swizzle mode"),
    ("ch04.kstep", lambda d, s, m: d + (2048 * s >> 4), "MN-major advance"),
    ("ch04.kstep", lambda d, s, m: d, "k-step 0's descriptor"),
    ("ch04.kstep", lambda d, s, m: d + 2.0 * s, "return an int"),
    # D[43][20]: warp 2, g = 3, row g + 8; block j = 2, t = 2, even column -> (78, 10)
    ("ch04.acc_owner", (78, 8), "rows g and g + 8 are swapped"),
    ("ch04.acc_owner", (75, 10), "g and t are swapped"),
    ("ch04.acc_owner", (14, 10), "leaves out the warp"),
    ("ch04.acc_owner", (80, 10), "t counts pairs, not columns"),
    ("ch04.acc_owner", (76, 10), "t counts pairs, not columns"),
    ("ch04.acc_owner", (110, 10), "rows g and g + 8 of the warp's block share a lane"),
    ("ch04.acc_owner", (78, 11), "the two columns of a pair are swapped"),
    ("ch04.acc_owner", (78, 2), "leaves out the 8-column block"),
    ("ch04.acc_owner", (78, 9), "you swapped them"),
    ("ch04.acc_owner", (78, 30), "the thread is right, the register is not"),
    ("ch04.acc_owner", (79, 10), "the register is right, the thread is not"),
    ("ch04.acc_owner", (200, 1), "0..127"),
    ("ch04.acc_owner", (43, 20), "the element's own (row, column)"),   # D's own indices echoed back
    ("ch04.acc_owner", (85, 17), "holds D[37][35], not D[43][20]: the row and the column are off"),
    ("ch04.acc_owner", (78, 200), "registers are 0..N/2 − 1"),
    ("ch04.acc_owner_fn", lambda r, c: (_owner(r, c)[0], _owner(r, c)[1] ^ 2), "rows g and g + 8 are swapped"),
    ("ch04.acc_owner_fn", lambda r, c: (32 * (r // 16) + 4 * (c % 8 // 2) + r % 8, _owner(r, c)[1]),
     "g and t are swapped"),
    ("ch04.acc_owner_fn", lambda r, c: (_owner(r, c)[0] % 32, _owner(r, c)[1]), "leaves out the warp"),
    ("ch04.acc_owner_fn", lambda r, c: (32 * (r // 16) + 4 * (r % 8) + c % 4, _owner(r, c)[1]),
     "t counts pairs, not columns"),
    ("ch04.acc_owner_fn", lambda r, c: (_owner(r, c)[0], _owner(r, c)[1] ^ 1), "the two columns of a pair"),
    ("ch04.acc_owner_fn", lambda r, c: (_owner(r, c)[0], _owner(r, c)[1] % 4), "leaves out the 8-column block"),
    ("ch04.acc_owner_fn", lambda r, c: (_owner(r, c)[0], 1.0), "return two ints"),
    ("ch04.acc_owner_fn", 5, "pass your function"),
    ("ch05.ring_parities", (lambda k, S: (k // S) % 2, lambda t, S: (t // S) % 2),
     "deadlocks at k-tile 0: producer waits on empty[0] with parity 0"),
    ("ch05.ring_parities", (lambda k, S: (k // S + 1) % 2, lambda t, S: (t // S + 1) % 2),
     "race at k-tile 0"),
    ("ch05.ring_parities", (lambda k, S: k % 2, lambda t, S: (t // S + 1) % 2), "race at k-tile 1"),
    ("ch05.ring_parities", (lambda k, S: (k // S) % 2, lambda t, S: 1), "deadlocks at k-tile 4"),
    ("ch05.ring_parities", (lambda k, S: (k // S) % 2, lambda t, S: 2),
     "not quite — your empty_parity(0, 4) returned 2; a parity is 0 or 1"),
    ("ch05.ring_parities", lambda k, S: 0, "pass your two functions as a pair"),
    ("ch05.full_parity", 1, "phase before"),
    ("ch05.full_parity", 2, "one bit"),
    ("ch05.empty_parity", 0, "fresh barrier"),
    ("ch05.groups_pending", 0, "gaps between the wgmma"),
    ("ch05.groups_pending", 2, "the answer is 0 or 1"),
    ("ch05.find_bug", "full_parity_flipped", "ends in a Race"),
    ("ch06.cluster_arrivals", 2, "rung 5's count"),
    ("ch06.cluster_arrivals", 2, "race at k-tile 4"),
    ("ch06.cluster_arrivals", 3, "too few"),
    ("ch06.cluster_arrivals", 8, "waits forever"),
    ("ch06.cluster_arrivals", 512, "counts threads"),
    ("ch06.store_position", (26, 43), "swapped"),
    ("ch06.store_position", (43, 90), "chunk 1"),
    ("ch06.store_position", (11, 26), "warp's 16 rows"),
    ("ch06.store_position", (35, 26), "8-row group"),
    ("ch06.store_position", (41, 30), "g = lane // 4"),
    ("ch06.store_position", (43, 24), "2·t"),
    ("ch06.store_position", (43, 2), "swizzle"),
    ("ch06.store_position", (3, 5), "both are off: row 3 is in warp 0's rows 0..15"),
    ("ch06.store_position", (77, 46), "row and column are 0..63"),
    ("ch06.consumer_regs", 228, "multiple of 8"),
    ("ch06.consumer_regs", 256, "nothing for the producer"),
    ("ch06.consumer_regs", 168, "count at entry"),
    ("ch06.consumer_regs", 232, "more than the SM's 65536"),
    ("ch06.consumer_regs", 512 - 56, "divide by 2"),
    ("ch06.consumer_regs", 216, "3072 stay unused, 12 more per consumer thread. Is there a larger multiple of 8"),
    ("ch06.consumer_regs", 226, "but setmaxnreg takes a multiple of 8: take the largest one that fits"),
    ("ch06.consumer_regs", 160, "below the count at entry (168)"),
    ("ch06.producer_wait", (2, 1), "carries across tiles"),
    ("ch06.producer_wait", (3, 1), "consumers wait on full"),
    ("ch06.producer_wait", (1, 0), "ring counter modulo S"),
    ("ch06.producer_wait", (3, 2), "one bit"),
    ("ch06.which_barrier", "full", "seed's backwards naming"),
    ("ch06.design_tma_store", "no", "divide the first's cycles by the second's"),
    ("ch06.which_barrier", "full", "protocol='swapped_barriers').summary())"),
    ("ch07.quantize", 300.0, "not on the e4m3 grid"),
    ("ch07.quantize", 320.0, "320 is on the e4m3 grid, but it is 300 rounded up: the step there is 32"),
    ("ch07.quantize", 256.0, "only the leading bit"),
    ("ch07.quantize", 304.0, "not on the e4m3 grid: between 256 and 512"),
    ("ch07.quantize", 304.0, "the e4m3 value nearest 300"),
    ("ch07.block_scale", 448 / 37.5, "inverse"),
    ("ch07.block_scale", 37.5 / 240, "e4m3fnuz"),
    ("ch07.block_scale", 37.5 / 57344, "other format"),
    ("ch07.block_scale", 0.125, "no power of two"),
    ("ch07.block_scale", 37.5, "divide by it"),
    ("ch07.round_trip", 120.0, "that is q, the e4m3 value itself"),
    ("ch07.round_trip", 10.0, "10 is the input back unchanged: that skips the rounding"),   # reader 125
    ("ch07.round_trip", 112 * 37.5 / 448, "a neighbour of x / s"),
    ("ch07.round_trip", 119 * 37.5 / 448, "rounds x / s to an integer"),
    ("ch07.round_trip", 11.0, "compute it in three steps"),
    # x / s rounded to decimals (119.5), not to the e4m3 grid, then times s (newcomer: a generic hint)
    ("ch07.round_trip", 119.5 * 37.5 / 448, "nearly the input 10: it skips the rounding to the e4m3 grid between "
                                            "the divide and the multiply"),
    ("ch07.round_trip", 119.47 * 0.0837, "x / s = 119.5 lies between the e4m3 values 112 and 120"),
    ("ch07.promote_interval", 0, "no promotion"),
    ("ch07.promote_interval", 1, "every 1 k-tile stays"),
    ("ch07.promote_interval", 3, "not below 0.01"),
    ("ch07.promote_interval", 8, "if you counted wgmma k32 steps"),
    ("ch07.promote_interval", 8, "compute fp8.predict_swamp"),
    ("ch07.promote_interval", 5, "compute fp8.predict_swamp"),
    ("ch07.promote_interval", 256, "if you counted fp8 elements"),
    ("ch08.name_bug", "phase_parity", "parity 0 is what the kernel's formula gives for k-tile 0 on full[0]"),
    ("ch08.name_bug", "phase_parity", "that phase never completed"),
    ("ch08.name_bug", "proxy_fence", "not a ring-protocol error"),
    ("ch08.repair", _STORE[:5] + [("bulk_wait_read", 1)] + _STORE[5:], "bulk group 0"),
    ("ch08.repair", _STORE[:6] + [("bulk_wait_read", 0)] + _STORE[6:], "before that barrier"),
    # the right place with the wrong N is told apart from a wrong place (reader: same hint for both)
    ("ch08.repair", _STORE[:5] + [("bulk_wait_read", 1)] + _STORE[5:], "is in the right place; its argument 1 is not"),
    ("ch08.repair", _STORE[:3] + [("bulk_wait_read", 0)] + _STORE[3:], "waits before the commit"),
    ("ch08.repair", _STORE[:6] + [("bulk_wait_read", 1)] + _STORE[6:], "waits after the barrier at step 5"),
    ("ch08.repair", _STORE[:5] + [("bulk_wait_read", None)] + _STORE[5:], '("bulk_wait_read", N)'),
    ("ch08.repair", tuple(_STORE[:5] + [["bulk_wait_read", 0], ("fence_proxy", None)] + _STORE[5:]),
     "no hazard, but you inserted 2 steps and 1 is enough"),
    ("ch08.first_misplaced", (1, 0), "absolute address"),
    ("ch09.tmem_columns", 96, "power of two"),
    ("ch09.tmem_columns", 128 * 96, "32-bit cells"),
    ("ch09.tmem_columns", 3, "N/32, a count of 32-column blocks"),
    ("ch09.tmem_columns", 1, "at least 32 of them"),
    ("ch09.tmem_columns", 128, "hold one 128×96 accumulator. The kernel keeps 2 (§1"),
    ("ch09.tmem_columns", 192, "2 × 96 columns is what the accumulators use"),
    ("ch09.tmem_columns", 48, "not a share of it"),
    ("ch09.tmem_columns", 64, "not a share of it"),
    ("ch09.tmem_columns", 2 * 128 * 96, "32-bit cells"),
    ("ch09.tmem_columns", 6, "a count of 32-column blocks"),
    ("ch09.tmem_columns", 512, "more than they need"),
    ("ch09.lane_quarter", (64, 96), "exactly 32"),
    ("ch09.lane_quarter", (0, 31), "warp id mod 4"),
    ("ch09.lane_quarter", (192, 223), "only 128 lanes"),
    ("ch09.fix_descriptor", "lbo", "not quite — LBO 16 is right"),
    ("ch09.fix_descriptor", "start_address", "not quite — start_address 0x8020 is right"),
    ("ch09.fix_descriptor", "swizzle", "not quite — swizzle 128B is right"),
    ("ch09.fix_descriptor", "base_offset", "not quite — base_offset 0 is right"),
    ("ch09.fix_descriptor", "lbo_mode", "not quite — lbo_mode 0 is right"),
    ("ch09.fix_descriptor", "version", "not quite — version 1 is right"),
    ("ch09.acc_columns", 192, "two accumulators"),
    ("ch09.acc_columns", 384, "power of two"),
    ("ch09.acc_parity", 0, "completed"),
    ("ch09.scale_byte", 12, "bytes of the 32-bit scale cell"),
    # the rank-64 update (M = N = 4096, K = 64): FLOP 2·M·N·K, bytes 2·(M·K + K·N + M·N)
    ("ch00.intensity", _FLOP, "FLOP count"),
    ("ch00.intensity", _BYTES, "byte count"),
    ("ch00.intensity", _BYTES / _FLOP, "turn it over"),
    ("ch00.intensity", 4096 / 3, "§3's n/3 with n = N = 4096: it holds for a square GEMM only"),
    ("ch00.intensity", 64 / 3, "§3's square n/3 with n = K = 64, or 2·M·N·K FLOP over a square GEMM's"),
    ("ch00.intensity", 2 * 4096**3 / _BYTES, "a square GEMM's, 2·4096³"),
    ("ch00.intensity", _FLOP / (2 * 2 * 4096 * 64), "not C: C is written once too — and here C"),
    ("ch00.intensity", _FLOP / (_BYTES + 2 * 4096 * 4096), "C counted as fp32 (4 bytes), or C read as well as written"),
    ("ch00.intensity", _FLOP / (2 * 4096 * 4096), "you counted only C's bytes"),
    ("ch00.intensity", _FLOP / (2 * 4096 * 64), "one matrix; A, B and C each cross DRAM once (A 4096×64"),
    ("ch00.intensity", _FLOP / (_BYTES / 2), "elements, not bytes"),
    ("ch00.intensity", _FLOP / 2 / _BYTES, "M·N·K FLOP instead of 2·M·N·K (a multiply-add is 2 FLOP)"),
    ("ch00.intensity", _FLOP / 4 / _BYTES, "two slips at once"),
    ("ch00.memory_bound", [1024, 4096], "compute-bound sizes"),
    ("ch00.memory_bound", [64, 128], "compared the size n"),
    ("ch00.memory_bound", [64, 128, 256, 512, 1024], "1024 does"),
    ("ch00.memory_bound", [64, 128, 256], "1 memory-bound size is missing"),
    ("ch00.memory_bound", [64, 3], "3 is not one of them"),
    ("ch01.smem_bytes", 128 * 32 * 2, "A tile alone"),
    ("ch01.smem_bytes", 32 * 256 * 2, "B tile alone"),
    ("ch01.smem_bytes", 128 * 32 + 32 * 256, "elements, not bytes"),
    ("ch01.smem_bytes", 128 * 256 * 2, "C tile"),
    ("ch01.smem_bytes", 2 * (128 * 32 + 32 * 256) * 2, "two buffers"),
    ("ch01.smem_bytes", 24, "KiB"),
    ("ch01.smem_bytes", 2 * 32 * 256 * 2, "B tile twice"),
    ("ch01.smem_bytes", 8 * (128 * 32 + 32 * 256) * 2, "bits"),
    ("ch01.smem_bytes", 99999, "too large. Recount on its own each of A's tile (bm×bk = 128×32 elements)"),
    ("ch01.smem_bytes", 4 * (128 * 32 + 32 * 256) * 2, "4× too large"),      # a factor: named, not recounted
    ("ch01.hmma_per_ktile", 16, "one k16 step"),          # also what n16 instead of n8 gives:
    ("ch01.hmma_per_ktile", 16, "(2) one m16n8k16 covers 8 columns of N, not 16"),   # both named
    ("ch01.hmma_per_ktile", 8 * 4 * 2, "16 rows of M"),   # also what k8 instead of k16 gives:
    ("ch01.hmma_per_ktile", 8 * 4 * 2, "16 deep in K"),
    ("ch01.hmma_per_ktile", 4 * 4 * 4, "(1) you used a k-tile of 64 (the default tile's): this kernel's "
                                       "k-tile is bk = 32 (the third number of 128x128x32)"),
    ("ch01.hmma_per_ktile", 4 * 4 * 32, "bk/16 steps"),
    ("ch01.hmma_per_ktile", 64 * 32 * 32, "multiply-adds"),
    ("ch01.hmma_per_ktile", 2 * 64 * 32 * 32, "counts FLOP"),
    ("ch01.hmma_per_ktile", 128, "section 2's count for the default tile"),
    ("ch01.hmma_per_ktile", 32 * 8, "(128/64)·(128/32) = 8 warps"),
    ("ch01.costliest_part", "ldmatrix", "without the copy 524, without ldmatrix 431"),
    ("ch02.ring_smem", 19, "the 1024 B the driver reserves per CTA"),   # the reservation ignored
    ("ch02.ring_smem", 9, "one CTA has it to itself"),
    ("ch02.ring_smem", 37, "elements, not bytes"),
    ("ch02.ring_smem", 38, "elements, not bytes"),
    ("ch02.ring_smem", 20, "more than the SM's 233472 B"),
    ("ch02.ring_smem", 17, "How many more stages fit"),
    ("ch02.ring_smem", 0, "whole number"),
    ("ch02.wait_n", 3, "the group of k-tile kt itself"),
    ("ch02.wait_n", 4, "waits for nothing"),
    ("ch02.wait_n", 0, "too strict"),
    ("ch02.wait_n", -1, "whole number ≥ 0"),
    ("ch02.stages", ("yes", 32), "'yes' says a third or fourth stage helps BK = 64"),   # tests/test_record_predictions.py
    ("ch02.stages", ("no", 64), "which BK gains more over its own one-stage row, not which is faster"),
    ("ch02.stages", ("yes", 128), "'yes' or 'no', then 64 or 32"),
    ("ch07.fp8_speedup", "about 1.5×", "halved only two thirds of FP16's run time"),   # reader 110: a choice
    ("ch07.fp8_speedup", "1x", "says FP8 gains nothing"),
    ("ch07.fp8_speedup", "1.5x", "Ours at 8192³: 1544 (our FP8 top rung) / 776 (our FP16 top rung)"),
    ("ch03.expect_tx", 48 * 32, "elements, not bytes: float32 is 4"),
    ("ch03.expect_tx", 48 * 32 * 2, "2 bytes per element? float32 is 4"),
    ("ch03.expect_tx", 48 * 32 * 8, "8 bytes per element? float32 is 4"),
    ("ch03.expect_tx", 48 * 4, "one column"),
    ("ch03.expect_tx", 32 * 4, "one row"),
    ("ch03.expect_tx", 48 * 32 * 4 * 16, "16× too large"),
    ("ch03.bank_128B", 10, "without swizzle"),
    ("ch03.bank_128B", 1, "swizzled 16-byte chunk"),
    ("ch03.bank_128B", 2, "before the swizzle"),
    ("ch03.bank_128B", 408, "byte offset"),
    ("ch03.bank_128B", 102, "word index"),
    ("ch03.bank_128B", 9, "2 bytes each"),
    ("ch03.bank_128B", 40, "0..31"),
    ("ch04.sbo", 64, "one row"),
    ("ch04.sbo", 1024, "128-byte swizzle"),
    ("ch04.sbo", 32, "encoded field"),
    ("ch04.sbo", 256, "elements, not bytes"),
    ("ch04.sbo", 16, "LBO"),
    ("ch04.sbo", 8, "how many rows apart"),
    ("ch04.descriptor", _desc(0x4000, 4096, 512, 2), "k-step 0's"),
    ("ch04.descriptor", _desc(0x4040, 4096, 512, 2), "+32 bytes per k-step holds for K-major"),
    ("ch04.descriptor", _desc(0x4800, 512, 4096, 2), "LBO and SBO are swapped"),
    ("ch04.descriptor", _desc(0x4800, 4096, 512, 1), "mode 1 (128-byte swizzle)"),
    ("ch04.descriptor", _desc(0x4800, 16, 512, 2), "LBO 16 B is wrong"),
    ("ch04.descriptor", _desc(0x4800, 4096, 1024, 2), "SBO 1024 B is wrong"),
    ("ch04.descriptor", 0x4800 | 4096 << 16 | 512 << 32 | 2 << 62, "byte values >> 4"),
    ("ch04.descriptor", _desc(0x4800, 4096 * 16, 512, 2), "LBO: the field holds the byte offset >> 4"),
    ("ch04.descriptor", 1 << 47 | _desc(0x4800, 4096, 512, 2), "does not decode"),
    ("ch10.bound", (max(_R), min(_R)), "lowest first"),
    ("ch10.bound", (100 * min(_R), 100 * max(_R)), "not percent"),
    ("ch10.bound", (1 / max(_R), 1 / min(_R)), "ours over cuBLAS's time"),
    ("ch10.bound", (min(c for _, c in _PAIRS) / max(o for o, _ in _PAIRS),
                    max(c for _, c in _PAIRS) / min(o for o, _ in _PAIRS)), "times from different rows"),
    ("ch10.bound", (1.004, 1.004), "an interval: the lowest and the highest of the 7 ratios"),
    ("ch10.bound", (min(_R), 1.02), "the lowest is right"),
    ("ch10.bound", (min(o for o, _ in _PAIRS) / max(c for _, c in _PAIRS),
                    max(o for o, _ in _PAIRS) / min(c for _, c in _PAIRS)), "two slips"),   # reader 75
    ("ch10.bound", (1.0, round(max(_R), 2)), "rounded across 1"),                           # low 0.9995
    ("ch10.bound", (0.5, 0.6), "is not the lowest and the highest of the 7 rows' ratios"),
    ("ch10.bound_verdict", "holds", "6 of 7 pairs lie above 1, 1 not"),
    ("ch10.values_hold", [1.0], "you kept [1.00]"),   # inside only; two decimals, as written (reader 127)
    ("ch10.values_hold", [0.99, 1.0, 1.01], "you kept [0.99, 1.00, 1.01]"),
    ("ch10.values_hold", [100, 101], "not percent"),
    ("ch10.bound_verdict", "does not hold", "the interval straddles 1"),
    ("ch10.fraction_both", (759.4 / (132 * 4096 * 1679e-6), 759.4 / 989.4), "swapped"),
    ("ch10.fraction_both", (100 * 759.4 / 989.4, 100 * 759.4 / (132 * 4096 * 1679e-6)), "not percent"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1980e-6)), "1980 MHz is the clock attribute"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1830e-6)), "boost clock"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1972e-6)), "probed after the sample"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1972e-6)), "the in-flight one"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1679e-6) / 2), "4096 FLOP per clock"),
    ("ch10.fraction_both", (759.4 / 989.4 / 2, 759.4 / (132 * 4096 * 1679e-6)), "dense one"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1679e-6) * 132), "summed over every SM"),
    ("ch10.fraction_both", (759.4 / 989.4, 759.4 / (132 * 4096 * 1679e-6) * 1e6), "mind the units"),
    ("ch10.fraction_both", (0.5, 759.4 / (132 * 4096 * 1679e-6)), "the measured-clock fraction is right"),
    ("ch10.fraction_both", (759.4 / 989.4, 0.5), "the datasheet fraction is right"),
    ("ch10.fraction_both", (0.8, 0.7), "both are off: 0.8 of the datasheet's 989.4 TFLOP/s is 792"),
    ("ch10.verdict", "holds", "only one denominator"),
    ("ch10.verdict", "does not hold", "the measured clock one"),
]

#: ch05.producer_step, a code exercise whose answer is CUDA C++ (compiled with NVRTC, no GPU): the
#: producer's refill step with one mistake each. More cases: tests/test_producer_step.py.
_STEP = """if (producer && t < T && !broken) {
  if (empty.wait(ts, tp ^ 1u, wg, t))
    load_stage(ta, tb, base + ts * kStageBytes, full[ts], t, m0, n0);
  else broken = true;
}"""
MISTAKES += [
    ("ch05.producer_step", _STEP.replace("tp ^ 1u,", "tp,"), "a wait that never ends"),
    ("ch05.producer_step", _STEP.replace(" && t < T", ""), "past K"),
    ("ch05.producer_step", _STEP.replace("producer && ", ""), "other than the producer"),
]

#: ch06.cuda_kloop (deep dive 06f): the capstone in the real wrappers; more in tests/test_cuda_capstone.py.
from asynctc.warp_specialization.cuda_kloop import solution as _cuda_kloop_solution  # noqa: E402
_CK = _cuda_kloop_solution()
MISTAKES += [
    ("ch06.cuda_kloop", _CK.replace("wgmma_commit_group();", "wgmma_commit_group()"), "NVRTC cannot compile your loops"),
    ("ch06.cuda_kloop", _CK.replace("ring_wait(empty_bar(stage), phase ^ 1);", "ring_wait(empty_bar(stage), phase);"),
     "deadlock: the producer waits on empty[0] for parity 0"),
]

#: ch06.consumer_loop, a code exercise whose answer is CUDA C++ (compiled with NVRTC, no GPU): the
#: kernel's loop body without `broken`, and each classic mistake made in it. Its right loops and
#: their notes: tests/test_consumer_loop.py.
_LOOP = CONSUMER_LOOP
_WAIT, _RELEASE = "full.wait(pos.stage, pos.phase, wg, k);\n", "if (k > 0 && elected) empty.arrive(prev);\n"
MISTAKES += [
    ("ch06.consumer_loop", _LOOP.replace(_WAIT, ""), "with no wait on full[0] before them"),
    ("ch06.consumer_loop", _LOOP.replace("full.wait(", "empty.wait("),
     "wait on empty[0], the barrier the consumers themselves complete"),
    ("ch06.consumer_loop", _LOOP.replace("full.wait(", "empty.wait("), "a deadlock at k-tile 0"),
    ("ch06.consumer_loop", _LOOP.replace("pos.phase, wg", "pos.phase ^ 1u, wg"),
     "the phase before this fill (the producer's parity"),
    ("ch06.consumer_loop", _LOOP.replace("pos.phase, wg", "pos.phase ^ 1u, wg"),
     "ring model with your parities: a race at k-tile 0"),
    ("ch06.consumer_loop", _LOOP.replace("pos.phase, wg", "0, wg"),
     "ring model with your parities: a deadlock at k-tile 4"),
    ("ch06.consumer_loop", _LOOP.replace("empty.arrive(prev)", "empty.arrive(pos.stage)"),
     "That is this k-tile's own stage: wgmma_wait_group<1>() leaves its group in flight"),
    ("ch06.consumer_loop", _LOOP.replace(_RELEASE, "if (elected) empty.arrive(pos.stage);\n"),   # fails at k = 0
     "the producer may refill stage 0 while those wgmmas still read it"),
    ("ch06.consumer_loop", _LOOP.replace("wgmma_wait_group<1>();\nfence_accumulators(acc);\n" + _RELEASE,
                                         _RELEASE + "wgmma_wait_group<1>();\nfence_accumulators(acc);\n"),
     "The release comes before wgmma_wait_group"),
    ("ch06.consumer_loop", _LOOP.replace("pos.advance();", ""), "pos.advance() is missing"),
    ("ch06.consumer_loop", _LOOP.replace("prev = pos.stage;", ""), "prev is never set"),
    ("ch06.consumer_loop", _LOOP.replace("k > 0 && elected", "k > 0"),
     "128 arrivals per warpgroup on empty[s], which counts 2"),
    ("ch06.consumer_loop", _LOOP.replace("k > 0 && elected", "k > 0"), "complete 64 phases of it"),
    ("ch06.consumer_loop", _LOOP.replace("pos.advance();", "pos.advance()"),
     'NVRTC cannot compile your loop — after your last line: expected a ";"'),
    ("ch06.consumer_loop", _LOOP.replace("fence_accumulators(acc);\nmma", "fence_acumulators(acc);\nmma"),
     'line 2 (fence_acumulators(acc);): identifier "fence_acumulators" is undefined'),
    ("ch06.consumer_loop", _LOOP.replace("fence_accumulators(acc);\nmma", "fence_acumulators(acc);\nmma"),
     "(in scope and close: fence_accumulators)"),
    ("ch06.consumer_loop", _LOOP.replace("* kStageBytes", "* STAGE_BYTES"),
     'identifier "STAGE_BYTES" is undefined (in scope and close: kStageBytes)'),
    ("ch06.consumer_loop", _LOOP.replace("prev = pos.stage;", "x = pos.stage;"),
     'identifier "x" is undefined (the names in scope: full.wait, empty, empty.arrive, prev'),
    ("ch06.consumer_loop", _LOOP.replace("k > 0 && elected", "elected"), "At k = 0 prev is still 0, so the release lands on stage 0"),
    ("ch06.consumer_loop", _LOOP.replace("empty.arrive(prev)", "full.arrive(prev)"), "your release arrives on full[0]"),
    ("ch06.consumer_loop", _LOOP.replace("<1>", "<2>"), "wgmma_wait_group<2>() leaves k-tile k − 1's group"),
    ("ch06.consumer_loop", _LOOP.replace("wgmma_wait_group<1>();\n", ""), "no wgmma.wait_group retired it"),
    ("ch06.consumer_loop", _LOOP.replace("prev = pos.stage;\npos.advance();", "pos.advance();\nprev = pos.stage;"),
     "your prev is set after pos.advance()"),
    ("ch06.consumer_loop", _LOOP.replace(_RELEASE, ""), "a deadlock at k-tile 4"),
    ("ch06.consumer_loop", _LOOP.replace("mma_ktile(", "if (elected) mma_ktile("), "wgmma is .sync.aligned"),
    ("ch06.consumer_loop", _LOOP.replace("full.wait(", "if (elected) full.wait("), "only the elected thread waits"),
    ("ch06.consumer_loop", _LOOP.replace("da0, pos.stage", "da0, prev").replace("db0, pos.stage", "db0, prev"),
     "your wgmmas read stage 0, but the producer put this k-tile in stage 1"),
    ("ch06.consumer_loop", _LOOP.replace("pos.advance();", "pos.advance(); pos.advance();"),
     "advance the ring once per k-tile"),
    ("ch06.consumer_loop", _LOOP.replace("wgmma_wait_group<1>();", "wgmma_wait_group<1>;"),
     "line 5: wgmma_wait_group<1> names the function without calling it"),
    ("ch06.consumer_loop", _LOOP + "ring = 0;\n", "ring is the kernel's"),
    ("ch06.consumer_loop", 5, "pass your loop body as a string"),
]

#: ch06.whole_kloop, chapter 06's capstone (both roles' loops over several tiles): its four slips
#: and their hints; more cases: tests/test_whole_kloop.py.
_WK = _whole_kloop.SOLUTION
MISTAKES += [
    ("ch06.whole_kloop", _WK.replace("int stage = 0, phase = 0; ", "").replace(
        "for (int tile = 0; tile < TILES; ++tile) {\n", "for (int tile = 0; tile < TILES; ++tile) {\n    int stage = 0, phase = 0;\n"),
     "the ring does not restart with a tile"),
    ("ch06.whole_kloop", _WK.replace("wgmma_wait_group<0>();             // the wgmmas are done reading the stage\n", ""),
     "release before the last read"),
    ("ch06.whole_kloop", _WK.replace("(stage, kStageBytes)", "(stage, kStageBytes / 2)"), "you announce 16384 bytes on full[0]"),
    ("ch06.whole_kloop", _WK.replace("full.wait(stage, phase);", "empty.wait(stage, phase);"),
     "your consumers wait on empty[0]"),
    ("ch06.whole_kloop", 5, "pass your loops as a string"),
]


#: ch03.stage_fill, a code exercise whose answer is CUDA C++ (compiled with NVRTC, no GPU): the
#: kernel's own lines and each kind of mistake. More cases: tests/test_stage_fill.py.
_FILL = ("mbarrier_arrive_expect_tx(full_bar, (BM + BN) * BK * 2);\n"
         "tma_load_2d(stage, ta, full_bar, kt * BK, m0);\n"
         "tma_load_2d(stage + BM * BK * 2, tb, full_bar, kt * BK, n0);\n")
_BYTES = "(BM + BN) * BK * 2"
MISTAKES += [
    ("ch03.stage_fill", _FILL.replace(_BYTES, "BM * BK * 2"), "completes when only A's 16384 bytes have landed"),
    ("ch03.stage_fill", _FILL.replace(_BYTES, "(BM + BN) * BK"), "the stage's elements"),
    ("ch03.stage_fill", _FILL.replace(_BYTES, "(BM + BN) * BK * 4"), "phase 0 never completes"),
    ("ch03.stage_fill", _FILL.replace("stage + BM * BK * 2", "stage + BM * BK"), "overlap"),
    ("ch03.stage_fill", _FILL.replace("stage + BM * BK * 2", "stage + 2 * BM * BK * 2"), "outside its 32768 bytes"),
    ("ch03.stage_fill", _FILL.replace("kt * BK, m0", "m0, kt * BK"), "the coordinates are swapped"),
    ("ch03.stage_fill", _FILL.replace("kt * BK, n0", "kt, n0"), "not k-tiles"),
    ("ch03.stage_fill", _FILL.replace("kt * BK, n0", "kt * BK, m0"), "B's rows start at n0"),
    ("ch03.stage_fill", _FILL.replace("tb,", "ta,"), "2 loads from tensor map ta"),
    ("ch03.stage_fill", _FILL.replace("mbarrier_arrive_expect_tx", "mbarrier_expect_tx"), "nothing arrives"),
    ("ch03.stage_fill", _FILL.replace("full_bar, (", "bar, ("), 'identifier "bar" is undefined'),
    ("ch03.stage_fill", 5, "pass your lines as a string"),
]

#: ch01.two_rows, a numba kernel run in the simulator: its mistakes, each launched (a few seconds
#: each), are in tests/test_two_rows.py; here only what is judged without a launch.
MISTAKES += [("ch01.two_rows", 5, "pass your kernel, the function under @cuda.jit")]


def _promotion(reset=True, add=True, tail=True, shift=1, times=1, never=False, fp64=False):
    """A learner's ch07.promotion with one mistake (none with the defaults)."""
    from asynctc import fp8

    def promoted_sum(products, interval):
        total, acc = (0.0 if fp64 else np.float32(0.0)), 0.0
        tiles = len(products) // 128
        for t in range(tiles):
            acc = fp8.tc_dot(products[t * 128:(t + 1) * 128], acc=acc)
            if not never and ((t + shift) % (interval * times) == 0 or (tail and t == tiles - 1)):
                total = total + (float(acc) if fp64 else np.float32(acc)) if add else np.float32(acc)
                acc = 0.0 if reset else acc
        return fp8.tc_dot(products) if never else total
    return promoted_sum


MISTAKES += [
    ("ch07.promotion", _promotion(never=True), "that is the unpromoted accumulator: its error grows with K"),
    ("ch07.promotion", _promotion(reset=False), "never restart it at 0"),
    ("ch07.promotion", _promotion(add=False), "`total = acc` replaces the total"),
    ("ch07.promotion", _promotion(tail=False), "7 k-tiles is not a multiple of 2: the last k-tile is never added"),
    ("ch07.promotion", _promotion(tail=False), "the last k-tile is never added. Promote once more after the last "
     "k-tile (on the swamping input with K = 896 (7 k-tiles), interval = 2: your total "),
    ("ch07.promotion", _promotion(tail=False), "yours is inside the bound, but the bound only limits how far"),
    ("ch07.promotion", _promotion(shift=0), "one k-tile early"),
    ("ch07.promotion", _promotion(times=2), "that promotes every 2 k-tiles; interval = 1 asks for every 1"),
    ("ch07.promotion", lambda p, i: float(p.sum()), "yours is inside the bound, but the bound only limits how far "
     "the correct sum may stray from float64; the check asks for the correct sum itself"),
    ("ch07.promotion", lambda p, i: p, "return one number, the total"),
    ("ch07.promotion", 3.0, "pass your function itself"),
]


def _issue(elect=True, first=lambda kt, j: kt > 0 or j > 0, bar=lambda t, s: t.empty[s], before=False,
           commit=True, stage=lambda s: s, steps=None, wait=lambda t, s: t.full[s],
           parity=lambda kt, n: (kt // n) & 1, fence="after"):
    """A learner's ch09.mma_issue with one mistake (none with the defaults)."""
    def issue_ktile(t, kt, s):
        if elect == "commit outside" and not t.elected:
            t.commit(bar(t, s))                      # the guard left out the commit only
            return
        if elect is True and not t.elected:
            return
        if fence == "before":
            t.fence_after()
        if wait:
            t.wait(wait(t, s), parity(kt, t.stages))
        if fence == "after":
            t.fence_after()
        if commit and before:
            t.commit(bar(t, s))
        for j in range(steps or t.steps):
            t.mma(stage(s), j, first(kt, j))
        if commit and not before:
            t.commit(bar(t, s))
    return issue_ktile


MISTAKES += [
    ("ch09.mma_issue", _issue(elect=False), "32 threads of warp 1 issue MMAs"),
    ("ch09.mma_issue", _issue(elect="commit outside"), "32 threads of warp 1 issue tcgen05.commit, 31 of them"),
    ("ch09.mma_issue", _issue(first=lambda kt, j: True), "tcgen05.alloc does not zero them"),
    ("ch09.mma_issue", _issue(first=lambda kt, j: j > 0), "accumulate=False at k-tile 1 (stage 1), k-step 0"),
    ("ch09.mma_issue", _issue(first=lambda kt, j: kt > 0), "k-step 1, throws away the k-steps before it"),
    ("ch09.mma_issue", _issue(bar=lambda t, s: t.full[s]), "full is the producer's barrier"),
    ("ch09.mma_issue", _issue(bar=lambda t, s: t.done), "you commit to t.done"),
    ("ch09.mma_issue", _issue(bar=lambda t, s: t.empty[(s + 1) % 2]), "you commit to empty[1]: this k-tile read stage 0"),
    ("ch09.mma_issue", _issue(before=True), "your commit comes before an MMA"),
    ("ch09.mma_issue", _issue(commit=False), "The kernel's model without it: a deadlock at k-tile 2"),
    ("ch09.mma_issue", _issue(stage=lambda s: 0), "at k-tile 1 (stage 1) an MMA reads stage 0"),
    ("ch09.mma_issue", _issue(steps=3), "your MMAs cover k-steps [0, 1, 2]"),
    ("ch09.mma_issue", _issue(wait=None), "your MMAs read stage 0 without waiting"),
    ("ch09.mma_issue", _issue(wait=lambda t, s: t.empty[s]), "empty is the barrier your commit arrives on"),
    ("ch09.mma_issue", _issue(parity=lambda kt, n: 0), "at k-tile 2 (stage 0) you wait on parity 0"),
    ("ch09.mma_issue", _issue(parity=lambda kt, n: ((kt // n) & 1) ^ 1), "at k-tile 0 (stage 0) you wait on parity 1"),
    ("ch09.mma_issue", _issue(fence=None), "at k-tile 0 (stage 0) nothing orders your MMAs after the wait"),
    ("ch09.mma_issue", _issue(fence="before"), "your fence comes before the wait"),
    ("ch09.mma_issue", lambda t, kt, s: 1, "returns nothing"),
    ("ch09.mma_issue", 3, "pass your function itself"),
]


def test_mma_issue_accepts_the_kernels_k_tile(capsys):
    assert exercises.check("ch09.mma_issue", _issue(), solution=True)

    def unanswered(t, kt, s):
        ...
    assert not exercises.check("ch09.mma_issue", unanswered)
    assert "not answered yet" in capsys.readouterr().out


def test_promotion_accepts_the_loop_and_an_fp64_total(capsys):
    for f in (_promotion(), _promotion(fp64=True)):
        assert exercises.check("ch07.promotion", f, solution=True)
        assert "falls outside it" in capsys.readouterr().out
    assert not exercises.check("ch07.promotion", lambda p, i: ...)
    assert "not answered yet" in capsys.readouterr().out


def test_unanswered_is_not_an_error(capsys):
    assert exercises.check("ch00.intensity", ..., n=512) is False
    assert "not answered yet" in capsys.readouterr().out


def test_right_and_wrong():
    assert exercises.check("ch00.intensity", 512 / 3, n=512)
    assert not exercises.check("ch00.intensity", 512 / 2, n=512)
    with pytest.raises(AssertionError, match="wrong"):
        exercises.check("ch00.intensity", 1.0, n=512, solution=True)
    with pytest.raises(AssertionError, match="missing"):
        exercises.check("ch00.intensity", ..., n=512, solution=True)


def test_expected_values_come_from_models():
    assert exercises.expected("ch01.smem_bytes", bm=128, bn=128, bk=64) == (128 * 64 + 64 * 128) * 2
    assert exercises.expected("ch01.hmma_per_ktile", wm=64, wn=64, bk=64) == 4 * 8 * 4
    abl = [{"variant": "no global→shared copy", "tflops": 500.0}, {"variant": "no ldmatrix", "tflops": 430.0}]
    assert exercises.expected("ch01.costliest_part", ablation=abl) == "copy"
    assert exercises.check("ch01.costliest_part", " Copy", ablation=abl)
    assert not exercises.check("ch01.costliest_part", "both", ablation=abl)
    assert not exercises.check("ch01.costliest_part", "ldmatrix", ablation=abl)
    abl[1]["tflops"] = 600.0
    assert exercises.expected("ch01.costliest_part", ablation=abl) == "ldmatrix"
    assert exercises.expected("ch00.memory_bound", sizes=[3, 300, 3000], ridge=250) == [3, 300]


def test_unknown_exercise():
    with pytest.raises(KeyError, match="no exercise.*chapters with exercises"):
        exercises.check("ch99.nothing", 1)
    with pytest.raises(KeyError, match="no exercise 'ch05.nothing'; import asynctc.models.pipeline"):
        exercises.check("ch05.nothing", 1)


def test_a_fresh_session_finds_a_chapters_exercise():
    """check('ch05.full_parity', …) before anything imported the chapter module: the checker
    imports it (asynctc.models.pipeline) instead of failing with an empty list."""
    import subprocess
    import sys
    code = ("from asynctc.core import exercises\n"
            "import sys\n"
            "assert 'asynctc.models.pipeline' not in sys.modules\n"
            "assert exercises.check('ch05.full_parity', 0, k=13, stages=3)\n"
            "assert exercises.check('ch09.lane_quarter', (64, 95), warp=6)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[ch05.full_parity] correct" in out.stdout


#: ch00.intensity with n alone keeps its square meaning (M = N = K = n; the teacher's checkpoint, n=4096).
SQUARE_MISTAKES = [
    (2 * n**3, "FLOP count"),
    (6 * n * n, "byte count"),
    (6 * n * n / (2 * n**3), "turn it over"),
    (n / 2, "not C"),
    (n / 4, "four matrices"),
    (n / 4, "C counted as fp32"),
    (n, "one matrix"),
    (2 * n / 3, "elements, not bytes"),
    (n / 6, "a multiply-add is 2 FLOP"),
    (2 * n**3 / (3 * 4 * n * n), "not quite — two slips give this number, check both"),
    (n / 6, "or 4 bytes per element instead of fp16's 2"),
    (n / 12, "two slips at once"),
]


@pytest.mark.parametrize("answer,words", SQUARE_MISTAKES, ids=[w[:30] for _, w in SQUARE_MISTAKES])
def test_square_intensity_hints(capsys, answer, words):
    assert exercises.expected("ch00.intensity", n=n) == pytest.approx(n / 3)
    assert not exercises.check("ch00.intensity", answer, n=n)
    out = capsys.readouterr().out
    assert words in out and "square GEMM only" not in out, out


def test_one_tmem_accumulator_keeps_its_meaning(capsys):
    """ch09.tmem_columns without ``accumulators``: one accumulator (the teacher's checkpoint)."""
    assert exercises.expected("ch09.tmem_columns", m=128, n=96) == 128
    assert exercises.expected("ch09.tmem_columns", m=128, n=160) == 256
    assert exercises.check("ch09.tmem_columns", 128, m=128, n=96, solution=True)
    assert not exercises.check("ch09.tmem_columns", 96, m=128, n=96)
    out = capsys.readouterr().out
    assert "power of two" in out and "keeps" not in out, out


def test_every_exercise_has_a_diagnosis_and_a_row_here():
    names = exercises.names()
    assert set(KW) == set(names), "add the new exercise to KW and MISTAKES"
    assert all(exercises._EXERCISES[x].diagnose is not None for x in names)
    assert {m[0] for m in MISTAKES} == set(names)


@pytest.mark.parametrize("name,answer,words", MISTAKES,
                         ids=[f"{m[0]}=code{i}" if callable(m[1]) or isinstance(m[1], tuple)
                              and callable(m[1][0]) else f"{m[0]}={m[1]!r}"[:60]
                              for i, m in enumerate(MISTAKES)])
def test_hint_names_the_mistake(capsys, name, answer, words):
    exp = exercises.expected(name, **KW[name])
    assert not exercises.check(name, answer, **KW[name])
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"[{name}] not quite — ") and "try again" not in out, out
    if words:
        assert words in out, out
    if isinstance(exp, (int, float)) and abs(exp) >= 100:     # a hint never gives the answer away
        shown = [f"{exp}", f"{exp:#x}"] if isinstance(exp, int) else [f"{exp:.1f}", f"{exp:.0f}"]
        assert not any(re.search(rf"(?<![\w.]){re.escape(x)}(?![\w.])", out) for x in shown), out
    # The same wrong answer in a solution cell fails CI with the hint in the message.
    with pytest.raises(AssertionError, match="is wrong"):
        exercises.check(name, answer, solution=True, **KW[name])


def test_one_off_hints_leave_the_count_to_the_learner(capsys):
    """An answer one short of a small count: the hint shows the learner's own sum, not the next
    one (ch02.ring_smem answered 6 once printed the sum for 7 stages)."""
    assert exercises.expected("ch02.ring_smem", **KW["ch02.ring_smem"]) == 18
    assert not exercises.check("ch02.ring_smem", 17, **KW["ch02.ring_smem"])
    out = capsys.readouterr().out
    assert "18" not in out and "17 stages" in out, out


def test_a_hint_without_a_known_mistake_says_how_far_off(capsys):
    assert not exercises.check("ch01.smem_bytes", 24576 * 16, **KW["ch01.smem_bytes"])
    assert "16× too large" in capsys.readouterr().out
    assert not exercises.check("ch01.smem_bytes", 1000, **KW["ch01.smem_bytes"])
    assert "too small" in capsys.readouterr().out


@pytest.mark.parametrize("name,answer", [
    ("ch00.intensity", 2**11 / 33),
    ("ch00.intensity", 62.06),                   # 0.1 % (the tolerance the prompt states)
    ("ch00.intensity", "62.06"),
    ("ch00.intensity", np.float32(2**11 / 33)),
    ("ch00.memory_bound", [64, 128, 256, 512]),
    ("ch00.memory_bound", (512, 256, 128, 64)),
    ("ch00.memory_bound", {64, 128, 256, 512}),
    ("ch00.memory_bound", np.array([512, 64, 256, 128])),
    ("ch01.smem_bytes", 24576),
    ("ch01.smem_bytes", 24576.0),
    ("ch01.smem_bytes", np.int64(24576)),
    ("ch01.smem_bytes", "24_576"),
    ("ch01.costliest_part", "COPY"),
    ("ch01.costliest_part", " 'copy' "),
    ("ch01.costliest_part", "global→shared copy"),
    ("ch02.wait_n", 2.0),
    ("ch03.bank_128B", np.uint8(6)),
    ("ch04.sbo", "0x200"),
    ("ch04.descriptor", _desc(0x4800, 4096, 512, 2)),
    ("ch04.descriptor", hex(_desc(0x4800, 4096, 512, 2))),
    ("ch04.descriptor", descriptors.WgmmaDescriptor(0x4800, 4096, 512, 64)),
])
def test_equivalent_forms_are_accepted(name, answer):
    assert exercises.check(name, answer, solution=True, **KW[name])


def test_ldmatrix_aliases_and_tolerance_stated():
    abl = [dict(x) for x in ABLATION]
    abl[2]["tflops"] = 600.0
    assert exercises.check("ch01.costliest_part", "LDSM", ablation=abl)
    assert "0.1%" in exercises.prompt("ch00.intensity")
    assert not exercises.check("ch00.intensity", 171, n=512)      # 0.2 % off: outside


@pytest.mark.parametrize("name,answer,form", [
    ("ch00.intensity", "a lot", "a number"),
    ("ch00.intensity", "512/3", "a number (got the text '512/3', a string: drop the quotes"),
    ("ch00.intensity", " 2 * 512**3 / (6 * 512 * 512)", "a number (got the text ' 2 * 512**3 / (6 * 512 * 512)', "
     "a string: drop the quotes, and Python computes 2 * 512**3 / (6 * 512 * 512) for you)"),
    ("ch00.intensity", [170.67], "a single number"),
    ("ch00.memory_bound", 64, "a list of values"),
    ("ch01.smem_bytes", True, "a number, not True/False"),
    ("ch04.descriptor", float(_desc(0x4800, 4096, 512, 2)), "an exact int"),
    ("ch01.costliest_part", 3, "one of 'copy', 'ldmatrix', in quotes"),
    ("ch06.producer_wait", 3, "2 values in parentheses, (stage, parity)"),
])
def test_an_answer_in_no_accepted_form_says_which_form(capsys, name, answer, form):
    assert not exercises.check(name, answer, **KW[name])
    assert f"answer with {form}" in capsys.readouterr().out


def test_missing_arguments_get_a_sentence(capsys):
    assert exercises.check("ch01.smem_bytes", 123) is False
    assert capsys.readouterr().out.strip() == (
        "[ch01.smem_bytes] needs bm, bn, bk: check('ch01.smem_bytes', answer, bm=…, bn=…, bk=…)")
    assert exercises.check("ch01.smem_bytes", 123, bm=128, bn=256) is False
    assert "needs bk:" in capsys.readouterr().out
    assert exercises.check("ch04.sbo", 512, swizzle=64, major="K") is False
    assert "[ch04.sbo] takes swizzle, not major" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="needs bm, bn, bk"):
        exercises.check("ch01.smem_bytes", 123, solution=True)


def test_bad_argument_values_get_a_sentence(capsys):
    assert exercises.check("ch03.expect_tx", 1, rows=300, cols=32, dtype="float32") is False
    assert "cannot be checked with these arguments: box[0]=300" in capsys.readouterr().out


def test_solutions_in_the_notebooks_still_pass():
    """The expressions the solution cells use, with solution=True."""
    ex = exercises.check
    assert ex("ch00.intensity", 2 * 512**3 / (2 * 3 * 512 * 512), n=512, solution=True)
    assert ex("ch00.memory_bound", [s for s in SIZES if s / 3 < RIDGE], sizes=SIZES, ridge=RIDGE,
              solution=True)
    assert ex("ch01.smem_bytes", (128 * 32 + 32 * 256) * 2, bm=128, bn=256, bk=32, solution=True)
    assert ex("ch01.hmma_per_ktile", (64 // 16) * (32 // 8) * (32 // 16), wm=64, wn=32, bk=32,
              solution=True)
    assert ex("ch02.ring_smem", (228 * 1024 // 2 - 1024) // ((128 * 32 + 32 * 128) * 2), bm=128,
              bn=128, bk=32, ctas=2, solution=True)
    assert ex("ch02.wait_n", 4 - 2, stages=4, solution=True)
    assert ex("ch03.expect_tx", 48 * 32 * 4, rows=48, cols=32, dtype="float32", solution=True)
    row, col = 3, 20
    chunk, within = divmod(col * 2, 16)
    offset = row * 128 + ((chunk ^ (row % 8)) * 16) + within
    assert ex("ch03.bank_128B", (offset // 4) % 32, row=row, col=col, solution=True)
    assert ex("ch04.sbo", 8 * 64, swizzle=64, solution=True)
    r, c = 43, 20
    assert ex("ch04.acc_owner", (32 * (r // 16) + 4 * (r % 8) + c % 8 // 2, 4 * (c // 8) + 2 * (r % 16 // 8) + c % 2),
              r=r, c=c, solution=True)
    assert ex("ch04.acc_owner", (37, 7), r=25, c=11)                # thread 37's last register (chapter 04's figure)
    assert ex("ch06.consumer_regs", (65536 - 128 * 56) // (128 * 2) // 8 * 8, producer_regs=56,
              consumers=2, solution=True)
    assert ex("ch06.cluster_arrivals", 2 * 2, consumers=2, cluster=2, solution=True)
    w, lane = divmod(77, 32)
    assert ex("ch06.store_position", (16 * w + lane // 4 + 8 * ((46 >> 1) & 1),
                                      8 * (46 >> 2) + 2 * (lane % 4) + (46 & 1) - 64 * (46 // 32)),
              thread=77, index=46, solution=True)
    i = 1 * 5 + 2
    assert ex("ch06.producer_wait", (i % 4, (i // 4 + 1) % 2), tile=1, k=2, k_tiles=5, stages=4,
              solution=True)
    assert ex("ch07.quantize", 288.0, value=300.0, solution=True)
    assert ex("ch07.quantize", 448.0, value=500.0, solution=True)
    assert ex("ch07.quantize", 14.0, value=13.5, solution=True)
    assert ex("ch07.block_scale", 37.5 / 448, amax=37.5, solution=True)
    kw10 = KW["ch10.fraction_both"]
    assert ex("ch10.fraction_both", (kw10["tflops"] / 989.4, kw10["tflops"] / (kw10["sm_count"] * 4096
              * kw10["sm_mhz"] * 1e-6)), **kw10, solution=True)
    assert ex("ch10.verdict", "partly", **KW["ch10.verdict"], solution=True)
    assert ex("ch07.block_scale", 0.125, amax=37.5, pow2=True, solution=True)
    assert ex("ch07.promote_interval", 2, k=4096, target=1e-2, solution=True)
    s = 37.5 / 448                                      # ch07.round_trip: 10 / s ≈ 119.5 → 120
    assert ex("ch07.round_trip", 120 * s, value=10.0, amax=37.5, solution=True)
    assert ex("ch07.round_trip", 10.04, value=10.0, amax=37.5)
    for event, barrier in (("producer waits", "empty"), ("TMA completes", "full"),
                           ("consumer waits", "full"), ("consumer arrives", "empty")):
        assert ex("ch06.which_barrier", barrier, event=event, solution=True)
    start = 0x4000 + 2 * 16 * 64
    desc = (start >> 4) | (64 * 64 >> 4) << 16 | (8 * 64 >> 4) << 32 | 2 << 62
    assert ex("ch04.descriptor", desc, **KW["ch04.descriptor"], solution=True)


def test_prompt_tolerance_never_reads_zero_percent():
    """ch07.block_scale's prompt once said "within 0.0 %" and took only an unrounded answer (issue 22):
    its prompt and its tolerance now agree, and the answer rounded to three significant figures
    (the prompt says they are enough) passes, two do not."""
    assert exercises.percent(1e-5) == "0.001%" and exercises.percent(1e-3) == "0.1%"
    assert exercises.percent(0.05) == "5%" and exercises.percent(0.125) == "12.5%"
    p = exercises.prompt("ch07.block_scale")
    assert "0.0%" not in p and "0.1%" in p and "three significant figures" in p.lower()
    assert exercises.check("ch07.block_scale", 0.0837, amax=37.5)              # 37.5 / 448 = 0.08370…
    assert exercises.check("ch07.block_scale", round(896 / 448, 2), amax=896)   # checkpoints.md's 2.0
    assert not exercises.check("ch07.block_scale", 0.084, amax=37.5)


def test_descriptor_with_the_raw_address_gets_the_shift_hint(capsys):
    """The raw byte address in the start field: the hint says >> 4, not "bit 14 is set"."""
    start = 0x4000 + 2 * 16 * 64
    raw = start | (4096 >> 4) << 16 | (512 >> 4) << 32 | 2 << 62
    assert not exercises.check("ch04.descriptor", raw, mn=128, k=64, dtype="bfloat16", major="MN",
                               swizzle=64, step=2, base=0x4000)
    out = capsys.readouterr().out
    assert ">> 4" in out and "0x4800 >> 4 = 0x480" in out and "bits [14]" not in out


@pytest.mark.parametrize("name,answer", [
    ("ch03.swizzle_128b", lambda offset: offset ^ (((offset >> 7) & 7) << 4)),
    ("ch03.swizzle_128b", lambda offset: np.int64(offset // 128 * 128 + ((offset % 128 // 16) ^ (offset // 128 % 8)) * 16
                                                  + offset % 16)),
    ("ch04.encode", lambda a, lbo, sbo, swizzle: (a >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32
     | {0: 0, 128: 1, 64: 2, 32: 3}[swizzle] << 62),
    ("ch04.encode", descriptors.encode),
    ("ch04.kstep", lambda desc0, s, major: desc0 + (s * (32 if major == "K" else 16 * 128) >> 4)),
    ("ch04.acc_owner_fn", _owner),
    ("ch04.acc_owner_fn", lambda r, c: [np.int64(_owner(r, c)[0]), _owner(r, c)[1]]),
    ("ch05.ring_parities", (lambda k, S: (k // S) % 2, lambda t, S: (t // S + 1) % 2)),
    ("ch05.ring_parities", [lambda k, S: (k // S) & 1, lambda t, S: 1 - (t // S) % 2]),
    ("ch08.repair", _STORE[:5] + [("bulk_wait_read", 0)] + _STORE[5:]),
    ("ch03.stage_fill", _FILL),
    ("ch03.stage_fill", "const u32 bytes = 2u * 16384u;\nmbarrier_arrive_expect_tx(full_bar, bytes);\n"
                        "tma_load_2d(stage + 16384, tb, full_bar, BK * kt, n0);\n"
                        "tma_load_2d(stage, ta, full_bar, BK * kt, m0);\n"),
])
def test_code_exercises_accept_right_code(capsys, name, answer):
    assert exercises.check(name, answer, solution=True, **KW[name])
    out = capsys.readouterr().out.strip()      # "correct", or "correct — " and a pass note (ch08.repair's store)
    assert out == f"[{name}] correct" or out.startswith(f"[{name}] correct — "), out


@pytest.mark.parametrize("name,answer", [
    ("ch03.swizzle_128b", lambda offset: ...),
    ("ch04.encode", lambda a, lbo, sbo, swizzle: None),
    ("ch04.kstep", lambda desc0, s, major: ...),
    ("ch04.acc_owner_fn", lambda r, c: ...),
    ("ch05.ring_parities", (lambda k, S: ..., lambda t, S: ...)),
    ("ch05.ring_parities", (lambda k, S: (k // S) % 2, lambda t, S: None)),
    ("ch08.repair", list(_STORE)),                         # the broken program, unchanged
    ("ch06.consumer_loop", "\n    // your code: wait for stage pos.stage to hold k-tile k, ...\n"),
    ("ch06.whole_kloop", _whole_kloop.TEMPLATE),
    ("ch03.stage_fill", "\n...   // mbarrier_arrive_expect_tx(full_bar, ?);\n"),
])
def test_code_exercises_whose_body_is_still_dots_are_unanswered(capsys, tmp_path, monkeypatch, name, answer):
    from asynctc.core import progress
    monkeypatch.setenv(progress.ENV, str(tmp_path / "p.jsonl"))
    assert not exercises.check(name, answer, **KW[name])
    assert "not answered yet" in capsys.readouterr().out
    assert progress.summary(progress.attempts(tmp_path / "p.jsonl"))[name]["status"] == "unanswered"


def test_the_ring_model_runs_the_kernels_parities_when_given_them():
    """simulate(parities=...) with the kernel's own formulas is the default run, span for span."""
    a = _pipeline.simulate(4, 1, 2, 13)
    b = _pipeline.simulate(4, 1, 2, 13, parities=(lambda k, S: (k // S) % 2, lambda t, S: (t // S + 1) % 2))
    assert a.diagnosis is None and b.diagnosis is None and a.spans == b.spans


def test_mma_issue_hint_counts_the_other_mistakes(capsys):
    """Two mistakes: the hint names the first and says one more remains; one mistake: no count."""
    assert not exercises.check("ch09.mma_issue", _issue(steps=3, bar=lambda t, s: t.done))
    out = capsys.readouterr().out
    assert "your MMAs cover k-steps [0, 1, 2]" in out and "(And 1 more mistake: fix this one first.)" in out
    assert not exercises.check("ch09.mma_issue", _issue(elect=False, fence=None, parity=lambda kt, n: 0))
    out = capsys.readouterr().out
    assert "32 threads of warp 1 issue MMAs" in out and "(And 2 more mistakes: fix this one first.)" in out
    for _key, answer, _hint in [m for m in MISTAKES if m[0] == "ch09.mma_issue"]:
        exercises.check("ch09.mma_issue", answer)
        assert "more mistake" not in capsys.readouterr().out


def test_values_hold_says_when_rounding_the_rows_agrees_by_their_spacing(capsys):
    """Readers 134-136: rounding each row's ratio passes on the recorded pairs; the note says why."""
    assert exercises.check("ch10.values_hold", sorted({round(x, 2) for x in _R}), pairs=_PAIRS, digits=2)
    assert "rounding each row's ratio gives the same list here" in capsys.readouterr().out
    gapped = [(1.0, 0.99), (1.0, 1.02)]                      # a gap of 0.03: rounding the rows misses two
    assert not exercises.check("ch10.values_hold", [0.99, 1.02], pairs=gapped, digits=2)
    assert exercises.check("ch10.values_hold", [0.99, 1.0, 1.01, 1.02], pairs=gapped, digits=2)
    assert "rounding" not in capsys.readouterr().out.split("\n")[-2]
