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
 * The op list is generated from ops.def: an op without a test_<OP> function does not compile, and
 * one whose function compares nothing fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/core/dtype.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_internal.h" /* white box: the kernel a matmul case dispatches */
#include "test_util.h"
#include "test_vk_util.h"

#define TOL_F32 RLX_VALIDATE_BOUND_F32 /* test-backend-ops' default max NMSE */

static const uint32_t weight_types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q8_0,
                                        RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1,
                                        RLX_DTYPE_Q2_K, RLX_DTYPE_Q3_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K,
                                        RLX_DTYPE_Q6_K, RLX_DTYPE_Q8_K};
#define N_TYPES (sizeof weight_types / sizeof weight_types[0])

/* F16 pools (test_kv_f16): the Vulkan sessions' K/V pools hold F16, the CPU reference's F32, so the
 * comparisons measure F16's rounding of K/V. u = 2^-10 bounds the relative error of one element
 * rounded to F16 (11 significant bits; round to nearest gives 2^-11, toward zero, which SPIR-V
 * allows a driver, 2^-10), so
 *  - a cache's contents (KV_CACHE, KV_WRITE outputs) are within NMSE u^2 = 9.5e-7 of f32's: 1e-6;
 *  - an output read from the cache (attention) has each score s = scale q.k off by at most
 *    u scale sum|q_i k_i| = u S (S <= 2 for these inputs: |q|, |k| <= 1 on average 1/2, scale
 *    <= 1/sqrt(dh) ... 2/sqrt(dh)), each weight by a factor e^(2 u S), and the V rows by u: a
 *    relative error within u (1 + 2 S) = 5u, NMSE (5u)^2 = 2.4e-5. The rounding errors of the dh
 *    terms of a dot product and of the keys of a sum are independent, so what is seen is far below
 *    (the printed worst); 3e-5 is the bound held. */
#define TOL_KV_F16_CACHE RLX_VALIDATE_BOUND_KV_F16_CACHE
#define TOL_KV_F16 RLX_VALIDATE_BOUND_KV_F16
static uint32_t g_kv_dtype = RLX_DTYPE_F32;

static rlx_backend *g_cpu, *g_vk;
static rlx_vk_options g_opts; /* g_vk's: the environment's (vkt_options), f32-accurate prefill */
static vkt_rng g_rng = {0x243F6A8885A308D3ull};
static double g_worst[RLX_OP_COUNT];
static int g_cases[RLX_OP_COUNT];

/* ---- running on both backends ---- */

typedef struct step {
    int32_t n_past, n_tokens;
} step;

typedef struct side {
    rlx_session *s;
    rlx_program *p;
    void *out[8];
} side;

static bool open_side(rlx_backend *b, vkt_graph *t, side *sd, int32_t n_out) {
    memset(sd, 0, sizeof *sd);
    rlx_state_spec kv = t->kv;
    if (b != g_cpu) kv.kv_dtype = g_kv_dtype;
    if (!T_OK(b->ops->session_create(b, t->w, t->nw, &kv, &sd->s))) return false;
    if (!T_OK(b->ops->compile(sd->s, t->g, &sd->p))) return false;
    for (int32_t o = 0; o < n_out; o++) {
        const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_output_node(t->g, o));
        sd->out[o] = calloc((size_t)rlx_shape_numel(&n->shape), 4);
    }
    return true;
}

static void close_side(rlx_backend *b, side *sd, int32_t n_out) {
    if (sd->p) b->ops->program_destroy(sd->p);
    if (sd->s) b->ops->session_destroy(sd->s);
    for (int32_t o = 0; o < n_out; o++) free(sd->out[o]);
}

static rlx_status run_side(rlx_backend *b, vkt_graph *t, side *sd, step st) {
    rlx_run_args a = {st.n_past, st.n_tokens, (const void *const *)t->in, (void *const *)sd->out, NULL};
    return b->ops->run(sd->p, &a);
}

/* Compares output o over its first `rows` rows of dim 0. */
static void compare_output(rlx_op op, const char *label, vkt_graph *t, int32_t o, const side *v, const side *c,
                           int64_t rows, double tol) {
    const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_output_node(t->g, o));
    int64_t numel = rlx_shape_numel(&n->shape), count = numel / n->shape.dim[0] * rows;
    g_cases[op]++;
    if (n->dtype == RLX_DTYPE_I32) {
        rlx_validate_diff d = rlx_validate_diff_i32(v->out[o], c->out[o], count);
        T_CHECK(rlx_validate_diff_within(&d, 0.0), "%s %s output %d: %lld of %lld ids differ", rlx_op_name(op), label,
                o, (long long)d.ids_differ, (long long)count);
        printf("  %-10s %-44s out %d: %lld ids, %lld differ\n", rlx_op_name(op), label, o, (long long)count,
               (long long)d.ids_differ);
        return;
    }
    if (g_kv_dtype == RLX_DTYPE_F16) {
        bool cache = n->op == RLX_OP_KV_CACHE || n->op == RLX_OP_KV_WRITE;
        double f16 = cache ? TOL_KV_F16_CACHE : TOL_KV_F16;
        if (tol < f16) tol = f16;
    }
    rlx_validate_diff d = rlx_validate_diff_f32(v->out[o], c->out[o], count);
    if (g_kv_dtype == RLX_DTYPE_F32 && d.nmse > g_worst[op]) g_worst[op] = d.nmse; /* the f32 bound's summary */
    printf("  %-10s %-44s out %d: nmse %.2e max|d| %.2e (tol %.0e)\n", rlx_op_name(op), label, o, d.nmse, d.max_abs,
           tol);
    T_CHECK(rlx_validate_diff_within(&d, tol), "%s %s output %d: nmse %.3e > %.0e (max |d| %.3e)", rlx_op_name(op),
            label, o, d.nmse, tol, d.max_abs);
}

/* Compiles t on both backends, runs the steps, compares every output after each. Outputs whose
 * dim 0 is the graph's row count compare only the first n_tokens rows when token_major. With
 * fresh, every f32 input is drawn afresh (uniform in [-1, 1]) before each step, so a program that
 * kept state between runs (matvec.comp's counters) and left the previous run's result in place
 * fails the step after. */
static void compare_runs(rlx_op op, const char *label, vkt_graph *t, const step *steps, int n_steps, bool token_major,
                         double tol, bool fresh) {
    int32_t n_out = rlx_graph_n_outputs(t->g);
    side v, c;
    bool ok_vk = open_side(g_vk, t, &v, n_out), ok_cpu = open_side(g_cpu, t, &c, n_out); /* both, always */
    bool ok = ok_vk && ok_cpu;
    int64_t static_rows = rlx_graph_n_inputs(t->g) ? rlx_graph_node(t->g, rlx_graph_input_node(t->g, 0))->shape.dim[0]
                                                    : 1;
    for (int k = 0; ok && k < n_steps; k++) {
        for (int32_t i = 0; fresh && i < rlx_graph_n_inputs(t->g); i++) {
            const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_input_node(t->g, i));
            if (n->dtype != RLX_DTYPE_F32) continue;
            for (int64_t e = 0; e < rlx_shape_numel(&n->shape); e++) ((float *)t->in[i])[e] = vkt_uniform(&g_rng, -1, 1);
        }
        if (!T_OK(run_side(g_vk, t, &v, steps[k])) || !T_OK(run_side(g_cpu, t, &c, steps[k]))) break;
        for (int32_t o = 0; o < n_out; o++) {
            const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_output_node(t->g, o));
            int64_t rows = token_major && n->shape.dim[0] == static_rows ? steps[k].n_tokens : n->shape.dim[0];
            compare_output(op, label, t, o, &v, &c, rows, tol);
        }
    }
    close_side(g_vk, &v, n_out);
    close_side(g_cpu, &c, n_out);
}

static void compare(rlx_op op, const char *label, vkt_graph *t, const step *steps, int n_steps, bool token_major,
                    double tol) {
    compare_runs(op, label, t, steps, n_steps, token_major, tol, false);
}

static void compare_fresh(rlx_op op, const char *label, vkt_graph *t, const step *steps, int n_steps) {
    compare_runs(op, label, t, steps, n_steps, true, TOL_F32, true);
}

static void compare1(rlx_op op, const char *label, vkt_graph *t, int32_t n_tokens) {
    step st = {0, n_tokens};
    compare(op, label, t, &st, 1, true, TOL_F32);
}

/* Both backends must refuse the run with the same kind of error. */
static void expect_run_error(vkt_graph *t, step st, rlx_code code, const char *needle) {
    int32_t n_out = rlx_graph_n_outputs(t->g);
    side v, c;
    bool ok_vk = open_side(g_vk, t, &v, n_out), ok_cpu = open_side(g_cpu, t, &c, n_out); /* both, always */
    if (ok_vk && ok_cpu) {
        T_ERR(run_side(g_vk, t, &v, st), code, needle);
        T_ERR(run_side(g_cpu, t, &c, st), code, needle);
    }
    close_side(g_vk, &v, n_out);
    close_side(g_cpu, &c, n_out);
}

static const char *tname(uint32_t type) { return rlx_dtype_name(type); }
static int64_t block_of(uint32_t type) { return rlx_dtype_get(type)->block_size; }

/* ---- one function per op ---- */

static void test_INPUT(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_graph_mark_output(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 7, 0), 1.0f), "x");
    rlx_graph_mark_output(t.g, vkt_input_ids(&t, &g_rng, 5, -3, 1000), "ids");
    compare1(RLX_OP_INPUT, "f32 [5,7] and i32 [5]", &t, 5);
    vkt_graph_free(&t);
}

/* A weight read as an f32 operand: decoded once at compile on Vulkan. */
static void test_WEIGHT(void) {
    for (size_t k = 0; k < N_TYPES; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        int64_t cols = block_of(weight_types[k]) > 1 ? 256 : 37;
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, cols, 0), 1.0f);
        rlx_graph_mark_output(t.g, rlx_add(t.g, x, vkt_graph_weight(&t, &g_rng, weight_types[k], 2, 3, cols, 0)), "y");
        char label[64];
        snprintf(label, sizeof label, "%s [3,%lld] as add operand", tname(weight_types[k]), (long long)cols);
        compare1(RLX_OP_WEIGHT, label, &t, 3);
        vkt_graph_free(&t);
    }
}

