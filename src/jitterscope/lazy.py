"""A package's public names imported when first used (PEP 562), for packages whose names bring heavy
imports (scipy.stats: 1.4-2 s here) that callers of one light submodule must not pay for.

    __getattr__, __dir__ = lazy.exports(__name__, {"Job": "job", ...})

A name is looked up in its submodule on first use and kept in the package; a submodule itself
(`from package import stats`) is imported as usual.  List the names under `if TYPE_CHECKING:` too,
for the type checker."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's `__getattr__` and `__dir__`: each name of `homes` comes from its submodule."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)  # found there from now on, without this function
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return getattr_, dir_
