"""tune audit's CPU set: one that leaves no housekeeping CPU is refused (it printed 'housekeeping: CPU none' and
recommended empty values that apply then rejected)."""

from __future__ import annotations

from jitterscope.sysinfo import online_cpus
from jitterscope.units import format_cpulist
from tests.integration.conftest import jitterscope


def test_every_online_cpu_is_refused():
    online = online_cpus()
    p = jitterscope("tune", "audit", "--cpus", format_cpulist(online))
    assert p.returncode == 2, p.stdout
    assert len(p.stderr.strip().splitlines()) == 1 and "housekeeping" in p.stderr and "none" not in p.stdout


def test_one_left_names_it():
    online = online_cpus()
    if len(online) < 2:
        return
    p = jitterscope("tune", "audit", "--cpus", format_cpulist(online[1:]), "--json")
    assert p.returncode == 0, p.stderr
    import json

    r = json.loads(p.stdout)
    assert r["housekeeping"] == [online[0]]
    for f in r["findings"]:  # no recommendation is an empty CPU list
        assert f.get("recommended") != "" and not str(f.get("recommended")).endswith("="), f
