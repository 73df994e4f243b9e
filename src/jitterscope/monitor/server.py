"""The metrics endpoint: prometheus_client's HTTP server on 127.0.0.1 only (never another interface).

A scraper that hangs up mid-response is logged in one line (prometheus_client's
server drops it silently, the standard library's would print a traceback); so is
a request that fails for any other reason.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.registry import Collector

from jitterscope.errors import JitterscopeError

WSGIApp = Callable[[dict[str, Any], Any], Iterable[bytes]]
ADDR = "127.0.0.1"


def _one_line_errors(app: WSGIApp) -> WSGIApp:
    def logged(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        client = environ.get("REMOTE_ADDR", "?")
        try:
            body = app(environ, start_response)
        except Exception as err:  # noqa: BLE001 (any failure is one line and a 500, never a traceback)
            print(f"jitterscope: metrics request from {client} failed: {err!r}", file=sys.stderr)
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info())
            return [b"metrics unavailable\n"]
        return _watched(body, client)

    return logged


def _watched(body: Iterable[bytes], client: str) -> Iterator[bytes]:
    # The server closes the response unfinished (GeneratorExit here) only when writing it failed.
    try:
        yield from body
    except GeneratorExit:
        print(f"jitterscope: metrics client {client} disconnected before the response was sent", file=sys.stderr)
        raise


def start_server(port: int, registry: Collector) -> WSGIServer:
    """Serve `registry` at http://127.0.0.1:port/metrics (0 = any free port) in a daemon thread;
    the server's `server_port` is the port it got."""
    try:
        httpd, _thread = start_http_server(port, addr=ADDR, registry=registry)
    except OSError as err:
        raise JitterscopeError(f"cannot serve metrics on {ADDR}:{port} ({err.strerror})") from None
    app = httpd.get_app()
    assert app is not None  # start_http_server always installs prometheus_client's app
    httpd.set_app(_one_line_errors(app))
    return httpd
