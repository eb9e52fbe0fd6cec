/* The Gated DeltaNet ops of ir/ops.def (STATE, CAUSAL_CONV, DELTA_RULE, DELTA_GATE, L2_NORM,
 * SIGMOID) on the CPU backend against naive double-precision references written here from the
 * math in ops.def's comments: the causal conv over each sequence's whole input history (zero
 * before position 0), the delta rule as its token-by-token recurrence (arXiv:2412.06464, eq. of
 * the gated delta rule), softplus / sigmoid / L2 norm from their definitions. The recurrent state
 * contract is exercised the way an engine uses it: several sequences interleaved in one run, state
 * slots other than the table rows, a sequence continued over several runs, a sequence restarted at
 * position 0 over a dirty slot. DELTA_RULE's chunked form is checked against the recurrence for
 * lengths that do and do not divide the chunk, and against its own step-by-step form (chunk 1).
 * Linked into test_cpu_ops, whose op table names these functions (cpu_recurrent_tests.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_recurrent_tests.h"
#include "ir/backend.h"
#include "test_util.h"

static rlx_backend *g_cpu;

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float rng_sym(float a) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return a * (2.0f * (float)((double)(z >> 40) / 16777216.0) - 1.0f);
}
static float *rand_f32(size_t n, float a) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = rng_sym(a);
    return x;
}

static rlx_backend *cpu(void) {
    if (!g_cpu && !T_OK(rlx_backend_cpu_create(3, &g_cpu))) exit(1);
    return g_cpu;
}

/* ---- a session of one recurrent layer (layer 0) and one attention layer, and its runs ---- */

typedef struct rec {
    rlx_session *s;
    rlx_program *p;
    rlx_graph *g;
} rec;

static const uint8_t kinds[2] = {RLX_STATE_RECURRENT, RLX_STATE_KV};

static rlx_status rec_open(rec *r, const rlx_weight *w, size_t n_w, int32_t slots, int64_t state_floats) {
    rlx_state_spec spec = {.n_layer = 2, .n_head_kv = 1, .head_dim = 4, .page_size = 4, .n_pages = 2,
                           .layer_kind = kinds, .n_state_slots = slots, .state_floats = state_floats};
    rlx_backend *b = cpu();
    RLX_TRY(b->ops->session_create(b, w, n_w, &spec, &r->s));
    return b->ops->compile(r->s, r->g, &r->p);
}

static void rec_close(rec *r) {
    if (r->p) g_cpu->ops->program_destroy(r->p);
    if (r->s) g_cpu->ops->session_destroy(r->s);
    rlx_graph_destroy(r->g);
    *r = (rec){0};
}

/* One run of n rows: row i is position pos[i] of table row seq[i]; slots NULL: slot s. */
static rlx_status rec_run(rec *r, int32_t n, const int32_t *pos, const int32_t *seq, int32_t n_seqs,
                          const int32_t *slots, const void *const *in, void *const *out) {
    int32_t pages[8] = {0};
    rlx_run_rows rows = {.pos = pos, .seq = seq, .pages = pages, .n_seqs = n_seqs, .page_cols = 1, .slots = slots};
    rlx_run_args a = {.n_tokens = n, .inputs = in, .outputs = out, .rows = &rows};
    return g_cpu->ops->run(r->p, &a);
}

static double silu_d(double x) { return x / (1.0 + exp(-x)); }

/* ---- STATE: binding and the run contract's checks ---- */

static void expect_compile_error(rlx_graph *g, int64_t state_floats, const char *needle, const char *what) {
    rec r = {.g = g};
    rlx_status st = rec_open(&r, NULL, 0, 2, state_floats);
    printf("  %-50s -> %s\n", what, st ? rlx_status_message(st) : "(no error)");
    T_CHECK(st && strstr(rlx_status_message(st), needle), "%s: expected an error with \"%s\"", what, needle);
    rlx_status_free(st);
    rec_close(&r);
}

/* x [4, 3] through a conv of K = 3 with its state part [2, 3] at `offset` of `layer`. */
static rlx_graph *conv_graph(int32_t layer, int64_t offset, rlx_node *w_out) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) exit(1);
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){4, 3}));
    rlx_node w = rlx_input(g, "w", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){3, 3}));
    rlx_node st = rlx_state(g, layer, offset, rlx_shape_make(2, (int64_t[]){2, 3}));
    rlx_graph_mark_output(g, rlx_causal_conv(g, x, w, st), "y");
    if (w_out) *w_out = w;
    return g;
}

