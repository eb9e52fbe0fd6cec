/* The Vulkan backend's deterministic mode (rlx_vk_options.deterministic, RLX_VK_DETERMINISTIC;
 * runtime/vk_plan.c): a row's bits do not depend on the rows run beside it, its index among them,
 * the row count or the KV capacity of the program.
 *
 * The property, in the legacy single-sequence form (rows of one sequence at consecutive positions
 * over a KV cache filled by an earlier run): after the same fill, row i of an R-row run at n_past
 * has the same bits as a 1-row run at n_past + i whose earlier rows were run one by one (the prompt
 * chunked by 1), for R in {1, 3, 8, 40, 130}; so do the KV cache rows both leave behind. Each R-row
 * program also runs with n_tokens = R - 1 (a bucket with a padding row). The 1-row program of the
 * attention cases has another KV capacity than the R-row ones (another bucket). The expected values
 * are the 1-row runs themselves: the property, not the code under test, says what they must be.
 *
 * Cases: MATMUL of every weight type the kernels decode (and rows of k % 32 != 0, matmul.comp's),
 * RMS_NORM (long rows, head-sized rows), q/k norm + ROPE + KV_WRITE, ATTENTION at KV capacities
 * where the default mode splits keys (GQA, a window), MOE_ROUTE + MOE_FFN, and a whole small layer
 * (norms, q/k norms, RoPE, cache writes, attention, residual adds, a gated FFN, the LM head and
 * its ARGMAX). In deterministic mode every case must be bit for bit, and no program may dispatch
 * a row-count-specific kernel (matvec, cooperative matmul, prefill attention, key-split combine,
 * the one-row attention step, MOE_FFN's grouped path). The default mode runs the same cases and prints how far it is from
 * bitwise (rows that differ, largest difference), to show the test can tell: it may trade this
 * for speed. Also: rlx_backend_select_opts with rlx_backend_opts.deterministic (what rlx_engine_open
 * passes for rlx_engine_opts.deterministic) makes a Vulkan backend in that mode, and a CPU one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "runners/backend_select.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_internal.h"
#include "test_util.h"
#include "test_vk_util.h"

#define MAX_R 130
#define MAX_OUT 4
static const int32_t g_rs[] = {1, 3, 8, 40, 130};
#define N_RS (int)(sizeof g_rs / sizeof g_rs[0])

static rlx_backend *g_vk;
static rlx_vk_options g_env;
static bool g_det; /* the mode of the current pass */

/* ---- cases: graphs built as the runners build them ---- */

typedef struct case_arg {
    uint32_t type;
    int64_t k, m, h, hkv, dh, cap, cap_alone;
    int32_t window;
} case_arg;

/* A builder: t's graph for `rows` rows over KV views of cap positions; weights from a fixed seed
 * (the same for every row count), inputs of any contents (the harness fills them). */
typedef void (*build_fn)(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a);

typedef struct det_case {
    const char *name;
    build_fn build;
    case_arg arg;
    int32_t n_past; /* cache rows filled first; 0 where the graph has no cache */
} det_case;

static vkt_rng g_junk = {1}; /* input contents the harness replaces */

static void build_matmul(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a) {
    (void)cap;
    vkt_rng w = {0x5EED0001};
    rlx_node x = vkt_input_f32(t, &g_junk, vkt_shape(2, rows, a->k, 0), 1.0f);
    rlx_graph_mark_output(t->g, rlx_matmul(t->g, x, vkt_graph_weight(t, &w, a->type, 2, a->m, a->k, 0)), "y");
}

/* RMS_NORM over rows of k (h == 0), or over h heads of k each (the q/k norm's head-sized rows). */
static void build_norm(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a) {
    (void)cap;
    vkt_rng w = {0x5EED0002};
    rlx_shape s = a->h ? vkt_shape(3, rows, a->h, a->k) : vkt_shape(2, rows, a->k, 0);
    rlx_node x = vkt_input_f32(t, &g_junk, s, 1.0f);
    rlx_node nw = vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, a->k, 0, 0);
    rlx_graph_mark_output(t->g, rlx_rms_norm(t->g, x, nw, 1e-6f), "y");
}

