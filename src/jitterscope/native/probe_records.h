/*
 * Binary layout of the probe's output file, shared by probe.c and
 * jitterscope/measure/probe_format.py.  `jitterscope-probe --layout` prints the
 * sizeof/offsetof of every struct here as JSON, and a test compares it with
 * the numpy dtypes, so the two sides cannot drift apart silently.
 *
 * File = one js_file_header, then js_detour records back to back, in the
 * order the writer drained them (per CPU in time order; CPUs interleaved).
 * Little-endian, native alignment (x86-64 only: the probe reads the TSC).
 */
#ifndef JS_PROBE_RECORDS_H
#define JS_PROBE_RECORDS_H

#include <stdint.h>

#define JS_PROBE_MAGIC "JSPROBE"   /* 7 chars + NUL = 8 bytes */
#define JS_PROBE_VERSION 1u

/* js_file_header.flags */
#define JS_FILE_COMPLETE 1u  /* set (with n_records) when the probe ended cleanly */

struct js_file_header {
    char magic[8];          /* "JSPROBE\0" */
    uint32_t version;       /* JS_PROBE_VERSION */
    uint32_t header_size;   /* sizeof(struct js_file_header): records start here */
    uint32_t record_size;   /* sizeof(struct js_detour) */
    uint32_t flags;         /* JS_FILE_COMPLETE once finished */
    uint64_t tsc_hz;        /* TSC frequency if the writer knew it, else 0 */
    uint64_t t0_tsc;        /* TSC when every probe thread was released */
    uint64_t n_records;     /* records in the file; valid when JS_FILE_COMPLETE */
    uint64_t dropped;       /* detours lost to full rings, all CPUs */
    uint64_t reserved[1];
};

/* js_detour.flags (none defined yet; kept for e.g. "ring overflowed before this one") */

struct js_detour {
    uint32_t cpu;           /* CPU the probe thread is pinned to */
    uint32_t flags;
    uint64_t start_tsc;     /* TSC read just before the gap */
    uint64_t duration_tsc;  /* cycles between that read and the next one */
};

#ifdef __cplusplus
static_assert(sizeof(struct js_detour) == 24, "js_detour is 24 bytes");
#else
_Static_assert(sizeof(struct js_detour) == 24, "js_detour is 24 bytes");
_Static_assert(sizeof(struct js_file_header) == 64, "js_file_header is 64 bytes");
#endif

#endif
