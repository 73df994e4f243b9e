/*
 * libjssync.so: the LD_PRELOAD interposer of `jitterscope sync`.
 *
 * Wraps the pthread synchronisation calls listed in JS_HOOKS (one X-macro
 * list: the real functions come from dlsym(RTLD_NEXT) through it) and writes
 * one record per *contended* operation: a mutex lock whose trylock failed, an
 * unlock whose lock word shows sleepers, a signal/broadcast with waiters, every
 * condvar and barrier wait, thread create/start/exit/join.  The uncontended
 * path of lock and unlock takes no timestamp, touches no thread-local state
 * and allocates nothing: a trylock, or one load of the lock word, on top of
 * the real call (BENCHMARKS.md: ns per lock/unlock against a bare call).
 *
 * Timestamps are the TSC (rdtsc at entry, rdtscp at return, which also gives
 * the CPU), the clock of the kernel trace's x86-tsc trace_clock.  Each thread
 * owns a single-producer/single-consumer ring (the probe's design); a writer
 * thread, pinned to JS_SYNC_WRITER_CPUS (the CPUs the program does not use,
 * when there are any), drains every ring to the process's file each 10 ms.
 * Memory is bounded: JS_SYNC_RING records per live thread, JS_MAX_THREADS
 * rings at once; a full ring drops (and counts) the record, never blocks.
 *
 * Environment: JS_SYNC_DIR (output directory; without it the library does
 * nothing but call through), JS_SYNC_WRITER_CPUS ("0,2-3"), JS_SYNC_RING
 * (records per thread, power of two, default 4096), JS_SYNC_SLEEP_CHECK
 * (0 disables the getrusage check that marks a contended lock "slept").
 *
 * Limits: static binaries (no dynamic linking, nothing to interpose), locks
 * taken inside libc itself (stdio, malloc: internal calls bypass the PLT),
 * raw futex users (Go, some runtimes), and the records of the last <= 10 ms
 * before an exec, _exit or crash (what was drained is kept).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "interpose_records.h"

#define EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define JS_MAX_THREADS 4096
#define DEFAULT_RING 4096u
#define DRAIN_NS 10000000L

/* ---- the interposed symbols: one list, everything else derives from it ---- */
/* X(return type, name, parameter list, argument list, symbol version or NULL) */
#define JS_HOOKS(X)                                                                                          \
    X(int, pthread_mutex_lock, (pthread_mutex_t *m), (m), NULL)                                              \
    X(int, pthread_mutex_trylock, (pthread_mutex_t *m), (m), NULL)                                           \
    X(int, pthread_mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), (m, t), NULL)            \
    X(int, pthread_mutex_clocklock, (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t),  \
      NULL)                                                                                                  \
    X(int, pthread_mutex_unlock, (pthread_mutex_t *m), (m), NULL)                                            \
    X(int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m), "GLIBC_2.3.2")                \
    X(int, pthread_cond_timedwait, (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t),        \
      (c, m, t), "GLIBC_2.3.2")                                                                              \
    X(int, pthread_cond_clockwait,                                                                           \
      (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t), (c, m, k, t), NULL)    \
    X(int, pthread_cond_signal, (pthread_cond_t *c), (c), "GLIBC_2.3.2")                                     \
    X(int, pthread_cond_broadcast, (pthread_cond_t *c), (c), "GLIBC_2.3.2")                                  \
    X(int, pthread_barrier_init, (pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned n),         \
      (b, a, n), NULL)                                                                                       \
    X(int, pthread_barrier_wait, (pthread_barrier_t *b), (b), NULL)                                          \
    X(int, pthread_rwlock_rdlock, (pthread_rwlock_t *l), (l), NULL)                                          \
    X(int, pthread_rwlock_wrlock, (pthread_rwlock_t *l), (l), NULL)                                          \
    X(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *l), (l), NULL)                                       \
    X(int, pthread_rwlock_trywrlock, (pthread_rwlock_t *l), (l), NULL)                                       \
    X(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t *l, const struct timespec *t), (l, t), NULL)        \
    X(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t *l, const struct timespec *t), (l, t), NULL)        \
    X(int, pthread_rwlock_unlock, (pthread_rwlock_t *l), (l), NULL)                                          \
    X(int, pthread_create, (pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg),           \
      (t, a, f, arg), NULL)                                                                                  \
    X(int, pthread_join, (pthread_t t, void **r), (t, r), NULL)                                              \
    X(int, pthread_timedjoin_np, (pthread_t t, void **r, const struct timespec *ts), (t, r, ts), NULL)       \
    X(void, pthread_exit, (void *r), (r), NULL)                                                              \
    X(void, _exit, (int status), (status), NULL)