static void kv_spec(vkt_graph *t, const case_arg *a) {
    int64_t cap = a->cap > a->cap_alone ? a->cap : a->cap_alone;
    t->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = (int32_t)cap, .n_head_kv = (int32_t)a->hkv,
                             .head_dim = (int32_t)a->dh};
}

/* q/k norm + RoPE (NEOX) of q and k, k written into the cache (its KV_WRITE carries the RoPE and V's
 * write); the outputs are q's rows and the written caches. */
static void build_rope_kv(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a) {
    vkt_rng w = {0x5EED0003};
    kv_spec(t, a);
    rlx_node q = vkt_input_f32(t, &g_junk, vkt_shape(3, rows, a->h, a->dh), 1.0f);
    rlx_node k = vkt_input_f32(t, &g_junk, vkt_shape(3, rows, a->hkv, a->dh), 1.0f);
    rlx_node v = vkt_input_f32(t, &g_junk, vkt_shape(3, rows, a->hkv, a->dh), 1.0f);
    rlx_node qw = vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, a->dh, 0, 0);
    rlx_node kw = vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, a->dh, 0, 0);
    rlx_rope_attrs ra = {RLX_ROPE_LAYOUT_NEOX, (int32_t)a->dh, 1000000.0f};
    q = rlx_rope(t->g, rlx_rms_norm(t->g, q, qw, 1e-6f), RLX_NO_NODE, ra);
    k = rlx_rope(t->g, rlx_rms_norm(t->g, k, kw, 1e-6f), RLX_NO_NODE, ra);
    rlx_graph_mark_output(t->g, q, "q");
    rlx_graph_mark_output(t->g, rlx_kv_write(t->g, rlx_kv_cache(t->g, 0, false, cap, a->hkv, a->dh), k), "kc");
    rlx_graph_mark_output(t->g, rlx_kv_write(t->g, rlx_kv_cache(t->g, 0, true, cap, a->hkv, a->dh), v), "vc");
}

/* The runners' attention: k and v written into the cache, then ATTENTION over it. */
static void build_attention(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a) {
    kv_spec(t, a);
    rlx_node q = vkt_input_f32(t, &g_junk, vkt_shape(3, rows, a->h, a->dh), 1.0f);
    rlx_node k = vkt_input_f32(t, &g_junk, vkt_shape(3, rows, a->hkv, a->dh), 1.0f);
    rlx_node v = vkt_input_f32(t, &g_junk, vkt_shape(3, rows, a->hkv, a->dh), 1.0f);
    rlx_node kc = rlx_kv_write(t->g, rlx_kv_cache(t->g, 0, false, cap, a->hkv, a->dh), k);
    rlx_node vc = rlx_kv_write(t->g, rlx_kv_cache(t->g, 0, true, cap, a->hkv, a->dh), v);
    rlx_graph_mark_output(t->g, rlx_attention(t->g, q, kc, vc, 0.125f, a->window), "o");
}

/* The router (F32), top-2 of 4 experts, and the experts' gated FFN (Q4_K gate, Q8_0 up, Q6_K down). */
static void build_moe(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a) {
    (void)cap;
    vkt_rng w = {0x5EED0004};
    int64_t d = a->k, f = a->m, e = 4;
    rlx_node x = vkt_input_f32(t, &g_junk, vkt_shape(2, rows, d, 0), 1.0f);
    rlx_node logits = rlx_matmul(t->g, x, vkt_graph_weight(t, &w, RLX_DTYPE_F32, 2, e, d, 0));
    rlx_node route = rlx_moe_route(t->g, logits, 2, true);
    rlx_node y = rlx_moe_ffn(t->g, x, route, vkt_graph_weight(t, &w, RLX_DTYPE_Q4_K, 3, e, f, d),
                             vkt_graph_weight(t, &w, RLX_DTYPE_Q8_0, 3, e, f, d),
                             vkt_graph_weight(t, &w, RLX_DTYPE_Q6_K, 3, e, d, f));
    rlx_graph_mark_output(t->g, y, "y");
}

