#!/usr/bin/env bash
# Before sending the working tree to a GPU machine (whose copy has no .git, or a stale one): write
# build/git_commit = "<HEAD sha, -dirty when tracked files differ> <digest of asynctc's sources>".
# Carry build/git_commit with the tree; asynctc.core.records.git_commit() uses the stamp there only when
# the digest still matches the sources, so a stale stamp never names the wrong commit.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
sha=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- || sha="$sha-dirty"
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
digest=$(PYTHONPATH=. "$py" -c "from asynctc.core.records import source_digest; print(source_digest())")
echo "$sha $digest" > build/git_commit
echo "build/git_commit: $sha $digest"
