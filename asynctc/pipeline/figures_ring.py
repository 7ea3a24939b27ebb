"""Chapter 05 §1's ring, step by step (matplotlib; never measures): the ring model's own run,
logged event by event (:func:`ring_moments`), and drawn as small multiples, one panel per moment
(:func:`plot_ring_steps`). Each panel shows every stage (its k-tile, its fill, its state), each
mbarrier's open phase and its parity, and who waits on which barrier with which parity.

The events are not written here: :class:`_LoggedRing` is the model's ring
(:func:`asynctc.models.pipeline.simulate`'s simulator) with hooks that note each wait (and the
parity it names), each TMA issued, each k-tile landing, each release, as the model runs them.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap

from ..models.lanes import lane_name
from ..models.pipeline.hardware import HardwareParams, Tile
from ..models.pipeline.ring import Deadlock, _Sim

#: Fill colours of a stage's states in :func:`plot_ring_steps` (TMA blue, wgmma green, as the
#: timelines colour them).
STATE_COLORS = {"empty": "white", "loading": "#d6e6f7", "full": "#8fbbe8", "read": "#bfe5bf",
                "free": "#eeeeee"}


@dataclasses.dataclass(frozen=True)
class RingEvent:
    """One thing the ring model did. ``kind``: "issue" (the producer's TMA of k-tile ``k`` into
    ``stage``), "land" (the last bytes of k-tile ``k`` landed: full[stage] completed phase
    ``phase − 1``), "wait" (``who`` began to wait on ``barrier`` with ``parity``), "pass" (that
    wait passed), "release" (``who`` arrived on empty[stage] for k-tile ``k``). ``phase``: the
    barrier's open phase after the event. ``time``: SM cycles."""
    time: float
    kind: str
    who: str
    barrier: str
    stage: int
    k: int
    parity: int | None
    phase: int


@dataclasses.dataclass(frozen=True)
class Moment:
    """One panel: its ``events``, then the ring after them — ``stages`` (per stage: k-tile or None,
    its fill k // S, state "empty" / "loading" / "full" / "read" / "free"), ``phases`` (barrier name →
    open phase), ``waits`` ((who, barrier, parity, passed) of the waits begun or passed in this
    moment, and those still blocked), ``completed`` (barriers that completed a phase in it)."""
    events: tuple
    stages: tuple
    phases: dict
    waits: tuple
    completed: frozenset

    @property
    def time(self) -> float:
        return self.events[-1].time


