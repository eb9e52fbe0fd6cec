/* Op parity: every op of ir/ops.def on the Vulkan backend against the CPU reference backend (itself
 * checked against double-precision math in test_cpu_ops), on random inputs of several shapes:
 * odd sizes, sizes that are not multiples of the block (32/256) or of the workgroup (64/256),
 * padding rows (n_tokens < static rows), and every weight type the kernels decode. Weights are
 * random blocks with sane scale fields (ggml-common.h layouts), so both backends decode the same
 * bytes and only the kernels differ.
 *
 * Check: NMSE = sum (vk - cpu)^2 / sum cpu^2 per output, as llama.cpp's test-backend-ops does, with
 * its bound for f32 computation, 1e-7. Every path here computes in f32: weights of any type are
 * decoded exactly (f16, bf16 and block scales are exact in f32) and activations are never stored
 * narrower, so no path needs a looser bound. I32 outputs (ARGMAX, ids) must match exactly. The
 * measures and bounds are `rlx validate`'s (validate/validate_compare.h), which runs a smaller
 * sweep of the same kind on any device; this program adds the white-box checks (which kernel a
 * case dispatches, the fusions, the warming) and the error paths.
 *
 * The op list is generated from ops.def: an op without a test_<OP> function does not link, and
 * one whose function compares nothing fails. This file holds main and the ops one by one; the
 * other parts of the program, a file per concept, are listed in test_vk_ops.h. */
#include <stdio.h>
#include <string.h>

#include "test_vk_ops.h"

static const uint32_t weight_types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q8_0,
                                        RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1,
                                        RLX_DTYPE_Q2_K, RLX_DTYPE_Q3_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K,
                                        RLX_DTYPE_Q6_K, RLX_DTYPE_Q8_K};
#define N_TYPES (sizeof weight_types / sizeof weight_types[0])

static int64_t block_of(uint32_t type) { return rlx_dtype_get(type)->block_size; }

/* ---- one function per op ---- */

void test_INPUT(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_graph_mark_output(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 7, 0), 1.0f), "x");
    rlx_graph_mark_output(t.g, vkt_input_ids(&t, &g_rng, 5, -3, 1000), "ids");
    vkt_compare1(RLX_OP_INPUT, "f32 [5,7] and i32 [5]", &t, 5);
    vkt_graph_free(&t);
}

/* A weight read as an f32 operand: decoded once at compile on Vulkan. */
void test_WEIGHT(void) {
    for (size_t k = 0; k < N_TYPES; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        int64_t cols = block_of(weight_types[k]) > 1 ? 256 : 37;
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, cols, 0), 1.0f);
        rlx_graph_mark_output(t.g, rlx_add(t.g, x, vkt_graph_weight(&t, &g_rng, weight_types[k], 2, 3, cols, 0)), "y");
        char label[64];
        snprintf(label, sizeof label, "%s [3,%lld] as add operand", tname(weight_types[k]), (long long)cols);
        vkt_compare1(RLX_OP_WEIGHT, label, &t, 3);
        vkt_graph_free(&t);
    }
}

void test_KV_CACHE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    t.kv = (rlx_state_spec){.n_layer = 2, .page_size = 1, .n_pages = 16, .n_head_kv = 2, .head_dim = 4};
    rlx_node cache = rlx_kv_cache(t.g, 1, true, 12, 2, 4);
    rlx_node w = rlx_kv_write(t.g, cache, vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 2, 4), 1.0f));
    rlx_graph_mark_output(t.g, cache, "cache");
    rlx_graph_mark_output(t.g, w, "written");
    vkt_step steps[] = {{0, 3}, {3, 2}, {9, 3}};
    vkt_compare(RLX_OP_KV_CACHE, "layer 1 V, cap 12 of 16", &t, steps, 3, false, TOL_F32);
    vkt_graph_free(&t);
}

