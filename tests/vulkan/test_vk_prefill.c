/* The prefill kernels (runtime/vk_lower.c's many-rows branches) against the CPU reference:
 *  - MATMUL of 16+ rows: shaders/matmul_coop.comp on devices with VK_NV_cooperative_matrix (caps
 *    coopmat_f16; by default "mixed": plain f16 operands), else shaders/matmul_tiled.comp. Where the
 *    cooperative kernel exists, every case also runs with RLX_VK_COOPMAT=0 (the tiled kernel) and
 *    RLX_VK_COOPMAT=exact (split operands). Without it (lavapipe) the cases run on the tiled kernel
 *    and the cooperative part is reported as SKIPPED; a subset also runs the kernel's emulation
 *    (RLX_VK_COOPMAT=emulate and emulate-mixed) on any device.
 *  - ATTENTION of 16+ query rows: shaders/attention_prefill.comp (causal, windows, GQA, padding
 *    rows, key blocks past a long cache, head sizes that are not multiples of its tiles).
 * Each case names the kernel the compiled program dispatches (white box: runtime/vk_internal.h)
 * and checks it is the one the selection rule promises; in the mixed modes a weight of another type
 * than F16 is first decoded into f16 rows (shaders/dequant.comp), which the cases check too.
 *
 * Checks. NMSE against the CPU backend, as tests/vulkan/test_vk_ops.c: 1e-7 (test-backend-ops' f32
 * bound) for every f32-accurate path, the cooperative "exact" mode included; 1e-6 for
 * the mixed mode (f16 operands). Plain MATMUL cases also check every output against a bound derived from
 * its operands and from how the kernel rounds them:
 *     |y_vk - y_cpu| <= sum_k p(x_ik, w_jk) + acc * sum_k |x_ik w_jk|
 * acc covers the two f32 sums of k terms in different orders, ours and the CPU's ((k + 2) 2^-24
 * each; tensor cores may truncate where f32 rounds: 2k 2^-24 on their side). p bounds one
 * product's error when each operand is off by at most rel |v| + abs, plus a dropped term:
 *     p = (2 rel + rel^2 + drop) |x||w| + abs (1 + rel) (|x| + |w|) + abs^2
 *   - f32 kernels: exact operands, p = 0;
 *   - coop exact: hi + 2^-11 lo keeps an operand within 2^-21 |v| (the low part's conversion
 *     errs by at most 2^-10 of itself, 2^-11 when it rounds to nearest; lo is at most 2^-11 |v|)
 *     or 2^-24 below f16's normal range, and the dropped lo.lo term is below 2^-22 |x||w|;
 *   - coop mixed: f16 operands, within 2^-10 |v| in any rounding mode or 2^-14 where f16
 *     subnormals are flushed.
 * Each case prints the worst |error| / sum_k |x w| it reached (about 2^-24 sqrt(k) for f32 sums,
 * 2^-11 for f16 operands): a low part that never arrived shows up as f16-sized error there. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/core/dequant.h"
#include "loader/core/dtype.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_internal.h"
#include "test_util.h"
#include "test_vk_util.h"

#define TOL_F32 RLX_VALIDATE_BOUND_F32 /* validate/validate_compare.h, as rlx validate holds them */
#define TOL_FAST RLX_VALIDATE_BOUND_MIXED

static rlx_backend *g_cpu, *g_vk;
static rlx_vk_options g_opts; /* g_vk's: the environment's (vkt_options) */
static vkt_rng g_rng = {0x9E3779B97F4A7C15ull};
static bool g_coop;       /* the device runs shaders/matmul_coop.comp */
static int g_coop_cases;  /* cases the cooperative kernel ran */
static int g_emu_cases;   /* cases its emulation (shaders/matmul_coop_emu.comp) ran */
static int g_batch_cases; /* cases shaders/matmul_batch.comp or its emulation ran */
static bool g_batch;      /* the next matmul_modes' mixed runs must dispatch matmul_batch (vk_batch_takes) */
static bool g_rounded;    /* the next matmul_modes' graph has no value past f16's range (elem_check rounded) */
static double g_worst[2]; /* worst NMSE: f32-accurate paths, mixed mode */

/* ---- running and comparing ---- */

typedef struct step {
    int32_t n_past, n_tokens;
} step;

/* Dispatches of kernel k in a compiled Vulkan program. */
static int count_kernel(const rlx_program *p, rlx_vk_kernel k) {
    int n = 0;
    for (size_t i = 0; i < p->run.n; i++) n += p->run.items[i].pipe->kernel == k;
    return n;
}

static double nmse_rows(const float *v, const float *c, const rlx_node_info *n, int32_t rows) {
    return vkt_nmse(v, c, rlx_shape_numel(&n->shape) / n->shape.dim[0] * rows);
}

