"""The systemd unit `jitterscope monitor --print-unit` writes: systemd accepts it (`systemd-analyze verify`,
and rates its hardening OK offline), and the monitor really runs with no more than its capability set and
NoNewPrivileges (reproduced with setpriv: this machine's PID 1 is not systemd, so the unit cannot be
started here; systemd gives a root service exactly its bounding set)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import jitterscope, needs_tracing, probed_cpu

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze not installed (systemd)")


def unit_text(*args: str) -> str:
    proc = jitterscope("monitor", *args, "--print-unit", timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def service(text: str) -> dict[str, str]:
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("#"))


@pytest.mark.free
@needs_systemd_analyze
def test_unit_passes_systemd_analyze_verify_and_is_rated_ok(tmp_path: Path) -> None:
    f = tmp_path / "jitterscope-monitor.service"
    f.write_text(unit_text("--cpus", str(probed_cpu()), "--priority", "fifo:10", "--port", "9469"))
    proc = subprocess.run([str(SYSTEMD_ANALYZE), "verify", str(f)], capture_output=True, text=True, timeout=60)
    # verify exits 0 even for a directive it ignores, with a warning naming the file: none may be printed
    ours = [ln for ln in (proc.stdout + proc.stderr).splitlines() if f.name in ln]
    assert proc.returncode == 0 and not ours, proc.stdout + proc.stderr
    sec = subprocess.run(
        [str(SYSTEMD_ANALYZE), "security", "--offline=yes", str(f)], capture_output=True, text=True, timeout=60
    )
    m = re.search(r"Overall exposure level for \S+: ([\d.]+) (\w+)", sec.stdout + sec.stderr)
    assert m is not None, sec.stdout + sec.stderr
    assert m.group(2) in ("SAFE", "OK"), m.group(0)  # systemd's own bands: SAFE, OK, MEDIUM, EXPOSED, UNSAFE


@needs_tracing
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv not installed (util-linux)")
def test_monitor_traces_with_only_the_units_capabilities(tracefs: Path, tmp_path: Path) -> None:
    """tracefs mounted first, as the unit's Wants=sys-kernel-tracing.mount has systemd do: without CAP_SYS_ADMIN
    the monitor cannot mount it itself (alone on a fresh machine, every window failed)."""
    cpu = probed_cpu()
    s = service(unit_text("--cpus", str(cpu), "--priority", "fifo:10"))
    caps = [c.lower().removeprefix("cap_") for c in s["CapabilityBoundingSet"].split()]
    assert s["NoNewPrivileges"] == "yes" and "sys_admin" not in caps
    words = shlex.split(s["ExecStart"])
    run_args = words[: words.index("--interval")]  # the program, monitor, --cpus, then this test's own timing
    hist = tmp_path / "history"
    cmd = ["setpriv", "--no-new-privs", "--bounding-set=-all," + ",".join("+" + c for c in caps), "--inh-caps=-all"]
    cmd += ["--", *run_args, "--priority", "fifo:10", "--interval", "2s", "--window", "1s", "--windows", "1"]
    cmd += ["--port", "0", "--history", str(hist)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "window 1 failed" not in proc.stderr and "stopped after 1 window (0 failed)" in proc.stderr
    (window,) = [d for d in hist.iterdir() if d.is_dir()]
    meta = json.loads((window / "meta.json").read_text())
    assert meta["tracing"]["enabled"] and meta["options"]["priority"] == 10  # tracefs and SCHED_FIFO
    # CAP_SYSLOG: kallsyms gives real addresses, so the window's timer callbacks are named
    assert (window / "trace" / "symbols.txt").read_text().strip()
