"""SASS: what the GPU will actually execute.

:func:`disassemble` runs ``nvdisasm`` (from the ``nvidia-cuda-nvdisasm`` wheel, found with
:func:`cuda.pathfinder.find_nvidia_binary_utility`) on a cubin; :func:`opcode_counts` and
:func:`class_counts` count instructions so that notebooks can show, and tests can assert, that a
kernel contains e.g. ``HMMA.16816`` and ``LDSM`` (chapter 01), ``LDGSTS`` (02), ``UTMALDG`` and
``SYNCS.*`` (03), ``HGMMA`` (04), ``UTCHMMA`` (09). :func:`difference` compares two builds of one
kernel instruction by instruction (chapters 05 and 06's code exercises) and :func:`difference_words`
says how they differ in a few words.
"""

from __future__ import annotations

import collections
import functools
import re
import subprocess
import tempfile
from pathlib import Path

#: Instruction classes the course talks about: name → regular expression on the full opcode.
CLASSES = {
    "HMMA": r"^HMMA\b",                 # mma.sync (Volta..Hopper)
    "LDSM": r"^LDSM\b",                 # ldmatrix
    "STSM": r"^STSM\b",                 # stmatrix
    "LDGSTS": r"^LDGSTS\b",             # cp.async (Ampere-style asynchronous copy)
    "LDGDEPBAR": r"^LDGDEPBAR\b",       # cp.async.commit_group
    "DEPBAR": r"^DEPBAR\b",             # cp.async.wait_group and friends
    "HGMMA": r"^HGMMA\b",               # wgmma fp16/bf16
    "QGMMA": r"^QGMMA\b",               # wgmma fp8
    "WARPGROUP": r"^WARPGROUP\.",       # wgmma.fence / commit / wait
    "UTMALDG": r"^UTMALDG\b",           # cp.async.bulk.tensor global→shared
    "UTMASTG": r"^UTMASTG\b",           # cp.async.bulk.tensor shared→global
    "SYNCS": r"^SYNCS\.",               # mbarrier operations
    "FENCE_ASYNC": r"^FENCE\.VIEW\.ASYNC", # fence.proxy.async
    "BAR": r"^BAR\b",                   # __syncthreads / bar.sync
    "LDG": r"^LDG\b",                   # global loads
    "STG": r"^STG\b",                   # global stores
    "LDS": r"^LDS\b",
    "STS": r"^STS\b",
    "LDL": r"^LDL\b",                   # local memory (spills)
    "STL": r"^STL\b",
    "FFMA": r"^FFMA\b",
    "UTCHMMA": r"^UTCHMMA\b",           # tcgen05.mma kind::f16 (sm_100a)
    "UTCQMMA": r"^UTCQMMA\b",           # tcgen05.mma kind::f8f6f4
    "UTCBAR": r"^UTCBAR\b",             # tcgen05.commit
    "LDTM": r"^LDTM\b",                 # tcgen05.ld
    "UTCATOMSWS": r"^UTCATOMSWS\b",     # tcgen05.alloc / dealloc
    "UCGABAR": r"^UCGABAR",             # barrier.cluster arrive / wait
}


class DisassemblyError(RuntimeError):
    """nvdisasm is missing or rejected the cubin."""


@functools.lru_cache(maxsize=1)
def nvdisasm_path() -> str:
    """Path of the nvdisasm binary (the pip wheel's, else a CUDA toolkit's)."""
    import cuda.pathfinder as pf
    p = None
    try:
        p = pf.find_nvidia_binary_utility("nvdisasm")
    except Exception:  # noqa: BLE001
        p = None
    if not p:
        raise DisassemblyError("nvdisasm not found: install the nvidia-cuda-nvdisasm wheel")
    return str(p)


