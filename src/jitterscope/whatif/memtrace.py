"""Memory traces of a program for `whatif cache`: captured with valgrind's lackey (`--trace-mem=yes`),
kept as a .npy of uint64 words (byte address << 2 | op; op 0 load, 1 store, 2 modify, 3 instruction;
native/js_cachesim.h) with a JSON sidecar (`TRACE.json`: command, counts).  A lackey log can be read
directly too.  The application's user-space accesses only: a guest cannot trace kernel memory."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import TypedDict

import numpy as np

from jitterscope import boundedio
from jitterscope.atomic import atomic_path
from jitterscope.errors import JitterscopeError
from jitterscope.ownenv import program_environ
from jitterscope.whatif import lackey

CHUNK = 1 << 20


def load(path: Path) -> np.ndarray:
    """A trace from `whatif capture` (.npy) or a lackey log; one-line error for anything else."""
    boundedio.check_file(path, "trace", boundedio.NO_CAP)  # a .npy is mapped, a log streamed: any size
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as err:
        raise JitterscopeError(f"{path}: cannot read the trace ({err.strerror})") from None
    if head.startswith(b"\x93NUMPY"):
        try:
            a = np.load(path, mmap_mode="r")
        except (ValueError, OSError) as err:
            raise JitterscopeError(f"{path}: corrupt trace ({err})") from None
        if a.dtype != np.uint64 or a.ndim != 1:
            raise JitterscopeError(f"{path}: a .npy of {a.dtype} {a.shape}, not a trace (1-D uint64 words)")
        return a
    with open(path, "rb") as f:
        words, seen, junk = lackey.parse(f, instructions=False, limit=1 << 34)
    if not seen or junk > seen:
        raise JitterscopeError(
            f"{path}: unknown trace format (expected a .npy from `jitterscope whatif capture` "
            "or a valgrind --tool=lackey --trace-mem=yes log)"
        )
    return words


class Captured(TypedDict):
    """The trace's sidecar (OUT.json), also what `whatif capture --json` prints."""

    format: str
    version: int
    command: list[str]
    exit_code: int
    accesses: int  # kept in the trace
    recorded: int  # seen (instruction fetches included)
    truncated: bool  # cut at the limit
    instructions: bool
    lines: int  # distinct lines touched


def capture(cmd: list[str], out: Path, limit: int, instructions: bool) -> Captured:
    """Run CMD under lackey, write the trace (first `limit` accesses) and its sidecar; the program's exit code."""
    vg = shutil.which("valgrind")
    if vg is None:
        raise JitterscopeError("valgrind is not installed (apt-get install valgrind): capture needs its lackey tool")
    r, w = os.pipe()
    argv = [vg, "--tool=lackey", "--trace-mem=yes", f"--log-fd={w}", *cmd]
    proc = subprocess.Popen(argv, pass_fds=(w,), env=program_environ())
    os.close(w)
    interrupted = False
    with os.fdopen(r, "rb", buffering=CHUNK) as pipe:
        try:
            # one word more than the limit tells a trace cut at the limit from one that just fits (`seen` also
            # counts the instruction fetches lackey prints, which are not kept without --instructions)
            words, seen, _ = lackey.parse(pipe, instructions, limit + 1)
            code = proc.wait()
        except KeyboardInterrupt:
            interrupted = True
            proc.send_signal(signal.SIGINT)
            code = proc.wait()
            words, seen = np.zeros(0, np.uint64), 0
    if interrupted:
        raise JitterscopeError("capture interrupted: no trace written", exit_code=130)
    if seen == 0:
        raise JitterscopeError(
            f"valgrind recorded no memory access of {cmd[0]!r} (exit code {code}): is it a program valgrind can run?"
        )
    truncated = len(words) > limit
    words = words[:limit]
    with atomic_path(out) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, words)
    info: Captured = {
        "format": "jitterscope-memtrace",
        "version": 1,
        "command": cmd,
        "exit_code": code,
        "accesses": int(len(words)),
        "recorded": int(seen),
        "truncated": truncated,
        "instructions": instructions,
        "lines": int(len(np.unique(words >> np.uint64(8)))) if len(words) else 0,
    }
    with atomic_path(Path(f"{out}.json")) as tmp:
        Path(tmp).write_text(json.dumps(info, indent=2) + "\n")
    return info
