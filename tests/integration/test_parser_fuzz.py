"""The trace parser under AddressSanitizer + UndefinedBehaviorSanitizer, and fuzzed.

The sanitized parser (tests/support/sanitize.py) runs on the recorded fixture's pages and must exit
cleanly with no sanitizer report.  The fuzz mutates those pages with a seeded generator for FUZZ_SECONDS
(bytes flipped, page headers' commit words rewritten, pages repeated, reordered, cut short) and runs the
sanitized parser on each, in each of its modes: it may refuse an input (exit 2, one line) but must never
crash, hang or trip a sanitizer.  The seed is printed; JS_FUZZ_SEED replays another one.  Nothing here needs root or the
machine alone, so the file runs beside the others (conftest FREE); test_native_sanitizers.py has the
probe and the interposer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support import sanitize
from tests.support.once import once

pytestmark = pytest.mark.native

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "trace"
PAGE = 4096
COMMIT = 8  # the page header: u64 timestamp, u64 commit word (size | missed-events flags), then data
FUZZ_SECONDS = float(os.environ.get("JS_FUZZ_SECONDS", "12"))
FUZZ_SEED = int(os.environ.get("JS_FUZZ_SEED", "20261125"))
HANG_S = 10.0


@pytest.fixture(scope="module")
def traceparse(tmp_path_factory) -> Path:
    if not sanitize.compiler():
        pytest.skip("no C compiler")
    return once(tmp_path_factory, "sanitized", sanitize.build).traceparse  # test_native_sanitizers's build


def _detours(path: Path, rng: np.random.Generator, span_ns: int) -> Path:
    """Sorted, disjoint (start, end) pairs in ns for --detours: short and long, some past the capture."""
    edges = np.unique(rng.integers(-1000, span_ns + 10**6, 2 * int(rng.integers(0, 400))))
    pairs = edges[: len(edges) // 2 * 2].reshape(-1, 2)
    pairs.astype("<i8").tofile(path)
    return path


def _modes(tmp_path: Path, rng: np.random.Generator) -> list[list[str]]:
    """The parser's modes: every CPU's records; a scan; one CPU attributed to detours (--detours, in ns
    since the fixture's window start at its TSC rate); the last two writing their records out every few
    rows (--spill), as they do past half a million."""
    session = json.loads((FIXTURE / "session.json").read_text())
    t0, (w0, w1), hz = int(session["window"][0]), session["window"], float(session["tsc_hz"])
    det = _detours(tmp_path / "detours.bin", rng, int((w1 - w0) * 1e9 / hz))
    attribute = ["--cpu", "1", "--detours", str(det), "--t0", str(t0), "--ns-per-tick", repr(1e9 / hz)]
    spill = ["--spill", str(int(rng.integers(1, 300)))]
    return [[], ["--scan"], attribute, spill, spill + attribute]


def test_parser_on_the_fixture_pages(traceparse, tmp_path):
    for mode in _modes(tmp_path, np.random.default_rng(FUZZ_SEED)):
        p = subprocess.run(
            [str(traceparse), *mode, str(FIXTURE), str(tmp_path)], capture_output=True, text=True, env=sanitize.env()
        )
        assert not sanitize.reports(p.stderr), f"sanitizer report ({mode}):\n" + p.stderr[-4000:]
        assert p.returncode == 0, f"{mode}: exit {p.returncode}: {p.stderr[-2000:]}"
        counts = (tmp_path / "counts.json").read_text()
        assert '"events": 0' not in counts  # the fixture's events were actually walked
    assert (tmp_path / "pieces.bin").stat().st_size > 0  # the detours met segments


def _mutate(pages: np.ndarray, rng: np.random.Generator) -> bytes:
    """One mutated copy of the capture's pages (an array of shape (n, PAGE), uint8)."""
    out = pages.copy()
    for _ in range(int(rng.integers(1, 4))):
        kind = int(rng.integers(0, 6))
        i = int(rng.integers(0, len(out)))
        if kind == 0:  # flip a few bits anywhere in a page
            at = rng.integers(0, PAGE, int(rng.integers(1, 32)))
            out[i, at] ^= rng.integers(1, 256, len(at), dtype=np.uint8)
        elif kind == 1:  # a random commit word: sizes past the page, the missed-events flags
            words = [int(rng.integers(0, 1 << 63)), PAGE, PAGE - 16, PAGE + 8, (1 << 31) | (1 << 30)]
            word = words[int(rng.integers(0, len(words)))]
            out[i, COMMIT : COMMIT + 8] = np.frombuffer(int(word).to_bytes(8, "little"), np.uint8)
        elif kind == 2:  # random bytes over a run of event data
            a = int(rng.integers(16, PAGE))
            b = min(PAGE, a + int(rng.integers(1, 256)))
            out[i, a:b] = rng.integers(0, 256, b - a, dtype=np.uint8)
        elif kind == 3:  # event headers of one type: padding, time extend/stamp, long or data of any length
            at = np.arange(16, PAGE, 4 * int(rng.integers(1, 16)))
            out[i, at] = (out[i, at] & 0xE0) | rng.choice([0, 1, 29, 30, 31], len(at)).astype(np.uint8)
        elif kind == 4:  # pages repeated and reordered (time running backwards)
            out = out[rng.integers(0, len(out), len(out))]
        else:  # a timestamp from anywhere
            out[i, 0:8] = rng.integers(0, 256, 8, dtype=np.uint8)
    data = out.tobytes()
    if rng.random() < 0.2:  # cut mid-page: the parser reads whole pages only
        data = data[: int(rng.integers(0, len(data)))]
    return data


def test_parser_fuzzed_pages_never_crash_or_hang(traceparse, tmp_path):
    print(f"fuzz seed {FUZZ_SEED} (JS_FUZZ_SEED replays it), {FUZZ_SECONDS:g} s")
    rng = np.random.default_rng(FUZZ_SEED)
    raw = np.frombuffer((FIXTURE / "cpu1.raw").read_bytes(), np.uint8).reshape(-1, PAGE)
    case = tmp_path / "trace"
    shutil.copytree(FIXTURE, case)
    out = tmp_path / "out"
    out.mkdir()
    env = sanitize.env()
    n, refused = 0, 0
    end = time.monotonic() + FUZZ_SECONDS
    while time.monotonic() < end:
        (case / "cpu1.raw").write_bytes(_mutate(raw, rng))
        modes = _modes(tmp_path, rng)
        mode = modes[n % len(modes)]
        try:
            p = subprocess.run(
                [str(traceparse), *mode, str(case), str(out)],
                capture_output=True,
                text=True,
                env=env,
                timeout=HANG_S,
            )
        except subprocess.TimeoutExpired:
            keep = tmp_path / f"hang-{n}.raw"
            shutil.copy(case / "cpu1.raw", keep)
            pytest.fail(f"seed {FUZZ_SEED}, case {n}: the parser ran over {HANG_S:g} s on {keep}")
        if sanitize.reports(p.stderr) or p.returncode not in (0, 2):
            keep = tmp_path / f"crash-{n}.raw"
            shutil.copy(case / "cpu1.raw", keep)
            pytest.fail(f"seed {FUZZ_SEED}, case {n}: exit {p.returncode} on {keep}\n{p.stderr[-4000:]}")
        refused += p.returncode == 2
        n += 1
    print(f"{n} mutated captures parsed, {refused} refused with a message")
    assert n >= 20, f"only {n} cases ran in {FUZZ_SECONDS:g} s"
