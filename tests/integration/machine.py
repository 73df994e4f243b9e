"""Machine states the tests must exercise, set up without disturbing anyone else.

A fresh machine has tracefs unmounted (jitterscope mounts it through its
journal and unmounts it again), and a checkout may sit in a private (0700)
directory such as /root.  CI may run on a machine where tracefs happens to be
mounted and the checkout is world-readable, which would hide both; so these
helpers build the states explicitly, each in a private mount namespace
(`unshare --mount`), so that other work on this shared machine never sees a
mount change:

  in_namespace(script, tracefs="absent")   tracefs unmounted, as on a fresh boot
  in_namespace(script, tracefs="theirs")   tracefs mounted by someone else first
  run_as_nobody(python_args)               Python as uid 65534, with a private
                                           checkout made visible to it (or a skip
                                           naming why not)

The tracefs superblock is the kernel's own, so instances made inside a
namespace are real; only the mount table is private.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACEFS = "/sys/kernel/tracing"
NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]

# Leave no tracefs (nor the debugfs that can automount one) in the namespace;
# a tracefs can be mounted several times over itself, hence the loop.
_UNMOUNT = f"""
while grep -q ' {TRACEFS} ' /proc/self/mounts; do umount {TRACEFS} || exit 97; done
if grep -q ' /sys/kernel/debug ' /proc/self/mounts; then umount -l /sys/kernel/debug || exit 97; fi
"""
_THEIRS = f"mount -t tracefs nodev {TRACEFS} || exit 97\n"
# After the script: what is mounted at the tracefs path now (for the test to check).
_REPORT = f"""
echo "tracefs-after: $(awk '$2 == "{TRACEFS}" {{print $3}}' /proc/self/mounts | tr '\\n' ' ')" >&2
"""


def namespace_reason() -> str | None:
    """Why a private mount namespace cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root to make a private mount namespace"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) not installed"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return f"cannot make a private mount namespace: {probe.stderr.strip()}"
    return None


needs_namespace = pytest.mark.skipif(namespace_reason() is not None, reason=str(namespace_reason()))


def namespace_cmd(script: str, tracefs: str = "absent") -> list[str]:
    """argv running the shell `script` in a private mount namespace with tracefs in the given state."""
    setup = _UNMOUNT + (_THEIRS if tracefs == "theirs" else "")
    body = f"set -u\n{setup}\n( {script}\n)\nrc=$?\n{_REPORT}exit $rc\n"
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", body]


def in_namespace(
    script: str, tracefs: str = "absent", timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `script` there; `.stderr` ends with `tracefs-after: <fstypes>` (empty: not mounted)."""
    proc = subprocess.run(
        namespace_cmd(script, tracefs),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=str(ROOT),
        check=False,
    )
    if proc.returncode == 97:
        pytest.skip(f"cannot set up the tracefs state '{tracefs}' in a private namespace: {proc.stderr.strip()}")
    return proc


def tracefs_after(proc: subprocess.CompletedProcess[str]) -> str:
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("tracefs-after:")]
    assert line, proc.stderr
    return line[-1].removeprefix("tracefs-after:").strip()


def started(run: Path) -> str:
    """Shell: wait (at most 60 s) until a measure into `run` has its probe running."""
    return f"for i in $(seq 600); do [ -s {run}/detours.raw ] && break; sleep 0.1; done"


def say_tracefs(label: str) -> str:
    """Shell: print `<label>=<number of tracefs mounts here>` on stderr."""
    return f'echo "{label}=$(awk \'$3 == "tracefs"\' /proc/self/mounts | wc -l)" >&2'


def js(*args: str) -> str:
    """A shell-quoted jitterscope command line for scripts (this interpreter, this checkout)."""
    import shlex

    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "jitterscope", *args])


# --- the tool as an unprivileged user ----------------------------------------------


def _private(d: Path) -> bool:
    return not os.stat(d).st_mode & 0o001


def _blocking_ancestor(p: Path) -> Path | None:
    """The highest directory on the way to `p`, `p` included, that others cannot enter, or None."""
    for a in [*reversed(p.parents), p]:
        if _private(a):
            return a
    return None


def _what_to_show(block: Path) -> list[Path]:
    """What uid 65534 must see below `block`: the checkout (its directories, if the checkout itself is private:
    a directory keeps its mode when mounted back) and the interpreter's installation."""
    root = [d for d in ROOT.iterdir() if d.is_dir()] if _private(ROOT) else [ROOT]
    tops = (*root, Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve())
    shown = sorted({p for p in tops if p.is_relative_to(block) and p != block})
    return [p for p in shown if not any(p != q and p.is_relative_to(q) for q in shown)]


def _nobody_imports(wrap: list[str], python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*wrap, "setpriv", *NOBODY, python, "-c", "import jitterscope, numpy"],  # the package and its dependencies
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        check=False,
    )


def run_as_nobody(
    python_args: list[str],
    cwd: str,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    python: str = sys.executable,
) -> subprocess.CompletedProcess[str]:
    """Run this Python (or `python`, e.g. another venv's) with `python_args` (e.g. -m
    jitterscope ...) as uid 65534 (skip, naming why, if impossible).

    In a private checkout (itself or an ancestor of mode 0700, e.g. /root) that user cannot
    read the installed package; then, in a private mount namespace, the blocking
    directory is covered by an empty world-readable tmpfs and the checkout (and
    the interpreter and this environment's packages, if they live there too)
    mounted back inside it, so the same files are used, unchanged."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run as an unprivileged user")
    cmd = ["setpriv", *NOBODY, python, *python_args]
    full_env = {**os.environ, **(env or {})}
    if _nobody_imports([], python).returncode == 0:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=full_env, check=False)
    block = _blocking_ancestor(ROOT)
    if block is None:
        pytest.skip(f"uid 65534 cannot import jitterscope with {python}: {_nobody_imports([], python).stderr.strip()}")
    if namespace_reason() is not None:
        pytest.skip(f"the checkout {ROOT} is private to root, and {namespace_reason()} to show it to uid 65534")
    # each mounted back at its own path (not its first directory below `block`, which may be private too, as in
    # /root/ci-0700/js): the directories the tmpfs needs on the way are made there, world-readable
    shown = _what_to_show(block)
    children = [p.relative_to(block) for p in shown]
    holds = [tempfile.mkdtemp(prefix="jitterscope-show-") for _ in children]
    binds = " && ".join(f"mount --bind {block / c} {h}" for c, h in zip(children, holds))
    moves = " && ".join(f"mkdir -p {block / c} && mount --move {h} {block / c}" for c, h in zip(children, holds))
    show = f'{binds} && mount -t tmpfs -o mode=0755 jitterscope-show {block} && {moves} && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", show, "sh"]
    try:
        probe = _nobody_imports(wrap, python)
        if probe.returncode != 0:
            pytest.skip(
                f"the checkout {ROOT} stays unreadable to uid 65534 even with {block} shown: "
                f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}"
            )
        return subprocess.run(
            [*wrap, *cmd], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=full_env, check=False
        )
    finally:
        for h in holds:
            os.rmdir(h)
