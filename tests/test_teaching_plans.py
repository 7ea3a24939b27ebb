"""The teaching plans (docs/teaching/plan-*.md) against themselves and the learner-time model:
each table adds up to the total its text states, its clock times follow from its minutes, every
lesson block has at least the model's minutes for the sections it names plus its checkpoint, the
6-hour day has every core lesson and names every core exercise, and the teaching README's figures
are the model's."""
from __future__ import annotations

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
                f"{plan}: {r.block} has {r.minutes} min, the model needs {need:.1f} for {r.sections!r} + checkpoint"


def test_six_hour_day_has_every_core_lesson_every_exercise_and_an_hour_of_breaks():
    md = (DOCS / "plan-6h.md").read_text()
    rows = timing.plan_tables(md)[0]
    chapters = [r.chapter for r in rows if r.chapter]
    assert chapters == [f"{i:02d}" for i in range(11)]
    assert sum(r.minutes for r in rows if r.block in ("break", "lunch")) >= 60
    demo = next(r for r in rows if r.chapter == "09")
    assert "demo" in demo.block and demo.minutes <= 10
    for p in timing.notebook_paths():
        if timing.is_core(p):
            for name, _ in timing.estimate_path(p).exercises:
                assert f"`{name}`" in md, f"plan-6h.md does not name exercise {name}"


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
    import json
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
    ("ch00.intensity", {"n": 4096}, 4096 / 3, "4096/3"),
    ("ch01.smem_bytes", {"bm": 128, "bn": 128, "bk": 32}, 16384, "16 384 B"),
    ("ch02.wait_n", {"stages": 6}, 4, "| 4 |"),
    ("ch03.bank_128B", {"row": 6, "col": 8}, 28, "| 28 |"),
    ("ch04.descriptor", {"mn": 64, "k": 64, "dtype": "float16", "major": "K", "swizzle": 64, "step": 2,
                         "base": 0x4000}, 0x8000002000010500, "| 0x8000002000010500 |"),
    ("ch05.full_parity", {"k": 5, "stages": 4}, 1, "| 1 |"),
    ("ch06.producer_wait", {"tile": 2, "k": 3, "k_tiles": 5, "stages": 4}, (1, 0), "(1, 0)"),
    ("ch07.block_scale", {"amax": 896}, 2.0, "2.0"),
    ("ch09.tmem_columns", {"m": 128, "n": 160}, 256, "| 256 |"),
    ("ch10.verdict", {"tflops": 720, "sm_mhz": 1700, "sm_count": 132, "low": 0.75, "high": 0.80},
     "partly", '"partly"'),
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
    row = next(l for l in rows if "`ch05.ring_parities`" in l)      # a code exercise: its worked code, as written
    assert "`def full_parity(k, S): return (k // S) % 2 ; def empty_parity(t, S): return (t // S + 1) % 2`" in row
    assert row.endswith("| the (k / S)-th fill of stage k mod S; the phase before that fill: a fresh barrier passes at once |")
    row = next(l for l in rows if "`ch04.encode`" in l)             # hex constants and parentheses kept
    assert "return ((start_address & 0x3FFFF) >> 4 \\| ((lbo & 0x3FFFF) >> 4) << 16" in row and "262143" not in row
    row = next(l for l in rows if "`ch03.swizzle_128b`" in l)       # a code exercise: its function
    assert "`def swizzle_128b(offset): " in row and "return " in row and "<function" not in text
