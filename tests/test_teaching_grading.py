"""Progress file, answer key, reset and grading (issue 22 §2–3): check() records every attempt;
expected() is closed to learners; reset restores a learner notebook; grade executes two fake
learners' notebooks (solutions stripped) into a learner × exercise table."""
import csv
import json
import os
from pathlib import Path

import nbformat
import pytest

from asynctc.core import exercises, progress
from asynctc.teaching import builds, grading

ROOT = Path(__file__).resolve().parent.parent
RIGHT = 2 * 512**3 / (2 * 3 * 512 * 512)


def test_check_records_each_attempt(tmp_path, monkeypatch, capsys):
    f = tmp_path / "p" / "progress.jsonl"
    monkeypatch.setenv(progress.ENV, str(f))
    exercises.check("ch00.intensity", ..., n=512)
    exercises.check("ch00.intensity", 3.0, n=512)
    exercises.check("ch00.intensity", "three", n=512)
    exercises.check("ch00.intensity", RIGHT, n=512)
    rows = progress.attempts(f)
    assert [r["status"] for r in rows] == ["unanswered", "wrong", "invalid", "correct"]
    assert all(r["exercise"] == "ch00.intensity" and not r["solution"] and r["time"] for r in rows)
    assert progress.summary(rows) == {"ch00.intensity": {"status": "correct", "attempts": 4, "message": None}}
    assert "message" not in rows[-1] and rows[1]["message"].startswith("not quite")
    assert progress.summary(rows[:3])["ch00.intensity"]["message"].startswith("answer with")   # the latest


def test_progress_location_and_off(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(progress, "_PACKAGE_PARENT", tmp_path / "site-packages")   # an installed wheel
    assert progress.path() == tmp_path / "asynctc" / "progress.jsonl"
    monkeypatch.setenv(progress.ENV, "off")
    assert progress.path() is None
    progress.record("ch00.intensity", "correct")            # no file, no error
    monkeypatch.setenv(progress.ENV, str(tmp_path / "ro" / "x.jsonl"))
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o500)
    try:
        assert exercises.check("ch00.intensity", RIGHT, n=512)   # unwritable: the check still works
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_expected_is_the_answer_key_only(monkeypatch):
    monkeypatch.delenv(exercises.ANSWER_KEY_ENV, raising=False)
    with pytest.raises(PermissionError, match="answer key"):
        exercises.expected("ch00.intensity", n=512)
    monkeypatch.setenv(exercises.ANSWER_KEY_ENV, "1")
    assert exercises.expected("ch00.intensity", n=512) == pytest.approx(RIGHT)


def test_no_notebook_source_calls_expected():
    for src in (ROOT / "notebooks" / "src").glob("*.py"):
        assert "exercises.expected(" not in src.read_text(), src.name


def test_reset_restores_the_learner_notebook(tmp_path):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    committed = ROOT / "notebooks" / "00_why_async.ipynb"
    (nb_dir / committed.name).write_text('{"cells": [], "edited": true}')
    import shutil
    # outside a git checkout the installed copy is used: fake an installed one
    share = tmp_path / "prefix" / "share" / "asynctc" / "notebooks"
    share.mkdir(parents=True)
    shutil.copy2(committed, share / committed.name)
    import sys
    import sysconfig
    old = sys.prefix
    try:
        sys.prefix = str(tmp_path / "prefix")
        orig = sysconfig.get_path
        sysconfig.get_path = lambda name, *a, **k: sys.prefix if name == "data" else orig(name, *a, **k)
        path, where = builds.reset("00", nb_dir)
    finally:
        sys.prefix = old
        sysconfig.get_path = orig
    assert path.read_bytes() == committed.read_bytes() and "installed" in where
    assert json.loads((nb_dir / (committed.name + ".bak")).read_text())["edited"] is True
    with pytest.raises(FileNotFoundError):
        builds.reset("77", nb_dir)


