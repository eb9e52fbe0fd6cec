/* Every op of ir/ops.def on the CPU backend against a naive double-precision reference written
 * here straight from the math in ops.def's comments (RMSNorm: arXiv:1910.07467; RoPE:
 * arXiv:2104.09864; GELU tanh form: arXiv:1606.08415; attention with a causal / sliding-window
 * mask and grouped KV heads as ops.def states it). Random inputs of several shapes, odd sizes
 * included. Quantized weights are random blocks with sane scale fields (block layouts:
 * llama.cpp ggml-common.h); the reference reads them through loader/core/dequant (engineer A's
 * rlx_dequantize, itself checked against gguf-py in test_dequant), so only the kernels are
 * under test here.
 *
 * Checks: |got - ref| <= atol + rtol * mag per element, where mag is the magnitude of the
 * computation (sum of |terms| for dot products, |ref| otherwise), and NMSE = sum(d^2)/sum(ref^2)
 * below a stated bound. f32 with a blocked dot of K terms has error below ~(K/16 + 4) * 2^-24 *
 * sum|terms|, so rtol 1e-5 holds for every K used here.
 *
 * The op list is generated from ops.def: an op without a test_<OP> function fails to compile. The
 * Gated DeltaNet ops' tests are in test_cpu_recurrent.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_recurrent_tests.h"
#include "ir/backend.h"
#include "loader/core/dequant.h"
#include "loader/core/half.h"
#include "test_rng.h"
#include "test_util.h"

static rlx_backend *g_cpu; /* 3 threads: exercises the pool with a count that is not the core count */

/* ---- random numbers (splitmix64) ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void) { return t_splitmix64(&rng_state); }
static float rng_unit(void) { return t_unit(&rng_state); } /* [0, 1) */
static float rng_sym(float a) { return a * (2.0f * rng_unit() - 1.0f); }                   /* [-a, a) */

static float *rand_f32(size_t n, float a) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = rng_sym(a);
    return x;
}

/* ---- weights ---- */

typedef struct test_weights {
    rlx_weight w[16];
    size_t n;
} test_weights;

static void put_f16(uint8_t *p, float v) {
    uint16_t h = rlx_f32_to_f16(v);
    memcpy(p, &h, sizeof h); /* GGUF is little-endian, like every host this runs on */
}

/* Random bytes per block, with the f16 scale fields set to small positive values so the
 * dequantized values are finite and of moderate size. Offsets: ggml-common.h block structs. */
static void fill_blocks(uint32_t type, uint8_t *data, uint64_t n_blocks, uint32_t type_size) {
    for (uint64_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = data + b * type_size;
        for (uint32_t k = 0; k < type_size; k++) blk[k] = (uint8_t)rng_next();
        switch (type) {
        case RLX_DTYPE_Q8_0: /* { f16 d; int8 qs[32] } */
        case RLX_DTYPE_Q4_0: /* { f16 d; uint8 qs[16] } */ put_f16(blk, 0.01f + 0.01f * rng_unit()); break;
        case RLX_DTYPE_Q4_K: /* { f16 d, dmin; uint8 scales[12]; (qh[32]) qs[128] } */
        case RLX_DTYPE_Q5_K:
            put_f16(blk, 0.002f + 0.003f * rng_unit());
            put_f16(blk + 2, 0.001f + 0.002f * rng_unit());
            break;
        case RLX_DTYPE_Q6_K: /* { uint8 ql[128], qh[64]; int8 scales[16]; f16 d } */
            put_f16(blk + 208, 0.0005f + 0.001f * rng_unit());
            break;
        default: break;
        }
    }
}

/* Adds a weight [dims] (row-major) of `type` with random contents. */
static const rlx_weight *add_weight(test_weights *tw, const char *name, uint32_t type, int rank, const int64_t *dims) {
    rlx_weight *w = &tw->w[tw->n++];
    uint64_t numel = 1, bytes = 0;
    w->name = name;
    w->type = type;
    w->n_dims = (uint32_t)rank;
    for (int d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) w->ne[d] = d < rank ? (uint64_t)dims[rank - 1 - d] : 1;
    for (int d = 0; d < rank; d++) numel *= (uint64_t)dims[d];
    rlx_status st = rlx_dtype_bytes(type, numel, name, &bytes);
    if (st) {
        fprintf(stderr, "test setup: %s\n", rlx_status_message(st));
        exit(1);
    }
    uint8_t *data = malloc(bytes);
    const rlx_dtype_info *info = rlx_dtype_get(type);
    if (type == RLX_DTYPE_F32) {
        for (uint64_t i = 0; i < numel; i++) ((float *)(void *)data)[i] = rng_sym(1.0f);
    } else if (type == RLX_DTYPE_F16 || type == RLX_DTYPE_BF16) {
        for (uint64_t i = 0; i < numel; i++) {
            float v = rng_sym(1.0f);
            uint16_t h = type == RLX_DTYPE_F16 ? rlx_f32_to_f16(v) : rlx_f32_to_bf16(v);
            memcpy(data + 2 * i, &h, 2);
        }
    } else {
        fill_blocks(type, data, numel / info->block_size, info->type_size);
    }
    w->data = data;
    w->nbytes = bytes;
    return w;
}

static void free_weights(test_weights *tw) {
    for (size_t i = 0; i < tw->n; i++) free((void *)tw->w[i].data);
    tw->n = 0;
}

static uint64_t weight_numel(const rlx_weight *w) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < w->n_dims; d++) n *= w->ne[d];
    return n;
}

/* The weight as the reference sees it: rlx_dequantize of the same bytes, widened to double. */
static double *weight_values(const rlx_weight *w) {
    uint64_t n = weight_numel(w);
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    rlx_dequantize(w->type, w->data, f, n);
    for (uint64_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    return d;
}

static rlx_shape weight_shape(const rlx_weight *w) {
    rlx_shape s = {.rank = (int32_t)w->n_dims};
    for (uint32_t d = 0; d < w->n_dims; d++) s.dim[w->n_dims - 1 - d] = (int64_t)w->ne[d];
    return s;
}

static rlx_node weight_node(rlx_graph *g, const rlx_weight *w) {
    return rlx_weight_node(g, w->name, w->type, weight_shape(w));
}

/* ---- running a graph ---- */

typedef struct run_spec {
    const test_weights *tw;
    rlx_state_spec kv;
    int32_t n_past, n_tokens;
    const void *const *inputs;
    void *const *outputs;
} run_spec;

/* Session, compile, one run, teardown. */
static rlx_status run_on(rlx_backend *b, const rlx_graph *g, const run_spec *r) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    rlx_status st = b->ops->session_create(b, r->tw ? r->tw->w : NULL, r->tw ? r->tw->n : 0, &r->kv, &s);
    if (!st) st = b->ops->compile(s, g, &p);
    if (!st) {
        rlx_run_args a = {.n_past = r->n_past, .n_tokens = r->n_tokens, .inputs = r->inputs, .outputs = r->outputs};
        st = b->ops->run(p, &a);
    }
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
    return st;
}

