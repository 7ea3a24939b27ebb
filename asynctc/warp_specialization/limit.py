"""What limits chapter 06's top rung, as models and as the ``ws_limit`` record reads back.

The models (no GPU, no timing): :func:`wave_efficiency` (how full the last wave of tiles is),
:func:`smem_traffic` / :func:`smem_traffic_table` (shared-memory bytes per k-tile against the SM's
bandwidth), :func:`descriptor_rows_read` (which K-row of B each wgmma element reads through a
descriptor), :func:`epilogue_stores` / :func:`epilogue_store_lines` (how each epilogue writes C to
global memory: bytes, 128-byte lines and 32-byte sectors per instruction). The record's reading: :func:`read_kernel_name` (cuBLAS's kernel names as tile,
stages, cluster) and :func:`limit_rows` (a ``ws_limit`` record's rows; the suite that writes it is
:mod:`.limit_suite`, its figure :func:`asynctc.warp_specialization.figures.plot_raster`).
"""

from __future__ import annotations

import re

import numpy as np

from .config import ROW_BYTES, WSConfig, _fail, itemsize

def wave_efficiency(cfg, m: int, n: int, sm_count: int, active_clusters: int | None = None) -> float:
    """The part of the last wave's slots a launch fills: work items / (slots × ⌈items / slots⌉),
    where a work item is a tile (a pair of tiles with ``cluster=2``) and the slots are the SMs
    (the clusters that fit at once, ``active_clusters``, with ``cluster=2``). With one CTA per SM
    every slot takes ⌈items / slots⌉ items in the time the busiest one needs, so this bounds the
    throughput a uniform per-tile speed can reach."""
    import math
    cluster = getattr(cfg, "cluster", 1)
    items = (m // cfg.bm) * (n // cfg.bn) // cluster
    slots = (active_clusters if cluster > 1 and active_clusters else sm_count // cluster)
    return items / (slots * math.ceil(items / slots))


def smem_traffic(cfg: WSConfig, k: int | None = None,
                 smem_bytes_per_clk: float | None = None) -> dict:
    """Shared-memory bytes one CTA of ``cfg`` moves per k-tile, by source, against the SM's
    shared-memory bandwidth: the limit inside a tile (a model; no record measures shared memory).

    * ``tma_write`` — the stage the TMA writes: (bm + bn) · bk · itemsize. With ``cluster=2`` each
      SM still receives the whole stage (multicast halves the L2 reads, not the shared-memory
      writes).
    * ``wgmma_read`` — what the consumers' wgmmas read (both operands from shared memory, SS):
      (bm / 64) m64 atoms × (bk / instruction K) k-steps ×
      :func:`asynctc.wgmma_peak.smem_bytes_per_wgmma` (A's 64 rows and B's bn rows of 32 bytes of
      K each; PTX ISA §9.7.15.5). 128×256×64 fp16, two consumers: 2 × 4 × (2 + 8) KiB = 80 KiB.
    * ``epilogue`` — only with ``k`` (int ≥ 1) and ``tma_store``: C's bm × bn tile written by
      stmatrix and read back by the TMA store, 2 · bm · bn · out itemsize per tile, spread over the
      tile's ⌈k / bk⌉ k-tiles (the register epilogue writes global memory directly: 0).

    Returns a dict: those byte counts (ints), ``total``, ``clocks`` (SM clocks of one k-tile at the
    Tensor Core rate: 2 · bm · bn · bk / :data:`asynctc.core.bench.FLOP_PER_CLK_PER_SM`),
    ``bytes_per_clk`` (total / clocks: what shared memory must deliver for the Tensor Cores to run
    at their rate), ``smem_bytes_per_clk`` (default :data:`asynctc.wgmma_peak.SMEM_BYTES_PER_CLK_SM`,
    128 = 32 banks × 4 bytes, chapter 01's model), ``of_wall`` (bytes_per_clk / that) and ``bound``
    (min(1, 1 / of_wall): the most of the Tensor Core rate this traffic allows if TMA writes and
    wgmma reads share that one data path). Raises :class:`WarpSpecializationError` for a ``k`` that
    is not a positive int or a non-positive ``smem_bytes_per_clk``."""
    from ..core import bench
    from ..models import descriptors as dsc
    from ..wgmma_peak import SMEM_BYTES_PER_CLK_SM, smem_bytes_per_wgmma
    bw = SMEM_BYTES_PER_CLK_SM if smem_bytes_per_clk is None else smem_bytes_per_clk
    if not isinstance(bw, (int, float)) or isinstance(bw, bool) or not bw > 0:
        _fail("smem_bytes_per_clk", bw, "must be a positive number of bytes per SM clock")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        _fail("k", k, "must be an int ≥ 1 (the problem's K) or None")
    size = itemsize(cfg.dtype)
    out = {"tma_write": (cfg.bm + cfg.bn) * cfg.bk * size,
           "wgmma_read": (cfg.bm // 64) * (cfg.bk // dsc.instruction_k(cfg.dtype))
           * smem_bytes_per_wgmma(cfg.bn, "smem", cfg.dtype)}
    if k is not None and cfg.tma_store:
        k_tiles = -(-int(k) // cfg.bk)
        out["epilogue"] = 2 * cfg.bm * cfg.bn * itemsize(cfg.out_dtype) / k_tiles
    total = sum(out.values())
    clocks = 2 * cfg.bm * cfg.bn * cfg.bk / bench.FLOP_PER_CLK_PER_SM[cfg.dtype]
    per_clk = total / clocks
    return {**out, "total": total, "clocks": clocks, "bytes_per_clk": per_clk,
            "smem_bytes_per_clk": bw, "of_wall": per_clk / bw, "bound": min(1.0, bw / per_clk)}


def descriptor_rows_read(cfg: WSConfig, desc: int, base: int) -> np.ndarray:
    """Which K-row of its TMA box each element of B one wgmma k-step reads through ``desc``, by
    the descriptor model (:func:`asynctc.models.descriptors.read_addresses`): an ``(bn, 16)``
    array (``(bn, 32)`` for fp8) of rows, column k of it being K index k, for a B tile whose
    boxes start at shared-memory offset ``base``. With B MN-major the tile is bn / 64 boxes of
    64 columns × bk K-rows of 128 bytes, LBO apart; a right descriptor gives row k everywhere.
    Raises :class:`WarpSpecializationError` when an address falls outside the element's own box
    (a descriptor this function cannot attribute), or for a K-major ``cfg``."""
    from ..models import descriptors as dsc
    if cfg.b_major != "MN":
        _fail("cfg.b_major", cfg.b_major, "must be 'MN' (rows of a 64-column box of B K×N)")
    box_bytes = cfg.bk * ROW_BYTES
    off = dsc.read_addresses(desc, "MN", cfg.dtype, cfg.bn) - base
    box, inside = np.divmod(off, box_bytes)
    col_box = np.arange(cfg.bn)[:, None] // (ROW_BYTES // itemsize(cfg.dtype))
    if (off < 0).any() or not np.array_equal(box, np.broadcast_to(col_box, box.shape)):
        _fail("desc", hex(desc), f"reads outside the element's own {box_bytes}-byte box")
    return inside // ROW_BYTES


def smem_traffic_table(cfgs, k: int | None = None) -> str:
    """:func:`smem_traffic` of each configuration, as text: KiB per k-tile by source, clocks, bytes
    per clock at the Tensor Core rate, that as a fraction of the shared-memory bandwidth, and the
    bound it sets. ``cfgs``: (name, WSConfig) pairs, or (name, WSConfig, K) triples whose K
    replaces ``k`` for that row."""
    from ..wgmma_peak import SMEM_BYTES_PER_CLK_SM
    lines = [f"{'tile':36s} {'TMA writes':>10s} {'wgmma reads':>11s} {'epilogue':>9s} "
             f"{'clocks':>6s} {'B/clk':>6s} {f'of {SMEM_BYTES_PER_CLK_SM}':>6s} {'bound':>5s}"]
    for name, cfg, *kk in cfgs:
        t = smem_traffic(cfg, kk[0] if kk else k)
        epi = f"{t['epilogue'] / 1024:5.1f} KiB" if "epilogue" in t else f"{'-':>9s}"
        lines.append(f"{name:36s} {t['tma_write'] / 1024:6.0f} KiB {t['wgmma_read'] / 1024:7.0f} KiB "
                     f"{epi} {t['clocks']:6.0f} {t['bytes_per_clk']:6.1f} {t['of_wall']:6.2f} "
                     f"{t['bound']:5.2f}")
    return "\n".join(lines)


#: Bytes of one L2 cache line and of one sector (the unit a line is written in).
LINE_BYTES, SECTOR_BYTES = 128, 32


def _footprint(starts: np.ndarray, width: int) -> tuple[int, int]:
    """Distinct 128-byte lines and 32-byte sectors that byte ranges [start, start + width) touch."""
    b = (np.asarray(starts)[:, None] + np.arange(width)[None, :]).ravel()
    return len(np.unique(b // LINE_BYTES)), len(np.unique(b // SECTOR_BYTES))


def epilogue_stores(cfg: WSConfig, n: int = 4096) -> dict:
    """How one CTA of ``cfg`` writes its bm × bn tile of C (row pitch ``n`` elements) to global
    memory, per epilogue (a model from the fragment layout; no GPU, no timing):

    * ``"register"`` — ``store_c`` (``kernels/wgmma_ring.cuh``): each thread stores each pair of
      neighbouring accumulators straight to C as one word (2 · out itemsize bytes); one warp store
      instruction is the 32 lanes' words of one register pair, placed by the wgmma accumulator
      fragment (:func:`asynctc.models.fragments.wgmma_accumulator`).
    * ``"tma"`` — ``store_c_tma`` (rung 7, 16-bit C): the warps write 64 × 64 chunks into shared
      memory with stmatrix, then one thread stores each chunk with one TMA store: 64 rows of
      128 bytes.

    Returns {kind: {"instructions": global stores per tile, "bytes": bytes per instruction,
    "lines": distinct 128-byte lines per instruction, "sectors": distinct 32-byte sectors per
    instruction, "fill": bytes / (sectors · 32), "line_requests": lines × instructions}}; ``"tma"``
    also has ``"stmatrix"`` (stmatrix.x4 instructions per tile, 512 bytes each), and only for a
    16-bit ``cfg.out_dtype``. Raises :class:`WarpSpecializationError` for a tile whose rows do not
    split into m64 atoms per consumer or an ``n`` narrower than the tile."""
    from ..models.fragments import wgmma_accumulator
    if cfg.bm % (64 * cfg.consumers):
        _fail("cfg.bm", cfg.bm, f"must split into m64 atoms per consumer ({cfg.consumers} consumers)")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < cfg.bn:
        _fail("n", n, f"must be an int ≥ bn = {cfg.bn} (C's row pitch in elements)")
    size = 4 if cfg.out_dtype == "float32" else itemsize(cfg.out_dtype)
    rows, cols = wgmma_accumulator(cfg.bn)                 # (128 threads, bn / 2 registers)
    per_instr = []
    for p in range(0, cfg.bn // 2, 2):                     # warp 0's register pairs
        starts = (rows[:32, p] * n + cols[:32, p]) * size
        per_instr.append(_footprint(starts, 2 * size))
    lines, sectors = max(per_instr)
    warps = 4 * cfg.consumers
    count = warps * (cfg.bm // (64 * cfg.consumers)) * len(per_instr)
    word = 32 * 2 * size
    out = {"register": {"instructions": count, "bytes": word, "lines": lines, "sectors": sectors,
                        "fill": word / (sectors * SECTOR_BYTES), "line_requests": lines * count}}
    if size == 2:
        box = 64 * ROW_BYTES
        lines, sectors = _footprint(np.arange(64) * n * size, ROW_BYTES)
        count = cfg.bm * cfg.bn * size // box
        out["tma"] = {"instructions": count, "bytes": box, "lines": lines, "sectors": sectors,
                      "fill": box / (sectors * SECTOR_BYTES), "line_requests": lines * count,
                      "stmatrix": cfg.bm * cfg.bn * size // 512}
    return out


def epilogue_store_lines(cfg: WSConfig, n: int = 4096) -> str:
    """:func:`epilogue_stores` as two lines of text, one per epilogue."""
    e = epilogue_stores(cfg, n)
    r = e["register"]
    rows = r["bytes"] // r["lines"]
    text = [f"register epilogue: {r['instructions']} stores per {cfg.bm}×{cfg.bn} tile, each "
            f"{r['lines']} rows × {rows} B ({r['lines']} lines, sectors {r['fill']:.0%} full): "
            f"{r['line_requests']} line requests"]
    if "tma" in e:
        t = e["tma"]
        text.append(f"TMA store: {t['instructions']} stores per tile after {t['stmatrix']} stmatrix, "
                    f"each {t['lines']} rows × {ROW_BYTES} B (whole lines): {t['line_requests']} "
                    "line requests")
    return "\n".join(text)


_NVJET = re.compile(r"_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_")


def read_kernel_name(name: str) -> dict | None:
    """cuBLAS's Hopper kernel names (``nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT``) read as
    tile ``bm``×``bn``, ``bk``×``stages``, cluster ``cluster_m``×``cluster_n`` and the schedule
    (``coopA`` / ``coopB`` / ``pingpong`` where present). This is our reading of the naming, not a
    documented format: Nsight Compute's launch statistics confirm only the cluster's size (2 CTAs;
    it reports the launch as 2×1, so which of M, N the pair spans is not in the launch). None for a
    name without the ``MxN_KxS_CxC`` group (ours, ``gemm_warp_specialized``)."""
    m = _NVJET.search(name)
    if m is None:
        return None
    bm, bn, bk, stages, cm, cn = map(int, m.groups())
    sched = next((s for s in ("coopA", "coopB", "pingpong") if s in name), None)
    return {"bm": bm, "bn": bn, "bk": bk, "stages": stages, "cluster_m": cm, "cluster_n": cn,
            "schedule": sched}


def limit_rows(results: dict, what: str = "summary") -> list[dict]:
    """A ``ws_limit`` record's rows: ``"summary"`` (per size, dtype and raster width: median TFLOP/s
    and in-flight clock over the rounds, ratio to cuBLAS's median, for ours) or ``"ncu"`` (per size,
    ours at each profiled width and cuBLAS: the Nsight Compute counters at ncu's locked clock, with
    ``dram_gb`` (read), ``l2_gb``, ``l2_sm_read_gb`` / ``l2_fabric_gb`` (L2 sectors read by the SMs
    / arriving over the fabric between the two L2 partitions, × 32 bytes; None where the record
    lacks them), ``mcycles``, ``smem_reads_g`` (shared-memory bank reads, 10⁹),
    ``cluster_launch`` (the launch's cluster dims x, y), ``tile`` (:func:`read_kernel_name`)). Empty when the
    record has no counters (ncu unavailable on the GPU machine)."""
    if what == "summary":
        return list(results["summary"])
    n = results.get("ncu") or {}
    if not n.get("available"):
        return []
    out = []
    for k in n["kernels"]:
        out.append({"size": k["size"], "who": k["who"], "group_m": k.get("group_m"),
                    "kernel": k["kernel"], "tile": read_kernel_name(k["kernel"]),
                    "dram_gb": (k.get("dram__bytes_read.sum") or 0) / 1e9,
                    "l2_gb": (k.get("lts__t_bytes.sum") or 0) / 1e9,
                    "mcycles": (k.get("sm__cycles_elapsed.max") or 0) / 1e6,
                    "us": (k.get("gpu__time_duration.sum") or 0) / 1e3,
                    "smem_reads_g": (k.get("l1tex__data_bank_reads.sum") or 0) / 1e9,
                    "l2_sm_read_gb": (k["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 / 1e9
                                      if isinstance(k.get("lts__t_sectors_srcunit_tex_op_read.sum"),
                                                    (int, float)) else None),
                    "l2_fabric_gb": (k["lts__t_sectors_srcunit_ltcfabric.sum"] * 32 / 1e9
                                     if isinstance(k.get("lts__t_sectors_srcunit_ltcfabric.sum"),
                                                   (int, float)) else None),
                    "cluster_launch": tuple(int(k[c]) for c in ("launch__cluster_dim_x",
                                                                 "launch__cluster_dim_y")
                                            if isinstance(k.get(c), (int, float)))})
    return out
