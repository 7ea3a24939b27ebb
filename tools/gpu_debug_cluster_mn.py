"""Diagnose chapter 06's cluster=2 + MN-major B failure (one GPU call, ~30 s).

Kept as the record of how the bug was found (docs/NOTES.md, fourth session): the failure was the
unmasked shared-memory address in the wgmma descriptor, fixed by smem_desc_addr; since the fix
the chapter 06 checks of cluster + MN-major B pass on the H200 (185/185). This script was not re-run
after the fix.

For each variant: the error word, wrong / unwritten counts and a map of 64x64 blocks of C
(. right, x wrong, u unwritten). Variants: K-major B (control), MN-major B with multicast (the
failing one), MN-major B with MULTICAST=0 (each CTA loads all of B itself, same cluster launch and
remote arrivals): isolates the multicast from the rest of the cluster protocol.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from asynctc import pipeline as P  # noqa: E402
from asynctc import warp_specialization as W  # noqa: E402
from asynctc.core import runtime  # noqa: E402
from asynctc.core.memory import DeviceArray  # noqa: E402



def run(cfg, shape, multicast=1):
    m, n, k = shape
    rng = np.random.default_rng(1)
    a, b, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    defines = {**cfg.defines, "MULTICAST": multicast}
    ck = runtime.compile_kernel(W.SOURCE, W.ENTRY, "sm_90a", defines=defines)
    g = W.WSGemm(cfg, DeviceArray.from_host(a), DeviceArray.from_host(bs), ck=ck)
    g.launcher()()
    err = int(g.err.to_host()[0])
    out = g.out.to_host().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = 1e-2 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-3
    unwritten = ~np.isfinite(out) | (np.abs(out) > 1e30)
    wrong = (np.abs(out - ref) > bound) & ~unwritten
    print(f"{cfg.label()} {shape} multicast={multicast}: err={err:#x} "
          f"wrong={int(wrong.sum())} unwritten={int(unwritten.sum())} grid={g.grid}")
    for r0 in range(0, m, 64):
        line = ""
        for c0 in range(0, n, 64):
            u = unwritten[r0:r0 + 64, c0:c0 + 64].any()
            w = wrong[r0:r0 + 64, c0:c0 + 64]
            line += "u" if u else ("x" if w.any() else ".")
        print(f"  rows {r0:5d} {line}")
    return wrong, unwritten


def decode(cfg, multicast=1):
    """Which element of B each output read: A = a row selector (A[i, k] = 1 where k = i mod 64),
    B = its row index k, then its column index n (small integers, exact in fp16): C[i, n] = the
    k, then the n, of the B element that fed output (i, n)."""
    m, n, k = 2 * cfg.bm, cfg.bn, 64
    a = np.zeros((m, k), np.float16)
    a[np.arange(m), np.arange(m) % 64] = 1
    cfg32 = cfg.replace(out_dtype="float32")
    ck = runtime.compile_kernel(W.SOURCE, W.ENTRY, "sm_90a",
                                defines={**cfg32.defines, "MULTICAST": multicast})
    got = []
    for val in (np.repeat(np.arange(k)[:, None], n, 1), np.repeat(np.arange(n)[None, :], k, 0)):
        b = val.astype(np.float16)                       # K×N (MN-major)
        bs = b if cfg.b_major == "MN" else np.ascontiguousarray(b.T)
        g = W.WSGemm(cfg32, DeviceArray.from_host(a), DeviceArray.from_host(bs), ck=ck)
        g.launcher()()
        got.append(g.out.to_host())
    kk, nn = got
    print(f"decode {cfg.label()} multicast={multicast}")
    for r0 in (0, cfg.bm):
        for row in (r0, r0 + 5, r0 + 70):
            print(f"  row {row:4d} (k {row % 64:2d}): k read "
                  f"{[int(x) for x in kk[row, ::32]]}  n read {[int(x) for x in nn[row, ::32]]}")
    return ck


def main():
    for mc in (1, 0):
        decode(W._cluster("float16").replace(b_major="MN", persistent=False), mc)
    decode(W._ws2("float16").replace(b_major="MN"), 1)
    if "--decode" in sys.argv:
        return 0
    base = W._cluster("float16")
    for persistent in (False, True):
        for bm, bn in ((128, 256), (256, 128)):
            cfg = base.replace(persistent=persistent, bm=bm, bn=bn)
            for shape in ((2 * bm, bn, 128), (512, 768, 1024)):
                if shape[0] % (2 * bm):
                    continue
                run(cfg.replace(b_major="K"), shape)
                run(cfg.replace(b_major="MN"), shape, 1)
                run(cfg.replace(b_major="MN"), shape, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
