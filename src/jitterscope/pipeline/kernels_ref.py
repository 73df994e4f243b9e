"""The built-in kernels restated in numpy: an independent reference for native/pipeline_kernels.h.

`reference_digests(graph, iterations, seed)` runs the whole graph one box at a
time, one iteration after another, and returns every sink's digest per
iteration; the runtime must produce the same numbers for every schedule.
Integer arithmetic wraps as the C code's unsigned arithmetic does, divisions
truncate toward zero, float32 operations are done one at a time in the C
code's order.
"""

from __future__ import annotations

import numpy as np

from jitterscope.pipeline.graph import Graph, topological

C1, C2, C3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def mix64(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, np.uint64) + C1
    z = (z ^ (z >> np.uint64(30))) * C2
    z = (z ^ (z >> np.uint64(27))) * C3
    return z ^ (z >> np.uint64(31))


def _trunc_div(a: np.ndarray, d: int) -> np.ndarray:
    q = np.abs(a) // abs(d)
    return np.where((a < 0) != (d < 0), -q, q)


def source(w: int, h: int, is_float: bool, seed: int, k: int) -> np.ndarray:
    idx = np.uint64(k * w * h) + np.arange(w * h, dtype=np.uint64)
    v = mix64(np.uint64(seed) ^ mix64(idx))
    iv = (v & np.uint64(0xFFFF)).astype(np.int64) - 32768
    img = iv.astype(np.float32) / np.float32(256.0) if is_float else iv.astype(np.int32)
    return img.reshape(h, w)


def digest(img: np.ndarray) -> int:
    bits = np.ascontiguousarray(img).reshape(-1).view(np.uint32).astype(np.uint64)
    i = np.arange(len(bits), dtype=np.uint64)
    return int(mix64(bits | (i << np.uint64(32))).sum(dtype=np.uint64))


def conv(img: np.ndarray, size: int, weights: list[int], divisor: int) -> np.ndarray:
    h, w = img.shape
    lo = size // 2
    ys = np.clip(np.arange(h)[:, None] + np.arange(size)[None, :] - lo, 0, h - 1)
    xs = np.clip(np.arange(w)[:, None] + np.arange(size)[None, :] - lo, 0, w - 1)
    if img.dtype == np.float32:
        acc = np.zeros((h, w), np.float32)
        for dy in range(size):
            for dx in range(size):
                acc = acc + np.float32(weights[dy * size + dx]) * img[ys[:, dy]][:, xs[:, dx]]
        return acc / np.float32(divisor)
    acc64 = np.zeros((h, w), np.int64)
    for dy in range(size):
        for dx in range(size):
            acc64 = acc64 + np.int64(weights[dy * size + dx]) * img[ys[:, dy]][:, xs[:, dx]].astype(np.int64)
    return _trunc_div(acc64, divisor).astype(np.int32)


def box_outputs(g: Graph, name: str, ins: list[np.ndarray], seed: int, k: int) -> list[np.ndarray]:
    spec = g.box(name).spec
    is_float = g.pixel == "float32"
    kern = spec.kernel
    if kern == "source":
        return [source(g.width, g.height, is_float, seed, k)]
    if kern in ("copy", "dup"):
        return [ins[0].copy() for _ in spec.outputs]
    if kern == "gain":
        if is_float:
            return [ins[0] * np.float32(spec.fparams[0]) + np.float32(spec.fparams[1])]
        f, o = (np.uint32(v & 0xFFFFFFFF) for v in spec.params)
        return [(ins[0].astype(np.uint32) * f + o).astype(np.int32)]
    if kern in ("add", "average"):
        if is_float:
            s = ins[0]
            for x in ins[1:]:
                s = s + x
            return [s / np.float32(len(ins)) if kern == "average" else s]
        if kern == "add":
            s32 = ins[0].astype(np.uint32)
            for x in ins[1:]:
                s32 = s32 + x.astype(np.uint32)
            return [s32.astype(np.int32)]
        s64 = sum(x.astype(np.int64) for x in ins)
        return [_trunc_div(np.asarray(s64), len(ins)).astype(np.int32)]
    if kern == "conv":
        n = spec.inputs[0].footprint[0]
        return [conv(ins[0], n, spec.conv[:-1], spec.conv[-1])]
    raise ValueError(f"no numpy reference for kernel {kern!r}")


def reference_digests(g: Graph, iterations: int, seed: int = 1) -> np.ndarray:
    """uint64 [iterations, sinks]: each sink's digest per iteration, sinks in declaration order."""
    sinks = [b.name for b in g.boxes if b.kernel == "sink"]
    out = np.zeros((iterations, len(sinks)), np.uint64)
    order = topological(g)
    for k in range(iterations):
        values: dict[int, np.ndarray] = {}
        for name in order:
            box = g.box(name)
            ins = [values[g.inputs[(name, p.name)]] for p in box.spec.inputs]
            if box.kernel == "sink":
                out[k, sinks.index(name)] = np.uint64(digest(ins[0]))
                continue
            for buf, img in zip(g.outputs(name), box_outputs(g, name, ins, seed, k)):
                values[buf.index] = img
    return out
