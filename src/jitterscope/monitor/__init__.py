"""Long-running, low-duty-cycle measurement with Prometheus metrics on localhost.

loop.py runs windows (measure.lifecycle.measure), history.py bounds the disk,
metrics.py renders the exposition text, detect.py applies compare's test,
server.py serves /metrics on 127.0.0.1.
"""

from jitterscope.monitor.loop import Monitor, MonitorOptions

__all__ = ["Monitor", "MonitorOptions"]
