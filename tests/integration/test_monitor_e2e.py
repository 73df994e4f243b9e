"""monitor end to end: scrape /metrics twice and see the window counter advance; SIGTERM stops it cleanly."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request

from .conftest import probed_cpu


def _windows(url: str) -> int:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return int(float(re.search(r"^jitterscope_windows_total ([0-9.e+]+)$", text, re.MULTILINE).group(1)))


def test_metrics_endpoint_advances_and_sigterm_stops_cleanly(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterscope",
            "monitor",
            "--cpus",
            str(probed_cpu()),
            "--interval",
            "1s",
            "--window",
            "300ms",
            "--port",
            "0",
            "--keep",
            "2",
            "--history",
            str(tmp_path / "hist"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The first line naming the URL (a journal recovery may print a line before it).
        lines = iter(proc.stderr.readline, "")
        found = next(m for m in (re.search(r"(http://127\.0\.0\.1:\d+/metrics)", ln) for ln in lines) if m)
        url = found.group(1)
        deadline = time.monotonic() + 60
        first = _windows(url)
        while _windows(url) == first and time.monotonic() < deadline:
            time.sleep(0.3)
        second = _windows(url)
        assert second > first
        while _windows(url) < 3 and time.monotonic() < deadline:
            time.sleep(0.3)
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        assert "jitterscope_window_failures_total 0" in text  # consecutive windows all work
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        rest = proc.stderr.read()
        assert "stopped after" in rest and "Traceback" not in rest
        assert len(list((tmp_path / "hist").iterdir())) <= 2  # bounded history
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
