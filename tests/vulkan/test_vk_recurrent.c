/* The Gated DeltaNet ops' recurrent state on the Vulkan backend against the CPU reference, run
 * the way an engine runs them (ir/ops.def, "recurrent state"): one graph of a layer's conv and
 * delta rule (their STATE parts side by side in a slot), run on both backends with the same rows
 * and inputs, and every output compared (padding rows too: ops.def says they are 0):
 *  - several sequences interleaved in one run, table rows mapped to other slots, sequences
 *    continued over runs, a sequence restarted at position 0 over a dirty slot, a run with padding;
 *  - the chunked (prefill) kernel with chunk sizes that do and do not divide the lengths, and the
 *    step (decode) kernel, in programs of few rows, with the ROWS_APART hint, and with chunk 1;
 *  - the graph shaped as runners/qwen35.c builds it, so the device's fusions (slices, scale,
 *    sigmoid and gate folded into the norms and the delta rule) are what runs, and again unfused;
 *  - copy_state (slot copies and zeroing) between runs, made on both backends;
 *  - the refusals: slots shared or out of range, positions not consecutive, a STATE or KV_CACHE
 *    of the wrong kind of layer, copies outside the slots.
 * The CPU reference is itself checked against naive recurrences in tests/cpu/test_cpu_recurrent.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "test_vk_util.h"

#define TOL RLX_VALIDATE_BOUND_F32
#define SLOTS 5
#define TAPS 4
#define HK 2
#define HV 4
#define DK 16
#define DV 24
#define C_CONV (2 * HK * DK + HV * DV) /* the conv runs over q, k and v side by side */
#define MAX_ROWS 64

static rlx_backend *g_cpu, *g_vk;
static vkt_rng g_rng = {0x9E3779B97F4A7C15ull};
static double g_worst;
static int g_compared;

/* layer 0 recurrent (its slot: the conv state [3, C], then the delta state [HV, DK, DV]), layer 1
 * attention */
static const uint8_t g_kinds[2] = {RLX_STATE_RECURRENT, RLX_STATE_KV};
static const int64_t g_conv_floats = (TAPS - 1) * C_CONV, g_state_floats = (TAPS - 1) * C_CONV + HV * DK * DV;

/* the fixed inputs: the conv's taps, DELTA_GATE's A (< 0) and dt_bias */
static float g_w[C_CONV * TAPS], g_A[HV], g_bias[HV];

typedef struct layer_graph {
    rlx_graph *g;
    int32_t rows;
    float *in[3]; /* x, a, b: drawn afresh for every run */
    int64_t in_n[3];
} layer_graph;

/* The layer's recurrent part over `rows` rows as runners/qwen35.c builds it, DELTA_RULE in chunks
 * of `chunk`: y = conv(x); q, k, v sliced out of y into heads, q and k L2-normed, q scaled;
 * beta = sigmoid(b), g = DELTA_GATE(a, A, dt_bias); o = the delta rule. The device folds the slices,
 * the scale, the sigmoid and the gate into the norms and the delta rule (runtime/vk_fuse.c). */
static void graph_make(layer_graph *lg, int32_t rows, int32_t chunk, bool rows_apart) {
    memset(lg, 0, sizeof *lg);
    lg->rows = rows;
    if (!T_OK(rlx_graph_create(&lg->g))) exit(1);
    rlx_graph *g = lg->g;
    if (rows_apart) rlx_graph_set_hints(g, RLX_HINT_ROWS_APART);
    int64_t cols[3] = {C_CONV, HV, HV};
    const char *names[3] = {"x", "a", "b"};
    rlx_node in[3];
    for (int k = 0; k < 3; k++) {
        in[k] = rlx_input(g, names[k], RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){rows, cols[k]}));
        lg->in_n[k] = rows * cols[k];
        lg->in[k] = calloc((size_t)lg->in_n[k], sizeof(float));
    }
    rlx_node w = rlx_input(g, "w", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){C_CONV, TAPS}));
    rlx_node A = rlx_input(g, "A", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){HV}));
    rlx_node bias = rlx_input(g, "dt_bias", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){HV}));
    rlx_node conv_st = rlx_state(g, 0, 0, rlx_shape_make(2, (int64_t[]){TAPS - 1, C_CONV}));
    rlx_node y = rlx_causal_conv(g, in[0], w, conv_st);
    rlx_graph_mark_output(g, y, "y");
    rlx_shape qk = rlx_shape_make(3, (int64_t[]){rows, HK, DK}), vs = rlx_shape_make(3, (int64_t[]){rows, HV, DV});
    rlx_node q = rlx_scale(g, rlx_l2_norm(g, rlx_reshape(g, rlx_slice(g, y, 0, HK * DK), qk), 1e-6f), 0.25f);
    rlx_node k = rlx_l2_norm(g, rlx_reshape(g, rlx_slice(g, y, HK * DK, HK * DK), qk), 1e-6f);
    rlx_node v = rlx_reshape(g, rlx_slice(g, y, 2 * HK * DK, HV * DV), vs);
    rlx_node decay = rlx_delta_gate(g, in[1], A, bias), beta = rlx_sigmoid(g, in[2]);
    rlx_node st = rlx_state(g, 0, g_conv_floats, rlx_shape_make(3, (int64_t[]){HV, DK, DV}));
    rlx_graph_mark_output(g, rlx_delta_rule(g, q, k, v, decay, beta, st, chunk), "o");
}

