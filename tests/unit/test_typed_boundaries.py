"""A ratchet on loose dicts in the package (issue 23, "typed boundaries"): results that cross a function or
package are TypedDicts, dataclasses or pydantic models with named fields, not `dict[str, Any]`.

The counts below are what the code holds now.  Lower one when you type another boundary; the test fails if
a count grows, so a new loose dict (or one moved to `Mapping[str, Any]` or `dict[str, object]` to get under
the bound) needs a named record instead."""

from __future__ import annotations

import re
from pathlib import Path

import jitterscope

PKG = Path(jitterscope.__file__).resolve().parent

# Lines of src/jitterscope holding each pattern, at most (the target for dict[str, Any]: under 100).
CEILINGS = {
    r"dict\[str, Any\]": 98,
    r"Mapping\[str, Any\]": 9,
    r"dict\[str, object\]": 31,
    r"Mapping\[str, object\]": 2,
}


def lines_with(pattern: str) -> list[str]:
    """`file:line: text` of every line of the package's sources matching `pattern`."""
    rx = re.compile(pattern)
    out = []
    for f in sorted(PKG.rglob("*.py")):
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if rx.search(line):
                out.append(f"{f.relative_to(PKG)}:{n}: {line.strip()}")
    return out


def test_loose_dicts_do_not_grow() -> None:
    over = {}
    for pattern, most in CEILINGS.items():
        found = lines_with(pattern)
        if len(found) > most:
            over[pattern] = (len(found), most, found)
    assert not over, "\n".join(
        f"{len(found)} lines hold {pattern} (at most {most}): give the structure a TypedDict, dataclass or "
        f"pydantic model with named fields.  They are:\n  " + "\n  ".join(found)
        for pattern, (_, most, found) in over.items()
    )


def test_the_counter_sees_what_it_counts() -> None:
    """The count reads the real sources: Run's meta and summary are loose dicts today (rundir.py)."""
    assert any(ln.startswith("rundir.py:") and "meta: dict[str, Any]" in ln for ln in lines_with(r"dict\[str, Any\]"))
