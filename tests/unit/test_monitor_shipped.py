"""The alert rules and dashboard shipped with the monitor: printed as installed, and naming only
metrics and labels the monitor's collector writes (the integration test checks a live monitor too)."""

from __future__ import annotations

import json

import yaml
from prometheus_client.parser import text_string_to_metric_families

from jitterscope.cli import main
from jitterscope.monitor import shipped
from jitterscope.monitor.labels import LabelCap
from jitterscope.monitor.metrics import LastWindow, MonitorState, render_metrics
from jitterscope.monitor.sources import cpu_sources
from jitterscope.rundir import load_run
from tests.fixtures_runs import Injector, build_run
from tests.support.promql import dashboard_queries, names_in

TARGET_LABELS = {"instance", "job"}  # Prometheus adds them to every scraped series


def _exposed(tmp_path) -> tuple[set[str], set[str]]:
    run = load_run(build_run(tmp_path / "r", cpus=[1], seed=2, injector=Injector(cpu=1)))
    st = MonitorState(
        windows_total=2,
        last=LastWindow.of(run),
        last_end_unix=1.0,
        sources=cpu_sources(run, LabelCap()),
        changes=[("thread", "jitterscope-inj", "new")],
    )
    fams = list(text_string_to_metric_families(render_metrics(st)))
    return {s.name for f in fams for s in f.samples}, {k for f in fams for s in f.samples for k in s.labels}


def test_print_options_print_the_installed_files(capsys):
    assert main(["monitor", "--print-rules"]) == 0
    assert capsys.readouterr().out == shipped.path(shipped.RULES).read_text()
    assert main(["monitor", "--print-dashboard"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(shipped.path(shipped.DASHBOARD).read_text())


def test_rules_and_dashboard_name_only_exposed_metrics_and_labels(tmp_path):
    metrics, labels = _exposed(tmp_path)
    labels |= TARGET_LABELS
    rules = [r for g in yaml.safe_load(shipped.text(shipped.RULES))["groups"] for r in g["rules"]]
    queries = [(r["alert"], r["expr"], set()) for r in rules]
    queries += dashboard_queries(json.loads(shipped.text(shipped.DASHBOARD)))
    assert len(queries) > 20
    for where, expr, extra in queries:
        used_metrics, used_labels = names_in(expr)
        assert used_metrics, (where, expr)
        assert used_metrics <= metrics | {"up"}, (where, expr, used_metrics - metrics)  # `up`: Prometheus's own
        assert used_labels | extra <= labels, (where, expr, (used_labels | extra) - labels)


def test_the_name_check_sees_a_wrong_name():
    assert names_in('sum by (instance, node) (rate(jitterscope_noise_total{cpu=~"$cpu", host="a"}[5m])) > 1e3') == (
        {"jitterscope_noise_total"},
        {"instance", "node", "cpu", "host"},
    )
