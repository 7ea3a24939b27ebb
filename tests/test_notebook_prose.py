"""The chapters' sources keep their promises (issue 9 §1, §4), checked on the CPU without executing them:

* every markdown sentence that compares measured numbers is guarded: its cell is followed by a code
  cell that ``assert``\\ s it or prints it through ``notebook.claim`` (so a re-measurement that flips
  the conclusion fails), unless the allow-list below says, with a reason, that it compares no
  measurement; a guard in a ``# %% check`` cell (collapsed, guards only) counts like any other;
* every ``notebook.show_source`` listing renders (last expression of its cell, or inside
  ``display``) and shows the lines it is about;
* the first code cell calls ``notebook.banner`` (which makes figures render inline even with
  ``MPLBACKEND=Agg`` — executed here in a small notebook);
* cells that print numbers from a record carry the ``# %% output varies`` marker, which the build
  turns into nbval's ``nbval-ignore-output`` tag; no ``NBVAL_IGNORE_OUTPUT`` comment is left;
* no cell ends in a bare matplotlib call whose return value would print as ``Text(...)``.
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]*_*.py"))


def _build_module():
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "tools" / "build_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cells(src: Path):
    """The notebook the build makes from ``src`` (cells with metadata, markers turned into tags)."""
    return _build_module().to_notebook(src).cells


def _tagged(cell) -> bool:
    return "nbval-ignore-output" in cell.metadata.get("tags", [])


# --------------------------------------------------------------------------------------------------
# 1. Comparisons of measured numbers are generated from the record or asserted
# --------------------------------------------------------------------------------------------------

#: Words and forms that compare two quantities.
COMPARISON = re.compile(
    r"\b(faster|slower|wins?|winning|beats?|recovers?|crossover|lines cross|holds?|overtakes?|ahead|"
    r"(?<!wrapper )behind|more than|less than|fewer than|twice|outperforms?|higher than|lower than|better than|"
    r"worse than)\b"
    r"|\d(?:\.\d+)?\s*×\s*(?:as\b|the\b|of\b|faster|slower|chapter|ch\.|cuBLAS)"
    r"|\b\d?\.\d+\s+of\s+(?:the|cuBLAS|peak|4096|its|our|their)\b",
    re.IGNORECASE)

#: Sentences with a comparison word that compare no measurement, each with the reason. Entries are
#: (chapter prefix, regular expression matched against the sentence, reason). An entry that matches
#: nothing fails the test, so the list cannot rot.
ALLOWED = [
    ("00", r"cannot be faster than\s+bandwidth × intensity", "the roofline's definition, a model"),
    ("01b", r"No\s+thread holds a whole row", "the PTX fragment layout, not a measurement"),
    ("01b", r"who holds what|which lane holds each", "the PTX fragment layout, not a measurement"),
    ("01", r"that a CTA holds in shared memory", "a definition"),
    ("01b", r"holds an A register|lane 4g\+t holds|lanes? .* hold", "the PTX fragment layout"),
    ("04", r"lane 4g ?\+ ?t holds|warp w holds rows|who holds D\[|N/2 fp32 values per thread|holds each|holding each",
     "the PTX accumulator layout"),
    ("04b", r"lane 4g\+t holds|holds each", "the PTX accumulator layout"),
    ("03", r"A tensor map holds a tensor's address", "what a tensor map is, a definition"),
    ("04", r"a row holds 32 k|a k-row holds 32 n", "the worked k-step's layout arithmetic, not a measurement"),
    ("04b", r"Luo et al\.?.*(?:665|3300)|their N = 256 figure", "a literature figure and its conversion"),
    ("04b", r"8192·8/72|predicted FLOP/clk/SM|slower of the two", "the model's arithmetic, not a measurement"),
    ("07", r"FP8's dense peak is twice FP16's", "the Tensor Cores' per-clock rates (the H100 datasheet), not a measurement"),
    ("07", r"Promoting every 4 k-tiles cuts the swamping error 28×",
     "asserted by 07 §5's notebook.require, in the check cell before it (the answer folded after its prediction)"),
    ("05b", r"ring alone brings less than the math needs", "asserted by pl.show_supply (pipeline/lesson.py)"),
    ("09", r"No sm_100 GPU stands behind this chapter", "says that nothing is measured"),
    ("09", r"operations after it\s+behind the waits", "a PTX ordering rule, not a measurement"),
    ("09c", r"each CTA holds M/2 rows", "the PTX CTA-pair layout, not a measurement"),
    ("10", r'"our kernel reaches 0\.99 of cuBLAS"', "quotes the kind of claim the chapter judges"),
    ("10", r"top rung reaches 0\.99 of cuBLAS at 4096³", "states the claim under test (§3 judges it, generated)"),
    ("10", r'Here "0\.99 of cuBLAS" holds',
     "asserted by 10 §3's notebook.require, in the check cell before it (the answer folded after its prediction)"),
    ("10", r"answers the first three", "counts the questions, compares nothing"),
    ("10", r"top rung beats cuBLAS at 8192³ in bf16", "states the exercise's claim; the learner judges it"),
    ("10", r"Which verdict does your interval give", "the exercise's question, naming the verdict words"),
]


def _sentences(markdown: str) -> list[str]:
    out = []
    prose = []
    for line in markdown.splitlines():
        if line.lstrip().startswith("|"):
            out.append(line)                       # a table row is its own sentence
        else:
            prose.append(line.lstrip("#> ").rstrip())
    text = " ".join(prose)
    out += [s for s in re.split(r"(?<=[.!?;])\s+|\s+—\s+", text) if s.strip()]
    return out


_GUARD_NAMES: set[str] | None = None


def _guard_names() -> set[str]:
    """The chapter helpers marked with ``notebook.guards``, every asynctc module imported once."""
    global _GUARD_NAMES
    if _GUARD_NAMES is None:
        import importlib
        import pkgutil

        import asynctc
        from asynctc.core import notebook
        for m in pkgutil.walk_packages(asynctc.__path__, "asynctc.", onerror=lambda name: None):
            if m.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(m.name)
            except Exception:             # a module that needs what this machine lacks guards nothing here
                pass
        _GUARD_NAMES = set(notebook.GUARDS)
    return _GUARD_NAMES


def _guard(cell) -> bool:
    return cell is not None and cell.cell_type == "code" and (
        re.search(r"^\s*assert\b", cell.source, re.MULTILINE) is not None
        or "notebook.claim(" in cell.source or "notebook.verdict(" in cell.source
        or any(re.search(rf"\.{name}\(", cell.source) for name in _guard_names()))


def _is_check(cell) -> bool:
    """A ``# %% check`` cell (collapsed guards; tools/build_notebooks.py)."""
    return cell is not None and cell.cell_type == "code" and "check" in cell.metadata.get("tags", [])


