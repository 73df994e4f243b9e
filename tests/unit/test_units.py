import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.units import (
    format_cpulist,
    parse_count_list,
    parse_cpulist,
    parse_duration_ns,
    parse_duration_s,
    parse_size,
)


@pytest.mark.parametrize(
    "text,ns", [("250ms", 250e6), ("2.5us", 2500), ("10s", 10e9), ("1e3ns", 1000), ("2min", 120e9), (" 7 us ", 7000)]
)
def test_durations(text, ns):
    assert parse_duration_ns(text) == pytest.approx(ns)


@pytest.mark.parametrize("text", ["10", "abc", "5 parsecs", "-3ms", "0s", "nanms"])
def test_bad_durations_are_one_line_errors(text):
    with pytest.raises(JitterscopeError) as e:
        parse_duration_ns(text)
    assert "\n" not in str(e.value) and e.value.exit_code == 2


def test_default_unit():
    assert parse_duration_ns("3", default_unit="ms") == 3e6


def test_cpulists_round_trip():
    assert parse_cpulist("0-3,5,8-12:2", limit=64) == [0, 1, 2, 3, 5, 8, 10, 12]
    assert format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    with pytest.raises(JitterscopeError):
        parse_cpulist("1-x")


def test_cpulists_are_bounded_before_they_are_expanded():
    # 0-99999999999 once allocated ~24 GB before any check; now it is refused by its end alone.
    with pytest.raises(JitterscopeError, match="CPU 99999999999 .* does not exist"):
        parse_cpulist("0-99999999999")
    with pytest.raises(JitterscopeError, match="CPU 64 .*CPUs 0-63"):
        parse_cpulist("1,64", limit=64)
    with pytest.raises(JitterscopeError, match="empty CPU list"):
        parse_cpulist(" ")


def test_count_lists():
    assert parse_count_list("1,10,100") == [1, 10, 100]
    assert parse_count_list("1..1e6:log10") == [1, 10, 100, 1000, 10**4, 10**5, 10**6]
    assert parse_count_list("1..64:x2") == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(JitterscopeError):
        parse_count_list("0..10")


def test_sizes():
    assert parse_size("64K") == 65536 and parse_size("1g") == 2**30


def test_every_duration_bound_is_documented():
    from pathlib import Path

    from jitterscope.units import DURATION_BOUNDS, format_s

    doc = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text()
    for option, (lo, hi) in DURATION_BOUNDS.items():
        row = next((ln for ln in doc.splitlines() if ln.startswith(f"| `{option}` |")), "")
        assert f"| {format_s(lo)} | {format_s(hi)} |" in row, option


def test_duration_bounds_are_one_line_errors():
    with pytest.raises(JitterscopeError, match="--duration '1ns' is too short: use 100ms to 7 days"):
        parse_duration_s("1ns", what="--duration")
    with pytest.raises(JitterscopeError, match="too long"):
        parse_duration_s("1e99s", what="--duration")
    assert parse_duration_s("1ns") == 1e-9  # a duration with no option of its own: 1 ns to a year
    assert parse_duration_s("1ms", what="--duration", bounds=(1e-6, 1.0)) == 1e-3
