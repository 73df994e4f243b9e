"""Seeded synthetic pipelines "resembling the X-ray chain" (the thesis section 3.5.2).

The thesis generated 250 random graphs of roughly 100 boxes whose topology,
number of inputs and outputs resembled the interventional X-ray chains, each
box a random averaging, addition or convolution.  Its generator and the X-ray
topology (figure 3.7) are not published, so ours is a stated stand-in:

- 1-3 sources and 1-3 sinks;
- the boxes in between are convolutions (3x3 or 5x5, 40%), averages (35%) and
  additions (25%), placed one after another: an input is taken from an output
  nobody reads yet when there is one (chains), otherwise from one of the last
  eight outputs (locality of a processing chain, occasional fan-out);
- outputs left unread at the end are merged by averages until the sinks can
  take them, so every buffer is read.

The same (seed, boxes) gives the same graph on every machine (numpy's PCG64).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

KINDS = ("conv", "average", "add")
P_KINDS = (0.40, 0.35, 0.25)
RECENT = 8


class _BoxBase(TypedDict):
    kernel: str


class Box(_BoxBase, total=False):
    size: int  # a conv box's kernel size


class Image(TypedDict):
    width: int
    height: int
    pixel: str


class GraphDoc(TypedDict):
    """A graph file as a dict (graph.graph_from_dict reads it; `pipeline synthetic` writes it as YAML)."""

    name: str
    description: str
    image: Image
    boxes: dict[str, Box]
    edges: list[str]


def generate(
    seed: int, boxes: int = 100, width: int = 256, height: int = 256, pixel: str = "int32", name: str | None = None
) -> GraphDoc:
    """A graph file (as a dict) with about `boxes` boxes (at least 4)."""
    rng = np.random.default_rng([seed, boxes])
    n_src, n_sink = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    spec: dict[str, Box] = {}
    edges: list[str] = []
    unread: list[str] = []  # outputs nobody reads yet, oldest first
    outputs: list[str] = []
    for i in range(n_src):
        spec[f"src{i}"] = {"kernel": "source"}
        unread.append(f"src{i}.out")
        outputs.append(f"src{i}.out")
    middle = max(0, boxes - n_src - n_sink)
    for i in range(middle):
        kind = KINDS[int(rng.choice(len(KINDS), p=P_KINDS))]
        name_i = f"b{i}"
        ports = ["in"] if kind == "conv" else ["in0", "in1"]
        box: Box = {"kernel": kind}
        if kind == "conv":
            box["size"] = int(rng.choice([3, 5]))
        taken: list[str] = []
        for p in ports:
            pool = [u for u in unread if u not in taken]
            if pool and (not taken or rng.random() < 0.7):
                src = pool[0] if rng.random() < 0.6 else pool[int(rng.integers(len(pool)))]
            else:
                recent = [o for o in outputs[-RECENT:] if o not in taken] or outputs[-1:]
                src = recent[int(rng.integers(len(recent)))]
            taken.append(src)
            edges.append(f"{src} -> {name_i}.{p}")
            if src in unread:
                unread.remove(src)
        spec[name_i] = box
        unread.append(f"{name_i}.out")
        outputs.append(f"{name_i}.out")
    k = 0
    while len(unread) > n_sink:  # merge what is left so the sinks can take it
        a, b = unread.pop(0), unread.pop(0)
        spec[f"m{k}"] = {"kernel": "average"}
        edges += [f"{a} -> m{k}.in0", f"{b} -> m{k}.in1"]
        unread.append(f"m{k}.out")
        outputs.append(f"m{k}.out")
        k += 1
    for i in range(n_sink):
        src = unread[i] if i < len(unread) else outputs[-1 - i % len(outputs)]
        spec[f"sink{i}"] = {"kernel": "sink"}
        edges.append(f"{src} -> sink{i}.in")
    return {
        "name": name or f"synthetic-{seed}",
        "description": f"jitterscope pipeline synthetic, seed {seed}, {boxes} boxes asked",
        "image": {"width": width, "height": height, "pixel": pixel},
        "boxes": spec,
        "edges": edges,
    }