static rlx_graph *new_graph(void) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) exit(1);
    return g;
}

/* ---- comparison ---- */

typedef struct stats {
    double max_abs, max_ratio, err2, ref2;
    size_t count;
    bool finite;
} stats;

static stats stats_new(void) { return (stats){.finite = true}; }

/* mag NULL: |ref[i]| */
static void stats_add(stats *s, const float *got, const double *ref, const double *mag, size_t n, double atol,
                      double rtol) {
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!isfinite(got[i])) s->finite = false;
        double bound = atol + rtol * (mag ? mag[i] : fabs(ref[i]));
        double ratio = bound > 0 ? d / bound : (d > 0 ? INFINITY : 0);
        if (d > s->max_abs) s->max_abs = d;
        if (ratio > s->max_ratio) s->max_ratio = ratio;
        s->err2 += d * d;
        s->ref2 += ref[i] * ref[i];
    }
    s->count += n;
}

static void stats_check(const char *label, const stats *s, double atol, double rtol, double nmse_tol) {
    double nmse = s->ref2 > 0 ? s->err2 / s->ref2 : s->err2;
    printf("  %-44s %7zu values  max|d| %.3g  worst |d|/(%.0e+%.0e*mag) %.3g  NMSE %.3g (<= %.0e)\n", label, s->count,
           s->max_abs, atol, rtol, s->max_ratio, nmse, nmse_tol);
    T_CHECK(s->count > 0 && s->finite && s->max_ratio <= 1.0 && nmse <= nmse_tol,
            "%s: max|d| %.3g, worst ratio %.3g, NMSE %.3g, finite %d", label, s->max_abs, s->max_ratio, nmse,
            s->finite);
}

static void check_close(const char *label, const float *got, const double *ref, const double *mag, size_t n,
                        double atol, double rtol, double nmse_tol) {
    stats s = stats_new();
    stats_add(&s, got, ref, mag, n, atol, rtol);
    stats_check(label, &s, atol, rtol, nmse_tol);
}

static const uint32_t all_types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q8_0,
                                     RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

static uint32_t block_of(uint32_t type) { return rlx_dtype_get(type)->block_size; }

/* ====================================================================================== */
/* leaves                                                                                 */

static void test_INPUT(void) {
    rlx_graph *g = new_graph();
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){4}));
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){4, 3}));
    rlx_graph_mark_output(g, ids, "ids");
    rlx_graph_mark_output(g, x, "x");
    int32_t id_in[4] = {7, -1, 3, 2}, id_out[4] = {0};
    float x_in[12], x_out[12] = {0};
    for (int i = 0; i < 12; i++) x_in[i] = (float)i - 5.5f;
    run_spec r = {.n_tokens = 4, .inputs = (const void *[]){id_in, x_in}, .outputs = (void *[]){id_out, x_out}};
    T_OK(run_on(g_cpu, g, &r));
    T_CHECK(memcmp(id_in, id_out, sizeof id_in) == 0 && memcmp(x_in, x_out, sizeof x_in) == 0,
            "INPUT: outputs differ from inputs");
    printf("  INPUT I32 [4] and F32 [4, 3] passed through: %s\n",
           memcmp(x_in, x_out, sizeof x_in) == 0 ? "identical" : "DIFFERENT");
    rlx_graph_destroy(g);
}

/* A WEIGHT read as activations (ADD, RMS_NORM's w) in F16/BF16: the backend's f32 copy. */
static void test_WEIGHT(void) {
    test_weights tw = {0};
    const rlx_weight *b16 = add_weight(&tw, "bias.f16", RLX_DTYPE_F16, 2, (int64_t[]){3, 40});
    const rlx_weight *nb = add_weight(&tw, "norm.bf16", RLX_DTYPE_BF16, 1, (int64_t[]){40});
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){3, 40}));
    rlx_node y = rlx_add(g, x, weight_node(g, b16));
    rlx_node z = rlx_rms_norm(g, x, weight_node(g, nb), 1e-5f);
    rlx_graph_mark_output(g, y, "y");
    rlx_graph_mark_output(g, z, "z");
    float *xin = rand_f32(120, 2.0f), yout[120], zout[120];
    run_spec r = {.tw = &tw, .n_tokens = 3, .inputs = (const void *[]){xin}, .outputs = (void *[]){yout, zout}};
    T_OK(run_on(g_cpu, g, &r));
    double *bv = weight_values(b16), *nv = weight_values(nb), ry[120], rz[120];
    for (int i = 0; i < 3; i++) {
        double ss = 0;
        for (int k = 0; k < 40; k++) ss += (double)xin[i * 40 + k] * xin[i * 40 + k];
        double inv = 1.0 / sqrt(ss / 40 + 1e-5);
        for (int k = 0; k < 40; k++) {
            ry[i * 40 + k] = xin[i * 40 + k] + bv[i * 40 + k];
            rz[i * 40 + k] = xin[i * 40 + k] * inv * nv[k];
        }
    }
    check_close("WEIGHT F16 [3, 40] read by ADD", yout, ry, NULL, 120, 1e-7, 1e-6, 1e-12);
    check_close("WEIGHT BF16 [40] read by RMS_NORM", zout, rz, NULL, 120, 1e-7, 1e-5, 1e-12);
    free(bv);
    free(nv);
    free(xin);
    rlx_graph_destroy(g);

    /* compile-time checks against the session's weights */
    float dummy[120], out[120];
    run_spec e = {.tw = &tw, .n_tokens = 3, .inputs = (const void *[]){dummy}, .outputs = (void *[]){out}};
    g = new_graph();
    x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){3, 40}));
    rlx_graph_mark_output(g, rlx_add(g, x, rlx_weight_node(g, "no.such", RLX_DTYPE_F32, weight_shape(b16))), "y");
    T_ERR(run_on(g_cpu, g, &e), RLX_ERR_NOT_FOUND, "WEIGHT 'no.such' is not among the session's");
    rlx_graph_destroy(g);
    g = new_graph();
    x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){3, 40}));
    rlx_graph_mark_output(g, rlx_add(g, x, rlx_weight_node(g, "bias.f16", RLX_DTYPE_F32, weight_shape(b16))), "y");
    T_ERR(run_on(g_cpu, g, &e), RLX_ERR_INVALID_ARGUMENT,
          "'bias.f16' is declared F32[3, 40] but the session holds F16[3, 40]");
    rlx_graph_destroy(g);
    g = new_graph();
    x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){40, 3}));
    rlx_node wrong = rlx_weight_node(g, "bias.f16", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){40, 3}));
    rlx_graph_mark_output(g, rlx_add(g, x, wrong), "y");
    T_ERR(run_on(g_cpu, g, &e), RLX_ERR_INVALID_ARGUMENT, "declared F16[40, 3] but the session holds F16[3, 40]");
    rlx_graph_destroy(g);
    free_weights(&tw);
}

