"""Project files agree: environment.yml vs pyproject, notebooks vs their sources, no stray paths."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    want = {_norm(r) for r in py["dependencies"]} | {_norm(r) for r in py["optional-dependencies"]["notebooks"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    have = {_norm(r) for r in pip if not r.startswith("-e")}
    assert have == want, f"only in pyproject: {sorted(want - have)}; only in environment.yml: {sorted(have - want)}"
    pyver = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    assert "3.11" in pyver or "3.12" in pyver


def test_notebooks_match_their_sources():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_notebooks.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_chapter_has_a_notebook_and_source():
    srcs = {p.stem for p in (ROOT / "notebooks" / "src").glob("[0-9][0-9]*_*.py")}
    nbs = {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")}
    sols = {p.stem for p in (ROOT / "notebooks" / "solutions").glob("[0-9][0-9]*_*.ipynb")}
    assert srcs == nbs == sols and {"00_why_async", "01_synchronous"} <= nbs


def test_the_test_command_runs_nbval_on_learner_and_solution_notebooks():
    sh = (ROOT / "tools" / "test.sh").read_text()
    # core lessons NN_* and deep dives NNb_*
    assert "notebooks/solutions/[0-9][0-9]*_*.ipynb" in sh and "--nbval notebooks/[0-9][0-9]*_*.ipynb" in sh


def test_notebooks_are_executed_and_clean():
    for nb_path in [*(ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"),
                    *(ROOT / "notebooks" / "solutions").glob("[0-9][0-9]*_*.ipynb")]:
        nb = json.loads(nb_path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            assert cell["execution_count"] is not None, f"{nb_path.name}: unexecuted cell"
            for out in cell.get("outputs", []):
                text = json.dumps(out.get("text", "")) + json.dumps(
                    {k: v for k, v in out.get("data", {}).items() if k.startswith("text/")})
                assert not re.search(r"/work/|/root/|/home/|site-packages", text), (nb_path.name, text[:200])
                assert out.get("output_type") != "error", nb_path.name
                assert "IPython.core.display" not in text, (   # plain text shows the table itself
                    f"{nb_path.name}: display notebook.Markdown(text), not IPython's Markdown")
        size = nb_path.stat().st_size
        assert size < 1_500_000, f"{nb_path.name} is {size} bytes: keep outputs small"


def test_binder_environment_is_the_course_environment_without_the_editable_install():
    """binder/ (repo2docker): the same dependencies as environment.yml, no ``-e .`` (postBuild
    installs the package as a wheel would, then warms the cubin cache)."""
    def pip_deps(path):
        env = yaml.safe_load(path.read_text())
        return env, next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    root_env, root_pip = pip_deps(ROOT / "environment.yml")
    b_env, b_pip = pip_deps(ROOT / "binder" / "environment.yml")
    assert not any(r.startswith("-e") for r in b_pip)
    assert {_norm(r) for r in b_pip} == {_norm(r) for r in root_pip if not r.startswith("-e")}
    assert [d for d in b_env["dependencies"] if isinstance(d, str)] == \
        [d for d in root_env["dependencies"] if isinstance(d, str)]
    assert {"nbval>=0.11", "jupytext>=1.16"} <= {_norm(r) for r in b_pip}
    post = (ROOT / "binder" / "postBuild").read_text()
    assert "pip install --no-deps" in post and "asynctc warm --notebooks" in post
    assert not re.search(r"pip install[^\n]* (-e|--editable)\b", post)
    import os
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK)
