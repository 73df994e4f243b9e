"""`simulate --model loggopsim`: LogGOPSim's semantics for the bulk-synchronous job, vectorized.

LogGOPSim (Hoefler, Schneider & Lumsdaine, HPDC/LSAP 2010; noise injection in SC'10)
simulates every message of a schedule in the LogGP model.  For P hosts x N phases of a
calc of W ns followed by a dissemination barrier (round k: a 1-byte send to r + 2^k, a
receive from r - 2^k, each send after the previous round's receive) its rules reduce to:

* the CPU (LogGOPSim's `nexto`) runs one operation at a time: a calc for W, a send or
  the reception of a message for o; a message leaves o + L after its send *started*;
* noise is charged once per operation, from the operation's start time t only:
  `get_noise(t, t + len)` in the trace, at the host's offset; the time noise adds is
  never scanned again for further detours;
* in that window, the detour in progress at its start counts with its remainder, but
  only when the window starts after the trace's first detour (the first detour is never
  seen from before it); then every detour starting inside the window counts whole;
* the position in the trace is (t + offset) mod (last start - len), the trace's length
  being the start of its last line;
* each host's offset is uniform in [0, last start) from std::mt19937(seed): the first
  draw is the co-scheduled offset (--noise-cosched), the next P the hosts' own;
* LogGP defaults L = 2500 ns, o = 1500 ns, g = 1000 ns, G = 6 ns/byte: 1-byte messages
  cost no G, and g < o never binds.  Noise-free runtime: N x (W + K x (2o + L)).

A message that arrives while its receiver's CPU is busy waits until the CPU is free; one
that arrives while the CPU waits for the previous round's message is received at once
(its o is spent then, and the round's receive completes as soon as it is posted); where a
waiting message and the round's send are both ready, LogGOPSim's event queue runs the one
queued first (`_round`).  Messages queued behind more than one earlier operation (hosts
several rounds apart, as in loops of bare barriers) are not followed that far: there this
model falls below LogGOPSim (docs/commands/simulate.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.simulate.job import Job, Result, Simulation
from jitterscope.simulate.spec import PeriodicNoise, TraceNoise

L_NS = 2500  # LogGOPSim's defaults (g = 1000 ns and G = 6 ns/byte do not bind here)
O_NS = 1500
MT_MAX = 4294967295.0  # std::mt19937::max()


@dataclass(frozen=True)
class NoiseTrace:
    """A LogGOPSim noise trace: detour starts and durations (ns), in file order."""

    starts: np.ndarray
    durations: np.ndarray

    def __post_init__(self) -> None:
        if len(self.starts) < 2:
            raise ValueError("a LogGOPSim noise trace needs at least two detours (its length is the last start)")
        if np.any(np.diff(self.starts) < 0):
            raise ValueError("LogGOPSim reads a noise trace in order: detour starts must not decrease")
        object.__setattr__(self, "_cum", np.concatenate([[0], np.cumsum(self.durations)]))

    @property
    def length_ns(self) -> int:
        """LogGOPSim's trace length: the start of the last detour."""
        return int(self.starts[-1])

    def noise(self, t: np.ndarray, offset: np.ndarray, length: int | float) -> np.ndarray:
        """Noise LogGOPSim charges to operations of `length` ns starting at t (ns) on hosts
        with these offsets (Noise.hpp get_noise)."""
        span = self.length_ns - int(length)
        if span <= 0:
            raise ValueError(
                f"an operation of {length:g} ns is as long as the noise trace ({self.length_ns} ns); "
                "LogGOPSim divides by zero there"
            )
        start = (t.astype(np.int64) + offset) % span
        s, d, cum = self.starts, self.durations, self._cum  # type: ignore[attr-defined]
        past_first = start > s[0]
        pos = np.where(past_first, np.searchsorted(s, start, side="right") - 1, 0)
        residual = np.where(past_first, np.maximum(s[pos] + d[pos] - start, 0), 0)
        last = np.searchsorted(s, start + int(length), side="left")  # detours starting before the end
        whole = cum[np.maximum(last, pos + 1)] - cum[pos + 1]
        return residual + whole


def periodic_trace(period_ns: float, duration_ns: float, periods: int = 1000) -> NoiseTrace:
    """`duration_ns` at the start of every period, `periods` periods long (periods + 1 lines:
    LogGOPSim's trace ends at its last start)."""
    starts = np.arange(periods + 1, dtype=np.int64) * int(round(period_ns))
    return NoiseTrace(starts, np.full(periods + 1, int(round(duration_ns)), dtype=np.int64))


