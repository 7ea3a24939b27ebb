"""Chapter 06's ladder: the rungs, each built from an earlier rung, with its frozen prediction.

:class:`Rung` and :data:`RUNGS` (9 rungs: chapter 05's best, then warp specialization, setmaxnreg,
the tile sweep, persistent, cluster, TMA store, raster, ping-pong consumers), each rung's config made from the previous
rung's (by one change from rung 4 on; rung 2 also halves the tile, rung 3 brings it back with a second consumer and
setmaxnreg: :func:`asynctc.warp_specialization.lesson.rung_changes` lists every field); the tile sweep of rung 4 (:data:`TILE_SWEEP`); :func:`rung_of` (which rung a
config is), :func:`parse_rungs` ("1-5" → rung numbers), :func:`config_label` and the rungs the
ladder traces (:data:`TRACED_RUNGS`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

from .. import pipeline as P
from .config import WSConfig, WarpSpecializationError, _fail

class Rung(NamedTuple):
    """One rung: ``name``, ``number``, ``what`` changes from the rung before (one line),
    ``prediction`` (written before the first H200 run), and ``make(dtype)`` → its config."""

    number: int
    name: str
    what: str
    prediction: str
    make: Callable[[str], Any]


def _ch05(dt):
    return P.PipelineConfig(dtype=dt, bm=128, bn=256, consumers=2, stages=4, out_dtype=dt)


def _ws(dt):
    return WSConfig(dtype=dt, bm=128, bn=128, consumers=1, stages=4, setmaxnreg=False,
                    out_dtype=dt)


def _ws2(dt):
    return WSConfig(dtype=dt, bm=128, bn=256, consumers=2, stages=4, out_dtype=dt)


def _persistent(dt):
    return _ws2(dt).replace(persistent=True)


def _cluster(dt):
    return _persistent(dt).replace(cluster=2)


def _tma_store(dt):
    return _cluster(dt).replace(tma_store=True)


#: Tile rows per raster group of rung 8 (rungs 5-7 walk groups of 8): the widest of 4, 8, 16, 32
#: at 8192³ in tools/gpu_ch06_limit.py's run (record ``ws_limit``: fewer DRAM bytes, a higher clock).
RASTER_GROUP_M = 16


def _raster(dt):
    return _tma_store(dt).replace(group_m=RASTER_GROUP_M)


#: Rung 9's tile per consumer and stages: each consumer holds a whole tile, so 128×128 (2 atoms ×
#: 64 = 128 fp32 accumulators per thread, rung 8's count; 128×256 would be 256). Of the two tiles
#: with 128 accumulators, 128×128 over 64×256: a stage of 32 KiB (not 40) for the same flops, so
#: 6 stages fit beside the TMA-store staging, and fewer L2→SM bytes per flop (256 vs 320 rows of
#: 128 bytes per 16384 outputs per k-tile).
PINGPONG_TILE = (128, 128, 6)


def _pingpong(dt):
    bm, bn, stages = PINGPONG_TILE
    return _raster(dt).replace(pingpong=True, bm=bm, bn=bn, stages=stages)


#: (bm, bn, consumers, stages) of rung 4's sweep: every stage count that fits 227 KiB.
#: 128×256 and 256×128 stages are 48 KiB (≤ 4 fit), 128×128 ones 32 KiB (≤ 6).
TILE_SWEEP = tuple((bm, bn, 2, s) for bm, bn in ((128, 256), (256, 128)) for s in (3, 4)) + \
    tuple((128, 128, 2, s) for s in (4, 5, 6))


def tile_sweep_configs(dtype: str = "float16", limit: int | None = None) -> list[WSConfig]:
    """Rung 4's candidates (:data:`TILE_SWEEP`) that fit the shared-memory ``limit``."""
    out = []
    for bm, bn, c, s in TILE_SWEEP:
        try:
            cfg = WSConfig(dtype=dtype, bm=bm, bn=bn, consumers=c, stages=s, out_dtype=dtype)
            cfg.validate(limit)
        except WarpSpecializationError:
            continue
        out.append(cfg)
    return out


def _tile_default(dt):
    return WSConfig(dtype=dt, bm=256, bn=128, consumers=2, stages=4, out_dtype=dt)