static void copy_state_case(void);

void test_STATE(void) {
    expect_compile_error(conv_graph(0, 4, NULL), 9, "STATE layer 0 floats [4, +6) is not within", "past the slot");
    expect_compile_error(conv_graph(1, 0, NULL), 64, "this layer is not recurrent", "on an attention layer");
    /* read as a plain value, or an output: refused by verify */
    rlx_graph *g = NULL;
    T_OK(rlx_graph_create(&g));
    rlx_node st = rlx_state(g, 0, 0, rlx_shape_make(2, (int64_t[]){2, 3}));
    rlx_graph_mark_output(g, rlx_silu(g, st), "y");
    rlx_graph_mark_output(g, st, "s");
    rlx_status s = rlx_graph_verify(g);
    printf("  STATE read by SILU and as an output -> %s\n", s ? rlx_status_message(s) : "(no error)");
    T_CHECK(s && strstr(rlx_status_message(s), "input 0 is the STATE %0") &&
                strstr(rlx_status_message(s), "output 's': %0 is a STATE"),
            "expected both problems named");
    rlx_status_free(s);
    rlx_graph_destroy(g);

    /* a state larger than any host: refused at session_create, before allocating */
    rec big = {.g = conv_graph(0, 0, NULL)};
    rlx_status huge = rec_open(&big, NULL, 0, 1 << 30, (int64_t)1 << 40);
    printf("  2^30 slots of 2^40 floats -> %s\n", huge ? rlx_status_message(huge) : "(no error)");
    T_CHECK(huge && rlx_status_code(huge) == RLX_ERR_OUT_OF_MEMORY &&
                strstr(rlx_status_message(huge), "recurrent state"),
            "a huge state: expected RLX_ERR_OUT_OF_MEMORY naming the recurrent state");
    rlx_status_free(huge);
    rec_close(&big);

    /* run-time checks of the rows */
    rec r = {.g = conv_graph(0, 0, NULL)};
    if (!T_OK(rec_open(&r, NULL, 0, 2, 6))) return rec_close(&r);
    float x[12] = {0}, w[9] = {0}, y[12];
    const void *in[2] = {x, w};
    void *out[1] = {y};
    struct {
        int32_t n, pos[4], seq[4], n_seqs, slots[2];
        bool use_slots;
        const char *needle;
    } bad[] = {
        {2, {0, 2}, {0, 0}, 1, {0}, false, "consecutive positions"},
        {2, {3, 2}, {0, 0}, 1, {0}, false, "consecutive positions"},
        {2, {0, 0}, {0, 1}, 2, {1, 1}, true, "share state slot 1"},
        {1, {0}, {0}, 1, {2}, true, "state slot 2 is outside the session's 2"},
        {2, {0, 0}, {0, 2}, 3, {0}, false, "state slot 2 is outside"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        rlx_status st2 = rec_run(&r, bad[k].n, bad[k].pos, bad[k].seq, bad[k].n_seqs,
                                 bad[k].use_slots ? bad[k].slots : NULL, in, out);
        printf("  bad rows %zu -> %s\n", k, st2 ? rlx_status_message(st2) : "(no error)");
        T_CHECK(st2 && strstr(rlx_status_message(st2), bad[k].needle), "bad rows %zu: expected \"%s\"", k,
                bad[k].needle);
        rlx_status_free(st2);
    }
    rec_close(&r);
    copy_state_case();
}

/* copy_state (backend.h): a copied slot continues exactly as its source; a zeroed slot (src -1)
 * continues as a sequence with an all-zero history, i.e. the conv of the new rows alone; bad
 * slots are refused by name. */
static void copy_state_case(void) {
    rec r = {.g = conv_graph(0, 0, NULL)};
    if (!T_OK(rec_open(&r, NULL, 0, 3, 6))) return rec_close(&r);
    float x[12], w[9], y0[12], y1[12], y2[12];
    for (int i = 0; i < 12; i++) x[i] = rng_sym(1.0f);
    for (int i = 0; i < 9; i++) w[i] = rng_sym(1.0f);
    const void *in[2] = {x, w};
    int32_t pos[4] = {0, 1, 2, 3}, seq[4] = {0}, slot0[1] = {0}, slot1[1] = {1}, slot2[1] = {2};
    T_OK(rec_run(&r, 4, pos, seq, 1, slot0, in, (void *const[]){y0}));
    T_OK(g_cpu->ops->copy_state(r.s, (int32_t[]){0, -1}, (int32_t[]){1, 2}, 2));
    int32_t next[1] = {4};
    T_OK(rec_run(&r, 1, next, seq, 1, slot0, in, (void *const[]){y0}));
    T_OK(rec_run(&r, 1, next, seq, 1, slot1, in, (void *const[]){y1}));
    T_OK(rec_run(&r, 1, next, seq, 1, slot2, in, (void *const[]){y2}));
    T_CHECK(memcmp(y0, y1, 3 * sizeof(float)) == 0, "a copied slot continues differently from its source");
    for (int c = 0; c < 3; c++) {
        double ref = silu_d((double)w[c * 3 + 2] * x[c]); /* history of zeros: only the last tap sees x */
        T_CHECK(fabs(y2[c] - ref) < 1e-6, "zeroed slot: channel %d gives %g, expected %g", c, y2[c], ref);
    }
    rlx_status bad = g_cpu->ops->copy_state(r.s, (int32_t[]){0}, (int32_t[]){3}, 1);
    printf("  copy_state to slot 3 of 3 -> %s\n", bad ? rlx_status_message(bad) : "(no error)");
    T_CHECK(bad && strstr(rlx_status_message(bad), "outside the session's 3 state slots"), "slot 3 not refused");
    rlx_status_free(bad);
    bad = g_cpu->ops->copy_state(r.s, (int32_t[]){-2}, (int32_t[]){0}, 1);
    T_CHECK(bad != NULL, "source slot -2 not refused");
    rlx_status_free(bad);
    rec_close(&r);
}

/* ---- CAUSAL_CONV ---- */

/* Three runs over two sequences with slots {1, 0}: the state carries across runs, sequences
 * interleave in a run, and sequence 0 restarts at position 0 in the last run over its dirty slot. */
void test_CAUSAL_CONV(void) {
    enum { C = 37, K = 4, ROWS = 6, SEQS = 2 };
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) return;
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){ROWS, C}));
    rlx_node w = rlx_input(g, "w", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){C, K}));
    rlx_node st = rlx_state(g, 0, 5, rlx_shape_make(2, (int64_t[]){K - 1, C}));
    rlx_graph_mark_output(g, rlx_causal_conv(g, x, w, st), "y");
    rec r = {.g = g};
    if (!T_OK(rec_open(&r, NULL, 0, 2, 5 + (K - 1) * C + 3))) return rec_close(&r);
    float *wv = rand_f32(C * K, 0.8f);
    double hist[SEQS][32][C]; /* each sequence's inputs by position */
    struct {
        int32_t n, pos[ROWS], seq[ROWS];
    } runs[] = {
        {5, {0, 0, 1, 2, 1}, {0, 1, 0, 0, 1}},
        {6, {3, 2, 4, 3, 5, 6}, {0, 1, 0, 1, 0, 0}},
        {4, {4, 0, 1, 5}, {1, 0, 0, 1}},
    };
    const int32_t slots[SEQS] = {1, 0};
    double worst = 0;
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        float *xv = rand_f32(ROWS * C, 1.5f), y[ROWS * C];
        const void *in[2] = {xv, wv};
        void *out[1] = {y};
        if (!T_OK(rec_run(&r, runs[k].n, runs[k].pos, runs[k].seq, SEQS, slots, in, out))) break;
        for (int32_t i = 0; i < runs[k].n; i++) {
            int32_t s = runs[k].seq[i], p = runs[k].pos[i];
            for (int c = 0; c < C; c++) hist[s][p][c] = xv[i * C + c];
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int t = 0; t < K; t++) {
                    int32_t at = p - (K - 1) + t;
                    acc += (double)wv[c * K + t] * (at >= 0 ? hist[s][at][c] : 0.0);
                }
                double d = fabs(y[i * C + c] - silu_d(acc));
                if (d > worst) worst = d;
            }
        }
        for (int32_t i = runs[k].n; i < ROWS; i++)
            for (int c = 0; c < C; c++) T_CHECK(y[i * C + c] == 0.0f, "padding row %d is not 0", i);
        free(xv);
    }
    printf("  C %d, K %d, 3 runs of 2 interleaved sequences: max |y - ref| %.3g\n", C, K, worst);
    T_CHECK(worst < 2e-6, "conv max error %.3g", worst);
    free(wv);
    rec_close(&r);
}