static void test_KV_CACHE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    t.kv = (rlx_state_spec){.n_layer = 2, .page_size = 1, .n_pages = 16, .n_head_kv = 2, .head_dim = 4};
    rlx_node cache = rlx_kv_cache(t.g, 1, true, 12, 2, 4);
    rlx_node w = rlx_kv_write(t.g, cache, vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 2, 4), 1.0f));
    rlx_graph_mark_output(t.g, cache, "cache");
    rlx_graph_mark_output(t.g, w, "written");
    step steps[] = {{0, 3}, {3, 2}, {9, 3}};
    compare(RLX_OP_KV_CACHE, "layer 1 V, cap 12 of 16", &t, steps, 3, false, TOL_F32);
    vkt_graph_free(&t);
}

static void test_KV_WRITE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    t.kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = 8, .n_head_kv = 3, .head_dim = 5};
    rlx_node w =
        rlx_kv_write(t.g, rlx_kv_cache(t.g, 0, false, 8, 3, 5), vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 3, 5), 2.0f));
    rlx_graph_mark_output(t.g, w, "cache");
    step steps[] = {{0, 3}, {3, 1}, {4, 2}, {6, 2}};
    compare(RLX_OP_KV_WRITE, "H_kv 3, Dh 5, cap 8", &t, steps, 4, false, TOL_F32);
    expect_run_error(&t, (step){7, 2}, RLX_ERR_INVALID_ARGUMENT, "exceed the cache capacity");
    vkt_graph_free(&t);
}

static void test_EMBED(void) {
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
            compare1(RLX_OP_EMBED, label, &t, 8);
            vkt_graph_free(&t);
        }
    }
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node ids = vkt_input_ids(&t, &g_rng, 3, 0, 10);
    ((int32_t *)t.in[0])[1] = 11;
    rlx_graph_mark_output(t.g, rlx_embed(t.g, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q8_0, 2, 11, 32, 0), ids), "e");
    expect_run_error(&t, (step){0, 3}, RLX_ERR_INVALID_ARGUMENT, "token id 11");
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
    compare1(RLX_OP_MATMUL, label, &t, n_tokens);
    vkt_graph_free(&t);
}

/* How many of t's Vulkan program's dispatches `match` accepts. */
static size_t vk_count_matching(vkt_graph *t, bool (*match)(const vk_dispatch *d, rlx_vk_kernel k), rlx_vk_kernel k) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    size_t n = 0;
    rlx_state_spec kv = t->kv;
    kv.kv_dtype = g_kv_dtype;
    if (T_OK(g_vk->ops->session_create(g_vk, t->w, t->nw, &kv, &s)) && T_OK(g_vk->ops->compile(s, t->g, &p)))
        for (size_t i = 0; i < p->run.n; i++) n += match(&p->run.items[i], k);
    if (p) g_vk->ops->program_destroy(p);
    if (s) g_vk->ops->session_destroy(s);
    return n;
}

/* The kernel that does k's work on F16 pools (shaders/kernels.def), or k. */
static rlx_vk_kernel f16_twin(rlx_vk_kernel k) {
    switch (k) {
    case RLX_VK_KERNEL_kv_write: return RLX_VK_KERNEL_kv_write_f16;
    case RLX_VK_KERNEL_rope: return RLX_VK_KERNEL_rope_f16;
    case RLX_VK_KERNEL_rms_norm: return RLX_VK_KERNEL_rms_norm_f16;
    case RLX_VK_KERNEL_attention: return RLX_VK_KERNEL_attention_f16;
    case RLX_VK_KERNEL_attention_step: return RLX_VK_KERNEL_attention_step_f16;
    case RLX_VK_KERNEL_attention_step_fixed: return RLX_VK_KERNEL_attention_step_fixed_f16;
    case RLX_VK_KERNEL_attention_prefill: return RLX_VK_KERNEL_attention_prefill_f16;
    default: return k;
    }
}

/* Kernel k or, with F16 pools, its twin. */
static bool of_kernel(const vk_dispatch *d, rlx_vk_kernel k) {
    return d->pipe->kernel == k || (g_kv_dtype == RLX_DTYPE_F16 && d->pipe->kernel == f16_twin(k));
}

/* Kernel k itself, not its twin. */
static bool of_kernel_only(const vk_dispatch *d, rlx_vk_kernel k) { return d->pipe->kernel == k; }

/* A matvec that reads a decode attention's caches into L2 (matvec.comp WARM: bindings 9 and 10 read). */
static bool warming(const vk_dispatch *d, rlx_vk_kernel k) {
    (void)k;
    bool mv = d->pipe->kernel == RLX_VK_KERNEL_matvec || d->pipe->kernel == RLX_VK_KERNEL_matvec_stream;
    return mv && (d->reads & 0x600u) == 0x600u;
}

/* How many dispatches of kernel k t's Vulkan program has. */
static size_t vk_dispatch_count(vkt_graph *t, rlx_vk_kernel k) { return vk_count_matching(t, of_kernel, k); }

/* How many of t's matvec dispatches warm a decode attention's caches. */
static size_t vk_warm_count(vkt_graph *t) { return vk_count_matching(t, warming, RLX_VK_KERNEL_matvec); }

/* Whether t's Vulkan program dispatches kernel k. */
static bool vk_dispatches(vkt_graph *t, rlx_vk_kernel k) { return vk_dispatch_count(t, k) > 0; }

/* A matmul that must run on shaders/matvec.comp. */
static void matvec_case(uint32_t type, int64_t k, int64_t m, int64_t rows, int32_t n_tokens) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, type, 2, m, k, 0)), "y");
    char label[64];
    snprintf(label, sizeof label, "matvec %s k=%lld m=%lld rows=%lld n_tok=%d", tname(type), (long long)k,
             (long long)m, (long long)rows, n_tokens);
    T_CHECK(vk_dispatches(&t, RLX_VK_KERNEL_matvec), "%s: the program does not dispatch matvec", label);
    compare1(RLX_OP_MATMUL, label, &t, n_tokens);
    vkt_graph_free(&t);
}

static void test_MATMUL(void) {
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
    compare1(RLX_OP_MATMUL, "activation w [9,40]", &t, 5);
    vkt_graph_free(&t);
}

static void test_RMS_NORM(void) {
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
        compare1(RLX_OP_RMS_NORM, label, &t, (int32_t)cases[k].d0);
        vkt_graph_free(&t);
    }
}

static void test_ROPE(void) {
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
        step st = {cases[k].n_past, (int32_t)cases[k].n};
        compare(RLX_OP_ROPE, label, &t, &st, 1, true, TOL_F32);
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
    compare1(RLX_OP_ATTENTION, label, &t, n_tokens);
    vkt_graph_free(&t);
}

/* Attention over the session cache: prefill then decode steps, as the runners do. */
static void attention_cached(int64_t h, int64_t hkv, int64_t dh, int32_t window, int64_t rows, int64_t cap) {
    vkt_graph t;
    vkt_graph_init(&t);
    vkt_attention_cached(&t, &g_rng, rows, cap, h, hkv, dh, window);
    step steps[] = {{0, (int32_t)rows}, {(int32_t)rows, 1}, {(int32_t)rows + 1, (int32_t)(rows > 1 ? 2 : 1)},
                    {(int32_t)(cap - rows), (int32_t)rows}};
    char label[64];
    snprintf(label, sizeof label, "cached rows %lld cap %lld H %lld/%lld Dh %lld win %d", (long long)rows,
             (long long)cap, (long long)h, (long long)hkv, (long long)dh, window);
    compare(RLX_OP_ATTENTION, label, &t, steps, 4, true, TOL_F32);
    vkt_graph_free(&t);
}

static void attention_cached_cases(void) {
    attention_cached(4, 2, 64, 0, 17, 96);
    attention_cached(4, 1, 32, 8, 3, 200);
    attention_cached(2, 2, 16, 0, 1, 300);
    attention_cached(4, 2, 64, 0, 1, 1100);  /* decode over a long cache: key splits */
    attention_cached(4, 4, 32, 100, 3, 2000); /* splits with a window: most ranges empty */
}

static void test_ATTENTION(void) {
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
        compare1(op, label, &t, cases[k].n_tokens);
        vkt_graph_free(&t);
    }
}

static void test_ADD(void) { elementwise_cases(RLX_OP_ADD, 4.0f); }
static void test_MUL(void) { elementwise_cases(RLX_OP_MUL, 4.0f); }
static void test_SCALE(void) { elementwise_cases(RLX_OP_SCALE, 4.0f); }
static void test_SILU(void) {
    elementwise_cases(RLX_OP_SILU, 1.0f);
    elementwise_cases(RLX_OP_SILU, 100.0f);
}
static void test_GELU_TANH(void) {
    elementwise_cases(RLX_OP_GELU_TANH, 1.0f);
    elementwise_cases(RLX_OP_GELU_TANH, 100.0f);
}
static void test_SOFTMAX(void) {
    elementwise_cases(RLX_OP_SOFTMAX, 1.0f);
    elementwise_cases(RLX_OP_SOFTMAX, 30.0f);
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_graph_mark_output(t.g, rlx_softmax(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 2, 5000, 0), 10.0f)), "p");
    compare1(RLX_OP_SOFTMAX, "[2,5000] |x|<=10", &t, 2);
    vkt_graph_free(&t);
}

