"""The pipeline graph file: what loads, and one-line errors for what does not."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from jitterscope.errors import JitterscopeError
from jitterscope.pipeline.graph import graph_from_dict, load_graph
from jitterscope.pipeline.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "image": {"width": 8, "height": 8},
    "boxes": {"s": {"kernel": "source"}, "c": {"kernel": "conv", "size": 5}, "k": {"kernel": "sink"}},
    "edges": ["s.out -> c.in", "c -> k"],
}


def bad(change, match: str) -> None:
    d = copy.deepcopy(BASE)
    change(d)
    with pytest.raises(JitterscopeError, match=match) as err:
        graph_from_dict(d, "g.yaml")
    assert "\n" not in str(err.value) and str(err.value).startswith("g.yaml")
    assert err.value.exit_code == 2


def test_examples_load():
    for f in sorted((ROOT / "examples" / "pipeline").glob("*.yaml")):
        g = load_graph(f)
        assert g.boxes and g.buffers


def test_footprints_and_ports():
    g = graph_from_dict(BASE)
    assert g.box("c").spec.inputs[0].footprint == (5, 5)
    assert g.box("c").spec.inputs[0].halo == (2, 2)
    assert g.buffer_bytes == 8 * 8 * 4
    assert not g.box("s").spec.parallel and g.box("c").spec.parallel


def test_bad_graphs_are_one_line_errors():
    bad(lambda d: d["boxes"]["c"].update(kernel="blur"), r"boxes\.c\.kernel: unknown kernel 'blur'")
    bad(lambda d: d["edges"].append("k -> s"), "box 'k' \\(sink\\) has no outputs|has 0 outputs")
    bad(lambda d: d["edges"].__setitem__(1, "c -> x"), "unknown box 'x'")
    bad(lambda d: d["edges"].__setitem__(1, "c.out -> k.data"), "has no input 'data'")
    bad(lambda d: d["edges"].pop(), "input k.in is not connected")
    bad(
        lambda d: (d["boxes"].update(k2={"kernel": "gain"}), d["edges"].append("c -> k2")),
        "output k2.out is not connected",
    )
    bad(lambda d: d["edges"].append("s -> k"), "input k.in is already connected")
    bad(
        lambda d: d["boxes"]["c"].update(inputs=[{"name": "in", "neighbourhood": [3, 3]}]),
        r"footprint \[3, 3\] does not match the conv kernel's \[5, 5\]",
    )
    bad(lambda d: d["boxes"]["c"].update(factor=2), "unknown key 'factor' for a conv box")
    bad(lambda d: d["boxes"]["k"].update(parallel=True), "a sink checks whole frames")
    bad(lambda d: d["image"].update(pixel="rgb"), "image.pixel must be one of int32, float32")
    bad(lambda d: d["image"].update(width=0), "image.width")
    bad(lambda d: d.update(colour=1), "unknown key 'colour'")
    bad(lambda d: d["boxes"]["c"].update(weights=[1, 2]), "takes 25 weights, got 2")
    bad(lambda d: d.update(timing={"blur": 3}), "timing.blur: names no box and no kernel")


def test_cycle_is_named():
    d = {
        "image": {"width": 4, "height": 4},
        "boxes": {
            "s": {"kernel": "source"},
            "a": {"kernel": "add"},
            "g": {"kernel": "gain"},
            "d": {"kernel": "dup"},
            "k": {"kernel": "sink"},
        },
        "edges": ["s -> a.in0", "g -> a.in1", "a -> d", "d.out0 -> g", "d.out1 -> k"],
    }
    with pytest.raises(JitterscopeError, match=r"cycle \(.*a.*\); a streaming graph must be acyclic"):
        graph_from_dict(d, "g.yaml")


def test_yaml_file_errors(tmp_path):
    f = tmp_path / "g.yaml"
    f.write_text("image: {width: 4\n")
    with pytest.raises(JitterscopeError, match="not valid YAML"):
        load_graph(f)
    with pytest.raises(JitterscopeError, match="no such graph file"):
        load_graph(tmp_path / "none.yaml")
    f.write_text(yaml.safe_dump({**BASE, "boxes": {**BASE["boxes"], "c": {"kernel": "conv", "size": 99}}}))
    with pytest.raises(JitterscopeError, match=r"boxes\.c\.size"):
        load_graph(f)


def test_digest_ignores_timing_but_not_structure():
    a = graph_from_dict(BASE)
    b = graph_from_dict({**BASE, "timing": {"conv": 5}})
    c = graph_from_dict({**BASE, "boxes": {**BASE["boxes"], "c": {"kernel": "conv", "size": 3}}})
    assert a.digest() == b.digest() != c.digest()


def test_synthetic_generator_is_deterministic_and_valid():
    a, b = generate(3, 100), generate(3, 100)
    assert a == b and generate(4, 100) != a
    g = graph_from_dict(a)
    assert 95 <= len(g.boxes) <= 110
    kinds = {x.kernel for x in g.boxes}
    assert {"source", "sink", "conv", "average", "add"} <= kinds
