"""The metrics endpoint (prometheus_client on 127.0.0.1): it serves the collector, logs one line, not
a traceback, when a client hangs up mid-response, and a taken port is a one-line error."""

from __future__ import annotations

import socket
import struct
import sys
import time
import urllib.request

import pytest
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily

from jitterscope.errors import JitterscopeError
from jitterscope.monitor.metrics import LastWindow, MonitorState, WindowCpu, registry_for
from jitterscope.monitor.server import start_server


class Big:
    """A collector whose page is ~8 MB: the write is still going when the client resets."""

    def collect(self):
        g = GaugeMetricFamily("x", "padding", labels=["i"])
        for i in range(1000):
            g.add_metric([f"{i}".ljust(8000, "x")], 1)
        yield g


def test_client_that_disconnects_is_one_line(capfd):
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Big())
    srv = start_server(0, reg)
    try:
        port = srv.server_address[1]
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(1024)
        s.close()
        deadline = time.time() + 10
        err = ""
        while time.time() < deadline and "disconnected" not in err:
            time.sleep(0.05)
            sys.stderr.flush()
            err += capfd.readouterr().err
    finally:
        srv.shutdown()
        srv.server_close()
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "metrics client" in lines[0] and "disconnected" in lines[0]


def test_serves_the_monitor_state_on_localhost_only():
    state = MonitorState(windows_total=4, last=LastWindow({"1": WindowCpu(12.5, 3, 9)}, 0, 0.0))
    srv = start_server(0, registry_for(lambda: state))
    try:
        host, port = srv.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "jitterscope_windows_total 4.0" in text and 'jitterscope_noise_ppm{cpu="1"} 12.5' in text
        state.windows_total = 5  # every scrape reads the state anew
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            assert "jitterscope_windows_total 5.0" in r.read().decode()
        with pytest.raises(JitterscopeError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            start_server(port, registry_for(lambda: state))
    finally:
        srv.shutdown()
        srv.server_close()
