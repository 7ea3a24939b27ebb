#!/usr/bin/env bash
# Shared by tools/test.sh and tools/course.sh: make .venv (once) and install asynctc with the given
# extras into it. ASYNCTC_NO_INSTALL=1 skips this (e.g. on a GPU machine with no package registry,
# where the packages are already installed).
set -euo pipefail
extras="${1:-test}"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ "${ASYNCTC_NO_INSTALL:-0}" = "1" ]; then
  PY=${PYTHON:-python3}
else
  if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
  fi
  PY="$root/.venv/bin/python"
  "$PY" -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  "$PY" -m pip install -q --disable-pip-version-check -e ".[$extras]" 2>&1 | grep -v '^WARNING: Location' || true
  "$PY" -c "import asynctc, cuda.core, numba.cuda, nbval" >/dev/null
fi
export PY
