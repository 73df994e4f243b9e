"""Long-running, low-duty-cycle measurement with Prometheus metrics on localhost.

loop.py runs windows (measure.lifecycle.measure), history.py bounds the disk,
metrics.py is a prometheus_client collector of the state, detect.py applies
compare's test, server.py serves /metrics on 127.0.0.1 with prometheus_client.
"""

from jitterscope.monitor.loop import Monitor, MonitorOptions

__all__ = ["Monitor", "MonitorOptions"]