void test_KV_WRITE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    t.kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = 8, .n_head_kv = 3, .head_dim = 5};
    rlx_node w =
        rlx_kv_write(t.g, rlx_kv_cache(t.g, 0, false, 8, 3, 5), vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 3, 5), 2.0f));
    rlx_graph_mark_output(t.g, w, "cache");
    vkt_step steps[] = {{0, 3}, {3, 1}, {4, 2}, {6, 2}};
    vkt_compare(RLX_OP_KV_WRITE, "H_kv 3, Dh 5, cap 8", &t, steps, 4, false, TOL_F32);
    vkt_expect_run_error(&t, (vkt_step){7, 2}, RLX_ERR_INVALID_ARGUMENT, "exceed the cache capacity");
    vkt_graph_free(&t);
}

void test_EMBED(void) {
    for (size_t k = 0; k < N_TYPES; k++) {
        uint32_t type = weight_types[k];
        int64_t dims[2] = {256, block_of(type) > 1 ? 512 : 97};
        for (int d = 0; d < 2; d++) {
            vkt_graph t;
            vkt_graph_init(&t);
            rlx_node ids = vkt_input_ids(&t, &g_rng, 9, 0, 36);
            ((int32_t *)t.in[0])[0] = 0;
            ((int32_t *)t.in[0])[1] = 36;
            ((int32_t *)t.in[0])[8] = 1000; /* padding row: past n_tokens, never looked up */
            rlx_graph_mark_output(t.g, rlx_embed(t.g, vkt_graph_weight(&t, &g_rng, type, 2, 37, dims[d], 0), ids), "e");
            char label[64];
            snprintf(label, sizeof label, "%s [37,%lld], 8 of 9 ids", tname(type), (long long)dims[d]);
            vkt_compare1(RLX_OP_EMBED, label, &t, 8);
            vkt_graph_free(&t);
        }
    }
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node ids = vkt_input_ids(&t, &g_rng, 3, 0, 10);
    ((int32_t *)t.in[0])[1] = 11;
    rlx_graph_mark_output(t.g, rlx_embed(t.g, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q8_0, 2, 11, 32, 0), ids), "e");
    vkt_expect_run_error(&t, (vkt_step){0, 3}, RLX_ERR_INVALID_ARGUMENT, "token id 11");
    vkt_graph_free(&t);
}

static void matmul_case(uint32_t type, int64_t k, int64_t m, int64_t rows, int32_t n_tokens, bool rank3) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = rank3 ? vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 2, k), 1.0f)
                       : vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, type, 2, m, k, 0)), "y");
    char label[64];
    snprintf(label, sizeof label, "%s k=%lld m=%lld rows=%lld%s n_tok=%d", tname(type), (long long)k, (long long)m,
             (long long)rows, rank3 ? "x2" : "", n_tokens);
    vkt_compare1(RLX_OP_MATMUL, label, &t, n_tokens);
    vkt_graph_free(&t);
}

/* A matmul that must run on shaders/matvec.comp. */
static void matvec_case(uint32_t type, int64_t k, int64_t m, int64_t rows, int32_t n_tokens) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, type, 2, m, k, 0)), "y");
    char label[64];
    snprintf(label, sizeof label, "matvec %s k=%lld m=%lld rows=%lld n_tok=%d", tname(type), (long long)k,
             (long long)m, (long long)rows, n_tokens);
    T_CHECK(vkt_dispatches(&t, RLX_VK_KERNEL_matvec), "%s: the program does not dispatch matvec", label);
    vkt_compare1(RLX_OP_MATMUL, label, &t, n_tokens);
    vkt_graph_free(&t);
}

