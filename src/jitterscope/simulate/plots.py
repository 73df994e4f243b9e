"""SVG figures for `simulate` (Vicente & Matias figures 5-7) and `fit` (histogram with
densities, Q-Q), drawn from the plain result data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from jitterscope import plotting
from jitterscope.outpath import make_dir
from jitterscope.simulate.results import Point, SimulationData

# A Q-Q panel (3 inches wide) is drawn at QQ_POINTS evenly spaced ranks and its QQ_TAIL highest values
# (plotting.curve_ranks): the tail is where the families part.
QQ_POINTS, QQ_TAIL = 500, 100


def _outdir(path: str | Path) -> Path:
    return make_dir(path, "--plots")


def _table(results: list[Point]) -> tuple[list[int], list[int], dict[tuple[int, int], Point]]:
    nodes = sorted({r["nodes"] for r in results})
    phases = sorted({r["phases"] for r in results})
    return nodes, phases, {(r["nodes"], r["phases"]): r for r in results}


def simulate_plots(data: SimulationData, outdir: str | Path) -> list[Path]:
    """runtime_vs_nodes.svg, runtime_vs_phases.svg, slowdown_heatmap.svg (+ by_source.svg)."""
    plt = plotting.pyplot()
    out = _outdir(outdir)
    nodes, phases, at = _table(data["results"])
    written: list[Path] = []
    title = data["model"].get("spec", "")

    def err(rows: list[Point]) -> np.ndarray:
        lo = [r["runtime_s"] - r["ci95_s"][0] if r["ci95_s"] else 0.0 for r in rows]
        hi = [r["ci95_s"][1] - r["runtime_s"] if r["ci95_s"] else 0.0 for r in rows]
        return np.array([lo, hi])

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in phases:
        rows = [at[(n, p)] for n in nodes]
        ax.errorbar(
            nodes, [r["runtime_s"] for r in rows], yerr=err(rows), marker="o", ms=3, capsize=2, label=f"{p} phases"
        )
        ax.plot(nodes, [r["ideal_s"] for r in rows], ls=":", lw=0.8, color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("nodes")
    ax.set_ylabel("runtime (s)")
    ax.set_title(f"Runtime vs nodes — {title}\n(dotted: without noise; bars: 95% CI)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    written.append(out / "runtime_vs_nodes.svg")
    fig.tight_layout()
    plotting.save(fig, written[-1])

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n in nodes:
        rows = [at[(n, p)] for p in phases]
        ax.errorbar(
            phases,
            [r["runtime_s"] for r in rows],
            yerr=err(rows),
            marker="o",
            ms=3,
            capsize=2,
            label=f"{n:,} nodes" if n < 1e6 else f"{n:.0e} nodes",
        )
    ax.set_xlabel("phases")
    ax.set_ylabel("runtime (s)")
    if len(phases) > 2 and phases[-1] / phases[0] > 100:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_title(f"Runtime vs phases — {title}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    written.append(out / "runtime_vs_phases.svg")
    fig.tight_layout()
    plotting.save(fig, written[-1])

    grid = np.array([[at[(n, p)]["slowdown"] * 100 for n in nodes] for p in phases])
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(nodes), 1.4 + 0.45 * len(phases)))
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(nodes)), [f"{n:.0e}" if n >= 1e4 else str(n) for n in nodes], fontsize=7)
    ax.set_yticks(range(len(phases)), [str(p) for p in phases], fontsize=7)
    for i in range(len(phases)):
        for j in range(len(nodes)):
            ax.text(
                j,
                i,
                f"{grid[i, j]:.3g}",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if grid[i, j] < grid.max() * 0.6 else "black",
            )
    ax.set_xlabel("nodes")
    ax.set_ylabel("phases")
    ax.set_title("Slowdown (%) over nodes x phases", fontsize=9)
    fig.colorbar(im, ax=ax, label="slowdown %")
    written.append(out / "slowdown_heatmap.svg")
    fig.tight_layout()
    plotting.save(fig, written[-1])

    bs = data.get("by_source")
    if bs and bs["sources"]:
        top = bs["sources"][:20]
        fig, ax = plt.subplots(figsize=(7, 0.9 + 0.3 * len(top)))
        y = np.arange(len(top))[::-1]
        ax.barh(y, [r["reduction"] * 100 for r in top], color="tab:red")
        ax.set_yticks(y, [f"{r['kind']}:{r['name']} ({r['share']:.1%} of noise)" for r in top], fontsize=7)
        ax.set_xlabel(f"slowdown removed (percentage points) at {bs['nodes']:,} nodes x {bs['phases']} phases")
        ax.set_title(f"Fix first (baseline slowdown {bs['baseline_slowdown']:.2%})", fontsize=9)
        ax.grid(alpha=0.3, axis="x")
        written.append(out / "by_source.svg")
        fig.tight_layout()
        plotting.save(fig, written[-1])
    return written


def fit_plots(fit: Any, outdir: str | Path) -> list[Path]:
    """fit_histogram.svg (positive delays with fitted densities) and fit_qq.svg."""
    plt = plotting.pyplot()
    out = _outdir(outdir)
    x = np.sort(fit.delays_s[fit.delays_s > 0])
    scale, unit = (1e6, "us") if x.max() < 1e-3 else (1e3, "ms")
    fams = fit.families
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.hist(
        x * scale,
        bins=min(80, max(10, int(np.sqrt(len(x))))),
        density=True,
        alpha=0.35,
        color="grey",
        label=f"{len(x)} noisy phases",
    )
    grid = np.linspace(x.min(), x.max(), 400)
    for f in fams:
        pdf = f.delay().dist.pdf(grid)
        ax.plot(grid * scale, pdf / scale, lw=1.2, label=f"{f.family} (AD p={f.ad_p:.2g}){' fits' if f.fits else ''}")
    if fit.tail:
        t = fit.tail
        tg = grid[grid > t["threshold_s"]]
        zeta = t["exceedances"] / len(x)
        pdf = zeta * stats.genpareto.pdf(tg - t["threshold_s"], t["xi"], scale=t["scale_s"])
        ax.plot(
            tg * scale,
            pdf / scale,
            lw=1.5,
            ls="--",
            color="black",
            label=f"GPD tail xi={t['xi']:.2g} (AD p={t['ad']['p_value']:.2g})",
        )
    ax.set_yscale("log")
    ax.set_xlabel(f"per-phase delay ({unit})")
    ax.set_ylabel(f"density (1/{unit})")
    ax.set_title(f"Per-phase delays, phase {fit.phase_s * 1e3:g} ms — {fit.verdict[:90]}", fontsize=8)
    ax.legend(fontsize=7)
    written.append(out / "fit_histogram.svg")
    fig.tight_layout()
    plotting.save(fig, written[-1])

    panels = len(fams) + (1 if fit.tail else 0)
    fig, axes = plt.subplots(2, (panels + 1) // 2, figsize=(3 * ((panels + 1) // 2), 6))
    axes = np.atleast_1d(axes).ravel()
    k = plotting.curve_ranks(len(x), QQ_POINTS, QQ_TAIL)
    probs = (k + 0.5) / len(x)
    xs = x[k]
    for ax, f in zip(axes, fams):
        q = f.delay().quantile_by_both(1 - probs, probs)
        ax.plot(q * scale, xs * scale, ".", ms=2)
        lim = [min(q.min(), xs.min()) * scale, max(q.max(), xs.max()) * scale]
        ax.plot(lim, lim, color="grey", lw=0.8)
        ax.set_title(f"{f.family}: KS p={f.ks_p:.2g}, AD p={f.ad_p:.2g}", fontsize=8)
        ax.set_xlabel(f"model ({unit})", fontsize=7)
        ax.set_ylabel(f"data ({unit})", fontsize=7)
    if fit.tail:
        t = fit.tail
        ax = axes[len(fams)]
        y = np.sort(x[x > t["threshold_s"]] - t["threshold_s"])
        k = plotting.curve_ranks(len(y), QQ_POINTS, QQ_TAIL)
        pr = (k + 0.5) / len(y)
        y = y[k]
        q = stats.genpareto.ppf(pr, t["xi"], scale=t["scale_s"])
        ax.plot(q * scale, y * scale, ".", ms=3)
        lim = [0, max(q.max(), y.max()) * scale]
        ax.plot(lim, lim, color="grey", lw=0.8)
        ax.set_title(f"GPD tail over {t['threshold_s'] * scale:.3g} {unit}: AD p={t['ad']['p_value']:.2g}", fontsize=8)
        ax.set_xlabel(f"model excess ({unit})", fontsize=7)
        ax.set_ylabel(f"data excess ({unit})", fontsize=7)
    for ax in axes[panels:]:
        ax.axis("off")
    fig.suptitle("Q-Q plots (points on the line: the model fits)", fontsize=9)
    written.append(out / "fit_qq.svg")
    fig.tight_layout()
    plotting.save(fig, written[-1])
    return written
