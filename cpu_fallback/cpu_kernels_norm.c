/* RMS_NORM (Zhang & Sennrich, arXiv:1910.07467): y = x / sqrt(mean(x^2) + eps) * w over the last
 * dim, the mean accumulated in double. */
#include <math.h>

#include "cpu_fallback/cpu_internal.h"

typedef struct norm_job {
    const float *x, *w;
    float *y;
    int64_t d;
    float eps;
} norm_job;

static void norm_task(void *ctx, int64_t begin, int64_t end, int tid) {
    (void)tid;
    const norm_job *j = ctx;
    for (int64_t r = begin; r < end; r++) {
        const float *restrict x = j->x + r * j->d;
        const float *restrict w = j->w;
        float *restrict y = j->y + r * j->d;
        double ss = 0.0;
        for (int64_t k = 0; k < j->d; k++) ss += (double)x[k] * (double)x[k];
        float inv = (float)(1.0 / sqrt(ss / (double)j->d + (double)j->eps));
        for (int64_t k = 0; k < j->d; k++) y[k] = x[k] * inv * w[k];
    }
}

rlx_status rlx_cpu_op_RMS_NORM(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    int64_t d = cpu_last_dim(n);
    norm_job j = {cpu_f32(ex, n->info.in[0]), cpu_f32(ex, n->info.in[1]), cpu_f32(ex, i), d, n->info.attrs.eps};
    int64_t rows = cpu_valid_rows(ex, n);
    rlx_cpu_parallel(ex, rows, 16, (double)rows * (double)d * 4.0, norm_task, &j);
    return NULL;
}
