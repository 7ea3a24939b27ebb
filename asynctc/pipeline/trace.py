"""Chapter 05's trace: the kernel's timestamped events (``cfg.trace``) decoded into spans
(:func:`decode_trace` → :class:`TraceResult`; :func:`timeline_spans` names its lanes as the ring
model does), reduced to metrics (:func:`trace_metrics`: math in
flight, waiting on full barriers, Tensor Core use against :func:`ktile_peak_cycles`), the error
word (:func:`decode_error`), and a synthetic buffer for tests (:func:`synthetic_trace`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..models import pipeline as _model
from ..models.lanes import hardware_consumer
from .config import (EVENT_KINDS, TRACE_CTAS, TRACE_EVENTS, TRACE_HEADER, WAIT_TAGS,
                     ERROR_FIELDS, WAIT_ROLES,
                     PipelineConfig, _fail)


def trace_words(cfg: PipelineConfig) -> int:
    """u64 words of the trace buffer: TRACE_CTAS × consumers slots of header + records."""
    return TRACE_CTAS * cfg.consumers * (TRACE_HEADER + 2 * TRACE_EVENTS)


def error_fields(word: int, fields: dict | None = None) -> dict:
    """The error word of chapter 05's or 06's kernel split into :data:`ERROR_FIELDS` — or into
    ``fields`` (name → (shift, width)), the layout of another kernel's word (chapter 08's:
    :data:`asynctc.pitfalls.variants.WORD_FIELDS`)."""
    fields = ERROR_FIELDS if fields is None else fields
    return {k: (int(word) >> shift) & ((1 << width) - 1) for k, (shift, width) in fields.items()}


def decode_error(word: int, producer_warpgroup: bool = False) -> str:
    """The kernel's error word as text: which mbarrier wait timed out — the barrier, its stage, the
    k-tile waited for (of its tile, modulo 4096) and who waited (kernels/ring.cuh), named as every
    chapter names them (:mod:`asynctc.models.lanes`): the producer, or consumer c with its hardware
    warpgroup. ``producer_warpgroup``: the word is chapter 06's kernel's (producer in warpgroup 0,
    consumer c in warpgroup c + 1); else chapter 05's (consumer c in warpgroup c, its thread 0 of
    warpgroup 0 the producer)."""
    if word == 0:
        return "ok"
    f = error_fields(word)
    what = WAIT_TAGS.get(f["barrier"], f"tag {f['barrier']}")
    wg, role = f["warpgroup"], WAIT_ROLES.get(f["barrier"], "a thread")
    if role == "the producer":
        who = "the producer " + ("(warpgroup 0)" if producer_warpgroup else "(thread 0 of consumer 0)")
    elif role.startswith("a ") and "consumer" in role:
        c = hardware_consumer(wg, producer_warpgroup)
        who = f"consumer {c} (warpgroup {wg}" + (f"; {role})" if role != "a consumer" else ")")
    else:
        who = f"warpgroup {wg} ({role})"
    return (f"mbarrier wait timed out (code {f['code']}) on the {what} barrier of stage {f['stage']}"
            f" for k-tile {f['k_tile']}, waited on by {who} (error word {word:#x})")


#: "cta0/wg1", "cta0/tma"; a release is a point, start = end): the same record the CPU model's
#: schedules use, so one plotting function draws both.
Span = _model.Span


def timeline_spans(trace: dict, k_max: int | None = None) -> list[Span]:
    """One CTA's recorded spans (a record's ``cta0`` entry, or :meth:`TraceResult.as_dict`) with
    the lanes the ring model names: "tma" (copies in flight), "producer" (its waits on empty),
    "wg0", "wg1", ...; the epilogue left out, and k-tiles ≥ ``k_max`` when given. The model's
    :func:`~asynctc.models.pipeline.plot_timeline` then draws the GPU and the model alike."""
    out = []
    for x in trace["spans"]:
        x = x if isinstance(x, dict) else Span(*x)._asdict()
        if x["kind"] == "epilogue" or (k_max is not None and x["k"] >= k_max):
            continue
        lane = x["lane"].split("/")[-1]
        if lane == "tma" and x["kind"] != "tma":
            lane = "producer"
        out.append(Span(lane, x["kind"], x["k"], x["stage"], x["start"], x["end"]))
    return out


@dataclasses.dataclass
class TraceResult:
    """Decoded trace: ``spans`` (list of :class:`Span`); ``ctas`` per traced CTA: block, SM id,
    %globaltimer at its start (ns, for aligning CTAs across SMs), the SM clock during the
    recording (``sm_mhz``, to turn cycles into time), events recorded and dropped;
    ``k_tiles``, ``stages``, ``wait_pending`` of the run."""

    spans: list[Span]
    ctas: list[dict]
    k_tiles: int
    stages: int
    wait_pending: int

    def lanes(self) -> list[str]:
        return sorted({s.lane for s in self.spans})

    def as_dict(self, cta: int | None = None) -> dict:
        sp = [s._asdict() for s in self.spans if cta is None or s.lane.startswith(f"cta{cta}/")]
        return {"spans": sp, "ctas": self.ctas, "k_tiles": self.k_tiles, "stages": self.stages,
                "wait_pending": self.wait_pending}


def decode_trace(buf: np.ndarray, consumers: int, k_tiles: int, stages: int,
                 wait_pending: int, events: int = TRACE_EVENTS) -> TraceResult:
    """Decode the kernel's trace buffer (u64, :func:`trace_words` long) into spans.

    Per lane (CTA c, warpgroup w) the records give: ``wait_full`` = full-barrier wait begun → ended;
    ``mma`` = k-tile k's wgmmas issued → the ``wgmma.wait_group`` after which they are known
    complete (iteration k + wait_pending, or the final wait; an upper bound of the group's end);
    ``release`` = the arrive on the empty barrier (a point); ``epilogue`` = loop end → stores
    issued. Warpgroup 0's thread 0 is also the producer; its records give the lane "cta{c}/tma":
    ``wait_empty`` (empty-barrier wait) and ``tma`` = TMA issued → the end of warpgroup 0's
    full-barrier wait for that k-tile (the earliest moment the data was seen; an upper bound of
    its arrival). Raises :class:`PipelineError` for a buffer of the wrong size."""
    slot_words = TRACE_HEADER + 2 * events
    buf = np.asarray(buf, dtype=np.uint64).ravel()
    if buf.size % slot_words or buf.size // slot_words % consumers:
        _fail("buf.size", buf.size, f"must be a multiple of consumers × {slot_words} words")
    slots = buf.reshape(-1, slot_words)
    n_ctas = slots.shape[0] // consumers
    spans: list[Span] = []
    ctas = []
    for c in range(n_ctas):
        lanes = slots[c * consumers:(c + 1) * consumers]
        if not any(int(h[1]) for h in lanes):      # CTA not launched / not traced
            continue
        t0 = min(int(h[1]) for h in lanes if int(h[1]))
        ctas.append({"cta": c, "block": int(lanes[0][2]) >> 32, "smid": int(lanes[0][2]) & 0xFFFFFFFF,
                     "globaltimer_ns": int(min(int(h[0]) for h in lanes if int(h[1]))),
                     "sm_mhz": _clock_mhz(lanes[0], events),
                     "events": [int(h[3]) for h in lanes],
                     "dropped": [max(0, int(h[3]) - events) for h in lanes]})
        for w, h in enumerate(lanes):
            n = min(int(h[3]), events)
            rec = h[TRACE_HEADER:TRACE_HEADER + 2 * n].reshape(n, 2)
            clk = rec[:, 0].astype(np.int64) - t0
            packed = (rec[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            kind, stage, kk = packed & 0xF, (packed >> 4) & 0xF, packed >> 8
            spans += _lane_spans(f"cta{c}/wg{w}", f"cta{c}/tma", kind, stage, kk, clk.astype(float),
                                 k_tiles, wait_pending if stages > 1 else 0, producer=(w == 0))
    return TraceResult(spans, ctas, k_tiles, stages, wait_pending)


def _clock_mhz(slot: np.ndarray, events: int) -> float:
    """The SM clock over a lane's recording: Δclock64 / Δ%globaltimer from the header to the last
    record (the records keep the timer's low 32 bits: ~4.3 s before they wrap, unwrapped here).
    NaN without records. %globaltimer ticks coarsely (about 1 µs on some GPUs), so this is only
    good for lanes that record for tens of µs or more."""
    n = min(int(slot[3]), events)
    if n < 1:
        return float("nan")
    g0, c0 = int(slot[0]), int(slot[1])
    clk, word = int(slot[TRACE_HEADER + 2 * (n - 1)]), int(slot[TRACE_HEADER + 2 * (n - 1) + 1])
    g = (g0 & ~0xFFFFFFFF) | (word >> 32)
    if g < g0:
        g += 1 << 32
    return (clk - c0) / (g - g0) * 1e3 if g > g0 else float("nan")


def _lane_spans(lane, tma_lane, kind, stage, kk, clk, k_tiles, pending, producer):
    ev: dict[tuple[str, int], tuple[float, int]] = {}
    for kd, s, k, t in zip(kind.tolist(), stage.tolist(), kk.tolist(), clk.tolist()):
        ev.setdefault((EVENT_KINDS[kd] if kd < len(EVENT_KINDS) else f"kind{kd}", k), (t, s))
    out = []

    def get(name, k):
        return ev.get((name, k))

    for k in range(k_tiles):
        b, e = get("full_begin", k), get("full_end", k)
        if b and e:
            out.append(Span(lane, "wait_full", k, b[1], b[0], e[0]))
        i = get("mma_issue", k)
        done = get("wait_done", k + pending) if k + pending < k_tiles else get("loop_end", k_tiles)
        if i and done:
            out.append(Span(lane, "mma", k, i[1], i[0], done[0]))
        r = get("release", k)
        if r:
            out.append(Span(lane, "release", k, r[1], r[0], r[0]))
        if producer:
            eb, ee = get("empty_begin", k), get("empty_end", k)
            if eb and ee:
                out.append(Span(tma_lane, "wait_empty", k, eb[1], eb[0], ee[0]))
            ti = get("tma_issued", k)
            if ti and e:
                out.append(Span(tma_lane, "tma", k, ti[1], ti[0], e[0]))
    le, se = get("loop_end", k_tiles), get("store_end", k_tiles)
    if le and se:
        out.append(Span(lane, "epilogue", k_tiles, 0, le[0], se[0]))
    return out


def _union_length(intervals) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


#: Dense fp16/bf16 Tensor Core rate of one sm_90 SM (H100 whitepaper): FLOP per clock.
FLOP_PER_CLK_SM = 4096


def ktile_peak_cycles(cfg: PipelineConfig) -> float:
    """SM clock cycles one CTA's k-tile (2·bm·bn·64 FLOP) takes at the datasheet rate."""
    return 2 * cfg.bm * cfg.bn * cfg.bk / FLOP_PER_CLK_SM


def need_bytes_per_clk(cfg: PipelineConfig) -> float:
    """Bytes per clock per SM the ring must bring for the Tensor Cores to run at the datasheet rate:
    one k-tile's bytes ((bm + bn)·bk·2) over :func:`ktile_peak_cycles` (chapter 00 §4's arithmetic)."""
    return cfg.stage_bytes / ktile_peak_cycles(cfg)


def trace_metrics(tr: TraceResult, ktile_cycles: float | None = None) -> dict:
    """What the trace says about the main loop, per lane, per CTA and averaged.

    Per consumer lane: ``loop_cycles`` (first full-barrier wait begun → last wgmma known complete);
    ``math_in_flight`` = union of the ``mma`` spans / loop length — exact with wait_pending 0, an
    *upper bound* with wait_pending 1 (a group is only known complete at the next wait_group);
    ``wait_full_cycles`` and ``wait_full_fraction`` (time blocked on full barriers). Per producer
    lane: ``wait_empty_cycles``. Per CTA, when ``ktile_cycles`` (:func:`ktile_peak_cycles`) is
    given: ``tensor_utilization`` = k_tiles · ktile_cycles / the CTA's loop length, the loop's
    Tensor Core use relative to the datasheet rate (SM clock cycles, so independent of the clock).
    """
    lanes = {}
    for lane in tr.lanes():
        sp = [s for s in tr.spans if s.lane == lane]
        if lane.endswith("/tma"):
            lanes[lane] = {"wait_empty_cycles": float(sum(s.end - s.start for s in sp
                                                          if s.kind == "wait_empty"))}
            continue
        mma = [(s.start, s.end) for s in sp if s.kind == "mma"]
        wf = [s for s in sp if s.kind == "wait_full"]
        if not mma or not wf:
            continue
        start = min(s.start for s in wf)
        end = max(e for _, e in mma)
        length = max(end - start, 1.0)
        wait = float(sum(s.end - s.start for s in wf))
        lanes[lane] = {"loop_start": start, "loop_end": end, "loop_cycles": length,
                       "math_in_flight": _union_length(mma) / length,
                       "wait_full_cycles": wait, "wait_full_fraction": wait / length}
    cons = [v for v in lanes.values() if "loop_cycles" in v]
    mean = {key: float(np.mean([v[key] for v in cons])) for key in
            ("loop_cycles", "math_in_flight", "wait_full_cycles", "wait_full_fraction")} if cons else {}
    ctas = {}
    for c in {lane.split("/")[0] for lane in lanes}:
        cl = [v for k, v in lanes.items() if k.startswith(c + "/") and "loop_cycles" in v]
        if not cl:
            continue
        loop = max(v["loop_end"] for v in cl) - min(v["loop_start"] for v in cl)
        ctas[c] = {"loop_cycles": loop}
        if ktile_cycles:
            ctas[c]["tensor_utilization"] = tr.k_tiles * ktile_cycles / max(loop, 1.0)
    if ktile_cycles and ctas:
        mean["tensor_utilization"] = float(np.mean([v["tensor_utilization"] for v in ctas.values()]))
    return {"lanes": lanes, "ctas": ctas, "mean": mean, "stages": tr.stages,
            "wait_pending": tr.wait_pending, "k_tiles": tr.k_tiles, "ktile_cycles": ktile_cycles}


def synthetic_trace(consumers: int, k_tiles: int, stages: int, wait_pending: int,
                    mma_cycles: int = 100, load_cycles: int = 300, events: int = TRACE_EVENTS,
                    ctas: int = TRACE_CTAS) -> np.ndarray:
    """A trace buffer as the kernel would write it for an idealised run (the producer's loads take
    ``load_cycles``, each k-tile's wgmmas ``mma_cycles``, the SM clock runs at 1500 MHz), for
    testing :func:`decode_trace`."""
    slot_words = TRACE_HEADER + 2 * events
    buf = np.zeros(ctas * consumers * slot_words, np.uint64)
    pend = wait_pending if stages > 1 else 0
    for c in range(ctas):
        for w in range(consumers):
            base = (c * consumers + w) * slot_words
            t0 = 1_000_000 + 17 * c
            buf[base:base + 3] = [5_000_000_000 + c, t0, c | (c << 32)]
            recs = []

            def ev(kind, stage, k, t):
                recs.append((t0 + t, (kind | (stage << 4) | (k << 8))))
            arrive = {}
            if w == 0:
                for k in range(min(stages, k_tiles)):
                    ev(0, k % stages, k, 1)
                    arrive[k] = 1 + load_cycles
            t = 2
            for k in range(k_tiles):
                s = k % stages
                ev(3, s, k, t)
                t = max(t, arrive.get(k, t)) + 1
                ev(4, s, k, t)
                ev(5, s, k, t)
                t += mma_cycles
                ev(6, s, k, t)
                r = k - pend
                if r >= 0:
                    ev(7, r % stages, r, t)
                    if w == 0 and r + stages < k_tiles:
                        ev(1, r % stages, r + stages, t)
                        ev(2, r % stages, r + stages, t)
                        ev(0, r % stages, r + stages, t + 1)
                        arrive[r + stages] = t + 1 + load_cycles
            t += mma_cycles
            ev(8, 0, k_tiles, t)
            ev(9, 0, k_tiles, t + 50)
            buf[base + 3] = len(recs)
            for i, (clk, packed) in enumerate(recs[:events]):
                buf[base + TRACE_HEADER + 2 * i] = clk
                g = 5_000_000_000 + c + (clk - t0) * 2 // 3        # a 1500 MHz SM clock
                buf[base + TRACE_HEADER + 2 * i + 1] = (g & 0xFFFFFFFF) << 32 | packed
    return buf