#define DECLARE_REAL(ret, name, params, args, ver) static ret(*real_##name) params;
JS_HOOKS(DECLARE_REAL)

static void resolve_all(void)
{
#define RESOLVE(ret, name, params, args, ver)                                                         \
    if (!real_##name) {                                                                               \
        void *p = (ver) ? dlvsym(RTLD_NEXT, #name, (ver) ? (ver) : "") : NULL;                        \
        real_##name = (ret(*) params)(p ? p : dlsym(RTLD_NEXT, #name));                               \
    }
    JS_HOOKS(RESOLVE)
#undef RESOLVE
}

#define REAL(name) (likely(real_##name != NULL) ? real_##name : (resolve_all(), real_##name))

/* ---- per-thread rings ------------------------------------------------------ */

struct ring {
    _Atomic uint64_t head __attribute__((aligned(64)));  /* producer */
    _Atomic uint64_t tail __attribute__((aligned(64)));  /* writer */
    _Atomic int state;               /* 0 free, 1 live, 2 thread gone (drain, then free) */
    uint64_t dropped;
    uint32_t cap;
    struct js_sync_record *rec;
};

static int g_on;                      /* JS_SYNC_DIR set and the file open */
static unsigned g_ring_cap = DEFAULT_RING;
static int g_sleep_check = 1;
static struct ring g_rings[JS_MAX_THREADS];
static _Atomic uint32_t g_nrings;     /* high-water mark of slots used */
static _Atomic uint64_t g_dropped_nothread;
static _Atomic uint64_t g_create_seq;
static _Atomic uint64_t g_threads;
static int g_finishing;               /* at exit: drain in place, start no writer */
static _Atomic unsigned g_generation; /* bumped in a forked child: every inherited ring is the parent's */
static int g_fd = -1;
static char g_path[4096], g_dir[3072];
static struct js_sync_header g_hdr;
static uint64_t g_written;
static pthread_t g_writer;
static _Atomic int g_writer_state;    /* 0 not started, 1 starting/running, 2 stopping */
static cpu_set_t g_writer_cpus;
static int g_writer_cpus_set;
static pthread_mutex_t g_writer_lock = PTHREAD_MUTEX_INITIALIZER;  /* taken through real_ only */
static pthread_key_t g_key;

struct tls {
    struct ring *ring;
    unsigned generation;
    uint32_t tid;
    int busy;                         /* re-entrancy guard */
};
/* initial-exec: one %fs-relative load instead of a __tls_get_addr call per wrapped call (the library is
 * preloaded, so its TLS is in the static block; a dlopen (the Python frame API) uses glibc's surplus). */
static __thread struct tls t_self __attribute__((tls_model("initial-exec")));

static inline uint64_t tsc(void) { return __rdtsc(); }
static inline uint64_t tscp(uint32_t *cpu)
{
    unsigned aux;
    uint64_t t = __rdtscp(&aux);
    *cpu = aux & 0xfff;               /* Linux: TSC_AUX = node << 12 | cpu */
    return t;
}

static void start_writer(void);
static void catch_fatal(void);

static struct ring *claim_ring(void)
{
    for (uint32_t i = 0; i < JS_MAX_THREADS; i++) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&g_rings[i].state, &expect, 1)) {
            struct ring *r = &g_rings[i];
            if (!r->rec) {
                void *p = mmap(NULL, (size_t)g_ring_cap * sizeof *r->rec, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) {
                    atomic_store(&r->state, 0);
                    return NULL;
                }
                r->rec = p;
                r->cap = g_ring_cap;
            }
            atomic_store(&r->head, 0);
            atomic_store(&r->tail, 0);
            r->dropped = 0;
            uint32_t n = atomic_load(&g_nrings);
            while (n < i + 1 && !atomic_compare_exchange_weak(&g_nrings, &n, i + 1)) {}
            return r;
        }
    }
    return NULL;
}

/* The calling thread's ring, created at its first record (never on the uncontended path). */
static struct ring *my_ring(void)
{
    struct tls *s = &t_self;
    unsigned gen = atomic_load_explicit(&g_generation, memory_order_relaxed);
    if (likely(s->ring && s->generation == gen))
        return s->ring;
    s->generation = gen;
    s->tid = (uint32_t)syscall(SYS_gettid);
    s->ring = claim_ring();
    if (s->ring) {
        pthread_setspecific(g_key, s->ring);
        atomic_fetch_add(&g_threads, 1);
        if (atomic_load(&g_writer_state) == 0 && !g_finishing)
            start_writer();
    }
    return s->ring;
}

static void emit(uint16_t type, uint16_t flags, uint64_t enter, uint64_t exit_, uint32_t cpu, const void *obj,
                 uint64_t aux, void *site, int result)
{
    if (!g_on)
        return;
    struct ring *r = my_ring();
    if (!r) {
        atomic_fetch_add(&g_dropped_nothread, 1);
        return;
    }
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h - atomic_load_explicit(&r->tail, memory_order_acquire) >= r->cap) {
        r->dropped++;
        return;
    }
    struct js_sync_record *e = &r->rec[h & (r->cap - 1)];
    e->enter_tsc = enter;
    e->exit_tsc = exit_;
    e->obj = (uint64_t)(uintptr_t)obj;
    e->aux = aux;
    e->site = (uint64_t)(uintptr_t)site;
    e->tid = t_self.tid;
    e->type = type;
    e->flags = flags;
    e->result = result;
    e->cpu = cpu;
    e->reserved = 0;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

static void ring_gone(void *p)
{
    /* pthread key destructor: the thread ends; the writer drains its ring, then frees it */
    struct ring *r = p;
    if (r)
        atomic_store(&r->state, 2);
}

/* ---- the writer -------------------------------------------------------------- */

static void write_all(const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(g_fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            g_on = 0;  /* disk full or similar: stop recording, keep what is written */
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void drain(struct ring *r)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t n = h - tl;
    if (n) {
        uint64_t i = tl & (r->cap - 1);
        uint64_t first = n < r->cap - i ? n : r->cap - i;
        write_all(&r->rec[i], first * sizeof *r->rec);
        if (n > first)
            write_all(&r->rec[0], (n - first) * sizeof *r->rec);
        g_written += n;
        atomic_store_explicit(&r->tail, h, memory_order_release);
    }
}

static void drain_all(int final)
{
    uint32_t n = atomic_load(&g_nrings);
    for (uint32_t i = 0; i < n; i++) {
        struct ring *r = &g_rings[i];
        int st = atomic_load(&r->state);
        if (st == 0)
            continue;
        drain(r);
        if (st == 2 && !final) {
            g_hdr.dropped += r->dropped;
            r->dropped = 0;
            atomic_store(&r->state, 0);  /* free for the next new thread */
        }
    }
}

static void save_maps(void)
{
    /* The address space, so call sites and lock addresses resolve to symbols after the process is gone. */
    char path[4200], buf[65536];
    snprintf(path, sizeof path, "%s.maps", g_path);
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in >= 0 && out >= 0) {
        ssize_t k;
        while ((k = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)k) != k)
                break;
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
}

/* Writer vs fatal-signal handler: an atomic flag, not a mutex (pthread_mutex_trylock is not
 * async-signal-safe); whoever sets it drains, and the writer skips a round the handler holds. */
static _Atomic int g_draining;