/* KV_CACHE: what one program writes, another program of the same session reads. */
static void test_KV_CACHE(void) {
    rlx_state_spec kv = {.n_layer = 2, .page_size = 1, .n_pages = 6, .n_head_kv = 2, .head_dim = 4, .head_dim_v = 3};
    rlx_session *s = NULL;
    rlx_program *pw = NULL, *pr = NULL;
    T_OK(g_cpu->ops->session_create(g_cpu, NULL, 0, &kv, &s));
    rlx_graph *gw = new_graph(), *gr = new_graph();
    rlx_node x = rlx_input(gw, "x", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){2, 2, 3}));
    rlx_graph_mark_output(gw, rlx_kv_write(gw, rlx_kv_cache(gw, 1, true, 6, 2, 3), x), "cache");
    rlx_graph_mark_output(gr, rlx_kv_cache(gr, 1, true, 6, 2, 3), "v1");
    rlx_graph_mark_output(gr, rlx_kv_cache(gr, 0, false, 4, 2, 4), "k0");
    T_OK(g_cpu->ops->compile(s, gw, &pw));
    T_OK(g_cpu->ops->compile(s, gr, &pr));
    float xin[12], scratch[36], v1[36], k0[32];
    for (int i = 0; i < 12; i++) xin[i] = (float)(i + 1);
    rlx_run_args wa = {.n_past = 3, .n_tokens = 2, .inputs = (const void *[]){xin}, .outputs = (void *[]){scratch}};
    rlx_run_args ra = {.n_past = 0, .n_tokens = 1, .inputs = NULL, .outputs = (void *[]){v1, k0}};
    T_OK(g_cpu->ops->run(pw, &wa));
    T_OK(g_cpu->ops->run(pr, &ra));
    int bad = 0;
    for (int i = 0; i < 36; i++) {
        float want = i >= 18 && i < 30 ? (float)(i - 18 + 1) : 0.0f; /* rows 3, 4 of [6, 2, 3] */
        bad += v1[i] != want;
    }
    for (int i = 0; i < 32; i++) bad += k0[i] != 0.0f;
    printf("  KV_CACHE layer 1 V rows [3, 5) written by one program, read by another: %d wrong of 68\n", bad);
    T_CHECK(bad == 0, "KV_CACHE: %d values differ", bad);
    g_cpu->ops->program_destroy(pw);
    g_cpu->ops->program_destroy(pr);
    rlx_graph_destroy(gw);
    rlx_graph_destroy(gr);
    /* a cache view that does not fit the session */
    gr = new_graph();
    rlx_graph_mark_output(gr, rlx_kv_cache(gr, 2, false, 6, 2, 4), "k2");
    T_ERR(g_cpu->ops->compile(s, gr, &pr), RLX_ERR_INVALID_ARGUMENT, "KV_CACHE layer 2 K [6, 2, 4] does not fit");
    rlx_graph_destroy(gr);
    gr = new_graph();
    rlx_graph_mark_output(gr, rlx_kv_cache(gr, 0, false, 7, 2, 4), "k0");
    T_ERR(g_cpu->ops->compile(s, gr, &pr), RLX_ERR_INVALID_ARGUMENT, "does not fit the session cache");
    rlx_graph_destroy(gr);
    g_cpu->ops->session_destroy(s);
}

/* ====================================================================================== */
/* lookups and products                                                                   */

static void test_EMBED(void) {
    enum { V = 11, N = 5, VALID = 4 };
    for (size_t t = 0; t < N_TYPES; t++) {
        test_weights tw = {0};
        int64_t d = 256 + (block_of(all_types[t]) == 1 ? 3 : 0);
        const rlx_weight *table = add_weight(&tw, "token_embd.weight", all_types[t], 2, (int64_t[]){V, d});
        rlx_graph *g = new_graph();
        rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){N}));
        rlx_graph_mark_output(g, rlx_embed(g, weight_node(g, table), ids), "x");
        int32_t id_in[N] = {0, 10, 3, 3, 999}; /* the last row is padding: never read */
        float *out = calloc(N * (size_t)d, sizeof *out);
        run_spec r = {.tw = &tw, .n_tokens = VALID, .inputs = (const void *[]){id_in}, .outputs = (void *[]){out}};
        T_OK(run_on(g_cpu, g, &r));
        double *tv = weight_values(table), *ref = malloc(VALID * (size_t)d * sizeof *ref);
        for (int i = 0; i < VALID; i++)
            for (int64_t k = 0; k < d; k++) ref[i * d + k] = tv[id_in[i] * d + k];
        char label[96];
        snprintf(label, sizeof label, "EMBED %s [%d, %ld], %d of %d rows", rlx_dtype_name(all_types[t]), V, (long)d,
                 VALID, N);
        check_close(label, out, ref, NULL, VALID * (size_t)d, 0, 0, 0);
        /* bad ids in valid rows: a clear error, no crash */
        id_in[2] = V;
        T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "token id 11 at row 2 is outside the table's 11 rows");
        id_in[2] = -1;
        T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "token id -1 at row 2");
        free(tv);
        free(ref);
        free(out);
        rlx_graph_destroy(g);
        free_weights(&tw);
    }
}

/* y = x @ w^T for every weight type, K odd multiples of the block size, M and n odd. */
/* w_input: w is an F32 INPUT (an activation), not a WEIGHT. */
static void matmul_case(uint32_t type, int64_t k, int64_t m, int64_t n, int32_t n_tokens, int rank, bool w_input,
                        stats *st) {
    test_weights tw = {0};
    const rlx_weight *w = add_weight(&tw, "w", type, 2, (int64_t[]){m, k});
    int64_t mid = rank == 3 ? 2 : 1, rows = n * mid;
    rlx_graph *g = new_graph();
    rlx_shape xs = rank == 3 ? rlx_shape_make(3, (int64_t[]){n, mid, k}) : rlx_shape_make(2, (int64_t[]){n, k});
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, xs);
    rlx_node wn = w_input ? rlx_input(g, "w", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){m, k})) : weight_node(g, w);
    rlx_graph_mark_output(g, rlx_matmul(g, x, wn), "y");
    float *xin = rand_f32((size_t)(rows * k), 1.0f), *y = calloc((size_t)(rows * m), sizeof *y);
    run_spec r = {.tw = &tw, .n_tokens = n_tokens, .inputs = (const void *[]){xin, w->data}, .outputs = (void *[]){y}};
    T_OK(run_on(g_cpu, g, &r));
    double *wv = weight_values(w);
    int64_t valid = (int64_t)n_tokens * mid;
    double *ref = malloc((size_t)(valid * m) * sizeof *ref), *mag = malloc((size_t)(valid * m) * sizeof *mag);
    for (int64_t i = 0; i < valid; i++)
        for (int64_t o = 0; o < m; o++) {
            double s = 0, a = 0;
            for (int64_t c = 0; c < k; c++) {
                double p = (double)xin[i * k + c] * wv[o * k + c];
                s += p;
                a += fabs(p);
            }
            ref[i * m + o] = s;
            mag[i * m + o] = a;
        }
    stats_add(st, y, ref, mag, (size_t)(valid * m), 1e-30, 1e-5);
    free(wv);
    free(ref);
    free(mag);
    free(xin);
    free(y);
    rlx_graph_destroy(g);
    free_weights(&tw);
}

