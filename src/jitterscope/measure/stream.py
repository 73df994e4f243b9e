"""Streaming trace analysis: per CPU, in chunks of rows, CPUs in parallel processes.

The native parser (jitterscope-traceparse --cpu N) turns one CPU's raw pages into
activity and segment records on tmpfs; this module reads them a chunk at a time
(CHUNK_ROWS records, read into one reused buffer so resident memory does not
grow with the trace), writes the activity table as Parquet row groups, when it is
kept (a worker process encodes its CPU's rows as a Parquet file of its own, which the
analysing process joins into the table without re-encoding: parquet_concat.py), and keeps
only what the summary needs: each source's event count, the time each source took
in each detour (one sum per detour and source, summed chunk by chunk, so memory
follows the detours, not the segments or the CPUs), and, when asked, the work/timer
annotations that took time in a detour.  Measure's detours are disjoint; a
pipeline's iterations, attributed alike (pipeline/late.py, no activity table, no
functions), overlap.

Chunking changes no result: a detour that straddles two chunks of segments gets
a sum from each, and attribution.sum_pairs sums them again per (detour, source)
whatever the split; an annotation's container is the
last segment starting at or before it, so a later chunk's answer replaces an
earlier one's.  Thread names are worked out on the parser's string dictionary
(a few hundred entries), never per row, and string columns are written as
dictionary codes (Parquet's physical type stays a UTF-8 string, docs/run-format.md).

Source codes are provisional per CPU (in order of discovery) and renumbered once
all CPUs are done into the order `attribution.source_table` gives the whole
activity table: by the first row of each kind, then of each name.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jitterscope import atomic, childgroup, journal
from jitterscope.measure import peers
from jitterscope.measure.attribution import Attribution, Pairs, merge_spans, overlaps, reduce_pairs, sum_pairs
from jitterscope.measure.events import SourceEvents
from jitterscope.measure.parquet_concat import Concat
from jitterscope.measure.probe_format import THREAD_COMM_PREFIX
from jitterscope.measure.tsc import ns_per_tick, since_ns
from jitterscope.rundir import ACTIVITY_SCHEMA
from jitterscope.tracing.parse import (
    Detours,
    ParserCounts,
    lost_per_cpu,
    open_ended,
    raw_bytes,
    run_parser,
    scratch_parent,
    session_info,
    trace_cpus,
    trace_stats,
)
from jitterscope.tracing.records import (
    ACTIVITY_DTYPE,
    CLIPPED_START,
    CONTAINER_DTYPE,
    KINDS,
    NO_CONTAINER,
    PIECE_DTYPE,
)

COMPRESSION = "zstd"
_TIMES = ("start_ns", "end_ns")  # the activity table's times: delta-packed, not compressed
CHUNK_ROWS = 1 << 18  # records per chunk: ~10 MiB of activity, ~6 MiB of segments
THREAD = KINDS.index("thread")
ANNOTATIONS = (KINDS.index("work"), KINDS.index("timer"))
OWNING = 4  # kinds below this own time (thread, irq, softirq, nmi): a source's events
# the activity table as written: string columns as dictionary codes, read back as strings
_DICT = pa.dictionary(pa.int32(), pa.string())
WRITE_SCHEMA = pa.schema([pa.field(f.name, _DICT) if pa.types.is_string(f.type) else f for f in ACTIVITY_SCHEMA])
_KIND_DICT = pa.array(KINDS, pa.string())
_CODE = np.dtype("<i4")  # an activity row's provisional source code, as kept on scratch between the passes
_PROBE_COMM = re.compile(rf"{re.escape(THREAD_COMM_PREFIX)}\d+")


class RowSink(Protocol):
    """Where one CPU's activity rows go, chunk by chunk: the Parquet writer, or a worker's Arrow part."""

    def write_table(self, table: pa.Table) -> None: ...


@dataclass
class CpuJob:
    """What one CPU's analysis needs (picklable: it crosses to a worker process)."""

    trace_dir: Path
    cpu: int
    det_start: np.ndarray  # this CPU's detours (ns since t0), sorted by start; they may overlap (a pipeline's
    det_end: np.ndarray  # iterations in flight), each attributed whole
    window_ns: tuple[float, float] | None  # the probe's measured window: events count inside it
    t0_tsc: int
    hz: float
    parse_hz: float | None
    parse_window: tuple[int, int] | None
    open_end: bool  # the window's end is not the trace's own: each CPU's last activity ends at its last event
    own: frozenset[int]
    probe_tids: dict[int, int]
    functions: bool = True  # the work/timer functions run inside detours (measure's `functions`), else not kept
    chunk_rows: int | None = None  # None: CHUNK_ROWS
    scratch: str | None = None  # where the parser's records go (scratch_parent); None: the default temp dir


