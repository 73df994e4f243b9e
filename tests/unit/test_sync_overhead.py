"""sync's own-time accounting (sync/overhead.py), the timeline's span merging (sync/plots.py) and the warm-up
during CMD (sync/warmup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from jitterscope.measure.attribution import merge_spans
from jitterscope.sync import overhead


def test_process_start_is_before_now_and_after_the_interpreter_began() -> None:
    # pytest itself started this process: its start is in the past, and not before the machine booted
    start = overhead.process_start_ns()
    now = time.monotonic_ns()
    assert start < now
    assert now - start < time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def test_parts_add_up_to_the_wall_time() -> None:
    s = 1_000_000_000
    oh = overhead.measure(started=0, program_start=2 * s, program_end=12 * s, analysed=13 * s, reported=14 * s)
    j = oh.to_json()
    assert (j["startup_s"], j["program_s"], j["analysis_s"], j["report_s"], j["wall_s"]) == (2, 10, 1, 1, 14)
    assert j["own_s"] == 4 and j["own_share"] == round(4 / 14, 4) and j["ratio"] == 1.4
    no_report = overhead.measure(0, 2 * s, 12 * s, 13 * s, None).to_json()
    assert no_report["report_s"] is None and no_report["wall_s"] == 13


def test_merge_spans_joins_overlapping_and_close_spans_only() -> None:
    start = np.array([10.0, 0.0, 2.5, 5.0, 20.0])
    end = np.array([12.0, 2.0, 4.0, 9.0, 21.0])
    s, e = merge_spans(start, end, gap=0.6)
    # [0,2] and [2.5,4] are 0.5 apart (joined), [5,9] is 1.0 after (kept apart), [10,12] is 1.0 after [5,9]
    assert s.tolist() == [0.0, 5.0, 10.0, 20.0] and e.tolist() == [4.0, 9.0, 12.0, 21.0]
    s, e = merge_spans(start, end, gap=0.0)
    assert s.tolist() == [0.0, 2.5, 5.0, 10.0, 20.0]
    contained = merge_spans(np.array([0.0, 1.0]), np.array([10.0, 2.0]), 0.0)
    assert contained[0].tolist() == [0.0] and contained[1].tolist() == [10.0]
    assert len(merge_spans(np.zeros(0), np.zeros(0), 1.0)[0]) == 0


def _warmed(trace: bool, report: bool, draw: bool = True) -> dict[str, bool]:
    """Which modules a warm-up left imported, in a fresh interpreter (this one's are shared by every test)."""
    names = ["pandas", "jitterscope.simulate.fitting", "jitterscope.sync.causes", "matplotlib.pyplot"]
    code = (
        "import json, sys\n"
        "from jitterscope import nopandas\n"
        "nopandas.refuse()\n"  # as the command does (entry.py): a warm-up that asked for pandas stopped there
        "from jitterscope.sync.warmup import Warmup\n"
        f"assert Warmup(trace={trace}, report={report}, draw={draw}).start().wait(120)\n"
        f"print(json.dumps({{n: n in sys.modules for n in {names!r}}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=180)
    return json.loads(out.stdout)


def test_warmup_imports_what_the_run_will_need_and_nothing_more() -> None:
    """scipy.stats (the fit's) is left to the fit's own process, forked before the warm-up (sync/build.py)."""
    assert _warmed(trace=False, report=False) == {
        "pandas": False,
        "jitterscope.simulate.fitting": False,
        "jitterscope.sync.causes": False,
        "matplotlib.pyplot": False,
    }
    assert _warmed(trace=True, report=True) == {
        "pandas": False,
        "jitterscope.simulate.fitting": False,
        "jitterscope.sync.causes": True,
        "matplotlib.pyplot": True,
    }
    # the figures drawn by a process of their own (sync/runner.py): matplotlib is that process's import
    assert _warmed(trace=True, report=True, draw=False)["matplotlib.pyplot"] is False


def test_a_helper_is_idle_while_cmd_runs_and_raised_back_with_its_threads() -> None:
    """The helper process imports at SCHED_IDLE while CMD runs, set from the parent (so that CMD's end cannot come
    first), and every thread of it is back to the policy it had (here SCHED_BATCH, not a blanket SCHED_OTHER)
    when CMD ends."""
    import os

    import pytest

    from jitterscope.sync.warmup import can_leave_idle, lower_priority, raise_priority

    if not can_leave_idle():
        pytest.skip("leaving SCHED_IDLE needs CAP_SYS_NICE (sync then imports after CMD)")
    code = (
        "import os, threading, time\nos.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))\n"
        "print(flush=True)\nthreading.Thread(target=time.sleep, args=(30,)).start()\ntime.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # batch now
        before = lower_priority(child.pid)
        assert before == (os.SCHED_BATCH, 0)
        assert os.sched_getscheduler(child.pid) == os.SCHED_IDLE
        deadline = time.monotonic() + 10  # its second thread, started idle
        while len(os.listdir(f"/proc/{child.pid}/task")) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        tasks = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        assert len(tasks) == 2
        raise_priority(child.pid, before)
        assert [os.sched_getscheduler(t) for t in tasks] == [os.SCHED_BATCH] * 2
    finally:
        child.kill()
        child.wait()


def test_without_cap_sys_nice_a_lowered_task_cannot_come_back_and_sync_knows() -> None:
    """euid 0 without CAP_SYS_NICE (a container's root) may lower a task to SCHED_IDLE but not raise it back:
    `can_leave_idle` says so, and sync then leaves its helper at its own priority."""
    import os
    import shutil

    import pytest

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to drop CAP_SYS_NICE")
    code = "from jitterscope.sync.warmup import can_leave_idle\nprint(can_leave_idle())\n"
    drop = ["setpriv", "--inh-caps", "-sys_nice", "--bounding-set", "-sys_nice", sys.executable, "-c", code]
    got = subprocess.run(drop, capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and got.stdout.strip() == "False", got.stderr
