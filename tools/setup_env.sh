#!/usr/bin/env bash
# Shared by tools/test.sh and tools/course.sh: make .venv (Python >= 3.11) and install asynctc with
# the given extras into it. ASYNCTC_NO_INSTALL=1 skips this (e.g. on a GPU machine with no package
# registry, where the packages are already installed). PYTHON chooses the interpreter.
set -euo pipefail
extras="${1:-test}"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ "${ASYNCTC_NO_INSTALL:-0}" = "1" ]; then
  PY=${PYTHON:-python3}
else
  base=${PYTHON:-python3}
  if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "asynctc needs Python >= 3.11; '$base' is $("$base" --version 2>&1). Set PYTHON=/path/to/python3.11+" >&2
    exit 1
  fi
  # A .venv made by an older or broken interpreter is rebuilt rather than reused.
  if [ -x .venv/bin/python ] && ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "removing .venv: it was made with $(.venv/bin/python --version 2>&1)"
    rm -rf .venv
  fi
  if [ ! -x .venv/bin/python ]; then
    echo "setting up .venv (under a minute when pip has the wheels cached; the first download of the CUDA, numba and Jupyter wheels takes up to three minutes)"
    "$base" -m venv .venv
  fi
  PY="$root/.venv/bin/python"
  log=.venv/install.log
  if ! { "$PY" -m pip install -q --disable-pip-version-check --upgrade pip &&
         "$PY" -m pip install -q --disable-pip-version-check -e ".[$extras]"; } >"$log" 2>&1; then
    grep -v '^WARNING: Location' "$log" | tail -30 >&2
    echo "pip install failed (full log: $log). If .venv is damaged: rm -rf .venv and run again." >&2
    exit 1
  fi
  "$PY" -c "import asynctc, cuda.core, numba.cuda" || {
    echo "asynctc does not import in .venv; rm -rf .venv and run again" >&2; exit 1; }
fi
export PY
