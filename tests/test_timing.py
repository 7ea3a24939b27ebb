"""The learner-time model (issue 22 §1, asynctc.teaching.timing): its arithmetic on a small
notebook, and every core lesson within its 45 minutes by the model (chapters 05, 06 and 07,
once pending their split into a core lesson and deep dives, are held to it too)."""
from __future__ import annotations

import re

import pytest

from asynctc.teaching import timing

CORE = {p.name.split("_")[0]: p for p in timing.notebook_paths() if timing.is_core(p)}
#: Chapters whose core lesson is still to be split (issue 22 §1); reported, not yet held to 45 min.
PENDING_SPLIT: set[str] = set()
#: Chapters the model once put over 45 minutes before they were trimmed (08, 09): none left.
OVER_BY_THE_MODEL: set[str] = set()


def _nb(*cells):
    return {"cells": list(cells)}


def test_the_model_adds_what_its_docstring_says():
    words = " ".join(["word"] * 150)                       # one minute of prose
    nb = _nb({"cell_type": "markdown", "source": words, "metadata": {}},
             {"cell_type": "code", "source": "x = 1\ny = 2  # two\n", "metadata": {},
              "outputs": [{"output_type": "stream", "name": "stdout", "text": "word " * 75},
                          {"output_type": "display_data", "data": {"image/png": "", "text/plain": "<Figure>"}}]},
             {"cell_type": "code", "source": "answer = ...\nok = exercises.check(\"ch00.intensity\", answer)",
              "metadata": {}, "outputs": []},
             {"cell_type": "code", "source": "exercises.check(\"ch00.intensity\", 1, solution=True)",
              "metadata": {"tags": ["solution"]}, "outputs": []})
    e = timing.estimate(nb)
    assert e.prose_s == pytest.approx(60 + 60 / timing.PROSE_WPM)       # + the comment's one word
    assert e.code_s == pytest.approx(2 * timing.CELL_S + 4 * timing.CODE_LINE_S)
    assert e.output_s == pytest.approx(30) and e.figure_s == timing.FIGURE_S
    assert e.exercises == [("ch00.intensity", "compute")]               # the solution cell is not read
    assert e.exercise_s == 60 * timing.EXERCISE_MIN["compute"]


def test_a_check_cell_is_run_not_read():
    """A ``check`` cell's code is collapsed: the model charges the run, not its lines or comments."""
    guard = "for t in (1, 2):  # every tile\n    notebook.require(t > 0, 'positive', t=t)\n"
    check = _nb({"cell_type": "code", "source": guard, "metadata": {"tags": ["check"]}, "outputs": []})
    plain = _nb({"cell_type": "code", "source": guard, "metadata": {}, "outputs": []})
    assert timing.estimate(check).code_s == timing.CELL_S and timing.estimate(check).prose_s == 0
    assert timing.estimate(plain).code_s == timing.CELL_S + 2 * timing.CODE_LINE_S


def test_long_outputs_are_skimmed_and_exercise_kinds():
    long = _nb({"cell_type": "code", "source": "print(x)", "metadata": {},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "w " * 5000}]})
    assert timing.estimate(long).output_s == pytest.approx(timing.OUTPUT_WORDS_CAP * 60 / timing.PROSE_WPM)
    assert timing.exercise_kind("def f(x):\n    return x\nexercises.check('a', f)", "") == "code"
    assert timing.exercise_kind("answer = ...", "**Predict before you look**: which …") == "predict"
    assert timing.exercise_kind('answer = "copy"', "") == "predict"
    assert timing.exercise_kind("answer = ...", "Compute the intensity") == "compute"


def test_a_listings_stylesheet_is_not_read():
    """show_source's HTML carries pygments' <style> block (hundreds of CSS words): only the code
    counts."""
    css = "<style>pre { line-height: 125%; }\n" + ".x .k { color: #008000; font-weight: bold }\n" * 80 + "</style>"
    html = css + '<div class="highlight"><pre><span class="k">int</span> stage; u32 phase;</pre></div>'
    nb = _nb({"cell_type": "code", "source": "notebook.show_source('ring.cuh')", "metadata": {},
              "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                           "data": {"text/html": html, "text/plain": "int stage; u32 phase;"}}]})
    assert timing.words(html) == 4
    assert timing.estimate(nb).output_s == pytest.approx(4 * 60 / timing.PROSE_WPM)


def test_a_less_than_sign_in_prose_is_not_a_tag():
    # "r + STAGES < T ... wgmma_wait_group<kPending>()" once paired "<" with the later ">" and dropped
    # every word between them from the count
    text = "while r + STAGES < T it refills; then wgmma_wait_group<kPending>() > done"
    assert timing.words(text) == len("while r STAGES T it refills then wgmma_wait_group done".split())
    assert timing.words("<details><summary>Solutions here</summary></details>") == 2


def test_every_notebook_is_estimated_and_the_table_reports_the_core_path():
    text = timing.table()
    for p in timing.notebook_paths():
        assert f"| {p.stem} |" in text
    assert re.search(r"\*\*core path\*\* \| \| \*\*\d+\*\* \(\d+\.\d h\)", text)


@pytest.mark.parametrize("chapter", sorted(CORE))
def test_core_lesson_fits_its_45_minutes(chapter):
    minutes = timing.estimate_path(CORE[chapter]).minutes
    if chapter in PENDING_SPLIT and minutes > timing.CORE_LIMIT_MIN:
        pytest.xfail(f"chapter {chapter}: {minutes:.0f} min by the model, pending its split into a core "
                     "lesson and a deep dive (issue 22 §1)")
    assert minutes <= timing.CORE_LIMIT_MIN, f"{CORE[chapter].name}: {minutes:.0f} min by the model"


def test_core_path_total_is_reported(capsys):
    total = sum(timing.estimate_path(p).minutes for p in CORE.values())
    with capsys.disabled():
        print(f"\ncore path 00–10 by the learner-time model: {total:.0f} min ({total / 60:.1f} h; "
              f"target ≤ {timing.CORE_PATH_LIMIT_MIN / 60:.0f} h)")
    assert total > 0


def test_the_command_never_prints_an_empty_table(tmp_path, capsys):
    """`--plan=FILE`, or a plan given where the folder goes, prints the plan (it once printed an
    empty table ending in 'core path 0 (0.0 h)'); a folder without notebooks is an error."""
    plan = str(timing.ROOT / "docs" / "teaching" / "plan-3h.md")
    for argv in (["--plan=" + plan], [plan], ["--plan", plan]):
        assert timing.main(argv) == 0, argv
        out = capsys.readouterr().out
        assert "plan-3h.md, table 1: 180 min" in out and "core path" not in out, argv
    assert timing.main([str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert "core path" not in out and "no chapter notebooks" in err
    with pytest.raises(FileNotFoundError):
        timing.table(tmp_path)
