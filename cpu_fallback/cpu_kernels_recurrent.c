/* The Gated DeltaNet ops (ir/ops.def): STATE, CAUSAL_CONV, DELTA_RULE, DELTA_GATE, L2_NORM and
 * SIGMOID, SLICE, which splits their fused projections, and SCALE_ROWS (qwen35moe's shared-expert
 * gate). CAUSAL_CONV and DELTA_RULE walk each sequence's rows in row order (ex->row_next) and
 * keep its state in the slot of its table row, in place.
 *
 * DELTA_RULE's chunked form (the WY representation of Yang et al., arXiv:2412.06464, as
 * flash-linear-attention computes it): within a chunk of L rows with cumulative log decay
 * G_t = g_1 + .. + g_t and entry state S0, the update vectors u_t solve the unit lower-triangular
 * system u_t + sum_{i<t} beta_t e^(G_t - G_i) (k_t . k_i) u_i = beta_t (v_t - e^(G_t) S0^T k_t),
 * which is the step-by-step recurrence unrolled; then o_t = e^(G_t) S0^T q_t
 * + sum_{i<=t} e^(G_t - G_i) (k_i . q_t) u_i and S_L = e^(G_L) S0 + sum_i e^(G_L - G_i) k_i u_i^T. */
#include <math.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

#define DEFAULT_CHUNK 64

/* The state of row r's sequence: the node's data (its part of the layer's state) in r's slot. */
static float *slot_state(const rlx_cpu_exec *ex, rlx_node state, int32_t r) {
    return cpu_f32(ex, state) + (int64_t)cpu_slot_of(ex, ex->rows->seq[r]) * ex->state_floats;
}

/* The rows of the output past the run's rows are 0 (ops.def: padding rows). */
static void zero_padding(const rlx_cpu_exec *ex, rlx_node i, int64_t rows) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    int64_t inner = cpu_inner(n);
    memset(cpu_f32(ex, i) + rows * inner, 0, (size_t)((n->info.shape.dim[0] - rows) * inner) * sizeof(float));
}

rlx_status rlx_cpu_op_STATE(const rlx_cpu_exec *ex, rlx_node i) {
    (void)ex;
    (void)i; /* a leaf: its storage is the session's */
    return NULL;
}

/* ---- CAUSAL_CONV ---- */

typedef struct conv_job {
    const rlx_cpu_exec *ex;
    rlx_node state;
    const float *x, *w;
    float *y;
    int64_t rows, c, k;
} conv_job;

/* Channels [begin, end) of every row in row order; a row's state window shifts by one input. */
static void conv_task(void *ctx, int64_t begin, int64_t end, int tid) {
    (void)tid;
    const conv_job *j = ctx;
    const rlx_cpu_exec *ex = j->ex;
    int64_t c = j->c, km1 = j->k - 1;
    for (int64_t r = 0; r < j->rows; r++) {
        float *st = slot_state(ex, j->state, (int32_t)r);
        bool fresh = ex->row_first[r] && ex->rows->pos[r] == 0;
        for (int64_t ch = begin; ch < end; ch++) {
            const float *w = j->w + ch * j->k;
            float xv = j->x[r * c + ch];
            if (fresh)
                for (int64_t t = 0; t < km1; t++) st[t * c + ch] = 0.0f;
            float acc = w[km1] * xv;
            for (int64_t t = 0; t < km1; t++) acc += w[t] * st[t * c + ch];
            for (int64_t t = 0; t + 1 < km1; t++) st[t * c + ch] = st[(t + 1) * c + ch];
            st[(km1 - 1) * c + ch] = xv;
            j->y[r * c + ch] = acc / (1.0f + expf(-acc));
        }
    }
}

rlx_status rlx_cpu_op_CAUSAL_CONV(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const rlx_node_info *in = &n->info;
    int64_t rows = cpu_positioned_rows(ex, n);
    conv_job j = {ex, in->in[2], cpu_f32(ex, in->in[0]), cpu_f32(ex, in->in[1]), cpu_f32(ex, i), rows,
                  in->shape.dim[1], cpu_node(ex, in->in[1])->info.shape.dim[1]};
    rlx_cpu_parallel(ex, j.c, 64, (double)rows * (double)j.c * (double)j.k, conv_task, &j);
    zero_padding(ex, i, rows);
    return NULL;
}

/* ---- DELTA_RULE ---- */

typedef struct delta_job {
    const rlx_cpu_exec *ex;
    rlx_node state;
    const float *q, *k, *v, *g, *beta;
    float *o;
    int64_t rows, hk, hv, dk, dv, chunk;
} delta_job;

static float dot(const float *a, const float *b, int64_t n) {
    float s = 0.0f;
    for (int64_t t = 0; t < n; t++) s += a[t] * b[t];
    return s;
}

