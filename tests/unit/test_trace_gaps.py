"""session.trace_gaps: a killed run's trace that ends well before the probe did (or holds nothing) is said among
what could not be recovered; a trace that reaches the probe's end, or a window the trace closed itself, is not."""

from __future__ import annotations

from jitterscope.tracing.session import TRACE_GAP_S, SessionInfo, trace_gaps

HZ = 2e9
END = 10**12


def _info(**last: int) -> SessionInfo:
    return {"window": [END - 10 * int(HZ), END], "window_end": "probe", "last_tsc": last}


def test_a_short_or_empty_trace_is_said_per_cpu():
    just_short = END - int(TRACE_GAP_S * HZ) + 1000  # within a few ticks of the end: whole
    cut = END - int(2.5 * HZ)
    got = trace_gaps(_info(**{"3": just_short, "1": cut, "2": 0}), "the probe's end", HZ)
    assert got == [
        "the kernel trace of CPU 1 for the last 2.5 s before the probe's end (detours then: unexplained)",
        "the kernel trace of CPU 2: its capture holds no event (detours there are unexplained)",
    ]


def test_a_window_the_trace_closed_itself_has_no_gap():
    info = _info(**{"1": 0})
    del info["window_end"]
    assert trace_gaps(info, "the probe's end", HZ) == []
    assert trace_gaps(_info(**{"1": END - int(HZ)}), "the probe's end", None) == []  # no clock rate: no length said
