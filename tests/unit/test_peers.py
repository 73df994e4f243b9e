"""The tool's own threads by thread id (issue 17.3, 17.6): ours carry ' (jitterscope)', another
jitterscope's ' (another jitterscope)' (a named source), and simulate never ranks the tool itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from jitterscope.measure.attribution import source_table
from jitterscope.measure.peers import name_threads
from jitterscope.simulate import Job, by_source, parse_noise
from tests.support.noise_runs import periodic_source, write_noise_run


def test_threads_are_named_by_thread_id_not_by_name() -> None:
    names = pa.array(
        [
            "js-probe/1",
            "js-probe/1",
            "js-probe-writer",
            "jitterscope-pro",
            "jitterscope",
            "jitterscope-inj",
            "bash",
            "js-probe-writer",
        ]
    )
    kinds = pa.array(["thread"] * 7 + ["irq"])
    tids = np.array([10, 20, 11, 12, 13, 15, 14, 20])
    got = name_threads(names, kinds, tids, own={10, 11, 12, 13}).to_pylist()
    assert got == [
        "js-probe/1",
        "js-probe/1 (another jitterscope)",
        "js-probe-writer (jitterscope)",
        "jitterscope-pro (jitterscope)",
        "jitterscope (jitterscope)",
        "jitterscope-inj",
        "bash",
        "js-probe-writer",
    ]
    sources, codes = source_table(pa.array(["thread"] * 2), pa.array(got[:2]))
    assert codes[0] == 0 and sources[codes[1]] == ("thread", "js-probe/1 (another jitterscope)")


def test_a_probe_thread_still_under_the_binary_name_is_the_probe() -> None:
    """A probe thread switched in before it renamed itself spins under the binary's comm
    (a CI run blamed 6,222 ppm of lost time on 'jitterscope-pro (jitterscope)'): its id says it is
    the probe, so its time is unexplained; the writer under the same comm stays the tool's overhead."""
    names = pa.array(["jitterscope-pro", "jitterscope-pro", "js-probe/1"])
    kinds = pa.array(["thread"] * 3)
    tids = np.array([21, 20, 21])
    got = name_threads(names, kinds, tids, own={20, 21}, probe_tids={21: 1}).to_pylist()
    assert got == ["js-probe/1", "jitterscope-pro (jitterscope)", "js-probe/1"]
    sources, codes = source_table(kinds, pa.array(got))
    assert codes[0] == 0 and codes[2] == 0 and sources[codes[1]] == ("thread", "jitterscope-pro (jitterscope)")


def test_by_source_never_ranks_the_tool_itself(tmp_path: Path) -> None:
    run = write_noise_run(
        tmp_path / "r",
        [
            periodic_source("irq", "local_timer", 1, 4e6, 5e3, 2e9),
            periodic_source("thread", "jitterscope-pro (jitterscope)", 1, 1e8, 2e6, 2e9, phase_ns=3e6),
        ],
        2.0,
    )
    _, ranked = by_source(parse_noise(str(run)), Job((8,), (100,), 1e-3, replications=2))
    assert [s["name"] for s in ranked["sources"]] == ["local_timer"]
