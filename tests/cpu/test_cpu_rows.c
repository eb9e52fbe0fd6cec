/* The run contract's rows on the CPU backend (ir/ops.def, "the run contract"; ir/backend.h
 * rlx_run_rows): several sequences at any position in one run, their KV in shuffled pages.
 *
 * Where the truth comes from:
 *  - paged KV_WRITE + ATTENTION: a naive double-precision reference written here that keeps each
 *    sequence's K/V in its own plain array indexed by position, and computes the causal / windowed
 *    softmax with grouped KV heads straight from ops.def;
 *  - ROPE with per-row positions: the closed form (RoFormer, arXiv:2104.09864) in double;
 *  - batched == alone: a property: a row's result must not depend on the other rows of its run,
 *    so the same sequences run one at a time (in another session, with other pages) must give
 *    the same bits;
 *  - copy_pages: the pool read back as plain arrays before and after;
 *  - bad rows: errors with their messages, and the pool and outputs untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/core/dequant.h"
#include "loader/core/half.h"
#include "test_rng.h"
#include "test_util.h"

static rlx_backend *g_cpu; /* 3 threads: exercises the pool with a count that is not the core count */

/* ---- random numbers (splitmix64) ---- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng_next(void) { return t_splitmix64(&rng_state); }
static float rng_unit(void) { return t_unit(&rng_state); } /* [0, 1) */
static float rng_sym(float a) { return a * (2.0f * rng_unit() - 1.0f); }                   /* [-a, a) */

static void fill_rand(float *x, size_t n, float a) {
    for (size_t i = 0; i < n; i++) x[i] = rng_sym(a);
}

static rlx_graph *new_graph(void) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) exit(1);
    return g;
}

static rlx_shape S2(int64_t a, int64_t b) { return rlx_shape_make(2, (int64_t[]){a, b}); }
static rlx_shape S3(int64_t a, int64_t b, int64_t c) { return rlx_shape_make(3, (int64_t[]){a, b, c}); }

/* One run with rows (n_past unused). */
static rlx_status run_rows(rlx_program *p, int32_t n_tokens, const rlx_run_rows *rows, const void *const *in,
                           void *const *out) {
    rlx_run_args a = {.n_tokens = n_tokens, .inputs = in, .outputs = out, .rows = rows};
    return g_cpu->ops->run(p, &a);
}

/* ---- weights (block layouts: llama.cpp ggml-common.h) ---- */

typedef struct test_weights {
    rlx_weight w[16];
    size_t n;
} test_weights;

static void put_f16(uint8_t *p, float v) {
    uint16_t h = rlx_f32_to_f16(v);
    memcpy(p, &h, sizeof h);
}

/* A weight [dims] of F32, F16, Q8_0 or Q4_K with random contents and sane scales. */
static rlx_node add_weight(rlx_graph *g, test_weights *tw, const char *name, uint32_t type, rlx_shape s) {
    rlx_weight *w = &tw->w[tw->n++];
    uint64_t numel = (uint64_t)rlx_shape_numel(&s), bytes = 0;
    *w = (rlx_weight){.name = name, .type = type, .n_dims = (uint32_t)s.rank};
    for (int d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) w->ne[d] = d < s.rank ? (uint64_t)s.dim[s.rank - 1 - d] : 1;
    if (!T_OK(rlx_dtype_bytes(type, numel, name, &bytes))) exit(1);
    uint8_t *data = malloc(bytes);
    const rlx_dtype_info *info = rlx_dtype_get(type);
    if (type == RLX_DTYPE_F32) {
        fill_rand((float *)(void *)data, numel, 1.0f);
    } else if (type == RLX_DTYPE_F16) {
        for (uint64_t i = 0; i < numel; i++) put_f16(data + 2 * i, rng_sym(1.0f));
    } else {
        for (uint64_t k = 0; k < bytes; k++) data[k] = (uint8_t)rng_next();
        for (uint64_t b = 0; b < numel / info->block_size; b++) {
            uint8_t *blk = data + b * info->type_size;
            if (type == RLX_DTYPE_Q8_0) put_f16(blk, 0.01f + 0.01f * rng_unit()); /* { f16 d; int8 qs[32] } */
            if (type == RLX_DTYPE_Q4_K) {                                           /* { f16 d, dmin; .. } */
                put_f16(blk, 0.002f + 0.003f * rng_unit());
                put_f16(blk + 2, 0.001f + 0.002f * rng_unit());
            }
        }
    }
    w->data = data;
    w->nbytes = bytes;
    return rlx_weight_node(g, name, type, s);
}

static void free_weights(test_weights *tw) {
    for (size_t i = 0; i < tw->n; i++) free((void *)tw->w[i].data);
    tw->n = 0;
}

/* ---- the pool, read back as plain arrays ---- */

/* Every layer's K then V pool of the session, in that order, through a program that outputs the
 * KV_CACHE views of the pool's length (a plain read: the identity view). */