static void *writer_main(void *arg)
{
    (void)arg;
    t_self.busy = 1;  /* nothing this thread does is the program's */
    prctl(PR_SET_NAME, "js-sync-writer", 0, 0, 0);
    if (g_writer_cpus_set)
        sched_setaffinity(0, sizeof g_writer_cpus, &g_writer_cpus);
    save_maps();
    while (atomic_load(&g_writer_state) == 1) {
        struct timespec d = {0, DRAIN_NS};
        nanosleep(&d, NULL);
        if (!atomic_exchange(&g_draining, 1)) {
            drain_all(0);
            atomic_store(&g_draining, 0);
        }
    }
    return NULL;
}

static void start_writer(void)
{
    REAL(pthread_mutex_lock)(&g_writer_lock);
    if (atomic_load(&g_writer_state) == 0 && g_on) {
        atomic_store(&g_writer_state, 1);
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 128 * 1024);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);  /* the program's signals are not the writer's */
        if (REAL(pthread_create)(&g_writer, &a, writer_main, NULL) != 0)
            atomic_store(&g_writer_state, 0);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&a);
    }
    REAL(pthread_mutex_unlock)(&g_writer_lock);
}

static void open_file(void)
{
    g_on = 0;
    memset(&g_hdr, 0, sizeof g_hdr);
    memcpy(g_hdr.magic, JS_SYNC_MAGIC, sizeof JS_SYNC_MAGIC);
    g_hdr.version = JS_SYNC_VERSION;
    g_hdr.header_size = sizeof g_hdr;
    g_hdr.record_size = sizeof(struct js_sync_record);
    g_hdr.start_tsc = tsc();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g_hdr.start_mono_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    g_hdr.pid = (uint32_t)getpid();
    g_hdr.ppid = (uint32_t)getppid();
    prctl(PR_GET_NAME, g_hdr.comm, 0, 0, 0);
    snprintf(g_path, sizeof g_path, "%s/sync-%u-%" PRIu64 ".raw", g_dir, g_hdr.pid, g_hdr.start_tsc);
    g_fd = open(g_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (g_fd < 0)
        return;
    g_written = 0;
    g_on = 1;
    write_all(&g_hdr, sizeof g_hdr);
}

static void finish(void)
{
    if (!g_on || g_fd < 0)
        return;
    g_finishing = 1;
    /* the main thread's end */
    char comm[16] = {0};
    prctl(PR_GET_NAME, comm, 0, 0, 0);
    uint64_t w[2];
    memcpy(w, comm, 16);
    uint32_t cpu;
    uint64_t t = tscp(&cpu);
    emit(JS_EV_EXIT, 0, t, t, cpu, (void *)(uintptr_t)w[0], w[1], NULL, 0);
    if (atomic_load(&g_writer_state) == 1) {
        atomic_store(&g_writer_state, 2);
        REAL(pthread_join)(g_writer, NULL);
    }
    drain_all(1);
    uint32_t n = atomic_load(&g_nrings);
    for (uint32_t i = 0; i < n; i++)
        g_hdr.dropped += g_rings[i].dropped;
    g_hdr.dropped += atomic_load(&g_dropped_nothread);
    g_hdr.n_records = g_written;
    g_hdr.threads = atomic_load(&g_threads);
    g_hdr.end_tsc = tsc();
    g_hdr.flags = JS_SYNC_COMPLETE;
    save_maps();
    if (pwrite(g_fd, &g_hdr, sizeof g_hdr, 0) == sizeof g_hdr)
        fsync(g_fd);
    close(g_fd);
    g_fd = -1;
    g_on = 0;
}

static void after_fork_child(void)
{
    /* Only the forking thread lives on; the rings and the writer were the parent's. */
    atomic_fetch_add(&g_generation, 1);
    for (uint32_t i = 0; i < JS_MAX_THREADS; i++)
        atomic_store(&g_rings[i].state, 0);
    atomic_store(&g_nrings, 0);
    atomic_store(&g_writer_state, 0);
    atomic_store(&g_dropped_nothread, 0);
    atomic_store(&g_threads, 0);
    g_finishing = 0;
    pthread_mutex_init(&g_writer_lock, NULL);
    atomic_store(&g_draining, 0);
    if (g_fd >= 0)
        close(g_fd);
    g_fd = -1;
    if (g_dir[0])
        open_file();
}

__attribute__((constructor)) static void js_init(void)
{
    resolve_all();
    const char *dir = getenv("JS_SYNC_DIR");
    if (!dir || !*dir || strlen(dir) >= sizeof g_dir)
        return;
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    const char *ring = getenv("JS_SYNC_RING");
    if (ring) {
        unsigned long v = strtoul(ring, NULL, 10);
        if (v >= 64 && v <= (1u << 22) && !(v & (v - 1)))
            g_ring_cap = (unsigned)v;
    }
    const char *sc = getenv("JS_SYNC_SLEEP_CHECK");
    g_sleep_check = !(sc && sc[0] == '0');
    const char *cpus = getenv("JS_SYNC_WRITER_CPUS");
    if (cpus && *cpus) {
        CPU_ZERO(&g_writer_cpus);
        char *copy = strdup(cpus), *save = NULL;
        /* no memory at start-up: the writer keeps the program's affinity */
        for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
            long lo = strtol(tok, NULL, 10), hi = lo;
            char *dash = strchr(tok, '-');
            if (dash)
                hi = strtol(dash + 1, NULL, 10);
            for (long c = lo; c <= hi && c >= 0 && c < CPU_SETSIZE; c++)
                CPU_SET(c, &g_writer_cpus);
        }
        free(copy);
        g_writer_cpus_set = CPU_COUNT(&g_writer_cpus) > 0;
    }
    pthread_key_create(&g_key, ring_gone);
    pthread_atfork(NULL, NULL, after_fork_child);
    open_file();  /* the main thread starts at the header's start_tsc; its ring comes with its first record */
    if (g_on)
        catch_fatal();
}