void test_MATMUL(void) {
    for (size_t i = 0; i < N_TYPES; i++) {
        uint32_t type = weight_types[i];
        int64_t b = block_of(type);
        int64_t ks[3] = {b > 1 ? b : 7, b > 1 ? 2 * b : 97, b > 1 ? 3 * b : 513};
        matmul_case(type, ks[0], 5, 1, 1, false);
        matmul_case(type, ks[1], 67, 3, 3, false);
        matmul_case(type, ks[2], 130, 17, 13, false);
        matmul_case(type, ks[1], 33, 3, 2, true);
        matmul_case(type, b > 1 ? 2 * b : 96, 70, 67, 61, false); /* tiled: tails in rows and weight rows */
    }
    matmul_case(RLX_DTYPE_Q4_K, 512, 130, 24, 9, true);
    matmul_case(RLX_DTYPE_F32, 1, 1, 1, 1, false);
    /* shaders/matvec.comp, per type: a short k (one loop trip; threads per row not a power of two) and
     * a long one (two trips, the second partly past the row); weight rows not a multiple of a
     * workgroup's; 1, 2, 7 and 12 rows of x (12: two workgroups of 8); Q8_0 and Q6_K with an odd
     * number of blocks per row (every other row 2-aligned) */
    static const struct {
        uint32_t type;
        int64_t k_short, k_long;
    } fast[] = {{RLX_DTYPE_F32, 148, 600},   {RLX_DTYPE_F16, 296, 1200},  {RLX_DTYPE_BF16, 296, 1200},
                {RLX_DTYPE_Q8_0, 224, 1184}, {RLX_DTYPE_Q4_K, 768, 4352}, {RLX_DTYPE_Q6_K, 256, 1280}};
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++) {
        matvec_case(fast[i].type, fast[i].k_short, 130, 1, 1);
        matvec_case(fast[i].type, fast[i].k_short, 19, 7, 5);
        matvec_case(fast[i].type, fast[i].k_long, 37, 2, 2);
        matvec_case(fast[i].type, fast[i].k_long, 37, 12, 11);
    }
    /* a GPU's plan for 5+ rows: 2 x rows per workgroup (vk_lower.c MATVEC_GPU_NX), so 7 and 12 rows
     * take 4 and 6 groups of x rows */
    rlx_vk_options o = g_opts;
    o.matvec_nx = 2;
    vkt_set_options(g_vk, &o);
    matvec_case(RLX_DTYPE_F16, 1200, 37, 7, 7);
    matvec_case(RLX_DTYPE_Q4_K, 768, 19, 12, 11);
    /* a GPU's plan for long plain-type decode rows: one unit per thread and trip (vk_lower.c
     * MATVEC_GPU_ONE_UNIT_K), here forced on every device */
    o = g_opts;
    o.matvec_unr = 1;
    vkt_set_options(g_vk, &o);
    matvec_case(RLX_DTYPE_F16, 1200, 37, 1, 1);
    matvec_case(RLX_DTYPE_BF16, 296, 130, 2, 2);
    matvec_case(RLX_DTYPE_F32, 600, 19, 1, 1);
    vkt_set_options(g_vk, &g_opts);
    /* w an F32 activation: x [5, 40] @ y[9, 40]^T */
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 40, 0), 1.0f),
             y = vkt_input_f32(&t, &g_rng, vkt_shape(2, 9, 40, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, y), "xyT");
    vkt_compare1(RLX_OP_MATMUL, "activation w [9,40]", &t, 5);
    vkt_graph_free(&t);
}

void test_RMS_NORM(void) {
    struct {
        int32_t rank;
        int64_t d0, d1, d2;
        uint32_t wtype;
        float eps;
    } cases[] = {{2, 1, 7, 0, RLX_DTYPE_F32, 1e-6f},
                 {2, 3, 256, 0, RLX_DTYPE_F32, 1e-5f},
                 {3, 2, 3, 1000, RLX_DTYPE_F32, 1e-6f},
                 {2, 4, 96, 0, RLX_DTYPE_F16, 1e-6f}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        int64_t d = cases[k].rank == 2 ? cases[k].d1 : cases[k].d2;
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(cases[k].rank, cases[k].d0, cases[k].d1, cases[k].d2), 3.0f);
        rlx_graph_mark_output(
            t.g, rlx_rms_norm(t.g, x, vkt_graph_weight(&t, &g_rng, cases[k].wtype, 1, d, 0, 0), cases[k].eps), "y");
        char label[64];
        snprintf(label, sizeof label, "rows of %lld, w %s, eps %g", (long long)d, tname(cases[k].wtype),
                 (double)cases[k].eps);
        vkt_compare1(RLX_OP_RMS_NORM, label, &t, (int32_t)cases[k].d0);
        vkt_graph_free(&t);
    }
}