/* How a matmul kernel rounds its operands (the header's p and acc). */
typedef struct prec_model {
    double rel, abs, drop; /* operand error <= rel |v| + abs; dropped product term <= drop |x||w| */
    double acc_gpu;        /* the GPU's f32 sum errs by up to acc_gpu * k * 2^-24 of sum |x w| */
} prec_model;

static const prec_model PREC_F32 = {0.0, 0.0, 0.0, 1.0};
static const prec_model PREC_PAIRS = {0x1p-21, 0x1p-24, 0x1p-22, 2.0};
static const prec_model PREC_F16 = {0x1p-10, 0x1p-14, 0.0, 2.0};

/* A plain y = x w^T to check element by element: x [rows, k] and w [m, k] as the CPU sees them. */
typedef struct elem_check {
    const float *x;
    float *w; /* dequantized: owned */
    int64_t k, m;
    const prec_model *prec;
    bool rounded; /* f16 operands and no value past f16's range: the f32 tile must not have run */
} elem_check;

/* An output within this fraction of sum|x w| of the CPU's is f32-exact: f16 operands leave about
 * 1e-5 at these k (2^-12 per operand, partly cancelling), f32 accumulation about 1e-8 */
#define EXACT_REL 1e-6

/* With c->rounded, the outputs of each 16-wide block of weight rows (a subgroup's in the
 * cooperative kernels) must not be mostly f32-exact: that would mean the kernel's f32 tile
 * recomputed them, which hides any wrong value its f16 path staged past 16384. */
static void check_rounded(const char *label, const elem_check *c, int32_t rows, int64_t j0, int exact) {
    int64_t n = rows * (c->m - j0 < 16 ? c->m - j0 : 16);
    T_CHECK(2 * exact <= n, "%s: weight rows %lld..: %d of %lld outputs f32-exact: the f32 tile ran", label,
            (long long)j0, exact, (long long)n);
}

/* Checks the first `rows` rows of got against want within the header's bound; returns the worst
 * |error| / sum|x w|, and in *bound_ratio the largest bound / sum|x w|. */
static double check_elements(const char *label, const elem_check *c, const float *got, const float *want,
                             int32_t rows, double *bound_ratio) {
    const prec_model *pm = c->prec;
    double pxw = 2 * pm->rel + pm->rel * pm->rel + pm->drop, pabs = pm->abs * (1 + pm->rel);
    double acc = ((pm->acc_gpu + 1) * (double)c->k + 4) * 0x1p-24;
    double worst = 0.0;
    int bad = 0;
    *bound_ratio = 0.0;
    for (int64_t j0 = 0; j0 < c->m; j0 += 16) {
        int exact = 0;
        for (int32_t r = 0; r < rows; r++)
            for (int64_t j = j0; j < j0 + 16 && j < c->m; j++) {
                const float *xr = c->x + r * c->k, *wr = c->w + j * c->k;
                double sxw = 0.0, sxpw = 0.0;
                for (int64_t i = 0; i < c->k; i++) {
                    sxw += fabs((double)xr[i] * wr[i]);
                    sxpw += fabs((double)xr[i]) + fabs((double)wr[i]);
                }
                double bound = (pxw + acc) * sxw + pabs * sxpw + (double)c->k * pm->abs * pm->abs;
                double err = fabs((double)got[r * c->m + j] - (double)want[r * c->m + j]);
                if (!(err <= bound) && bad++ == 0)
                    T_CHECK(false, "%s: y[%d][%lld] = %.9g, CPU %.9g: |error| %.3e > bound %.3e", label, r,
                            (long long)j, (double)got[r * c->m + j], (double)want[r * c->m + j], err, bound);
                if (sxw > 0.0 && err / sxw > worst) worst = err / sxw;
                if (sxw > 0.0 && bound / sxw > *bound_ratio) *bound_ratio = bound / sxw;
                exact += err <= EXACT_REL * sxw;
            }
        if (c->rounded) check_rounded(label, c, rows, j0, exact);
    }
    T_CHECK(bad == 0, "%s: %d outputs past their error bound", label, bad);
    return worst;
}

/* Runs t's single output on both backends over the steps and compares the first n_tokens rows;
 * `want` is the kernel the Vulkan program must dispatch, and f16_rows whether it must decode a weight
 * into f16 rows first (-1: not checked); ec, when given, the last step's outputs element by element. */
/* Whether the next compare's program must end its matmuls in shaders/matmul_reduce.comp (split k):
 * 1 yes, 0 no, -1 not checked. */
static int g_want_reduce = -1;