def _comparison_findings(src: Path):
    cells = _cells(src)
    chapter = src.name.split("_")[0]          # "09", or a deep dive's "09b"
    unguarded, used = [], set()
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        nxt = cells[i + 1] if i + 1 < len(cells) else None
        after = cells[i + 2] if i + 2 < len(cells) else None
        # the cell that prints the numbers may leave its guards to a collapsed check cell right after it
        guarded = _guard(nxt) or (nxt is not None and nxt.cell_type == "code" and _is_check(after) and _guard(after))
        for sentence in _sentences(cell.source):
            if not COMPARISON.search(sentence):
                continue
            allowed = [k for k, (ch, rx, _) in enumerate(ALLOWED) if ch == chapter and re.search(rx, sentence)]
            used.update(allowed)
            if not allowed and not guarded:
                unguarded.append(f"{src.name} cell {i}: {sentence.strip()[:160]!r}")
    return unguarded, used


def test_comparison_regex_finds_what_it_should():
    for s in ("TMA wins at 1 KB", "one stage beats four", "1.57× chapter 01", "0.55 of cuBLAS",
              "the claim holds below the crossover", "more than 1.5× as fast", "the others are ahead"):
        assert COMPARISON.search(s), s
    for s in ("a 128×128 tile", "2 × 128 × 128 FLOP", "the cell below", "SMs × 4096 × SM clock"):
        assert not COMPARISON.search(s), s


def test_comparisons_of_measurements_are_guarded():
    problems, used = [], set()
    for src in SOURCES:
        p, u = _comparison_findings(src)
        problems += p
        used |= u
    assert not problems, ("sentences compare numbers without a guard: follow the markdown cell with "
                          "a code cell that asserts them or prints them with notebook.claim, or "
                          "allow-list them with a reason:\n" + "\n".join(problems))
    stale = [ALLOWED[k] for k in range(len(ALLOWED)) if k not in used]
    assert not stale, f"allow-list entries that match no sentence any more: {stale}"


def test_claim_prints_or_raises_with_the_numbers(capsys):
    from asynctc.core import notebook
    assert notebook.claim(2 > 1, "two beats one", a=2.0) == "two beats one"
    assert capsys.readouterr().out == "two beats one\n"
    with pytest.raises(notebook.ClaimError, match=r"one beats two.*a=1.*b=2"):
        notebook.claim(1 > 2, "one beats two", a=1, b=2.0)


# --------------------------------------------------------------------------------------------------
# 2. Listings render and show what they are about
# --------------------------------------------------------------------------------------------------

