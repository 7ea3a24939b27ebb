"""The bug zoo: public bug reports about asynchronous Tensor Core code, by class.

Each :class:`Report` cites a public issue or pull request by repository and number and states, in
our words, what its reporter saw and what fixed it. Each :class:`BugClass` says what goes wrong in
the protocol, which CPU model diagnoses it (:mod:`asynctc.pitfalls.diagnose`), which variant of
``kernels/pitfalls.cu`` reproduces it on the GPU (:data:`asynctc.pitfalls.variants.BUGS`), the fix,
and the test in ``tests/test_pitfalls.py`` that holds the model and the kernel to it. Nothing here
is measured; the symptoms are the reporters'.

Symptoms: "hang" (a wait that never returns), "wrong" (silently wrong values), "slow" (correct
but a performance feature lost), "crash" (a launch or memory error), "latent" (found by reading or
auditing the code; no failure was seen).
"""

from __future__ import annotations

import dataclasses

SYMPTOMS = ("hang", "wrong", "slow", "crash", "latent")


@dataclasses.dataclass(frozen=True)
class Report:
    """One public report: ``repo`` ("owner/name"), ``number``, ``kind`` ("issue" or "PR"),
    ``symptom`` (one of :data:`SYMPTOMS`), ``seen`` what the reporter observed, ``fixed`` what
    changed (both in our words)."""
    repo: str
    number: int
    kind: str
    symptom: str
    seen: str
    fixed: str

    @property
    def cite(self) -> str:
        return f"{self.repo}#{self.number}"

    @property
    def url(self) -> str:
        """The report on GitHub: ``/issues/N`` for an issue, ``/pull/N`` for a PR."""
        return f"https://github.com/{self.repo}/{'pull' if self.kind == 'PR' else 'issues'}/{self.number}"

    @property
    def link(self) -> str:
        """:attr:`cite` as a markdown link to :attr:`url`."""
        return f"[{self.cite}]({self.url})"

    @property
    def short_link(self) -> str:
        """A markdown link to :attr:`url` whose text is the project's short name and the number
        ("CUTLASS #3406")."""
        name = SHORT_REPOS.get(self.repo, self.repo.split("/", 1)[1])
        return f"[{name} #{self.number}]({self.url})"


#: Short names of the repositories the reports come from, for link texts.
SHORT_REPOS = {"NVIDIA/cutlass": "CUTLASS", "NVIDIA/Fuser": "nvFuser", "triton-lang/triton": "Triton",
               "facebookexperimental/triton": "Triton (Meta)", "tile-ai/tilelang": "TileLang",
               "Dao-AILab/flash-attention": "FlashAttention", "NVIDIA/cudnn-frontend": "cuDNN frontend",
               "sgl-project/sglang": "SGLang", "deepseek-ai/DeepEP": "DeepEP",
               "deepseek-ai/DeepGEMM": "DeepGEMM", "MoonshotAI/FlashKDA": "FlashKDA",
               "KnowingNothing/MatmulTutorial": "MatmulTutorial"}


@dataclasses.dataclass(frozen=True)
class BugClass:
    """A class of bug: ``key``; ``title``; ``wrong`` the protocol error in one sentence; ``model``
    the diagnosis entry (a key of :data:`asynctc.pitfalls.diagnosis.MODELS`); ``bug`` the
    ``kernels/pitfalls.cu`` BUG number reproducing it on the GPU (None: compile-only or
    model-only); ``fix``; ``test`` the pytest function; ``reports``; ``compiled`` the compile-only
    entry of ``kernels/pitfalls.cu`` whose SASS shows the bug ("" if none)."""
    key: str
    title: str
    wrong: str
    model: str
    bug: int | None
    fix: str
    test: str
    reports: tuple[Report, ...]
    compiled: str = ""