static void compare(const char *label, vkt_graph *t, const step *steps, int n_steps, rlx_vk_kernel want,
                    int f16_rows, double tol, const elem_check *ec) {
    const rlx_node_info *out = rlx_graph_node(t->g, rlx_graph_output_node(t->g, 0));
    size_t bytes = (size_t)rlx_shape_numel(&out->shape) * 4;
    rlx_session *sv = NULL, *sc = NULL;
    rlx_program *pv = NULL, *pc = NULL;
    float *ov = calloc(1, bytes), *oc = calloc(1, bytes);
    bool ok = T_OK(g_vk->ops->session_create(g_vk, t->w, t->nw, &t->kv, &sv)) &&
              T_OK(g_cpu->ops->session_create(g_cpu, t->w, t->nw, &t->kv, &sc)) &&
              T_OK(g_vk->ops->compile(sv, t->g, &pv)) && T_OK(g_cpu->ops->compile(sc, t->g, &pc));
    const char *kname = ok ? rlx_vk_kernel_get(want)->name : "?";
    if (ok) T_CHECK(count_kernel(pv, want) > 0, "%s: the program does not dispatch %s", label, kname);
    bool decoded = ok && count_kernel(pv, RLX_VK_KERNEL_dequant) > 0;
    bool reduced = ok && count_kernel(pv, RLX_VK_KERNEL_matmul_reduce) > 0;
    if (ok && g_want_reduce >= 0)
        T_CHECK(reduced == (g_want_reduce > 0), "%s: split k ends in matmul_reduce: %s, expected %s", label,
                reduced ? "yes" : "no", g_want_reduce > 0 ? "yes" : "no");
    if (ok && f16_rows >= 0)
        T_CHECK(decoded == (f16_rows > 0), "%s: weights decoded into f16 rows: %s, expected %s", label,
                decoded ? "yes" : "no", f16_rows > 0 ? "yes" : "no");
    if (ok && want == RLX_VK_KERNEL_matmul_coop) g_coop_cases++;
    if (ok && want == RLX_VK_KERNEL_matmul_coop_emu) g_emu_cases++;
    if (ok && (want == RLX_VK_KERNEL_matmul_batch || want == RLX_VK_KERNEL_matmul_batch_emu)) g_batch_cases++;
    double worst = 0.0;
    for (int s = 0; ok && s < n_steps; s++) {
        void *outs_v[1] = {ov}, *outs_c[1] = {oc};
        rlx_run_args av = {steps[s].n_past, steps[s].n_tokens, (const void *const *)t->in, outs_v, NULL};
        rlx_run_args ac = {steps[s].n_past, steps[s].n_tokens, (const void *const *)t->in, outs_c, NULL};
        if (!T_OK(g_vk->ops->run(pv, &av)) || !T_OK(g_cpu->ops->run(pc, &ac))) break;
        double e = nmse_rows(ov, oc, out, steps[s].n_tokens);
        if (e > worst || isnan(e)) worst = e;
    }
    printf("  %-76s %-17s nmse %.2e (tol %.0e)", label, kname, worst, tol);
    if (ok && ec) {
        double bound_ratio, ratio = check_elements(label, ec, ov, oc, steps[n_steps - 1].n_tokens, &bound_ratio);
        printf(", worst |error|/sum|xw| %.1e (bound %.1e)", ratio, bound_ratio);
    }
    printf("\n");
    T_CHECK(worst <= tol, "%s on %s: nmse %.3e > %.0e", label, kname, worst, tol);
    int slot = tol > TOL_F32;
    if (worst > g_worst[slot]) g_worst[slot] = worst;
    if (pv) g_vk->ops->program_destroy(pv);
    if (pc) g_cpu->ops->program_destroy(pc);
    if (sv) g_vk->ops->session_destroy(sv);
    if (sc) g_cpu->ops->session_destroy(sc);
    free(ov);
    free(oc);
}

/* A matmul graph run in each RLX_VK_COOPMAT mode the device has, and with `emu` also with the
 * cooperative kernel's matrix operations emulated (any device: a subset of the cases, as lavapipe
 * takes seconds to compile each emulated variant); `plain`: its output is x w^T of input 0 and
 * weight 0 (checked element by element); `no_f16_rows`: the mixed modes read the weights as
 * stored (all F16, 64 rows of x or fewer, or parts whose f16 rows would not fit a binding), else
 * they decode them into f16 rows first. The cooperative runs, real and emulated, cycle through the
 * kernel's tile heights and prefetch depths, and every third one splits k in 4 (RLX_VK_COOPMAT_SPLIT;
 * fewer where k has fewer steps of 64), which must then end in shaders/matmul_reduce.comp. */
typedef void (*build_fn)(vkt_graph *t, const void *arg);

