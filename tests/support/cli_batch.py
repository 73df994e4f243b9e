"""Run many command lines through cli.main in one process: `python -m tests.support.cli_batch IN OUT`.

The bad-input matrix checks what a user sees for each bad value (exit code, one line, no traceback), not
process start-up, so one Python start-up and one import of the command line serve every case; the process
itself is still separate from pytest so that its address-space limit (prlimit) and the machine-wide checks
around it apply.  IN holds a JSON list of [name, argv]; OUT receives a JSON object name -> [exit code,
stderr, stdout] (a file, not stdout, which the commands may write to).  A case gets 60 s (SIGALRM), so a
hang is reported by name and the rest still run.  Other files check their commands' refusals alike, with
`batch_and_real`: a case or two of each still runs as `python -m jitterscope` beside the batch.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Collection, Sequence
from pathlib import Path

CASE_TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[2]


class _Hung(Exception):
    pass


def _alarm(signum, frame):
    raise _Hung


def run_one(argv: list[str], timeout: int) -> tuple[int | None, str, str]:
    from jitterscope.cli import main

    err, out = io.StringIO(), io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code: int | None = main(argv)
            except SystemExit as e:  # argparse's own exits
                code = int(e.code or 0) if not isinstance(e.code, str) else 1
    except _Hung:
        return None, f"timed out after {timeout} s (it did not fail before working)", out.getvalue()
    except BaseException:  # what a user would see as a traceback
        return 1, err.getvalue() + traceback.format_exc(), out.getvalue()
    finally:
        signal.alarm(0)
    return code, err.getvalue(), out.getvalue()


def batch(
    cases: Sequence[tuple[str, list[str]]], tmp: Path, env: dict[str, str] | None = None, prefix: Sequence[str] = ()
) -> dict[str, tuple[int | None, str]]:
    """(exit code, stderr) of every case, run in this order through cli.main in one process started from `tmp`
    (`prefix`: a command it runs under, e.g. prlimit)."""
    return {name: (code, err) for name, (code, err, _) in batch_with_stdout(cases, tmp, env, prefix).items()}


def batch_with_stdout(
    cases: Sequence[tuple[str, list[str]]], tmp: Path, env: dict[str, str] | None = None, prefix: Sequence[str] = ()
) -> dict[str, tuple[int | None, str, str]]:
    """`batch`, keeping each case's stdout too: (exit code, stderr, stdout)."""
    (tmp / "cases.json").write_text(json.dumps(list(cases)))
    subprocess.run(
        [*prefix, sys.executable, "-m", "tests.support.cli_batch", str(tmp / "cases.json"), str(tmp / "out.json")],
        check=True,
        timeout=CASE_TIMEOUT * len(cases),
        env={**(env or os.environ), "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"},
        cwd=tmp,
    )
    return {name: (code, err, out) for name, (code, err, out) in json.loads((tmp / "out.json").read_text()).items()}


REAL = " (python -m jitterscope)"


def batch_and_real(
    cases: Sequence[tuple[str, list[str]]],
    real: Collection[str],
    tmp: Path,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> dict[str, tuple[int | None, str, str]]:
    """`batch_with_stdout`, and the cases named in `real` also run as the real tool, `python -m jitterscope` (the
    entry point's own start-up and exit path, as a user runs it), each started beside the batch from `tmp` with
    `env`, all under `prefix` (e.g. prlimit); those outcomes are under "NAME (python -m jitterscope)" (REAL)."""
    argvs = dict(cases)
    procs = {
        name: subprocess.Popen(
            [*prefix, sys.executable, "-m", "jitterscope", *argvs[name]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp,
        )
        for name in real
    }
    got: dict[str, tuple[int | None, str, str]] = {}
    try:
        got.update(batch_with_stdout(cases, tmp, env, prefix))
    finally:  # (a failed batch still ends and reaps them)
        for name, proc in procs.items():
            try:
                out, err = proc.communicate(timeout=CASE_TIMEOUT)
                got[name + REAL] = (proc.returncode, err, out)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                got[name + REAL] = (None, f"timed out after {CASE_TIMEOUT} s (it did not fail before working)", out)
    return got


def main() -> int:
    cases = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps({name: run_one(argv, CASE_TIMEOUT) for name, argv in cases}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
