/* The op sweep's cases: one function per op of ir/ops.def (the table at the end includes it, so a
 * new op without its cases_<OP> function does not compile). Shapes are small, odd where they can
 * be, not multiples of the block (32 / 256) or of a workgroup (64 / 256), with padding rows
 * (n_tokens < static rows); every weight type the kernels decode where an op takes weights; a step
 * after the first where an op keeps state (the caches). Random inputs, uniform in [-a, a]. With
 * opts.quick each op (and type) keeps its first shape only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "validate/validate_internal.h"

#define QUICK(sw) ((sw)->o->quick)

/* The types of ops that take a weight of any stored type, in the sweep's order. */
static const uint32_t all_types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_0,
                                     RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1, RLX_DTYPE_Q2_K, RLX_DTYPE_Q3_K,
                                     RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q8_K};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

size_t rlx_validate_all_types(uint32_t *types, size_t cap) {
    for (size_t i = 0; i < N_TYPES && i < cap; i++) types[i] = all_types[i];
    return N_TYPES;
}

static void cases_INPUT(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 5);
    vl_output(&c, vl_input_f32(&c, vl_shape(2, 5, 7, 0), 1.0f), "x");
    vl_output(&c, vl_input_ids(&c, 5, -3, 1000), "ids");
    snprintf(c.shape, sizeof c.shape, "f32 [5,7] and i32 [5] read back");
    vl_case_finish(&c);
}

/* A weight read as an f32 operand: decoded once at compile on the device. */
static void cases_WEIGHT(vl_sweep *sw) {
    for (size_t k = 0; k < N_TYPES; k++) {
        uint32_t t = all_types[k];
        if (!vl_type_selected(sw, t)) continue;
        int64_t cols = vl_block_of(t) > 1 ? vl_block_of(t) * 3 : 37;
        vl_case c;
        vl_case_begin(sw, &c, (int32_t)t, 3);
        rlx_node x = vl_input_f32(&c, vl_shape(2, 3, cols, 0), 1.0f);
        vl_output(&c, rlx_add(c.g, x, vl_weight(&c, t, 2, 3, cols, 0)), "y");
        snprintf(c.shape, sizeof c.shape, "[3,%lld] as an add operand", (long long)cols);
        vl_case_finish(&c);
    }
}

static void cases_KV_CACHE(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    c.kv = (rlx_state_spec){.n_layer = 2, .page_size = 1, .n_pages = 16, .n_head_kv = 2, .head_dim = 4};
    rlx_node cache = rlx_kv_cache(c.g, 1, true, 12, 2, 4);
    rlx_node w = rlx_kv_write(c.g, cache, vl_input_f32(&c, vl_shape(3, 3, 2, 4), 1.0f));
    vl_output(&c, cache, "cache");
    vl_output(&c, w, "written");
    const int32_t steps[3][2] = {{0, 3}, {3, 2}, {9, 3}};
    memcpy(c.steps, steps, sizeof steps);
    c.n_steps = 3;
    c.token_major = false;
    snprintf(c.shape, sizeof c.shape, "layer 1 V [12,2,4] of 16 rows, 3 steps");
    vl_case_finish(&c);
}

static void cases_KV_WRITE(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    c.kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = 8, .n_head_kv = 3, .head_dim = 5};
    rlx_node w = rlx_kv_write(c.g, rlx_kv_cache(c.g, 0, false, 8, 3, 5), vl_input_f32(&c, vl_shape(3, 3, 3, 5), 2.0f));
    vl_output(&c, w, "cache");
    const int32_t steps[4][2] = {{0, 3}, {3, 1}, {4, 2}, {6, 2}};
    memcpy(c.steps, steps, sizeof steps);
    c.n_steps = 4;
    c.token_major = false;
    snprintf(c.shape, sizeof c.shape, "H_kv 3, Dh 5, cap 8, 4 steps");
    vl_case_finish(&c);
}