#: Every show_source call in the chapters: (chapter, start pattern) → (fewest lines, what it must
#: contain). A new listing must be added here, with what it is about.
LISTINGS = {
    # the consumers' loop as the correct build compiles it, less the line that is exercise 2's
    # answer (printed after it, as the diff of BUG=8), with no mark where it was: its place is asked too
    ("08", r"^  // ---- consumer warpgroup"): (
        30, r"(?s)wait_or_record\(smem_u32\(&full[^\n]*\n    named_barrier_sync.*tma_store_2d.*line left out, not marked where it was"),
    ("09", r"if \(lane == 0 && leader\) \{"): (20, r"(?s)tcgen05_mma_f16.*tcgen05_commit<1>\(smem_u32\(&empty_bar"),
    ("09b", r"^          const u32 a = t & 1u;$"): (
        25, r"acc_empty\[a\][\s\S]*tcgen05_mma_mxf8f6f4[\s\S]*tcgen05_commit_multicast"),
    # after exercise 2: promote in that build (fp8_promote.cuh with PROMOTE = 1 resolved)
    ("07", r"promote\(acc, tot"): (15, r"(?s)void promote.*wgmma_wait_group<0>.*tot\[i\]\[j\] \+= "
                                       r"acc\[i\]\[j\];.*this build: PROMOTE=1"),
    ("01", r"for \(int kt = 0; kt < KT"): (30, r"(?s)mma_ktile.*ldmatrix_x4\(.*mma_sync_m16n8k16<DT>\("
                                                  r".*mma\.sync\.aligned\.m16n8k16"),
    ("01b", r"^__device__ __forceinline__ void load_fragments"): (8, r"ldmatrix"),
    ("01b", r"^template <bool kLoad = true>"): (8, r"mma_sync_m16n8k16"),
    ("01b", r"^template <>"): (5, r"mma\.sync\.aligned\.m16n8k16"),
    ("02", r"^// 16 bytes global -> shared, L2 only"): (4, r"cp\.async\.cg\.shared\.global"),
    ("02b", r"^template <int kN>"): (3, r"cp\.async\.wait_group"),
    ("02", r"// Prologue: k-tiles 0"): (10, r"cp_async_wait_group"),
    ("02b", r"smem_copy_async\(const"): (10, r"cp_async"),
    # the TMA store of the copy kernel (moved from the core lesson): the store, its bulk group, the wait
    ("03b", r"^    tma_store_2d\(dst,"): (8, r"tma_store_2d[\s\S]*bulk_commit_group[\s\S]*"
                                              r"bulk_wait_group_read[\s\S]*cp\.async\.bulk\.wait_group\.read"),
    # the load path: the tensor map as a parameter, init + fence, expect_tx, the copy, the wait;
    # with the PTX of each wrapper and the bounded try_wait loop: one listing, 25–45 lines
    ("03b", r'^extern "C" __global__ void tma_load_dump'): (
        25, r"__grid_constant__ TmaDesc tmap[\s\S]*mbarrier_init[\s\S]*fence_mbarrier_init[\s\S]*"
            r"mbarrier_arrive_expect_tx[\s\S]*tma_load_rank[\s\S]*mbarrier_wait_parity_bounded[\s\S]*"
            r"mbarrier\.init\.shared[\s\S]*cp\.async\.bulk\.tensor\.2d[\s\S]*mbarrier\.try_wait\.parity"
            r"[\s\S]*for \(u32 i = 1; i < max_tries[\s\S]*atomicCAS"),
    # 03's excerpt of it: the proxy fence, expect_tx, the copy, the bounded wait (the PTX: 03b's)
    ("03", r"^  fence_proxy_async_shared_cta\(\);   // the sentinel"): (
        7, r"fence_proxy_async_shared_cta[\s\S]*mbarrier_arrive_expect_tx[\s\S]*tma_load_rank[\s\S]*"
            r"mbarrier_wait_parity_bounded"),
    # the kernel's loop and the PTX of fence/commit/wait (the wgmma line itself: show_ptx, after it)
    ("04", r"  // fence \(the registers were written above\)"): (
        15, r"wgmma_mma_async_ss[\s\S]*wgmma\.fence\.sync\.aligned[\s\S]*wgmma\.commit_group[\s\S]*"
            r"wgmma\.wait_group\.sync\.aligned kPending"),
    # its k-loop first: set-up, prologue and epilogue folded to a line each, the refill step left out
    ("05", r'^extern "C" __global__ void'): (25, r"(?s)set-up: .*prologue: .*for \(int k = 0; k < T.*"
                                                 r"full\.wait.*mma_ktile.*empty\.arrive.*exercise 2.*epilogue: "),
    # deep dive 06e §2: both roles of rung 3's build, its variant switches resolved, less the
    # consumers' loop body (the exercise's answer, printed after it) and the producer's k-tile (05 ex. 2, 06 ex. 1)
    ("06e", r"^  if \(wg == 0\) \{"): (40, r"setmaxnreg_dec[\s\S]*lines left out: the producer's k-tile"
                                         r"[\s\S]*lines left out: the exercise[\s\S]*wgmma_wait_group<0>"
                                         r"[\s\S]*store_c\(res"),
    # (06 §4 walks the whole kernel part by part through show_kernel_part: tests/test_whole_gemm.py)
    ("06b", r"^__device__ __forceinline__ void load_stage"): (8, r"mbarrier_arrive_expect_tx[\s\S]*"
                                                                  r"tma_load_2d_multicast"),
    # rung 8's producer, its k-tile left out: 05's exercise 2 and the capstone's producer (W.PRODUCER_LINES)
    ("06b", r"^    // ---------------- producer warpgroup"): (12, r"setmaxnreg_dec[\s\S]*RingState"
                                                                r"[\s\S]*lines left out: the producer's k-tile"),
    ("07d", r"^// This k-tile's scale products"): (8, r"sb\[[\s\S]*sa\[[\s\S]*\* sbk"),
    ("07d", r"// promotion into fp32 registers"): (10, r"wgmma_wait_group<0>[\s\S]*"
                                                      r"__fmaf_rn\(acc\[i\]\[j\], bs\[i\]"),
    # rung 8's consumers, their k-loop left out: it is deep dive 06e's exercise (ch06.consumer_loop)
    ("06b", r"^    // ---------------- consumer warpgroups"): (35, r"setmaxnreg_inc[\s\S]*"
                                                                 r"lines left out: the exercise"
                                                                 r"[\s\S]*empty\.arrive\(prev\)"
                                                                 r"[\s\S]*store_c_tma\(res"),
}

_NAMESPACE_MODULES = ("mma_sync", "cp_async", "tma", "wgmma", "wgmma_peak", "simt", "fp8")


def test_05c_listing_shows_only_what_05s_skeleton_folded():
    """05c §2 prints the lines 05 §2's skeleton folded (set-up, prologue, epilogue), then
    load_stage, RingState, mma_ktile and the wrappers' PTX: not the k-loop again."""
    import nbformat
    nb = nbformat.read(ROOT / "notebooks" / "solutions" / "05c_pipeline_variants.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "left_out=True" in c.source)
    text = "".join(o.get("text", "") for o in cell.outputs)
    assert re.search(r"mbarrier_init\(full\[s\], 1\)[\s\S]*load_stage\(ta, tb, base \+ kt[\s\S]*store_c\("
                     r"[\s\S]*void load_stage[\s\S]*phase \^= 1u[\s\S]*void mma_ktile[\s\S]*"
                     r"cp\.async\.bulk\.tensor\.2d[\s\S]*wgmma\.wait_group\.sync\.aligned kPending;", text)
    assert "for (int k = 0; k < T" not in text and "full.wait(pos.stage" not in text


def _show_source_calls(src: Path):
    """(cell index, call node, cell tree, earlier code) for every notebook.show_source call."""
    cells = _cells(src)
    earlier = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "show_source":
                yield i, node, tree, list(earlier) + [tree]
        earlier.append(tree)


def _resolve_target(node: ast.expr, earlier):
    if isinstance(node, ast.Constant):
        return node.value
    assert isinstance(node, (ast.Name, ast.Attribute)), ast.dump(node)
    value = node if isinstance(node, ast.Attribute) else None      # W.NAME: the package's value
    for tree in earlier if isinstance(node, ast.Name) else ():
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id
                                                    for t in stmt.targets):
                value = stmt.value
    assert value is not None, f"{ast.unparse(node)}: not assigned in an earlier cell"
    import asynctc
    ns = {m: __import__(f"asynctc.{m}", fromlist=[m]) for m in _NAMESPACE_MODULES}
    ns["asynctc"] = asynctc
    ns["W"] = __import__("asynctc.warp_specialization", fromlist=["W"])   # chapter 06's alias
    ns["pl"] = __import__("asynctc.pipeline", fromlist=["pl"])            # chapter 05's alias
    ns["F"] = __import__("asynctc.pitfalls", fromlist=["F"])              # chapter 08's alias
    return eval(compile(ast.Expression(value), "<notebook>", "eval"), ns)   # noqa: S307 - our own source


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_listings_render_and_show_their_lines(src):
    from asynctc.core import notebook
    chapter = src.name.split("_")[0]          # "09", or a deep dive's "09b"
    seen = 0
    for i, call, tree, earlier in _show_source_calls(src):
        seen += 1
        last = tree.body[-1]
        renders = (isinstance(last, ast.Expr) and last.value is call) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "display"
            and call in n.args for n in ast.walk(tree))
        assert renders, (f"{src.name} cell {i}: a show_source call that is not the cell's last "
                         "expression (nor inside display()) never renders")
        kw = {k.arg: _resolve_target(k.value, earlier) if isinstance(k.value, (ast.Name, ast.Attribute))
              else ast.literal_eval(k.value) for k in call.keywords}      # omit=W.LOOP_LINES
        args = [ast.literal_eval(a) for a in call.args[1:]]
        start = kw.get("start", args[0] if args else None)
        end = kw.get("end", args[1] if len(args) > 1 else None)
        key = (chapter, start)
        assert key in LISTINGS, f"{src.name} cell {i}: listing {start!r} is not in LISTINGS (say what it shows)"
        min_lines, must = LISTINGS[key]
        text = notebook.source_excerpt(_resolve_target(call.args[0], earlier), start, end,
                                       hooks=kw.get("hooks", False), omit=kw.get("omit"),
                                       comments=kw.get("comments", ()),
                                       variant=kw.get("variant", False),
                                       ptx=kw.get("ptx", ()), more=kw.get("more", ()),
                                       ptx_last=kw.get("ptx_last", False))   # what the cell shows
        n = len(text.splitlines())
        assert n >= min_lines, f"{src.name} cell {i}: listing {start!r} shows only {n} lines"
        assert re.search(must, text), f"{src.name} cell {i}: listing {start!r} lacks {must!r}"
    expected = sum(1 for ch, _ in LISTINGS if ch == chapter)
    assert seen == expected, f"{src.name}: {seen} listings, LISTINGS names {expected}"


