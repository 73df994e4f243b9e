"""The report in a real browser: headless Chromium over the DevTools protocol.

Chromium is driven through `--remote-debugging-pipe` (commands on fd 3,
replies on fd 4, NUL-separated JSON), so no extra Python package is needed.
The page must load with no console error, no uncaught exception and no
blocked resource, and every figure must be drawn (an SVG with a size and
marks in it), one per CPU for the per-CPU figures.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.fixtures_runs import Injector, build_cluster_run, build_run  # noqa: E402
from tests.support import svg

from .conftest import jitterscope  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make packages installs it)")

FIGURE_CHECK = """
(() => {
  const out = [];
  for (const f of document.querySelectorAll('figure[data-figure]')) {
    const svg = f.querySelector('svg');
    if (!svg) { out.push({id: f.dataset.figure, w: 0, h: 0, marks: 0}); continue; }
    const r = svg.getBoundingClientRect();
    const bb = svg.getBBox();
    // Drawn marks: paths/rects/uses with a non-empty box of their own.
    let marks = 0;
    for (const el of svg.querySelectorAll('path, rect, use')) {
      const b = el.getBBox();
      if (b.width > 0 || b.height > 0) marks++;
    }
    out.push({id: f.dataset.figure, w: r.width, h: r.height, bbw: bb.width, bbh: bb.height, marks});
  }
  return JSON.stringify({figures: out, title: document.title,
                         tables: document.querySelectorAll('table').length});
})()
"""


def _high_fd(fd: int) -> int:
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


class Chromium:
    """Minimal DevTools-protocol client over Chromium's debugging pipe."""

    def __init__(self) -> None:
        self.profile = tempfile.mkdtemp(prefix="js-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._evt_r, evt_w = os.pipe()
        # Move the child's ends above 4 so that placing them on 3 and 4 cannot clobber them.
        cmd_r, evt_w = (_high_fd(fd) for fd in (cmd_r, evt_w))

        def place_fds() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(evt_w, 4)

        args = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={self.profile}",
            "--remote-debugging-pipe",
            "--window-size=1200,900",
            "about:blank",
        ]
        # fds 3 and 4 in the child are the protocol's pipes.
        self.proc = subprocess.Popen(
            args, preexec_fn=place_fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        os.close(cmd_r)
        os.close(evt_w)
        self._next = 0
        self.replies: dict[int, dict] = {}
        self.events: queue.Queue[dict] = queue.Queue()
        self._cond = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self) -> None:
        buf = b""
        with os.fdopen(self._evt_r, "rb", buffering=0) as f:
            while chunk := f.read(65536):
                buf += chunk
                while b"\0" in buf:
                    msg, buf = buf.split(b"\0", 1)
                    m = json.loads(msg)
                    if "id" in m:
                        with self._cond:
                            self.replies[m["id"]] = m
                            self._cond.notify_all()
                    else:
                        self.events.put(m)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self._next += 1
        mid = self._next
        msg: dict = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        with self._cond:
            if not self._cond.wait_for(lambda: mid in self.replies, timeout):
                raise TimeoutError(method)
        reply = self.replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the file's pages, each in a tab of its own (a start costs seconds under load)."""
    br = Chromium()
    try:
        yield br
    finally:
        br.close()


def render(br: Chromium, page: Path, screenshot: Path | None = None) -> tuple[dict, list[str]]:
    """Load `page` in a new tab of `br`; return the figure check and every console error the tab saw."""
    target = br.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    try:
        sid = br.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

        def errors_of(ev: dict) -> list[str]:  # this tab's only: an earlier tab's late messages are not its
            return _error_of(ev) if ev.get("sessionId") == sid else []

        for domain in ("Runtime", "Log", "Page"):
            br.send(f"{domain}.enable", session=sid)
        br.send("Page.navigate", {"url": page.resolve().as_uri()}, session=sid)
        errors: list[str] = []
        loaded = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not loaded:
            try:
                ev = br.events.get(timeout=1)
            except queue.Empty:
                continue
            loaded = ev.get("method") == "Page.loadEventFired" and ev.get("sessionId") == sid
            errors += errors_of(ev)
        assert loaded, "page never finished loading"
        time.sleep(0.3)  # let late console messages arrive
        res = br.send("Runtime.evaluate", {"expression": FIGURE_CHECK, "returnByValue": True}, session=sid)
        check = json.loads(res["result"]["value"])
        if screenshot is not None:
            import base64

            shot = br.send("Page.captureScreenshot", {"captureBeyondViewport": True}, session=sid)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        while not br.events.empty():
            errors += errors_of(br.events.get())
        return check, errors
    finally:
        br.send("Target.closeTarget", {"targetId": target})


def _error_of(ev: dict) -> list[str]:
    m, p = ev.get("method"), ev.get("params", {})
    if m == "Runtime.exceptionThrown":
        return [json.dumps(p.get("exceptionDetails", {}))[:300]]
    if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
        return [f"console.{p['type']}: {json.dumps(p.get('args'))[:300]}"]
    if m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
        return [f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}"]
    return []


def expected_figures(cpus: list[int]) -> set[str]:
    return (
        {f"histogram-cpu{c}" for c in cpus} | {f"timeline-cpu{c}" for c in cpus} | {"sources", "chains", "unexplained"}
    )


def test_report_renders_in_chromium_with_every_figure_drawn(browser, tmp_path):
    run = build_run(tmp_path / "run", cpus=[1, 2], seed=3, injector=Injector(cpu=2))
    (tmp_path / "out").mkdir()  # report never creates its directory
    proc = jitterscope("report", str(run), "--out", str(tmp_path / "out" / "noise.html"))
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "out" / "noise.html"
    check, errors = render(browser, page)
    assert errors == []
    ids = {f["id"] for f in check["figures"]}
    assert ids == expected_figures([1, 2])
    for f in check["figures"]:
        assert f["w"] > 100 and f["h"] > 50, f
        assert f["bbw"] > 0 and f["bbh"] > 0, f
        assert f["marks"] >= 5, f  # axes, ticks and the data
        assert svg.read(tmp_path / "out" / f"noise-{f['id']}.svg").marks >= f["marks"]
    assert check["tables"] >= 4


def test_report_without_tracing_still_loads_cleanly(browser, tmp_path):
    run = build_run(tmp_path / "run", cpus=[1], seed=4, tracing=False)
    page = Path(jitterscope("report", str(run), check=True).stdout.strip())
    check, errors = render(browser, page)
    assert errors == []
    ids = {f["id"] for f in check["figures"]}
    # No sources or chains without attribution; the per-CPU figures remain.
    assert {"histogram-cpu1", "timeline-cpu1", "unexplained"} <= ids
    assert all(f["w"] > 100 and f["marks"] >= 5 for f in check["figures"])


def test_cluster_page_on_the_same_base_loads_cleanly(browser, tmp_path):
    run = build_cluster_run(tmp_path / "cluster", injected=1)
    page = Path(jitterscope("report", str(run), check=True).stdout.strip())
    check, errors = render(browser, page)
    assert errors == []  # the base template's CSP lets its own script run, nothing else
    assert [f["id"] for f in check["figures"]] == ["heatmap"]
    assert check["figures"][0]["w"] > 100 and check["figures"][0]["marks"] >= 5
    assert check["tables"] == 3  # nodes, sources by nodes hit, outliers
    assert check["title"].startswith("jitterscope cluster report")
