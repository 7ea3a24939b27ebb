"""Chapter 05's asynchronous pipeline as a small discrete-event model (pure Python, no GPU).

The GEMM keeps a ring of S shared-memory *stages*. Stage s has two mbarriers:

- ``full[s]`` (arrival count 1): the producer's ``mbarrier.arrive.expect_tx(bytes)`` plus TMA's
  complete_tx of the bytes it delivered complete a phase: "the stage holds k-tile k".
- ``empty[s]`` (arrival count = consumer warpgroups): each consumer warpgroup arrives once its
  wgmma has finished reading the stage: "the stage may be overwritten".

Consumer warpgroup, k-tile k: wait ``full[k % S]`` on parity ``(k // S) % 2``, issue the k-tile's
wgmmas, commit, ``wgmma.wait_group(P)``, then arrive on ``empty`` of k-tile k − P (the previous
stage when P = 1). One elected thread of warpgroup 0 is also the producer (no warp specialization
in chapter 05): it fills S − 1 stages before the loop and, at the end of iteration k, waits
``empty[t % S]`` on parity ``(t // S + 1) % 2`` and issues the TMA of k-tile t = k + S − 1. A fresh
mbarrier is in phase 0, so the producer's first pass waits on parity 1, "the preceding phase",
which the PTX ISA counts as complete: it returns at once. With one stage there is nothing to
overlap: the producer loads k-tile k at the top of iteration k, and P must be 0. With P = 0 the
load at the end of iteration k waits for k-tile k's own wgmma, so one stage fewer overlaps the math
than with P = 1 (unless a second consumer warpgroup keeps the Tensor Cores busy meanwhile).

:func:`simulate` runs that protocol, or a named broken variant (:data:`VARIANTS`), and returns a
:class:`Schedule`: spans ``Span(lane, kind, k, stage, start, end)`` in SM cycles, the same format
as the GPU trace, plus a :class:`Deadlock` or :class:`Race` when the protocol is broken. Nothing
here is measured: :meth:`HardwareParams.from_records` takes its numbers from chapter 03's and 04's
records and says where each one came from.

Where things live (``from asynctc.models import pipeline as mp`` re-exports every name below):

* ``ring.py`` — the :class:`Mbarrier`, :class:`Span`, :class:`Deadlock`, :class:`Race`, the
  protocols (:data:`VARIANTS`, :data:`PROTOCOLS`), the event loop, :func:`simulate` →
  :class:`Schedule`, :func:`span_summary`;
* ``hardware.py`` — the CTA :class:`Tile` and the :class:`HardwareParams` the model runs on (read
  from the records), :func:`wave_dram_fraction`;
* ``prediction.py`` — :func:`predict_depth_sweep`, its markdown tables, the frozen
  :data:`H200_PREDICTION` and :func:`frozen_params`;
* ``figures.py`` — :func:`plot_timeline`, :func:`plot_depth_sweep` (never measures);
* ``exercises.py`` — chapter 05's exercises, registered when this package is imported
  (:data:`BUG_HUNT`, :func:`shown_variants`, :func:`mystery_diagnosis`).
"""

from .exercises import (_MYSTERY, BUG_HUNT, _bug_hint, _empty_parity, _empty_parity_hint,
                        _find_bug, _full_parity, _full_parity_hint, _groups_pending,
                        _pending_hint, mystery_diagnosis, shown_variants)
from .figures import _STYLE, plot_depth_sweep, plot_timeline
from .hardware import (SMEM_PER_CTA, HardwareParams, Tile, mma_flop_per_clk, tma_bytes_per_clk,
                       wave_dram_fraction)
from .prediction import (H200_PREDICTION, frozen_params, predict_depth_sweep,
                         prediction_markdown, sweep_markdown)
from .ring import (MBARRIER_LIMIT, PROTOCOLS, VARIANTS, WARPGROUP, Deadlock, Mbarrier,
                   MbarrierError, Race, Schedule, Span, _Sim, simulate, span_summary)