static void cases_EMBED(vl_sweep *sw) {
    for (size_t k = 0; k < N_TYPES; k++) {
        uint32_t t = all_types[k];
        if (!vl_type_selected(sw, t)) continue;
        int64_t b = vl_block_of(t);
        const int64_t dims[2] = {b > 1 ? 2 * b : 97, b > 1 ? b : 33};
        const int64_t vocab[2] = {37, 11};
        for (int d = 0; d < (QUICK(sw) ? 1 : 2); d++) {
            vl_case c;
            vl_case_begin(sw, &c, (int32_t)t, 8);
            rlx_node ids = vl_input_ids(&c, 9, 0, (int32_t)vocab[d] - 1);
            if (c.nin == 1) {
                ((int32_t *)c.in[0])[0] = 0;
                ((int32_t *)c.in[0])[1] = (int32_t)vocab[d] - 1;
                ((int32_t *)c.in[0])[8] = 1000; /* a padding row: past n_tokens, never looked up */
            }
            vl_output(&c, rlx_embed(c.g, vl_weight(&c, t, 2, vocab[d], dims[d], 0), ids), "e");
            snprintf(c.shape, sizeof c.shape, "[%lld,%lld], 8 of 9 ids", (long long)vocab[d], (long long)dims[d]);
            vl_case_finish(&c);
        }
    }
}

/* x [rows, k] (x2 with rank3) @ w [m, k]^T. On a GPU fewer than 32 rows of short weight rows take
 * the matrix-vector kernel, more take the prefill (tiled or cooperative) one. */
static void matmul_case(vl_sweep *sw, uint32_t t, int64_t k, int64_t m, int64_t rows, int32_t n_tokens, bool rank3) {
    vl_case c;
    vl_case_begin(sw, &c, (int32_t)t, n_tokens);
    rlx_node x = rank3 ? vl_input_f32(&c, vl_shape(3, rows, 2, k), 1.0f) : vl_input_f32(&c, vl_shape(2, rows, k, 0), 1.0f);
    vl_output(&c, rlx_matmul(c.g, x, vl_weight(&c, t, 2, m, k, 0)), "y");
    snprintf(c.shape, sizeof c.shape, "k=%lld m=%lld rows=%lld%s n_tok=%d", (long long)k, (long long)m, (long long)rows,
             rank3 ? "x2" : "", n_tokens);
    vl_case_finish(&c);
}

static void cases_MATMUL(vl_sweep *sw) {
    for (size_t i = 0; i < N_TYPES; i++) {
        uint32_t t = all_types[i];
        if (!vl_type_selected(sw, t)) continue;
        int64_t b = vl_block_of(t);
        matmul_case(sw, t, b > 1 ? 2 * b : 97, 67, 3, 3, false); /* decode-like: matvec */
        if (QUICK(sw)) continue;
        matmul_case(sw, t, b > 1 ? b : 7, 5, 1, 1, false);
        matmul_case(sw, t, b > 1 ? 3 * b : 513, 33, 2, 2, true);
        matmul_case(sw, t, b > 1 ? 2 * b : 96, 70, 40, 37, false); /* prefill: tails in rows and weight rows */
    }
    if (QUICK(sw)) return;
    /* w an F32 activation: x [5, 40] @ y [9, 40]^T */
    vl_case c;
    vl_case_begin(sw, &c, -1, 5);
    rlx_node x = vl_input_f32(&c, vl_shape(2, 5, 40, 0), 1.0f), y = vl_input_f32(&c, vl_shape(2, 9, 40, 0), 1.0f);
    vl_output(&c, rlx_matmul(c.g, x, y), "xyT");
    snprintf(c.shape, sizeof c.shape, "x [5,40] @ activation [9,40]^T");
    vl_case_finish(&c);
}

