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
from typing import TypedDict

import numpy as np

from jitterscope import bootcache, sysinfo
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


def table(kallsyms: Path | None = None) -> Table | None:
    """Every text symbol, by address (of /proc/kallsyms unless told another file); None when addresses are
    hidden (kptr_restrict) or the file cannot be read."""
    with _reading:
        return _table(kallsyms or KALLSYMS)


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


# Names given earlier in this boot to addresses in the kernel's own text (_stext.._etext).  That text and its symbols
# are fixed at boot (modules, BPF programs and trampolines, which come and go, live outside it), so a name given
# once holds until the next boot (bootcache.py: keyed by the boot's id, root's or the user's own file only, and
# readable by its owner alone: it holds kernel addresses, which kptr_restrict may hide from other users).  A run
# whose addresses are all known is named without reading /proc/kallsyms (0.1 CPU-second, most of it the
# kernel's, per traced run): the same few work functions and timer callbacks come back run after run.  Any other
# address reads it whole.
BOOT_NAMES = bootcache.DIR / "kernel-names.json"
BOOT_NAMES_MAX = 20_000  # names kept (a few hundred in practice); past it, new ones are not added
_NAMES_CAP = 4 << 20


@dataclass(frozen=True)
class _Known:
    core: tuple[int, int]  # [_stext, _etext)
    names: dict[int, str]

    def covers(self, addresses: list[int]) -> bool:
        lo, hi = self.core
        return all(lo <= a < hi and a in self.names for a in addresses)


class _Record(TypedDict):
    boot: str
    core: tuple[str, str]  # hex
    names: dict[str, str]  # hex address -> name


def _known(boot: str | None) -> _Known | None:
    """This boot's names, if a process of root's or this user's recorded them."""
    doc = bootcache.read(BOOT_NAMES, _Record, boot, "kernel symbol names", cap=_NAMES_CAP, private=True)
    if doc is None:
        return None
    core, names = doc["core"], doc["names"]
    if not isinstance(core, (list, tuple)) or len(core) != 2 or not isinstance(names, dict):
        return None
    try:
        return _Known((int(core[0], 16), int(core[1], 16)), {int(a, 16): str(n) for a, n in names.items()})
    except (TypeError, ValueError):
        return None


def _core_text(text: bytes) -> tuple[int, int] | None:
    """[_stext, _etext) from kallsyms's text, None without both."""
    at = {}
    for name in (b"_stext", b"_etext"):
        end = text.find(b" " + name + b"\n")
        start = text.rfind(b"\n", 0, end) + 1
        line = text[start:end].split()
        if end < 0 or len(line) != 2 or line[1] not in (b"t", b"T"):
            return None
        try:
            at[name] = int(line[0], 16)
        except ValueError:
            return None
    return (at[b"_stext"], at[b"_etext"]) if at[b"_stext"] < at[b"_etext"] else None


def _remember(boot: str | None, known: _Known | None, t: Table, named: dict[int, str]) -> None:
    if boot is None or not named:
        return
    core = known.core if known is not None else _core_text(t.text)
    if core is None:
        return
    names = dict(known.names) if known is not None else {}
    new = [(a, n) for a, n in named.items() if core[0] <= a < core[1] and a not in names]
    new = new[: max(0, BOOT_NAMES_MAX - len(names))]
    if not new:
        return
    names.update(new)
    hexed = {f"{a:x}": n for a, n in names.items()}
    bootcache.write(BOOT_NAMES, _Record(boot=boot, core=(f"{core[0]:x}", f"{core[1]:x}"), names=hexed), private=True)


def warm() -> None:
    """Get ready to name a trace's addresses (`resolve`), ahead, while other work goes on: the kernel's whole table
    is read unless this boot has known names already (then the read is left to `resolve`, for a run whose
    addresses are not all among them)."""
    if _known(sysinfo.boot_id()) is None:
        table()


def resolve(addresses: list[int], kallsyms: Path | None = None) -> dict[int, str]:
    """Name each address: the text symbol it points into (`sym+0x10` when not at its start), by this boot's
    known names or /proc/kallsyms (by the file `kallsyms` alone when given)."""
    if not addresses:
        return {}
    boot = sysinfo.boot_id() if kallsyms is None else None
    known = _known(boot)
    if known is not None and known.covers(addresses):
        return {a: known.names[a] for a in addresses}
    t = table(kallsyms)
    if t is None or not len(t.addrs):
        return {}
    out = _named(t, addresses)
    _remember(boot, known, t, out)
    return out


def _named(t: Table, addresses: list[int]) -> dict[int, str]:
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
