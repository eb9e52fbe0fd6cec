/* KV_WRITE and ATTENTION, with the semantics written in ops.def: query row r sits at position p_r
 * of sequence s_r (ex->rows) and sees key j when j <= p_r and, with a window, p_r - j < window.
 * A cache view's key j lives in pool row rlx_rows_pool_row(s_r, j); direct k/v (no cache) hold key
 * j in row j. GQA: query head h reads kv head h / (H / H_kv). The loop runs over visible keys
 * only, so capacity past the true length costs nothing. Softmax subtracts the row maximum
 * (stable). Keys are read a run of contiguous pool rows at a time; every row of a score or of the
 * weighted sum is its own dot product or is added in key order, so how keys fall into pages
 * never changes a bit. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

/* Capacities and rows were checked before the run (cpu_rows.c). */
rlx_status rlx_cpu_op_KV_WRITE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    int64_t row = cpu_inner(n);
    float *pool = cpu_f32(ex, i);
    const float *x = cpu_f32(ex, n->info.in[1]);
    const rlx_run_rows *rows = ex->rows;
    for (int32_t r = 0; r < ex->n_tokens; r++) {
        int64_t dst = rlx_rows_pool_row(rows, rows->seq[r], rows->pos[r], ex->page_size);
        memcpy(pool + dst * row, x + (int64_t)r * row, (size_t)row * sizeof(float));
    }
    return NULL;
}

typedef struct attention_job {
    const rlx_cpu_exec *ex;
    const float *q, *k, *v;
    float *out;
    int64_t n_head, n_head_kv, t_len, dk, dv;
    float scale;
    int32_t window;
    bool k_paged, v_paged; /* k / v is a cache view (read through the page table), else direct */
} attention_job;

/* The first pool row of key `key` of table row `seq` and how many keys from it, up to `last`, sit
 * in consecutive pool rows (adjacent pages merge). Direct operands: row key, all of them. */
static int64_t key_run(const attention_job *j, bool paged, int32_t seq, int64_t key, int64_t last, int64_t *n) {
    if (!paged) {
        *n = last - key + 1;
        return key;
    }
    const rlx_run_rows *rows = j->ex->rows;
    int64_t ps = j->ex->page_size, col = key / ps;
    const int32_t *table = rows->pages + (int64_t)seq * rows->page_cols;
    int64_t end = (col + 1) * ps; /* one past the last key in consecutive pool rows */
    while (end <= last && table[end / ps] == table[end / ps - 1] + 1) end += ps;
    *n = (end <= last ? end : last + 1) - key;
    return (int64_t)table[col] * ps + key % ps;
}

/* One (query row, head) pair per item. */
static void attention_task(void *ctx, int64_t begin, int64_t end, int tid) {
    const attention_job *j = ctx;
    float *scores = cpu_scratch(j->ex, tid), *acc = scores + j->t_len;
    int64_t group = j->n_head / j->n_head_kv;
    const rlx_cpu_simd *scores_simd = rlx_cpu_simd_for(j->ex->simd, j->dk);
    const rlx_cpu_simd *sum_simd = rlx_cpu_simd_for(j->ex->simd, j->dv);
    for (int64_t item = begin; item < end; item++) {
        int64_t row = item / j->n_head, h = item % j->n_head, hk = h / group;
        int64_t pos = j->ex->rows->pos[row];
        int32_t seq = j->ex->rows->seq[row];
        int64_t lo = j->window > 0 && pos - j->window + 1 > 0 ? pos - j->window + 1 : 0;
        int64_t hi = pos < j->t_len - 1 ? pos : j->t_len - 1;
        const float *q = j->q + (row * j->n_head + h) * j->dk;
        float *out = j->out + (row * j->n_head + h) * j->dv;
        if (hi < lo) {
            memset(out, 0, (size_t)j->dv * sizeof(float));
            continue;
        }
        int64_t k_stride = j->n_head_kv * j->dk, v_stride = j->n_head_kv * j->dv, n_keys = hi - lo + 1, n;
        for (int64_t t = lo; t <= hi; t += n) {
            int64_t at = key_run(j, j->k_paged, seq, t, hi, &n);
            scores_simd->gemv(scores + (t - lo), q, j->k + (at * j->n_head_kv + hk) * j->dk, k_stride, n, j->dk);
        }
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
        for (int64_t t = lo; t <= hi; t += n) {
            int64_t at = key_run(j, j->v_paged, seq, t, hi, &n);
            sum_simd->gemv_t(acc, scores + (t - lo), j->v + (at * j->n_head_kv + hk) * j->dv, v_stride, n, j->dv);
        }
        float inv = (float)(1.0 / sum);
        for (int64_t d = 0; d < j->dv; d++) out[d] = acc[d] * inv;
    }
}

static bool is_view(const rlx_cpu_node *n) { return n->info.op == RLX_OP_KV_CACHE || n->info.op == RLX_OP_KV_WRITE; }

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
        .k_paged = is_view(cpu_node(ex, n->info.in[1])),
        .v_paged = is_view(cpu_node(ex, n->info.in[2])),
    };
    int64_t rows = cpu_positioned_rows(ex, n), items = rows * j.n_head, visible = 0, all = cpu_valid_outer(ex, n);
    if (all > rows) memset(j.out + rows * j.n_head * j.dv, 0, (size_t)((all - rows) * j.n_head * j.dv) * sizeof(float));
    for (int64_t r = 0; r < rows; r++) visible = ex->rows->pos[r] + 1 > visible ? ex->rows->pos[r] + 1 : visible;
    visible = visible < j.t_len ? visible : j.t_len;
    double work = (double)items * (double)visible * (double)(j.dk + j.dv);
    rlx_cpu_parallel(ex, items, 1, work, attention_task, &j);
    return NULL;
}
