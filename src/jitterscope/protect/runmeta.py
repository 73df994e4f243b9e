"""meta.json of a protect run: what was protected from what, how, on which host."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitterscope import sysinfo
from jitterscope.protect.outcome import Outcome
from jitterscope.protect.plan import Plan
from jitterscope.rundir import base_meta


def meta(plan: Plan, out: Outcome, run_dir: Path) -> dict[str, Any]:
    end = out.end
    duration_ns = float(end.get("duration_ns") or out.wall_s * 1e9)
    start = datetime.fromtimestamp(out.started_unix_ns / 1e9, timezone.utc)
    return base_meta(
        kind="protect",
        id=run_dir.name,
        host=sysinfo.host(),
        kernel=sysinfo.kernel(),
        command_line=list(sys.argv),
        start=start.isoformat(timespec="seconds"),
        start_unix_ns=out.started_unix_ns,
        duration_s=duration_ns / 1e9,
        interrupted=out.interrupted or bool(end.get("interrupted")) and out.ended_by == "interrupted",
        ended_by=out.ended_by,
        cpus=plan.cpus,
        critical_cpus=plan.critical_cpus,
        cpu_model=sysinfo.cpu_model(),
        clocksource=sysinfo.clocksource(),
        virtualization=sysinfo.virtualization(),
        options={
            "signal": out.signal,
            "signal_reason": out.signal_reason,
            "actuator": plan.actuator,
            "law": plan.law,
            "sampling": plan.sampling,
            "sample_ns": plan.ts_ns,
            "suspend_ns": out.s_ns,
            "suspend_min_ns": plan.s_min_ns,
            "suspend_max_ns": plan.s_max_ns,
            "gain": plan.gain,
            "threshold": out.threshold,
            "deadline_ns": out.deadline_ns,
            "compare_ns": plan.compare_ns,
            "priority": plan.priority,
            "duration_ns": plan.duration_ns,
            "cgroup_version": plan.cgroup_version,
            "peak_bps": list(out.peak) if out.peak else None,
            "calibration": str(plan.calibration) if plan.calibration else None,
        },
        programs=out.programs,
        controller=end,
        controller_error=out.error,
    )