static void graph_free(layer_graph *lg) {
    rlx_graph_destroy(lg->g);
    for (int k = 0; k < 3; k++) free(lg->in[k]);
}

typedef struct side {
    rlx_backend *b;
    rlx_session *s;
    rlx_program *p;
    float *y, *o;
} side;

static rlx_state_spec spec(void) {
    return (rlx_state_spec){.n_layer = 2, .n_head_kv = 1, .head_dim = 4, .page_size = 4, .n_pages = 2,
                            .layer_kind = g_kinds, .n_state_slots = SLOTS, .state_floats = g_state_floats};
}

static bool side_open(side *sd, rlx_backend *b, const layer_graph *lg) {
    memset(sd, 0, sizeof *sd);
    sd->b = b;
    rlx_state_spec sp = spec();
    sd->y = calloc((size_t)lg->rows * C_CONV, sizeof(float));
    sd->o = calloc((size_t)lg->rows * HV * DV, sizeof(float));
    return T_OK(b->ops->session_create(b, NULL, 0, &sp, &sd->s)) && T_OK(b->ops->compile(sd->s, lg->g, &sd->p));
}

static void side_close(side *sd) {
    if (sd->p) sd->b->ops->program_destroy(sd->p);
    if (sd->s) sd->b->ops->session_destroy(sd->s);
    free(sd->y);
    free(sd->o);
}

/* One run's rows: row i is position pos[i] of table row seq[i], table row s in slot slots[s]. */
typedef struct run_rows {
    int32_t n;
    int32_t pos[MAX_ROWS], seq[MAX_ROWS];
    int32_t n_seqs;
    int32_t slots[8];
} run_rows;

static rlx_status side_run(side *sd, const layer_graph *lg, const run_rows *r) {
    int32_t pages[8] = {0};
    rlx_run_rows rows = {.pos = r->pos, .seq = r->seq, .pages = pages, .n_seqs = r->n_seqs, .page_cols = 1,
                         .slots = r->slots};
    const void *in[6] = {lg->in[0], lg->in[1], lg->in[2], g_w, g_A, g_bias};
    void *out[2] = {sd->y, sd->o};
    rlx_run_args a = {.n_tokens = r->n, .inputs = in, .outputs = out, .rows = &rows};
    return sd->b->ops->run(sd->p, &a);
}

static void compare(const char *what, const float *vk, const float *cpu, int64_t n) {
    rlx_validate_diff d = rlx_validate_diff_f32(vk, cpu, n);
    if (d.nmse > g_worst) g_worst = d.nmse;
    g_compared++;
    printf("    %-44s nmse %.2e max|d| %.2e\n", what, d.nmse, d.max_abs);
    T_CHECK(rlx_validate_diff_within(&d, TOL), "%s: nmse %.3e > %.0e (max|d| %.3e)", what, d.nmse, TOL, d.max_abs);
}

/* Fresh inputs, the same run on both sides, every row of both outputs compared. */
static void run_both(side *v, side *c, layer_graph *lg, const run_rows *r, const char *label) {
    for (int k = 0; k < 3; k++)
        for (int64_t e = 0; e < lg->in_n[k]; e++) lg->in[k][e] = vkt_uniform(&g_rng, -1.0f, 1.0f);
    if (!T_OK(side_run(v, lg, r)) || !T_OK(side_run(c, lg, r))) return;
    char what[96];
    snprintf(what, sizeof what, "%s: y", label);
    compare(what, v->y, c->y, (int64_t)lg->rows * C_CONV);
    snprintf(what, sizeof what, "%s: o", label);
    compare(what, v->o, c->o, (int64_t)lg->rows * HV * DV);
}

