"""The installed package (issue 8 §3): a wheel built from the project, installed apart from the
checkout, compiles every course kernel — so every file a kernel includes ships in the wheel.

CPU only; builds, installs and compiles the 8 course kernels with an empty cubin cache (≈ 30–60 s)."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: setuptools that understands pyproject.toml's SPDX ``license = "Apache-2.0"`` (PEP 639).
MIN_SETUPTOOLS = (77, 0)


def _setuptools_version() -> tuple[int, ...] | None:
    out = subprocess.run([sys.executable, "-c", "import setuptools; print(setuptools.__version__)"],
                         capture_output=True, text=True)
    if out.returncode:
        return None
    return tuple(int(p) for p in out.stdout.strip().split(".")[:2] if p.isdigit())


def _copy_project(dst: Path) -> None:
    """What a wheel is built from: pyproject.toml, README.md and the asynctc package (no caches)."""
    for f in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / f, dst / f)
    shutil.copytree(ROOT / "asynctc", dst / "asynctc",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


_SCRIPT = r"""
import json, sys
from pathlib import Path
import asynctc
from asynctc import catalog
from asynctc.core import runtime
out = {"file": asynctc.__file__, "kernel_dir": str(runtime.KERNEL_DIR), "kernels": {}}
for name, fn in catalog.COURSE_KERNELS.items():
    ck = fn()
    out["kernels"][name] = {"source": ck.source, "entry": ck.name, "cubin": len(ck.cubin),
                            "elf": ck.cubin[:4] == b"\x7fELF"}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_installed_wheel_compiles_every_course_kernel(tmp_path):
    v = _setuptools_version()
    if v is None or v < MIN_SETUPTOOLS:
        pytest.fail(f"this venv's setuptools ({v}) cannot build the wheel: pyproject.toml needs "
                    f"setuptools >= {'.'.join(map(str, MIN_SETUPTOOLS))} (the test extra lists it; "
                    "run tools/setup_env.sh or `.venv/bin/python -m pip install 'setuptools>=77'`)")
    src, whl, site, cache, cwd = (tmp_path / d for d in ("src", "whl", "site", "cache", "elsewhere"))
    for d in (src, whl, site, cache, cwd):
        d.mkdir()
    _copy_project(src)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    r = subprocess.run(pip + ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(whl),
                              str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    wheels = list(whl.glob("asynctc-*.whl"))
    assert len(wheels) == 1, wheels

    # every kernel source and header of the checkout is in the wheel
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    kdir = ROOT / "asynctc" / "kernels"
    wanted = {"asynctc/kernels/" + p.relative_to(kdir).as_posix()
              for p in kdir.rglob("*") if p.suffix in (".cu", ".cuh", ".h")}
    assert wanted and not wanted - names, f"missing from the wheel: {sorted(wanted - names)}"

    r = subprocess.run(pip + ["install", "-q", "--no-deps", "--target", str(site), str(wheels[0])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ASYNCTC_CACHE")}
    env.update(PYTHONPATH=str(site), ASYNCTC_CACHE=str(cache), ASYNCTC_MODE="replay")
    r = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-5000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert Path(got["file"]).resolve().is_relative_to(site.resolve()), got["file"]
    assert Path(got["kernel_dir"]).resolve().is_relative_to(site.resolve()), got["kernel_dir"]
    from asynctc import catalog
    assert set(got["kernels"]) == set(catalog.COURSE_KERNELS)
    for name, k in got["kernels"].items():
        assert k["elf"] and k["cubin"] > 1000, (name, k)


def test_catalog_covers_every_course_kernel_file():
    from asynctc import catalog
    files = {p.name for p in (ROOT / "asynctc" / "kernels").glob("*.cu")}
    course = files - set(catalog.TEST_ONLY_SOURCES)
    assert {ck.source for ck in catalog.compile_all().values()} == course


_CHAPTER_SCRIPT = r"""
import json, os, sys
from pathlib import Path
import nbformat
from nbclient import NotebookClient
import asynctc
from asynctc.core import records, runtime
from asynctc.teaching import builds
nb_dir = builds.notebooks_dir()
path = sorted(nb_dir.glob("00_*.ipynb"))[0]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": os.getcwd()}}).execute()
errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
print(json.dumps({"file": asynctc.__file__, "data": str(records.data_dir()), "nb": str(path),
                  "mode": runtime.mode(), "errors": len(errors), "replay_said": "replay" in text.lower(),
                  "cells": len(nb.cells)}))
"""


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_runs_a_chapter_in_replay(tmp_path):
    """The wheel installed into a fresh virtual environment (no checkout anywhere near) finds its
    replay records and learner notebooks (pyproject's data-files) and runs chapter 00 in replay."""
    v = _setuptools_version()
    if v is None or v < MIN_SETUPTOOLS:
        pytest.skip(f"setuptools {v} cannot build the wheel (needs >= 77; see the test above)")
    import sysconfig
    import venv
    src, whl, cache, cwd = (tmp_path / d for d in ("src", "whl", "cache", "elsewhere"))
    for d in (src, whl, cache, cwd):
        d.mkdir()
    _copy_project(src)
    for d in ("data", "notebooks"):                  # what data-files ship
        shutil.copytree(ROOT / d, src / d, ignore=shutil.ignore_patterns("src", "solutions", "*.pyc"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    r = subprocess.run(pip + ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(whl),
                              str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    wheel = next(whl.glob("asynctc-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    recs = {p.relative_to(ROOT / "data").as_posix() for p in (ROOT / "data").glob("*/*.json")}
    shipped = {n.split(".data/data/share/asynctc/data/", 1)[1] for n in names if "/share/asynctc/data/" in n}
    assert recs and recs == shipped, f"records not in the wheel: {sorted(recs - shipped)}"
    nbs = {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")}
    shipped_nbs = {n.rsplit("/", 1)[1] for n in names if "/share/asynctc/notebooks/" in n}
    assert nbs and nbs == shipped_nbs, f"learner notebooks not in the wheel: {sorted(nbs - shipped_nbs)}"

    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(fresh)
    py = fresh / "bin" / "python"
    # no PYTHONPATH for pip: an asynctc found there would count as installed and not be put into
    # the fresh environment
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run(pip + ["--python", str(py), "install", "-q", "--no-deps", str(wheel)],
                       capture_output=True, text=True, timeout=300, env=clean)
    assert r.returncode == 0, r.stderr[-3000:]
    # the dependencies (not asynctc) come from this environment, after the fresh one's own
    fresh_site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                capture_output=True, text=True).stdout.strip()
    (Path(fresh_site) / "zz_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "ASYNCTC_CACHE", "ASYNCTC_DATA", "ASYNCTC_NOTEBOOKS", "VIRTUAL_ENV")}
    env.update(ASYNCTC_CACHE=str(cache), ASYNCTC_MODE="replay", ASYNCTC_PROGRESS="off",
               MPLBACKEND="Agg", PATH=f"{fresh / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    r = subprocess.run([str(py), "-c", _CHAPTER_SCRIPT], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-5000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert Path(got["file"]).resolve().is_relative_to(fresh.resolve()), got
    assert Path(got["data"]).resolve().is_relative_to(fresh.resolve()), got
    assert Path(got["nb"]).resolve().is_relative_to(fresh.resolve()), got
    assert got["mode"] == "replay" and got["errors"] == 0 and got["replay_said"] and got["cells"] > 10, got
    # and reset restores a chapter from the installed copy
    target = tmp_path / "mine"
    r = subprocess.run([str(py), "-m", "asynctc", "reset", "00", "--dir", str(target)], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "installed with asynctc" in r.stdout, r.stdout + r.stderr
    assert next(target.glob("00_*.ipynb")).read_bytes() == Path(got["nb"]).read_bytes()
