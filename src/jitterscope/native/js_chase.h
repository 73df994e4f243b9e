/*
 * A random cyclic pointer chain over a buffer's cache lines (header-only):
 * each step of the walk `idx = buf[idx]` is one dependent load, so walking it
 * measures memory latency and suffers from whatever contends for the caches.
 * Used by jitterscope-chase (the critical loop) and by jitterscope-protect's
 * noise probe.  Returns NULL when the memory cannot be had.
 */
#ifndef JS_CHASE_H
#define JS_CHASE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t *js_chase_build(uint64_t bytes, uint64_t seed)
{
    uint64_t lines = bytes / 64;
    uint64_t *buf = aligned_alloc(4096, (lines * 64 + 4095) / 4096 * 4096), *order = malloc(lines * sizeof *order);
    if (!buf || !order || !lines) {
        free(buf);
        free(order);
        return NULL;
    }
    memset(buf, 0, lines * 64);   /* resident before the first walk */
    for (uint64_t i = 0; i < lines; i++)
        order[i] = i;
    uint64_t x = seed | 1;        /* xorshift64: the same chain for the same seed */
    for (uint64_t i = lines - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint64_t j = x % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (uint64_t i = 0; i < lines; i++)   /* one link per line, at its first word */
        buf[order[i] * 8] = order[(i + 1) % lines] * 8;
    free(order);
    return buf;
}

#endif
