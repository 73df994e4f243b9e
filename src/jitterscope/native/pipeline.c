/*
 * jitterscope-pipeline: executes a compiled pipeline schedule (the thesis chapter 3).
 *
 * The plan (pipeline_records.h, written by jitterscope/pipeline/plan.py) gives
 * the sub-boxes with their kernels and buffer offsets, each thread's list of
 * W (wait for a token of a signal), E (run a sub-box) and S (post a token)
 * ops, the signals' initial tokens and the pool size.  One thread per list,
 * pinned to its CPU (or left to the OS on a CPU set), optionally SCHED_FIFO;
 * memory locked; every thread repeats its list once per iteration.  Signals
 * are counting semaphores: spin, futex, or spin then futex.
 *
 * Per iteration it records the release, first start and last end (TSC, from
 * lfence-ordered reads); optionally every sub-box's start and end; and each
 * sink's digest of its frame (what the functional-equivalence tests compare).
 * The guard mode tags every row of the pool with (buffer, iteration) when it is
 * written and checks the tags of the rows a sub-box reads, before and after
 * it runs: a read of a row another buffer or another iteration owns is a
 * violation (a reuse or synchronisation bug), counted and reported.
 *
 * Under `jitterscope protect` (JITTERSCOPE_REPORT set, js_report.h) every
 * completed iteration is also published on the report page: a heartbeat with
 * its latency (a critical program) and the bytes its sub-boxes read and wrote
 * (a best-effort one).
 *
 * Protocol on stdout (one JSON object per line, flushed):
 *   {"event":"ready", ...}  every thread is placed and waiting for t0
 *   {"event":"end", ...}    when it stops (all iterations, SIGINT/SIGTERM, or a hang)
 * Errors: one line "jitterscope-pipeline: ..." on stderr, exit code 2 (1: the
 * run hung or a kernel failed).  SIGINT/SIGTERM end the run after the
 * iterations already started; the result file is still written.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "js_alloc.h"

#define JS_PROGRAM "jitterscope-pipeline"
#include "js_cli.h"
#include "js_pipeline_kernel.h"
#include "js_report.h"
#include "js_tsc.h"
#include "pipeline_kernels.h"
#include "pipeline_records.h"

#define THREAD_STACK (512 * 1024)   /* mlockall locks whole stacks: keep them small */
#define STOP_BIT (1ull << 63)
#define GUARD_TAIL 4096             /* pattern bytes after the pool: a kernel writing past it shows */
#define GUARD_BYTE 0xA5

struct sig {
    _Atomic uint32_t posts;
    _Atomic uint32_t waiting;
    uint32_t tokens;
    uint32_t taken;                 /* owned by the one waiting thread */
    char pad[48];
};

struct worker {
    uint32_t index;
    const struct js_plan_thread *t;
    pthread_t thread;
    pid_t tid;
    char comm[16];
    char error[200];
    _Atomic uint64_t iteration;     /* the iteration it is in */
    _Atomic int64_t waiting_on;     /* signal it waits for, -1 none (for the hang report) */
    _Atomic int64_t running;        /* sub-box it runs, -1 none */
    _Atomic int done;               /* left its loop */
};

/* ---- the plan ---------------------------------------------------------- */
static struct js_plan_header P;
static struct js_plan_subbox *SB;
static struct js_plan_op *OPS;
static struct js_plan_thread *TH;
static struct js_plan_signal *SIGS;
static int64_t *CONSTS;
static char *STRINGS;
static js_kernel_fn *USER;           /* per sub-box: the user kernel, or NULL */

/* ---- run state --------------------------------------------------------- */
static char *g_pool;
static struct sig *g_sigs;
static struct worker *g_workers;
static struct js_result_iter *g_iters;
static uint64_t *g_digests;
static struct js_result_timer *g_timers;
static _Atomic uint32_t *g_done;     /* threads finished, per iteration */
static _Atomic uint64_t *g_tags;     /* guard: per pool row, (buffer + 1) << 40 | iteration */
static uint64_t g_row_bytes, g_rows;
static _Atomic uint64_t g_claim;     /* highest iteration started + 1; STOP_BIT once stopping */
static _Atomic uint64_t g_completed; /* iterations completed */
static _Atomic uint64_t g_slowest;   /* longest iteration so far (TSC): the hang limit grows with it */
static _Atomic uint64_t g_violations;
static char g_first_violation[256];
static _Atomic int g_violation_once;
static _Atomic int g_abort;
static _Atomic int g_go;
static _Atomic int g_ready;
static _Atomic int g_stop_request;
static uint64_t g_t0;
static struct js_heartbeat *g_beat;
static struct js_report_page *g_report;  /* protect's report page, or NULL */
static pthread_mutex_t g_report_lock = PTHREAD_MUTEX_INITIALIZER;  /* the page has one writer at a time */
static uint64_t g_iter_read, g_iter_written;  /* bytes one iteration's sub-boxes read and write */
static char g_kernel_error[256];
static _Atomic int g_kernel_failed;

