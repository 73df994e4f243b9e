"""Split every detour's time among the kernel activities that overlap it.

Input is the probe's detours and the trace's *segments*: a partition of each
CPU's traced time where every piece belongs to the innermost time-owning
context active then (NMI inside hard IRQ inside softirq inside a task's slice).
So every nanosecond of a detour counts once, to that innermost context; what no
segment covers, or what the probe's own thread owned (it was "running" but did
not get to run: hypervisor, SMI), is `unexplained`.  Fully vectorised: the
overlap of D detours with S segments costs O((D + S) log S + pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jitterscope.measure.probe_format import THREAD_COMM_PREFIX

UNEXPLAINED = ("unexplained", "unexplained")


@dataclass
class Attribution:
    """One row per (detour, source) with the ns the source took inside it."""

    detour: np.ndarray  # int64 row index into the detours
    source: np.ndarray  # int32 index into `sources`
    ns: np.ndarray  # int64
    offset_ns: np.ndarray  # int64 first time the source took time, from the detour start
    sources: list[tuple[str, str]]  # (kind, name); index 0 is `unexplained`


def _dictionary(values: Any) -> tuple[np.ndarray, list[str]]:
    """Integer codes and their dictionary for a column of strings (Arrow or numpy)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array([str(v) for v in values], pa.string())
    if not pa.types.is_dictionary(values.type):
        values = pc.dictionary_encode(values)
    idx = values.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return idx, [str(v) for v in values.dictionary.to_pylist()]


def source_table(kinds: Any, names: Any) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Map each activity row to a source index (0 = unexplained).

    Rows of the probe's own threads (`js-probe/N`; another jitterscope's carry the
    suffix " (another jitterscope)", given by thread id in measure/peers.py) map to 0:
    time the probe "ran" but did not loop was taken by something the kernel did not see.
    Works on dictionary codes, so millions of rows cost a few array passes, not a Python loop.
    """
    ki, kd = _dictionary(kinds)
    ni, nd = _dictionary(names)
    n_names = max(len(nd), 1)
    key = ki * n_names + ni
    present = np.flatnonzero(np.bincount(key, minlength=len(kd) * n_names)) if len(key) else np.zeros(0, np.int64)
    sources: list[tuple[str, str]] = [UNEXPLAINED]
    index: dict[tuple[str, str], int] = {UNEXPLAINED: 0}
    lookup = np.zeros(len(kd) * n_names, dtype=np.int32)
    for k in present:
        kind, name = kd[k // n_names], nd[k % n_names]
        if kind == "thread" and name.startswith(THREAD_COMM_PREFIX) and name[len(THREAD_COMM_PREFIX) :].isdigit():
            continue
        code = index.setdefault((kind, name), len(sources))
        if code == len(sources):
            sources.append((kind, name))
        lookup[k] = code
    return sources, lookup[key] if len(key) else np.zeros(0, np.int32)


def merge_spans(start: np.ndarray, end: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """The union of the spans [start, end), with spans less than `gap` apart joined: (starts, ends), sorted."""
    if len(start) == 0:
        return start, end
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum.accumulate(end[order])
    first = np.ones(len(s), bool)
    first[1:] = s[1:] > e[:-1] + gap
    last = np.append(first[1:], True)
    return s[first], e[last]


def overlaps(
    a: np.ndarray, b: np.ndarray, s_start: np.ndarray, s_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All (interval, segment) pairs that overlap, for sorted disjoint segments.

    Returns interval index, segment index, overlap length and overlap start.
    """
    lo = np.searchsorted(s_end, a, side="right")  # first segment ending after a
    hi = np.searchsorted(s_start, b, side="left")  # first segment starting at/after b
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    if total == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    idx = np.repeat(np.arange(len(a)), counts)
    first = np.repeat(lo, counts)
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    seg = first + within
    start = np.maximum(a[idx], s_start[seg])
    ov = np.minimum(b[idx], s_end[seg]) - start
    keep = ov > 0
    return idx[keep], seg[keep], ov[keep], start[keep]


