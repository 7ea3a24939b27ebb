"""The zoo's GPU variants: ``kernels/pitfalls.cu`` compiled once per bug (``-DBUG=<n>``), launched
on a small problem, and their outcome decoded into words.

Every variant ends with one of: ``ok`` (the output is bit-identical to the input), a decoded
bounded wait (which role timed out on which barrier, stage and tile — the kernel gave up instead
of hanging), or the elementwise check naming the first wrong element. A variant that passes is
reported as such ("no error observed"): a latent bug the timing hides, which is what the CPU models
are for. Compiling needs no GPU; :func:`run_variant` needs an sm_90a GPU.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from ..core import runtime

SOURCE = "pitfalls.cu"
ENTRY = "pitfall_ring"
SETMAXNREG_ENTRY = "pitfall_setmaxnreg"
WGMMA_ENTRY = "pitfall_wgmma_release"
THREADS = 160
ROWS, COLS = 64, 64                      # one box: 64 rows × 64 fp16 = 128-byte rows
TILE_BYTES = ROWS * COLS * 2
STAGES = 2
#: Dynamic shared memory: 1024 B alignment slack + 128 B (the misaligned variant's shift) + the
#: stages + 128 B + the output buffer.
SMEM_BYTES = 1024 + 128 + STAGES * TILE_BYTES + 128 + TILE_BYTES
LOG_WORDS = 64

#: BUG number → (zoo class key, what the variant changes). 0 is the correct kernel.
BUGS = {
    0: ("correct", "the protocol as it should be"),
    1: ("phase_parity", "the producer waits parity (t // S) % 2 on empty — phase 0 of a fresh barrier"),
    2: ("phase_parity", "the consumers wait parity (t // S + 1) % 2 on full — the phase before"),
    3: ("arrive_count", "empty barriers initialised with 128 (threads) while one lane per warp arrives"),
    4: ("expect_tx", "expect_tx announces 16 bytes more than the box delivers"),
    5: ("init_fence", "no fence.mbarrier_init and no __syncthreads after mbarrier.init"),
    6: ("proxy_fence", "the out buffer is written with st.shared and TMA-stored with no fence.proxy.async"),
    7: ("misaligned_tile", "the stages start 128 B past a 1024 B boundary under the 128B swizzle"),
    8: ("store_buffer_reuse", "the out buffer is rewritten without cp.async.bulk.wait_group.read"),
    9: ("leader_early", "lane 0 arrives on empty before its warp read the stage (20 µs window)"),
    10: ("swizzle_mismatch", "the reader assumes no swizzle; the tensor map writes 128B swizzle"),
}
WAIT_BARRIERS = {1: "full", 2: "empty"}
#: The error word a timed-out wait writes (``wait_or_record`` in kernels/pitfalls.cu:
#: ``code | tag << 8 | tile << 16``, tag = stage << 4 | barrier), as (shift, width) per field — the
#: format of chapter 05's :data:`asynctc.pipeline.config.ERROR_FIELDS`, whose code, barrier and stage
#: bits it shares; which role waited is the slot the word is written to (err[1] producer, err[2]
#: consumers), not a field.
WORD_FIELDS = {"code": (0, 8), "barrier": (8, 4), "stage": (12, 4), "tile": (16, 8)}
ROLES = {1: "producer", 2: "consumers"}
EVENTS = {1: "empty_wait", 2: "empty_pass", 3: "tma_load", 4: "full_wait", 5: "full_pass",
          6: "release", 7: "tma_store", 8: "timeout"}


def _check_bug(bug: Any) -> int:
    if isinstance(bug, bool) or not isinstance(bug, (int, np.integer)):
        raise TypeError(f"bug={bug!r}: must be an int, one of {sorted(BUGS)}")
    if int(bug) not in BUGS:
        raise ValueError(f"bug={bug}: must be one of {sorted(BUGS)} (asynctc.pitfalls.variants.BUGS)")
    return int(bug)


def compile_variant(bug: int, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """The ring kernel with ``BUG=bug`` (no GPU needed)."""
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines={"BUG": _check_bug(bug)})


def compile_setmaxnreg(bounds: bool, arch: str = "sm_90a") -> tuple[runtime.CompiledKernel, list[str]]:
    """The setmaxnreg hand-off with (``bounds=True``) or without ``__launch_bounds__(256, 1)``;
    returns the kernel and ptxas's performance diagnostics for it (C7508 when dropped)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = runtime.compile_kernel(SOURCE, SETMAXNREG_ENTRY, arch, defines={"BOUNDS": int(bool(bounds))})
    return ck, runtime.performance_diagnostics(ck.log)


