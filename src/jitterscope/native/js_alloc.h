/* Checked allocation for jitterscope's programs (not its preloaded or ctypes libraries, which must never
 * end their host process: they check each allocation and degrade instead).
 *
 * A program that cannot get memory says so in one line naming itself and the size, and exits 2: the
 * Python side turns that into the command's error.  Include after _GNU_SOURCE is defined. */
#ifndef JS_ALLOC_H
#define JS_ALLOC_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void js_oom(size_t n)
{
    fprintf(stderr, "%s: out of memory (%zu bytes)\n", program_invocation_short_name, n);
    exit(2);
}

static inline void *js_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        js_oom(n);
    return p;
}

static inline void *js_calloc(size_t k, size_t n)
{
    void *p = calloc(k ? k : 1, n ? n : 1);
    if (!p)
        js_oom(k * n);
    return p;
}

static inline void *js_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        js_oom(n);
    return q;
}

static inline char *js_strdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        js_oom(strlen(s) + 1);
    return p;
}

/* Zeroed, aligned; the size is rounded up to the alignment, as aligned_alloc requires. */
static inline void *js_aligned_zalloc(size_t align, size_t n)
{
    size_t size = (n + align - 1) / align * align;
    void *p = aligned_alloc(align, size ? size : align);
    if (!p)
        js_oom(size);
    return memset(p, 0, size ? size : align);
}

#endif
