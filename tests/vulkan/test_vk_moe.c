/* MOE_FFN on the Vulkan backend's grouped path for many rows (runtime/vk_lower_moe.c:
 * shaders/moe_group.comp lists each expert's (row, slot) pairs, moe_mm.comp runs the experts'
 * matmuls in tiles over them, moe_sum.comp adds each row's slots), and the planner's choice between
 * it and the per-row shaders/moe_mv.comp (runtime/vk_plan.c vk_moe_grouped_plan).
 *
 * Where each expectation comes from:
 *  - the CPU reference backend (cpu_fallback/cpu_kernels_moe.c, itself held to double precision by
 *    test_cpu_ops) on the same weights and inputs: NMSE within test-backend-ops' f32 bound, 1e-7,
 *    as test_vk_ops holds every op (both backends decode the same bytes exactly);
 *  - a property, grouped == per row: the same graph compiled with RLX_VK_MOE_GROUPED=0
 *    (moe_mv.comp) within the same bound;
 *  - a property, run to run: the grouped program run twice on the same input, with a run of fewer
 *    rows between, gives the same bits (its lists come from a scan, not from atomics, and are
 *    made afresh each run);
 *  - a property, batched == alone: on one pipeline (tiles forced to 16 pairs), each row of a batch
 *    has the bits of the same row run alone;
 *  - the planner's rule as vk_plan.c states it: the grouped path from 16 rows where the experts
 *    take 4+ pairs each on average, never in deterministic mode (there moe_mv.comp keeps a row's
 *    bits independent of its batch: test_vk_deterministic checks those bits at 1 to 130 rows and
 *    that no grouped kernel runs), never for rows of k % 32 != 0.
 * Cases: top-k routes (experts with no rows, one expert taking every row, rows whose second expert's
 * weight underflows to 0 so they route to fewer than top_k), dense routes with zeros (a row of no
 * expert at all, slots = E), several tiles of pairs per expert, output tiles cut short, padding
 * rows, weights of Q4_K, Q6_K (a Q4_K_M file's expert types), Q8_0, F16 and F32, every tile size,
 * and the sums after the FFN that fusion gives its last pass (a residual, Qwen3.5-MoE's shared
 * expert gated by a sigmoid; runtime/vk_fuse.c fuse_moe): moe_sum.comp on the grouped path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_internal.h" /* white box: the kernels a program dispatches */
#include "test_util.h"
#include "test_vk_util.h"

#define TOL_F32 RLX_VALIDATE_BOUND_F32

static rlx_backend *g_cpu, *g_vk;
static rlx_vk_options g_opts; /* the environment's (vkt_options) */

typedef enum { ROUTE_TOPK, ROUTE_DENSE } route_kind;

/* How a case's logits (ROUTE_TOPK) or route weights (ROUTE_DENSE) are shaped. */
typedef enum {
    SHAPE_RANDOM,    /* uniform in [-2, 2] (dense: [-1, 1]) */
    SHAPE_FAVOURITE, /* top-k: experts 0 .. top_k - 1 lead every row by far: the rest take no rows */
    SHAPE_UNDERFLOW, /* top-2: odd rows' second expert trails by 200, its weight 0 in f32: one slot */
    SHAPE_HOLES,     /* dense: about a third of the weights 0, and row 5 all 0 */
} route_shape;

/* The sums after the FFN, which fusion gives its last pass (runtime/vk_fuse.c fuse_moe). */
typedef enum {
    SUMS_NONE,
    SUMS_PLUS,   /* moe + y */
    SUMS_SHARED, /* resid + (moe + shared * sigmoid(g)): Qwen3.5-MoE's gated shared expert */
} moe_sums;

typedef struct moe_case {
    const char *label;
    uint32_t type, down_type;
    int64_t rows, e, f, d;
    int32_t n_tokens, top_k;
    route_kind route;
    route_shape shape;
    moe_sums sums;
} moe_case;