static void on_signal(int sig) { (void)sig; atomic_store(&g_stop_request, 1); }

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* ---- loading ----------------------------------------------------------- */
static void *read_exact(FILE *f, size_t n, const char *what)
{
    void *p = js_calloc(1, n);  /* what: in the truncated-plan error below */
    if (n && fread(p, 1, n, f) != n)
        die("truncated plan: %s", what);
    return p;
}

static void load_plan(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open plan %s: %s", path, strerror(errno));
    if (fread(&P, sizeof P, 1, f) != 1)
        die("truncated plan %s", path);
    if (memcmp(P.magic, JS_PLAN_MAGIC, 8) != 0)
        die("%s is not a pipeline plan (bad magic)", path);
    if (P.version != JS_PIPE_VERSION || P.header_size != sizeof P || P.subbox_size != sizeof *SB ||
        P.op_size != sizeof *OPS || P.thread_size != sizeof *TH || P.signal_size != sizeof *SIGS)
        die("plan %s has version %u or record sizes this runtime does not read", path, P.version);
    if (!P.n_threads || !P.n_subboxes || !P.width || !P.height || P.pool_bytes < (uint64_t)P.width * 4)
        die("plan %s is empty or has no pool", path);
    SB = read_exact(f, (size_t)P.n_subboxes * sizeof *SB, "sub-boxes");
    OPS = read_exact(f, (size_t)P.n_ops * sizeof *OPS, "ops");
    TH = read_exact(f, (size_t)P.n_threads * sizeof *TH, "threads");
    SIGS = read_exact(f, (size_t)P.n_signals * sizeof *SIGS, "signals");
    CONSTS = read_exact(f, (size_t)P.n_consts * sizeof *CONSTS, "constants");
    STRINGS = js_realloc(read_exact(f, (size_t)P.n_strings, "strings"), (size_t)P.n_strings + 1);
    STRINGS[P.n_strings] = 0;  /* a last string always ends */
    fclose(f);
    uint64_t img = (uint64_t)P.width * P.height * 4;
    for (uint32_t i = 0; i < P.n_subboxes; i++) {
        const struct js_plan_subbox *s = &SB[i];
        if (s->n_in > JS_MAX_PORTS || s->n_out > JS_MAX_PORTS || s->row1 > P.height || s->row0 >= s->row1 ||
            s->n_params > JS_MAX_PARAMS || (uint64_t)s->consts_off + s->n_consts > P.n_consts)
            die("plan: sub-box %u is malformed", i);
        for (uint32_t j = 0; j < s->n_in; j++)
            if (s->in_off[j] + img > P.pool_bytes || s->in_row1[j] > P.height)
                die("plan: sub-box %u reads outside the pool", i);
        for (uint32_t j = 0; j < s->n_out; j++)
            if (s->out_off[j] + img > P.pool_bytes)
                die("plan: sub-box %u writes outside the pool", i);
        if (s->sink != JS_NO_SINK && s->sink >= P.n_sinks)
            die("plan: sub-box %u has sink slot %u of %u", i, s->sink, P.n_sinks);
    }
    for (uint32_t t = 0; t < P.n_threads; t++)
        if ((uint64_t)TH[t].first_op + TH[t].n_ops > P.n_ops)
            die("plan: thread %u's ops run past the op list", t);
    for (uint32_t o = 0; o < P.n_ops; o++)
        if ((OPS[o].kind == JS_OP_EXEC && OPS[o].arg >= P.n_subboxes) ||
            (OPS[o].kind != JS_OP_EXEC && OPS[o].arg >= P.n_signals) || OPS[o].kind < 1 || OPS[o].kind > 3)
            die("plan: op %u is malformed", o);
}

static void load_user_kernels(void)
{
    USER = js_calloc(P.n_subboxes, sizeof *USER);
    for (uint32_t i = 0; i < P.n_subboxes; i++) {
        if (SB[i].kernel != JS_K_USER)
            continue;
        if (SB[i].lib_off >= P.n_strings || SB[i].sym_off >= P.n_strings)
            die("plan: sub-box %u names no library", i);
        const char *lib = STRINGS + SB[i].lib_off, *sym = STRINGS + SB[i].sym_off;
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            die("cannot load user kernel library %s: %s", lib, dlerror());
        USER[i] = (js_kernel_fn)dlsym(h, sym);
        if (!USER[i])
            die("user kernel library %s has no symbol %s", lib, sym);
    }
}

/* ---- signals ----------------------------------------------------------- */
static inline int sig_available(struct sig *s)
{
    uint32_t p = atomic_load_explicit(&s->posts, memory_order_acquire);
    return (int32_t)(p + s->tokens - s->taken) > 0;
}

