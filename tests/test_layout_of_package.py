"""The package's shape (issue 8): machinery in ``core/``, hardware models in ``models/``, one module
per kernel family beside its ``.cu`` and its test file; imports go one way only, with no cycle."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "asynctc"
LAYER = {"core": 0, "models": 1, "chapter": 2}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ("core", "models") else "chapter"


def _imports(path: Path, module_level_only: bool) -> set[str]:
    """Absolute names of the asynctc modules ``path`` imports (module level, or anywhere)."""
    tree = ast.parse(path.read_text())
    me = _module_name(path)
    pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            if not root.startswith("asynctc"):
                continue
            for alias in node.names:
                cand = f"{root}.{alias.name}"
                out.add(cand if (PKG.parent / (cand.replace(".", "/") + ".py")).exists()
                        or (PKG.parent / cand.replace(".", "/")).is_dir() else root)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("asynctc")}
    out.discard(me)
    return out


MODULES = sorted(p for p in PKG.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_go_one_way(path):
    """core imports only core (and the package version); models import core and models; chapter
    modules may import anything. Lazy imports inside functions count too."""
    me = _layer(_module_name(path))
    for mod in _imports(path, module_level_only=False):
        if mod in ("asynctc", "asynctc.__init__"):
            continue
        assert LAYER[_layer(mod)] <= LAYER[me], f"{_module_name(path)} ({me}) imports {mod}"


def test_no_import_cycle():
    graph = {_module_name(p): {m for m in _imports(p, True) if m != "asynctc"} for p in MODULES}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for n in graph.get(m, ()):
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack + [m, n]))
            if n not in state:
                visit(n, stack + [m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_each_kernel_file_has_its_module_and_tests():
    """Every ``kernels/<family>.cu`` is driven by a module ``<family>.py`` (or the module its name
    starts with; a machinery kernel such as ``bench_clock.cu`` by ``core/<module>.py``) and tested
    by ``tests/test_<module>.py``."""
    tests = PKG.parent / "tests"
    from asynctc.catalog import TEST_ONLY_SOURCES
    for cu in (PKG / "kernels").glob("*.cu"):
        if cu.stem == "probe" or cu.name in TEST_ONLY_SOURCES:
            continue
        mod = next((m for m in (cu.stem, cu.stem.rsplit("_", 1)[0], cu.stem.split("_")[0] + "_"
                                + cu.stem.split("_")[1] if "_" in cu.stem else cu.stem)
                    if (PKG / f"{m}.py").exists() or (PKG / m / "__init__.py").exists()
                    or (PKG / "core" / f"{m}.py").exists()), None)
        assert mod, f"kernels/{cu.name} has no module of its name"
        assert (tests / f"test_{mod}.py").exists() or (tests / f"test_{mod.split('_peak')[0]}.py").exists(), \
            f"kernels/{cu.name}: no tests/test_{mod}.py"
