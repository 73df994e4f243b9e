"""The code's shape (GUIDE.md, Style): thin command modules and functions short enough to read.

A command module only parses, calls its library and renders: over ~150 lines it is holding
library logic.  A function over ~80 lines has parts with names: split it into them.
Read from the source with `ast` (nothing is imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

import jitterscope

PKG = Path(jitterscope.__file__).resolve().parent
COMMAND_MAX_LINES = 150
FUNCTION_MAX_LINES = 80


def long_functions(path: Path, limit: int = FUNCTION_MAX_LINES) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.name}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (n.end_lineno or n.lineno) - n.lineno + 1 > limit]


def test_command_modules_are_thin() -> None:
    commands = sorted((PKG / "commands").glob("*.py"))
    assert len(commands) > 10, "the command modules were not found"
    fat = [f"{p.name} ({n} lines)" for p in commands if (n := len(p.read_text().splitlines())) > COMMAND_MAX_LINES]
    assert not fat, (f"command modules over {COMMAND_MAX_LINES} lines (move the logic into the library package, "
                     "shared options into options.py): " + ", ".join(fat))


def test_functions_are_short() -> None:
    found = [f for p in sorted(PKG.rglob("*.py")) for f in long_functions(p)]
    assert not found, f"functions over {FUNCTION_MAX_LINES} lines (split into their named steps): " + "; ".join(found)


def test_the_length_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_MAX_LINES))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(tmp_path / "m.py") == [f"m.py:1 long ({FUNCTION_MAX_LINES + 1} lines)"]
