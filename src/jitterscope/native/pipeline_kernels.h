/*
 * The built-in box kernels of the pipeline runtime (header-only: one .c per program).
 *
 * Each computes output rows [row0, row1) of a W x H image from whole input
 * images.  Integer images use wrap-around (unsigned) arithmetic and int64
 * accumulators with C's truncating division; float images use float
 * arithmetic in a fixed order, compiled without FP contraction (the pragmas
 * below), so a row computes the same bits whichever sub-box,
 * thread or schedule runs it.  jitterscope/pipeline/kernels_ref.py is the numpy
 * statement of the same arithmetic, and a test compares the two.
 */
#ifndef JS_PIPELINE_KERNELS_H
#define JS_PIPELINE_KERNELS_H

#include <stdint.h>
#include <string.h>

/* No fused multiply-add: a*b+c must round twice, as numpy and every other build do. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

enum { JS_K_SOURCE = 1, JS_K_SINK, JS_K_DUP, JS_K_GAIN, JS_K_ADD, JS_K_AVERAGE, JS_K_COPY, JS_K_CONV,
       JS_K_USER };

static inline uint64_t js_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int js_clamp(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* Source: pixel (x, y) of iteration k from the seed; integers in [-32768, 32767] (float: /256). */
static void js_k_source(void *out, uint32_t w, uint32_t h, uint32_t r0, uint32_t r1, int is_float,
                        uint64_t seed, uint64_t k)
{
    uint64_t base = k * (uint64_t)w * h;
    for (uint32_t y = r0; y < r1; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint64_t v = js_mix64(seed ^ js_mix64(base + (uint64_t)y * w + x));
            int32_t iv = (int32_t)(v & 0xFFFF) - 32768;
            if (is_float)
                ((float *)out)[(uint64_t)y * w + x] = (float)iv / 256.0f;
            else
                ((int32_t *)out)[(uint64_t)y * w + x] = iv;
        }
}

/* Sink: a digest of the whole frame, order-independent: sum of mix(bits | index << 32). */
static uint64_t js_k_digest(const void *in, uint32_t w, uint32_t h)
{
    const uint32_t *p = in;
    uint64_t n = (uint64_t)w * h, d = 0;
    for (uint64_t i = 0; i < n; i++)
        d += js_mix64((uint64_t)p[i] | (i << 32));
    return d;
}

static void js_k_copy(void *out, const void *in, uint32_t w, uint32_t r0, uint32_t r1)
{
    size_t row = (size_t)w * 4;
    memcpy((char *)out + r0 * row, (const char *)in + r0 * row, (r1 - r0) * row);
}

static void js_k_gain(void *out, const void *in, uint32_t w, uint32_t r0, uint32_t r1, int is_float,
                      int64_t fi, int64_t oi, double ff, double of)
{
    uint64_t a = (uint64_t)r0 * w, b = (uint64_t)r1 * w;
    if (is_float) {
        float f = (float)ff, o = (float)of;
        for (uint64_t i = a; i < b; i++)
            ((float *)out)[i] = ((const float *)in)[i] * f + o;
    } else {
        uint32_t f = (uint32_t)fi, o = (uint32_t)oi;
        for (uint64_t i = a; i < b; i++)
            ((int32_t *)out)[i] = (int32_t)((uint32_t)((const int32_t *)in)[i] * f + o);
    }
}

/* add (n = 2 or more inputs: their sum) and average (their sum / n, truncated for integers) */
static void js_k_sum(void *out, const void *const *in, uint32_t n, uint32_t w, uint32_t r0, uint32_t r1,
                     int is_float, int average)
{
    uint64_t a = (uint64_t)r0 * w, b = (uint64_t)r1 * w;
    for (uint64_t i = a; i < b; i++) {
        if (is_float) {
            float s = ((const float *)in[0])[i];
            for (uint32_t j = 1; j < n; j++)
                s = s + ((const float *)in[j])[i];
            ((float *)out)[i] = average ? s / (float)n : s;
        } else if (average) {
            int64_t s = 0;
            for (uint32_t j = 0; j < n; j++)
                s += ((const int32_t *)in[j])[i];
            ((int32_t *)out)[i] = (int32_t)(s / (int64_t)n);
        } else {
            uint32_t s = 0;
            for (uint32_t j = 0; j < n; j++)
                s += (uint32_t)((const int32_t *)in[j])[i];
            ((int32_t *)out)[i] = (int32_t)s;
        }
    }
}

/* size x size convolution, weights row-major, window rows y - size/2 .. y + (size-1)/2 (same for x),
 * clamped to the image; result = sum / divisor (integers: 64-bit wrapping sum, truncating division;
 * weights are 32-bit, so each product fits).  The sum runs over dy then dx in every case: the interior
 * (no clamping) and the border columns give the same bits as the plain definition. */
static inline __attribute__((always_inline)) void js_k_conv_px(void *out, const void *const *rows, uint32_t w, uint32_t y, uint32_t x,
                                int is_float, uint32_t size, const int64_t *weights, int64_t divisor, int clamp)
{
    int lo = (int)size / 2;
    uint64_t si = 0;   /* wraps instead of overflowing (no undefined behaviour) */
    float sf = 0.0f;
    for (uint32_t dy = 0; dy < size; dy++) {
        for (uint32_t dx = 0; dx < size; dx++) {
            int xx = (int)x + (int)dx - lo;
            uint32_t ix = (uint32_t)(clamp ? js_clamp(xx, (int)w - 1) : xx);
            int64_t wt = weights[dy * size + dx];
            if (is_float)
                sf = sf + (float)wt * ((const float *)rows[dy])[ix];
            else
                si += (uint64_t)(wt * (int64_t)((const int32_t *)rows[dy])[ix]);
        }
    }
    if (is_float)
        ((float *)out)[(uint64_t)y * w + x] = sf / (float)divisor;
    else
        ((int32_t *)out)[(uint64_t)y * w + x] = (int32_t)((int64_t)si / divisor);
}

static void js_k_conv(void *out, const void *in, uint32_t w, uint32_t h, uint32_t r0, uint32_t r1,
                      int is_float, uint32_t size, const int64_t *weights, int64_t divisor)
{
    int lo = (int)size / 2, hi = (int)size - 1 - lo;
    const void *rows[16];
    for (uint32_t y = r0; y < r1; y++) {
        for (uint32_t dy = 0; dy < size; dy++)
            rows[dy] = (const char *)in + (uint64_t)js_clamp((int)y + (int)dy - lo, (int)h - 1) * w * 4;
        /* constant is_float and clamp in each call: the compiler specialises the inner loop */
        for (uint32_t x = 0; x < w; x++) {
            int border = (int)x < lo || (int)x + hi >= (int)w;
            if (is_float) {
                if (border)
                    js_k_conv_px(out, rows, w, y, x, 1, size, weights, divisor, 1);
                else
                    js_k_conv_px(out, rows, w, y, x, 1, size, weights, divisor, 0);
            } else if (border) {
                js_k_conv_px(out, rows, w, y, x, 0, size, weights, divisor, 1);
            } else {
                js_k_conv_px(out, rows, w, y, x, 0, size, weights, divisor, 0);
            }
        }
    }
}

#endif