static void read_pools(rlx_session *s, const rlx_state_spec *kv, float **out) {
    rlx_graph *g = new_graph();
    int64_t rows = rlx_state_kv_rows(kv);
    int32_t dv = kv->head_dim_v ? kv->head_dim_v : kv->head_dim;
    char name[32];
    for (int32_t l = 0; l < kv->n_layer; l++) {
        snprintf(name, sizeof name, "k%d", l);
        rlx_graph_mark_output(g, rlx_kv_cache(g, l, false, rows, kv->n_head_kv, kv->head_dim), name);
        snprintf(name, sizeof name, "v%d", l);
        rlx_graph_mark_output(g, rlx_kv_cache(g, l, true, rows, kv->n_head_kv, dv), name);
    }
    rlx_program *p = NULL;
    T_OK(g_cpu->ops->compile(s, g, &p));
    rlx_run_args a = {.n_tokens = 1, .outputs = (void *const *)out};
    T_OK(g_cpu->ops->run(p, &a));
    g_cpu->ops->program_destroy(p);
    rlx_graph_destroy(g);
}

/* ====================================================================================== */
/* paged KV_WRITE + ATTENTION against per-sequence plain arrays                           */

enum { PA_H = 4, PA_HKV = 2, PA_DH = 16, PA_DV = 12, PA_PS = 4, PA_N = 12, PA_SEQS = 3, PA_MAXCAP = 48 };

typedef struct paged_row {
    int32_t seq, pos;
} paged_row;

/* Four runs over three sequences: prefill chunks at offsets, decode rows, rows of different
 * sequences interleaved; final lengths 10, 15, 6. */
static const paged_row paged_runs[4][PA_N] = {
    {{1, 0}, {0, 0}, {1, 1}, {1, 2}, {0, 1}, {1, 3}, {1, 4}, {0, 2}, {1, 5}, {1, 6}, {1, 7}},
    {{0, 3}, {2, 0}, {0, 4}, {0, 5}, {1, 8}, {0, 6}, {2, 1}, {0, 7}, {0, 8}, {2, 2}},
    {{2, 3}, {1, 9}, {1, 10}, {2, 4}, {1, 11}, {1, 12}, {1, 13}},
    {{2, 5}, {0, 9}, {1, 14}},
};
static const int32_t paged_n[4] = {11, 10, 7, 3};
/* Pages per sequence: shuffled, never in order; (2, 3) sit side by side to exercise merged runs. */
static const int32_t paged_pages[PA_SEQS][4] = {{9, 0, 6, -1}, {5, 2, 3, 8}, {4, 1, -1, -1}};

/* The reference output of query q (one row, [H, Dh]) at position pos over one sequence's K/V
 * (plain arrays indexed by position), in double. */
static void ref_attention(const float *q, int32_t pos, const double *k, const double *v, float scale, int32_t window,
                          double *out) {
    double w[PA_MAXCAP];
    for (int h = 0; h < PA_H; h++) {
        int kh = h / (PA_H / PA_HKV);
        double mx = -INFINITY, sum = 0;
        for (int32_t j = 0; j <= pos; j++) {
            w[j] = -INFINITY;
            if (window > 0 && pos - j >= window) continue;
            double s = 0;
            for (int c = 0; c < PA_DH; c++) s += (double)q[h * PA_DH + c] * k[(j * PA_HKV + kh) * PA_DH + c];
            w[j] = s * scale;
            mx = w[j] > mx ? w[j] : mx;
        }
        for (int32_t j = 0; j <= pos; j++) sum += w[j] == -INFINITY ? 0 : exp(w[j] - mx);
        for (int c = 0; c < PA_DV; c++) out[h * PA_DV + c] = 0;
        for (int32_t j = 0; j <= pos; j++)
            if (w[j] != -INFINITY)
                for (int c = 0; c < PA_DV; c++)
                    out[h * PA_DV + c] += exp(w[j] - mx) / sum * v[(j * PA_HKV + kh) * PA_DV + c];
    }
}

