"""Naming kernel function pointers (work functions, timer callbacks, NMI handlers).

Only the addresses a trace actually contains are saved (symbols.txt, one
"hexaddr name" per line), so a run is small and can be re-analysed on another
machine, where /proc/kallsyms would name nothing or the wrong thing.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterscope.atomic import write_text

KALLSYMS = Path("/proc/kallsyms")
TEXT_SYMBOL = re.compile(rb"^([0-9a-fA-F]+) [tTwW] (\S+)", re.M)
_TEXT_TYPE = np.zeros(256, bool)
_TEXT_TYPE[np.frombuffer(b"tTwW", np.uint8)] = True
_BLANK = np.zeros(256, bool)
_BLANK[np.frombuffer(b" \t\v\f\r\n", np.uint8)] = True
_HEX = np.full(256, 255, np.uint8)
_HEX[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)
_NAME_END = re.compile(rb"\S+")


@dataclass(frozen=True)
class Table:
    """kallsyms's text symbols sorted by address (stable: file order among equal addresses);
    a name is cut out of the file's text only when asked for (a trace names a handful of 120 k)."""

    addrs: np.ndarray  # uint64, sorted
    name_at: np.ndarray  # int64: where each one's name starts in `text`
    text: bytes

    def name(self, i: int) -> str:
        m = _NAME_END.match(self.text, int(self.name_at[i]))
        return m.group().decode("utf-8", "replace") if m else ""


_EMPTY = Table(np.zeros(0, np.uint64), np.zeros(0, np.int64), b"")
# kallsyms's text symbols, sorted, kept while the file and the loaded modules stay the same: reading it
# costs the kernel about 0.3 s (120 k lines), so `sync` reads it while the program runs (sync/warmup.py)
_tables: dict[Path, tuple[tuple[int, int, str], Table | None]] = {}
# One read at a time: /proc/kallsyms comes 4 KiB per read(), each one releasing the GIL, so a second thread
# reading it too (sync's warm-up beside the trace's stop) made both wait on the other ~1,300 times (0.4-0.7 s).
_reading = threading.Lock()


def _version(kallsyms: Path) -> tuple[int, int, str]:
    st = kallsyms.stat()
    try:
        modules = Path("/proc/modules").read_text() if str(kallsyms).startswith("/proc/") else ""
    except OSError:
        modules = ""
    return st.st_mtime_ns, st.st_size, modules


def _columns(text: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """_scan's fast path: every line "16 hex digits, a space, a type, a space, a name", parsed as
    columns of bytes at once; None for any other layout."""
    width = 16
    if text.find(b" ") != width or not text.endswith(b"\n"):
        return None
    buf = np.frombuffer(text, np.uint8)
    starts = np.concatenate((np.zeros(1, np.int64), np.flatnonzero(buf == ord("\n"))[:-1] + 1))
    if (np.diff(np.append(starts, len(text))) - 1 < width + 4).any():
        return None
    if (buf[starts + width] != ord(" ")).any() or (buf[starts + width + 2] != ord(" ")).any():
        return None
    s = starts[_TEXT_TYPE[buf[starts + width + 1]]]
    digits = _HEX[np.lib.stride_tricks.sliding_window_view(buf, width)[s]]
    if (digits == 255).any() or _BLANK[buf[s + width + 3]].any():
        return None
    packed = np.ascontiguousarray((digits[:, 0::2] << 4) | digits[:, 1::2])
    return packed.view(">u8").ravel().astype(np.uint64), s + width + 3


def _scan(text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(address, name start) of every text symbol's line.  /proc/kallsyms is parsed as columns of bytes
    (a regular expression over its 120 k lines cost 0.1 s per run analysed); a file of any other
    layout by the regular expression."""
    fast = _columns(text)
    if fast is not None:
        return fast
    found = [(int(m.group(1), 16), m.start(2)) for m in TEXT_SYMBOL.finditer(text)]
    return np.array([a for a, _ in found], np.uint64), np.array([n for _, n in found], np.int64)


def table(kallsyms: Path = KALLSYMS) -> Table | None:
    """Every text symbol, by address; None when addresses are hidden (kptr_restrict) or the file cannot
    be read."""
    with _reading:
        return _table(kallsyms)


def _table(kallsyms: Path) -> Table | None:
    try:
        version = _version(kallsyms)
        hit = _tables.get(kallsyms)
        if hit is not None and hit[0] == version:
            return hit[1]
        with open(kallsyms, "rb") as fh:
            text = fh.read()
    except OSError:
        return None
    at, name_at = _scan(text)
    out: Table | None
    if (at == 0).any():
        out = None  # kptr_restrict hides addresses from us
    else:
        order = np.argsort(at, kind="stable")
        out = Table(at[order], name_at[order], text)
    _tables[kallsyms] = (version, out)
    return out


def resolve(addresses: list[int], kallsyms: Path = KALLSYMS) -> dict[int, str]:
    """Name each address: the text symbol it points into (`sym+0x10` when not at its start)."""
    if not addresses:
        return {}
    t = table(kallsyms)
    if t is None or not len(t.addrs):
        return {}
    at = np.searchsorted(t.addrs, np.array(addresses, np.uint64), side="right") - 1
    out: dict[int, str] = {}
    for a, i in zip(addresses, at.tolist()):
        if i < 0:
            continue
        off = a - int(t.addrs[i])
        if off > 1 << 20:
            continue  # far beyond any function: not a text address we know
        name = t.name(i)
        out[a] = name if off == 0 else f"{name}+{off:#x}"
    return out


def text(names: dict[int, str]) -> str:
    """symbols.txt's content."""
    return "".join(f"{a:x} {n}\n" for a, n in sorted(names.items()))


def save(path: Path, names: dict[int, str]) -> None:
    write_text(path, text(names))