@dataclass
class CpuPart:
    """One CPU's result: small, whatever the trace's length."""

    cpu: int
    rows: int
    counts: ParserCounts
    kind_first: dict[str, int]  # first activity row of each kind / name (row order of this CPU)
    name_first: dict[str, int]
    sources: list[tuple[str, str]]  # provisional code → (kind, name); 0 is unexplained
    pairs: Pairs  # local detour, code, ns, start: summed per (detour, code)
    events: np.ndarray  # per provisional code
    ann_container: np.ndarray  # per annotation that took time in a detour, in row order
    ann_inside: np.ndarray
    ann_names: list[str] = field(default_factory=list)


class _Naming:
    """Thread names as the run shows them (measure/peers.py), on the string dictionary.

    Final name code = base code + n·variant, variant 0 plain, 1 ours, 2 another jitterscope's."""

    def __init__(self, strings: list[str], own: frozenset[int], probe_tids: dict[int, int]) -> None:
        base = list(strings)
        index = {s: i for i, s in enumerate(base)}
        self.active = bool(own)  # as peers.name_threads: nothing renamed without own threads
        self.own = np.array(sorted(own), np.int64)
        self.tids = np.array(sorted(probe_tids), np.int64)
        tid_codes = []
        for t in self.tids:
            name = f"{THREAD_COMM_PREFIX}{probe_tids[int(t)]}"
            if name not in index:
                index[name] = len(base)
                base.append(name)
            tid_codes.append(index[name])
        self.tid_codes = np.array(tid_codes, np.int64)
        self.n = len(base)
        self.strings = base + [s + peers.SELF_SUFFIX for s in base] + [s + peers.OTHER_SUFFIX for s in base]
        self.dictionary = pa.array(self.strings, pa.string())
        self.is_probe = np.array([peers.PROBE_THREAD.search(s) is not None for s in base], bool)
        self.is_tool = np.array([re.search(peers.TOOL_COMMS, s) is not None for s in base], bool)
        # source_table sends the probe's own threads to `unexplained`
        self.excluded = np.array([_PROBE_COMM.fullmatch(s) is not None for s in self.strings], bool)

    def codes(self, name: np.ndarray, kind: np.ndarray, pid: np.ndarray) -> np.ndarray:
        codes = name.astype(np.int32)  # int32 throughout: a dictionary's indices, never widened per row
        if not self.active or len(codes) == 0:
            return codes
        thread = kind == THREAD
        pid = np.ascontiguousarray(pid)  # a field of the records (40-byte strides): compared once per thread id
        if len(self.tids):
            mapped = thread & _member(pid, self.tids)
            if mapped.any():
                codes[mapped] = self.tid_codes[np.searchsorted(self.tids, pid[mapped])]
        ours = np.flatnonzero(thread & _member(pid, self.own))  # few rows: worked on by index
        mine = ours[~self.is_probe[codes[ours]]]
        other = np.flatnonzero(self.is_tool[codes] & thread)
        other = other[~_member(pid[other], self.own)]
        codes[mine] += self.n
        codes[other] += 2 * self.n
        return codes


class _Sources:
    """Provisional source codes of (kind, final name code), in order of discovery."""

    def __init__(self, naming: _Naming) -> None:
        self.naming = naming
        self.width = len(naming.strings)
        # keys and codes in int32 while they fit (the strings of a run are thousands): no row widened to 8 bytes
        self.key_type = np.int32 if len(KINDS) * self.width < 2**31 else np.int64
        self.lookup = np.full(len(KINDS) * self.width, -1, np.int32)
        self.sources: list[tuple[str, str]] = [("unexplained", "unexplained")]

    def codes(self, kind: np.ndarray, name: np.ndarray) -> np.ndarray:
        key = kind.astype(self.key_type) * self.key_type(self.width) + name
        code = self.lookup[key]
        new = code < 0
        if new.any():
            for k in np.unique(key[new]):
                kk, nn = divmod(int(k), self.width)
                if kk == THREAD and self.naming.excluded[nn]:
                    self.lookup[k] = 0
                else:
                    self.lookup[k] = len(self.sources)
                    self.sources.append((KINDS[kk], self.naming.strings[nn]))
            code = self.lookup[key]
        return code