static void cases_RMS_NORM(vl_sweep *sw) {
    static const struct {
        int32_t rank;
        int64_t d0, d1, d2;
        uint32_t wtype;
        float eps;
    } cs[] = {{2, 3, 256, 0, RLX_DTYPE_F32, 1e-5f},
              {2, 1, 7, 0, RLX_DTYPE_F32, 1e-6f},
              {3, 2, 3, 1000, RLX_DTYPE_F32, 1e-6f},
              {2, 4, 96, 0, RLX_DTYPE_F16, 1e-6f}};
    for (size_t k = 0; k < (QUICK(sw) ? 1 : sizeof cs / sizeof cs[0]); k++) {
        int64_t d = cs[k].rank == 2 ? cs[k].d1 : cs[k].d2;
        vl_case c;
        vl_case_begin(sw, &c, (int32_t)cs[k].wtype, (int32_t)cs[k].d0);
        rlx_node x = vl_input_f32(&c, vl_shape(cs[k].rank, cs[k].d0, cs[k].d1, cs[k].d2), 3.0f);
        vl_output(&c, rlx_rms_norm(c.g, x, vl_weight(&c, cs[k].wtype, 1, d, 0, 0), cs[k].eps), "y");
        snprintf(c.shape, sizeof c.shape, "%d rows of %lld, eps %g", (int)(cs[k].d0 * (cs[k].rank == 3 ? cs[k].d1 : 1)),
                 (long long)d, (double)cs[k].eps);
        vl_case_finish(&c);
    }
}

static void cases_ROPE(vl_sweep *sw) {
    static const struct {
        int64_t n, h, dh;
        int32_t n_rot;
        rlx_rope_layout layout;
        float base;
        bool ff;
        int32_t n_past;
    } cs[] = {
        {3, 4, 64, 64, RLX_ROPE_LAYOUT_NEOX, 1e6f, false, 0},
        {3, 2, 64, 64, RLX_ROPE_LAYOUT_NORMAL, 1e4f, false, 5},
        {5, 2, 10, 6, RLX_ROPE_LAYOUT_NEOX, 1e4f, false, 2},
        {2, 3, 11, 8, RLX_ROPE_LAYOUT_NORMAL, 1e4f, false, 0},
        {4, 2, 64, 64, RLX_ROPE_LAYOUT_NORMAL, 5e5f, true, 7},
        {2, 4, 128, 128, RLX_ROPE_LAYOUT_NEOX, 1e6f, false, 4000},
    };
    for (size_t k = 0; k < (QUICK(sw) ? 1 : sizeof cs / sizeof cs[0]); k++) {
        vl_case c;
        vl_case_begin(sw, &c, -1, (int32_t)cs[k].n);
        c.steps[0][0] = cs[k].n_past;
        rlx_node x = vl_input_f32(&c, vl_shape(3, cs[k].n, cs[k].h, cs[k].dh), 2.0f);
        rlx_node ff = RLX_NO_NODE;
        if (cs[k].ff) {
            ff = vl_weight(&c, RLX_DTYPE_F32, 1, cs[k].n_rot / 2, 0, 0);
            if (c.nw > 0) { /* frequency factors as Llama 3's: 1 .. 40 */
                float *f = (float *)c.w[c.nw - 1].data;
                for (int32_t i = 0; i < cs[k].n_rot / 2; i++) f[i] = rlx_validate_rng_uniform(&sw->rng, 1.0f, 40.0f);
            }
        }
        rlx_rope_attrs a = {cs[k].layout, cs[k].n_rot, cs[k].base};
        vl_output(&c, rlx_rope(c.g, x, ff, a), "y");
        snprintf(c.shape, sizeof c.shape, "%s [%lld,%lld,%lld] rot %d%s n_past %d",
                 cs[k].layout == RLX_ROPE_LAYOUT_NEOX ? "neox" : "normal", (long long)cs[k].n, (long long)cs[k].h,
                 (long long)cs[k].dh, cs[k].n_rot, cs[k].ff ? " ff" : "", cs[k].n_past);
        vl_case_finish(&c);
    }
}