/* One row, step by step: S <- e^g S; u = beta (v - S^T k); S <- S + k u^T; o = S^T q. */
static void delta_step(const delta_job *j, int64_t h, int32_t r, float *S, float *u) {
    int64_t kh = h % j->hk, dk = j->dk, dv = j->dv;
    const float *q = j->q + (r * j->hk + kh) * dk, *k = j->k + (r * j->hk + kh) * dk;
    const float *v = j->v + (r * j->hv + h) * dv;
    float decay = expf(j->g[r * j->hv + h]), beta = j->beta[r * j->hv + h];
    float *o = j->o + (r * j->hv + h) * dv;
    for (int64_t e = 0; e < dk * dv; e++) S[e] *= decay;
    for (int64_t c = 0; c < dv; c++) u[c] = v[c];
    for (int64_t a = 0; a < dk; a++)
        for (int64_t c = 0; c < dv; c++) u[c] -= S[a * dv + c] * k[a];
    for (int64_t c = 0; c < dv; c++) u[c] *= beta;
    for (int64_t c = 0; c < dv; c++) o[c] = 0.0f;
    for (int64_t a = 0; a < dk; a++)
        for (int64_t c = 0; c < dv; c++) {
            S[a * dv + c] += k[a] * u[c];
            o[c] += S[a * dv + c] * q[a];
        }
}

/* Per-thread scratch floats of the chunked form: G [L], A [L, L], U [L, dv]. */
static int64_t chunk_scratch(int64_t chunk, int64_t dv) { return chunk * (1 + chunk + dv) + dv; }

/* One chunk of m rows idx[0..m) of one head (the file comment's equations). */
static void delta_chunk(const delta_job *j, int64_t h, const int32_t *idx, int64_t m, float *S, float *scratch) {
    int64_t kh = h % j->hk, dk = j->dk, dv = j->dv;
    float *G = scratch, *A = G + m, *U = A + m * m;
#define KROW(t) (j->k + (idx[t] * j->hk + kh) * dk)
#define QROW(t) (j->q + (idx[t] * j->hk + kh) * dk)
    float acc = 0.0f;
    for (int64_t t = 0; t < m; t++) G[t] = acc += j->g[idx[t] * j->hv + h];
    /* A[t][i] = beta_t e^(G_t - G_i) (k_t . k_i), i < t */
    for (int64_t t = 0; t < m; t++) {
        float beta = j->beta[idx[t] * j->hv + h];
        for (int64_t i = 0; i < t; i++) A[t * m + i] = beta * expf(G[t] - G[i]) * dot(KROW(t), KROW(i), dk);
    }
    /* forward substitution: U_t = beta_t (v_t - e^(G_t) S0^T k_t) - sum_{i<t} A[t][i] U_i */
    for (int64_t t = 0; t < m; t++) {
        const float *k = KROW(t), *v = j->v + (idx[t] * j->hv + h) * dv;
        float beta = j->beta[idx[t] * j->hv + h], eg = expf(G[t]);
        float *ut = U + t * dv;
        for (int64_t c = 0; c < dv; c++) ut[c] = 0.0f;
        for (int64_t a = 0; a < dk; a++)
            for (int64_t c = 0; c < dv; c++) ut[c] += S[a * dv + c] * k[a];
        for (int64_t c = 0; c < dv; c++) ut[c] = beta * (v[c] - eg * ut[c]);
        for (int64_t i = 0; i < t; i++)
            for (int64_t c = 0; c < dv; c++) ut[c] -= A[t * m + i] * U[i * dv + c];
    }
    /* o_t = e^(G_t) S0^T q_t + sum_{i<=t} e^(G_t - G_i) (k_i . q_t) u_i */
    for (int64_t t = 0; t < m; t++) {
        const float *q = QROW(t);
        float *o = j->o + (idx[t] * j->hv + h) * dv, eg = expf(G[t]);
        for (int64_t c = 0; c < dv; c++) o[c] = 0.0f;
        for (int64_t a = 0; a < dk; a++)
            for (int64_t c = 0; c < dv; c++) o[c] += S[a * dv + c] * q[a];
        for (int64_t c = 0; c < dv; c++) o[c] *= eg;
        for (int64_t i = 0; i <= t; i++) {
            float w = expf(G[t] - G[i]) * dot(KROW(i), q, dk);
            for (int64_t c = 0; c < dv; c++) o[c] += w * U[i * dv + c];
        }
    }
    /* S_L = e^(G_L) S0 + sum_i e^(G_L - G_i) k_i u_i^T */
    float eL = expf(G[m - 1]);
    for (int64_t e = 0; e < dk * dv; e++) S[e] *= eL;
    for (int64_t i = 0; i < m; i++) {
        const float *k = KROW(i);
        float w = expf(G[m - 1] - G[i]);
        for (int64_t a = 0; a < dk; a++)
            for (int64_t c = 0; c < dv; c++) S[a * dv + c] += w * k[a] * U[i * dv + c];
    }
#undef KROW
#undef QROW
}