/* One decoder layer as qwen3's runner builds it (norm; q/k/v of Q4_K/Q8_0/F16; q/k norms; RoPE;
 * cache writes; attention; o of F32 + residual; norm; gate Q6_K / up Q4_K with SiLU; down Q8_0 +
 * residual), then the final norm, an F16 LM head and its ARGMAX: logits and ids are the outputs. */
static void build_layer(vkt_graph *t, int64_t rows, int64_t cap, const case_arg *a) {
    vkt_rng w = {0x5EED0005};
    int64_t d = a->k, f = a->m, h = a->h, hkv = a->hkv, dh = a->dh, vocab = 320;
    kv_spec(t, a);
    rlx_graph *g = t->g;
    rlx_node x = vkt_input_f32(t, &g_junk, vkt_shape(2, rows, d, 0), 1.0f);
    rlx_node hn = rlx_rms_norm(g, x, vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, d, 0, 0), 1e-6f);
    rlx_node q = rlx_matmul(g, hn, vkt_graph_weight(t, &w, RLX_DTYPE_Q4_K, 2, h * dh, d, 0));
    rlx_node k = rlx_matmul(g, hn, vkt_graph_weight(t, &w, RLX_DTYPE_Q8_0, 2, hkv * dh, d, 0));
    rlx_node v = rlx_matmul(g, hn, vkt_graph_weight(t, &w, RLX_DTYPE_F16, 2, hkv * dh, d, 0));
    rlx_node qk_w = vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, dh, 0, 0);
    rlx_rope_attrs ra = {RLX_ROPE_LAYOUT_NEOX, (int32_t)dh, 1000000.0f};
    q = rlx_rope(g, rlx_rms_norm(g, rlx_reshape(g, q, vkt_shape(3, rows, h, dh)), qk_w, 1e-6f), RLX_NO_NODE, ra);
    k = rlx_rope(g, rlx_rms_norm(g, rlx_reshape(g, k, vkt_shape(3, rows, hkv, dh)), qk_w, 1e-6f), RLX_NO_NODE, ra);
    rlx_node kc = rlx_kv_write(g, rlx_kv_cache(g, 0, false, cap, hkv, dh), k);
    rlx_node vc =
        rlx_kv_write(g, rlx_kv_cache(g, 0, true, cap, hkv, dh), rlx_reshape(g, v, vkt_shape(3, rows, hkv, dh)));
    rlx_node att = rlx_reshape(g, rlx_attention(g, q, kc, vc, 0.125f, 0), vkt_shape(2, rows, h * dh, 0));
    rlx_node x2 = rlx_add(g, x, rlx_matmul(g, att, vkt_graph_weight(t, &w, RLX_DTYPE_F32, 2, d, h * dh, 0)));
    rlx_node h2 = rlx_rms_norm(g, x2, vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, d, 0, 0), 1e-6f);
    rlx_node gate = rlx_silu(g, rlx_matmul(g, h2, vkt_graph_weight(t, &w, RLX_DTYPE_Q6_K, 2, f, d, 0)));
    rlx_node up = rlx_matmul(g, h2, vkt_graph_weight(t, &w, RLX_DTYPE_Q4_K, 2, f, d, 0));
    rlx_node down = vkt_graph_weight(t, &w, RLX_DTYPE_Q8_0, 2, d, f, 0);
    rlx_node x3 = rlx_add(g, x2, rlx_matmul(g, rlx_mul(g, gate, up), down));
    rlx_node h3 = rlx_rms_norm(g, x3, vkt_graph_weight(t, &w, RLX_DTYPE_F32, 1, d, 0, 0), 1e-6f);
    rlx_node logits = rlx_matmul(g, h3, vkt_graph_weight(t, &w, RLX_DTYPE_F16, 2, vocab, d, 0));
    rlx_graph_mark_output(g, logits, "logits");
    rlx_graph_mark_output(g, rlx_argmax(g, logits), "ids");
}

