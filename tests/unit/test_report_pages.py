"""The page API (report/page.py) every HTML page uses, and the cluster page and cluster compare
on it, from cluster runs assembled offline out of synthetic node runs (no MPI needed)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import jinja2
import pytest

from jitterscope.compare.runs import compare_runs, render_text
from jitterscope.errors import JitterscopeError
from jitterscope.report.page import Column, Figure, page_path, render_page, write_page
from jitterscope.report.pages import write_report
from tests.fixtures_runs import build_cluster_run, build_run
from tests.support import svg

SVG = (
    '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    '<defs><path id="m0" d="M0 0L5 5"/></defs><use href="#m0"/><g clip-path="url(#c1)"/></svg>'
)


def test_render_page_escapes_data_and_hashes_its_one_script():
    html = render_page(
        "cluster.html.j2",
        title="<b>t</b>",
        data={
            "id": "<run>",
            "nodes": 1,
            "start": "s",
            "command_line": "a & b <script>alert(1)</script>",
            "tables": [
                {
                    "id": "x",
                    "title": "X",
                    "columns": [Column("n"), Column("v", "int")],
                    "rows": [["<i>", 12345], ["y", None]],
                }
            ],
            "heatmap": {},
        },
        figures=[Figure("f", "cap <1>", SVG)],
        nav=[("x", "X")],
        warnings=["w<1>"],
    )
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in html and "w&lt;1&gt;" in html and "&lt;i&gt;" in html
    assert '<td class="num" data-v="12345">12,345</td>' in html and '<td class="num" data-v="1e+99">—</td>' in html
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1)
    assert csp.replace("&#39;", "'") == (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:"
    )


def test_figures_are_inlined_with_ids_unique_on_the_page():
    html = render_page(
        "cluster.html.j2",
        title="t",
        data={"id": "r", "nodes": 0, "start": "", "command_line": "", "tables": []},
        figures=[Figure("heatmap", "c", SVG)],
    )
    assert "<?xml" not in html and 'id="heatmap-m0"' in html and 'href="#heatmap-m0"' in html
    assert "url(#c1)" in html  # a reference to an id not in the SVG is left alone
    assert 'data-figure="heatmap"' in html and "figures also saved as SVG" in html


def test_a_template_typo_is_an_error_not_an_empty_cell():
    with pytest.raises(jinja2.UndefinedError, match="no attribute 'nodes'"):
        render_page("cluster.html.j2", title="t", data={"id": "r"})


def test_write_page_writes_svgs_beside_and_leaves_no_temporary_file(tmp_path):
    out = page_path(None, tmp_path / "p.html")
    write_page(out, "<html></html>", [Figure("a", "c", SVG)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-a.svg", "p.html"]
    assert page_path(tmp_path, Path("x/report.html")) == tmp_path / "report.html"
    with pytest.raises(JitterscopeError, match="no such directory"):
        page_path(tmp_path / "missing" / "p.html", tmp_path / "p.html")
    assert not (tmp_path / "missing").exists()


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cl")
    return build_cluster_run(tmp / "quiet", seed=1), build_cluster_run(tmp / "noisy", seed=4, injected=2)


def test_cluster_page_on_the_base_template(clusters, tmp_path):
    noisy = clusters[1]
    out = write_report(noisy, tmp_path / "c.html")
    html = out.read_text()
    summary = json.loads((noisy / "summary.json").read_text())
    assert 'http-equiv="Content-Security-Policy"' in html and "<nav>" in html
    for row in summary["nodes"]:
        assert f"<td>{row['node']}</td>" in html
    assert "node-c:1" in {o["node"] for o in summary["outliers"]} and "jitterscope-inj" in html
    assert svg.read(tmp_path / "c-heatmap.svg").shows("noise per node and source", "node-c", "jitterscope-inj")
    assert html.count('data-figure="') == 1


def test_cluster_compare_lives_in_compare(clusters):
    quiet, noisy = clusters
    res = compare_runs(quiet, noisy)
    assert res["kind"] == "cluster" and {x["node"] for x in res["nodes"]} == {"node-a:1", "node-b:1", "node-c:1"}
    assert res["nodes"][0]["node"] == "node-c:1" and res["nodes"][0]["delta_ppm"] > 0  # the injector's node
    assert render_text(res).splitlines()[0] == f"cluster compare: {quiet} -> {noisy}"


def test_runs_of_different_kinds_are_not_compared(clusters, tmp_path):
    single = build_run(tmp_path / "single", cpus=[1], seed=9)
    with pytest.raises(JitterscopeError, match="cannot compare a single-machine run .* with a cluster run"):
        compare_runs(single, clusters[0])
