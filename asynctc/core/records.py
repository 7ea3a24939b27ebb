"""Measurements with provenance: ``data/<gpu>/<suite>.json``, live or replayed.

A record is ``{"suite", "schema", "provenance", "results"}``. ``provenance`` says where and when the
numbers came from: GPU name, compute capability, SM count, clocks at the start and end of the run
(``nvidia-smi``, MHz), driver, NVRTC, package versions, Python, UTC date and git commit.
:func:`load_or_measure` runs the measurement when this machine runs the suite's kernels live, and
otherwise loads the newest record, so a notebook's figure is either fresh or labelled as replayed.
Nothing measured is ever typed into the code.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from .. import __version__
#: The installed (or checked-out) ``asynctc`` package folder.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
from . import runtime

SCHEMA = 1
REQUIRED_PROVENANCE = ("gpu", "compute_capability", "sm_count", "clocks_start", "clocks_end",
                       "driver", "nvrtc", "packages", "python", "date", "git_commit")


class RecordError(runtime.AsyncTCError):
    """A record is missing or malformed."""


def installed_data_dir() -> Path | None:
    """The records installed with the wheel (``share/asynctc/data`` of the environment, from
    pyproject's ``data-files``), or None."""
    import sysconfig
    for base in dict.fromkeys([sysconfig.get_path("data"), sys.prefix, sys.base_prefix]):
        d = Path(base) / "share" / "asynctc" / "data"
        if d.is_dir() and any(d.glob("*/*.json")):
            return d
    return None


def data_dir() -> Path:
    """The records folder: ``ASYNCTC_DATA``; else ``data/`` at the repository root (a checkout or
    an editable install); else the copy installed with the wheel (:func:`installed_data_dir`).
    New records are written here too."""
    env = os.environ.get("ASYNCTC_DATA")
    if env:
        return Path(env)
    repo = PACKAGE_DIR.parent / "data"
    if repo.is_dir() or (PACKAGE_DIR.parent / "pyproject.toml").is_file():
        return repo
    return installed_data_dir() or repo


def nvidia_smi_clocks() -> dict[str, Any]:
    """Current and maximum SM/memory clocks (MHz), temperature and power, via ``nvidia-smi``.

    Returns ``{}`` where ``nvidia-smi`` is missing. Read-only: the course never changes clocks.
    """
    q = "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw,driver_version"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0 or not r.stdout.strip():
        return {}
    vals = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
    keys = ["sm_mhz", "max_sm_mhz", "mem_mhz", "max_mem_mhz", "temp_c", "power_w", "driver"]
    out: dict[str, Any] = {}
    for k, v in zip(keys, vals):
        try:
            out[k] = float(v) if k != "driver" else v
        except ValueError:
            out[k] = v
    return out


def _pkg_versions() -> dict[str, str]:
    names = ["asynctc", "cuda-core", "cuda-bindings", "cuda-pathfinder", "nvidia-cuda-nvrtc",
             "numpy", "numba", "numba-cuda", "ml_dtypes", "torch", "cupy-cuda13x"]
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    out["asynctc"] = __version__
    return out


def source_digest() -> str:
    """sha256 (first 16 hex digits) of the package's own sources (``asynctc/**/*.py|.cu|.cuh``,
    path and content): what a commit stamp is checked against."""
    root = PACKAGE_DIR
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".cu", ".cuh") and p.is_file()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def git_commit() -> str:
    """The commit the package's sources are at: ``ASYNCTC_GIT_COMMIT`` if set; else the stamp that
    ``tools/stamp_commit.sh`` wrote to ``build/git_commit`` when its source digest matches the
    sources here (a copy of the tree sent to a GPU machine, whose own .git may be absent or stale);
    else git's HEAD, with ``-dirty`` when tracked files differ; else "unknown"."""
    if os.environ.get("ASYNCTC_GIT_COMMIT"):
        return os.environ["ASYNCTC_GIT_COMMIT"]
    root = PACKAGE_DIR.parent
    stamp = root / "build" / "git_commit"
    if stamp.is_file():
        parts = stamp.read_text().split()
        if len(parts) == 2 and re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", parts[0]) \
                and parts[1] == source_digest():
            return parts[0]
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                           text=True, timeout=10)
        sha = r.stdout.strip() if r.returncode == 0 else ""
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        sha, dirty = "", ""
    if re.fullmatch(r"[0-9a-f]{7,40}", sha):
        return sha + ("-dirty" if dirty else "")
    return "unknown"


