"""Trace-driven engine: every node replays a noise timeline (a measured CPU's, or a
periodic signature), vectorized over nodes.

Per phase, every node i does W of work from its own start time t_i on its own
timeline (shifted by a random offset o_i, or one shared offset with --cosched):
t_i <- A^-1(A(t_i + o_i) + W) - o_i (see `timeline`).  Then the nodes synchronize:

* barrier: dissemination barrier (Hensgen, Finkel & Manber, Int. J. Parallel
  Programming 17(1), 1988): in round r node i waits for node i - 2^r (mod N),
  then spends L on its own timeline: t_i <- finish(max(t_i, t_(i-2^r)), L);
* allreduce: recursive doubling (Thakur, Rabenseifner & Gropp, IJHPCA 19(1),
  2005): partner i XOR 2^r (folded mod N when N is not a power of two), same update;
* none: every node starts the next phase when the last one finished.

A round of L on a node costs exactly L unless a detour starts before it ends, so
each node carries the start of its next detour and only nodes whose round reaches
it are recomputed (the same for phases): exact, and most rounds cost a few
vector operations.  The runtime of P phases is the latest node's time after phase
P's synchronization; shorter phase counts are prefixes of the same run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from jitterscope.humanize import count, seconds
from jitterscope.simulate.job import Job, Result, Simulation
from jitterscope.simulate.timeline import Timeline


@dataclass
class _Group:
    timeline: Timeline
    idx: np.ndarray  # nodes replaying this timeline
    offset: np.ndarray  # their offsets (ns)


def _advance(groups: list[_Group], start: np.ndarray, work: float, nxt: np.ndarray) -> np.ndarray:
    """End times of `work` ns started at `start` (global ns) on every node; updates nxt."""
    end = start + work
    need = end > nxt
    if not need.any():
        return end
    for g in groups:
        sel = g.idx[need[g.idx]] if len(groups) > 1 else np.flatnonzero(need)
        if len(sel) == 0:
            continue
        off = g.offset[sel]
        fin, nx = g.timeline.finish(start[sel] + off, work)
        end[sel] = fin - off
        nxt[sel] = nx - off
    return end


PLACEMENTS = ("random", "own", "recorded")
# Replications are simulated side by side, as rows of a batch x nodes array, up to this many
# node-replications at once: a phase then costs a few vector operations for all of them
# instead of one Python round per replication (2 nodes x 300 phases x 100 replications went
# from 27 s to well under a second), while a 10^6-node job still fits in a few MB per array.
BATCH_ELEMENTS = 1 << 18


def _place(
    rng: np.random.Generator,
    timelines: Sequence[Timeline],
    periods: np.ndarray,
    placement: str,
    together: np.ndarray,
    n: int,
    n_sim: int,
    batch: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Which timeline each simulated node replays, and from which offset (ns).  With "own", the nodes with
    one value in `together` share one offset per replication, within the shortest of their timelines."""
    if placement == "recorded":
        return np.tile(np.arange(n), batch), np.zeros(batch * n)
    if placement == "own":
        groups = int(together.max()) + 1
        span = np.array([periods[together == g].min() for g in range(groups)])
        offs = rng.random((batch, groups)) * span  # row-major: one node per group draws as it did alone
        return np.tile(np.arange(n), batch), offs[:, together].ravel()
    # random: each simulated node (one per replication when co-scheduled) draws a timeline and an offset
    which = rng.integers(len(timelines), size=batch * n_sim)
    return which, rng.random(batch * n_sim) * periods[which]


def _synchronize(
    groups: list[_Group], t: np.ndarray, nxt: np.ndarray, sync: str, rounds: int, batch: int, n_sim: int, lat_ns: float
) -> np.ndarray:
    """The end of a phase: every node leaves at the time of the barrier's (or allreduce's) last
    round, each round waiting for its partner and then the link latency (noise included)."""
    if sync == "none":
        rows = t.reshape(batch, n_sim)  # a view: one row per replication
        rows[:] = rows.max(axis=1, keepdims=True)
        return t
    partner = np.arange(n_sim) if sync == "allreduce" and n_sim > 1 else None
    for r in range(rounds):
        rows = t.reshape(batch, n_sim)
        if n_sim == 1:
            m = t
        elif sync == "barrier":
            m = np.maximum(rows, np.roll(rows, 1 << r, axis=1)).ravel()
        else:
            assert partner is not None
            m = np.maximum(rows, rows[:, (partner ^ (1 << r)) % n_sim]).ravel()
        t = _advance(groups, m, lat_ns, nxt)
    return t