/* ---- DELTA_RULE ---- */

typedef struct delta_case {
    int32_t hk, hv, dk, dv, rows, chunk;
} delta_case;

typedef struct delta_ref {
    double *S; /* [seqs][hv][dk][dv] */
} delta_ref;

/* The token-by-token recurrence of ops.def in double, for row i of the inputs. */
static void delta_ref_row(const delta_case *c, double *S, const float *q, const float *k, const float *v,
                          const float *gt, const float *bt, int32_t i, double *o) {
    for (int32_t h = 0; h < c->hv; h++) {
        int32_t kh = h % c->hk;
        const float *qr = q + ((size_t)i * c->hk + kh) * c->dk, *kr = k + ((size_t)i * c->hk + kh) * c->dk;
        const float *vr = v + ((size_t)i * c->hv + h) * c->dv;
        double *Sh = S + (size_t)h * c->dk * c->dv, decay = exp(gt[i * c->hv + h]), beta = bt[i * c->hv + h];
        for (int32_t e = 0; e < c->dk * c->dv; e++) Sh[e] *= decay;
        for (int32_t b = 0; b < c->dv; b++) {
            double stk = 0;
            for (int32_t a = 0; a < c->dk; a++) stk += Sh[a * c->dv + b] * kr[a];
            double u = beta * (vr[b] - stk);
            for (int32_t a = 0; a < c->dk; a++) Sh[a * c->dv + b] += kr[a] * u;
        }
        for (int32_t b = 0; b < c->dv; b++) {
            double acc = 0;
            for (int32_t a = 0; a < c->dk; a++) acc += Sh[a * c->dv + b] * qr[a];
            o[((size_t)i * c->hv + h) * c->dv + b] = acc;
        }
    }
}