/* The case's graph: x [rows, d] in [-1, 1]; the route; random experts. Weights from the case's own
 * seed, so that every backend and every option set sees the same bytes. */
static void build(vkt_graph *t, const moe_case *c, uint64_t seed) {
    vkt_rng r = {seed}, wr = {seed ^ 0x9E3779B97F4A7C15ull}; /* inputs, weights */
    vkt_graph_init(t);
    rlx_node x = vkt_input_f32(t, &r, vkt_shape(2, c->rows, c->d, 0), 1.0f), route;
    rlx_node in = vkt_input_f32(t, &r, vkt_shape(2, c->rows, c->e, 0), c->route == ROUTE_TOPK ? 2.0f : 1.0f);
    float *v = t->in[1];
    for (int64_t i = 0; i < c->rows; i++)
        for (int64_t e = 0; e < c->e; e++) {
            float *w = &v[i * c->e + e];
            if (c->shape == SHAPE_FAVOURITE && e < c->top_k) *w += 30.0f;
            if (c->shape == SHAPE_UNDERFLOW && (i % 2 == 1)) *w = e == i % c->e ? 0.0f : -200.0f - (float)e;
            if (c->shape == SHAPE_HOLES && ((i + 2 * e) % 3 == 0 || i == 5)) *w = 0.0f;
        }
    route = c->route == ROUTE_TOPK ? rlx_moe_route(t->g, in, c->top_k, true) : in;
    rlx_node gate = vkt_graph_weight(t, &wr, c->type, 3, c->e, c->f, c->d);
    rlx_node up = vkt_graph_weight(t, &wr, c->type, 3, c->e, c->f, c->d);
    rlx_node down = vkt_graph_weight(t, &wr, c->down_type, 3, c->e, c->d, c->f);
    rlx_node y = rlx_moe_ffn(t->g, x, route, gate, up, down);
    if (c->sums == SUMS_PLUS) y = rlx_add(t->g, y, vkt_input_f32(t, &r, vkt_shape(2, c->rows, c->d, 0), 1.0f));
    if (c->sums == SUMS_SHARED) {
        rlx_node shared = vkt_input_f32(t, &r, vkt_shape(2, c->rows, c->d, 0), 1.0f);
        rlx_node g = vkt_input_f32(t, &r, vkt_shape(2, c->rows, 1, 0), 3.0f);
        rlx_node resid = vkt_input_f32(t, &r, vkt_shape(2, c->rows, c->d, 0), 1.0f);
        y = rlx_add(t->g, resid, rlx_add(t->g, y, rlx_scale_rows(t->g, shared, rlx_sigmoid(t->g, g))));
    }
    rlx_graph_mark_output(t->g, y, "y");
}

/* What a Vulkan program dispatches for MOE_FFN. */
typedef struct moe_kernels {
    size_t mm, mv, group, sum;
    size_t experts; /* matvec.comp EXPERTS: a few rows' gate and up, on the per-row path */
    size_t other;   /* any other kernel (the sums after the FFN, unfused) */
    uint32_t rm;    /* moe_mm.comp's RM (pairs per tile / 16), 0 without it */
} moe_kernels;

/* The per-row path: moe_mv.comp's three passes, or for decode rows matvec.comp EXPERTS for gate
 * and up, then moe_mv.comp's down pass or a second matvec.comp EXPERTS (vk_lower_moe.c moe_matvec). */
static bool per_row(const moe_kernels *k) {
    bool passes = (k->mv == 3 && k->experts == 0) || (k->mv == 1 && k->experts == 1) || (k->mv == 0 && k->experts == 2);
    return k->mm == 0 && k->group == 0 && k->sum == 0 && passes;
}

/* The grouped path with tiles of 16 rm pairs. */
static bool grouped_with(const moe_kernels *k, uint32_t rm) {
    return k->mm == 3 && k->group == 3 && k->sum == 1 && k->mv == 0 && k->experts == 0 && k->rm == rm;
}

