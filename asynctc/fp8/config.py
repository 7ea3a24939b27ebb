"""Chapter 07, the FP8 GEMM's configurations: chapter 06's warp-specialized kernel
(:class:`asynctc.warp_specialization.WSConfig`) with an fp8 dtype — the top rung
(:func:`fp8_config`), the tile chosen by the shape (:func:`fp8_shape_config`), the per-block-scale
variants, and the lists the checks (:func:`correctness_configs`) and the suite
(:func:`timed_configs`) run."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..core import runtime


def fp8_config(dtype: str = "float8_e4m3fn", promote: int = 0, **kw):
    """The FP8 GEMM configurations of chapter 07: chapter 06's top rung (128×256, two consumers,
    persistent, clusters of 2, TMA-store epilogue, raster groups of 16 tile rows, bf16 C) with an
    fp8 dtype; with ``promote``
    the tile is 128×128 (two sets of accumulators must fit: 2 × 64 per thread)."""
    base = dict(dtype=dtype, bm=128, bn=256, consumers=2, stages=4, out_dtype="bfloat16",
                persistent=True, cluster=2, tma_store=True, group_m=W.RASTER_GROUP_M)
    if promote:
        base.update(bn=128, stages=6, promote=promote)
    base.update(kw)
    return W.WSConfig(**base)


def fp8_shape_config(m: int, n: int, k: int, dtype: str = "float8_e4m3fn", *,
                     sm_count: int | None = None):
    """The FP8 top rung's schedule for an M×N×K problem with the tile chosen by the shape: what
    :func:`measure_fp8_nonsquare` times.

    Schedule as :func:`fp8_config`: persistent, TMA-store epilogue, C in bf16, B stored N×K
    (K-major: fp8 wgmma has no transpose), per-tensor scales, no ``edges`` (the FP8 builds have
    none). Tile and cluster from :func:`asynctc.warp_specialization.shape_tile` (``sm_count``
    SMs, default the device's, else 132): bm = 64 with one consumer warpgroup for M ≤ 64 (then no
    setmaxnreg: one consumer's ≤ 128 accumulators fit the 248 registers each of 256 threads
    starts with), else 128 with two; bn 256 / 128 / 64 by wave fill; clusters of 2 with ≥ 2 tile
    rows and bn ≥ 128 — and, since this build does not round tile rows up to whole clusters,
    only with an even number of tile rows (else cluster 1). bk = 128 (one 128-byte row of fp8).
    Stages: as many as fit one CTA's shared memory (:func:`~asynctc.warp_specialization.most_stages`;
    128×256 with the store staging: 4, as :func:`fp8_config`). For the square 4096³ / 8192³ (and
    every shape whose waves 128×256 fills) this is :func:`fp8_config` exactly.

    Raises :class:`asynctc.warp_specialization.WarpSpecializationError` naming the rule for a
    shape the exact build cannot do: M, N, K not positive multiples of bm, bn, 128 (e.g. M = 32:
    the thin tile is 64 rows), and for a dtype that is not FP8."""
    if dtype not in W.FP8_DTYPES:
        W._fail("dtype", dtype, f"fp8_shape_config is for the FP8 builds: one of {W.FP8_DTYPES}")
    for name, v in (("M", m), ("N", n), ("K", k)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 1 <= v < 2**31:
            W._fail(name, v, "must be an integer in 1 .. 2^31 - 1")
    if sm_count is None:
        info = runtime.device_info()
        sm_count = info.sm_count if info else W.DEFAULT_SM_COUNT
    tile = W.shape_tile(m, n, sm_count)
    if tile["cluster"] == 2 and (m // tile["bm"]) % 2:
        tile["cluster"] = 1
    fields = dict(dtype=dtype, **tile, out_dtype="bfloat16", persistent=True, tma_store=True,
                  group_m=W.RASTER_GROUP_M)
    if tile["consumers"] == 1:
        fields["setmaxnreg"] = False
    cfg = W.most_stages(fields, (m, n, k))
    W.check_shapes(m, n, k, cfg)
    return cfg


#: The shapes whose :func:`fp8_shape_config` is added to :func:`correctness_configs`.
THIN_SHAPES = ((64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192))


def shape_configs(shapes=THIN_SHAPES, dtypes=None, sm_count: int = 132) -> list:
    """:func:`fp8_shape_config` of each shape and FP8 dtype (default e4m3 and e5m2; ``sm_count``
    fixed at the H200's 132 so the list does not depend on the machine), without repeats."""
    out = []
    for dt in dtypes or W.FP8_DTYPES:
        for shp in shapes:
            c = fp8_shape_config(*shp, dt, sm_count=sm_count)
            if c not in out:
                out.append(c)
    return out



#: Promotion intervals (k-tiles) compiled and checked.
PROMOTES = (1, 2, 4)


def block_configs(dtypes=None) -> list:
    """The per-block-scale variants (``block_scales``, promote 1): per fp8 dtype the plain
    128×128 (C fp32) and the top configuration (persistent, clusters, TMA store, bf16 C); for
    e4m3 also 256×64 (two m64 atoms per consumer: 4 A scales per thread; two tiles per 128-column
    B block)."""
    out = []
    for dt in dtypes or W.FP8_DTYPES:
        out += [W.WSConfig(dtype=dt, bm=128, bn=128, consumers=2, stages=4, promote=1,
                           block_scales=True),
                fp8_config(dt, promote=1, block_scales=True)]
        if dt == "float8_e4m3fn":
            out.append(W.WSConfig(dtype=dt, bm=256, bn=64, consumers=2, stages=4, promote=1,
                                  block_scales=True))
    return out


def block_timed_config():
    """The per-block-scale variant timed (at the largest size only): the promoted top
    configuration with block scales; the cost of the scales is read against the same config
    without them (promote 1, per-tensor scales), timed in the same run."""
    return fp8_config(promote=1, block_scales=True)


def correctness_configs() -> list:
    """Every FP8 variant: e4m3 and e5m2; chapter 06's rungs 3, 5, 6, 7 with fp8 inputs (C fp32,
    bf16; fp16 for the top); 256×128; the promoted variants (128×128, every 1, 2, 4 k-tiles,
    plain and with persistent + cluster + TMA store); the per-block-scale variants
    (:func:`block_configs`); the tiles the shape picks for thin M (:func:`shape_configs` of
    :data:`THIN_SHAPES`: 64×64 with one consumer, 128×64 without clusters, 128×128 with)."""
    out = []
    for dt in W.FP8_DTYPES:
        ws2 = W.WSConfig(dtype=dt, bm=128, bn=256, consumers=2, stages=4)
        cands = [ws2, ws2.replace(out_dtype="bfloat16"), ws2.replace(bm=256, bn=128),
                 ws2.replace(persistent=True, out_dtype="bfloat16"),
                 ws2.replace(persistent=True, cluster=2),
                 fp8_config(dt), fp8_config(dt, out_dtype="float16")]
        for p in PROMOTES:
            cands += [ws2.replace(bn=128, promote=p), fp8_config(dt, promote=p)]
        for c in cands:
            if c not in out:
                out.append(c)
    out += block_configs()
    return out + [c for c in shape_configs() if c not in out]


def _fp32_out_config(promote: int, dtype: str = "float8_e4m3fn"):
    return W.WSConfig(dtype=dtype, bm=128, bn=128 if promote else 256, consumers=2, stages=4,
                      promote=promote)


def timed_configs() -> list:
    """The FP8 variants timed: the top rung with fp8 (no promotion), the same on the promoted
    variants' 128×128 tile without promotion (so the cost of promotion is read at equal tile),
    promoted every 1 and 4 k-tiles (128×128), and the top rung without clusters."""
    return [fp8_config(), fp8_config(bn=128, stages=6), fp8_config(promote=1),
            fp8_config(promote=4), fp8_config(cluster=1, tma_store=False)]


#: Mixed FP8 operands — the plan, not built. wgmma takes A and B of different FP8 types
#: (PTX ISA §9.7.15.5.2 "wgmma.mma_async": .atype and .btype each .e4m3 or .e5m2, any pair), but
#: the kernel has one ``DT`` define for both (2 e4m3, 3 e5m2), one tensor-map data type and one
#: wgmma wrapper per DT. A mixed build needs ``DT_B`` beside ``DT`` (A's type): {(A, B): defines}.
MIXED_FP8_DEFINES = {("float8_e4m3fn", "float8_e5m2"): {"DT": 2, "DT_B": 3},
                     ("float8_e5m2", "float8_e4m3fn"): {"DT": 3, "DT_B": 2}}


def operand_dtype(a_dtype, b_dtype) -> str:
    """The one FP8 dtype the kernel builds for operands A of ``a_dtype`` and B of ``b_dtype``
    (names or numpy / ml_dtypes dtypes): both the same FP8 format → that format's name. A mixed
    pair (e4m3 × e5m2, which wgmma itself allows) raises
    :class:`asynctc.warp_specialization.WarpSpecializationError` naming ``b_dtype``, the value and
    the rule, with the defines a mixed build would need (:data:`MIXED_FP8_DEFINES`); a non-FP8
    dtype raises it naming that operand."""
    from ..models.fp8 import fp8_format
    names = []
    for field, d in (("a_dtype", a_dtype), ("b_dtype", b_dtype)):
        try:
            names.append(fp8_format(d).name)
        except ValueError:
            W._fail(field, d if isinstance(d, str) else np.dtype(d).name,
                    f"the FP8 GEMM takes FP8 operands: one of {W.FP8_DTYPES}")
    a, b = names
    if a != b:
        W._fail("b_dtype", b, f"mixed FP8 operands (A {a}, B {b}) are allowed by wgmma (PTX ISA "
                              "§9.7.15.5.2: .atype/.btype each .e4m3 or .e5m2) but not built here: "
                              "the kernel has one DT define for A and B; a mixed build needs "
                              f"{MIXED_FP8_DEFINES[(a, b)]} (DT_B: B's tensor map and the "
                              "wgmma's .btype); quantise B to A's format meanwhile")
    return a