static int sig_wait(struct sig *s)
{
    if (P.wait_mode != JS_WAIT_FUTEX) {
        uint64_t spins = 0, limit = P.wait_mode == JS_WAIT_HYBRID ? P.spin_limit : UINT64_MAX;
        while (!sig_available(s)) {
            _mm_pause();
            if (++spins >= limit)
                break;
            if ((spins & 0xFFFF) == 0 && atomic_load_explicit(&g_abort, memory_order_relaxed))
                return -1;
        }
    }
    while (!sig_available(s)) {
        atomic_store(&s->waiting, 1);
        uint32_t p = atomic_load(&s->posts);
        if ((int32_t)(p + s->tokens - s->taken) <= 0) {
            struct timespec ts = {0, 50000000L};
            futex(&s->posts, FUTEX_WAIT_PRIVATE, p, &ts);
        }
        atomic_store(&s->waiting, 0);
        if (atomic_load_explicit(&g_abort, memory_order_relaxed))
            return -1;
    }
    s->taken++;
    return 0;
}

static inline void sig_post(struct sig *s)
{
    atomic_fetch_add(&s->posts, 1);
    if (P.wait_mode != JS_WAIT_SPIN && atomic_load(&s->waiting))
        futex(&s->posts, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* ---- guard tags -------------------------------------------------------- */
static inline uint64_t tag_of(uint32_t buf, uint64_t k) { return ((uint64_t)buf + 1) << 40 | (k & ((1ull << 40) - 1)); }

static void violation(uint32_t sb, uint64_t k, uint32_t buf, uint64_t row, uint64_t found, const char *when)
{
    atomic_fetch_add(&g_violations, 1);
    if (atomic_exchange(&g_violation_once, 1) == 0) {
        uint64_t fb = found >> 40, fk = found & ((1ull << 40) - 1);
        if (fb == 0)
            snprintf(g_first_violation, sizeof g_first_violation,
                     "sub-box %u, iteration %" PRIu64 ", %s: row %" PRIu64 " of buffer %u was never written",
                     sb, k, when, row, buf);
        else
            snprintf(g_first_violation, sizeof g_first_violation,
                     "sub-box %u, iteration %" PRIu64 ", %s: row %" PRIu64 " of buffer %u holds buffer %" PRIu64
                     " of iteration %" PRIu64, sb, k, when, row, buf, fb - 1, fk);
    }
}

static void guard_check(uint32_t i, uint64_t k, const char *when)
{
    const struct js_plan_subbox *s = &SB[i];
    for (uint32_t j = 0; j < s->n_in; j++) {
        uint64_t want = tag_of(s->in_buf[j], k), base = s->in_off[j] / g_row_bytes;
        for (uint64_t r = s->in_row0[j]; r < s->in_row1[j]; r++) {
            uint64_t got = atomic_load_explicit(&g_tags[base + r], memory_order_relaxed);
            if (got != want) {
                violation(i, k, s->in_buf[j], r, got, when);
                break;
            }
        }
    }
}

static void guard_write(uint32_t i, uint64_t k)
{
    const struct js_plan_subbox *s = &SB[i];
    for (uint32_t j = 0; j < s->n_out; j++) {
        uint64_t tag = tag_of(s->out_buf[j], k), base = s->out_off[j] / g_row_bytes;
        for (uint64_t r = s->row0; r < s->row1; r++)
            atomic_store_explicit(&g_tags[base + r], tag, memory_order_relaxed);
    }
}

/* ---- kernels ----------------------------------------------------------- */
static void run_subbox(uint32_t i, uint64_t k)
{
    const struct js_plan_subbox *s = &SB[i];
    const void *in[JS_MAX_PORTS];
    void *out[JS_MAX_PORTS];
    for (uint32_t j = 0; j < s->n_in; j++)
        in[j] = g_pool + s->in_off[j];
    for (uint32_t j = 0; j < s->n_out; j++)
        out[j] = g_pool + s->out_off[j];
    int fl = P.pixel_type == 1;
    switch (s->kernel) {
    case JS_K_SOURCE:
        js_k_source(out[0], P.width, P.height, s->row0, s->row1, fl, P.seed, k);
        break;
    case JS_K_SINK:
        g_digests[k * P.n_sinks + s->sink] = js_k_digest(in[0], P.width, P.height);
        break;
    case JS_K_DUP:
        for (uint32_t j = 0; j < s->n_out; j++)
            js_k_copy(out[j], in[0], P.width, s->row0, s->row1);
        break;
    case JS_K_COPY:
        js_k_copy(out[0], in[0], P.width, s->row0, s->row1);
        break;
    case JS_K_GAIN:
        js_k_gain(out[0], in[0], P.width, s->row0, s->row1, fl, s->params[0], s->params[1], s->fparams[0],
                  s->fparams[1]);
        break;
    case JS_K_ADD:
    case JS_K_AVERAGE:
        js_k_sum(out[0], in, s->n_in, P.width, s->row0, s->row1, fl, s->kernel == JS_K_AVERAGE);
        break;
    case JS_K_CONV: {
        uint32_t size = (uint32_t)s->params[0];
        js_k_conv(out[0], in[0], P.width, P.height, s->row0, s->row1, fl, size, CONSTS + s->consts_off,
                  CONSTS[s->consts_off + (uint64_t)size * size]);
        break;
    }
    case JS_K_USER: {
        struct js_kernel_call c = {JS_KERNEL_ABI, P.pixel_type, P.width, P.height, s->row0, s->row1, s->n_in,
                                   s->n_out, in, out, s->params, s->n_params, 0, k};
        int rc = USER[i](&c);
        if (rc != 0 && atomic_exchange(&g_kernel_failed, 1) == 0) {
            snprintf(g_kernel_error, sizeof g_kernel_error, "user kernel %s of sub-box %u returned %d "
                     "(iteration %" PRIu64 ")", STRINGS + s->sym_off, i, rc, k);
            atomic_store(&g_abort, 1);
        }
        break;
    }
    default:
        break;
    }
}

/* ---- iterations -------------------------------------------------------- */
/* May iteration k start?  Every thread runs exactly the iterations below the
 * final count, so a wait never depends on an iteration nobody will run. */
static int claim(uint64_t k)
{
    if (k >= P.iterations)
        return 0;
    uint64_t w = atomic_load(&g_claim);
    for (;;) {
        if (k < (w & ~STOP_BIT))
            return 1;
        if (w & STOP_BIT)
            return 0;
        if (atomic_compare_exchange_weak(&g_claim, &w, k + 1))
            return 1;
    }
}

static void atomic_min_u64(_Atomic uint64_t *p, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
    while (v < cur && !atomic_compare_exchange_weak(p, &cur, v)) {}
}

static void atomic_max_u64(_Atomic uint64_t *p, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak(p, &cur, v)) {}
}

static void wait_release(uint64_t release)
{
    for (;;) {
        uint64_t now = js_rdtsc();
        if (now >= release || atomic_load_explicit(&g_abort, memory_order_relaxed))
            return;
        double left_ns = (double)(release - now) * 1e9 / (double)P.tsc_hz;
        if (left_ns > 200000.0 && P.wait_mode != JS_WAIT_SPIN) {
            struct timespec d = {0, (long)(left_ns - 100000.0)};
            if (d.tv_nsec >= 1000000000L) {
                d.tv_sec = d.tv_nsec / 1000000000L;
                d.tv_nsec %= 1000000000L;
            }
            nanosleep(&d, NULL);
        } else {
            _mm_pause();
        }
    }
}

static void complete(uint64_t k)
{
    uint64_t lat = g_iters[k].end_tsc - (P.period_tsc ? g_iters[k].release_tsc : g_iters[k].start_tsc);
    if (g_beat) {
        struct js_heartbeat_entry *e = &g_beat->ring[k % JS_HEARTBEAT_RING];
        e->latency_tsc = lat;
        atomic_store_explicit((_Atomic uint64_t *)&e->iteration, k, memory_order_release);
        atomic_max_u64((_Atomic uint64_t *)&g_beat->done, k + 1);
    }
    if (g_report) {
        pthread_mutex_lock(&g_report_lock);
        js_report_beat(g_report, (int64_t)((double)lat * 1e9 / (double)P.tsc_hz));
        js_report_add(g_report, g_iter_read, g_iter_written);
        pthread_mutex_unlock(&g_report_lock);
    }
    atomic_max_u64(&g_slowest, lat);
    atomic_max_u64(&g_completed, k + 1);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (w->t->cpu >= 0) {
        CPU_SET(w->t->cpu, &set);
    } else {
        for (int c = 0; c < JS_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
            if (P.cpu_mask[c / 64] >> (c % 64) & 1)
                CPU_SET(c, &set);
    }
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err)
        snprintf(w->error, sizeof w->error, "cannot place thread %u on CPU %d: %s", w->index, w->t->cpu,
                 strerror(err));
    snprintf(w->comm, sizeof w->comm, "js-pipe/%u", w->index);
    prctl(PR_SET_NAME, w->comm, 0, 0, 0);
    if (!err && P.fifo_priority > 0) {
        struct sched_param sp = {.sched_priority = P.fifo_priority};
        err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (err)
            snprintf(w->error, sizeof w->error, "cannot use SCHED_FIFO priority %d: %s", P.fifo_priority,
                     strerror(err));
    }
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_go))
        _mm_pause();
    if (w->error[0] || atomic_load(&g_abort))
        return NULL;
    const struct js_plan_op *ops = OPS + w->t->first_op;
    int timers = (P.flags & JS_PLAN_TIMERS) != 0, guard = (P.flags & JS_PLAN_GUARD) != 0;
    for (uint64_t k = 0; claim(k); k++) {
        atomic_store_explicit(&w->iteration, k, memory_order_relaxed);
        if (P.period_tsc)
            wait_release(g_iters[k].release_tsc);
        uint64_t first = 0, last = 0;
        for (uint32_t o = 0; o < w->t->n_ops; o++) {
            const struct js_plan_op *op = &ops[o];
            if (op->kind == JS_OP_WAIT) {
                atomic_store_explicit(&w->waiting_on, op->arg, memory_order_relaxed);
                if (sig_wait(&g_sigs[op->arg]) < 0)
                    return NULL;
                atomic_store_explicit(&w->waiting_on, -1, memory_order_relaxed);
            } else if (op->kind == JS_OP_SIGNAL) {
                sig_post(&g_sigs[op->arg]);
            } else {
                if (guard)
                    guard_check(op->arg, k, "before it ran");
                atomic_store_explicit(&w->running, op->arg, memory_order_relaxed);
                uint64_t a = js_rdtsc_ordered();
                run_subbox(op->arg, k);
                uint64_t b = js_rdtsc_ordered();
                atomic_store_explicit(&w->running, -1, memory_order_relaxed);
                if (guard) {
                    guard_check(op->arg, k, "after it ran");
                    guard_write(op->arg, k);
                }
                if (!first)
                    first = a;
                last = b;
                if (timers) {
                    struct js_result_timer *tm = &g_timers[k * P.n_subboxes + op->arg];
                    tm->start_tsc = a;
                    tm->end_tsc = b;
                }
            }
        }
        if (first) {
            atomic_min_u64((_Atomic uint64_t *)&g_iters[k].start_tsc, first);
            atomic_max_u64((_Atomic uint64_t *)&g_iters[k].end_tsc, last);
        }
        if (atomic_fetch_add(&g_done[k], 1) + 1 == P.n_threads)
            complete(k);
    }
    atomic_store(&w->done, 1);
    return NULL;
}

