/* Pass 1 of the DVFS replay of `jitterscope whatif dvfs` (dvfs.c, libjsdvfs.so): one thread's items
 * cut into subframes, the controller's factor before each (spec A.7), transition stalls, recorded jitter
 * and the L2-eviction term (A.6).  The layouts are shared with Python (whatif/replay.py mirrors them with
 * ctypes; a test compares sizes and offsets through js_dvfs_layout()).
 *
 * A thread is a stream of ops (JS_OP_*), built once per program by replay.py.  js_dvfs_run() runs them
 * from state->next and returns at a pthread_create (the caller plans the child with state->j) or a join
 * (the caller merges the joined thread's final J), or at the end.  Arithmetic mirrors the pure-Python
 * reference (tests/support/dvfs_ref.py) operation for operation, so both give identical doubles.
 */
#ifndef JS_DVFS_H
#define JS_DVFS_H
#include <stdint.h>

enum {
    JS_OP_SEG = 0,    /* a segment starts: item a; sim offset and recorded offset back to 0 */
    JS_OP_WORK = 1,   /* compute up to recorded offset `val` within the segment */
    JS_OP_LOST = 2,   /* a span of `val` ns lost to jitter (kernel burst) */
    JS_OP_CREATE = 3, /* pthread_create: deadline; returns so the caller plans child `a` */
    JS_OP_END = 4,    /* compute to the segment's end (`val` = its recorded length); item a's map ends */
    JS_OP_WAIT = 5,   /* a wait of item a whose wake-up jitter is `val` ns */
    JS_OP_JOIN = 6,   /* a join of thread `a`: deadline; returns so the caller merges its J */
};

typedef struct {
    double val;
    int64_t a;        /* item index (SEG, END, WAIT), child tid (CREATE), joined tid (JOIN) */
    int32_t op;
    int32_t item;     /* the item this op belongs to (subframes are booked on it) */
} js_dvfs_op;

typedef struct {
    double table[64];          /* the factors, sorted; 1.0 among them */
    int32_t ntable;
    int32_t ctl;               /* 0: nominal frequency throughout */
    int32_t jitter;            /* inject the recorded jitter */
    int32_t physical;          /* 0: paper model tau ~ 1/f; 1: physical with alpha */
    int32_t ceil;              /* quantise upward instead of nearest */
    int32_t warmup;            /* subframes at 1.0 before control starts */
    int64_t k;                 /* reactivity */
    double alpha;
    double transition_ns;
    double subframe_ns;
    double evict_ns;           /* A.6: E x t_mem / n_banks booked on J per kernel burst (0: off) */
} js_dvfs_params;

typedef struct {
    double j, f, left, t, tau0, pending, sim_off, start_off, rec, scale, evict, busy, energy;
    int64_t n, item, next;     /* subframes so far, current item, next op */
    int32_t open, pad;
    int64_t nbp, nsub;         /* breakpoints and subframes written */
} js_dvfs_state;

typedef struct {               /* outputs, capacities given by the caller (replay.py bounds them) */
    double *bp_rec, *bp_sim;   /* segment offset maps: recorded -> simulated offset */
    int64_t *map_lo, *map_hi;  /* per item: its map is bp[map_lo, map_hi) */
    int64_t *sub_item;
    double *sub_off, *sub_f, *sub_t, *sub_j;
    int64_t cap_bp, cap_sub;
} js_dvfs_out;

#endif
