"""The jitterscope command runs without pandas, unless a step asks for it.

pyarrow imports pandas, when it is installed, the first time it makes an array or a table, even from numpy (its
pandas support looks for pandas' types: apache/arrow#34994), and scikit-posthocs brings pandas along, so every
jitterscope process that wrote a table paid for that import: 0.45 s of the 2.2 s a `measure --duration 500ms
--no-report` took on the 2-vCPU AMD EPYC guest (2026-11-28), more under load, and sync pays it after its
program ends.  jitterscope never gives pyarrow a pandas object nor asks it for one, so the command (entry.py)
refuses pandas to every importer; pyarrow then takes it as absent (making an array is no slower: 7 us against
11 us with pandas loaded).  The one step that needs pandas (the Dunn test's scikit-posthocs) imports it inside
`allowed()`.  jitterscope imported as a library changes nothing."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType


class _Refuse:
    """A meta path finder that refuses pandas and its modules."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(
                f"No module named {name!r}: the jitterscope command runs without pandas (nopandas.allowed() lets a "
                f"step import it)",
                name=name,
            )
        return None


def refuse() -> None:
    """From now on, this process imports no pandas (unless already imported, or `allowed()`)."""
    if "pandas" not in sys.modules and _Refuse not in sys.meta_path:
        sys.meta_path.insert(0, _Refuse)


@contextmanager
def allowed() -> Iterator[None]:
    """Importing pandas is allowed from here on, for good: pandas imports its own modules as it goes."""
    if _Refuse in sys.meta_path:
        sys.meta_path.remove(_Refuse)
    yield
