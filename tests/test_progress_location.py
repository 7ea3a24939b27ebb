"""Where progress is kept (asynctc.core.progress): per checkout when the package runs from a clone,
per user for an installed wheel, ASYNCTC_PROGRESS first; the first banner of a session says where (until an attempt is kept, or always when moved),
never a check (nbval compares checks' outputs); `reset NN --progress` forgets one chapter. Temp folders only: the real user's folders are never touched."""

import json

import pytest

from asynctc.core import answers, exercises, progress

RIGHT = 512 ** 3 * 2 / (3 * 512 * 512 * 2)     # ch00.intensity at n=512 (flops / bytes)


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A fake source checkout (pyproject.toml beside the package) with no ASYNCTC_PROGRESS."""
    root = tmp_path / "clone"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'asynctc'\n")
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(progress, "_PACKAGE_PARENT", root)
    return root


def test_a_checkout_keeps_its_own_progress(clone):
    assert progress.checkout_root() == clone
    assert progress.path() == clone / ".asynctc" / "progress.jsonl"
    assert progress.answers_dir() == clone / ".asynctc" / "progress.answers"
    assert "this checkout's" in progress.where() and ".asynctc" in progress.where()


def test_an_installed_wheel_keeps_progress_per_user(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(progress, "_PACKAGE_PARENT", tmp_path / "site-packages")
    assert progress.checkout_root() is None
    assert progress.path() == tmp_path / "xdg" / "asynctc" / "progress.jsonl"
    assert progress.where().startswith("(progress: your attempts")


def test_the_variable_still_wins(clone, tmp_path, monkeypatch):
    monkeypatch.setenv(progress.ENV, str(tmp_path / "alice.jsonl"))
    assert progress.path() == tmp_path / "alice.jsonl"
    monkeypatch.setenv(progress.ENV, "off")
    assert progress.path() is None and progress.where() is None


def test_the_first_banner_of_a_session_says_where_and_checks_never(clone, monkeypatch, capsys):
    from asynctc.core import notebook
    monkeypatch.setattr(exercises, "_told_where", [])
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    exercises.check("ch00.intensity", RIGHT, n=512)
    assert "(progress:" not in capsys.readouterr().out          # a check's output stays the same
    assert len(progress.attempts()) == 1 and (clone / ".asynctc" / "progress.jsonl").is_file()
    notebook.banner("sm_90a")
    assert "(progress:" not in capsys.readouterr().out          # the default file, in use: not repeated
    (clone / ".asynctc" / "progress.jsonl").unlink()
    monkeypatch.setattr(exercises, "_told_where", [])
    notebook.banner("sm_90a")
    notebook.banner("sm_90a")
    out = capsys.readouterr().out
    assert out.count("(progress: this checkout's attempts") == 1   # no attempt yet: said once
    monkeypatch.setattr(exercises, "_told_where", [])
    monkeypatch.setenv(progress.ENV, str(clone / "alice.jsonl"))
    progress.record("ch00.intensity", "correct")
    notebook.banner("sm_90a")
    assert "(progress: your attempts" in capsys.readouterr().out   # a file of its own: always said
    monkeypatch.delenv(progress.ENV)
    monkeypatch.setattr(exercises, "_told_where", [])
    monkeypatch.setenv("ASYNCTC_BUILDING_NOTEBOOKS", "1")
    notebook.banner("sm_90a")
    assert "(progress:" not in capsys.readouterr().out          # stored outputs name no folder


def test_clear_forgets_one_chapter(clone):
    for name in ("ch05.full_parity", "ch05.producer_step", "ch06.consumer_loop"):
        progress.record(name, "correct")
    d = progress.answers_dir()
    d.mkdir(parents=True)
    for name in ("ch05.producer_step", "ch06.consumer_loop"):
        (d / f"{name}.py").write_text(answers.HEADER.format(name=name, time="t") + "__answer__ = 'x'\n")
    (d / "ch05.producer_step.json").write_text("{}")
    with progress.path().open("a") as f:
        f.write("not json\n")
    assert progress.held("05") == (2, 1)
    assert progress.clear("05") == (2, 1)
    assert progress.held("05") == (0, 0) and progress.held("06") == (1, 1)
    assert not (d / "ch05.producer_step.json").exists()
    assert "not json" in progress.path().read_text()
    assert [r["exercise"] for r in progress.attempts()] == ["ch06.consumer_loop"]


def test_reset_says_how_to_clear_progress_and_clears_it_with_the_flag(clone, tmp_path, capsys,
                                                                       monkeypatch):
    from asynctc.__main__ import main
    from asynctc.teaching import builds
    nb = tmp_path / "nb" / "05_pipelines.ipynb"

    def restore(ch, nb_dir, backup):
        nb.parent.mkdir(exist_ok=True)
        nb.write_text(json.dumps({"shipped": True}))
        return builds.Restored(nb, "the course", None)
    monkeypatch.setattr(builds, "restore", restore)
    progress.record("ch05.full_parity", "correct")
    assert main(["reset", "05"]) == 0
    out = capsys.readouterr().out
    assert "your 1 attempt and 0 kept answers stay" in out and "reset 05 --progress" in out
    assert main(["reset", "05", "--progress"]) == 0
    assert "1 attempt and 0 kept answers cleared" in capsys.readouterr().out
    assert progress.held("05") == (0, 0)
    assert main(["reset", "05"]) == 0
    assert "stay" not in capsys.readouterr().out          # nothing held: nothing said


@pytest.mark.parametrize("counts, words", [((1, 1), "1 attempt and 1 kept answer "),
                                           ((2, 3), "2 attempts and 3 kept answers ")])
def test_reset_counts_attempts_and_kept_answers_in_good_english(clone, capsys, monkeypatch, counts, words):
    """Newcomer 56: `reset NN --progress` printed "1 kept answers"."""
    from asynctc.__main__ import _reset_progress
    monkeypatch.setattr(progress, "clear", lambda ch, p: counts)
    monkeypatch.setattr(progress, "held", lambda ch, p: counts)
    _reset_progress("05", clear=True)
    _reset_progress("05", clear=False)
    out = capsys.readouterr().out
    assert f"{words}cleared" in out and f"your {words}stay" in out, out
