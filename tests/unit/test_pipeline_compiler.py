"""The pipeline compiler: the thesis Appendix A goldens and schedule/allocator properties (no native code)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from jitterscope.errors import JitterscopeError
from jitterscope.pipeline import schedule as SF
from jitterscope.pipeline.compiler import compile_graph
from jitterscope.pipeline.graph import graph_from_dict, load_graph
from jitterscope.pipeline.heuristics import HEURISTICS
from jitterscope.pipeline.memory import ALLOCATORS
from jitterscope.pipeline.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]
APPENDIX = ROOT / "examples" / "pipeline" / "appendix.yaml"


@pytest.fixture(scope="module")
def appendix():
    return load_graph(APPENDIX)


def names(s, idx):
    return [s.inst.subboxes[i].name for i in idx]


def test_appendix_split_regions(appendix):
    s = compile_graph(appendix, threads=2, heuristic="fixed", memory="simple")
    regions = {x.name: x.region(256) for x in s.inst.subboxes}
    # instantiation { function_instantiation ... } (L3679-3684)
    assert regions == {
        "f6.0": [0, 0, 256, 128],
        "f6.1": [0, 128, 256, 256],
        "f7.0": [0, 0, 256, 128],
        "f7.1": [0, 128, 256, 256],
        "f8.0": [0, 0, 256, 256],
        "f9.0": [0, 0, 256, 256],
    }


def test_appendix_eight_dependency_edges(appendix):
    s = compile_graph(appendix, threads=2, heuristic="fixed", memory="simple")
    edges = {(s.inst.subboxes[a].name, s.inst.subboxes[b].name) for a, b in s.inst.edges}
    assert edges == {
        ("f8.0", "f6.0"),
        ("f8.0", "f6.1"),
        ("f6.0", "f7.0"),
        ("f6.0", "f7.1"),
        ("f6.1", "f7.0"),
        ("f6.1", "f7.1"),
        ("f7.0", "f9.0"),
        ("f7.1", "f9.0"),
    }


def _canonical(op_lists, tokens):
    """Op lists with signals renamed in order of first appearance, and each signal's initial tokens."""
    rename: dict[str, str] = {}
    out = []
    for ops in op_lists:
        row = []
        for op in ops:
            kind, arg = op.split()
            if kind != "E":
                rename.setdefault(arg, f"s{len(rename)}")
                arg = rename[arg]
            row.append(f"{kind} {arg}")
        out.append(row)
    return out, {rename[k]: v for k, v in tokens.items()}


def test_appendix_signals_reproduce_the_thesis_op_lists(appendix):
    # runtime { thread_execution ...; signal ! s1, s3, ! s5, s7, s8, ! s10, s12, ! s13 } (L3725-3733)
    thesis = [
        ["W s1", "E f8.0", "S s3", "W s5", "E f6.0", "S s7", "W s8", "E f7.0", "S s10", "W s12", "E f9.0", "S s13"],
        ["W s3", "W s10", "E f6.1", "S s1", "S s8", "W s7", "W s13", "E f7.1", "S s5", "S s12"],
    ]
    thesis_tokens = {"s1": 1, "s3": 0, "s5": 1, "s7": 0, "s8": 0, "s10": 1, "s12": 0, "s13": 1}
    for heuristic in ("fixed", "predictable", "reduced"):
        s = compile_graph(appendix, threads=2, heuristic=heuristic, memory="simple")
        assert [names(s, t) for t in s.threads] == [["f8.0", "f6.0", "f7.0", "f9.0"], ["f6.1", "f7.1"]]
        ours = [s.op_text(t) for t in range(2)]
        assert _canonical(ours, {g.name: g.tokens for g in s.signals}) == _canonical(thesis, thesis_tokens)
        assert len(s.signals) == 8


def test_appendix_simple_allocation_is_786432_bytes(appendix):
    s = compile_graph(appendix, threads=2, heuristic="fixed", memory="simple")
    assert s.memory.total == 786_432
    # memory_mapping m0 [0, 262144) f8.out, m2 f6.out, m4 f7.out (L3715-3719)
    ranges = {appendix.buffers[b].name: s.memory.range(b) for b in range(3)}
    assert ranges == {"f8.out": (0, 262_144), "f6.out": (262_144, 524_288), "f7.out": (524_288, 786_432)}
    reuse = compile_graph(appendix, threads=2, heuristic="fixed", memory="reuse")
    assert reuse.memory.total == 524_288  # f8.out is dead once f6 ran: f7.out takes its place


def chain(n: int, conv_every: int = 3) -> dict:
    boxes = {"src": {"kernel": "source"}}
    edges, prev = [], "src"
    for i in range(n):
        boxes[f"b{i}"] = {"kernel": "conv", "size": 3} if i % conv_every == 1 else {"kernel": "gain"}
        edges.append(f"{prev} -> b{i}")
        prev = f"b{i}"
    boxes["sink"] = {"kernel": "sink"}
    edges.append(f"{prev} -> sink")
    return {"name": f"chain{n}", "image": {"width": 16, "height": 12}, "boxes": boxes, "edges": edges}