static void test_ARGMAX(void) {
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
    compare1(RLX_OP_ARGMAX, "[4,777] with tied maxima", &t, 4);
    vkt_graph_free(&t);
    /* a vocabulary row (the greedy head's shape, one large workgroup): ties in different trips and
     * strides of one invocation, and past the last whole trip */
    const int V = 151936;
    vkt_graph_init(&t);
    x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, V, 0), 1.0f);
    v = t.in[0];
    v[V - 3] = v[70001] = v[4099] = 3.0f;
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, x), "i");
    compare1(RLX_OP_ARGMAX, "[1,151936] with tied maxima", &t, 1);
    vkt_graph_free(&t);
    /* rows read as vec4 (cols % 4 == 0): ties inside one vec4 and across vec4s of one trip */
    vkt_graph_init(&t);
    x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 2048, 0), 1.0f);
    v = t.in[0];
    for (int r = 0; r < 3; r++) v[r * 2048 + 10 + r] = v[r * 2048 + 9 + r] = v[r * 2048 + 1500 - r] = 2.0f;
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, x), "i");
    compare1(RLX_OP_ARGMAX, "[3,2048] with tied maxima", &t, 3);
    vkt_graph_free(&t);
}

static void test_RESHAPE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 6, 4, 0), 1.0f);
    rlx_node r = rlx_reshape(t.g, x, vkt_shape(3, 6, 2, 2));
    rlx_graph_mark_output(t.g, r, "view");
    rlx_graph_mark_output(t.g, rlx_scale(t.g, rlx_reshape(t.g, rlx_silu(t.g, r), vkt_shape(2, 6, 4, 0)), 3.0f), "y");
    compare1(RLX_OP_RESHAPE, "[6,4] -> [6,2,2] -> [6,4]", &t, 6);
    vkt_graph_free(&t);
}

static void test_LAST_ROW(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 5, 3, 7), 1.0f);
    rlx_graph_mark_output(t.g, rlx_last_row(t.g, x), "f32");
    rlx_graph_mark_output(t.g, rlx_last_row(t.g, rlx_argmax(t.g, rlx_reshape(t.g, x, vkt_shape(2, 5, 21, 0)))), "i32");
    step steps[] = {{0, 3}, {0, 5}, {4, 1}};
    compare(RLX_OP_LAST_ROW, "[5,3,7] f32 and i32", &t, steps, 3, true, TOL_F32);
    vkt_graph_free(&t);
}

static void test_GATHER_ROWS(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 5, 3, 7), 1.0f);
    rlx_node idx = vkt_input_ids(&t, &g_rng, 6, -2, 7); /* some past the valid rows: 0 */
    rlx_graph_mark_output(t.g, rlx_gather_rows(t.g, rlx_reshape(t.g, x, vkt_shape(2, 5, 21, 0)), idx), "rows");
    step steps[] = {{0, 3}, {0, 5}, {4, 1}};
    compare(RLX_OP_GATHER_ROWS, "[5,21] by 6 indices in [-2, 7)", &t, steps, 3, true, TOL_F32);
    vkt_graph_free(&t);
}

static void test_MOE_ROUTE(void) {
    struct {
        int64_t n, e;
        int32_t k;
        bool norm;
    } cases[] = {{5, 4, 2, true},  {5, 4, 2, false},   {3, 60, 4, true},
                 {1, 8, 1, false}, {2, 128, 8, true},  {2, 256, 8, true}, {4, 300, 3, false},
                 {2, 256, 2, true}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, cases[c].n, cases[c].e, 0), 3.0f);
        float *v = t.in[0];
        if (c == 0) v[1] = v[3] = 5.0f; /* ties between experts 1 and 3 */
        if (c == 7) /* top 2 of a three-way tie, held by different invocations and subgroups: the lower indices */
            v[5] = v[70] = v[200] = v[256 + 9] = v[256 + 130] = v[256 + 131] = 9.0f;
        rlx_graph_mark_output(t.g, rlx_moe_route(t.g, x, cases[c].k, cases[c].norm), "r");
        char label[64];
        snprintf(label, sizeof label, "[%lld,%lld] top %d%s", (long long)cases[c].n, (long long)cases[c].e,
                 cases[c].k, cases[c].norm ? " norm" : "");
        compare1(RLX_OP_MOE_ROUTE, label, &t, (int32_t)cases[c].n);
        vkt_graph_free(&t);
    }
}

static void moe_case(uint32_t type, int64_t n, int64_t e, int64_t f, int64_t d, bool dense_route) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, n, d, 0), 1.0f), route;
    if (dense_route) {
        route = vkt_input_f32(&t, &g_rng, vkt_shape(2, n, e, 0), 1.0f);
    } else {
        route = rlx_moe_route(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, n, e, 0), 2.0f), 2, true);
    }
    rlx_node gate = vkt_graph_weight(&t, &g_rng, type, 3, e, f, d), up = vkt_graph_weight(&t, &g_rng, type, 3, e, f, d);
    rlx_node down = vkt_graph_weight(&t, &g_rng, type, 3, e, d, f);
    rlx_graph_mark_output(t.g, rlx_moe_ffn(t.g, x, route, gate, up, down), "y");
    char label[64];
    snprintf(label, sizeof label, "%s n %lld E %lld F %lld D %lld%s", tname(type), (long long)n, (long long)e,
             (long long)f, (long long)d, dense_route ? " dense" : " top2");
    compare1(RLX_OP_MOE_FFN, label, &t, (int32_t)(n > 1 ? n - 1 : n));
    vkt_graph_free(&t);
}

static void test_MOE_FFN(void) {
    moe_case(RLX_DTYPE_F32, 3, 4, 64, 32, false);
    moe_case(RLX_DTYPE_F16, 5, 4, 32, 96, false);
    moe_case(RLX_DTYPE_Q8_0, 2, 6, 64, 64, true);
    moe_case(RLX_DTYPE_Q4_K, 3, 4, 256, 256, false);
    moe_case(RLX_DTYPE_Q6_K, 1, 8, 256, 256, false);
}

/* Fused patterns (runtime/vk_fuse.c): the CPU computes them op by op, so parity checks the fusion. */
static void test_fusions(void) {
    for (int variant = 0; variant < 6; variant++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node h = vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 256, 0), 1.0f), y;
        const char *label = "";
        switch (variant) {
        case 0: /* residual add in the matmul epilogue (weight split in parts on small devices too) */
            y = rlx_add(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 96, 0), 1.0f),
                        rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q4_K, 2, 96, 256, 0)));
            label = "x + matmul(h, Q4_K)";
            break;
        case 1: /* SiLU-gated FFN: up-projection epilogue */
            y = rlx_mul(t.g,
                        rlx_silu(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q8_0, 2, 64, 256, 0))),
                        rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 64, 256, 0)));
            label = "silu(h Wg) * (h Wu)";
            break;
        case 2: { /* GELU gate, operands swapped, the activation also an output */
            rlx_node act =
                rlx_gelu_tanh(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q6_K, 2, 64, 256, 0)));
            rlx_graph_mark_output(t.g, act, "act");
            y = rlx_mul(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_BF16, 2, 64, 256, 0)), act);
            label = "(h Wu) * gelu(h Wg), gelu also out";
            break;
        }
        case 3: /* elementwise silu(a) * b */
            y = rlx_mul(t.g, rlx_silu(t.g, h), vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 256, 0), 1.0f));
            label = "silu(a) * b";
            break;
        case 4: /* norm then scale */
            y = rlx_scale(t.g, rlx_rms_norm(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, 256, 0, 0), 1e-6f),
                          3.5f);
            label = "rms_norm(h) * 3.5";
            break;
        default: { /* q-norm then RoPE over heads, as Qwen3 prepares Q */
            rlx_node q =
                rlx_reshape(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 256, 256, 0)),
                            vkt_shape(3, 5, 4, 64));
            q = rlx_rms_norm(t.g, q, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, 64, 0, 0), 1e-6f);
            y = rlx_rope(t.g, q, RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 48, 1e6f});
            label = "rope(rms_norm(heads(h Wq))), rot 48 of 64";
            break;
        }
        }
        rlx_graph_mark_output(t.g, y, "y");
        rlx_op op = variant == 5   ? RLX_OP_ROPE
                    : variant == 4 ? RLX_OP_RMS_NORM
                    : variant == 0 ? RLX_OP_ADD
                                   : RLX_OP_MUL;
        step steps[] = {{0, 5}, {37, 3}};
        compare(op, label, &t, steps, 2, true, TOL_F32);
        vkt_graph_free(&t);
    }
}

/* One attention layer as the runners build it: K = rope([rms_norm](x Wk)) goes into the cache
 * through the RoPE kernel (runtime/vk_fuse.c fuse_kv), and V's rows ride along in that dispatch
 * when they are computed before it (v_late: after it, so V keeps its own KV_WRITE). With one query
 * row (decode) the attention kernel does all of it (fuse_attention_step). Checks the attention
 * output and both caches over prefill, decode and padded steps, and which kernels are dispatched:
 * a kv_write copy only for a late V of several rows; no norm or RoPE kernel for one row. With
 * RLX_VK_WARM=1 set (warm), the V matvec of a decode step reads the caches into L2 wherever K and V
 * rows are alike (vk_fuse.c mark_warm), which must not change any value; these rows (32) are too
 * short for the default to warm. */
typedef struct kv_case {
    bool norm, v_late;
    int64_t rows, h, hkv, dh, dv, cap;
    int32_t n_rot, window;
    rlx_rope_layout layout;
} kv_case;

static rlx_node kv_heads(vkt_graph *t, rlx_node x, int64_t rows, int64_t heads, int64_t d) {
    rlx_node y = rlx_matmul(t->g, x, vkt_graph_weight(t, &g_rng, RLX_DTYPE_F16, 2, heads * d, 32, 0));
    return rlx_reshape(t->g, y, vkt_shape(3, rows, heads, d));
}

static rlx_node kv_qk(vkt_graph *t, const kv_case *c, rlx_node x, int64_t heads) {
    rlx_node y = kv_heads(t, x, c->rows, heads, c->dh);
    if (c->norm) y = rlx_rms_norm(t->g, y, vkt_graph_weight(t, &g_rng, RLX_DTYPE_F32, 1, c->dh, 0, 0), 1e-6f);
    return rlx_rope(t->g, y, RLX_NO_NODE, (rlx_rope_attrs){c->layout, c->n_rot, 1e4f});
}

