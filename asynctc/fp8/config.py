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
    :data:`THIN_SHAPES`: 64×64 with one consumer, 128×64 without clusters, 128×128 with); the
    mixed-operand builds (:func:`mixed_configs`); e4m3 under the 64-, 32- and no-swizzle
    (:func:`swizzle_configs`)."""
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
    out += [c for c in shape_configs() if c not in out]
    return out + mixed_configs() + swizzle_configs()


def _fp32_out_config(promote: int, dtype: str = "float8_e4m3fn"):
    return W.WSConfig(dtype=dtype, bm=128, bn=128 if promote else 256, consumers=2, stages=4,
                      promote=promote)


def timed_configs() -> list:
    """The FP8 variants timed: the top rung with fp8 (no promotion), the same on the promoted
    variants' 128×128 tile without promotion (so the cost of promotion is read at equal tile),
    promoted every 1 and 4 k-tiles (128×128), the top rung without clusters (= the 128-byte
    :func:`swizzle_config`), and the same under the 64-, 32- and no swizzle
    (:func:`swizzle_configs`)."""
    return [fp8_config(), fp8_config(bn=128, stages=6), fp8_config(promote=1),
            fp8_config(promote=4), fp8_config(cluster=1, tma_store=False)] + swizzle_configs()


#: Mixed FP8 operands: wgmma takes A and B of different FP8 types (PTX ISA §9.7.15.5.2
#: "wgmma.mma_async": .atype and .btype each .e4m3 or .e5m2, any pair). The kernel's ``DT`` is A's
#: type and ``DT_B`` B's (B's tensor map and the wgmma's .btype; ``WSConfig(b_dtype=...)``):
#: {(A, B): defines}. A build of one type sets no DT_B (its cubin is unchanged).
MIXED_FP8_DEFINES = {("float8_e4m3fn", "float8_e5m2"): {"DT": 2, "DT_B": 3},
                     ("float8_e5m2", "float8_e4m3fn"): {"DT": 3, "DT_B": 2}}
#: Both orders of a mixed pair, (A's dtype, B's dtype).
MIXED_PAIRS = tuple(MIXED_FP8_DEFINES)


def operand_dtypes(a_dtype, b_dtype) -> tuple[str, str]:
    """(A's, B's) FP8 dtype names for operands of ``a_dtype`` and ``b_dtype`` (names such as
    "e4m3", or numpy / ml_dtypes dtypes): what ``WSConfig(dtype=A, b_dtype=B)`` builds — any
    pair of e4m3 and e5m2. A dtype that is not FP8 raises
    :class:`asynctc.warp_specialization.WarpSpecializationError` naming that operand, its value
    and the rule (the FP8 GEMM takes FP8 operands; a 16-bit GEMM takes A and B of one type)."""
    from ..models.fp8 import fp8_format
    names = []
    for field, d in (("a_dtype", a_dtype), ("b_dtype", b_dtype)):
        try:
            names.append(fp8_format(d).name)
        except ValueError:
            W._fail(field, d if isinstance(d, str) else np.dtype(d).name,
                    f"the FP8 GEMM takes FP8 operands: one of {W.FP8_DTYPES} (A and B may differ: "
                    "wgmma's .atype/.btype, PTX ISA §9.7.15.5.2; 16-bit A and B are one type)")
    return names[0], names[1]


def operand_dtype(a_dtype, b_dtype) -> str:
    """The build for operands A of ``a_dtype`` and B of ``b_dtype``, in words: the format's name
    when both are the same FP8 format, else "A × B (DT=…, DT_B=…)" — a mixed pair builds with
    :data:`MIXED_FP8_DEFINES` (``fp8_config(A, b_dtype=B)``). Refuses what
    :func:`operand_dtypes` refuses."""
    a, b = operand_dtypes(a_dtype, b_dtype)
    if a == b:
        return a
    d = MIXED_FP8_DEFINES[(a, b)]
    return f"{a} × {b} (DT={d['DT']}, DT_B={d['DT_B']})"


def mixed_configs() -> list:
    """The mixed-operand builds checked (each order of :data:`MIXED_PAIRS`): chapter 06's
    128×256 tile with C in fp32, and the FP8 top rung (persistent, clusters of 2, TMA store, bf16
    C) with B of the other format."""
    out = []
    for a, b in MIXED_PAIRS:
        out += [W.WSConfig(dtype=a, b_dtype=b, bm=128, bn=256, consumers=2, stages=4),
                fp8_config(a, b_dtype=b)]
    return out


#: Swizzle spans the FP8 kernel builds (bytes): 128 (the default) and chapter 07's 64, 32 and 0
#: (no swizzle: the interleaved canonical layout, 16-byte boxes). All four: the descriptor's layout
#: type, the tensor maps' swizzle and the k-step offsets come from one layout model
#: (:meth:`asynctc.warp_specialization.WSConfig.stage_tiles`), in bytes, so an fp8 k-tile row of 128
#: elements is laid out as the fp16 row of 64 (tests compare the defines). A swizzle other than 128
#: needs cluster=1 (the multicast halves of B are 128-byte rows) and K-major B (fp8 has no other).
FP8_SWIZZLES = (128, 64, 32, 0)


def swizzle_config(swizzle: int = 128, dtype: str = "float8_e4m3fn"):
    """The FP8 build timed under each swizzle: :func:`fp8_config` without clusters and with the
    register epilogue (``cluster=1, tma_store=False``: what a swizzle other than 128 can be built
    with), persistent, bf16 C; ``swizzle`` one of :data:`FP8_SWIZZLES`."""
    return fp8_config(dtype, cluster=1, tma_store=False, swizzle=swizzle)


def swizzle_configs(dtype: str = "float8_e4m3fn") -> list:
    """:func:`swizzle_config` for the spans other than 128 (64, 32, 0): the 128-byte one is
    already in :func:`timed_configs`."""
    return [swizzle_config(s, dtype) for s in FP8_SWIZZLES if s != 128]
