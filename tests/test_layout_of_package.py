"""The package's shape (issues 8 and 18): machinery in ``core/``, hardware models in ``models/``, one
module or small package per kernel family beside its ``.cu`` and its test file; imports go one way
only, with no cycle; an earlier chapter never imports a later one; no module outgrows its limit;
figure modules never time and suite modules never plot.

Each rule is a function over a package directory, so that it is tested twice: on the real package
(it must hold) and on a small package built in ``tmp_path`` with one violation of it injected (the
check must catch it: a rule whose check cannot fail is no rule)."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "asynctc"
LAYER = {"core": 0, "models": 1, "chapter": 2}

#: Lines a module may have: chapter modules and packages, the GEMM library and the chapter-level
#: machinery (catalog, suites, __main__) 600; core/ and models/ 800 (one role per file).
LIMIT, LIMIT_SHARED = 600, 800
SHARED = ("core", "models")

#: The course's chapter order (COURSE.md): a chapter module may import only chapters at or before
#: its own place. ``gemm`` is the library between chapters 06 and 07: it builds on chapters ≤ 06
#: (never fp8/swizzle), and chapters ≥ 07 may use it. ``catalog``, ``suites`` and ``__main__``
#: list the whole course and may import every chapter.
CHAPTER_ORDER = {"why_async": 0, "simt": 1, "mma_sync": 1, "cp_async": 2, "cp_async_design": 2,
                 "cp_async_ring": 2, "cp_async_figures": 2, "cp_async_show": 2, "tma": 3, "wgmma": 4,
                 "wgmma_peak": 4, "pipeline": 5, "warp_specialization": 6, "gemm": 6.5, "fp8": 7,
                 "swizzle": 7, "pitfalls": 8, "tcgen05": 9, "claims": 10}
EVERY_CHAPTER = ("catalog", "suites", "__main__", "teaching")   # teaching: course-wide tools (runner, builds, grading, site)

#: What a figure module must not call: the course's timer and the clocks and events under it.
TIMING_NAMES = {"time_gpu", "perf_counter", "perf_counter_ns", "sustained", "_CudaTimer",
                "create_event", "cuEventRecord", "cudaEventRecord", "cuEventElapsedTime",
                "cudaEventElapsedTime"}


# --------------------------------------------------------------------------------------------------
# The rules, as functions of a package directory
# --------------------------------------------------------------------------------------------------

def _modules(pkg: Path) -> list[Path]:
    return sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(pkg: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(pkg: Path, dotted: str) -> bool:
    p = pkg.parent / dotted.replace(".", "/")
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def _imports(pkg: Path, path: Path, module_level_only: bool = False) -> set[str]:
    """Dotted names of the modules of ``pkg`` that ``path`` imports (at module level, or anywhere:
    imports inside functions count). ``from . import x`` names the module ``x`` when it is one."""
    tree = ast.parse(path.read_text())
    me = _module_name(pkg, path)
    here = me if path.name == "__init__.py" else me.rpartition(".")[0]
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            if root.split(".")[0] != pkg.name:
                continue
            for alias in node.names:
                cand = f"{root}.{alias.name}"
                out.add(cand if _is_module(pkg, cand) else root)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == pkg.name}
    out.discard(me)
    return out


def _top(pkg: Path, mod: str) -> str:
    """The chapter (or layer) a module belongs to: ``asynctc.tma.launch`` → ``tma``."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SHARED else "chapter"


def oversized(pkg: Path) -> list[str]:
    """Every module over its line limit, as ``"<path>: <lines> lines (over <limit>)"``."""
    out = []
    for p in _modules(pkg):
        rel = p.relative_to(pkg)
        limit = LIMIT_SHARED if rel.parts[0] in SHARED else LIMIT
        n = len(p.read_text().splitlines())
        if n > limit:
            out.append(f"{pkg.name}/{rel}: {n} lines (over {limit}: split it by role)")
    return out


def import_graph(pkg: Path) -> dict[str, set[str]]:
    """Module → the package's modules it imports, lazy imports included. The root package
    (``asynctc/__init__.py``: the version every module may read, and the front door) is no node."""
    root = pkg.name
    return {_module_name(pkg, p): {m for m in _imports(pkg, p) if m != root}
            for p in _modules(pkg) if _module_name(pkg, p) != root}