def trace_text(trace: NoiseTrace, header: list[str] | None = None) -> str:
    """The trace as LogGOPSim reads it: `start<TAB>duration` lines, no trailing newline (a final
    empty line is read as one more detour made of uninitialised values)."""
    lines = [f"# {h}" for h in header or []]
    lines += [f"{a}\t{b}" for a, b in zip(trace.starts.tolist(), trace.durations.tolist())]
    return "\n".join(lines)


def offsets(seed: int, hosts: int, length_ns: int, cosched: bool) -> np.ndarray:
    """The hosts' offsets (ns) exactly as LogGOPSim draws them with std::mt19937(seed)."""
    # RandomState(seed) is seeded as std::mt19937(seed) is (init_genrand), and its full-range
    # uint32 draws are the generator's raw outputs, in order.
    raw = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, size=hosts + 1, dtype=np.uint32)
    draws = raw[:1].repeat(hosts) if cosched else raw[1:]
    return (draws.astype(np.float64) / MT_MAX * float(length_ns)).astype(np.int64)


@dataclass(frozen=True)
class LogGP:
    L: int = L_NS
    o: int = O_NS

    def round_ns(self) -> int:
        return 2 * self.o + self.L


def rounds(hosts: int) -> int:
    return math.ceil(math.log2(hosts) - 1e-12) if hosts > 1 else 0


def run_bsp(
    trace: NoiseTrace | None,
    hosts: int,
    phases: int,
    work_ns: int,
    off: np.ndarray,
    net: LogGP = LogGP(),
) -> np.ndarray:
    """Finishing time (ns) of every host after each phase: shape (phases, batch) of the
    maximum over hosts.  `off` has shape (batch, hosts): one replication per row."""
    o, lat = net.o, net.L
    batch = off.shape[0]
    k_rounds = rounds(hosts)

    def noise(t: np.ndarray, length: int, sel: np.ndarray | None = None) -> np.ndarray:
        if trace is None:
            return np.zeros_like(t)
        return trace.noise(t, off if sel is None else off[sel], length)

    free = np.zeros((batch, hosts), dtype=np.int64)  # LogGOPSim's nexto: the CPU is free from then
    out = np.empty((phases, batch), dtype=np.int64)
    for i in range(phases):
        st = _State(free, free, free, np.full_like(free, _NEVER))  # round 0 became ready at the calc's start
        st.ready = free + work_ns + noise(free, work_ns)
        for k in range(k_rounds):
            st = _round(st, 1 << k, o, lat, noise)
        free = st.ready
        out[i] = free.max(axis=1)
    return out


NoiseFn = Callable[..., np.ndarray]  # (times, length[, hosts selected]) -> noise ns
_NEVER = np.iinfo(np.int64).min // 4


@dataclass
class _State:
    """Per host, after a round: `ready` when the next send may start (the CPU is free),
    `tau` when the event that made it ready happened, `send_end` the end of the round's send
    and `gap_end` the start of its receive when the CPU sat idle before it (else _NEVER)."""

    ready: np.ndarray
    tau: np.ndarray
    send_end: np.ndarray
    gap_end: np.ndarray


def _round(prev: _State, stride: int, o: int, lat: int, noise: NoiseFn) -> _State:
    """One dissemination round on every host (send to r + stride, receive from r - stride).

    Where the round's message waits for the CPU, LogGOPSim's event queue decides the order:
    * it arrived while the CPU sat idle waiting for the previous round's message: it is
      received then, which can delay that message (`early`);
    * it is waiting when the send becomes ready and its sender sent it before the event that
      made the send ready (`tau`; simultaneous operations run in the order they were queued):
      it is received first, and the send starts o later (`first`);
    * otherwise the send goes first and the message is received when both are done.
    Each host's case depends on its partner's send time, which depends on the partner's case:
    iterated to the fixed point (causal, so a few passes)."""
    ready, tau = prev.ready, prev.tau
    first = np.zeros(ready.shape, dtype=bool)
    early = np.zeros(ready.shape, dtype=bool)
    first_end = ready + o + noise(ready, o)  # the waiting message received before the send
    gap = prev.gap_end > _NEVER  # only these hosts can take a message early
    ready2 = ready.copy()
    send = ready
    for _ in range(64):
        sent = np.roll(send, stride, axis=1)  # the partner r - stride's send start
        arrive = sent + o + lat
        b = np.maximum(arrive, prev.send_end)  # when an early message's block would start
        now_early = gap & (b < prev.gap_end)
        now_first = ~now_early & (arrive <= ready) & (sent < tau)
        if np.array_equal(now_first, first) and np.array_equal(now_early, early):
            break
        first, early = now_first, now_early
        if early.any():  # its block, then the previous round's message after it
            bb = b[early]
            m2 = np.maximum(prev.gap_end[early], bb + o + noise(bb, o, early))
            ready2[early] = m2 + o + noise(m2, o, early)
        send = np.where(early, ready2, np.where(first, first_end, ready))
    send_end = send + o + noise(send, o)
    recv = np.maximum(arrive, send_end)
    recv_end = recv + o + noise(recv, o)
    done = first | early  # the message was received before the send: the round ends with it
    return _State(
        ready=np.where(done, send_end, recv_end),
        tau=np.where(done, send_end, recv),
        send_end=send_end,
        gap_end=np.where(~done & (recv > send_end), recv, _NEVER),
    )


