"""plotting.matplotlib_first: matplotlib on Agg, without the property tables it writes into every Artist class's
docstrings at import (a third of its import's CPU), and figures drawn the same."""

from __future__ import annotations

import subprocess
import sys
import textwrap

DRAW = """
from jitterscope import plotting
plt = plotting.pyplot()
from matplotlib.lines import Line2D
import matplotlib
with plt.rc_context(plotting.STYLE):
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.step([1, 10, 100], [0.1, 0.5, 1.0], where="post", label="a curve")
    ax.set_xscale("log")
    ax.set_title("jitter-title")
    ax.legend()
    svg = plotting.svg_text(fig)
print(matplotlib.get_backend().lower(), "antialiased" in Line2D.set.__doc__)
print(svg)
"""


def _fresh(code: str) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    first, _, rest = out.stdout.partition("\n")
    return first, rest


def test_artists_get_no_property_tables_and_figures_are_byte_for_byte_the_same():
    patched, svg = _fresh(DRAW)
    assert patched == "agg False"
    # matplotlib imported before plotting could set it up: its artists have their tables, and draw the same bytes
    unpatched, svg_before = _fresh("import matplotlib.pyplot\n" + DRAW)
    assert unpatched == "agg True"
    assert "jitter-title" in svg and "a curve" in svg and svg == svg_before