/* cap: the views' logical capacity; n_pages: the pool (cap may pass its rows). */
static void paged_case(int64_t cap, int32_t n_pages, int32_t window) {
    const float scale = 0.25f;
    rlx_state_spec kv = {.n_layer = 1, .n_head_kv = PA_HKV, .head_dim = PA_DH, .head_dim_v = PA_DV,
                         .page_size = PA_PS, .n_pages = n_pages};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    T_OK(g_cpu->ops->session_create(g_cpu, NULL, 0, &kv, &s));
    rlx_graph *g = new_graph();
    rlx_node q = rlx_input(g, "q", RLX_DTYPE_F32, S3(PA_N, PA_H, PA_DH));
    rlx_node k = rlx_input(g, "k", RLX_DTYPE_F32, S3(PA_N, PA_HKV, PA_DH));
    rlx_node v = rlx_input(g, "v", RLX_DTYPE_F32, S3(PA_N, PA_HKV, PA_DV));
    rlx_node kw = rlx_kv_write(g, rlx_kv_cache(g, 0, false, cap, PA_HKV, PA_DH), k);
    rlx_node vw = rlx_kv_write(g, rlx_kv_cache(g, 0, true, cap, PA_HKV, PA_DV), v);
    rlx_graph_mark_output(g, rlx_attention(g, q, kw, vw, scale, window), "o");
    T_OK(g_cpu->ops->compile(s, g, &p));
    int32_t cols = (int32_t)(cap / PA_PS), pages[PA_SEQS * PA_MAXCAP / PA_PS];
    for (int32_t i = 0; i < PA_SEQS * cols; i++) pages[i] = -1; /* entries no row needs hold anything */
    for (int sq = 0; sq < PA_SEQS; sq++)
        for (int c = 0; c < 4; c++) pages[sq * cols + c] = paged_pages[sq][c];
    double *kref = calloc((size_t)PA_SEQS * PA_MAXCAP * PA_HKV * PA_DH, sizeof *kref);
    double *vref = calloc((size_t)PA_SEQS * PA_MAXCAP * PA_HKV * PA_DV, sizeof *vref);
    float qi[PA_N * PA_H * PA_DH], ki[PA_N * PA_HKV * PA_DH], vi[PA_N * PA_HKV * PA_DV], o[PA_N * PA_H * PA_DV];
    double ref[PA_H * PA_DV];
    double worst = 0;
    int bad = 0, checked = 0;
    for (int run = 0; run < 4; run++) {
        int32_t pos[PA_N], seq[PA_N], n = paged_n[run];
        for (int32_t r = 0; r < n; r++) {
            seq[r] = paged_runs[run][r].seq;
            pos[r] = paged_runs[run][r].pos;
        }
        fill_rand(qi, sizeof qi / sizeof *qi, 1.0f);
        fill_rand(ki, sizeof ki / sizeof *ki, 1.0f);
        fill_rand(vi, sizeof vi / sizeof *vi, 1.0f);
        for (int32_t r = 0; r < n; r++) {
            size_t at = (size_t)seq[r] * PA_MAXCAP + (size_t)pos[r];
            for (int e = 0; e < PA_HKV * PA_DH; e++) kref[at * PA_HKV * PA_DH + (size_t)e] = ki[r * PA_HKV * PA_DH + e];
            for (int e = 0; e < PA_HKV * PA_DV; e++) vref[at * PA_HKV * PA_DV + (size_t)e] = vi[r * PA_HKV * PA_DV + e];
        }
        rlx_run_rows rows = {.pos = pos, .seq = seq, .pages = pages, .n_seqs = PA_SEQS, .page_cols = cols};
        T_OK(run_rows(p, n, &rows, (const void *[]){qi, ki, vi}, (void *[]){o}));
        for (int32_t r = 0; r < n; r++) {
            ref_attention(qi + r * PA_H * PA_DH, pos[r], kref + (size_t)seq[r] * PA_MAXCAP * PA_HKV * PA_DH,
                          vref + (size_t)seq[r] * PA_MAXCAP * PA_HKV * PA_DV, scale, window, ref);
            for (int e = 0; e < PA_H * PA_DV; e++) {
                double d = fabs((double)o[r * PA_H * PA_DV + e] - ref[e]);
                worst = d > worst ? d : worst;
                bad += !(d <= 1e-5 + 1e-5 * fabs(ref[e]));
                checked++;
            }
        }
    }
    printf("  paged attention, view %ld rows, pool %d pages of %d, window %d: 31 rows of 3 sequences in 4 mixed "
           "runs, %d values, max|d| %.3g, %d over 1e-5 + 1e-5|ref|\n",
           (long)cap, n_pages, PA_PS, window, checked, worst, bad);
    T_CHECK(bad == 0 && checked == 31 * PA_H * PA_DV, "paged attention view %ld window %d: %d values differ",
            (long)cap, window, bad);
    free(kref);
    free(vref);
    g_cpu->ops->program_destroy(p);
    rlx_graph_destroy(g);
    g_cpu->ops->session_destroy(s);
}

static void test_paged_attention(void) {
    for (int32_t window = 0; window <= 5; window += 5) {
        paged_case(24, 16, window); /* view shorter than the pool (64 rows) */
        paged_case(48, 10, window); /* view longer than the pool (40 rows) */
    }
}

/* ====================================================================================== */
/* ROPE: row r turns by pos[r]                                                            */

