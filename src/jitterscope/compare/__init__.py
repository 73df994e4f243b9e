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

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:  # a submodule (`from jitterscope.compare import stats`) is imported as usual
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
