"""whatif dvfs --apply's cpufreq layer against a STAND-IN sysfs root (JITTERSCOPE_CPUFREQ_ROOT pointing at
a directory built here): this VM has no cpufreq, so these check the mapping, the journal entries and the
restore, never a real frequency change."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterscope import journal
from jitterscope.whatif import cpufreq
from jitterscope.whatif.controller import Controller


def stand_in(root: Path, cpus=(0, 1), lo=1_200_000, hi=3_600_000, available: list[int] | None = None) -> Path:
    for c in cpus:
        d = root / f"cpu{c}" / "cpufreq"
        d.mkdir(parents=True)
        for name, v in (
            ("cpuinfo_min_freq", lo),
            ("cpuinfo_max_freq", hi),
            ("scaling_min_freq", lo),
            ("scaling_max_freq", hi),
            ("cpuinfo_transition_latency", 20_000),
        ):
            (d / name).write_text(f"{v}\n")
        if available:
            (d / "scaling_available_frequencies").write_text(" ".join(map(str, available)) + "\n")
    return root


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv(cpufreq.ROOT_ENV, str(tmp_path / "cpu"))
    return tmp_path / "cpu"


def test_absent_cpufreq_is_a_reason(root):
    pols, why = cpufreq.policies([0])
    assert pols == [] and "no cpufreq for CPU 0" in why and cpufreq.ROOT_ENV in why


def test_table_maps_top_factor_to_the_maximum(root):
    stand_in(root)
    (p, _), why = cpufreq.policies([0, 1])
    assert why is None and p.hi_khz == 3_600_000 and p.transition_ns == 20_000
    m = cpufreq.frequency_map(Controller().table, p)
    assert m[1.2] == 3_600_000 and m[1.0] == 3_000_000 and m[0.8] == 2_400_000  # Table 3's 2.4..3.6 GHz
    assert cpufreq.frequency_map((0.5, 1.0, 1.5), p, nominal_khz=3_000_000) == {
        0.5: 1_500_000,
        1.0: 3_000_000,
        1.5: 3_600_000,
    }  # clamped to cpuinfo_max


def test_available_frequencies_snap(root):
    stand_in(root, cpus=(0,), available=[3_400_000, 2_800_000, 2_200_000])
    (p,), _ = cpufreq.policies([0])
    m = cpufreq.frequency_map(Controller().table, p)
    assert set(m.values()) <= {3_400_000, 2_800_000, 2_200_000}
    assert m[1.0] == 2_800_000 and m[1.2] == 3_400_000


def _read(d: Path) -> tuple[int, int]:
    return int((d / "scaling_min_freq").read_text()), int((d / "scaling_max_freq").read_text())


def test_limits_are_journalled_then_restored(root):
    stand_in(root)
    pols, _ = cpufreq.policies([0, 1])
    d0 = pols[0].dir
    with journal.Journal("test-cpufreq") as j:
        lim = cpufreq.Limits(j, pols)
        lim.set(0, 3_000_000)
        lim.set(0, 3_300_000)
        lim.set(0, 3_300_000)  # unchanged: no write, no count
        assert _read(d0) == (3_300_000, 3_300_000) and lim.changes == 1
        entries = [e for e in j.entries if e["op"] == cpufreq.OP]
        assert entries == [{"op": cpufreq.OP, "seq": 0, "path": str(d0), "min": 1_200_000, "max": 3_600_000}]
        assert _read(pols[1].dir) == (1_200_000, 3_600_000)  # a CPU never set is never journalled
    assert _read(d0) == (1_200_000, 3_600_000)
    again = cpufreq.undo_limits(entries[0])
    assert again.status == "unchanged"
