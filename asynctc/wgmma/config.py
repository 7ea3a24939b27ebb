"""Chapter 04 — the single-tile kernel's configuration: the input dtypes and their ``DT`` codes, the
N values, swizzles and A sources the course builds, :class:`TileConfig` (one wgmma tile: its
operand tiles, defines and entry point) and :func:`supported_configs` (every combination the
instruction allows). No GPU, no launch."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..models import descriptors as dsc


#: dtype name → the kernels' ``DT`` code.
DTYPES = {"float16": 0, "bfloat16": 1, "float8_e4m3fn": 2, "float8_e5m2": 3}
#: Instruction N values the course builds and checks (PTX ISA allows every multiple of 8 to 256).
N_VALUES = (8, 16, 32, 64, 128, 256)
SWIZZLES = (0, 32, 64, 128)
SOURCES = ("smem", "registers")

#: Relative Frobenius error allowed for a single tile (fp32 output). 16-bit inputs: products are
#: exact in fp32 and K ≤ 128, so errors are ~1e-6. fp8: Hopper's fp8 wgmma accumulates with
#: reduced precision (DeepSeek-V3 Technical Report, 2024, §3.3.2: about 14 bits retained on H800).
TILE_TOLERANCE = {"float16": 1e-4, "bfloat16": 1e-4, "float8_e4m3fn": 2e-3, "float8_e5m2": 2e-3}


def np_dtype(name: str) -> np.dtype:
    """numpy dtype of a wgmma input type name (ml_dtypes for bfloat16 and fp8)."""
    name = dsc.dtype_name(name)
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


# --------------------------------------------------------------------------------------------------
# Single tile
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TileConfig:
    """One single-tile experiment: ``dtype``, instruction ``n``, the major-ness and swizzle of each
    operand, where A comes from, and ``k_steps`` wgmmas along K (K = k_steps × 16, or × 32 for fp8).

    ``a_source`` "smem" (``a_major``/``a_swizzle`` describe A's tile) or "registers" (A's fragments
    are loaded from global memory; A has no shared-memory layout, so ``a_major`` must stay "K").
    ``b_swizzle`` defaults to ``a_swizzle``. :meth:`validate` raises
    :class:`~asynctc.models.descriptors.DescriptorError` naming the field, value and rule.
    """

    dtype: str = "float16"
    n: int = 64
    a_major: str = "K"
    b_major: str = "K"
    a_swizzle: int = 128
    b_swizzle: int | None = None
    a_source: str = "smem"
    k_steps: int = 4

    def __post_init__(self):
        object.__setattr__(self, "dtype", dsc.dtype_name(self.dtype))
        if self.b_swizzle is None:
            object.__setattr__(self, "b_swizzle", self.a_swizzle)
        self.validate()

    def validate(self) -> None:
        if self.n not in N_VALUES:
            raise dsc.DescriptorError(f"n={self.n!r}: the course builds N in {N_VALUES} (PTX ISA "
                                      "§9.7.15.5.2 allows any multiple of 8 up to 256)")
        if self.a_source not in SOURCES:
            raise dsc.DescriptorError(f"a_source={self.a_source!r}: must be one of {SOURCES}")
        if isinstance(self.k_steps, bool) or not isinstance(self.k_steps, int) \
                or not 1 <= self.k_steps <= 8:
            raise dsc.DescriptorError(f"k_steps={self.k_steps!r}: 1..8 wgmmas along K")
        object.__setattr__(self, "b_major", dsc.check_major(self.b_major, self.dtype, "b_major"))
        am = dsc.check_major(self.a_major, self.dtype, "a_major")
        object.__setattr__(self, "a_major", am)
        if self.a_source == "registers" and am != "K":
            raise dsc.DescriptorError(
                "a_major='MN' with a_source='registers': A in registers is a fragment "
                "(PTX ISA §9.7.15.5.1.1), not a shared-memory layout; imm-trans-a exists only "
                "for A read through a descriptor. Use a_major='K'.")
        self.a_tile, self.b_tile  # noqa: B018 - build both tiles to run their checks

    @property
    def k(self) -> int:
        return self.k_steps * dsc.instruction_k(self.dtype)

    @property
    def a_tile(self) -> dsc.OperandTile:
        return dsc.OperandTile(64, self.k, self.dtype, self.a_major, self.a_swizzle)

    @property
    def b_tile(self) -> dsc.OperandTile:
        return dsc.OperandTile(self.n, self.k, self.dtype, self.b_major, self.b_swizzle)

    @property
    def entry(self) -> str:
        """The kernel entry point: wgmma_tile_ss_{a}{b} or wgmma_tile_rs_{b} (k / m)."""
        mk = {"K": "k", "MN": "m"}
        if self.a_source == "registers":
            return f"wgmma_tile_rs_{mk[self.b_major]}"
        return f"wgmma_tile_ss_{mk[self.a_major]}{mk[self.b_major]}"

    @property
    def b_offset(self) -> int:
        """Byte offset of B's tile from the (1024-aligned) shared-memory base; A's is 0."""
        if self.a_source == "registers":
            return 0
        return -(-self.a_tile.size_bytes // 1024) * 1024

    @property
    def shmem_bytes(self) -> int:
        """Dynamic shared memory of one launch: 1024 bytes of alignment slack + both tiles."""
        return 1024 + self.b_offset + self.b_tile.size_bytes

    @property
    def defines(self) -> dict:
        return dict(DT=DTYPES[self.dtype], N=self.n, KSTEPS=self.k_steps)

    def label(self) -> str:
        sw = lambda s: f"{s}B" if s else "none"  # noqa: E731
        a = "A:regs" if self.a_source == "registers" else f"A:{self.a_major}/{sw(self.a_swizzle)}"
        return f"{self.dtype} n{self.n} {a} B:{self.b_major}/{sw(self.b_swizzle)}"

    def as_dict(self) -> dict:
        return {"dtype": self.dtype, "n": self.n, "a_major": self.a_major, "b_major": self.b_major,
                "a_swizzle": self.a_swizzle, "b_swizzle": self.b_swizzle,
                "a_source": self.a_source, "k_steps": self.k_steps}


def supported_configs(dtypes=tuple(DTYPES), ns=N_VALUES, swizzles=SWIZZLES,
                      k_steps: int = 4) -> list[TileConfig]:
    """Every (dtype, A source, A major, B major, swizzle, N) the instruction allows: f16/bf16 with
    both major-nesses of A (from shared memory) and B, A from registers with either B; fp8 K-major
    only. A and B share the swizzle mode."""
    out = []
    for dt in dtypes:
        majors = ("K",) if dsc.itemsize(dt) == 1 else ("K", "MN")
        for n in ns:
            for sw in swizzles:
                for am in majors:
                    for bm in majors:
                        out.append(TileConfig(dt, n, am, bm, sw, sw, "smem", k_steps))
                for bm in majors:
                    out.append(TileConfig(dt, n, "K", bm, sw, sw, "registers", k_steps))
    return out
