"""A one-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd started in the
foreground by the test, with their configuration, munge key, sockets, state and pid files in one
temporary directory, on free ports; stopped and removed afterwards.  Nothing of a system Slurm or
munge (/etc/slurm, /run/munge, ports 6817/6818) is used or touched."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
PROGRAMS = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "srun": "slurm-client"}
NODE = "jsnode"


class SlurmUnavailable(Exception):
    """Slurm could not be started here; the message says what and why."""


@dataclass
class LocalSlurm:
    root: Path
    env: dict[str, str]  # for srun/sinfo: SLURM_CONF and no SLURM_* of an enclosing job
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def log_tail(self, name: str, lines: int = 3) -> str:
        f = self.root / "log" / f"{name}.log"
        text = f.read_text(errors="replace").strip().splitlines() if f.exists() else []
        return " | ".join(text[-lines:]) or "(no log)"


def missing_programs() -> list[str]:
    return [f"{prog} (Debian package {pkg})" for prog, pkg in PROGRAMS.items() if not shutil.which(prog, path=SBIN)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(root: Path, cpus: int, extra: list[str]) -> str:
    host = socket.gethostname().split(".")[0]
    r = str(root)
    return "\n".join(
        [
            "ClusterName=jstest",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r}/run/munge.sock",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/run/slurmctld.pid",
            f"SlurmdPidFile={r}/run/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd.log",
            f"PlugStackConfig={r}/plugstack.conf",
            "MailProg=/bin/true",
            # No cgroups, no CPU binding: the ranks place their probes themselves (docs/commands/cluster.md)
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            # What a site sets so that plain `srun` connects MPI ranks (docs/commands/cluster.md)
            "MpiDefault=pmi2",
            "ReturnToService=2",
            f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
            f"PartitionName=js Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
            *extra,
            "",
        ]
    )


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


@contextmanager
def local_slurm(cpus: int = 2, timeout_s: float = 30.0, extra: list[str] | None = None) -> Iterator[LocalSlurm]:
    """Start the three daemons and wait for the node to be idle; raise SlurmUnavailable saying why not.
    `extra`: more slurm.conf lines (`Prolog=...`)."""
    missing = missing_programs()
    if missing:
        raise SlurmUnavailable("not installed: " + ", ".join(missing) + " (make packages)")
    if os.geteuid() != 0:
        raise SlurmUnavailable("slurmd needs root to start job steps")
    root = Path(tempfile.mkdtemp(prefix="jitterscope-slurm-"))
    root.chmod(0o755)  # munged insists that everyone may reach its socket's directory
    for d, mode in (("munge", 0o700), ("run", 0o755), ("state", 0o700), ("spool", 0o755), ("log", 0o755)):
        (root / d).mkdir(mode=mode)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    (root / "plugstack.conf").write_text("")
    (root / "slurm.conf").write_text(_config(root, cpus, extra or []))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
    env.update(SLURM_CONF=str(root / "slurm.conf"), PATH=SBIN)
    slurm = LocalSlurm(root, env)
    daemons = [
        ("munged", ["munged", "-F", f"--key-file={key}", f"--socket={root}/run/munge.sock",
                    f"--pid-file={root}/run/munged.pid", f"--log-file={root}/log/munged.log",
                    f"--seed-file={root}/munge/seed"]),
        ("slurmctld", ["slurmctld", "-D", "-i"]),
        ("slurmd", ["slurmd", "-D", "-N", NODE]),
    ]  # fmt: skip
    try:
        for name, cmd in daemons:
            with open(root / "log" / f"{name}.out", "wb") as out:
                slurm.procs[name] = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
            if name == "munged":
                _wait(lambda: (root / "run" / "munge.sock").exists(), slurm, name, 10)
        _wait(lambda: _node_state(env) == "idle", slurm, "slurmd", timeout_s)
        yield slurm
    finally:
        for name in ("slurmd", "slurmctld", "munged"):
            if name in slurm.procs:
                _stop(slurm.procs[name])
        shutil.rmtree(root, ignore_errors=True)


def _node_state(env: dict[str, str]) -> str:
    p = subprocess.run(["sinfo", "-h", "-n", NODE, "-o", "%T"], env=env, capture_output=True, text=True, timeout=10)
    return p.stdout.strip() if p.returncode == 0 else ""


def _wait(ready, slurm: LocalSlurm, name: str, timeout_s: float) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not ready():
        dead = [n for n, p in slurm.procs.items() if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            who = dead[0] if dead else name
            why = f"exited with {slurm.procs[who].returncode}" if dead else f"not ready after {timeout_s:.0f} s"
            raise SlurmUnavailable(f"{who} {why}: {slurm.log_tail(who)}")
        time.sleep(0.2)
