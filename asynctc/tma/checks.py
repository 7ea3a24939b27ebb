"""Chapter 03 — the record suite ``tma_checks``: the chapter's GPU-only checks, run once and
recorded so that replay shows what the GPU showed (issue 22 §6).

* the mbarrier life cycle (:func:`~asynctc.tma.mbarrier_lifecycle`): each recorded step beside the
  expected one, the two boxes read back, the bounded wait's error word;
* the swizzle model, byte for byte: every tile of :func:`~asynctc.tma.swizzle_tiles` loaded and
  stored by TMA and compared with :meth:`~asynctc.models.layout.SmemTile.scatter`;
* the out-of-bound zero fill: boxes hanging past each edge of a 48×128 tensor (loads, and stores
  where the start is not negative).

Each row is a :class:`~asynctc.tma.ByteCheck` as a dict, with its tile; fresh random inputs per
box, poisoned destinations. The same checks are the GPU tests of ``tests/test_tma.py``. Never plots.
"""

from __future__ import annotations

import numpy as np

from ..core import records
from ..models.layout import SmemTile
from .launch import decode_error, load_box, store_box, swizzle_tiles
from .lifecycle import lifecycle_table, mbarrier_lifecycle

#: The zero-fill boxes: (tile, start) on a 48×128 tensor; each start hangs past an edge or before it.
OOB_TILES = (SmemTile(16, 64, "float16", 128), SmemTile(16, 32, "float32", 0),
             SmemTile(24, 64, "uint8", 64))
OOB_STARTS = ((-3, -16), (40, 112), (-20, 120), (100, 0))
OOB_SHAPE = (48, 128)


def _row(kind: str, tile: SmemTile, chk) -> dict:
    return {"kind": kind, "tile": repr(tile), "dtype": str(tile.dtype), "swizzle": tile.swizzle,
            **chk.as_dict()}


def measure_tma_checks(rng=None) -> dict:
    """Run every check once on the GPU (about a second of kernels) and return the rows."""
    rng = rng if rng is not None else np.random.default_rng()
    run = mbarrier_lifecycle(rng=rng)
    swz = []
    for t in swizzle_tiles():
        swz.append(_row("load", t, load_box(
            t, shape=(64, 4 * t.cols + 16 // t.itemsize * 3),
            start=(int(rng.integers(0, 64 - t.rows)), int(rng.integers(0, 3)) * t.cols), rng=rng)))
        swz.append(_row("store", t, store_box(t, shape=(48, 3 * t.cols), start=(5, t.cols), rng=rng)))
    oob = []
    for t in OOB_TILES:
        for start in OOB_STARTS:
            if start[1] * t.itemsize % 16:
                continue                        # refused in Python (tma.check_box_start)
            oob.append({**_row("load", t, load_box(t, shape=OOB_SHAPE, start=start, rng=rng)),
                        "start": list(start)})
            if min(start) >= 0:
                oob.append({**_row("store", t, store_box(t, shape=OOB_SHAPE, start=start, rng=rng)),
                            "start": list(start)})
    return {"lifecycle": {"steps": run.steps, "boxes_ok": run.boxes_ok, "err": list(run.err),
                          "tx_bytes": run.tx_bytes, "passed": run.passed},
            "swizzle": swz, "oob": oob}


def lifecycle_lines(results: dict) -> list[str]:
    """The recorded life cycle as a table, then one line: boxes and the bounded wait's error word."""
    lc = results["lifecycle"]

    def word(w: int) -> str:
        return f"{w:#x} = " + (decode_error(w) or "no error")
    return [lifecycle_table(lc["steps"]),
            f"boxes read back equal the tensor: {lc['boxes_ok']}; error words (code | wait site << 8): "
            f"{word(lc['err'][0])}; {word(lc['err'][1])}, step 6 as intended; all as expected: "
            f"{lc['passed']}"]


def swizzle_lines(results: dict) -> list[str]:
    """Per dtype: boxes loaded and stored that matched the model byte for byte."""
    rows = results["swizzle"]
    out = [f"{sum(r['passed'] for r in rows)}/{len(rows)} TMA loads and stores match the swizzle "
           f"model byte for byte ({sum(r['nbytes'] for r in rows)} bytes compared)"]
    for dt in dict.fromkeys(r["dtype"] for r in rows):
        rs = [r for r in rows if r["dtype"] == dt]
        modes = sorted({r["swizzle"] for r in rs})
        out.append(f"  {dt:14s} swizzle {'/'.join(map(str, modes))} B: {sum(r['passed'] for r in rs)}/"
                   f"{len(rs)}")
    return out


def oob_lines(results: dict) -> list[str]:
    """One line per out-of-bound box: tile, start, load or store, matched or not."""
    return [f"  {r['kind']:5s} {r['tile']:40s} at {tuple(r['start'])!s:10s}: "
            f"{'zero fill as promised' if r['kind'] == 'load' else 'clipped, nothing outside written'}"
            f" — {'✓' if r['passed'] else '✗ ' + str(r['mismatches']) + ' bytes differ'}"
            for r in results["oob"]]


def show_lifecycle(rec: records.Record) -> None:
    """Chapter 03 §3's cell: the record's label and its life-cycle table. Raises AssertionError
    unless every recorded step matched the PTX ISA's answer and both boxes read back intact: the
    markdown after the cell states both as fixed sentences ("✓ marks the PTX ISA's answer",
    "step 6 waits in vain, on purpose"), so a re-measurement that flips either stops the notebook."""
    lc = rec.results["lifecycle"]
    print(rec.label())
    print(lifecycle_table(lc["steps"]))
    assert lc["passed"] and lc["boxes_ok"], "the recorded life cycle differs from the PTX ISA's rule"


def summarize_tma_checks(rec: records.Record) -> str:
    res = rec.results
    ok = res["lifecycle"]["passed"] and all(r["passed"] for r in res["swizzle"] + res["oob"])
    return (f"tma_checks: life cycle {'as expected' if res['lifecycle']['passed'] else 'DIFFERS'}; "
            f"{swizzle_lines(res)[0]}; {sum(r['passed'] for r in res['oob'])}/{len(res['oob'])} "
            f"out-of-bound boxes as documented; all passed: {ok}")


SUITES = {"tma_checks": (measure_tma_checks, summarize_tma_checks, "sm_90a")}
