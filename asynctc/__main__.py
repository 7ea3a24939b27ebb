"""Command line: ``python -m asynctc doctor | record <suite|all> | course | sass <kernel> | warm |
reset NN | grade DIR | progress DIR | slides | site | diagnose <bug>``.

``sass`` knows every kernel of asynctc.catalog.COURSE_KERNELS, ``record`` every suite of
asynctc.suites.SUITES. Bad arguments end with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from importlib import metadata
from pathlib import Path

from .core import runtime

ROOT = Path(__file__).resolve().parent.parent


def notebooks_dir() -> Path:
    """The learner notebooks' folder (:func:`asynctc.teaching.builds.notebooks_dir`)."""
    from .teaching import builds
    return builds.notebooks_dir()


def chapters() -> list[Path]:
    """The course notebooks, in order (``notebooks/NN_name.ipynb``)."""
    return sorted(p for p in notebooks_dir().glob("[0-9][0-9]*_*.ipynb"))


def _course_selection(course_args: list[str]) -> str:
    """What ``course`` will execute given ``course_args`` (tools/course.sh passes its own arguments
    on): "every chapter", or the notebooks chosen ("chapter 00 (00_why_async, 00b_clock_kinds)")."""
    cp = argparse.ArgumentParser(add_help=False)
    cp.add_argument("--out")
    cp.add_argument("--timeout")
    cp.add_argument("chapters", nargs="*")
    chosen = cp.parse_known_args(course_args)[0].chapters
    if not chosen:
        return "every chapter"
    nbs = [nb.stem for nb in chapters() if nb.name[:2] in chosen]
    word = "chapter" if len(chosen) == 1 else "chapters"
    return f"{word} {', '.join(chosen)} ({', '.join(nbs) or 'no notebook'})"


def chapter_arch(nb_path: Path) -> str:
    """The architecture a chapter's kernels need (notebook metadata ``asynctc.arch``)."""
    import json
    meta = json.loads(nb_path.read_text()).get("metadata", {}).get("asynctc", {})
    return meta.get("arch", "sm_90a")


def cmd_doctor(_args) -> int:
    print(f"python        {sys.version.split()[0]}")
    for n, label in (("asynctc", "asynctc"), ("cuda-core", "cuda-core"),
                     ("cuda-bindings", "cuda-bindings"), ("nvidia-cuda-nvrtc", "nvrtc wheel"),
                     ("numba-cuda", "numba-cuda"), ("numpy", "numpy")):
        try:
            print(f"{label:13s} {metadata.version(n)}")
        except metadata.PackageNotFoundError:
            print(f"{label:13s} (not installed)")
    try:
        print("NVRTC         {}.{}".format(*runtime.nvrtc_version()))
    except Exception as e:  # noqa: BLE001
        print(f"NVRTC         unavailable: {e}")
    try:
        from .core import sass
        sass.nvdisasm_path()
        print("nvdisasm      found")
    except Exception as e:  # noqa: BLE001
        print(f"nvdisasm      missing: {e}")
    info = runtime.device_info()
    if info is None:
        print("GPU           none (no driver call was made)" if not runtime._driver_library_loadable()
              else "GPU           none usable (driver probe failed or ASYNCTC_MODE=replay)")
    else:
        print(f"GPU           {info.name}, compute capability {info.cc[0]}.{info.cc[1]}, "
              f"{info.sm_count} SMs, driver CUDA {info.driver_version // 1000}."
              f"{info.driver_version % 1000 // 10}")
    print(f"mode          {runtime.mode()}")
    from .core import bench, records
    lib = bench.baseline_library()
    print(f"cuBLAS        {'live through ' + lib if lib else 'from the records (a live baseline needs torch or cupy)'}")
    for slug in sorted({p.parent.name for p in records.data_dir().glob('*/*.json')}):
        suites_here = sorted(p.stem for p in (records.data_dir() / slug).glob('*.json'))
        try:
            provs = [records.load(s_, slug).provenance for s_ in suites_here]
            dates = sorted({str(p_['date'])[:10] for p_ in provs})
            span = dates[0] if len(dates) == 1 else f"{dates[0]} … {dates[-1]}"
            where = f"{provs[0]['gpu']}, driver {provs[0]['driver']}, {span}"
        except Exception:  # noqa: BLE001
            where = "unreadable"
        print(f"recorded      data/{slug}: {where} ({', '.join(suites_here)})")
    # Can this machine compile for both course architectures?
    for arch in ("sm_90a", "sm_100a"):
        try:
            runtime.compile_kernel("probe.cu", "probe", arch)
            ok = "compiles"
        except Exception as e:  # noqa: BLE001
            ok = f"does not compile: {e}"
        live = "runs live" if runtime.runs_live(arch) else f"replay ({runtime.why_not_live(arch)})"
        print(f"{arch:13s} {ok}; {live}")
    groups: dict[str, list[str]] = {}      # "live (sm_90a)" → the notebooks' keys, in course order
    for nb in chapters():
        arch = chapter_arch(nb)
        groups.setdefault(f"{'live' if runtime.runs_live(arch) else 'replay'} ({arch})", []).append(
            nb.stem.split("_")[0])
    for i, (how, keys) in enumerate(groups.items()):
        print(f"{'notebooks' if i == 0 else '':13s} {len(keys)} {how}: {' '.join(keys)}")
    course_args = getattr(_args, "in_course", None)
    if course_args is not None:   # run by tools/course.sh, which executes the chapters it was given next
        print(f"next          executing {_course_selection(course_args)} now (python -m asynctc course); "
              "afterwards, to work through them yourself: .venv/bin/jupyter lab notebooks/")
    else:
        print("next          bash tools/course.sh (executed notebooks + HTML in build/course/), or "
              ".venv/bin/jupyter lab notebooks/")
    return 0