/* ---- running ---- */

/* Kernels whose choice (or plan) follows the row count or KV capacity: none may run in
 * deterministic mode. */
static const rlx_vk_kernel g_row_kernels[] = {
    RLX_VK_KERNEL_matvec,         RLX_VK_KERNEL_matvec_stream,  RLX_VK_KERNEL_matmul_coop,
    RLX_VK_KERNEL_matmul_coop_emu, RLX_VK_KERNEL_attention_prefill, RLX_VK_KERNEL_attn_combine,
    RLX_VK_KERNEL_attention_step, RLX_VK_KERNEL_attention_step_fixed, RLX_VK_KERNEL_moe_group,
    RLX_VK_KERNEL_moe_mm,         RLX_VK_KERNEL_moe_sum};

static void check_kernels(const char *label, const rlx_program *p) {
    for (size_t k = 0; k < sizeof g_row_kernels / sizeof *g_row_kernels; k++)
        for (size_t i = 0; i < p->run.n; i++)
            if (p->run.items[i].pipe->kernel == g_row_kernels[k]) {
                T_CHECK(false, "%s: deterministic program dispatches %s", label,
                        rlx_vk_kernel_get(g_row_kernels[k])->name);
                break;
            }
}

/* One compiled row count of a case: its graph (weights, input buffers) and program. */
typedef struct prog {
    vkt_graph t;
    rlx_program *p;
    int32_t rows, n_out;
    size_t out_row[MAX_OUT]; /* bytes of one row of each output (0: a cache, compared whole) */
    size_t out_bytes[MAX_OUT];
    void *out[MAX_OUT];
} prog;

static bool prog_open(prog *pr, rlx_session *s, const det_case *c, int32_t rows, int64_t cap, const char *label) {
    memset(pr, 0, sizeof *pr);
    vkt_graph_init(&pr->t);
    c->build(&pr->t, rows, cap, &c->arg);
    pr->rows = rows;
    pr->n_out = rlx_graph_n_outputs(pr->t.g);
    for (int32_t o = 0; o < pr->n_out; o++) {
        const rlx_node_info *n = rlx_graph_node(pr->t.g, rlx_graph_output_node(pr->t.g, o));
        pr->out_bytes[o] = (size_t)rlx_shape_numel(&n->shape) * 4;
        pr->out_row[o] = n->op == RLX_OP_KV_WRITE ? 0 : pr->out_bytes[o] / (size_t)n->shape.dim[0];
        pr->out[o] = calloc(1, pr->out_bytes[o]);
    }
    if (!T_OK(g_vk->ops->compile(s, pr->t.g, &pr->p))) return false;
    if (g_det) check_kernels(label, pr->p);
    return true;
}

static void prog_close(prog *pr) {
    if (pr->p) g_vk->ops->program_destroy(pr->p);
    for (int32_t o = 0; o < pr->n_out; o++) free(pr->out[o]);
    vkt_graph_free(&pr->t);
}

/* The case's inputs for every position: input k's row j at in[k] + j * row bytes. */
typedef struct inputs {
    int n;
    float *data[VKT_MAX_INPUTS];
    size_t row[VKT_MAX_INPUTS]; /* floats per row */
} inputs;

static void inputs_make(inputs *in, const vkt_graph *t, int32_t positions, uint64_t seed) {
    vkt_rng r = {seed};
    in->n = rlx_graph_n_inputs(t->g);
    for (int k = 0; k < in->n; k++) {
        const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_input_node(t->g, k));
        in->row[k] = (size_t)(rlx_shape_numel(&n->shape) / n->shape.dim[0]);
        in->data[k] = malloc(in->row[k] * (size_t)positions * sizeof(float));
        for (size_t e = 0; e < in->row[k] * (size_t)positions; e++) in->data[k][e] = vkt_uniform(&r, -1.0f, 1.0f);
    }
}

