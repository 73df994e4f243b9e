"""The configuration layer: one line naming file, key path and what was expected."""

from __future__ import annotations

import json

import pytest

from jitterscope.config import ConfigModel, CpuList, Duration, Seed, load_config
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import load_run
from tests.support.noise_runs import periodic_source, write_noise_run


class Inner(ConfigModel):
    period: Duration


class Example(ConfigModel):
    cpus: CpuList
    seed: Seed = 1
    items: list[Inner] = []


def _err(tmp_path, text: str) -> str:
    f = tmp_path / "x.yaml"
    f.write_text(text)
    with pytest.raises(JitterscopeError) as ei:
        load_config(f, Example)
    msg = str(ei.value)
    assert "\n" not in msg and ei.value.exit_code == 2 and msg.startswith(f"{f}: ")
    return msg[len(str(f)) + 2 :]


def test_good_file_is_typed(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("cpus: 0\nseed: 7\nitems: [{period: 250ms}]\n")
    cfg = load_config(f, Example)
    assert cfg.cpus == [0] and cfg.seed == 7 and cfg.items[0].period == pytest.approx(0.25)


def test_every_mistake_is_one_line_with_key_path(tmp_path):
    assert _err(tmp_path, "cpus: 0\ncolour: red\n") == "unknown key 'colour' (expected: cpus, items, seed)"
    assert _err(tmp_path, "seed: 1\n") == "cpus is missing"
    assert _err(tmp_path, "cpus: 0\nseed: -1\n") == "seed must be at least 0, got -1"
    assert _err(tmp_path, "cpus: 0\nseed: soon\n") == "seed must be an integer, got 'soon'"
    assert _err(tmp_path, "cpus: 0\nseed: true\n") == "seed must be an integer, got True"
    assert "items[0].period: " in _err(tmp_path, "cpus: 0\nitems: [{period: 5}]\n")
    assert _err(tmp_path, "cpus: 0\nitems: [{period: 1s, x: 1}]\n") == "items[0]: unknown key 'x' (expected: period)"
    assert "does not exist" in _err(tmp_path, "cpus: 0-99999999999\n")
    assert "empty CPU list" in _err(tmp_path, "cpus: ''\n")
    assert "not valid YAML at line" in _err(tmp_path, "cpus: [\n")
    assert _err(tmp_path, "- 1\n") == "must be a mapping, got a list of 1"


def test_unreadable_file_is_one_line(tmp_path):
    with pytest.raises(JitterscopeError, match="no such file"):
        load_config(tmp_path / "none.yaml", Example)


@pytest.mark.parametrize(
    "file,change,words",
    [
        ("summary.json", lambda s: s["cpus"]["1"].update(noise_ppm="high"), "cpus.1.noise_ppm must be a number"),
        ("summary.json", lambda s: s["sources"].append({"kind": "ghost", "name": "x"}), "kind must be one of"),
        ("summary.json", lambda s: s.pop("cpus"), "cpus is missing"),
        ("meta.json", lambda m: m.update(kind="bogus"), "kind must be one of 'measure', 'cluster'"),
        ("meta.json", lambda m: m.update(cpus="1"), "cpus must be a list"),
        ("meta.json", lambda m: m.update(duration_s="long"), "duration_s must be a number"),
    ],
)
def test_run_json_is_checked_at_load(tmp_path, file, change, words):
    run = tmp_path / "r"
    write_noise_run(run, [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 1e9)], 1.0)
    data = json.loads((run / file).read_text())
    change(data)
    (run / file).write_text(json.dumps(data))
    with pytest.raises(JitterscopeError) as ei:
        load_run(run)
    msg = str(ei.value)
    assert msg.startswith(str(run / file)) and words in msg and "\n" not in msg
