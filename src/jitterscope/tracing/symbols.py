"""Naming kernel function pointers (work functions, timer callbacks, NMI handlers).

Only the addresses a trace actually contains are saved (symbols.txt, one
"hexaddr name" per line), so a run is small and can be re-analysed on another
machine, where /proc/kallsyms would name nothing or the wrong thing.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from jitterscope.atomic import write_text


def resolve(addresses: list[int], kallsyms: Path = Path("/proc/kallsyms")) -> dict[int, str]:
    """Name each address: the text symbol it points into (`sym+0x10` when not at its start)."""
    if not addresses:
        return {}
    addrs: list[int] = []
    names: list[str] = []
    try:
        with open(kallsyms) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 3 or parts[1] not in ("t", "T", "w", "W"):
                    continue
                a = int(parts[0], 16)
                if a == 0:
                    return {}  # kptr_restrict hides addresses from us
                addrs.append(a)
                names.append(parts[2])
    except OSError:
        return {}
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    addrs = [addrs[i] for i in order]
    names = [names[i] for i in order]
    out: dict[int, str] = {}
    for a in addresses:
        i = bisect.bisect_right(addrs, a) - 1
        if i < 0:
            continue
        off = a - addrs[i]
        if off > 1 << 20:
            continue  # far beyond any function: not a text address we know
        out[a] = names[i] if off == 0 else f"{names[i]}+{off:#x}"
    return out


def text(names: dict[int, str]) -> str:
    """symbols.txt's content."""
    return "".join(f"{a:x} {n}\n" for a, n in sorted(names.items()))


def save(path: Path, names: dict[int, str]) -> None:
    write_text(path, text(names))
