/*
 * TSC helpers shared by the probe and the injector (header-only, so the build
 * stays "one .c per program").
 */
#ifndef JS_TSC_H
#define JS_TSC_H

#define _GNU_SOURCE
#include <cpuid.h>
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>

/* Plain rdtsc: the probe loop's clock read.  No fence: a detour loop only needs
 * every gap to show up, and an out-of-order read moves a timestamp by a few
 * cycles at most, far below the 1 us threshold (see bench-loop figures). */
static inline uint64_t js_rdtsc(void) { return __rdtsc(); }

/* Ordered read for one-off timestamps (alignment markers, injector truth):
 * lfence keeps it from executing before earlier instructions complete. */
static inline uint64_t js_rdtsc_ordered(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static inline int64_t js_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One (ns, tsc) pair from the tightest of `tries` brackets tsc1 <= ns <= tsc2. */
static inline void js_clock_pair(clockid_t clk, int tries, int64_t *ns_out, double *tsc_out)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < tries; i++) {
        uint64_t a = js_rdtsc_ordered();
        int64_t ns = js_ns(clk);
        uint64_t b = js_rdtsc_ordered();
        if (b - a < best) {
            best = b - a;
            *ns_out = ns;
            *tsc_out = (double)a + (double)(b - a) / 2.0;
        }
    }
}

/* TSC frequency against CLOCK_MONOTONIC_RAW over `ms` milliseconds.  With the
 * tsc clocksource, MONOTONIC_RAW is the kernel's own TSC-to-ns conversion, so
 * this reproduces the kernel's tsc_khz (refined) to well under 1 ppm. */
static inline double js_calibrate_tsc_hz(int ms)
{
    int64_t ns0, ns1;
    double t0, t1;
    js_clock_pair(CLOCK_MONOTONIC_RAW, 64, &ns0, &t0);
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {}
    js_clock_pair(CLOCK_MONOTONIC_RAW, 64, &ns1, &t1);
    return (t1 - t0) * 1e9 / (double)(ns1 - ns0);
}

/* TSC frequency the CPU or hypervisor announces, 0 if none: CPUID 0x15
 * (crystal ratio) on bare metal, the 0x40000010 timing leaf (kHz) under KVM/VMware. */
static inline double js_cpuid_tsc_hz(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, 0) >= 0x15) {
        __cpuid(0x15, a, b, c, d);
        if (a && b && c)
            return (double)c * b / a;
    }
    __cpuid(0x1, a, b, c, d);
    if (c & (1u << 31)) {  /* running under a hypervisor */
        __cpuid(0x40000000, a, b, c, d);
        if (a >= 0x40000010) {
            __cpuid(0x40000010, a, b, c, d);
            if (a)
                return (double)a * 1000.0;
        }
    }
    return 0.0;
}

#endif