static void inputs_free(inputs *in) {
    for (int k = 0; k < in->n; k++) free(in->data[k]);
}

/* Runs pr at n_past over n_tokens rows whose inputs are those of positions [first, first + rows). */
static bool prog_run(prog *pr, const inputs *in, int32_t first, int32_t n_past, int32_t n_tokens) {
    for (int k = 0; k < in->n; k++)
        memcpy(pr->t.in[k], in->data[k] + in->row[k] * (size_t)first, in->row[k] * (size_t)pr->rows * sizeof(float));
    rlx_run_args a = {n_past, n_tokens, (const void *const *)pr->t.in, pr->out, NULL};
    return T_OK(g_vk->ops->run(pr->p, &a));
}

/* How an R-row run compares with the rows run alone. */
typedef struct tally {
    int64_t rows, rows_diff, caches, cache_diff;
    double max_diff;
} tally;

static void compare_rows(tally *ty, const prog *pr, const prog *alone, void *const *alone_rows, int32_t n,
                         int32_t n_past) {
    for (int32_t o = 0; o < pr->n_out; o++) {
        size_t rb = pr->out_row[o];
        if (rb == 0) { /* a cache view: its rows up to n_past + n, as the alone runs left them */
            const rlx_node_info *cv = rlx_graph_node(pr->t.g, rlx_graph_output_node(pr->t.g, o));
            size_t row = pr->out_bytes[o] / (size_t)cv->shape.dim[0];
            ty->caches++;
            ty->cache_diff += memcmp(pr->out[o], alone->out[o], row * (size_t)(n_past + n)) != 0;
            continue;
        }
        const rlx_node_info *ni = rlx_graph_node(pr->t.g, rlx_graph_output_node(pr->t.g, o));
        for (int32_t i = 0; i < n; i++) {
            const char *got = (const char *)pr->out[o] + rb * (size_t)i;
            const char *want = (const char *)alone_rows[o] + rb * (size_t)i;
            ty->rows++;
            if (memcmp(got, want, rb) == 0) continue;
            ty->rows_diff++;
            if (ni->dtype != RLX_DTYPE_F32) continue;
            for (size_t e = 0; e < rb / 4; e++) {
                double dd = fabs((double)((const float *)got)[e] - (double)((const float *)want)[e]);
                if (dd > ty->max_diff || isnan(dd)) ty->max_diff = dd;
            }
        }
    }
}

/* One case in the current mode: the rows alone (1-row runs after the fill, one by one), then every
 * R-row run (and its padded bucket) after the same fill, compared with them. */