/* Value heads [begin, end): every sequence of the run, its rows in chunks. */
static void delta_task(void *ctx, int64_t begin, int64_t end, int tid) {
    const delta_job *j = ctx;
    const rlx_cpu_exec *ex = j->ex;
    float *scratch = cpu_scratch(ex, tid);
    int32_t idx[256];
    int64_t cap = j->chunk < 256 ? j->chunk : 256;
    for (int64_t h = begin; h < end; h++)
        for (int32_t first = 0; first < j->rows; first++) {
            if (!ex->row_first[first]) continue;
            float *S = slot_state(ex, j->state, first) + h * j->dk * j->dv;
            if (ex->rows->pos[first] == 0) memset(S, 0, (size_t)(j->dk * j->dv) * sizeof(float));
            for (int32_t r = first; r >= 0 && r < j->rows;) {
                int64_t m = 0;
                for (; m < cap && r >= 0 && r < j->rows; r = ex->row_next[r]) idx[m++] = r;
                if (m == 1) delta_step(j, h, idx[0], S, scratch);
                else delta_chunk(j, h, idx, m, S, scratch);
            }
        }
}

/* Per-thread scratch floats DELTA_RULE needs (cpu_plan.c). */
size_t rlx_cpu_delta_scratch(const rlx_node_info *n, int64_t dv) {
    int64_t chunk = n->attrs.chunk ? n->attrs.chunk : DEFAULT_CHUNK;
    if (chunk > 256) chunk = 256;
    return (size_t)chunk_scratch(chunk, dv);
}

rlx_status rlx_cpu_op_DELTA_RULE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const rlx_node_info *in = &n->info;
    const rlx_shape *qs = &cpu_node(ex, in->in[0])->info.shape;
    delta_job j = {ex, in->in[5], cpu_f32(ex, in->in[0]), cpu_f32(ex, in->in[1]), cpu_f32(ex, in->in[2]),
                   cpu_f32(ex, in->in[3]), cpu_f32(ex, in->in[4]), cpu_f32(ex, i), cpu_positioned_rows(ex, n),
                   qs->dim[1], in->shape.dim[1], qs->dim[2], in->shape.dim[2],
                   in->attrs.chunk ? in->attrs.chunk : DEFAULT_CHUNK};
    double work = (double)j.rows * (double)j.hv * (double)j.dk * (double)j.dv * 4.0;
    rlx_cpu_parallel(ex, j.hv, 1, work, delta_task, &j);
    zero_padding(ex, i, j.rows);
    return NULL;
}

/* ---- elementwise ---- */

/* softplus(x) = log(1 + e^x), written so that neither e^x overflows nor small terms vanish */
static float softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }

rlx_status rlx_cpu_op_DELTA_GATE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const float *a = cpu_f32(ex, n->info.in[0]), *A = cpu_f32(ex, n->info.in[1]), *bias = cpu_f32(ex, n->info.in[2]);
    float *y = cpu_f32(ex, i);
    int64_t h = cpu_last_dim(n), rows = cpu_valid_rows(ex, n);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < h; c++) y[r * h + c] = A[c] * softplus(a[r * h + c] + bias[c]);
    return NULL;
}

rlx_status rlx_cpu_op_L2_NORM(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const float *x = cpu_f32(ex, n->info.in[0]);
    float *y = cpu_f32(ex, i);
    int64_t d = cpu_last_dim(n), rows = cpu_valid_rows(ex, n);
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int64_t c = 0; c < d; c++) ss += (double)x[r * d + c] * (double)x[r * d + c];
        float inv = (float)(1.0 / sqrt(ss + (double)n->info.attrs.eps));
        for (int64_t c = 0; c < d; c++) y[r * d + c] = x[r * d + c] * inv;
    }
    return NULL;
}

rlx_status rlx_cpu_op_SLICE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const rlx_cpu_node *x = cpu_node(ex, n->info.in[0]);
    int64_t d = cpu_last_dim(x), len = n->info.attrs.slice_len, rows = cpu_valid_rows(ex, n);
    const float *src = cpu_f32(ex, n->info.in[0]) + n->info.attrs.slice_begin;
    float *y = cpu_f32(ex, i);
    for (int64_t r = 0; r < rows; r++) memcpy(y + r * len, src + r * d, (size_t)len * sizeof(float));
    return NULL;
}

rlx_status rlx_cpu_op_SCALE_ROWS(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const float *x = cpu_f32(ex, n->info.in[0]), *s = cpu_f32(ex, n->info.in[1]);
    float *y = cpu_f32(ex, i);
    int64_t d = cpu_last_dim(n), rows = cpu_valid_rows(ex, n);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < d; c++) y[r * d + c] = x[r * d + c] * s[r];
    return NULL;
}

rlx_status rlx_cpu_op_SIGMOID(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const float *x = cpu_f32(ex, n->info.in[0]);
    float *y = cpu_f32(ex, i);
    int64_t count = cpu_valid_outer(ex, n) * cpu_inner(n);
    for (int64_t k = 0; k < count; k++) y[k] = 1.0f / (1.0f + expf(-x[k]));
    return NULL;
}
