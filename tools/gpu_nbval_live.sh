#!/usr/bin/env bash
# Issue 9 on the H200: live nbval over every chapter, twice in a row (RUNS=1 for once) (every comparison the prose
# makes is re-checked by notebook.claim against the fresh measurement: a flipped conclusion fails
# with the record's numbers), then the course command for chapter 00 with MPLBACKEND=Agg, counting
# the figures it kept. Run from the repository root after the notebooks were rebuilt
# (tools/build_notebooks.py). Logs and JUnit files under $OUT (default build/gpu_nbval_live);
# a short table last. Exits 1 if anything failed, 2 without a live sm_90a GPU.
cd "$(dirname "$0")/.."
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
OUT=${OUT:-build/gpu_nbval_live}
mkdir -p "$OUT"
"$PY" -c 'import sys, asynctc.core.runtime as r; sys.exit(0 if r.runs_live("sm_90a") else 2)' || {
  echo "no live sm_90a GPU here: $("$PY" -c 'import asynctc.core.runtime as r; print(r.why_not_live("sm_90a"))')" >&2
  exit 2; }
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset ASYNCTC_MODE
bad=0
rows=()
for run in $(seq 1 "${RUNS:-2}"); do
  t0=$(date +%s)
  "$PY" -m pytest -q -p no:cacheprovider --nbval notebooks/[0-9][0-9]*_*.ipynb notebooks/solutions/[0-9][0-9]*_*.ipynb \
      --junitxml="$OUT/live_nbval_run$run.xml" >"$OUT/live_nbval_run$run.log" 2>&1 || bad=1
  summary=$(tail -1 "$OUT/live_nbval_run$run.log")
  claims=$(grep -c "ClaimError" "$OUT/live_nbval_run$run.log")
  rows+=("live nbval, run $run | $summary | ClaimError lines: $claims | $(( $(date +%s) - t0 )) s")
  grep -E "ClaimError|^FAILED" "$OUT/live_nbval_run$run.log" | cut -c1-400 | sort -u | head -20
done
MPLBACKEND=Agg "$PY" -m asynctc course 00 04 --out "$OUT/course_agg" >"$OUT/course_agg.log" 2>&1 || bad=1
figs=$("$PY" - "$OUT/course_agg" <<'EOF'
import sys, nbformat, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("0*.ipynb")):
    nb = nbformat.read(p, as_version=4)
    n = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    print(f"{p.stem}: {n} figures", end="; ")
EOF
)
rows+=("course 00 04 with MPLBACKEND=Agg | $figs| $(tail -2 "$OUT/course_agg.log" | head -1)")
echo
printf '%s\n' "${rows[@]}"
exit $bad
