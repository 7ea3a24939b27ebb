"""Chapter 05's prediction from the ring model: the depth sweep (:func:`predict_depth_sweep`),
its markdown tables, and :data:`H200_PREDICTION` — the prediction frozen before the kernel ran on
the H200, made by the old model (schedule "model_v1") — with the parameters it was made with
(:func:`frozen_params`); :data:`H200_PREDICTION_V2` — the corrected model's (the kernel's
schedule) on the same parameters (:func:`prediction_v2_markdown`). Pure Python."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Iterable, Sequence

from .hardware import SMEM_PER_CTA, HardwareParams, Tile
from .ring import simulate


def predict_depth_sweep(params: HardwareParams | None = None, m: int = 4096, n: int = 4096,
                        k: int = 4096, tile: Tile = Tile(), consumers: int = 2, wait_pending: int = 1,
                        stages: Iterable[int] = range(1, 7), schedule: str = "kernel") -> list[dict]:
    """Predicted throughput of an m × n × k GEMM against the number of stages. One row per S:
    ``stages``, ``wait_pending`` (min(P, S − 1)), ``smem_bytes``, ``fits`` (≤ 227 KiB per CTA),
    ``cycles`` per CTA tile, ``tflops_per_sm``, ``tflops`` (GPU, with the last wave's tail),
    ``math_fraction``, ``full_wait_cycles``. ``params`` default: :meth:`HardwareParams.from_records`;
    ``schedule``: :data:`~.schedule.SCHEDULES` ("kernel", or "model_v1" for the frozen
    :data:`H200_PREDICTION`)."""
    hw = params or HardwareParams.from_records(tile, m, n)
    rows = []
    for S in stages:
        sc = simulate(S, min(wait_pending, S - 1), consumers, math.ceil(k / tile.bk), hw, tile=tile,
                      schedule=schedule)
        smem = S * tile.stage_bytes * hw.ctas_per_sm
        rows.append(dict(stages=S, wait_pending=sc.wait_pending, smem_bytes=smem, fits=smem <= SMEM_PER_CTA,
                         cycles=sc.total_cycles, tflops_per_sm=sc.tflops_per_sm,
                         tflops=sc.tflops_gpu(m, n), math_fraction=sc.math_fraction,
                         full_wait_cycles=sc.full_wait_cycles))
    return rows


def sweep_markdown(rows: Sequence[dict]) -> str:
    """The depth sweep as a markdown table."""
    out = ["| stages | P | smem KB | fits | cycles/tile | TFLOP/s | math in flight "
           "| full-wait cycles (Σ warpgroups) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['stages']} | {r['wait_pending']} | {r['smem_bytes'] // 1024} | "
                   f"{'yes' if r['fits'] else 'no'} | {r['cycles']:.0f} | {r['tflops']:.0f} | "
                   f"{r['math_fraction']:.2f} | {r['full_wait_cycles']:.0f} |")
    return "\n".join(out)



def prediction_markdown(m: int = 4096, n: int = 4096, k: int = 4096, tile: Tile = Tile(),
                        params: HardwareParams | None = None, schedule: str = "kernel") -> str:
    """The model's prediction for an m × n × k fp16 GEMM on the GPU of the records (or on
    ``params``), as markdown: the depth sweep with 2 consumer warpgroups and P = 1, then S = 4
    with P = 0 and with one consumer, and the parameters with their sources; ``schedule`` as in
    :func:`predict_depth_sweep`."""
    hw = params or HardwareParams.from_records(tile, m, n)
    kt = math.ceil(k / tile.bk)
    lines = [f"Model prediction, {m}×{n}×{k} fp16, CTA tile {tile.bm}×{tile.bn}×{tile.bk}, "
             f"2 consumer warpgroups, wait_group(1) (0 for S = 1), {hw.sm_count} SMs at "
             f"{hw.clock_mhz:.0f} MHz:", "",
             sweep_markdown(predict_depth_sweep(hw, m, n, k, tile, schedule=schedule)), ""]
    for label, P, C in (("S = 4, wait_group(0), 2 consumers", 0, 2),
                        ("S = 4, wait_group(1), 1 consumer", 1, 1),
                        ("S = 4, wait_group(0), 1 consumer", 0, 1)):
        sc = simulate(4, P, C, kt, hw, tile=tile, schedule=schedule)
        lines.append(f"- {label}: {sc.tflops_gpu(m, n):.0f} TFLOP/s, math in flight {sc.math_fraction:.2f}")
    need = tile.stage_bytes * hw.mma_flop_per_clk / tile.flop_per_ktile
    lines.append(f"- The plateau assumes L2 → shared memory keeps up: {need:.0f} B/clock/SM at full "
                 "math rate. If it does not, S = 4 with 2 consumers would give:")
    for l2 in (24.0, 32.0, 40.0):
        sc = simulate(4, 1, 2, kt, dataclasses.replace(hw, l2_bytes_per_clk=l2), tile=tile,
                      schedule=schedule)
        lines.append(f"  - at {l2:.0f} B/clock/SM: {sc.tflops_gpu(m, n):.0f} TFLOP/s")
    lines += ["", "Parameters:"]
    lines += [f"- {f.name} = {getattr(hw, f.name):.4g}: {hw.sources.get(f.name, '')}"
              if isinstance(getattr(hw, f.name), float) else
              f"- {f.name} = {getattr(hw, f.name)}: {hw.sources.get(f.name, '')}"
              for f in dataclasses.fields(hw) if f.name != "sources"]
    return "\n".join(lines)



#: :func:`prediction_markdown` as it stood on 2026-11-30, written down BEFORE chapter 05's kernel ran
#: on the H200 (records wgmma and tma_copy of 2026-11-29). Kept as written, for the comparison with
#: the GPU's depth sweep; the live function may move on with the records. It is the OLD model's:
#: made with ``schedule="model_v1"`` (a prologue of S − 1 k-tiles and k + S − 1 refilled whatever
#: P), not the kernel's schedule; :data:`H200_PREDICTION_V2` is the corrected model's.
H200_PREDICTION = """\
Model prediction, 4096×4096×4096 fp16, CTA tile 128×256×64, 2 consumer warpgroups, wait_group(1) (0 for S = 1), 132 SMs at 1713 MHz:

| stages | P | smem KB | fits | cycles/tile | TFLOP/s | math in flight | full-wait cycles (Σ warpgroups) |
|---|---|---|---|---|---|---|---|
| 1 | 0 | 48 | yes | 153737 | 383 | 0.44 | 180527 |
| 2 | 1 | 96 | yes | 80178 | 734 | 0.85 | 147780 |
| 3 | 1 | 144 | yes | 69913 | 842 | 0.98 | 49606 |
| 4 | 1 | 192 | yes | 69913 | 842 | 0.98 | 3751 |
| 5 | 1 | 240 | no | 69913 | 842 | 0.98 | 3719 |
| 6 | 1 | 288 | no | 69913 | 842 | 0.98 | 3687 |

- S = 4, wait_group(0), 2 consumers: 842 TFLOP/s, math in flight 0.98
- S = 4, wait_group(1), 1 consumer: 842 TFLOP/s, math in flight 0.98
- S = 4, wait_group(0), 1 consumer: 718 TFLOP/s, math in flight 0.84
- The plateau assumes L2 → shared memory keeps up: 47 B/clock/SM at full math rate. If it does not, S = 4 with 2 consumers would give:
  - at 24 B/clock/SM: 436 TFLOP/s
  - at 32 B/clock/SM: 576 TFLOP/s
  - at 40 B/clock/SM: 714 TFLOP/s