/* t: case c's layer, with outputs o (the attention), k and v (the caches). */
static void kv_case_graph(vkt_graph *t, const kv_case *c) {
    vkt_graph_init(t);
    t->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = (int32_t)c->cap, .n_head_kv = (int32_t)c->hkv,
                          .head_dim = (int32_t)c->dh, .head_dim_v = (int32_t)c->dv};
    rlx_node x = vkt_input_f32(t, &g_rng, vkt_shape(2, c->rows, 32, 0), 1.0f);
    rlx_node kcache = rlx_kv_cache(t->g, 0, false, c->cap, c->hkv, c->dh);
    rlx_node vcache = rlx_kv_cache(t->g, 0, true, c->cap, c->hkv, c->dv);
    rlx_node q = kv_qk(t, c, x, c->h), k = kv_qk(t, c, x, c->hkv), v = RLX_NO_NODE;
    if (!c->v_late) v = kv_heads(t, x, c->rows, c->hkv, c->dv);
    rlx_node kw = rlx_kv_write(t->g, kcache, k);
    if (c->v_late) v = kv_heads(t, x, c->rows, c->hkv, c->dv);
    rlx_node vw = rlx_kv_write(t->g, vcache, v);
    rlx_graph_mark_output(t->g, rlx_attention(t->g, q, kw, vw, 1.0f / sqrtf((float)c->dh), c->window), "o");
    rlx_graph_mark_output(t->g, kcache, "k");
    rlx_graph_mark_output(t->g, vcache, "v");
}

static void kv_fusion_case(const kv_case *c, bool warm) {
    vkt_graph t;
    kv_case_graph(&t, c);
    int32_t rows = (int32_t)c->rows;
    step steps[] = {{0, rows}, {rows, 1}, {rows + 1, rows > 1 ? rows - 1 : 1}, {(int32_t)c->cap - 1, 1}};
    char label[64];
    snprintf(label, sizeof label, "%s%s kv rows %d H %lld/%lld Dh %lld Dv %lld rot %d%s", c->norm ? "norm+" : "",
             c->layout == RLX_ROPE_LAYOUT_NEOX ? "neox" : "normal", rows, (long long)c->h, (long long)c->hkv,
             (long long)c->dh, (long long)c->dv, c->n_rot, c->v_late ? " v late" : "");
    compare(RLX_OP_KV_WRITE, label, &t, steps, 4, true, TOL_F32);
    bool copies = vk_dispatches(&t, RLX_VK_KERNEL_kv_write), one_row = c->rows == 1;
    bool prep = vk_dispatches(&t, RLX_VK_KERNEL_rms_norm) || vk_dispatches(&t, RLX_VK_KERNEL_rope);
    T_CHECK(copies == (c->v_late && !one_row), "%s: kv_write dispatched: %s, expected %s", label, copies ? "yes" : "no",
            c->v_late && !one_row ? "yes (V's own)" : "no (both writes fused)");
    bool fused =
        vk_dispatches(&t, RLX_VK_KERNEL_attention_step) || vk_dispatches(&t, RLX_VK_KERNEL_attention_step_fixed);
    T_CHECK(prep != one_row && fused == one_row,
            "%s: norm/RoPE kernels dispatched: %s, attention_step: %s", label, prep ? "yes" : "no", one_row ? "expected" : "not expected");
    if (g_kv_dtype == RLX_DTYPE_F16) { /* the pools are touched by the F16 kernels only */
        static const rlx_vk_kernel pool_kernels[] = {RLX_VK_KERNEL_kv_write, RLX_VK_KERNEL_attention,
                                                     RLX_VK_KERNEL_attention_step, RLX_VK_KERNEL_attention_step_fixed,
                                                     RLX_VK_KERNEL_attention_prefill};
        static const rlx_vk_kernel writers16[] = {RLX_VK_KERNEL_kv_write_f16, RLX_VK_KERNEL_rope_f16,
                                                  RLX_VK_KERNEL_rms_norm_f16, RLX_VK_KERNEL_attention_step_f16,
                                                  RLX_VK_KERNEL_attention_step_fixed_f16};
        size_t f32_kernels = 0, w16 = 0;
        for (size_t k = 0; k < sizeof pool_kernels / sizeof pool_kernels[0]; k++)
            f32_kernels += vk_count_matching(&t, of_kernel_only, pool_kernels[k]);
        for (size_t k = 0; k < sizeof writers16 / sizeof writers16[0]; k++)
            w16 += vk_count_matching(&t, of_kernel_only, writers16[k]);
        bool writes16 = w16 > 0;
        T_CHECK(f32_kernels == 0 && writes16, "%s: F16 pools: %zu dispatches of f32 pool kernels, F16 writes: %s",
                label, f32_kernels, writes16 ? "yes" : "no");
    }
    size_t elem = g_kv_dtype == RLX_DTYPE_F16 ? 2 : 4; /* cache rows of whole 16-byte words */
    size_t warmed = vk_warm_count(&t), want = warm && one_row && c->dh == c->dv && c->hkv * c->dh * elem % 16 == 0;
    T_CHECK(warmed == want, "%s: %zu matvec dispatches warm the caches, expected %zu", label, warmed, want);
    printf("  %-10s %-44s kv_write dispatched: %s, norm/RoPE: %s%s%s\n", "KV_WRITE", label, copies ? "yes" : "no",
           prep ? "yes" : "no (in attention)",
           vk_dispatches(&t, RLX_VK_KERNEL_attention_step_fixed) ? ", attention_step_fixed" : "",
           warmed ? ", caches warmed by the V matvec" : "");
    vkt_graph_free(&t);
}

/* A residual add after a norm (Gemma 3's post-norms) is the norm's epilogue, on either side of the
 * ADD, for a long row (workgroup per row) and head-sized rows (a subgroup per row). */
static void test_norm_add(void) {
    for (int variant = 0; variant < 3; variant++) {
        vkt_graph t;
        vkt_graph_init(&t);
        int64_t cols = variant == 2 ? 64 : 1000;
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 6, cols, 0), 2.0f);
        rlx_node h = rlx_rms_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 6, cols, 0), 3.0f),
                                  vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 1, cols, 0, 0), 1e-6f);
        rlx_graph_mark_output(t.g, variant == 1 ? rlx_add(t.g, h, x) : rlx_add(t.g, x, h), "y");
        char label[64];
        snprintf(label, sizeof label, "%s, rows of %lld", variant == 1 ? "rms_norm(h) + x" : "x + rms_norm(h)",
                 (long long)cols);
        step steps[] = {{0, 6}, {9, 4}};
        compare(RLX_OP_ADD, label, &t, steps, 2, true, TOL_F32);
        bool ew = vk_dispatches(&t, RLX_VK_KERNEL_ew);
        T_CHECK(!ew, "%s: the add was dispatched on its own", label);
        printf("  %-10s %-44s ew dispatched: %s\n", "ADD", label, ew ? "yes" : "no");
        vkt_graph_free(&t);
    }
}

/* The decode patterns around a layer's norms (runtime/vk_fuse.c fuse_norm_matvec): an attention
 * norm read by the q, k and v projections, an FFN norm read by the gate and up projections (a
 * gated FFN with its down projection and residual), and a norm with one more reader that is not a
 * matmul. On few rows each matvec normalises x itself and the norm has no dispatch, and the gate
 * and up projections share one matvec (fuse_gate_up); on prefill rows (tiled matmuls) and with the
 * extra reader the norm keeps its own dispatch. */
typedef enum { NORM_QKV, NORM_FFN, NORM_EXTRA } norm_pattern;

static void norm_matvec_case(norm_pattern pat, uint32_t type, int64_t k, int64_t rows, uint32_t norm_type) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 2.0f);
    rlx_node h = rlx_rms_norm(t.g, x, vkt_graph_weight(&t, &g_rng, norm_type, 1, k, 0, 0), 1e-6f);
    int64_t f = 256;
    const char *what = "";
    switch (pat) {
    case NORM_QKV:
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 96, k, 0)), "q");
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 40, k, 0)), "k");
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 40, k, 0)), "v");
        what = "q,k,v(norm(x))";
        break;
    case NORM_FFN: {
        rlx_node g = rlx_silu(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, f, k, 0)));
        rlx_node u = rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, f, k, 0));
        rlx_node y =
            rlx_add(t.g, x, rlx_matmul(t.g, rlx_mul(t.g, g, u), vkt_graph_weight(&t, &g_rng, type, 2, k, f, 0)));
        rlx_graph_mark_output(t.g, y, "y");
        what = "x + down(silu(gate) * up)(norm(x))";
        break;
    }
    case NORM_EXTRA:
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 96, k, 0)), "q");
        rlx_graph_mark_output(t.g, rlx_scale(t.g, h, 0.5f), "half");
        what = "q(norm(x)), norm(x) / 2";
        break;
    }
    char label[96];
    snprintf(label, sizeof label, "%s %s k=%lld rows=%lld nw %s", what, tname(type), (long long)k, (long long)rows,
             tname(norm_type));
    int32_t n = (int32_t)rows;
    step steps[] = {{0, n}, {n + 2, n > 1 ? n - 1 : 1}};
    compare(RLX_OP_RMS_NORM, label, &t, steps, 2, true, TOL_F32);
    size_t norms = vk_dispatch_count(&t, RLX_VK_KERNEL_rms_norm), mvs = vk_dispatch_count(&t, RLX_VK_KERNEL_matvec);
    size_t want = pat == NORM_EXTRA || rows >= 16 ? 1 : 0;
    size_t want_mv = rows >= 16 ? 0 : pat == NORM_QKV ? 3 : pat == NORM_FFN ? 2 : 1;
    T_CHECK(norms == want, "%s: %zu rms_norm dispatches, expected %zu", label, norms, want);
    T_CHECK(mvs == want_mv, "%s: %zu matvec dispatches, expected %zu", label, mvs, want_mv);
    printf("  %-10s %-44s rms_norm dispatches: %zu, matvec: %zu\n", "RMS_NORM", label, norms, mvs);
    vkt_graph_free(&t);
}