def _first_rows(codes: np.ndarray, seen: np.ndarray, offset: int, labels: list[str], out: dict[str, int]) -> None:
    """Record the first row of each code not seen in earlier chunks."""
    fresh = np.flatnonzero(~seen[codes])
    if len(fresh) == 0:
        return
    first = np.full(len(seen), len(codes), np.int64)
    np.minimum.at(first, codes[fresh], fresh)  # each code's first row (a sort by np.unique cost 5x)
    uniq = np.flatnonzero(first < len(codes))
    for u, f in zip(uniq.tolist(), first[uniq].tolist()):
        out[labels[u]] = offset + f
    seen[uniq] = True


class _Records:
    """Records lo..hi of a parser file, read into one buffer reused from chunk to chunk: resident memory
    stays bounded (no map of the whole file) and no chunk pays for fresh pages.  A chunk is valid until
    the next read."""

    def __init__(self, path: Path, dtype: np.dtype) -> None:
        self.file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed by close(), in a finally)
        self.dtype = dtype
        self.n = os.fstat(self.file.fileno()).st_size // dtype.itemsize
        self.buf = np.zeros(0, dtype)

    def read(self, lo: int, hi: int) -> np.ndarray:
        k = max(0, min(hi, self.n) - lo)
        if k > len(self.buf):
            self.buf = np.zeros(k, self.dtype)
        out = self.buf[:k]
        self.file.seek(lo * self.dtype.itemsize)
        view = out.data.cast("B")
        got = 0
        while got < len(view):
            r = self.file.readinto(view[got:])
            if not r:
                raise OSError(f"{self.file.name}: ends before record {hi}")
            got += r
        return out

    def close(self) -> None:
        self.file.close()


@contextmanager
def _reading(path: Path, dtype: np.dtype) -> Iterator[_Records]:
    r = _Records(path, dtype)
    try:
        yield r
    finally:
        r.close()


def _owner_codes(codes: _Records, rows: np.ndarray, span: int) -> np.ndarray:
    """The source codes of the activities segments name as owners: nearly all recent (read as one
    range), a few long-open ones (a thread slice that began long ago) read one by one."""
    if len(rows) == 0:
        return np.zeros(0, np.int32)
    hi = int(rows.max()) + 1
    lo = max(int(rows.min()), hi - span)
    far = rows < lo
    out = codes.read(lo, hi)[np.where(far, 0, rows - lo)]
    for r in np.unique(rows[far]).tolist():
        out[rows == r] = codes.read(r, r + 1)[0]
    return out


def _member(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """np.isin for the handful of thread ids a run names (a few comparisons beat a sort)."""
    if len(wanted) > 16:
        return np.isin(values, wanted)
    out = np.zeros(len(values), bool)
    for w in wanted.tolist():
        out |= values == w
    return out


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def _dict_column(codes: np.ndarray, dictionary: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32, copy=False)), dictionary)


@dataclass
class _ActivityPass:
    """What the pass over one CPU's activity rows keeps: first rows, event counts and the annotations
    that took time inside a detour (everything else has gone to the Parquet writer, if any)."""

    kind_first: dict[str, int] = field(default_factory=dict)
    name_first: dict[str, int] = field(default_factory=dict)
    events: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    ann_owner: list[np.ndarray] = field(default_factory=list)  # their containers' owner rows
    ann_inside: list[np.ndarray] = field(default_factory=list)
    ann_names: list[str] = field(default_factory=list)