Parameters:
- clock_mhz = 1713: wgmma record: float16 m64n256k16 SS at 0.985 of 4096 FLOP/clk/SM (SM clock read inside that kernel)
- sm_count = 132: wgmma record provenance
- tma_latency = 600: assumption: several hundred cycles, a DRAM round trip (the GPU trace measures it)
- tma_bytes_per_clk = 8.92: tma_copy record: best TMA copy 'tma 32x256 (32 KB) s2 x3/SM' 4034 GB/s (read+write) / 2 / 132 SMs / 1713 MHz
- dram_fraction = 0.1035: wave_dram_fraction(4096, 4096, 128×256, 132 SMs): unique A/B bytes of one wave / bytes requested
- l2_bytes_per_clk = None: assumption: L2 → shared never binds (not measured)
- mma_flop_per_clk = 4035: wgmma record: float16 m64n256k16 SS at 0.985 of 4096 FLOP/clk/SM
- ctas_per_sm = 1: default: a 128×256 fp32 accumulator needs 128 registers per consumer thread
- issue_cycles = 32: assumption
- drain_cycles = 128: assumption: wgmma pipeline depth
- epilogue_cycles = 2048: assumption: C tile at ~32 B/clock of stores
"""



def frozen_params() -> HardwareParams:
    """The :class:`HardwareParams` the frozen :data:`H200_PREDICTION` was made with, read back from
    its "Parameters:" list (so the model can be re-run on the inputs of the prediction, whatever
    today's records say). Raises ``ValueError`` if a field is missing from that list."""
    got = dict(re.findall(r"^- (\w+) = ([^:]+):", H200_PREDICTION, re.M))
    kw = {}
    for f in dataclasses.fields(HardwareParams):
        if f.name == "sources":
            continue
        if f.name not in got:
            raise ValueError(f"H200_PREDICTION lists no parameter {f.name!r}")
        v = got[f.name].strip()
        kw[f.name] = None if v == "None" else (int(v) if f.type in (int, "int") else float(v))
    return HardwareParams(**kw, sources={k: "frozen in H200_PREDICTION" for k in kw})




def prediction_v2_markdown(params: HardwareParams | None = None) -> str:
    """The corrected model's prediction (the kernel's schedule, :mod:`.schedule`) on ``params``
    (default :func:`frozen_params`, the inputs of :data:`H200_PREDICTION`, so that only the
    schedule differs from it): the depth sweep with 2 consumers and wait_group(1), then
    wait_group(0) against (1) at S = 2, 3, 4 with 2 consumers and at S = 4 with 1 — the table
    :data:`H200_PREDICTION_V2` froze."""
    hw = params or frozen_params()
    tile = Tile()
    kt = math.ceil(4096 / tile.bk)
    lines = ["Corrected model (the kernel's schedule: prologue of S k-tiles, r + S refilled after the "
             "release of r = k − P), 4096×4096×4096 fp16, CTA tile 128×256×64, 2 consumer warpgroups, "
             "wait_group(1) (0 for S = 1), on the parameters of H200_PREDICTION:", "",
             sweep_markdown(predict_depth_sweep(hw, tile=tile)), "",
             "wait_group(0) against wait_group(1), TFLOP/s (math in flight):"]
    for S, C in ((2, 2), (3, 2), (4, 2), (4, 1)):
        r = {P: simulate(S, P, C, kt, hw, tile=tile) for P in (0, 1)}
        lines.append(f"- S = {S}, {C} consumer{'s' if C > 1 else ''}: wait_group(0) "
                     f"{r[0].tflops_gpu(4096, 4096):.0f} ({r[0].math_fraction:.2f}), wait_group(1) "
                     f"{r[1].tflops_gpu(4096, 4096):.0f} ({r[1].math_fraction:.2f})")
    return "\n".join(lines) + "\n"


#: :func:`prediction_v2_markdown` as written on 2026-12-01 (22:01 UTC), after the ring model was
#: made to run the kernel's schedule, on the parameters frozen in :data:`H200_PREDICTION`. Not
#: blind: chapter 05's depth-sweep record (2026-11-30/12-01) already existed; it predicts nothing
#: new about the hardware but what the schedule alone changes, and is kept as written so the
#: record can be set beside it. No GPU run has been made since.
H200_PREDICTION_V2 = """\
Corrected model (the kernel's schedule: prologue of S k-tiles, r + S refilled after the release of r = k − P), 4096×4096×4096 fp16, CTA tile 128×256×64, 2 consumer warpgroups, wait_group(1) (0 for S = 1), on the parameters of H200_PREDICTION:

| stages | P | smem KB | fits | cycles/tile | TFLOP/s | math in flight | full-wait cycles (Σ warpgroups) |
|---|---|---|---|---|---|---|---|
| 1 | 0 | 48 | yes | 153715 | 383 | 0.44 | 180496 |
| 2 | 1 | 96 | yes | 80129 | 735 | 0.85 | 147008 |
| 3 | 1 | 144 | yes | 69905 | 842 | 0.98 | 49528 |
| 4 | 1 | 192 | yes | 69905 | 842 | 0.98 | 3750 |
| 5 | 1 | 240 | no | 69905 | 842 | 0.98 | 3718 |
| 6 | 1 | 288 | no | 69905 | 842 | 0.98 | 3686 |

wait_group(0) against wait_group(1), TFLOP/s (math in flight):
- S = 2, 2 consumers: wait_group(0) 746 (0.87), wait_group(1) 735 (0.85)
- S = 3, 2 consumers: wait_group(0) 842 (0.98), wait_group(1) 842 (0.98)
- S = 4, 2 consumers: wait_group(0) 842 (0.98), wait_group(1) 842 (0.98)
- S = 4, 1 consumer: wait_group(0) 719 (0.84), wait_group(1) 842 (0.98)
"""
