"""plotting.matplotlib_first: matplotlib on Agg, without the property tables it writes into every Artist class's
docstrings at import (a third of its import's CPU), and figures drawn the same."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _fresh(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_artists_get_no_property_tables_and_still_draw():
    out = _fresh(
        """
        from jitterscope import plotting
        plt = plotting.pyplot()
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        import matplotlib
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 2])
        ax.set_title("jitter-title")
        svg = plotting.svg_text(fig)
        print(matplotlib.get_backend(), "antialiased" in Line2D.set.__doc__, "antialiased" in Rectangle.set.__doc__,
              "<svg" in svg and "jitter-title" in svg and "<path" in svg)
        """
    )
    assert out.lower() == "agg false false true"


def test_without_it_matplotlib_writes_them():
    """The check above can fail: an unpatched import does write the tables."""
    out = _fresh(
        """
        from matplotlib.lines import Line2D
        print("antialiased" in Line2D.set.__doc__)
        """
    )
    assert out == "True"
