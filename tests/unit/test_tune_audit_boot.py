"""tune audit's boot findings: the P-state driver of this CPU's vendor, machine-check polling, RCU's knobs, nohz."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterscope import sysinfo
from jitterscope.tune import cmdline
from jitterscope.tune.audit import boot
from jitterscope.tune.audit.finding import NOT, OK, make_context


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty sysfs: no cpufreq driver, no machine-check device, no module parameters."""
    monkeypatch.setattr(boot, "CPUFREQ", tmp_path / "cpu")
    monkeypatch.setattr(boot, "MCE", tmp_path / "machinecheck/machinecheck0")
    monkeypatch.setattr(boot, "MODULE", tmp_path / "module")
    monkeypatch.setattr(sysinfo, "virtualization", lambda: None)
    return tmp_path


def _by(cmd: str) -> dict[str, dict]:
    ctx = make_context([max(sysinfo.online_cpus())])
    cmdline_ = cmdline.parse(cmd)
    found = boot._cpu_params(ctx, cmdline_) + [boot._mce(cmdline_)] + boot._clock_and_idle(cmdline_)
    return {f.knob: f.__dict__ for f in found}


def _write(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def test_the_pstate_parameter_follows_the_driver_then_the_vendor(machine, monkeypatch):
    monkeypatch.setattr(sysinfo, "cpu_vendor", lambda: "AuthenticAMD")
    assert boot.pstate_param() == "amd_pstate"
    by = _by("quiet")
    assert "amd_pstate" in by and "intel_pstate" not in by and by["amd_pstate"]["fix"].startswith("amd_pstate=")
    _write(machine / "cpu/cpufreq/policy0/scaling_driver", "intel_cpufreq")  # the driver present wins
    assert boot.pstate_param() == "intel_pstate"
    _write(machine / "cpu/cpufreq/policy0/scaling_driver", "amd-pstate-epp")
    monkeypatch.setattr(sysinfo, "cpu_vendor", lambda: "GenuineIntel")
    assert boot.pstate_param() == "amd_pstate"
    (machine / "cpu/cpufreq/policy0/scaling_driver").unlink()
    monkeypatch.setattr(sysinfo, "cpu_vendor", lambda: None)  # e.g. arm64: no P-state parameter to name
    assert boot.pstate_param() is None and not {"intel_pstate", "amd_pstate"} & set(_by("quiet"))


def test_machine_check_polling(machine):
    assert _by("quiet")["mce"]["verdict"] == OK  # no machine-check device: nothing polls
    _write(machine / "machinecheck/machinecheck0/check_interval", "300")
    _write(machine / "machinecheck/machinecheck0/ignore_ce", "0")
    f = _by("quiet")["mce"]
    assert f["verdict"] == NOT and "every 300 s" in f["why"] and f["fix"] == "mce=ignore_ce"
    assert _by("quiet mce=ignore_ce")["mce"]["verdict"] == OK
    _write(machine / "machinecheck/machinecheck0/ignore_ce", "1")
    assert _by("quiet")["mce"]["verdict"] == OK


def test_rcu_and_nohz(machine):
    by = _by("quiet")
    assert by["nohz"]["verdict"] == OK and _by("nohz=off")["nohz"]["verdict"] == NOT
    assert by["rcupdate.rcu_normal_after_boot"]["verdict"] == "cannot tell"  # parameter absent
    _write(machine / "module/rcupdate/parameters/rcu_normal_after_boot", "0")
    _write(machine / "module/rcutree/parameters/nohz_full_patience_delay", "0")
    by = _by("quiet")
    assert by["rcupdate.rcu_normal_after_boot"]["verdict"] == NOT
    assert by["rcutree.nohz_full_patience_delay"]["verdict"] == NOT
    by = _by("rcupdate.rcu_normal_after_boot=1 rcutree.nohz_full_patience_delay=1000")
    assert by["rcupdate.rcu_normal_after_boot"]["verdict"] == OK
    assert by["rcutree.nohz_full_patience_delay"]["verdict"] == OK