def simulate_timelines(
    timelines: Sequence[Timeline],
    job: Job,
    model: dict,
    progress: Callable[[float], None] | None = None,
    placement: str = "random",
    hosts: Sequence[str] | None = None,
) -> Simulation:
    """Simulate the job with nodes replaying `timelines`.

    placement "random": node i replays a randomly chosen timeline (what a run of
    a few CPUs says about a large cluster); "own": node i replays timelines[i]
    (a measured cluster predicted node by node: one noisy node stays one noisy
    node), from a random offset; "recorded": timelines[i] from offset 0, the
    measured run itself pushed through the model (every replication is the same).
    With "own" and "recorded" every job size must equal len(timelines).

    `hosts` (with "own"): the machine each timeline was recorded on.  Timelines of one machine share
    their offset, so what struck its CPUs together still does (the kernel's fair server stalls every
    SCHED_FIFO rank of a busy machine at nearly the same moment, once a second); shifted apart, it
    would delay the job once per CPU.  Without `hosts` every timeline has its own offset, or with
    `job.cosched` all share one."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}")
    own = placement != "random"
    if own and any(n != len(timelines) for n in job.nodes):
        raise ValueError(f"placement {placement!r} needs one node per timeline ({len(timelines)})")
    if hosts is not None and len(hosts) != len(timelines):
        raise ValueError(f"{len(hosts)} hosts for {len(timelines)} timelines")
    if job.cosched:
        together = np.zeros(len(timelines), dtype=np.int64)
    elif hosts is not None:
        together = np.unique(np.asarray(hosts, dtype=object), return_inverse=True)[1].astype(np.int64)
    else:
        together = np.arange(len(timelines))
    phases = sorted(job.phases)
    nodes = sorted(job.nodes)
    work_ns = job.phase_s * 1e9
    lat_ns = job.link_latency_s * 1e9
    results: list[Result] = []
    # Co-scheduled nodes replaying one timeline are identical: one stands for all.
    merged = job.cosched and not own
    total_units = sum(1 if merged else n for n in nodes) * phases[-1] * job.replications
    done_units = 0.0
    notes: list[str] = []
    periods = np.array([tl.period_ns for tl in timelines])
    for n in nodes:
        rng = np.random.default_rng([job.seed, n, 1])
        rounds = job.rounds(n)
        n_sim = 1 if merged else n
        full = max(BATCH_ELEMENTS // n_sim, 1)  # replications per batch
        runtimes = np.zeros((len(phases), job.replications))
        for rep in range(0, job.replications, full):
            batch = min(full, job.replications - rep)
            which, offs = _place(rng, timelines, periods, placement, together, n, n_sim, batch)
            groups = [
                _Group(tl, np.flatnonzero(which == k), offs) for k, tl in enumerate(timelines) if (which == k).any()
            ]
            t = np.zeros(batch * n_sim)
            nxt = np.full(batch * n_sim, -np.inf)  # unknown: first phase computes it for everyone
            pi = 0
            for k in range(1, phases[-1] + 1):
                t = _advance(groups, t, work_ns, nxt)
                t = _synchronize(groups, t, nxt, job.sync, rounds, batch, n_sim, lat_ns)
                if k == phases[pi]:
                    runtimes[pi, rep : rep + batch] = t.reshape(batch, n_sim).max(axis=1) / 1e9
                    pi += 1
                if progress and k % 10 == 0:
                    progress((done_units + batch * n_sim * k) / total_units)
            done_units += batch * n_sim * phases[-1]
        for j, p in enumerate(phases):
            results.append(Result(n, p, job.phase_s, runtimes[j], job.ideal_s(n, p)))
    longest = max(r.runtime_s for r in results)
    period_s = max(tl.period_ns for tl in timelines) / 1e9
    if longest > period_s:
        notes.append(
            f"the longest job ({seconds(longest)}) outlasts the noise timeline ({seconds(period_s)}): "
            f"each node's timeline wraps around about {count(math.ceil(longest / period_s), 'time')}"
        )
    return Simulation(model, results, notes)
