"""Chapter 09's opening story in numbers: what an fp32 accumulator costs in Hopper's register file
(chapter 06's budget) and in Blackwell's Tensor Memory. Arithmetic only; nothing here measures or
plots (the picture is :func:`asynctc.tcgen05.figures.accumulator_homes`).

Sources: 65536 32-bit registers per SM and at most 255 per thread on sm_90 (CUDA C++ Programming
Guide, "Compute Capabilities"); chapter 06's producer / consumer split (``setmaxnreg`` 40 / 232,
:class:`asynctc.warp_specialization.config.WSConfig`); the registers a consumer needs beside its
accumulators (:data:`asynctc.pipeline.config.REG_OVERHEAD`, from ptxas); TMEM 128 lanes × 512
columns of 32 bits per SM (PTX ISA, "Tensor Memory", :mod:`asynctc.models.tmem`).
"""

from __future__ import annotations

from ..pipeline.config import REG_OVERHEAD, REGS_PER_SM
from ..warp_specialization.config import WSConfig

#: The cases the chapter compares: (name, fp32 accumulator values per SM on Hopper, TMEM columns per
#: SM on Blackwell, CTAs that hold it on Blackwell). The 256×256 tile is a CTA pair's on Blackwell:
#: each of the pair's two SMs keeps its 128 rows.
CASES = (("one 128×256 accumulator (ch. 06)", 128 * 256, 256, 1),
         ("two 128×256 accumulators", 2 * 128 * 256, 512, 1),
         ("one 256×256 accumulator", 256 * 256, 256, 2))


def register_bill() -> list[dict]:
    """One dict per :data:`CASES` entry: ``name``; ``acc`` (fp32 values); Hopper's bill with
    chapter 06's split (two consumer warpgroups, a producer at ``setmaxnreg.dec 40``):
    ``per_thread`` (acc / 256 consumer threads + the loop's other registers), ``producer``,
    ``acc_regs``, ``other_regs``, ``total`` (registers of the SM), ``fits`` (total ≤ 65536: the
    register file is the limit however the accumulator is split; a thread's 255 is not); Hopper's
    case holds the whole accumulator in one SM. Blackwell's: ``tmem_cols`` (of 512, per SM),
    ``ctas`` (2: a CTA pair's tile, 128 rows on each SM) and ``tmem_regs`` (0: no thread holds it
    during the main loop)."""
    ws = WSConfig()
    threads = 128 * ws.consumers
    out = []
    for name, acc, cols, ctas in CASES:
        per_thread = acc // threads + REG_OVERHEAD
        producer = 128 * ws.producer_regs
        total = producer + threads * per_thread
        out.append({"name": name, "acc": acc, "per_thread": per_thread, "producer": producer,
                    "acc_regs": acc, "other_regs": threads * REG_OVERHEAD, "total": total,
                    "fits": total <= REGS_PER_SM,
                    "tmem_cols": cols, "ctas": ctas, "tmem_regs": 0})
    return out


def show_sass(cfgs) -> bool:
    """Compile each :class:`~asynctc.tcgen05.config.GemmConfig` of ``cfgs`` to an sm_100a cubin and
    print its count of ``UTCHMMA`` (``tcgen05.mma``) and ``UTCBAR`` (``tcgen05.commit``).

    Asserts chapter 09 §5's statements: ``UTCHMMA`` appears BK/16 times (the k-steps, unrolled),
    ``UTCBAR`` twice (a stage's release, then the accumulator's hand-off), no register spills; and
    *"the kernels' descriptors equal the models'"*: the instruction descriptor the kernel is
    launched with equals :class:`asynctc.models.tcgen05.InstrDescriptor`'s, both operand
    descriptors equal :class:`asynctc.models.tcgen05.Tcgen05Descriptor` (start 0, LBO 16, SBO 1024,
    128-byte swizzle). Compiles, never launches. Returns ``True``."""
    from ..models import tcgen05 as tc
    from .launch import sass_summary
    for cfg in cfgs:
        sm = sass_summary(cfg)
        print(f"{cfg.label():40s} UTCHMMA {sm['UTCHMMA']} (= BK {cfg.bk} / 16), UTCBAR {sm['UTCBAR']} "
              f"(a stage's release + D's hand-off), spills {sm['spill_bytes']} B")
        assert (sm["UTCHMMA"], sm["UTCBAR"]) == (cfg.bk // 16, 2) and sm["spill_bytes"] == 0, (cfg.label(), sm)
        assert cfg.idesc == tc.InstrDescriptor(cfg.dtype, cfg.dtype, "float32", cfg.bm, cfg.bn,
                                               cta_group=cfg.cta_group).encode(), cfg.label()
        assert cfg.a_desc == cfg.b_desc == tc.Tcgen05Descriptor(0, 16, 1024, "128B").encode(), cfg.label()
    print("the kernels' descriptors equal the models'")
    return True
