"""The four policies of Knauerhase et al. 2008 as pure decisions (no system calls): OBS-L, OBS-X, OBS-C, OBS-F.

Every choice the paper leaves open is a field of `Settings` with the spec's
default (spec B.3-B.6, docs/commands/place.md):

- OBS-L (B.3): within the highest runnable priority, run the task whose weight
  best complements the co-runners: argmin |S_others + w - target|, target =
  (CPUs of the LLC group) x mean weight of its runnable tasks.  Weights are
  compared by bin (`bins` on a log scale, 4; 0 = raw weights); ties go to the
  task that waited longest.  Each CPU's queue runs in epochs, as the O(1)
  scheduler of the paper's Linux did: a task that ran waits until every task of
  its queue has run, so priorities and fair shares are kept.  `worst` is the
  forced worst case: argmax of the co-run weight.
- OBS-X (B.4): a new task goes to the group with the smallest load (sum of
  weights); a task above its group's mean weight is overweight and kept in its
  group; every `period` (1 s) the overweight task with the smallest weight that
  still lowers the maximum load moves from the heaviest to the lightest group.
- OBS-C (B.5): t_credit = (w_heavy - w_light) x t_overlap x C_credit (2%), with
  weights normalised to [0, 1] (`norm`: by the largest weight seen, or a fixed
  value; `raw` keeps misses/cycle); the light task's next quanta are lengthened
  by it and the heavy task's shortened by as much, so CPU time is conserved.
- OBS-F (B.6): a fault on a LITTLE CPU pins the task to the big CPUs (F1); F2
  releases it after `release_after` clean quanta (1); after `ban_after`
  faulting quanta (0 = never) it is banned from LITTLE CPUs for life.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Settings:
    quantum_ns: float = 100e6
    bins: int = 4
    period_ns: float = 1e9  # OBS-X rebalance period
    credit: float = 0.02  # OBS-C C_credit
    norm: str = "max"  # OBS-C weight normalisation: max, raw, or a number
    credit_min: float = 0.1  # a quantum never shorter than this share of --quantum
    credit_max: float = 2.0  # nor longer than this multiple
    f_variant: int = 2  # 1: migrate and stay, 2: return after clean quanta
    release_after: int = 1
    ban_after: int = 0
    heavy: float = 0.5  # normalised weight from which a task counts as heavy (reports)


@dataclass
class Task:
    """One placed task (a process) as the policies see it."""

    pid: int
    name: str
    weight: float = 0.0  # the policy input: the last quantum's weight (no smoothing, B.2)
    prio: int = 0  # nice value: lower runs first
    home: int = -1  # its CPU (OBS-L) or a CPU of its group (OBS-X)
    ran_epoch: bool = False
    last_ran_ns: float = -1.0
    credit_ns: float = 0.0  # OBS-C balance: > 0 is owed CPU time
    runnable: bool = True
    f: FState = field(default_factory=lambda: FState())


@dataclass
class FState:
    faults: int = 0
    faulting_quanta: int = 0
    clean_quanta: int = 0
    pinned: bool = False
    banned: bool = False


# --- OBS-L ----------------------------------------------------------------------------------------------------


def binned(w: float, wmax: float, bins: int) -> float:
    """`w` as its bin's representative: `bins` bins, one decade each, below `wmax` (0: the raw weight)."""
    if bins <= 0 or wmax <= 0:
        return w
    if w <= wmax * 10.0 ** -(bins - 1):
        return 0.0
    k = min(bins - 1, max(0, math.ceil(math.log10(w / wmax)) + bins - 1))
    return wmax * 10.0 ** (k - bins + 1)


def target(group_weights: list[float], cpus: int) -> float:
    """The 'medium value' (spec B.3): CPUs of the group x mean weight of its runnable tasks."""
    return cpus * sum(group_weights) / len(group_weights) if group_weights else 0.0


def choose(
    queue: list[Task], others: float, goal: float, wmax: float, bins: int, worst: bool = False
) -> tuple[Task | None, str]:
    """The next task of one CPU's queue, and why.  Starts a new epoch when every runnable task has run."""
    runnable = [t for t in queue if t.runnable]
    if not runnable:
        return None, "nothing runnable"
    active = [t for t in runnable if not t.ran_epoch]
    if not active:
        for t in runnable:
            t.ran_epoch = False
        active = runnable
    top = min(t.prio for t in active)
    cands = [t for t in active if t.prio == top]

    def score(t: Task) -> tuple[float, float, int]:
        w = binned(t.weight, wmax, bins)
        s = -(others + w) if worst else abs(others + w - goal)
        return (round(s, 12), t.last_ran_ns, t.pid)

    pick = min(cands, key=score)
    why = (
        f"priority {top}; co-runners {others:.3g} + {pick.weight:.3g} vs target {goal:.3g}"
        if not worst
        else f"forced worst case: co-runners {others:.3g} + {pick.weight:.3g}"
    )
    if len(cands) < len(active):
        why += f"; {len(active) - len(cands)} lower-priority task(s) wait"
    return pick, why