def import_cycles(pkg: Path) -> list[list[str]]:
    """Every import cycle among the package's modules (lazy imports count), each as a path
    ``[a, b, ..., a]``."""
    graph = import_graph(pkg)
    state: dict[str, int] = {}
    found = []

    def visit(m, stack):
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                found.append(stack[stack.index(n):] + [n] if n in stack else stack + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def chapter_order_breaches(pkg: Path) -> list[str]:
    """Every import of a later chapter by an earlier one (lazy imports count), and every chapter
    module whose place in :data:`CHAPTER_ORDER` is unknown."""
    out = []
    for p in _modules(pkg):
        me = _module_name(pkg, p)
        mine = _top(pkg, me)
        if not mine or mine in SHARED or mine in EVERY_CHAPTER:
            continue
        if mine not in CHAPTER_ORDER:
            out.append(f"{me}: chapter {mine!r} has no place in the chapter order")
            continue
        for mod in sorted(_imports(pkg, p)):
            theirs = _top(pkg, mod)
            if theirs in CHAPTER_ORDER and CHAPTER_ORDER[theirs] > CHAPTER_ORDER[mine]:
                out.append(f"{me} (chapter {CHAPTER_ORDER[mine]}) imports {mod} "
                           f"(chapter {CHAPTER_ORDER[theirs]}): an earlier chapter imports a later one")
            elif theirs in EVERY_CHAPTER:
                out.append(f"{me} imports {mod}: chapters never import the course's listing")
    return out


def _names_called(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[-1])
    return out


def _external_imports(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def role_breaches(pkg: Path) -> list[str]:
    """Figure modules (``figures.py``, ``*figures*.py``) that import ``core.bench`` or time
    anything; suite modules (``suite.py``, ``*suite*.py``) that import matplotlib or ``core.plots``."""
    out = []
    bench, plots = f"{pkg.name}.core.bench", f"{pkg.name}.core.plots"
    for p in _modules(pkg):
        me = _module_name(pkg, p)
        tree = ast.parse(p.read_text())
        mine = _imports(pkg, p)
        ext = _external_imports(tree)
        if "figures" in p.stem:
            if bench in mine:
                out.append(f"{me}: a figure module imports {bench} (figures never measure)")
            timing = sorted((_names_called(tree) & TIMING_NAMES)
                            | {m for m in ext if m.split(".")[0] in ("time", "timeit")})
            if timing:
                out.append(f"{me}: a figure module times things ({', '.join(timing)})")
        if "suite" in p.stem:
            if plots in mine:
                out.append(f"{me}: a suite module imports {plots} (suites never plot)")
            mpl = sorted(m for m in ext if m.split(".")[0] == "matplotlib")
            if mpl:
                out.append(f"{me}: a suite module imports {', '.join(mpl)} (suites never plot)")
    return out


# --------------------------------------------------------------------------------------------------
# The rules hold for the package
# --------------------------------------------------------------------------------------------------

MODULES = _modules(PKG)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_go_one_way(path):
    """core imports only core (and the package version); models import core and models; chapter
    modules may import anything. Lazy imports inside functions count too."""
    me = _layer(_module_name(PKG, path))
    for mod in _imports(PKG, path, module_level_only=False):
        if mod == PKG.name:
            continue
        assert LAYER[_layer(mod)] <= LAYER[me], f"{_module_name(PKG, path)} ({me}) imports {mod}"


def test_no_module_over_its_line_limit():
    assert not oversized(PKG), "\n".join(oversized(PKG))


def test_no_import_cycle_lazy_imports_included():
    cycles = import_cycles(PKG)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_an_earlier_chapter_never_imports_a_later_one():
    breaches = chapter_order_breaches(PKG)
    assert not breaches, "\n".join(breaches)


def test_figures_never_time_and_suites_never_plot():
    breaches = role_breaches(PKG)
    assert not breaches, "\n".join(breaches)


#: Kernels named for the learner rather than their package: chapter 06's whole kernel in one file
#: (driven by warp_specialization/whole.py; its own tests are tests/test_whole_gemm.py).
DRIVEN_BY = {"hopper_gemm.cu": "warp_specialization", "capstone.cu": "warp_specialization"}


def test_each_kernel_file_has_its_module_and_tests():
    """Every ``kernels/<family>.cu`` is driven by a module ``<family>.py`` or a package
    ``<family>/`` (or the one its name starts with; a machinery kernel such as ``bench_clock.cu``
    by ``core/<module>.py``) and tested by ``tests/test_<module>.py``."""
    tests = PKG.parent / "tests"
    from asynctc.catalog import TEST_ONLY_SOURCES

    def driven_by(m: str) -> bool:
        return ((PKG / f"{m}.py").exists() or (PKG / m / "__init__.py").exists()
                or (PKG / "core" / f"{m}.py").exists())

    for cu in (PKG / "kernels").glob("*.cu"):
        if cu.stem == "probe" or cu.name in TEST_ONLY_SOURCES:
            continue
        mod = DRIVEN_BY.get(cu.name) or next(
            (m for m in (cu.stem, cu.stem.rsplit("_", 1)[0], cu.stem.split("_")[0] + "_"
                         + cu.stem.split("_")[1] if "_" in cu.stem else cu.stem) if driven_by(m)), None)
        assert mod, f"kernels/{cu.name} has no module or package of its name"
        assert (tests / f"test_{mod}.py").exists() or (tests / f"test_{mod.split('_peak')[0]}.py").exists(), \
            f"kernels/{cu.name}: no tests/test_{mod}.py"


# --------------------------------------------------------------------------------------------------
# ... and each check catches a violation injected into a small package
# --------------------------------------------------------------------------------------------------

#: A tiny package that keeps every rule: layers, a chapter package split by role, the GEMM
#: library, the course's listing importing everything, and modules exactly at their limits.
CLEAN = {
    "__init__.py": "__version__ = '0'\n",
    "core/__init__.py": "",
    "core/bench.py": "from .. import __version__\nimport time\n\ndef time_gpu(fn):\n"
                     "    t = time.perf_counter()\n    fn()\n    return time.perf_counter() - t\n",
    "core/plots.py": "def style():\n    import matplotlib.pyplot as plt\n    return plt\n",
    "core/shared.py": "x = 1\n" * LIMIT_SHARED,
    "models/__init__.py": "",
    "models/a.py": "from . import b\n",
    "models/b.py": "from ..core import bench\n",
    "mma_sync/__init__.py": '"""Chapter 01."""\nfrom .launch import run\nfrom . import suite\n',
    "mma_sync/launch.py": "from ..core.bench import time_gpu\n\ndef run():\n    return 1\n",
    "mma_sync/suite.py": "from ..core import bench\nfrom .launch import run\n\n"
                         "def measure():\n    return bench.time_gpu(run)\n",
    "mma_sync/figures.py": "from ..core import plots\nfrom .launch import run\n\n"
                           "def plot(rec):\n    import matplotlib.pyplot as plt\n    return plt\n",
    "tma/__init__.py": "from .launch import load\n",
    "tma/launch.py": ("from .. import mma_sync\n\ndef load():\n    return mma_sync.run()\n"
                      + "x = 1\n" * 595),                          # 599 lines: within the limit
    "warp_specialization/__init__.py": "from . import config\n",
    "warp_specialization/config.py": "def stages():\n    from .. import tma\n    return tma\n",
    "gemm/__init__.py": "from .plan import matmul\n",
    "gemm/plan.py": "from ..warp_specialization import config\n\ndef matmul():\n    return config\n",
    "fp8.py": "def gemm():\n    from .gemm import matmul\n    return matmul\n",
    "catalog.py": "def every():\n    from . import fp8, gemm, mma_sync, tma, warp_specialization\n",
    "suites.py": "from . import catalog\n",
    "__main__.py": "from . import catalog, suites\n",
}

#: One violation each: (the check that must catch it, files to add or replace, what it reports).
VIOLATIONS = {
    "chapter module over 600": (oversized, {"tma/launch.py": "x = 1\n" * (LIMIT + 1)},
                                "tma/launch.py: 601 lines"),
    "GEMM module over 600": (oversized, {"gemm/edges.py": "x = 1\n" * (LIMIT + 1)},
                             "gemm/edges.py: 601"),
    "catalog over 600": (oversized, {"catalog.py": "x = 1\n" * (LIMIT + 1)}, "catalog.py: 601"),
    "__main__ over 600": (oversized, {"__main__.py": "x = 1\n" * (LIMIT + 1)}, "__main__.py: 601"),
    "core module over 800": (oversized, {"core/shared.py": "x = 1\n" * (LIMIT_SHARED + 1)},
                             "core/shared.py: 801"),
    "models module over 800": (oversized, {"models/big.py": "x = 1\n" * (LIMIT_SHARED + 1)},
                               "models/big.py: 801"),
    "module-level cycle": (import_cycles, {"models/b.py": "from .a import x\n"},
                           "models.a -> pkgname.models.b"),
    "lazy cycle": (import_cycles, {"models/b.py": "def f():\n    from . import a\n    return a\n"},
                   "models.b"),
    "intra-package from . import": (import_cycles,
                                    {"mma_sync/launch.py": "def run():\n    from . import suite\n"},
                                    "mma_sync.suite"),
    "cycle through a package": (import_cycles, {"mma_sync/suite.py": "import pkgname.mma_sync\n"},
                                "pkgname.mma_sync.suite -> pkgname.mma_sync"),
    "earlier chapter imports a later one": (
        chapter_order_breaches, {"mma_sync/figures.py": "def plot():\n    from .. import tma\n"},
        "pkgname.mma_sync.figures (chapter 1) imports pkgname.tma (chapter 3)"),
    "chapter 06 imports the GEMM": (
        chapter_order_breaches, {"warp_specialization/figures.py": "from ..gemm import matmul\n"},
        "pkgname.warp_specialization.figures (chapter 6) imports pkgname.gemm (chapter 6.5)"),
    "the GEMM imports swizzle": (chapter_order_breaches,
                                 {"gemm/plan.py": "from .. import swizzle\n", "swizzle.py": ""},
                                 "pkgname.gemm.plan (chapter 6.5) imports pkgname.swizzle (chapter 7)"),
    "a chapter imports the listing": (chapter_order_breaches,
                                      {"tma/lifecycle.py": "def f():\n    from .. import suites\n"},
                                      "pkgname.tma.lifecycle imports pkgname.suites"),
    "a chapter with no place": (chapter_order_breaches, {"newthing.py": "x = 1\n"},
                                "'newthing' has no place"),
    "figures import core.bench": (role_breaches,
                                  {"mma_sync/figures.py": "from ..core import bench\n"},
                                  "mma_sync.figures: a figure module imports pkgname.core.bench"),
    "figures call time_gpu": (role_breaches,
                              {"tma/ladder_figures.py": "def f(W):\n    return W.time_gpu(None)\n"},
                              "times things (time_gpu)"),
    "figures read the wall clock": (role_breaches,
                                    {"mma_sync/figures.py": "import time\nt = time.perf_counter()\n"},
                                    "perf_counter, time"),
    "figures record a CUDA event": (role_breaches,
                                    {"mma_sync/figures.py": "def f(d):\n    return d.create_event()\n"},
                                    "create_event"),
    "suite imports matplotlib": (role_breaches,
                                 {"mma_sync/suite.py": "def f():\n    import matplotlib.pyplot\n"},
                                 "imports matplotlib.pyplot"),
    "suite imports core.plots": (role_breaches,
                                 {"tma/copy_suite.py": "from ..core.plots import style\n"},
                                 "tma.copy_suite: a suite module imports pkgname.core.plots"),
}

CHECKS = (oversized, import_cycles, chapter_order_breaches, role_breaches)


def _build(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkgname"
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_the_small_package_keeps_every_rule(tmp_path):
    pkg = _build(tmp_path, CLEAN)
    for check in CHECKS:
        assert not check(pkg), (check.__name__, check(pkg))


@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_each_check_catches_its_violation(tmp_path, case):
    """The violation is reported by its own check (naming the module), and by no other."""
    check, files, says = VIOLATIONS[case]
    pkg = _build(tmp_path, {**CLEAN, **files})
    found = check(pkg)
    text = "\n".join(" -> ".join(f) if isinstance(f, list) else f for f in found)
    assert found and says in text, (case, found)
    for other in CHECKS:
        if other is not check:
            assert not other(pkg), (case, other.__name__, other(pkg))


# --------------------------------------------------------------------------------------------------
# tools/ keeps run and build scripts only
# --------------------------------------------------------------------------------------------------

TOOLS = PKG.parent / "tools"

#: The kinds of Python file tools/ may hold, by name. An investigation does not stay there: it
#: becomes a suite in its chapter's package, a documented run script, or a finding in docs/NOTES.md.
TOOL_KINDS = {
    "gpu_*.py": "a run script: one command on the GPU machine that runs a chapter's or a suite's "
                "checks and measurements (its docstring shows its command line)",
    "build_*.py": "a build script: makes the course's artifacts (its docstring shows its command line)",
    "gpu_common.py": "what the run scripts share (imported by them, never run itself)",
}
#: Words that name a one-off investigation, not a run script.
ONE_OFF_WORDS = ("explore", "exploration", "profile", "debug", "scratch", "investigate", "try")


def tool_breaches(tools: Path) -> list[str]:
    """Every ``tools/*.py`` that is not one of :data:`TOOL_KINDS`, or lacks a module docstring, or
    (run and build scripts) whose docstring does not show how to run it."""
    import fnmatch
    out = []
    scripts = sorted(tools.glob("*.py"))
    for p in scripts:
        tree = ast.parse(p.read_text())
        doc = ast.get_docstring(tree) or ""
        kind = next((k for k in ("gpu_common.py", "gpu_*.py", "build_*.py")
                     if fnmatch.fnmatch(p.name, k)), None)
        words = set(p.stem.split("_"))
        if not doc.strip():
            out.append(f"tools/{p.name}: no module docstring (say what it runs and how)")
        if kind is None or words & set(ONE_OFF_WORDS):
            out.append(f"tools/{p.name}: not a run or build script ({', '.join(TOOL_KINDS)}); a "
                       "one-off investigation becomes a suite, a documented tool or a finding in "
                       "docs/NOTES.md")
        elif kind == "gpu_common.py":
            users = [q.name for q in scripts if q != p and "gpu_common" in q.read_text()]
            if not users:
                out.append(f"tools/{p.name}: shared by the run scripts, but none imports it")
        elif doc and f"tools/{p.name}" not in doc:
            out.append(f"tools/{p.name}: its docstring does not show its command line "
                       f"(python tools/{p.name} ...)")
    return out


def test_tools_holds_run_and_build_scripts_only():
    breaches = tool_breaches(TOOLS)
    assert not breaches, "\n".join(breaches)


TOOLS_CLEAN = {
    "gpu_ch01.py": '"""Chapter 01 on the GPU.\n\n    python tools/gpu_ch01.py --out $OUT\n"""\n'
                   "import gpu_common\n",
    "gpu_common.py": '"""What the run scripts share."""\n',
    "build_notebooks.py": '"""Build the notebooks.\n\n    python tools/build_notebooks.py\n"""\n',
}
TOOLS_VIOLATIONS = {
    "an exploration": (
        {"explore_mma_sync.py": '"""Explore.\n\n    python tools/explore_mma_sync.py\n"""\n'},
        "tools/explore_mma_sync.py: not a run or build script"),
    "a debug script named like a run script": (
        {"gpu_debug_cluster.py": '"""Debug.\n\n    python tools/gpu_debug_cluster.py\n"""\n'},
        "tools/gpu_debug_cluster.py: not a run or build script"),
    "a profile helper": ({"profile_x.py": '"""For ncu."""\n'}, "tools/profile_x.py: not a run"),
    "no docstring": ({"gpu_ch02.py": "import gpu_common\n"}, "tools/gpu_ch02.py: no module docstring"),
    "no command line": ({"gpu_ch03.py": '"""Chapter 03 on the GPU."""\n'},
                        "tools/gpu_ch03.py: its docstring does not show its command line"),
    "an unused common module": ({"gpu_ch01.py": '"""Ch 01.\n\n    python tools/gpu_ch01.py\n"""\n'},
                                "tools/gpu_common.py: shared by the run scripts, but none imports it"),
}


@pytest.mark.parametrize("case", list(TOOLS_VIOLATIONS))
def test_the_tools_check_catches_each_violation(tmp_path, case):
    for name, text in TOOLS_CLEAN.items():
        (tmp_path / name).write_text(text)
    assert not tool_breaches(tmp_path)
    files, says = TOOLS_VIOLATIONS[case]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = tool_breaches(tmp_path)
    assert any(says in f for f in found), (case, found)
