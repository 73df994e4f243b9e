/*
 * The ABI of a user kernel for `jitterscope pipeline` (docs/commands/pipeline.md).
 *
 * A box `{kernel: user, library: ./libmine.so, symbol: my_kernel, inputs: [...],
 * outputs: [...], params: [...]}` calls, for each of its sub-boxes and every
 * iteration,
 *
 *     int my_kernel(const struct js_kernel_call *c);
 *
 * which must write the output rows [row0, row1) of every output image (all
 * columns) from the input images, and return 0 (non-zero stops the run with an
 * error naming the box).  Input images are whole: a port declared with
 * `neighbourhood: [w, h]` may read rows row0 - h/2 .. row1 - 1 + (h-1)/2
 * (clamped to the image), and the compiler orders the sub-boxes so those rows
 * are ready.  Reading other rows, or writing outside [row0, row1), is a data
 * race the guard mode (`pipeline run --guard`) reports.  The result must depend
 * only on the inputs, params and iteration (no state kept between calls), so
 * that every schedule gives bit-identical output.
 *
 * Build: cc -O2 -fPIC -shared -I $(jitterscope's native dir) mine.c -o libmine.so
 */
#ifndef JS_PIPELINE_KERNEL_H
#define JS_PIPELINE_KERNEL_H

#include <stdint.h>

#define JS_KERNEL_ABI 1u

struct js_kernel_call {
    uint32_t abi;            /* JS_KERNEL_ABI */
    uint32_t pixel_type;     /* 0: int32_t pixels, 1: float */
    uint32_t width, height;  /* pixels; a row is width * 4 bytes */
    uint32_t row0, row1;     /* the output rows to compute */
    uint32_t n_in, n_out;
    const void *const *in;   /* n_in whole images, row-major */
    void *const *out;        /* n_out whole images: write rows [row0, row1) only */
    const int64_t *params;   /* the box's params: list */
    uint32_t n_params;
    uint32_t reserved;
    uint64_t iteration;      /* 0, 1, 2, ... */
};

typedef int (*js_kernel_fn)(const struct js_kernel_call *c);

#endif
