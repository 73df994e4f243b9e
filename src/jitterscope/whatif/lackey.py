"""Valgrind lackey's `--trace-mem=yes` text -> trace words (byte address << 2 | op), parsed with numpy a
chunk at a time: lackey writes `I  ADDR,SIZE` and ` X ADDR,SIZE` (X = L, S or M), the address always at
column 3.  A chunk holding any other line (besides lackey's `==` notes and blank lines) is parsed line by
line instead (`_slow`), so that odd input gives the same words, in the same order, as a careful reader."""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

OPS = {"L": 0, "S": 1, "M": 2, "I": 3}
CHUNK_BYTES = 8 << 20
_HEX = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _HEX[ord(chr(_c).upper())] = _i
_OP = np.full(256, 255, np.uint8)
for _k, _v in OPS.items():
    _OP[ord(_k)] = _v
_SHIFT = 4 * np.arange(16, dtype=np.uint64)


def _slow(lines: list[bytes]) -> tuple[list[int], int, int]:
    """Line by line: (words, lines understood, lines not understood)."""
    out: list[int] = []
    seen = junk = 0
    for raw in lines:
        if raw.startswith(b"=="):
            continue
        parts = raw.split()
        if len(parts) != 2 or parts[0] not in (b"I", b"L", b"S", b"M") or b"," not in parts[1]:
            junk += bool(raw.strip())
            continue
        try:
            addr = int(parts[1].split(b",")[0], 16)
        except ValueError:
            junk += 1
            continue
        seen += 1
        out.append((addr << 2) | OPS[parts[0].decode()])
    return out, seen, junk


def _fast(buf: bytes) -> np.ndarray | None:
    """Words of complete lines in lackey's own layout, or None when some line is not (then `_slow`)."""
    b = np.frombuffer(buf, np.uint8)
    end = np.flatnonzero(b == 10)
    start = np.concatenate(([0], end[:-1] + 1))
    notes = (b[start] == ord("=")) | (end == start)
    start, end = start[~notes], end[~notes]
    if len(start) == 0:
        return np.zeros(0, np.uint64)
    commas = np.flatnonzero(b == ord(","))
    ci = np.minimum(np.searchsorted(commas, start + 3), max(len(commas) - 1, 0))
    comma = commas[ci] if len(commas) else end
    ndig = comma - start - 3
    if not (np.all((ndig >= 1) & (ndig <= 16) & (comma < end - 1))):
        return None
    first, second, third = b[start], b[start + 1], b[start + 2]
    instr = (first == ord("I")) & (second == 32) & (third == 32)
    data = (first == 32) & (_OP[second] < 3) & (third == 32)
    if not np.all(instr | data):
        return None
    k = np.arange(16)
    pos = comma[:, None] - 1 - k[None, :]
    valid = k[None, :] < ndig[:, None]
    digits = _HEX[b[np.where(valid, pos, 0)]]
    if np.any(valid & (digits == 255)):
        return None
    addr = (np.where(valid, digits, 0).astype(np.uint64) << _SHIFT[None, :]).sum(axis=1, dtype=np.uint64)
    op = np.where(instr, 3, _OP[second]).astype(np.uint64)
    return (addr << np.uint64(2)) | op


def parse(stream: BinaryIO, instructions: bool, limit: int) -> tuple[np.ndarray, int, int]:
    """Trace words (at most `limit`; instruction fetches only with `instructions`), lines understood, lines
    not understood.  Reads `stream` to its end (a live valgrind must never block on a full pipe)."""
    parts: list[np.ndarray] = []
    n = seen = junk = 0
    rest = b""
    while True:
        chunk = stream.read(CHUNK_BYTES)
        buf = rest + chunk if chunk else rest + (b"\n" if rest else b"")
        cut = buf.rfind(b"\n") + 1
        buf, rest = buf[:cut], buf[cut:]
        if buf:
            w = _fast(buf)
            if w is None:
                got, s, j = _slow(buf.split(b"\n"))
                w, junk = np.array(got, np.uint64), junk + j
            seen += len(w)
            if not instructions:
                w = w[(w & np.uint64(3)) != 3]
            if n < limit:
                parts.append(w[: limit - n])
                n += len(parts[-1])
        if not chunk:
            break
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint64)), seen, junk
