"""PMF, CDF and sweep figures (thesis figures 5.6-5.9, 5.11-5.14), as SVG and PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from jitterscope import plotting
from jitterscope.outpath import make_dir
from jitterscope.ptts.exact import Distribution
from jitterscope.ptts.model import Model

plt = plotting.pyplot()  # this module is imported only when --plots is given

Series = tuple[str, Distribution]


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    make_dir(out, "--plots")
    paths = []
    for ext in ("svg", "png"):
        paths.append(plotting.save(fig, out / f"{stem}.{ext}", close=False, bbox_inches="tight"))
    plt.close(fig)
    return paths


def _deadline(ax: Any, model: Model, deadline: int | None) -> None:
    if deadline is not None:
        ax.axvline(
            model.ticks_to_unit(deadline), color="#c0392b", lw=1, ls="--", label=f"deadline {model.fmt(deadline)}"
        )


def plot_pmf(out: Path, model: Model, series: list[Series], title: str, deadline: int | None = None) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for n, (label, dist) in enumerate(series):
        x = model.ticks_to_unit(dist.times)
        if n == 0:
            ax.vlines(x, 0, dist.probs, color="#1f4e79", lw=1.2 if len(x) < 400 else 0.6, label=label)
            ax.plot(x, dist.probs, "o", ms=2.5 if len(x) < 400 else 0, color="#1f4e79")
        else:
            ax.plot(x, dist.probs, ".", ms=3, alpha=0.8, label=label)
    _deadline(ax, model, deadline)
    ax.set_xlabel(f"end-to-end latency ({model.unit})")
    ax.set_ylabel("probability")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out, "ptts-pmf")


def plot_cdf(out: Path, model: Model, series: list[Series], title: str, deadline: int | None = None) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for n, (label, dist) in enumerate(series):
        x = model.ticks_to_unit(dist.times)
        ax.step(
            np.concatenate([[x[0]], x]),
            np.concatenate([[0.0], dist.cdf()]),
            where="post",
            lw=1.6 if n == 0 else 1.0,
            label=label,
        )
    _deadline(ax, model, deadline)
    ax.set_xlabel(f"end-to-end latency ({model.unit})")
    ax.set_ylabel("P(latency <= x)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, out, "ptts-cdf")


def plot_sweep(
    out: Path,
    model: Model,
    label: str,
    values: list[float],
    dists: list[Distribution],
    stats: list[dict],
    deadline: int | None = None,
) -> list[Path]:
    """Left: the CDF at each swept value (thesis figure 5.14). Right: percentiles against the value."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.4, 1]})
    cmap = plt.get_cmap("viridis")
    for n, (v, dist) in enumerate(zip(values, dists)):
        x = model.ticks_to_unit(dist.times)
        a1.step(
            np.concatenate([[x[0]], x]),
            np.concatenate([[0.0], dist.cdf()]),
            where="post",
            color=cmap(n / max(1, len(values) - 1)),
            lw=1.2,
            label=f"{label} = {v:g} {model.unit}",
        )
    _deadline(a1, model, deadline)
    a1.set_xlabel(f"end-to-end latency ({model.unit})")
    a1.set_ylabel("P(latency <= x)")
    a1.set_ylim(0, 1.02)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=7, loc="lower right", ncol=1 if len(values) <= 10 else 2)
    for key, style in (("min", ":"), ("p50", "-"), ("mean", "--"), ("p99", "-"), ("max", ":")):
        a2.plot(values, [s[key] for s in stats], style, marker="o", ms=3, label=key)
    if deadline is not None:
        a2.axhline(model.ticks_to_unit(deadline), color="#c0392b", lw=1, ls="--", label="deadline")
    a2.set_xlabel(f"{label} ({model.unit})")
    a2.set_ylabel(f"latency ({model.unit})")
    a2.grid(alpha=0.3)
    a2.legend(fontsize=7, loc="best")
    fig.suptitle(f"{model.name}: end-to-end latency against {label}", fontsize=10)
    return _save(fig, out, "ptts-sweep")