RUNGS: tuple[Rung, ...] = (
    Rung(1, "ch05", "chapter 05's best: 128×256×64, 2 warpgroups that all compute, 4 stages, "
                    "one thread of consumer 0 also loads",
         "0.89 of cuBLAS at 4096³, 0.95 at 8192³ (chapter 05's record)", _ch05),
    Rung(2, "ws", "warp specialization: a producer warpgroup (one thread issues TMA) and one "
                  "consumer warpgroup on a 128×128 tile (two m64 atoms), 4 stages",
         "below rung 1 (~0.75 of cuBLAS): one warpgroup's wgmma stream with half the tile; "
         "the producer no longer stalls a consumer", _ws),
    Rung(3, "ws_setmaxnreg", "two consumer warpgroups on 128×256 (64 rows each), setmaxnreg "
                             "producer 40 / consumers 232, __launch_bounds__(384, 1)",
         "at or just above rung 1 (0.90-0.97): same tile, loads off the consumers' path", _ws2),
    Rung(4, "tile", "the fastest (tile, stages) of a sweep (128×256 / 256×128 at 3-4 stages, "
                    "128×128 at 4-6) within 227 KiB",
         "within ±3% of rung 3; 256×128 may win (B read once per 256 rows)", _tile_default),
    Rung(5, "persistent", "persistent grid (min(SMs, tiles) CTAs), group-M tile order (tiles "
                          "walked column by column within groups of 8 tile rows, so that CTAs "
                          "running at once share A and B tiles in L2), the producer loads tile "
                          "t+1 while the consumers store tile t",
         "+3-8% over rung 3 (prologue and epilogue hidden; 4096³ has 3.9 waves of 128×256 tiles)",
         _persistent),
    Rung(6, "cluster", "clusters of 2 CTAs along M: each loads half of the shared 256×64 B box and "
                       "multicasts it to both (32 KiB per stage from L2 per SM instead of 48)",
         "+0-6% over rung 5 if the consumers wait on full barriers (L2→SM bandwidth); no gain "
         "if they do not", _cluster),
    Rung(7, "tma_store", "epilogue through shared memory: stmatrix (a warp's store of 8×8 "
                         "matrix fragments from registers into shared memory) into two swizzled "
                         "64×64 buffers per consumer, TMA store, drained while the next tile's "
                         "k-loop runs",
         "+1-3% over rung 6 (coalesced 128-byte stores off the consumers' critical path)",
         _tma_store),
    Rung(8, "raster", "a wider group-M raster (the order in which the persistent CTAs walk the "
                      "tiles, chapter 06's deep dive 06d): 16 tile rows per group instead of 8, so the 132 "
                      "CTAs running at once touch 16 rows of A tiles and about 8 columns of B "
                      "tiles (not 8 and 16): fewer bytes from DRAM when A and B do not fit L2",
         "+1% over rung 7 at 4096³ and 8192³ — from tools/gpu_ch06_limit.py's run (record "
         "ws_limit), made before this rung joined the ladder: 0.987 / 1.01 of cuBLAS against "
         "rung 7's 0.977 / 0.99 in the same run, DRAM reads at 8192³ 1.33 GB against 1.51",
         _raster),
    Rung(9, "pingpong", "ping-pong consumers: each of the two consumer warpgroups owns a whole "
                        "128×128 tile (the CTA's tiles taken in turn), their k-loops ordered by an "
                        "mbarrier pair so that one's epilogue runs while the other's wgmmas run; "
                        "6 stages of 128×128 (rung 8's cluster, TMA store and raster kept)",
         "written before any H200 run: 0.97-1.03 of rung 8 at 4096³ (the epilogue hidden behind "
         "the other consumer's wgmmas, +2-4 %, against 128×128's 1.5× L2→SM bytes per flop and "
         "m64n128's 20 % more shared-memory operand reads per flop than m64n256, −0-4 %); "
         "0.96-1.01 at 8192³ (half the epilogue share: K = 8192 is 128 k-tiles per tile)",
         _pingpong),
)

#: Rung name → rung.
RUNG_BY_NAME = {r.name: r for r in RUNGS}
#: The top cooperative rung: what ``asynctc.matmul`` and chapter 07's FP8 GEMM are built on, and
#: what "the top rung" means in the notebooks (rung 9, ping-pong, is a rung beside it).
TOP_RUNG = RUNG_BY_NAME["raster"]


def recorded_rungs(results: dict) -> list:
    """The rungs a ``warp_specialization`` record timed (its ``rungs_run``), in ladder order — a
    record made before a rung existed does not hold it."""
    run = set(results.get("rungs_run") or (r["number"] for r in results.get("rungs", [])))
    return [r for r in RUNGS if r.number in run]


def rung_configs(dtype: str) -> list:
    """Every config the ladder runs for ``dtype``: each rung's default, then rung 4's sweep."""
    out = [r.make(dtype) for r in RUNGS]
    for c in tile_sweep_configs(dtype):
        if c not in out:
            out.append(c)
    return out


def rung_of(cfg) -> int:
    """The rung a config belongs to (the highest step it uses): 1 chapter 05, 2 one consumer,
    9 ping-pong, 8 TMA store with rung 8's raster width, 7 TMA store, 6 cluster, 5 persistent, 3 rung 3's tile
    (128×256, 4 stages), else 4 (sweep)."""
    if isinstance(cfg, P.PipelineConfig):
        return 1
    if cfg.consumers == 1:
        return 2
    if getattr(cfg, "pingpong", False):
        return 9
    if cfg.tma_store:
        return 8 if cfg.group_m == RASTER_GROUP_M else 7
    if cfg.cluster > 1:
        return 6
    if cfg.persistent:
        return 5
    return 3 if (cfg.bm, cfg.bn, cfg.stages) == (128, 256, 4) else 4


def rung_of_record(row: dict) -> int:
    """:func:`rung_of` for a row of a ``warp_specialization`` record (a check or a timing: the
    config's fields flattened into the row); chapter 05's rows (no ``setmaxnreg`` field) are rung 1."""
    if "setmaxnreg" not in row:
        return 1
    names = {f.name for f in dataclasses.fields(WSConfig)}
    return rung_of(WSConfig(**{k: v for k, v in row.items() if k in names}))


def parse_rungs(text: str | None) -> tuple[int, ...]:
    """"1-5" or "1,3,5" → rung numbers (None or "" → all); raises :class:`WarpSpecializationError`."""
    every = tuple(r.number for r in RUNGS)
    if not text:
        return every
    out = set()
    for part in str(text).split(","):
        try:
            lo, _, hi = part.partition("-")
            out |= set(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            _fail("rungs", text, "comma-separated rung numbers or ranges, e.g. '1-5' or '1,3,5'")
    if not out <= set(every):
        _fail("rungs", text, f"rungs are {every[0]}..{every[-1]}")
    return tuple(sorted(out))


def config_label(cfg) -> str:
    return cfg.label() if isinstance(cfg, WSConfig) else "ch05 " + cfg.label()


#: Rungs traced (fp16, the first size): the first warp-specialized rung with two consumers and
#: every rung above it that changes the schedule.
TRACED_RUNGS = (3, 5, 6, 7, 8, 9)
