/*
 * A user kernel for `jitterscope pipeline` (ABI: src/jitterscope/native/js_pipeline_kernel.h):
 * a vertical edge detector, |row below - row above|, on int32 images.  It reads one row above
 * and one below each output row, so its input is declared with neighbourhood [1, 3].
 *
 * Build it beside the graph, then run:
 *   cc -O2 -fPIC -shared -I src/jitterscope/native examples/pipeline/user/edges.c \
 *      -o examples/pipeline/user/libedges.so
 *   jitterscope pipeline run examples/pipeline/user/edges.yaml --guard --iterations 200
 */
#include <stdlib.h>

#include "js_pipeline_kernel.h"

int vertical_edges(const struct js_kernel_call *c)
{
    if (c->pixel_type != 0)
        return 1;   /* int32 only: a non-zero return stops the run with this box named */
    const int *in = c->in[0];
    int *out = c->out[0];
    int scale = c->n_params ? (int)c->params[0] : 1;
    for (unsigned y = c->row0; y < c->row1; y++) {
        unsigned up = y ? y - 1 : 0, down = y + 1 < c->height ? y + 1 : y;
        for (unsigned x = 0; x < c->width; x++)
            out[y * c->width + x] = scale * abs(in[down * c->width + x] - in[up * c->width + x]);
    }
    return 0;
}