static void matmul_modes(const char *label, build_fn build, const void *arg, int32_t n_tokens, bool plain,
                         bool emu, bool no_f16_rows) {
    static const struct {
        int coopmat; /* rlx_vk_coopmat, or -1: the environment's */
        const char *tag;
        bool coop_only, emulated, mixed; /* needs the real kernel; is an emulation; f16 operands */
    } modes[] = {{-1, "", false, false, true},
                 {RLX_VK_COOPMAT_OFF, " COOPMAT=0", true, false, false},
                 {RLX_VK_COOPMAT_EXACT, " COOPMAT=exact", true, false, false},
                 {RLX_VK_COOPMAT_EMULATE, " COOPMAT=emulate", false, true, false},
                 {RLX_VK_COOPMAT_EMULATE_MIXED, " COOPMAT=emulate-mixed", false, true, true}};
    static int calls, emulated; /* variants: real kernel by call, emulation by emulated run */
    calls++;
    for (int m = 0; m < 5; m++) {
        if ((modes[m].coop_only && !g_coop) || (modes[m].emulated && !emu)) continue;
        rlx_vk_kernel want = modes[m].emulated ? RLX_VK_KERNEL_matmul_coop_emu
                             : m == 1 || !g_coop ? RLX_VK_KERNEL_matmul_tiled
                                                 : RLX_VK_KERNEL_matmul_coop;
        bool variants = want != RLX_VK_KERNEL_matmul_tiled;
        if (variants && modes[m].mixed && g_batch) /* decode batches of F16, Q4_K, Q6_K weights */
            want = modes[m].emulated ? RLX_VK_KERNEL_matmul_batch_emu : RLX_VK_KERNEL_matmul_batch;
        int v = modes[m].emulated ? emulated++ : calls;
        /* emulated runs come in pairs (exact, mixed): the pair's tile heights swap every call, so
         * that each mode meets both */
        uint32_t tm = (modes[m].emulated ? v + v / 2 : v) % 2 ? 128 : 64,
                 depth = g_batch && v / 2 % 3 == 2 ? 4 : v / 2 % 2 ? 2 : 1, /* 4: matmul_batch only */
                 split = v % 3 == 1 ? 4 : 1, tn = v / 4 % 2 ? 128 : 64; /* TN 128: the mixed modes only */
        vkt_graph t;
        vkt_graph_init(&t);
        build(&t, arg);
        rlx_vk_options o = g_opts;
        if (modes[m].coopmat >= 0) o.coopmat = (rlx_vk_coopmat)modes[m].coopmat;
        if (variants) {
            o.coopmat_tm = tm;
            o.coopmat_depth = depth;
            o.coopmat_split = split;
            o.coopmat_tn = tn;
        }
        vkt_set_options(g_vk, &o);
        bool mixed = want != RLX_VK_KERNEL_matmul_tiled && modes[m].mixed;
        const prec_model *prec = want == RLX_VK_KERNEL_matmul_tiled ? &PREC_F32 : mixed ? &PREC_F16 : &PREC_PAIRS;
        char full[128], knobs[48] = "";
        if (variants)
            snprintf(knobs, sizeof knobs, " TM=%u DEPTH=%u SPLIT=%u%s", tm, depth, split,
                     tn == 128 && mixed ? " TN=128" : "");
        snprintf(full, sizeof full, "%s%s%s", label, modes[m].tag, knobs);
        step st = {0, n_tokens};
        elem_check ec = {0};
        if (plain) {
            const rlx_weight *w = &t.w[0];
            ec = (elem_check){t.in[0], malloc(w->ne[0] * w->ne[1] * sizeof(float)), (int64_t)w->ne[0],
                              (int64_t)w->ne[1], prec, mixed && g_rounded};
            if (!ec.w) exit(1);
            rlx_dequantize(w->type, w->data, ec.w, w->ne[0] * w->ne[1]);
        }
        /* k of the first weight: a forced split of k >= 128 (two k steps or more, of 64 or 32) must
         * happen, one of k <= 32 (one step) cannot; between, it depends on the step the device's
         * shared memory allows */
        int64_t k = t.w[0].ne[0];
        g_want_reduce = !variants || split == 1 ? 0 : k >= 128 ? 1 : k <= 32 ? 0 : -1;
        compare(full, &t, &st, 1, want, mixed && !no_f16_rows, mixed ? TOL_FAST : TOL_F32, plain ? &ec : NULL);
        g_want_reduce = -1;
        free(ec.w);
        vkt_set_options(g_vk, &g_opts);
        vkt_graph_free(&t);
    }
}

/* ---- MATMUL ---- */

