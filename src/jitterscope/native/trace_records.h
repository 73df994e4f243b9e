/* Output records of jitterscope-traceparse, shared with Python.
 *
 * src/jitterscope/tracing/records.py declares the same layouts as numpy
 * dtypes; `jitterscope-traceparse --layout` prints sizeof/offsetof as JSON and
 * tests/integration/test_trace_layout.py checks the two agree.  Change both
 * together.  All integers are little-endian (the parser runs where x86-tsc
 * traces are recorded or re-analysed, i.e. on x86).
 */
#ifndef JITTERSCOPE_TRACE_RECORDS_H
#define JITTERSCOPE_TRACE_RECORDS_H

#include <stdint.h>

/* Activity kinds: four own time, two are annotations inside a container. */
enum js_kind {
    JS_KIND_THREAD = 0,
    JS_KIND_IRQ = 1,
    JS_KIND_SOFTIRQ = 2,
    JS_KIND_NMI = 3,
    JS_KIND_WORK = 4,
    JS_KIND_TIMER = 5,
};

/* flags */
#define JS_CLIPPED_START 1u /* began before the capture (or a lost-events gap) */
#define JS_CLIPPED_END 2u   /* still open at the capture end (or a gap) */
#define JS_PREEMPTED 4u     /* thread slice ended with the task still runnable (sched_switch prev_state) */

/* activity.bin: one interval of kernel activity on one CPU (raw TSC). */
struct js_activity {
    int64_t start_tsc;
    int64_t end_tsc;
    int32_t cpu;
    int32_t pid;      /* thread: its pid; others: the interrupted task's pid */
    uint32_t name;    /* index into strings.bin */
    uint32_t detail;  /* index into strings.bin */
    int16_t depth;    /* nesting level: thread 0, each enclosing context +1 */
    uint8_t kind;     /* enum js_kind */
    uint8_t flags;    /* JS_CLIPPED_* */
    uint32_t reserved;
};

/* segments.bin: a piece of a CPU's traced time owned by the innermost
 * time-owning activity (thread, softirq, irq, nmi).  Sorted by (cpu, start),
 * disjoint within a CPU. */
struct js_segment {
    int64_t start_tsc;
    int64_t end_tsc;
    int32_t cpu;
    uint32_t owner;   /* row index into activity.bin */
};

/* pieces.bin (with --detours): the (detour, segment) overlaps of a CPU's
 * detours with its segments, in ns since t0 as measure/tsc.py since_ns rounds
 * them, longer than 0 ns, summed per detour and owner's (kind, name, pid): the
 * sum, the earliest start and the first owner's row; by detour. */
struct js_piece {
    int64_t detour;   /* index into the detours given (detours.bin order) */
    int64_t ns;       /* the overlap's length */
    int64_t start_ns; /* the overlap's start */
    uint32_t owner;   /* row index into activity.bin: the segment's owner */
    uint32_t reserved;
};

/* containers.bin (with --detours): one uint32 per work/timer activity, in row
 * order: the owner of the last segment starting at or before it (ns), or
 * JS_NO_CONTAINER when none does. */
#define JS_NO_CONTAINER 0xffffffffu

#endif