void test_ROPE(void) {
    struct {
        int64_t n, h, dh;
        int32_t n_rot;
        rlx_rope_layout layout;
        float base;
        bool ff;
        int32_t n_past;
    } cases[] = {
        {3, 4, 64, 64, RLX_ROPE_LAYOUT_NEOX, 1e6f, false, 0},
        {3, 2, 64, 64, RLX_ROPE_LAYOUT_NORMAL, 1e4f, false, 5},
        {5, 2, 10, 6, RLX_ROPE_LAYOUT_NEOX, 1e4f, false, 2},
        {2, 3, 11, 8, RLX_ROPE_LAYOUT_NORMAL, 1e4f, false, 0},
        {4, 2, 64, 64, RLX_ROPE_LAYOUT_NORMAL, 5e5f, true, 7},
        {2, 4, 128, 128, RLX_ROPE_LAYOUT_NEOX, 1e6f, false, 4000},
        {1, 2, 64, 32, RLX_ROPE_LAYOUT_NEOX, 1e4f, true, 30000},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, cases[k].n, cases[k].h, cases[k].dh), 2.0f);
        rlx_node ff = RLX_NO_NODE;
        if (cases[k].ff) {
            ff = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, cases[k].n_rot / 2, 0, 0);
            float *f = (float *)t.w[t.nw - 1].data;
            for (int32_t i = 0; i < cases[k].n_rot / 2; i++) f[i] = vkt_uniform(&g_rng, 1.0f, 40.0f);
        }
        rlx_rope_attrs a = {cases[k].layout, cases[k].n_rot, cases[k].base};
        rlx_graph_mark_output(t.g, rlx_rope(t.g, x, ff, a), "y");
        char label[64];
        snprintf(label, sizeof label, "%s [%lld,%lld,%lld] rot %d%s n_past %d",
                 cases[k].layout == RLX_ROPE_LAYOUT_NEOX ? "neox" : "normal", (long long)cases[k].n,
                 (long long)cases[k].h, (long long)cases[k].dh, cases[k].n_rot, cases[k].ff ? " ff" : "",
                 cases[k].n_past);
        vkt_step st = {cases[k].n_past, (int32_t)cases[k].n};
        vkt_compare(RLX_OP_ROPE, label, &t, &st, 1, true, TOL_F32);
        vkt_graph_free(&t);
    }
}

/* Attention straight on activations (the naive path: keys are this run's rows). */
static void attention_direct(int64_t n, int64_t h, int64_t hkv, int64_t dh, int64_t dv, int32_t window,
                             int32_t n_tokens) {
    vkt_graph t;
    vkt_graph_init(&t);
    vkt_attention_direct(&t, &g_rng, n, h, hkv, dh, dv, window);
    char label[64];
    snprintf(label, sizeof label, "direct n=%lld H %lld/%lld Dh %lld Dv %lld win %d", (long long)n, (long long)h,
             (long long)hkv, (long long)dh, (long long)dv, window);
    vkt_compare1(RLX_OP_ATTENTION, label, &t, n_tokens);
    vkt_graph_free(&t);
}

