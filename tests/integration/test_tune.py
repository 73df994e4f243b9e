"""tune audit / apply / revert / status on this machine's real knobs, and bad input (exit 2, nothing changed).

Every change a test makes is undone in a `finally` (through tune's own revert, and
by writing back what was read first), so others measuring on this machine find it
as it was.  Reverts name their record: another copy of these tests (a fresh clone's
`make test`) may keep records of its own at the same time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jitterscope.knobs import irq, resolve
from jitterscope.sysinfo import boot_id, host, kernel, online_cpus
from jitterscope.tune.record import record_dir, records

from .conftest import jitterscope, probed_cpu
from .machine import run_as_nobody
from .tune_support import one_session_at_a_time

root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change kernel settings")


@pytest.fixture(autouse=True)
def _turns():
    """The same knobs as another session running these tests at the same time: take turns."""
    if os.geteuid() != 0:
        yield
        return
    with one_session_at_a_time():
        had = set(records())
        try:
            yield
        finally:  # a test that failed half-way leaves no record behind it (its knobs are put back by value)
            for rec in set(records()) - had:
                cli("tune", "revert", "--record", str(rec))
                rec.unlink(missing_ok=True)


STAT = "/proc/sys/vm/stat_interval"


def state(*paths: str | Path) -> dict[str, str]:
    """The files these tests change, value by value.  Only those: other engineers' tests on this
    machine change other knobs (THP, timer_migration, IRQs) at the same time."""
    return {str(p): Path(p).read_text() for p in (STAT, *paths) if os.path.exists(p)}


def movable_irq() -> irq.Irq:
    for i in irq.irqs():
        if i.movable and len(online_cpus()) > 1:
            return i
    pytest.skip("no IRQ here can move, or only one CPU")


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The tool's own entry point in this process (a subprocess costs ~1.5 s of imports on a loaded machine)."""
    import contextlib
    import io

    from jitterscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as e:  # argparse's own errors
            rc = int(e.code or 0)
    return subprocess.CompletedProcess(list(argv), rc, out.getvalue(), err.getvalue())


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jitterscope: error: ") and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def test_audit_reads_every_knob_as_json():
    cpu = probed_cpu()
    p = jitterscope("tune", "audit", "--cpus", str(cpu), "--json", check=True)
    a = json.loads(p.stdout)
    assert a["cpus"] == [cpu] and cpu not in a["housekeeping"]
    by = {f["knob"].split(" (")[0]: f for f in a["findings"]}
    expected = [
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "rcu_nocb_poll",
        "irqaffinity",
        "kthread_cpus",
        "nowatchdog",
        "nmi_watchdog",
        "skew_tick",
        "tsc",
        "nohz",
        "rcupdate.rcu_normal_after_boot",
        "rcutree.nohz_full_patience_delay",
        "mce",
        "kernel.hung_task_timeout_secs",
        "processor.max_cstate",
        "intel_idle.max_cstate",
        "idle",
        "mitigations",
        "audit",
        "transparent_hugepage",
        "irq.default_affinity",
        "workqueue.cpumask",
        "kernel.timer_migration",
        "vm.stat_interval",
        "kernel.watchdog_cpumask",
        "kernel.nmi_watchdog",
        "kernel.sched_rt_runtime_us",
        "kernel.numa_balancing",
        "mm.thp.enabled",
        "mm.thp.defrag",
        "mm.thp.khugepaged.defrag",
        "mm.ksm.run",
        "swap",
        "per-CPU kernel threads",
        "kernel threads allowed on them",
        "user tasks allowed on them",
        "irqbalance",
        "tuned",
        f"cpu{cpu} SMT siblings",
        f"cpu{cpu} cpufreq governor",
        f"cpu{cpu} idle states",
        "clocksource",
        "CONFIG_HZ",
        "preemption model",
        "CONFIG_NO_HZ_FULL",
    ]
    missing = [
        k
        for k in expected
        if k not in by and not (k.startswith("mm.") and not Path("/sys/kernel/mm/transparent_hugepage").exists())
    ]
    assert not missing, missing
    assert any(k.startswith("cpuset") for k in by)
    vendor = next(
        (
            ln.split(":")[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("vendor_id")
        ),
        None,
    )
    pstate = {"AuthenticAMD": "amd_pstate", "GenuineIntel": "intel_pstate"}.get(vendor or "")
    driver = Path("/sys/devices/system/cpu/cpufreq/policy0/scaling_driver")
    if pstate and not driver.exists():  # named by the vendor when no cpufreq driver says otherwise
        assert pstate in by and not {"amd_pstate", "intel_pstate"} - {pstate} & set(by), sorted(by)
    hung = Path("/proc/sys/kernel/hung_task_timeout_secs")
    if hung.exists():
        assert by["kernel.hung_task_timeout_secs"]["value"] == hung.read_text().strip()
    normal = Path("/sys/module/rcupdate/parameters/rcu_normal_after_boot")
    if normal.exists():
        on = normal.read_text().strip() in ("1", "Y")
        assert by["rcupdate.rcu_normal_after_boot"]["verdict"] == ("ok" if on else "not isolated")
    for i in irq.irqs():
        f = by[f"irq.{i.number}.affinity"]
        assert f["value"].split(" ")[0] == resolve(f"irq.{i.number}.affinity").read()
        if not i.movable and cpu in (i.effective or []):
            assert f["verdict"] == "not isolated" and "managed_irq" in f["fix"]
    for wq in Path("/sys/devices/virtual/workqueue").glob("*/cpumask"):
        assert f"workqueue.{wq.parent.name}.cpumask" in by
    assert by["vm.stat_interval"]["value"] == Path(STAT).read_text().strip()
    for f in a["findings"]:
        assert f["verdict"] in ("ok", "not isolated", "cannot tell") and f["why"] and f["source"], f
        assert f["setting"] in ("boot", "runtime", "build", "hardware"), f
    assert sum(a["counts"].values()) == len(a["findings"])
    text = cli("tune", "audit", "--cpus", str(cpu)).stdout
    assert "Runtime fixes" in text or a["counts"]["not isolated"] == 0


@root
def test_apply_then_revert_proves_every_knob_back(tmp_path):
    i = movable_irq()
    before = state(i.path)
    hk = ",".join(str(c) for c in online_cpus() if c != probed_cpu())
    sleeper = subprocess.Popen(["sleep", "60"])
    stat = int(before[STAT])
    try:
        args = [
            "--knob",
            f"vm.stat_interval={stat + 3}",
            "--knob",
            f"irq.{i.number}.affinity={probed_cpu()}",
            "--knob",
            f"task.{sleeper.pid}.affinity={hk}",
        ]
        dry = cli("tune", "apply", *args, "--dry-run", "--json")
        assert json.loads(dry.stdout)["record"] is None and state(i.path) == before
        r = json.loads(jitterscope("tune", "apply", *args, "--json", check=True).stdout)
        assert Path(r["record"]).exists()
        assert Path(STAT).read_text().strip() == str(stat + 3)
        assert resolve(f"irq.{i.number}.affinity").read() == str(probed_cpu())
        assert sorted(os.sched_getaffinity(sleeper.pid)) == [int(c) for c in hk.split(",")]
        (st,) = [x for x in json.loads(cli("tune", "status", "--json").stdout)["records"] if x["record"] == r["record"]]
        assert {row["result"] for row in st["rows"]} == {"as tune set it"}
        rv = json.loads(jitterscope("tune", "revert", "--record", r["record"], "--json", check=True).stdout)[
            "reverted"
        ][0]
        assert rv["complete"] and {row["result"] for row in rv["rows"]} == {"restored"}
        assert not Path(r["record"]).exists()
        assert state(i.path) == before
        assert os.sched_getaffinity(sleeper.pid) == set(online_cpus())
    finally:
        sleeper.kill()
        sleeper.wait()
        _put_back(before)


def _put_back(before: dict[str, str]) -> None:
    for p, v in before.items():
        if Path(p).read_text() != v:
            Path(p).write_text(v)


@root
def test_revert_leaves_a_knob_changed_since_and_skips_runtime_knobs_after_a_reboot():
    before = state()
    stat = int(before[STAT])
    try:
        r = json.loads(
            jitterscope("tune", "apply", "--knob", f"vm.stat_interval={stat + 2}", "--json", check=True).stdout
        )
        Path(STAT).write_text(str(stat + 5))  # someone else, since
        p = jitterscope("tune", "revert", "--record", r["record"], "--json")
        assert p.returncode == 1
        (row,) = json.loads(p.stdout)["reverted"][0]["rows"]
        assert row["result"] == "left alone" and row["now"] == str(stat + 5)
        assert Path(STAT).read_text().strip() == str(stat + 5)  # not overwritten
        assert Path(r["record"]).exists()  # still on record
        Path(STAT).write_text(str(stat))
        p = cli("tune", "revert", "--record", r["record"], "--json")
        assert json.loads(p.stdout)["reverted"][0]["rows"][0]["result"] == "already back"
        assert not Path(r["record"]).exists()
        # After a reboot the kernel starts from its defaults: a runtime knob is not "reverted" then.
        r = json.loads(cli("tune", "apply", "--knob", f"vm.stat_interval={stat + 2}", "--json").stdout)
        rec = Path(r["record"])
        rec.write_text(rec.read_text().replace(str(boot_id()), "00000000-0000-0000-0000-000000000000"))
        out = cli("tune", "revert", "--record", str(rec)).stdout
        assert "lost at reboot" in out and "rebooted since" in out
        assert not rec.exists()
    finally:
        _put_back(before)


@root
def _boot_image(tmp_path: Path, original: str, params: str) -> tuple[Path, Path]:
    """An image's /etc/default/grub holding `original`, and a plan whose boot parameters are `params`."""
    grub = tmp_path / "image/etc/default/grub"
    grub.parent.mkdir(parents=True)
    grub.write_text(original)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"format: jitterscope-tune-plan\nversion: 1\nhost: {host()}\nkernel: {kernel()}\n"
        f"cpus: [1]\nhousekeeping: [0]\nknobs: []\nboot:\n  params: [{params}]\n"
    )
    return grub, plan


def test_boot_parameters_go_through_the_journal_and_come_back(tmp_path):
    original = 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="quiet psi=1"\n# [ keep ] this\n'
    grub, plan = _boot_image(tmp_path, original, "nohz_full=1, psi=0")
    r = json.loads(
        jitterscope(
            "tune", "apply", str(plan), "--boot", "--boot-root", str(tmp_path / "image"), "--json", check=True
        ).stdout
    )
    assert 'GRUB_CMDLINE_LINUX="quiet nohz_full=1 psi=0"' in grub.read_text()
    assert r["boot"]["file"] == str(grub) and r["boot"]["reboot_needed"]
    rv = json.loads(cli("tune", "revert", "--record", r["record"], "--json").stdout)
    assert rv["reverted"][0]["rows"][0]["result"] == "restored"
    assert grub.read_text() == original


@root
def test_a_relative_boot_root_is_reverted_from_another_directory(tmp_path, monkeypatch):
    original = 'GRUB_CMDLINE_LINUX="quiet"\n'
    grub, _ = _boot_image(tmp_path, original, "psi=0")
    monkeypatch.chdir(tmp_path)
    r = json.loads(cli("tune", "apply", "plan.yaml", "--boot", "--boot-root", "image", "--json").stdout)
    assert r["boot"]["file"] == str(grub) and "psi=0" in grub.read_text()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    rv = json.loads(cli("tune", "revert", "--record", r["record"], "--json").stdout)
    assert [row["result"] for row in rv["reverted"][0]["rows"]] == ["restored"], rv
    assert grub.read_text() == original