def test_ptx_instructions_read_each_wrappers_asm_with_its_operands_named():
    from asynctc.core import notebook
    rows = dict(l.split(None, 1) for l in notebook.ptx_instructions(
        "mbarrier_init", "mbarrier_try_wait_parity", "tma_load_2d", "wgmma_wait_group").splitlines()[1:])
    assert rows["mbarrier_init"] == "mbarrier.init.shared::cta.b64 [bar], count;"
    assert rows["mbarrier_try_wait_parity"] == "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [bar], parity;"
    assert rows["tma_load_2d"].endswith("[dst], [tma_desc_addr(d), {c0, c1}], [bar];")
    assert rows["wgmma_wait_group"] == "wgmma.wait_group.sync.aligned kPending;"


def test_ptx_instructions_read_a_macro_built_wrappers_instruction():
    """wgmma_mma_async_ss calls Wgmma<kN>::ss, which WGMMA_DEFINE_N defines and whose asm WGMMA_ASM
    writes: its row is that macro expanded, the parts that vary between its uses as <PARAM>."""
    from asynctc.core import notebook
    rows = dict(l.split(None, 1) for l in notebook.ptx_instructions(
        "wgmma_mma_async_ss", "wgmma_fence").splitlines()[1:])
    assert rows["wgmma_mma_async_ss"] == \
        "wgmma.mma_async.sync.aligned.<SHAPE><TYPES> {<DL>}, <AOP>, <BOP>, p<TAIL>;"
    assert rows["wgmma_fence"] == "wgmma.fence.sync.aligned;"       # a plain wrapper reads as before


def test_ptx_instructions_name_what_they_cannot_read():
    from asynctc.core import notebook
    with pytest.raises(ValueError, match=r"'mbarrier_nope': no wrapper of that name in kernels/ptx/\*\.cuh "
                                         r"\(.*mbarrier\.cuh.*\)"):
        notebook.ptx_instructions("mbarrier_nope")
    with pytest.raises(ValueError, match=r"'smem_u32' \(common\.cuh\): no asm statement found"):
        notebook.ptx_instructions("smem_u32")                    # C++ only: no asm anywhere below it


