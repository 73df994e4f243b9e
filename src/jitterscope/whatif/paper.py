"""The paper's published numbers that `whatif` reproduces or checks against (spec A.7, A.12): the
controller validation table, Tables 6-7 (jitter events/ms, mean jitter, their product, slowdown) and
Table 8, the Pearson correlation of each column with the slowdown, recomputed (scipy.stats.pearsonr;
Pearson 1895) from Tables 6-7 as the spec did: the paper's PARSEC row is truncated, not rounded."""

from __future__ import annotations

from scipy import stats

# (J us, k, target tau us, raw factor, chosen nearest, chosen ceil, J after nearest, J after ceil)
CONTROLLER = [
    (0, 1, 330.0, 1.000, 1.0, 1.0, 0.0, 0.0),
    (33, 1, 297.0, 1.111, 1.1, 1.15, 3.0, -10.0),
    (33, 2, 313.5, 1.053, 1.05, None, 17.3, None),
    (100, 1, 230.0, 1.435, 1.2, 1.2, 45.0, 45.0),
    (100, 4, 305.0, 1.082, 1.1, None, None, None),
    (-20, 1, 350.0, 0.943, 0.95, None, None, None),
    (-100, 1, 430.0, 0.767, 0.8, 0.8, None, None),
]

# benchmark: (events/ms, mean jitter us, product, slowdown %)
TABLE6 = {
    "lu": (0.69, 239.92, 165.03, 0.25),
    "barnes": (79.96, 19.64, 1570.63, 5.5),
    "raytrace": (35.69, 130.21, 4647.5, 3.69),
    "fmm": (4.07, 43.38, 176.73, 13.37),
    "ocean": (12.51, 139.11, 1740.26, 35.61),
    "water-nsq": (21.83, 67.35, 1470.48, 30.15),
    "water-sp": (12.99, 93.88, 1219.4, 33.2),
    "radix": (0.6, 256.76, 153.2, 0.62),
}
TABLE7 = {
    "facesim": (1.56, 198.93, 310.3, 10.01),
    "ferret": (0.45, 29.3, 13.24, 1.65),
    "bodytrack": (1.2, 48.77, 58.56, 1.62),
    "x264": (0.52, 119.04, 61.51, 2.45),
    "raytrace": (0.14, 138.88, 20.13, 7.89),
    "vips": (0.65, 15.43, 10.03, 0.9),
    "dedup": (2.97, 282.34, 837.74, 7.03),
    "fluidanimate": (7.15, 19.9, 142.27, 22.83),
    "streamcluster": (34.47, 72.46, 2497.71, 4.53),
}
TABLE8 = {"splash": (-0.61, 0.37, -0.41), "parsec": (0.06, 0.04, -0.04)}  # as printed
SPLASH_WITHOUT = ("lu", "radix")  # Table 8 leaves them out


def correlations(table: dict[str, tuple[float, float, float, float]], drop: tuple[str, ...] = ()) -> list[float]:
    """Pearson r of columns (1)-(3) with the slowdown (4)."""
    rows = [v for k, v in table.items() if k not in drop]
    slow = [r[3] for r in rows]
    return [float(stats.pearsonr([r[c] for r in rows], slow)[0]) for c in range(3)]


def table8() -> dict[str, list[float]]:
    return {"splash": correlations(TABLE6, SPLASH_WITHOUT), "parsec": correlations(TABLE7)}