@functools.lru_cache(maxsize=64)
def disassemble(cubin: bytes) -> str:
    """Disassemble a cubin; returns nvdisasm's text (code sections only, ``-c``)."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "k.cubin"
        f.write_bytes(cubin)
        r = subprocess.run([nvdisasm_path(), "-c", str(f)], capture_output=True, text=True,
                           timeout=120)
    if r.returncode != 0:
        raise DisassemblyError(f"nvdisasm failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


_INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")


def instructions(sass_text: str) -> list[str]:
    """The opcodes (with modifiers, e.g. ``HMMA.16816.F32``) in program order."""
    return [m.group(1) for m in _INSN.finditer(sass_text)]


def opcode_counts(sass_text: str) -> collections.Counter:
    """Count full opcodes (``HMMA.16816.F32.BF16``: 128, ...)."""
    return collections.Counter(instructions(sass_text))


def class_counts(sass_text: str, classes: dict[str, str] | None = None) -> dict[str, int]:
    """Count instructions per course class (see :data:`CLASSES`); classes with zero are omitted."""
    classes = classes or CLASSES
    out: dict[str, int] = {}
    ops = instructions(sass_text)
    for name, rx in classes.items():
        r = re.compile(rx)
        n = sum(1 for op in ops if r.search(op))
        if n:
            out[name] = n
    return out


_NORM = [(re.compile(r"\bU?R\d+\b"), "R"), (re.compile(r"\bU?P\d\b"), "P"), (re.compile(r"\.reuse\b"), "")]
_BRANCH = re.compile(r"^((?:@!?\w+\s+)?(?:BRA|BSSY|BSYNC|CALL|JMP|BRX|RET|WARPSYNC|BMOV)\S*)")
_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")


def normalised(sass_text: str) -> list[str]:
    """The instructions in order with register numbers, operand-reuse hints and branch targets left
    out, and the NOPs that pad the end dropped: two builds of one kernel allocate registers and
    place code differently, and nothing runs past the end."""
    out = []
    for m in _LINE.finditer(sass_text):
        text = m.group(1)
        for rx, to in _NORM:
            text = rx.sub(to, text)
        b = _BRANCH.match(text)
        out.append(b.group(1) if b else text)
    while out and out[-1] == "NOP":
        out.pop()
    return out


class Difference(collections.namedtuple("Difference", "changed total only_kernel only_yours reordered")):
    """:func:`difference`: ``changed`` instructions in one build and not the other (counted with
    multiplicity); of them ``only_kernel`` / ``only_yours`` (opcode class → count, e.g. ``ISETP``);
    ``reordered``: instructions both builds have that ptxas placed elsewhere; ``total``: the
    course's build's. ``same``: the same instructions in the same order. ``away``: how many
    instructions the builds are apart (``changed``, or ``reordered`` when only the order differs)."""
    __slots__ = ()

    @property
    def same(self) -> bool:
        return not self.changed and not self.reordered

    @property
    def away(self) -> int:
        return self.changed or self.reordered

    def kept(self, config: str) -> dict:
        """What a passing exercise keeps with its answer about its build (labelled ``config``):
        ``same``, ``changed`` (= :attr:`away`), ``total``, ``extra`` / ``fewer`` (opcode class →
        count), ``reordered``, ``config`` — read back by :mod:`asynctc.models.gemm_so_far`."""
        return {"same": self.same, "changed": self.away, "total": self.total, "extra": self.only_yours,
                "fewer": self.only_kernel, "reordered": self.reordered, "config": config}


def _op(ins: str) -> str:
    return re.sub(r"^@!?\w+\s+", "", ins).split()[0].split(".")[0]


def difference(kernel_sass: str, your_sass: str) -> Difference:
    """How ``your_sass`` differs from ``kernel_sass`` (:func:`normalised` of each)."""
    import difflib
    ref, mine = normalised(kernel_sass), normalised(your_sass)
    a, b = collections.Counter(ref), collections.Counter(mine)
    only_k, only_y = a - b, b - a
    sm = difflib.SequenceMatcher(None, ref, mine, autojunk=False)
    moved = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")
    changed = sum(only_k.values()) + sum(only_y.values())

    def ops(c):
        out = collections.Counter()
        for ins, n in c.items():
            out[_op(ins)] += n
        return dict(out.most_common())
    reordered = max(0, moved - max(sum(only_k.values()), sum(only_y.values())))
    if not changed and ref != mine:
        reordered = max(reordered, 1)
    return Difference(changed, len(ref), ops(only_k), ops(only_y), reordered)


#: A few words for the opcode classes a step's SASS most often differs in (:func:`difference_words`
#: says them at the moment a learner's text passes). U…: the uniform datapath, one value per warp.
GLOSS = {"NOP": "does nothing; one issue slot", "IMAD": "integer multiply-add",
         "IADD3": "3-input integer add", "LOP3": "3-input logic op", "ISETP": "integer compare → predicate",
         "R2UR": "register → uniform register", "UIADD3": "uniform 3-input add",
         "ULOP3": "uniform 3-input logic op", "USETMAXREG": "sets the warp's register budget",
         "CS2R": "special register → register pair", "BRA": "branch",
         "SEL": "select one of two", "MOV": "register copy", "UMOV": "uniform register copy", "SHF": "funnel shift"}


def difference_words(only_kernel: dict, only_yours: dict, reordered: int = 0, limit: int = 3,
                     gloss: bool = False) -> str:
    """A few words for a :class:`Difference`: per opcode class, "1 extra WARPSYNC", "2 fewer ISETP"
    (``gloss``: each with its :data:`GLOSS` words; NOP always);
    classes both builds have as many of ("the same kinds, other operands or predicates") when
    only operands differ; "N in another order" when only the order does."""
    net = collections.Counter(only_yours)
    net.subtract(only_kernel)
    parts = [(f"{n} extra {op}" if n > 0 else f"{-n} fewer {op}") + (f" ({GLOSS[op]})" if op in GLOSS and (gloss or op == "NOP") else "")
             for op, n in sorted(net.items(), key=lambda kv: (-abs(kv[1]), kv[0])) if n]
    same_kind = sum(min(only_kernel.get(op, 0), only_yours.get(op, 0)) for op in only_yours)
    if same_kind:
        parts.append(f"{same_kind} with other operands or predicates" if same_kind > 1
                     else "1 with another operand or predicate")
    if not parts and reordered:
        parts.append(f"{reordered} in another order")
    return ", ".join(parts[:limit]) + (", …" if len(parts) > limit else "")


def kernel_text(sass_text: str, name: str) -> str:
    """The disassembly of kernel ``name`` alone (nvdisasm prints every function of a cubin, and a
    module compiled once may hold several entry points); "" when it is not there."""
    m = re.search(rf"^\.text\.{re.escape(name)}:\s*$(.*?)(?=^\s*//-+ \.text\.|\Z)", sass_text,
                  re.S | re.M)
    return m.group(1) if m else ""


def excerpt(sass_text: str, pattern: str, context: int = 2, limit: int = 12) -> str:
    """Lines of the disassembly around the first ``limit`` matches of ``pattern`` (a regex)."""
    lines = [ln.rstrip() for ln in sass_text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
    keep: list[int] = []
    for i, ln in enumerate(lines):
        if re.search(pattern, ln):
            keep.extend(range(max(0, i - context), min(len(lines), i + context + 1)))
            if len({k for k in keep}) >= limit * (2 * context + 1):
                break
    seen, out = set(), []
    for i in keep:
        if i not in seen:
            seen.add(i)
            out.append(re.sub(r"\s+", " ", lines[i]).strip())
    return "\n".join(out[: limit * (2 * context + 1)])


# --------------------------------------------------------------------------------------------------
# PTX, for reading (runtime.compile_ptx): one entry's lines, and a long instruction wrapped
# --------------------------------------------------------------------------------------------------

def ptx_function(ptx_text: str, name: str) -> str:
    """The PTX of entry ``name`` alone, from its ``.entry`` line up to the next entry point (inline
    asm braces sit at column 0 in NVRTC's PTX, so a closing ``}`` does not end a function).
    Raises ``ValueError`` when the module has no such entry."""
    m = re.search(rf"^\.(?:visible|weak)?\s*\.entry {re.escape(name)}\(.*?(?=^\s*// \.globl|^\.visible|\Z)",
                  ptx_text, re.S | re.M)
    if not m:
        raise ValueError(f"the PTX has no entry named {name!r}")
    return m.group(0)


def _wrap(line: str, width: int, indent: str = "    ") -> list[str]:
    """``line`` broken after commas so that no piece is longer than ``width``, later pieces
    indented; the last register and the operands after its closing brace stay in one piece."""
    brace = line.rfind("}")
    head, tail = (line, "") if brace < 0 else (line[:brace], line[brace:])
    pieces = re.split(r"(?<=, )", head)
    pieces[-1] += tail                  # the last register travels with the operands after it
    out, cur = [], ""
    for piece in pieces:
        if cur.strip() and len(cur) + len(piece.rstrip()) > width:
            out.append(cur.rstrip())
            cur = indent
        cur += piece
    return out + [cur.rstrip()]


def ptx_excerpt(ptx_text: str, name: str, pattern: str = r"wgmma\.", full: int = 1,
                width: int = 96) -> str:
    """The lines of entry ``name``'s PTX that match ``pattern`` (a regex), in program order. The first
    ``full`` lines with a register list in braces are shown whole, wrapped after commas at
    ``width`` characters; in later ones the list is cut to its first and last register
    (``{%f1, …, %f64}``, and a count). Raises ``ValueError`` (no such entry, or no line matches)."""
    lines = [ln.strip() for ln in ptx_function(ptx_text, name).splitlines() if re.search(pattern, ln)]
    if not lines:
        raise ValueError(f"no line of {name}'s PTX matches {pattern!r}")
    out, shown = [], 0
    for ln in lines:
        regs = re.search(r"\{([^{}]*)\}", ln)
        if regs is None:
            out.append(ln)
            continue
        if shown < full:
            shown += 1
            out += _wrap(ln, width)
            continue
        r = [x.strip() for x in regs.group(1).split(",")]
        cut = f"{{{r[0]}, …, {r[-1]}}}" if len(r) > 2 else regs.group(0)
        out.append(ln[:regs.start()] + cut + ln[regs.end():] + f"   // {len(r)} registers")
    return "\n".join(out)
