"""Terminal text for `simulate` and `fit` results (from their JSON-ready data)."""

from __future__ import annotations

from typing import Any

from jitterscope.humanize import count, number, percent, plural
from jitterscope.humanize import seconds as _t
from jitterscope.simulate.results import FitData, SimulationData


def _n(n: int) -> str:
    return number(n) if n < 1e15 else f"{n:.3g}"


def _round(m: dict[str, Any]) -> str:
    """One synchronization round: the link latency, or LogGP's 2o + L (--model loggopsim)."""
    if "overhead_s" in m:
        return f"2o + L = {_t(2 * m['overhead_s'] + m['link_latency_s'])}"
    return _t(m["link_latency_s"])


def simulate_text(data: SimulationData, notes: list[str]) -> str:
    m = data["model"]
    lines = [
        f"model: {m['description']}",
        f"job: phases of {_t(m['phase_s'])} work, sync {m['sync']}"
        + (f" (ceil(log2 N) rounds of {_round(m)})" if m["sync"] != "none" else "")
        + f"; {count(m['replications'], 'replication')}, seed {m['seed']}",
    ]
    if m.get("sync_noise"):
        lines.append(f"sync noise: {m['sync_noise']}")
    if m.get("fit"):
        lines.append(f"fit: {m['fit']['verdict']}")
    lines.append("")
    exact = any("expected_s" in r for r in data["results"])
    lines.append(
        f"{'nodes':>14} {'phases':>8} {'runtime':>12} {'ideal':>12} {'slowdown':>10}  95% CI of runtime"
        + ("  (exact mean)" if exact else "")
    )
    for r in data["results"]:
        ci = r["ci95_s"]
        cis = f"[{_t(ci[0])}, {_t(ci[1])}]" if ci else "-"
        ex = f"  ({_t(r['expected_s'])})" if r.get("expected_s") is not None else ""
        lines.append(
            f"{_n(r['nodes']):>14} {r['phases']:>8} {_t(r['runtime_s']):>12} {_t(r['ideal_s']):>12} "
            f"{percent(r['slowdown']):>10}  {cis}{ex}"
        )
    bs = data.get("by_source")
    if bs:
        lines.append("")
        lines.append(
            f"fix first, for {count(bs['nodes'], 'node')} x {count(bs['phases'], 'phase')} "
            f"(slowdown now {percent(bs['baseline_slowdown'])}):"
        )
        lines.append(f"{'rank':>4}  {'source':<46} {'share of noise':>15} {'slowdown without':>17} {'saves':>9}")
        for s in bs["sources"]:
            src = f"{s['kind']}:{s['name']}"[:46]
            share = f"{percent(s['share'])} (#{s['share_rank']})"
            lines.append(
                f"{s['rank']:>4}  {src:<46} {share:>15} {percent(s['slowdown']):>17} "
                f"{number(s['reduction'] * 100):>7}pp"
            )
    for note in notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def fit_text(data: FitData) -> str:
    d = data["delays"]
    where = "nodes" if any(isinstance(c, str) for c in d["cpus"]) else plural(len(d["cpus"]), "CPU")
    lines = [
        (
            f"run {data['run']}: {count(d['count'], 'phase')} of {_t(data['phase_s'])} on "
            f"{where} {','.join(map(str, d['cpus']))}; delay mean {_t(d['mean_s'])}, p50 {_t(d['p50_s'])}, "
            f"p99 {_t(d['p99_s'])}, max {_t(d['max_s'])}; {percent(d['zero_fraction'])} met no noise"
        ),
        (
            f"goodness of fit on {count(data['gof']['sample'], 'positive delay')}"
            + (
                f" (a random subsample of the {number(d['positive'])}, each family refitted to it; "
                f"parameters below are fitted to all)"
                if data["gof"].get("subsample")
                else ""
            )
            + f", p-values by parametric bootstrap ({count(data['gof']['replicates'], 'refitted replicate')})"
        ),
        "",
        f"{'rank':>4}  {'family':<12} {'KS D':>8} {'KS p':>7} {'AD A2':>9} {'AD p':>7}  fits  parameters",
    ]
    for f in data["families"]:
        params = ", ".join(f"{k}={_p(k, v)}" for k, v in f["params"].items())
        lines.append(
            f"{f['rank']:>4}  {f['family']:<12} {f['ks']['statistic']:>8.4f} {f['ks']['p_value']:>7.3f} "
            f"{f['ad']['statistic']:>9.3f} {f['ad']['p_value']:>7.3f}  {'yes' if f['fits'] else 'no ':<4}  "
            f"{params}"
        )
    t = data["tail"]
    if t:
        lines.append(
            f"      {'GPD tail':<12} {t['ks']['statistic']:>8.4f} {t['ks']['p_value']:>7.3f} "
            f"{t['ad']['statistic']:>9.3f} {t['ad']['p_value']:>7.3f}  {'yes' if t['fits'] else 'no ':<4}  "
            f"xi={t['xi']:.3g}, scale={_t(t['scale_s'])} over {_t(t['threshold_s'])} "
            f"({count(t['exceedances'], 'exceedance')})"
        )
    lines += ["", f"verdict: {data['verdict']}", f"model for simulate: {data['best']['model']}"]
    return "\n".join(lines)


def _p(key: str, v: float) -> str:
    return f"{v:.4g}" if key in ("shape", "sigma", "xi") else _t(v)
