/*
 * The work loop of `jitterscope cluster bsp`: a fixed number of TSC-reading
 * iterations (a selfish-detour loop with a fixed amount of work instead of a
 * fixed duration).  It does the phase's "computation" and records the noise
 * that hit it at the same time: every gap between two consecutive reads longer
 * than the threshold is stored as (start_tsc, length_tsc).
 *
 * Built as a shared object (libjsbspwork.so) and called through ctypes from
 * the MPI rank's own thread, so the loop runs exactly where the rank runs and
 * no process boundary sits between the work and the synchronization.
 */
#include <stdint.h>

#include "js_tsc.h"

/*
 * Spin `iters` iterations.  Gaps above `threshold` cycles go to gap_start[]
 * and gap_len[] (at most `cap`; the count goes on past cap so callers can tell
 * records were dropped).  out[0] = first read, out[1] = last read,
 * out[2] = gaps seen, out[3] = cycles inside gaps.  Returns gaps stored.
 */
uint64_t js_bsp_spin(uint64_t iters, uint64_t threshold, uint64_t *gap_start, uint64_t *gap_len,
                     uint64_t cap, uint64_t *out)
{
    uint64_t first = js_rdtsc_ordered();
    uint64_t prev = first, gaps = 0, gap_cycles = 0, stored = 0;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t now = js_rdtsc();
        uint64_t d = now - prev;
        if (__builtin_expect(d > threshold, 0)) {
            if (stored < cap) {
                gap_start[stored] = prev;
                gap_len[stored] = d;
                stored++;
            }
            gaps++;
            gap_cycles += d;
        }
        prev = now;
    }
    out[0] = first;
    out[1] = prev;
    out[2] = gaps;
    out[3] = gap_cycles;
    return stored;
}

/* An ordered TSC read for phase boundaries (after a synchronization). */
uint64_t js_bsp_rdtsc(void) { return js_rdtsc_ordered(); }