typedef struct mm_case {
    uint32_t type;
    int64_t k, m, rows;
    float big; /* when > 0: a few x values of this size (past f16's range) */
    bool emu;  /* also run the cooperative kernel's emulation */
    bool decode_in_kernel; /* mixed modes keep the decode in the kernel: a part's f16 rows exceed a binding */
} mm_case;

static void build_matmul(vkt_graph *t, const void *arg) {
    const mm_case *c = arg;
    rlx_node x = vkt_input_f32(t, &g_rng, vkt_shape(2, c->rows, c->k, 0), 1.0f);
    for (int64_t i = 0; c->big > 0 && i < c->rows * c->k; i += 997) ((float *)t->in[0])[i] = i % 2 ? -c->big : c->big;
    rlx_graph_mark_output(t->g, rlx_matmul(t->g, x, vkt_graph_weight(t, &g_rng, c->type, 2, c->m, c->k, 0)), "y");
}

static void matmul_case(mm_case c, int32_t n_tokens) {
    char label[96];
    snprintf(label, sizeof label, "MATMUL %s k=%lld m=%lld rows=%lld n_tok=%d%s", rlx_dtype_name(c.type),
             (long long)c.k, (long long)c.m, (long long)c.rows, n_tokens, c.big > 0 ? " |x|<=4e4" : "");
    /* runtime/vk_plan.c vk_batch_takes: F16, Q4_K or Q6_K, 64 rows or fewer, weight rows in blocks of
     * 16 (one part) */
    bool batch_on = g_opts.matmul_batch > 0 || (g_opts.matmul_batch < 0 && RLX_VK_MATMUL_BATCH_DEFAULT);
    bool typed = c.type == RLX_DTYPE_F16 || c.type == RLX_DTYPE_Q4_K || c.type == RLX_DTYPE_Q6_K;
    g_batch = typed && c.rows <= 64 && c.m % 16 == 0 && batch_on;
    g_rounded = c.big == 0;
    matmul_modes(label, build_matmul, &c, n_tokens, true, c.emu,
                 c.type == RLX_DTYPE_F16 || c.decode_in_kernel || c.rows <= 64);
    g_batch = false;
    g_rounded = false;
}

/* A Q8_0 weight whose scales put its values past f16's range (|v| up to 32768 * 127): with more
 * than 64 rows the mixed modes decode it into f16 rows first, which cannot hold them, so the run
 * fails naming the weight and the way out (RLX_VK_COOPMAT=exact); with 64 or fewer the kernel
 * decodes it itself, and its f32 tile computes them as the exact mode does, as the CPU does. */
static void test_f16_range(void) {
    static const struct {
        const char *mode;
        rlx_vk_coopmat coopmat;
        int64_t rows;
        bool fails;
    } modes[] = {{"emulate-mixed", RLX_VK_COOPMAT_EMULATE_MIXED, 72, true},
                 {"emulate-mixed", RLX_VK_COOPMAT_EMULATE_MIXED, 40, false},
                 {"emulate", RLX_VK_COOPMAT_EMULATE, 72, false}};
    for (int m = 0; m < 3; m++) {
        vkt_graph t;
        vkt_graph_init(&t);
        int64_t rows = modes[m].rows;
        mm_case c = {RLX_DTYPE_Q8_0, 64, 48, rows, 0, false, false};
        build_matmul(&t, &c);
        uint8_t *blocks = (uint8_t *)t.w[0].data;
        for (uint64_t b = 0; b < t.w[0].nbytes / 34; b++) {
            blocks[34 * b] = 0x00; /* d = f16 0x7800: 32768 */
            blocks[34 * b + 1] = 0x78;
        }
        rlx_vk_options o = g_opts;
        o.coopmat = modes[m].coopmat;
        vkt_set_options(g_vk, &o);
        char label[96];
        snprintf(label, sizeof label, "MATMUL Q8_0 values past f16's range, %lld rows COOPMAT=%s", (long long)rows,
                 modes[m].mode);
        if (!modes[m].fails) {
            step st = {0, (int32_t)rows};
            compare(label, &t, &st, 1, RLX_VK_KERNEL_matmul_coop_emu, 0, TOL_F32, NULL);
        } else {
            rlx_session *s = NULL;
            rlx_program *p = NULL;
            float *out = calloc((size_t)rows * 48, sizeof *out);
            void *outs[1] = {out};
            rlx_run_args a = {0, (int32_t)rows, (const void *const *)t.in, outs, NULL};
            if (out && T_OK(g_vk->ops->session_create(g_vk, t.w, t.nw, &t.kv, &s)) &&
                T_OK(g_vk->ops->compile(s, t.g, &p)))
                T_ERR(g_vk->ops->run(p, &a), RLX_ERR_UNSUPPORTED, "RLX_VK_COOPMAT=exact");
            printf("  %-76s refused: the f16 rows cannot hold the values\n", label);
            if (p) g_vk->ops->program_destroy(p);
            if (s) g_vk->ops->session_destroy(s);
            free(out);
        }
        vkt_set_options(g_vk, &g_opts);
        vkt_graph_free(&t);
    }
}

