"""The command refuses pandas: pyarrow then makes tables without importing it, and a step that asks for pandas gets it
(nopandas.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_tables_are_made_without_pandas_then_a_step_may_import_it():
    pytest.importorskip("pandas")
    p = _run("""
        import sys
        from jitterscope import nopandas
        nopandas.refuse()
        import pyarrow as pa, pyarrow.parquet as pq, io
        buf = io.BytesIO()
        pq.write_table(pa.table({"a": pa.array([1, 2]), "s": pa.array(["x", None])}), buf)
        assert pq.read_table(io.BytesIO(buf.getvalue())).to_pylist()[1] == {"a": 2, "s": None}
        print("pandas" in sys.modules)
        try:
            import pandas
        except ModuleNotFoundError as e:
            print("refused:", e)
        with nopandas.allowed():
            import pandas
        import pandas.io.formats.style_render  # its own modules, imported later, too
        print("pandas" in sys.modules)
    """)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "False" and "runs without pandas" in lines[1] and lines[2] == "True", lines


def test_the_package_imported_as_a_library_leaves_pandas_alone():
    pytest.importorskip("pandas")
    p = _run("import jitterscope, jitterscope.cli, pandas; print('ok')")
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr
