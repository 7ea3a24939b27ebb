"""The numbers chapter 05's ring model runs on: the CTA :class:`Tile` and the
:class:`HardwareParams` (from chapter 03's and 04's records, each number with its source), the DRAM
share of a wave (:func:`wave_dram_fraction`) and the record readers behind them. Pure Python."""

from __future__ import annotations

import dataclasses
import math

#: Shared memory one CTA may use on sm_90 with the opt-in attribute (CUDA C++ Programming Guide,
#: compute capability 9.0: 227 KiB per block; the SM itself has 228 KiB, 1 KiB of it reserved per CTA).
SMEM_PER_CTA = 227 * 1024


@dataclasses.dataclass(frozen=True)
class Tile:
    """The CTA tile: bm × bn outputs, bk-deep k-tiles, ``elem_bytes`` per A/B element."""
    bm: int = 128
    bn: int = 256
    bk: int = 64
    elem_bytes: int = 2

    @property
    def a_bytes(self) -> int:
        return self.bm * self.bk * self.elem_bytes

    @property
    def b_bytes(self) -> int:
        return self.bn * self.bk * self.elem_bytes

    @property
    def stage_bytes(self) -> int:
        return self.a_bytes + self.b_bytes

    @property
    def flop_per_ktile(self) -> int:
        return 2 * self.bm * self.bn * self.bk



# ---- hardware parameters ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class HardwareParams:
    """Numbers the model runs on (cycles are SM cycles at ``clock_mhz``). ``sources`` says, per
    field, where the number came from; fields without a record are assumptions, labelled so.

    tma_latency: cycles from TMA issue until its bytes start to land. tma_bytes_per_clk: bytes/clock
    of DRAM bandwidth one SM's share of the device gives (shared by ``ctas_per_sm`` CTAs).
    dram_fraction: the part of a CTA's TMA bytes that come from DRAM (the rest hit L2, see
    :func:`wave_dram_fraction`). l2_bytes_per_clk: L2 → shared memory bytes/clock per SM, or None
    for "never the bottleneck" (not measured by the course yet). mma_flop_per_clk: sustained Tensor
    Core FLOP/clock/SM. issue_cycles: a warpgroup's cost to pass a satisfied wait and issue a k-tile
    (or a TMA). drain_cycles: from the Tensor Cores finishing a wgmma group until wait_group sees
    it. epilogue_cycles: writing the C tile after the loop.
    """
    clock_mhz: float = 1713.0
    sm_count: int = 132
    tma_latency: float = 600.0
    tma_bytes_per_clk: float = 8.9
    dram_fraction: float = 1.0
    l2_bytes_per_clk: float | None = None
    mma_flop_per_clk: float = 4035.0
    ctas_per_sm: int = 1
    issue_cycles: float = 32.0
    drain_cycles: float = 128.0
    epilogue_cycles: float = 2048.0
    sources: dict = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self):
        v = self.l2_bytes_per_clk
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
            raise ValueError(f"l2_bytes_per_clk={v!r}: must be None (no cap) or a number of bytes "
                             "per clock per SM above 0")

    @classmethod
    def from_records(cls, tile: Tile = Tile(), m: int = 4096, n: int = 4096, **overrides):
        """Parameters from ``data/``: the wgmma record (Tensor Core rate for instruction N = tile.bn
        from shared memory, and the SM clock measured in that kernel), the tma_copy record (DRAM
        bytes per clock per SM, :func:`tma_bytes_per_clk`) and the L2 reuse of an m × n GEMM
        (:func:`wave_dram_fraction`). Where a record is missing the defaults stay, and
        ``sources`` says so. Keyword ``overrides`` replace fields last."""
        from ...core import records
        d = {f.name: f.default for f in dataclasses.fields(cls) if f.name != "sources"}
        src = {k: "default (no record)" for k in d}
        try:
            rec = records.load("wgmma")
            flop, mhz, why = mma_flop_per_clk(rec, n=min(tile.bn, 256))
            d.update(mma_flop_per_clk=flop, clock_mhz=mhz, sm_count=rec.provenance["sm_count"])
            src.update(mma_flop_per_clk=why, clock_mhz=f"{why} (SM clock read inside that kernel)",
                       sm_count="wgmma record provenance")
        except records.RecordError:
            pass
        try:
            rec = records.load("tma_copy")
            d["tma_bytes_per_clk"], src["tma_bytes_per_clk"] = tma_bytes_per_clk(rec, d["clock_mhz"])
        except records.RecordError:
            pass
        d["dram_fraction"] = wave_dram_fraction(m, n, tile, d["sm_count"], d["ctas_per_sm"])
        src["dram_fraction"] = (f"wave_dram_fraction({m}, {n}, {tile.bm}×{tile.bn}, "
                                f"{d['sm_count']} SMs): unique A/B bytes of one wave / bytes requested")
        src.update(tma_latency="assumption: several hundred cycles, a DRAM round trip "
                               "(the GPU trace measures it)",
                   l2_bytes_per_clk="assumption: L2 → shared never binds (not measured)",
                   issue_cycles="assumption", drain_cycles="assumption: wgmma pipeline depth",
                   epilogue_cycles="assumption: C tile at ~32 B/clock of stores",
                   ctas_per_sm="default: a 128×256 fp32 accumulator needs 128 registers per consumer thread")
        d.update(overrides)
        src.update({k: "given" for k in overrides})
        return cls(**d, sources=src)


def tma_bytes_per_clk(rec, clock_mhz: float) -> tuple[float, str]:
    """DRAM bytes per SM clock one SM's TMA loads get, from chapter 03's ``tma_copy`` record.

    The record's ``gbps`` counts read + write (``bench.gbps(2 × bytes, ms)``); a TMA load is the
    read half. So bytes/clock/SM = best TMA copy GB/s / 2 / SMs / clock. The clock is the one the
    model converts with (the SM clock under a Tensor Core load): DRAM bandwidth does not scale with
    the SM clock. Returns (value, source sentence)."""
    best = max((c for c in rec.results["copies"] if c["variant"] == "tma"), key=lambda c: c["gbps"])
    sms = rec.provenance["sm_count"]
    value = best["gbps"] * 1e9 / 2 / sms / (clock_mhz * 1e6)
    return value, (f"tma_copy record: best TMA copy '{best['name']}' {best['gbps']:.0f} GB/s "
                   f"(read+write) / 2 / {sms} SMs / {clock_mhz:.0f} MHz")


def mma_flop_per_clk(rec, n: int = 256, dtype: str = "float16") -> tuple[float, float, str]:
    """Sustained Tensor Core FLOP/clock/SM from chapter 04's ``wgmma`` record: 4096 (sm_90 fp16
    datasheet rate) × the measured fraction for instruction N = ``n``, operands in shared memory.
    Returns (FLOP/clock, SM MHz measured in that kernel, source sentence)."""
    rows = [r for r in rec.results["throughput"]
            if r["dtype"] == dtype and r["n"] == n and r["source"] == "smem"]
    if not rows:
        raise ValueError(f"wgmma record has no {dtype} SS row with n={n}")
    r = max(rows, key=lambda r: r["fraction_of_datasheet"])
    return (4096 * r["fraction_of_datasheet"], r["sm_mhz"],
            f"wgmma record: {dtype} m64n{n}k16 SS at {r['fraction_of_datasheet']:.3f} of 4096 FLOP/clk/SM")


def wave_dram_fraction(m: int, n: int, tile: Tile, sms: int, ctas_per_sm: int = 1) -> float:
    """Fraction of the TMA bytes that must come from DRAM when one wave of CTAs runs together.

    Assumes CTAs numbered with N fastest (``blockIdx.x`` over the N tiles) and a wave = the first
    sms × ctas_per_sm tiles: per k-tile each distinct row block of A and column block of B is read
    from DRAM once, every other request hits L2. Returns unique bytes / requested bytes (≤ 1)."""
    tiles_n = math.ceil(n / tile.bn)
    wave = min(sms * ctas_per_sm, math.ceil(m / tile.bm) * tiles_n)
    rows = len({i // tiles_n for i in range(wave)})
    cols = len({i % tiles_n for i in range(wave)})
    return (rows * tile.a_bytes + cols * tile.b_bytes) / (wave * tile.stage_bytes)


