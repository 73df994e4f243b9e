"""What a figure shows, read back from its SVG: the words on it and how many marks it draws.

jitterscope saves figures with `svg.fonttype: none` (plotting.py), so titles, axis labels, tick labels and
legend entries stay <text> elements; a test can then check that a figure names what it plots instead of only
that a file exists."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

NS = "{http://www.w3.org/2000/svg}"
MARKS = {"path", "line", "polyline", "polygon", "rect", "circle", "ellipse", "use"}


@dataclass(frozen=True)
class Figure:
    texts: list[str]
    marks: int

    def shows(self, *words: str) -> bool:
        """Whether every word appears in some text of the figure."""
        return all(any(w in t for t in self.texts) for w in words)


def read(source: str | Path) -> Figure:
    """Parse an SVG file (or its text); a file that is not SVG raises."""
    text = Path(source).read_text() if isinstance(source, Path) else source
    root = ET.fromstring(text)
    if root.tag != f"{NS}svg":
        raise ValueError(f"not an SVG document: <{root.tag}>")
    texts = ["".join(t.itertext()).strip() for t in root.iter(f"{NS}text")]
    marks = sum(1 for e in root.iter() if e.tag.removeprefix(NS) in MARKS)
    return Figure([t for t in texts if t], marks)