static void rope_rows_case(rlx_rope_layout layout, int32_t n_rot, double *worst, int *bad) {
    enum { N = 8, H = 3, DH = 32 };
    static const int32_t pos[N] = {7, 0, 123, 5, 5, 40000, 2, 9}, seq[N] = {0, 1, 0, 1, 1, 0, 1, 0};
    const float base = 10000.0f;
    int32_t no_pages[1] = {0};
    rlx_state_spec none = {0};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    T_OK(g_cpu->ops->session_create(g_cpu, NULL, 0, &none, &s));
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, S3(N, H, DH));
    rlx_graph_mark_output(g, rlx_rope(g, x, RLX_NO_NODE, (rlx_rope_attrs){layout, n_rot, base}), "y");
    T_OK(g_cpu->ops->compile(s, g, &p));
    float xi[N * H * DH], y[N * H * DH];
    fill_rand(xi, N * H * DH, 2.0f);
    rlx_run_rows rows = {.pos = pos, .seq = seq, .pages = no_pages, .n_seqs = 2, .page_cols = 0};
    T_OK(run_rows(p, N, &rows, (const void *[]){xi}, (void *[]){y}));
    for (int r = 0; r < N; r++)
        for (int h = 0; h < H; h++) {
            const float *xh = xi + (r * H + h) * DH;
            const float *yh = y + (r * H + h) * DH;
            double ref[DH];
            for (int c = 0; c < DH; c++) ref[c] = xh[c];
            for (int i = 0; i < n_rot / 2; i++) {
                double theta = (double)pos[r] * pow((double)base, -2.0 * i / n_rot);
                bool neox = layout == RLX_ROPE_LAYOUT_NEOX;
                int a = neox ? i : 2 * i, b = a + (neox ? n_rot / 2 : 1);
                ref[a] = xh[a] * cos(theta) - (double)xh[b] * sin(theta);
                ref[b] = xh[a] * sin(theta) + (double)xh[b] * cos(theta);
            }
            for (int c = 0; c < DH; c++) {
                double d = fabs((double)yh[c] - ref[c]);
                *worst = d > *worst ? d : *worst;
                *bad += !(d <= 2e-6 + 1e-6 * fabs(ref[c]));
            }
        }
    g_cpu->ops->program_destroy(p);
    rlx_graph_destroy(g);
    g_cpu->ops->session_destroy(s);
}

static void test_rope_rows(void) {
    double worst = 0;
    int bad = 0;
    for (int layout = 0; layout < 2; layout++) {
        rope_rows_case((rlx_rope_layout)layout, 32, &worst, &bad);
        rope_rows_case((rlx_rope_layout)layout, 16, &worst, &bad);
    }
    printf("  ROPE NORMAL/NEOX, n_rot 32/16, positions {7,0,123,5,5,40000,2,9} of 2 sequences: max|d| %.3g, %d "
           "over 2e-6 + 1e-6|ref|\n", worst, bad);
    T_CHECK(bad == 0, "ROPE with per-row positions: %d values differ", bad);
}

/* ====================================================================================== */
/* batched == alone: one decoder layer with a MoE FFN                                     */

enum { BA_D = 256, BA_H = 4, BA_HKV = 2, BA_DH = 64, BA_E = 4, BA_F = 64, BA_T = 32, BA_PS = 4, BA_N = 64,
       BA_B = 8, BA_PAGES = 64, BA_COLS = BA_T / BA_PS };

/* norm; q/k/v of Q4_K/Q8_0/F16; rope; kv write; attention; output of F32; norm; router; MoE FFN of
 * Q4_K/Q8_0/Q8_0 experts: every kind of row work a layer has. */
static rlx_graph *layer_graph(test_weights *tw) {
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, S2(BA_N, BA_D));
    rlx_shape vec = rlx_shape_make(1, (int64_t[]){BA_D});
    rlx_node h = rlx_rms_norm(g, x, add_weight(g, tw, "norm1", RLX_DTYPE_F32, vec), 1e-6f);
    rlx_node q = rlx_matmul(g, h, add_weight(g, tw, "wq", RLX_DTYPE_Q4_K, S2(BA_H * BA_DH, BA_D)));
    rlx_node k = rlx_matmul(g, h, add_weight(g, tw, "wk", RLX_DTYPE_Q8_0, S2(BA_HKV * BA_DH, BA_D)));
    rlx_node v = rlx_matmul(g, h, add_weight(g, tw, "wv", RLX_DTYPE_F16, S2(BA_HKV * BA_DH, BA_D)));
    rlx_rope_attrs ra = {RLX_ROPE_LAYOUT_NEOX, BA_DH, 10000.0f};
    q = rlx_rope(g, rlx_reshape(g, q, S3(BA_N, BA_H, BA_DH)), RLX_NO_NODE, ra);
    k = rlx_rope(g, rlx_reshape(g, k, S3(BA_N, BA_HKV, BA_DH)), RLX_NO_NODE, ra);
    rlx_node kw = rlx_kv_write(g, rlx_kv_cache(g, 0, false, BA_T, BA_HKV, BA_DH), k);
    rlx_node vw = rlx_kv_write(g, rlx_kv_cache(g, 0, true, BA_T, BA_HKV, BA_DH),
                               rlx_reshape(g, v, S3(BA_N, BA_HKV, BA_DH)));
    rlx_node a = rlx_reshape(g, rlx_attention(g, q, kw, vw, 0.125f, 0), S2(BA_N, BA_H * BA_DH));
    rlx_node x2 = rlx_add(g, x, rlx_matmul(g, a, add_weight(g, tw, "wo", RLX_DTYPE_F32, S2(BA_D, BA_H * BA_DH))));
    rlx_node h2 = rlx_rms_norm(g, x2, add_weight(g, tw, "norm2", RLX_DTYPE_F32, vec), 1e-6f);
    rlx_node logits = rlx_matmul(g, h2, add_weight(g, tw, "router", RLX_DTYPE_F32, S2(BA_E, BA_D)));
    rlx_node route = rlx_moe_route(g, logits, 2, true);
    rlx_node ffn = rlx_moe_ffn(g, h2, route, add_weight(g, tw, "gate", RLX_DTYPE_Q4_K, S3(BA_E, BA_F, BA_D)),
                               add_weight(g, tw, "up", RLX_DTYPE_Q8_0, S3(BA_E, BA_F, BA_D)),
                               add_weight(g, tw, "down", RLX_DTYPE_Q8_0, S3(BA_E, BA_D, BA_F)));
    rlx_graph_mark_output(g, rlx_add(g, x2, ffn), "y");
    return g;
}

