"""The package's source read once per test process: the unit tests that check its shape (imports, layers,
kinds, command size) each walk every module's syntax tree, and parsing the ~300 files was most of their
time (each test re-read them all, one twice).  The trees are shared, so no caller may change one."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def tree(path: Path) -> ast.Module:
    """The syntax tree of the file at `path` (its name in errors, as ast.parse gives it)."""
    return ast.parse(path.read_text(), str(path))


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of `tree(path)`, in ast.walk's order."""
    return tuple(ast.walk(tree(path)))