# --- OBS-X ----------------------------------------------------------------------------------------------------


def place_new(loads: list[float], counts: list[int]) -> int:
    """The group for a new task: the smallest cache load, then the fewest tasks, then the lowest index."""
    return min(range(len(loads)), key=lambda g: (round(loads[g], 12), counts[g], g))


def overweight(t: Task, group: list[Task]) -> bool:
    return bool(group) and t.weight > sum(x.weight for x in group) / len(group)


def rebalance(groups: list[list[Task]]) -> tuple[Task, int, int] | None:
    """(task, from, to): the lightest overweight task of the heaviest group whose move to the lightest
    group lowers the maximum load; None when no move helps."""
    if len(groups) < 2:
        return None
    loads = [sum(t.weight for t in g) for g in groups]
    hi = max(range(len(groups)), key=lambda g: (loads[g], -g))
    lo = min(range(len(groups)), key=lambda g: (loads[g], g))
    if hi == lo:
        return None
    peak = max(loads)
    moves = [
        t
        for t in groups[hi]
        if overweight(t, groups[hi]) and max(loads[hi] - t.weight, loads[lo] + t.weight) < peak - 1e-12
    ]
    if not moves:
        return None
    return min(moves, key=lambda t: (t.weight, t.pid)), hi, lo


def balanced(groups: list[list[Task]]) -> bool:
    """No single move from the heaviest to the lightest group would lower the maximum load."""
    loads = [sum(t.weight for t in g) for g in groups]
    hi = max(range(len(groups)), key=lambda g: loads[g])
    lo = min(range(len(groups)), key=lambda g: loads[g])
    return not any(max(loads[hi] - t.weight, loads[lo] + t.weight) < max(loads) - 1e-12 for t in groups[hi])


# --- OBS-C ----------------------------------------------------------------------------------------------------


def normalise(w: float, norm: str, wmax: float) -> float:
    if norm == "raw":
        return w
    ref = wmax if norm == "max" else float(norm)
    return min(1.0, w / ref) if ref > 0 else 0.0


def credit_ns(w_heavy: float, w_light: float, overlap_ns: float, c: float) -> float:
    """t_credit = (w_largest - w_smallest) x t_overlap x C_credit (Knauerhase et al. 2008, L118-121)."""
    return max(0.0, w_heavy - w_light) * overlap_ns * c


def transfer(a: Task, b: Task, overlap_ns: float, s: Settings, wmax: float) -> float:
    """Credit the lighter of two co-runners at the heavier's expense; the amount moved (ns)."""
    wa, wb = normalise(a.weight, s.norm, wmax), normalise(b.weight, s.norm, wmax)
    heavy, light = (a, b) if wa >= wb else (b, a)
    amount = credit_ns(max(wa, wb), min(wa, wb), overlap_ns, s.credit)
    light.credit_ns += amount
    heavy.credit_ns -= amount
    return amount


def slot_ns(t: Task, s: Settings) -> float:
    """The task's next quantum with its credit (clamped; the rest of the balance waits)."""
    return min(s.quantum_ns * s.credit_max, max(s.quantum_ns * s.credit_min, s.quantum_ns + t.credit_ns))


# --- OBS-F ----------------------------------------------------------------------------------------------------


def f_fault(t: Task, n: int) -> str | None:
    """Faults reported now: pin the task to the big CPUs (F1's migrate) unless it already is."""
    t.f.faults += n
    if t.f.pinned:
        return None
    t.f.pinned = True
    return "pin"


def f_quantum(t: Task, faulted: bool, s: Settings) -> str | None:
    """At the end of one of the task's quanta: count it, and release (F2) or ban."""
    if faulted:
        t.f.faulting_quanta += 1
        t.f.clean_quanta = 0
        if s.ban_after and t.f.faulting_quanta >= s.ban_after and not t.f.banned:
            t.f.banned = t.f.pinned = True
            return "ban"
        return None
    t.f.clean_quanta += 1
    if s.f_variant == 2 and t.f.pinned and not t.f.banned and t.f.clean_quanta >= s.release_after:
        t.f.pinned = False
        return "release"
    return None
