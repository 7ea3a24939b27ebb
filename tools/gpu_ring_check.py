"""The kernels' ring type (kernels/ring.cuh) on the GPU: every changed kernel against float64, and
the ladder's old cubins against the new, timed in one run.

Run from the repository root on an sm_90 machine (about 4-5 minutes on an H200, estimated:
not yet run there):

    python tools/gpu_ring_check.py --out $OUT                 # checks, then old vs new timings
    python tools/gpu_ring_check.py --out $OUT --quick         # checks only
    python tools/gpu_ring_check.py --out $OUT --no-checks     # timings only
    python tools/gpu_ring_check.py --old-kernels DIR ...      # the old kernels from DIR, not git

What changed in device code (so what is checked): every chapter-05 build (pipeline.cu: the ring's
bounded wait now tests the error-word pointer for null before reading it, and its tag names the
warpgroup and the k-tile), every chapter-06 build (warp_specialization.cu: one bounded wait for
both kernels, the same tag; with CLUSTER = 2 the consumers' __syncwarp before the final
barrier.cluster), and so the chapter-07 builds on the same source (FP8, swizzle variants) and
asynctc.matmul's EDGES builds. In order:

1. Checks (skipped with --no-checks), each stopping at the first failure, which is printed:
   chapter 05's correctness matrix (asynctc.pipeline.check_matrix) and both broken variants;
   chapter 06's (asynctc.warp_specialization.check_all) and its broken variant; the matmul cases
   (check_matmul_case); FP8 (asynctc.fp8.check_all); the swizzle variants
   (asynctc.swizzle.check_variants). All against float64 on fresh random inputs with poisoned
   outputs and elementwise bounds — the same functions the chapters' GPU scripts run. A broken
   variant's error word must name the barrier, stage, k-tile and warpgroup.
2. Timings (skipped with --quick): every ladder rung (fp16 and bf16, 4096³ by default) built from
   the kernel sources of --old-rev (read with ``git show``, or from --old-kernels) and from this
   checkout, with the same defines; each launched on the same operands, timed old, new, old, new
   (bench.time_gpu, SM clock in flight), each output checked on sampled rows. The table gives
   per rung the two medians of each, new / old, and the run's noise (the larger relative spread
   of one cubin's two timings); a rung whose new cubin is slower than the old by more than the
   noise is marked SLOWER. Byte-identical old and new cubins are marked "same cubin".

Writes ``ring_check.json`` (checks' counts, the timing rows) under --out. Exit 0 when every check
passed (and no rung is SLOWER with --strict), 1 at a failure, 2 without a live sm_90a GPU.
"""
import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import ROOT, parser, start  # noqa: E402
from asynctc import fp8 as F  # noqa: E402
from asynctc import pipeline as P  # noqa: E402
from asynctc import swizzle as S  # noqa: E402
from asynctc import warp_specialization as W  # noqa: E402
from asynctc import gemm as G  # noqa: E402
from asynctc.core import records, runtime  # noqa: E402

#: The commit whose kernels are "old": the last one before kernels/ring.cuh existed.
OLD_REV = "4f144d5"
KERNELS = "asynctc/kernels"
TIMED_SIZES = (4096,)
TIMED_DTYPES = ("float16", "bfloat16")


# ---- the old kernel tree (CPU) ---------------------------------------------------------------------

def export_old_kernels(rev: str, dest: Path) -> Path:
    """Write every file under asynctc/kernels/ at commit ``rev`` into ``dest`` (``git show``, from
    the checkout's history); returns ``dest``. Raises RuntimeError when git cannot read them."""
    try:
        names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev,
                                KERNELS + "/"], capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, OSError) as e:
        raise RuntimeError(f"git cannot list {KERNELS} at {rev} ({e}); export them on a machine "
                           f"with the history (--export-old DIR) and pass --old-kernels DIR") from None
    names = [n for n in names.splitlines() if n.strip()]
    if not names:
        raise RuntimeError(f"{KERNELS} at {rev}: no files")
    for name in names:
        blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{name}"],
                              capture_output=True, check=True).stdout
        out = dest / Path(name).relative_to(KERNELS)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(blob)
    return dest


@contextlib.contextmanager
def kernel_tree(path: Path):
    """Compile from the kernel tree at ``path`` instead of the checkout's asynctc/kernels/ (the cubin
    cache keys on source and headers, so old and new builds never mix)."""
    old = runtime.KERNEL_DIR
    runtime.KERNEL_DIR = Path(path)
    runtime.include_dirs.cache_clear()
    try:
        yield
    finally:
        runtime.KERNEL_DIR = old
        runtime.include_dirs.cache_clear()


