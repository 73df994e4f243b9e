"""The shipped alert rules pass `promtool check rules`, and `promtool test rules` runs each alert on
series where it must fire and series where it must not (tests/support/prometheus_rules_tests.yml)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from jitterscope.monitor import shipped

FIXTURES = Path(__file__).resolve().parents[1] / "support" / "prometheus_rules_tests.yml"

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus; make packages)"
)


def _promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)


def _run_fixtures(tmp_path: Path, rules: Path) -> subprocess.CompletedProcess:
    tests = yaml.safe_load(FIXTURES.read_text())
    tests["rule_files"] = [str(rules)]
    f = tmp_path / "rules_test.yml"
    f.write_text(yaml.safe_dump(tests))
    return _promtool("test", "rules", str(f))


def test_the_shipped_rules_pass_promtool_check():
    proc = _promtool("check", "rules", str(shipped.path(shipped.RULES)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = sum(len(g["rules"]) for g in yaml.safe_load(shipped.text(shipped.RULES))["groups"])
    assert f"SUCCESS: {n} rules found" in proc.stdout


def test_every_alert_fires_and_stays_quiet_on_its_fixtures(tmp_path):
    alerts = {r["alert"] for g in yaml.safe_load(shipped.text(shipped.RULES))["groups"] for r in g["rules"]}
    cases = [c for t in yaml.safe_load(FIXTURES.read_text())["tests"] for c in t["alert_rule_test"]]
    fires = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert alerts == fires, f"alerts never shown firing: {alerts - fires}"
    assert alerts <= quiet, f"alerts never shown quiet: {alerts - quiet}"
    proc = _run_fixtures(tmp_path, shipped.path(shipped.RULES))
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr


def test_the_fixtures_catch_a_changed_threshold(tmp_path):
    """A rule that fires at 3% instead of 1% fails the fixtures: they test the thresholds, not only the syntax."""
    changed = tmp_path / "rules.yml"
    changed.write_text(shipped.text(shipped.RULES).replace("> 0.01", "> 0.03"))
    assert changed.read_text() != shipped.text(shipped.RULES)
    proc = _run_fixtures(tmp_path, changed)
    assert proc.returncode != 0 and "JitterscopeSourceShareHigh" in proc.stdout + proc.stderr
