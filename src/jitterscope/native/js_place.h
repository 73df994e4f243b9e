/*
 * The place API: how a program run under `jitterscope place` publishes its
 * oracle cache weight and meets the emulated feature fault of OBS-F (Knauerhase et al. 2008,
 * spec B.1 stand-in (i) and B.6 stand-in (a)).  Header-only; the Python twin
 * is jitterscope/place/records.py (layout checked by a test through
 * `jitterscope-cachebuster --layout`).
 *
 *     js_place_attach();                 // once; a no-op when not under place
 *     js_place_weight(1.0);              // oracle weight of the current phase (cachebuster: 1, spinloop: 0)
 *     for (;;) {
 *         js_special_op();               // before each FP/SIMD region: the paper's DNA fault, emulated
 *         fp_work();
 *     }
 *
 * Environment (set by jitterscope place):
 *   JITTERSCOPE_PLACE_PAGE    path of this program's page (counters, weight)
 *   JITTERSCOPE_LITTLE_CPUS   CPUs that "lack" the special feature (a CPU list, e.g. 1 or 1,3 or 2-3)
 *   JITTERSCOPE_PLACE_FAULTS  path of a FIFO: the fault handler writes one byte to it per fault, and
 *                             its presence installs the handler (policy OBS-F is on)
 *
 * js_special_op() on a LITTLE CPU raises SIGILL.  Without the handler (no OBS-F)
 * the default action kills the program: the paper's "performance 0".  With it,
 * the handler counts the fault, tells jitterscope through the FIFO, and the
 * marker waits (up to 10 s) until jitterscope has moved it to a capable CPU,
 * then retries, as an OS fault handler that migrates the task would.
 */
#ifndef JS_PLACE_H
#define JS_PLACE_H

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JS_PLACE_MAGIC "JSPLACE"    /* 7 chars + NUL */
#define JS_PLACE_VERSION 1u
#define JS_PLACE_NO_WEIGHT (-1)     /* weight_ppm before the program publishes one */

struct js_place_page {
    char magic[8];                  /* "JSPLACE\0", written by jitterscope */
    uint32_t version;               /* JS_PLACE_VERSION */
    uint32_t size;                  /* sizeof(struct js_place_page) */
    int32_t pid;                    /* the publisher, once attached */
    int32_t last_fault_cpu;         /* CPU of the latest emulated fault (-1: none) */
    _Atomic int64_t weight_ppm;     /* oracle cache weight x 1e6 (JS_PLACE_NO_WEIGHT: none) */
    _Atomic uint64_t specials;      /* special operations executed (marker calls) */
    _Atomic uint64_t faults;        /* emulated faults (special operation on a LITTLE CPU) */
    uint64_t reserved[3];
};

static struct js_place_page *js_place_pg;
static uint64_t js_place_little[16];    /* CPU bitmap, up to 1024 CPUs */
static int js_place_fifo = -1;

static inline int js_place_is_little(int cpu)
{
    return cpu >= 0 && cpu < 1024 && (js_place_little[cpu / 64] >> (cpu % 64)) & 1;
}

static inline void js_place_parse_cpus(const char *s)
{
    while (s && *s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            return;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && c < 1024; c++)
            if (c >= 0)
                js_place_little[c / 64] |= 1ull << (c % 64);
        s = *end == ',' ? end + 1 : NULL;
    }
}

static void js_place_on_sigill(int sig)
{
    (void)sig;
    int cpu = sched_getcpu();
    if (js_place_pg) {
        atomic_fetch_add(&js_place_pg->faults, 1);
        js_place_pg->last_fault_cpu = cpu;
    }
    if (js_place_fifo >= 0) {
        char b = 1;
        ssize_t w = write(js_place_fifo, &b, 1);   /* async-signal-safe; a full FIFO still has a byte */
        (void)w;
    }
}

/* Map the page, read the LITTLE CPUs, install the fault handler when OBS-F is on. */
static inline void js_place_attach(void)
{
    const char *path = getenv("JITTERSCOPE_PLACE_PAGE");
    js_place_parse_cpus(getenv("JITTERSCOPE_LITTLE_CPUS"));
    if (path && *path) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct js_place_page)) {
            void *p = mmap(NULL, sizeof(struct js_place_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p != MAP_FAILED && !memcmp(p, JS_PLACE_MAGIC, 8)) {
                js_place_pg = p;
                js_place_pg->pid = (int32_t)getpid();
            }
        }
        if (fd >= 0)
            close(fd);
    }
    const char *fifo = getenv("JITTERSCOPE_PLACE_FAULTS");
    if (fifo && *fifo) {
        js_place_fifo = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = js_place_on_sigill;
        sigaction(SIGILL, &sa, NULL);
    }
}

static inline void js_place_weight(double w)
{
    if (js_place_pg)
        atomic_store(&js_place_pg->weight_ppm, (int64_t)(w * 1e6));
}

/* Before a special (FP/SIMD) region: on a LITTLE CPU, the emulated fault. */
static inline void js_special_op(void)
{
    if (js_place_pg)
        atomic_fetch_add_explicit(&js_place_pg->specials, 1, memory_order_relaxed);
    if (!js_place_is_little(sched_getcpu()))
        return;
    raise(SIGILL);   /* no handler: the program dies, as on a core without the feature */
    struct timespec nap = {0, 200000};
    for (int i = 0; i < 50000 && js_place_is_little(sched_getcpu()); i++)
        nanosleep(&nap, NULL);   /* jitterscope moves us; the kernel migrates at the next wake-up */
}

#endif
