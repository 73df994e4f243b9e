"""Every assertion in the suite must be able to fail: this scans the tests' source for the shapes that cannot.

- a value checked against the whole range its type allows: a probability or share in [0, 1], a count or time
  `>= 0` (`len(x) >= 0`), which only a crash could break;
- a computation on literals alone (`[round(f**3, 3) for f in (0.8, 0.9)] == [...]`), which checks Python,
  not jitterscope;
- an expression compared with itself, or `assert True`.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
BUILTINS = {"round", "abs", "sum", "min", "max", "len", "sorted", "list", "tuple", "set", "int", "float", "range"}


def _is_num(node: ast.AST, value: float) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and node.value == value


def _whole_range(test: ast.Compare) -> bool:
    """`0 <= x <= 1` (a probability), or `len(x) >= 0` (a size)."""
    ops, parts = test.ops, [test.left, *test.comparators]
    if len(ops) == 2 and all(isinstance(o, ast.LtE) for o in ops):
        return _is_num(parts[0], 0) and _is_num(parts[2], 1)
    if len(ops) == 1 and isinstance(ops[0], ast.GtE) and _is_num(parts[1], 0):
        left = parts[0]
        return isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len"
    return False


def _literal_only(node: ast.AST) -> bool:
    """True when `node` reads no name but builtins and its own comprehension variables."""
    bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    if any(isinstance(n, (ast.Attribute, ast.Subscript, ast.Await)) for n in ast.walk(node)):
        return False
    has_work = any(isinstance(n, (ast.BinOp, ast.Call, ast.ListComp, ast.GeneratorExp)) for n in ast.walk(node))
    return has_work and all(n.id in BUILTINS or n.id in bound for n in names)


def cannot_fail(test: ast.expr) -> str | None:
    """Why the assertion `assert test` (or one of the terms it joins with `and`) can never fail, or None."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((why for why in map(cannot_fail, test.values) if why), None)
    if isinstance(test, ast.Constant) and test.value:
        return "asserts a true constant"
    if isinstance(test, ast.Compare):
        if _whole_range(test):
            return "checks the whole range the value can take"
        parts = [test.left, *test.comparators]
        if len(parts) == 2 and ast.dump(parts[0]) == ast.dump(parts[1]) and isinstance(test.ops[0], ast.Eq):
            return "compares an expression with itself"
        if _literal_only(test):
            return "computes on literals only"
    return None


def findings(source: str, name: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert):
            why = cannot_fail(node.test)
            if why:
                out.append(f"{name}:{node.lineno}: {why}: {ast.unparse(node.test)}")
    return out


def test_the_checker_flags_each_shape_and_passes_real_checks():
    bad = [
        "assert 0 <= a['p'] <= 1",
        "assert 0.0 <= r.loss <= 1.0",
        "assert len(rows) >= 0",
        "assert [round(f**3, 3) for f in (0.8, 0.9)] == [0.512, 0.729]",
        "assert 2 + 2 == 4",
        "assert x.y == x.y",
        "assert True",
        "assert k['energy'] >= 1.0 and 0 <= k['saturated'] <= 1",
    ]
    good = [
        "assert 0 <= share <= 0.1",
        "assert p < 0.01",
        "assert len(rows) >= 3",
        "assert f(0.8) == 0.512",
        "assert [round(x, 3) for x in got] == [0.5]",
        "assert x.y == z.y",
    ]
    assert [bool(findings(s, "t")) for s in bad] == [True] * len(bad)
    assert [bool(findings(s, "t")) for s in good] == [False] * len(good)


def test_no_assertion_in_the_suite_cannot_fail():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.resolve() == Path(__file__).resolve():
            continue
        found += findings(path.read_text(), str(path.relative_to(TESTS)))
    assert not found, "\n".join(found)