/* ---- setup, main loop, output ------------------------------------------ */
static void *alloc_locked(uint64_t bytes, const char *what, int huge)
{
    if (!bytes)
        bytes = 1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("cannot allocate %" PRIu64 " bytes for %s: %s", bytes, what, strerror(errno));
    if (huge && madvise(p, bytes, MADV_HUGEPAGE) != 0)
        fprintf(stderr, JS_PROGRAM ": warning: huge pages not available for %s: %s\n", what, strerror(errno));
    memset(p, 0, bytes);  /* fault every page in now, not during the run */
    return p;
}

static struct js_heartbeat *open_heartbeat(const char *path)
{
    FILE *f = fopen(path, "w+b");
    if (!f)
        die("cannot create heartbeat %s: %s", path, strerror(errno));
    if (ftruncate(fileno(f), sizeof(struct js_heartbeat)) != 0)
        die("cannot size heartbeat %s: %s", path, strerror(errno));
    struct js_heartbeat *h = mmap(NULL, sizeof *h, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
    fclose(f);
    if (h == MAP_FAILED)
        die("cannot map heartbeat %s: %s", path, strerror(errno));
    memset(h, 0, sizeof *h);
    memcpy(h->magic, JS_HEARTBEAT_MAGIC, sizeof JS_HEARTBEAT_MAGIC);
    h->version = JS_PIPE_VERSION;
    h->header_size = offsetof(struct js_heartbeat, ring);
    h->tsc_hz = P.tsc_hz;
    h->iterations = P.iterations;
    h->ring_size = JS_HEARTBEAT_RING;
    return h;
}

static void write_result(const char *path, uint64_t done, uint32_t flags)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        die("cannot create %s: %s", path, strerror(errno));
    struct js_result_header h = {0};
    memcpy(h.magic, JS_RESULT_MAGIC, sizeof JS_RESULT_MAGIC);
    h.version = JS_PIPE_VERSION;
    h.header_size = sizeof h;
    h.iter_size = sizeof(struct js_result_iter);
    h.timer_size = sizeof(struct js_result_timer);
    h.n_subboxes = P.n_subboxes;
    h.n_sinks = P.n_sinks;
    h.n_threads = P.n_threads;
    h.tsc_hz = P.tsc_hz;
    h.t0_tsc = g_t0;
    h.iterations_requested = P.iterations;
    h.iterations_done = done;
    h.guard_violations = atomic_load(&g_violations);
    h.flags = flags & ~JS_RESULT_COMPLETE;
    int ok = fwrite(&h, sizeof h, 1, f) == 1 &&
             fwrite(g_iters, sizeof *g_iters, done, f) == done &&
             fwrite(g_digests, sizeof *g_digests, done * P.n_sinks, f) == done * P.n_sinks;
    if (ok && (flags & JS_RESULT_TIMERS))
        ok = fwrite(g_timers, sizeof *g_timers, done * P.n_subboxes, f) == done * P.n_subboxes;
    h.flags = flags | JS_RESULT_COMPLETE;  /* set last: a file cut short stays incomplete */
    ok = ok && fflush(f) == 0 && fseek(f, 0, SEEK_SET) == 0 && fwrite(&h, sizeof h, 1, f) == 1;
    if (!ok || fsync(fileno(f)) != 0 || fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

static void print_layout(void)
{
#define F(s, m) printf("\"%s\": {\"offset\": %zu, \"size\": %zu}", #m, offsetof(struct s, m), sizeof(((struct s *)0)->m))
#define S(s, body) printf("\"%s\": {\"size\": %zu, \"fields\": {", #s, sizeof(struct s)); body; printf("}}")
    printf("{");
    S(js_plan_header, F(js_plan_header, magic); printf(", "); F(js_plan_header, version); printf(", ");
      F(js_plan_header, n_subboxes); printf(", "); F(js_plan_header, flags); printf(", ");
      F(js_plan_header, fifo_priority); printf(", "); F(js_plan_header, pool_bytes); printf(", ");
      F(js_plan_header, hang_tsc); printf(", "); F(js_plan_header, cpu_mask); printf(", ");
      F(js_plan_header, reserved));
    printf(", ");
    S(js_plan_subbox, F(js_plan_subbox, kernel); printf(", "); F(js_plan_subbox, reserved); printf(", ");
      F(js_plan_subbox, in_buf); printf(", "); F(js_plan_subbox, in_row1); printf(", ");
      F(js_plan_subbox, in_off); printf(", "); F(js_plan_subbox, out_off); printf(", ");
      F(js_plan_subbox, params); printf(", "); F(js_plan_subbox, fparams));
    printf(", ");
    S(js_plan_op, F(js_plan_op, kind); printf(", "); F(js_plan_op, arg));
    printf(", ");
    S(js_plan_thread, F(js_plan_thread, first_op); printf(", "); F(js_plan_thread, cpu));
    printf(", ");
    S(js_plan_signal, F(js_plan_signal, tokens));
    printf(", ");
    S(js_result_header, F(js_result_header, magic); printf(", "); F(js_result_header, flags); printf(", ");
      F(js_result_header, tsc_hz); printf(", "); F(js_result_header, iterations_done); printf(", ");
      F(js_result_header, guard_violations); printf(", "); F(js_result_header, reserved));
    printf(", ");
    S(js_result_iter, F(js_result_iter, release_tsc); printf(", "); F(js_result_iter, end_tsc));
    printf(", ");
    S(js_result_timer, F(js_result_timer, end_tsc));
    printf(", ");
    S(js_heartbeat, F(js_heartbeat, tsc_hz); printf(", "); F(js_heartbeat, done); printf(", ");
      F(js_heartbeat, ring_size); printf(", "); F(js_heartbeat, ring));
    printf(", ");
    S(js_kernel_call, F(js_kernel_call, row0); printf(", "); F(js_kernel_call, in); printf(", ");
      F(js_kernel_call, params); printf(", "); F(js_kernel_call, iteration));
    printf("}\n");
#undef F
#undef S
}

static void usage(void)
{
    die("usage: jitterscope-pipeline --plan FILE --out FILE [--heartbeat FILE] | --layout");
}

static void setup_state(void)
{
    for (uint32_t i = 0; i < P.n_subboxes; i++) {
        for (uint32_t j = 0; j < SB[i].n_in; j++)
            g_iter_read += (uint64_t)(SB[i].in_row1[j] - SB[i].in_row0[j]) * P.width * 4;
        g_iter_written += (uint64_t)SB[i].n_out * (SB[i].row1 - SB[i].row0) * P.width * 4;
    }
    int huge = (P.flags & JS_PLAN_HUGEPAGES) != 0;
    g_row_bytes = (uint64_t)P.width * 4;
    g_rows = (P.pool_bytes + g_row_bytes - 1) / g_row_bytes;
    g_pool = alloc_locked(P.pool_bytes + GUARD_TAIL, "the buffer pool", huge);
    if (P.flags & JS_PLAN_GUARD) {
        memset(g_pool, GUARD_BYTE, P.pool_bytes + GUARD_TAIL);
        g_tags = alloc_locked(g_rows * sizeof *g_tags, "guard tags", 0);
    }
    g_sigs = alloc_locked((uint64_t)(P.n_signals ? P.n_signals : 1) * sizeof *g_sigs, "signals", 0);
    for (uint32_t i = 0; i < P.n_signals; i++)
        g_sigs[i].tokens = SIGS[i].tokens;
    g_iters = alloc_locked(P.iterations * sizeof *g_iters, "iteration timestamps", 0);
    for (uint64_t k = 0; k < P.iterations; k++)
        g_iters[k].start_tsc = UINT64_MAX;
    g_digests = alloc_locked(P.iterations * (P.n_sinks ? P.n_sinks : 1) * sizeof *g_digests, "digests", 0);
    g_done = alloc_locked(P.iterations * sizeof *g_done, "iteration counters", 0);
    if (P.flags & JS_PLAN_TIMERS)
        g_timers = alloc_locked(P.iterations * P.n_subboxes * sizeof *g_timers, "sub-box timers", 0);
}

static int check_guard_tail(void)
{
    for (uint64_t i = 0; i < GUARD_TAIL; i++)
        if ((unsigned char)g_pool[P.pool_bytes + i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* No iteration completed for this long is a hang: --hang-timeout, or 20 times the slowest iteration so
 * far when that is longer (a slow pipeline is not a stuck one). */
static uint64_t hang_limit(void)
{
    uint64_t slow = 20 * atomic_load(&g_slowest);
    return slow > P.hang_tsc ? slow : P.hang_tsc;
}

/* The watchdog's report, one line: where every thread is.  A thread that waits for a signal whose
 * poster runs (or is runnable) points at starvation; every thread waiting points at a deadlock. */
static void print_hang(void)
{
    char buf[1024];
    size_t n = 0;
    for (uint32_t t = 0; t < P.n_threads && n < sizeof buf - 120; t++) {
        int64_t s = atomic_load(&g_workers[t].waiting_on), r = atomic_load(&g_workers[t].running);
        uint64_t k = atomic_load(&g_workers[t].iteration);
        if (atomic_load(&g_workers[t].done))
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%sthread %u finished", t ? "; " : "", t);
        else if (s >= 0)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%sthread %u waits for signal %" PRId64 " in iteration %"
                                  PRIu64 " (%u posted, %u taken, %u initial)", t ? "; " : "", t, s, k,
                                  atomic_load(&g_sigs[s].posts), g_sigs[s].taken, g_sigs[s].tokens);
        else
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%sthread %u %s sub-box %" PRId64 " in iteration %" PRIu64,
                                  t ? "; " : "", t, r >= 0 ? "runs" : "is between", r, k);
    }
    fprintf(stderr, JS_PROGRAM ": warning: hang: no iteration completed for %.1f s (after %" PRIu64 "): %s\n",
            (double)hang_limit() / (double)P.tsc_hz, atomic_load(&g_completed), buf);
}

/* The command line: --layout prints the record layouts and exits; else --plan and --out are required. */
static void parse_args(int argc, char **argv, const char **plan, const char **out, const char **beat)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--layout")) {
            print_layout();
            exit(0);
        } else if (!strcmp(argv[i], "--plan") && i + 1 < argc) {
            *plan = argv[++i];
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            *out = argv[++i];
        } else if (!strcmp(argv[i], "--heartbeat") && i + 1 < argc) {
            *beat = argv[++i];
        } else {
            usage();
        }
    }
    if (!*plan || !*out)
        usage();
}

