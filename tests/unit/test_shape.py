"""The code's shape (GUIDE.md, Style): thin command modules and functions short enough to read.

A command module only parses, calls its library and renders: over ~150 lines it is holding
library logic.  A function over ~80 lines has parts with names: split it into them.
Python is measured in statement lines (lines on which a statement starts), read from the source with
`ast` (nothing is imported): `ruff format` spreads one long call over many physical lines without
adding any logic, so physical lines would measure the formatter.  The limits are the statement lines
of ~150 and ~80 physical lines of this code base before it was formatted (1.1-1.9 lines a statement).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jitterscope
from tests.support import source_ast

PKG = Path(jitterscope.__file__).resolve().parent
COMMAND_MAX_STATEMENTS = 85
FUNCTION_MAX_STATEMENTS = 70
FUNCTION_MAX_LINES = 80  # C, which no formatter touches


def statement_lines(node: ast.AST) -> int:
    """Lines on which a statement of `node` starts (a call spread over ten lines is one)."""
    return len({n.lineno for n in ast.walk(node) if isinstance(n, ast.stmt)})


def long_functions(path: Path, limit: int = FUNCTION_MAX_STATEMENTS) -> list[str]:
    tree = source_ast.tree(path)
    return [
        f"{path.name}:{n.lineno} {n.name} ({k} statement lines)"
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (k := statement_lines(n)) > limit
    ]


def test_command_modules_are_thin() -> None:
    commands = sorted((PKG / "commands").glob("*.py"))
    assert len(commands) > 10, "the command modules were not found"
    fat = [
        f"{p.name} ({n} statement lines)"
        for p in commands
        if (n := statement_lines(source_ast.tree(p))) > COMMAND_MAX_STATEMENTS
    ]
    assert not fat, (
        f"command modules over {COMMAND_MAX_STATEMENTS} statement lines (move the logic into the library package, "
        "shared options into options.py): " + ", ".join(fat)
    )


def test_functions_are_short() -> None:
    found = [f for p in sorted(PKG.rglob("*.py")) for f in long_functions(p)]
    assert not found, f"functions over {FUNCTION_MAX_STATEMENTS} statement lines (split into their named steps): " + (
        "; ".join(found)
    )


def test_the_length_check_sees_a_long_function_not_a_long_call(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_MAX_STATEMENTS))
    call = "\n".join(f"        {i}," for i in range(200))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return f(\n{call}\n    )\n")
    assert long_functions(tmp_path / "m.py") == [f"m.py:1 long ({FUNCTION_MAX_STATEMENTS + 1} statement lines)"]


def test_a_command_module_is_measured_in_statements(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('"""help\n\nEXAMPLES\n  a\n  b\n"""\nx = f(\n    1,\n    2,\n)\n')
    assert statement_lines(ast.parse((tmp_path / "m.py").read_text())) == 2


def long_c_functions(path: Path, limit: int = FUNCTION_MAX_LINES) -> list[str]:
    """Functions of a C file over `limit` lines: the native code's style opens and closes a function body
    with a brace alone at column 0, its signature on the line(s) before."""
    found, start, sig, prev = [], 0, "", ""
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line == "{":
            start, sig = i, prev
        elif line == "}" and start:
            if i - start + 2 > limit:
                found.append(f"{path.name}:{start - 1} {sig.strip()[:60]} ({i - start + 2} lines)")
            start = 0
        prev = line
    return found


def test_native_functions_are_short() -> None:
    sources = sorted((PKG / "native").glob("*.[ch]"))
    assert len(sources) > 5, "the native sources were not found"
    found = [f for p in sources for f in long_c_functions(p)]
    assert not found, f"C functions over {FUNCTION_MAX_LINES} lines (split into their named steps): " + "; ".join(found)


def test_the_c_length_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x += {i};" for i in range(FUNCTION_MAX_LINES))
    (tmp_path / "m.c").write_text(f"int main(void)\n{{\n{body}\n}}\n\nstatic int f(void)\n{{\n    return 1;\n}}\n")
    assert long_c_functions(tmp_path / "m.c") == [f"m.c:1 int main(void) ({FUNCTION_MAX_LINES + 3} lines)"]


def test_citations_name_the_work_not_a_seed_number() -> None:
    """docs/references.md names each work ("De et al. 2007", "the thesis"); the number of a file in the
    team's reading list means nothing to a reader."""
    root = PKG.parent.parent
    pattern = re.compile("seed[- ]00" + "[0-4]", re.IGNORECASE)
    files = [
        p
        for d in ("src", "docs", "tests", "examples", "benchmarks")
        for p in (root / d).rglob("*")
        if p.is_file() and p.suffix in {".py", ".md", ".c", ".h", ".j2", ".csv", ".yaml", ".txt"}
    ]
    found = [
        f"{p.relative_to(root)}:{i}"
        for p in files + [root / "README.md"]
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "cite the work by its name in docs/references.md, not its seed number: " + ", ".join(found)
