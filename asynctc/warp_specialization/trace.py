"""Chapter 06's trace: the timestamped events the ``trace`` build records, decoded and measured.

Chapter 05's record format (:mod:`asynctc.pipeline`), one slot per warpgroup, the producer's
first: :func:`trace_words` (the buffer's size), :func:`decode_trace` (spans per lane),
:func:`trace_metrics` (Tensor Core use per CTA, waits, math in flight), :func:`pingpong_overlap`
(how much of one consumer's epilogue the other's wgmmas cover) and
:func:`synthetic_trace` (a buffer as the kernel would write it, for testing the decoder).
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from .config import WSConfig, _fail


def trace_words(cfg: WSConfig) -> int:
    """u64 words of the trace buffer: TRACE_CTAS × (1 + consumers) slots of header + records."""
    return P.TRACE_CTAS * (1 + cfg.consumers) * (P.TRACE_HEADER + 2 * P.TRACE_EVENTS)


def decode_trace(buf: np.ndarray, consumers: int, k_tiles: int, stages: int,
                 events: int = P.TRACE_EVENTS) -> P.TraceResult:
    """Decode the kernel's trace into :class:`asynctc.pipeline.Span` lanes "cta{c}/tma" (the
    producer: ``wait_empty``, and ``tma`` = issued → the first consumer's full-barrier wait for
    it ended, an upper bound of its arrival) and "cta{c}/wg{w}" (consumer w ≥ 1: ``wait_full``,
    ``mma`` = issued → the wait_group after which it is known complete, i.e. the next k-tile's
    wait or the tile's final wait, ``release`` points, ``epilogue`` = last wait → stores issued;
    with ``pingpong`` also ``wait_order``: the wait for the other consumer's k-loop, k = the
    tile's first ring counter, stage = the order barrier). With ``pingpong`` each consumer's lane
    holds only its own tiles' ring counters.
    Span ``k`` is the ring counter (the CTA's k-tile over all its tiles; tile = k // k_tiles).
    Raises :class:`WarpSpecializationError` for a buffer of the wrong size."""
    slot_words = P.TRACE_HEADER + 2 * events
    per = 1 + consumers
    buf = np.asarray(buf, dtype=np.uint64).ravel()
    if buf.size % (slot_words * per):
        _fail("buf.size", buf.size, f"must be a multiple of (1 + consumers) × {slot_words} words")
    slots = buf.reshape(-1, slot_words)
    spans: list[P.Span] = []
    ctas = []
    for c in range(slots.shape[0] // per):
        lanes = slots[c * per:(c + 1) * per]
        if not any(int(h[1]) for h in lanes):
            continue
        t0 = min(int(h[1]) for h in lanes if int(h[1]))
        ev = []
        for h in lanes:
            n = min(int(h[3]), events)
            rec = h[P.TRACE_HEADER:P.TRACE_HEADER + 2 * n].reshape(n, 2)
            packed = (rec[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            d = {}
            for kd, st, kk, t in zip((packed & 0xF).tolist(), ((packed >> 4) & 0xF).tolist(),
                                     (packed >> 8).tolist(),
                                     (rec[:, 0].astype(np.int64) - t0).astype(float).tolist()):
                d.setdefault((P.EVENT_KINDS[kd] if kd < len(P.EVENT_KINDS) else f"kind{kd}", kk),
                             (t, st))
            ev.append(d)
        ctas.append({"cta": c, "block": int(lanes[0][2]) >> 32,
                     "smid": int(lanes[0][2]) & 0xFFFFFFFF,
                     "globaltimer_ns": int(min(int(h[0]) for h in lanes if int(h[1]))),
                     "sm_mhz": P._clock_mhz(lanes[1], events) if per > 1 else float("nan"),
                     "events": [int(h[3]) for h in lanes],
                     "dropped": [max(0, int(h[3]) - events) for h in lanes]})
        prod, tma_lane = ev[0], f"cta{c}/tma"
        items = sorted(k for (name, k) in prod if name == "tma_issued")
        for k in items:
            eb, ee, ti = prod.get(("empty_begin", k)), prod.get(("empty_end", k)), \
                prod.get(("tma_issued", k))
            if eb and ee:
                spans.append(P.Span(tma_lane, "wait_empty", k, eb[1], eb[0], ee[0]))
            seen = [e[("full_end", k)][0] for e in ev[1:] if ("full_end", k) in e]
            if ti and seen:
                spans.append(P.Span(tma_lane, "tma", k, ti[1], ti[0], min(seen)))
        for w in range(1, per):
            e, lane = ev[w], f"cta{c}/wg{w}"
            for k in sorted(k for (name, k) in e if name == "mma_issue"):
                b, f = e.get(("full_begin", k)), e.get(("full_end", k))
                if b and f:
                    spans.append(P.Span(lane, "wait_full", k, b[1], b[0], f[0]))
                last = ("loop_end", k) in e
                done = e.get(("loop_end", k)) if last else e.get(("wait_done", k + 1))
                i = e[("mma_issue", k)]
                if done:
                    spans.append(P.Span(lane, "mma", k, i[1], i[0], done[0]))
                r = e.get(("release", k))
                if r:
                    spans.append(P.Span(lane, "release", k, r[1], r[0], r[0]))
                if last and ("store_end", k) in e:
                    spans.append(P.Span(lane, "epilogue", k, 0, e[("loop_end", k)][0],
                                        e[("store_end", k)][0]))
            for k in sorted(k for (name, k) in e if name == "order_begin"):   # ping-pong only
                b, f = e[("order_begin", k)], e.get(("order_end", k))
                if f:
                    spans.append(P.Span(lane, "wait_order", k, b[1], b[0], f[0]))
    return P.TraceResult(spans, ctas, k_tiles, stages, 1)


def trace_metrics(tr: P.TraceResult, cfg: WSConfig) -> dict:
    """:func:`asynctc.pipeline.trace_metrics` for this kernel, with each CTA's Tensor Core use
    counted from the k-tiles it ran (a persistent CTA runs several tiles): k-tiles ×
    :func:`asynctc.pipeline.ktile_peak_cycles` / the CTA's loop length. "math in flight" is an
    upper bound (a group is known complete only at the next wait_group). The k-tiles are those
    of any consumer lane (the cooperative consumers share every k-tile; ping-pong consumers each
    run their own tiles'). A ping-pong consumer's own lane has math in flight about half of its
    loop by design (the other consumer's tile comes in between): the CTA's measure is
    :func:`pingpong_overlap`'s ``math_busy``."""
    kc = P.ktile_peak_cycles(cfg)
    met = P.trace_metrics(tr, kc)
    for c, v in met["ctas"].items():
        n = len({s.k for s in tr.spans if s.lane.startswith(f"{c}/wg") and s.kind == "mma"})
        v["k_tiles"] = n
        v["tensor_utilization"] = n * kc / max(v["loop_cycles"], 1.0)
    if met["ctas"]:
        met["mean"]["tensor_utilization"] = float(np.mean([v["tensor_utilization"]
                                                           for v in met["ctas"].values()]))
    return met


def pingpong_overlap(cta: dict) -> dict:
    """From one CTA's decoded spans (``TraceResult.as_dict(cta=c)``): how much of each consumer's
    epilogue time (loop end → stores issued) another consumer lane's ``mma`` spans cover, and how
    much of the CTA's span from the first to the last mma some consumer had math in flight.
    ``{"epilogue_covered", "math_busy", "epilogues", "wait_order_cycles"}`` (fractions of cycles;
    NaN where there is nothing to measure). Ping-pong should cover most epilogues; the cooperative
    rung cannot (its consumers end their tiles together)."""
    sp = cta["spans"]
    lanes = sorted({s["lane"] for s in sp if "/wg" in s["lane"]})

    def union(iv):
        out = []
        for a, b in sorted(iv):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out

    def covered(a, b, iv):
        return sum(max(0.0, min(b, y) - max(a, x)) for x, y in iv)
    mma = {ln: union([(s["start"], s["end"]) for s in sp if s["lane"] == ln and s["kind"] == "mma"])
           for ln in lanes}
    tot = cov = 0.0
    n = 0
    for s in sp:
        if s["kind"] != "epilogue" or s["end"] <= s["start"]:
            continue
        others = union([iv for ln in lanes if ln != s["lane"] for iv in mma[ln]])
        tot += s["end"] - s["start"]
        cov += covered(s["start"], s["end"], others)
        n += 1
    every = union([iv for ln in lanes for iv in mma[ln]])
    span = (every[-1][1] - every[0][0]) if every else 0.0
    waits = [s["end"] - s["start"] for s in sp if s["kind"] == "wait_order"]
    return {"epilogue_covered": cov / tot if tot else float("nan"),
            "math_busy": sum(b - a for a, b in every) / span if span else float("nan"),
            "epilogues": n, "wait_order_cycles": float(np.mean(waits)) if waits else float("nan")}


def synthetic_trace(cfg: WSConfig, tiles: int, k_tiles: int, mma_cycles: int = 100,
                    load_cycles: int = 300) -> np.ndarray:
    """A trace buffer as the kernel would write it for one idealised CTA (for testing
    :func:`decode_trace`): the producer issues k-tile i once stage i mod S is free, loads take
    ``load_cycles``, each consumer's k-tile ``mma_cycles``, the epilogue 50."""
    slot_words = P.TRACE_HEADER + 2 * P.TRACE_EVENTS
    per = 1 + cfg.consumers
    buf = np.zeros(trace_words(cfg), np.uint64)
    S, n = cfg.stages, tiles * k_tiles
    t0 = 1_000_000
    recs = {w: [] for w in range(per)}

    def ev(w, kind, stage, i, t):
        recs[w].append((t0 + t, kind | (stage << 4) | (i << 8)))
    arrive = [0] * n
    release = {}
    t_prod = 1
    done_at = {w: 0 for w in range(1, per)}
    # simple list schedule: producer then consumers in item order
    for i in range(n):
        ready = release.get(i - S, 0) if i >= S else 0
        ev(0, 1, i % S, i, t_prod)
        t_prod = max(t_prod, ready) + 1
        ev(0, 2, i % S, i, t_prod)
        ev(0, 0, i % S, i, t_prod)
        arrive[i] = t_prod + load_cycles
        t_prod += 1
        for w in range(1, per):
            t = done_at[w]
            ev(w, 3, i % S, i, t)
            t = max(t, arrive[i]) + 1
            ev(w, 4, i % S, i, t)
            ev(w, 5, i % S, i, t)
            t += mma_cycles
            ev(w, 6, i % S, i, t)
            if i % k_tiles:
                ev(w, 7, (i - 1) % S, i - 1, t)
            if i % k_tiles == k_tiles - 1:
                t += mma_cycles
                ev(w, 8, i % S, i, t)
                ev(w, 7, i % S, i, t)
                ev(w, 9, 0, i, t + 50)
                t += 50
            done_at[w] = t
            release[i] = max(release.get(i, 0), t)
    for w in range(per):
        base = w * slot_words
        buf[base:base + 3] = [5_000_000_000, t0, 7 | (0 << 32)]
        buf[base + 3] = len(recs[w])
        for j, (clk, packed) in enumerate(recs[w][:P.TRACE_EVENTS]):
            buf[base + P.TRACE_HEADER + 2 * j] = clk
            g = 5_000_000_000 + (clk - t0) * 2 // 3
            buf[base + P.TRACE_HEADER + 2 * j + 1] = (g & 0xFFFFFFFF) << 32 | packed
    return buf
