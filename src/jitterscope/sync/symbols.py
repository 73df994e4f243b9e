"""Name call sites and lock objects from the address space each process saved.

The interposer copies /proc/self/maps beside its log (`<log>.maps`), so
addresses resolve after the process is gone: a call site through `addr2line`
(function, file:line with debug info), a lock in the program's data through
the ELF symbol table (`nm`), anything else as `heap`/`stack`/`lib+0xoff`.
"""

from __future__ import annotations

import shutil
import subprocess
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass
class Mapping:
    start: int
    end: int
    offset: int
    path: str


def read_maps(path: Path) -> list[Mapping]:
    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for ln in lines:
        parts = ln.split(maxsplit=5)
        if len(parts) < 5:
            continue
        a, _, b = parts[0].partition("-")
        out.append(Mapping(int(a, 16), int(b, 16), int(parts[2], 16), parts[5] if len(parts) > 5 else ""))
    return out


def _find(maps: list[Mapping], addr: int) -> Mapping | None:
    for m in maps:
        if m.start <= addr < m.end:
            return m
    return None


def _is_exec(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(18)
        return head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 2  # ET_EXEC: absolute
    except OSError:
        return False


def _base(maps: list[Mapping], m: Mapping) -> int:
    """Load bias of m's file: 0 for a fixed-address executable, else start - offset of its first mapping."""
    if _is_exec(m.path):
        return 0
    first = min((x for x in maps if x.path == m.path), key=lambda x: x.start)
    return first.start - first.offset


@lru_cache(maxsize=64)
def _nm(path: str) -> tuple[list[int], list[tuple[int, str]]]:
    nm = shutil.which("nm")
    if not nm:
        return [], []
    proc = subprocess.run([nm, "-S", "-C", "--defined-only", path], capture_output=True, text=True)
    syms = []
    for ln in proc.stdout.splitlines():
        p = ln.split(maxsplit=3)
        if len(p) == 4 and p[2] in "bBdDgGsSrR":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
    syms.sort()
    return [s[0] for s in syms], [(s[1], s[2]) for s in syms]


def object_name(maps: list[Mapping], addr: int) -> str:
    """A lock's variable (`m_queue`, `pool+0x40`) or where it lives (`heap 0x...`)."""
    if addr == 0:
        return ""
    m = _find(maps, addr)
    if m is None or not m.path:
        return f"anon 0x{addr:x}"
    if m.path.startswith("["):
        return f"{m.path.strip('[]')} 0x{addr:x}"
    rel = addr - _base(maps, m)
    starts, info = _nm(m.path)
    k = bisect_right(starts, rel) - 1
    if k >= 0 and rel < starts[k] + max(info[k][0], 1):
        off = rel - starts[k]
        return info[k][1] + (f"+0x{off:x}" if off else "")
    return f"{Path(m.path).name}+0x{rel:x}"


def sites(maps: list[Mapping], addrs: list[int]) -> dict[int, str]:
    """Call sites as `function (file:line)` where addr2line knows them, else `lib+0xoff`."""
    out: dict[int, str] = {}
    by_file: dict[str, list[tuple[int, int]]] = {}
    for a in addrs:
        m = _find(maps, a)
        if m is None or not m.path or m.path.startswith("["):
            out[a] = f"0x{a:x}"
            continue
        rel = a - _base(maps, m) - 1  # a return address: the call is just before it
        by_file.setdefault(m.path, []).append((a, rel))
        out[a] = f"{Path(m.path).name}+0x{rel + 1:x}"
    tool = shutil.which("addr2line")
    if not tool:
        return out
    for path, items in by_file.items():
        proc = subprocess.run(
            [tool, "-f", "-C", "-s", "-e", path, *[f"0x{r:x}" for _, r in items]], capture_output=True, text=True
        )
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) != 2 * len(items):
            continue
        for (a, _), fn, loc in zip(items, lines[0::2], lines[1::2]):
            if fn != "??":
                loc = loc.split(" (")[0]
                out[a] = fn + ("" if loc.startswith("??") or loc.endswith(":?") else f" ({loc})")
    return out
