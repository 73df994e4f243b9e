"""`whatif cache`: the program's trace through the cache simulator without the kernel, with the kernel
in a unified L2 (today's machine), and with the remedy (OS cache / prefetch / pinning as chosen); the
result as plain data.

Misses the kernel causes = application misses with the kernel - without it, on the same machine (the
remedy's overflow sharing can also help the program alone: its idle OS cache holds evicted lines).
Slowdown = misses beyond the ideal machine's (unified L2, no kernel) x miss penalty / the ideal run's time
(accesses x access time + its own misses x miss penalty): a blocking, in-order core (the paper's 2-issue
in-order core, Table 2) where every L2 miss stalls for the full round trip.  A machine that misses less than
the ideal one (a remedy's idle OS cache holding the program's evicted lines) is faster: above -100%.
The kernel's share (`os_slowdown`) is against the same machine without the kernel, its stalls included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterscope.progress import Progress
from jitterscope.whatif import cachesim as CS
from jitterscope.whatif import kernel as K
from jitterscope.whatif.results import CacheResult, CacheView, SourceImpact


@dataclass
class CacheOptions:
    remedy: CS.Config  # the configuration under test
    unified: CS.Config  # the same machine without OS cache, prefetch or pinning
    access_ns: float = 1.0
    miss_penalty_ns: float = 100.0
    footprint: int = 48 << 10
    per_source: int = 5


def run_ns(misses: int, o: CacheOptions, app_ns: float) -> float:
    """The program's time on the blocking core: its accesses and a full round trip per L2 miss."""
    return app_ns + misses * o.miss_penalty_ns


def _view(r: dict[str, int], own_alone: int, ideal: int, o: CacheOptions, app_ns: float) -> CacheView:
    """One machine with the kernel: misses the kernel caused there (vs the same machine without it), and
    misses and slowdown against the ideal (unified L2, no kernel)."""
    extra, vs_ideal = r["misses_app"] - own_alone, r["misses_app"] - ideal
    t_ideal, t_alone = run_ns(ideal, o, app_ns), run_ns(own_alone, o, app_ns)
    return {
        "app_misses": r["misses_app"],
        "extra_misses": extra,
        "vs_ideal": vs_ideal,
        "slowdown": vs_ideal * o.miss_penalty_ns / t_ideal if t_ideal else 0.0,
        "os_slowdown": extra * o.miss_penalty_ns / t_alone if t_alone else 0.0,
        "other_hits": r["other_hits_app"],
        "app_evicted_by_os": r["app_evicted_by_os"],
        "os_misses": r["misses_os"],
        "writebacks": r["writebacks"],
        "overflows": r["overflows"],
        "overflow_rejected": r["overflow_rejected"],
        "prefetched": r["prefetched"],
        "prefetch_useful": r["prefetch_useful"],
        "counters": r,
    }


def whatif_cache(trace: np.ndarray, tl: K.Timeline, o: CacheOptions, progress: bool = True) -> CacheResult:
    n = len(trace)
    b, srcs = K.bursts(tl, n, o.access_ns, o.footprint)
    counts = np.bincount(np.asarray(b.src, np.int64), minlength=len(srcs))
    top = [int(s) for s in np.argsort(-counts, kind="stable")[: o.per_source] if counts[s] > 0]
    bar = Progress("whatif cache", 4 + 2 * len(top), enabled=None if progress else False)
    alone = CS.run(o.unified, trace, CS.Bursts.none(), [])
    rem_alone = CS.run(o.remedy, trace, CS.Bursts.none(), [])
    bar.update(1)
    uni = CS.run(o.unified, trace, b, srcs)
    bar.update(2)
    rem = CS.run(o.remedy, trace, b, srcs)
    bar.update(3)
    app_ns = float(n) * o.access_ns
    base, rbase = alone["misses_app"], rem_alone["misses_app"]
    per: list[SourceImpact] = []
    for i, s in enumerate(top):
        bs, _ = K.bursts(tl, n, o.access_ns, o.footprint, only=s)
        u = CS.run(o.unified, trace, bs, srcs)
        r = CS.run(o.remedy, trace, bs, srcs)
        bar.update(4 + 2 * i)
        per.append(
            {
                "source": tl.names[s],
                "bursts": int(len(bs.pos)),
                "kernel_accesses": int(np.asarray(bs.length, np.int64).sum()),
                "unified": _view(u, base, base, o, app_ns),
                "remedy": _view(r, rbase, base, o, app_ns),
            }
        )
    bar.close()
    return {
        "accesses": n,
        "app_time_ns": app_ns,
        "bursts": int(len(b.pos)),
        "kernel_accesses": int(np.asarray(b.length, np.int64).sum()),
        "sources": len(srcs),
        "os_origin": tl.origin,
        "ideal": {"app_misses": base, "run_ns": run_ns(base, o, app_ns), "counters": alone},
        "remedy_alone": {"app_misses": rbase, "counters": rem_alone},
        "unified": _view(uni, base, base, o, app_ns),
        "remedy": _view(rem, rbase, base, o, app_ns),
        "per_source": per,
    }


def unified_of(cfg: CS.Config) -> CS.Config:
    """The baseline machine: the same L1 and L2, no OS cache, no prefetch, no pinning."""
    u = CS.Config()
    for name, *_ in CS.Config._fields_:
        setattr(u, name, getattr(cfg, name))
    u.os_sets = u.os_ways = u.prefetch_lines = u.pin = 0
    return u