def cmd_record(args) -> int:
    from . import suites
    names = list(suites.SUITES) if args.suite == ["all"] else args.suite
    for n in names:
        if n not in suites.SUITES:
            print(f"unknown suite {n!r}; known: {', '.join(suites.SUITES)} or all", file=sys.stderr)
            return 2
    for n in names:
        print(f"== {n}")
        try:
            suites.run_suite(n, save=not args.no_save)
        except runtime.NoGPUError as e:
            print(f"cannot record: {e}", file=sys.stderr)
            return 2
    return 0


#: Cell tag of the worked solutions (set by tools/build_notebooks.py): only in the solution
#: notebooks; removed from the HTML copies so that a reader does not see the answers first.
from .teaching.builds import SOLUTION_TAG  # noqa: E402


def html_without_solutions(nb) -> str:
    """The HTML of notebook ``nb`` with every cell tagged :data:`SOLUTION_TAG` removed (nbconvert's
    ``TagRemovePreprocessor``); a code cell that calls ``check(..., solution=True)`` counts as
    tagged even in a notebook built before the tag existed. ``nb`` itself is not changed.
    Raises ImportError without nbconvert."""
    import copy
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and "solution=True" in cell.source:
            tags = set(cell.metadata.get("tags", [])) | {SOLUTION_TAG}
            cell.metadata["tags"] = sorted(tags)
    exporter = HTMLExporter()
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags={SOLUTION_TAG}), enabled=True)
    html, _ = exporter.from_notebook_node(nb)
    return html


def cmd_course(args) -> int:
    import nbformat
    from nbclient import NotebookClient
    from .teaching import runner
    try:
        from nbconvert import HTMLExporter
    except ImportError:          # HTML is a convenience; the executed notebooks are the record
        HTMLExporter = None
        print("nbconvert is not installed: writing executed notebooks without HTML copies")

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    os.environ.setdefault("ASYNCTC_PROGRESS", "off")      # a batch run is no learner's attempt
    nbs = [nb for nb in chapters() if not args.chapters or nb.name[:2] in args.chapters]
    import signal

    def _stop(_sig, _frame):              # a SIGTERM stops the run like Ctrl-C
        raise KeyboardInterrupt
    try:
        old_term = signal.signal(signal.SIGTERM, _stop)
    except ValueError:                    # not the main thread: leave the handler alone
        old_term = None
    try:
        return _run_chapters(args, nbs, out, HTMLExporter, runner, NotebookClient, nbformat)
    except KeyboardInterrupt:
        print("stopped (interrupted): the notebook that was running is not written", flush=True)
        return 130
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


def _run_chapters(args, nbs, out, HTMLExporter, runner, NotebookClient, nbformat) -> int:
    """The course loop of :func:`cmd_course`; an interrupt inside a cell (Ctrl-C reaches the
    kernel too) stops the whole run. The HTML goes through :class:`asynctc.teaching.publish.CoursePages`
    (the site's link rewriting; ``glossary.html`` beside the pages)."""
    from .teaching import publish
    pages = publish.CoursePages(out, [p.stem for p in nbs]) if HTMLExporter is not None else None
    try:
        return _run_each(args, nbs, out, pages, runner, NotebookClient, nbformat)
    finally:                              # also after an interrupt: no link to a page not written
        if pages is not None:
            pages.finish()


