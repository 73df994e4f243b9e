"""The system-knob layer's values: one canonical text per value, CPU sets however they are spelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterscope.errors import UsageError
from jitterscope.knobs import FileKnob, canonical, known_names, resolve
from jitterscope.units import format_cpumask, parse_cpumask, parse_kernel_cpulist


def test_cpu_sets_are_one_set_however_spelled():
    assert parse_cpumask("3", limit=64) == [0, 1]
    assert parse_cpumask("00000000,00000003", limit=64) == [0, 1]
    assert parse_cpumask("0x3", limit=64) == [0, 1]
    assert parse_cpumask("1,00000000", limit=64) == [32]
    assert format_cpumask([0, 1]) == "00000003"
    assert format_cpumask([33]) == "00000002,00000000"
    for cpus in ([0], [1, 5, 7], [0, 31, 32, 63]):
        assert parse_cpumask(format_cpumask(cpus), limit=64) == cpus
    assert canonical("cpumask", "00000003") == canonical("cpulist", "1,0") == "0-1"


def test_mask_errors_are_one_line():
    with pytest.raises(UsageError, match="malformed CPU mask"):
        parse_cpumask("xyz", limit=8)
    with pytest.raises(UsageError, match="does not exist"):
        parse_cpumask("100", limit=8)


def test_kernel_cpulist_syntax():
    assert parse_kernel_cpulist("1,3-5", 8) == [1, 3, 4, 5]
    assert parse_kernel_cpulist("all", 4) == [0, 1, 2, 3]
    assert parse_kernel_cpulist("2-N", 6) == [2, 3, 4, 5]
    assert parse_kernel_cpulist("0-15:2/4", 16) == [0, 1, 4, 5, 8, 9, 12, 13]
    with pytest.raises(UsageError):
        parse_kernel_cpulist("3-1", 8)
    with pytest.raises(UsageError):
        parse_kernel_cpulist("0-7:5/4", 8)


def test_file_knob_normalises_and_bounds(tmp_path: Path):
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    thp = FileKnob("mm.thp.enabled", f, "choice", choices=("always", "madvise", "never"))
    assert thp.read() == "madvise"
    assert thp.normalise(" never ") == "never"
    with pytest.raises(UsageError, match="not one of always, madvise, never"):
        thp.normalise("sometimes")
    n = FileKnob("vm.stat_interval", tmp_path / "x", "int", lo=1, hi=100)
    assert n.normalise("010") == "10"
    with pytest.raises(UsageError, match=r"^knob vm.stat_interval: 0 is out of range 1..100$"):
        n.normalise("0")
    with pytest.raises(UsageError, match="not an integer"):
        n.normalise("ten")
    m = FileKnob("workqueue.cpumask", tmp_path / "cpumask", "cpumask")
    (tmp_path / "cpumask").write_text("3\n")
    assert m.read() == "0-1"
    assert m.file_text(m.normalise("0")) == "00000001"


def test_unknown_knob_names_the_known_ones():
    with pytest.raises(UsageError, match="unknown knob 'vm.stat_intervall'.*vm.stat_interval"):
        resolve("vm.stat_intervall")
    assert "irq.N.affinity" in known_names() and "task.PID.affinity" in known_names()
    with pytest.raises(UsageError, match="not a process id"):
        resolve("task.abc.affinity")