static void test_norm_matvec(void) {
    static const uint32_t types[] = {RLX_DTYPE_F16, RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K};
    static const int64_t rows[] = {1, 2, 3, 5, 8, 40};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            norm_matvec_case(NORM_QKV, types[i], 512, rows[r], RLX_DTYPE_F32);
            norm_matvec_case(NORM_FFN, types[i], 512, rows[r], RLX_DTYPE_F32);
        }
    for (int64_t r = 1; r <= 8; r++) norm_matvec_case(NORM_QKV, RLX_DTYPE_Q4_K, 1024, r, RLX_DTYPE_F32);
    norm_matvec_case(NORM_QKV, RLX_DTYPE_F32, 600, 3, RLX_DTYPE_F16);  /* norm weights decoded to f32 */
    norm_matvec_case(NORM_QKV, RLX_DTYPE_BF16, 1200, 12, RLX_DTYPE_F32); /* two workgroups of 8 x rows */
    norm_matvec_case(NORM_EXTRA, RLX_DTYPE_Q8_0, 512, 2, RLX_DTYPE_F32);
}

/* A norm of a residual add computed by a matvec (runtime/vk_fuse.c fuse_norm_into_producer):
 * norm(y + x Wp) read by matmuls that do not fold it in (K-quant rows over 2,048). On one row the
 * producer writes the input times the norm's weights and leaves the rsqrt factor for the readers
 * (no rms_norm dispatch), over runs of fresh inputs that each reuse its counter; with several rows, a reader that
 * folds the norm (F16) or a norm that is also an output, the norm is dispatched or folded as before. */
typedef struct norm_post_case {
    uint32_t producer, reader;
    int64_t rows;
    bool norm_out;
    size_t want_norms; /* rms_norm dispatches expected */
} norm_post_case;

static void norm_post_run(const norm_post_case *c) {
    vkt_graph t;
    vkt_graph_init(&t);
    int64_t k = 256, m = 2304;
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, k, 0), 1.0f);
    rlx_node y = vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, m, 0), 2.0f);
    rlx_node h = rlx_add(t.g, y, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, c->producer, 2, m, k, 0)));
    rlx_node n = rlx_rms_norm(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, m, 0, 0), 1e-6f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, n, vkt_graph_weight(&t, &g_rng, c->reader, 2, 64, m, 0)), "q");
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, n, vkt_graph_weight(&t, &g_rng, c->reader, 2, 40, m, 0)), "k");
    rlx_graph_mark_output(t.g, h, "h");
    if (c->norm_out) rlx_graph_mark_output(t.g, n, "n");
    char label[96];
    snprintf(label, sizeof label, "%s(norm(y + x Wp %s)) rows=%lld%s", tname(c->reader), tname(c->producer),
             (long long)c->rows, c->norm_out ? " +norm out" : "");
    int32_t r = (int32_t)c->rows;
    step steps[] = {{0, r}, {r + 2, r}, {2 * r + 5, r}};
    compare_fresh(RLX_OP_RMS_NORM, label, &t, steps, 3);
    size_t norms = vk_dispatch_count(&t, RLX_VK_KERNEL_rms_norm);
    T_CHECK(norms == c->want_norms, "%s: %zu rms_norm dispatches, expected %zu", label, norms, c->want_norms);
    printf("  %-10s %-44s rms_norm dispatches: %zu\n", "RMS_NORM", label, norms);
    vkt_graph_free(&t);
}

static void test_norm_post(void) {
    static const norm_post_case cases[] = {
        {RLX_DTYPE_F16, RLX_DTYPE_Q4_K, 1, false, 0}, {RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, 1, false, 0},
        {RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_K, 1, false, 0}, {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, 1, true, 1},
        {RLX_DTYPE_F16, RLX_DTYPE_Q4_K, 3, false, 1},  {RLX_DTYPE_F16, RLX_DTYPE_F16, 1, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) norm_post_run(&cases[i]);
}

/* Greedy decode's argmax of the logits (runtime/vk_fuse.c fuse_argmax_into_producer): on one row
 * of a matmul on matvec.comp the matvec's last workgroups reduce the workgroups' maxima (no argmax
 * dispatch), over runs of fresh inputs that each reuse its counters, with the norm before it folded, prepared by
 * a residual matvec, or absent; with several rows, or logits that are an output too, the argmax
 * keeps its dispatch. Vocabularies of several teams of 64 workgroups. */
static void argmax_post_case(uint32_t type, int64_t k, int64_t vocab, int64_t rows, int norm, bool logits_out) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f);
    if (norm == 2) /* prepared by the residual matvec when the reader cannot fold it (K-quant, k > 2048) */
        x = rlx_add(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f),
                    rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, k, k, 0)));
    if (norm) x = rlx_rms_norm(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, k, 0, 0), 1e-6f);
    rlx_node logits = rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, type, 2, vocab, k, 0));
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, logits), "id");
    if (logits_out) rlx_graph_mark_output(t.g, logits, "logits");
    char label[96];
    snprintf(label, sizeof label, "argmax(%s%s k=%lld) vocab %lld rows=%lld%s", tname(type),
             norm == 2 ? " prepared norm" : norm ? " norm" : "", (long long)k, (long long)vocab, (long long)rows,
             logits_out ? " +logits out" : "");
    int32_t r = (int32_t)rows;
    step steps[] = {{0, r}, {r + 2, r}, {2 * r + 5, r}};
    compare_fresh(RLX_OP_ARGMAX, label, &t, steps, 3);
    bool own = vk_dispatches(&t, RLX_VK_KERNEL_argmax), want = rows > 1 || logits_out;
    T_CHECK(own == want, "%s: argmax dispatched: %s, expected %s", label, own ? "yes" : "no", want ? "yes" : "no");
    printf("  %-10s %-44s argmax dispatched: %s\n", "ARGMAX", label, own ? "yes" : "no");
    vkt_graph_free(&t);
}

static void test_argmax_post(void) {
    argmax_post_case(RLX_DTYPE_F16, 64, 20000, 1, 0, false);
    argmax_post_case(RLX_DTYPE_Q6_K, 256, 70000, 1, 1, false);
    argmax_post_case(RLX_DTYPE_Q4_K, 2304, 3000, 1, 2, false);
    argmax_post_case(RLX_DTYPE_Q8_0, 64, 777, 1, 1, false);
    argmax_post_case(RLX_DTYPE_F16, 64, 5000, 3, 0, false);
    argmax_post_case(RLX_DTYPE_F16, 64, 5000, 1, 0, true);
}

/* act(x Wg) * (x Wu) in one matvec (runtime/vk_fuse.c fuse_gate_up) where the two projections
 * read the same x and have weights of one type and shape, in either operand order and for both
 * activations; two matvecs otherwise (types differ, x differs). */
typedef struct gate_up_case {
    uint32_t gate_type, up_type;
    bool gelu, swapped, other_x;
    int64_t k, f, rows;
    bool stream; /* expected on matvec_stream.comp (runtime/vk_lower.c matvec_kernel) */
} gate_up_case;

static void gate_up_case_run(const gate_up_case *c) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, c->k, 0), 1.0f);
    rlx_node xu = c->other_x ? vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, c->k, 0), 1.0f) : x;
    rlx_node g = rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, c->gate_type, 2, c->f, c->k, 0));
    g = c->gelu ? rlx_gelu_tanh(t.g, g) : rlx_silu(t.g, g);
    rlx_node u = rlx_matmul(t.g, xu, vkt_graph_weight(&t, &g_rng, c->up_type, 2, c->f, c->k, 0));
    rlx_graph_mark_output(t.g, c->swapped ? rlx_mul(t.g, u, g) : rlx_mul(t.g, g, u), "y");
    char label[96];
    snprintf(label, sizeof label, "%s(x Wg %s)%s(x%s Wu %s) k=%lld f=%lld rows=%lld", c->gelu ? "gelu" : "silu",
             tname(c->gate_type), c->swapped ? " *r " : " * ", c->other_x ? "'" : "", tname(c->up_type),
             (long long)c->k, (long long)c->f, (long long)c->rows);
    int32_t n = (int32_t)c->rows;
    step steps[] = {{0, n}, {5, n > 1 ? n - 1 : 1}};
    compare(RLX_OP_MUL, label, &t, steps, 2, true, TOL_F32);
    size_t streams = vk_dispatch_count(&t, RLX_VK_KERNEL_matvec_stream);
    size_t mvs = vk_dispatch_count(&t, RLX_VK_KERNEL_matvec) + streams;
    size_t want = c->gate_type == c->up_type && !c->other_x ? 1 : 2;
    T_CHECK(mvs == want, "%s: %zu matvec dispatches, expected %zu", label, mvs, want);
    T_CHECK((streams > 0) == c->stream, "%s: matvec_stream dispatched: %s, expected %s", label, streams ? "yes" : "no",
            c->stream ? "yes" : "no");
    printf("  %-10s %-44s matvec dispatches: %zu%s\n", "MUL", label, mvs, streams ? " (matvec_stream)" : "");
    vkt_graph_free(&t);
}

