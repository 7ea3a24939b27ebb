"""What the one-command GPU scripts (tools/gpu_ch05.py, gpu_ch06.py, gpu_ch07.py, gpu_matmul.py,
gpu_swizzle.py, gpu_ch06_limit.py) share: their --out/--record/--quick options, the start (no live
sm_90a GPU: exit 2; else the device header and a time-stamped printer), the end of a record run
(measure with provenance, results.json, optionally data/<gpu>/<suite>.json copied into the output
folder, the summary, "done"; exit 1 with nothing recorded when the measurement raises), and
Nsight Compute (find it, the counters it knows, profile a child: asynctc.core.ncu, re-exported).

A script imports it as ``gpu_common`` (its own folder is on ``sys.path`` when run as
``python tools/gpu_X.py``; the scripts put it there themselves for importers such as the tests).
Importing this module puts the repository root first on ``sys.path``, so ``asynctc`` is the
checkout's package.
"""
import argparse
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from asynctc.core import records, runtime  # noqa: E402

Say = Callable[[str], None]


def parser(doc: str, default_out: str, suite: str, quick_help: str,
           out_help: str = "folder for results.json") -> argparse.ArgumentParser:
    """The parser every script starts from: its description is the first line of ``doc``;
    ``--out`` (default ``$OUT``, else ``default_out``), ``--record`` (write
    ``data/<gpu>/<suite>.json``) and ``--quick`` (help ``quick_help``). The script adds its own
    options after these three."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", default_out),
                    help=f"{out_help} (default: $OUT)")
    ap.add_argument("--record", action="store_true", help=f"write data/<gpu>/{suite}.json")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    return ap


def start(out: str | os.PathLike, *, long_header: bool = True) -> tuple[Path, Say] | None:
    """Create the output folder ``out``; without a live sm_90a GPU print
    ``no live sm_90a GPU: <why>`` and return None (the script then exits 2). Otherwise print the
    device header — name, SM count, and with ``long_header`` the maximum SM clock (MHz, from the
    device attribute) and the opt-in shared memory per block (bytes) — and the NVRTC version, and
    return ``(out_dir, say)``: ``say(s)`` prints ``s`` after the seconds since this call."""
    t0 = time.time()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not runtime.runs_live("sm_90a"):
        print(f"no live sm_90a GPU: {runtime.why_not_live('sm_90a')}")
        return None
    info = runtime.device_info()
    nvrtc = ".".join(map(str, runtime.nvrtc_version()))
    if long_header:
        print(f"{info.name}, {info.sm_count} SMs, max SM clock {info.max_sm_clock_khz / 1000:.0f} "
              f"MHz, smem opt-in {info.smem_optin_bytes} B, NVRTC {nvrtc}", flush=True)
    else:
        print(f"{info.name}, {info.sm_count} SMs, NVRTC {nvrtc}", flush=True)

    def say(s: str) -> None:
        print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)

    return out_dir, say


def record_suite(suite: str, measure: Callable[[], Any], summarize: Callable[[records.Record], str],
                 out_dir: Path, say: Say, save: bool, on_failure: Callable[[], None] | None = None,
                 wrote: Callable[[], str] | None = None) -> int:
    """Run ``measure`` under ``records.measure(suite, ...)`` (provenance, clocks before and after)
    and return the script's exit code.

    When it raises: print the traceback, call ``on_failure`` (e.g. to keep what was gathered before
    the measurement), say ``FAILED (first failure above); nothing recorded`` and return 1.
    Otherwise write ``out_dir/results.json`` (the record), say ``wrote()`` (default:
    ``wrote <out_dir>/results.json``); with ``save`` write ``data/<gpu>/<suite>.json``
    (records.save) and copy it into ``out_dir`` — the output folder comes back from the GPU
    machine, data/ does not; then print a blank line, ``summarize(record)`` and ``done``, and
    return 0.
    """
    try:
        rec = records.measure(suite, measure)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        if on_failure is not None:
            on_failure()
        say("FAILED (first failure above); nothing recorded")
        return 1
    (out_dir / "results.json").write_text(json.dumps(rec.to_json(), indent=1))
    say(wrote() if wrote is not None else f"wrote {out_dir / 'results.json'}")
    if save:
        path = records.save(rec)
        shutil.copy(path, out_dir / path.name)
        print("wrote", path, "and", out_dir / path.name)
    print()
    print(summarize(rec))
    say("done")
    return 0


# ---- Nsight Compute: asynctc.core.ncu, re-exported for the scripts -------------------------------

from asynctc.core.ncu import find_ncu, ncu_metrics, ncu_profile  # noqa: E402,F401