@pytest.mark.parametrize("dtype, n", [("float16", 64), ("bfloat16", 128)])
def test_show_ptx_prints_a_complete_wgmma_line_of_the_build(dtype, n):
    """NVRTC's PTX of the wgmma tile kernel, compiled on the CPU: fence, the k-steps' wgmma lines,
    commit and wait; the first wgmma whole — the build's shape and types, N/2 accumulators, two
    descriptors, scale-d and the four immediates — the later ones cut to their first and last
    register."""
    from asynctc import wgmma
    from asynctc.core import notebook
    ck = wgmma.compile_tile(wgmma.TileConfig(dtype, n))
    text = notebook.ptx_listing(ck)
    assert text.splitlines()[0].startswith(f"// {ck.name} (wgmma.cu, sm_90a): the PTX NVRTC")
    assert notebook.show_ptx(ck).data == text
    body = text.split("\n", 1)[1]
    first = body[body.index("wgmma.mma_async"):body.index(";", body.index("wgmma.mma_async")) + 1]
    t = "bf16" if dtype == "bfloat16" else "f16"
    assert first.startswith(f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{")
    regs = first[first.index("{") + 1:first.index("}")].split(",")
    assert len(regs) == n // 2 and all(r.strip().startswith("%f") for r in regs)
    assert re.search(r"\}, %rd\d+, %rd\d+, p, 1, 1, 0, 0;$", first)
    assert max(len(ln) for ln in first.splitlines()) <= 96
    ops = [ln.split()[0] for ln in body.splitlines() if ln.startswith("wgmma.")]
    assert ops == ["wgmma.fence.sync.aligned;"] + [ops[1]] * 4 + ["wgmma.commit_group.sync.aligned;",
                                                                  "wgmma.wait_group.sync.aligned"]
    assert body.count(f"// {n // 2} registers") == 3
    with pytest.raises(ValueError, match="no entry named"):
        from asynctc.core import sass
        sass.ptx_excerpt(ck.ptx(), "no_such_kernel")


def test_one_listing_may_add_the_ptx_and_more_files():
    from asynctc.core import notebook
    text = notebook.source_excerpt("ptx/mma.cuh", start=r"^template <>", end=r"^}", ptx=("mbarrier_init",),
                                   more=(("ptx/fence.cuh", r"void fence_proxy_async_shared_cta", r"^}"),))
    lines = text.splitlines()
    assert lines[0].startswith("template <>")
    at = lines.index("// ---- the PTX instruction each wrapper issues (kernels/ptx/*.cuh)")
    assert lines[at + 1].split() == ["//", "mbarrier_init", "mbarrier.init.shared::cta.b64", "[bar],", "count;"]
    at = lines.index("// ---- kernels/ptx/fence.cuh")
    assert "fence_proxy_async_shared_cta" in lines[at + 1] and lines[-1] == "}"
    last = notebook.source_excerpt("ptx/mma.cuh", start=r"^template <>", end=r"^}", ptx=("mbarrier_init",),
                                   more=(("ptx/fence.cuh", r"void fence_proxy_async_shared_cta", r"^}"),),
                                   ptx_last=True).splitlines()
    assert sorted(last) == sorted(lines)                          # the same lines, the PTX table last
    assert last.index("// ---- kernels/ptx/fence.cuh") < last.index(
        "// ---- the PTX instruction each wrapper issues (kernels/ptx/*.cuh)") == len(last) - 2


def test_omit_leaves_out_several_ranges_and_left_out_prints_only_them():
    """omit: one triple or several, each looked for after the one before; the note sits at the
    indent of the code it hides, says "1 line" or "n lines"; left_out=True returns just those lines
    (dedented together, `// ...` between runs) — chapter 06 prints them after its exercise 1."""
    from asynctc.core import notebook
    whole = notebook.source_excerpt("ring.cuh", start=r"^template <int kStages>", end=r"^};")
    one = (r"^    if \(\+\+stage", r"^    \}", "the wrap")
    two = (r"^  int stage;", r"^  int stage;", "a field")
    text = notebook.source_excerpt("ring.cuh", start=r"^template <int kStages>", end=r"^};",
                                   omit=(two, one))
    assert "  // (1 line left out: a field)" in text.splitlines()
    assert "    // (4 lines left out: the wrap)" in text.splitlines() and "phase ^= 1u" not in text
    assert len(text.splitlines()) == len(whole.splitlines()) - 3
    gone = notebook.source_excerpt("ring.cuh", start=r"^template <int kStages>", end=r"^};",
                                   omit=(two, one), left_out=True).splitlines()
    assert gone[0] == "int stage;   // i mod S" and gone[1] == "// ..." and gone[2].startswith("  if (++stage")
    assert gone[-1] == "  }" and len(gone) == 6
    with pytest.raises(ValueError, match="no lines of the excerpt match"):
        notebook.source_excerpt("ring.cuh", start=r"^template <int kStages>", end=r"^};", omit=(one, two))
    with pytest.raises(ValueError, match="give omit"):
        notebook.source_excerpt("ring.cuh", left_out=True)


def test_an_unmarked_omit_leaves_no_mark_where_the_line_was():
    """Chapter 08's exercise 2 asks which step goes where; readers found the place in §2's listing,
    where the left-out line's comment stood. An ``"unmarked"`` range leaves the line out with no
    mark at its place: one line at the end of the listing says a line is missing and why."""
    from asynctc.core import notebook
    note = "§6's exercise 2 asks which step it is and where it goes"
    rng = (r"^    if \(tid == 0\) b\w+<0>", r"<0>", note, "unmarked")
    kw = dict(start=r"^  // ---- consumer warpgroup", end=r"^  \}$")
    whole = notebook.source_excerpt("pitfalls.cu", **kw).splitlines()
    lines = notebook.source_excerpt("pitfalls.cu", omit=(rng,), **kw).splitlines()
    assert lines[-1] == ("// (1 line left out, not marked where it was: §6's exercise 2 asks which step it is "
                         "and where it goes)")
    assert lines[:-1] == [ln for ln in whole if "bulk_wait_group_read<0>" not in ln] and len(lines) == len(whole)
    from asynctc.pitfalls import exercises as ex08
    src = (ROOT / "notebooks" / "src" / "08_pitfalls.py").read_text()
    assert ex08.LISTING_OMIT[0] == rng and "omit=F.exercises.LISTING_OMIT" in src
    assert "tid == 0" not in src          # reader 114: the pattern in the notebook named who issues the step


def test_source_excerpt_includes_start_and_end():
    from asynctc.core import notebook
    text = notebook.source_excerpt("ptx/mma.cuh", start=r"^template <>", end=r"^}")
    lines = text.splitlines()
    assert lines[0].startswith("template <>") and lines[-1] == "}" and len(lines) > 3


# --------------------------------------------------------------------------------------------------
# 3. Figures render inline; markers become tags; no stray outputs
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_first_code_cell_calls_banner(src):
    first = next(c for c in _cells(src) if c.cell_type == "code")
    assert "notebook.banner(" in first.source, f"{src.name}: the first code cell must call notebook.banner"


def test_figures_render_inline_even_with_agg(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nfrom asynctc.core import notebook\n"
                                  "notebook.banner('sm_90a')"),
        nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.plot([1, 2, 3]);")])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    images = [o for o in nb.cells[1].outputs if "image/png" in o.get("data", {})]
    assert images, f"no figure in the executed cell with MPLBACKEND=Agg: {nb.cells[1].outputs}"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_markers_become_nbval_tags(src):
    text = src.read_text()
    assert "NBVAL_IGNORE_OUTPUT" not in text, f"{src.name}: use the '# %% output varies' marker"
    cells = _cells(src)
    answers = len(re.findall(r"^# %% (?:check, )?output answers a prediction\n", text, re.M))   # nbval-ignore-output
    answer_texts = len(re.findall(r"^# %% (?:answer \[markdown\]|\[markdown\] answer)$", text, re.M))
    # jupytext metadata may follow a marker
    varies = len(re.findall(r"^# %% (?:check, )?output varies(?:\n| tags=)", text, re.M))
    checks = len(re.findall(r"^# %% check(?:, output varies|, output answers a prediction)?(?:\n| tags=)", text, re.M))
    assert sum(_tagged(c) for c in cells) == varies + answers
    assert sum("answer" in c.metadata.get("tags", []) for c in cells if c.cell_type == "code") == answers
    assert sum("answer" in c.metadata.get("tags", []) for c in cells if c.cell_type == "markdown") == answer_texts
    assert sum("check" in c.metadata.get("tags", []) for c in cells) == checks
    assert not any("title" in c.metadata for c in cells)


def _build_source(tmp_path, text):
    src = tmp_path / "99_markers.py"
    src.write_text(text)
    return _build_module().to_notebook(src).cells


def test_a_check_cell_is_tagged_collapsed_and_guards_like_any_cell(tmp_path):
    """``# %% check``: tag ``check``, code collapsed in JupyterLab (outputs shown), a guard for the
    prose test as the same code in an ordinary cell; ``# %% check, output varies`` adds nbval's tag."""
    cells = _build_source(tmp_path, (
        '# %%\nx = 2\nprint(x)\n\n'
        '# %% check\nnotebook.require(x > 1, "two beats one", x=x)\n\n'
        '# %% check, output varies\nnotebook.claim(x > 1, "two beats one", x=x)\n\n'
        '# %% check, output answers a prediction\nnotebook.claim(x > 1, "two beats one", x=x)\n\n'
        '# %%\nnotebook.require(x > 1, "two beats one", x=x)\n'))
    plain, check, check_varies, check_answers, ordinary = cells
    assert sorted(check_answers.metadata["tags"]) == ["answer", "check", "nbval-ignore-output"]
    from asynctc.teaching import builds     # the learner copy stores no output for it
    assert builds.ANSWER_TAG in check_answers.metadata["tags"]
    assert "check" not in plain.metadata.get("tags", []) and "jupyter" not in plain.metadata
    assert check.metadata["tags"] == ["check"]
    assert check.metadata["jupyter"] == {"source_hidden": True}
    assert check_varies.metadata["tags"] == ["check", "nbval-ignore-output"]
    assert check_varies.metadata["jupyter"] == {"source_hidden": True}
    assert _guard(check) and _guard(check_varies) and _guard(ordinary)
    for bad in ("# %% output varies, check\nx = 1\n", "# %% output answers a prediction, check\nx = 1\n",
                "# %% [markdown] check\n# text\n"):
        with pytest.raises(SystemExit, match="unknown cell marker"):
            _build_source(tmp_path, bad)


def test_an_answer_markdown_cell_is_folded_in_the_learner_copy(tmp_path):
    """``# %% answer [markdown]`` (jupytext's spelling; ``# %% [markdown] answer`` reads the same):
    tag ``answer``; the solution notebook keeps the text as written, the learner copy folds it in a
    closed <details> whose summary says when to open it, and adds no "output left out" note."""
    from asynctc.teaching import builds
    nbformat = pytest.importorskip("nbformat")
    text = ('# %% [markdown]\n# Predict: is two more than one?\n\n# %% output answers a prediction\nprint(2)\n\n'
            '# %% answer [markdown]\n# **So:** two is more than one.\n#\n# - by one\n\n'
            '# %% [markdown] answer\n# A second answer.\n\n# %%\nassert 2 > 1\n\n# %% [markdown]\n# Plain.\n')
    cells = _build_source(tmp_path, text)
    ask, shown, so, second, guard, plain = cells
    assert so.metadata["tags"] == ["answer"] and second.metadata["tags"] == ["answer"]
    assert "tags" not in plain.metadata and so.source == "**So:** two is more than one.\n\n- by one"
    assert shown.metadata["tags"] == ["answer", "nbval-ignore-output"]
    shown.outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    nb = nbformat.v4.new_notebook(cells=cells)
    learner = builds.learner_copy(nb)
    assert so.source == "**So:** two is more than one.\n\n- by one"          # the solution copy: unchanged
    by_id = {c.get("id"): c for c in learner.cells}
    folded = by_id[so.id].source
    assert folded == ("<details><summary>Tried it? Open this after running the cell above.</summary>\n\n"
                      "**So:** two is more than one.\n\n- by one\n\n</details>")
    assert by_id[second.id].source.endswith("\n\nA second answer.\n\n</details>")
    assert by_id[plain.id].source == "Plain." and by_id[shown.id].outputs == []
    notes = [c for c in learner.cells if "answer-note" in c.metadata.get("tags", [])]
    assert len(notes) == 1 and learner.cells.index(notes[0]) == 1      # only the question's note
    # a guard after a folded sentence still counts: the prose test reads the solution's cells
    assert _guard(cells[cells.index(so) + 2])


def test_an_answer_markdown_cell_holds_no_heading(tmp_path):
    """A heading inside a folded answer would end the fold on the slides: the build refuses it
    (a heading in a code fence is code, not a heading)."""
    for bad in ("# %% answer [markdown]\n# ## 3. Next\n# text\n", "# %% [markdown] answer\n# text\n#\n# # Title\n"):
        with pytest.raises(SystemExit, match="a heading in an answer markdown cell"):
            _build_source(tmp_path, bad)
    cells = _build_source(tmp_path, "# %% answer [markdown]\n# ```\n# # a comment\n# ```\n# #5 is no heading\n")
    assert cells[0].metadata["tags"] == ["answer"]
    with pytest.raises(SystemExit, match="unknown cell marker"):
        _build_source(tmp_path, "# %% output answers a prediction [markdown]\n# text\n")


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_check_cells_hold_guards(src):
    """A ``# %% check`` cell is collapsed: it holds guards, not lines a reader needs."""
    bad = [i for i, c in enumerate(_cells(src)) if "check" in c.metadata.get("tags", []) and not _guard(c)]
    assert not bad, f"{src.name}: check cells {bad} hold no guard (assert, notebook.require, notebook.claim)"


_MPL_RETURNS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "legend", "text", "annotate",
                "axhline", "axvline", "plot", "bar", "barh", "imshow", "colorbar", "set_xticks",
                "set_yticks", "set_ylim", "set_xlim", "grid", "scatter"}


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_no_cell_ends_in_a_bare_matplotlib_call(src):
    for i, cell in enumerate(_cells(src)):
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) \
                and isinstance(last.value.func, ast.Attribute) and last.value.func.attr in _MPL_RETURNS:
            bare = not cell.source.rstrip().endswith(";")
            assert not bare, (f"{src.name} cell {i}: ends in .{last.value.func.attr}(...), which prints "
                              "a Text/Artist repr; end with plt.show() or a ';'")


