/* The trace-driven cache simulator of `jitterscope whatif cache` (cachesim.c, libjscachesim.so):
 * the layouts shared with Python (whatif/cachesim.py mirrors them with ctypes; a test compares sizes
 * and offsets through js_cachesim_layout()).
 *
 * Trace word (uint64): (byte address << 2) | op, op 0 load, 1 store, 2 modify (load + store),
 * 3 instruction fetch.  Kernel bursts are generated here, not stored: burst b runs before application
 * access pos[b], source src[b], len[b] accesses sweeping that source's footprint (see cachesim.c).
 */
#ifndef JS_CACHESIM_H
#define JS_CACHESIM_H
#include <stdint.h>

#define JS_CACHE_LINE_SHIFT 6            /* L2 and OS cache: 64-byte lines (Table 2) */

typedef struct {
    uint32_t l1_sets, l1_ways, l1_line_shift; /* l1_sets = 0: no L1 */
    uint32_t l2_sets, l2_ways;                /* the application cache (unified when os_sets = 0) */
    uint32_t os_sets, os_ways;                /* the OS cache; 0 sets: none */
    uint32_t overflow;                        /* overflow sharing between L2 and the OS cache */
    uint32_t flush;                           /* flush the OS cache and aliens at each switch to the application */
    uint32_t migrate_back;                    /* a hit in the other cache moves the line home */
    uint32_t prefetch_lines;                  /* prefetch buffer capacity (0: off) */
    uint32_t pin;                             /* selective pinning (App. F.2) */
    uint32_t pin_pct;                         /* current level has priority for the first pin_pct % of an epoch */
    uint32_t prefetch_pct;                    /* prefetch at this % of the predicted OS epoch (90 = tau of 10%) */
    uint32_t active_mult;                     /* active line: touched within active_mult x mean L2 interval */
    uint32_t ema_shift;                       /* epoch predictor: EMA with alpha = 1 / 2^ema_shift */
} js_cache_config;

enum { JS_APP = 0, JS_OS = 1 };

typedef struct {
    uint64_t accesses[2];       /* trace accesses (app, OS) */
    uint64_t l2_accesses[2];    /* reaching L2 / the OS cache (L1 misses and L1 write-backs) */
    uint64_t home_hits[2];      /* hits in the cache the access is routed to */
    uint64_t other_hits[2];     /* hits in the other cache through the overflow bit */
    uint64_t misses[2];         /* fetched from memory */
    uint64_t writebacks;        /* dirty lines written to memory */
    uint64_t overflows;         /* evicted lines accepted by the other cache */
    uint64_t overflow_rejected; /* refused: the set already held assoc/2 aliens */
    uint64_t app_evicted_by_os; /* application lines evicted by a kernel access */
    uint64_t prefetched;        /* lines brought back from the prefetch buffer */
    uint64_t prefetch_useful;   /* of those, hit by the application before leaving */
    uint64_t prefetch_skipped;  /* no victim that is not an active line of the running code */
    uint64_t flushes;
    uint64_t bursts;
} js_cache_stats;

typedef struct {
    uint64_t base;              /* byte address of the source's footprint */
    uint64_t lines;             /* footprint in 64-byte lines */
    uint64_t cursor;            /* where its next burst starts in the sweep */
    uint32_t write_every;       /* every Nth access stores (0: none) */
    uint32_t pad;
} js_cache_source;

int js_cachesim_layout(uint64_t *out, int n);
int js_cachesim_run(const js_cache_config *cfg, const uint64_t *trace, uint64_t n,
                    const uint64_t *pos, const uint32_t *src, const uint64_t *len, uint64_t nbursts,
                    js_cache_source *sources, uint32_t nsources, js_cache_stats *stats);
#endif
