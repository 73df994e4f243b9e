"""The causes table of a sync run as columns, from the attribution's arrays to Parquet.

A pigz run books about 100 k causes.  As a dict per row they cost 0.2 s of the user's wait after CMD (the
rows made one by one, then read back one by one into Arrow and into the summary); as arrays of codes they go
to Arrow in one `take` per column."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from jitterscope.sync.schema import TABLES

SIDES = ("waiter", "caller", "holder", "thread")  # the sides a cause is booked on (schema.py, the causes table)


@dataclass(frozen=True)
class CauseTable:
    """One row per (interval, side, source): `jitter` the interval's id, `side` a code into SIDES, `source` a
    code into `sources` ((kind, name) pairs), `ns` the time the source took of the interval.  Rows in table
    order: by interval, each interval's sources in the order its pieces met them."""

    jitter: np.ndarray
    side: np.ndarray
    source: np.ndarray
    ns: np.ndarray
    sources: tuple[tuple[str, str], ...]

    @classmethod
    def empty(cls) -> CauseTable:
        z = np.zeros(0, np.int64)
        return cls(z, z, z, z, ())

    def __len__(self) -> int:
        return len(self.jitter)

    def __add__(self, other: CauseTable) -> CauseTable:
        """The rows of both, `other`'s after these, their sources in one list."""
        sources = dict.fromkeys(self.sources + other.sources)
        code = {s: i for i, s in enumerate(sources)}
        remap = np.array([code[s] for s in other.sources], np.int64)
        return CauseTable(
            np.concatenate([self.jitter, other.jitter]),
            np.concatenate([self.side, other.side]),
            np.concatenate([self.source, remap[other.source] if len(other) else other.source]),
            np.concatenate([self.ns, other.ns]),
            tuple(sources),
        )

    def of(self, ids: Iterable[int] | np.ndarray) -> CauseTable:
        """The rows of intervals `ids`, in table order."""
        keep = np.isin(self.jitter, ids if isinstance(ids, np.ndarray) else np.fromiter(ids, np.int64))
        return CauseTable(self.jitter[keep], self.side[keep], self.source[keep], self.ns[keep], self.sources)

    def totals(self) -> dict[tuple[str, str, str], int]:
        """ns per (side, kind, name), in the order each first occurs."""
        key = self.side * max(len(self.sources), 1) + self.source
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        sums = np.zeros(len(uniq), np.int64)
        np.add.at(sums, inverse, self.ns)
        out: dict[tuple[str, str, str], int] = {}
        for k in np.argsort(first, kind="stable"):
            side, src = divmod(int(uniq[k]), max(len(self.sources), 1))
            kind, name = self.sources[src]
            out[(SIDES[side], kind, name)] = int(sums[k])
        return out

    def arrow(self) -> pa.Table:
        kinds = pa.array([k for k, _ in self.sources], pa.string())
        names = pa.array([n for _, n in self.sources], pa.string())
        src = pa.array(self.source, pa.int64())
        return pa.Table.from_arrays(
            [
                pa.array(self.jitter, pa.int64()),
                pa.array(SIDES, pa.string()).take(pa.array(self.side, pa.int64())),
                kinds.take(src),
                names.take(src),
                pa.array(self.ns, pa.int64()),
            ],
            schema=TABLES["causes"],
        )