# --------------------------------------------------------------------------------------------------
# 4. Cells that print numbers from a record are not compared by nbval
# --------------------------------------------------------------------------------------------------

_RECORD_SOURCES = {"load_or_measure", "load"}
_PRINTERS = {"print", "claim", "check", "display", "summarize_ceilings", "summarize_mma_sync",
             "summarize_cp_async", "summarize_tma_copy", "summarize_wgmma"}


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _record_names(trees) -> set[str]:
    """Names bound, anywhere in the notebook, to a record or to something computed from one."""
    tainted: set[str] = set()
    changed = True
    while changed:
        changed = False
        for tree in trees:
            for node in ast.walk(tree):
                # (comprehension variables are local to their comprehension: the comprehension's
                # own iterable already names the record value it prints)
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
                    value = node.iter if isinstance(node, ast.For) else node.value
                    if value is None:
                        continue
                    from_record = any(isinstance(n, ast.Attribute) and n.attr in _RECORD_SOURCES
                                      and isinstance(n.value, ast.Name) and n.value.id == "records"
                                      for n in ast.walk(value)) or bool(_names(value) & tainted)
                    if not from_record:
                        continue
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    new = set().union(*(_names(t) for t in targets)) - tainted
                    if new:
                        tainted |= new
                        changed = True
    return tainted