/* Attention over the session cache: prefill then decode steps, as the runners do. */
void attention_cached(int64_t h, int64_t hkv, int64_t dh, int32_t window, int64_t rows, int64_t cap) {
    vkt_graph t;
    vkt_graph_init(&t);
    vkt_attention_cached(&t, &g_rng, rows, cap, h, hkv, dh, window);
    vkt_step steps[] = {{0, (int32_t)rows}, {(int32_t)rows, 1}, {(int32_t)rows + 1, (int32_t)(rows > 1 ? 2 : 1)},
                    {(int32_t)(cap - rows), (int32_t)rows}};
    char label[64];
    snprintf(label, sizeof label, "cached rows %lld cap %lld H %lld/%lld Dh %lld win %d", (long long)rows,
             (long long)cap, (long long)h, (long long)hkv, (long long)dh, window);
    vkt_compare(RLX_OP_ATTENTION, label, &t, steps, 4, true, TOL_F32);
    vkt_graph_free(&t);
}

void attention_cached_cases(void) {
    attention_cached(4, 2, 64, 0, 17, 96);
    attention_cached(4, 1, 32, 8, 3, 200);
    attention_cached(2, 2, 16, 0, 1, 300);
    attention_cached(4, 2, 64, 0, 1, 1100);  /* decode over a long cache: key splits */
    attention_cached(4, 4, 32, 100, 3, 2000); /* splits with a window: most ranges empty */
}

void test_ATTENTION(void) {
    attention_direct(1, 4, 2, 64, 64, 0, 1);
    attention_direct(3, 4, 1, 8, 6, 0, 3);
    attention_direct(17, 4, 2, 64, 64, 3, 13);
    attention_direct(70, 2, 2, 5, 7, 0, 70);
    attention_direct(130, 8, 2, 32, 32, 0, 129);
    attention_cached_cases();
}

static void elementwise_cases(rlx_op op, float a) {
    struct {
        int32_t rank;
        int64_t d0, d1, d2;
        int32_t n_tokens;
    } cases[] = {{1, 1, 0, 0, 1}, {2, 7, 13, 0, 7}, {3, 3, 5, 97, 2}, {2, 9, 1000, 0, 6}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_shape s = vkt_shape(cases[k].rank, cases[k].d0, cases[k].d1, cases[k].d2);
        rlx_node x = vkt_input_f32(&t, &g_rng, s, a), y;
        switch (op) {
        case RLX_OP_ADD: y = rlx_add(t.g, x, vkt_input_f32(&t, &g_rng, s, a)); break;
        case RLX_OP_MUL: y = rlx_mul(t.g, x, vkt_input_f32(&t, &g_rng, s, a)); break;
        case RLX_OP_SCALE: y = rlx_scale(t.g, x, k % 2 ? -2.0f : 0.37f); break;
        case RLX_OP_SILU: y = rlx_silu(t.g, x); break;
        case RLX_OP_GELU_TANH: y = rlx_gelu_tanh(t.g, x); break;
        case RLX_OP_SOFTMAX: y = rlx_softmax(t.g, x); break;
        default: y = rlx_argmax(t.g, x); break;
        }
        rlx_graph_mark_output(t.g, y, "y");
        char label[64];
        snprintf(label, sizeof label, "rank %d [%lld,%lld,%lld] |x|<=%g n_tok %d", cases[k].rank,
                 (long long)cases[k].d0, (long long)cases[k].d1, (long long)cases[k].d2, (double)a,
                 cases[k].n_tokens);
        vkt_compare1(op, label, &t, cases[k].n_tokens);
        vkt_graph_free(&t);
    }
}

void test_ADD(void) { elementwise_cases(RLX_OP_ADD, 4.0f); }
void test_MUL(void) { elementwise_cases(RLX_OP_MUL, 4.0f); }
void test_SCALE(void) { elementwise_cases(RLX_OP_SCALE, 4.0f); }
void test_SILU(void) {
    elementwise_cases(RLX_OP_SILU, 1.0f);
    elementwise_cases(RLX_OP_SILU, 100.0f);
}
void test_GELU_TANH(void) {
    elementwise_cases(RLX_OP_GELU_TANH, 1.0f);
    elementwise_cases(RLX_OP_GELU_TANH, 100.0f);
}
void test_SOFTMAX(void) {
    elementwise_cases(RLX_OP_SOFTMAX, 1.0f);
    elementwise_cases(RLX_OP_SOFTMAX, 30.0f);
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_graph_mark_output(t.g, rlx_softmax(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 2, 5000, 0), 10.0f)), "p");
    vkt_compare1(RLX_OP_SOFTMAX, "[2,5000] |x|<=10", &t, 2);
    vkt_graph_free(&t);
}