/* Unit vectors (the model L2-normalises q and k), decays e^g in (0.3, 1), beta in (0, 1). */
static float *unit_rows(int32_t n, int32_t d) {
    float *x = rand_f32((size_t)n * d, 1.0f);
    for (int32_t r = 0; r < n; r++) {
        double ss = 0;
        for (int32_t a = 0; a < d; a++) ss += (double)x[r * d + a] * x[r * d + a];
        for (int32_t a = 0; a < d; a++) x[r * d + a] = (float)(x[r * d + a] / sqrt(ss));
    }
    return x;
}

static rlx_graph *delta_graph(const delta_case *c) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) exit(1);
    int64_t n = c->rows;
    rlx_node q = rlx_input(g, "q", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){n, c->hk, c->dk}));
    rlx_node k = rlx_input(g, "k", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){n, c->hk, c->dk}));
    rlx_node v = rlx_input(g, "v", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){n, c->hv, c->dv}));
    rlx_node gt = rlx_input(g, "g", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){n, c->hv}));
    rlx_node bt = rlx_input(g, "beta", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){n, c->hv}));
    rlx_node st = rlx_state(g, 0, 7, rlx_shape_make(3, (int64_t[]){c->hv, c->dk, c->dv}));
    rlx_graph_mark_output(g, rlx_delta_rule(g, q, k, v, gt, bt, st, c->chunk), "o");
    return g;
}

/* One sequence of `len` rows from position 0 over `runs` runs (split evenly), each run a prefill
 * chunk; compares every output with the recurrence and returns the worst difference. */