def _run_each(args, nbs, out, pages, runner, NotebookClient, nbformat) -> int:
    """Execute each chapter into ``out`` (HTML through ``pages``, or none); 1 if any failed."""
    failed = 0
    for nb_path in nbs:
        arch = chapter_arch(nb_path)
        m = "live" if runtime.runs_live(arch) else "replay"
        nb = nbformat.read(nb_path, as_version=4)
        t0 = time.time()
        outcome = runner.run_notebook(nb, lambda nb: NotebookClient(
            nb, timeout=args.timeout, kernel_name="python3",
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
            resources={"metadata": {"path": str(notebooks_dir())}}))
        status = outcome.status
        if outcome.kind == "execution" and "KeyboardInterrupt" in outcome.message:
            print(f"{nb_path.stem:28s} {m:6s} stopped: {outcome.message}", flush=True)
            raise KeyboardInterrupt
        err_file = out / f"{nb_path.stem}.error.txt"
        if outcome.kind is not None:          # never an empty file: the text names the exception
            err_file.write_text(outcome.detail)
            print(f"   {outcome.kind} error: {outcome.message} (see {err_file.name})", file=sys.stderr)
        elif err_file.exists():
            err_file.unlink()                 # a stale file from an earlier failed run
        failed += not outcome.passed
        nbformat.write(nb, out / nb_path.name)
        if pages is not None:                 # the solutions stay in the .ipynb, not in the HTML
            pages.add(nb_path.stem, html_without_solutions(nb))
        print(f"{nb_path.stem:28s} {m:6s} {status:6s} {time.time() - t0:7.1f} s", flush=True)
    what = "executed notebooks and HTML" if pages is not None else "executed notebooks"
    print(f"{what} in {os.path.relpath(out, Path.cwd())}/")
    return 1 if failed else 0


def cmd_warm(args) -> int:
    """Compile every course kernel into the cubin cache (no GPU needed); with ``--notebooks`` also
    execute every chapter once (replay without a GPU), which compiles every configuration the
    notebooks build."""
    from . import catalog
    t0 = time.time()
    built = catalog.compile_all()
    print(f"compiled {len(built)} course kernels in {time.time() - t0:.1f} s "
          f"(cache: {runtime.cache_dir()})")
    if args.notebooks:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            return cmd_course(argparse.Namespace(out=tmp, timeout=args.timeout, chapters=[]))
    return 0


def cmd_reset(args) -> int:
    from .teaching import builds
    code = 0
    for ch in args.chapters:
        if not re.fullmatch(r"\d\d[a-z]?", ch):
            print(f"reset {ch}: a chapter is two digits (00 … 10), a deep dive two digits and a "
                  "letter (06b)", file=sys.stderr)
            return 2
        try:
            r = builds.restore(ch, Path(args.dir) if args.dir else None, backup=not args.no_backup)
        except FileNotFoundError as e:
            print(f"reset {ch}: {e}", file=sys.stderr)
            code = 2
            continue
        print(f"{r.path.name}: restored from {r.where}"
              + (f" (your copy is kept as {r.backup.name})" if r.backup is not None else ""))
        _reset_progress(ch, args.progress)
    return code


def _reset_progress(ch: str, clear: bool) -> None:
    """After a reset: clear chapter ``ch``'s attempts and kept answers (``--progress``), or say
    that they are kept and how to clear them."""
    from .core import progress
    p = progress.path()
    if p is None:
        return

    def counted(n: int, k: int) -> str:                 # "1 attempt and 2 kept answers"
        return f"{n} attempt{'s' * (n != 1)} and {k} kept answer{'s' * (k != 1)}"
    if clear:
        print(f"  chapter {ch}: {counted(*progress.clear(ch, p))} cleared from {p.parent}")
        return
    n, k = progress.held(ch, p)
    if n or k:
        print(f"  chapter {ch}: your {counted(n, k)} stay in {p.parent}; "
              f"`python -m asynctc reset {ch} --progress` clears them too")


def cmd_grade(args) -> int:
    from .teaching import grading
    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"grade: {folder} is not a folder", file=sys.stderr)
        return 2
    if not grading.submissions(folder):
        print(f"grade: no notebooks in {folder}", file=sys.stderr)
        return 2
    graded = grading.grade(folder, timeout=args.timeout)
    csv_path, md_path, md = grading.write_tables(graded, Path(args.out) if args.out else folder)
    print(md, end="")
    print(f"written: {csv_path} and {md_path}")
    return 0