def test_reset_in_the_checkout_uses_git(tmp_path):
    """In the checkout, the committed copy: git show HEAD:notebooks/00_….ipynb."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    data, name, where = builds.pristine_source("00", ROOT / "notebooks")
    assert name.startswith("00_") and "committed" in where and json.loads(data)["cells"]


def test_learner_copy_drops_solutions_and_answers():
    nb = nbformat.v4.new_notebook()
    out = [nbformat.v4.new_output("stream", name="stdout", text="SBO = 512\n")]
    nb.cells = [nbformat.v4.new_code_cell("answer = ...", outputs=list(out)),
                nbformat.v4.new_markdown_cell("**Predict before you run the cell.** How far apart?"),
                nbformat.v4.new_code_cell("fig()", outputs=list(out), metadata={"tags": ["answer"]}),
                nbformat.v4.new_markdown_cell("The kernel's own lines (after exercise 1):"),
                nbformat.v4.new_code_cell("show()", outputs=list(out), metadata={"tags": ["answer"]}),
                nbformat.v4.new_markdown_cell("<details><summary>Solutions", metadata={"tags": ["solution"]}),
                nbformat.v4.new_code_cell("check('x', 1, solution=True)")]
    ln = builds.learner_copy(nb)
    # a question above: the note between it and the cell; an answer listing: no note (after() says it)
    assert [c.source for c in ln.cells] == ["answer = ...", nb.cells[1].source, builds.HIDDEN_NOTE, "fig()",
                                            nb.cells[3].source, "show()"]
    assert ln.cells[0].outputs and not ln.cells[3].outputs and not ln.cells[5].outputs
    assert ln.cells[2].cell_type == "markdown"          # told before running it that the output was left out
    assert len(nb.cells) == 7 and nb.cells[2].outputs


def test_a_question_is_predict_or_a_question_mark_outside_code():
    md = nbformat.v4.new_markdown_cell
    assert builds.asks_a_question(md("**Predict** the count."))
    assert builds.asks_a_question(md("Which BK gains more?"))
    assert not builds.asks_a_question(md("The listing (`x ? a : b`, [link](a.md?q=1)):"))


def _learner_nb(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def test_grade_two_fake_learners(tmp_path, monkeypatch, capsys):
    pytest.importorskip("nbclient")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("ASYNCTC_MODE", "replay")
    sub = tmp_path / "submitted"
    (sub / "alice").mkdir(parents=True)
    imp = "from asynctc.core import exercises"
    nbformat.write(_learner_nb([
        imp,
        f'exercises.check("ch00.intensity", 100.0, n=512)',
        f'exercises.check("ch00.intensity", {RIGHT!r}, n=512)',
        'exercises.check("ch00.memory_bound", [3], sizes=[3, 300, 3000], ridge=250)',
    ]), sub / "alice" / "00_why_async.ipynb")
    nbformat.write(_learner_nb([
        imp,
        'exercises.check("ch00.intensity", ..., n=512)',
        'raise RuntimeError("my own bug")',                 # allowed: grading goes on
        # a solution cell left in: stripped before grading, so it counts for nothing
        f'exercises.check("ch00.memory_bound", [3, 300], sizes=[3, 300, 3000], ridge=250, solution=True)',
        'exercises.expected("ch00.intensity", n=512)',      # the answer key stays closed
    ]), sub / "bob.ipynb")
    from asynctc.__main__ import main
    assert main(["grade", str(sub), "--out", str(tmp_path / "out"), "--timeout", "120"]) == 0
    printed = capsys.readouterr().out
    rows = {r["learner"]: r for r in csv.DictReader((tmp_path / "out" / "grades.csv").open())}
    assert set(rows) == {"alice", "bob"}
    assert rows["alice"]["ch00.intensity"] == "correct" and rows["alice"]["ch00.memory_bound"] == "wrong"
    assert rows["alice"]["score"] == "1" and rows["alice"]["out_of"] == "2"
    assert rows["bob"]["ch00.intensity"] == "unanswered" and rows["bob"]["ch00.memory_bound"] == "-"
    assert rows["bob"]["score"] == "0"
    assert "bob.ipynb: cell 3 raised RuntimeError: my own bug" in rows["bob"]["problems"]   # counted from 1
    md = (tmp_path / "out" / "grades.md").read_text()
    assert "| alice | ✓ | ✗ | 1/2 |" in md and "| bob | · | - | 0/2 |" in md and md in printed
    # the wrong answer's hint, in the checker's words; the corrected and the unanswered ones are not listed
    told = md.split("What each answer that is not correct was told", 1)[1]
    assert "- alice, ch00.memory_bound (1 attempt): not quite" in told
    assert "ch00.intensity" not in told and "bob" not in told.split("Notebooks with a cell")[0]


def test_reset_command_and_bad_chapter(tmp_path, capsys):
    from asynctc.__main__ import main
    assert main(["reset", "0x"]) == 2 and "two digits" in capsys.readouterr().err
    assert main(["reset", "77", "--dir", str(tmp_path)]) == 2
    assert "no learner notebook" in capsys.readouterr().err


def test_warm_compiles_every_course_kernel(capsys):
    from asynctc import catalog
    from asynctc.__main__ import main
    assert main(["warm"]) == 0
    assert f"compiled {len(catalog.COURSE_KERNELS)} course kernels" in capsys.readouterr().out


def _git_checkout(tmp_path):
    """A small git checkout with one committed learner notebook, notebooks/07_fp8_precision.ipynb."""
    import subprocess
    repo = tmp_path / "course"
    (repo / "notebooks").mkdir(parents=True)
    nb = repo / "notebooks" / "07_fp8_precision.ipynb"
    nb.write_text('{"cells": [], "shipped": true}')
    (repo / "notebooks" / "07b_fp8_accumulator.ipynb").write_text('{"cells": [], "deep": true}')
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env, capture_output=True)
    return repo, nb


def test_reset_restores_a_deleted_notebook_from_git(tmp_path, capsys):
    repo, nb = _git_checkout(tmp_path)
    nb.unlink()                                               # the learner deleted it
    from asynctc.__main__ import main
    assert main(["reset", "07", "--dir", str(repo / "notebooks")]) == 0
    assert json.loads(nb.read_text())["shipped"] is True
    assert not nb.with_name(nb.name + ".bak").exists()        # nothing of theirs to keep
    out = capsys.readouterr().out
    assert "restored from the committed notebooks/07_fp8_precision.ipynb" in out
    assert ".bak" not in out                                  # no backup named that does not exist


def test_reset_never_overwrites_an_earlier_backup(tmp_path, capsys):
    repo, nb = _git_checkout(tmp_path)
    from asynctc.__main__ import main
    for n, name in ((1, ".bak"), (2, ".bak1"), (3, ".bak2")):
        nb.write_text(json.dumps({"edit": n}))
        assert main(["reset", "07", "--dir", str(repo / "notebooks")]) == 0
        assert f"your copy is kept as {nb.name}{name}" in capsys.readouterr().out
    kept = [json.loads(nb.with_name(nb.name + s).read_text())["edit"] for s in (".bak", ".bak1", ".bak2")]
    assert kept == [1, 2, 3]
    assert main(["reset", "07", "--dir", str(repo / "notebooks")]) == 0   # same as shipped: nothing kept
    assert ".bak" not in capsys.readouterr().out and not nb.with_name(nb.name + ".bak3").exists()


def test_reset_into_a_folder_outside_the_checkout_uses_the_course_copy(tmp_path, monkeypatch):
    """A learner's own folder (no git): the installed copy, else the course checkout's committed one."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    monkeypatch.setattr(builds, "installed_notebooks_dir", lambda: None)
    mine = tmp_path / "my_work"
    mine.mkdir()
    path, where = builds.reset("07", mine)
    assert path.parent == mine and path.name.startswith("07_fp8") and "course checkout" in where
    assert json.loads(path.read_text())["cells"]