static double delta_one(const delta_case *c, int32_t len, int32_t runs, float *out_all) {
    rec r = {.g = delta_graph(c)};
    int64_t floats = 7 + (int64_t)c->hv * c->dk * c->dv;
    if (!T_OK(rec_open(&r, NULL, 0, 3, floats))) {
        rec_close(&r);
        return INFINITY;
    }
    float *q = unit_rows(len * c->hk, c->dk), *k = unit_rows(len * c->hk, c->dk);
    float *v = rand_f32((size_t)len * c->hv * c->dv, 1.0f), *gt = rand_f32((size_t)len * c->hv, 0.6f);
    float *bt = rand_f32((size_t)len * c->hv, 0.5f);
    for (int32_t i = 0; i < len * c->hv; i++) {
        gt[i] -= 0.6f; /* g in (-1.2, 0) */
        bt[i] += 0.5f; /* beta in (0, 1) */
    }
    double *S = calloc((size_t)c->hv * c->dk * c->dv, sizeof *S);
    double *o = malloc((size_t)len * c->hv * c->dv * sizeof *o), worst = 0;
    for (int32_t i = 0; i < len; i++) delta_ref_row(c, S, q, k, v, gt, bt, i, o);
    int32_t pos[512], seq[512] = {0};
    float *y = malloc((size_t)c->rows * c->hv * c->dv * sizeof *y);
    for (int32_t done = 0, run = 0; done < len; run++) {
        int32_t n = (len - done + (runs - run) - 1) / (runs - run);
        if (n > c->rows) n = c->rows;
        for (int32_t i = 0; i < n; i++) pos[i] = done + i;
        const void *in[5] = {q + (size_t)done * c->hk * c->dk, k + (size_t)done * c->hk * c->dk,
                             v + (size_t)done * c->hv * c->dv, gt + (size_t)done * c->hv, bt + (size_t)done * c->hv};
        void *outs[1] = {y};
        int32_t slot = 2;
        if (!T_OK(rec_run(&r, n, pos, seq, 1, &slot, in, outs))) break;
        for (int64_t e = 0; e < (int64_t)n * c->hv * c->dv; e++) {
            double d = fabs(y[e] - o[(size_t)done * c->hv * c->dv + e]);
            if (d > worst) worst = d;
            if (out_all) out_all[(size_t)done * c->hv * c->dv + e] = y[e];
        }
        done += n;
    }
    free(q), free(k), free(v), free(gt), free(bt), free(S), free(o), free(y);
    rec_close(&r);
    return worst;
}

static void delta_batched(void);

void test_DELTA_RULE(void) {
    /* lengths around the chunk: below, equal, past, several chunks; key heads shared 2:1 */
    const int32_t lens[] = {1, 7, 64, 70, 130};
    const int32_t chunks[] = {64, 16, 1};
    for (size_t a = 0; a < sizeof lens / sizeof lens[0]; a++) {
        float *by[3];
        for (size_t b = 0; b < 3; b++) {
            delta_case c = {.hk = 2, .hv = 4, .dk = 16, .dv = 12, .rows = 160, .chunk = chunks[b]};
            size_t n = (size_t)lens[a] * c.hv * c.dv;
            by[b] = malloc(n * sizeof(float));
            rng_state = 0x1234 + a; /* the same inputs for every chunk size */
            double worst = delta_one(&c, lens[a], 1, by[b]);
            printf("  %3d rows in one run, chunk %2d: max |o - recurrence| %.3g\n", lens[a], chunks[b], worst);
            T_CHECK(worst < 5e-6, "len %d chunk %d: max error %.3g", lens[a], chunks[b], worst);
        }
        double d = 0;
        for (size_t e = 0; e < (size_t)lens[a] * 4 * 12; e++) d = fmax(d, fabs(by[0][e] - by[2][e]));
        printf("  %3d rows: chunked (64) vs step by step (1): max diff %.3g\n", lens[a], d);
        T_CHECK(d < 5e-6, "chunked vs step by step differ by %.3g", d);
        for (size_t b = 0; b < 3; b++) free(by[b]);
    }
    /* the state carried over runs: 100 rows as prefill chunks of 34, 33, 33 (chunk 16 in each) */
    delta_case c = {.hk = 1, .hv = 3, .dk = 8, .dv = 8, .rows = 40, .chunk = 16};
    double worst = delta_one(&c, 100, 3, NULL);
    printf("  100 rows over 3 runs, chunk 16, Hk 1 Hv 3: max |o - recurrence| %.3g\n", worst);
    T_CHECK(worst < 5e-6, "over runs: max error %.3g", worst);
    delta_batched();
}

/* Two sequences interleaved, slots {1, 0}, then sequence 1 restarted at 0 over its dirty slot:
 * each equals the recurrence of its own rows (batched == alone). */