def ladder_configs(dtypes=TIMED_DTYPES) -> list:
    """Every ladder rung's configs (rung 1 is chapter 05's kernel), per dtype — but rung 9's
    (ping-pong came after the old tree, where its PINGPONG define means nothing)."""
    return [c for dt in dtypes for c in W.rung_configs(dt) if not getattr(c, "pingpong", False)]


def build_pairs(cfgs, old_tree: Path) -> list[dict]:
    """For each config: its old cubin (from ``old_tree``) and new one (this checkout), same defines.
    No GPU needed."""
    import warnings
    out = []
    runtime.precompile(list({repr(W.compile_job(c)): W.compile_job(c) for c in cfgs}.values()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = [runtime.compile_kernel(*W.compile_job(c)[:2], "sm_90a", defines=W.compile_job(c)[2])
               for c in cfgs]
        with kernel_tree(old_tree):
            old = [runtime.compile_kernel(*W.compile_job(c)[:2], "sm_90a",
                                          defines=W.compile_job(c)[2]) for c in cfgs]
    for c, o, n in zip(cfgs, old, new):
        out.append({"cfg": c, "old": o, "new": n, "same": o.cubin == n.cubin,
                    "sha_old": hashlib.sha256(o.cubin).hexdigest()[:12],
                    "sha_new": hashlib.sha256(n.cubin).hexdigest()[:12]})
    return out


def noise(ts: list[float]) -> float:
    """Relative spread of one cubin's timings: (max − min) / min."""
    return (max(ts) - min(ts)) / min(ts)


def summarize(rows: list[dict]) -> tuple[str, float]:
    """The old/new table and the run's noise (the largest spread of any cubin's two timings)."""
    run_noise = max([max(noise(r["old_ms"]), noise(r["new_ms"])) for r in rows] or [0.0])
    lines = [f"{'rung':>4}  {'config':44s} {'dtype':9s} {'size':>5}  {'old ms':>15}  {'new ms':>15}"
             f"  {'new/old':>7}  verdict"]
    for r in rows:
        ratio = min(r["new_ms"]) / min(r["old_ms"])
        verdict = "same cubin" if r["same"] else ("SLOWER" if ratio > 1 + run_noise else "ok")
        r["ratio"], r["verdict"] = ratio, verdict
        lines.append(f"{r['rung']:>4}  {r['label'][:44]:44s} {r['dtype']:9s} {r['size']:>5}  "
                     f"{r['old_ms'][0]:7.3f} {r['old_ms'][1]:7.3f}  {r['new_ms'][0]:7.3f} "
                     f"{r['new_ms'][1]:7.3f}  {ratio:7.3f}  {verdict}")
    lines.append(f"run noise (largest spread of one cubin's two timings): {run_noise:.3%}")
    return "\n".join(lines), run_noise


# ---- GPU ------------------------------------------------------------------------------------------

def run_checks(say) -> dict:
    import numpy as np
    rng = np.random.default_rng()
    out = {}
    limit = P.smem_limit_bytes()
    jobs = [P.compile_job(c) for c in P.correctness_configs(limit)]
    jobs += [W.compile_job(c) for c in W.correctness_configs()]
    jobs += [W.compile_job(G.case_config(c)) for c in G.matmul_cases()]
    jobs += [W.compile_job(c) for c in F.correctness_configs()]
    jobs += [W.compile_job(c) for c in S.variants()]
    jobs = list({repr(j): j for j in jobs}.values())
    say(f"compiling {len(jobs)} variants for the checks")
    runtime.precompile(jobs)
    out["pipeline"] = len(P.check_matrix(P.correctness_configs(limit), rng=rng))
    say(f"chapter 05: {out['pipeline']} checks passed")
    for kind in P.BREAKS:
        msg = P.run_broken(kind, rng=rng)
        must_name(msg)
        say(f"chapter 05 broken variant {kind}: {msg}")
    out["ws"] = len(W.check_all(rng=rng))
    say(f"chapter 06: {out['ws']} checks passed")
    msg = W.run_broken(1, rng=rng)
    must_name(msg)
    say(f"chapter 06 broken variant: {msg}")
    n = 0
    for case in G.matmul_cases():
        c = G.check_matmul_case(case, rng=rng)
        if not c.passed:
            raise RuntimeError(f"matmul wrong: {case}: {c.as_dict()}")
        n += 1
    out["matmul"] = n
    say(f"matmul: {n} cases passed")
    out["fp8"] = len(F.check_all(rng=rng))
    say(f"fp8: {out['fp8']} checks passed")
    out["swizzle"] = len(S.check_variants(rng=rng))
    say(f"swizzle variants: {out['swizzle']} checks passed")
    return out


def must_name(msg: str) -> None:
    """A broken variant's error names the barrier, the stage, the k-tile and who waited (the
    producer or a consumer, with its warpgroup: :func:`asynctc.pipeline.trace.decode_error`)."""
    for what in ("barrier of stage", "for k-tile", "waited on by"):
        if what not in msg:
            raise RuntimeError(f"the error word's text lacks {what!r}: {msg}")


def run_timings(pairs: list[dict], sizes, say, reps: int = 20) -> list[dict]:
    import numpy as np
    from asynctc.core import bench, checks
    from asynctc.core.memory import DeviceArray
    rng = np.random.default_rng()
    rows = []
    for size in sizes:
        for dt in dict.fromkeys(p["cfg"].dtype for p in pairs):
            a, b, da, db, dbt = P.device_problem(size, dt, rng)
            sampled = checks.timed_output_reference(a, b, dt, rng)
            dc = DeviceArray.poisoned((size, size), P.np_dtype(dt))
            for p in [p for p in pairs if p["cfg"].dtype == dt]:
                cfg = p["cfg"]
                gs = {}
                for which in ("old", "new"):
                    g = W.make_gemm(cfg, da, dbt, dc)
                    g.ck = p[which]          # the same problem, this cubin
                    gs[which] = g
                ts = {"old": [], "new": []}
                for which in ("old", "new", "old", "new"):      # interleaved, each twice
                    dc.poison()
                    t = bench.time_gpu(gs[which].launcher(), warmup=3, reps=reps, clock=True)
                    gs[which].check_error()
                    checks.check_sampled_rows(dc, a, b, dt, f"{which} {W.config_label(cfg)}",
                                              sampled=sampled)
                    ts[which].append(t.median_ms)
                rows.append({"rung": W.rung_of(cfg), "label": W.config_label(cfg), "dtype": dt,
                             "size": size, "same": p["same"], "sha_old": p["sha_old"],
                             "sha_new": p["sha_new"], "old_ms": ts["old"], "new_ms": ts["new"]})
                say(f"{size}³ rung {rows[-1]['rung']} {rows[-1]['label']}: old "
                    f"{ts['old'][0]:.3f}/{ts['old'][1]:.3f} ms, new {ts['new'][0]:.3f}/"
                    f"{ts['new'][1]:.3f} ms")
                del gs
            del da, db, dbt, dc
    return rows


def main() -> int:
    ap = parser(__doc__, "out_ring_check", "ring_check", "checks only (no timings)")
    ap.add_argument("--no-checks", action="store_true", help="timings only")
    ap.add_argument("--old-rev", default=OLD_REV, help=f"commit of the old kernels (default {OLD_REV})")
    ap.add_argument("--old-kernels", default="", help="folder holding the old asynctc/kernels tree "
                    "(instead of reading --old-rev with git)")
    ap.add_argument("--export-old", default="", help="only write the old kernel tree into this "
                    "folder (CPU, needs git history) and exit")
    ap.add_argument("--sizes", default=",".join(map(str, TIMED_SIZES)), help="square sizes timed")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a rung is SLOWER")
    args = ap.parse_args()
    if args.export_old:
        print("wrote", export_old_kernels(args.old_rev, Path(args.export_old)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = Path(args.old_kernels) if args.old_kernels else None
        if old_tree is None and not args.quick:
            old_tree = export_old_kernels(args.old_rev, Path(tmp))   # before the GPU start
        started = start(args.out)
        if started is None:
            return 2
        out_dir, say = started
        result: dict = {"old_rev": args.old_rev if not args.old_kernels else args.old_kernels}
        prov = records.provenance_start()          # --record: the record's provenance
        t0 = time.time()
        try:
            if not args.no_checks:
                result["checks"] = run_checks(say)
            if not args.quick:
                say("building the ladder's old and new cubins")
                pairs = build_pairs(ladder_configs(), old_tree)
                say(f"{sum(p['same'] for p in pairs)} of {len(pairs)} ladder cubins byte-identical")
                sizes = tuple(int(s) for s in args.sizes.split(","))
                result["timings"] = run_timings(pairs, sizes, say)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            say("FAILED (first failure above)")
            (out_dir / "ring_check.json").write_text(json.dumps(result, indent=1, default=str))
            return 1
        slower = False
        if result.get("timings"):
            table, run_noise = summarize(result["timings"])
            result["run_noise"] = run_noise
            print()
            print(table)
            slower = any(r["verdict"] == "SLOWER" for r in result["timings"])
        result["seconds"] = time.time() - t0
        (out_dir / "ring_check.json").write_text(json.dumps(result, indent=1, default=str))
        say(f"wrote {out_dir / 'ring_check.json'}")
        if args.record:
            rec = records.Record("ring_check", {**prov, "clocks_end": records.nvidia_smi_clocks()},
                                 json.loads(json.dumps(result, default=str)))
            path = records.save(rec)
            shutil.copy(path, out_dir / "ring_check_record.json")
            say(f"wrote {path} (and {out_dir / 'ring_check_record.json'})")
        say("done")
        return 1 if (slower and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
