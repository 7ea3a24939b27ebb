"""The GEMM's checks: the cases :func:`asynctc.matmul` is verified on, and the check of one case.

:data:`AWKWARD_SHAPES` (every size of {1, 7, 129, 1000, 4095} in every position), the small
non-square table, a persistent shape with partial tiles everywhere, device-operand cases
(:func:`matmul_cases`), the configuration each gets (:func:`case_config`) and
:func:`check_matmul_case` (fresh random operands, poisoned output, every element against float64
with an elementwise bound). Used by tests/test_matmul.py, the ``matmul`` suite and the notebook.
"""

from __future__ import annotations

import numpy as np

from .. import pipeline as P
from ..core import checks
from ..core.memory import DeviceArray
from ..warp_specialization.config import WSConfig, _fail
from .config import matmul_config
from .operands import TMA_ALIGN
from .plan import matmul

#: Awkward shapes (M, N, K) from {1, 7, 129, 1000, 4095}: every size in every position, odd and
#: single-row/-column edges, K tails of 1..63, more tiles than SMs — each with a (dtype, B layout,
#: out dtype) of its own so that the 8 combinations are all covered (see :func:`matmul_cases`).
AWKWARD_SHAPES = ((1, 1, 1), (7, 7, 7), (1, 129, 1000), (129, 1, 7), (7, 1000, 129),
                  (129, 129, 129), (1000, 7, 4095), (4095, 129, 7), (129, 4095, 1000),
                  (1000, 1000, 1000), (4095, 1000, 129), (1000, 4095, 7))
#: The non-square table at small scale (÷ 8 in the large dims), thin M kept.
SMALL_NONSQUARE = ((1024, 1024, 128), (128, 1024, 1024), (512, 512, 2048), (64, 1024, 1024),
                   (128, 1024, 1024), (256, 1024, 1024))
#: More tiles than SMs with edges in every dimension: the persistent loop and the ring counter
#: cross tiles whose last row, column and k-tile are partial.
PERSISTENT_EDGE_SHAPE = (2049, 4097, 200)
COMBOS = tuple((dt, bl, od) for dt in ("float16", "bfloat16") for bl in ("KxN", "NxK")
               for od in ("input", "float32"))


def matmul_cases() -> list[dict]:
    """The GPU checks of :func:`matmul` (tests/test_matmul.py and tools/gpu_matmul.py): each a dict
    (m, n, k, dtype, b_layout, out_dtype, operands "host" | "device"). The awkward shapes rotate
    through :data:`COMBOS`; (7, 7, 7) and (129, 129, 129) run all 8; the small non-square table
    and the persistent shape in both B layouts; device-operand cases (aligned rows, odd N)."""
    out = []

    def add(shape, dt, bl, od, operands="host"):
        m, n, k = shape
        out.append(dict(m=m, n=n, k=k, dtype=dt, b_layout=bl,
                        out_dtype=dt if od == "input" else od, operands=operands))
    for i, shape in enumerate(AWKWARD_SHAPES):
        combos = COMBOS if shape in ((7, 7, 7), (129, 129, 129)) else (COMBOS[i % len(COMBOS)],)
        for c in combos:
            add(shape, *c)
    for i, shape in enumerate(SMALL_NONSQUARE):
        for bl in ("KxN", "NxK"):
            add(shape, ("float16", "bfloat16")[i % 2], bl, "input")
    for bl in ("KxN", "NxK"):
        add(PERSISTENT_EDGE_SHAPE, "bfloat16", bl, "input")
    # DeviceArray operands: rows 16-byte aligned (K, and N for K×N, multiples of 8); odd N with
    # B N×K (C's rows 14 bytes: no TMA store, the register epilogue's scalar path); single rows
    # of 14 bytes (one row needs no aligned pitch: its stride is never used)
    add((129, 7, 136), "float16", "NxK", "input", "device")
    add((129, 1000, 1000), "bfloat16", "KxN", "float32", "device")
    add((1, 1, 7), "float16", "NxK", "float32", "device")
    return out


def case_config(case: dict) -> WSConfig:
    """The configuration :func:`matmul` picks for ``case`` (for precompiling)."""
    c_aligned = case["operands"] == "host" or \
        (case["n"] * checks.np_dtype(case["out_dtype"]).itemsize) % TMA_ALIGN == 0
    return matmul_config(case["m"], case["n"], case["k"], case["dtype"], case["b_layout"],
                         out_dtype=case["out_dtype"], c_rows_aligned=c_aligned)


def check_matmul_case(case: dict, rng=None) -> checks.ElementCheck:
    """Run :func:`matmul` on ``case`` with fresh random operands (standard normal, rounded to the
    dtype) and compare every element with float64 (:func:`asynctc.pipeline.compare_elementwise`:
    |C − ref| ≤ K · 2^-21 · (|A|·|B|) + output rounding; poison left unwritten fails). Host cases
    get a poisoned padded output from :func:`matmul`; device cases pass a poisoned ``out``."""
    rng = rng if rng is not None else np.random.default_rng()
    m, n, k, dt = case["m"], case["n"], case["k"], case["dtype"]
    a, b, bt = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt, b_major="K"), rng)
    bs = b if case["b_layout"] == "KxN" else bt
    label = (f"matmul {m}x{n}x{k} {dt} B:{case['b_layout']} out:{case['out_dtype']} "
             f"{case['operands']}")
    if case["operands"] == "host":
        c = matmul(a, bs, b_layout=case["b_layout"], out_dtype=case["out_dtype"])
    else:
        dc = DeviceArray.poisoned((m, n), checks.np_dtype(case["out_dtype"]))
        matmul(DeviceArray.from_host(a), DeviceArray.from_host(bs), dc, b_layout=case["b_layout"])
        c = dc.to_host()
    if c.shape != (m, n):
        _fail("result.shape", c.shape, f"must be {(m, n)}")
    return checks.compare_elementwise(c, a, b, case["out_dtype"], label)
