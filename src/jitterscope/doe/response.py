"""What one run of an experiment measures: its response y.

Either a `jitterscope measure` on the measured CPUs, reduced to one number from
its summary.json (docs/run-format.md), or the user's own command, whose wall
time or printed number is the response.  The measured workload runs on the
measured CPUs, at SCHED_FIFO if the plan's `fifo` factor says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterscope.childgroup import own_group
from jitterscope.doe.results import ResponseExtra
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.ownenv import program_environ
from jitterscope.rundir import load_run
from jitterscope.units import NUMBER

_NUMBER = re.compile(NUMBER)


def _run_gently(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run measure; on Ctrl-C or a timeout ask it to stop (SIGTERM) so it undoes its own
    changes (trace instance, priorities) before it is killed."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException as exc:
            proc.terminate()
            try:
                proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise JitterscopeError(f"jitterscope measure did not finish within {timeout:.0f} s") from None
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@dataclass
class MeasureResponse:
    cpus: list[int]
    duration_s: float
    metric: str  # noise_ppm | max_ns | total_ns
    source: str | None = None  # kind:name for total_ns
    threshold: str | None = None

    @property
    def unit(self) -> str:
        return {"noise_ppm": "ppm", "max_ns": "ns", "total_ns": "ns"}[self.metric]

    def describe(self) -> str:
        what = f"total_ns of {self.source}" if self.metric == "total_ns" else self.metric
        return f"jitterscope measure on CPU {','.join(map(str, self.cpus))} for {self.duration_s:g} s: {what}"

    def estimate_s(self) -> float:
        return self.duration_s + 1.2  # interpreter and probe start-up, writing the run

    def argv(self, out: Path, fifo: int | None) -> list[str]:
        a = [
            sys.executable,
            "-m",
            "jitterscope",
            "measure",
            "--cpus",
            ",".join(map(str, self.cpus)),
            "--duration",
            f"{self.duration_s}s",
            "--json",
            "--no-report",
            "--out",
            str(out),
        ]
        if self.threshold:
            a += ["--threshold", self.threshold]
        if self.metric != "total_ns":
            # Noise alone needs no attribution, and tracing would add its own overhead to y.
            a.append("--no-trace")
        if fifo is not None:
            a += ["--priority", f"fifo:{fifo}"]
        return a

    def run(self, out: Path, fifo: int | None, journal: Journal | None = None) -> tuple[float, ResponseExtra]:
        proc = _run_gently(self.argv(out, fifo), timeout=self.duration_s * 5 + 120)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise JitterscopeError(f"jitterscope measure failed ({proc.returncode}): {last}")
        # the run as every command reads it: checked, tables present (never a half-written summary)
        summary = load_run(out, kinds=("measure",), purpose="doe").summary
        return self.value(summary), {"run_dir": str(out)}

    def value(self, summary: dict[str, Any]) -> float:
        cpus = summary.get("cpus", {})
        if self.metric == "noise_ppm":
            vals = [float(cpus[str(c)]["noise_ppm"]) for c in self.cpus if str(c) in cpus]
            if not vals:
                raise JitterscopeError("measure summary has no noise_ppm for the measured CPUs")
            return sum(vals) / len(vals)
        if self.metric == "max_ns":
            vals = [float(cpus[str(c)]["max_ns"]) for c in self.cpus if str(c) in cpus]
            if not vals:
                raise JitterscopeError("measure summary has no max_ns for the measured CPUs")
            return max(vals)
        kind, _, name = (self.source or "").partition(":")
        # A source that never took time is absent from the summary: its total is 0, not missing.
        return float(
            sum(
                s.get("total_ns", 0)
                for s in summary.get("sources", [])
                if s.get("kind") == kind and s.get("name") == name
            )
        )


def _kill_group(child: subprocess.Popen[str]) -> None:
    """End the response command's whole process group (what it started too) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.communicate()


@dataclass
class CommandResponse:
    command: list[str] | str  # a string runs through the shell: it is the user's own plan text
    cpus: list[int]
    value_kind: str  # wall_time | stdout
    pattern: str | None = None
    timeout_s: float = 600.0
    estimate: float | None = None

    @property
    def unit(self) -> str:
        return "s" if self.value_kind == "wall_time" else ""

    def describe(self) -> str:
        cmd = self.command if isinstance(self.command, str) else shlex.join(self.command)
        what = "wall time" if self.value_kind == "wall_time" else "number printed"
        return f"{what} of `{cmd}` on CPU {','.join(map(str, self.cpus))}"

    def estimate_s(self) -> float:
        return (self.estimate if self.estimate is not None else self.timeout_s) + 0.1

    def run(self, out: Path, fifo: int | None, journal: Journal | None = None) -> tuple[float, ResponseExtra]:
        """Run the command pinned (and SCHED_FIFO) in a process group of its own, journalled: a timeout,
        Ctrl-C or a kill of jitterscope ends the whole group, never leaving it running, orphaned and pinned."""
        cpus = set(self.cpus)

        def setup() -> None:  # in the child, before exec: place it, then raise its policy
            os.sched_setaffinity(0, cpus)
            if fifo is not None:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(fifo))

        shell = isinstance(self.command, str)
        t0 = time.perf_counter()
        try:
            child = subprocess.Popen(
                self.command,
                shell=shell,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=own_group(setup),
                env=program_environ(),
            )
        except OSError as err:
            raise JitterscopeError(f"cannot run the response command: {err}") from None
        if journal is not None:
            journal.process_group(child.pid)
        try:
            out_text, err_text = child.communicate(timeout=self.timeout_s)
        except BaseException as exc:
            _kill_group(child)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise JitterscopeError(
                    f"response command ran longer than its timeout ({self.timeout_s:g} s); stopped it"
                ) from None
            raise
        proc = subprocess.CompletedProcess(self.command, child.returncode, out_text, err_text)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise JitterscopeError(f"response command exited {proc.returncode}: {last}")
        info: ResponseExtra = {"wall_s": wall}
        if self.value_kind == "wall_time":
            return wall, info
        if self.pattern:
            m = re.search(self.pattern, proc.stdout)
            text = (m.group(1) if m and m.groups() else m.group(0)) if m else None
        else:
            nums = _NUMBER.findall(proc.stdout)
            text = nums[-1] if nums else None
        try:
            return float(text), info  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise JitterscopeError(
                "response command printed no number" + (f" matching {self.pattern!r}" if self.pattern else "")
            ) from None
