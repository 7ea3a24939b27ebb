#!/usr/bin/env bash
# Run tools/gpu_ch02_ch03.py one check group per process: a kernel fault (e.g. an illegal
# instruction) ends its process's CUDA context, and the groups after it must still report.
# Uses $PY, else .venv/bin/python, else python3 (the GPU machine's). Exits 1 if any check failed,
# 2 without a live sm_90a GPU.
cd "$(dirname "$0")/.."
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
"$PY" -c 'import sys, asynctc.core.runtime as r; sys.exit(0 if r.runs_live("sm_90a") else 2)' || {
  echo "no live sm_90a GPU here: $("$PY" -c 'import asynctc.core.runtime as r; print(r.why_not_live("sm_90a"))')" >&2
  exit 2; }
bad=0
for g in "TMA load" "TMA store" "OOB .*float16" "OOB .*float32" "OOB .*uint8" "NaN" "mbarrier" \
         "copy kernels" "cp.async GEMM.*s1" "cp.async GEMM.*s2" "cp.async GEMM.*s3" "cp.async GEMM.*s4" \
         "smem pipeline" "bandwidth preview"; do
  out=$(timeout 120 "$PY" tools/gpu_ch02_ch03.py --only "$g" 2>&1) || bad=1
  echo "$out" | grep -E "^(PASS|FAIL|ERROR)|^   " | cut -c1-200
done
exit $bad
