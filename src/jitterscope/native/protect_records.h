/*
 * Binary layout of the protect controller's output file, shared by protect*.c
 * and jitterscope/protect/records.py.  `jitterscope-protect --layout` prints
 * the sizeof/offsetof of every struct here (and of js_report.h's page) as
 * JSON, and a test compares them with the numpy dtypes.
 *
 * File = one jsp_header, then 80-byte records back to back in the order the
 * writer drained them (per control thread in time order; threads and
 * heartbeats interleaved).  Every record starts with (kind, cpu, flags, t_ns);
 * t_ns is nanoseconds since the header's t0_ns (CLOCK_MONOTONIC).
 * Little-endian, native alignment (x86-64).
 */
#ifndef JS_PROTECT_RECORDS_H
#define JS_PROTECT_RECORDS_H

#include <stdint.h>

#define JSP_MAGIC "JSPROTC"     /* 7 chars + NUL */
#define JSP_VERSION 1u
#define JSP_FILE_COMPLETE 1u    /* jsp_header.flags: the controller ended cleanly */

enum jsp_kind {
    JSP_SAMPLE = 1,             /* one sampling decision of a control thread */
    JSP_SUSPENSION = 2,         /* one suspension with its actual start and end */
    JSP_BEAT = 3,               /* one iteration of the critical program */
};

/* jsp_sample.flags */
#define JSP_S_ON 1u             /* protection active in this phase */
#define JSP_S_WOULD 2u          /* the law said suspend, but the phase is off */
#define JSP_S_STALE 4u          /* no fresh signal value in this window (last one held) */
#define JSP_S_NOSIGNAL 8u       /* no signal value at all yet */
#define JSP_S_EVENT 16u         /* event-based sampling: taken on a counter's overflow at the budget, not on a timer */

/* jsp_suspension.flags */
#define JSP_X_CLIPPED 1u        /* shortened to stay within the RT budget */
#define JSP_X_UNCONFIRMED 2u    /* the actuator did not confirm the stop (freezer still FREEZING) */
#define JSP_X_NOSTOP 4u         /* no report page: when the program stopped is unknown */

struct jsp_header {
    char magic[8];              /* "JSPROTC\0" */
    uint32_t version;           /* JSP_VERSION */
    uint32_t header_size;       /* sizeof(struct jsp_header): records start here */
    uint32_t record_size;       /* 80 */
    uint32_t flags;             /* JSP_FILE_COMPLETE once finished */
    int64_t t0_ns;              /* CLOCK_MONOTONIC of time 0 */
    uint64_t n_records;         /* valid when JSP_FILE_COMPLETE */
    uint64_t dropped;           /* records lost to full rings */
    uint64_t beats_lost;        /* heartbeats overwritten before they were read */
    uint64_t reserved[1];
};

struct jsp_sample {
    uint16_t kind;              /* JSP_SAMPLE */
    uint16_t cpu;               /* best-effort CPU of the control thread */
    uint32_t flags;             /* JSP_S_* */
    int64_t t_ns;               /* when the sample was taken */
    int64_t window_ns;          /* the actual sampling interval it covers (Ts as achieved; event-based: the time
                                   the budget took, from the window's start to the overflow) */
    int64_t read_bytes;         /* bytes read in the window, as the signal saw them (bandwidth signals) */
    int64_t write_bytes;        /* bytes written in the window, likewise */
    int64_t progress_bytes;     /* bytes the report pages counted since the previous sample (-1: no page) */
    int64_t cpu_ns;             /* CPU time of the best-effort tasks since the previous sample (-1: unknown) */
    int64_t metric;             /* the signal's own quantity: latency ns (slack), probe ns (noise), ... */
    int64_t pressure_ppm;       /* signal / threshold x 1e6: >= 1e6 is over budget */
    int64_t suspend_ns;         /* the law's decision: suspend this long (0: none) */
};

struct jsp_suspension {
    uint16_t kind;              /* JSP_SUSPENSION */
    uint16_t cpu;
    uint32_t flags;             /* JSP_X_* */
    int64_t t_ns;               /* decision: the actuator was told to stop */
    int64_t requested_ns;       /* S */
    int64_t stopped_ns;         /* last progress of the program after t_ns, minus t_ns (<= 0: already off) */
    int64_t end_ns;             /* the actuator was told to resume */
    int64_t resumed_ns;         /* the resume call returned */
    int64_t issue_ns;           /* how long the stop call itself took */
    int64_t reserved[3];
};

struct jsp_beat {
    uint16_t kind;              /* JSP_BEAT */
    uint16_t cpu;               /* index of the critical page */
    uint32_t flags;
    int64_t t_ns;               /* when the iteration ended */
    int64_t latency_ns;
    int64_t seq;                /* iteration number */
    int64_t reserved[6];
};

#ifdef __cplusplus
static_assert(sizeof(struct jsp_sample) == 80, "jsp records are 80 bytes");
#else
_Static_assert(sizeof(struct jsp_header) == 64, "jsp_header is 64 bytes");
_Static_assert(sizeof(struct jsp_sample) == 80, "jsp_sample is 80 bytes");
_Static_assert(sizeof(struct jsp_suspension) == 80, "jsp_suspension is 80 bytes");
_Static_assert(sizeof(struct jsp_beat) == 80, "jsp_beat is 80 bytes");
#endif

#endif
