"""The code's shape (GUIDE.md, Style): thin command modules and functions short enough to read.

A command module only parses, calls its library and renders: over ~150 lines it is holding
library logic.  A function over ~80 lines has parts with names: split it into them.
Read from the source with `ast` (nothing is imported).
"""

from __future__ import annotations

import ast
import re
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
    files = [p for d in ("src", "docs", "tests", "examples", "benchmarks") for p in (root / d).rglob("*")
             if p.is_file() and p.suffix in {".py", ".md", ".c", ".h", ".j2", ".csv", ".yaml", ".txt"}]
    found = [f"{p.relative_to(root)}:{i}" for p in files + [root / "README.md"]
             for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if pattern.search(line)]
    assert not found, "cite the work by its name in docs/references.md, not its seed number: " + ", ".join(found)