static void delta_batched(void) {
    delta_case c = {.hk = 2, .hv = 2, .dk = 8, .dv = 4, .rows = 8, .chunk = 3};
    rec r = {.g = delta_graph(&c)};
    if (!T_OK(rec_open(&r, NULL, 0, 2, 7 + 2 * 8 * 4))) return rec_close(&r);
    double S[2][2 * 8 * 4] = {{0}}, worst = 0;
    struct {
        int32_t n, pos[8], seq[8];
    } runs[] = {
        {8, {0, 0, 1, 2, 1, 3, 4, 2}, {0, 1, 0, 0, 1, 0, 0, 1}},
        {7, {5, 0, 6, 1, 2, 7, 3}, {0, 1, 0, 1, 1, 0, 1}},
    };
    const int32_t slots[2] = {1, 0};
    for (size_t k = 0; k < 2; k++) {
        int32_t n = 8;
        float *q = unit_rows(n * 2, 8), *kk = unit_rows(n * 2, 8), *v = rand_f32(n * 2 * 4, 1.0f);
        float *gt = rand_f32(n * 2, 0.5f), *bt = rand_f32(n * 2, 0.5f), y[8 * 2 * 4];
        for (int i = 0; i < n * 2; i++) gt[i] -= 0.5f, bt[i] += 0.5f;
        const void *in[5] = {q, kk, v, gt, bt};
        void *out[1] = {y};
        if (!T_OK(rec_run(&r, runs[k].n, runs[k].pos, runs[k].seq, 2, slots, in, out))) break;
        double o[8 * 2 * 4];
        for (int32_t i = 0; i < runs[k].n; i++) {
            double *Ss = S[runs[k].seq[i]];
            if (runs[k].pos[i] == 0) memset(Ss, 0, sizeof S[0]);
            delta_ref_row(&c, Ss, q, kk, v, gt, bt, i, o);
            for (int e = 0; e < 2 * 4; e++) worst = fmax(worst, fabs(y[i * 8 + e] - o[i * 8 + e]));
        }
        for (int32_t e = runs[k].n * 8; e < 8 * 8; e++) T_CHECK(y[e] == 0.0f, "padding element %d is not 0", e);
        free(q), free(kk), free(v), free(gt), free(bt);
    }
    printf("  2 interleaved sequences, slots {1, 0}, restart at 0: max |o - recurrence| %.3g\n", worst);
    T_CHECK(worst < 1e-5, "batched: max error %.3g", worst);
    rec_close(&r);
}

/* ---- elementwise ---- */

/* y = f(x) for a graph of one input [7, 13] (and extra inputs), against ref in double. */
static void elementwise(const char *what, rlx_node (*build)(rlx_graph *, rlx_node, rlx_node, rlx_node),
                        double (*ref)(const float *x, const float *a, const float *b, int r, int c, int cols),
                        double tol) {
    enum { R = 7, C = 13 };
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) return;
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){R, C}));
    rlx_node a = rlx_input(g, "a", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){C}));
    rlx_node b = rlx_input(g, "b", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){C}));
    rlx_graph_mark_output(g, build(g, x, a, b), "y");
    float *xv = rand_f32(R * C, 12.0f), *av = rand_f32(C, 3.0f), *bv = rand_f32(C, 3.0f), y[R * C];
    xv[0] = 60.0f, xv[1] = -60.0f, xv[2] = 0.0f; /* far tails of softplus and sigmoid */
    rlx_state_spec none = {0};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    const void *in[3] = {xv, av, bv};
    void *out[1] = {y};
    rlx_run_args args = {.n_tokens = R - 2, .inputs = in, .outputs = out};
    double worst = 0;
    if (T_OK(g_cpu->ops->session_create(cpu(), NULL, 0, &none, &s)) && T_OK(g_cpu->ops->compile(s, g, &p)) &&
        T_OK(g_cpu->ops->run(p, &args)))
        for (int r = 0; r < R - 2; r++)
            for (int c = 0; c < C; c++) {
                double want = ref(xv, av, bv, r, c, C), d = fabs(y[r * C + c] - want) / fmax(1.0, fabs(want));
                if (d > worst) worst = d;
            }
    printf("  %-40s max relative error %.3g\n", what, worst);
    T_CHECK(worst < tol, "%s: error %.3g", what, worst);
    if (p) g_cpu->ops->program_destroy(p);
    if (s) g_cpu->ops->session_destroy(s);
    rlx_graph_destroy(g);
    free(xv), free(av), free(bv);
}