def test_gitignore_ignores_reset_backups():
    lines = (ROOT / ".gitignore").read_text().split()
    assert "*.ipynb.bak" in lines and "*.ipynb.bak[0-9]*" in lines


def test_score_counts_only_what_the_handed_in_notebooks_ask(tmp_path):
    """The denominator is what the shipped notebooks a learner handed in ask (00: intensity and
    memory_bound; 05: groups_pending and producer_step). A check the learner added (a checkpoint
    question) is listed apart, scored for nobody, and adds no column that counts against others."""
    from asynctc.teaching import grading
    alice = grading.Graded("alice", ["00_why_async.ipynb", "05_pipelines.ipynb"],
                           {"ch00.intensity": "correct", "ch00.memory_bound": "wrong",
                            "ch05.groups_pending": "correct", "ch05.full_parity": "correct",
                            "ch04.descriptor": "wrong"}, {}, [])
    carol = grading.Graded("carol", ["00_why_async.ipynb"], {"ch00.intensity": None}, {}, [])
    assert grading.columns([alice, carol]) == ["ch00.intensity", "ch00.memory_bound",
                                               "ch05.groups_pending", "ch05.producer_step"]
    csv_path, _, md = grading.write_tables([alice, carol], tmp_path)
    assert "| alice | ✓ | ✗ | ✓ | - | 2/4 |" in md
    assert "| carol | - | - |   |   | 0/2 |" in md                 # ch05 is blank, not ✗, and not counted
    assert "- alice: ch05.full_parity ✓, ch04.descriptor ✗" in md and "- carol" not in md
    rows = {r["learner"]: r for r in csv.DictReader(csv_path.open())}
    assert rows["carol"]["ch05.groups_pending"] == "" and rows["carol"]["out_of"] == "2"
    assert rows["carol"]["ch00.memory_bound"] == "-" and "ch05.full_parity" not in rows["carol"]
    assert rows["alice"]["not_scored"] == "ch05.full_parity=correct; ch04.descriptor=wrong"


def test_a_handed_in_notebook_is_matched_to_the_shipped_one():
    from asynctc.teaching import grading
    shipped = grading.shipped_exercises()
    assert shipped["04_wgmma"] == ["ch04.kstep", "ch04.acc_owner"] and shipped["00b_clock_kinds"] == []
    assert shipped["04b_wgmma_anatomy"] == ["ch04.acc_owner_fn", "ch04.encode", "ch04.descriptor"]
    assert grading.asked_for("04_wgmma.ipynb", [], shipped) == shipped["04_wgmma"]
    assert grading.asked_for("04_wgmma (1).ipynb", [], shipped) == shipped["04_wgmma"]      # same number
    assert grading.asked_for("alice.ipynb", ["ch04.descriptor"], shipped) == shipped["04b_wgmma_anatomy"]
    assert grading.asked_for("alice.ipynb", ["ch99.none"], shipped) == []
    order = grading.course_order()
    assert list(order)[:2] == ["ch00.intensity", "ch00.memory_bound"]
    assert order["ch04.encode"] < order["ch04.descriptor"] < order["ch05.groups_pending"]


def test_a_problem_names_the_cell_from_1_its_exercise_and_section():
    from asynctc.teaching import grading
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 03\n\n## 2. Swizzle modes"),
                nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell('answer = ...\nexercises.check("ch03.expect_tx", answer)')]
    assert grading.where(nb, 2) == 'cell 3 (exercise ch03.expect_tx; under "2. Swizzle modes")'
    assert grading.where(nb, 1, number=7) == 'cell 7 (under "2. Swizzle modes")'
    assert grading.where(nb, 0) == "cell 1"


def test_a_stuck_cell_is_reported_as_a_timeout(tmp_path, monkeypatch):
    """A learner's endless cell: stopped after --timeout seconds and reported as a timeout (nbclient
    interrupts it, so the cell shows a KeyboardInterrupt the learner's code never raised)."""
    pytest.importorskip("nbclient")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    path = tmp_path / "00_why_async.ipynb"
    nbformat.write(_learner_nb(["from asynctc.core import exercises", "import time\ntime.sleep(60)",
                                'exercises.check("ch00.intensity", 3.0, n=512)']), path)
    names, status, _, problem, _ = grading.grade_notebook(path, timeout=2)
    assert problem.startswith("00_why_async.ipynb: cell 2 timed out: still running after 2 s (--timeout)")
    assert "KeyboardInterrupt" not in problem and status == {"ch00.intensity": None}


def test_grade_timeout_default_is_documented(capsys):
    from asynctc.__main__ import main
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    assert f"(default {grading.TIMEOUT})" in capsys.readouterr().out and grading.TIMEOUT == 120
    readme = (ROOT / "docs" / "teaching" / "README.md").read_text()
    assert "--timeout" in readme and f"{grading.TIMEOUT} s" in readme