/* SIGINT, SIGTERM and SIGHUP ask for a stop after the iterations already started.  SIGPIPE is
 * ignored: once jitterscope is killed, a line to it (ready, a warning) fails with EPIPE rather
 * than killing us before the result file holds what ran. */
static void install_signals(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Whether every page is locked in memory (asked for by the plan; a failure is a warning). */
static int lock_memory(void)
{
    if (!(P.flags & JS_PLAN_MLOCK))
        return 0;
    int mlocked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
    if (!mlocked)
        fprintf(stderr, JS_PROGRAM ": warning: mlockall failed (%s); pages may be swapped\n", strerror(errno));
    return mlocked;
}

/* One pinned thread per plan thread; each reports ready (or its error) before anything is released. */
static void start_workers(void)
{
    g_workers = js_calloc(P.n_threads, sizeof *g_workers);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    for (uint32_t t = 0; t < P.n_threads; t++) {
        g_workers[t].index = t;
        g_workers[t].t = &TH[t];
        g_workers[t].waiting_on = -1;
        g_workers[t].running = -1;
        int err = pthread_create(&g_workers[t].thread, &attr, worker_main, &g_workers[t]);
        if (err)
            die("cannot start thread %u of %u: %s", t, P.n_threads, strerror(err));
    }
    while (atomic_load(&g_ready) < (int)P.n_threads)
        usleep(1000);
    for (uint32_t t = 0; t < P.n_threads; t++)
        if (g_workers[t].error[0]) {
            atomic_store(&g_abort, 1);
            atomic_store(&g_go, 1);
            die("%s", g_workers[t].error);
        }
}

/* Fix t0 and every iteration's release, announce the threads on stdout ("ready"), then let them go. */
static void release_workers(int mlocked)
{
    g_t0 = js_rdtsc_ordered() + P.tsc_hz / 1000;  /* 1 ms ahead: every thread sees go before t0 */
    for (uint64_t k = 0; k < P.iterations; k++)
        g_iters[k].release_tsc = g_t0 + k * P.period_tsc;
    if (g_beat)
        g_beat->t0_tsc = g_t0;
    printf("{\"event\": \"ready\", \"t0_tsc\": %" PRIu64 ", \"mlocked\": %s, \"report\": %s, \"threads\": [",
           g_t0, mlocked ? "true" : "false", g_report ? "true" : "false");
    for (uint32_t t = 0; t < P.n_threads; t++)
        printf("%s{\"thread\": %u, \"tid\": %d, \"cpu\": %d, \"comm\": \"%s\"}", t ? ", " : "", t,
               (int)g_workers[t].tid, TH[t].cpu, g_workers[t].comm);
    printf("]}\n");
    fflush(stdout);
    if (P.period_tsc == 0)
        for (uint64_t k = 0; k < P.iterations; k++)
            g_iters[k].release_tsc = 0;
    atomic_store(&g_go, 1);
}

/* Watch the run until every iteration completed, a stop request's started iterations finished, or it hung:
 * the result flags (interrupted, hung). */
static uint32_t supervise(void)
{
    uint32_t flags = 0;
    uint64_t last_done = 0, last_change = js_rdtsc();
    for (;;) {
        struct timespec d = {0, 5000000L};
        nanosleep(&d, NULL);
        uint64_t done = atomic_load(&g_completed), now = js_rdtsc();
        if (done >= P.iterations || atomic_load(&g_abort))
            break;
        if (atomic_load(&g_stop_request) && !(flags & JS_RESULT_INTERRUPTED)) {
            flags |= JS_RESULT_INTERRUPTED;
            atomic_fetch_or(&g_claim, STOP_BIT);
        }
        if ((flags & JS_RESULT_INTERRUPTED) && done >= (atomic_load(&g_claim) & ~STOP_BIT))
            break;
        if (done != last_done) {
            last_done = done;
            last_change = now;
        } else if (P.hang_tsc && now - last_change > hang_limit() && now > g_t0) {
            flags |= JS_RESULT_HUNG;
            print_hang();
            atomic_store(&g_abort, 1);
            break;
        }
    }
    return flags;
}

/* Join the threads, check the guard tail, write the result file and the "end" line: the exit status. */
static int finish(const char *out, uint32_t flags)
{
    for (uint32_t t = 0; t < P.n_threads; t++)
        pthread_join(g_workers[t].thread, NULL);
    uint64_t done = atomic_load(&g_completed);
    if (P.flags & JS_PLAN_TIMERS)
        flags |= JS_RESULT_TIMERS;
    if (P.period_tsc == 0)
        for (uint64_t k = 0; k < done; k++)
            g_iters[k].release_tsc = g_iters[k].start_tsc;
    if ((P.flags & JS_PLAN_GUARD) && !check_guard_tail()) {
        atomic_fetch_add(&g_violations, 1);
        if (atomic_exchange(&g_violation_once, 1) == 0)
            snprintf(g_first_violation, sizeof g_first_violation, "a kernel wrote past the end of the pool");
    }
    write_result(out, done, flags);
    printf("{\"event\": \"end\", \"iterations\": %" PRIu64 ", \"interrupted\": %s, \"hung\": %s, "
           "\"guard_violations\": %" PRIu64 ", \"first_violation\": \"%s\", \"end_tsc\": %" PRIu64 "}\n",
           done, (flags & JS_RESULT_INTERRUPTED) ? "true" : "false", (flags & JS_RESULT_HUNG) ? "true" : "false",
           atomic_load(&g_violations), g_first_violation, js_rdtsc_ordered());
    fflush(stdout);
    if (atomic_load(&g_kernel_failed)) {
        fprintf(stderr, JS_PROGRAM ": %s\n", g_kernel_error);
        return 1;
    }
    return 0;   /* a hang is reported in the end line ("hung") and on stderr; what ran is in the file */
}

int main(int argc, char **argv)
{
    const char *plan = NULL, *out = NULL, *beat = NULL;
    parse_args(argc, argv, &plan, &out, &beat);
    if (js_die_with_parent() != 0)
        return 2;
    load_plan(plan);
    load_user_kernels();
    install_signals();
    setup_state();
    int mlocked = lock_memory();
    g_beat = beat ? open_heartbeat(beat) : NULL;
    g_report = js_report_attach();
    start_workers();
    release_workers(mlocked);
    return finish(out, supervise());
}