/* Appends n rows of table row s from position p0 to r. */
static void add_seq(run_rows *r, int32_t s, int32_t p0, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        r->pos[r->n] = p0 + i;
        r->seq[r->n] = s;
        r->n++;
    }
    if (s + 1 > r->n_seqs) r->n_seqs = s + 1;
}

/* Interleaves two sequences' rows: a's and b's alternate while both have rows left. */
static void add_two(run_rows *r, int32_t sa, int32_t pa, int32_t na, int32_t sb, int32_t pb, int32_t nb) {
    for (int32_t i = 0, j = 0; i < na || j < nb;) {
        if (i < na) add_seq(r, sa, pa + i++, 1);
        if (j < nb) add_seq(r, sb, pb + j++, 1);
    }
}

static void copy_both(side *v, side *c, const int32_t *src, const int32_t *dst, int32_t n) {
    T_OK(v->b->ops->copy_state(v->s, src, dst, n));
    T_OK(c->b->ops->copy_state(c->s, src, dst, n));
}

/* The engine's script over a program of `rows` rows. */
static void scenario(int32_t rows, int32_t chunk, const char *label) {
    layer_graph lg;
    graph_make(&lg, rows, chunk, false);
    side v, c;
    printf("  %s (%d rows, chunk %d)\n", label, rows, chunk);
    bool ok = side_open(&v, g_vk, &lg) && side_open(&c, g_cpu, &lg);
    int32_t big = rows >= 24; /* lengths scale with the program */
    /* 1: A (table row 0, slot 2) and B (table row 1, slot 0) from position 0, interleaved */
    run_rows r1 = {.slots = {2, 0}};
    add_two(&r1, 0, 0, big ? 11 : 2, 1, 0, big ? 7 : 1);
    if (ok) run_both(&v, &c, &lg, &r1, "A, B interleaved from 0");
    /* 2: B continued (now table row 0), A continued, C new in slot 3 */
    run_rows r2 = {.slots = {0, 2, 3}};
    add_seq(&r2, 0, big ? 7 : 1, big ? 9 : 1);
    add_two(&r2, 1, big ? 11 : 2, big ? 6 : 1, 2, 0, big ? 5 : 1);
    if (ok) run_both(&v, &c, &lg, &r2, "B, A continued, C new (padding)");
    /* 3: A restarted at position 0 over its dirty slot, B continued */
    run_rows r3 = {.slots = {0, 2}};
    add_two(&r3, 1, 0, big ? 13 : 2, 0, big ? 16 : 2, big ? 3 : 1);
    if (ok) run_both(&v, &c, &lg, &r3, "A restarted over its slot, B on");
    /* 4: B copied into slot 1 and slot 3 (C) zeroed; both copies of B go on side by side, and C on
     * from its zeroed slot (not position 0: the copy alone must have zeroed it) */
    int32_t src[2] = {0, -1}, dst[2] = {1, 3};
    if (ok) copy_both(&v, &c, src, dst, 2);
    run_rows r4 = {.slots = {0, 1, 3}};
    int32_t bpos = big ? 19 : 3;
    add_two(&r4, 0, bpos, big ? 8 : 1, 1, bpos, big ? 8 : 1);
    add_seq(&r4, 2, big ? 5 : 1, big ? 4 : 1);
    if (ok) run_both(&v, &c, &lg, &r4, "after copy_state: B, its copy, C zeroed");
    /* 5: a long single sequence (several chunks of it) over the whole program */
    run_rows r5 = {.slots = {4}};
    add_seq(&r5, 0, 0, rows);
    if (ok) run_both(&v, &c, &lg, &r5, "one sequence, every row");
    side_close(&v);
    side_close(&c);
    graph_free(&lg);
}

/* More chunks than shaders/delta_prep.comp has workgroups across them (ceil(rows / chunk) + 1: 13),
 * so that its groups stride: five sequences of three chunks each (15), the last of one row, whose
 * chunks start off the chunk grid of the run's rows, then each continued by a different count
 * (one of a single row, one of exactly a chunk, others of two or three chunks), with padding rows
 * both times. */
