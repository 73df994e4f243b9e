"""Long-running, low-duty-cycle measurement with Prometheus metrics on localhost.

loop.py runs windows (measure.lifecycle.measure), history.py bounds the disk,
metrics.py is a prometheus_client collector of the state, detect.py applies
compare's test, server.py serves /metrics on 127.0.0.1 with prometheus_client.

`Monitor` and `MonitorOptions` are imported when first used (PEP 562): the loop brings compare's
statistics and scipy.stats (about 2 s here), which `--print-unit`, `--print-rules` and
`--print-dashboard` (monitor.unit, monitor.shipped) never need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitterscope import lazy

if TYPE_CHECKING:
    from jitterscope.monitor.loop import Monitor, MonitorOptions

__all__ = ["Monitor", "MonitorOptions"]


__getattr__, __dir__ = lazy.exports(__name__, {"Monitor": "loop", "MonitorOptions": "loop"})