/* Attention straight on activations (the naive path: keys are this run's rows). */
static void attention_direct(vl_sweep *sw, int64_t n, int64_t h, int64_t hkv, int64_t dh, int64_t dv, int32_t window,
                             int32_t n_tokens) {
    vl_case c;
    vl_case_begin(sw, &c, -1, n_tokens);
    rlx_node q = vl_input_f32(&c, vl_shape(3, n, h, dh), 1.0f);
    rlx_node k = vl_input_f32(&c, vl_shape(3, n, hkv, dh), 1.0f);
    rlx_node v = vl_input_f32(&c, vl_shape(3, n, hkv, dv), 1.0f);
    vl_output(&c, rlx_attention(c.g, q, k, v, 2.0f / sqrtf((float)dh), window), "o");
    snprintf(c.shape, sizeof c.shape, "direct n=%lld H %lld/%lld Dh %lld Dv %lld win %d n_tok %d", (long long)n,
             (long long)h, (long long)hkv, (long long)dh, (long long)dv, window, n_tokens);
    vl_case_finish(&c);
}

/* Attention over the session's cache as the runners build it: a prefill, decode steps, and rows at
 * the end of the capacity. */
static void attention_cached(vl_sweep *sw, int64_t h, int64_t hkv, int64_t dh, int32_t window, int64_t rows,
                             int64_t cap) {
    vl_case c;
    vl_case_begin(sw, &c, -1, (int32_t)rows);
    c.kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = (int32_t)cap, .n_head_kv = (int32_t)hkv,
                            .head_dim = (int32_t)dh};
    rlx_node q = vl_input_f32(&c, vl_shape(3, rows, h, dh), 1.0f);
    rlx_node k = vl_input_f32(&c, vl_shape(3, rows, hkv, dh), 1.0f);
    rlx_node v = vl_input_f32(&c, vl_shape(3, rows, hkv, dh), 1.0f);
    rlx_node kc = rlx_kv_write(c.g, rlx_kv_cache(c.g, 0, false, cap, hkv, dh), k);
    rlx_node vc = rlx_kv_write(c.g, rlx_kv_cache(c.g, 0, true, cap, hkv, dh), v);
    vl_output(&c, rlx_attention(c.g, q, kc, vc, 0.125f, window), "o");
    const int32_t steps[4][2] = {{0, (int32_t)rows},
                                 {(int32_t)rows, 1},
                                 {(int32_t)rows + 1, (int32_t)(rows > 1 ? 2 : 1)},
                                 {(int32_t)(cap - rows), (int32_t)rows}};
    memcpy(c.steps, steps, sizeof steps);
    c.n_steps = 4;
    snprintf(c.shape, sizeof c.shape, "cached rows %lld cap %lld H %lld/%lld Dh %lld win %d, 4 steps", (long long)rows,
             (long long)cap, (long long)h, (long long)hkv, (long long)dh, window);
    vl_case_finish(&c);
}

static void cases_ATTENTION(vl_sweep *sw) {
    attention_cached(sw, 4, 2, 64, 0, 3, 40);
    if (QUICK(sw)) return;
    attention_direct(sw, 1, 4, 2, 64, 64, 0, 1);
    attention_direct(sw, 3, 4, 1, 8, 6, 0, 3);
    attention_direct(sw, 17, 4, 2, 64, 64, 3, 13);
    attention_direct(sw, 40, 2, 2, 5, 7, 0, 37);
    attention_cached(sw, 4, 1, 32, 8, 3, 200);
    attention_cached(sw, 2, 2, 16, 0, 1, 300);
    attention_cached(sw, 4, 2, 64, 0, 1, 1100); /* decode over a long cache: key splits */
    attention_cached(sw, 4, 2, 64, 0, 20, 64);  /* prefill over the cache */
}

