"""Chapter 05's asynchronous pipeline as a small discrete-event model (pure Python, no GPU).

The GEMM keeps a ring of S shared-memory *stages*. Stage s has two mbarriers:

- ``full[s]`` (arrival count 1): the producer's ``mbarrier.arrive.expect_tx(bytes)`` plus TMA's
  complete_tx of the bytes it delivered complete a phase: "the stage holds k-tile k".
- ``empty[s]`` (arrival count = consumer warpgroups): each consumer warpgroup arrives once its
  wgmma has finished reading the stage: "the stage may be overwritten".

Consumer warpgroup, k-tile k: wait ``full[k % S]`` on parity ``(k // S) % 2``, issue the k-tile's
wgmmas, commit, ``wgmma.wait_group(P)``, then arrive on ``empty`` of k-tile k − P (the previous
stage when P = 1). One elected thread of warpgroup 0 is also the producer (no warp specialization
in chapter 05). It runs the kernel's schedule (:mod:`.schedule`, one source for the kernel's
description and the model): it fills min(S, T) stages before the loop and, once k-tile
r = k − P is released in iteration k, waits ``empty[r % S]`` on parity ``(t // S + 1) % 2`` and
issues the TMA of k-tile t = r + S (k + S − 1 with P = 1, k + S with P = 0). A fresh mbarrier is
in phase 0, so a first-pass wait on parity 1, "the preceding phase", returns at once (the PTX ISA
counts it complete). With one stage there is nothing to overlap, and P must be 0. With P = 0 the
release of k waits for k-tile k's own wgmma, so the refill comes later than with P = 1 (unless a
second consumer warpgroup keeps the Tensor Cores busy meanwhile). ``simulate(...,
schedule="model_v1")`` runs the model's schedule before 2026-12-01 (a prologue of S − 1, k + S − 1
refilled whatever P), with which the frozen :data:`H200_PREDICTION` was made.

:func:`simulate` runs that protocol, or a named broken variant (:data:`VARIANTS`), and returns a
:class:`Schedule`: spans ``Span(lane, kind, k, stage, start, end)`` in SM cycles, the same format
as the GPU trace, plus a :class:`Deadlock` or :class:`Race` when the protocol is broken. Nothing
here is measured: :meth:`HardwareParams.from_records` takes its numbers from chapter 03's and 04's
records and says where each one came from.

Where things live (``from asynctc.models import pipeline as mp`` re-exports every name below):

* ``ring.py`` — the :class:`Mbarrier`, :class:`Span`, :class:`Deadlock`, :class:`Race`, the
  protocols (:data:`VARIANTS`, :data:`NO_PARITY`, :data:`PROTOCOLS`), the event loop (:class:`EventLoop`, shared
  with :mod:`asynctc.models.tcgen05_sched`), :func:`simulate` →
  :class:`Schedule`, :func:`span_summary`;
* ``schedule.py`` — :func:`ring_schedule` → :class:`RingSchedule`, :data:`SCHEDULES`: which k-tile
  is loaded when;
* ``hardware.py`` — the CTA :class:`Tile` and the :class:`HardwareParams` the model runs on (read
  from the records), :func:`wave_dram_fraction`;
* ``prediction.py`` — :func:`predict_depth_sweep`, its markdown tables, the frozen
  :data:`H200_PREDICTION` (the old model's) and :func:`frozen_params`, the corrected
  model's :data:`H200_PREDICTION_V2` (:func:`prediction_v2_markdown`);
* ``figures.py`` — :func:`plot_ring` (the ring and its parities, :func:`ring_parities`),
  :func:`plot_timeline`, :func:`plot_depth_sweep` (never measures);
* ``cluster.py`` — chapter 06's rung 6 ring: a cluster of CTAs whose producers multicast B,
  :func:`simulate_cluster` with a given arrival count of ``empty[s]`` (its race or deadlock);
* ``exercises.py`` — chapter 05's exercises, registered when this package is imported
  (:data:`BUG_HUNT`, :func:`shown_variants`, :func:`mystery_diagnosis`).

Lanes are keyed "tma", "producer", "wg0", "wg1"; :func:`lane_name` (from :mod:`asynctc.models.lanes`)
gives the names the learner reads ("TMA", "producer", "consumer 0", "consumer 1").
"""

from .exercises import (_MYSTERY, BUG_HUNT, _bug_hint, _empty_parity, _empty_parity_hint,
                        _find_bug, _full_parity, _full_parity_hint, _groups_pending,
                        _pending_hint, mystery_diagnosis, shown_variants)
from .figures import _STYLE, plot_depth_sweep, plot_ring, plot_timeline, ring_parities
from .hardware import (SMEM_PER_CTA, HardwareParams, Tile, mma_flop_per_clk, tma_bytes_per_clk,
                       wave_dram_fraction)
from .prediction import (H200_PREDICTION, H200_PREDICTION_V2, frozen_params, prediction_v2_markdown, predict_depth_sweep,
                         prediction_markdown, sweep_markdown)
from .schedule import SCHEDULES, RingSchedule, ring_schedule
from .ring import (KERNEL_PARITIES, MBARRIER_LIMIT, NO_PARITY, PROTOCOLS, VARIANTS, WARPGROUP, Deadlock, EventLoop, Mbarrier,
                   MbarrierError, Race, Schedule, Span, _Sim, kernel_empty_parity, kernel_full_parity, simulate,
                   span_summary)
from .cluster import ClusterRun, simulate_cluster
from ..lanes import lane_name
