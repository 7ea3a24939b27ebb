"""Deep dive 06f's CPU run of ``ch06.cuda_kloop`` (check B): the learner's CUDA loops, compiled as
host C++ with g++ against ``kernels/capstone_cuda_host.h`` — stand-ins of the course's wrappers that
print what each call asked for — are run as one thread of each role, then judged and replayed:

1. **run** — :func:`record` runs the text, for each CTA of a shape, as the elected thread and another
   thread of warpgroups 0 (producer), 1 and 2 (consumers); nothing waits (``ring_wait`` answers
   true), so each role's calls are recorded on their own: waits (barrier, parity), expect_tx bytes,
   TMA loads (destination, map, barrier, coordinates), wgmma descriptors, commits, wait_groups,
   arrives, setmaxnreg, stores. A run that does not end is cut at 2·10^5 calls or by a timeout.
2. **rules** — :func:`rules_hint`: the other threads do no arrive, expect_tx or TMA, and the same
   warpgroup-wide calls as the elected one; the fills (each expect_tx and its boxes) against the
   course's ring: fill ``i`` of the CTA is k-tile ``i mod T`` of tile ``i // T`` into stage
   ``i mod STAGES``, A's box at (K = 64·k, row m0), B's at (64·k, n0), 32768 bytes announced on
   full[stage]; the consumers' descriptors: k-tile ``i``, k-step ``j`` reads the stage at byte
   ``stage · 32768 + 32·j`` (chapter 04's ``kstep_desc``: 16 fp16 of K = 32 bytes of the swizzled
   row); a release (arrive on empty) or a store while a wgmma group that reads there is in flight;
   ``wgmma_fence`` before the first wgmma and after each store; setmaxnreg's roles and budget.
3. **ring** — :func:`simulate` orders the three roles' calls with the mbarrier rules (a wait for
   parity P passes once the barrier's completed phases n have n mod 2 ≠ P; expect_tx is an arrive
   plus bytes; a TMA box completes its bytes when issued), twice: the producer first, then the
   consumers first. A state where no role can move is a deadlock, named by the wait that never
   passes; a wgmma that reads a box holding another fill than its k-tile's is a race, named by the
   wait that passed too early.
4. **data** — the same order replays the boxes into a shared-memory image (128-byte swizzle,
   :mod:`asynctc.models.emulate_sm90`'s pieces) and the wgmmas through the decoded descriptors
   (:func:`asynctc.models.descriptors.read_addresses`): float64 products into a float32
   accumulator per k16 step; the stores into a NaN-poisoned C, checked element by element against
   float64 (:func:`asynctc.core.checks.compare_elementwise`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..core import runtime
from ..core.checks import ElementCheck, compare_elementwise, random_operands
from ..core.exercises import tiered
from ..models import descriptors as _d
from ..models.emulate import gather_bytes
from ..models.emulate_sm90 import course_swizzle_128b, swizzle_map

BM, BN, BK, STAGE_BYTES, BOX_BYTES = 128, 128, 64, 32768, 16384
FULL0, EMPTY0 = 0x31000, 0x31100
HEADER = "capstone_cuda_host.h"
FILE_NAME = "your CUDA"
#: (M, N, K, stages, CTAs) of the CPU run: several tiles per CTA, T no multiple of the stages.
SHAPES = ((256, 384, 192, 2, 2), (256, 256, 256, 3, 1))
TIMEOUT_S = 20


class NoCompiler(RuntimeError):
    """No host C++ compiler (g++) on this machine: the CPU run is skipped."""


def compiler() -> str | None:
    """The host C++ compiler the CPU run uses (``$CXX`` or g++), or None."""
    return shutil.which(os.environ.get("CXX", "g++"))


def _templates() -> tuple[int, int]:
    from .capstone_build import config
    return config(2).descriptor_templates()


@functools.lru_cache(maxsize=8)
def build(text: str) -> Path:
    """g++ the learner's ``text`` inside ``learner_loops()`` against the stand-in header; the
    executable's path (cached by the text's hash). Raises :class:`NoCompiler`, or
    :class:`~asynctc.core.runtime.CompileError` whose message is g++'s first errors, each with the
    line of the learner's text."""
    cxx = compiler()
    if cxx is None:
        raise NoCompiler("no g++ here (set CXX to a C++17 compiler): the CPU run is left out")
    header = runtime.kernel_path(HEADER)
    key = hashlib.sha256(text.encode() + header.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"asynctc_cuda_kloop_{key}"
    if out.exists():
        return out
    src = out.with_name(f"{out.name}.{os.getpid()}.cpp")
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    body = text if text.endswith("\n") else text + "\n"
    src.write_text(f'#include "{header}"\nvoid learner_loops() {{\n#line 1 "{FILE_NAME}"\n{body}'
                   f'#line 1 "the host stand-ins"\n}}\n')
    try:
        r = subprocess.run([cxx, "-std=c++17", "-O1", "-fmax-errors=3", "-o", str(tmp), str(src)],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise runtime.CompileError("g++ took more than 120 s on your loops for the CPU run") from None
    finally:
        src.unlink(missing_ok=True)
    if r.returncode != 0:
        raise runtime.CompileError(compile_hint(r.stderr))
    os.replace(tmp, out)                 # whole or not at all, for a build running beside this one
    return out


def compile_hint(log: str, limit: int = 2) -> str:
    """g++'s first errors as "line n: message" for lines of the learner's text."""
    errs = []
    for m in re.finditer(r"^(.*?):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$", log, re.M):
        where, n, msg = m.groups()
        errs.append(f"line {n}: {msg}" if where.endswith(FILE_NAME) else f"after your last line: {msg}")
        if len(errs) == limit:
            break
    return "g++ cannot compile your loops for the CPU run — " + ("; ".join(errs) or log.strip()[-300:])


@dataclasses.dataclass
class Ev:
    kind: str
    args: tuple
    n: int              # this thread's index of the call


def _parse(out: str) -> dict:
    runs, cur = {}, None
    for line in out.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "run":
            cur = runs.setdefault((int(w[1]), bool(int(w[2]))), [])
        elif w[0] == "limit":
            raise RunawayLoop()
        elif cur is not None:
            args = tuple(x if x in ("inc", "dec") else int(x) for x in w[1:])
            cur.append(Ev(w[0], args, len(cur)))
    return runs


class RunawayLoop(RuntimeError):
    pass


def record(text: str, m: int, n: int, k: int, stages: int, ctas: int) -> list[dict]:
    """Each CTA's runs: {(warpgroup, elected): [Ev, ...]}. Raises :class:`NoCompiler`,
    :class:`~asynctc.core.runtime.CompileError`, :class:`RunawayLoop` (more than 2·10^5 calls or
    the timeout)."""
    exe = build(text)
    da, db = _templates()
    tiles_n, n_tiles = n // BN, m // BM * (n // BN)
    out = []
    for cta in range(ctas):
        try:
            r = subprocess.run([str(exe), str(cta), str(ctas), str(tiles_n), str(n_tiles), str(k // BK),
                                str(stages), hex(da), hex(db)], capture_output=True, text=True,
                               timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunawayLoop() from None
        if r.returncode == 3:
            raise RunawayLoop()
        if r.returncode != 0:
            raise RuntimeError(f"the CPU run stopped (exit code {r.returncode}): {r.stderr.strip()[-300:]}")
        out.append(_parse(r.stdout))
    return out


# ---- the course's ring, as values --------------------------------------------------------------

def _bar_name(bar: int) -> str:
    if FULL0 <= bar < FULL0 + 64 and bar % 8 == 0:
        return f"full[{(bar - FULL0) // 8}]"
    if EMPTY0 <= bar < EMPTY0 + 64 and bar % 8 == 0:
        return f"empty[{(bar - EMPTY0) // 8}]"
    return f"the address {bar:#x} (no barrier)"


def _where(addr: int) -> str:
    s, o = divmod(int(addr), STAGE_BYTES)
    half = "A box" if o < BOX_BYTES else "B box"
    o %= BOX_BYTES
    return f"stage {s}'s {half}" + (f" + {o} bytes" if o else "")


@dataclasses.dataclass
class Shape:
    m: int
    n: int
    k: int
    stages: int
    ctas: int

    @property
    def T(self):
        return self.k // BK

    def tiles(self, cta):
        n_tiles = self.m // BM * (self.n // BN)
        return list(range(cta, n_tiles, self.ctas))

    def origin(self, cta, tile):
        t = self.tiles(cta)[tile]
        return t // (self.n // BN) * BM, t % (self.n // BN) * BN

    def fill(self, cta, i):
        """Fill i's (tile, k, stage, m0, n0)."""
        tile, kk = divmod(i, self.T)
        m0, n0 = self.origin(cta, tile)
        return tile, kk, i % self.stages, m0, n0


def _fills(events):
    """The producer's fills: each expect_tx with the TMA loads after it, before the next."""
    fills, pre = [], []
    for e in events:
        if e.kind == "expect":
            fills.append([e, []])
        elif e.kind == "tma":
            (fills[-1][1] if fills else pre).append(e)
    return fills, pre


_PARITY_Q = " Which parity passes a wait on a barrier whose phases completed so far are n (05 §1)?"
_PARITY_R = (" A wait for parity P passes once n mod 2 ≠ P: fill f of a stage (f = i // STAGES for ring"
             " counter i) lands as full's phase f, so the consumers wait full with f mod 2 and the producer"
             " waits empty with (f + 1) mod 2 — the ring's (stage, phase) carry on across tiles.")


def _restart(off: int, i: int, shape: Shape) -> str:
    """The clause for a stage that is the one of a ring restarted at each tile (k mod STAGES): what the
    restart gives against where the ring should be (ring counter i mod STAGES)."""
    if i >= shape.T and off // STAGE_BYTES == (i % shape.T) % shape.stages != i % shape.stages:
        return (f" — the ring restarts at each tile in your loops, so k-tile {i % shape.T} gets stage k mod STAGES = "
                f"{(i % shape.T) % shape.stages}; it should be at stage {i} mod {shape.stages} = {i % shape.stages}: "
                f"ring counter {i}, its (stage, phase) carried on across tiles")
    return ""


def producer_hint(ev, shape: Shape, cta: int) -> str | None:
    """The first fill that differs from the course's ring (bytes, barrier, destination, coordinates)."""
    fills, pre = _fills(ev)
    if pre:
        return (f"the producer issues tma_load_2d before any mbarrier_arrive_expect_tx: announce the "
                f"stage's bytes on full_bar(stage) first, then load its boxes")
    want_n = len(shape.tiles(cta)) * shape.T
    if len(fills) != want_n:
        return (f"the producer makes {len(fills)} fills (mbarrier_arrive_expect_tx calls) for CTA {cta}'s "
                f"{len(shape.tiles(cta))} tiles × T = {shape.T} k-tiles: one fill per k-tile, {want_n}")
    for i, (ex, loads) in enumerate(fills):
        tile, kk, s, m0, n0 = shape.fill(cta, i)
        at = f"fill {i} (tile {tile}, k-tile {kk}, stage {s})"
        if ex.args[0] != FULL0 + 8 * s:
            sym = f"{at}: expect_tx goes to {_bar_name(ex.args[0])}; the fill of stage {s} completes on full[{s}]"
            if i >= shape.T and ex.args[0] == FULL0 + 8 * (kk % shape.stages):      # a ring restarted per tile
                return tiered(sym + ".", " Does the ring counter start again at each tile, or go on counting (06 §1)?",
                              f" It goes on: ring counter {i}, stage {i} mod {shape.stages} = {s}; set stage and "
                              "phase once, before the tile loop.")
            return sym
        if ex.args[1] != STAGE_BYTES:
            return (f"{at}: you announce {ex.args[1]} bytes, the two boxes bring {STAGE_BYTES} (2 × 128 rows × "
                    f"64 fp16): the phase then completes " + ("never" if ex.args[1] > STAGE_BYTES else "early"))
        maps = sorted(e.args[1] for e in loads)
        if maps != [0, 1]:
            names = [("ta", "tb")[x] if x in (0, 1) else "?" for x in maps]
            return f"{at}: the producer loads {names or 'no box'}; a fill is one box of ta and one of tb"
        for e in loads:
            dst, mp, bar, c0, c1 = e.args
            name, want_dst, row0 = (("A", s * STAGE_BYTES, m0) if mp == 0 else ("B", s * STAGE_BYTES + BOX_BYTES, n0))
            if bar != FULL0 + 8 * s:
                return f"{at}: {name}'s box completes on {_bar_name(bar)}, not on full[{s}], whose wait guards stage {s}"
            if (c0, c1) != (kk * BK, row0):
                if (c0, c1) == (row0, kk * BK):
                    sym = (f"{at}: {name}'s box asked for (c0, c1) = ({c0}, {c1}), so it holds K columns "
                           f"{c0}..{c0 + 63} of rows {c1}..{c1 + 127} of the stored matrix — rows and K swapped.")
                    return tiered(sym, " In which order does tma_load_2d take the coordinates (03 §1)?",
                                  " Innermost first: c0 is the element along K (64·k), c1 the row (m0 for A, n0 for B).")
                if c1 == row0 and c0 in (kk, kk * BK // 2, kk * 128):
                    return tiered(f"{at}: {name}'s box starts at K = {c0}, k-tile {kk} starts at K = {kk * BK}.",
                                  " Is a tensor-map coordinate counted in bytes, in tiles or in elements (03 §1)?",
                                  " In elements: k-tile k's box starts at c0 = k · BK = 64·k.")
                return (f"{at}: {name}'s box lands holding K {c0}..{c0 + 63} of rows {c1}..{c1 + 127}; this "
                        f"fill is K {kk * BK}..{kk * BK + 63} of rows {row0}..{row0 + 127} (c0 = K, c1 = row)")
            if dst != want_dst:
                return (f"{at}: {name}'s box lands at {_where(dst)} (offset {dst}); the fill belongs at "
                        f"{_where(want_dst)}, where the wgmma descriptors of stage {s} read it" + _restart(dst, i, shape))
    return None


def consumer_hint(ev, shape: Shape, cta: int, wg: int) -> str | None:
    """Descriptors against the course's (k-tile i, k-step j → stage i mod S, byte 32·j), the
    wgmma groups' retirement before each release and store, the fence, the stores."""
    who = f"consumer {wg - 1} (warpgroup {wg})"
    da, db = _templates()
    a0 = da + (((wg - 1) * 64 * 128) >> 4)
    b0 = db + (BOX_BYTES >> 4)
    i, j = 0, 0                      # k-tile of this consumer, k-step in it
    pending, open_, fenced, stores = [], [], False, []
    for e in ev:
        if e.kind == "fence":
            fenced = True
        elif e.kind == "wgmma":
            tile, kk, s, _, _ = shape.fill(cta, i)
            if not fenced:
                return (f"{who}: its first wgmma{' after a store_tile' if stores else ''} has no wgmma_fence() "
                        "before it: acc was written by ordinary code (zeroed), and wgmma_fence orders those "
                        "writes before the wgmma reads them (PTX ISA §9.7.15.7.1)")
            if e.args[2] != 1:
                return (f"{who}, k-tile {i}: scale_d = {e.args[2]} makes the wgmma drop acc's sum so far; pass 1 "
                        "(store_tile zeroes acc for the next tile)")
            off = s * STAGE_BYTES + 32 * j
            for name, got, base, want in (("A", e.args[0], a0, off), ("B", e.args[1], b0, off)):
                if got != base + (want >> 4):
                    got_off = ((got - base) & 0x3FFF) << 4
                    sym = (f"{who}, tile {tile}, k-tile {kk} (stage {s}), k-step {j}: the {name} descriptor "
                           f"starts {got_off} bytes past {name}'s stage-0 start ({_where(got_off + (BOX_BYTES if name == 'B' else 0))}); k-step {j} "
                           f"of stage {s} starts {want} bytes past it.")
                    if _restart(got_off, i, shape):
                        return sym[:-1] + _restart(got_off, i, shape)
                    return tiered(sym, " How far along the 128-byte swizzled row is k-step j, and how far is stage s (04 §3)?",
                                  " k-step j: 16 fp16 = 32·j bytes (kstep_desc), stage s: s · kStageBytes; "
                                  "wgmma_desc_advance(desc, s · kStageBytes + 32·j).")
            j += 1
            open_.append(s)
        elif e.kind == "commit":
            if open_:
                pending.append(set(open_))
                open_ = []
                if j != 4:
                    return f"{who}, k-tile {i}: {j} wgmmas in the group; a 64-deep k-tile is 4 k16 steps"
                i, j = i + 1, 0
        elif e.kind == "waitgroup":
            pending = pending[len(pending) - e.args[0]:] if e.args[0] else []
        elif e.kind == "arrive":
            if e.args[0] in (FULL0 + 8 * x for x in range(8)):
                return f"{who} arrives on {_bar_name(e.args[0])}: the consumers release a stage on empty_bar"
            s = (e.args[0] - EMPTY0) // 8
            if open_ and s in open_:
                return (f"{who} releases stage {s} (arrive on empty[{s}]) before committing the wgmmas that read it: "
                        "wgmma_commit_group(), then a wgmma_wait_group that retires the group, then the arrive")
            if any(s in g for g in pending):
                sym = (f"{who} releases stage {s} (arrive on empty[{s}]) while the wgmma group that reads it is "
                       "still in flight: no wgmma_wait_group retired it, so the producer may refill the stage under it.")
                return tiered(sym, " Which call says the wgmmas are done reading the stage (06 §1)?",
                              " wgmma_wait_group<0>() after wgmma_commit_group() and before "
                              "mbarrier_arrive(empty_bar(stage)).")
        elif e.kind == "store":
            if open_ or pending:
                return (f"{who} calls store_tile({e.args[0]}) while a wgmma group is in flight: wgmma_wait_group<0>() "
                        "first, so acc holds the whole sum")
            stores.append(e.args[0])
            fenced = False
    if open_:
        return f"{who}: its last wgmmas are never committed (wgmma_commit_group())"
    ntiles = len(shape.tiles(cta))
    if stores != list(range(ntiles)):
        return (f"{who} stores tiles {stores}; CTA {cta} walks {ntiles} tiles, store_tile(acc, tile) once each, "
                "after its last k-tile")
    if i != ntiles * shape.T:
        return f"{who} computes {i} k-tiles; CTA {cta} has {ntiles} tiles × T = {shape.T}"
    return None


def _same(a, b, kinds):
    return [(e.kind, e.args) for e in a if e.kind in kinds] == [(e.kind, e.args) for e in b if e.kind in kinds]


def rules_hint(runs: dict, shape: Shape, cta: int) -> str | None:
    """The rules of step 2 (module docstring) for one CTA's runs; None when they hold."""
    for wg in range(3):
        other = runs[wg, False]
        bad = [e for e in other if e.kind in ("arrive", "expect", "tma")]
        if bad:
            role = "producer" if wg == 0 else f"consumer {wg - 1}"
            return (f"a thread of the {role} warpgroup other than the elected one calls {bad[0].kind} "
                    f"({'mbarrier_arrive' if bad[0].kind == 'arrive' else 'mbarrier_arrive_expect_tx' if bad[0].kind == 'expect' else 'tma_load_2d'}): "
                    "guard it with `if (elected)`, one call per warpgroup")
    for wg in (1, 2):
        if not _same(runs[wg, True], runs[wg, False], ("wgmma", "commit", "waitgroup", "fence", "store")):
            return (f"consumer {wg - 1}: the elected thread and another issue different wgmma calls; wgmma, "
                    "commit, wait_group and store_tile are the whole warpgroup's (.sync.aligned)")
    regs = {}
    for wg in range(3):
        for e in runs[wg, True]:
            if e.kind == "setmaxnreg":
                d, r = e.args
                if (wg == 0) != (d == "dec"):
                    return (f"{'the producer' if wg == 0 else 'a consumer'} calls setmaxnreg_{d}: the producer "
                            "gives registers back (dec), the consumers take them (inc)")
                if not (24 <= r <= 256 and r % 8 == 0):
                    return f"setmaxnreg_{d}<{r}>: the count is a multiple of 8 in 24..256"
                regs[wg] = r
    if len(regs) == 3 and 128 * sum(regs.values()) > 65536:
        return (f"setmaxnreg asks for 128 × ({regs[0]} + {regs[1]} + {regs[2]}) = {128 * sum(regs.values())} "
                "registers; the SM has 65536")
    return (producer_hint(runs[0, True], shape, cta) or consumer_hint(runs[1, True], shape, cta, 1)
            or consumer_hint(runs[2, True], shape, cta, 2))


# ---- the ring: order the roles, replay the data -------------------------------------------------

class Stop(Exception):
    """The ring stopped: ``hint`` says why (a deadlock or a race)."""

    def __init__(self, hint):
        super().__init__(hint)
        self.hint = hint


def _who(wg):
    return "the producer" if wg == 0 else f"consumer {wg - 1}"


def simulate(runs: dict, shape: Shape, cta: int, a16, b16, c, consumers_first: bool) -> None:
    """One CTA's roles in ring order (module docstring, steps 3 and 4): writes the CTA's tiles
    into ``c``; raises :class:`Stop` on a deadlock or race."""
    lanes = {wg: runs[wg, True] for wg in range(3)}
    pos = {wg: 0 for wg in lanes}
    waits = {wg: 0 for wg in lanes}
    bars = {}
    for s in range(shape.stages):
        bars[FULL0 + 8 * s] = dict(count=1, pending=1, tx=0, n=0)
        bars[EMPTY0 + 8 * s] = dict(count=2, pending=2, tx=0, n=0)
    smem = np.zeros(shape.stages * STAGE_BYTES, np.uint8)
    owner = np.full(shape.stages * STAGE_BYTES, -1, np.int64)
    where = swizzle_map(course_swizzle_128b)
    src = {0: a16, 1: b16.T}
    acc = {1: np.zeros((64, BN), np.float32), 2: np.zeros((64, BN), np.float32)}
    done_tiles = {1: 0, 2: 0}
    kt = {1: 0, 2: 0}
    open_ = {1: False, 2: False}
    fill_no = [-1]

    def bump(bar):
        b = bars[bar]
        if b["pending"] == 0 and b["tx"] == 0:
            b["n"] += 1
            b["pending"] = b["count"]

    def step(wg, e):
        if e.kind == "wait":
            bar, p = e.args
            b = bars.get(bar)
            if b is None:
                raise Stop(f"{_who(wg)} waits on {_bar_name(bar)}")
            if b["n"] % 2 == p:
                return False
            waits[wg] += 1
        elif e.kind in ("expect", "arrive"):
            b = bars.get(e.args[0])
            if b is None:
                raise Stop(f"{_who(wg)} arrives on {_bar_name(e.args[0])}")
            if e.kind == "expect":
                b["tx"] += e.args[1]
                fill_no[0] += 1
            b["pending"] -= 1
            bump(e.args[0])
        elif e.kind == "tma":
            dst, mp, bar, c0, c1 = e.args
            box = np.zeros((BM, BK), np.float16)
            m = src[mp]
            part = m[max(c1, 0):c1 + BM, max(c0, 0):c0 + BK]
            box[:part.shape[0], :part.shape[1]] = part
            if dst % 1024 or dst < 0 or dst + BOX_BYTES > smem.size:
                raise Stop(f"a box lands at offset {dst}, outside the ring or off the 1024-byte swizzle alignment")
            smem[dst + where] = box.view(np.uint8).reshape(-1)
            owner[dst:dst + BOX_BYTES] = fill_no[0]
            bars[bar]["tx"] -= BOX_BYTES
            bump(bar)
        elif e.kind == "wgmma":
            i = kt[wg]
            for x, rows in ((e.args[0], 64), (e.args[1], BN)):
                addr = _d.read_addresses(_d.decode(x), "K", "float16", rows)
                got = set(np.unique(owner[np.clip(addr, 0, owner.size - 1)]).tolist())
                if got != {i}:
                    tile, kk, s, _, _ = shape.fill(cta, i)
                    f = max(got)
                    sym = (f"{_who(wg)} reads stage {s} for fill {i} (tile {tile}, k-tile {kk}) but the stage holds "
                           + (f"fill {f}: the producer refilled it before {_who(wg)} released it, so the producer's "
                              f"wait on empty[{s}] passed too early." if f > i else
                              f"{'no fill yet' if f < 0 else f'fill {f}'}: its wait on full[{s}] passed before fill {i} landed."))
                    raise Stop(tiered(sym, _PARITY_Q, _PARITY_R))
            av = gather_bytes(smem, _d.read_addresses(_d.decode(e.args[0]), "K", "float16", 64), "float16")
            bv = gather_bytes(smem, _d.read_addresses(_d.decode(e.args[1]), "K", "float16", BN), "float16")
            open_[wg] = True
            acc[wg] = (acc[wg].astype(np.float64) + av.astype(np.float64) @ bv.astype(np.float64).T).astype(np.float32)
        elif e.kind == "commit":
            kt[wg] += open_[wg]
            open_[wg] = False
        elif e.kind == "store":
            m0, n0 = shape.origin(cta, e.args[0])
            r0 = m0 + 64 * (wg - 1)
            c[r0:r0 + 64, n0:n0 + BN] = acc[wg]
            acc[wg][:] = 0
            done_tiles[wg] += 1
        return True

    order = (1, 2, 0) if consumers_first else (0, 1, 2)
    while True:
        moved = False
        for wg in order:
            while pos[wg] < len(lanes[wg]) and step(wg, lanes[wg][pos[wg]]):
                pos[wg] += 1
                moved = True
        if all(pos[wg] == len(lanes[wg]) for wg in lanes):
            return
        if not moved:
            blocked = [w for w in order if pos[w] < len(lanes[w])]

            def expected(w):                 # the course's parity for this role's wait number
                f = waits[w] // shape.stages
                return (f + 1) % 2 if w == 0 else f % 2
            wrong = [w for w in blocked if lanes[w][pos[w]].args[1] != expected(w)]
            wg = (wrong or blocked)[0]
            bar, p = lanes[wg][pos[wg]].args
            b = bars[bar]
            others = [w for w in blocked if w != wg]
            sym = (f"deadlock: {_who(wg)} waits on {_bar_name(bar)} for parity {p} (its wait number {waits[wg]}, "
                   f"ring counter {waits[wg]}), but {_bar_name(bar)} has completed {b['n']} phases"
                   + (f"; {', '.join(_who(w) for w in others)} wait{'s' if len(others) == 1 else ''} behind it"
                      if others else "") + ", so no role can move.")
            raise Stop(tiered(sym, _PARITY_Q, _PARITY_R))


@dataclasses.dataclass
class CpuRun:
    """:func:`run_cpu`'s outcome: ``hint`` (None when right), ``check`` (the last shape's
    comparison with float64, None when it stopped earlier), ``shapes`` run."""
    hint: str | None
    check: ElementCheck | None
    shapes: tuple

    @property
    def passed(self):
        return self.hint is None

    def says(self) -> str:
        if self.passed:
            return ("CPU run: " + "; ".join(f"{m}×{n}×{k} on {c} CTA(s), {s} stages" for m, n, k, s, c in self.shapes)
                    + f" — every element within its bound of float64 (worst {self.check.worst:.2g} of it)")
        return "CPU run: " + self.hint


def run_cpu(text: str, shapes=SHAPES, seed: int | None = None) -> CpuRun:
    """Check B (module docstring) on each of ``shapes``. Raises :class:`NoCompiler`; a compile
    error, a runaway loop, a broken rule, a deadlock, a race or a wrong element is the hint."""
    worst = None
    for (m, n, k, stages, ctas) in shapes:
        shape = Shape(m, n, k, stages, ctas)
        try:
            per_cta = record(text, m, n, k, stages, ctas)
        except runtime.CompileError as e:
            return CpuRun(str(e), None, shapes)
        except RunawayLoop:
            return CpuRun(f"your loops did not end in the CPU run ({m}×{n}×{k}, {stages} stages): more than "
                          "2·10^5 calls or 20 s — does every loop count up to its bound (TILES, T)?", None, shapes)
        for cta, runs in enumerate(per_cta):
            hint = rules_hint(runs, shape, cta)
            if hint:
                return CpuRun(hint, None, shapes)
        a, b = random_operands(m, n, k, "float16", seed)
        c = np.full((m, n), np.nan, np.float32)
        for first in (True, False):
            for cta, runs in enumerate(per_cta):
                try:
                    simulate(runs, shape, cta, a, b, c, consumers_first=first)
                except Stop as e:
                    return CpuRun(f"({m}×{n}×{k}, {stages} stages, CTA {cta}) {e.hint}", None, shapes)
        worst = compare_elementwise(c, a, b, "float32", label=f"cuda_kloop cpu {m}x{n}x{k}")
        if not worst.passed:
            return CpuRun(f"{m}×{n}×{k}: {worst.wrong} elements outside their bound, {worst.unwritten} never "
                          f"written (first at {tuple(worst.first_wrong) if worst.first_wrong is not None else '?'})",
                          worst, shapes)
    return CpuRun(None, worst, shapes)