_PAT = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", re.M)


def _own_sass(ck: runtime.CompiledKernel) -> str:
    from ..tma import kernel_sass
    text = kernel_sass(ck)
    if not text:
        raise ValueError(f"{ck.name}: no .text.{ck.name} section in the disassembly")
    return text


def compile_wgmma_release(wait: bool, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """The wgmma stage release with (``wait=True``) or without ``wgmma.wait_group 0`` before the
    arrive on empty (compile-only; never launched)."""
    return runtime.compile_kernel(SOURCE, WGMMA_ENTRY, arch, defines={"WAIT": int(bool(wait))})


def release_order(ck: runtime.CompiledKernel) -> list[str]:
    """The SASS of ``ck`` reduced to its HGMMA, WARPGROUP.DEPBAR and SYNCS.ARRIVE instructions, in
    program order (opcode without modifiers) — where the release sits relative to the wait."""
    keep = ("HGMMA", "WARPGROUP.DEPBAR", "SYNCS.ARRIVE")
    out = []
    for op in _PAT.findall(_own_sass(ck)):
        k = next((x for x in keep if op == x or op.startswith(x + ".")), None)
        if k and (not out or out[-1] != k):
            out.append(k)
    return out


def sass_ops(ck: runtime.CompiledKernel) -> dict[str, int]:
    """Opcode counts of a compiled kernel's own SASS function (the opcode with its modifiers, e.g.
    ``DEPBAR.LE``; the cubin's other kernels are left out)."""
    out: dict[str, int] = {}
    for op in _PAT.findall(_own_sass(ck)):
        out[op] = out.get(op, 0) + 1
    return out


def sass_count(ck: runtime.CompiledKernel, opcode: str) -> int:
    """How many SASS instructions of ``ck`` are ``opcode`` (any modifiers: ``DEPBAR`` counts
    ``DEPBAR.LE``)."""
    return sum(n for op, n in sass_ops(ck).items() if op == opcode or op.startswith(opcode + "."))


def word_fields(word: int) -> dict:
    """One error word split into :data:`WORD_FIELDS` (chapter 05's decoder,
    :func:`asynctc.pipeline.trace.error_fields`, with this kernel's layout)."""
    from ..pipeline.trace import error_fields
    return error_fields(word, WORD_FIELDS)


def decode_word(word: int) -> str:
    """One error word (:data:`WORD_FIELDS`) as text."""
    word = int(word)
    if word == 0:
        return "ok"
    f = word_fields(word)
    bar = WAIT_BARRIERS.get(f["barrier"], f"barrier {f['barrier']}")
    return f"timed out on {bar}[{f['stage']}] at k-tile {f['tile']} (code {f['code']}, word {word:#x})"


def explain_word(word: int) -> str:
    """One error word written out field by field, in the order the kernel builds it, e.g.
    ``0x201 = k-tile 0 << 16 | stage 0 << 12 | barrier 2 (empty) << 8 | code 1 (timeout)``. The
    kernel's ``tile`` field is the loop's box count, which the ring model calls the k-tile."""
    f = word_fields(word)
    bar = WAIT_BARRIERS.get(f["barrier"], "?")
    code = "timeout" if f["code"] == 1 else "?"
    return (f"{int(word):#x} = k-tile {f['tile']} << 16 | stage {f['stage']} << 12 | barrier "
            f"{f['barrier']} ({bar}) << 8 | code {f['code']} ({code})")


def words_in(text: str) -> list[int]:
    """The error words an outcome's text quotes (``word 0x…``, as :func:`decode_word` writes them),
    in order: a recorded outcome keeps only its text."""
    return [int(w, 16) for w in re.findall(r"\bword (0x[0-9a-f]+)", text)]


def decode_errors(words) -> dict:
    """The kernel's three error words → {"first": text, "producer": text, "consumers": text}."""
    w = [int(x) for x in words]
    return {"first": decode_word(w[0]), "producer": decode_word(w[1]), "consumers": decode_word(w[2])}


def decode_log(log) -> list[dict]:
    """The in-kernel log (u64 × 64: producer in 0..31, consumer thread 0 in 32..63) as records
    {role, ns, event, stage, tile}, each role in its own time order."""
    out = []
    for base, role in ((0, "producer"), (32, "consumers")):
        for v in (int(x) for x in log[base:base + 32]):
            if v == 0:
                continue
            out.append({"role": role, "ns": v >> 24, "event": EVENTS.get((v >> 16) & 0xFF, "?"),
                        "stage": (v >> 8) & 0xFF, "tile": v & 0xFF})
    return out


def first_wrong(out: np.ndarray, want: np.ndarray) -> dict | None:
    """The elementwise check (bit-exact, a copy): None when ``out`` equals ``want``, else the first
    wrong element in row-major order {row, col, tile, got, want, wrong, total}; NaN poison counts as
    wrong."""
    o, w = out.view(np.uint16), want.view(np.uint16)
    bad = np.argwhere(o != w)
    if not len(bad):
        return None
    r, c = (int(x) for x in bad[0])
    return {"row": r, "col": c, "tile": r // ROWS, "got": float(out[r, c]), "want": float(want[r, c]),
            "wrong": int(len(bad)), "total": int(o.size)}


@dataclasses.dataclass
class Outcome:
    """What one variant ended with: ``words`` (one line), ``errors`` (decoded error words),
    ``wrong`` (:func:`first_wrong` or None), ``log`` (:func:`decode_log`)."""
    bug: int
    key: str
    words: str
    errors: dict
    wrong: dict | None
    log: list

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def outcome_words(errors: dict, wrong: dict | None) -> str:
    """The one-line outcome: the first timeout (and who else timed out), else the first wrong
    element, else "ok"."""
    if errors["first"] != "ok":
        who = [f"{role} {errors[role]}" for role in ("producer", "consumers") if errors[role] != "ok"]
        return "bounded wait: " + "; ".join(who)
    if wrong:
        return (f"wrong: first wrong element ({wrong['row']}, {wrong['col']}) of tile {wrong['tile']}: "
                f"got {wrong['got']:.6g}, want {wrong['want']:.6g}; {wrong['wrong']} of {wrong['total']} wrong")
    return "ok"


def random_input(tiles: int, rng=None) -> np.ndarray:
    """Fresh random fp16 input, (tiles × 64) × 64, no zeros and no ±1 (normal, scaled, nudged)."""
    rng = rng if rng is not None else np.random.default_rng()
    x = (rng.standard_normal((tiles * ROWS, COLS)) * 3.0).astype(np.float16)
    x[np.abs(x) < np.float16(1e-2)] = np.float16(0.37)
    x[np.abs(x) == np.float16(1.0)] = np.float16(1.37)
    return x


def run_variant(bug: int, tiles: int = 8, rng=None) -> Outcome:
    """Launch variant ``bug`` on ``tiles`` boxes (one CTA) and decode how it ended. Needs an sm_90a
    GPU (:class:`~asynctc.core.runtime.NoGPUError` otherwise). Never hangs: each bounded wait gives
    up after 0.5 s."""
    from .. import tma
    from ..core.memory import DeviceArray
    bug = _check_bug(bug)
    if isinstance(tiles, bool) or not isinstance(tiles, (int, np.integer)) or not 1 <= tiles <= 255:
        raise ValueError(f"tiles={tiles!r}: must be an integer in 1..255 (the error word holds 8 bits of tile)")
    ck = compile_variant(bug)
    x = random_input(int(tiles), rng)
    a = DeviceArray.from_host(x)
    out = DeviceArray.poisoned(x.shape, np.float16)
    in_map = tma.make_tensor_map(a, (ROWS, COLS), swizzle=128)[0]
    out_map = tma.make_tensor_map(out, (ROWS, COLS), swizzle=0)[0]
    err = DeviceArray.from_host(np.zeros(3, np.uint32))
    log = DeviceArray.from_host(np.zeros(LOG_WORDS, np.uint64))
    runtime.launch(ck, 1, THREADS, in_map, out_map, np.int32(tiles), err, log, shmem_bytes=SMEM_BYTES)
    errors = decode_errors(err.to_host())
    got = out.to_host()
    wrong = first_wrong(got, x)
    return Outcome(bug, BUGS[bug][0], outcome_words(errors, wrong), errors, wrong,
                   decode_log(log.to_host()))