/* Fused epilogues: 0 residual add, 1 SiLU gate, 2 GELU gate (operands swapped). */
static void build_fused(vkt_graph *t, const void *arg) {
    int variant = *(const int *)arg;
    rlx_node h = vkt_input_f32(t, &g_rng, vkt_shape(2, 40, 256, 0), 1.0f), y;
    if (variant == 0) {
        y = rlx_add(t->g, vkt_input_f32(t, &g_rng, vkt_shape(2, 40, 96, 0), 1.0f),
                    rlx_matmul(t->g, h, vkt_graph_weight(t, &g_rng, RLX_DTYPE_Q4_K, 2, 96, 256, 0)));
    } else if (variant == 1) {
        y = rlx_mul(t->g,
                    rlx_silu(t->g, rlx_matmul(t->g, h, vkt_graph_weight(t, &g_rng, RLX_DTYPE_Q8_0, 2, 64, 256, 0))),
                    rlx_matmul(t->g, h, vkt_graph_weight(t, &g_rng, RLX_DTYPE_F16, 2, 64, 256, 0)));
    } else {
        y = rlx_mul(
            t->g, rlx_matmul(t->g, h, vkt_graph_weight(t, &g_rng, RLX_DTYPE_BF16, 2, 64, 256, 0)),
            rlx_gelu_tanh(t->g, rlx_matmul(t->g, h, vkt_graph_weight(t, &g_rng, RLX_DTYPE_Q6_K, 2, 64, 256, 0))));
    }
    rlx_graph_mark_output(t->g, y, "y");
}

static void test_matmul(void) {
    static const uint32_t types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_0,
                                     RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1, RLX_DTYPE_Q2_K, RLX_DTYPE_Q3_K,
                                     RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q8_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int64_t b = rlx_dtype_get(types[i])->block_size;
        /* tails in x rows, weight rows, and k (96 is not a multiple of the 64-wide k steps) */
        bool emu = types[i] == RLX_DTYPE_F32 || types[i] == RLX_DTYPE_F16 || types[i] == RLX_DTYPE_Q8_0;
        matmul_case((mm_case){types[i], b > 1 ? 2 * b : 96, 70, 67, 0, emu, false}, 61);
    }
    matmul_case((mm_case){RLX_DTYPE_F16, 320, 200, 130, 0, false, false}, 130);
    matmul_case((mm_case){RLX_DTYPE_Q4_K, 512, 130, 150, 0, true, false}, 129);
    /* a decode batch: the mixed modes decode Q4_K in the kernel (its 16-value units at 64-row
     * tiles and 64-wide k steps); twice, so that each mode meets both tile heights */
    for (int i = 0; i < 2; i++) matmul_case((mm_case){RLX_DTYPE_Q4_K, 768, 70, 40, 0, true, false}, 40);
    matmul_case((mm_case){RLX_DTYPE_F16, 128, 80, 40, 4e4f, true, false}, 40); /* f16 overflow: the f32 tile */
    matmul_case((mm_case){RLX_DTYPE_Q8_0, 128, 80, 40, 4e4f, false, false}, 40);
    static const char *const fused[] = {"x + matmul(h, Q4_K)", "silu(h Wg Q8_0) * (h Wu F16)",
                                        "(h Wu BF16) * gelu(h Wg Q6_K)"};
    for (int v = 0; v < 3; v++) {
        char label[96];
        snprintf(label, sizeof label, "MATMUL 40 rows, %s", fused[v]);
        matmul_modes(label, build_fused, &v, 37, false, v == 1, true); /* 40 rows: decoded in the kernel */
    }
}

/* Decode batches of F16, Q4_K and Q6_K weights (shaders/matmul_batch.comp, runtime/vk_plan.c
 * vk_batch_takes), with its emulation on any device: a k step cut short (F16 k 96), subgroups past
 * the weight rows (48 and 144 rows at 64 or 128 a workgroup), padding rows (37 tokens of 40 rows),
 * all 64 rows, and 16 k steps (k 1024) for the weight ring to wrap, the K-quants' over 4 blocks a
 * row (Q6_K's 210-byte blocks at both word parities: odd blocks start 2 bytes into a word); 32
 * rows or more, which a GPU's plans (RLX_VK_PLANS=gpu) also send to the tiled kernels at these k;
 * the emulated runs cycle through its widths, depths and splits (matmul_modes), with
 * RLX_VK_MATMUL_BATCH=1. Then =0 keeps matmul_coop, whose mixed runs decode the Q6_K blocks in the
 * kernel at these rows (both word parities) and are checked for f16 rounding (check_rounded: a
 * wrong decode past 16384 would reach the f32 tile). */
