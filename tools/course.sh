#!/usr/bin/env bash
# The course command: set up .venv, then execute every chapter (live on a capable GPU, replay
# elsewhere) into build/course/ (executed notebooks + HTML), one line per chapter.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/tools/setup_env.sh" notebooks
cd "$root"
"$PY" -m asynctc doctor --in-course "$@"
exec "$PY" -m asynctc course "$@"
