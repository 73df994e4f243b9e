"""Other jitterscope probes on this machine, and how a run names their threads.

Two probes on one CPU each see the other as noise.  A run recognises its own
threads by thread id (collected by the lifecycle when the probe starts and when
it stops), never by name: a second probe's `js-probe/1` thread has the same name
as ours.  So in a run:

* our probe threads (`js-probe/N`, our tids) own time the probe lost without
  anything the kernel saw running: `unexplained` (hypervisor, SMI);
* our other threads (the Python process, the probe's writer) get the suffix
  ` (jitterscope)`: the tool's own overhead, shown apart;
* threads of *another* jitterscope (its probe threads, writer, Python process:
  jitterscope's thread names, not our tids) get ` (another jitterscope)`: a
  named source, with its time, never blamed on the hypervisor.

We chose to name the other probe rather than refuse to start: a probe that does
not take part in a locking protocol (an older jitterscope, one in another
container, a cluster rank sharing a CPU on purpose) is still recognised, and the
run still says where its time went.  `measure` also warns at the start, naming
the other probe's process and run directory, so the user can choose other CPUs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope.measure.probe_format import THREAD_COMM_PREFIX, WRITER_COMM

SELF_SUFFIX = " (jitterscope)"
OTHER_SUFFIX = " (another jitterscope)"
PROBE_THREAD = re.compile(rf"^{re.escape(THREAD_COMM_PREFIX)}(\d+)$")
# comms of jitterscope's processes and threads: probe threads, the probe's writer (its main
# thread), the probe binary before it names itself (15 characters of jitterscope-probe),
# and a jitterscope command's Python process
TOOL_COMMS = rf"^({re.escape(THREAD_COMM_PREFIX)}\d+|{re.escape(WRITER_COMM)}|jitterscope-pro|jitterscope)$"


def name_threads(
    names: pa.Array, kinds: pa.Array, pids: np.ndarray, own: set[int], probe_tids: dict[int, int] | None = None
) -> pa.Array:
    """Thread names as the run shows them (see the module docstring).

    `probe_tids` ({tid: cpu}) name our probe threads by id: a probe thread switched in before it
    named itself keeps the binary's comm in the trace for as long as it spins, which would
    otherwise turn its own lost time into the tool's overhead."""
    if len(names) == 0 or not own:
        return names
    thread = np.asarray(pc.equal(kinds, "thread").to_numpy(zero_copy_only=False))
    if probe_tids:
        pids = np.asarray(pids)
        mapped = thread & np.isin(pids, list(probe_tids))
        if mapped.any():
            tids = np.array(sorted(probe_tids))
            comms = np.array([f"{THREAD_COMM_PREFIX}{probe_tids[int(t)]}" for t in tids], dtype=object)
            canonical = np.full(len(pids), None, dtype=object)  # array passes: activity can hold millions of rows
            canonical[mapped] = comms[np.searchsorted(tids, pids[mapped])]
            names = pc.if_else(pa.array(mapped), pa.array(canonical, pa.string()), names.cast(pa.string()))
    ours = thread & np.isin(pids, list(own))
    probe = np.asarray(pc.match_substring_regex(names, PROBE_THREAD.pattern).to_numpy(zero_copy_only=False))
    tool = np.asarray(pc.match_substring_regex(names, TOOL_COMMS).to_numpy(zero_copy_only=False))
    mine = ours & ~probe
    other = thread & ~ours & tool
    if not (mine.any() or other.any()):
        return names
    suffix = pc.if_else(pa.array(mine), SELF_SUFFIX, pc.if_else(pa.array(other), OTHER_SUFFIX, ""))
    return pc.binary_join_element_wise(names, suffix, "")


@dataclass
class OtherProbe:
    pid: int
    cpus: list[int]
    run_dir: str | None


def other_probes(cpus: list[int], me: int | None = None) -> list[OtherProbe]:
    """Running jitterscope probes (not ours) measuring any of `cpus`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            if (d / "comm").read_text().strip() not in (WRITER_COMM, "jitterscope-pro"):
                continue
            theirs = sorted(
                int(m.group(1))
                for t in (d / "task").iterdir()
                if (m := PROBE_THREAD.match((t / "comm").read_text().strip()))
            )
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:  # it ended while we looked
            continue
        if set(theirs) & set(cpus):
            raw = next((a.decode(errors="replace") for a in argv if a.endswith(b"detours.raw")), None)
            found.append(OtherProbe(int(d.name), theirs, os.path.dirname(raw) if raw else None))
    return found


def warning(cpus: list[int]) -> str | None:
    """One line naming another probe on these CPUs, or None."""
    others = other_probes(cpus)
    if not others:
        return None
    o = others[0]
    shared = sorted(set(o.cpus) & set(cpus))
    where = f", run {o.run_dir}" if o.run_dir else ""
    return (
        f"jitterscope: warning: another jitterscope probe (pid {o.pid}{where}) is measuring CPU "
        f"{','.join(map(str, shared))}: each run will show the other as a source "
        f"'thread:js-probe/N{OTHER_SUFFIX}'; choose other --cpus for clean figures"
    )
