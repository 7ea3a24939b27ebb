"""Chapter 07's swizzle experiment, checks: every variant against float64 on
:data:`CHECK_SHAPES` (:func:`check_variants`, through :func:`asynctc.warp_specialization.verify`),
the wgmma-only ones against what they compute (:func:`verify_tma_once`, :func:`compare_tma_once`;
:class:`TmaOnceSampled` for a timed output's sampled rows), and the LSU shared-memory
instructions of a cubin (:func:`shared_lsu_instructions`: what Nsight Compute's LSU counters
count)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from .. import warp_specialization as W
from .config import variant_key, variants
from .dry_run import tma_once_reference


def shared_lsu_instructions(ck) -> dict:
    """LSU shared-memory instructions in a cubin's SASS (LDS, STS, LDSM, STSM, and ATOMS/LD/ST to
    shared): what Nsight Compute's ``..._pipe_lsu_mem_shared_...`` counters count. wgmma (HGMMA)
    and TMA (UTMALDG) are listed apart; they do not use the LSU pipe."""
    from ..core import sass
    oc = sass.opcode_counts(ck.sass())
    lsu = {k: v for k, v in oc.items() if re.match(r"(LDS|STS|LDSM|STSM|ATOMS)\b", k.split(".")[0])}
    return {"lsu_shared": sum(lsu.values()), "lsu_opcodes": lsu,
            "hgmma": sum(v for k, v in oc.items() if k.startswith("HGMMA")),
            "utmaldg": sum(v for k, v in oc.items() if k.startswith("UTMALDG"))}


def compare_tma_once(out: np.ndarray, ref: np.ndarray, mag: np.ndarray, k: int, out_dtype: str,
                     label: str = ""):
    """Element by element, as :func:`asynctc.pipeline.compare_elementwise` with ``ref`` / ``mag``
    given (:func:`tma_once_reference`): bound K · 2⁻²¹ · mag + 2 · the output's rounding · |ref|;
    an element left NaN (poison) counts as unwritten. Returns an
    :class:`asynctc.pipeline.ElementCheck`."""
    from .. import pipeline as P
    o = np.asarray(out).astype(np.float64)
    if o.shape != ref.shape:
        W._fail("out", o.shape, f"must have the reference's shape {ref.shape}")
    bound = k * 2.0 ** -21 * mag + 2 * P.OUT_ROUNDING[out_dtype] * np.abs(ref)
    finite = np.isfinite(o)
    ratio = np.where(finite, np.abs(o - ref) / bound, np.inf)
    bad = ratio > 1.0
    first = tuple(int(x) for x in np.argwhere(bad)[0]) if bad.any() else None
    rel = float(np.linalg.norm(np.where(finite, o, 0.0) - ref) / np.linalg.norm(ref))
    return P.ElementCheck((ref.shape[0], ref.shape[1], k), label, float(ratio.max()),
                          int(np.count_nonzero(bad & finite)), int(np.count_nonzero(~finite)),
                          first, rel)


#: Shapes the wgmma-only variants are checked on (K ≥ 4 stages of 64): 12 tiles (one per CTA,
#: T = 16 = 4 · S); 256 tiles on 132 CTAs (CTAs take one or two tiles; T = 6, not a multiple of
#: S: a second tile reads the stages 1, 1, 2, 2 times instead of 2, 2, 1, 1); 4 tiles, T = 5.
TMA_ONCE_CHECK_SHAPES = ((512, 768, 1024), (2048, 4096, 384), (256, 512, 320))


def verify_tma_once(cfg: W.WSConfig, m: int, n: int, k: int, rng=None):
    """Run a ``tma_once`` ``cfg`` on fresh random inputs (poisoned output) and compare every
    element with :func:`tma_once_reference` for the launch's grid (:func:`compare_tma_once`)."""
    from .. import pipeline as P
    if not cfg.tma_once:
        W._fail("cfg.tma_once", False, "verify_tma_once checks tma_once launches only "
                                       "(others: asynctc.warp_specialization.verify)")
    W.check_shapes(m, n, k, cfg)
    a, _, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    g = W.run_ws(a, bs, cfg)
    ref, mag = tma_once_reference(a, bs, cfg, m, n, k, g.grid)
    return compare_tma_once(g.out.to_host(), ref, mag, k, cfg.out_dtype, cfg.label())


class TmaOnceSampled:
    """The sampled rows of a *timed* ``tma_once`` output (as
    :class:`asynctc.core.checks.SampledReference`): every row when M ≤ ``checks.FULL_CHECK_MAX``,
    else one random row per 128-row band, against :func:`tma_once_reference` for ``grid``;
    :meth:`check` also counts poison anywhere in the output (every element written)."""

    def __init__(self, a, b, cfg: W.WSConfig, grid: int, rng=None):
        from ..core import checks
        rng = rng if rng is not None else np.random.default_rng()
        m, k = a.shape
        n = b.shape[0]
        block = 1 if m <= checks.FULL_CHECK_MAX else 128
        starts = np.arange(0, m, block)
        self.rows = np.minimum(starts + rng.integers(0, block, size=len(starts)), m - 1)
        self.cfg, self.grid, self.shape = cfg, grid, (m, n, k)
        self.ref, self.mag = tma_once_reference(a, b, cfg, m, n, k, grid, self.rows)

    def check(self, out):
        """A :class:`asynctc.core.checks.Check` of the sampled rows; elements unwritten anywhere
        in ``out`` (NaN poison) are added to its ``unwritten``."""
        from ..core import checks
        host = out.to_host() if hasattr(out, "to_host") else np.asarray(out)
        c = checks.compare(host[self.rows], self.ref, self.cfg.dtype, self.shape,
                           scale=self.mag)
        left = int(np.count_nonzero(~np.isfinite(host.astype(np.float32))))
        return dataclasses.replace(c, unwritten=max(c.unwritten, left))


CHECK_SHAPES = ((512, 768, 1024), (256, 512, 192), (2048, 4096, 512))


def check_variants(configs=None, rng=None, progress=None) -> list[dict]:
    """Every variant on :data:`CHECK_SHAPES` against float64 (fresh random inputs, poisoned output,
    elementwise bound relative to |A|·|B|: :func:`asynctc.warp_specialization.verify`) — the
    wgmma-only ones on :data:`TMA_ONCE_CHECK_SHAPES` against what they compute
    (:func:`verify_tma_once`); raises :class:`RuntimeError` at the first failure."""
    rng = rng if rng is not None else np.random.default_rng()
    say = progress or (lambda _s: None)
    rows = []
    for cfg in configs if configs is not None else variants():
        for shape in TMA_ONCE_CHECK_SHAPES if cfg.tma_once else CHECK_SHAPES:
            chk = (verify_tma_once if cfg.tma_once else W.verify)(cfg, *shape, rng=rng)
            rows.append({"swizzle": cfg.swizzle, "row_boxes": cfg.row_boxes,
                         **({"tma_once": True} if cfg.tma_once else {}),
                         "variant": variant_key(cfg), "label": cfg.label(), "shape": list(shape),
                         **chk.as_dict()})
            if not chk.passed:
                raise RuntimeError(f"swizzle check failed: {cfg.label()} {shape}: {chk.as_dict()}")
        say(f"checked {cfg.label()}")
    return rows