CLASSES: tuple[BugClass, ...] = (
    BugClass(
        "phase_parity", "mbarrier phase parity from the wrong counter",
        "a wait names the parity of a phase that already completed (it returns at once and the "
        "stage is read or overwritten early) or of a phase that can never complete (it blocks)",
        "pipeline:wrong_empty_parity", 1,
        "one barrier per stage; parity = (k // stages) % 2 for full, the opposite bit for empty "
        "(a fresh barrier's 'preceding phase' counts as complete)",
        "test_phase_parity",
        (Report("tile-ai/tilelang", 3087, "PR", "wrong",
                "an explicit mbarrier inside a software-pipelined loop was given the ring's "
                "parity (k / stages) % 2 although it is one barrier that flips every iteration; the "
                "wait returned immediately and new copies overwrote a stage the MMA still read, "
                "giving wrong results from 3 stages on",
                "the parity of such barriers now follows the loop iteration ((k - start) % 2)"),
         Report("Dao-AILab/flash-attention", 1317, "issue", "hang",
                "reusing FA3's output barrier for another purpose, waiting on phase 0 looped "
                "forever while phase 1 worked",
                "the maintainer's answer: the phase alternates with the iteration, starting from "
                "the parity that the barrier's history implies"))),
    BugClass(
        "arrive_count", "arrival count that does not match who arrives",
        "the mbarrier is initialised for a different number of arrivals than the protocol makes "
        "(threads vs warps vs warpgroups): too many expected and the phase never completes, too "
        "few and it completes before the readers are done",
        "pipeline:arrive_count_too_big", 3,
        "init count = the number of arrive operations per phase (one elected lane per consumer "
        "warp here: 4), decided in one place next to the arrive",
        "test_arrive_count",
        (Report("NVIDIA/cudnn-frontend", 426, "PR", "latent",
                "a barrier that a whole warp arrives on was initialised with count 1, so its "
                "phase could complete on the first lane (a shared-memory hand-off race)",
                "the init count became the warp size"),
         Report("triton-lang/triton", 8969, "PR", "latent",
                "per-warp arrival counts for warp specialization: review found an init count of 1 "
                "for a partition with more than one warp, each of which arrives",
                "count the arriving warps of the partition (num_warps) in the init"),
         Report("tile-ai/tilelang", 1396, "PR", "wrong",
                "under warp specialization the producer's injected barrier arrive had no "
                "warp-level elect guard around it",
                "the arrive is guarded by a shuffle-based elect, so one lane arrives"))),
    BugClass(
        "init_fence", "no fence or sync after mbarrier.init",
        "mbarrier.init is a generic-proxy write: without fence.mbarrier_init (for TMA's complete_tx "
        "and other CTAs of a cluster) and a CTA barrier (for the other threads) a first arrive or "
        "wait may see an uninitialised object",
        "ordering:init", 5,
        "one thread inits, then fence.mbarrier_init, then __syncthreads (cluster_sync in a cluster) "
        "before any arrive, wait or TMA names the barrier",
        "test_init_fence",
        (Report("MoonshotAI/FlashKDA", 24, "issue", "latent",
                "an audit of SM90 kernels against the proxy memory model found standalone mbarriers "
                "used by TMA complete_tx without fence.mbarrier_init (and TMA stores of generic "
                "writes without a proxy fence); mostly working by timing",
                "fixed in MoonshotAI/FlashKDA#25: a fence after each init, as CUTLASS's pipeline does"),
         Report("facebookexperimental/triton", 1240, "PR", "latent",
                "mbarriers used across the CTAs of a cluster need their init made visible to the "
                "whole cluster before the first remote arrive",
                "a fence between the inits and the cluster arrive/wait, implicit or explicit"))),
    BugClass(
        "proxy_fence", "generic shared-memory writes read by TMA without fence.proxy.async",
        "st.shared / stmatrix (a warp's matrix store to shared memory) write through the generic "
        "proxy, TMA and wgmma read through the async proxy; __syncthreads orders threads, not "
        "proxies, so the TMA store may read stale shared memory",
        "ordering:proxy", 6,
        "every writing thread executes fence.proxy.async.shared::cta after its last write and "
        "before the barrier that hands the buffer to the TMA-issuing thread",
        "test_proxy_fence",
        (Report("NVIDIA/Fuser", 1967, "PR", "latent",
                "generated kernels filled shared memory with ordinary stores and issued a TMA store "
                "without a proxy fence",
                "a fence.proxy.async before every TMA store"),
         Report("sgl-project/sglang", 39124, "PR", "wrong",
                "a tile written through the generic proxy and consumed by tcgen05 without a proxy "
                "fence: in an A/B stress test on B300 the unfenced build mismatched in 86 of 100 "
                "runs, the fenced one in none",
                "fence.proxy.async.shared::cta right after the writes, before the CTA barrier"),
         Report("deepseek-ai/DeepEP", 642, "PR", "wrong",
                "shared memory read with ordinary loads and then overwritten by a TMA load "
                "(a write-after-read across proxies) gave stale data on NVL72 (issue #621)",
                "fence.proxy.async.shared::cta between the mbarrier wait and the TMA load"))),
    BugClass(
        "expect_tx", "expect_tx byte count that is not what the boxes deliver",
        "the tx-count announced with arrive.expect_tx differs from the bytes the copies complete: "
        "more and the phase never completes (hang), fewer and it completes while bytes are still "
        "landing (race)",
        "pipeline:expect_tx_too_large", 4,
        "announce exactly the sum of the full boxes of the stage (out-of-bounds parts included), "
        "computed from the same box shapes that build the tensor maps",
        "test_expect_tx",
        ()),  # no public report found; chapter 05's run_broken(1) and the PTX ISA tx-count rule
    BugClass(
        "misaligned_tile", "shared-memory tile misaligned behind the barriers",
        "TMA needs 128-byte aligned shared memory, and a swizzled box needs its swizzle repeat "
        "(256/512/1024 B): the pattern follows the absolute address, so a tile placed after the "
        "mbarriers or another buffer at a weaker alignment is read back permuted (or faults)",
        "layout:misaligned", 7,
        "align each swizzled stage to 1024 B (the 128B swizzle's repeat); put the mbarriers in "
        "static shared memory or after the tiles",
        "test_misaligned_tile",
        (Report("tile-ai/tilelang", 2379, "issue", "wrong",
                "a TMA copy into a 128B-swizzled tile that started 128 bytes past a 1024 B boundary "
                "returned wrong values; at +1024 B it was right, and a non-TMA copy was right at both",
                "per-buffer alignment to the swizzle repeat in the shared-memory planner (PR #2391)"),
         Report("NVIDIA/Fuser", 3023, "PR", "crash",
                "mbarrier allocations shifted TMA buffers off 128-byte alignment, failing with "
                "CUDA_ERROR_MISALIGNED_ADDRESS",
                "every TMA shared-memory allocation aligned to 128 bytes"))),
    BugClass(
        "missing_wgmma_wait", "stage released before its wgmma finished reading it",
        "wgmma reads shared memory asynchronously; arriving on the empty barrier before "
        "wgmma.wait_group has retired the group that reads the stage lets TMA overwrite operands "
        "still being read (nondeterministic results)",
        "ordering:wgmma", None,
        "commit the stage's wgmmas, wgmma.wait_group(N) so that the group reading the stage is done, "
        "then arrive on empty (chapter 05: release k-tile k − N)",
        "test_missing_wgmma_wait",
        (Report("NVIDIA/Fuser", 3561, "issue", "latent",
                "the compute warps arrived on the write-after-read barrier with no wgmma commit/wait "
                "before it; no wrong result was ever seen and the sanitizer pipeline reported nothing",
                "commit_group and wait_group inserted after the mma (PR #3573)"),),
        "pitfall_wgmma_release WAIT=0"),
    BugClass(
        "store_buffer_reuse", "TMA-store source rewritten before the bulk group read it",
        "a TMA store reads its shared-memory source asynchronously; rewriting the buffer before "
        "cp.async.bulk.wait_group.read N covers that store races with the copy engine",
        "ordering:store", 8,
        "the issuing thread waits cp.async.bulk.wait_group.read with N = stores allowed in flight "
        "on other buffers, then a barrier, then the writers touch the buffer",
        "test_store_buffer_reuse",
        (Report("deepseek-ai/DeepEP", 657, "issue", "latent",
                "with two stages, waiting for at most one pending store group let the store of the "
                "current stage still read the buffer when the next TMA load overwrote it",
                "reported as a race on the shared-memory stage; the wait must cover that stage's "
                "store"),)),
    BugClass(
        "setmaxnreg_dropped", "setmaxnreg silently dropped",
        "ptxas ignores setmaxnreg when it cannot tell the register count at kernel entry: the "
        "kernel runs correctly with a flat register budget instead of the producer/consumer split",
        "ptxas:C7508", None,
        "__launch_bounds__(threads, 1) (.maxntid and .minnctapersm) on warp-specialized kernels; "
        "treat C7508 as an error and check for USETMAXREG in the SASS",
        "test_setmaxnreg_dropped",
        (Report("NVIDIA/cutlass", 3406, "issue", "slow",
                "CuTe DSL's setmaxregister calls were dropped by ptxas (C7508) with nothing surfaced "
                "to Python; passing min_blocks_per_mp=1 made them take effect",
                "documented in PR #3618"),
         Report("NVIDIA/Fuser", 3972, "PR", "slow",
                "register sharing with __launch_bounds__(threads) alone still printed C7508",
                "a minimum of 1 block per SM added to the launch bounds")),
        "pitfall_setmaxnreg BOUNDS=0"),
    BugClass(
        "swizzle_mismatch", "descriptor (reader) swizzle ≠ tensor map swizzle",
        "the tensor map writes one swizzle pattern and the wgmma descriptor (or the reader's "
        "address arithmetic) assumes another: every load lands, no wait fails, the values are "
        "permuted",
        "layout:swizzle", 10,
        "derive the tensor map and the descriptor from one tile description (chapter 04's "
        "SmemTile → tensor_map_args and descriptor_for_smem_tile)",
        "test_swizzle_mismatch",
        (Report("KnowingNothing/MatmulTutorial", 14, "issue", "wrong",
                "turning the TMA swizzle off while the wgmma descriptor still said 128B gave about "
                "87 % wrong outputs",
                "(question thread) the descriptor's layout type must change with the tensor map"),
         Report("deepseek-ai/DeepGEMM", 115, "PR", "hang",
                "a swizzle mode chosen for an fp32 output gave the tensor map a swizzle the kernel "
                "had no parameter for, and the wgrad tests hung",
                "reverted; the kernel and the tensor map must agree on the mode"))),
    BugClass(
        "leader_early", "a leader thread arrives before its group is done",
        "one elected lane arrives (or flips a phase) for its warp before the other lanes finished "
        "reading: the barrier says 'released' while reads are in flight",
        "ordering:leader", 9,
        "__syncwarp (or the group's named barrier) between the last read and the elected arrive",
        "test_leader_early",
        (Report("triton-lang/triton", 11334, "PR", "wrong",
                "in a cluster barrier a thread could run ahead and overwrite the phase before "
                "another warp had read it; a delay loop in the test reproduces it",
                "the race was closed in the barrier's lowering; the test forces the timing with "
                "a delay loop in some warps"),)),
)

