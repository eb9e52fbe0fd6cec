/* KV_WRITE and ATTENTION, with the semantics written in ops.def: query row i sits at position
 * n_past + i and sees key j when j <= n_past + i and, with a window, n_past + i - j < window.
 * GQA: query head h reads kv head h / (H / H_kv). The loop runs over visible keys only, so cache
 * capacity past the true length costs nothing. Softmax subtracts the row maximum (stable). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

rlx_status rlx_cpu_op_KV_WRITE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i), *x = cpu_node(ex, n->info.in[1]);
    int64_t cap = n->info.shape.dim[0], row = cpu_inner(n);
    if ((int64_t)ex->n_past + ex->n_tokens > cap)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d KV_WRITE: rows [n_past %d, n_past + n_tokens = %" PRId64
                          ") exceed the cache capacity %" PRId64, i, ex->n_past,
                          (int64_t)ex->n_past + ex->n_tokens, cap);
    if (ex->n_tokens > x->info.shape.dim[0])
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d KV_WRITE: n_tokens %d exceeds x's %" PRId64 " rows", i,
                          ex->n_tokens, x->info.shape.dim[0]);
    memcpy(cpu_f32(ex, i) + (size_t)ex->n_past * (size_t)row, cpu_f32(ex, n->info.in[1]),
           (size_t)ex->n_tokens * (size_t)row * sizeof(float));
    return NULL;
}

typedef struct attention_job {
    const rlx_cpu_exec *ex;
    const float *q, *k, *v;
    float *out;
    int64_t n_head, n_head_kv, t_len, dk, dv;
    float scale;
    int32_t window;
} attention_job;

/* One (query row, head) pair per item. */
static void attention_task(void *ctx, int64_t begin, int64_t end, int tid) {
    const attention_job *j = ctx;
    float *scores = cpu_scratch(j->ex, tid), *acc = scores + j->t_len;
    int64_t group = j->n_head / j->n_head_kv;
    const rlx_cpu_simd *scores_simd = rlx_cpu_simd_for(j->ex->simd, j->dk);
    const rlx_cpu_simd *sum_simd = rlx_cpu_simd_for(j->ex->simd, j->dv);
    for (int64_t item = begin; item < end; item++) {
        int64_t row = item / j->n_head, h = item % j->n_head, hk = h / group;
        int64_t pos = (int64_t)j->ex->n_past + row;
        int64_t lo = j->window > 0 && pos - j->window + 1 > 0 ? pos - j->window + 1 : 0;
        int64_t hi = pos < j->t_len - 1 ? pos : j->t_len - 1;
        const float *q = j->q + (row * j->n_head + h) * j->dk;
        float *out = j->out + (row * j->n_head + h) * j->dv;
        if (hi < lo) {
            memset(out, 0, (size_t)j->dv * sizeof(float));
            continue;
        }
        int64_t kv_stride = j->n_head_kv * j->dk, n_keys = hi - lo + 1;
        scores_simd->gemv(scores, q, j->k + (lo * j->n_head_kv + hk) * j->dk, kv_stride, n_keys, j->dk);
        float mx = -INFINITY;
        for (int64_t t = 0; t < n_keys; t++) {
            scores[t] *= j->scale;
            mx = scores[t] > mx ? scores[t] : mx;
        }
        double sum = 0.0;
        for (int64_t t = 0; t < n_keys; t++) {
            /* below -88, exp is under 2^-126: it cannot change a sum that holds the maximum's 1,
             * and libm's underflow path (errno) is slow */
            float d = scores[t] - mx;
            scores[t] = d < -88.0f ? 0.0f : expf(d);
            sum += scores[t];
        }
        memset(acc, 0, (size_t)j->dv * sizeof(float));
        sum_simd->gemv_t(acc, scores, j->v + (lo * j->n_head_kv + hk) * j->dv, j->n_head_kv * j->dv, n_keys, j->dv);
        float inv = (float)(1.0 / sum);
        for (int64_t d = 0; d < j->dv; d++) out[d] = acc[d] * inv;
    }
}

rlx_status rlx_cpu_op_ATTENTION(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const rlx_shape *q = &cpu_node(ex, n->info.in[0])->info.shape, *k = &cpu_node(ex, n->info.in[1])->info.shape;
    attention_job j = {
        .ex = ex,
        .q = cpu_f32(ex, n->info.in[0]),
        .k = cpu_f32(ex, n->info.in[1]),
        .v = cpu_f32(ex, n->info.in[2]),
        .out = cpu_f32(ex, i),
        .n_head = q->dim[1],
        .n_head_kv = k->dim[1],
        .t_len = k->dim[0],
        .dk = q->dim[2],
        .dv = n->info.shape.dim[2],
        .scale = n->info.attrs.scale,
        .window = n->info.attrs.window,
    };
    int64_t rows = cpu_valid_outer(ex, n), items = rows * j.n_head;
    int64_t visible = (int64_t)ex->n_past + rows < j.t_len ? (int64_t)ex->n_past + rows : j.t_len;
    double work = (double)items * (double)visible * (double)(j.dk + j.dv);
    rlx_cpu_parallel(ex, items, 1, work, attention_task, &j);
    return NULL;
}
