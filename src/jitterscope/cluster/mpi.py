"""MPI for the cluster commands: lazy mpi4py, node identity, and collectives with deadlines.

Nothing here is imported by `import jitterscope`; mpi4py is imported only when a
cluster command runs.  Every collective is built from non-blocking MPI calls
polled against a deadline, so a rank that dies or hangs turns into a one-line
error naming the missing ranks, followed by MPI_Abort — never a hang.

Point-to-point messages to and from rank 0 are used for the gathers (rather
than MPI_Igather) so that, when the deadline passes, rank 0 knows *which*
ranks did not arrive and can say so.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import socket
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError

MPI_HINT = (
    "cluster commands need MPI (mpi4py and an MPI library): in a source checkout run `make mpi` "
    "(or .venv/bin/pip install -e '.[mpi]'), then: .venv/bin/mpiexec -n N jitterscope cluster ..."
)
NODE_ENV = "JITTERSCOPE_NODE_NAME"
_TAG_BASE = 7100
T = TypeVar("T")


class ClusterTimeout(JitterscopeError):
    """A collective did not complete before its deadline."""


def load_mpi() -> Any:
    """mpi4py's MPI module, or a one-line error saying how to get it."""
    try:  # lazy: importing mpi4py initialises MPI, which only cluster commands may do
        from mpi4py import MPI
    except ImportError:
        raise JitterscopeError(MPI_HINT) from None
    except Exception as err:  # mpi4py present but libmpi missing or broken
        raise JitterscopeError(f"mpi4py cannot start MPI ({str(err).splitlines()[0]}); {MPI_HINT}") from None
    return MPI


def unwired_launch(size: int, env: Mapping[str, str] = os.environ) -> str | None:
    """Why this process is wrongly alone, or None: `srun` started several tasks, but without a PMI
    plugin (`--mpi=none`, Slurm's default) MPI starts each one as a job of its own, and every task
    would measure and write a cluster run of one node."""
    try:
        tasks = int(env.get("SLURM_STEP_NUM_TASKS", "1"))
    except ValueError:
        return None
    # A PMI server in the environment means a launcher did connect this process (e.g. mpiexec inside an allocation)
    if size != 1 or tasks <= 1 or any(k in env for k in ("PMI_FD", "PMI_RANK", "PMIX_RANK")):
        return None
    return (
        f"srun started {tasks} tasks but MPI sees each one alone: srun did not connect them to MPI; "
        f"use `srun --mpi=pmi2 ...` (or set MpiDefault=pmi2 in slurm.conf), or run mpiexec inside the allocation"
    )


def node_name(rank: int) -> str:
    """The node identity of this rank: the host name, or $JITTERSCOPE_NODE_NAME.

    The override (with `{rank}` replaced by the world rank) lets one machine
    stand in for several nodes in tests and demonstrations; real clusters need
    nothing set.
    """
    override = os.environ.get(NODE_ENV)
    if override:
        return override.replace("{rank}", str(rank))
    return socket.gethostname()


SHM_PREFIX = "/dev/shm/mpich_shm_"


def forget_shared_memory() -> list[str]:
    """Unlink the names of the MPICH shared-memory segments this rank has mapped; return them.  MPICH removes
    them in MPI_Finalize only: a job ended by MPI_Abort (a rank that failed or hung, `fail`) or a rank killed
    with SIGKILL left 1-2 MB in /dev/shm on its host for good.  Called once every rank is past MPI_Init, when
    every rank of a host has mapped its host's segment: the memory stays until the last rank unmaps it, and
    MPI_Finalize ignores the name being gone.  Every rank of a host calls it; the first one's unlink wins."""
    try:
        maps = boundedio.read_text("/proc/self/maps", "this process's memory map", 64 << 20)
    except JitterscopeError:
        return []
    names = sorted({p for line in maps.splitlines() if (p := line.rsplit(" ", 1)[-1]).startswith(SHM_PREFIX)})
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
    return names


