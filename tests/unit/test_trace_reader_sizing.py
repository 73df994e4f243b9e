"""The trace ring's size rule (tracing/reader.py) and the /proc counters it reads."""

from __future__ import annotations

from jitterscope.sysinfo import online_cpus
from jitterscope.tracing import reader
from jitterscope.tracing.reader import BUFFER_PERCENT, EVENT_BYTES, HEADROOM_S, MOST_KB, RateSample, ring_kb


def test_a_quiet_cpu_keeps_the_requested_ring() -> None:
    assert ring_kb(4096, 0.0, 1) == 4096
    assert ring_kb(4096, 1000.0, 64) == 4096


def test_a_storm_gets_the_ring_its_rate_needs_until_the_reader_runs() -> None:
    rate = 500_000.0
    need = rate * EVENT_BYTES * HEADROOM_S / (1 - BUFFER_PERCENT / 100) / 1024
    assert ring_kb(4096, rate, 1) == int(need)  # 17,578 KiB: far below a sixteenth of any test machine's memory
    # the half not yet read lasts HEADROOM_S at that rate
    assert ring_kb(4096, rate, 1) * 1024 * (1 - BUFFER_PERCENT / 100) / (rate * EVENT_BYTES) >= HEADROOM_S * 0.999


def test_rings_never_take_more_than_their_share_of_memory() -> None:
    avail = reader._available_kb()
    assert avail is not None
    for ncpus in (1, 4, 256):
        kb = ring_kb(1, 1e12, ncpus)
        assert kb <= MOST_KB and kb * ncpus <= avail * reader.MEMORY_SHARE + ncpus
    assert ring_kb(10 * MOST_KB, 1e12, 1) == 10 * MOST_KB  # what the user asks for is kept


def test_counters_cover_every_online_cpu_and_only_grow() -> None:
    a = RateSample.now()
    b = RateSample.now()
    cpus = online_cpus()
    assert set(cpus) <= set(a.interrupts)
    assert a.all_switches > 0 and b.all_switches >= a.all_switches
    assert all(b.interrupts[c] >= a.interrupts[c] for c in cpus)
    assert a.events_per_s(cpus) >= 0.0
