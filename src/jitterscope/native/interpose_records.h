/*
 * Binary layout of the sync interposer's output, shared by interpose.c and
 * jitterscope/sync/records.py.  `jitterscope_sync_layout()` (exported by
 * libjssync.so) returns the sizeof/offsetof of every struct here as JSON and
 * a test compares it with the numpy dtypes, so the two cannot drift apart.
 *
 * One file per process: `sync-<pid>-<start_tsc>.raw` = one js_sync_header,
 * then js_sync_record back to back in the order the writer drained them (per
 * thread in time order; threads interleaved).  A process that crashed or
 * exec'd leaves a file without JS_SYNC_COMPLETE: its records are still valid
 * up to the last whole record.  Little-endian, x86-64 (TSC timestamps, the
 * clock of the kernel trace's x86-tsc trace_clock).
 */
#ifndef JS_INTERPOSE_RECORDS_H
#define JS_INTERPOSE_RECORDS_H

#include <stdint.h>

#define JS_SYNC_MAGIC "JSSYNC"   /* 6 chars + NULs = 8 bytes */
#define JS_SYNC_VERSION 1u

/* js_sync_header.flags */
#define JS_SYNC_COMPLETE 1u      /* the process ended through exit(): every ring was drained */

struct js_sync_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;        /* records start here */
    uint32_t record_size;
    uint32_t flags;
    uint64_t start_tsc;          /* when the interposer started in this process */
    int64_t start_mono_ns;       /* CLOCK_MONOTONIC at start_tsc */
    uint32_t pid;
    uint32_t ppid;
    uint64_t n_records;          /* valid with JS_SYNC_COMPLETE */
    uint64_t dropped;            /* records lost to full rings or too many threads */
    uint64_t threads;            /* threads that got a ring */
    uint64_t end_tsc;            /* valid with JS_SYNC_COMPLETE */
    char comm[16];               /* the process's name at start */
    uint64_t reserved[4];
};

/* js_sync_record.type: one per interposed operation that produced a record.
 * Uncontended operations produce none (see interpose.c). */
enum js_sync_type {
    JS_EV_LOCK = 1,          /* contended mutex lock: enter = l_e, exit = l_x */
    JS_EV_UNLOCK = 2,        /* mutex unlock with sleepers: enter = u_e, exit = u_x */
    JS_EV_COND_WAIT = 3,     /* enter = w_e, exit = w_x (mutex re-acquired); aux = the mutex */
    JS_EV_COND_SIGNAL = 4,   /* signal with waiters: enter = s_e, exit = s_x */
    JS_EV_COND_BROADCAST = 5,/* broadcast with waiters: enter = b_e, exit = b_x */
    JS_EV_BARRIER_WAIT = 6,  /* enter = arrival, exit = return */
    JS_EV_BARRIER_INIT = 7,  /* aux = count */
    JS_EV_CREATE = 8,        /* obj = the new pthread_t, aux = create sequence number */
    JS_EV_START = 9,         /* first record of a created thread: obj = creator tid, aux = create sequence */
    JS_EV_EXIT = 10,         /* thread end; obj, aux = its 16-byte name (comm) */
    JS_EV_JOIN = 11,         /* obj = the joined pthread_t: enter = j_e, exit = j_x */
    JS_EV_RDLOCK = 12,       /* contended rwlock read lock */
    JS_EV_WRLOCK = 13,       /* contended rwlock write lock */
    JS_EV_RWUNLOCK = 14,     /* rwlock unlock with waiters */
    JS_EV_FRAME = 15,        /* frame boundary (jitterscope_sync_frame): obj = frame id */
    JS_EV_SEM_WAIT = 16,     /* sem_wait/timedwait/clockwait whose trywait failed: enter, exit (decremented) */
    JS_EV_SEM_POST = 17,     /* sem_post with sleepers on the semaphore: enter = p_e, exit = p_x */
    JS_EV_SPIN_LOCK = 18,    /* pthread_spin_lock whose trylock failed: enter, exit (spun until taken) */
};

/* js_sync_record.flags */
#define JS_SF_SLEPT 1u       /* the thread was switched out voluntarily during the call (ru_nvcsw grew) */
#define JS_SF_TIMED 2u       /* the timed/clock variant of the call */
#define JS_SF_SERIAL 4u      /* barrier: this caller got PTHREAD_BARRIER_SERIAL_THREAD */

struct js_sync_record {
    uint64_t enter_tsc;      /* TSC at entry of the call */
    uint64_t exit_tsc;       /* TSC at its return (rdtscp) */
    uint64_t obj;            /* the object's address (mutex, condvar, barrier, rwlock) or see the type */
    uint64_t aux;            /* type-specific, see enum js_sync_type */
    uint64_t site;           /* return address into the caller: the call site */
    uint32_t tid;            /* kernel thread id of the caller */
    uint16_t type;           /* enum js_sync_type */
    uint16_t flags;          /* JS_SF_* */
    int32_t result;          /* the call's return value (0 or an errno number) */
    uint32_t cpu;            /* CPU the caller returned on (rdtscp's TSC_AUX) */
    uint64_t reserved;
};

#ifdef __cplusplus
static_assert(sizeof(struct js_sync_record) == 64, "js_sync_record is 64 bytes");
#else
_Static_assert(sizeof(struct js_sync_record) == 64, "js_sync_record is 64 bytes");
_Static_assert(sizeof(struct js_sync_header) == 128, "js_sync_header is 128 bytes");
#endif

#endif