BY_KEY = {c.key: c for c in CLASSES}


def reports() -> list[tuple[BugClass, Report]]:
    """Every (class, report) pair, in zoo order."""
    return [(c, r) for c in CLASSES for r in c.reports]


def symptom_counts() -> str:
    """One line: how many reports, in how many classes, and how many reported each symptom."""
    counts = ", ".join(f"{sym} {sum(r.symptom == sym for _, r in reports())}" for sym in SYMPTOMS)
    return f"{len(reports())} reports in {len(CLASSES)} classes; reported as {counts}"


#: Each class in a few words, for the core lesson's table (the title says it in full).
SHORT_TITLES = {
    "phase_parity": "waits on the wrong phase",
    "arrive_count": "init count ≠ arrivals",
    "init_fence": "barrier used before its init is visible",
    "proxy_fence": "TMA reads generic writes unfenced",
    "expect_tx": "announced bytes ≠ delivered bytes",
    "misaligned_tile": "tile off its swizzle repeat",
    "missing_wgmma_wait": "stage released while wgmma reads it",
    "store_buffer_reuse": "TMA-store source rewritten too early",
    "setmaxnreg_dropped": "ptxas ignores setmaxnreg",
    "swizzle_mismatch": "reader and tensor map disagree on swizzle",
    "leader_early": "one lane arrives while its warp still reads",
}

