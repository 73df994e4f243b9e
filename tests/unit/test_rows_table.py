"""rundir.rows_table: row dicts to a table as pa.Table.from_pylist makes it, through one struct array."""

from __future__ import annotations

import pyarrow as pa
import pytest

from jitterscope.rundir import rows_table

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int32())])


def test_rows_become_the_table_from_pylist_makes() -> None:
    rows = [{"a": 1, "b": "x", "c": 3, "not in the schema": 9}, {"a": 2, "c": None}, {}]
    t = rows_table(rows, SCHEMA)
    assert t.schema == SCHEMA
    assert t.equals(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert t.to_pylist()[1:] == [{"a": 2, "b": None, "c": None}, {"a": None, "b": None, "c": None}]
    assert rows_table([], SCHEMA).equals(SCHEMA.empty_table())


def test_a_value_that_does_not_fit_its_column_is_an_error() -> None:
    with pytest.raises(pa.ArrowInvalid):
        rows_table([{"c": 2**40}], SCHEMA)
    with pytest.raises(pa.ArrowTypeError):
        rows_table([{"b": 5}], SCHEMA)
