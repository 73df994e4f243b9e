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

from jitterscope.simulate.job import Job, Result, Simulation
from jitterscope.simulate.timeline import Timeline


@dataclass
class _Group:
    timeline: Timeline
    idx: np.ndarray       # nodes replaying this timeline
    offset: np.ndarray    # their offsets (ns)


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


def simulate_timelines(timelines: Sequence[Timeline], job: Job, model: dict,
                       progress: Callable[[float], None] | None = None) -> Simulation:
    """Simulate the job with nodes replaying `timelines` (node i gets a random one)."""
    phases = sorted(job.phases)
    nodes = sorted(job.nodes)
    work_ns = job.phase_s * 1e9
    lat_ns = job.link_latency_s * 1e9
    results: list[Result] = []
    total_units = sum(n if not job.cosched else 1 for n in nodes) * phases[-1] * job.replications
    done_units = 0.0
    notes: list[str] = []
    periods = np.array([tl.period_ns for tl in timelines])
    for n in nodes:
        rng = np.random.default_rng([job.seed, n, 1])
        rounds = job.rounds(n)
        n_sim = 1 if job.cosched else n   # co-scheduled nodes are identical: one stands for all
        runtimes = np.zeros((len(phases), job.replications))
        for rep in range(job.replications):
            if job.cosched:    # all nodes replay one timeline from one offset
                which = rng.integers(len(timelines), size=1)
                offs = np.array([rng.uniform(0.0, timelines[int(which[0])].period_ns)])
            else:
                which = rng.integers(len(timelines), size=n_sim)
                offs = rng.random(n_sim) * periods[which]
            groups = [_Group(tl, np.flatnonzero(which == k), offs) for k, tl in enumerate(timelines)
                      if (which == k).any()]
            t = np.zeros(n_sim)
            nxt = np.full(n_sim, -np.inf)      # unknown: first phase computes it for everyone
            partner_base = np.arange(n_sim) if job.sync == "allreduce" and n_sim > 1 else None
            pi = 0
            for k in range(1, phases[-1] + 1):
                t = _advance(groups, t, work_ns, nxt)
                if job.sync == "none":
                    t[:] = t.max()
                else:
                    for r in range(rounds):
                        if n_sim == 1:
                            m = t
                        elif job.sync == "barrier":
                            m = np.maximum(t, np.roll(t, 1 << r))
                        else:
                            m = np.maximum(t, t[(partner_base ^ (1 << r)) % n_sim])
                        t = _advance(groups, m, lat_ns, nxt)
                if k == phases[pi]:
                    runtimes[pi, rep] = t.max() / 1e9
                    pi += 1
                if progress and k % 10 == 0:
                    progress((done_units + n_sim * k) / total_units)
            done_units += n_sim * phases[-1]
        for j, p in enumerate(phases):
            results.append(Result(n, p, job.phase_s, runtimes[j], job.ideal_s(n, p)))
    longest = max(r.runtime_s for r in results)
    period_s = max(tl.period_ns for tl in timelines) / 1e9
    if longest > period_s:
        notes.append(f"the longest job ({longest:.3g} s) outlasts the noise timeline ({period_s:.3g} s): "
                     f"each node's timeline wraps around about {math.ceil(longest / period_s)} times")
    return Simulation(model, results, notes)