static moe_kernels kernels_of(const rlx_program *p) {
    moe_kernels k = {0};
    for (size_t i = 0; i < p->run.n; i++) {
        const vk_dispatch *d = &p->run.items[i];
        switch (d->pipe->kernel) {
        case RLX_VK_KERNEL_moe_mm:
            k.mm++;
            k.rm = d->pipe->spec[RLX_VK_SPEC(moe_mm, RM)];
            break;
        case RLX_VK_KERNEL_moe_mv: k.mv++; break;
        case RLX_VK_KERNEL_moe_group: k.group++; break;
        case RLX_VK_KERNEL_moe_sum: k.sum++; break;
        case RLX_VK_KERNEL_moe_route: break;
        case RLX_VK_KERNEL_matvec:
        case RLX_VK_KERNEL_matvec_stream:
            if (d->pipe->spec[RLX_VK_SPEC(matvec, EXPERTS)]) {
                k.experts++;
                break;
            }
            k.other++;
            break;
        default: k.other++; break;
        }
    }
    return k;
}

/* Compiles t on b, runs it `runs` times, run r over n_tokens[r] rows into out[r] (rows x d floats
 * each); *k gets what a Vulkan program dispatches (b == g_vk). */
static bool run_on(rlx_backend *b, vkt_graph *t, const int32_t *n_tokens, int runs, float **out, moe_kernels *k) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    bool ok = T_OK(b->ops->session_create(b, t->w, t->nw, &t->kv, &s)) && T_OK(b->ops->compile(s, t->g, &p));
    if (ok && k) *k = kernels_of(p);
    for (int r = 0; ok && r < runs; r++) {
        void *outs[1] = {out[r]};
        rlx_run_args a = {0, n_tokens[r], (const void *const *)t->in, (void *const *)outs, NULL};
        ok = T_OK(b->ops->run(p, &a));
    }
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
    return ok;
}

static void expect_within(const char *label, const char *what, const float *got, const float *want, int64_t n) {
    rlx_validate_diff d = rlx_validate_diff_f32(got, want, n);
    printf("  %-58s %-24s nmse %.2e max|d| %.2e (tol %.0e)\n", label, what, d.nmse, d.max_abs, TOL_F32);
    T_CHECK(rlx_validate_diff_within(&d, TOL_F32), "%s: %s: nmse %.3e > %.0e (max |d| %.3e)", label, what, d.nmse,
            TOL_F32, d.max_abs);
}

/* The case under options o (moe_grouped, moe_tm set by the caller): the kernels it ran (want_rm:
 * moe_mm.comp's RM expected, 0 for the per-row path), its output against the CPU's and against
 * moe_mv.comp's; then one program runs a third of the rows (against the CPU's) and the case's rows
 * again, which must give the first run's bits: nothing of a run's lists outlives it. */
