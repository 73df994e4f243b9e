"""restore's lines about one process agree with each other (issue 25, item 8).

It said "sent SIGCONT" and then "already ended" for the same PID: a process told to end
while it was stopped ends the moment it is resumed, so both were true and read as a
contradiction.  Real processes, undone in restore's (reverse) order."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from jitterscope.journal import process_start_time
from jitterscope.protect.cgroups import undo_move, undo_sigcont


def test_resumed_then_ended_reads_as_one_story(tmp_path) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        start = process_start_time(proc.pid)
        os.kill(proc.pid, signal.SIGSTOP)
        os.kill(proc.pid, signal.SIGTERM)  # pending until it is resumed: what a killed session leaves
        resumed = undo_sigcont({"targets": [{"id": proc.pid, "group": False, "start": start}]})
        proc.wait(timeout=10)
        for _ in range(100):  # reaped: /proc/PID is gone
            if process_start_time(proc.pid) is None:
                break
            time.sleep(0.01)
        moved = undo_move({"pid": proc.pid, "start": start, "group": str(tmp_path), "origin": str(tmp_path)})
    finally:
        proc.kill()
    assert resumed.status == "restored" and resumed.text.startswith(f"resumed process {proc.pid} (SIGCONT")
    assert "ends now" in resumed.text
    assert moved.text == f"process {proc.pid} has ended: nothing to move back"
