"""kallsyms's text symbols parsed as columns of bytes give what the line-by-line expression gives."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from jitterscope.tracing import symbols

LINE = re.compile(r"^([0-9a-fA-F]+) [tTwW] (\S+)", re.M)  # the expression the columns replace


def _expected(text: str) -> list[tuple[int, str]]:
    return [(int(m.group(1), 16), m.group(2)) for m in LINE.finditer(text)]


def _got(text: str) -> list[tuple[int, str]]:
    raw = text.encode()
    addrs, name_at = symbols._scan(raw)
    t = symbols.Table(addrs, name_at, raw)
    return [(int(a), t.name(i)) for i, a in enumerate(addrs.tolist())]


KALLSYMS = (
    "ffffffff81000000 T _stext\n"
    "ffffffff81000010 t helper\t[mod]\n"
    "ffffffff81000020 D some_data\n"
    "ffffffff81000030 W weak_fn\n"
    "ffffffff81000040 w weak_lower\t[other]\n"
    "ffffffff81000050 A abs_sym\n"
    "ffffffffc0000000 t mod_fn\t[kvm]\n"
)


@pytest.mark.parametrize(
    "text",
    [
        KALLSYMS,
        KALLSYMS.upper().replace("\tT", "\t") + "FFFFFFFF81000060 T UPPER\n",
        KALLSYMS + "ffffffff8100007 t fifteen_digits\n",  # another width: line by line
        KALLSYMS + "ffffffff8100007g t not_hex\n",
        KALLSYMS + "ffffffff81000080 t  two_spaces\n",
        KALLSYMS.rstrip("\n"),  # no final newline
        "ffff1 T short\nffff0002 t other\t[m]\n",
        "",
    ],
)
def test_columns_agree_with_the_expression(text: str) -> None:
    assert _got(text) == _expected(text)


def test_the_fast_path_is_taken_on_kallsyms_layout() -> None:
    assert symbols._columns(KALLSYMS.encode()) is not None
    assert symbols._columns((KALLSYMS + "ffffffff8100007 t x\n").encode()) is None


def test_resolve_names_offsets_and_ignores_far_addresses(tmp_path: Path) -> None:
    f = tmp_path / "kallsyms"
    f.write_text(KALLSYMS + "ffffffff81000010 T same_address_later\n")
    got = symbols.resolve([0xFFFFFFFF81000000, 0xFFFFFFFF81000018, 0xFFFFFFFF81000010, 0x10, 0xFFFFFFFFFFFF0000], f)
    assert got == {
        0xFFFFFFFF81000000: "_stext",
        0xFFFFFFFF81000018: "same_address_later+0x8",  # the later of two at one address, as before
        0xFFFFFFFF81000010: "same_address_later",
    }


def test_hidden_addresses_name_nothing(tmp_path: Path) -> None:
    f = tmp_path / "kallsyms"
    f.write_text(KALLSYMS.replace("ffffffff81000000", "0000000000000000"))
    assert symbols.table(f) is None
    assert symbols.resolve([0xFFFFFFFF81000010], f) == {}


def test_addresses_sorted_stably() -> None:
    raw = b"ffffffff81000020 T b\nffffffff81000010 T a\nffffffff81000020 t c\n"
    addrs, at = symbols._scan(raw)
    order = np.argsort(addrs, kind="stable")
    assert [symbols.Table(addrs, at, raw).name(i) for i in order.tolist()] == ["a", "b", "c"]