static void check_case(const moe_case *c, rlx_vk_options o, uint32_t want_rm) {
    vkt_graph t;
    build(&t, c, 0x5EED0000u + (uint64_t)c->rows * 131u + (uint64_t)c->e);
    int64_t n = (int64_t)c->n_tokens * c->d, size = c->rows * c->d;
    int32_t few = c->n_tokens / 3 + 1, steps[3] = {c->n_tokens, few, c->n_tokens};
    float *buf = calloc((size_t)(6 * size), sizeof *buf);
    if (!buf) exit(1);
    float *cpu[2] = {buf, buf + size}, *runs[3] = {buf + 2 * size, buf + 3 * size, buf + 4 * size};
    float *mv = buf + 5 * size;
    moe_kernels k = {0}, kmv = {0};
    vkt_set_options(g_vk, &o);
    bool ok = run_on(g_cpu, &t, steps, 2, cpu, NULL) && run_on(g_vk, &t, steps, 3, runs, &k);
    rlx_vk_options mv_opts = o;
    mv_opts.moe_grouped = 0;
    vkt_set_options(g_vk, &mv_opts);
    ok = ok && run_on(g_vk, &t, steps, 1, &mv, &kmv);
    if (ok) {
        bool grouped = want_rm != 0;
        T_CHECK(grouped ? grouped_with(&k, want_rm) : per_row(&k),
                "%s: dispatches moe_mm %zu (RM %u), moe_group %zu, moe_sum %zu, moe_mv %zu, matvec EXPERTS %zu; "
                "expected the %s path", c->label, k.mm, k.rm, k.group, k.sum, k.mv, k.experts,
                grouped ? "grouped" : "per-row");
        T_CHECK(per_row(&kmv), "%s: RLX_VK_MOE_GROUPED=0: dispatches moe_mm %zu, moe_mv %zu, matvec EXPERTS %zu",
                c->label, kmv.mm, kmv.mv, kmv.experts);
        T_CHECK(k.other == 0 && kmv.other == 0, "%s: %zu and %zu dispatches besides the MoE's: the sums after it "
                "were not fused", c->label, k.other, kmv.other);
        printf("  %-58s %s path, RM %u\n", c->label, grouped ? "grouped" : "per-row", k.rm);
        expect_within(c->label, "vs CPU", runs[0], cpu[0], n);
        expect_within(c->label, "vs moe_mv.comp", runs[0], mv, n);
        char what[32];
        snprintf(what, sizeof what, "%d rows vs CPU", few);
        expect_within(c->label, what, runs[1], cpu[1], (int64_t)few * c->d);
        T_CHECK(memcmp(runs[0], runs[2], (size_t)n * sizeof(float)) == 0,
                "%s: the program's runs of the same rows before and after a run of %d differ", c->label, few);
    }
    vkt_set_options(g_vk, &g_opts);
    free(buf);
    vkt_graph_free(&t);
}

/* The cases the default plan sends down the grouped path, with the tile size it picks: the smallest
 * of 16, 32, 64 pairs that holds ceil(rows x slots / E). */
static void test_default_plan(void) {
    static const moe_case cases[] = {
        {"Q4_K/Q6_K 40 rows (37 valid) E 8 top 2", RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, 40, 8, 256, 256, 37, 2,
         ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE},
        {"Q6_K 24 rows E 4 top 2: experts 0, 1 every row, 2, 3 none", RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, 24, 4, 256,
         256, 24, 2, ROUTE_TOPK, SHAPE_FAVOURITE, SUMS_NONE},
        {"Q8_0 32 rows dense E 6 with zeros, row 5 of none", RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, 32, 6, 64, 96, 30, 6,
         ROUTE_DENSE, SHAPE_HOLES, SUMS_NONE},
        {"F16 150 rows E 4 top 2, F 96 D 160: tiles of 64 pairs", RLX_DTYPE_F16, RLX_DTYPE_F16, 150, 4, 96, 160, 149,
         2, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE},
        {"F32 20 rows E 8 top 2, odd rows of one expert (underflow)", RLX_DTYPE_F32, RLX_DTYPE_F32, 20, 8, 32, 64, 20,
         2, ROUTE_TOPK, SHAPE_UNDERFLOW, SUMS_NONE},
        /* outputs of a few units, so that the sums' terms weigh in the NMSE (Q4_K's random scales make
           outputs of thousands) */
        {"Q8_0 40 rows E 8 top 2 + gated shared expert + resid", RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, 40, 8, 64, 128, 38,
         2, ROUTE_TOPK, SHAPE_RANDOM, SUMS_SHARED},
        {"F16 24 rows E 4 top 2 (favourites) + y", RLX_DTYPE_F16, RLX_DTYPE_F16, 24, 4, 64, 96, 21, 2, ROUTE_TOPK,
         SHAPE_FAVOURITE, SUMS_PLUS},
    };
    static const uint32_t want_rm[] = {1, 1, 2, 4, 1, 1, 1}; /* pairs per expert: 10, 12, 32, 75, 5, 10, 12 */
    printf("default plan\n");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i], g_opts, want_rm[i]);
}