static void run_case(const det_case *c) {
    char label[128];
    snprintf(label, sizeof label, "%s %s", c->name, g_det ? "deterministic" : "default");
    int32_t np = c->n_past, positions = np + MAX_R;
    int64_t cap = c->arg.cap, cap_alone = c->arg.cap_alone ? c->arg.cap_alone : cap;
    prog alone, fill = {0};
    rlx_session *s = NULL;
    vkt_graph probe;
    vkt_graph_init(&probe);
    c->build(&probe, 1, cap_alone, &c->arg);
    inputs in;
    inputs_make(&in, &probe, positions, 0xC0FFEE ^ (uint64_t)np);
    bool ok = T_OK(g_vk->ops->session_create(g_vk, probe.w, probe.nw, &probe.kv, &s)) &&
              prog_open(&alone, s, c, 1, cap_alone, label) && (np == 0 || prog_open(&fill, s, c, np, cap, label));
    void *alone_rows[MAX_OUT] = {0};
    for (int32_t o = 0; ok && o < alone.n_out; o++)
        alone_rows[o] = calloc(MAX_R, alone.out_row[o] ? alone.out_row[o] : 1);
    /* the rows alone: the fill, then positions np, np + 1, ... one run each */
    if (ok && np) ok = prog_run(&fill, &in, 0, 0, np);
    for (int32_t i = 0; ok && i < MAX_R; i++) {
        ok = prog_run(&alone, &in, np + i, np + i, 1);
        for (int32_t o = 0; ok && o < alone.n_out; o++)
            if (alone.out_row[o])
                memcpy((char *)alone_rows[o] + alone.out_row[o] * (size_t)i, alone.out[o], alone.out_row[o]);
    }
    /* the caches the alone runs leave are alone.out[o] of the last run; when the R-row programs'
     * views are shorter, only their rows are compared (compare_rows: up to n_past + n) */
    tally ty = {0};
    for (int ri = 0; ok && ri < N_RS; ri++) {
        prog pr;
        int32_t rr = g_rs[ri];
        if (!prog_open(&pr, s, c, rr, cap, label)) {
            prog_close(&pr);
            ok = false;
            break;
        }
        for (int pad = 0; ok && pad < (rr > 1 ? 2 : 1); pad++) {
            int32_t n = rr - pad;
            if (np) ok = prog_run(&fill, &in, 0, 0, np);
            if (ok) ok = prog_run(&pr, &in, np, np, n);
            if (ok) compare_rows(&ty, &pr, &alone, alone_rows, n, np);
        }
        prog_close(&pr);
    }
    printf("  %-66s %4lld rows: %4lld differ (max |diff| %.2e)", label, (long long)ty.rows, (long long)ty.rows_diff,
           ty.max_diff);
    if (ty.caches) printf(", cache views: %lld of %lld differ", (long long)ty.cache_diff, (long long)ty.caches);
    printf("\n");
    if (g_det) {
        T_CHECK(ok, "%s: a run failed", label);
        T_CHECK(ty.rows_diff == 0 && ty.cache_diff == 0, "%s: %lld of %lld rows and %lld cache views differ from the "
                "rows run alone", label, (long long)ty.rows_diff, (long long)ty.rows, (long long)ty.cache_diff);
    }
    for (int32_t o = 0; o < MAX_OUT; o++) free(alone_rows[o]);
    prog_close(&alone);
    if (np) prog_close(&fill);
    if (s) g_vk->ops->session_destroy(s);
    inputs_free(&in);
    vkt_graph_free(&probe);
}

/* ---- the cases ---- */

static det_case g_cases[64];
static int g_n_cases;

static void add_case(const char *name, build_fn b, case_arg a, int32_t n_past) {
    g_cases[g_n_cases++] = (det_case){name, b, a, n_past};
}

