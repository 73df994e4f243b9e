"""whatif's lackey reader: the vectorised chunk parser gives the same words, counts and order as the
line-by-line reader, on lackey's own layout and on odd input that forces the slow path."""

from __future__ import annotations

import io
import random

import numpy as np

from jitterscope.whatif import lackey


def _log(rng: random.Random, n: int) -> bytes:
    lines = [b"==123== Lackey, an example Valgrind tool"]
    for _ in range(n):
        addr = rng.randrange(1, 1 << rng.choice((12, 32, 47)))  # user-space addresses: below 2**47
        op = rng.choice("ILSM")
        head = b"I  " if op == "I" else b" " + op.encode() + b" "
        lines.append(head + f"{addr:0{rng.randrange(1, 9)}x},{rng.choice((1, 2, 4, 8))}".encode())
    lines.append(b"==123== ")
    return b"\n".join(lines) + b"\n"


def _reference(data: bytes, instructions: bool) -> tuple[list[int], int, int]:
    words, seen, junk = lackey._slow(data.split(b"\n"))
    return [w for w in words if instructions or w & 3 != 3], seen, junk


def test_fast_path_equals_line_by_line_reader(monkeypatch) -> None:
    monkeypatch.setattr(lackey, "CHUNK_BYTES", 4096)  # many chunks, lines cut across chunk ends
    rng = random.Random(7)
    data = _log(rng, 5000)
    for instructions in (False, True):
        words, seen, junk = lackey.parse(io.BytesIO(data), instructions, 1 << 40)
        ref, rseen, rjunk = _reference(data, instructions)
        assert words.tolist() == ref
        assert (seen, junk) == (rseen, rjunk) == (5000, 0)


def test_odd_lines_fall_back_and_are_counted_as_not_understood() -> None:
    data = b" L 7ff0,8\ngarbage here\n S zz,4\nI  10,2\n M 20,4"  # no final newline either
    words, seen, junk = lackey.parse(io.BytesIO(data), True, 100)
    assert words.tolist() == [(0x7FF0 << 2) | 0, (0x10 << 2) | 3, (0x20 << 2) | 2]
    assert (seen, junk) == (3, 2)


def test_limit_keeps_the_first_words_and_reads_to_the_end() -> None:
    data = _log(random.Random(1), 300)
    stream = io.BytesIO(data)
    words, seen, _ = lackey.parse(stream, True, 10)
    assert len(words) == 10 and seen == 300 and stream.read() == b""
    assert words.dtype == np.uint64