/* Tile sizes forced (RLX_VK_MOE_TM): an expert's pairs over several tiles, and tiles mostly empty. */
static void test_tile_sizes(void) {
    static const moe_case many = {"Q4_K 150 rows E 4 top 2: tiles of 16 pairs", RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K,
                                  150, 4, 256, 256, 150, 2, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
    static const moe_case few = {"Q8_0 40 rows E 8 top 2: tiles of 64 pairs", RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, 40,
                                 8, 64, 64, 33, 2, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
    static const moe_case mid = {"F16 24 rows E 4 top 2 (favourites): tiles of 32", RLX_DTYPE_F16, RLX_DTYPE_F16,
                                 24, 4, 64, 128, 24, 2, ROUTE_TOPK, SHAPE_FAVOURITE, SUMS_NONE};
    printf("tile sizes forced\n");
    rlx_vk_options o = g_opts;
    o.moe_tm = 16;
    check_case(&many, o, 1);
    o.moe_tm = 64;
    check_case(&few, o, 4);
    o.moe_tm = 32;
    check_case(&mid, o, 2);
}

/* RLX_VK_MOE_GROUPED=1: the grouped path for shapes the default leaves per row (one row, a few rows
 * over many experts); rows of k % 32 != 0 stay per row even then. */
static void test_forced(void) {
    static const moe_case one = {"Q4_K/Q6_K 1 row E 8 top 2 (forced)", RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, 1, 8, 256,
                                 256, 1, 2, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
    static const moe_case sparse = {"Q8_0 6 rows E 32 top 4 (forced)", RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, 6, 32, 64, 64,
                                    5, 4, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
    static const moe_case odd = {"F16 24 rows E 4 top 2, F 48 (forced, stays per row)", RLX_DTYPE_F16,
                                 RLX_DTYPE_F16, 24, 4, 48, 64, 24, 2, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
    printf("RLX_VK_MOE_GROUPED=1\n");
    rlx_vk_options o = g_opts;
    o.moe_grouped = 1;
    check_case(&one, o, 1);
    check_case(&sparse, o, 1);
    check_case(&odd, o, 0);
}

/* The planner's rule at a Qwen3.5-35B-A3B-like route (256 experts, top 8), compiled only: per row
 * below 4 pairs per expert (16 rows: 0.5), grouped from there (128 rows: 4; 512 rows: 16, tiles of
 * 16); per row in deterministic mode even when forced. */
static void test_rule(void) {
    static const struct {
        int64_t rows;
        bool det, force;
        uint32_t want_rm;
    } rules[] = {{1, false, false, 0}, {16, false, false, 0}, {127, false, false, 0}, {128, false, false, 1},
                 {512, false, false, 1}, {128, true, true, 0}, {512, true, false, 0}};
    printf("the planner's rule, E 256 top 8\n");
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        moe_case c = {"", RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, rules[i].rows, 256, 32, 64, 1, 8, ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
        vkt_graph t;
        build(&t, &c, 0x5EED1000u + (uint64_t)i);
        rlx_vk_options o = g_opts;
        o.deterministic = rules[i].det;
        o.moe_grouped = rules[i].force ? 1 : -1;
        vkt_set_options(g_vk, &o);
        rlx_session *s = NULL;
        rlx_program *p = NULL;
        if (T_OK(g_vk->ops->session_create(g_vk, t.w, t.nw, &t.kv, &s)) && T_OK(g_vk->ops->compile(s, t.g, &p))) {
            moe_kernels k = kernels_of(p);
            bool grouped = rules[i].want_rm != 0;
            T_CHECK(grouped ? grouped_with(&k, rules[i].want_rm) : per_row(&k),
                    "%lld rows%s%s: moe_mm %zu (RM %u), moe_mv %zu; expected the %s path", (long long)rules[i].rows,
                    rules[i].det ? ", deterministic" : "", rules[i].force ? ", forced" : "", k.mm, k.rm, k.mv,
                    grouped ? "grouped" : "per-row");
            printf("  %4lld rows%-28s %s (RM %u)\n", (long long)rules[i].rows,
                   rules[i].det ? (rules[i].force ? ", deterministic, forced" : ", deterministic") : "",
                   k.mm ? "grouped" : "per row", k.rm);
        }
        if (p) g_vk->ops->program_destroy(p);
        if (s) g_vk->ops->session_destroy(s);
        vkt_graph_free(&t);
    }
    vkt_set_options(g_vk, &g_opts);
}

/* A property of the grouped path on one pipeline (tiles of 16 pairs, forced for both row counts):
 * row i of a batch has the same bits as the same row run alone, whatever the other rows route to. */
static void test_batched_alone(void) {
    moe_case c = {"Q4_K/Q6_K 40 rows E 8 top 2, tiles of 16", RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, 40, 8, 256, 256, 40, 2,
                  ROUTE_TOPK, SHAPE_RANDOM, SUMS_NONE};
    moe_case one = c;
    one.rows = one.n_tokens = 1;
    uint64_t seed = 0x5EED2000u;
    vkt_graph t, t1;
    build(&t, &c, seed);
    build(&t1, &one, seed); /* the same weights; its inputs are overwritten with each row's */
    rlx_vk_options o = g_opts;
    o.moe_grouped = 1;
    o.moe_tm = 16;
    vkt_set_options(g_vk, &o);
    float *batch = calloc((size_t)(c.rows * c.d), sizeof *batch), *alone = calloc((size_t)c.d, sizeof *alone);
    if (!batch || !alone) exit(1);
    moe_kernels k = {0}, k1 = {0};
    int64_t differ = 0;
    if (run_on(g_vk, &t, &c.n_tokens, 1, &batch, &k)) {
        T_CHECK(k.mm == 3 && k.rm == 1, "batch: not grouped with RM 1");
        for (int64_t i = 0; i < c.rows; i++) {
            memcpy(t1.in[0], (float *)t.in[0] + i * c.d, (size_t)c.d * sizeof(float));
            memcpy(t1.in[1], (float *)t.in[1] + i * c.e, (size_t)c.e * sizeof(float));
            if (!run_on(g_vk, &t1, &one.n_tokens, 1, &alone, &k1)) break;
            differ += memcmp(alone, batch + i * c.d, (size_t)c.d * sizeof(float)) != 0;
        }
        T_CHECK(k1.mm == 3 && k1.rm == 1, "one row: not grouped with RM 1");
        T_CHECK(differ == 0, "%s: %lld of %lld rows differ from the row run alone", c.label, (long long)differ,
                (long long)c.rows);
        printf("  %-58s %lld of %lld rows differ from the row alone\n", c.label, (long long)differ, (long long)c.rows);
    }
    vkt_set_options(g_vk, &g_opts);
    free(batch);
    free(alone);
    vkt_graph_free(&t);
    vkt_graph_free(&t1);
}

int main(void) {
    /* the default plan is under test: an RLX_VK_MOE_* of the environment would change it */
    g_opts = vkt_options();
    g_opts.moe_grouped = -1;
    g_opts.moe_tm = 0;
    g_opts.deterministic = false;
    g_vk = vkt_backend_with(&g_opts);
    if (!T_OK(rlx_backend_cpu_create(2, &g_cpu))) return 1;
    test_default_plan();
    test_tile_sizes();
    test_forced();
    printf("batched == alone on the grouped path\n");
    test_batched_alone();
    test_rule();
    rlx_backend_destroy(g_vk);
    rlx_backend_destroy(g_cpu);
    vkt_check_validation();
    return t_summary("test_vk_moe");
}
