"""sysinfo.fair_server: Linux 6.12 added the fair server (ordinary tasks get up to 50 ms a second on a CPU
real-time tasks keep busy), which measure notes when throttling is off; read from the kernel's release."""

from __future__ import annotations

import os

import pytest

from jitterscope import sysinfo


@pytest.mark.parametrize(
    ("release", "has"),
    [("6.18.44", True), ("6.12.0-rt5", True), ("6.11.9", False), ("5.15.0-91-generic", False), ("7.0", True)],
)
def test_release_decides(monkeypatch, release, has):
    real = os.uname()
    fake = os.uname_result((real.sysname, real.nodename, release, real.version, real.machine))
    monkeypatch.setattr(os, "uname", lambda: fake)
    assert sysinfo.fair_server() is has


def test_an_unparsable_release_is_no_fair_server(monkeypatch):
    real = os.uname()
    monkeypatch.setattr(os, "uname", lambda: os.uname_result((real.sysname, real.nodename, "custom", "", "")))
    assert sysinfo.fair_server() is False
