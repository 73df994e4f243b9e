"""docs/architecture.md lists every module of the package, one line each (the newcomer's map)."""

from __future__ import annotations

import re
from pathlib import Path

import jitterscope

ROOT = Path(__file__).resolve().parents[2]
PKG = Path(jitterscope.__file__).resolve().parent


def listed_modules() -> set[str]:
    """Paths (relative to src/jitterscope) named in the module tree of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("```\nsrc/jitterscope/\n", 1)[1].split("```", 1)[0]
    out: set[str] = set()
    package = ""
    for line in block.splitlines():
        m = re.match(r"^( {2,})(\S+)", line)
        if not m:
            continue
        indent, name = len(m.group(1)), m.group(2)
        if indent == 2:
            package = name if name.endswith("/") else ""
            out.add(name)  # a package's own line stands for its __init__.py
        elif package and name.endswith(".py"):
            out.add(package + name)
    return out


def test_every_module_is_in_the_architecture_tree() -> None:
    modules = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if p.name != "__main__.py"}
    modules = {m for m in modules if not m.startswith("native/")}
    listed = listed_modules()
    missing = sorted(m for m in modules if m not in listed and m.replace("__init__.py", "") not in listed)
    assert not missing, "docs/architecture.md's module tree lacks (add one line each, under its package): " + ", ".join(
        missing
    )


def test_the_tree_names_no_module_that_does_not_exist() -> None:
    modules = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py")}
    stale = sorted(m for m in listed_modules() if m not in modules and not m.endswith("/"))
    assert not stale, "docs/architecture.md's module tree names modules that are gone: " + ", ".join(stale)


def drawn_layers() -> dict[str, set[str]]:
    """The layer lists of docs/architecture.md's "Layers" drawing: layer -> top-level modules and packages
    (`rundir.py` -> rundir, `measure/` -> measure)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("## Layers", 1)[1].split("```\n", 2)[1]
    out: dict[str, set[str]] = {}
    current = ""
    for line in block.splitlines():
        m = re.match(r"^(\w+):\s+(.*)$", line)
        if m:
            current, rest = m.group(1), m.group(2)
        elif current and re.match(r"^ {13}\S", line):
            rest = line
        else:
            current = "" if line.strip() and not line.strip().startswith("│") else current
            continue
        out.setdefault(current, set()).update(
            w.removesuffix(".py").removesuffix("/") for w in rest.split() if w.endswith((".py", "/"))
        )
    return out


def test_the_layer_drawing_matches_the_code() -> None:
    from tests.unit.test_layers import COMMANDS, FOUNDATION, kinds_layer

    drawn = drawn_layers()
    code = {"commands": set(COMMANDS), "kinds": kinds_layer(), "foundation": set(FOUNDATION)}
    assert set(drawn) == set(code), f"docs/architecture.md draws layers {sorted(drawn)}, the code has {sorted(code)}"
    for name, members in code.items():
        assert drawn[name] == members, (
            f"docs/architecture.md's {name} layer: add {sorted(members - drawn[name])}, "
            f"remove {sorted(drawn[name] - members)} (tests/unit/test_layers.py holds the code's lists)"
        )
