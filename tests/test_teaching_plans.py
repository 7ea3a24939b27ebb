"""The teaching plans (docs/teaching/plan-*.md) against themselves and the learner-time model:
each table adds up to the total its text states, its clock times follow from its minutes, every
lesson block has at least the model's minutes for the sections it names plus its checkpoint and the
teacher's deck and demo minutes, each table states the buffer left, a plan says where a block
starts or stops inside a notebook cell, the 6-hour day has every core lesson, names every core
exercise, counts the teacher's minutes, a wrap-up and about 10 % buffer, what-to-skip.md lists what
it leaves out, and the teaching README's figures are the model's."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from asynctc.teaching import timing

DOCS = Path(__file__).resolve().parent.parent / "docs" / "teaching"
PLANS = ("plan-3h.md", "plan-6h.md", "plan-2days.md")


def _minutes(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


@pytest.mark.parametrize("plan", PLANS)
def test_plan_tables_add_up_to_their_stated_totals(plan):
    md = (DOCS / plan).read_text()
    tables = timing.plan_tables(md)
    stated = [int(n) for n in re.findall(r"^Total (\d+) min", md, re.M)]
    assert tables and len(stated) == len(tables), f"{plan}: one 'Total N min' line per table"
    span = re.search(r"\((\d\d:\d\d)–(\d\d:\d\d)", md.splitlines()[0])
    for rows, total in zip(tables, stated):
        assert sum(r.minutes for r in rows) == total, plan
        for a, b in zip(rows, rows[1:]):
            assert _minutes(a.time) + a.minutes == _minutes(b.time), f"{plan}: {b.time} {b.block}"
        if span:
            assert _minutes(rows[0].time) == _minutes(span.group(1))
            assert _minutes(span.group(2)) - _minutes(span.group(1)) == total
        for r in rows:
            need = r.needed
            assert need is None or r.minutes >= need, \
                f"{plan}: {r.block} has {r.minutes} min, the model needs {need:.1f} for {r.sections!r} + checkpoint + deck and demo"


@pytest.mark.parametrize("plan", PLANS)
def test_plan_states_its_buffer(plan):
    """Each table's 'Total' paragraph ends on its buffer: minutes and percent of the time outside
    breaks, as `timing --plan` computes them."""
    md = (DOCS / plan).read_text()
    stated = re.findall(r"^Total \d+ min.*?a\s+buffer\s+of\s+(\d+)\s+min\s+\((\d+)\s+%\s+of\s+the\s+(\d+)\s+min\s+"
                        r"outside\s+breaks\)", md, re.M | re.S)
    tables = timing.plan_tables(md)
    assert len(stated) == len(tables), f"{plan}: each Total paragraph states 'a buffer of N min (P % of the T min …)'"
    for rows, (n, pct, outside) in zip(tables, stated):
        b = timing.plan_budget(rows)
        assert (int(n), int(pct), int(outside)) == (round(b.buffer), round(100 * b.buffer / b.teaching),
                                                    b.teaching), plan


@pytest.mark.parametrize("plan", PLANS)
def test_plan_says_where_a_block_starts_or_stops_inside_a_cell(plan):
    """A notebook cell can end one section and open the next; a block that keeps one and not the
    other tells its learners where to stop or start, in the words `timing --plan` prints."""
    md = (DOCS / plan).read_text()
    for rows in timing.plan_tables(md):
        for r in rows:
            for s in timing.cell_splits(r.sections, r.chapter) if r.chapter else ():
                assert s in md, f"{plan}: {r.block} splits a cell; the plan must say {s}"


def test_cell_splits_are_found_where_a_heading_is_inside_a_cell():
    nb = {"cells": [{"cell_type": "markdown", "source": "# T\nintro text"},
                    {"cell_type": "markdown", "source": "## 1. One\ntext"},
                    {"cell_type": "code", "source": "x = 1"},
                    {"cell_type": "markdown", "source": "end of one\n\n## 2. Two\ntext\n## 3. Three\nmore"},
                    {"cell_type": "markdown", "source": "## Exercises\n**1.**"}]}
    assert timing.cell_sections(nb) == [[("intro", "intro")], [("§1", "1. One")],
                                        [("§1", "1. One"), ("§2", "2. Two"), ("§3", "3. Three")],
                                        [("exercises", "Exercises")]]
    # chapter 06 (r61a): §2, §3 and §4 each start a cell of their own, so no split is named
    assert timing.cell_splits("§1 §2 §4", "06") == [] == timing.cell_splits("§3", "06")
    assert not any(s.startswith("06:") for s in timing.cell_splits("06 06b §7", "06"))   # 06 whole


def test_plan_tables_read_the_teachers_minutes():
    md = ("| time | min | block | sections | deck | demo | what |\n|---|---|---|---|---|---|---|\n"
          "| 09:00 | 5 | setup |  |  |  | x |\n| 09:05 | 30 | 05 pipelines | §1 | 2 | 3 | y |\n"
          "| 09:35 | 10 | break |  |  |  |  |\n")
    setup, lesson, brk = timing.plan_tables(md)[0]
    assert (setup.needed, setup.teacher) == (None, 0)
    assert (lesson.deck, lesson.demo) == (2, 3)
    assert lesson.needed == pytest.approx(timing.named_minutes("§1", "05") + timing.CHECKPOINT_MIN + 5)
    b = timing.plan_budget([setup, lesson, brk])
    assert (b.total, b.breaks, b.other, b.teaching) == (45, 10, 5, 35)
    assert b.buffer == pytest.approx(30 - lesson.needed)


def test_six_hour_day_has_every_core_lesson_every_exercise_and_an_hour_of_breaks():
    md = (DOCS / "plan-6h.md").read_text()
    rows = timing.plan_tables(md)[0]
    chapters = [r.chapter for r in rows if r.chapter]
    assert chapters == [f"{i:02d}" for i in range(11)]
    assert sum(r.minutes for r in rows if r.block in ("break", "lunch")) >= 60
    demo = next(r for r in rows if r.chapter == "09")
    assert "demo" in demo.block and demo.minutes <= 10
    lessons = [r for r in rows if r.chapter and r is not demo]
    assert all(r.deck > 0 for r in lessons), "every lesson block of the 6-hour day states its deck minutes"
    wrap = [r for r in rows if "wrap-up" in r.block]
    assert len(wrap) == 1 and 5 <= wrap[0].minutes <= 10, "a 5–10 minute wrap-up with the hand-in"
    b = timing.plan_budget(rows)
    assert b.teaching <= 300 and b.buffer >= 0.09 * b.teaching, f"buffer {b.buffer:.0f} of {b.teaching} min"
    ch08 = next(r for r in rows if r.chapter == "08")
    assert ("08", "§4") in timing.named_sections(ch08.sections, "08"), \
        "chapter 08's third goal (the method: depth 1 first, the hangs / wrong / slow table) is taught in class"
    for p in timing.notebook_paths():
        if timing.is_core(p):
            for name, _ in timing.estimate_path(p).exercises:
                assert f"`{name}`" in md, f"plan-6h.md does not name exercise {name}"


def test_the_run_sheet_is_current_and_names_every_core_exercise():
    """docs/teaching/run-sheet-6h.md is generated from plan-6h.md (one page: the clock, the sections,
    the exercises in class and at home); every core lesson's exercise is on it, once."""
    from asynctc.teaching import runsheet
    assert runsheet.main(["--check"]) == 0, "run python -m asynctc.teaching.runsheet"
    sheet = (DOCS / "run-sheet-6h.md").read_text()
    for p in timing.notebook_paths():
        if timing.is_core(p):
            for name, _ in timing.estimate_path(p).exercises:
                assert sheet.count(f"`{name}`") == 1, f"run-sheet-6h.md names {name} {sheet.count(name)} times"
    rows = [ln for ln in sheet.splitlines() if re.match(r"\| \d\d:\d\d–\d\d:\d\d \|", ln)]
    assert rows[0].startswith("| 09:00–") and rows[-1].endswith("|") and "–15:00 |" in rows[-1]