#: --dtype spellings → the dtype names the kernel families use.
DTYPE_ALIASES = {
    "float16": "float16", "fp16": "float16", "f16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e4m3": "float8_e4m3fn", "fp8": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2", "e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2",
}


def _dtype_choices(dtypes) -> str:
    """``float16 (fp16, f16, half), bfloat16 (bf16)``: the names and their aliases."""
    out = []
    for d in dtypes:
        al = [a for a, v in DTYPE_ALIASES.items() if v == d and a != d]
        out.append(f"{d} ({', '.join(al)})" if al else d)
    return ", ".join(out)


def resolve_dtype(kernel: str, dtype: str | None) -> tuple[str | None, str | None]:
    """(dtype name, None) for ``kernel`` of the catalogue, or (None, a one-line error)."""
    from .catalog import DTYPES
    choices = DTYPES.get(kernel, ())
    if dtype is None:
        return (choices[0] if choices else None), None
    if not choices:
        return None, (f"--dtype {dtype}: {kernel} has no dtype choice (kernels with one: "
                      f"{', '.join(DTYPES)})")
    name = DTYPE_ALIASES.get(dtype.strip().lower().replace("-", "_"))
    if name not in choices:
        return None, f"--dtype {dtype}: {kernel} takes {_dtype_choices(choices)}"
    return name, None


def family_sass_classes(source: str) -> tuple[dict | None, str]:
    """The instruction classes to count for a kernel compiled from ``kernels/<source>``: its
    family module's own ``SASS_CLASSES`` (``asynctc.<source stem>``, as the chapter counts them)
    where it has one, else the course-wide :data:`asynctc.core.sass.CLASSES` (None)."""
    import importlib
    stem = Path(str(source)).stem
    own, mod_name = None, f"asynctc.{stem}"
    # a family's file "<package>_<part>.cu" may be counted by module asynctc.<package>.<part>
    names = [mod_name] + ([f"asynctc.{stem.split('_', 1)[0]}.{stem.split('_', 1)[1]}"]
                          if "_" in stem else [])
    for name in names:
        try:
            own = getattr(importlib.import_module(name), "SASS_CLASSES", None)
        except ImportError:
            own = None
        if own:
            mod_name = name
            break
    if own:
        return dict(own), f"{mod_name}.SASS_CLASSES"
    return None, "asynctc.core.sass.CLASSES"


def cmd_sass(args) -> int:
    from . import tma
    from .catalog import COURSE_KERNELS
    from .core import sass
    dtype, err = resolve_dtype(args.kernel, args.dtype)
    if err:
        print(err, file=sys.stderr)
        return 2
    build = COURSE_KERNELS[args.kernel]
    ck = build(dtype=dtype) if dtype else build()
    text = tma.kernel_sass(ck) or sass.disassemble(ck.cubin)   # this kernel's function only
    r = ck.resources
    print(f"{ck.name} [{ck.arch}] from kernels/{ck.source} — {args.kernel}: {ck.config}")
    print(f"  defines        {' '.join(f'{k}={v}' for k, v in ck.defines.items()) or '(none)'}")
    print(f"  registers      {r.registers} per thread; spills {r.spill_stores} B stored, "
          f"{r.spill_loads} B loaded; stack {r.stack_bytes} B")
    print(f"  shared memory  {ck.smem_bytes} B per CTA = {ck.static_smem_bytes} B static + "
          f"{ck.dynamic_smem_bytes} B dynamic ({ck.smem_bytes / 1024:.1f} KiB)")
    classes, whose = family_sass_classes(ck.source)
    print(f"  SASS instruction classes ({whose}):")
    for k, v in sass.class_counts(text, classes).items():
        print(f"    {k:12s} {v}")
    if args.full:
        print(text)
    return 0


def _kernels_epilog() -> str:
    from .catalog import COURSE_KERNELS, DTYPES
    lines = ["kernels (--dtype choices; the first is the default):"]
    width = max(map(len, COURSE_KERNELS))
    for n in COURSE_KERNELS:
        lines.append(f"  {n:{width}s}  {', '.join(DTYPES.get(n, ())) or '-'}")
    lines.append("--dtype aliases: fp16/f16/half, bf16, fp8/e4m3 (float8_e4m3fn), e5m2 (float8_e5m2)")
    return "\n".join(lines)


def _suites_epilog() -> str:
    try:
        from . import suites
    except Exception as e:  # noqa: BLE001 - help must still print
        return f"suites: (could not be listed: {e})"
    lines = ["suites (each needs a live GPU of its architecture; see the module's measure_* docstring):"]
    width = max(len(n) for n in list(suites.SUITES) + ["all"])
    arch_w = max((len(arch) for _m, _s, arch in suites.SUITES.values()), default=0)
    for n, (measure, _summary, arch) in suites.SUITES.items():
        lines.append(f"  {n:{width}s}  {arch:{arch_w}s}  {measure.__module__}.{measure.__name__}")
    lines.append(f"  {'all':{width}s}  every suite above, in this order")
    return "\n".join(lines)


def main(argv=None) -> int:
    from .catalog import COURSE_KERNELS
    from . import suites
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="python -m asynctc", description=__doc__.replace("``", ""))
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("doctor", help="what this machine can do")
    d.add_argument("--in-course", nargs=argparse.REMAINDER, default=None,   # tools/course.sh, with
                   help=argparse.SUPPRESS)                                  # course's arguments
    r = sub.add_parser("record", help="run benchmark suites on the GPU and write data/",
                       formatter_class=raw, epilog=_suites_epilog())
    r.add_argument("suite", nargs="+", metavar="SUITE",
                   help=f"suite names ({', '.join(suites.SUITES)}), or all")
    r.add_argument("--no-save", action="store_true", help="print only; do not write data/")
    c = sub.add_parser("course", help="execute every notebook (live on a capable GPU, else replay)")
    c.add_argument("--out", default=str(ROOT / "build" / "course"))
    c.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    c.add_argument("chapters", nargs="*", help="two-digit chapter numbers (default: all)")
    s = sub.add_parser("sass", help="compile a course kernel (no GPU needed) and summarize its SASS",
                       formatter_class=raw, epilog=_kernels_epilog())
    s.add_argument("kernel", metavar="KERNEL", choices=list(COURSE_KERNELS),
                   help="one of the kernels listed below")
    s.add_argument("--dtype", default=None, help="input dtype, for kernels that have a choice")
    s.add_argument("--full", action="store_true", help="print the whole disassembly too")
    w = sub.add_parser("warm", help="compile every course kernel into the cubin cache (no GPU needed)")
    w.add_argument("--notebooks", action="store_true",
                   help="also execute every chapter once (compiles every configuration they build)")
    w.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    rs = sub.add_parser("reset", help="restore chapters' learner notebooks (yours is kept as .bak, .bak1, …)")
    rs.add_argument("chapters", nargs="+", metavar="NN", help="two-digit chapter numbers")
    rs.add_argument("--dir", default=None, help="notebooks folder (default: the course's notebooks/)")
    rs.add_argument("--no-backup", action="store_true", help="do not keep the current copy as .bak")
    rs.add_argument("--progress", action="store_true",
                    help="also clear the chapter's recorded attempts and kept answers")
    from .teaching import class_progress, grading, publish
    g = sub.add_parser("grade", help="execute a folder of learners' notebooks (solutions stripped) "
                                     "and write a learner × exercise table")
    g.add_argument("dir", metavar="DIR", help="one folder per learner, or one notebook per learner")
    g.add_argument("--out", default=None, help="where grades.csv / grades.md go (default: DIR)")
    g.add_argument("--timeout", type=int, default=grading.TIMEOUT,
                   help=f"seconds one cell may run before its notebook is stopped (default {grading.TIMEOUT})")
    publish.add_commands(sub)
    class_progress.add_commands(sub)
    dg = sub.add_parser("diagnose", help="a zoo bug class: the CPU model's diagnosis and, on a GPU, "
                       "its kernel variant's outcome (chapter 08)")
    dg.add_argument("bug", metavar="CLASS", help="a class of asynctc.pitfalls.zoo (e.g. expect_tx)")
    dg.add_argument("--replay", action="store_true", help="show the recorded GPU outcome, do not launch")
    args = p.parse_args(argv)
    return {"doctor": cmd_doctor, "record": cmd_record, "course": cmd_course,
            "sass": cmd_sass, "warm": cmd_warm, "reset": cmd_reset, "grade": cmd_grade,
            "diagnose": cmd_diagnose, **publish.COMMANDS, **class_progress.COMMANDS}[args.cmd](args)


def cmd_diagnose(args) -> int:
    from . import pitfalls
    if args.bug not in pitfalls.BY_KEY:
        print(f"unknown bug class {args.bug!r}; known: {', '.join(pitfalls.BY_KEY)}", file=sys.stderr)
        return 2
    pitfalls.diagnose(args.bug, gpu=False if args.replay else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
