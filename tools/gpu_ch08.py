"""Chapter 08 on the GPU in one command: every pitfalls kernel variant, then compute-sanitizer.

Run from the repository root on an sm_90 machine (about 1-3 minutes on an H200, most of it the
sanitizer runs):

    python tools/gpu_ch08.py --out $OUT            # every variant + sanitizer; results under $OUT
    python tools/gpu_ch08.py --out $OUT --record   # ... and write data/<gpu>/pitfalls.json
    python tools/gpu_ch08.py --quick               # the variants only, no sanitizer
    python tools/gpu_ch08.py --latent-only --out $OUT [--record] [--quick]

Each variant of kernels/pitfalls.cu (asynctc.pitfalls.variants.BUGS) runs once on 8 boxes of
64 × 64 fp16 and ends with its outcome in words: "ok", a decoded bounded wait (which role timed out
on which barrier, stage and tile — 0.5 s per wait, never a hang) or the elementwise check naming the
first wrong element. Then compute-sanitizer memcheck, racecheck and synccheck run on the correct
kernel and two broken ones (asynctc.pitfalls.suite.SANITIZED), each with a 240 s limit. The correct
kernel must end "ok", else nothing is recorded. Nothing is timed.

--latent-only runs just the latent variants (BUG 5, 6, 8: asynctc.pitfalls.latent) many times and
at a few sizes — the ring variants 20 times at 8 and 255 tiles, the store stress broken and fixed at
64 and 256 rows, the init race in its three orderings, and racecheck / synccheck on the ring's
5, 6, 8 (not with --quick); about 2-5 minutes. It writes latent.json under --out and, with
--record, merges the outcome into data/<gpu>/pitfalls.json as results["latent"] (the rest of the
record is kept; copied into --out). A fixed build that is not "ok" records nothing.
"""
import json
import shutil
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_common; it puts the root first

from gpu_common import parser, record_suite, start  # noqa: E402
from asynctc.core import records, runtime  # noqa: E402
from asynctc.pitfalls import latent, suite  # noqa: E402


def run_latent(out_dir: Path, say, save: bool, sanitizer: bool) -> int:
    try:
        new = records.measure("pitfalls", lambda: {"latent": latent.measure_latent(
            sanitize=suite.sanitize if sanitizer else None, progress=say)})
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        say("FAILED (first failure above); nothing recorded")
        return 1
    lat = new.results["latent"]
    (out_dir / "latent.json").write_text(json.dumps({"provenance": new.provenance, "latent": lat},
                                                    indent=1))
    say(f"wrote {out_dir / 'latent.json'}")
    if save:
        info = runtime.device_info()
        slug = info.slug if info else None
        try:
            old = records.load("pitfalls", slug)
        except records.RecordError as e:
            say(f"no pitfalls record to merge into ({e}): run without --latent-only first; "
                "latent.json only")
            old = None
        if old is not None:
            merged = records.Record("pitfalls", old.provenance,
                                    latent.merge(old.results, lat, new.provenance))
            path = records.save(merged, old.path.parent.name if old.path else slug)
            shutil.copy(path, out_dir / path.name)
            print("wrote", path, "and", out_dir / path.name)
    print()
    print(latent.summarize_latent(lat))
    say("done")
    return 0


def main() -> int:
    ap = parser(__doc__, "out_ch08", "pitfalls", "the variants only, no compute-sanitizer")
    ap.add_argument("--latent-only", action="store_true",
                    help="only the latent variants (BUG 5, 6, 8) under stress, merged into the record")
    args = ap.parse_args()
    started = start(args.out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    if args.latent_only:
        return run_latent(out_dir, say, args.record, sanitizer=not args.quick)
    return record_suite("pitfalls", lambda: suite.measure_pitfalls(sanitizer=not args.quick, progress=say),
                        suite.summarize, out_dir, say, save=args.record)


if __name__ == "__main__":
    sys.exit(main())