/* Elementwise ops and reductions over rows: rank 1..3, padding rows, rows of 1000. */
static void elementwise_cases(vl_sweep *sw, float a) {
    static const struct {
        int32_t rank;
        int64_t d0, d1, d2;
        int32_t n_tokens;
    } cs[] = {{2, 7, 13, 0, 7}, {1, 1, 0, 0, 1}, {3, 3, 5, 97, 2}, {2, 9, 1000, 0, 6}};
    for (size_t k = 0; k < (QUICK(sw) ? 1 : sizeof cs / sizeof cs[0]); k++) {
        vl_case c;
        vl_case_begin(sw, &c, -1, cs[k].n_tokens);
        rlx_shape s = vl_shape(cs[k].rank, cs[k].d0, cs[k].d1, cs[k].d2);
        /* one lone value far out in a tail (gelu(-90) = -1e-22 vs 0) has an NMSE of 1 without an
         * error worth the name: the single-value case stays where outputs are not tiny */
        float ak = cs[k].d0 * (cs[k].rank > 1 ? cs[k].d1 : 1) == 1 && a > 4.0f ? 4.0f : a;
        rlx_node x = vl_input_f32(&c, s, ak), y;
        switch (sw->op) {
        case RLX_OP_ADD: y = rlx_add(c.g, x, vl_input_f32(&c, s, ak)); break;
        case RLX_OP_MUL: y = rlx_mul(c.g, x, vl_input_f32(&c, s, ak)); break;
        case RLX_OP_SCALE: y = rlx_scale(c.g, x, k % 2 ? -2.0f : 0.37f); break;
        case RLX_OP_SILU: y = rlx_silu(c.g, x); break;
        case RLX_OP_GELU_TANH: y = rlx_gelu_tanh(c.g, x); break;
        case RLX_OP_SOFTMAX: y = rlx_softmax(c.g, x); break;
        default: y = rlx_argmax(c.g, x); break;
        }
        vl_output(&c, y, "y");
        char dims[48] = "";
        if (cs[k].rank == 2) snprintf(dims, sizeof dims, ",%lld", (long long)cs[k].d1);
        if (cs[k].rank == 3) snprintf(dims, sizeof dims, ",%lld,%lld", (long long)cs[k].d1, (long long)cs[k].d2);
        snprintf(c.shape, sizeof c.shape, "[%lld%s] x in ±%g n_tok %d", (long long)cs[k].d0, dims, (double)ak,
                 cs[k].n_tokens);
        vl_case_finish(&c);
    }
}

static void cases_ADD(vl_sweep *sw) { elementwise_cases(sw, 4.0f); }
static void cases_MUL(vl_sweep *sw) { elementwise_cases(sw, 4.0f); }
static void cases_SCALE(vl_sweep *sw) { elementwise_cases(sw, 4.0f); }
static void cases_SILU(vl_sweep *sw) {
    elementwise_cases(sw, 1.0f);
    if (!QUICK(sw)) elementwise_cases(sw, 100.0f);
}
static void cases_GELU_TANH(vl_sweep *sw) {
    elementwise_cases(sw, 1.0f);
    if (!QUICK(sw)) elementwise_cases(sw, 100.0f);
}
static void cases_SOFTMAX(vl_sweep *sw) {
    elementwise_cases(sw, 1.0f);
    if (!QUICK(sw)) elementwise_cases(sw, 30.0f);
}

static void cases_ARGMAX(vl_sweep *sw) {
    elementwise_cases(sw, 1.0f);
    if (QUICK(sw)) return;
    /* ties: the maximum appears twice in each row; the first index wins */
    vl_case c;
    vl_case_begin(sw, &c, -1, 4);
    rlx_node x = vl_input_f32(&c, vl_shape(2, 4, 777, 0), 1.0f);
    if (c.nin == 1) {
        float *v = c.in[0];
        for (int r = 0; r < 4; r++) v[r * 777 + 5 + 100 * r] = v[r * 777 + 700 - 50 * r] = 2.0f;
    }
    vl_output(&c, rlx_argmax(c.g, x), "i");
    snprintf(c.shape, sizeof c.shape, "[4,777] with tied maxima");
    vl_case_finish(&c);
}