static rlx_node build_gate(rlx_graph *g, rlx_node x, rlx_node a, rlx_node b) { return rlx_delta_gate(g, x, a, b); }
static double ref_gate(const float *x, const float *a, const float *b, int r, int c, int cols) {
    return a[c] * log1p(exp((double)x[r * cols + c] + b[c]));
}
static rlx_node build_l2(rlx_graph *g, rlx_node x, rlx_node a, rlx_node b) {
    (void)a, (void)b;
    return rlx_l2_norm(g, x, 1e-6f);
}
static double ref_l2(const float *x, const float *a, const float *b, int r, int c, int cols) {
    (void)a, (void)b;
    double ss = 0;
    for (int k = 0; k < cols; k++) ss += (double)x[r * cols + k] * x[r * cols + k];
    return x[r * cols + c] / sqrt(ss + 1e-6);
}
static rlx_node build_sigmoid(rlx_graph *g, rlx_node x, rlx_node a, rlx_node b) {
    (void)a, (void)b;
    return rlx_sigmoid(g, x);
}
static double ref_sigmoid(const float *x, const float *a, const float *b, int r, int c, int cols) {
    (void)a, (void)b;
    return 1.0 / (1.0 + exp(-(double)x[r * cols + c]));
}

void test_DELTA_GATE(void) { elementwise("A * softplus(a + dt_bias), [7, 13]", build_gate, ref_gate, 2e-6); }
void test_L2_NORM(void) { elementwise("L2_NORM eps 1e-6, [7, 13]", build_l2, ref_l2, 2e-6); }
void test_SIGMOID(void) { elementwise("SIGMOID, [7, 13]", build_sigmoid, ref_sigmoid, 2e-6); }

/* y[r, h, j] = x[r, h, begin + j]: a [5, 3, 11] input, rows 0..3 valid. */
void test_SLICE(void) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) return;
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){5, 3, 11}));
    rlx_graph_mark_output(g, rlx_slice(g, x, 4, 6), "y");
    float *xv = rand_f32(5 * 3 * 11, 1.0f), y[5 * 3 * 6];
    rlx_state_spec none = {0};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    const void *in[1] = {xv};
    void *out[1] = {y};
    rlx_run_args args = {.n_tokens = 4, .inputs = in, .outputs = out};
    int bad = 0;
    if (T_OK(g_cpu->ops->session_create(cpu(), NULL, 0, &none, &s)) && T_OK(g_cpu->ops->compile(s, g, &p)) &&
        T_OK(g_cpu->ops->run(p, &args)))
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < 3; h++)
                for (int j = 0; j < 6; j++) bad += y[(r * 3 + h) * 6 + j] != xv[(r * 3 + h) * 11 + 4 + j];
    printf("  SLICE [5,3,11] [4, +6) at n_tokens 4: %d elements differ\n", bad);
    T_CHECK(bad == 0, "slice: %d elements differ", bad);
    if (p) g_cpu->ops->program_destroy(p);
    if (s) g_cpu->ops->session_destroy(s);
    rlx_graph_destroy(g);
    free(xv);
}

/* y[r, c] = x[r, c] * s[r] exactly (one product): [6, 9] by [6, 1], rows 0..4 valid. */
void test_SCALE_ROWS(void) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) return;
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){6, 9}));
    rlx_node sc = rlx_input(g, "s", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){6, 1}));
    rlx_graph_mark_output(g, rlx_scale_rows(g, x, sc), "y");
    float *xv = rand_f32(6 * 9, 2.0f), *sv = rand_f32(6, 1.0f), y[6 * 9];
    rlx_state_spec none = {0};
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    const void *in[2] = {xv, sv};
    void *out[1] = {y};
    rlx_run_args args = {.n_tokens = 5, .inputs = in, .outputs = out};
    int bad = 0;
    if (T_OK(g_cpu->ops->session_create(cpu(), NULL, 0, &none, &s)) && T_OK(g_cpu->ops->compile(s, g, &p)) &&
        T_OK(g_cpu->ops->run(p, &args)))
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 9; c++) bad += y[r * 9 + c] != (float)((double)xv[r * 9 + c] * (double)sv[r]);
    printf("  SCALE_ROWS [6,9] by [6,1] at n_tokens 5: %d elements differ from x * s\n", bad);
    T_CHECK(bad == 0, "scale_rows: %d elements differ", bad);
    if (p) g_cpu->ops->program_destroy(p);
    if (s) g_cpu->ops->session_destroy(s);
    rlx_graph_destroy(g);
    free(xv), free(sv);
}

void test_recurrent_done(void) {
    rlx_backend_destroy(g_cpu);
    g_cpu = NULL;
}
