"""The persistent tcgen05 GEMM's three roles as a discrete-event model (chapter 09 deep dive; no GPU).

``kernels/tcgen05_persistent.cu`` runs three roles per CTA: a TMA **producer** (a ring of S stages,
full / empty mbarriers), one **MMA** thread (two TMEM accumulators, acc_full / acc_empty mbarriers)
and the **epilogue** warps. This module runs exactly that protocol on chapter 05's mbarrier model
(:class:`asynctc.models.pipeline.Mbarrier`: phases, parity, arrival counts, tx-count) and its event
loop (:class:`asynctc.models.pipeline.EventLoop`, the one the ring runs on) and reports in
chapter 05's vocabulary: :class:`~asynctc.models.pipeline.Span` timelines (so
:func:`asynctc.models.pipeline.plot_timeline` draws them), and a
:class:`~asynctc.models.pipeline.Deadlock` or :class:`~asynctc.models.pipeline.Race` when a variant
of the protocol is broken (:data:`VARIANTS`) — e.g. an MMA thread that skips the wait on the
accumulator-empty barrier overwrites an accumulator the epilogue is still reading.

:func:`simulate_persistent` runs T tiles of K k-tiles; :func:`clc_schedule` models the cluster
launch control scheduler (which unit each cluster takes, cancellations, the final "not cancelled");
:func:`predict_b200` turns the schedule into a throughput **prediction** for a B200, its
assumptions written beside it (:data:`B200`).

Cycle counts come from :class:`SchedParams`, each with its source or labelled an assumption; nothing
here is measured.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from typing import Iterable

from .pipeline import Deadlock, EventLoop, Mbarrier, Race, Span

#: Broken variants of the protocol → what they do.
VARIANTS = {
    "single_accumulator": "one TMEM accumulator: the MMAs of tile t + 1 wait for tile t's epilogue (correct, slower)",
    "missing_acc_empty_wait": "the MMA thread never waits on acc_empty before reusing an accumulator",
    "acc_empty_parity_wrong": "the MMA thread waits acc_empty on parity (t // 2) % 2: parity 0 on a fresh barrier",
    "early_acc_release": "the epilogue arrives on acc_empty before its tcgen05.ld (wait::ld) completed",
    "acc_empty_count_too_big": "acc_empty initialised with 128 (threads) while the four epilogue warps arrive once each",
    "missing_empty_commit": "the MMA thread never commits the stage's empty barrier",
}
PROTOCOLS = ("correct",) + tuple(VARIANTS)


@dataclasses.dataclass(frozen=True)
class SchedParams:
    """Cycles (SM clocks) per event of one CTA (or CTA pair) — assumptions unless a source is given.

    ``mma_flop_per_clk``: dense FP16 Tensor Core FLOP/clock/SM of sm_100 (8192; the course's
    reference number for a B200). ``tma_bytes_per_clk``: bytes/clock a CTA's loads arrive at
    (assumption: 8 TB/s HBM3e over 148 SMs at 1.85 GHz ≈ 29 B/clk/SM from DRAM; with L2 reuse of a
    tile row, ~64 B/clk/SM from L2 — we use 64). ``tma_latency``: issue → first byte (assumption,
    chapter 03's H200 order of magnitude: 800). ``epilogue_bytes_per_clk``: fp32 C stores per CTA
    (assumption: 64 B/clk). ``ld_cycles_per_32_cols``: one tcgen05.ld.32x32b.x32 + wait::ld per warp
    (assumption: 64). ``issue_cycles``: a role passing a satisfied wait (assumption: 20)."""

    mma_flop_per_clk: float = 8192.0
    tma_bytes_per_clk: float = 64.0
    tma_latency: float = 800.0
    epilogue_bytes_per_clk: float = 64.0
    ld_cycles_per_32_cols: float = 64.0
    issue_cycles: float = 20.0


@dataclasses.dataclass(frozen=True)
class SchedTile:
    """One CTA's share of a unit of work: 128 rows × ``bn`` columns of C (M = 128 per CTA, one CTA
    per SM), k-tiles of ``bk`` elements of ``elem_bytes``; with ``cta_group`` = 2 the pair's MMA
    reads the other half of Bᵀ from the peer, so each CTA loads bn / 2 rows of it."""
    bm: int = 128
    bn: int = 256
    bk: int = 64
    elem_bytes: int = 2
    cta_group: int = 2

    @property
    def stage_bytes(self) -> int:
        """Bytes one CTA loads per k-tile: its 128 rows of A and bn / cta_group rows of Bᵀ."""
        return (self.bm + self.bn // self.cta_group) * self.bk * self.elem_bytes

    @property
    def flop_per_ktile(self) -> int:
        return 2 * self.bm * self.bn * self.bk


@dataclasses.dataclass
class PersistentSchedule:
    """A run of :func:`simulate_persistent`: ``spans`` (chapter 05's :class:`Span`, lanes "tma",
    "producer", "mma", "epilogue"), ``diagnosis`` (None, Deadlock or Race), and the inputs."""
    spans: list
    diagnosis: Deadlock | Race | None
    stages: int
    accumulators: int
    tiles: int
    k_tiles: int
    tile: SchedTile
    params: SchedParams

    @property
    def total_cycles(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    @property
    def mma_busy_fraction(self) -> float:
        """Part of the run with an MMA in flight (the Tensor Core's duty cycle)."""
        busy = sum(s.end - s.start for s in self.spans if s.kind == "mma")
        return busy / self.total_cycles if self.total_cycles else 0.0

    def overlap_cycles(self) -> float:
        """Cycles during which an epilogue runs while MMAs of a later tile are in flight."""
        mma = [s for s in self.spans if s.kind == "mma"]
        out = 0.0
        for e in (s for s in self.spans if s.kind == "epilogue"):
            for s in mma:
                if s.k > e.k:   # k holds the tile index for mma/epilogue spans
                    out += max(0.0, min(e.end, s.end) - max(e.start, s.start))
        return out


class _Run(EventLoop):
    """The three roles on chapter 05's :class:`~asynctc.models.pipeline.EventLoop`: one actor each,
    lane = role; their waits have no stage (-1) and k = the k-tile (full / empty) or tile (acc_*)."""

    def __init__(self, S, A, T, K, tile, hw, proto):
        super().__init__()
        self.S, self.A, self.T, self.K, self.tile, self.hw, self.proto = S, A, T, K, tile, hw, proto
        self.full = [Mbarrier(1, f"full[{s}]") for s in range(S)]
        self.empty = [Mbarrier(1, f"empty[{s}]") for s in range(S)]
        count = 128 if proto == "acc_empty_count_too_big" else 4
        self.acc_full = [Mbarrier(1, f"acc_full[{a}]") for a in range(A)]
        self.acc_empty = [Mbarrier(count, f"acc_empty[{a}]") for a in range(A)]
        self.reading = {}            # accumulator -> (tile, end of its last tcgen05.ld)
        self.writing = {}            # accumulator -> tile whose MMAs write it
        self.tc_free = 0.0
        self.released = {}           # accumulator -> (tile, whether the release followed the reads)
        self.acquired = {}           # accumulator -> tile whose release the MMA thread acquired
        self.mma_ktile = tile.flop_per_ktile / hw.mma_flop_per_clk

    def _actors(self):
        return {"producer": self.producer(), "mma": self.mma(), "epilogue": self.epilogue()}

    def _on_wait(self, name, kind, bar):
        if kind == "wait_acc_empty":
            self.acquired.pop(bar.name, None)

    def _on_pass(self, name, lane, kind, bar, parity, k, s):
        if kind == "wait_acc_empty":   # acquire: the releases of the completed phase happened before
            self.acquired[bar.name] = self.released.get(bar.name)

    def arrive(self, bar, n=1):
        for _ in range(n):
            bar.arrive()
        self._changed(bar)

    # -- roles ---------------------------------------------------------------------------------
    def producer(self):
        hw, it = self.hw, 0
        for t in range(self.T):
            for kt in range(self.K):
                s, rnd = it % self.S, it // self.S
                yield ("wait", "producer", "wait_empty", self.empty[s], (rnd & 1) ^ 1, it, -1)
                nbytes = self.tile.stage_bytes
                self.full[s].arrive_expect_tx(nbytes)
                end = max(self.now + hw.tma_latency, getattr(self, "tma_free", 0.0)) + \
                    nbytes / hw.tma_bytes_per_clk
                self.tma_free = end
                self.spans.append(Span("tma", "tma", it, s, self.now, end))
                self._at(end, lambda s=s, nb=nbytes: (self.full[s].complete_tx(nb),
                                                     self._changed(self.full[s])))
                yield ("at", self.now + hw.issue_cycles)
                it += 1

    def mma(self):
        hw, it = self.hw, 0
        for t in range(self.T):
            a = t % self.A
            if self.proto != "missing_acc_empty_wait":
                parity = ((t // self.A) & 1) if self.proto == "acc_empty_parity_wrong" \
                    else ((t // self.A) & 1) ^ 1
                yield ("wait", "mma", "wait_acc_empty", self.acc_empty[a], parity, t, -1)
            if t >= self.A:
                # Happens-before, not timing: the epilogue's tcgen05.ld of tile t − A must be ordered
                # before these MMAs by a release (after wait::ld and fence::before_thread_sync) that
                # this thread acquired through acc_empty[a].
                got = self.acquired.get(self.acc_empty[a].name)
                if got is None or got[0] != t - self.A or not got[1]:
                    why = ("no completed phase of acc_empty[%d] was waited for" % a if got is None or
                           got[0] != t - self.A else
                           "the epilogue released it before its tcgen05.ld completed")
                    self.diagnosis = Race(t, a, f"the MMAs of tile {t} write accumulator {a} while "
                                                f"nothing orders the epilogue's tcgen05.ld of tile "
                                                f"{t - self.A} before them: {why}")
                    return
            self.writing[a] = t
            for kt in range(self.K):
                s, rnd = it % self.S, it // self.S
                yield ("wait", "mma", "wait_full", self.full[s], rnd & 1, it, -1)
                start = max(self.now, self.tc_free)
                self.tc_free = end = start + self.mma_ktile
                self.spans.append(Span("mma", "mma", t, s, start, end))
                if self.proto != "missing_empty_commit":
                    self._at(end, lambda s=s: self.arrive(self.empty[s]))   # tcgen05.commit → empty
                yield ("at", self.now + hw.issue_cycles)
                it += 1
            self._at(self.tc_free, lambda a=a: self.arrive(self.acc_full[a]))  # commit → acc_full

    def epilogue(self):
        hw, bn = self.hw, self.tile.bn
        for t in range(self.T):
            a = t % self.A
            yield ("wait", "epilogue", "wait_acc_full", self.acc_full[a], (t // self.A) & 1, t, -1)
            if self.writing.get(a) != t:
                self.diagnosis = Race(t, a, f"the epilogue of tile {t} reads accumulator {a}, which "
                                            f"holds tile {self.writing.get(a)}")
                return
            start = self.now
            ld_end = start + hw.ld_cycles_per_32_cols * bn / 32
            self.reading[a] = (t, ld_end)
            if self.proto == "early_acc_release":
                self.released[self.acc_empty[a].name] = (t, False)
                self.arrive(self.acc_empty[a], 4)
                yield ("at", ld_end)
            else:
                yield ("at", ld_end)
                self.released[self.acc_empty[a].name] = (t, True)
                self.arrive(self.acc_empty[a], 4)            # fence::before_thread_sync, 4 warps
            end = self.now + self.tile.bm * bn * 4 / hw.epilogue_bytes_per_clk
            self.spans.append(Span("epilogue", "epilogue", t, a, start, end))
            yield ("at", end)

    def _deadlock(self) -> Deadlock:
        # the root cause first: a role blocked on a release barrier (empty, acc_empty) — the waits
        # on full / acc_full are its consequences — and the MMA thread before the producer
        order = {"mma": 0, "producer": 1, "epilogue": 2}
        blocked = sorted(self.waiting.items(), key=lambda kv: (
            kv[1][1] in ("wait_full", "wait_acc_full"), order[kv[0]], kv[1][6]))
        name, (lane, kind, bar, parity, k, s, start) = blocked[0]
        why = [f"{bar.name} is in phase {bar.phase} (parity {bar.parity}); waiting on parity {parity} "
               f"waits for that phase to complete"]
        if bar.pending:
            why.append(f"{bar.pending} of its {bar.count} arrivals never come")
        if bar.phase == 0:
            why.append("no phase of it has completed yet (a fresh barrier is in phase 0)")
        others = [f"{n} on {w[2].name} parity {w[3]}" for n, w in blocked[1:]]
        if others:
            why.append("also blocked: " + ", ".join(others))
        return Deadlock(k, bar.name.split("[")[0], -1, parity, tuple(n for n, _ in blocked), "; ".join(why))


def simulate_persistent(stages: int = 4, tiles: int = 6, k_tiles: int = 8, accumulators: int = 2,
                        protocol: str = "correct", tile: SchedTile = SchedTile(),
                        params: SchedParams = SchedParams()) -> PersistentSchedule:
    """Run ``tiles`` consecutive tiles of one persistent CTA (pair) through the three-role protocol.

    ``stages`` S ≥ 1, ``accumulators`` 1 or 2 (TMEM buffers), ``k_tiles`` per tile ≥ 1, ``protocol``
    "correct" or a name of :data:`VARIANTS` ("single_accumulator" forces one accumulator). Returns a
    :class:`PersistentSchedule`; a broken protocol ends with its :class:`Deadlock` / :class:`Race`,
    never a hang. Raises ValueError naming the field for bad arguments."""
    for name, v, lo in (("stages", stages, 1), ("tiles", tiles, 1), ("k_tiles", k_tiles, 1)):
        if isinstance(v, bool) or int(v) != v or v < lo:
            raise ValueError(f"{name}={v!r}: must be an integer ≥ {lo}")
    if accumulators not in (1, 2):
        raise ValueError(f"accumulators={accumulators!r}: 1 or 2 TMEM accumulators")
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol={protocol!r}: must be one of {PROTOCOLS}")
    if protocol == "single_accumulator":
        accumulators = 1
    if accumulators * tile.bn > 512:
        raise ValueError(f"accumulators={accumulators} × bn={tile.bn}: more than the 512 TMEM columns")
    r = _Run(stages, accumulators, tiles, k_tiles, tile, params, protocol)
    r.run()
    return PersistentSchedule(sorted(r.spans, key=lambda s: (s.start, s.lane)), r.diagnosis, stages,
                              accumulators, tiles, k_tiles, tile, params)


# ---- the cluster launch control scheduler ------------------------------------------------------

@dataclasses.dataclass
class ClcRun:
    """:func:`clc_schedule`'s result: ``units`` (per cluster: the units it computed, in order),
    ``requests`` (try_cancel calls: (cluster, round, answer unit or None)), ``launched`` (clusters
    that ever started)."""
    units: dict
    requests: list
    launched: list

    @property
    def every_unit_once(self) -> bool:
        got = sorted(u for us in self.units.values() for u in us)
        return got == list(range(len(got))) and len(got) == len(set(got))


def clc_schedule(n_units: int, resident: int, unit_cycles: Iterable[float] | None = None) -> ClcRun:
    """Model of ``clusterlaunchcontrol.try_cancel`` scheduling: the grid has one cluster per unit
    (cluster i's own unit is i); ``resident`` clusters fit on the GPU at once and launch in index
    order. A running cluster issues a request when it starts a unit; the hardware cancels the
    lowest-indexed cluster that has not launched yet and returns its first CTA id (the unit), or
    "not cancelled" once every cluster has launched or been cancelled — after which the asking
    cluster stops (a further request would be undefined). ``unit_cycles``: how long each unit
    takes (default 1 each; give uneven numbers to see the dynamic balance)."""
    if isinstance(n_units, bool) or n_units < 1 or isinstance(resident, bool) or resident < 1:
        raise ValueError(f"n_units={n_units!r}, resident={resident!r}: integers ≥ 1")
    cost = list(unit_cycles) if unit_cycles is not None else [1.0] * n_units
    if len(cost) != n_units:
        raise ValueError(f"unit_cycles: {len(cost)} values for n_units={n_units}")
    next_launch = min(resident, n_units)
    units: dict = {c: [] for c in range(next_launch)}
    launched = list(range(next_launch))
    requests = []
    events = [(0.0, c, c) for c in range(next_launch)]      # (time, cluster, unit it starts)
    heapq.heapify(events)
    rounds = {c: 0 for c in launched}
    while events:
        t, c, u = heapq.heappop(events)
        units[c].append(u)
        # the request for the next unit, answered at once in this model
        if next_launch < n_units:
            got = next_launch
            next_launch += 1
        else:
            got = None
        requests.append((c, rounds[c], got))
        rounds[c] += 1
        if got is not None:
            heapq.heappush(events, (t + cost[u], c, got))
    return ClcRun(units, requests, launched)


# ---- the B200 prediction -------------------------------------------------------------------------

#: The B200 facts the prediction starts from and the assumptions it adds (each labelled).
#: Published dense FP16/BF16 Tensor Core peak of an HGX B200 (1000 W), TFLOP/s: NVIDIA's B200
#: datasheet figure as tabulated at glennklockwood.com/garden/processors/B200 (4500 with sparsity).
B200_PUBLISHED_DENSE_FP16_TFLOPS = 2250.0
B200 = {
    "sm_count": (148, "course reference (B200: 148 SMs)"),
    "flop_per_clk_per_sm": (8192, "course reference (dense FP16, sm_100)"),
    "clock_ghz": (round(B200_PUBLISHED_DENSE_FP16_TFLOPS * 1e12 / (8192 * 148) / 1e9, 3),
                  "ASSUMPTION: the clock at which 8192 × 148 FLOP/clock gives the published 2250 "
                  "TFLOP/s dense peak (HGX B200, 1000 W); sustained clocks under load may be lower"),
}


def predict_b200(m: int = 8192, n: int = 8192, k: int = 8192, tile: SchedTile = SchedTile(),
                 stages: int = 4, accumulators: int = 2, params: SchedParams = SchedParams(),
                 tiles_per_cta: int | None = None) -> dict:
    """A **prediction** (model, not measurement) of the persistent kernel's fp16 throughput on a
    B200: the three-role schedule of one CTA over its share of tiles, × 148 SMs, at the assumed
    clock. Returns ``tflops``, ``peak_tflops`` (8192 × 148 × clock), ``fraction``, the schedule's
    ``mma_busy_fraction``, ``tiles`` and ``waves``, and ``assumptions`` (text)."""
    sms, _ = B200["sm_count"]
    fpc, _ = B200["flop_per_clk_per_sm"]
    ghz, _ = B200["clock_ghz"]
    tiles = math.ceil(m / tile.bm) * math.ceil(n / tile.bn)
    per_cta = tiles_per_cta or math.ceil(tiles / sms)
    sch = simulate_persistent(stages, per_cta, math.ceil(k / tile.bk), accumulators, tile=tile,
                              params=dataclasses.replace(params, mma_flop_per_clk=fpc))
    if sch.diagnosis is not None:
        raise RuntimeError(f"the model's protocol failed: {sch.diagnosis!r}")
    flop = 2.0 * m * n * k
    seconds = sch.total_cycles / (ghz * 1e9)
    peak = fpc * sms * ghz * 1e9 / 1e12
    tflops = flop / seconds / 1e12
    notes = [f"{k_}: {v} — {src}" for k_, (v, src) in B200.items()]
    notes += [f"{f.name} = {getattr(params, f.name)} (see SchedParams: assumption unless sourced)"
              for f in dataclasses.fields(params) if f.name != "mma_flop_per_clk"]
    notes.append(f"tile {tile.bm}×{tile.bn}×{tile.bk}, {stages} stages, {accumulators} accumulators, "
                 f"{per_cta} tiles per CTA ({tiles} tiles over {sms} SMs), one CTA per SM")
    return dict(tflops=tflops, peak_tflops=peak, fraction=tflops / peak,
                mma_busy_fraction=sch.mma_busy_fraction, tiles=tiles, waves=per_cta,
                assumptions=notes, schedule=sch)


#: Public anchors that published B200 numbers: (who, what, where). Beyond the datasheet's peak, the
#: course quotes none of their numbers (not verified here): read them at the source.
ANCHORS = (
    ("NVIDIA HGX B200 datasheet", "peak dense FP16/BF16 Tensor Core throughput: 2250 TFLOP/s "
     "(1000 W; 4500 with 2:4 sparsity)", "as tabulated at glennklockwood.com/garden/processors/B200"),
    ("cuBLAS (NVIDIA)", "dense BF16/FP16 GEMM, the baseline every anchor below compares against",
     "each anchor reports its own cuBLAS run"),
    ("Modular, 'Matrix Multiplication on Blackwell' parts 1-4 (Aug-Sep 2025)",
     "a persistent tcgen05 GEMM with CLC, CTA pairs, two accumulators, beside cuBLAS",
     "modular.com/blog/matrix-multiplication-on-blackwell-part-4---breaking-sota"),
    ("Triton Gluon tutorial 12, cluster launch control (its sample run, pasted in the file)",
     "8192³ fp16 on an NVIDIA GB200 (152 SMs): static persistent 1040 TFLOP/s, with CLC 1081 "
     "(one CTA, 128×256×64 tile, 3 buffers — a tutorial kernel, no CTA pairs)",
     "triton-lang/triton python/tutorials/gluon/12-cluster-launch-control.py"),
    ("CUTLASS sm100 examples (70_blackwell_gemm, 72_blackwell_narrow_precision_gemm)",
     "CuTe/CUTLASS persistent warp-specialized kernels", "NVIDIA/cutlass examples/"),
)


def plot_persistent(schedule: PersistentSchedule, title: str = "", ax=None):
    """Chapter 05's Gantt chart (:func:`asynctc.models.pipeline.plot_timeline`) of a
    :class:`PersistentSchedule`, with this kernel's legend: tcgen05.mma in flight, TMA in flight,
    the waits on full / empty and on acc_full / acc_empty, the epilogue (tcgen05.ld + stores).
    Returns the Figure."""
    from matplotlib.patches import Patch
    from .pipeline import plot_timeline
    title = title or (f"{schedule.accumulators} TMEM accumulator{'s' if schedule.accumulators > 1 else ''}"
                      f", {schedule.stages} stages, {schedule.tiles} tiles × {schedule.k_tiles} k-tiles")
    fig = plot_timeline(schedule.spans, title, ax=ax)
    ax = ax or fig.axes[0]
    ax.legend(handles=[Patch(color="tab:orange", label="TMA in flight"),
                       Patch(color="tab:blue", label="tcgen05.mma in flight"),
                       Patch(color="tab:red", alpha=0.5, label="waiting on full"),
                       Patch(color="tab:purple", alpha=0.5, label="waiting on empty"),
                       Patch(color="tab:olive", alpha=0.5, label="waiting on acc_full / acc_empty"),
                       Patch(color="tab:gray", label="epilogue (tcgen05.ld, stores)")],
              fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
