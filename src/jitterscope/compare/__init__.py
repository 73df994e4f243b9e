"""Compare two runs of the same kind: which noise sources are new, gone or changed, with tests.

`compare_loaded` compares two measure runs: it restricts both to the CPUs they share, builds
a `Sample` of each (sample.py) and diffs them (diff.py, statistics in stats.py).
`runs.compare_runs` loads two run directories and hands them to their kind's comparer
(measure here, cluster node by node in cluster.py, pipeline and sync in their packages);
`runs.render_text` prints any result.

The names below are imported when first used (PEP 562): the tests bring scipy.stats (about 1.4 s
here), which `check` without a baseline, and anyone who needs only `compare.results` or
`compare.thresholds`, never uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitterscope import lazy

if TYPE_CHECKING:
    from jitterscope.compare.loaded import compare_loaded
    from jitterscope.compare.sample import Sample, from_run, pool, source_key
    from jitterscope.compare.thresholds import Thresholds

_HOME = {
    "Sample": "sample",
    "Thresholds": "thresholds",
    "compare_loaded": "loaded",
    "from_run": "sample",
    "pool": "sample",
    "source_key": "sample",
}

__all__ = ["Sample", "Thresholds", "compare_loaded", "from_run", "pool", "source_key"]


__getattr__, __dir__ = lazy.exports(__name__, _HOME)
