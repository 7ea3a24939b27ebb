"""Chapter 01 — the mma.sync GEMM's configuration: the input dtypes (:data:`DTYPES`), the CTA and
warp tile (:class:`MmaSyncTile`, :data:`DEFAULT_TILE`, the benchmark's :data:`TILES`), the kernel's
compile-time defines (:func:`_defines`), its diagnostic variants (:data:`ABLATIONS`) and the shape
rule (:func:`check_shapes`). No GPU, no launch."""

from __future__ import annotations

import dataclasses


#: Input dtypes and their kernel code (the ``DT`` define).
DTYPES = {"float16": 0, "bfloat16": 1}


@dataclasses.dataclass(frozen=True)
class MmaSyncTile:
    """CTA tile ``bm``×``bn``×``bk`` and warp tile ``wm``×``wn`` (elements); ``group_m`` CTA rows
    per raster group. ``threads`` = (bm/wm)·(bn/wn)·32; ``smem_bytes`` = 2 buffers × (A + B tile)."""

    bm: int = 128
    bn: int = 128
    bk: int = 64
    wm: int = 64
    wn: int = 64
    group_m: int = 8
    min_blocks: int = 1

    @property
    def threads(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn) * 32

    @property
    def smem_bytes(self) -> int:
        return 2 * (self.bm * self.bk + self.bk * self.bn) * 2

    @property
    def name(self) -> str:
        n = f"{self.bm}x{self.bn}x{self.bk}/w{self.wm}x{self.wn}"
        return n + (f"/{self.min_blocks}cta" if self.min_blocks > 1 else "")

    @property
    def warps(self) -> int:
        return self.threads // 32

    def l1_bytes_per_ktile(self) -> dict[str, int]:
        """Bytes one CTA moves through the SM's L1/shared-memory data path per k-tile (a model).

        ``ldg``: global → registers (16-byte loads pass through L1/TEX); ``sts``: registers → shared
        memory; ``ldsm``: shared memory → fragments, each warp reading its wm×bk slice of A and bk×wn
        slice of B; ``flop``: 2·bm·bn·bk.
        """
        tile_bytes = (self.bm + self.bn) * self.bk * 2
        return {"ldg": tile_bytes, "sts": tile_bytes,
                "ldsm": self.warps * (self.wm + self.wn) * self.bk * 2,
                "flop": 2 * self.bm * self.bn * self.bk}

    def l1_bound_tflops(self, sm_count: int, sm_clock_mhz: float, bytes_per_clk: int = 128) -> float:
        """Throughput at which the L1/shared-memory data path (``bytes_per_clk`` per SM, 128 on
        sm_90: 32 banks × 4 bytes) would be saturated by :meth:`l1_bytes_per_ktile` alone."""
        b = self.l1_bytes_per_ktile()
        flop_per_byte = b["flop"] / (b["ldg"] + b["sts"] + b["ldsm"])
        return flop_per_byte * bytes_per_clk * sm_count * sm_clock_mhz * 1e6 / 1e12

    def validate(self) -> None:
        """Raise :class:`ValueError` naming the field when the kernel cannot be built for this tile."""
        if self.bk not in (32, 64):
            raise ValueError(f"bk={self.bk}: must be 32 or 64 (the A-tile swizzle covers 64- and "
                             "128-byte rows)")
        for f in ("wm", "wn"):
            v = getattr(self, f)
            if v <= 0 or v % 16:
                raise ValueError(f"{f}={v}: a warp tile side must be a positive multiple of 16")
        if self.bm % self.wm or self.bn % self.wn:
            raise ValueError(f"warp tile {self.wm}x{self.wn} must divide CTA tile {self.bm}x{self.bn}")
        if self.bn % 64:
            raise ValueError(f"bn={self.bn}: must be a multiple of 64 (B rows span whole 128-byte "
                             "lines for the B-tile swizzle)")
        if not 32 <= self.threads <= 1024:
            raise ValueError(f"threads={self.threads}: (bm/wm)·(bn/wn)·32 must be 32..1024")
        if (self.bm * self.bk // 8) % self.threads or (self.bk * self.bn // 8) % self.threads:
            raise ValueError(f"tile {self.name}: its 16-byte chunks must divide evenly among "
                             f"{self.threads} threads")
        for what, chunks_row in (("A", self.bk // 8), ("B", self.bn // 8)):
            if self.threads % chunks_row or (self.threads // chunks_row) % 8:
                raise ValueError(f"tile {self.name}: {self.threads} threads must cover whole {what}-tile "
                                 f"rows ({chunks_row} chunks each) in steps of 8 rows")
        if self.smem_bytes > 227 * 1024:
            raise ValueError(f"smem_bytes={self.smem_bytes}: above the 227 KiB a block may use on sm_90")
        if self.min_blocks not in (1, 2, 3, 4):
            raise ValueError(f"min_blocks={self.min_blocks}: must be 1..4")
        acc_regs = (self.wm * self.wn) // 32
        if acc_regs > 160:
            raise ValueError(f"warp tile {self.wm}x{self.wn}: {acc_regs} fp32 accumulators per thread "
                             "would spill (limit 160 here)")


#: The tuned default (fastest at 4096³ fp16 on the H200 among the tiles tried, see data/):
#: 128×128×64 CTA tile, four 64×64 warp tiles, two CTAs per SM.
DEFAULT_TILE = MmaSyncTile(128, 128, 64, 64, 64, min_blocks=2)

#: Tiles tried by the benchmark: the default and its neighbours.
TILES = (DEFAULT_TILE, MmaSyncTile(128, 128, 32, 64, 64), MmaSyncTile(128, 256, 32, 64, 64),
         MmaSyncTile(128, 128, 32, 64, 32, min_blocks=2), MmaSyncTile(128, 128, 64, 64, 32))


def _defines(dtype: str, tile: MmaSyncTile, out_f32: bool) -> dict[str, int]:
    """The compile-time defines of ``kernels/mma_sync.cu``; validates ``dtype`` and ``tile``."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(DTYPES)}")
    tile.validate()
    return dict(BM=tile.bm, BN=tile.bn, BK=tile.bk, WM=tile.wm, WN=tile.wn, DT=DTYPES[dtype],
                OUT_F32=int(out_f32), GROUP_M=tile.group_m, MINB=tile.min_blocks)


#: The diagnostic variants of the kernel (the ``ABLATE`` define): what is left of the data path.
#: Timing only — the product they compute is wrong by construction.
ABLATIONS = {0: "full kernel", 1: "no global→shared copy", 2: "no ldmatrix",
             3: "mma.sync + __syncthreads only"}


def check_shapes(m: int, n: int, k: int, tile: MmaSyncTile = DEFAULT_TILE) -> None:
    """Raise :class:`ValueError` when (M, N, K) is not a whole number of tiles.

    The kernel has no edge handling: M % bm, N % bn and K % bk must all be 0.
    """
    for name, v, t in (("M", m, tile.bm), ("N", n, tile.bn), ("K", k, tile.bk)):
        if v <= 0 or v % t:
            raise ValueError(f"{name}={v}: the mma.sync GEMM with tile {tile.name} needs {name} to be "
                             f"a positive multiple of {t}")
        if v >= 2**31:
            raise ValueError(f"{name}={v}: must be < 2^31 (32-bit index arithmetic)")