def _prints_record_value(arg, tainted) -> bool:
    if isinstance(arg, (ast.Compare, ast.BoolOp)) or (isinstance(arg, ast.UnaryOp)
                                                        and isinstance(arg.op, ast.Not)):
        return False                                  # a yes/no the asserts above pin down
    if isinstance(arg, ast.JoinedStr):
        return any(_prints_record_value(v.value, tainted) for v in arg.values
                   if isinstance(v, ast.FormattedValue))
    return bool(_names(arg) & tainted)


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_cells_printing_record_values_are_tagged(src):
    cells = _cells(src)
    trees = [ast.parse(c.source) for c in cells if c.cell_type == "code"]
    tainted = _record_names(trees)
    bad = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "code" or _tagged(cell):
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in _PRINTERS and any(_prints_record_value(a, tainted)
                                       for a in list(node.args) + [k.value for k in node.keywords]):
                bad.append(f"cell {i}: {ast.unparse(node)[:100]}")
    assert not bad, (f"{src.name}: cells print values from a record but nbval compares them (a live "
                     "run differs): mark them '# %% output varies'\n" + "\n".join(bad))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_listing_whose_end_marker_vanished_fails():
    """A listing's end marker that no longer exists (moved to a header, say) must fail loudly, not
    show the rest of the file."""
    from asynctc.core import notebook
    with pytest.raises(ValueError, match="end="):
        notebook.source_excerpt("pipeline.cu", start=r"^// ---- the producer's half",
                                end=r"^// a marker that is not in the file$")


# --------------------------------------------------------------------------------------------------
# 5. The kind of a measured clock comes from the record (issue 9: the in-flight clock)
# --------------------------------------------------------------------------------------------------

#: Words that say how a GEMM's SM clock was measured, or the caveat of one kind. In code they would
#: be true of one kind of record only: a cell prints them from the row (bench.clock_kind,
#: rows_clock_kind, clock_text, peak_text, clock_caveat, CLOCK_KINDS). ("in flight" alone is left
#: out: chapters 02, 03 and 05 count copies and wgmmas in flight.)
CLOCK_WORDS_CODE = re.compile(
    r"probed (?:right )?after|after (?:each|the) (?:timed )?samples?|the probe after|"
    r"in-flight (?:probe|clock)|(?:probe|clock) in flight|upper bound|lower bound", re.IGNORECASE)
#: In markdown the after-sample probe and its caveat are described once, in chapter 00's definition
#: of the kinds; other chapters refer back to it, so that their prose holds for either kind of record.
CLOCK_WORDS_MARKDOWN = re.compile(
    r"probed (?:right )?after|after (?:each|the) (?:timed )?samples?|upper bound on the clock|"
    r"lower bound", re.IGNORECASE)


def _is_clock_definition(chapter: str, cell) -> bool:
    """Chapter 00 §2 (defines the kind it prints, links 00b for the others) or deep dive 00b's table."""
    return chapter == "00" and cell.cell_type == "markdown" and "**in flight**" in cell.source \
        and ("**probed after the sample**" in cell.source or "(00b_clock_kinds.ipynb)" in cell.source)


def _hard_coded_clock_words(src: Path) -> list[str]:
    out = []
    for i, cell in enumerate(_cells(src)):
        rx = CLOCK_WORDS_CODE if cell.cell_type == "code" else CLOCK_WORDS_MARKDOWN
        if _is_clock_definition(src.name[:2], cell):
            continue
        out += [f"{src.name} cell {i} ({cell.cell_type}): {m.group(0)!r}" for m in rx.finditer(cell.source)]
    return out


def test_clock_word_patterns_find_what_they_should():
    for s in ('print("clock probed after each sample")', "# the clock probed right after the samples",
              'label="(probed after the sample; upper bound)"', "at the in-flight clock",
              'f"the probe after the timed samples read {x}"'):
        assert CLOCK_WORDS_CODE.search(s), s
    for s in ('print(f"{bench.clock_text(row)}")', "copies in flight", "groups may stay in flight"):
        assert not CLOCK_WORDS_CODE.search(s), s
    assert CLOCK_WORDS_MARKDOWN.search("their clock is *probed after each sample* — an upper bound")
    assert not CLOCK_WORDS_MARKDOWN.search("an upper bound of the group's end")