#: Where the course shows each class: "§5a" is a section of chapter 08, "08b §3" of another
#: notebook (tests/test_pitfalls.py checks that each section exists).
SHOWN_IN = {
    "phase_parity": "§3; 05 §1",
    "arrive_count": "08b §3",
    "init_fence": "§5b; 08b §4",
    "proxy_fence": "§5b; 08b §4",
    "expect_tx": "08b §3",
    "misaligned_tile": "§5a; 08b §4",
    "missing_wgmma_wait": "§5b; 08b §2",
    "store_buffer_reuse": "03b §2; §7; 08b §4",
    "setmaxnreg_dropped": "08b §5",
    "swizzle_mismatch": "04 §2; 06e §5; 08b §4",
    "leader_early": "§5b; 08b §4",
}


def _variant(c: BugClass) -> str:
    return (f"BUG={c.bug}" if c.bug is not None else f"compile-only: {c.compiled}" if c.compiled
            else "model only")


def table_markdown(compact: bool = False, reports: bool = True) -> str:
    """The zoo as a markdown table. Full (the default): one row per report — class, report,
    symptom, what the reporter saw, CPU model, GPU variant. ``compact=True``: one row per class —
    its key and :data:`SHORT_TITLES` name, its :func:`symptoms`, its kernel variant, where the
    course shows it (:data:`SHOWN_IN`), and (unless ``reports=False``: the core lesson's form, which
    leaves them to 08b and :func:`diagnose`) its reports as short links."""
    if compact:
        head = "| bug | symptom | kernel | shown in |" + (" public reports |" if reports else "")
        rows = [head, "|---" * head.count(" |") + "|"]
        for c in CLASSES:
            cites = ", ".join(r.short_link for r in c.reports) or "none found"
            gpu = f"BUG={c.bug}" if c.bug is not None else "SASS only" if c.compiled else "—"
            rows.append(f"| `{c.key}`: {SHORT_TITLES[c.key]} | {', '.join(symptoms(c.key))} | {gpu} | "
                        f"{SHOWN_IN[c.key]} |" + (f" {cites} |" if reports else ""))
        return "\n".join(rows)
    rows = ["| class | report | symptom | what the reporter saw | model | GPU variant |",
            "|---|---|---|---|---|---|"]
    for c in CLASSES:
        variant = _variant(c)
        if not c.reports:
            rows.append(f"| {c.title} | (none found) | hang | — | `{c.model}` | {variant} |")
        for r in c.reports:
            rows.append(f"| {c.title} | {r.link} ({r.kind}) | {r.symptom} | {r.seen} | `{c.model}` | {variant} |")
    return "\n".join(rows)