static void test_MATMUL(void) {
    static const int64_t ks[] = {96, 256, 544, 768};
    static const int64_t ms[] = {1, 67};
    static const int64_t ns[] = {1, 3, 17};
    for (size_t t = 0; t < N_TYPES; t++)
        for (size_t ki = 0; ki < 4; ki++) {
            if (ks[ki] % block_of(all_types[t]) != 0) continue;
            stats st = stats_new();
            for (size_t mi = 0; mi < 2; mi++)
                for (size_t ni = 0; ni < 3; ni++)
                    matmul_case(all_types[t], ks[ki], ms[mi], ns[ni], (int32_t)ns[ni], 2, false, &st);
            matmul_case(all_types[t], ks[ki], 5, 17, 9, 2, false, &st); /* padding rows past n_tokens */
            matmul_case(all_types[t], ks[ki], 5, 3, 3, 3, false, &st);  /* x [n, 2, K] */
            if (all_types[t] == RLX_DTYPE_F32) matmul_case(all_types[t], ks[ki], 9, 3, 3, 2, true, &st);
            char label[96];
            snprintf(label, sizeof label, "MATMUL %s K=%ld M={1,5,67} n={1,3,17}%s", rlx_dtype_name(all_types[t]),
                     (long)ks[ki], all_types[t] == RLX_DTYPE_F32 ? ", w also an input" : "");
            stats_check(label, &st, 1e-30, 1e-5, 1e-10);
        }
}

/* ====================================================================================== */
/* normalisation and position                                                             */

static void norm_case(const int64_t *dims, int rank, uint32_t wtype, stats *st) {
    test_weights tw = {0};
    int64_t d = dims[rank - 1], numel = 1;
    for (int i = 0; i < rank; i++) numel *= dims[i];
    const rlx_weight *w = add_weight(&tw, "norm", wtype, 1, (int64_t[]){d});
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(rank, dims));
    rlx_graph_mark_output(g, rlx_rms_norm(g, x, weight_node(g, w), 1e-6f), "y");
    float *xin = rand_f32((size_t)numel, 30.0f), *y = malloc((size_t)numel * sizeof *y);
    run_spec r = {.tw = &tw, .n_tokens = (int32_t)dims[0], .inputs = (const void *[]){xin}, .outputs = (void *[]){y}};
    T_OK(run_on(g_cpu, g, &r));
    double *wv = weight_values(w), *ref = malloc((size_t)numel * sizeof *ref);
    for (int64_t row = 0; row < numel / d; row++) {
        double ss = 0;
        for (int64_t k = 0; k < d; k++) ss += (double)xin[row * d + k] * xin[row * d + k];
        double inv = 1.0 / sqrt(ss / (double)d + 1e-6);
        for (int64_t k = 0; k < d; k++) ref[row * d + k] = xin[row * d + k] * inv * wv[k];
    }
    stats_add(st, y, ref, NULL, (size_t)numel, 1e-7, 1e-5);
    free(wv);
    free(ref);
    free(xin);
    free(y);
    rlx_graph_destroy(g);
    free_weights(&tw);
}

static void test_RMS_NORM(void) {
    stats st = stats_new();
    norm_case((int64_t[]){3, 96}, 2, RLX_DTYPE_F32, &st);
    norm_case((int64_t[]){17, 257}, 2, RLX_DTYPE_F32, &st);
    norm_case((int64_t[]){1, 256}, 2, RLX_DTYPE_F16, &st);
    norm_case((int64_t[]){3, 4, 64}, 3, RLX_DTYPE_F32, &st); /* per-head q/k norm */
    norm_case((int64_t[]){33}, 1, RLX_DTYPE_F32, &st);       /* one row */
    stats_check("RMS_NORM [3,96] [17,257] [1,256]f16 [3,4,64] [33]", &st, 1e-7, 1e-5, 1e-12);
}

static void rope_case(rlx_rope_layout layout, int32_t dh, int32_t n_rot, bool with_ff, int32_t n_past, int32_t n,
                      float base, stats *st) {
    enum { H = 3 };
    test_weights tw = {0};
    const rlx_weight *ffw = NULL;
    if (with_ff) {
        ffw = add_weight(&tw, "rope_freqs.weight", RLX_DTYPE_F32, 1, (int64_t[]){n_rot / 2});
        for (int i = 0; i < n_rot / 2; i++) ((float *)(uintptr_t)ffw->data)[i] = 1.0f + 7.0f * rng_unit();
    }
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){n, H, dh}));
    rlx_rope_attrs a = {.layout = layout, .n_rot = n_rot, .freq_base = base};
    rlx_graph_mark_output(g, rlx_rope(g, x, ffw ? weight_node(g, ffw) : RLX_NO_NODE, a), "y");
    size_t numel = (size_t)n * H * (size_t)dh;
    float *xin = rand_f32(numel, 2.0f), *y = malloc(numel * sizeof *y);
    run_spec r = {.tw = &tw, .n_past = n_past, .n_tokens = n, .inputs = (const void *[]){xin},
                  .outputs = (void *[]){y}};
    T_OK(run_on(g_cpu, g, &r));
    double *ref = malloc(numel * sizeof *ref);
    for (size_t i = 0; i < numel; i++) ref[i] = xin[i]; /* dims past n_rot pass through */
    for (int32_t row = 0; row < n; row++)
        for (int h = 0; h < H; h++)
            for (int32_t p = 0; p < n_rot / 2; p++) {
                double theta = (double)(n_past + row) * pow((double)base, -2.0 * p / n_rot);
                if (ffw) theta /= ((const float *)ffw->data)[p];
                size_t base_i = ((size_t)row * H + (size_t)h) * (size_t)dh;
                size_t i0 = base_i + (size_t)(layout == RLX_ROPE_LAYOUT_NEOX ? p : 2 * p);
                size_t i1 = i0 + (size_t)(layout == RLX_ROPE_LAYOUT_NEOX ? n_rot / 2 : 1);
                ref[i0] = xin[i0] * cos(theta) - (double)xin[i1] * sin(theta);
                ref[i1] = xin[i0] * sin(theta) + (double)xin[i1] * cos(theta);
            }
    stats_add(st, y, ref, NULL, numel, 2e-6, 1e-6);
    free(ref);
    free(xin);
    free(y);
    rlx_graph_destroy(g);
    free_weights(&tw);
}