class _LoggedRing(_Sim):
    """The ring model's simulator, noting each event it runs in ``self.log`` (:class:`RingEvent`)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.log = []

    def _who(self, lane):
        return "producer" if lane == "producer" else ("consumer" if self.C == 1 else lane_name(lane))

    def _note(self, kind, who, bar, s, k, parity=None):
        self.log.append(RingEvent(self.now, kind, who, bar.name, s, k, parity, bar.phase))

    def _on_wait(self, name, kind, bar):
        lane, _, _, parity, k, s, _ = self.waiting[name]
        self._note("wait", self._who(lane), bar, s, k, parity)

    def _on_pass(self, name, lane, kind, bar, parity, k, s):
        super()._on_pass(name, lane, kind, bar, parity, k, s)
        self._note("pass", self._who(lane), bar, s, k, parity)

    def _tma(self, t, s):
        self._note("issue", "producer", self.full[s], s, t)
        super()._tma(t, s)

    def _land(self, t, s, nbytes):
        bar, before = self.full[s], self.full[s].phase
        self.full[s].complete_tx(nbytes)                 # as the model's _land, noted before the
        if bar.phase != before:                          # waits it frees pass
            self._note("land", "tma", bar, s, t)
        if self.stage_k[s] == t:
            self.landed[s] += nbytes
        self._changed(bar)

    def _release(self, w, r):
        super()._release(w, r)
        self._note("release", self._who(f"wg{w}"), self.empty[r % self.S], r % self.S, r)


def ring_events(stages: int = 2, k_tiles: int = 4, consumers: int = 1, wait_pending: int = 0,
                protocol: str = "correct", params: HardwareParams | None = None, parities=None):
    """Run the ring model (the arguments of :func:`asynctc.models.pipeline.simulate`) and return
    (its events as :class:`RingEvent`, its diagnosis: None, a Deadlock or a Race)."""
    tile = Tile()
    sim = _LoggedRing(stages, wait_pending, consumers, k_tiles, params or HardwareParams.from_records(tile),
                      protocol, tile, "kernel", parities)
    sim.run()
    return sim.log, sim.diagnosis


def _is_load(group) -> bool:
    return all(e.who == "producer" and e.kind in ("wait", "pass", "issue") for e in group) and \
        any(e.kind == "issue" for e in group)


def ring_moments(stages: int = 2, k_tiles: int = 4, consumers: int = 1, wait_pending: int = 0,
                 protocol: str = "correct", params: HardwareParams | None = None, parities=None):
    """The ring model's run cut into :class:`Moment` s: the events of one instant form a moment
    (loads the producer issues back to back, as in the prologue, form one). Returns (moments,
    diagnosis)."""
    events, diagnosis = ring_events(stages, k_tiles, consumers, wait_pending, protocol, params, parities)
    groups = []
    for e in events:
        if groups and (e.time == groups[-1][-1].time or _is_load(groups[-1]) and _is_load(groups[-1] + [e])):
            groups[-1].append(e)
        else:
            groups.append([e])
    held = [[None, "empty"] for _ in range(stages)]
    phases = {f"{b}[{s}]": 0 for b in ("empty", "full") for s in range(stages)}
    releases, blocked, out = {}, {}, []
    for group in groups:
        waits, completed = [], set()
        for e in group:
            if e.kind == "issue":
                held[e.stage] = [e.k, "loading"]
            elif e.kind == "land":
                held[e.stage][1] = "full"
            elif e.kind == "pass" and e.barrier.startswith("full"):
                held[e.stage][1] = "read"
            elif e.kind == "release":
                releases[e.k] = releases.get(e.k, 0) + 1
                if releases[e.k] == consumers:
                    held[e.stage][1] = "free"
            if e.kind == "wait":
                blocked[e.who] = (e.who, e.barrier, e.parity, False)
            elif e.kind == "pass":
                blocked.pop(e.who, None)
                waits.append((e.who, e.barrier, e.parity, True))
            if phases.get(e.barrier, e.phase) != e.phase:
                completed.add(e.barrier)
            phases[e.barrier] = e.phase
        waits += list(blocked.values())
        out.append(Moment(tuple(group), tuple((k, None if k is None else k // stages, st) for k, st in held),
                          dict(phases), tuple(waits), frozenset(completed)))
    return out, diagnosis


def _words(m: Moment, S: int) -> str:
    """What happened in moment ``m`` of a ring of ``S`` stages, in words (a panel's title)."""
    out, issues = [], [e for e in m.events if e.kind == "issue"]
    passed = {e.who for e in m.events if e.kind == "pass"}
    begun = {e.who for e in m.events if e.kind == "wait"}
    for e in m.events:
        if e.kind == "issue" and e is issues[0]:
            ks = ", ".join(str(x.k) for x in issues)
            ss = ", ".join(str(x.stage) for x in issues)
            many = len(issues) > 1
            first = all(x.k < S for x in issues)
            out.append(f"producer loads k-tile{'s' * many} {ks} into stage{'s' * many} {ss}"
                       + (" (the prologue: no wait, the stages start empty)" if first else ""))
        elif e.kind == "land":
            out.append(f"k-tile {e.k} lands: {e.barrier} completes phase {e.phase - 1}")
        elif e.kind == "wait" and e.who not in passed:
            out.append(f"{e.who} waits on {e.barrier}: blocked")
        elif e.kind == "pass" and e.barrier.startswith("full"):
            out.append(f"{e.who}'s wait on {e.barrier} passes: wgmma reads k-tile {e.k}"
                       if e.who in begun else f"{e.who}'s wait passes: wgmma reads k-tile {e.k}")
        elif e.kind == "release":
            done = e.barrier in m.completed
            out.append(f"{e.who}'s wgmmas done, it arrives on {e.barrier}" +
                       (f": phase {e.phase - 1} completes" if done else ""))
    return "; ".join(out)


def _draw(ax, m: Moment, S: int, title: str) -> None:
    """One panel: the empty barriers (the producer waits on them from above), the stages, the full
    barriers (the consumers wait on them from below); a wait is an arrow labelled with who waits
    and the parity it names (red: blocked, green: passes)."""
    import matplotlib.pyplot as plt
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.axis("off")
    ax.set_title(title, fontsize=11, loc="left")
    w = 9.0 / S
    xs = [0.5 + w * (s + 0.5) for s in range(S)]
    for s, (k, fill, state) in enumerate(m.stages):
        x = xs[s]
        ax.add_patch(plt.Rectangle((x - 0.42 * w, 3.85), 0.84 * w, 2.3, fc=STATE_COLORS[state], ec="k"))
        what = "empty" if k is None else f"k-tile {k}\nfill {fill}\n{'read by wgmma' if state == 'read' else state}"
        ax.text(x, 5.0, f"stage {s}\n{what}", ha="center", va="center", fontsize=11)
        for name, y in ((f"empty[{s}]", 7.5), (f"full[{s}]", 2.5)):
            ph = m.phases[name]
            hot = name in m.completed
            ax.text(x, y, f"{name}\nphase {ph} open\nparity {ph % 2}", ha="center", va="center",
                    fontsize=10.5, fontweight="bold" if hot else "normal",
                    bbox=dict(boxstyle="round,pad=0.25", fc="#ffe680" if hot else
                              ("#f5c6c6" if name.startswith("full") else "#d5ecd4"), ec="k",
                              lw=1.6 if hot else 0.6))
    labels = {}                                  # (barrier, parity, passed) -> who
    for who, bar, parity, passed in m.waits:
        labels.setdefault((bar, parity, passed), []).append(who)
    for (bar, parity, passed), who in labels.items():
        x = xs[int(bar.split("[")[1].rstrip("]"))]
        top = bar.startswith("empty")
        colour = "tab:green" if passed else "tab:red"
        names = who[0] if len(who) == 1 else "consumers " + ", ".join(w_.split()[-1] for w_ in who)
        verb = "waits" if len(who) == 1 else "wait"
        ax.annotate("", xy=(x, 8.25 if top else 1.75), xytext=(x, 8.85 if top else 1.15),
                    arrowprops=dict(arrowstyle="->", color=colour, lw=1.6))
        ax.text(x, 9.4 if top else 0.6, f"{names} {verb},\nparity {parity}: {'passes' if passed else 'BLOCKED'}",
                ha="center", va="center", fontsize=10.5, color=colour,
                fontweight="normal" if passed else "bold")


def _without_prologue_waits(m: Moment, S: int) -> Moment:
    """``m`` without the producer's waits on empty before k-tiles 0 … S − 1 that passed: the
    model's first pass waits with parity 1 and passes at once, the kernel's prologue
    (``kernels/pipeline.cu``) loads those k-tiles without a wait. A wait that blocks is kept."""
    skip = {e.barrier for e in m.events if e.kind == "pass" and e.who == "producer"
            and e.barrier.startswith("empty") and e.k < S}
    return dataclasses.replace(m, waits=tuple(w for w in m.waits if not (w[0] == "producer" and w[1] in skip
                                                                       and w[3])))


def flipped_refill_parities():
    """Exercise 2 with the parity flipped: the (full, empty) parity pair :func:`plot_ring_steps`
    takes, the kernel's but for the producer's refills (k-tile t ≥ S, fill f = t // S), which wait on
    empty with f mod 2 instead of (f + 1) mod 2 — as that exercise's check runs a learner's step."""
    from ..models.pipeline.ring import kernel_empty_parity, kernel_full_parity
    return kernel_full_parity, lambda t, S: kernel_empty_parity(t, S) if t < S else (t // S) % 2


#: What :func:`plot_ring_steps` draws, in its title: the simplest order, not the only one (chapter
#: 05's exercise 1, right after the figure, asks what it costs; the title must not answer it).
SIMPLEST_ORDER = ("It draws the simplest order: every k-tile's wgmma group is waited to 0 pending"
                  " (wgmma.wait_group 0) before its stage is released. Exercise 1 asks which order a kernel should keep.")


def _balanced(line: str, width: int) -> str:
    """``line`` wrapped to at most ``width`` characters a line, in as few lines as that takes, each
    about as long as the others (no one-word last line), never between an instruction and its number."""
    line = re.sub(r"(wait_group) (\d)", "\\1\xa0\\2", line)      # textwrap breaks at ASCII spaces only
    n = len(textwrap.wrap(line, width))
    return next(textwrap.fill(line, w) for w in range(-(-len(line) // n), width + 1)
                if len(textwrap.wrap(line, w)) == n).replace("\xa0", " ")


def plot_ring_steps(stages: int = 2, k_tiles: int = 4, consumers: int = 1, protocol: str = "correct",
                    cols: int = 3, params: HardwareParams | None = None, parities=None,
                    broken: str | None = None):
    """The ring step by step: one panel per :class:`Moment` of the ring model's run (the loop's
    ``wgmma.wait_group(0)``, so a stage is released once its own wgmmas are done; the title says so,
    :data:`SIMPLEST_ORDER`), ``cols`` panels a row. A broken ``protocol`` (a name of :data:`asynctc.models.pipeline.VARIANTS`) or ``parities``
    (a (full, empty) pair as :func:`asynctc.models.pipeline.simulate` takes it, e.g.
    :func:`flipped_refill_parities`; ``broken`` says what is wrong, for the title) ends with a
    panel naming its diagnosis. Returns the Figure."""
    import matplotlib.pyplot as plt
    moments, diagnosis = ring_moments(stages, k_tiles, consumers, 0, protocol, params, parities)
    n = len(moments) + (diagnosis is not None)
    rows = -(-n // cols)
    who = "one consumer warpgroup" if consumers == 1 else f"{consumers} consumer warpgroups"
    what = broken or ("" if protocol == "correct" else f"protocol {protocol}")
    lines = [f"The ring step by step (the ring model's run): S = {stages} stages, {k_tiles} k-tiles, {who}"]
    lines += [f"BROKEN: {what}"] * bool(what) + [
        SIMPLEST_ORDER,
        "The producer is thread 0 of consumer warpgroup 0 (kernels/pipeline.cu), not a warp of its own."
        " It waits on empty (top), the consumer on full (bottom).",
        "A wait on parity p blocks while the barrier's open phase has parity p,"
        " and passes once that phase completes. Yellow: the barrier completed a phase in this step."]
    # each line wrapped to the figure's width (12 pt runs ~8.6 px a character at 100 dpi; 0.93 of it)
    title = "\n".join(_balanced(line, int(0.93 * 4.8 * cols * 100 / 8.6)) for line in lines)
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 4.0 * rows + 0.2 * (title.count("\n") + 1)),
                             dpi=100, squeeze=False, layout="constrained")
    for i, ax in enumerate(axes.flat):
        if i < len(moments):
            moments[i] = _without_prologue_waits(moments[i], stages)
            words = _words(moments[i], stages)
            _draw(ax, moments[i], stages, textwrap.fill(f"{i + 1}. {words[0].upper()}{words[1:]}", 50))
        elif i == len(moments) and diagnosis is not None:
            ax.axis("off")
            kind = "Deadlock" if isinstance(diagnosis, Deadlock) else "Race"
            why = diagnosis.why if isinstance(diagnosis, Deadlock) else diagnosis.what
            ax.text(0, 9.5, textwrap.fill(f"{i + 1}. {kind}, the model's diagnosis: {why}", 50),
                    fontsize=11, va="top", color="tab:red")
            ax.set_xlim(0, 10)
            ax.set_ylim(0, 10)
        else:
            ax.axis("off")
    fig.suptitle(title, fontsize=12)
    return fig