__attribute__((destructor)) static void js_fini(void) { finish(); }

/* A crash: drain what the rings hold (write() is async-signal-safe), then die of the same signal.
 * Installed only where the program left the default action, and reset by SA_RESETHAND. */
static void on_fatal(int sig)
{
    if (g_on && g_fd >= 0 && !atomic_exchange(&g_draining, 1)) {
        drain_all(1);
        g_on = 0;
    }
    raise(sig);
}

static void catch_fatal(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_fatal;
            sa.sa_flags = SA_RESETHAND | SA_NODEFER;
            sigaction(sigs[i], &sa, NULL);
        }
    }
}

/* _exit skips destructors: a forked child ending with _exit still leaves its records. */
EXPORT void _exit(int status)
{
    finish();
    REAL(_exit)(status);
    __builtin_unreachable();
}

/* ---- helpers for the wrappers ------------------------------------------------ */

static inline long nvcsw(void)
{
    struct rusage ru;
    return g_sleep_check && getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

static inline int mutex_contended(const pthread_mutex_t *m)
{
    /* glibc's lock word: 0 free, 1 locked, 2 locked with sleepers; robust and PI
     * mutexes hold the owner's tid with FUTEX_WAITERS (bit 31) when someone sleeps. */
    int kind = m->__data.__kind;
    unsigned lock = (unsigned)__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
    if (kind & (16 | 32))
        return (lock & 0x80000000u) != 0;
    return (lock & 0x7ffffu) > 1;
}

static inline int rwlock_contended(const pthread_rwlock_t *l)
{
    /* readers waiting (bit 2 of __readers) or a futex marked used by sleepers (value 2) */
    unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
    unsigned wf = __atomic_load_n(&l->__data.__writers_futex, __ATOMIC_RELAXED);
    unsigned pf = __atomic_load_n(&l->__data.__wrphase_futex, __ATOMIC_RELAXED);
    return (r & 4u) || (wf & 2u) || (pf & 2u);
}

static inline int cond_has_waiters(const pthread_cond_t *c)
{
    return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;  /* waiter refcount << 3 */
}

#define GUARDED (unlikely(t_self.busy) || unlikely(!g_on))
#define SITE __builtin_return_address(0)

/* ---- mutexes ------------------------------------------------------------------ */

/* The contended path out of line, so the uncontended one (a trylock) sets up no frame. */
static __attribute__((noinline)) int lock_contended(pthread_mutex_t *m, void *site)
{
    if (GUARDED)
        return REAL(pthread_mutex_lock)(m);
    uint64_t e = tsc();
    long v0 = nvcsw();
    int rc = REAL(pthread_mutex_lock)(m);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_LOCK, nvcsw() > v0 ? JS_SF_SLEPT : 0, e, x, cpu, m, 0, site, rc);
    return rc;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    /* a lock the trylock takes is uncontended (no record), guarded or not */
    if (likely(REAL(pthread_mutex_trylock)(m) == 0))
        return 0;
    return lock_contended(m, SITE);
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m) { return REAL(pthread_mutex_trylock)(m); }

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
    if (GUARDED || REAL(pthread_mutex_trylock)(m) == 0)
        return GUARDED ? REAL(pthread_mutex_timedlock)(m, t) : 0;
    uint64_t e = tsc();
    long v0 = nvcsw();
    int rc = REAL(pthread_mutex_timedlock)(m, t);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_LOCK, (nvcsw() > v0 ? JS_SF_SLEPT : 0) | JS_SF_TIMED, e, x, cpu, m, 0, SITE, rc);
    return rc;
}

EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *t)
{
    if (GUARDED || REAL(pthread_mutex_trylock)(m) == 0)
        return GUARDED ? REAL(pthread_mutex_clocklock)(m, c, t) : 0;
    uint64_t e = tsc();
    long v0 = nvcsw();
    int rc = REAL(pthread_mutex_clocklock)(m, c, t);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_LOCK, (nvcsw() > v0 ? JS_SF_SLEPT : 0) | JS_SF_TIMED, e, x, cpu, m, 0, SITE, rc);
    return rc;
}

EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (likely(!mutex_contended(m)) || GUARDED)
        return REAL(pthread_mutex_unlock)(m);
    uint64_t e = tsc();
    int rc = REAL(pthread_mutex_unlock)(m);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_UNLOCK, 0, e, x, cpu, m, 0, SITE, rc);
    return rc;
}

/* ---- condition variables --------------------------------------------------------- */

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (GUARDED)
        return REAL(pthread_cond_wait)(c, m);
    uint64_t e = tsc();
    int rc = REAL(pthread_cond_wait)(c, m);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_COND_WAIT, 0, e, x, cpu, c, (uint64_t)(uintptr_t)m, SITE, rc);
    return rc;
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    if (GUARDED)
        return REAL(pthread_cond_timedwait)(c, m, t);
    uint64_t e = tsc();
    int rc = REAL(pthread_cond_timedwait)(c, m, t);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_COND_WAIT, JS_SF_TIMED, e, x, cpu, c, (uint64_t)(uintptr_t)m, SITE, rc);
    return rc;
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t)
{
    if (GUARDED)
        return REAL(pthread_cond_clockwait)(c, m, k, t);
    uint64_t e = tsc();
    int rc = REAL(pthread_cond_clockwait)(c, m, k, t);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_COND_WAIT, JS_SF_TIMED, e, x, cpu, c, (uint64_t)(uintptr_t)m, SITE, rc);
    return rc;
}

static int signal_common(pthread_cond_t *c, int (*real)(pthread_cond_t *), uint16_t type, void *site)
{
    if (likely(!cond_has_waiters(c)) || GUARDED)
        return real(c);
    uint64_t e = tsc();
    int rc = real(c);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(type, 0, e, x, cpu, c, 0, site, rc);
    return rc;
}

EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    return signal_common(c, REAL(pthread_cond_signal), JS_EV_COND_SIGNAL, SITE);
}

EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    return signal_common(c, REAL(pthread_cond_broadcast), JS_EV_COND_BROADCAST, SITE);
}

/* ---- barriers ------------------------------------------------------------------------ */

EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned n)
{
    int rc = REAL(pthread_barrier_init)(b, a, n);
    if (!GUARDED && rc == 0) {
        uint32_t cpu;
        uint64_t t = tscp(&cpu);
        emit(JS_EV_BARRIER_INIT, 0, t, t, cpu, b, n, SITE, rc);
    }
    return rc;
}

EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    if (GUARDED)
        return REAL(pthread_barrier_wait)(b);
    uint64_t e = tsc();
    int rc = REAL(pthread_barrier_wait)(b);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_BARRIER_WAIT, rc == PTHREAD_BARRIER_SERIAL_THREAD ? JS_SF_SERIAL : 0, e, x, cpu, b, 0, SITE,
         rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : rc);
    return rc;
}