def test_what_to_skip_lists_what_the_six_hour_day_leaves_out():
    """what-to-skip.md's row per chapter names, under *in class*, every section plan-6h's block
    names and, under *homework*, every other section but the opening (the deck stands in for it)."""
    rows = timing.plan_tables((DOCS / "plan-6h.md").read_text())[0]
    skip = {}
    for line in (DOCS / "what-to-skip.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(r"\d\d", cells[0]):
            skip[cells[0]] = [re.sub(r"§(\d+)\s*[–-]\s*§(\d+)", lambda m: " ".join(
                f"§{i}" for i in range(int(m.group(1)), int(m.group(2)) + 1)), c) for c in cells[1:3]]
    for r in rows:
        if not r.chapter:
            continue
        in_class, home = skip[r.chapter]
        named = {k for nb, k in timing.named_sections(r.sections, r.chapter) if nb == r.chapter}
        nb = json.loads(next(p for p in timing.notebook_paths() if p.name.startswith(r.chapter + "_")).read_text())
        for e in timing.sections(nb)[1:]:
            key = timing.section_key(e.name)
            where, cell = ("in class", in_class) if key in named else ("homework", home)
            found = re.search(rf"{re.escape(key)}(?!\d)", cell, re.I)
            assert found, f"what-to-skip.md, chapter {r.chapter}: {key} belongs under {where}"


def test_teaching_readme_figures_are_the_models():
    text = (DOCS / "README.md").read_text()
    core = [timing.estimate_path(p).minutes for p in timing.notebook_paths() if timing.is_core(p)]
    deep = [timing.estimate_path(p).minutes for p in timing.notebook_paths() if not timing.is_core(p)]
    m = re.search(r"(\d+)–(\d+) minutes each, the core path 00–10 (\d+) min \((\d+\.\d) h\); the deep "
                  r"dives (\d+) min \((\d+\.\d) h\)", text)
    assert m, "docs/teaching/README.md states the model's figures in the tested sentence"
    lo, hi, c, ch, d, dh = m.groups()
    assert (int(lo), int(hi)) == (round(min(core)), round(max(core)))
    assert int(c) == round(sum(core)) and ch == f"{sum(core) / 60:.1f}"
    assert int(d) == round(sum(deep)) and dh == f"{sum(deep) / 60:.1f}"


def test_sections_add_up_to_the_notebook_and_plans_name_real_sections():
    p = next(p for p in timing.notebook_paths() if p.name.startswith("06_"))
    nb = json.loads(p.read_text())
    secs = timing.sections(nb)
    assert sum(e.minutes for e in secs) == pytest.approx(timing.estimate(nb).minutes)
    assert [timing.section_key(e.name) for e in secs][:4] == ["intro", "§1", "§2", "§3"]
    with pytest.raises(KeyError):
        timing.named_minutes("§99", "06")
    assert timing.named_minutes("§1–§2", "06") == pytest.approx(sum(e.minutes for e in secs[1:3]))


#: checkpoints.md's numeric questions: (exercise, arguments as written there, the answer it gives).
CHECKPOINTS = [
    # not §3's worked n/3 (readers): a skinny GEMM, left of the ridge
    ("ch00.intensity", {"m": 128, "n": 8192, "k": 8192}, 128 * 8192 / 8448, "≈ 124.1 FLOP/byte"),
    ("ch01.smem_bytes", {"bm": 128, "bn": 128, "bk": 32}, 16384, "16 384 B"),
    ("ch02.wait_n", {"stages": 6}, 4, "| 4 |"),
    ("ch03.bank_128B", {"row": 6, "col": 8}, 28, "| 28 |"),
    # the 128-byte-swizzle K-major case core lesson 04 teaches (§2, §3), not 04b's 64-byte two-box one
    ("ch04.descriptor", {"mn": 64, "k": 64, "dtype": "float16", "major": "K", "swizzle": 128, "step": 3,
                         "base": 0x8000}, 0x4000004000010806, "| 0x4000004000010806 |"),
    ("ch05.full_parity", {"k": 5, "stages": 4}, 1, "| 1 |"),
    ("ch06.producer_wait", {"tile": 2, "k": 3, "k_tiles": 5, "stages": 4}, (1, 0), "(1, 0)"),
    ("ch07.block_scale", {"amax": 896}, 2.0, "2.0"),
    ("ch09.tmem_columns", {"m": 128, "n": 160}, 256, "| 256 |"),
    ("ch10.bound_verdict", {"pairs": ((0.5, 0.49), (0.51, 0.505), (0.505, 0.5)), "above": 1.0},
     "does not hold", '"does not hold"'),
]


@pytest.mark.parametrize("name,kw,answer,shown", CHECKPOINTS, ids=[c[0] for c in CHECKPOINTS])
def test_checkpoint_answers_are_the_answer_keys(name, kw, answer, shown, monkeypatch):
    from asynctc.core import exercises
    monkeypatch.setenv(exercises.ANSWER_KEY_ENV, "1")
    got = exercises.expected(name, **kw)
    assert got == pytest.approx(answer, rel=1e-3) if isinstance(answer, float) else got == answer
    md = (DOCS / "checkpoints.md").read_text()
    row = next(l for l in md.splitlines() if f"`{name}`" in l)
    def spelled(k, v):                    # base=0x4000, dtype="float16" as well as base=16384, dtype=float16
        return {f"{k}={v}", f"{k}={v!r}", f'{k}="{v}"'} | ({f"{k}={v:#x}"} if isinstance(v, int) else set())
    assert all(any(t in row for t in spelled(k, v)) for k, v in kw.items()) and shown in row, name


def test_answer_sheet_is_generated_from_the_answer_key_and_is_current():
    """docs/teaching/answers.md is what `python -m asynctc.teaching.answers` writes today: every
    core exercise, in notebook order, with the answer key's answer for the notebook's arguments."""
    from asynctc.teaching import answers
    text = answers.render()
    assert (DOCS / "answers.md").read_text() == text, \
        "docs/teaching/answers.md is stale: run python -m asynctc.teaching.answers"
    names = [n for p in timing.notebook_paths() if timing.is_core(p)
             for n, _ in timing.estimate_path(p).exercises]
    rows = [l for l in text.splitlines() if l.startswith("| ") and "`ch" in l]
    assert [re.search(r"`(ch\d\d\.\w+)`", l).group(1) for l in rows] == list(dict.fromkeys(names))
    row = next(l for l in rows if "`ch05.groups_pending`" in l)
    assert "stages=6, consumers=1" in row and "| `1` |" in row
    row = next(l for l in rows if "`ch04.kstep`" in l)              # a code exercise: its worked code, as written
    assert "`def kstep_desc(desc0, s, major): step = 32 if major == \"K\" else 16 * 128; return desc0 + (s * step >> 4)`" in row
    assert row.endswith("| bytes per k16 step: along the row, or 16 k-rows; the field counts 16-byte units |")
    row = next(l for l in rows if "`ch03.stage_fill`" in l)         # CUDA C++ text: on one line, its // comments the note
    assert "`mbarrier_arrive_expect_tx(full_bar, (BM + BN) * BK * 2); tma_load_2d(stage, ta, full_bar, kt * BK, m0);" in row
    assert row.endswith("| both boxes: 16384 + 16384 bytes; A: column kt*BK, row m0; B: right after A's 16384 bytes |")
    row = next(l for l in rows if "`ch03.swizzle_128b`" in l)       # a code exercise: its function
    assert "`def swizzle_128b(offset): " in row and "return " in row and "<function" not in text
    row = next(l for l in rows if "`ch09.mma_issue`" in l)          # a loop's body in braces: its nesting kept
    assert "`def issue_ktile(t, kt, s): if t.elected: { t.wait(t.full[s], (kt // t.stages) & 1); t.fence_after(); for j in range(t.steps): { t.mma(s, j, " in row
    assert "}; t.commit(t.empty[s]) }`" in row and ":;" not in text
    # chapter 04 asks the k-step (§3), then who holds an accumulator element (§6, unnumbered: 2nd);
    # chapter 06 asks where the ring stands at a tile's start (1a), then the capstone, both roles' k-loops
    # in the real calls (1b; rung 3's consumer loop is deep dive 06e §2; rungs 5–8 are deep dive 06c §9)
    assert [re.match(r"\| 04 \| (\d) \| `(\S+)`", l).groups() for l in rows if l.startswith("| 04 ")] == \
        [("1", "ch04.kstep"), ("2", "ch04.acc_owner")]
    row = next(l for l in rows if "`ch04.acc_owner`" in l)
    assert "r=43, c=20" in row and "| `(78, 10)` |" in row
    assert [re.match(r"\| 06 \| (\d) \| `(\S+)`", l).groups() for l in rows if l.startswith("| 06 ")] == \
        [("1", "ch06.producer_wait"), ("2", "ch06.cuda_kloop")]
    # numbered as the notebook numbers them: chapter 09 asks exercise 1 (in §5), then exercise 2
    assert [re.match(r"\| 09 \| (\d) \| `(\S+)`", l).groups() for l in rows if l.startswith("| 09 ")] == \
        [("1", "ch09.mma_issue"), ("2", "ch09.tmem_columns")]


def test_answer_sheet_writes_a_code_exercise_as_written(tmp_path):
    """The sheet's one-line code keeps hex constants and parentheses, joins two functions of one
    answer, and numbers an exercise by its prompt's label (by its order where it has none)."""
    from asynctc.teaching import answers
    src = tmp_path / "04_x.py"
    src.write_text('''# %% [markdown]
# **Exercise: unnumbered.**

# %%
ok = exercises.check("ch04.encode", encode)

# %% [markdown]
# **3. Numbered.**

# %%
ok = exercises.check("ch05.ring_parities", (full_parity, empty_parity))

# %%
def encode(start_address, lbo, sbo, swizzle):
    return ((start_address & 0x3FFFF) >> 4 | ((lbo & 0x3FFFF) >> 4) << 16)  # 16-byte units


ok = exercises.check("ch04.encode", encode, solution=True)


def full_parity(k, S):
    return (k // S) % 2   # the fill


def empty_parity(t, S):
    return (t // S + 1) % 2


ok = exercises.check("ch05.ring_parities", (full_parity, empty_parity), solution=True)
''')
    enc, par = answers.asked(src)
    assert (enc.number, par.number) == (1, 3)
    assert enc.solution == ("def encode(start_address, lbo, sbo, swizzle): "
                            "return ((start_address & 0x3FFFF) >> 4 | ((lbo & 0x3FFFF) >> 4) << 16)")
    assert enc.why == "16-byte units"
    assert par.solution == "def full_parity(k, S): return (k // S) % 2 ; def empty_parity(t, S): return (t // S + 1) % 2"


def test_the_run_sheet_carries_the_plans_cut_off():
    """A block whose plan row names a time to stop writing (06's capstone) shows it on the clock page."""
    from asynctc.teaching import runsheet
    md = (DOCS / "plan-6h.md").read_text()
    cut = re.search(r"still writing at (\d\d:\d\d)", md)[1]
    row = next(line for line in runsheet.sheet().splitlines() if "06 warp specialization" in line)
    assert f"still writing at {cut}" in row
    at_home = row.split(" | ")[-1]                            # the homework column: 06f's optional step 1
    assert "ch06.cuda_kloop" not in at_home and "ch06.whole_kloop" in at_home
