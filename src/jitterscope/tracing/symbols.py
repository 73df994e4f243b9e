"""Naming kernel function pointers (work functions, timer callbacks, NMI handlers).

Only the addresses a trace actually contains are saved (symbols.txt, one
"hexaddr name" per line), so a run is small and can be re-analysed on another
machine, where /proc/kallsyms would name nothing or the wrong thing.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from jitterscope.atomic import write_text

KALLSYMS = Path("/proc/kallsyms")
TEXT_SYMBOL = re.compile(r"^([0-9a-fA-F]+) [tTwW] (\S+)", re.M)
# kallsyms's text symbols, sorted, kept while the file and the loaded modules stay the same: reading it
# costs the kernel about 0.3 s (120 k lines), so `sync` reads it while the program runs (sync/warmup.py)
_tables: dict[Path, tuple[tuple[int, int, str], np.ndarray | None, list[str]]] = {}


def _version(kallsyms: Path) -> tuple[int, int, str]:
    st = kallsyms.stat()
    try:
        modules = Path("/proc/modules").read_text() if str(kallsyms).startswith("/proc/") else ""
    except OSError:
        modules = ""
    return st.st_mtime_ns, st.st_size, modules


def table(kallsyms: Path = KALLSYMS) -> tuple[np.ndarray | None, list[str]]:
    """(addresses sorted, their names) of every text symbol; (None, []) when addresses are hidden
    (kptr_restrict) or the file cannot be read."""
    try:
        version = _version(kallsyms)
        hit = _tables.get(kallsyms)
        if hit is not None and hit[0] == version:
            return hit[1], hit[2]
        with open(kallsyms) as fh:
            found = TEXT_SYMBOL.findall(fh.read())
    except OSError:
        return None, []
    at = np.array([int(a, 16) for a, _ in found], np.uint64)
    if (at == 0).any():
        out: tuple[np.ndarray | None, list[str]] = None, []  # kptr_restrict hides addresses from us
    else:
        order = np.argsort(at, kind="stable")
        out = at[order], [found[i][1] for i in order.tolist()]
    _tables[kallsyms] = (version, *out)
    return out


def resolve(addresses: list[int], kallsyms: Path = KALLSYMS) -> dict[int, str]:
    """Name each address: the text symbol it points into (`sym+0x10` when not at its start)."""
    if not addresses:
        return {}
    addrs, names = table(kallsyms)
    if addrs is None or not len(addrs):
        return {}
    at = np.searchsorted(addrs, np.array(addresses, np.uint64), side="right") - 1
    out: dict[int, str] = {}
    for a, i in zip(addresses, at.tolist()):
        if i < 0:
            continue
        off = a - int(addrs[i])
        if off > 1 << 20:
            continue  # far beyond any function: not a text address we know
        out[a] = names[i] if off == 0 else f"{names[i]}+{off:#x}"
    return out


def text(names: dict[int, str]) -> str:
    """symbols.txt's content."""
    return "".join(f"{a:x} {n}\n" for a, n in sorted(names.items()))


def save(path: Path, names: dict[int, str]) -> None:
    write_text(path, text(names))