@dataclass
class Cluster:
    """This rank's view of the MPI job."""

    comm: Any
    rank: int
    size: int
    timeout_s: float
    command: str
    node: str = ""
    real_host: str = ""
    local_rank: int = 0
    local_size: int = 1
    peers: list[dict[str, Any]] = field(default_factory=list)
    _seq: int = 0

    # -- start ---------------------------------------------------------------------
    @classmethod
    def start(cls, command: str, timeout_s: float) -> Cluster:
        MPI = load_mpi()
        comm = MPI.COMM_WORLD
        unwired = unwired_launch(comm.Get_size())
        if unwired:
            if os.environ.get("SLURM_PROCID", "0") != "0":
                raise SystemExit(2)  # the first task says why, once for the job
            raise JitterscopeError(unwired)
        c = cls(comm=comm, rank=comm.Get_rank(), size=comm.Get_size(), timeout_s=timeout_s, command=command)
        c.node = node_name(c.rank)
        c.real_host = socket.gethostname()
        c.peers = c.run(
            lambda: c.allgather_json(
                {"rank": c.rank, "node": c.node, "real_host": c.real_host, "pid": os.getpid()}, "start-up"
            )
        )
        same = [p["rank"] for p in c.peers if p["real_host"] == c.real_host]
        c.local_rank, c.local_size = same.index(c.rank), len(same)
        forget_shared_memory()  # every rank is past MPI_Init: each has the segments mapped
        return c

    # -- failing the whole job --------------------------------------------------------
    def fail(self, message: str) -> NoReturn:
        """Say what went wrong in one line, then end every rank (MPI_Abort)."""
        sys.stdout.flush()
        print(f"jitterscope: error: {message}", file=sys.stderr, flush=True)
        if self.size > 1:
            # Give mpiexec's I/O forwarder time to pass the line on: MPI_Abort
            # tears the job down at once and can swallow what was just written.
            time.sleep(0.5)
            self.comm.Abort(2)
        raise SystemExit(2)

    def every_rank(self, prepare: Callable[[], T], rank: Callable[[Cluster, T], Path | None]) -> Path | None:
        """Every rank checks its options (`prepare`) and does its part (`rank`); rank 0 returns the
        run directory it wrote, the others None."""
        opts = self.run(prepare)
        return self.run(lambda: rank(self, opts))

    def run(self, fn: Callable[[], T]) -> T:
        """Run fn; any failure on this rank ends the whole job with a clear message."""
        where = f"cluster {self.command}: rank {self.rank}" + (f" on {self.node}" if self.node else "")
        try:
            return fn()
        except ClusterTimeout as err:
            self.fail(f"cluster {self.command}: {err}")
        except JitterscopeError as err:
            self.fail(f"{where}: {err}")
        except KeyboardInterrupt:
            self.fail(f"{where}: interrupted")
        except Exception as err:  # a bug: keep the traceback, still end every rank
            traceback.print_exc(file=sys.stderr)
            self.fail(f"{where}: internal error: {type(err).__name__}: {err}")

    def describe(self, ranks: list[int]) -> str:
        names = {p["rank"]: p["node"] for p in self.peers}
        shown = ", ".join(f"{r}" + (f" ({names[r]})" if r in names else "") for r in ranks[:8])
        more = f" and {len(ranks) - 8} more" if len(ranks) > 8 else ""
        return f"rank{'s' if len(ranks) > 1 else ''} {shown}{more}"

    @staticmethod
    def _they(ranks: list[int]) -> str:
        return "it" if len(ranks) == 1 else "they"

    # -- polling ------------------------------------------------------------------------
    def _tag(self) -> int:
        self._seq += 1  # every rank makes the same sequence of calls, so tags match
        return _TAG_BASE + self._seq % 20000

    @staticmethod
    def _poll(test: Callable[[], bool], deadline: float, spin: bool) -> bool:
        """Poll until test() is true or the deadline passes.  spin=True never sleeps
        (a real BSP synchronization); otherwise back off to 20 ms so waiting ranks
        leave the CPUs to the measurement."""
        pause = 0.0005
        checks = 0
        while not test():
            checks += 1
            if spin:
                if checks % 1024 == 0 and time.monotonic() > deadline:
                    return False
                continue
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return True

    # -- collectives ----------------------------------------------------------------------
    def gather_bytes(self, payload: bytes, what: str, timeout_s: float | None = None) -> list[bytes] | None:
        """Rank 0 receives every rank's payload (in rank order); others get None."""
        MPI = load_mpi()
        tag = self._tag()
        limit = self.timeout_s if timeout_s is None else timeout_s
        data = np.frombuffer(payload, dtype=np.uint8) if payload else np.zeros(0, np.uint8)
        if self.rank != 0:
            size = np.array([data.size], dtype=np.int64)
            reqs = [self.comm.Isend(size, dest=0, tag=tag), self.comm.Isend(data, dest=0, tag=tag + 1)]
            # Rank 0 may itself wait up to `limit` for the slowest rank: give it time to speak first.
            if not self._poll(lambda: bool(MPI.Request.Testall(reqs)), time.monotonic() + 1.5 * limit + 5, False):
                raise ClusterTimeout(
                    f"rank {self.rank} ({self.node}) could not hand its {what} to rank 0 "
                    f"within {1.5 * limit + 5:.0f} s: rank 0 failed or hangs"
                )
            return None
        sizes = np.zeros((self.size, 1), dtype=np.int64)
        size_reqs = [self.comm.Irecv(sizes[r], source=r, tag=tag) for r in range(1, self.size)]
        deadline = time.monotonic() + limit
        if not self._poll(lambda: bool(MPI.Request.Testall(size_reqs)), deadline, False):
            missing = [r for r, q in zip(range(1, self.size), size_reqs) if not q.Test()]
            raise ClusterTimeout(
                f"{self.describe(missing)} did not deliver {what} within {limit:.0f} s "
                f"(--timeout): {self._they(missing)} failed or hang{'s' if len(missing) == 1 else ''}"
            )
        bufs = [np.empty(int(sizes[r, 0]), dtype=np.uint8) for r in range(self.size)]
        bufs[0] = data
        data_reqs = [self.comm.Irecv(bufs[r], source=r, tag=tag + 1) for r in range(1, self.size)]
        if not self._poll(lambda: bool(MPI.Request.Testall(data_reqs)), time.monotonic() + limit, False):
            missing = [r for r, q in zip(range(1, self.size), data_reqs) if not q.Test()]
            raise ClusterTimeout(f"{self.describe(missing)} stopped sending {what} (waited {limit:.0f} s)")
        return [b.tobytes() for b in bufs]

    def bcast_bytes(self, payload: bytes | None, what: str, timeout_s: float | None = None) -> bytes:
        """Rank 0's payload on every rank."""
        MPI = load_mpi()
        tag = self._tag()
        limit = self.timeout_s if timeout_s is None else timeout_s
        if self.rank == 0:
            data = np.frombuffer(payload or b"", dtype=np.uint8)
            size = np.array([data.size], dtype=np.int64)
            reqs = []
            for r in range(1, self.size):
                reqs += [self.comm.Isend(size, dest=r, tag=tag), self.comm.Isend(data, dest=r, tag=tag + 1)]
            if not self._poll(lambda: bool(MPI.Request.Testall(reqs)), time.monotonic() + limit, False):
                missing = [
                    r for i, r in enumerate(range(1, self.size)) if not (reqs[2 * i].Test() and reqs[2 * i + 1].Test())
                ]
                raise ClusterTimeout(
                    f"{self.describe(missing)} did not take {what} within {limit:.0f} s: "
                    f"{self._they(missing)} failed or hang{'s' if len(missing) == 1 else ''}"
                )
            return payload or b""
        size = np.zeros(1, dtype=np.int64)
        req = self.comm.Irecv(size, source=0, tag=tag)
        wait = 1.5 * limit + 5
        if not self._poll(req.Test, time.monotonic() + wait, False):
            raise ClusterTimeout(
                f"rank {self.rank} ({self.node}) got no {what} from rank 0 within {wait:.0f} s: rank 0 failed or hangs"
            )
        buf = np.empty(int(size[0]), dtype=np.uint8)
        req = self.comm.Irecv(buf, source=0, tag=tag + 1)
        if not self._poll(req.Test, time.monotonic() + wait, False):
            raise ClusterTimeout(f"rank 0 stopped sending {what} to rank {self.rank} (waited {wait:.0f} s)")
        return buf.tobytes()

    def allgather_json(self, obj: Any, what: str) -> list[Any]:
        got = self.gather_bytes(json.dumps(obj).encode(), what)
        everyone = json.dumps([json.loads(b) for b in got]).encode() if got is not None else None
        return list(json.loads(self.bcast_bytes(everyone, what)))

    def checkpoint(self, what: str, timeout_s: float | None = None) -> None:
        """A barrier that names the ranks that never reached it."""
        self.gather_bytes(b"", what, timeout_s)
        self.bcast_bytes(b"", what, timeout_s)

    def bcast_obj(self, obj: Any, what: str) -> Any:
        return pickle.loads(self.bcast_bytes(pickle.dumps(obj) if self.rank == 0 else None, what))