void test_ARGMAX(void) {
    elementwise_cases(RLX_OP_ARGMAX, 1.0f);
    /* ties: the maximum appears twice; the first index wins */
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 4, 777, 0), 1.0f);
    float *v = t.in[0];
    for (int r = 0; r < 4; r++) {
        v[r * 777 + 5 + 100 * r] = 2.0f;
        v[r * 777 + 700 - 50 * r] = 2.0f;
    }
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, x), "i");
    vkt_compare1(RLX_OP_ARGMAX, "[4,777] with tied maxima", &t, 4);
    vkt_graph_free(&t);
    /* a vocabulary row (the greedy head's shape, one large workgroup): ties in different trips and
     * strides of one invocation, and past the last whole trip */
    const int V = 151936;
    vkt_graph_init(&t);
    x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, V, 0), 1.0f);
    v = t.in[0];
    v[V - 3] = v[70001] = v[4099] = 3.0f;
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, x), "i");
    vkt_compare1(RLX_OP_ARGMAX, "[1,151936] with tied maxima", &t, 1);
    vkt_graph_free(&t);
    /* rows read as vec4 (cols % 4 == 0): ties inside one vec4 and across vec4s of one trip */
    vkt_graph_init(&t);
    x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 2048, 0), 1.0f);
    v = t.in[0];
    for (int r = 0; r < 3; r++) v[r * 2048 + 10 + r] = v[r * 2048 + 9 + r] = v[r * 2048 + 1500 - r] = 2.0f;
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, x), "i");
    vkt_compare1(RLX_OP_ARGMAX, "[3,2048] with tied maxima", &t, 3);
    vkt_graph_free(&t);
}

void test_RESHAPE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 6, 4, 0), 1.0f);
    rlx_node r = rlx_reshape(t.g, x, vkt_shape(3, 6, 2, 2));
    rlx_graph_mark_output(t.g, r, "view");
    rlx_graph_mark_output(t.g, rlx_scale(t.g, rlx_reshape(t.g, rlx_silu(t.g, r), vkt_shape(2, 6, 4, 0)), 3.0f), "y");
    vkt_compare1(RLX_OP_RESHAPE, "[6,4] -> [6,2,2] -> [6,4]", &t, 6);
    vkt_graph_free(&t);
}

void test_LAST_ROW(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 5, 3, 7), 1.0f);
    rlx_graph_mark_output(t.g, rlx_last_row(t.g, x), "f32");
    rlx_graph_mark_output(t.g, rlx_last_row(t.g, rlx_argmax(t.g, rlx_reshape(t.g, x, vkt_shape(2, 5, 21, 0)))), "i32");
    vkt_step steps[] = {{0, 3}, {0, 5}, {4, 1}};
    vkt_compare(RLX_OP_LAST_ROW, "[5,3,7] f32 and i32", &t, steps, 3, true, TOL_F32);
    vkt_graph_free(&t);
}

void test_GATHER_ROWS(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 5, 3, 7), 1.0f);
    rlx_node idx = vkt_input_ids(&t, &g_rng, 6, -2, 7); /* some past the valid rows: 0 */
    rlx_graph_mark_output(t.g, rlx_gather_rows(t.g, rlx_reshape(t.g, x, vkt_shape(2, 5, 21, 0)), idx), "rows");
    vkt_step steps[] = {{0, 3}, {0, 5}, {4, 1}};
    vkt_compare(RLX_OP_GATHER_ROWS, "[5,21] by 6 indices in [-2, 7)", &t, steps, 3, true, TOL_F32);
    vkt_graph_free(&t);
}