@pytest.mark.parametrize("length", [1, 2, 5, 17])
def test_linear_chain_on_one_thread_with_reuse_needs_two_buffers(length):
    g = graph_from_dict(chain(length))
    for heuristic in ("fixed", "predictable", "reduced"):
        s = compile_graph(g, threads=1, heuristic=heuristic, memory="reuse")
        assert s.memory.regions == 2
        assert s.memory.total == 2 * g.buffer_bytes
        assert s.signals == []


def _check_properties(s):
    subs = [i for t in s.threads for i in t]
    assert sorted(subs) == list(range(len(s.inst.subboxes)))  # every sub-box exactly once
    preds = s.inst.preds()
    thread = s.plan.thread_of()
    for t in s.threads:  # per-thread orders are topological
        pos = {x: i for i, x in enumerate(t)}
        for x in t:
            assert all(pos[p] < pos[x] for p in preds[x] if thread[p] == thread[x])
    # no token-free cycle: program order + zero-token signals form a DAG (graphlib raises otherwise)
    from graphlib import TopologicalSorter

    ts = TopologicalSorter()
    for t in s.threads:
        for a, b in itertools.pairwise(t):
            ts.add(b, a)
    for g in s.signals:
        if g.tokens == 0:
            ts.add(g.dst, g.src)
    list(ts.static_order())
    # no two interfering buffers overlap (verify() re-checks the whole schedule)
    from jitterscope.pipeline.verify import verify

    verify(s)


@pytest.mark.parametrize("heuristic,memory,threads", list(itertools.product(HEURISTICS, ALLOCATORS, [1, 2, 3])))
def test_schedule_properties_on_a_synthetic_graph(heuristic, memory, threads):
    g = graph_from_dict(generate(5, boxes=30, width=16, height=12))
    _check_properties(compile_graph(g, threads=threads, heuristic=heuristic, memory=memory, max_time_s=2.0))


def test_barrier_orders_every_last_subbox_before_every_first_of_the_next_iteration(appendix):
    s = compile_graph(appendix, threads=2, heuristic="barrier", memory="reuse")
    preds, succs = s.inst.preds(), s.inst.succs()
    firsts = [i for i, p in enumerate(preds) if not p]
    lasts = [i for i, x in enumerate(succs) if not x]
    for a in lasts:
        for b in firsts:
            assert s.sync.order.before(a, 0, b, 1)
    simple = compile_graph(appendix, threads=2, heuristic="simple", memory="simple")
    assert not all(simple.sync.order.before(a, 0, b, 1) for a in lasts for b in firsts)  # simple pipelines


def test_compile_is_deterministic(appendix):
    g = graph_from_dict(generate(11, boxes=40, width=16, height=16))
    for heuristic in HEURISTICS:
        a = SF.dumps(compile_graph(g, threads=2, heuristic=heuristic, memory="reuse", max_time_s=60))
        b = SF.dumps(compile_graph(g, threads=2, heuristic=heuristic, memory="reuse", max_time_s=60))
        assert a == b


def test_schedule_file_round_trip_and_tampering(appendix, tmp_path):
    s = compile_graph(appendix, threads=2, heuristic="predictable", memory="reuse")
    f = tmp_path / "s.yaml"
    SF.write(s, f)
    back = SF.load(f, appendix)
    assert SF.to_dict(back)["threads"] == SF.to_dict(s)["threads"]
    text = f.read_text()
    # a dropped wait: the consumer could read before the producer wrote
    f.write_text(text.replace("[W s2, W s6, E f6.1", "[W s6, E f6.1"))
    with pytest.raises(JitterscopeError, match="never waited for|may read before"):
        SF.load(f, appendix)
    # a WAR token removed: the next iteration could overwrite what is still read
    f.write_text(text.replace("s1: {tokens: 1, kind: WAR}", "s1: {tokens: 0, kind: WAR}"))
    with pytest.raises(JitterscopeError, match="deadlock"):
        SF.load(f, appendix)
    # two live buffers on the same bytes
    f.write_text(text.replace("f6.out: [262144, 524288]", "f6.out: [0, 262144]"))
    with pytest.raises(JitterscopeError, match="share memory"):
        SF.load(f, appendix)
    other = graph_from_dict(chain(3))
    f.write_text(text)
    with pytest.raises(JitterscopeError, match="another graph"):
        SF.load(f, other)


def test_more_threads_than_subboxes_drops_idle_threads(appendix):
    s = compile_graph(appendix, threads=8, split=2, heuristic="fixed", memory="simple")
    assert all(s.threads) and len(s.threads) <= 6
    assert any("got no sub-box" in n for n in s.notes)
