"""The package's import graph: no cycles, and commands never import each other.

The graph is read from the source with `ast` (nothing is imported), counting
every import, lazy ones inside functions included (a lazy import only hides a
cycle), with the packages an import initialises on the way (`import a.b.c` runs
a/__init__ and a/b/__init__), and leaving out those under `if TYPE_CHECKING:`
(never executed).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import jitterscope
from tests.support import source_ast

SRC = Path(jitterscope.__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    mods = {}
    for f in (SRC / "jitterscope").rglob("*.py"):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = f
    return mods


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for n in node.body:
                skip.update(id(x) for x in ast.walk(n))
    return skip


def imports_of(name: str, path: Path, mods: dict[str, Path]) -> dict[str, int]:
    """The package modules `name` imports -> the line of the first such import."""
    tree = source_ast.tree(path)
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = _type_checking_nodes(tree)
    out: dict[str, int] = {}
    for node in source_ast.nodes(path):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            for a in node.names:
                t = a.name
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                targets.append(t)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            # `from pkg import mod` imports the module; `from mod import name` the module itself.
            targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        for t in targets:
            # Importing a.b.c runs a/__init__ and a/b/__init__ first: an edge to each package on the way,
            # except this module's own packages (a sibling import inside a package is no cycle).
            parts = t.split(".")
            for target in [".".join(parts[:i]) for i in range(1, len(parts))] + [t]:
                if target in mods and target != name and not name.startswith(target + "."):
                    out.setdefault(target, node.lineno)
    return out


def import_graph() -> dict[str, dict[str, int]]:
    mods = _modules()
    return {m: imports_of(m, p, mods) for m, p in mods.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _describe(comp: list[str], graph: dict[str, dict[str, int]]) -> str:
    return "; ".join(f"{m}:{line} -> {t}" for m in comp for t, line in graph[m].items() if t in comp)


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 50, "the package's modules were not found"
    found = cycles(graph)
    assert not found, "import cycles: " + " | ".join(_describe(c, graph) for c in found)


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_commands_do_not_import_each_other() -> None:
    graph = import_graph()
    bad = [
        f"{m}:{line} imports {t}"
        for m, deps in graph.items()
        if m.startswith("jitterscope.commands.")
        for t, line in deps.items()
        if t.startswith("jitterscope.commands.")
    ]
    assert not bad, "a command uses another command's code (move it into a library module): " + "; ".join(bad)


def test_help_imports_no_scientific_stack() -> None:
    """`jitterscope --help` (and every command's start) imports every command module to build the
    parser: a command imports its library inside run(), so numpy, pyarrow, scipy, pandas and
    matplotlib stay unloaded until a command actually needs them."""
    import subprocess

    code = (
        "import sys; from jitterscope.cli import build_parser; build_parser(); "
        "print(' '.join(sorted(m for m in ('numpy', 'pyarrow', 'scipy', 'pandas', 'matplotlib', 'mpi4py') "
        "if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"building the command-line parser imports {out}: import it inside the command's run()"