static void test_ROPE(void) {
    static const int32_t ns[] = {1, 3, 17}, pasts[] = {0, 5};
    for (int layout = 0; layout < 2; layout++)
        for (int partial = 0; partial < 2; partial++) {
            stats st = stats_new();
            for (int ff = 0; ff < 2; ff++)
                for (int pi = 0; pi < 2; pi++)
                    for (int ni = 0; ni < 3; ni++)
                        rope_case((rlx_rope_layout)layout, 64, partial ? 32 : 64, ff, pasts[pi], ns[ni],
                                  ff ? 500000.0f : 10000.0f, &st);
            rope_case((rlx_rope_layout)layout, 96, partial ? 24 : 96, false, 1000, 2, 1e6f, &st);
            char label[96];
            snprintf(label, sizeof label, "ROPE %s n_rot %s, freq_factors 0/1, n_past 0/5",
                     layout ? "NEOX" : "NORMAL", partial ? "Dh/2 (partial)" : "Dh");
            stats_check(label, &st, 2e-6, 1e-6, 1e-12);
        }
}

/* ====================================================================================== */
/* attention and its cache                                                                */

static void test_KV_WRITE(void) {
    enum { CAP = 8, HKV = 2, DH = 5, N = 4, ROW = HKV * DH };
    rlx_state_spec kv = {.n_layer = 2, .page_size = 1, .n_pages = 10, .n_head_kv = HKV, .head_dim = 7, .head_dim_v = DH};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    T_OK(g_cpu->ops->session_create(g_cpu, NULL, 0, &kv, &s));
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){N, HKV, DH}));
    rlx_graph_mark_output(g, rlx_kv_write(g, rlx_kv_cache(g, 1, true, CAP, HKV, DH), x), "cache");
    T_OK(g_cpu->ops->compile(s, g, &p));
    float *x1 = rand_f32(N * ROW, 1.0f), *x2 = rand_f32(N * ROW, 1.0f), out[CAP * ROW];
    rlx_run_args a1 = {.n_past = 0, .n_tokens = 3, .inputs = (const void *[]){x1}, .outputs = (void *[]){out}};
    rlx_run_args a2 = {.n_past = 3, .n_tokens = 4, .inputs = (const void *[]){x2}, .outputs = (void *[]){out}};
    T_OK(g_cpu->ops->run(p, &a1));
    T_OK(g_cpu->ops->run(p, &a2));
    double ref[CAP * ROW] = {0};
    for (int i = 0; i < 3 * ROW; i++) ref[i] = x1[i];
    for (int i = 0; i < 4 * ROW; i++) ref[3 * ROW + i] = x2[i];
    check_close("KV_WRITE rows [0,3) then [3,7) of cap 8, row 7 untouched", out, ref, NULL, CAP * ROW, 0, 0, 0);
    /* past the capacity: an error, and the cache is left as it was */
    rlx_run_args bad = {.n_past = 5, .n_tokens = 4, .inputs = (const void *[]){x2}, .outputs = (void *[]){out}};
    T_ERR(g_cpu->ops->run(p, &bad), RLX_ERR_INVALID_ARGUMENT,
          "KV_WRITE: rows [n_past 5, n_past + n_tokens = 9) exceed the cache capacity 8");
    rlx_run_args again = {.n_past = 8, .n_tokens = 1, .inputs = (const void *[]){x2}, .outputs = (void *[]){out}};
    T_ERR(g_cpu->ops->run(p, &again), RLX_ERR_INVALID_ARGUMENT, "exceed the cache capacity 8");
    g_cpu->ops->program_destroy(p);
    rlx_graph_destroy(g);
    g_cpu->ops->session_destroy(s);
    free(x1);
    free(x2);
}

static void attention_case(int64_t h, int64_t hkv, int32_t window, int32_t n_past, int32_t n, int32_t n_tokens,
                           int64_t dv, stats *st) {
    const int64_t dh = 64, t_len = n_past + n + 2;
    const float scale = 1.0f / sqrtf((float)dh);
    rlx_graph *g = new_graph();
    rlx_node q = rlx_input(g, "q", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){n, h, dh}));
    rlx_node k = rlx_input(g, "k", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){t_len, hkv, dh}));
    rlx_node v = rlx_input(g, "v", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){t_len, hkv, dv}));
    rlx_graph_mark_output(g, rlx_attention(g, q, k, v, scale, window), "o");
    float *qi = rand_f32((size_t)(n * h * dh), 3.0f), *ki = rand_f32((size_t)(t_len * hkv * dh), 3.0f);
    float *vi = rand_f32((size_t)(t_len * hkv * dv), 1.0f), *o = calloc((size_t)(n * h * dv), sizeof *o);
    run_spec r = {.n_past = n_past, .n_tokens = n_tokens, .inputs = (const void *[]){qi, ki, vi},
                  .outputs = (void *[]){o}};
    T_OK(run_on(g_cpu, g, &r));
    double *ref = calloc((size_t)(n_tokens * h * dv), sizeof *ref), *w = malloc((size_t)t_len * sizeof *w);
    for (int32_t i = 0; i < n_tokens; i++)
        for (int64_t hh = 0; hh < h; hh++) {
            int64_t pos = n_past + i, kh = hh / (h / hkv);
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < t_len; j++) {
                bool visible = j <= pos && (window == 0 || pos - j < window);
                w[j] = -INFINITY;
                if (!visible) continue;
                double s = 0;
                for (int64_t c = 0; c < dh; c++) s += (double)qi[(i * h + hh) * dh + c] * ki[(j * hkv + kh) * dh + c];
                w[j] = s * scale;
                if (w[j] > mx) mx = w[j];
            }
            for (int64_t j = 0; j < t_len; j++) sum += w[j] == -INFINITY ? 0 : exp(w[j] - mx);
            for (int64_t j = 0; j < t_len; j++) {
                if (w[j] == -INFINITY) continue;
                double p = exp(w[j] - mx) / sum;
                for (int64_t c = 0; c < dv; c++) ref[(i * h + hh) * dv + c] += p * vi[(j * hkv + kh) * dv + c];
            }
        }
    stats_add(st, o, ref, NULL, (size_t)(n_tokens * h * dv), 1e-5, 1e-5);
    free(ref);
    free(w);
    free(qi);
    free(ki);
    free(vi);
    free(o);
    rlx_graph_destroy(g);
}

static void test_ATTENTION(void) {
    static const int64_t heads[][2] = {{4, 2}, {4, 1}, {4, 4}};
    static const int32_t windows[] = {0, 3}, pasts[] = {0, 5}, ns[] = {1, 3, 17};
    for (int hi = 0; hi < 3; hi++) {
        stats st = stats_new();
        for (int wi = 0; wi < 2; wi++)
            for (int pi = 0; pi < 2; pi++)
                for (int ni = 0; ni < 3; ni++)
                    attention_case(heads[hi][0], heads[hi][1], windows[wi], pasts[pi], ns[ni], ns[ni], 64, &st);
        attention_case(heads[hi][0], heads[hi][1], 0, 2, 17, 6, 48, &st); /* Dv != Dh, padding rows */
        char label[96];
        snprintf(label, sizeof label, "ATTENTION H %ld / H_kv %ld, window 0/3, n_past 0/5, n 1/3/17",
                 (long)heads[hi][0], (long)heads[hi][1]);
        stats_check(label, &st, 1e-5, 1e-5, 1e-11);
    }
}

