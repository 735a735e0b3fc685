"""The layout guards itself: no import cycles, layers import downward, trainables/ never imports
orchestrator/, a short top of orchestrator/, and no module over 400 lines.

Every import counts, read with `ast` without importing anything: at module level, inside functions
(a lazy import that dodges a cycle is still a cycle in the design) and under `if TYPE_CHECKING:`.
The checker's own tests plant a cycle and an upward import in a throwaway tree, so it is seen failing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("orchestrator", "trainables")

# Lowest first: a module may import its own layer and those below it, never one above.
LAYERS = (
    ("trainables",),
    ("orchestrator.errors",),
    ("orchestrator.lab",),  # the machines: cluster, netns, hardware, provenance
    ("orchestrator.plan",),  # options, axes, the matrix, planning, dry run
    ("orchestrator.results",),  # the store; sweepstate compares stored specs (plan.spec)
    ("orchestrator.analysis",),  # numbers over results
    ("orchestrator.run",),  # the sweep driver: plan + lab + results, through Ray Tune
    ("orchestrator.report",),  # renderers over analysis
    ("orchestrator.commands",),
    ("orchestrator.cli", "orchestrator.__main__", "orchestrator"),
)
MAX_TOP = 12  # .py files directly in orchestrator/, __init__ and __main__ included
MAX_LINES = 400


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its text (`from pkg import mod` names the
    module pkg.mod when there is one, else pkg)."""
    files = {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_pkg = path.name == "__init__.py"
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, up level-1 more
                    here = name.split(".") if is_pkg else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in files:  # `import pkg.mod.attr` -> pkg.mod
                    target = target.rpartition(".")[0]
                if target and target != name:
                    out.add(target)
        graph[name] = out
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def layer_of(module: str, layers=LAYERS) -> int:
    """The index of the most specific layer prefix that names `module`."""
    best, best_len = None, -1
    for i, names in enumerate(layers):
        for prefix in names:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    if best is None:
        raise KeyError(f"{module} is in no layer of LAYERS")
    return best


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    up = [(a, b) for a, bs in graph.items() for b in bs if layer_of(b, layers) > layer_of(a, layers)]
    return sorted(f"{a} -> {b}" for a, b in up)


# ---- the project -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_no_import_cycles(graph):
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_layers_import_downward_only(graph):
    assert upward_imports(graph) == []


def test_trainables_never_import_orchestrator(graph):
    assert [f"{a} -> {b}" for a, bs in graph.items() if a.startswith("trainables") for b in bs
            if b.startswith("orchestrator")] == []  # fmt: skip


def test_the_top_of_orchestrator_stays_short():
    top = sorted(p.name for p in (ROOT / "orchestrator").glob("*.py"))
    assert len(top) <= MAX_TOP, top


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


# ---- the checker fails when it should ------------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_checker_sees_a_cycle_through_a_lazy_and_a_type_only_import(tmp_path):
    root = _tree(
        tmp_path,
        {
            "orchestrator/__init__.py": "",
            "orchestrator/a.py": "def f():\n    from orchestrator.b import g\n",
            "orchestrator/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
            "trainables/__init__.py": "",
        },
    )
    graph = import_graph(root)
    assert graph["orchestrator.a"] == {"orchestrator.b"} and graph["orchestrator.b"] == {"orchestrator.a"}
    assert find_cycle(graph) == ["orchestrator.a", "orchestrator.b", "orchestrator.a"]


def test_the_checker_sees_an_upward_import(tmp_path):
    root = _tree(
        tmp_path,
        {
            "orchestrator/__init__.py": "",
            "orchestrator/plan/__init__.py": "",
            "orchestrator/plan/spec.py": "import orchestrator.run.sweep\n",
            "orchestrator/run/__init__.py": "",
            "orchestrator/run/sweep.py": "from orchestrator.plan import spec\n",
            "trainables/__init__.py": "",
            "trainables/x.py": "from orchestrator.errors import E\n",
            "orchestrator/errors.py": "",
        },
    )
    graph = import_graph(root)
    assert upward_imports(graph) == [
        "orchestrator.plan.spec -> orchestrator.run.sweep",
        "trainables.x -> orchestrator.errors",
    ]
    assert find_cycle(graph) == ["orchestrator.plan.spec", "orchestrator.run.sweep", "orchestrator.plan.spec"]
