"""The rules of chapter 06's and 07's kernel variants beyond the ladder's base, each a function of a
:class:`~asynctc.warp_specialization.config.WSConfig` called by its ``validate``: mixed FP8
operands (``b_dtype``), row boxes, split-K, the stages-loaded-once variant, ping-pong consumers,
the L2 promotion / hint and the tile order.
Each raises :class:`~asynctc.warp_specialization.base.WarpSpecializationError` naming the field,
the value and the rule.
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from .base import INPUT_DTYPES, SPLIT_K_RANGE, TILE_ORDERS, _fail, is_fp8


def validate_b_dtype(self) -> None:
    b = self.b_dtype
    if not isinstance(b, str) or b not in INPUT_DTYPES:
        _fail("b_dtype", b, f"B's input dtype: None (A's) or one of {sorted(INPUT_DTYPES)}")
    if not (is_fp8(self.dtype) and is_fp8(b)):
        _fail("b_dtype", b, f"B of another type than A ({self.dtype}) only for FP8 A and B "
                            "(PTX ISA §9.7.15.5.2 'wgmma.mma_async': .atype and .btype each "
                            ".e4m3 or .e5m2, any pair; for .f16/.bf16 they are the same type)")


def validate_row_boxes(self) -> None:
    r = self.row_boxes
    if r < 1:
        _fail("row_boxes", r, "TMA boxes per operand along the rows: ≥ 1")
    for field, why in (("swizzle", self.swizzle != 128), ("b_major", self.b_major != "K"),
                       ("cluster", self.cluster != 1), ("edges", self.edges)):
        if why:
            _fail("row_boxes", r, f"row boxes are built for the 128-byte swizzle, K-major B, "
                                  f"cluster=1, no edges (here {field}={getattr(self, field)!r})")
    for field, rows in (("bm", self.bm), ("bn", self.bn)):
        if rows % r or (rows // r) % 8:
            _fail("row_boxes", r, f"must divide {field}={rows} into boxes of a multiple of 8 "
                                  "rows (the 128-byte swizzle repeats every 8 rows = 1024 "
                                  "bytes, so each box must start on that repeat)")
        if rows // r > 256:
            _fail("row_boxes", r, f"{field}={rows} / {r} = {rows // r} rows per box; a TMA box "
                                  "has at most 256 rows (cuTensorMapEncodeTiled: boxDim ≤ 256)")


def validate_split_k(self) -> None:
    s = self.split_k
    if s not in SPLIT_K_RANGE:
        _fail("split_k", s, f"splits of K per tile: {SPLIT_K_RANGE.start}.."
                            f"{SPLIT_K_RANGE.stop - 1} (1 = none)")
    for field, bad, want in (("edges", not self.edges, "True"),
                             ("tma_store", self.tma_store, "False"),
                             ("pingpong", self.pingpong, "False"),
                             ("dtype", is_fp8(self.dtype), "float16 or bfloat16")):
        if bad:
            _fail("split_k", s, f"split-K writes fp32 partials with the register epilogue of "
                                f"the EDGES build, for 16-bit inputs: needs {field}={want}, "
                                f"here {field}={getattr(self, field)!r}")


def validate_tma_once(self) -> None:
    for field, bad, want in (("persistent", not self.persistent, "True"),
                             ("cluster", self.cluster != 1, "1"),
                             ("b_major", self.b_major != "K", "'K'"),
                             ("row_boxes", self.row_boxes != 1, "1"),
                             ("edges", self.edges, "False"),
                             ("dtype", is_fp8(self.dtype), "float16 or bfloat16")):
        if bad:
            _fail("tma_once", True, f"the stages-loaded-once variant is built for the swizzle "
                                    f"variants' base (persistent, cluster=1, K-major B, "
                                    f"row_boxes=1, no edges, 16-bit inputs): needs {field}="
                                    f"{want}, here {field}={getattr(self, field)!r}")


def validate_pingpong(self) -> None:
    for field, bad, want in (("consumers", self.consumers != 2, "2"),
                             ("persistent", not self.persistent, "True"),
                             ("dtype", is_fp8(self.dtype), "float16 or bfloat16"),
                             ("swizzle", self.swizzle != 128, "128"),
                             ("row_boxes", self.row_boxes != 1, "1"),
                             ("tma_once", self.tma_once, "False")):
        if bad:
            _fail("pingpong", True, f"ping-pong consumers take the CTA's tiles in turn on the "
                                    f"ladder's base: needs {field}={want}, here "
                                    f"{field}={getattr(self, field)!r}")
    if self.accumulators > P.ACC_BUDGET:
        _fail("bn", self.bn, f"pingpong: each consumer holds a whole {self.bm}x{self.bn} tile, "
                             f"{self.bm // 64} atoms × {self.bn // 2} = {self.accumulators} "
                             f"fp32 accumulators per thread, above {P.ACC_BUDGET} (128x128 "
                             f"or 64x256 fit)")


def validate_l2_order(self) -> None:
    p = self.l2_promotion
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        _fail("l2_promotion", p, "must be an integer")
    elif p not in (0, 64, 128, 256):
        _fail("l2_promotion", p, "0 (none), 64, 128 or 256 bytes (CUtensorMapL2promotion)")
    if not isinstance(self.l2_hint, bool):
        _fail("l2_hint", self.l2_hint, "must be a bool")
    if self.tile_order not in TILE_ORDERS:
        _fail("tile_order", self.tile_order, f"one of {TILE_ORDERS}")
    if self.l2_hint and self.row_boxes != 1:
        _fail("l2_hint", True, f"the hinted A load is the one-box-per-k-row load: needs "
                               f"row_boxes=1, here {self.row_boxes}")
    for f, on in (("l2_promotion", p), ("l2_hint", self.l2_hint),
                  ("tile_order", self.tile_order != "raster")):
        if on and self.edges:
            _fail(f, getattr(self, f), "built for the exact launches only: the EDGES build's "
                                       "launch takes neither the maps' promotion nor the "
                                       "order table (needs edges=False)")
    if self.pingpong and self.tile_order != "raster":
        _fail("tile_order", self.tile_order, "the ping-pong consumers walk the raster order only "
                                             "(pingpong=True needs tile_order='raster')")