/* ====================================================================================== */
/* elementwise and reductions                                                             */

typedef double (*ref_unary)(double x, double attr);

static double ref_scale(double x, double s) { return x * s; }
static double ref_silu(double x, double s) { (void)s; return x / (1.0 + exp(-x)); }
static double ref_gelu(double x, double s) {
    (void)s;
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

typedef enum { EW_ADD, EW_MUL, EW_SCALE, EW_SILU, EW_GELU, EW_SOFTMAX } ew_kind;

static void elementwise_case(ew_kind kind, const int64_t *dims, int rank, int32_t n_tokens, stats *st) {
    int64_t numel = 1, d = dims[rank - 1];
    for (int i = 0; i < rank; i++) numel *= dims[i];
    rlx_graph *g = new_graph();
    rlx_shape sh = rlx_shape_make(rank, dims);
    rlx_node a = rlx_input(g, "a", RLX_DTYPE_F32, sh), b = rlx_input(g, "b", RLX_DTYPE_F32, sh), y;
    const float attr = -0.37f;
    switch (kind) {
    case EW_ADD: y = rlx_add(g, a, b); break;
    case EW_MUL: y = rlx_mul(g, a, b); break;
    case EW_SCALE: y = rlx_scale(g, a, attr); break;
    case EW_SILU: y = rlx_silu(g, a); break;
    case EW_GELU: y = rlx_gelu_tanh(g, a); break;
    default: y = rlx_softmax(g, a); break;
    }
    rlx_graph_mark_output(g, y, "y");
    float *ai = rand_f32((size_t)numel, 8.0f), *bi = rand_f32((size_t)numel, 8.0f), *out = malloc((size_t)numel * 4);
    if (kind == EW_SOFTMAX) ai[0] = 80.0f; /* exp would overflow without the max subtraction */
    run_spec r = {.n_tokens = n_tokens, .inputs = (const void *[]){ai, bi}, .outputs = (void *[]){out}};
    T_OK(run_on(g_cpu, g, &r));
    int64_t valid = numel / dims[0] * n_tokens;
    double *ref = malloc((size_t)numel * sizeof *ref);
    static const ref_unary unary[] = {[EW_SCALE] = ref_scale, [EW_SILU] = ref_silu, [EW_GELU] = ref_gelu};
    for (int64_t i = 0; i < valid; i++) {
        if (kind == EW_ADD) ref[i] = (double)ai[i] + bi[i];
        else if (kind == EW_MUL) ref[i] = (double)ai[i] * bi[i];
        else if (kind != EW_SOFTMAX) ref[i] = unary[kind](ai[i], attr);
    }
    if (kind == EW_SOFTMAX)
        for (int64_t row = 0; row < valid / d; row++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < d; k++) mx = fmax(mx, ai[row * d + k]);
            for (int64_t k = 0; k < d; k++) sum += exp(ai[row * d + k] - mx);
            for (int64_t k = 0; k < d; k++) ref[row * d + k] = exp(ai[row * d + k] - mx) / sum;
        }
    stats_add(st, out, ref, NULL, (size_t)valid, 1e-7, 2e-6);
    free(ref);
    free(ai);
    free(bi);
    free(out);
    rlx_graph_destroy(g);
}

static void elementwise_test(ew_kind kind, const char *name) {
    stats st = stats_new();
    elementwise_case(kind, (int64_t[]){3, 5}, 2, 3, &st);
    elementwise_case(kind, (int64_t[]){17, 96}, 2, 11, &st);
    elementwise_case(kind, (int64_t[]){2, 3, 7}, 3, 2, &st);
    elementwise_case(kind, (int64_t[]){1, 513}, 2, 1, &st);
    char label[96];
    snprintf(label, sizeof label, "%s [3,5] [17,96]/11 rows [2,3,7] [1,513]", name);
    stats_check(label, &st, 1e-7, 2e-6, 1e-12);
}

static void test_ADD(void) { elementwise_test(EW_ADD, "ADD"); }
static void test_MUL(void) { elementwise_test(EW_MUL, "MUL"); }
static void test_SCALE(void) { elementwise_test(EW_SCALE, "SCALE"); }
static void test_SILU(void) { elementwise_test(EW_SILU, "SILU"); }
static void test_GELU_TANH(void) { elementwise_test(EW_GELU, "GELU_TANH"); }
static void test_SOFTMAX(void) { elementwise_test(EW_SOFTMAX, "SOFTMAX"); }

static void test_ARGMAX(void) {
    enum { N = 5, V = 33 };
    float *x = rand_f32(N * V, 4.0f);
    for (int k = 0; k < V; k++) x[k] = 1.5f;        /* row 0: all equal -> 0 */
    x[V + 3] = x[V + 20] = 9.0f;                     /* row 1: tie -> the first, 3 */
    x[2 * V + V - 1] = 50.0f;                        /* row 2: the last index */
    x[3 * V + 7] = -INFINITY;                        /* row 3: -inf present */
    rlx_graph *g = new_graph();
    rlx_node xi = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){N, V}));
    rlx_graph_mark_output(g, rlx_argmax(g, xi), "ids");
    int32_t ids[N];
    run_spec r = {.n_tokens = N, .inputs = (const void *[]){x}, .outputs = (void *[]){ids}};
    T_OK(run_on(g_cpu, g, &r));
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        int best = 0;
        for (int k = 1; k < V; k++)
            if (x[i * V + k] > x[i * V + best]) best = k;
        wrong += ids[i] != best;
    }
    printf("  ARGMAX [5, 33] with ties and -inf: %d of %d rows wrong (row 1 tie -> %d, expected 3)\n", wrong, N,
           ids[1]);
    T_CHECK(wrong == 0 && ids[0] == 0 && ids[1] == 3 && ids[2] == V - 1, "ARGMAX: %d rows wrong", wrong);
    free(x);
    rlx_graph_destroy(g);
}

/* ====================================================================================== */
/* views                                                                                  */

static void test_RESHAPE(void) {
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){4, 12}));
    rlx_node v = rlx_reshape(g, x, rlx_shape_make(3, (int64_t[]){4, 3, 4}));
    rlx_node s = rlx_reshape(g, rlx_scale(g, v, 2.0f), rlx_shape_make(2, (int64_t[]){4, 12}));
    rlx_graph_mark_output(g, v, "view");
    rlx_graph_mark_output(g, s, "scaled");
    float *xi = rand_f32(48, 1.0f), o1[48], o2[48];
    run_spec r = {.n_tokens = 4, .inputs = (const void *[]){xi}, .outputs = (void *[]){o1, o2}};
    T_OK(run_on(g_cpu, g, &r));
    double ref1[48], ref2[48];
    for (int i = 0; i < 48; i++) ref1[i] = xi[i], ref2[i] = 2.0 * xi[i];
    check_close("RESHAPE [4,12]->[4,3,4] (view of an input)", o1, ref1, NULL, 48, 0, 0, 0);
    check_close("RESHAPE [4,3,4]->[4,12] of a computed node", o2, ref2, NULL, 48, 0, 0, 0);
    free(xi);
    rlx_graph_destroy(g);
}