static void test_gate_up(void) {
    static const gate_up_case cases[] = {
        {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, true, false, false, 512, 300, 1, false},
        {RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, false, true, false, 256, 130, 3, false},
        {RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, true, true, false, 224, 70, 8, false},
        {RLX_DTYPE_F16, RLX_DTYPE_F16, false, false, false, 296, 37, 12, false},
        {RLX_DTYPE_F32, RLX_DTYPE_F32, false, false, false, 148, 19, 5, false},
        {RLX_DTYPE_BF16, RLX_DTYPE_BF16, true, false, false, 1200, 65, 2, false},
        {RLX_DTYPE_Q8_0, RLX_DTYPE_F16, false, false, false, 256, 64, 2, false},
        {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, false, false, true, 512, 64, 2, false},
        /* rows of 4,096 of a plain type: the weights read past L1 */
        {RLX_DTYPE_F16, RLX_DTYPE_F16, false, false, false, 4096, 40, 1, true},
        {RLX_DTYPE_BF16, RLX_DTYPE_BF16, true, true, false, 4096, 24, 3, true},
        {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, false, false, false, 4096, 24, 1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) gate_up_case_run(&cases[i]);
}

static void test_kv_fusions(void) {
    static const kv_case cases[] = {
        {true, false, 1, 16, 8, 128, 128, 40, 128, 0, RLX_ROPE_LAYOUT_NEOX},  /* qwen3-0.6b decode shape */
        {true, false, 5, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX},     /* long cache: key splits */
        {true, true, 3, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL},       /* odd sizes, window */
        {false, false, 4, 4, 4, 32, 16, 20, 32, 0, RLX_ROPE_LAYOUT_NORMAL},   /* llama: RoPE alone */
        {false, true, 2, 8, 2, 16, 16, 20, 16, 0, RLX_ROPE_LAYOUT_NEOX},
        {true, false, 17, 4, 2, 64, 64, 40, 64, 0, RLX_ROPE_LAYOUT_NEOX},    /* prefill rows */
        {true, false, 1, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX},     /* decode, long cache: key splits */
        {true, true, 1, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL},       /* decode, odd sizes, window */
        {false, false, 1, 4, 4, 32, 16, 20, 32, 0, RLX_ROPE_LAYOUT_NORMAL},   /* decode, llama: RoPE alone */
        {false, true, 1, 8, 2, 16, 16, 20, 16, 0, RLX_ROPE_LAYOUT_NEOX},      /* decode, late V */
        {true, false, 1, 12, 4, 256, 256, 20, 256, 0, RLX_ROPE_LAYOUT_NEOX},  /* decode, gemma3-sized heads */
        /* heads of 32 on subgroups of 8 (lavapipe), of 128 on subgroups of 32 (the first case):
         * the plan attention_step_fixed.comp has in its source */
        {true, false, 1, 8, 4, 32, 32, 40, 32, 0, RLX_ROPE_LAYOUT_NEOX},
        {true, false, 1, 8, 2, 32, 32, 40, 16, 0, RLX_ROPE_LAYOUT_NORMAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) kv_fusion_case(&cases[i], false);
    rlx_vk_options o = g_opts;
    o.warm = 1;
    vkt_set_options(g_vk, &o);
    printf("  RLX_VK_WARM=1:\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].rows == 1) kv_fusion_case(&cases[i], true);
    /* Unsplit decode takes one query head per workgroup; the knob RLX_VK_ATTN_GW gives it more
     * (heads sharing one kv head), on the plain and the fused kernel. */
    static const uint32_t gw[] = {2, 4};
    static const kv_case gqa4 = {true, false, 1, 8, 2, 64, 64, 40, 64, 0, RLX_ROPE_LAYOUT_NEOX};
    for (size_t i = 0; i < 2; i++) {
        o = g_opts;
        o.attn_gw = gw[i];
        vkt_set_options(g_vk, &o);
        printf("  RLX_VK_ATTN_GW=%u:\n", gw[i]);
        kv_fusion_case(&gqa4, false);
        attention_cached(8, 2, 64, 0, 1, 96);
    }
    vkt_set_options(g_vk, &g_opts);
}

/* ---- F16 pools ---- */

/* The fused decode step (attention_step_f16: norm, RoPE, cache write and attention in one dispatch)
 * against the unfused kernels (RLX_VK_FUSION=0: rms_norm_f16 / rope_f16 write the cache, then
 * attention_f16 reads it), both over F16 pools, over `steps` decode steps of fresh inputs. The
 * unfused attention reads the new key back from the cache, rounded; the fused step must attend to
 * the same rounded key and value, so the two agree to f32 arithmetic plus the rare F16 rounding
 * that f32 differences in the norm flip (one F16 step, 2^-11, of one element): TOL_STEP_F16. A
 * step that attended to its unrounded key and value would be off by F16's rounding of each of
 * their elements: a build without the rounding measured NMSE 4e-8 ... 2e-7 on these cases (this one
 * ~1e-14, caches bit for bit). */
#define TOL_STEP_F16 1e-10
static void fused_vs_unfused_case(const kv_case *c, int32_t steps) {
    vkt_graph t;
    kv_case_graph(&t, c);
    int32_t n_out = rlx_graph_n_outputs(t.g);
    rlx_vk_options o = g_opts;
    o.fusion = false;
    side fused, plain;
    bool ok = open_side(g_vk, &t, &fused, n_out);
    vkt_set_options(g_vk, &o);
    ok = open_side(g_vk, &t, &plain, n_out) && ok;
    vkt_set_options(g_vk, &g_opts);
    double worst[3] = {0, 0, 0};
    for (int32_t k = 0; ok && k < steps; k++) {
        float *x = t.in[0];
        for (int64_t e = 0; e < 32; e++) x[e] = vkt_uniform(&g_rng, -1, 1);
        if (!T_OK(run_side(g_vk, &t, &fused, (step){k, 1})) || !T_OK(run_side(g_vk, &t, &plain, (step){k, 1}))) break;
        for (int32_t out = 0; out < n_out; out++) {
            const rlx_node_info *n = rlx_graph_node(t.g, rlx_graph_output_node(t.g, out));
            int64_t numel = rlx_shape_numel(&n->shape);
            double e = vkt_nmse(fused.out[out], plain.out[out], numel);
            if (e > worst[out]) worst[out] = e;
        }
    }
    char label[64];
    snprintf(label, sizeof label, "%s H %lld/%lld Dh %lld Dv %lld, %d steps", c->norm ? "norm+rope" : "rope",
             (long long)c->h, (long long)c->hkv, (long long)c->dh, (long long)c->dv, steps);
    printf("  %-10s %-44s fused vs unfused: nmse o %.2e k %.2e v %.2e (tol %.0e)\n", "F16 step", label, worst[0],
           worst[1], worst[2], TOL_STEP_F16);
    T_CHECK(ok && worst[0] <= TOL_STEP_F16 && worst[1] <= TOL_STEP_F16 && worst[2] <= TOL_STEP_F16,
            "%s: fused vs unfused over F16 pools: nmse o %.3e k %.3e v %.3e > %.0e", label, worst[0], worst[1],
            worst[2], TOL_STEP_F16);
    close_side(g_vk, &fused, n_out);
    close_side(g_vk, &plain, n_out);
    vkt_graph_free(&t);
}

/* copy_pages over F16 pools of 2 layers (pages of 4 rows): rows written at positions 0..7 (pages 0
 * and 1), read back through a program whose outputs are the four pools, pages 0, 1 copied to 3, 5.
 * Expected: pages 3 and 5 of every pool hold pages 0 and 1 as they were, bit for bit (a copy of
 * bytes; the readback widens F16 exactly), the other pages are unchanged, and the written rows are
 * the inputs within F16's rounding (relative 2^-10). */
static void test_copy_pages_f16(void) {
    enum { PAGE = 4, PAGES = 6, HKV = 2, DH = 8, ROWS = 8, POOL = PAGE * PAGES * HKV * DH };
    rlx_state_spec kv = {.n_layer = 2, .n_head_kv = HKV, .head_dim = DH, .page_size = PAGE, .n_pages = PAGES,
                         .kv_dtype = RLX_DTYPE_F16};
    vkt_graph w, r;
    vkt_graph_init(&w);
    vkt_graph_init(&r);
    w.kv = r.kv = kv;
    for (int32_t l = 0; l < 2; l++)
        for (int v = 0; v < 2; v++) {
            char name[8];
            snprintf(name, sizeof name, "%c%d", v ? 'v' : 'k', l);
            rlx_node x = vkt_input_f32(&w, &g_rng, vkt_shape(3, ROWS, HKV, DH), 4.0f);
            rlx_graph_mark_output(w.g, rlx_kv_write(w.g, rlx_kv_cache(w.g, l, v, PAGE * PAGES, HKV, DH), x), name);
            rlx_graph_mark_output(r.g, rlx_kv_cache(r.g, l, v, PAGE * PAGES, HKV, DH), name);
        }
    rlx_session *s = NULL;
    rlx_program *pw = NULL, *pr = NULL;
    float *wout[4], *before[4], *after[4];
    for (int i = 0; i < 4; i++) {
        wout[i] = calloc(POOL, sizeof(float));
        before[i] = calloc(POOL, sizeof(float));
        after[i] = calloc(POOL, sizeof(float));
    }
    bool ok = T_OK(g_vk->ops->session_create(g_vk, NULL, 0, &kv, &s)) && T_OK(g_vk->ops->compile(s, w.g, &pw)) &&
              T_OK(g_vk->ops->compile(s, r.g, &pr));
    rlx_run_args aw = {0, ROWS, (const void *const *)w.in, (void *const *)wout, NULL};
    rlx_run_args ab = {0, 1, NULL, (void *const *)before, NULL}, aa = {0, 1, NULL, (void *const *)after, NULL};
    int32_t src[2] = {0, 1}, dst[2] = {3, 5};
    ok = ok && T_OK(g_vk->ops->run(pw, &aw)) && T_OK(g_vk->ops->run(pr, &ab)) &&
         T_OK(g_vk->ops->copy_pages(s, src, dst, 2)) && T_OK(g_vk->ops->run(pr, &aa));
    size_t page_floats = PAGE * HKV * DH;
    int64_t moved = 0, kept = 0, bad = 0;
    double worst_rel = 0.0;
    for (int i = 0; ok && i < 4; i++) {
        for (int32_t pg = 0; pg < PAGES; pg++) {
            int32_t from = pg == 3 ? 0 : pg == 5 ? 1 : pg;
            bool same = memcmp(after[i] + pg * page_floats, before[i] + from * page_floats, page_floats * 4) == 0;
            bad += !same;
            moved += same && from != pg;
            kept += same && from == pg;
        }
        const float *x = w.in[i];
        for (int64_t e = 0; e < ROWS * HKV * DH; e++) {
            double rel = fabs((double)before[i][e] - x[e]) / (fabs(x[e]) > 1e-3 ? fabs(x[e]) : 1e-3);
            if (rel > worst_rel) worst_rel = rel;
        }
    }
    printf("  copy_pages 2 layers x K, V of 6 pages of 4 rows, F16: %lld pages copied, %lld kept, %lld wrong; "
           "written rows within %.2e of the inputs (bound 2^-10)\n", (long long)moved, (long long)kept, (long long)bad,
           worst_rel);
    T_CHECK(ok && bad == 0 && moved == 8 && kept == 16, "copy_pages F16: %lld pages wrong", (long long)bad);
    T_CHECK(worst_rel <= 1.0 / 1024, "copy_pages F16: written rows %.3e from the inputs", worst_rel);
    if (pr) g_vk->ops->program_destroy(pr);
    if (pw) g_vk->ops->program_destroy(pw);
    if (s) g_vk->ops->session_destroy(s);
    for (int i = 0; i < 4; i++) {
        free(wout[i]);
        free(before[i]);
        free(after[i]);
    }
    vkt_graph_free(&w);
    vkt_graph_free(&r);
}

/* Every kernel that reads or writes the pools, with F16 pools on the Vulkan side and the CPU's F32
 * reference (the tolerances: TOL_KV_F16 above); then the fused decode step against the unfused
 * path. */
static void test_kv_f16(void) {
    g_kv_dtype = RLX_DTYPE_F16;
    test_copy_pages_f16();
    printf("F16 pools (Vulkan) against the F32 reference\n");
    test_KV_CACHE();
    test_KV_WRITE();
    attention_cached_cases();
    test_kv_fusions();
    static const kv_case steps[] = {
        {true, false, 1, 16, 8, 128, 128, 40, 128, 0, RLX_ROPE_LAYOUT_NEOX}, /* fixed plan on subgroups of 32 */
        {true, false, 1, 8, 4, 32, 32, 40, 32, 0, RLX_ROPE_LAYOUT_NEOX},     /* fixed plan on subgroups of 8 */
        {true, true, 1, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL},      /* odd sizes, window */
        {false, false, 1, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX},   /* key splits */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        fused_vs_unfused_case(&steps[i], (int32_t)steps[i].cap);
    g_kv_dtype = RLX_DTYPE_F32;
}

/* ---- the next stage's weights warmed into L2 (runtime/vk_warm_next.c) ---- */

/* A warm_l2 dispatch expected: the first `bytes` of weight w's first part (at most all of it). */
typedef struct warm_want {
    rlx_node w;
    uint64_t bytes;
} warm_want;

/* t's program on backend b has exactly the warm_l2 dispatches of want, in that order, each right
 * after the last dispatch of a matvec and reading the start of its weight's first part. */
static void check_warm_next(rlx_backend *b, vkt_graph *t, const char *label, const warm_want *want, size_t n_want) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    size_t k = 0;
    if (T_OK(b->ops->session_create(b, t->w, t->nw, &t->kv, &s)) && T_OK(b->ops->compile(s, t->g, &p)))
        for (size_t i = 0; i < p->run.n && k <= n_want; i++) {
            const vk_dispatch *d = &p->run.items[i];
            if (d->pipe->kernel != RLX_VK_KERNEL_warm_l2) continue;
            const vk_dispatch *mv = NULL;
            for (size_t j = i; j-- > 0 && !mv;)
                if (p->run.items[j].pipe->kernel != RLX_VK_KERNEL_warm_l2) mv = &p->run.items[j];
            bool after_mv = mv && (mv->pipe->kernel == RLX_VK_KERNEL_matvec || mv->pipe->kernel == RLX_VK_KERNEL_matvec_stream);
            for (size_t j = i + 1; after_mv && j < p->run.n; j++)
                after_mv = p->run.items[j].node != mv->node || p->run.items[j].pipe->kernel == RLX_VK_KERNEL_warm_l2;
            T_CHECK(after_mv, "%s: warm_l2 dispatch %zu does not follow the last dispatch of a matvec", label, k);
            if (k++ == n_want) break; /* one too many: the count check below reports it */
            const rlx_vk_alloc *a = &p->nodes[want[k - 1].w].weight->parts[0].alloc;
            VkDeviceSize size = (want[k - 1].bytes < a->size ? want[k - 1].bytes : a->size) / 16 * 16;
            T_CHECK(d->n_bind == 1 && d->bind[0].buffer == a->buffer && d->bind[0].offset == a->offset &&
                        d->bind[0].size == size && d->writes == 0,
                    "%s: warm_l2 dispatch %zu reads %llu bytes at %llu, expected the first %llu of weight %%%d at %llu",
                    label, k - 1, (unsigned long long)d->bind[0].size, (unsigned long long)d->bind[0].offset,
                    (unsigned long long)size, want[k - 1].w, (unsigned long long)a->offset);
        }
    T_CHECK(k == n_want, "%s: %zu warm_l2 dispatches, expected %zu", label, k, n_want);
    printf("  %-10s %-44s warm_l2 dispatches: %zu\n", "MATMUL", label, k);
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
}

/* The graph's result against the CPU, then its warm_l2 dispatches, with RLX_VK_WARM_NEXT=knob (NULL:
 * unset) on backend b. */
static void warm_next_case(rlx_backend *b, vkt_graph *t, const char *what, const char *knob, int32_t rows,
                           const warm_want *want, size_t n_want) {
    char label[80];
    snprintf(label, sizeof label, "%s, RLX_VK_WARM_NEXT=%s", what, knob ? knob : "(unset)");
    rlx_vk_options o = g_opts;
    if (knob) o.warm_next_kib = atoi(knob);
    vkt_set_options(b, &o);
    rlx_backend *saved = g_vk;
    g_vk = b;
    compare1(RLX_OP_MATMUL, label, t, rows);
    g_vk = saved;
    check_warm_next(b, t, label, want, n_want);
    vkt_set_options(b, &g_opts);
}

/* Two matvecs of one x (one stage), a third over the first's result, a gated FFN over that and its
 * down projection: decode warms the third's rows after the second (not after the first: the second
 * runs in its stage), half the bytes each of the up and gate rows after the third, the down rows
 * after the FFN, nothing after the last. Forced by RLX_VK_WARM_NEXT on any device; the values must
 * not change. Unset, these rows (64) are too short for the default; a prefill (3 rows) or 0 never
 * warms. */
static void warm_next_stages(void) {
    for (int variant = 0; variant < 4; variant++) {
        static const char *const knob[] = {"8", "8", NULL, "0"};
        int64_t rows = variant == 1 ? 3 : 1;
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, 64, 0), 1.0f);
        rlx_node w1 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0);
        rlx_node w2 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 24, 64, 0);
        rlx_node w3 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 48, 32, 0);
        rlx_node wg = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 96, 48, 0);
        rlx_node wu = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 96, 48, 0);
        rlx_node wd = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_BF16, 2, 40, 96, 0);
        rlx_node y1 = rlx_matmul(t.g, x, w1);
        rlx_graph_mark_output(t.g, y1, "y1");
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, w2), "y2");
        rlx_node h = rlx_matmul(t.g, y1, w3);
        rlx_node g = rlx_silu(t.g, rlx_matmul(t.g, h, wg));
        rlx_node a = rlx_mul(t.g, g, rlx_matmul(t.g, h, wu));
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, a, wd), "y");
        const warm_want want[4] = {{w3, 8192}, {wu, 4096}, {wg, 4096}, {wd, 8192}};
        char what[48];
        snprintf(what, sizeof what, "x W1, x W2, W3, gate/up, down, rows %lld", (long long)rows);
        warm_next_case(g_vk, &t, what, knob[variant], (int32_t)rows, want, variant == 0 ? 4 : 0);
        vkt_graph_free(&t);
    }
}