static void many_chunks(void) {
    layer_graph lg;
    graph_make(&lg, 48, 4, false);
    side v, c;
    printf("  chunked kernel, more chunks than pre-pass groups (48 rows, chunk 4)\n");
    bool ok = side_open(&v, g_vk, &lg) && side_open(&c, g_cpu, &lg);
    static const int32_t first[5] = {9, 9, 9, 9, 9}, next[5] = {3, 12, 1, 4, 9};
    run_rows r1 = {.slots = {4, 0, 3, 1, 2}}, r2 = {.slots = {4, 0, 3, 1, 2}};
    add_two(&r1, 0, 0, first[0], 1, 0, first[1]);
    add_two(&r1, 2, 0, first[2], 3, 0, first[3]);
    add_seq(&r1, 4, 0, first[4]);
    add_two(&r2, 0, first[0], next[0], 1, first[1], next[1]);
    add_two(&r2, 2, first[2], next[2], 3, first[3], next[3]);
    add_seq(&r2, 4, first[4], next[4]);
    if (ok) run_both(&v, &c, &lg, &r1, "five sequences from 0");
    if (ok) run_both(&v, &c, &lg, &r2, "the five continued");
    side_close(&v);
    side_close(&c);
    graph_free(&lg);
}

/* A decode batch: each row its own sequence (the ROWS_APART hint), several steps. */
static void decode_batch(void) {
    layer_graph lg;
    graph_make(&lg, 4, 0, true);
    side v, c;
    printf("  decode batch of 3 sequences (4 rows, ROWS_APART)\n");
    bool ok = side_open(&v, g_vk, &lg) && side_open(&c, g_cpu, &lg);
    for (int32_t step = 0; ok && step < 4; step++) {
        run_rows r = {.n = 3, .n_seqs = 3, .slots = {3, 1, 4}, .pos = {step, step, step}, .seq = {0, 1, 2}};
        char label[48];
        snprintf(label, sizeof label, "step %d", step);
        run_both(&v, &c, &lg, &r, label);
    }
    side_close(&v);
    side_close(&c);
    graph_free(&lg);
}

/* The layer's output, RMS_NORM(o) * SiLU(z) (the device's norm kernel multiplies by the gate
 * itself), either operand order, rows of a head and of a whole row. */
static void norm_gate(void) {
    printf("  RMS_NORM(o) * SiLU(z)\n");
    int64_t cols[2] = {DV, 3 * 256 + 5};
    for (int c = 0; c < 2; c++)
        for (int order = 0; order < 2; order++) {
            rlx_graph *g = NULL;
            if (!T_OK(rlx_graph_create(&g))) return;
            rlx_shape sh = rlx_shape_make(3, (int64_t[]){5, HV, cols[c]});
            rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, sh), z = rlx_input(g, "z", RLX_DTYPE_F32, sh);
            rlx_node w = rlx_input(g, "w", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){cols[c]}));
            rlx_node nrm = rlx_rms_norm(g, x, w, 1e-6f), act = rlx_silu(g, z);
            rlx_graph_mark_output(g, order ? rlx_mul(g, act, nrm) : rlx_mul(g, nrm, act), "y");
            int64_t n = 5 * HV * cols[c];
            float *in[3] = {malloc((size_t)n * 4), malloc((size_t)n * 4), malloc((size_t)cols[c] * 4)};
            float *out[2] = {malloc((size_t)n * 4), malloc((size_t)n * 4)};
            for (int64_t e = 0; e < n; e++) in[0][e] = vkt_uniform(&g_rng, -2, 2), in[1][e] = vkt_uniform(&g_rng, -4, 4);
            for (int64_t e = 0; e < cols[c]; e++) in[2][e] = vkt_uniform(&g_rng, -1, 1);
            rlx_backend *b[2] = {g_vk, g_cpu};
            rlx_state_spec sp = spec();
            bool ok = true;
            for (int k = 0; k < 2 && ok; k++) {
                rlx_session *se = NULL;
                rlx_program *pr = NULL;
                const void *ins[3] = {in[0], in[1], in[2]};
                void *outs[1] = {out[k]};
                rlx_run_args a = {.n_tokens = 5, .inputs = ins, .outputs = outs};
                ok = T_OK(b[k]->ops->session_create(b[k], NULL, 0, &sp, &se)) && T_OK(b[k]->ops->compile(se, g, &pr)) &&
                     T_OK(b[k]->ops->run(pr, &a));
                if (pr) b[k]->ops->program_destroy(pr);
                if (se) b[k]->ops->session_destroy(se);
            }
            char what[64];
            snprintf(what, sizeof what, "rows of %lld, %s", (long long)cols[c], order ? "silu(z) * norm" : "norm * silu(z)");
            if (ok) compare(what, out[0], out[1], n);
            for (int k = 0; k < 3; k++) free(in[k]);
            free(out[0]);
            free(out[1]);
            rlx_graph_destroy(g);
        }
}

