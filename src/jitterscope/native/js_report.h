/*
 * The report API: how a program tells `jitterscope protect` what it is doing,
 * through one shared-memory page (header-only; include it in any C program).
 *
 * A best-effort program publishes cumulative byte counters (the `report`
 * signal: exact ground truth for the controller); a latency-critical program
 * publishes one heartbeat per iteration with that iteration's latency (its
 * latency distribution in the run, and the `slack` signal).  jitterscope
 * creates the page file and passes its path in the environment variable
 * JITTERSCOPE_REPORT; without it `js_report_attach()` returns NULL and the
 * program runs unreported.  The Python twin is `jitterscope.protect.report`.
 *
 *     struct js_report_page *rp = js_report_attach();   // NULL: not under protect
 *     for (;;) {
 *         int64_t t0 = js_report_now();
 *         work();
 *         if (rp) js_report_beat(rp, js_report_now() - t0);     // critical
 *         if (rp) js_report_add(rp, bytes_read, bytes_written); // best-effort
 *     }
 *
 * Times are CLOCK_MONOTONIC nanoseconds.  One writer per page (the program);
 * any number of readers.  Counters are 64-bit and only grow; the heartbeat ring
 * keeps the last JS_REPORT_BEATS iterations and a reader that falls further
 * behind counts the rest as lost.  The layout is mirrored by
 * jitterscope/protect/records.py and checked by a test.
 */
#ifndef JS_REPORT_H
#define JS_REPORT_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JS_REPORT_MAGIC "JSREPRT"   /* 7 chars + NUL */
#define JS_REPORT_VERSION 1u
#define JS_REPORT_BEATS 4096u       /* heartbeat ring entries (a power of two) */
#define JS_REPORT_ENV "JITTERSCOPE_REPORT"

struct js_beat {
    int64_t end_ns;                 /* CLOCK_MONOTONIC when the iteration ended */
    int64_t latency_ns;             /* the iteration's latency */
};

struct js_report_page {
    char magic[8];                  /* "JSREPRT\0", written by jitterscope */
    uint32_t version;               /* JS_REPORT_VERSION */
    uint32_t size;                  /* sizeof(struct js_report_page) */
    int32_t pid;                    /* the publisher, once attached */
    uint32_t flags;                 /* reserved */
    int64_t deadline_ns;            /* critical: per-iteration deadline it declares (0 = none) */
    uint64_t reserved[4];
    /* Counters (one cache line, written by the publisher only). */
    _Atomic uint64_t read_bytes __attribute__((aligned(64)));
    _Atomic uint64_t write_bytes;
    _Atomic uint64_t ops;           /* units of work (loop passes, items, frames) */
    _Atomic int64_t last_ns;        /* CLOCK_MONOTONIC of the last counter update */
    uint64_t reserved2[4];
    /* Heartbeats: beat[i % JS_REPORT_BEATS] holds iteration i; `beats` counts them. */
    _Atomic uint64_t beats __attribute__((aligned(64)));
    uint64_t reserved3[7];
    struct js_beat beat[JS_REPORT_BEATS];
};

static inline int64_t js_report_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Map the page at `path` (created and sized by jitterscope); NULL on any failure. */
static inline struct js_report_page *js_report_map(const char *path, int writable)
{
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct js_report_page))
        p = mmap(NULL, sizeof(struct js_report_page), PROT_READ | (writable ? PROT_WRITE : 0),
                 MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    struct js_report_page *rp = p;
    if (memcmp(rp->magic, JS_REPORT_MAGIC, 8) || rp->version != JS_REPORT_VERSION ||
        rp->size != sizeof(struct js_report_page)) {
        munmap(p, sizeof(struct js_report_page));
        return NULL;
    }
    return rp;
}

/* The page jitterscope prepared for this process, or NULL when JITTERSCOPE_REPORT is unset. */
static inline struct js_report_page *js_report_attach(void)
{
    const char *path = getenv(JS_REPORT_ENV);
    if (!path || !*path)
        return NULL;
    struct js_report_page *rp = js_report_map(path, 1);
    if (rp)
        rp->pid = (int32_t)getpid();
    return rp;
}

/* The page at `path` (a --report option), else the one named by JITTERSCOPE_REPORT; NULL if neither is
 * given.  `*bad` is set when one was given but is not a usable page. */
static inline struct js_report_page *js_report_open(const char *path, int *bad)
{
    const char *env = getenv(JS_REPORT_ENV);
    struct js_report_page *rp = path ? js_report_map(path, 1) : js_report_attach();
    *bad = !rp && (path || (env && *env));
    if (rp)
        rp->pid = (int32_t)getpid();
    return rp;
}

/* Add bytes read/written and one unit of work; stamps the time of this progress. */
static inline void js_report_add(struct js_report_page *rp, uint64_t read_bytes, uint64_t write_bytes)
{
    atomic_store_explicit(&rp->read_bytes, atomic_load_explicit(&rp->read_bytes, memory_order_relaxed)
                          + read_bytes, memory_order_relaxed);
    atomic_store_explicit(&rp->write_bytes, atomic_load_explicit(&rp->write_bytes, memory_order_relaxed)
                          + write_bytes, memory_order_relaxed);
    atomic_store_explicit(&rp->ops, atomic_load_explicit(&rp->ops, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&rp->last_ns, js_report_now(), memory_order_release);
}

/* One iteration done, with its latency (ns). */
static inline void js_report_beat(struct js_report_page *rp, int64_t latency_ns)
{
    uint64_t i = atomic_load_explicit(&rp->beats, memory_order_relaxed);
    struct js_beat *b = &rp->beat[i & (JS_REPORT_BEATS - 1)];
    b->end_ns = js_report_now();
    b->latency_ns = latency_ns;
    atomic_store_explicit(&rp->beats, i + 1, memory_order_release);
}

/* A critical program's deadline per iteration: the `slack` signal's reference. */
static inline void js_report_set_deadline(struct js_report_page *rp, int64_t deadline_ns)
{
    rp->deadline_ns = deadline_ns;
}

#endif
