/*
 * Binary layouts shared by native/pipeline.c and jitterscope/pipeline/plan_format.py:
 * the plan the runtime executes, the result file it writes, and the heartbeat
 * page it keeps current while running.  `jitterscope-pipeline --layout` prints
 * the sizeof/offsetof of every struct here as JSON, and a test compares it with
 * the numpy dtypes, so the two sides cannot drift apart silently.
 *
 * Plan file  = js_plan_header, then n_subboxes js_plan_subbox, n_ops js_plan_op,
 *              n_threads js_plan_thread, n_signals js_plan_signal, n_consts int64,
 *              n_strings bytes (NUL-terminated strings; offsets index into them).
 * Result     = js_result_header, then iterations_done js_result_iter, then
 *              iterations_done * n_sinks uint64 digests (iteration-major), then,
 *              with JS_RESULT_TIMERS, iterations_done * n_subboxes js_result_timer.
 * Heartbeat  = js_heartbeat (mmap'ed, updated as iterations complete; readers poll it).
 * Little-endian, native alignment, x86-64 only (TSC timestamps).
 */
#ifndef JS_PIPELINE_RECORDS_H
#define JS_PIPELINE_RECORDS_H

#include <stdint.h>

#define JS_PLAN_MAGIC "JSPPLAN"       /* 7 chars + NUL */
#define JS_RESULT_MAGIC "JSPIPE"
#define JS_HEARTBEAT_MAGIC "JSPBEAT"
#define JS_PIPE_VERSION 1u

#define JS_MAX_PORTS 8
#define JS_MAX_PARAMS 8
#define JS_CPU_WORDS 16               /* CPU mask: 1024 CPUs */
#define JS_HEARTBEAT_RING 4096        /* latest iteration latencies kept in the heartbeat */

/* js_plan_header.flags */
#define JS_PLAN_MLOCK 1u              /* mlockall(MCL_CURRENT | MCL_FUTURE) */
#define JS_PLAN_HUGEPAGES 2u          /* madvise(MADV_HUGEPAGE) on the buffer pool */
#define JS_PLAN_GUARD 4u              /* tag every row with (buffer, iteration) and check reads */
#define JS_PLAN_TIMERS 8u             /* per-sub-box start/end timestamps of every iteration */

/* js_plan_header.wait_mode */
#define JS_WAIT_SPIN 0u
#define JS_WAIT_FUTEX 1u
#define JS_WAIT_HYBRID 2u             /* spin a while, then sleep on a futex */

/* js_plan_op.kind */
#define JS_OP_WAIT 1u
#define JS_OP_EXEC 2u
#define JS_OP_SIGNAL 3u

#define JS_NO_SINK 0xFFFFFFFFu

struct js_plan_header {
    char magic[8];           /* "JSPPLAN\0" */
    uint32_t version;        /* JS_PIPE_VERSION */
    uint32_t header_size;    /* sizeof(struct js_plan_header) */
    uint32_t subbox_size, op_size, thread_size, signal_size;  /* record sizes, checked */
    uint32_t n_subboxes, n_ops, n_threads, n_signals;
    uint32_t n_sinks, n_consts, n_strings, flags;
    uint32_t width, height, pixel_type, wait_mode;  /* pixel_type: 0 int32, 1 float32 */
    int32_t fifo_priority;   /* 0: normal scheduling */
    uint32_t spin_limit;     /* hybrid: pause loops before sleeping */
    uint64_t pool_bytes;     /* the buffer pool (memory map's total) */
    uint64_t iterations;
    uint64_t seed;           /* the source kernels' input */
    uint64_t tsc_hz;
    uint64_t period_tsc;     /* 0: back to back; else iteration k is released at t0 + k * period */
    uint64_t hang_tsc;       /* no iteration completed for this long: report a hang and stop */
    uint64_t cpu_mask[JS_CPU_WORDS];  /* where unpinned threads (cpu < 0) may run */
    uint64_t reserved[3];
};

struct js_plan_subbox {
    uint32_t kernel;         /* JS_K_* (pipeline_kernels.h) */
    uint32_t n_in, n_out;
    uint32_t row0, row1;     /* output rows [row0, row1) */
    uint32_t sink;           /* digest slot of a sink, JS_NO_SINK otherwise */
    uint32_t n_params, n_consts;
    uint32_t consts_off;     /* first of its n_consts in the int64 constants (conv weights, divisor) */
    uint32_t lib_off, sym_off;  /* user kernel: string table offsets of library path and symbol */
    uint32_t reserved;
    uint32_t in_buf[JS_MAX_PORTS], out_buf[JS_MAX_PORTS];    /* buffer ids (guard tags) */
    uint32_t in_row0[JS_MAX_PORTS], in_row1[JS_MAX_PORTS];   /* input rows read (footprint) */
    uint64_t in_off[JS_MAX_PORTS], out_off[JS_MAX_PORTS];    /* byte offsets in the pool */
    int64_t params[JS_MAX_PARAMS];
    double fparams[2];       /* float32 images: gain factor and offset */
};

struct js_plan_op {
    uint32_t kind;           /* JS_OP_* */
    uint32_t arg;            /* signal index (W, S) or sub-box index (E) */
};

struct js_plan_thread {
    uint32_t first_op, n_ops;
    int32_t cpu;             /* pinned to this CPU; -1: any CPU of cpu_mask (the OS schedules) */
    uint32_t reserved;
};

struct js_plan_signal {
    uint32_t tokens;         /* initial tokens */
    uint32_t reserved;
};

/* js_result_header.flags */
#define JS_RESULT_COMPLETE 1u        /* the file was finished (iterations_done valid) */
#define JS_RESULT_TIMERS 2u
#define JS_RESULT_INTERRUPTED 4u     /* stopped early by a signal */
#define JS_RESULT_HUNG 8u            /* stopped by the hang watchdog */

struct js_result_header {
    char magic[8];           /* "JSPIPE\0\0" */
    uint32_t version, header_size;
    uint32_t iter_size, timer_size;
    uint32_t flags, n_subboxes;
    uint32_t n_sinks, n_threads;
    uint64_t tsc_hz, t0_tsc;
    uint64_t iterations_requested, iterations_done;
    uint64_t guard_violations;
    uint64_t reserved[2];
};

struct js_result_iter {
    uint64_t release_tsc;    /* when the iteration was released (its start when back to back) */
    uint64_t start_tsc;      /* first sub-box started */
    uint64_t end_tsc;        /* last sub-box ended */
};

struct js_result_timer {
    uint64_t start_tsc, end_tsc;
};

struct js_heartbeat_entry {
    uint64_t iteration, latency_tsc;
};

struct js_heartbeat {
    char magic[8];           /* "JSPBEAT\0" */
    uint32_t version, header_size;
    uint64_t tsc_hz, t0_tsc;
    uint64_t iterations;     /* requested */
    uint64_t done;           /* iterations completed so far (written last, after the ring entry) */
    uint64_t ring_size;      /* JS_HEARTBEAT_RING; entry (k % ring_size) holds iteration k */
    uint64_t reserved[2];
    struct js_heartbeat_entry ring[JS_HEARTBEAT_RING];
};

#ifndef __cplusplus
_Static_assert(sizeof(struct js_plan_header) == 288, "js_plan_header is 288 bytes");
_Static_assert(sizeof(struct js_result_header) == 96, "js_result_header is 96 bytes");
_Static_assert(sizeof(struct js_result_iter) == 24, "js_result_iter is 24 bytes");
#endif

#endif