typedef struct layer_run {
    rlx_session *s;
    rlx_program *p;
    int32_t pages[BA_B * BA_COLS];
} layer_run;

static void layer_open(const test_weights *tw, const rlx_graph *g, layer_run *l) {
    rlx_state_spec kv = {.n_layer = 1, .n_head_kv = BA_HKV, .head_dim = BA_DH, .page_size = BA_PS,
                         .n_pages = BA_PAGES};
    T_OK(g_cpu->ops->session_create(g_cpu, tw->w, tw->n, &kv, &l->s));
    T_OK(g_cpu->ops->compile(l->s, g, &l->p));
}

static void layer_close(layer_run *l) {
    g_cpu->ops->program_destroy(l->p);
    g_cpu->ops->session_destroy(l->s);
}

/* Runs rows (seq[i], pos[i]) with input rows x[i] (the x of that (sequence, position)); y[i] gets
 * the row's output. */
static void layer_step(layer_run *l, int32_t n, const int32_t *seq, const int32_t *pos, const float *xall, float *y) {
    static float xin[BA_N * BA_D], out[BA_N * BA_D];
    for (int32_t i = 0; i < n; i++)
        memcpy(xin + i * BA_D, xall + ((size_t)seq[i] * BA_T + (size_t)pos[i]) * BA_D, BA_D * sizeof(float));
    rlx_run_rows rows = {.pos = pos, .seq = seq, .pages = l->pages, .n_seqs = BA_B, .page_cols = BA_COLS};
    T_OK(run_rows(l->p, n, &rows, (const void *[]){xin}, (void *[]){out}));
    memcpy(y, out, (size_t)n * BA_D * sizeof(float));
}

/* Session A runs every sequence's prefill in one run (rows interleaved), then two decode steps of
 * all 8 sequences; session B runs each sequence alone (its prefill, then one row per step), with
 * other pages. Every row must come out with the same bits. */