static void test_LAST_ROW(void) {
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){5, 7}));
    rlx_graph_mark_output(g, rlx_last_row(g, rlx_scale(g, x, 1.0f)), "last");
    float *xi = rand_f32(35, 1.0f), out[7];
    for (int32_t nt = 1; nt <= 5; nt += 2) {
        run_spec r = {.n_tokens = nt, .inputs = (const void *[]){xi}, .outputs = (void *[]){out}};
        T_OK(run_on(g_cpu, g, &r));
        double ref[7];
        for (int k = 0; k < 7; k++) ref[k] = xi[(nt - 1) * 7 + k];
        char label[64];
        snprintf(label, sizeof label, "LAST_ROW [5,7] at n_tokens %d", nt);
        check_close(label, out, ref, NULL, 7, 0, 0, 0);
    }
    free(xi);
    rlx_graph_destroy(g);
}

/* Row r of the output is x's row idx[r] while idx[r] < n_tokens, else 0 (ir/ops.def). */
static void test_GATHER_ROWS(void) {
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){5, 7}));
    rlx_node idx = rlx_input(g, "idx", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){4}));
    rlx_graph_mark_output(g, rlx_gather_rows(g, rlx_scale(g, x, 1.0f), idx), "rows");
    float *xi = rand_f32(35, 1.0f), out[28];
    int32_t ids[4] = {2, -1, 4, 0};
    for (int32_t nt = 3; nt <= 5; nt += 2) {
        run_spec r = {.n_tokens = nt, .inputs = (const void *[]){xi, ids}, .outputs = (void *[]){out}};
        T_OK(run_on(g_cpu, g, &r));
        double ref[28];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 7; k++) ref[i * 7 + k] = ids[i] >= 0 && ids[i] < nt ? xi[ids[i] * 7 + k] : 0.0;
        char label[64];
        snprintf(label, sizeof label, "GATHER_ROWS [5,7] by {2,-1,4,0} at n_tokens %d", nt);
        check_close(label, out, ref, NULL, 28, 0, 0, 0);
    }
    free(xi);
    rlx_graph_destroy(g);
}

/* ====================================================================================== */
/* mixture of experts                                                                     */

/* Qwen3-MoE routing in double: softmax, top_k by probability (ties: lower index), renormalise. */
static void ref_route(const float *logits, int64_t e, int32_t top_k, bool norm, double *out) {
    double mx = -INFINITY, sum = 0, kept = 0;
    for (int64_t i = 0; i < e; i++) mx = fmax(mx, logits[i]);
    for (int64_t i = 0; i < e; i++) sum += exp(logits[i] - mx);
    bool picked[64] = {false};
    for (int64_t i = 0; i < e; i++) out[i] = 0;
    for (int32_t k = 0; k < top_k; k++) {
        int64_t best = -1;
        for (int64_t i = 0; i < e; i++)
            if (!picked[i] && (best < 0 || logits[i] > logits[best])) best = i;
        picked[best] = true;
        out[best] = exp(logits[best] - mx) / sum;
        kept += out[best];
    }
    if (norm)
        for (int64_t i = 0; i < e; i++) out[i] /= kept;
}

static void test_MOE_ROUTE(void) {
    enum { N = 6, E = 8 };
    stats st = stats_new();
    for (int32_t top_k = 1; top_k <= 3; top_k++)
        for (int norm = 0; norm < 2; norm++) {
            float *x = rand_f32(N * E, 3.0f);
            for (int k = 0; k < E; k++) x[E + k] = 0.25f; /* row 1: all tied -> experts 0..top_k-1 */
            x[2 * E + 5] = x[2 * E + 6] = 9.0f;           /* row 2: tie at the top */
            rlx_graph *g = new_graph();
            rlx_node xi = rlx_input(g, "logits", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){N, E}));
            rlx_graph_mark_output(g, rlx_moe_route(g, xi, top_k, norm), "route");
            float out[N * E];
            run_spec r = {.n_tokens = N, .inputs = (const void *[]){x}, .outputs = (void *[]){out}};
            T_OK(run_on(g_cpu, g, &r));
            double ref[N * E];
            for (int i = 0; i < N; i++) ref_route(x + i * E, E, top_k, norm, ref + i * E);
            stats_add(&st, out, ref, NULL, N * E, 1e-7, 1e-6);
            free(x);
            rlx_graph_destroy(g);
        }
    stats_check("MOE_ROUTE [6,8] top_k 1..3, norm 0/1, tied rows", &st, 1e-7, 1e-6, 1e-12);
}

static void moe_ffn_case(uint32_t type, int32_t n, int32_t n_tokens, stats *st) {
    enum { E = 4, D = 256, F = 256 };
    test_weights tw = {0};
    const rlx_weight *gate = add_weight(&tw, "gate", type, 3, (int64_t[]){E, F, D});
    const rlx_weight *up = add_weight(&tw, "up", type, 3, (int64_t[]){E, F, D});
    const rlx_weight *down = add_weight(&tw, "down", type, 3, (int64_t[]){E, D, F});
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){n, D}));
    rlx_node route = rlx_input(g, "route", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){n, E}));
    rlx_graph_mark_output(g, rlx_moe_ffn(g, x, route, weight_node(g, gate), weight_node(g, up), weight_node(g, down)),
                          "y");
    float *xi = rand_f32((size_t)n * D, 1.0f), *ri = calloc((size_t)n * E, sizeof *ri);
    for (int32_t i = 0; i < n; i++) { /* two experts per row, never expert 3 */
        int a = (int)(rng_next() % 3), b = (a + 1 + (int)(rng_next() % 2)) % 3;
        ri[i * E + a] = 0.25f + 0.5f * rng_unit();
        ri[i * E + b] = 1.0f - ri[i * E + a];
    }
    float *y = calloc((size_t)n * D, sizeof *y);
    run_spec r = {.tw = &tw, .n_tokens = n_tokens, .inputs = (const void *[]){xi, ri}, .outputs = (void *[]){y}};
    T_OK(run_on(g_cpu, g, &r));
    double *gv = weight_values(gate), *uv = weight_values(up), *dv = weight_values(down);
    double *ref = calloc((size_t)n_tokens * D, sizeof *ref), *mag = calloc((size_t)n_tokens * D, sizeof *mag);
    double hbuf[F], habs[F];
    for (int32_t i = 0; i < n_tokens; i++)
        for (int e = 0; e < E; e++) {
            double re = ri[i * E + e];
            if (re == 0) continue;
            for (int f = 0; f < F; f++) {
                double gs = 0, us = 0, ga = 0, ua = 0;
                for (int c = 0; c < D; c++) {
                    double xv = xi[i * D + c];
                    gs += xv * gv[((size_t)e * F + f) * D + c];
                    us += xv * uv[((size_t)e * F + f) * D + c];
                    ga += fabs(xv * gv[((size_t)e * F + f) * D + c]);
                    ua += fabs(xv * uv[((size_t)e * F + f) * D + c]);
                }
                double sg = 1.0 / (1.0 + exp(-gs));
                hbuf[f] = gs * sg * us;
                /* first-order error scale of silu(g) * u when g and u carry dot-product errors
                 * proportional to ga and ua (|silu'| <= 1.1), plus the rounding of h itself */
                habs[f] = 1.1 * fabs(us) * ga + fabs(gs * sg) * ua + fabs(hbuf[f]);
            }
            for (int c = 0; c < D; c++) {
                double s = 0, a = 0;
                for (int f = 0; f < F; f++) {
                    double w = dv[((size_t)e * D + c) * F + f];
                    s += w * hbuf[f];
                    a += fabs(w) * habs[f] + fabs(w * hbuf[f]);
                }
                ref[i * D + c] += re * s;
                mag[i * D + c] += re * a;
            }
        }
    stats_add(st, y, ref, mag, (size_t)n_tokens * D, 1e-30, 1e-5);
    free(gv);
    free(uv);
    free(dv);
    free(ref);
    free(mag);
    free(xi);
    free(ri);
    free(y);
    rlx_graph_destroy(g);
    free_weights(&tw);
}