def attribute(
    det_cpu: np.ndarray,
    det_start: np.ndarray,
    det_dur: np.ndarray,
    seg_cpu: np.ndarray,
    seg_start: np.ndarray,
    seg_end: np.ndarray,
    seg_source: np.ndarray,
    sources: list[tuple[str, str]],
) -> Attribution:
    """Attribute detours (ns) to segment owners (ns); see the module docstring."""
    det_cpu = np.asarray(det_cpu)
    det_start = np.asarray(det_start, dtype=np.int64)
    det_end = det_start + np.asarray(det_dur, dtype=np.int64)
    parts_d: list[np.ndarray] = []
    parts_s: list[np.ndarray] = []
    parts_ns: list[np.ndarray] = []
    parts_t: list[np.ndarray] = []
    for cpu in np.unique(det_cpu):
        dsel = np.flatnonzero(det_cpu == cpu)
        ssel = np.flatnonzero(seg_cpu == cpu)
        if len(ssel) == 0:
            continue
        order = ssel[np.argsort(seg_start[ssel], kind="stable")]
        i, j, ov, st = overlaps(det_start[dsel], det_end[dsel], seg_start[order], seg_end[order])
        parts_d.append(dsel[i])
        parts_s.append(seg_source[order][j])
        parts_ns.append(ov)
        parts_t.append(st)
    return reduce_pairs(parts_d, parts_s, parts_ns, parts_t, det_start, det_end, sources)


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def sum_pairs(
    parts_d: list[np.ndarray], parts_s: list[np.ndarray], parts_ns: list[np.ndarray], parts_t: list[np.ndarray]
) -> Pairs:
    """The explained (detour, source, ns, start) pieces summed per (detour, source), earliest start kept,
    sorted by (detour, source).  Summing sums again gives the same pairs, so a stream of pieces can be
    summed chunk by chunk and its sums summed once more: memory follows the detours, not the segments."""
    if parts_d:
        d = np.concatenate(parts_d).astype(np.int64)
        s = np.concatenate(parts_s).astype(np.int32)
        ns = np.concatenate(parts_ns).astype(np.int64)
        t = np.concatenate(parts_t).astype(np.int64)
    else:
        d, s, ns, t = np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    explained = s != 0
    if not explained.all():
        d, s, ns, t = d[explained], s[explained], ns[explained], t[explained]
    order = np.lexsort((t, s, d))
    d, s, ns, t = d[order], s[order], ns[order], t[order]
    if len(d):
        new = np.ones(len(d), dtype=bool)
        new[1:] = (d[1:] != d[:-1]) | (s[1:] != s[:-1])
        starts = np.flatnonzero(new)
        if len(starts) < len(d):
            d, s, t = d[starts], s[starts], t[starts]
            ns = np.add.reduceat(ns, starts)
    return d, s, ns, t


def reduce_pairs(
    parts_d: list[np.ndarray],
    parts_s: list[np.ndarray],
    parts_ns: list[np.ndarray],
    parts_t: list[np.ndarray],
    det_start: np.ndarray,
    det_end: np.ndarray,
    sources: list[tuple[str, str]],
) -> Attribution:
    """(detour, source, ns, start) overlap pieces, in any grouping, into the attribution.

    A detour's pieces may come from several batches of segments (the streaming analysis
    overlaps one time chunk of segments at a time): the sums and earliest starts per
    (detour, source) do not depend on how the segments were split."""
    d, s, ns, t = sum_pairs(parts_d, parts_s, parts_ns, parts_t)
    offset = t - det_start[d] if len(d) else t
    # Whatever no source covered is unexplained.
    covered = np.bincount(d, weights=ns, minlength=len(det_start)).astype(np.int64)
    rest = det_end - det_start - covered
    ud = np.flatnonzero(rest > 0)
    det = np.concatenate([d, ud])
    src = np.concatenate([s, np.zeros(len(ud), np.int32)])
    amount = np.concatenate([ns, rest[ud]])
    offs = np.concatenate([offset, np.zeros(len(ud), np.int64)])
    order = np.lexsort((offs, det))
    return Attribution(det[order], src[order], amount[order], offs[order], sources)


def attribute_annotations(
    ann_cpu: np.ndarray,
    ann_start: np.ndarray,
    ann_end: np.ndarray,
    det_cpu: np.ndarray,
    det_start: np.ndarray,
    det_dur: np.ndarray,
    seg_cpu: np.ndarray,
    seg_start: np.ndarray,
    seg_end: np.ndarray,
    seg_source: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """For annotations (work items, timer callbacks): their container source and
    their time inside detours.  Used to list the functions a source ran."""
    container = np.zeros(len(ann_start), dtype=np.int32)
    inside = np.zeros(len(ann_start), dtype=np.int64)
    det_cpu = np.asarray(det_cpu)
    for cpu in np.unique(ann_cpu):
        asel = np.flatnonzero(ann_cpu == cpu)
        ssel = np.flatnonzero(seg_cpu == cpu)
        if len(ssel):
            order = ssel[np.argsort(seg_start[ssel], kind="stable")]
            k = np.searchsorted(seg_start[order], ann_start[asel], side="right") - 1
            ok = k >= 0
            container[asel[ok]] = seg_source[order][k[ok]]
        dsel = np.flatnonzero(det_cpu == cpu)
        if len(dsel):
            dorder = dsel[np.argsort(det_start[dsel], kind="stable")]
            ds = np.asarray(det_start)[dorder]
            de = ds + np.asarray(det_dur)[dorder]
            # Detours on one CPU are disjoint: reuse the segment-overlap routine.
            i, _, ov, _ = overlaps(ann_start[asel], ann_end[asel], ds, de)
            np.add.at(inside, asel[i], ov)
    return container, inside