def test_no_hard_coded_clock_kind_in_notebook_sources():
    found = [f for src in SOURCES for f in _hard_coded_clock_words(src)]
    assert not found, ("words for how a clock was measured, typed into a notebook: print them from the "
                       "row (bench.clock_kind / rows_clock_kind / clock_text / peak_text / "
                       "clock_caveat), or refer to chapter 00, section 2:\n" + "\n".join(found))


def test_chapter_00_defines_every_kind_of_clock():
    """Chapter 00 §2, where a measured clock is first printed, defines the kind it prints (in flight)
    and leaves the other two to deep dive 00b (reader 18), with no table (the second fresh reader met "in
    flight" printed in every chapter, defined only in a deep dive; the fourth found a table of all
    three kinds in §2 before any was needed). Deep dive 00b defines them in full in one markdown
    cell (a table, then each in detail) followed by the asserted check of the in-flight probe."""
    from asynctc.core import bench
    cells = _cells(ROOT / "notebooks" / "src" / "00b_clock_kinds.py")
    defs = [c for c in cells if _is_clock_definition("00", c)]
    assert len(defs) == 1, "00b_clock_kinds.py must define the kinds of clock in one markdown cell"
    for kind in bench.CLOCK_KINDS[:3]:             # the fourth, "clock of unknown source", is not a method
        assert f"**{kind}**" in defs[0].source, kind
    nxt = cells[cells.index(defs[0]) + 1]          # followed by the check of the in-flight probe, asserted
    assert "INFLIGHT_CHECK" in nxt.source and _guard(nxt)
    core = [c for c in _cells(ROOT / "notebooks" / "src" / "00_why_async.py") if c.cell_type == "markdown"]
    section2 = next(c for c in core if c.source.startswith("## 2."))
    assert "00b_clock_kinds.ipynb" in section2.source, "the core lesson links the deep dive"
    assert [c for c in core if _is_clock_definition("00", c)] == [section2], "00's kinds: in §2 only"
    assert "**in flight**" in section2.source, "§2 defines the kind its cuBLAS rows print"
    for kind in bench.CLOCK_KINDS[:3]:
        if kind != "in flight":           # one sentence, linking 00b: reader 18 met three kinds too soon
            assert kind not in section2.source, f"§2 leaves {kind!r} to 00b and the glossary"
    assert not any(line.startswith("| **") for line in section2.source.splitlines()), \
        "no table of the kinds in the core lesson (00b has it)"


def test_expert_reading_corrections_stay_corrected():
    """Issue 23's statements: TMEM is per SM and shared by its resident CTAs (09 §1, §4; the model's
    docstring); tcgen05.fence::before/after_thread_sync is not wgmma.fence's counterpart (09 §8's
    table); a 256×256 fp32 accumulator fails on the register file, not on 255 registers per thread
    (06d §2); FP8's 2× is a ceiling (07); one thread's arrival after wait_group is CUTLASS's
    convention, not a PTX rule (05, 06); the CUTLASS map is in 05's deep dive 05c and in 06 (06b §4)."""
    from asynctc.models import tcgen05, tmem
    text = {n: (ROOT / "notebooks" / "src" / n).read_text() for n in
            ("05_pipelines.py", "05c_pipeline_variants.py", "06_warp_specialization.py", "07_fp8_precision.py",
             "09_blackwell.py")}
    # chapter 06 is its core lesson and its deep dives (06b, 06c, 06d): the text moved between them
    text["06_warp_specialization.py"] = "\n".join(
        p.read_text() for p in sorted((ROOT / "notebooks" / "src").glob("06*_*.py")))
    nb09 = text["09_blackwell.py"]
    assert "per CTA, addressed" not in nb09 and "512 columns a CTA has" not in nb09
    assert nb09.count("**per SM**") >= 2 and "shared by the CTAs resident" in nb09
    assert "shared by the" in tmem.__doc__ and "Each CTA of an sm_100 SM sees" not in tmem.__doc__
    fence = next(r for r in tcgen05.MIGRATION if r[1] == "wgmma.fence")
    assert "tcgen05.fence" not in fence[3]
    sync = next(r for r in tcgen05.MIGRATION if "thread_sync" in r[3])
    assert sync[1] == "—"
    assert "a different job" in nb09 and "65536 values" in nb09
    nb06 = text["06_warp_specialization.py"]
    assert "a thread has at most 255 registers" not in nb06
    assert "the SM's whole register file" in nb06
    assert "**ceiling**" in text["07_fp8_precision.py"]
    for n in ("05_pipelines.py", "06_warp_specialization.py"):
        assert "not a rule the PTX ISA text states" in text[n], n
    for n in ("05c_pipeline_variants.py", "06_warp_specialization.py"):
        assert "From this chapter's names to CUTLASS's" in text[n], n
    for name in ("PipelineTmaAsync", "producer_acquire", "producer_commit", "consumer_wait",
                 "consumer_release", "PipelineState", "ClusterBarrier", "make_gmma_desc",
                 "elect_one_sync"):
        assert re.search(rf"`(?:cute::)?{name}", text["05c_pipeline_variants.py"]), name
    for name in ("KernelTmaWarpSpecializedCooperative", "KernelTmaWarpSpecializedPingpong",
                 "FP8FastAccum", "mma_promotion_interval"):
        assert name in nb06, name


def test_a_check_cell_right_after_the_printing_cell_guards_the_sentence(tmp_path):
    """A comparing sentence is guarded by the code cell after it, or by a ``# %% check`` cell right
    after that code cell; a check cell anywhere else guards nothing."""
    body = ('# %% [markdown]\n# Ours is faster than theirs.\n\n# %%\nprint(1)\n\n'
            '# %% check\nnotebook.require(True, "faster")\n')
    src = tmp_path / "99_x.py"
    src.write_text(body)
    assert _comparison_findings(src)[0] == []
    src.write_text(body.replace("# %% check\n", "# %%\n"))            # an ordinary cell two away: not a guard
    assert _comparison_findings(src)[0] != []
    src.write_text('# %% [markdown]\n# Ours is faster than theirs.\n\n# %% [markdown]\n# text\n\n'
                   '# %% check\nnotebook.require(True, "faster")\n')
    assert _comparison_findings(src)[0] != []
