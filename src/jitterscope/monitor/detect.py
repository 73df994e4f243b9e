"""New and regressed sources, window by window, with compare's test.

The baseline is the pool of the first `baseline_windows` good windows (or a
given baseline run).  Each later window is diffed against it; a line is logged
when a source (or a CPU's total) *becomes* new-and-significant or regressed,
and again when it recovers, so a persistent change is reported once.
"""

from __future__ import annotations

from jitterscope.compare import Thresholds, from_run, pool
from jitterscope.compare.diff import diff, smallest_q
from jitterscope.compare.results import Diff
from jitterscope.compare.sample import Sample
from jitterscope.humanize import count, number, ppm
from jitterscope.rundir import Run


class Detector:
    def __init__(
        self,
        cpus: list[int],
        baseline_windows: int = 3,
        thresholds: Thresholds | None = None,
        baseline: Sample | None = None,
    ) -> None:
        self.cpus = cpus
        self.needed = baseline_windows
        self.th = thresholds or Thresholds()
        self._parts: list[Sample] = []
        self.baseline = baseline
        self.flagged: dict[str, str] = {}  # label -> description, currently regressed
        self.changes: dict[tuple[str, str], str] = {}  # (kind, name) -> "new" or "worse", currently

    @property
    def ready(self) -> bool:
        return self.baseline is not None

    def feed(self, run: Run) -> list[str]:
        """Take one finished window; return the log lines it causes."""
        sample = from_run(run, self.cpus)
        if self.baseline is None:
            self._parts.append(sample)
            if len(self._parts) >= self.needed:
                self.baseline = pool(self._parts)
                self._parts = []
                return [
                    (
                        f"baseline ready: {count(len(self.baseline.ids), 'window')}, "
                        f"{count(self.baseline.exposure_ns / 1e9, 'CPU-second')}"
                    )
                ]
            return []
        res = diff(self.baseline, sample, self.th)
        return self._transitions(res)

    def _transitions(self, res: Diff) -> list[str]:
        now: dict[str, str] = {}
        changes: dict[tuple[str, str], str] = {}
        for r in res["new"] + res["changed"]:
            if r["regression"]:
                what = "NEW SOURCE" if r["base"]["count"] == 0 else "REGRESSED"
                changes[(r["kind"], r["name"])] = "new" if r["base"]["count"] == 0 else "worse"
                q = smallest_q(r)
                now[f"{r['kind']}:{r['name']}"] = (
                    f"{what} {r['kind']}:{r['name']}: {number(r['base']['ppm'])} -> {ppm(r['new']['ppm'])} "
                    f"({count(r['new']['count'], 'time')}, q={q:.2g})"
                )
        for c, t in res["total"].items():
            if t["regression"]:
                now[f"cpu{c}"] = (
                    f"REGRESSED CPU {c} total noise: {number(t['base_ppm'])} -> {ppm(t['new_ppm'])} "
                    f"(q={t['q'] or 0:.2g})"
                )
        lines = [desc for label, desc in now.items() if label not in self.flagged]
        lines += [f"RECOVERED {label}" for label in self.flagged if label not in now]
        self.flagged = now
        self.changes = changes
        return lines
