"""Chapter 07's swizzle experiment, the kernel replayed in numpy (no GPU): one stage's address
arithmetic (:func:`stage_dry_run`: the TMA side by :meth:`asynctc.models.layout.SmemTile.scatter`,
the wgmma side by the descriptor model, with the kernel's own defines, :func:`~asynctc.swizzle.
config.kernel_layout`), so a wrong offset is a wrong operand element before any GPU run; and what
a ``tma_once`` launch computes (:func:`tile_origin`, :func:`tma_once_plan`,
:func:`tma_once_reference`)."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..models import descriptors as D
from .config import kernel_layout


def stage_dry_run(cfg: W.WSConfig, rng=None, layout: dict | None = None,
                  image: bool = False) -> dict:
    """Replay the kernel's data path for one k-tile in numpy and compare what wgmma would read with
    the operands.

    TMA side (``load_stage``): box j of A (rows m0.., columns kt·BK + j·K_BOX_ELEMS..) is written
    with the tensor map's :class:`SmemTile` (:meth:`~SmemTile.scatter`) at stage offset
    j · A_KBOX_BYTES; B's boxes at A_TILE + j · B_BOX_BYTES; with ROW_BOXES = R, box r along the
    rows (rows r · BM/R.. of A, r · BN/R.. of B) lands r · rows · 128 bytes further. wgmma side (``mma_ktile``): consumer
    cw's atom i at k-step s reads through ``desc_a0`` advanced by (cw·atoms + i) · A_ATOM_BYTES +
    A_KSTEP_OFFSETS[s] and ``desc_b0`` advanced by A_TILE + B_KSTEP_OFFSETS[s]
    (:func:`asynctc.models.descriptors.read_addresses`). ``layout`` overrides
    :func:`kernel_layout` (to show what a wrong number does). Returns ``a_wrong`` / ``b_wrong``
    (elements read wrong) and ``c_max_err`` (the k-tile's product against float64); with
    ``image``, also ``image``: the stage's bytes after the TMA side (uint8, to compare layouts:
    the same ``rng`` seed gives the same operands)."""
    if cfg.b_major != "K":
        raise W.WarpSpecializationError("stage_dry_run: K-major B only (the swizzle variants)")
    rng = rng if rng is not None else np.random.default_rng()
    L = kernel_layout(cfg) if layout is None else layout
    from ..pipeline import np_dtype
    dt = np_dtype(cfg.dtype)
    bk, es = cfg.bk, W.itemsize(cfg.dtype)
    a = rng.standard_normal((cfg.bm, bk)).astype(dt)
    b = rng.standard_normal((cfg.bn, bk)).astype(dt)            # B stored N×K
    size = cfg.stage_bytes
    smem = np.zeros(size, np.uint8)
    nr = L.get("row_boxes", 1)
    for j in range(L["k_boxes"]):
        cols = slice(j * L["k_box_elems"], (j + 1) * L["k_box_elems"])
        for r in range(nr):
            for base, tile, x in ((j * L["a_kbox_bytes"] + r * L.get("a_rbox_bytes", 0), L["a_box"],
                                   a),
                                  (L["a_tile_bytes"] + j * L["b_box_bytes"] +
                                   r * L.get("b_rbox_bytes", 0), L["b_box"], b)):
                rows = slice(r * tile.rows, (r + 1) * tile.rows)
                img = tile.scatter(np.ascontiguousarray(x[rows, cols]).view(
                    np.uint8 if es == 1 else np.uint16))
                smem[base:base + img.size] = img
    da0, db0 = D.decode(L["desc_a0"]), D.decode(L["desc_b0"])
    kk = D.instruction_k(cfg.dtype)
    atoms = cfg.bm // cfg.consumers // 64
    got_a = np.zeros_like(a)
    got_b = np.zeros_like(b)

    def read(desc, mn):
        addr = D.read_addresses(desc, "K", cfg.dtype, mn)
        idx = addr[..., None] + np.arange(es)
        if idx.max() >= size or idx.min() < 0:
            raise IndexError(f"a descriptor reads byte {int(idx.max())} outside the {size}-byte stage")
        return smem[idx.reshape(-1)].view(dt).reshape(mn, kk)
    for s in range(bk // kk):
        ks = slice(s * kk, (s + 1) * kk)
        got_b[:, ks] = read(db0.advanced(L["a_tile_bytes"] + L["b_ksteps"][s]), cfg.bn)
        for cw in range(cfg.consumers):
            for i in range(atoms):
                off = (cw * atoms + i) * L["a_atom_bytes"] + L["a_ksteps"][s]
                r0 = (cw * atoms + i) * 64
                got_a[r0:r0 + 64, ks] = read(da0.advanced(off), 64)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    c = got_a.astype(np.float64) @ got_b.astype(np.float64).T
    out = {"a_wrong": int((got_a.view(np.uint16 if es == 2 else np.uint8) !=
                           a.view(np.uint16 if es == 2 else np.uint8)).sum()),
           "b_wrong": int((got_b.view(np.uint16 if es == 2 else np.uint8) !=
                           b.view(np.uint16 if es == 2 else np.uint8)).sum()),
           "c_max_err": float(np.abs(c - ref).max())}
    if image:
        out["image"] = smem
    return out


# --------------------------------------------------------------------------------------------------
# wgmma only: what a tma_once launch computes
# --------------------------------------------------------------------------------------------------

def tile_origin(cfg: W.WSConfig, item: int, tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """(m0, n0) of work item ``item`` in the kernel's group-M raster (``tile_origin`` in
    kernels/warp_specialization.cu, cluster 1): ``group_m`` tile rows walked column by column."""
    g = max(cfg.group_m, 1)
    per_group = g * tiles_n
    first_m = item // per_group * g
    rows = min(tiles_m - first_m, g)
    in_group = item % per_group
    return (first_m + in_group % rows) * cfg.bm, in_group // rows * cfg.bn


def tma_once_plan(cfg: W.WSConfig, m: int, n: int, k: int, grid: int) -> list[dict]:
    """What each output tile of a ``tma_once`` launch is made of, one dict per tile in the order
    the CTAs take them: ``cta``, ``m0`` / ``n0`` (the tile), ``src_m0`` / ``src_n0`` (the CTA's
    *first* tile, whose k-tiles 0..S−1 fill the S stages once) and ``counts`` (how many of the
    tile's T = K / bk k-tiles read stage j, j = 0..S−1).

    The producer and the consumers walk one ring counter i over all (tile, k-tile) pairs of the
    CTA (tiles b, b + grid, ...): the t-th tile's k-tile k is i = t·T + k and reads stage i mod S,
    which holds k-tile i of the first tile for i < S and never changes after. So the t-th tile
    reads stage j ``counts[j]`` = #{k < T : (t·T + k) mod S = j} times: T/S each when S divides
    T, else depending on t. Raises :class:`asynctc.warp_specialization.WarpSpecializationError`
    for a config without ``tma_once`` or a shape it refuses (:func:`asynctc.warp_specialization.
    check_shapes`: multiples of the tile, K ≥ S · bk), and for ``grid`` < 1."""
    if not cfg.tma_once:
        W._fail("cfg.tma_once", False, "tma_once_plan describes tma_once launches only")
    W.check_shapes(m, n, k, cfg)
    if not isinstance(grid, (int, np.integer)) or grid < 1:
        W._fail("grid", grid, "CTAs of the launch: an integer ≥ 1")
    tiles_m, tiles_n, t_k = W.tile_counts(cfg, m, n, k)
    s = cfg.stages
    out = []
    for cta in range(min(grid, tiles_m * tiles_n)):
        src = tile_origin(cfg, cta, tiles_m, tiles_n)
        for t, item in enumerate(range(cta, tiles_m * tiles_n, grid)):
            counts = np.bincount((t * t_k + np.arange(t_k)) % s, minlength=s)
            m0, n0 = tile_origin(cfg, item, tiles_m, tiles_n)
            out.append({"cta": cta, "m0": m0, "n0": n0, "src_m0": src[0], "src_n0": src[1],
                        "counts": [int(x) for x in counts]})
    return out


def tma_once_reference(a: np.ndarray, b: np.ndarray, cfg: W.WSConfig, m: int, n: int, k: int,
                       grid: int, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """The float64 C a ``tma_once`` launch must produce, and the |·| sum that scales its bound.

    ``a``: M×K, ``b``: B stored N×K (K-major, as the variants take it), any float dtype; ``grid``:
    the launch's CTAs (:attr:`asynctc.warp_specialization.WSGemm.grid`); ``rows``: the C rows
    wanted (default all), in that order. Per tile (:func:`tma_once_plan`): C = Σ_j counts[j] ·
    A[src_m0.., k-tile j] · B[src_n0.., k-tile j]ᵀ over the S stages — the CTA's first tile's
    first S k-tiles, whatever tile it computes. Returns ``(ref, mag)``, ``len(rows)`` × N each;
    ``mag`` = the same sum of |A|·|B|ᵀ (a sum of K products, like |A|·|B| for a GEMM)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != (m, k) or b64.shape != (n, k):
        W._fail("a, b", (a64.shape, b64.shape), f"A must be M×K = {(m, k)}, B stored N×K = {(n, k)}")
    plan = tma_once_plan(cfg, m, n, k, grid)
    rows = np.arange(m) if rows is None else np.asarray(rows, np.int64)
    ref = np.full((rows.size, n), np.nan)
    mag = np.full((rows.size, n), np.nan)
    bm, bn, bk = cfg.bm, cfg.bn, cfg.bk
    stages = {}
    for p in plan:
        want = (rows >= p["m0"]) & (rows < p["m0"] + bm)
        if not want.any():
            continue
        src = (p["src_m0"], p["src_n0"])
        if src not in stages:            # the S stage products of this CTA's one fill
            prods = []
            for j in range(cfg.stages):
                aj = a64[src[0]:src[0] + bm, j * bk:(j + 1) * bk]
                bj = b64[src[1]:src[1] + bn, j * bk:(j + 1) * bk]
                prods.append((aj @ bj.T, np.abs(aj) @ np.abs(bj).T))
            stages[src] = prods
        local = rows[want] - p["m0"]
        c = sum(cnt * pr[0][local] for cnt, pr in zip(p["counts"], stages[src]))
        g = sum(cnt * pr[1][local] for cnt, pr in zip(p["counts"], stages[src]))
        ref[want, p["n0"]:p["n0"] + bn] = c
        mag[want, p["n0"]:p["n0"] + bn] = g
    return ref, mag