#: "My kernel hangs / is wrong / is slow": what to look at first, and the zoo classes it points to.
DECISION_TABLE = (
    ("hangs (a bounded wait times out)",
     "which barrier, stage and k-tile; is its phase missing arrivals or bytes?",
     ("phase_parity", "arrive_count", "expect_tx", "init_fence")),
    ("wrong values, every run the same",
     "the first wrong element: a permutation inside 128-byte rows is a layout bug",
     ("swizzle_mismatch", "misaligned_tile")),
    ("wrong values that change between runs",
     "a stage read before it landed or overwritten while read: run the protocol in the model",
     ("phase_parity", "missing_wgmma_wait", "store_buffer_reuse", "leader_early", "proxy_fence")),
    ("slow but correct",
     "the ptxas log (C7508: setmaxnreg dropped; C7511: wgmma serialized for lack of registers; "
     "spills) and the SASS (USETMAXREG, the setmaxnreg instruction; the HGMMA, i.e. wgmma, count)",
     ("setmaxnreg_dropped",)),
    ("crashes (misaligned address, illegal instruction)",
     "compute-sanitizer's memcheck first; then the shared-memory offsets of every TMA box",
     ("misaligned_tile",)),
)


#: Each row of :data:`DECISION_TABLE` as a symptom of the core lesson's zoo table.
SYMPTOM_WORDS = ("hang", "wrong always", "wrong sometimes", "slow", "crash")


def symptoms(key: str) -> list[str]:
    """The symptoms of class ``key``, as :data:`DECISION_TABLE` sorts it ("hang", "wrong
    always", "wrong sometimes", "slow", "crash")."""
    return [w for w, (_s, _l, keys) in zip(SYMPTOM_WORDS, DECISION_TABLE, strict=True) if key in keys]


def decision_markdown(compact: bool = False, classes: bool = True) -> str:
    """:data:`DECISION_TABLE` as a markdown table; the zoo classes by title, or by key
    (``compact=True``, for a reader who has the zoo table's keys in front of them), or not at all
    (``classes=False``: the core lesson, whose zoo table gives each class its symptom)."""
    if not classes:
        return "\n".join(["| my kernel … | look at |", "|---|---|"]
                         + [f"| {symptom} | {look} |" for symptom, look, _keys in DECISION_TABLE])
    rows = ["| my kernel … | look at | zoo classes |", "|---|---|---|"]
    for symptom, look, keys in DECISION_TABLE:
        names = (f"`{k}`" for k in keys) if compact else (BY_KEY[k].title for k in keys)
        rows.append(f"| {symptom} | {look} | {', '.join(names)} |")
    return "\n".join(rows)