/* x Wa + x Wb, the add in Wa's epilogue: Wb's matvec comes first and Wa's reads its result, so Wa's
 * is the next stage, though of the same x. */
static void warm_next_residual(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_node wa = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0);
    rlx_node wb = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0);
    rlx_node ya = rlx_matmul(t.g, x, wa);
    rlx_node yb = rlx_matmul(t.g, x, wb);
    rlx_graph_mark_output(t.g, rlx_add(t.g, ya, yb), "y");
    const warm_want want[1] = {{wa, 8192}};
    warm_next_case(g_vk, &t, "x Wa + x Wb (add in Wa's matvec)", "8", 1, want, 1);
    vkt_graph_free(&t);
}

/* x W1, a MoE FFN, then W2: the stage after W1 is the MoE's, whose experts are chosen at run time,
 * so nothing is warmed after W1 (not W2, two stages on); W2 is the last matvec. */
static void warm_next_moe(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_node h = rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0));
    rlx_node route = rlx_moe_route(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 4, 0), 2.0f), 2, true);
    rlx_node up = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 3, 4, 48, 32);
    rlx_node gate = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 3, 4, 48, 32);
    rlx_node y = rlx_moe_ffn(t.g, h, route, gate, up, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 3, 4, 32, 48));
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, y, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 40, 32, 0)), "y");
    warm_next_case(g_vk, &t, "x W1, MoE FFN, W2", "8", 1, NULL, 0);
    vkt_graph_free(&t);
}

/* Weights split in parts (bindings of 4 KiB): the warm follows the last part of W1's matvec and
 * reads the first part of W2's rows. */
static void warm_next_split(void) {
    rlx_vk_options o = g_opts;
    o.max_binding_bytes = 4096;
    rlx_backend *small = vkt_backend_with(&o);
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_node w1 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 80, 64, 0);
    rlx_node w2 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 72, 80, 0);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, rlx_matmul(t.g, x, w1), w2), "y");
    const warm_want want[1] = {{w2, 65536}};
    warm_next_case(small, &t, "x W1 W2, weights in parts of <= 4 KiB", "64", 1, want, 1);
    vkt_graph_free(&t);
    rlx_backend_destroy(small);
}

/* The default: on a GPU (or with its plans, RLX_VK_PLANS=gpu), plain-type rows of 4,096 warm the
 * next stage's first 3 MiB (here all of a 16-row weight); K-quant rows never do, nor anything on a
 * CPU device with its own plans (lavapipe). The next stage reads another x, so it is one whatever
 * the add. */
