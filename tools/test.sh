#!/usr/bin/env bash
# The test command: set up .venv, then the CPU tests (GPU tests skip with their reason unless a
# capable GPU is present) and nbval over every notebook, in one pytest run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/tools/setup_env.sh" test
cd "$root"
export MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1
# nbval over the learner notebooks and the solution notebooks built from the same sources
exec "$PY" -m pytest -q -p no:cacheprovider --nbval notebooks/[0-9][0-9]*_*.ipynb \
    notebooks/solutions/[0-9][0-9]*_*.ipynb tests "$@"
