"""The metrics endpoint: HTTP on 127.0.0.1 only (never another interface)."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from jitterscope.errors import JitterscopeError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line instead of socketserver's traceback: a scraper that hangs up is not our fault."""
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, TimeoutError)):
            print(f"jitterscope: metrics client {client_address[0]}:{client_address[1]} disconnected "
                  f"({type(err).__name__})", file=sys.stderr)
        else:
            print(f"jitterscope: metrics request from {client_address[0]} failed: {err!r}", file=sys.stderr)


def start_server(port: int, text: Callable[[], str]) -> ThreadingHTTPServer:
    """Serve `text()` at /metrics on 127.0.0.1:port (0 = any free port) in a thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.split("?")[0] not in ("/metrics", "/"):
                self.send_error(404, "try /metrics")
                return
            body = text().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # scrapes are not worth a log line
            pass

    try:
        srv = _Server(("127.0.0.1", port), Handler)
    except OSError as err:
        raise JitterscopeError(f"cannot serve metrics on 127.0.0.1:{port} ({err.strerror})") from None
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, name="metrics", daemon=True).start()
    return srv