def _activity_pass(
    job: CpuJob,
    act_path: Path,
    cont_path: Path,
    code_path: Path,
    naming: _Naming,
    sources: _Sources,
    detail_dict: pa.Array,
    writer: RowSink | None,
) -> _ActivityPass:
    """Name, code, count and write (to `writer`, unless None) the activity rows chunk by chunk; each row's
    source code goes to `code_path` for the pieces (4 bytes a row, not the 64 of the record it would re-read).
    The annotations' containers (`cont_path`, one per annotation in row order) are read alongside."""
    st = _ActivityPass()
    chunk = job.chunk_rows or CHUNK_ROWS
    ds, de = (job.det_start, job.det_end) if job.functions else (job.det_start[:0], job.det_end[:0])
    if len(ds) > 1 and (ds[1:] < de[:-1]).any():  # an annotation's time inside overlapping detours: inside their union
        ds, de = merge_spans(ds, de, 0)
    kind_seen = np.zeros(len(KINDS), bool)
    name_seen = np.zeros(len(naming.strings), bool)
    n_ann = 0
    with (
        open(code_path, "wb") as codes_out,
        _reading(act_path, ACTIVITY_DTYPE) as acts,
        _reading(cont_path, CONTAINER_DTYPE) as containers,
    ):
        for lo in range(0, acts.n, chunk):
            a = acts.read(lo, lo + chunk)
            kind = a["kind"].astype(np.int32)
            name = naming.codes(a["name"], kind, a["pid"])
            code = sources.codes(kind, name)
            code.astype(_CODE, copy=False).tofile(codes_out)
            start = since_ns(a["start_tsc"], job.t0_tsc, job.hz)
            end = since_ns(a["end_tsc"], job.t0_tsc, job.hz)
            _first_rows(kind, kind_seen, lo, KINDS, st.kind_first)
            _first_rows(name, name_seen, lo, naming.strings, st.name_first)
            if job.window_ns is not None:
                w0, w1 = job.window_ns
                sel = (code != 0) & ((a["flags"] & CLIPPED_START) == 0) & (kind < OWNING)
                sel &= (start >= w0) & (start <= w1)
                got = np.bincount(code[sel], minlength=len(sources.sources))
                st.events = np.pad(st.events, (0, len(got) - len(st.events))) + got
            ann = np.flatnonzero((kind == ANNOTATIONS[0]) | (kind == ANNOTATIONS[1]))
            n_ann += len(ann)
            if len(ann) and len(ds):
                i, _, ov, _ = overlaps(start[ann], end[ann], ds, de)
                inside = np.bincount(i, weights=ov, minlength=len(ann)).astype(np.int64)
                took = np.flatnonzero(inside > 0)
                st.ann_owner.append(containers.read(n_ann - len(ann), n_ann)[took].astype(np.int64))
                st.ann_inside.append(inside[took])
                st.ann_names += [naming.strings[c] for c in name[ann[took]].tolist()]
            if writer is not None:
                writer.write_table(
                    pa.table(
                        [
                            pa.array(a["cpu"]),
                            pa.array(start),
                            pa.array(end),
                            _dict_column(kind, _KIND_DICT),
                            _dict_column(name, naming.dictionary),
                            pa.array(a["depth"]),
                            _dict_column(a["detail"], detail_dict),
                        ],
                        schema=WRITE_SCHEMA,
                    )
                )
            del a, kind, name, code, start, end
    return st


def _piece_pass(job: CpuJob, code_path: Path, piece_path: Path) -> Pairs:
    """The parser's (detour, segment) overlaps as (detour, source, ns, start), summed per detour and
    source chunk by chunk and again over the chunks (a detour cut by a chunk's edge summed whole)."""
    chunk = job.chunk_rows or CHUNK_ROWS
    sums: list[Pairs] = []
    with _reading(piece_path, PIECE_DTYPE) as pieces, _reading(code_path, _CODE) as codes:
        for lo in range(0, pieces.n, chunk):
            p = pieces.read(lo, lo + chunk)
            src = _owner_codes(codes, p["owner"].astype(np.int64), 4 * chunk)
            sums.append(sum_pairs([p["detour"]], [src], [p["ns"]], [p["start_ns"]]))
    return sum_pairs(*(list(x) for x in zip(*sums))) if sums else sum_pairs([], [], [], [])


def _container_codes(code_path: Path, owners: np.ndarray, chunk: int) -> np.ndarray:
    """The source codes of the annotations' containers (0: no segment before it, unexplained)."""
    out = np.zeros(len(owners), np.int64)
    known = np.flatnonzero(owners != NO_CONTAINER)
    with _reading(code_path, _CODE) as codes:
        for lo in range(0, len(known), chunk):
            k = known[lo : lo + chunk]
            out[k] = _owner_codes(codes, owners[k], 4 * chunk)
    return out