def test_grade_columns_are_in_notebook_order_not_alphabetical(tmp_path):
    """Chapter 05 asks groups_pending (§1, exercise 1) before producer_step (§2), and deep
    dive 05c find_bug after both; chapter 06 asks producer_wait (1a) and cuda_kloop (1b, the capstone), then deep dive 06c
    cluster_arrivals and store_position (§9), then 06e consumer_loop: the columns say so."""
    from asynctc.teaching import grading
    order = grading.course_order()
    assert order["ch05.groups_pending"] < order["ch05.producer_step"] < order["ch05.find_bug"]
    assert order["ch00.memory_bound"] < order["ch05.groups_pending"]
    bob = grading.Graded("bob", ["05_pipelines.ipynb", "06_warp_specialization.ipynb",
                                 "06c_ladder_investigations.ipynb"],
                         {"ch06.store_position": None, "ch05.producer_step": "wrong",
                          "ch06.cuda_kloop": "correct", "ch05.groups_pending": "correct"}, {}, [])
    assert grading.columns([bob]) == ["ch05.groups_pending", "ch05.producer_step", "ch06.producer_wait", "ch06.cuda_kloop",
                                      "ch06.cluster_arrivals", "ch06.store_position"]
    # without the sources (an installed package): where the learners' notebooks ask them
    bob.order = {"ch05.groups_pending": ("05_pipelines.ipynb", 0), "ch05.producer_step": ("05_pipelines.ipynb", 1)}
    assert grading.columns([bob], order={})[:2] == ["ch05.groups_pending", "ch05.producer_step"]
    _, _, md = grading.write_tables([bob], tmp_path)
    assert md.splitlines()[0].startswith("| learner | ch05.groups_pending | ch05.producer_step |")


def test_an_exercise_cell_that_ran_without_check_is_unanswered():
    from asynctc.teaching import grading
    nb = nbformat.v4.new_notebook()
    src = 'if program == broken:\n    print("not answered yet")\nelse:\n    exercises.check("ch08.repair", program, rule="store")'
    ran = nbformat.v4.new_code_cell(src, execution_count=3)
    raised = nbformat.v4.new_code_cell('exercises.check("ch08.name_bug", x)', execution_count=4,
                                       outputs=[nbformat.v4.new_output("error", ename="NameError", evalue="x",
                                                                       traceback=[])])
    never = nbformat.v4.new_code_cell('exercises.check("ch08.first_misplaced", 1)')
    nb.cells = [ran, raised, never]
    status = {"ch08.repair": None, "ch08.name_bug": None, "ch08.first_misplaced": None}
    assert grading.ran_without_check(nb, status) == ["ch08.repair"]


def test_progress_command_summarises_a_class(tmp_path, capsys):
    """'Tried' means answered (wrong, invalid or correct): Run All's unanswered checks are not
    attempts. A second table counts, per exercise, the learners who solved it and who tried it."""
    import datetime as dt
    from asynctc.teaching import class_progress
    (tmp_path / "bob").mkdir()
    t = "2026-12-02T10:00:00+00:00"
    lines = {"alice.jsonl": [("ch00.intensity", "wrong"), ("ch00.intensity", "correct"),
                             ("ch00.memory_bound", "wrong"), ("ch01.smem_bytes", "unanswered")],
             "bob/progress.jsonl": [("ch01.smem_bytes", "unanswered"), ("ch01.smem_bytes", "correct", True)],
             "carol.jsonl": [("ch00.intensity", "unanswered"), ("ch00.memory_bound", "unanswered"),
                             ("ch00.intensity", "correct")]}
    for name, rows in lines.items():
        (tmp_path / name).write_text("".join(json.dumps({"time": t, "exercise": r[0], "status": r[1],
                                                         "solution": len(r) > 2}) + "\n" for r in rows))
    md = class_progress.summarize(tmp_path, now=dt.datetime(2026, 12, 2, 10, 5, tzinfo=dt.timezone.utc))
    assert "| alice | 1/2 | ch00.memory_bound | ch00.memory_bound | 5 min ago |" in md
    assert "| bob | 0/0 |  |  |  |" in md                      # unanswered and a solution check: nothing tried
    assert "| carol | 1/1 |  | ch00.intensity | 5 min ago |" in md
    assert "| exercise | solved (of 3 learners) | tried, not yet solved |" in md
    assert "| ch00.intensity | 2 | 0 |" in md and "| ch00.memory_bound | 0 | 1 |" in md
    assert "ch01.smem_bytes |" not in md.split("| exercise |")[1]        # nobody answered it
    from asynctc.__main__ import main
    assert main(["progress", str(tmp_path)]) == 0 and "| alice |" in capsys.readouterr().out
    assert main(["progress", str(tmp_path / "nope")]) == 2
