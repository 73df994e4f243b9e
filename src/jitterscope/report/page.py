"""Every HTML page jitterscope writes goes through here: one Jinja2 base template.

A page is a template in `report/templates/` that extends `base.html.j2` (see
docs/architecture.md, "HTML pages"). `render_page` gives it the page's plain
data and figures; `write_page` writes the page and each figure as
`<stem>-<figure id>.svg` beside it, atomically. Autoescaping is on for every
template, so page data is never trusted as markup; only the SVG of our own
figures is inlined as is.

Pages are self-contained (CSS, JavaScript and SVG inlined) and carry a strict
Content-Security-Policy: nothing is fetched, and the only script allowed to run
is the inlined one, by its hash. They open anywhere (mail attachment,
air-gapped node).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

import jinja2
from markupsafe import Markup

from jitterscope import __version__, atomic, plotting
from jitterscope.humanize import duration_ns as format_ns
from jitterscope.humanize import number, percent
from jitterscope.outpath import check_file


@dataclass(frozen=True)
class Figure:
    """One figure: `id` (also the SVG file's suffix), a caption, matplotlib's SVG text."""

    id: str
    caption: str
    svg: str

    @property
    def inline(self) -> Markup:
        """The SVG for embedding: no XML prolog, ids prefixed so several SVGs share one page."""
        return Markup(inline_svg(self.svg, self.id))


# A figure a page plans: id, caption, and what draws its SVG text from what data (plotting.draw_all's job).
Planned = tuple[str, str, Callable[[Any], str], Any]


def draw_figures(planned: Sequence[Planned]) -> list[Figure]:
    """The planned figures, drawn side by side where a fork is safe (plotting.draw_all), in order."""
    svgs = plotting.draw_all([(draw, data) for _, _, draw, data in planned])
    return [Figure(fid, caption, svg) for (fid, caption, _, _), svg in zip(planned, svgs)]


@dataclass(frozen=True)
class Column:
    """A table column for the `table` macro: `fmt` None is text, else a number shown with `fmt_value`."""

    label: str
    fmt: str | None = None

    @property
    def num(self) -> bool:
        return self.fmt is not None


class _PageTableBase(TypedDict):
    id: str
    title: str
    columns: list[Column]
    rows: list[list[Any]]  # one cell per column: text, a number shown with its column's fmt, or None


class PageTable(_PageTableBase, total=False):
    """One table of a kind's page (the templates' `table` macro): figures shown beside it, a note under
    it, what to say when it has no rows."""

    figures: list[str]
    note: str
    empty: str


class _PageDataBase(TypedDict):
    id: str | None
    headline: str
    tables: list[PageTable]


class PageData(_PageDataBase, total=False):
    """What a kind's page template reads as `data`: the run's id, one line about it, its tables, notes."""

    notes: list[str]


@dataclass(frozen=True)
class PageInfo:
    """What base.html.j2 itself shows: title, navigation, warnings, version, inlined assets."""

    title: str
    version: str
    nav: Sequence[tuple[str, str]]
    warnings: Sequence[str]
    css: str
    js: str
    csp: str
    figures_beside: bool = field(default=False)


def fmt_value(v: Any, fmt: str | None) -> str:
    """One number as a table shows it (through humanize.py): int 1,234 | ns 1.2 µs | ppm 1,234
    | pct 12.3% | sgnpct +1.2% | `{…}` any str.format spec. None is an em dash."""
    if v is None:
        return "—"
    if fmt == "int":
        return number(round(v))
    if fmt == "ns":
        return format_ns(float(v))
    if fmt == "ppm":
        return number(float(v))
    if fmt == "pct":
        return percent(float(v))
    if fmt == "sgnpct":
        return ("+" if v >= 0 else "") + percent(float(v))
    if fmt and fmt.startswith("{"):
        return fmt.format(v)
    return str(v)


def asset(name: str) -> str:
    """A file of templates/assets/ (CSS, JavaScript) as text, for inlining."""
    return (resources.files("jitterscope.report") / "templates" / "assets" / name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jitterscope.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ns=lambda v: format_ns(float(v or 0)), fmt=fmt_value, thousands=lambda v: f"{v:,}")
    env.tests["startswith"] = lambda s, prefix: str(s).startswith(prefix)
    env.globals.update(zip=zip)
    return env


def _csp(js: str) -> str:
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    # Inline styles stay allowed (matplotlib's SVGs and the table bars use them); scripts only by hash.
    return f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:"


def render_page(
    template: str,
    *,
    title: str,
    data: Any = None,
    figures: Iterable[Figure] = (),
    nav: Sequence[tuple[str, str]] = (),
    warnings: Sequence[str] = (),
    **context: Any,
) -> str:
    """Render `template` (in report/templates/, extending base.html.j2) into one self-contained page.

    The template sees `page` (PageInfo), `data`, `figures` (id -> Figure, in the given order) and
    any extra keyword as a variable. `nav` is (anchor, label) pairs; `warnings` are shown at the top.
    """
    figs = {f.id: f for f in figures}
    js = asset("base.js")
    info = PageInfo(
        title=title,
        version=__version__,
        nav=list(nav),
        warnings=list(warnings),
        css=asset("base.css"),
        js=js,
        csp=_csp(js),
        figures_beside=bool(figs),
    )
    return environment().get_template(template).render(page=info, data=data, figures=figs, **context)


def page_path(out: str | os.PathLike[str] | None, default: Path, what: str = "report") -> Path:
    """Where to write a page: `out`, or `default` when None, or `out/<default name>` when `out` is a
    directory. Checked before any work; no parent directory is ever created."""
    path = default if out is None else Path(out)
    if path.is_dir():
        path = path / default.name
    check_file(path, what)
    return path


def write_page(path: Path, html: str, figures: Iterable[Figure] = ()) -> Path:
    """Write each figure as `<stem>-<id>.svg` beside `path`, and the page: all of them or none."""
    atomic.write_texts([*((path.with_name(f"{path.stem}-{f.id}.svg"), f.svg) for f in figures), (path, html)])
    return path


_ID = re.compile(r'\bid="([^"]+)"')


def inline_svg(svg: str, prefix: str) -> str:
    """The SVG for embedding in HTML: no XML prolog, ids unique on the page."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)  # RDF boilerplate, not needed inline
    ids = set(_ID.findall(svg))
    svg = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    # References to those ids: url(#x) and xlink:href="#x".
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})" if m.group(1) in ids else m.group(0), svg)
    svg = re.sub(
        r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"' if m.group(1) in ids else m.group(0), svg
    )
    return svg