def test_bad_input_is_one_line_exit_2_and_changes_nothing(tmp_path):
    from tests.fixtures_runs import build_run

    before = state()
    mine = f"-{os.getpid()}.jsonl"  # records are named <time>-<pid>: another engineer's may appear meanwhile
    other = tmp_path / "other.yaml"
    other.write_text(
        "format: jitterscope-tune-plan\nversion: 1\nhost: elsewhere\nkernel: 1.0\ncpus: [1]\n"
        "housekeeping: [0]\nknobs: [{knob: vm.stat_interval, value: 20}]\n"
    )
    untraced = build_run(tmp_path / "untraced", tracing=False)
    cases = {
        ("tune", "apply", "--knob", "vm.stat_intervall=5"): "unknown knob 'vm.stat_intervall'",
        ("tune", "apply", "--knob", "vm.stat_interval=0"): "out of range",
        ("tune", "apply", "--knob", "vm.stat_interval"): "use NAME=VALUE",
        ("tune", "apply", "--knob", "irq.*.affinity=4096"): "does not exist",
        ("tune", "apply", "--knob", "task.999999999.affinity=0"): "no process",
        ("tune", "apply", "--knob", "mm.thp.enabled=sometimes"): "not one of",
        ("tune", "apply"): "give a PLAN file",
        ("tune", "apply", str(other)): "made from a run on elsewhere",
        ("tune", "apply", str(tmp_path / "missing.yaml")): "no such tune plan",
        ("tune", "plan", str(untraced)): "without kernel tracing",
        ("tune", "plan", str(tmp_path / "nope")): "no such run directory",
        ("tune", "verify", "--alpha", "2", "--knob", "vm.stat_interval=10"): "--alpha",
        ("tune", "verify", "--before", str(tmp_path / "nope"), "--knob", "vm.stat_interval=10"): "no such run",
        ("tune", "audit", "--cpus", "4096"): "does not exist",
        ("tune", "revert", "--record", str(tmp_path / "x.jsonl")): "no tune record",
    }
    for argv, words in cases.items():
        line = one_line_error(cli(*argv))
        assert words in line, (argv, line)
    assert words in one_line_error(jitterscope(*argv))  # and the same as a command of its own
    assert cli("tune", "apply", str(other), "--force", "--dry-run").returncode == 0
    assert cli("tune").returncode == 2
    assert state() == before and not [r for r in records() if r.name.endswith(mine)]


@root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) not installed")
def test_without_root_nothing_changes(tmp_path):
    before = state()
    p = run_as_nobody(
        ["-m", "jitterscope", "tune", "apply", "--knob", "vm.stat_interval=7"],
        cwd=str(tmp_path),
        env={"HOME": str(tmp_path)},
    )  # a private (0700) checkout is shown to uid 65534, or skipped
    assert "run it as root" in one_line_error(p)
    assert state() == before
    assert not record_dir().exists() or not any(r.stat().st_uid == 65534 for r in record_dir().glob("*"))