def analyse_cpu(job: CpuJob, writer: RowSink | None) -> CpuPart:
    """Parse one CPU's capture and analyse it chunk by chunk; its activity rows go to `writer` (None: they
    are not kept, only what the attribution and the counts need)."""
    with journal.scratch("jitterscope-parse-", job.scratch) as tmp:  # journalled: kill -9 leaves nothing
        out = Path(tmp)
        det_path = out / "detours.bin"
        np.column_stack((job.det_start, job.det_end)).astype("<i8").tofile(det_path)
        detours = Detours(det_path, job.t0_tsc, ns_per_tick(job.hz))
        counts = run_parser(
            job.trace_dir,
            out,
            tsc_hz=job.parse_hz,
            window=job.parse_window,
            cpu=job.cpu,
            detours=detours,
            open_end=job.open_end,
        )
        strings = [s.decode("utf-8", "replace") for s in (out / "strings.bin").read_bytes().split(b"\0")[:-1]]
        naming = _Naming(strings, job.own, job.probe_tids)
        sources = _Sources(naming)
        act_path, code_path = out / "activity.bin", out / "codes.bin"
        dictionary = pa.array(strings, pa.string())
        acts = _activity_pass(job, act_path, out / "containers.bin", code_path, naming, sources, dictionary, writer)
        pairs = _piece_pass(job, code_path, out / "pieces.bin")
        container = _container_codes(code_path, _cat(acts.ann_owner), job.chunk_rows or CHUNK_ROWS)
        return CpuPart(
            cpu=job.cpu,
            rows=int(act_path.stat().st_size // ACTIVITY_DTYPE.itemsize),
            counts=counts,
            kind_first=acts.kind_first,
            name_first=acts.name_first,
            sources=sources.sources,
            pairs=pairs,
            events=np.pad(acts.events, (0, len(sources.sources) - len(acts.events))),
            ann_container=container,
            ann_inside=_cat(acts.ann_inside),
            ann_names=acts.ann_names,
        )


def _parquet_writer(path: Path, compression: str) -> pq.ParquetWriter:
    """The activity table's writer (a worker's part is written alike: parts join without re-encoding).

    No Arrow schema is stored, so the dictionary-coded columns read back as the documented strings."""
    return pq.ParquetWriter(
        path,
        WRITE_SCHEMA,
        # delta-packed times are as small compressed or not (+0.1%): their zstd was a tenth of the encoding
        compression={f.name: "none" if f.name in _TIMES else compression for f in WRITE_SCHEMA},
        store_schema=False,
        use_dictionary=["kind", "name", "detail"],
        # statistics of the dictionary columns took a third of the writing and no reader prunes on them
        write_statistics=["cpu", "start_ns", "end_ns", "depth"],
        # times rise row by row: deltas take a quarter of the space and a quarter of the CPU
        column_encoding=dict.fromkeys(_TIMES, "DELTA_BINARY_PACKED"),
    )


@contextmanager
def activity_writer(path: Path, compression: str = COMPRESSION) -> Iterator[pq.ParquetWriter]:
    """The activity table, written row group by row group (atomically: whole or not at all)."""
    with atomic.atomic_path(path, durable=compression != "none") as tmp:
        writer = _parquet_writer(tmp, compression)
        try:
            yield writer
        finally:
            writer.close()


class _ParquetPart:
    """A worker's activity rows as a Parquet file of their own on tmpfs, encoded in the worker: the
    analysing process joins the parts' column chunks into the table without decoding them
    (parquet_concat.py), so the encoding, most of the work on the rows, runs on every core.  (An
    Arrow IPC part encoded by the analysing process left --jobs 2 slower than --jobs 1.)"""

    def __init__(self, path: Path) -> None:
        self.writer = _parquet_writer(path, COMPRESSION)

    def write_table(self, table: pa.Table) -> None:
        self.writer.write_table(table)

    def close(self) -> None:
        self.writer.close()


def _in_worker(args: tuple[CpuJob, Path | None]) -> CpuPart:
    job, part = args
    if part is None:
        return analyse_cpu(job, None)
    out = _ParquetPart(part)
    try:
        return analyse_cpu(job, out)
    finally:
        out.close()


def run_jobs(jobs: list[CpuJob], activity_path: Path | None, processes: int) -> list[CpuPart]:
    """Analyse every CPU (in `processes` processes when more than one: this one and `processes` - 1
    workers) into one activity table (None: its rows are not kept).  Workers are forked only from a process
    that runs no other thread (a command run in-process by a test runner: childgroup.ForkedPool)."""
    if threading.active_count() > 1:
        processes = 1
    parent = scratch_parent([raw_bytes(j.trace_dir, j.cpu) for j in jobs], processes)
    jobs = [replace(j, scratch=parent) for j in jobs]
    if processes <= 1 or len(jobs) <= 1:
        if activity_path is None:
            return [analyse_cpu(j, None) for j in jobs]
        with activity_writer(activity_path) as w:
            return [analyse_cpu(j, w) for j in jobs]
    n = min(processes, len(jobs))
    parts = journal.scratch("jitterscope-parts-", jobs[0].scratch) if activity_path is not None else nullcontext()
    with parts as tmp:
        work = [(j, None if tmp is None else Path(tmp) / f"cpu{j.cpu}.parquet") for j in jobs]
        with childgroup.ForkedPool(n - 1) as pool:
            theirs = [pool.submit(_in_worker, w) for i, w in enumerate(work) if i % n]
            # this process takes its share meanwhile: a worker forked for it would start cold (its
            # pages copied from this one's as it touches them: a fifth more CPU per CPU analysed)
            done = {p.cpu: p for p in map(_in_worker, work[::n])}
            done.update((p.cpu, p) for p in map(pool.result, theirs))
        if activity_path is not None:
            with atomic.atomic_path(activity_path) as dest, open(dest, "wb") as out:
                table = Concat(out)
                for _, path in work:  # in CPU order
                    assert path is not None
                    table.add(path)
                    path.unlink()
                table.close()
    return [done[j.cpu] for j in jobs]


@dataclass
class Merged:
    """All CPUs' parts, in the numbering of the whole run."""

    attribution: Attribution
    events: SourceEvents | None
    functions_in: tuple[np.ndarray, np.ndarray, list[str]]  # container, ns inside detours, name
    counts: ParserCounts


def merge(
    parts: list[CpuPart],
    det_start: np.ndarray,
    det_end: np.ndarray,
    det_offset: dict[int, int],
    windows: dict[int, tuple[float, float]] | None,
) -> Merged:
    """One run's attribution, event counts and annotations from its CPUs' parts (in CPU order)."""
    parts = sorted(parts, key=lambda p: p.cpu)
    kind_first: dict[str, int] = {}
    name_first: dict[str, int] = {}
    offset = 0
    for p in parts:
        for k, r in p.kind_first.items():
            kind_first.setdefault(k, offset + r)
        for n, r in p.name_first.items():
            name_first.setdefault(n, offset + r)
        offset += p.rows
    found = {s for p in parts for s in p.sources[1:]}
    order = sorted(found, key=lambda s: (kind_first[s[0]], name_first[s[1]]))
    sources: list[tuple[str, str]] = [("unexplained", "unexplained"), *order]
    final = {s: i for i, s in enumerate(sources)}
    pd, ps, pn, pt = [], [], [], []
    counts = np.zeros(len(sources), np.int64)
    cpus: list[list[int]] = [[] for _ in sources]
    containers, inside, names = [], [], []
    for p in parts:
        remap = np.array([final[s] for s in p.sources], np.int64)
        d, s, ns, t = p.pairs
        pd.append(d + det_offset.get(p.cpu, 0))
        ps.append(remap[s])
        pn.append(ns)
        pt.append(t)
        np.add.at(counts, remap, p.events)
        for code in remap[np.flatnonzero(p.events)]:
            cpus[int(code)].append(p.cpu)
        containers.append(remap[p.ann_container])
        inside.append(p.ann_inside)
        names += p.ann_names
    att = reduce_pairs(pd, ps, pn, pt, det_start, det_end, sources)
    events = None
    if windows is not None:
        exposure = sum(max(0.0, hi - lo) for lo, hi in windows.values()) / 1e9
        events = SourceEvents(counts, cpus, exposure)
    merged_counts: ParserCounts = {
        "cpus": {k: v for p in parts for k, v in p.counts.get("cpus", {}).items()},
        "markers": [m for p in parts for m in p.counts.get("markers", [])],
    }
    return Merged(att, events, (_cat(containers), _cat(inside), names), merged_counts)


def default_jobs(probed: list[int] | None = None) -> int:
    """Every CPU this process may use, less the ones being probed (when a probe still runs)."""
    mine = os.sched_getaffinity(0)
    return max(1, len(mine - set(probed or ())))


@dataclass(frozen=True)
class TraceFacts:
    """What the parser is told of a capture: the session's TSC rate and window (`open_end`: not closed by the
    trace's own stop marker, parse.open_ended), and the ring buffer's statistics."""

    hz: float | None
    window: tuple[int, int] | None
    open_end: bool
    stats: dict[str, dict[str, int]]


def trace_facts(trace_dir: Path) -> TraceFacts:
    info = session_info(trace_dir)
    hz = info.get("tsc_hz")
    window = (int(info["window"][0]), int(info["window"][1])) if info.get("window") else None
    return TraceFacts(float(hz) if hz else None, window, open_ended(info), trace_stats(trace_dir))


__all__ = ["CpuJob", "CpuPart", "Merged", "analyse_cpu", "lost_per_cpu", "merge", "run_jobs", "trace_cpus"]