/* Runs the backends must refuse, each naming the problem. */
static void refusals(void) {
    printf("  refusals\n");
    layer_graph lg;
    graph_make(&lg, 4, 0, false);
    side v;
    if (side_open(&v, g_vk, &lg)) {
        run_rows shared = {.n = 2, .n_seqs = 2, .slots = {1, 1}, .pos = {0, 0}, .seq = {0, 1}};
        T_ERR(side_run(&v, &lg, &shared), RLX_ERR_INVALID_ARGUMENT, "share state slot 1");
        run_rows outside = {.n = 1, .n_seqs = 1, .slots = {SLOTS}, .pos = {0}, .seq = {0}};
        T_ERR(side_run(&v, &lg, &outside), RLX_ERR_INVALID_ARGUMENT, "outside the session's");
        run_rows gap = {.n = 2, .n_seqs = 1, .slots = {0}, .pos = {3, 5}, .seq = {0, 0}};
        T_ERR(side_run(&v, &lg, &gap), RLX_ERR_INVALID_ARGUMENT, "consecutive positions");
        int32_t src[1] = {-2}, dst[1] = {0}, dst_bad[1] = {SLOTS};
        T_ERR(g_vk->ops->copy_state(v.s, src, dst, 1), RLX_ERR_INVALID_ARGUMENT, "outside the session's 5 state slots");
        src[0] = 0;
        T_ERR(g_vk->ops->copy_state(v.s, src, dst_bad, 1), RLX_ERR_INVALID_ARGUMENT, "slot 0 -> slot 5");
    }
    side_close(&v);
    graph_free(&lg);
    /* a STATE of the attention layer, a KV_CACHE of the recurrent one */
    rlx_graph *g = NULL;
    rlx_state_spec sp = spec();
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    if (!T_OK(g_vk->ops->session_create(g_vk, NULL, 0, &sp, &s))) return;
    T_OK(rlx_graph_create(&g));
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){2, 8}));
    rlx_node w = rlx_input(g, "w", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){8, 2}));
    rlx_graph_mark_output(g, rlx_causal_conv(g, x, w, rlx_state(g, 1, 0, rlx_shape_make(2, (int64_t[]){1, 8}))), "y");
    T_ERR(g_vk->ops->compile(s, g, &p), RLX_ERR_INVALID_ARGUMENT, "this layer is not recurrent");
    rlx_graph_destroy(g);
    T_OK(rlx_graph_create(&g));
    rlx_node q = rlx_input(g, "q", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){2, 1, 4}));
    rlx_node kc = rlx_kv_cache(g, 0, false, 8, 1, 4), vc = rlx_kv_cache(g, 0, true, 8, 1, 4);
    rlx_graph_mark_output(g, rlx_attention(g, q, rlx_kv_write(g, kc, q), rlx_kv_write(g, vc, q), 0.5f, 0), "o");
    T_ERR(g_vk->ops->compile(s, g, &p), RLX_ERR_INVALID_ARGUMENT, "keeps recurrent state for that layer");
    rlx_graph_destroy(g);
    if (p) g_vk->ops->program_destroy(p);
    g_vk->ops->session_destroy(s);
}

int main(void) {
    g_vk = vkt_backend();
    if (!T_OK(rlx_backend_cpu_create(2, &g_cpu))) return 1;
    for (int64_t e = 0; e < C_CONV * TAPS; e++) g_w[e] = vkt_uniform(&g_rng, -1.0f, 1.0f);
    for (int h = 0; h < HV; h++) {
        g_A[h] = -vkt_uniform(&g_rng, 0.1f, 1.0f);
        g_bias[h] = vkt_uniform(&g_rng, -1.0f, 1.0f);
    }
    printf("recurrent state, CPU reference vs Vulkan\n");
    scenario(48, 5, "chunked kernel, chunks of 5");
    scenario(48, 0, "chunked kernel, chunks of 64");
    scenario(24, 16, "chunked kernel, chunks of 16");
    many_chunks();
    scenario(4, 0, "step kernel (a program of few rows)");
    scenario(24, 1, "step kernel (chunk 1)");
    decode_batch();
    norm_gate();
    /* the same without fusion: every op its own dispatch */
    rlx_vk_options o = vkt_options();
    o.fusion = false;
    vkt_set_options(g_vk, &o);
    scenario(48, 5, "unfused, chunked kernel");
    scenario(4, 0, "unfused, step kernel");
    o.fusion = true;
    vkt_set_options(g_vk, &o);
    refusals();
    printf("worst nmse %.2e over %d outputs (bound %.0e)\n", g_worst, g_compared, TOL);
    rlx_backend_destroy(g_vk);
    rlx_backend_destroy(g_cpu);
    vkt_check_validation();
    return t_summary("test_vk_recurrent");
}
