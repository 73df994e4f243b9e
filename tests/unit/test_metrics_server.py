"""The metrics endpoint logs one line, not a traceback, when a client hangs up mid-response."""

from __future__ import annotations

import socket
import struct
import sys
import time

from jitterscope.monitor.server import start_server


def test_client_that_disconnects_is_one_line(capfd):
    body = "x 1\n" * 2_000_000  # 8 MB: the write is still going when the client resets
    srv = start_server(0, lambda: body)
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
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "metrics client" in lines[0] and "disconnected" in lines[0]
