"""The unit tier's rules: a test's jitterscope keeps its journals in a directory of its own, and the tier
runs at the spread tests' lower priority (tests/support/lanes.py).

`make test` runs this tier in one session with the integration tier, on the worker beside the machine
tests, which kill runs on purpose: every command a unit test runs in-process first recovers the journals
of killed runs in its state directory, and must never undo (and report) a machine test's run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.lanes import spread_priority


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITTERSCOPE_STATE_DIR", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(autouse=True)
def beside_the_machine_group() -> Iterator[None]:
    with spread_priority():
        yield
