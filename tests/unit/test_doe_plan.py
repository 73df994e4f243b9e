"""Plan validation and response extraction: every mistake is one line, nothing changes."""

from __future__ import annotations

import pytest

from jitterscope.doe.factors import Context, make
from jitterscope.doe.plan import parse_plan
from jitterscope.doe.response import MeasureResponse
from jitterscope.doe.runner import check_budget, describe_plan
from jitterscope.errors import JitterscopeError
from jitterscope.sysinfo import online_cpus

CPU = online_cpus()[-1]
GOOD = f"""
name: t
response:
  command: [true]
  cpus: {CPU}
  estimate: 1s
factors:
  - {{name: one, kind: custom, low: "true", high: "true", restore: "true"}}
  - {{name: two, kind: custom, low: "true", high: "true", restore: "true"}}
replications: 2
seed: 5
"""


def test_good_plan():
    p = parse_plan(GOOD)
    assert [f.letter for f in p.factors] == ["A", "B"]
    assert p.runs == 8 and p.seed == 5 and p.cpus == [CPU]
    assert p.estimate_s() == pytest.approx(8 * p.run_estimate_s())
    assert "2^2 full factorial" in describe_plan(p)


@pytest.mark.parametrize(
    "text,msg",
    [
        ("factors: []\n", "no response"),
        ("response: {}\nfactors: [{name: a, kind: thp, low: on, high: off}]\n", "no response"),
        (GOOD.replace("kind: custom, low", "kind: warp_drive, low", 1), "unknown kind 'warp_drive'"),
        (GOOD.replace("name: two", "name: one"), "duplicate factor name 'one'"),
        (GOOD + "colour: red\n", "unknown key 'colour'"),
        (GOOD.replace("seed: 5", "seed: soon"), "seed must be an integer"),
        (GOOD.replace("replications: 2", "replications: -1"), "replications must be a positive integer"),
        (GOOD + "design: {type: fractional, generators: [B=A]}\n", "generator"),
        (GOOD.replace("value", "v") + "design: magic\n", "design type 'magic'"),
        (
            "response: {measure: {metric: total_ns}}\nfactors: [{name: a, kind: thp, low: on, high: off}]\n",
            "needs source",
        ),
        ("response: {measure: {metric: p50}}\nfactors: [{name: a, kind: thp, low: on, high: off}]\n", "metric 'p50'"),
        ("response: [oops\n", "not valid YAML"),
    ],
)
def test_bad_plans(text, msg):
    with pytest.raises(JitterscopeError, match=msg.replace("(", r"\(").replace("^", r"\^")):
        parse_plan(text)


def test_fractional_plan_states_resolution_and_aliases():
    text = GOOD.replace("factors:\n", "factors:\n  - {name: three, kind: custom, low: a, high: b, restore: c}\n")
    p = parse_plan(text + "design: {type: fractional, generators: [C=AB], resolution: III}\n")
    assert p.design.n == 4 and p.design.resolution() == 3
    assert "resolution III" in describe_plan(p) and "A+BC" in describe_plan(p)
    with pytest.raises(JitterscopeError, match="resolution 3, below the 4"):
        parse_plan(text + "design: {type: fractional, generators: [C=AB], resolution: IV}\n")


def test_budget_needs_yes():
    p = parse_plan(GOOD.replace("estimate: 1s", "estimate: 10min"))
    with pytest.raises(JitterscopeError, match="--yes"):
        check_budget(p, yes=False)
    check_budget(p, yes=True)


def test_levels_are_checked_and_yaml_booleans_read_as_words():
    ctx = Context(cpus=[CPU], online=online_cpus(), load_seconds=10)
    f = make("t", "timer_migration", False, True, {})  # YAML `off`/`on`
    assert (f.low, f.high) == ("off", "on")
    assert f.canonical(f.low) == "0" and f.canonical(f.high) == "1"
    with pytest.raises(JitterscopeError, match="not one of none, resident, thrash"):
        make("c", "cache_load", "resident", "lukewarm", {}).check(ctx)
    with pytest.raises(JitterscopeError, match="low and high are both"):
        make("c", "udp_flood", "on", True, {}).check(ctx)
    with pytest.raises(JitterscopeError, match="priority 1-99"):
        make("f", "fifo", "off", 150, {}).check(ctx)
    with pytest.raises(JitterscopeError, match="unknown setting 'colour'"):
        make("u", "udp_flood", "off", "on", {"colour": 1}).check(ctx)
    with pytest.raises(JitterscopeError, match="needs restore"):
        make("x", "custom", "a", "b", {}).check(ctx)


def test_load_factor_needs_an_unmeasured_cpu():
    every = online_cpus()
    ctx = Context(cpus=every, online=every, load_seconds=10)
    with pytest.raises(JitterscopeError, match="not measured|measured CPU"):
        make("c", "cache_load", "resident", "thrash", {}).check(ctx)


def test_measure_response_reads_documented_summary_fields():
    summary = {
        "cpus": {"1": {"noise_ppm": 120.0, "max_ns": 9000}, "2": {"noise_ppm": 80.0, "max_ns": 15000}},
        "sources": [
            {"kind": "irq", "name": "local_timer", "total_ns": 5000},
            {"kind": "softirq", "name": "NET_RX", "total_ns": 700},
        ],
    }
    assert MeasureResponse([1, 2], 1, "noise_ppm").value(summary) == pytest.approx(100)
    assert MeasureResponse([1, 2], 1, "max_ns").value(summary) == 15000
    assert MeasureResponse([1], 1, "total_ns", "softirq:NET_RX").value(summary) == 700
    # A source that never appeared took no time.
    assert MeasureResponse([1], 1, "total_ns", "softirq:BLOCK").value(summary) == 0
    argv = MeasureResponse([1], 0.5, "noise_ppm").argv(__import__("pathlib").Path("/x"), 50)
    assert argv[3:] == [
        "measure",
        "--cpus",
        "1",
        "--duration",
        "0.5s",
        "--json",
        "--no-report",
        "--out",
        "/x",
        "--no-trace",
        "--priority",
        "fifo:50",
    ]
