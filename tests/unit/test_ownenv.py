"""jitterscope keeps OpenBLAS (under numpy) to one thread in its own processes (its server threads spin at import,
0.3 CPU-seconds per process on a 2-CPU machine, on any CPU), unless the user chose; a program the user asks
jitterscope to run gets the user's environment, without that setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

THREADS = "import jitterscope, numpy, os; print(len(os.listdir('/proc/self/task')))"
# what a user's program would get from this jitterscope, and from a jitterscope started by it
ENVIRON = (
    "import json, subprocess, sys; from jitterscope.ownenv import program_environ; "
    "child = subprocess.run([sys.executable, '-c', 'import jitterscope, json, os; "
    "from jitterscope.ownenv import program_environ; print(json.dumps(program_environ()))'], "
    "capture_output=True, text=True, check=True).stdout; "
    "print(json.dumps([program_environ({'X': '1'}), json.loads(child)]))"
)


def _run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "JITTERSCOPE_OWN_ENV")}
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts no thread of its own on one CPU")
def test_numpy_under_jitterscope_runs_no_blas_thread_unless_the_user_asks() -> None:
    assert int(_run(THREADS)) == 1
    assert int(_run(THREADS, OPENBLAS_NUM_THREADS="2")) == 2  # the user's setting wins: the check sees a BLAS thread


def test_a_users_program_gets_the_users_environment() -> None:
    ours, from_child = json.loads(_run(ENVIRON))
    for env in (ours, from_child):  # also from a jitterscope started by jitterscope
        assert "OPENBLAS_NUM_THREADS" not in env and "JITTERSCOPE_OWN_ENV" not in env
        assert env["PATH"] == os.environ["PATH"]
    assert ours["X"] == "1"
    ours, from_child = json.loads(_run(ENVIRON, OPENBLAS_NUM_THREADS="3"))
    assert ours["OPENBLAS_NUM_THREADS"] == from_child["OPENBLAS_NUM_THREADS"] == "3"  # the user's own is kept