static void test_MOE_FFN(void) {
    static const uint32_t types[] = {RLX_DTYPE_F32, RLX_DTYPE_BF16, RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_K};
    for (size_t t = 0; t < 4; t++) {
        stats st = stats_new();
        moe_ffn_case(types[t], 1, 1, &st);
        moe_ffn_case(types[t], 5, 5, &st);
        moe_ffn_case(types[t], 9, 6, &st);
        char label[96];
        snprintf(label, sizeof label, "MOE_FFN %s E=4 D=F=256 top-2, n 1/5/9(6)", rlx_dtype_name(types[t]));
        stats_check(label, &st, 1e-30, 1e-5, 1e-10);
    }
}

/* ====================================================================================== */
/* not tied to one op                                                                     */

/* Same bits with 1 and 4 threads: every output element is computed by one thread in a fixed order. */
static void test_threads_bitwise(void) {
    rlx_backend *b1 = NULL, *b4 = NULL;
    T_OK(rlx_backend_cpu_create(1, &b1));
    T_OK(rlx_backend_cpu_create(4, &b4));
    static const uint32_t types[] = {RLX_DTYPE_F32, RLX_DTYPE_Q4_K, RLX_DTYPE_Q8_0};
    for (size_t t = 0; t < 3; t++) {
        test_weights tw = {0};
        const rlx_weight *w = add_weight(&tw, "w", types[t], 2, (int64_t[]){301, 512});
        rlx_graph *g = new_graph();
        rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){17, 4, 128}));
        rlx_node k = rlx_input(g, "k", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){40, 2, 128}));
        rlx_node flat = rlx_reshape(g, x, rlx_shape_make(2, (int64_t[]){17, 512}));
        rlx_graph_mark_output(g, rlx_matmul(g, flat, weight_node(g, w)), "y");
        rlx_graph_mark_output(g, rlx_attention(g, x, k, k, 0.1f, 0), "o");
        float *xi = rand_f32(17 * 512, 1.0f), *ki = rand_f32(40 * 256, 1.0f);
        float *y1 = malloc(17 * 301 * 4), *y4 = malloc(17 * 301 * 4);
        float *o1 = malloc(17 * 512 * 4), *o4 = malloc(17 * 512 * 4);
        run_spec r1 = {.tw = &tw, .n_past = 20, .n_tokens = 17, .inputs = (const void *[]){xi, ki},
                       .outputs = (void *[]){y1, o1}};
        run_spec r4 = r1;
        r4.outputs = (void *[]){y4, o4};
        T_OK(run_on(b1, g, &r1));
        T_OK(run_on(b4, g, &r4));
        bool same = memcmp(y1, y4, 17 * 301 * 4) == 0 && memcmp(o1, o4, 17 * 512 * 4) == 0;
        printf("  threads 1 vs 4: MATMUL %s [17,512]x[301,512] and ATTENTION [17,4,128] over 40: %s\n",
               rlx_dtype_name(types[t]), same ? "bitwise identical" : "DIFFERENT");
        T_CHECK(same, "1 and 4 threads differ for %s", rlx_dtype_name(types[t]));
        free(xi);
        free(ki);
        free(y1);
        free(y4);
        free(o1);
        free(o4);
        rlx_graph_destroy(g);
        free_weights(&tw);
    }
    rlx_backend_destroy(b1);
    rlx_backend_destroy(b4);
}

/* Run-time arguments out of range: errors, not crashes. */
static void test_run_args(void) {
    rlx_graph *g = new_graph();
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){4, 3}));
    rlx_graph_mark_output(g, rlx_silu(g, x), "y");
    float xi[12] = {0}, out[12];
    run_spec r = {.n_tokens = 0, .inputs = (const void *[]){xi}, .outputs = (void *[]){out}};
    T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "n_tokens 0 is outside [1, 4 rows of the graph]");
    r.n_tokens = 5;
    T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "n_tokens 5 is outside [1, 4 rows of the graph]");
    r.n_tokens = 2;
    r.n_past = -1;
    T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "n_past -1 is negative");
    r.n_past = 0;
    r.inputs = (const void *[]){NULL};
    T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "input 0 is NULL");
    rlx_graph_destroy(g);
    /* a graph that does not verify does not compile */
    g = new_graph();
    x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){4, 3}));
    rlx_node z = rlx_input(g, "z", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){4, 2}));
    rlx_graph_mark_output(g, rlx_add(g, x, z), "y");
    r.inputs = (const void *[]){xi, xi};
    T_ERR(run_on(g_cpu, g, &r), RLX_ERR_INVALID_ARGUMENT, "%2 ADD: a [4, 3] and b [4, 2] differ in shape");
    rlx_graph_destroy(g);
    printf("  run arguments n_tokens 0/5 of 4, n_past -1, NULL input, unverified graph: errors as expected\n");
}

/* ====================================================================================== */

typedef void (*op_test)(void);

static const op_test op_tests[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = test_##name,
#include "ir/ops.def"
#undef RLX_OP
};

int main(void) {
    if (!T_OK(rlx_backend_cpu_create(3, &g_cpu))) return 1;
    for (int op = 0; op < RLX_OP_COUNT; op++) {
        printf("%s\n", rlx_op_name((rlx_op)op));
        T_CHECK(op_tests[op] != NULL, "op %s has no test", rlx_op_name((rlx_op)op));
        if (op_tests[op]) op_tests[op]();
    }
    printf("threads\n");
    test_threads_bitwise();
    printf("run arguments\n");
    test_run_args();
    test_recurrent_done();
    rlx_backend_destroy(g_cpu);
    return t_summary("test_cpu_ops");
}