static void test_batched_alone(void) {
    test_weights tw = {0};
    rlx_graph *g = layer_graph(&tw);
    layer_run a = {0}, b = {0};
    layer_open(&tw, g, &a);
    layer_open(&tw, g, &b);
    /* A: pages dealt out of a shuffled pool; B: sequence s owns pages [8s, 8s + 8) in order */
    int32_t perm[BA_PAGES];
    for (int32_t i = 0; i < BA_PAGES; i++) perm[i] = i;
    for (int32_t i = BA_PAGES - 1; i > 0; i--) {
        int32_t j = (int32_t)(rng_next() % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int32_t i = 0; i < BA_B * BA_COLS; i++) {
        a.pages[i] = perm[i];
        b.pages[i] = i;
    }
    float *xall = malloc((size_t)BA_B * BA_T * BA_D * sizeof *xall);
    fill_rand(xall, (size_t)BA_B * BA_T * BA_D, 1.0f);
    int32_t len[BA_B], seq[BA_N], pos[BA_N], n = 0;
    for (int32_t sq = 0; sq < BA_B; sq++) len[sq] = 3 + sq; /* 52 prefill rows in all */
    for (int32_t t = 0; t < 10; t++)
        for (int32_t sq = 0; sq < BA_B; sq++)
            if (t < len[sq]) {
                seq[n] = sq;
                pos[n++] = t;
            }
    static float ya[BA_N * BA_D], yb[BA_N * BA_D];
    int64_t differ = 0, compared = 0;
    layer_step(&a, n, seq, pos, xall, ya);
    for (int32_t sq = 0; sq < BA_B; sq++) {
        int32_t s1[BA_N], p1[BA_N];
        for (int32_t t = 0; t < len[sq]; t++) {
            s1[t] = sq;
            p1[t] = t;
        }
        layer_step(&b, len[sq], s1, p1, xall, yb);
        for (int32_t i = 0; i < n; i++)
            if (seq[i] == sq) {
                differ += memcmp(ya + i * BA_D, yb + pos[i] * BA_D, BA_D * sizeof(float)) != 0;
                compared++;
            }
    }
    for (int32_t step = 0; step < 2; step++) {
        for (int32_t sq = 0; sq < BA_B; sq++) {
            seq[sq] = sq;
            pos[sq] = len[sq] + step;
        }
        layer_step(&a, BA_B, seq, pos, xall, ya);
        for (int32_t sq = 0; sq < BA_B; sq++) {
            layer_step(&b, 1, &seq[sq], &pos[sq], xall, yb);
            differ += memcmp(ya + sq * BA_D, yb, BA_D * sizeof(float)) != 0;
            compared++;
        }
    }
    printf("  layer (norm, Q4_K/Q8_0/F16/F32 matmuls, rope, kv write, attention, MoE): 52 prefill rows of 8 "
           "sequences in one run + 2 decode steps of 8 rows vs each sequence alone, other pages: %ld of %ld rows "
           "differ in any bit\n", (long)differ, (long)compared);
    T_CHECK(differ == 0 && compared == 52 + 16, "batched != alone in %ld rows", (long)differ);
    free(xall);
    layer_close(&a);
    layer_close(&b);
    rlx_graph_destroy(g);
    free_weights(&tw);
}

/* ====================================================================================== */
/* copy_pages                                                                             */

enum { CP_HKV = 2, CP_DH = 4, CP_DV = 3, CP_PS = 4, CP_PAGES = 6, CP_ROWS = CP_PS * CP_PAGES };

static const size_t cp_row[4] = {CP_HKV * CP_DH, CP_HKV * CP_DV, CP_HKV * CP_DH, CP_HKV * CP_DV}; /* K0 V0 K1 V1 */

static bool page_equal(float *const *pool, int32_t pa, const float *const *pool_b, int32_t pb) {
    for (int c = 0; c < 4; c++)
        if (memcmp(pool[c] + (size_t)pa * CP_PS * cp_row[c], pool_b[c] + (size_t)pb * CP_PS * cp_row[c],
                   CP_PS * cp_row[c] * sizeof(float)) != 0)
            return false;
    return true;
}

static void test_copy_pages(void) {
    rlx_state_spec kv = {.n_layer = 2, .n_head_kv = CP_HKV, .head_dim = CP_DH, .head_dim_v = CP_DV,
                         .page_size = CP_PS, .n_pages = CP_PAGES};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    T_CHECK(g_cpu->ops->copy_pages != NULL, "the CPU backend has no copy_pages");
    if (!g_cpu->ops->copy_pages) return;
    T_OK(g_cpu->ops->session_create(g_cpu, NULL, 0, &kv, &s));
    rlx_graph *g = new_graph();
    rlx_node k = rlx_input(g, "k", RLX_DTYPE_F32, S3(CP_PS, CP_HKV, CP_DH));
    rlx_node v = rlx_input(g, "v", RLX_DTYPE_F32, S3(CP_PS, CP_HKV, CP_DV));
    for (int32_t l = 0; l < 2; l++) {
        rlx_graph_mark_output(g, rlx_kv_write(g, rlx_kv_cache(g, l, false, 8, CP_HKV, CP_DH), k), l ? "k1" : "k0");
        rlx_graph_mark_output(g, rlx_kv_write(g, rlx_kv_cache(g, l, true, 8, CP_HKV, CP_DV), v), l ? "v1" : "v0");
    }
    T_OK(g_cpu->ops->compile(s, g, &p));
    float ki[CP_PS * CP_HKV * CP_DH], vi[CP_PS * CP_HKV * CP_DV], junk[4][8 * CP_HKV * CP_DH];
    float *before[4], *after[4];
    for (int c = 0; c < 4; c++) {
        before[c] = malloc(CP_ROWS * cp_row[c] * sizeof(float));
        after[c] = malloc(CP_ROWS * cp_row[c] * sizeof(float));
    }
    /* positions 0..3 of a sequence whose page 0 is pool page 2 */
    int32_t pos[CP_PS] = {0, 1, 2, 3}, seq[CP_PS] = {0, 0, 0, 0}, table[2] = {2, -1};
    fill_rand(ki, sizeof ki / sizeof *ki, 1.0f);
    fill_rand(vi, sizeof vi / sizeof *vi, 1.0f);
    rlx_run_rows rows = {.pos = pos, .seq = seq, .pages = table, .n_seqs = 1, .page_cols = 2};
    T_OK(run_rows(p, CP_PS, &rows, (const void *[]){ki, vi}, (void *[]){junk[0], junk[1], junk[2], junk[3]}));
    read_pools(s, &kv, before);
    T_OK(g_cpu->ops->copy_pages(s, (const int32_t[]){2}, (const int32_t[]){5}, 1));
    read_pools(s, &kv, after);
    bool copied = page_equal(after, 5, (const float *const *)before, 2);
    for (int32_t pg = 0; pg < CP_PAGES - 1; pg++) copied &= page_equal(after, pg, (const float *const *)before, pg);
    /* a write into the copy (the sequence now maps page 0 to pool page 5) leaves the source alone */
    table[0] = 5;
    pos[0] = 1;
    fill_rand(ki, sizeof ki / sizeof *ki, 1.0f);
    fill_rand(vi, sizeof vi / sizeof *vi, 1.0f);
    T_OK(run_rows(p, 1, &rows, (const void *[]){ki, vi}, (void *[]){junk[0], junk[1], junk[2], junk[3]}));
    read_pools(s, &kv, after);
    bool source_kept = page_equal(after, 2, (const float *const *)before, 2);
    bool copy_written = memcmp(after[0] + (5 * CP_PS + 1) * cp_row[0], ki, cp_row[0] * sizeof(float)) == 0 &&
                        memcmp(after[3] + (5 * CP_PS + 1) * cp_row[3], vi, cp_row[3] * sizeof(float)) == 0 &&
                        memcmp(after[0] + (5 * CP_PS + 2) * cp_row[0], before[0] + (2 * CP_PS + 2) * cp_row[0],
                               cp_row[0] * sizeof(float)) == 0;
    /* copies happen in order: 5 -> 1, then 1 -> 0 gives page 0 the (new) page 5 */
    for (int c = 0; c < 4; c++) memcpy(before[c], after[c], CP_ROWS * cp_row[c] * sizeof(float));
    T_OK(g_cpu->ops->copy_pages(s, (const int32_t[]){5, 1}, (const int32_t[]){1, 0}, 2));
    read_pools(s, &kv, after);
    bool in_order = page_equal(after, 0, (const float *const *)before, 5) &&
                    page_equal(after, 1, (const float *const *)before, 5);
    /* bad pages: an error, and nothing copied (the first copy is valid) */
    for (int c = 0; c < 4; c++) memcpy(before[c], after[c], CP_ROWS * cp_row[c] * sizeof(float));
    T_ERR(g_cpu->ops->copy_pages(s, (const int32_t[]){2, 6}, (const int32_t[]){3, 4}, 2), RLX_ERR_INVALID_ARGUMENT,
          "copy 1 is page 6 -> page 4, outside the pool's 6 pages");
    T_ERR(g_cpu->ops->copy_pages(s, (const int32_t[]){0}, (const int32_t[]){-1}, 1), RLX_ERR_INVALID_ARGUMENT,
          "outside the pool's 6 pages");
    T_ERR(g_cpu->ops->copy_pages(s, NULL, NULL, -1), RLX_ERR_INVALID_ARGUMENT, "n -1");
    read_pools(s, &kv, after);
    bool untouched = true;
    for (int32_t pg = 0; pg < CP_PAGES; pg++) untouched &= page_equal(after, pg, (const float *const *)before, pg);
    printf("  copy_pages 2 layers K+V: copy 2->5 %s, write into 5 %s / source 2 %s, in-order 5->1,1->0 %s, bad "
           "pages leave the pool %s\n", copied ? "exact" : "WRONG", copy_written ? "lands" : "WRONG",
           source_kept ? "kept" : "CHANGED", in_order ? "yes" : "NO", untouched ? "untouched" : "CHANGED");
    T_CHECK(copied && copy_written && source_kept && in_order && untouched, "copy_pages");
    for (int c = 0; c < 4; c++) {
        free(before[c]);
        free(after[c]);
    }
    g_cpu->ops->program_destroy(p);
    rlx_graph_destroy(g);
    g_cpu->ops->session_destroy(s);
}

/* ====================================================================================== */
/* bad rows: clear errors, nothing run                                                    */

enum { ER_DH = 4, ER_PS = 4, ER_PAGES = 4, ER_ROWS = ER_PS * ER_PAGES };

typedef struct bad_rows {
    int32_t pos[2], seq[2], pages[6];
    int32_t n_seqs, page_cols;
    const char *message;
} bad_rows;

static void test_bad_rows(void) {
    rlx_state_spec kv = {.n_layer = 2, .n_head_kv = 1, .head_dim = ER_DH, .page_size = ER_PS, .n_pages = ER_PAGES};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    T_OK(g_cpu->ops->session_create(g_cpu, NULL, 0, &kv, &s));
    /* layer 0's views hold 12 positions, layer 1's 8: the program's rows may address [0, 12) */
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, S3(2, 1, ER_DH));
    rlx_node kw = rlx_kv_write(g, rlx_kv_cache(g, 0, false, 12, 1, ER_DH), x);
    rlx_node vw = rlx_kv_write(g, rlx_kv_cache(g, 0, true, 12, 1, ER_DH), x);
    rlx_node k1 = rlx_kv_write(g, rlx_kv_cache(g, 1, false, 8, 1, ER_DH), x);
    rlx_graph_mark_output(g, rlx_attention(g, x, kw, vw, 0.5f, 0), "o");
    rlx_graph_mark_output(g, rlx_attention(g, x, k1, k1, 0.5f, 0), "o1");
    T_OK(g_cpu->ops->compile(s, g, &p));
    static const bad_rows cases[] = {
        {{0, 1}, {0, 2}, {0, 1, 2, 3, 0, 1}, 2, 3, "row 1's sequence 2 is outside the table's 2 rows"},
        {{0, 12}, {0, 0}, {0, 1, 2, 3, 0, 1}, 1, 6, "row 1's position 12 is outside [0, 12)"},
        {{-1, 0}, {0, 0}, {0, 1, 2, 3, 0, 1}, 1, 3, "row 0's position -1 is outside [0, 12)"},
        {{0, 5}, {0, 0}, {0, 4, 2, 3, 0, 1}, 1, 3, "sequence 0's page 1 is pool page 4, outside the pool's 4 pages"},
        {{1, 1}, {0, 1}, {3, 0, 0, 3, 0, 0}, 2, 3, "two rows write pool row 13 (page 3)"},
        {{0, 4}, {0, 0}, {0, 1, 2, 3, 0, 1}, 1, 1, "row 1 at position 4 needs page column 1, but the table has 1"},
        {{0, 9}, {0, 0}, {0, 1, 2, 3, 0, 1}, 1, 3, "KV_WRITE: row 1's position 9 exceeds the cache capacity 8"},
    };
    float *before[4], *after[4];
    for (int c = 0; c < 4; c++) {
        before[c] = malloc(ER_ROWS * ER_DH * sizeof(float));
        after[c] = malloc(ER_ROWS * ER_DH * sizeof(float));
    }
    float xi[2 * ER_DH], o[2 * ER_DH], o1[2 * ER_DH];
    fill_rand(xi, 2 * ER_DH, 1.0f);
    int32_t good_pos[2] = {0, 1}, good_seq[2] = {0, 0}, good_pages[3] = {2, 0, 1};
    rlx_run_rows good = {.pos = good_pos, .seq = good_seq, .pages = good_pages, .n_seqs = 1, .page_cols = 3};
    T_OK(run_rows(p, 2, &good, (const void *[]){xi}, (void *[]){o, o1}));
    read_pools(s, &kv, before);
    int n_ok = 0;
    size_t n_cases = sizeof cases / sizeof *cases;
    for (size_t c = 0; c < n_cases; c++) {
        rlx_run_rows r = {.pos = cases[c].pos, .seq = cases[c].seq, .pages = cases[c].pages,
                          .n_seqs = cases[c].n_seqs, .page_cols = cases[c].page_cols};
        for (int e = 0; e < 2 * ER_DH; e++) o[e] = o1[e] = 777.0f;
        fill_rand(xi, 2 * ER_DH, 1.0f);
        bool err = T_ERR(run_rows(p, 2, &r, (const void *[]){xi}, (void *[]){o, o1}), RLX_ERR_INVALID_ARGUMENT,
                         cases[c].message);
        read_pools(s, &kv, after);
        bool kept = true;
        for (int k = 0; k < 4; k++) kept &= memcmp(before[k], after[k], ER_ROWS * ER_DH * sizeof(float)) == 0;
        for (int e = 0; e < 2 * ER_DH; e++) kept &= o[e] == 777.0f && o1[e] == 777.0f;
        T_CHECK(kept, "bad rows '%s': the pool or the outputs changed", cases[c].message);
        n_ok += err && kept;
    }
    printf("  bad rows (sequence past the table, position past the view or negative, page past the pool, two "
           "writes to one pool row, too few page columns, a shorter view's capacity): %d of %zu refused with "
           "their message, pool and outputs untouched\n", n_ok, n_cases);
    /* the single-sequence form over a view longer than the pool: identity pages past the pool */
    rlx_graph *gl = new_graph();
    rlx_node xl = rlx_input(gl, "x", RLX_DTYPE_F32, S3(2, 1, ER_DH));
    rlx_node kl = rlx_kv_write(gl, rlx_kv_cache(gl, 0, false, 24, 1, ER_DH), xl);
    rlx_graph_mark_output(gl, rlx_attention(gl, xl, kl, kl, 0.5f, 0), "o");
    rlx_program *pl = NULL;
    T_OK(g_cpu->ops->compile(s, gl, &pl));
    rlx_run_args a = {.n_past = 16, .n_tokens = 2, .inputs = (const void *[]){xi}, .outputs = (void *[]){o}};
    T_ERR(g_cpu->ops->run(pl, &a), RLX_ERR_INVALID_ARGUMENT,
          "rows [n_past 16, 18) read page 4, outside the pool's 4 pages of 4 rows");
    a.n_past = 14;
    T_OK(g_cpu->ops->run(pl, &a));
    g_cpu->ops->program_destroy(pl);
    rlx_graph_destroy(gl);
    /* a view longer than the pool read as a plain array: refused at compile */
    gl = new_graph();
    rlx_graph_mark_output(gl, rlx_kv_cache(gl, 0, false, 24, 1, ER_DH), "k");
    T_ERR(g_cpu->ops->compile(s, gl, &pl), RLX_ERR_INVALID_ARGUMENT, "graph output 0 reads it as a plain array");
    rlx_graph_destroy(gl);
    gl = new_graph();
    rlx_node kc = rlx_kv_cache(gl, 0, false, 24, 1, ER_DH);
    rlx_graph_mark_output(gl, rlx_scale(gl, kc, 2.0f), "k2");
    T_ERR(g_cpu->ops->compile(s, gl, &pl), RLX_ERR_INVALID_ARGUMENT, "%1 SCALE reads it as a plain array");
    rlx_graph_destroy(gl);
    printf("  single-sequence rows past the pool, a view longer than the pool read plainly: refused\n");
    for (int c = 0; c < 4; c++) {
        free(before[c]);
        free(after[c]);
    }
    g_cpu->ops->program_destroy(p);
    rlx_graph_destroy(g);
    g_cpu->ops->session_destroy(s);
}

int main(void) {
    if (!T_OK(rlx_backend_cpu_create(3, &g_cpu))) return 1;
    printf("paged KV_WRITE + ATTENTION\n");
    test_paged_attention();
    printf("ROPE by row positions\n");
    test_rope_rows();
    printf("batched == alone\n");
    test_batched_alone();
    printf("copy_pages\n");
    test_copy_pages();
    printf("bad rows\n");
    test_bad_rows();
    rlx_backend_destroy(g_cpu);
    return t_summary("test_cpu_rows");
}
