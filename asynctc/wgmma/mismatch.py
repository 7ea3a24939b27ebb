"""Chapter 04 — the deliberate mismatch (:func:`mismatch_demo`): tiles laid out for one swizzle mode,
descriptors that claim another; the wrong D is predicted by the layout model (no GPU) and, live,
measured with the kernel compiled with ``MISMATCH_LAYOUT``."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core import runtime
from ..models import descriptors as dsc
from .config import TILE_TOLERANCE, TileConfig
from .launch import random_tile_operands, run_tile, tile_images, tile_reference


# --------------------------------------------------------------------------------------------------
# The deliberate mismatch
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class MismatchResult:
    """What happens when the descriptors claim ``descriptor_swizzle`` but the tiles were laid out
    with ``layout_swizzle``.

    ``reference`` (64×N, float64) is the right D; ``predicted`` the wrong D the layout model says the
    GPU computes (what wgmma reads through the wrong descriptors, multiplied in float64);
    ``measured`` the GPU's D (None when not run live). ``wrong_*`` count elements off by more than
    the dtype's tolerance × the largest |reference|. ``source_a`` (64×K int64): for each element
    (m, k) of A as wgmma read it, the flat index m'·K + k' of the element actually found there
    (-1: padding or outside the tile) — the permutation to plot. ``source_b`` likewise (N×K).
    """

    config: TileConfig
    layout_swizzle: int
    descriptor_swizzle: int
    reference: np.ndarray
    predicted: np.ndarray
    measured: np.ndarray | None
    source_a: np.ndarray
    source_b: np.ndarray

    def _wrong(self, d: np.ndarray) -> int:
        tol = TILE_TOLERANCE[self.config.dtype] * 10 * float(np.abs(self.reference).max())
        return int(np.count_nonzero(~(np.abs(d.astype(np.float64) - self.reference) <= tol)))

    @property
    def wrong_predicted(self) -> int:
        return self._wrong(self.predicted)

    @property
    def wrong_measured(self) -> int | None:
        return None if self.measured is None else self._wrong(self.measured)

    @property
    def measured_matches_prediction(self) -> bool | None:
        """True when the GPU's wrong D equals the model's prediction (fp32 rounding aside)."""
        if self.measured is None:
            return None
        m = self.measured.astype(np.float64)
        scale = float(np.abs(self.predicted).max()) or 1.0
        return bool(np.all(np.abs(m - self.predicted) <= 1e-3 * scale))

    @property
    def a_elements_moved(self) -> int:
        """Elements of A that wgmma read from the wrong place."""
        k = self.source_a.shape[1]
        want = np.arange(self.source_a.size).reshape(self.source_a.shape)
        return int(np.count_nonzero(self.source_a != want)) if k else 0

    def summary(self) -> str:
        sw = lambda s: f"{s}B" if s else "no"  # noqa: E731
        n = self.reference.size
        s = (f"tiles laid out with {sw(self.layout_swizzle)} swizzle, descriptors say "
             f"{sw(self.descriptor_swizzle)} swizzle: wgmma reads {self.a_elements_moved} of "
             f"{self.source_a.size} A elements from the wrong place; the model predicts "
             f"{self.wrong_predicted} of {n} D elements wrong")
        if self.measured is not None:
            s += (f"; the GPU got {self.wrong_measured} wrong, "
                  f"{'exactly as predicted' if self.measured_matches_prediction else 'NOT as predicted'}")
        return s


def _sources(tile: dsc.OperandTile, wrong: list[dsc.WgmmaDescriptor], base: int) -> np.ndarray:
    """Flat element index stored at each address wgmma reads through ``wrong`` (-1 if none)."""
    addr_ok = tile.addresses(base)
    inv = {int(x): i for i, x in enumerate(addr_ok.ravel())}
    kk = tile.instruction_k
    out = np.full((tile.mn, tile.k), -1, dtype=np.int64)
    for s, d in enumerate(wrong):
        rd = dsc.read_addresses(d, tile.major, tile.dtype, tile.mn)
        out[:, s * kk:(s + 1) * kk] = np.vectorize(lambda x: inv.get(int(x), -1))(rd)
    return out


def mismatch_demo(n: int = 64, dtype: str = "float16", layout_swizzle: int = 128,
                  descriptor_swizzle: int = 64, major: str = "K", rng=None,
                  live: bool | None = None) -> MismatchResult:
    """Lay A and B out for ``layout_swizzle`` but give wgmma descriptors whose swizzle field says
    ``descriptor_swizzle`` (same start, LBO and SBO), and see what comes out.

    The prediction needs no GPU: the layout model gives, for each element wgmma reads through the
    wrong descriptors, what the image holds there. ``live`` (default: when an sm_90 GPU is here)
    also runs the kernel compiled with ``MISMATCH_LAYOUT`` — the only way that define is ever set.
    Raises :class:`~asynctc.models.descriptors.DescriptorError` for equal modes (no mismatch) or invalid ones.
    """
    if layout_swizzle == descriptor_swizzle:
        raise dsc.DescriptorError(f"descriptor_swizzle={descriptor_swizzle}: equals layout_swizzle; "
                                  "a mismatch demo needs two different modes")
    dsc._check_span(descriptor_swizzle, "descriptor_swizzle")
    cfg = TileConfig(dtype, n, major, major, layout_swizzle, layout_swizzle, "smem", 4)
    rng = rng if rng is not None else np.random.default_rng()
    a, b = random_tile_operands(cfg, rng)
    at, bt = cfg.a_tile, cfg.b_tile
    a_img, b_img, _ = tile_images(a, b, cfg)

    def wrong(tile, base):
        out = []
        for d in tile.descriptors(base):
            out.append(dsc.WgmmaDescriptor(d.start_address, d.lbo, d.sbo, descriptor_swizzle, 0))
        return out
    wa, wb = wrong(at, 0), wrong(bt, 0)
    a_read = at.gather(a_img, wa).astype(np.float64)
    b_read = bt.gather(b_img, wb).astype(np.float64)
    predicted = a_read @ b_read.T
    src_a, src_b = _sources(at, wa, 0), _sources(bt, wb, 0)
    measured = None
    if live if live is not None else runtime.runs_live("sm_90a"):
        measured = run_tile(a, b, cfg, _mismatch_layout=dsc.LAYOUT_TYPE[descriptor_swizzle])
    return MismatchResult(cfg, layout_swizzle, descriptor_swizzle, tile_reference(a, b),
                          predicted, measured, src_a, src_b)


def wrong_reads(rows=range(10), base: int = 0x2000) -> str:
    """Chapter 04 §2's story, as a small table: A (64×64 fp16, K-major) laid out with 128-byte
    swizzle, as TMA writes it, read through three descriptors of k-step 0 — the right one, one whose
    swizzle field says 64 bytes, one whose SBO says 512 instead of 1024 (column "stride 512 B": §2
    defines the stride before this table and names it SBO after it). For each row m in ``rows``
    (0…63): the element each descriptor makes wgmma read where it wants A[m][0] (``A[m'][k']``, or
    ``—`` where no element of A is stored); last line, how many of the 64×16 elements of the k-step
    each descriptor reads from the wrong place (the layout model, :func:`read_addresses`; no GPU).

    Raises :class:`AssertionError` unless what chapter 04 §2 states holds: the right descriptor
    reads every element from its own place; with the 64-byte swizzle field, row 1 reads A[0][32]
    (a row taken as 64 bytes long) and only rows 0, 8, 16, … read their own A[m][0]; with SBO 512,
    rows 0–7 are right and rows 8–15 read rows 4–7."""
    tile = dsc.OperandTile(64, 64, "float16", "K", 128)
    right = tile.descriptor(0, base)
    named = {"right": right,
             "swizzle 64B": dsc.WgmmaDescriptor(right.start_address, right.lbo, right.sbo, 64, 0),
             "stride 512 B": dsc.WgmmaDescriptor(right.start_address, right.lbo, 512, 128, 0)}
    where = {int(x): divmod(i, tile.k) for i, x in enumerate(tile.tma_addresses(base).ravel())}
    kk = tile.instruction_k
    want = [(m, k) for m in range(tile.mn) for k in range(kk)]
    got = {name: [where.get(int(x)) for x in dsc.read_addresses(d, "K", "float16", tile.mn).ravel()]
           for name, d in named.items()}
    wrong = {name: sum(g != w for g, w in zip(v, want)) for name, v in got.items()}
    cell = lambda e: "—" if e is None else f"A[{e[0]}][{e[1]}]"  # noqa: E731
    lines = [f"{'wants':9s}" + "".join(f"{name:>14s}" for name in named)]
    for m in rows:
        lines.append(f"A[{m}][0]  " + "".join(f"{cell(got[name][m * kk]):>14s}" for name in named))
    lines.append(f"{'wrong':9s}" + "".join(f"{f'{wrong[n]} of {len(want)}':>14s}" for n in named))
    sw, sbo = got["swizzle 64B"], got["stride 512 B"]
    assert wrong["right"] == 0
    assert sw[kk] == (0, 32) and all((sw[m * kk] == (m, 0)) == (m % 8 == 0) for m in range(tile.mn))
    assert all(sbo[m * kk] == (m, 0) for m in range(8))
    assert all(sbo[m * kk][0] == m - 4 for m in range(8, 16))
    return "\n".join(lines)