TRACE_PERIODS = 1000  # a periodic signature is written as this many periods (LogGOPSim needs a finite trace)


def run_trace(path: str) -> NoiseTrace:
    """A measured run's detours as `export --format loggopsim` writes them (one probed CPU)."""
    from jitterscope.rundir import load_run

    run = load_run(path, kinds=("measure",), purpose="a LogGOPSim noise trace (simulate --model loggopsim)")
    if len(run.cpus) != 1:
        raise JitterscopeError(
            f"{path}: --model loggopsim replays one CPU's noise, as LogGOPSim reads one trace; this run probed "
            f"CPUs {run.cpus} (measure one CPU, or give LogGOPSim `export --format loggopsim --cpu N`)"
        )
    _, start, dur = run.detour_arrays(cpu=run.cpus[0])
    try:
        return NoiseTrace(start.astype(np.int64), dur.astype(np.int64))
    except ValueError as err:
        raise JitterscopeError(f"{path}: {err}") from None


def simulate_loggopsim(spec: PeriodicNoise | TraceNoise, job: Job, overhead_s: float = O_NS / 1e9) -> Simulation:
    """`job` under LogGOPSim's semantics (module docstring).  Replication j uses offsets from
    std::mt19937(seed + j), so LogGOPSim run with that seed simulates the same job exactly."""
    if job.sync != "barrier":
        raise JitterscopeError("--model loggopsim simulates a dissemination barrier only (--sync barrier)")
    if isinstance(spec, PeriodicNoise):
        trace = periodic_trace(spec.period_s * 1e9, spec.duration_s * 1e9, TRACE_PERIODS)
        what = f"{spec.duration_s * 1e6:g} us every {spec.period_s * 1e3:g} ms ({TRACE_PERIODS} periods)"
    else:
        trace = run_trace(str(spec.path))
        what = f"the measured trace of run {spec.path} ({len(trace.starts)} detours)"
    net = LogGP(L=int(round(job.link_latency_s * 1e9)), o=int(round(overhead_s * 1e9)))
    work = int(round(job.phase_s * 1e9))
    if work >= trace.length_ns:
        raise JitterscopeError(
            f"--phase {job.phase_s * 1e3:g} ms is as long as the noise trace ({trace.length_ns / 1e9:g} s): "
            "LogGOPSim divides by zero there; use a longer trace"
        )
    phases = sorted(job.phases)
    results = []
    for n in sorted(job.nodes):
        ends = np.empty((phases[-1], job.replications))
        step = max(1, (1 << 18) // n)  # replications side by side, a few MB per array
        for r0 in range(0, job.replications, step):
            seeds = range(job.seed + r0, job.seed + min(r0 + step, job.replications))
            off = np.stack([offsets(s, n, trace.length_ns, job.cosched) for s in seeds])
            ends[:, r0 : r0 + len(seeds)] = run_bsp(trace, n, phases[-1], work, off, net)
        ideal = net.round_ns() * rounds(n) * 1e-9 + job.phase_s
        for p in phases:
            results.append(Result(n, p, job.phase_s, ends[p - 1] / 1e9, p * ideal))
    model = {
        "kind": "loggopsim",
        "description": (
            f"LogGOPSim's semantics: noise {what} charged once per operation (calc, and the o of sends and "
            f"receives), from {'one shared' if job.cosched else 'independent'} std::mt19937 offsets; "
            f"LogGP L={net.L} ns, o={net.o} ns"
        ),
        "noise": {"spec": spec.text, "detours": len(trace.starts), "length_ns": trace.length_ns},
        "phase_s": job.phase_s,
        "sync": job.sync,
        "link_latency_s": net.L / 1e9,
        "overhead_s": net.o / 1e9,
        "sync_rounds": "ceil(log2 N) rounds of 2o + L",
        "cosched": job.cosched,
        "replications": job.replications,
        "seed": job.seed,
        "spec": spec.text,
    }
    return Simulation(model, results)
