"""Predict a BSP job's runtime from recorded noise timelines, two ways.

Model (issue 4, seed 004): P phases; in each, node i does W_i of work (the
same for all in the model; a real job's calibrated loops differ slightly, so
each node keeps its own), delayed by the noise that hits it; the phase ends
when the last node finishes, plus the synchronization's noise-free cost S.
The ideal is P (max_i W_i + S).

* Trace-driven: node i replays its own recorded timeline from an independent
  random offset (wrapping around).  Phases are work-conserving: noise that lands
  in the time a phase was extended by delays it too.  Replications give a mean
  and a 95% confidence interval of the mean (normal approximation).
* Fitted: node i's per-phase delays (the extra time W of work takes, from
  consecutive W-long windows of its timeline) are fitted with a point mass at
  zero plus the best of normal, lognormal, gamma, exponential and Weibull by
  maximum likelihood (lowest Kolmogorov-Smirnov statistic wins); nodes are
  independent, so a phase's expected delay is E[max_i D_i] =
  integral_0^inf (1 - prod_i F_i(x)) dx (the expectation of a non-negative
  variable as the integral of its survival function; e.g. David & Nagaraja,
  "Order Statistics", 3rd ed., 2003, section 3.1), computed numerically.

A timeline is (start_ns, length_ns) of the gaps a node's loops saw over the
run (the work loop's and the synchronization poll loop's), in ns since its start.
In the trace-driven mode the synchronization is S of work on every node from
the moment the last node arrives, so noise on any node then delays it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats


@dataclass
class Timeline:
    start: np.ndarray   # float64 ns, sorted, gaps do not overlap
    length: np.ndarray  # float64 ns
    span: float         # ns of working time observed

    def __post_init__(self) -> None:
        self.start = np.asarray(self.start, dtype=float)
        self.length = np.asarray(self.length, dtype=float)
        self.busy_before = np.concatenate([[0.0], np.cumsum(self.length)[:-1]]) if self.length.size else np.zeros(0)
        self.free_at_start = self.start - self.busy_before
        self.free_span = self.span - float(self.length.sum())
        if self.free_span <= 0:
            raise ValueError("a timeline must have some noise-free time")

    def free(self, x: np.ndarray) -> np.ndarray:
        """Noise-free time in [0, x) of the periodically extended timeline."""
        q, r = np.divmod(np.asarray(x, dtype=float), self.span)
        if self.start.size == 0:
            return q * self.free_span + r
        j = np.searchsorted(self.start, r, side="right") - 1
        jj = np.maximum(j, 0)
        busy = np.where(j >= 0, self.busy_before[jj] + np.minimum(self.length[jj], r - self.start[jj]), 0.0)
        return q * self.free_span + r - busy

    def when_free(self, v: np.ndarray) -> np.ndarray:
        """The earliest time by which `v` of noise-free time has passed (inverse of free)."""
        q, w = np.divmod(np.asarray(v, dtype=float), self.free_span)
        if self.start.size == 0:
            return q * self.span + w
        j = np.searchsorted(self.free_at_start, w, side="left") - 1
        jj = np.maximum(j, 0)
        x = np.where(j >= 0, self.start[jj] + self.length[jj] + (w - self.free_at_start[jj]), w)
        return q * self.span + x

    def finish(self, t: np.ndarray, work: float) -> np.ndarray:
        """When `work` started at t completes (work-conserving)."""
        return self.when_free(self.free(t) + work)


@dataclass
class Prediction:
    runtime_s: float
    ideal_s: float
    ci95_s: float | None
    sd_s: float | None
    detail: dict[str, object]

    @property
    def slowdown(self) -> float:
        return self.runtime_s / self.ideal_s - 1.0


def _works(work_ns: float | list[float], n: int) -> list[float]:
    return [float(work_ns)] * n if np.isscalar(work_ns) else [float(w) for w in work_ns]  # type: ignore[union-attr]


def trace_driven(timelines: list[Timeline], work_ns: float | list[float], sync_ns: float, phases: int,
                 replications: int = 200, seed: int = 1, aligned: bool = False) -> Prediction:
    """aligned=True replays every timeline from its start (offset 0): the
    recorded run itself, a check of the model rather than a prediction."""
    rng = np.random.default_rng(seed)
    n = len(timelines)
    works = _works(work_ns, n)
    if aligned:
        replications = 1
        offsets = np.zeros((1, n))
    else:
        offsets = np.stack([rng.uniform(0, tl.span, replications) for tl in timelines], axis=1)  # R x N
    t = np.zeros(replications)
    ends = np.empty((replications, n))
    for _ in range(phases):
        for i, tl in enumerate(timelines):
            ends[:, i] = tl.finish(t + offsets[:, i], works[i]) - offsets[:, i]
        last = ends.max(axis=1)
        # The synchronization needs every node running: noise on any node at
        # that moment delays it (the sync is S of work on every node, from the
        # moment the last one arrives).
        for i, tl in enumerate(timelines):
            ends[:, i] = tl.finish(last + offsets[:, i], sync_ns) - offsets[:, i]
        t = ends.max(axis=1)
    runtimes = t / 1e9
    sd = float(runtimes.std(ddof=1)) if replications > 1 else None
    ci = 1.96 * sd / np.sqrt(replications) if sd is not None else None
    return Prediction(runtime_s=float(runtimes.mean()), ideal_s=phases * (max(works) + sync_ns) / 1e9, ci95_s=ci,
                      sd_s=sd, detail={"replications": replications, "seed": seed})


def phase_delays(tl: Timeline, work_ns: float) -> np.ndarray:
    """Per-phase delays of consecutive work-long windows of one timeline (work-conserving)."""
    count = max(1, int(tl.span // work_ns))
    starts = tl.when_free(np.arange(count) * work_ns)
    return np.maximum(tl.finish(starts, work_ns) - starts - work_ns, 0.0)


FAMILIES = {"normal": stats.norm, "lognormal": stats.lognorm, "gamma": stats.gamma,
            "exponential": stats.expon, "weibull": stats.weibull_min}


@dataclass
class NodeFit:
    family: str | None       # None: every sampled phase had no delay
    params: tuple[float, ...]
    zero_mass: float
    ks: float | None
    samples: int

    def cdf(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if self.family is None:
            return np.ones_like(x)
        cont = FAMILIES[self.family].cdf(x, *self.params)
        # Delays are never negative: a normal's mass below zero sits at zero.
        return np.where(x < 0, 0.0, self.zero_mass + (1 - self.zero_mass) * cont)


def fit_node(delays: np.ndarray) -> NodeFit:
    """Zero mass plus the best-fitting family on the positive delays."""
    delays = np.asarray(delays, dtype=float)
    pos = delays[delays > 0]
    zero = 1.0 - pos.size / max(1, delays.size)
    if pos.size < 3 or np.ptp(pos) == 0:
        if pos.size == 0:
            return NodeFit(None, (), 1.0, None, int(delays.size))
        # Too few distinct values to fit a shape: a narrow normal at their mean.
        return NodeFit("normal", (float(pos.mean()), max(float(pos.std()), 1.0)), zero, None, int(delays.size))
    best: NodeFit | None = None
    for name, fam in FAMILIES.items():
        try:
            params = fam.fit(pos) if name == "normal" else fam.fit(pos, floc=0)
        except (ValueError, RuntimeError, FloatingPointError):
            continue
        if not np.all(np.isfinite(params)):
            continue
        ks = float(stats.kstest(pos, fam.cdf, args=params).statistic)
        if best is None or ks < (best.ks or np.inf):
            best = NodeFit(name, tuple(float(p) for p in params), zero, ks, int(delays.size))
    assert best is not None
    return best


def expected_max(fits: list[NodeFit], works: list[float] | None = None) -> float:
    """E[max_i (w_i + D_i)] - max_i w_i for independent non-negative D_i:
    the integral above max w of 1 - prod_i F_i(x - w_i)."""
    works = works or [0.0] * len(fits)
    base = max(works)

    def survival(x: float) -> float:
        return float(1.0 - np.prod([f.cdf(np.array([x + base - w]))[0] for f, w in zip(fits, works)]))

    # Integrate up to where every node's delay is below x with probability ~1.
    hi = 1.0
    while survival(hi) > 1e-9 and hi < 1e13:
        hi *= 2
    value, _ = integrate.quad(survival, 0.0, hi, limit=200)
    return float(value)


def fitted(timelines: list[Timeline], work_ns: float | list[float], sync_ns: float, phases: int) -> Prediction:
    works = _works(work_ns, len(timelines))
    fits = [fit_node(phase_delays(tl, w)) for tl, w in zip(timelines, works)]
    delay = expected_max(fits, works)
    return Prediction(runtime_s=phases * (max(works) + delay + sync_ns) / 1e9,
                      ideal_s=phases * (max(works) + sync_ns) / 1e9, ci95_s=None, sd_s=None,
                      detail={"expected_max_delay_ns": round(delay, 1),
                              "fits": [{"family": f.family, "params": [round(p, 6) for p in f.params],
                                        "zero_mass": round(f.zero_mass, 4), "ks": f.ks, "samples": f.samples}
                                       for f in fits]})