static void cases_RESHAPE(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 6);
    rlx_node x = vl_input_f32(&c, vl_shape(2, 6, 4, 0), 1.0f);
    rlx_node r = rlx_reshape(c.g, x, vl_shape(3, 6, 2, 2));
    vl_output(&c, r, "view");
    vl_output(&c, rlx_scale(c.g, rlx_reshape(c.g, rlx_silu(c.g, r), vl_shape(2, 6, 4, 0)), 3.0f), "y");
    snprintf(c.shape, sizeof c.shape, "[6,4] -> [6,2,2] -> [6,4]");
    vl_case_finish(&c);
}

static void cases_LAST_ROW(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    rlx_node x = vl_input_f32(&c, vl_shape(3, 5, 3, 7), 1.0f);
    vl_output(&c, rlx_last_row(c.g, x), "f32");
    vl_output(&c, rlx_last_row(c.g, rlx_argmax(c.g, rlx_reshape(c.g, x, vl_shape(2, 5, 21, 0)))), "i32");
    const int32_t steps[3][2] = {{0, 3}, {0, 5}, {4, 1}};
    memcpy(c.steps, steps, sizeof steps);
    c.n_steps = 3;
    snprintf(c.shape, sizeof c.shape, "[5,3,7] f32 and i32, 3 steps");
    vl_case_finish(&c);
}

static void cases_GATHER_ROWS(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    rlx_node x = vl_input_f32(&c, vl_shape(3, 5, 3, 7), 1.0f);
    rlx_node idx = vl_input_ids(&c, 6, -2, 7); /* some past the valid rows: those give rows of 0 */
    vl_output(&c, rlx_gather_rows(c.g, rlx_reshape(c.g, x, vl_shape(2, 5, 21, 0)), idx), "rows");
    const int32_t steps[3][2] = {{0, 3}, {0, 5}, {4, 1}};
    memcpy(c.steps, steps, sizeof steps);
    c.n_steps = 3;
    snprintf(c.shape, sizeof c.shape, "[5,21] by 6 indices in [-2,7], 3 steps");
    vl_case_finish(&c);
}

static void cases_MOE_ROUTE(vl_sweep *sw) {
    static const struct {
        int64_t n, e;
        int32_t k;
        bool norm;
    } cs[] = {{5, 4, 2, true}, {5, 4, 2, false}, {3, 60, 4, true}, {1, 8, 1, false}, {2, 128, 8, true}};
    for (size_t k = 0; k < (QUICK(sw) ? 1 : sizeof cs / sizeof cs[0]); k++) {
        vl_case c;
        vl_case_begin(sw, &c, -1, (int32_t)cs[k].n);
        rlx_node x = vl_input_f32(&c, vl_shape(2, cs[k].n, cs[k].e, 0), 3.0f);
        vl_output(&c, rlx_moe_route(c.g, x, cs[k].k, cs[k].norm), "r");
        snprintf(c.shape, sizeof c.shape, "[%lld,%lld] top %d%s", (long long)cs[k].n, (long long)cs[k].e, cs[k].k,
                 cs[k].norm ? " renormalised" : "");
        vl_case_finish(&c);
    }
}

/* A prefill's rows (40, 39 valid) over 4 experts, top 2: 20 pairs per expert, which the device
 * takes on its grouped path (runtime/vk_plan.c vk_moe_grouped_plan). For F16, Q8_0, Q4_K and Q6_K
 * (a Q4_K_M file's experts, and one of each decoder family): the path reads weights through the
 * decoders every type's cases check (shaders/dequant.glsl), and each type is another pipeline of
 * three to build, seconds each on lavapipe. */