static void test_batch(void) {
    int32_t saved = g_opts.matmul_batch;
    g_opts.matmul_batch = 1;
    matmul_case((mm_case){RLX_DTYPE_F16, 96, 48, 40, 0, true, false}, 37);
    matmul_case((mm_case){RLX_DTYPE_F16, 320, 144, 64, 0, true, false}, 64);
    matmul_case((mm_case){RLX_DTYPE_F16, 1024, 32, 33, 0, true, false}, 33);
    matmul_case((mm_case){RLX_DTYPE_F16, 256, 64, 32, 0, true, false}, 32);
    matmul_case((mm_case){RLX_DTYPE_Q4_K, 256, 48, 40, 0, true, false}, 37);
    matmul_case((mm_case){RLX_DTYPE_Q4_K, 1024, 144, 64, 0, true, false}, 64);
    matmul_case((mm_case){RLX_DTYPE_Q4_K, 768, 32, 33, 0, true, false}, 33);
    matmul_case((mm_case){RLX_DTYPE_Q6_K, 256, 48, 40, 0, true, false}, 37);
    matmul_case((mm_case){RLX_DTYPE_Q6_K, 1024, 144, 64, 0, true, false}, 64);
    matmul_case((mm_case){RLX_DTYPE_Q6_K, 768, 32, 33, 0, true, false}, 33);
    g_opts.matmul_batch = 0;
    matmul_case((mm_case){RLX_DTYPE_F16, 96, 48, 40, 0, true, false}, 37);
    for (int i = 0; i < 2; i++) matmul_case((mm_case){RLX_DTYPE_Q6_K, 768, 48, 40, 0, true, false}, 37);
    g_opts.matmul_batch = saved;
}

/* Weights larger than one binding are split into row parts (forced with a small limit). In the
 * mixed modes an F32 one is decoded part by part into the same f16 rows; a Q8_0 one, whose f16
 * rows of a part would exceed the limit, is decoded in the kernel. */
static void test_split_weights(void) {
    rlx_vk_options o = g_opts;
    o.max_binding_bytes = 400000; /* x (320 KiB) fits, the weights (800 KiB) do not */
    rlx_backend *small = vkt_backend_with(&o);
    rlx_backend *saved = g_vk;
    g_vk = small;
    matmul_case((mm_case){RLX_DTYPE_F16, 4096, 100, 20, 0, true, false}, 20);
    matmul_case((mm_case){RLX_DTYPE_F32, 4096, 100, 20, 0, true, false}, 20);
    matmul_case((mm_case){RLX_DTYPE_Q8_0, 4096, 100, 20, 0, true, true}, 20);
    g_vk = saved;
    rlx_backend_destroy(small);
}

/* ---- ATTENTION ---- */

/* shaders/attention_prefill.comp's shared memory for head sizes dh, dv (runtime/vk_lower.c). */
static uint32_t prefill_shared(int64_t dh, int64_t dv) {
    int64_t d = 64;
    while (d < dh || d < dv) d *= 2;
    int64_t bq = 4096 / d, bkv = 16; /* its smaller plan */
    return (uint32_t)(((bq + bkv) * (d + 4) + bkv * (bq + 4) + 4 * bq) * 4); /* + rows' positions, sequences, flags */
}

static rlx_vk_kernel attention_kernel(int64_t rows, int64_t dh, int64_t dv) {
    bool fits = (dh > dv ? dh : dv) <= 256 && prefill_shared(dh, dv) <= rlx_vk_backend_caps(g_vk)->max_shared;
    return rows >= 16 && fits ? RLX_VK_KERNEL_attention_prefill : RLX_VK_KERNEL_attention;
}

/* Straight on activations: keys are this run's rows. */
static void attention_direct(int64_t n, int64_t h, int64_t hkv, int64_t dh, int64_t dv, int32_t window,
                             int32_t n_tokens) {
    vkt_graph t;
    vkt_graph_init(&t);
    vkt_attention_direct(&t, &g_rng, n, h, hkv, dh, dv, window);
    char label[96];
    snprintf(label, sizeof label, "ATTENTION n=%lld H %lld/%lld Dh %lld Dv %lld win %d n_tok %d", (long long)n,
             (long long)h, (long long)hkv, (long long)dh, (long long)dv, window, n_tokens);
    step st = {0, n_tokens};
    compare(label, &t, &st, 1, attention_kernel(n, dh, dv), -1, TOL_F32, NULL);
    vkt_graph_free(&t);
}