static void make_cases(void) {
    static const struct {
        uint32_t type;
        const char *name;
    } types[] = {{RLX_DTYPE_F32, "MATMUL F32"},   {RLX_DTYPE_F16, "MATMUL F16"},   {RLX_DTYPE_BF16, "MATMUL BF16"},
                 {RLX_DTYPE_Q4_0, "MATMUL Q4_0"}, {RLX_DTYPE_Q4_1, "MATMUL Q4_1"}, {RLX_DTYPE_Q5_0, "MATMUL Q5_0"},
                 {RLX_DTYPE_Q5_1, "MATMUL Q5_1"}, {RLX_DTYPE_Q8_0, "MATMUL Q8_0"}, {RLX_DTYPE_Q2_K, "MATMUL Q2_K"},
                 {RLX_DTYPE_Q3_K, "MATMUL Q3_K"}, {RLX_DTYPE_Q4_K, "MATMUL Q4_K"}, {RLX_DTYPE_Q5_K, "MATMUL Q5_K"},
                 {RLX_DTYPE_Q6_K, "MATMUL Q6_K"}, {RLX_DTYPE_Q8_K, "MATMUL Q8_K"}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        add_case(types[i].name, build_matmul, (case_arg){.type = types[i].type, .k = 512, .m = 96}, 0);
    /* rows of k % 32 != 0: matmul.comp, not the tiled kernel */
    add_case("MATMUL F32 k=200 (matmul.comp)", build_matmul, (case_arg){.type = RLX_DTYPE_F32, .k = 200, .m = 70}, 0);
    add_case("MATMUL F16 k=72 (matmul.comp)", build_matmul, (case_arg){.type = RLX_DTYPE_F16, .k = 72, .m = 33}, 0);
    add_case("RMS_NORM rows of 4096", build_norm, (case_arg){.k = 4096}, 0);
    add_case("RMS_NORM 8 heads of 128", build_norm, (case_arg){.k = 128, .h = 8}, 0);
    add_case("q/k RMS_NORM + ROPE + KV_WRITE cap 256", build_rope_kv,
             (case_arg){.h = 4, .hkv = 2, .dh = 64, .cap = 256}, 100);
    add_case("ATTENTION GQA 4/2 dh 64 cap 256, alone cap 512", build_attention,
             (case_arg){.h = 4, .hkv = 2, .dh = 64, .cap = 256, .cap_alone = 512}, 100);
    add_case("ATTENTION GQA 4/1 dh 128 cap 512 window 100", build_attention,
             (case_arg){.h = 4, .hkv = 1, .dh = 128, .cap = 512, .window = 100}, 150);
    add_case("ATTENTION 2/2 dh 64 cap 160 (no split)", build_attention,
             (case_arg){.h = 2, .hkv = 2, .dh = 64, .cap = 160}, 20);
    add_case("MOE_ROUTE + MOE_FFN 4 experts top 2", build_moe, (case_arg){.k = 256, .m = 256}, 0);
    add_case("layer (qwen3-like) + LM head + ARGMAX cap 256, alone cap 512", build_layer,
             (case_arg){.k = 256, .m = 512, .h = 4, .hkv = 2, .dh = 64, .cap = 256, .cap_alone = 512}, 60);
}

/* The plumbing: the engine's backend choice asks for the mode (white box: the backend's tuning). */
static void check_plumbing(bool env_det) {
    rlx_backend_opts on = {.deterministic = true};
    const rlx_backend_opts *asks[3] = {&on, NULL, &(rlx_backend_opts){0}};
    for (int k = 0; k < 3; k++) {
        rlx_backend *b = NULL;
        if (!T_OK(rlx_backend_select_opts("vulkan", NULL, 0, asks[k], &b))) continue;
        bool want = k == 0 || env_det, got = ((const rlx_vk_backend *)b)->tuning.deterministic;
        T_CHECK(got == want, "rlx_backend_select_opts(vulkan, %s): deterministic %d, expected %d",
                k == 0 ? "deterministic" : k == 1 ? "NULL" : "{0}", got, want);
        rlx_backend_destroy(b);
    }
    rlx_backend *cpu = NULL;
    if (T_OK(rlx_backend_select_opts("cpu", NULL, 1, &on, &cpu))) rlx_backend_destroy(cpu);
    printf("rlx_backend_select_opts: deterministic reaches the Vulkan backend's plans (env %d)\n", env_det);
}

int main(void) {
    g_env = vkt_options();
    check_plumbing(g_env.deterministic);
    g_env.deterministic = false;
    g_vk = vkt_backend_with(&g_env);
    make_cases();
    for (int mode = 0; mode < 2; mode++) {
        g_det = mode == 0;
        rlx_vk_options o = g_env;
        o.deterministic = g_det;
        vkt_set_options(g_vk, &o);
        printf("%s mode: R-row runs vs the same rows run alone (R in 1 3 8 40 130, and R - 1 of R)\n",
               g_det ? "deterministic" : "default (printed, not checked)");
        for (int c = 0; c < g_n_cases; c++) run_case(&g_cases[c]);
    }
    rlx_backend_destroy(g_vk);
    vkt_check_validation();
    return t_summary("test_vk_deterministic");
}