static void moe_prefill_case(vl_sweep *sw, uint32_t t) {
    if (t != RLX_DTYPE_F16 && t != RLX_DTYPE_Q8_0 && t != RLX_DTYPE_Q4_K && t != RLX_DTYPE_Q6_K) return;
    int64_t b = vl_block_of(t), f = b > 1 ? b : 64, d = b > 1 ? 2 * b : 96, e = 4, n = 40;
    vl_case c;
    vl_case_begin(sw, &c, (int32_t)t, (int32_t)(n - 1));
    rlx_node x = vl_input_f32(&c, vl_shape(2, n, d, 0), 1.0f);
    rlx_node route = rlx_moe_route(c.g, vl_input_f32(&c, vl_shape(2, n, e, 0), 2.0f), 2, true);
    rlx_node gate = vl_weight(&c, t, 3, e, f, d), up = vl_weight(&c, t, 3, e, f, d);
    vl_output(&c, rlx_moe_ffn(c.g, x, route, gate, up, vl_weight(&c, t, 3, e, d, f)), "y");
    snprintf(c.shape, sizeof c.shape, "n %lld (%lld valid) E %lld F %lld D %lld top 2", (long long)n,
             (long long)(n - 1), (long long)e, (long long)f, (long long)d);
    vl_case_finish(&c);
}

static void cases_MOE_FFN(vl_sweep *sw) {
    for (size_t i = 0; i < N_TYPES; i++) {
        uint32_t t = all_types[i];
        if (!vl_type_selected(sw, t)) continue;
        int64_t b = vl_block_of(t), f = b > 1 ? b : 37, d = b > 1 ? 2 * b : 29, e = 4;
        for (int dense = 0; dense < (QUICK(sw) ? 1 : 2); dense++) {
            int64_t n = dense ? 2 : 3;
            vl_case c;
            vl_case_begin(sw, &c, (int32_t)t, (int32_t)(n > 1 ? n - 1 : n));
            rlx_node x = vl_input_f32(&c, vl_shape(2, n, d, 0), 1.0f), route;
            if (dense)
                route = vl_input_f32(&c, vl_shape(2, n, e, 0), 1.0f);
            else
                route = rlx_moe_route(c.g, vl_input_f32(&c, vl_shape(2, n, e, 0), 2.0f), 2, true);
            rlx_node gate = vl_weight(&c, t, 3, e, f, d), up = vl_weight(&c, t, 3, e, f, d);
            rlx_node down = vl_weight(&c, t, 3, e, d, f);
            vl_output(&c, rlx_moe_ffn(c.g, x, route, gate, up, down), "y");
            snprintf(c.shape, sizeof c.shape, "n %lld E %lld F %lld D %lld%s", (long long)n, (long long)e, (long long)f,
                     (long long)d, dense ? " dense route" : " top 2");
            vl_case_finish(&c);
        }
        if (!QUICK(sw)) moe_prefill_case(sw, t);
    }
}

/* ---- the Gated DeltaNet ops ---- */

static const uint8_t g_recurrent[1] = {RLX_STATE_RECURRENT};

/* c's session: one recurrent layer of one slot; its runs: the case's rows from position 0, `more`
 * rows continuing the sequence (the state carried over), then the first rows again from position
 * 0 (a restart over the used slot). */
static void recurrent_case(vl_case *c, int64_t floats, int32_t rows, int32_t more) {
    c->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = 1, .n_head_kv = 1, .head_dim = 4,
                             .layer_kind = g_recurrent, .n_state_slots = 1, .state_floats = floats};
    c->steps[1][0] = rows;
    c->steps[1][1] = more;
    c->steps[2][0] = 0;
    c->steps[2][1] = rows;
    c->n_steps = 3;
}

static void conv_case(vl_sweep *sw, const char *what) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    recurrent_case(&c, 2 + 3 * 37, 3, 2);
    rlx_node x = vl_input_f32(&c, vl_shape(2, 3, 37, 0), 1.0f), w = vl_input_f32(&c, vl_shape(2, 37, 4, 0), 1.0f);
    vl_output(&c, rlx_causal_conv(c.g, x, w, rlx_state(c.g, 0, 2, vl_shape(2, 3, 37, 0))), "y");
    snprintf(c.shape, sizeof c.shape, "%s; 3 rows, +2, restart", what);
    vl_case_finish(&c);
}

