#!/usr/bin/env bash
# Run tools/gpu_ch02_ch03.py one check group per process: a kernel fault (e.g. an illegal
# instruction) ends its process's CUDA context, and the groups after it must still report.
cd "$(dirname "$0")/.."
for g in "TMA load" "TMA store" "OOB .*float16" "OOB .*float32" "OOB .*uint8.*\(-3" "OOB .*uint8.*\(40" "OOB .*uint8.*\(-20" "OOB .*uint8.*\(100" "NaN" "mbarrier" "copy kernels" "cp.async GEMM.*s1" "cp.async GEMM.*s2" "cp.async GEMM.*s3" "cp.async GEMM.*s4" "smem pipeline" "bandwidth preview"; do
  timeout 120 python3 tools/gpu_ch02_ch03.py --only "$g" 2>&1 | grep -E "^(PASS|FAIL|ERROR)|^   " | cut -c1-200
done
