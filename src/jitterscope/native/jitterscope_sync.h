/*
 * Frame marks for `jitterscope sync` (public header: copy it into your program).
 *
 *   #include "jitterscope_sync.h"
 *   for (;;) { JITTERSCOPE_FRAME(frame_no++); ... one frame of work ... }
 *
 * Each call marks a frame boundary: the frame that began at the previous mark
 * ends, the next begins.  Under `jitterscope sync` the mark is a record in the
 * run (per-frame jitter, frame-time distribution); without it, the macro costs
 * one predictable branch (the interposer is looked up once with dlsym).
 */
#ifndef JITTERSCOPE_SYNC_H
#define JITTERSCOPE_SYNC_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>

static inline void jitterscope_frame_mark(uint64_t id)
{
    static void (*hook)(uint64_t);
    static int looked;
    if (!looked) {
        hook = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "jitterscope_sync_frame");
        looked = 1;
    }
    if (hook)
        hook(id);
}

#define JITTERSCOPE_FRAME(id) jitterscope_frame_mark((uint64_t)(id))

#endif