/* ---- read-write locks ------------------------------------------------------------------ */

static int rw_common(pthread_rwlock_t *l, int (*try_)(pthread_rwlock_t *), int (*lock)(pthread_rwlock_t *),
                     uint16_t type, void *site)
{
    if (GUARDED)
        return lock(l);
    if (likely(try_(l) == 0))
        return 0;
    uint64_t e = tsc();
    long v0 = nvcsw();
    int rc = lock(l);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(type, nvcsw() > v0 ? JS_SF_SLEPT : 0, e, x, cpu, l, 0, site, rc);
    return rc;
}

EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return rw_common(l, REAL(pthread_rwlock_tryrdlock), REAL(pthread_rwlock_rdlock), JS_EV_RDLOCK, SITE);
}

EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return rw_common(l, REAL(pthread_rwlock_trywrlock), REAL(pthread_rwlock_wrlock), JS_EV_WRLOCK, SITE);
}

EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) { return REAL(pthread_rwlock_tryrdlock)(l); }
EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l) { return REAL(pthread_rwlock_trywrlock)(l); }

EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t)
{
    if (GUARDED || REAL(pthread_rwlock_tryrdlock)(l) == 0)
        return GUARDED ? REAL(pthread_rwlock_timedrdlock)(l, t) : 0;
    uint64_t e = tsc();
    int rc = REAL(pthread_rwlock_timedrdlock)(l, t);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_RDLOCK, JS_SF_TIMED, e, x, cpu, l, 0, SITE, rc);
    return rc;
}

EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t)
{
    if (GUARDED || REAL(pthread_rwlock_trywrlock)(l) == 0)
        return GUARDED ? REAL(pthread_rwlock_timedwrlock)(l, t) : 0;
    uint64_t e = tsc();
    int rc = REAL(pthread_rwlock_timedwrlock)(l, t);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_WRLOCK, JS_SF_TIMED, e, x, cpu, l, 0, SITE, rc);
    return rc;
}

EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    if (likely(!rwlock_contended(l)) || GUARDED)
        return REAL(pthread_rwlock_unlock)(l);
    uint64_t e = tsc();
    int rc = REAL(pthread_rwlock_unlock)(l);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_RWUNLOCK, 0, e, x, cpu, l, 0, SITE, rc);
    return rc;
}

/* ---- threads ------------------------------------------------------------------------------ */

struct start_arg {
    void *(*fn)(void *);
    void *arg;
    uint64_t seq;
    uint32_t creator;
};

static void emit_exit(void)
{
    char comm[16] = {0};
    prctl(PR_GET_NAME, comm, 0, 0, 0);
    uint64_t w[2];
    memcpy(w, comm, 16);
    uint32_t cpu;
    uint64_t t = tscp(&cpu);
    emit(JS_EV_EXIT, 0, t, t, cpu, (void *)(uintptr_t)w[0], w[1], NULL, 0);
}

static void *trampoline(void *p)
{
    struct start_arg a = *(struct start_arg *)p;
    free(p);
    if (g_on) {
        uint32_t cpu;
        uint64_t t = tscp(&cpu);
        emit(JS_EV_START, 0, t, t, cpu, (void *)(uintptr_t)a.creator, a.seq, (void *)a.fn, 0);
    }
    void *r = a.fn(a.arg);
    if (g_on)
        emit_exit();
    return r;
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (GUARDED)
        return REAL(pthread_create)(t, attr, fn, arg);
    struct start_arg *a = malloc(sizeof *a);
    if (!a)
        return REAL(pthread_create)(t, attr, fn, arg);
    struct ring *r = my_ring();  /* the creator's tid, and a writer before the first child */
    (void)r;
    a->fn = fn;
    a->arg = arg;
    a->seq = atomic_fetch_add(&g_create_seq, 1) + 1;
    a->creator = t_self.tid;
    /* Read before the child starts: once created it may run and free `a` before we return. */
    uint64_t seq = a->seq;
    uint64_t e = tsc();
    int rc = REAL(pthread_create)(t, attr, trampoline, a);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    if (rc != 0)
        free(a);
    emit(JS_EV_CREATE, 0, e, x, cpu, rc == 0 ? (void *)*t : NULL, rc == 0 ? seq : 0, SITE, rc);
    return rc;
}