def provenance_start() -> dict[str, Any]:
    """Provenance fields known before a measurement (clocks at start included)."""
    info = runtime.device_info()
    if info is None:
        raise runtime.NoGPUError("provenance needs a GPU")
    smi = nvidia_smi_clocks()
    return {
        "gpu": info.name, "compute_capability": f"{info.cc[0]}.{info.cc[1]}",
        "sm_count": info.sm_count, "max_sm_clock_mhz_attr": info.max_sm_clock_khz / 1000,
        "l2_bytes": info.l2_bytes,
        "clocks_start": smi, "clocks_end": {},
        "driver": smi.get("driver") or f"CUDA {info.driver_version // 1000}.{info.driver_version % 1000 // 10}",
        "driver_cuda_version": info.driver_version,
        "nvrtc": "{}.{}".format(*runtime.nvrtc_version()),
        "packages": _pkg_versions(),
        "python": sys.version.split()[0],
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
    }


@dataclasses.dataclass
class Record:
    """One suite's measurement: ``provenance`` (dict), ``results`` (JSON-able), ``live`` (bool)."""

    suite: str
    provenance: dict[str, Any]
    results: Any
    live: bool = False
    path: Path | None = None

    def label(self) -> str:
        """For figure titles: "measured now on NVIDIA H200" or "replayed: NVIDIA H200, 2026-11-29"."""
        p = self.provenance
        date = str(p.get("date", "?"))[:10]
        where = f"{p.get('gpu', '?')}, driver {p.get('driver', '?')}"
        if self.live:
            return f"measured now on {where}"
        return f"replayed: measured on {where}, {date}"

    def to_json(self) -> dict:
        return {"suite": self.suite, "schema": SCHEMA, "provenance": self.provenance,
                "results": self.results}


def validate(doc: dict) -> None:
    """Check a record's schema; raises :class:`RecordError` naming the missing or wrong field."""
    for k in ("suite", "schema", "provenance", "results"):
        if k not in doc:
            raise RecordError(f"record has no field {k!r}")
    if doc["schema"] != SCHEMA:
        raise RecordError(f"schema={doc['schema']!r}: this asynctc reads schema {SCHEMA}")
    for k in REQUIRED_PROVENANCE:
        if k not in doc["provenance"]:
            raise RecordError(f"record {doc['suite']!r}: provenance has no field {k!r}")
    if not doc["results"]:
        raise RecordError(f"record {doc['suite']!r}: results are empty")


def save(rec: Record, slug: str | None = None) -> Path:
    """Write ``data/<slug>/<suite>.json`` (slug from the GPU name, e.g. ``h200``)."""
    slug = slug or (runtime.device_info().slug if runtime.device_info() else "unknown")
    doc = rec.to_json()
    validate(doc)
    path = data_dir() / slug / f"{rec.suite}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    rec.path = path
    return path


def available(suite: str) -> list[Path]:
    """Record files for ``suite``, newest measurement first."""
    paths = list(data_dir().glob(f"*/{suite}.json"))

    def date(p: Path) -> str:
        try:
            return json.loads(p.read_text())["provenance"]["date"]
        except Exception:  # noqa: BLE001
            return ""
    return sorted(paths, key=date, reverse=True)


def load(suite: str, slug: str | None = None) -> Record:
    """Load the record of ``suite`` (for GPU ``slug``, else the newest). Raises :class:`RecordError`."""
    if slug:
        path = data_dir() / slug / f"{suite}.json"
        if not path.is_file():
            raise RecordError(f"no record {path.name} for GPU {slug!r} under data/")
    else:
        paths = available(suite)
        if not paths:
            raise RecordError(f"no record for suite {suite!r} under data/: run "
                              f"`python -m asynctc record {suite}` on a GPU")
        path = paths[0]
    doc = json.loads(path.read_text())
    validate(doc)
    return Record(doc["suite"], doc["provenance"], doc["results"], live=False, path=path)


def load_or_none(suite: str, slug: str | None = None) -> Record | None:
    """:func:`load`, or None where ``data/`` holds no such record (a cell that says "not recorded yet")."""
    try:
        return load(suite, slug)
    except RecordError:
        return None


def measure(suite: str, fn: Callable[[], Any]) -> Record:
    """Run ``fn`` on the GPU and wrap its results with provenance (clocks before and after)."""
    prov = provenance_start()
    results = fn()
    prov["clocks_end"] = nvidia_smi_clocks()
    from .bench import reduction_settings
    # the cuBLAS baseline's split-K reduction setting as it stood when the suite ended (the
    # baseline pins it to fp32: bench.pin_fp32_reduction); empty without torch
    prov["cublas_reduction"] = reduction_settings()
    return Record(suite, prov, results, live=True)


def load_or_measure(suite: str, fn: Callable[[], Any], arch: str = "sm_90a",
                    save_live: bool | None = None) -> Record:
    """Measure live when this machine runs ``arch`` kernels live, else replay ``data/``.

    ``save_live``: write the fresh record to ``data/`` (default: only when ``ASYNCTC_RECORD=1``, so
    running the course does not rewrite the committed records).
    """
    if runtime.runs_live(arch):
        rec = measure(suite, fn)
        if save_live if save_live is not None else os.environ.get("ASYNCTC_RECORD") == "1":
            save(rec)
        return rec
    return load(suite)