void test_L2_NORM(void) {
    int64_t cols[2] = {16, 1500};
    for (int k = 0; k < 2; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 2, cols[k]), 1.0f);
        rlx_graph_mark_output(t.g, rlx_l2_norm(t.g, x, 1e-6f), "y");
        vkt_compare1(RLX_OP_L2_NORM, cols[k] < 100 ? "[3,2,16]" : "[3,2,1500]", &t, 2);
        vkt_graph_free(&t);
    }
}

void test_SIGMOID(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_graph_mark_output(t.g, rlx_sigmoid(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 37, 0), 20.0f)), "y");
    vkt_compare1(RLX_OP_SIGMOID, "[3,37] in [-20,20]", &t, 3);
    vkt_graph_free(&t);
}

void test_SCALE_ROWS(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 19, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_scale_rows(t.g, x, vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 1, 0), 1.0f)), "y");
    vkt_compare1(RLX_OP_SCALE_ROWS, "[3,19] by [3,1]", &t, 3);
    vkt_graph_free(&t);
}

void test_SLICE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 2, 16), 1.0f);
    rlx_graph_mark_output(t.g, rlx_slice(t.g, x, 3, 8), "y");
    rlx_graph_mark_output(t.g, rlx_slice(t.g, x, 0, 16), "whole");
    vkt_compare1(RLX_OP_SLICE, "[3,2,16] columns [3, 11) and all", &t, 3);
    vkt_graph_free(&t);
}

typedef void (*op_test)(void);
static const op_test op_tests[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = test_##name,
#include "ir/ops.def"
#undef RLX_OP
};

/* A weight type nothing can decode (IQ2_XXS) is refused at compile with its name. */
static void test_unsupported_type(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 2, 256, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_IQ2_XXS, 2, 4, 256, 0)), "y");
    T_ERR(vkt_compile_status(g_vk, &t), RLX_ERR_INVALID_ARGUMENT, "IQ2_XXS");
    vkt_graph_free(&t);
}

/* Weights larger than one binding are split into row parts (forced here with a small limit). */
static void test_split_weights(void) {
    rlx_vk_options o = g_opts;
    o.max_binding_bytes = 8192;
    rlx_backend *small = vkt_backend_with(&o);
    rlx_backend *saved = g_vk;
    g_vk = small;
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node ids = vkt_input_ids(&t, &g_rng, 4, 0, 299);
    ((int32_t *)t.in[0])[3] = 299;
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 256, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_embed(t.g, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q8_0, 2, 300, 256, 0), ids), "e");
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q4_K, 2, 300, 256, 0)), "y");
    vkt_compare1(RLX_OP_MATMUL, "weights split in parts of <= 8 KiB", &t, 3);
    vkt_graph_free(&t);
    g_vk = saved;
    rlx_backend_destroy(small);
}

/* test_vk_ops: every op against the CPU reference, the fusions, with F32 pools. test_vk_ops kv-f16:
 * the kernels that touch the pools again with F16 pools (test_kv_f16; its own ctest, run beside). */
int main(int argc, char **argv) {
    if (!vkt_parity_open()) return 1;
    if (argc > 1 && strcmp(argv[1], "kv-f16") == 0) {
        test_kv_f16();
        vkt_parity_close();
        return t_summary("test_vk_ops kv-f16");
    }
    for (int op = 0; op < RLX_OP_COUNT; op++) {
        printf("%s\n", rlx_op_name((rlx_op)op));
        op_tests[op]();
        T_CHECK(g_cases[op] > 0, "op %s: no parity case compared anything",
                rlx_op_name((rlx_op)op));
    }
    printf("fusions\n");
    test_all_fusions();
    test_warm_next();
    test_unsupported_type();
    test_split_weights();
    vkt_parity_print_worst();
    vkt_parity_close();
    return t_summary("test_vk_ops");
}
