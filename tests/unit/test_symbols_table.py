"""kallsyms's text symbols parsed as columns of bytes give what the line-by-line expression gives."""

from __future__ import annotations

import json
import os
import re
import stat
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


CORE = (
    "ffffffff81000000 T _stext\n"
    "ffffffff81000100 T vmstat_update\n"
    "ffffffff81000200 t process_timeout\n"
    "ffffffff81000300 T _etext\n"
    "ffffffffc0000000 t mod_work\t[mod]\n"
)


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kallsyms and a boot of our own, and a place for this boot's known names."""
    f = tmp_path / "kallsyms"
    f.write_text(CORE)
    monkeypatch.setattr(symbols, "KALLSYMS", f)
    monkeypatch.setattr(symbols, "BOOT_NAMES", tmp_path / "run" / "kernel-names.json")
    monkeypatch.setattr(symbols.sysinfo, "boot_id", lambda: "boot-1")
    monkeypatch.setattr(symbols, "_tables", {})
    return f


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = symbols._table

    def counted(kallsyms: Path) -> symbols.Table | None:
        reads.append(1)
        return real(kallsyms)

    monkeypatch.setattr(symbols, "_table", counted)
    monkeypatch.setattr(symbols, "_tables", {})  # no in-process copy: every table() reads the file
    return reads


def test_names_of_the_kernels_own_text_are_known_for_the_rest_of_the_boot(system: Path, monkeypatch):
    first = symbols.resolve([0xFFFFFFFF81000100, 0xFFFFFFFF81000208])
    assert first == {0xFFFFFFFF81000100: "vmstat_update", 0xFFFFFFFF81000208: "process_timeout+0x8"}
    reads = _reads(monkeypatch)
    assert symbols.resolve([0xFFFFFFFF81000208, 0xFFFFFFFF81000100]) == first  # no read of kallsyms
    assert reads == []
    symbols.warm()
    assert reads == []  # nothing to read ahead either
    # an address not named before, one outside the kernel's text (a module's), another boot: kallsyms is read
    assert symbols.resolve([0xFFFFFFFF81000200]) == {0xFFFFFFFF81000200: "process_timeout"}
    assert symbols.resolve([0xFFFFFFFFC0000010]) == {0xFFFFFFFFC0000010: "mod_work+0x10"}
    monkeypatch.setattr(symbols.sysinfo, "boot_id", lambda: "boot-2")
    assert symbols.resolve([0xFFFFFFFF81000100]) == {0xFFFFFFFF81000100: "vmstat_update"}
    assert len(reads) == 3
    doc = json.loads(symbols.BOOT_NAMES.read_text())
    assert doc["boot"] == "boot-2" and doc["names"] == {"ffffffff81000100": "vmstat_update"}  # a module's never kept


def test_a_kernel_without_its_text_bounds_or_a_foreign_file_keeps_nothing(system: Path, monkeypatch):
    system.write_text(CORE.replace(" _etext", " not_etext"))
    symbols.resolve([0xFFFFFFFF81000100])
    assert not symbols.BOOT_NAMES.exists()
    system.write_text(CORE)
    symbols.resolve([0xFFFFFFFF81000100])
    assert symbols.BOOT_NAMES.exists()
    reads = _reads(monkeypatch)
    symbols.resolve([0xFFFFFFFF81000100])
    assert reads == []
    if os.geteuid() != 0:
        pytest.skip("only root can give the file to another user")
    # a file neither root nor this user wrote is not believed: a wrong name there would name a kernel function wrongly
    os.chown(symbols.BOOT_NAMES, 1234, 1234)
    symbols.resolve([0xFFFFFFFF81000100])
    assert reads == [1]


def test_the_names_are_readable_by_their_owner_alone(system: Path):
    """They hold kernel addresses (the text's base among them), which kptr_restrict may hide from other users."""
    old = os.umask(0)
    try:
        symbols.resolve([0xFFFFFFFF81000100])
    finally:
        os.umask(old)
    assert stat.S_IMODE(symbols.BOOT_NAMES.stat().st_mode) == 0o600
    # one that others can read (as this code's first version wrote them) is not used, and is written again privately
    symbols.BOOT_NAMES.chmod(0o644)
    assert symbols._known("boot-1") is None
    symbols.resolve([0xFFFFFFFF81000100])
    assert stat.S_IMODE(symbols.BOOT_NAMES.stat().st_mode) == 0o600 and symbols._known("boot-1") is not None


def test_a_damaged_or_full_record_is_not_believed_and_stays_bounded(system: Path, monkeypatch):
    symbols.BOOT_NAMES.parent.mkdir(parents=True)
    symbols.BOOT_NAMES.write_text('{"boot": "boot-1", "core": ["ffffffff81000000"], "names": {}}\n')  # one bound
    reads = _reads(monkeypatch)
    assert symbols.resolve([0xFFFFFFFF81000100]) == {0xFFFFFFFF81000100: "vmstat_update"}
    assert reads == [1]  # read kallsyms, and wrote a whole record again
    assert json.loads(symbols.BOOT_NAMES.read_text())["core"] == ["ffffffff81000000", "ffffffff81000300"]
    monkeypatch.setattr(symbols, "BOOT_NAMES_MAX", 1)
    symbols.resolve([0xFFFFFFFF81000200])  # one name kept already: no room for another
    assert list(json.loads(symbols.BOOT_NAMES.read_text())["names"]) == ["ffffffff81000100"]


def test_another_file_than_the_systems_is_read_alone(system: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.write_text(CORE.replace("vmstat_update", "renamed"))
    symbols.resolve([0xFFFFFFFF81000100])
    assert symbols.resolve([0xFFFFFFFF81000100], other) == {0xFFFFFFFF81000100: "renamed"}
