#!/usr/bin/env bash
# Live nbval of the named notebooks on the GPU machine, within LIMIT seconds (default 560), in one
# pytest run; per-notebook cell seconds from the JUnit file. Everything under $OUT/r.tgz (the device
# tool returns few files). Usage: LIMIT=560 bash tools/gpu_live_nb.sh notebooks/0[0-5]*.ipynb
cd "$(dirname "$0")/.."
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
OUT=${OUT:-build/gpu_live_nb}
mkdir -p "$OUT/logs"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset ASYNCTC_MODE
timeout "${LIMIT:-560}" "$PY" -m pytest -q -p no:cacheprovider --nbval "$@" \
    --junitxml="$OUT/logs/live.xml" >"$OUT/logs/live.log" 2>&1
rc=$?
"$PY" - "$OUT/logs/live.xml" <<'PY' | tee "$OUT/logs/durations.txt"
import sys, collections, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as e:
    sys.exit(f"no JUnit file: {e}")
t, bad = collections.defaultdict(float), collections.Counter()
for tc in root.iter("testcase"):
    f = tc.get("classname", "") or tc.get("file", "")
    f = f.split("::")[0]
    t[f] += float(tc.get("time", 0))
    bad[f] += any(ch.tag in ("failure", "error") for ch in tc)
for f in sorted(t):
    print(f"{t[f]:7.1f} s  failed {bad[f]}  {f}")
print(f"{sum(t.values()):7.1f} s total")
PY
tail -3 "$OUT/logs/live.log"
grep -E "ClaimError|^FAILED|^ERROR" "$OUT/logs/live.log" | cut -c1-300 | sort -u | head -30
echo "pytest rc=$rc"
tar czf "$OUT/r.tgz" -C "$OUT" logs
exit $rc
