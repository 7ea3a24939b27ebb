#!/usr/bin/env bash
# Before sending the working tree to a GPU machine without .git: write build/git_commit (HEAD, with
# -dirty when tracked files differ) so that records made there carry the right commit. Carry
# build/git_commit with the tree; asynctc.records.git_commit() reads it where .git is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
sha=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- || sha="$sha-dirty"
echo "$sha" > build/git_commit
echo "build/git_commit: $sha"