EXPORT int pthread_join(pthread_t th, void **ret)
{
    if (GUARDED)
        return REAL(pthread_join)(th, ret);
    uint64_t e = tsc();
    int rc = REAL(pthread_join)(th, ret);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_JOIN, 0, e, x, cpu, (void *)th, 0, SITE, rc);
    return rc;
}

EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *ts)
{
    if (GUARDED)
        return REAL(pthread_timedjoin_np)(th, ret, ts);
    uint64_t e = tsc();
    int rc = REAL(pthread_timedjoin_np)(th, ret, ts);
    uint32_t cpu;
    uint64_t x = tscp(&cpu);
    emit(JS_EV_JOIN, JS_SF_TIMED, e, x, cpu, (void *)th, 0, SITE, rc);
    return rc;
}

EXPORT void pthread_exit(void *r)
{
    if (!GUARDED)
        emit_exit();
    REAL(pthread_exit)(r);
    __builtin_unreachable();
}

/* ---- frames and layout --------------------------------------------------------------------- */

/* A frame boundary on the calling thread (jitterscope_sync.h, jitterscope.sync.frames). */
EXPORT void jitterscope_sync_frame(uint64_t id)
{
    if (!g_on)
        return;
    uint32_t cpu;
    uint64_t t = tscp(&cpu);
    emit(JS_EV_FRAME, 0, t, t, cpu, (void *)(uintptr_t)id, 0, __builtin_return_address(0), 0);
}

#define FIELD(S, F) n += snprintf(buf + n, cap > n ? cap - n : 0, "%s\"%s\": {\"offset\": %zu, \"size\": %zu}", \
                                  first ? "" : ", ", #F, offsetof(struct S, F), sizeof(((struct S *)0)->F)), first = 0

/* The structs as the compiler laid them out, as JSON (tests compare with sync/records.py). */
EXPORT int jitterscope_sync_layout(char *buf, size_t cap)
{
    size_t n = 0;
    int first = 1;
    n += snprintf(buf + n, cap > n ? cap - n : 0, "{\"magic\": \"%s\", \"version\": %u, \"complete\": %u, "
                  "\"structs\": {\"js_sync_header\": {\"size\": %zu, \"fields\": {", JS_SYNC_MAGIC, JS_SYNC_VERSION,
                  JS_SYNC_COMPLETE, sizeof(struct js_sync_header));
    FIELD(js_sync_header, magic); FIELD(js_sync_header, version); FIELD(js_sync_header, header_size);
    FIELD(js_sync_header, record_size); FIELD(js_sync_header, flags); FIELD(js_sync_header, start_tsc);
    FIELD(js_sync_header, start_mono_ns); FIELD(js_sync_header, pid); FIELD(js_sync_header, ppid);
    FIELD(js_sync_header, n_records); FIELD(js_sync_header, dropped); FIELD(js_sync_header, threads);
    FIELD(js_sync_header, end_tsc); FIELD(js_sync_header, comm); FIELD(js_sync_header, reserved);
    first = 1;
    n += snprintf(buf + n, cap > n ? cap - n : 0, "}}, \"js_sync_record\": {\"size\": %zu, \"fields\": {",
                  sizeof(struct js_sync_record));
    FIELD(js_sync_record, enter_tsc); FIELD(js_sync_record, exit_tsc); FIELD(js_sync_record, obj);
    FIELD(js_sync_record, aux); FIELD(js_sync_record, site); FIELD(js_sync_record, tid);
    FIELD(js_sync_record, type); FIELD(js_sync_record, flags); FIELD(js_sync_record, result);
    FIELD(js_sync_record, cpu); FIELD(js_sync_record, reserved);
    n += snprintf(buf + n, cap > n ? cap - n : 0, "}}}}");
    return n < cap ? (int)n : -1;
}
