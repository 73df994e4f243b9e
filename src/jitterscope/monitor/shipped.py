"""The files a fleet installs beside the monitor: Prometheus alert rules and a Grafana dashboard.

They live in the package (`monitor/deploy/`), so every install carries the ones
that match its metrics; `jitterscope monitor --print-rules` / `--print-dashboard`
print them for config management to copy.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

RULES = "jitterscope-rules.yml"
DASHBOARD = "jitterscope-dashboard.json"


def path(name: str) -> Path:
    """Where a shipped file is installed."""
    return Path(str(resources.files("jitterscope.monitor") / "deploy" / name))


def text(name: str) -> str:
    return (resources.files("jitterscope.monitor") / "deploy" / name).read_text(encoding="utf-8")
