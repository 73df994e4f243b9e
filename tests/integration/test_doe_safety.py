"""Safety of `jitterscope doe run`: kill -9 mid-treatment is undone by its watchdog; bad plans change nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jitterscope.journal import journal_dir, read_setting

from .conftest import changed, jitterscope, load_pids, probed_cpu, snapshot

THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change IRQs, task affinity and sysctls")
@pytest.mark.skipif(not os.path.exists(THP), reason="kernel without transparent huge pages")
def test_kill_9_mid_treatment_is_undone_by_the_watchdog(tmp_path):
    cpu = probed_cpu()
    marker = tmp_path / "custom-factor-was-here"
    started = tmp_path / "started"
    # Both levels of the IRQ, THP, load and custom factors differ from the machine's state,
    # so whichever treatment runs first, those knobs are changed when the runner dies.
    thp_now = read_setting(THP)
    thp_choices = Path(THP).read_text().replace("[", "").replace("]", "").split()
    thp_other = [c for c in thp_choices if c != thp_now]
    tm_now = read_setting("/proc/sys/kernel/timer_migration")
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        textwrap.dedent(f"""
        name: crash
        response:
          command: "echo $$ > {started}; exec sleep 120"
          cpus: {cpu}
          estimate: 2s
        factors:
          - {{name: irqs, kind: irq_affinity, low: away, high: to}}
          - {{name: tasks, kind: task_affinity, low: away, high: allowed}}
          - {{name: thp, kind: thp, low: {thp_other[0]}, high: {thp_other[-1]}}}
          - {{name: load, kind: cache_load, low: resident, high: thrash}}
          - {{name: mine, kind: custom, low: "echo low > {marker}", high: "echo high > {marker}",
              restore: "rm -f {marker}"}}
          - {{name: udp, kind: udp_flood, low: off, high: on}}
          - {{name: migration, kind: timer_migration, low: {1 - int(tm_now)}, high: {tm_now}}}
        design: {{type: fractional, generators: [D=ABC, E=AB, F=AC, G=BC]}}
        replications: 1
        seed: 3
    """)
    )
    info_plan = plan.read_text()
    before = snapshot()
    assert not marker.exists()
    out = tmp_path / "exp"
    runner = subprocess.Popen(
        [sys.executable, "-m", "jitterscope", "doe", "run", str(plan), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(300):
            if started.exists() and started.read_text().strip():
                break
            if runner.poll() is not None:
                pytest.fail(f"runner ended early: {runner.stderr.read() if runner.stderr else ''}")
            time.sleep(0.05)
        else:
            pytest.fail("the response never started")
        workload = int(started.read_text())
        mid = snapshot()
        loads = load_pids()
        first = json.loads((out / "experiment.json").read_text())["run_order"][0][0]
        levels = json.loads((out / "experiment.json").read_text())["treatments"][first]["levels"]
        # The system really is changed mid-treatment.
        assert marker.exists()
        assert read_setting(THP) != before[THP]
        assert any(k.startswith("/proc/irq/") for k in changed(before, mid))
        assert loads, "no background load running"
        if levels["B"] < 0:  # tasks kept away from the measured CPU
            assert any(k.startswith("affinity ") for k in changed(before, mid))
        # the runner's own journal (named by its pid): other tests' jitterscope commands running beside
        # this one journal their scratch directories too
        ours = f"{runner.pid}-*.jsonl"
        journals = list(journal_dir().glob(ours))
        assert journals
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    # The runner's watchdog undoes the treatment's journal at once, without waiting for a next command:
    # the journal goes once every change in it is undone (the observable end of the undoing).
    deadline = time.monotonic() + 60
    while list(journal_dir().glob(ours)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(journal_dir().glob(ours)), "the watchdog left the journal"
    assert changed(before, snapshot()) == []
    assert not marker.exists()
    assert not Path(f"/proc/{workload}").exists() or _state(workload) == "Z", "the measured workload survived"
    r = jitterscope("restore", "--json", check=True)
    assert json.loads(r.stdout)["undone"] == []
    for _ in range(50):
        if not any(p in loads for p in load_pids()):
            break
        time.sleep(0.1)
    assert not any(p in loads for p in load_pids())
    # The experiment resumes from zero finished runs with the same plan.
    assert (out / "plan.yaml").read_text() == info_plan
    assert not (out / "runs.jsonl").exists() or (out / "runs.jsonl").read_text() == ""


BASE = """
name: bad
response:
  command: ["true"]
  cpus: {cpu}
  estimate: 100ms
factors:
  - {{name: migration, kind: timer_migration, low: 0, high: 1}}
  - {{name: hugepages, kind: thp, low: always, high: never}}
replications: 2
"""


def _bad_plans(cpu: int) -> dict[str, tuple[str, str]]:
    base = BASE.format(cpu=cpu)
    online = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    return {
        "unknown factor": (base.replace("kind: thp", "kind: hyperdrive"), "unknown kind 'hyperdrive'"),
        "unsettable level": (base.replace("high: never", "high: sometimes"), "level 'sometimes'"),
        "level this machine cannot set": (
            base.replace(f"cpus: {cpu}", f"cpus: {online}").replace(
                "kind: thp, low: always, high: never", "kind: irq_affinity, low: to, high: away"
            ),
            "cannot go away from every online CPU",
        ),
        "duplicate names": (base.replace("name: hugepages", "name: migration"), "duplicate factor name"),
        "too long without --yes": (base.replace("estimate: 100ms", "estimate: 2h"), "add --yes"),
        "no response": (
            "\n".join(
                line
                for line in base.splitlines()
                if not line.startswith(("response", "  command", "  cpus", "  estimate"))
            ),
            "no response",
        ),
    }


@pytest.mark.parametrize("case", list(_bad_plans(0)))
def test_bad_input_exits_2_and_changes_nothing(tmp_path, case):
    text, msg = _bad_plans(probed_cpu())[case]
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    before = snapshot()
    out = tmp_path / "exp"
    r = jitterscope("doe", "run", str(plan), "--out", str(out))
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if line.startswith("jitterscope: error:")]
    assert len(errors) == 1 and msg in errors[0], r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not out.exists()
    assert changed(before, snapshot()) == []


@pytest.mark.free
def test_analyze_refuses_what_is_not_a_finished_experiment(tmp_path):
    r = jitterscope("doe", "analyze", str(tmp_path))
    assert r.returncode == 2 and "not a doe experiment directory" in r.stderr