/* Over the session's cache, as chunked prefill does: the steps place `rows` new rows after n_past. */
static void attention_cached(int64_t rows, int64_t cap, int64_t h, int64_t hkv, int64_t dh, int32_t window,
                             const step *steps, int n_steps) {
    vkt_graph t;
    vkt_graph_init(&t);
    vkt_attention_cached(&t, &g_rng, rows, cap, h, hkv, dh, window);
    char label[96];
    snprintf(label, sizeof label, "ATTENTION cached rows %lld cap %lld H %lld/%lld Dh %lld win %d, %d steps",
             (long long)rows, (long long)cap, (long long)h, (long long)hkv, (long long)dh, window, n_steps);
    compare(label, &t, steps, n_steps, attention_kernel(rows, dh, dh), -1, TOL_F32, NULL);
    vkt_graph_free(&t);
}

/* A mode name the backend does not know (here "fast", a name an earlier version took) is refused
 * when the backend is created, with the variable and the accepted names, not silently replaced by
 * the default. */
static void test_bad_mode(void) {
    rlx_backend *b = NULL;
    setenv("RLX_VK_COOPMAT", "fast", 1);
    T_ERR(rlx_backend_vulkan_create(NULL, &b), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_COOPMAT='fast': expected mixed, exact");
    unsetenv("RLX_VK_COOPMAT");
    printf("  RLX_VK_COOPMAT=fast: refused when the backend is created%s\n", b ? " (NOT: a backend was made)" : "");
    T_CHECK(b == NULL, "a refused creation still returned a backend");
    rlx_backend_destroy(b);
}

static void test_attention(void) {
    attention_direct(64, 4, 1, 128, 128, 0, 64);
    attention_direct(65, 4, 2, 64, 64, 20, 60);
    attention_direct(127, 2, 2, 96, 64, 0, 127);
    attention_direct(16, 2, 1, 5, 7, 0, 16);
    attention_direct(40, 2, 2, 256, 256, 0, 40); /* D 256: 45 KiB of shared memory, where the device has it */
    attention_direct(300, 4, 2, 128, 128, 0, 300); /* 10 key blocks: the last ones of the first half alone */
    attention_direct(200, 2, 1, 64, 64, 70, 190);  /* a window over several blocks */
    step chunked[] = {{0, 40}, {40, 25}, {200, 40}, {280, 40}};
    attention_cached(40, 320, 4, 2, 64, 0, chunked, 4);
    attention_cached(40, 320, 4, 2, 64, 50, chunked, 4);
    step long_cache[] = {{0, 24}, {1076, 24}};
    attention_cached(24, 1100, 2, 1, 64, 0, long_cache, 2);
}

int main(void) {
    g_opts = vkt_options();
    g_vk = vkt_backend_with(&g_opts);
    if (!T_OK(rlx_backend_cpu_create(2, &g_cpu))) return 1;
    const rlx_vk_caps *c = rlx_vk_backend_caps(g_vk);
    g_coop = c->coopmat_f16;
    printf("cooperative-matrix matmul (shaders/matmul_coop.comp): %s; a subset of the MATMUL cases also runs "
           "its emulation\n",
           g_coop ? "available, every MATMUL case also runs on it" : "not on this device");
    test_matmul();
    test_batch();
    test_split_weights();
    test_f16_range();
    test_bad_mode();
    test_attention();
    if (g_coop)
        printf("cooperative-matrix kernel RAN in %d cases\n", g_coop_cases);
    else
        printf("SKIPPED in part: %s has no VK_NV_cooperative_matrix 16x16x16 f16 -> f32 on subgroups of 32 "
               "(coopmat %s); the tiled kernel ran every MATMUL case\n",
               c->name, c->coopmat_khr ? "KHR only" : c->coopmat_nv ? "NV, other shapes" : "none");
    printf("its emulation (shaders/matmul_coop_emu.comp: staging, splits, edges, epilogues) RAN in %d cases\n",
           g_emu_cases);
    printf("the decode-batch kernel (shaders/matmul_batch.comp, or its emulation) RAN in %d cases\n", g_batch_cases);
    T_CHECK(g_batch_cases >= 10, "matmul_batch ran in %d cases, expected 10 or more", g_batch_cases);
    printf("worst NMSE: %.2e (f32-accurate paths, bound %.0e), %.2e (mixed: f16 operands, bound %.0e)\n", g_worst[0],
           TOL_F32, g_worst[1], TOL_FAST);
    rlx_backend_destroy(g_vk);
    rlx_backend_destroy(g_cpu);
    vkt_check_validation();
    return t_summary("test_vk_prefill");
}
