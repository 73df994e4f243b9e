"""The shared size guard and output-path checks: refused in one line before any work."""

from __future__ import annotations

import pytest

from jitterscope import budget, outpath
from jitterscope.errors import JitterscopeError
from jitterscope.simulate import engine
from tests.support.noise_runs import periodic_source, write_noise_run


def test_guard_refuses_memory_and_time_naming_the_option(monkeypatch):
    monkeypatch.setattr(budget, "mem_available", lambda: 8 << 30)
    budget.check("x", 1 << 30, 1.0, "use less")
    with pytest.raises(JitterscopeError, match=r"x needs ~5 GiB \(8 GiB available\); use less"):
        budget.check("x", 5 << 30, 1.0, "use less")
    with pytest.raises(JitterscopeError, match=r"would take ~2 h here \(limit 10 min\); use less"):
        budget.check("x", 1, 7200.0, "use less")


def test_fit_is_estimated_before_the_delays_are_built(tmp_path, monkeypatch):
    run = write_noise_run(tmp_path / "r", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 2e9)], 2.0)
    monkeypatch.setattr(engine, "FIT_S_PER_DRAW", 1.0)  # as if this machine were a million times slower
    monkeypatch.setattr(engine, "phase_delays", lambda *a: pytest.fail("built the delays before the estimate"))
    with pytest.raises(JitterscopeError, match="fitting .* phases .* would take .*--phase.*--replicates"):
        engine.fit_run(str(run), 0.01, replicates=200)


def test_output_paths_never_create_parents(tmp_path):
    with pytest.raises(JitterscopeError, match="no such directory"):
        outpath.check_file(tmp_path / "a" / "b" / "r.html", "report")
    with pytest.raises(JitterscopeError, match="no such directory"):
        outpath.make_dir(tmp_path / "a" / "b", "--plots")
    assert not (tmp_path / "a").exists()
    assert outpath.make_dir(tmp_path / "a", "--plots").is_dir()  # the last directory only
    (tmp_path / "f").write_text("")
    with pytest.raises(JitterscopeError, match="not a directory"):
        outpath.check_dir(tmp_path / "f", "--plots")
    with pytest.raises(JitterscopeError, match="is a directory"):
        outpath.check_file(tmp_path / "a", "report")