static void warm_next_default(void) {
    static const uint32_t types[2] = {RLX_DTYPE_F16, RLX_DTYPE_Q4_K};
    bool gpu = !rlx_vk_backend_caps(g_vk)->is_cpu || g_opts.gpu_plans;
    for (int i = 0; i < 2; i++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 4096, 0), 1.0f);
        rlx_node x2 = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 4096, 0), 1.0f);
        rlx_node w1 = vkt_graph_weight(&t, &g_rng, types[i], 2, 16, 4096, 0);
        rlx_node w2 = vkt_graph_weight(&t, &g_rng, types[i], 2, 16, 4096, 0);
        rlx_node y1 = rlx_matmul(t.g, x, w1);
        rlx_graph_mark_output(t.g, rlx_add(t.g, y1, rlx_matmul(t.g, x2, w2)), "y");
        const warm_want want[1] = {{w1, 3u << 20}}; /* W2's matvec first, then W1's with the add */
        char what[48];
        snprintf(what, sizeof what, "x W1 + x' W2, %s rows of 4096", tname(types[i]));
        warm_next_case(g_vk, &t, what, NULL, 1, want, gpu && types[i] == RLX_DTYPE_F16 ? 1 : 0);
        vkt_graph_free(&t);
    }
}

static void test_warm_next(void) {
    warm_next_stages();
    warm_next_residual();
    warm_next_moe();
    warm_next_split();
    warm_next_default();
}

/* ---- the Gated DeltaNet ops: one case each here; the recurrent state contract (sequences
 * interleaved, slots, restarts, chunk sizes, copy_state) is tests/vulkan/test_vk_recurrent.c's ---- */

static const uint8_t g_recurrent[1] = {RLX_STATE_RECURRENT};

/* t's session: one recurrent layer of one slot of `floats` floats. */
static void recurrent_session(vkt_graph *t, int64_t floats) {
    t->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = 1, .n_head_kv = 1, .head_dim = 4,
                             .layer_kind = g_recurrent, .n_state_slots = 1, .state_floats = floats};
}

/* x [8, 24] through a conv of 4 taps (its state at float 5 of the slot): prefill 5 rows, then
 * continued by 3 and by 1 (the state carried between runs), then restarted at position 0. */
static void conv_case(rlx_op op) {
    vkt_graph t;
    vkt_graph_init(&t);
    recurrent_session(&t, 5 + 3 * 24);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 8, 24, 0), 1.0f);
    rlx_node w = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 2, 24, 4, 0);
    rlx_graph_mark_output(t.g, rlx_causal_conv(t.g, x, w, rlx_state(t.g, 0, 5, vkt_shape(2, 3, 24, 0))), "y");
    step steps[4] = {{0, 5}, {5, 3}, {8, 1}, {0, 8}};
    compare_fresh(op, "x [8,24] K 4: 5 rows, +3, +1, restart", &t, steps, 4);
    vkt_graph_free(&t);
}

static void test_STATE(void) { conv_case(RLX_OP_STATE); }
static void test_CAUSAL_CONV(void) { conv_case(RLX_OP_CAUSAL_CONV); }

/* The delta rule over 2 key heads and 4 value heads, as the layer feeds it (q, k L2-normed, beta in
 * (0, 1), g < 0), in a program of `rows` rows (16+: the chunked kernel; fewer: the step kernel). */
static void delta_case(int64_t rows, int32_t chunk, const step *steps, int n_steps, const char *label) {
    vkt_graph t;
    vkt_graph_init(&t);
    recurrent_session(&t, 7 + 4 * 16 * 8);
    rlx_node q = rlx_l2_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 2, 16), 1.0f), 1e-6f);
    rlx_node k = rlx_l2_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 2, 16), 1.0f), 1e-6f);
    rlx_node v = vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 4, 8), 1.0f);
    rlx_node g = rlx_scale(t.g, rlx_sigmoid(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, 4, 0), 1.0f)), -0.5f);
    rlx_node beta = rlx_sigmoid(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, 4, 0), 1.0f));
    rlx_node st = rlx_state(t.g, 0, 7, vkt_shape(3, 4, 16, 8));
    rlx_graph_mark_output(t.g, rlx_delta_rule(t.g, q, k, v, g, beta, st, chunk), "o");
    compare_fresh(RLX_OP_DELTA_RULE, label, &t, steps, n_steps);
    /* prefill: the pre-pass and the chunk walk, the norms their own dispatches; decode: the step
     * kernel alone, normalising q and k itself (runtime/vk_fuse.c fuse_delta) */
    size_t l2 = vk_dispatch_count(&t, RLX_VK_KERNEL_l2_norm), prep = vk_dispatch_count(&t, RLX_VK_KERNEL_delta_prep);
    size_t walk = vk_dispatch_count(&t, RLX_VK_KERNEL_delta_chunk), step1 = vk_dispatch_count(&t, RLX_VK_KERNEL_delta_step);
    bool chunked = rows >= 16;
    T_CHECK(l2 == (chunked ? 2u : 0u) && prep == chunked && walk == chunked && step1 == !chunked,
            "%s: dispatches l2_norm %zu, delta_prep %zu, delta_chunk %zu, delta_step %zu", label, l2, prep, walk, step1);
    printf("  %-10s %-44s l2_norm %zu, delta_prep %zu, delta_chunk %zu, delta_step %zu\n", "DELTA_RULE", label, l2, prep,
           walk, step1);
    vkt_graph_free(&t);
}

static void test_DELTA_RULE(void) {
    step pre[3] = {{0, 37}, {37, 20}, {0, 40}};
    delta_case(40, 8, pre, 3, "[40 rows] chunk 8: 37, +20, restart");
    step dec[4] = {{0, 3}, {3, 1}, {4, 2}, {0, 1}};
    delta_case(4, 0, dec, 4, "[4 rows] step kernel: 3, +1, +2, restart");
}

static void test_DELTA_GATE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node a = vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 6, 0), 4.0f);
    rlx_node A = rlx_scale(t.g, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, 6, 0, 0), 2.0f);
    rlx_node bias = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 1, 6, 0, 0);
    rlx_graph_mark_output(t.g, rlx_delta_gate(t.g, a, A, bias), "g");
    compare1(RLX_OP_DELTA_GATE, "a [5,6] in [-4,4], dt_bias F16", &t, 4);
    vkt_graph_free(&t);
}

static void test_L2_NORM(void) {
    int64_t cols[2] = {16, 1500};
    for (int k = 0; k < 2; k++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_graph_mark_output(t.g, rlx_l2_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 2, cols[k]), 1.0f), 1e-6f),
                              "y");
        compare1(RLX_OP_L2_NORM, cols[k] < 100 ? "[3,2,16]" : "[3,2,1500]", &t, 2);
        vkt_graph_free(&t);
    }
}

static void test_SIGMOID(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_graph_mark_output(t.g, rlx_sigmoid(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 37, 0), 20.0f)), "y");
    compare1(RLX_OP_SIGMOID, "[3,37] in [-20,20]", &t, 3);
    vkt_graph_free(&t);
}

static void test_SCALE_ROWS(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 19, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_scale_rows(t.g, x, vkt_input_f32(&t, &g_rng, vkt_shape(2, 3, 1, 0), 1.0f)), "y");
    compare1(RLX_OP_SCALE_ROWS, "[3,19] by [3,1]", &t, 3);
    vkt_graph_free(&t);
}

static void test_SLICE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(3, 3, 2, 16), 1.0f);
    rlx_graph_mark_output(t.g, rlx_slice(t.g, x, 3, 8), "y");
    rlx_graph_mark_output(t.g, rlx_slice(t.g, x, 0, 16), "whole");
    compare1(RLX_OP_SLICE, "[3,2,16] columns [3, 11) and all", &t, 3);
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
    compare1(RLX_OP_MATMUL, "weights split in parts of <= 8 KiB", &t, 3);
    vkt_graph_free(&t);
    g_vk = saved;
    rlx_backend_destroy(small);
}

/* test_vk_ops: every op against the CPU reference, the fusions, with F32 pools. test_vk_ops kv-f16:
 * the kernels that touch the pools again with F16 pools (test_kv_f16; its own ctest, run beside). */
int main(int argc, char **argv) {
    /* f32 everywhere (the header): prefill matmuls on cooperative matrices in their f32-accurate
     * mode, unless the caller chose one */
    g_opts = vkt_options();
    if (g_opts.coopmat == RLX_VK_COOPMAT_DEFAULT) g_opts.coopmat = RLX_VK_COOPMAT_EXACT;
    g_vk = vkt_backend_with(&g_opts);
    if (!T_OK(rlx_backend_cpu_create(2, &g_cpu))) return 1;
    if (argc > 1 && strcmp(argv[1], "kv-f16") == 0) {
        test_kv_f16();
        rlx_backend_destroy(g_vk);
        rlx_backend_destroy(g_cpu);
        vkt_check_validation();
        return t_summary("test_vk_ops kv-f16");
    }
    for (int op = 0; op < RLX_OP_COUNT; op++) {
        printf("%s\n", rlx_op_name((rlx_op)op));
        op_tests[op]();
        T_CHECK(g_cases[op] > 0, "op %s: no parity case compared anything",
                rlx_op_name((rlx_op)op));
    }
    printf("fusions\n");
    test_fusions();
    test_kv_fusions();
    test_norm_add();
    test_norm_matvec();
    test_norm_post();
    test_argmax_post();
    test_gate_up();
    test_warm_next();
    test_unsupported_type();
    test_split_weights();
    printf("worst NMSE per op (bound %.0e):\n", TOL_F32);
    for (int op = 0; op < RLX_OP_COUNT; op++)
        printf("  %-10s %.2e over %d outputs\n", rlx_op_name((rlx_op)op), g_worst[op], g_cases[op]);
    rlx_backend_destroy(g_vk);
    rlx_backend_destroy(g_cpu);
    vkt_check_validation();
    return t_summary("test_vk_ops");
}