static void cases_STATE(vl_sweep *sw) { conv_case(sw, "a conv's state [3,37]"); }
static void cases_CAUSAL_CONV(vl_sweep *sw) { conv_case(sw, "x [3,37] K 4"); }

/* Few rows take the device's step (decode) kernel, many its chunked (prefill) kernel. */
static void cases_DELTA_RULE(vl_sweep *sw) {
    static const int32_t rows[2] = {3, 20}, more[2] = {2, 7}, chunk[2] = {0, 8};
    for (int k = 0; k < 2; k++) {
        vl_case c;
        vl_case_begin(sw, &c, -1, rows[k]);
        recurrent_case(&c, 4 * 16 * 8, rows[k], more[k]);
        int64_t n = rows[k];
        rlx_node q = vl_input_f32(&c, vl_shape(3, n, 2, 16), 0.25f), kk = vl_input_f32(&c, vl_shape(3, n, 2, 16), 0.25f);
        rlx_node v = vl_input_f32(&c, vl_shape(3, n, 4, 8), 1.0f), g = vl_input_f32(&c, vl_shape(2, n, 4, 0), 0.5f);
        rlx_node b = vl_input_f32(&c, vl_shape(2, n, 4, 0), 0.5f);
        rlx_node st = rlx_state(c.g, 0, 0, vl_shape(3, 4, 16, 8));
        vl_output(&c, rlx_delta_rule(c.g, q, kk, v, g, b, st, chunk[k]), "o");
        snprintf(c.shape, sizeof c.shape, "Hk 2 Hv 4 dk 16 dv 8, %d rows, +%d, restart%s", rows[k], more[k],
                 chunk[k] ? ", chunks of 8" : "");
        vl_case_finish(&c);
    }
}

static void cases_DELTA_GATE(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    rlx_node a = vl_input_f32(&c, vl_shape(2, 3, 5, 0), 4.0f), A = vl_input_f32(&c, vl_shape(1, 5, 0, 0), 1.0f);
    vl_output(&c, rlx_delta_gate(c.g, a, A, vl_input_f32(&c, vl_shape(1, 5, 0, 0), 1.0f)), "g");
    snprintf(c.shape, sizeof c.shape, "[3,5]");
    vl_case_finish(&c);
}

static void cases_L2_NORM(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    vl_output(&c, rlx_l2_norm(c.g, vl_input_f32(&c, vl_shape(2, 3, 37, 0), 1.0f), 1e-6f), "y");
    snprintf(c.shape, sizeof c.shape, "[3,37]");
    vl_case_finish(&c);
}

static void cases_SIGMOID(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    vl_output(&c, rlx_sigmoid(c.g, vl_input_f32(&c, vl_shape(2, 3, 37, 0), 8.0f)), "y");
    snprintf(c.shape, sizeof c.shape, "[3,37]");
    vl_case_finish(&c);
}

static void cases_SCALE_ROWS(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    rlx_node x = vl_input_f32(&c, vl_shape(2, 3, 37, 0), 1.0f);
    vl_output(&c, rlx_scale_rows(c.g, x, vl_input_f32(&c, vl_shape(2, 3, 1, 0), 1.0f)), "y");
    snprintf(c.shape, sizeof c.shape, "[3,37] by [3,1]");
    vl_case_finish(&c);
}

static void cases_SLICE(vl_sweep *sw) {
    vl_case c;
    vl_case_begin(sw, &c, -1, 3);
    vl_output(&c, rlx_slice(c.g, vl_input_f32(&c, vl_shape(2, 3, 37, 0), 1.0f), 5, 20), "y");
    snprintf(c.shape, sizeof c.shape, "[3,37] [5, +20)");
    vl_case_finish(&c);
}

const vl_op_cases vl_cases_of[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = cases_##name,
#include "ir/ops.def"
#undef RLX_OP
};
