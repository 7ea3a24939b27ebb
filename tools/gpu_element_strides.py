"""GPU check (H200, ~10 s): TMA element strides write exactly what the model says.

    .venv/bin/python tools/gpu_element_strides.py        # details to $OUT/element_strides.json

For every case of :data:`asynctc.tma.STRIDE_CASES` (dtype, row-major box, element strides, swizzle;
ranks 2-4), one TMA load of a fresh random tensor into shared memory that was filled with a
sentinel: the raw shared memory (tile, padding and the bytes after it) must equal the model
(:meth:`TensorMapSpec.smem_tile` + :func:`asynctc.tma.strided_box`), and the mbarrier armed with the
model's byte count (:attr:`TensorMapSpec.box_bytes`) must end the phase with a tx-count of exactly 0
(``TX_PROBE`` in kernels/tma.cu). Then:

* the driver's rule that the innermost element stride is ignored: a map encoded with an innermost
  stride of 2 (refused by asynctc's validation, so encoded behind its back) must load the whole
  64×64 fp16 box — 8192 bytes, not 4096 — and an expect_tx of 4096 must *not* be exact;
* negative controls: expect_tx 16 bytes short or long must not be exact (the check can fail).

Every check runs even if one fails; the exit status is 1 if any did; a table is printed last.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asynctc import tma  # noqa: E402
from asynctc.core import runtime  # noqa: E402

ROWS: list[tuple[str, str, str]] = []
DETAILS: list[dict] = []


def run(name: str, fn, want: str) -> None:
    t0 = time.perf_counter()
    try:
        r, ok = fn()
        d = r.as_dict()
        detail = (f"model {r.model_bytes} B, tx {r.tx_bytes} B, written ≈{r.written_extent} B, "
                  f"image {'=' if r.image.passed else '≠'} model ({r.image.mismatches} bad), "
                  f"tx exact {r.tx_exact}, timed out {r.timed_out}")
    except Exception as e:  # noqa: BLE001 - report and go on
        ok, d, detail = False, {"error": repr(e)}, f"{type(e).__name__}: {e}"
        traceback.print_exc(limit=3)
    status = "PASS" if ok else "FAIL"
    ROWS.append((status, name, detail))
    DETAILS.append({"name": name, "want": want, "status": status, **d})
    print(f"{status:5s} {name:48s} {detail}  [{time.perf_counter() - t0:.1f}s]", flush=True)


def main() -> int:
    if not runtime.runs_live("sm_90a"):
        print("no live sm_90a GPU:", runtime.why_not_live("sm_90a"))
        return 2
    for dt, box, es, sw in tma.STRIDE_CASES:
        run(f"{dt} box {box} es {es} sw {sw}",
            lambda dt=dt, box=box, es=es, sw=sw: (lambda r: (r, r.passed))(
                tma.load_strided(dt, box, es, swizzle=sw)),
            "image = model and tx exact")
    run("inner stride 2 (unchecked): whole box",
        lambda: (lambda r: (r, r.passed and r.model_bytes == 8192))(
            tma.load_strided("float16", (64, 64), (1, 1), shape=(256, 256),
                             unchecked_inner_stride=2)),
        "driver ignores the inner stride: 8192 B written, tx 8192 exact")
    run("inner stride 2 (unchecked): expect_tx 4096",
        lambda: (lambda r: (r, r.timed_out or r.tx_exact is False))(
            tma.load_strided("float16", (64, 64), (1, 1), shape=(256, 256),
                             unchecked_inner_stride=2, tx_delta=-4096)),
        "the naive count 4096 is not exact")
    for delta in (-16, 16):
        run(f"control: expect_tx model{delta:+d}",
            lambda delta=delta: (lambda r: (r, not r.passed and (r.timed_out or r.tx_exact is False)))(
                tma.load_strided("float16", (64, 64), (2, 1), tx_delta=delta)),
            "not exact (the probe can fail)")
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    info = runtime.device_info()
    (out / "element_strides.json").write_text(json.dumps(
        {"device": info.name if info else None, "driver": info.driver_version if info else None,
         "checks": DETAILS}, indent=1, default=str))
    print("\n" + "=" * 100)
    for status, name, detail in ROWS:
        print(f"{status:5s} {name:48s} {detail}")
    bad = sum(s != "PASS" for s, _, _ in ROWS)
    print(f"{len(ROWS) - bad}/{len(ROWS)} passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
