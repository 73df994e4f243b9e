"""childgroup.own_group: the child leads a process group of its own and stays in our session (a new session is
a new scheduling autogroup, where a busy machine starved it), also with a preexec step of the caller's."""

from __future__ import annotations

import os
import subprocess
import sys

from jitterscope.childgroup import own_group

SHOW = "import os; print(os.getpgid(0), os.getsid(0), os.nice(0))"


def _child(**kw: object) -> tuple[int, list[int]]:
    p = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, check=True, **kw)  # type: ignore[call-overload]
    return p.returncode, [int(x) for x in p.stdout.split()]


def test_own_group_same_session():
    _, (pgid, sid, _) = _child(preexec_fn=own_group())
    assert pgid != os.getpgid(0) and sid == os.getsid(0)


def test_with_the_callers_preexec():
    _, (pgid, sid, nice) = _child(preexec_fn=own_group(lambda: os.nice(5)))
    assert pgid != os.getpgid(0) and sid == os.getsid(0) and nice == os.nice(0) + 5


def test_popen_leads_a_group_in_our_session():
    from jitterscope import childgroup

    p = childgroup.popen([sys.executable, "-c", SHOW], stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=30)
    pgid, sid, _ = (int(x) for x in out.split())
    assert pgid == p.pid and sid == os.getsid(0)
