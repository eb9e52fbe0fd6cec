/* Unit tests of the runners: the graphs each family builds, and the generator's program caches and
 * state rules.
 *
 *   test_runner_unit                 stories260K (in the repo, always runs): graph structure of every
 *                                    graph kind, generator caches, path agreement, state errors.
 *   test_runner_unit families        the fixture families: graph structure against hf/config.json.
 *
 * Expected structure comes from the model card (the HF modeling code the runners follow: which norms,
 * how many projections per layer) and from each model's own metadata as written by llama.cpp /
 * transformers (hf/config.json, the GGUF header as gguf-py dumps it), never from our own output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/format/model.h"
#include "runners/family.h"
#include "runners/generator.h"
#include "rlx/runner.h"
#include "test_util.h"

static int count_op(const rlx_graph *g, rlx_op op) {
    int n = 0;
    for (int32_t i = 0; i < rlx_graph_n_nodes(g); i++) n += rlx_graph_node(g, i)->op == op;
    return n;
}

/* The i-th node of `op` in schedule order, or NULL. */
static const rlx_node_info *nth_op(const rlx_graph *g, rlx_op op, int i) {
    for (int32_t k = 0; k < rlx_graph_n_nodes(g); k++) {
        const rlx_node_info *n = rlx_graph_node(g, k);
        if (n->op == op && i-- == 0) return n;
    }
    return NULL;
}

static const rlx_node_info *output_info(const rlx_graph *g) {
    return rlx_graph_node(g, rlx_graph_output_node(g, 0));
}

static bool shape_is(const rlx_shape *s, int64_t d0, int64_t d1) {
    return s->rank == 2 && s->dim[0] == d0 && s->dim[1] == d1;
}

/* What a family's graph must contain, per the model card. */
typedef struct expect {
    const char *name;
    int n_layer, n_head, n_head_kv, head_dim, n_vocab;
    int norms_per_layer;  /* RMS_NORM nodes per layer */
    int matmuls_per_layer;
    rlx_rope_layout layout;
    bool freq_factors;    /* ROPE gets rope_freqs.weight */
    bool embd_scaled;     /* a SCALE right after EMBED (gemma3) */
    int moe_layers;
    const char *head;     /* LM head weight */
} expect;

static void check_common(const char *what, const rlx_graph *g, const expect *e, int rows, bool cached, bool last) {
    T_CHECK(rlx_graph_n_inputs(g) == 1, "%s: %d inputs, expected 1 (ids)", what, rlx_graph_n_inputs(g));
    const rlx_node_info *in = rlx_graph_node(g, rlx_graph_input_node(g, 0));
    T_CHECK(in->dtype == RLX_DTYPE_I32 && in->shape.rank == 1 && in->shape.dim[0] == rows && !strcmp(in->name, "ids"),
            "%s: input '%s' rank %d dim0 %lld, expected ids I32 [%d]", what, in->name, in->shape.rank,
            (long long)in->shape.dim[0], rows);
    T_CHECK(rlx_graph_n_outputs(g) == 1 && !strcmp(rlx_graph_output_name(g, 0), "logits"), "%s: outputs", what);
    const rlx_node_info *out = output_info(g);
    int out_rows = last ? 1 : rows;
    T_CHECK(shape_is(&out->shape, out_rows, e->n_vocab), "%s: logits rank %d [%lld, %lld], expected [%d, %d]", what,
            out->shape.rank, (long long)out->shape.dim[0], (long long)out->shape.dim[1], out_rows, e->n_vocab);
    T_CHECK(out->op == RLX_OP_MATMUL && !strcmp(rlx_graph_node(g, out->in[1])->name, e->head),
            "%s: logits from %s of '%s', expected MATMUL with '%s'", what, rlx_op_name(out->op),
            rlx_graph_node(g, out->in[1])->name ? rlx_graph_node(g, out->in[1])->name : "?", e->head);
    int L = e->n_layer;
    struct {
        rlx_op op;
        int want;
    } counts[] = {
        {RLX_OP_EMBED, 1},
        {RLX_OP_ATTENTION, L},
        {RLX_OP_ROPE, 2 * L},
        {RLX_OP_KV_CACHE, cached ? 2 * L : 0},
        {RLX_OP_KV_WRITE, cached ? 2 * L : 0},
        {RLX_OP_LAST_ROW, last ? 1 : 0},
        {RLX_OP_RMS_NORM, e->norms_per_layer * L + 1},
        {RLX_OP_MATMUL, e->matmuls_per_layer * L + 1},
        {RLX_OP_MOE_ROUTE, e->moe_layers},
        {RLX_OP_MOE_FFN, e->moe_layers},
        {RLX_OP_SCALE, e->embd_scaled ? 1 : 0},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        int got = count_op(g, counts[i].op);
        T_CHECK(got == counts[i].want, "%s: %d %s nodes, expected %d", what, got, rlx_op_name(counts[i].op),
                counts[i].want);
    }
    for (int i = 0; i < 2 * L; i++) {
        const rlx_node_info *r = nth_op(g, RLX_OP_ROPE, i);
        if (!r) break;
        bool has_ff = r->in[1] != RLX_NO_NODE;
        T_CHECK(r->attrs.rope.layout == e->layout && has_ff == e->freq_factors,
                "%s: ROPE %d layout %d freq_factors %d, expected layout %d freq_factors %d", what, i,
                r->attrs.rope.layout, has_ff, e->layout, e->freq_factors);
        if (has_ff)
            T_CHECK(!strcmp(rlx_graph_node(g, r->in[1])->name, "rope_freqs.weight"), "%s: ROPE %d factors from '%s'",
                    what, i, rlx_graph_node(g, r->in[1])->name);
    }
    for (int i = 0; i < L && cached; i++) {
        const rlx_node_info *k = nth_op(g, RLX_OP_KV_CACHE, 2 * i), *v = nth_op(g, RLX_OP_KV_CACHE, 2 * i + 1);
        T_CHECK(k && v && k->attrs.layer == i && !k->attrs.kv_is_v && v->attrs.layer == i && v->attrs.kv_is_v &&
                    k->shape.dim[1] == e->n_head_kv && k->shape.dim[2] == e->head_dim,
                "%s: KV_CACHE pair %d is not (K, V) of layer %d with [cap, %d, %d]", what, i, i, e->n_head_kv,
                e->head_dim);
    }
    if (e->embd_scaled) {
        const rlx_node_info *s = nth_op(g, RLX_OP_SCALE, 0);
        T_CHECK(s && rlx_graph_node(g, s->in[0])->op == RLX_OP_EMBED, "%s: SCALE does not follow EMBED", what);
    }
}

/* Every graph kind of one family, plus decode, plus the batch refusal. */
static void check_family_graphs(const rlx_family_ops *ops, const rlx_model *m, const expect *e) {
    const int S = 16, P = 32;
    char what[96];
    for (int k = 0; k < RLX_PREFILL_KIND_COUNT; k++) {
        rlx_graph *g = NULL;
        snprintf(what, sizeof what, "%s prefill-%s S=%d", e->name, rlx_prefill_kind_name(k), S);
        if (!T_OK(rlx_family_build_prefill(ops, m, 1, S, k, &g))) continue;
        bool cached = k == RLX_PREFILL_LAST || k == RLX_PREFILL_ALL;
        bool last = k == RLX_PREFILL_LAST || k == RLX_PREFILL_NAIVE_LAST;
        check_common(what, g, e, S, cached, last);
        if (cached) {
            const rlx_node_info *kc = nth_op(g, RLX_OP_KV_CACHE, 0);
            T_CHECK(kc && kc->shape.dim[0] == S, "%s: KV view capacity %lld, expected %d", what,
                    kc ? (long long)kc->shape.dim[0] : -1LL, S);
        }
        printf("%s: %d nodes, structure checked\n", what, rlx_graph_n_nodes(g));
        rlx_graph_destroy(g);
    }
    rlx_graph *g = NULL;
    snprintf(what, sizeof what, "%s decode P=%d", e->name, P);
    if (T_OK(rlx_family_build_decode(ops, m, 1, P, RLX_DECODE_LOGITS, &g))) {
        check_common(what, g, e, 1, true, false);
        const rlx_node_info *kc = nth_op(g, RLX_OP_KV_CACHE, 0);
        T_CHECK(kc && kc->shape.dim[0] == P, "%s: KV view capacity, expected %d", what, P);
        printf("%s: %d nodes, structure checked\n", what, rlx_graph_n_nodes(g));
        rlx_graph_destroy(g);
    }
    T_ERR(rlx_family_build_prefill(ops, m, 2, S, RLX_PREFILL_LAST, &g), RLX_ERR_UNSUPPORTED, "batch 2");
    T_ERR(rlx_family_build_decode(ops, m, 4, P, RLX_DECODE_LOGITS, &g), RLX_ERR_UNSUPPORTED, "batch 4");
}

/* ---------------------------------------------------------------- stories260K (always) */

/* stories260K.gguf header, as gguf-py dumps it: llama, 5 blocks, embedding 64, 8 heads, 4 KV
 * heads, rope dimension 8, 512 tokens, untied output.weight, no rope_freqs. */
static const expect stories_expect = {
    .name = "stories260K", .n_layer = 5, .n_head = 8, .n_head_kv = 4, .head_dim = 8, .n_vocab = 512,
    .norms_per_layer = 2, .matmuls_per_layer = 7, .layout = RLX_ROPE_LAYOUT_NORMAL, .head = "output.weight",
};

static void check_rope_and_attention_attrs(const rlx_model *m) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_family_build_decode(&rlx_family_llama_ops, m, 1, 8, RLX_DECODE_LOGITS, &g))) return;
    const rlx_node_info *r = nth_op(g, RLX_OP_ROPE, 0), *a = nth_op(g, RLX_OP_ATTENTION, 0);
    /* no llama.rope.freq_base key: llama.cpp's default base 10000; n_rot = rope.dimension_count 8 */
    T_CHECK(r->attrs.rope.n_rot == 8 && r->attrs.rope.freq_base == 10000.0f, "stories ROPE n_rot %d base %g",
            r->attrs.rope.n_rot, (double)r->attrs.rope.freq_base);
    T_CHECK(fabsf(a->attrs.scale - 1.0f / sqrtf(8.0f)) < 1e-7f && a->attrs.window == 0,
            "stories ATTENTION scale %g window %d, expected 1/sqrt(8) and 0", (double)a->attrs.scale, a->attrs.window);
    rlx_graph_destroy(g);
}

static float max_abs_diff(const float *a, const float *b, int n) {
    float w = 0;
    for (int i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= w)) w = d; /* NaN sticks */
    }
    return w;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

typedef struct gen_env {
    rlx_backend *b;
    const rlx_model *m;
} gen_env;

static rlx_generator *make_gen(const gen_env *env, int32_t n_ctx, bool no_kv, bool no_buckets, bool no_prefill_cache) {
    rlx_generator_opts o = {.n_ctx = n_ctx, .no_kv_cache = no_kv, .no_buckets = no_buckets,
                            .no_prefill_cache = no_prefill_cache};
    rlx_generator *g = NULL;
    if (!T_OK(rlx_generator_create(env->m, &rlx_family_llama_ops, env->b, &o, &g))) return NULL;
    return g;
}

/* Greedy steps on the three paths; the naive path is the reference (DESIGN.md). The KV-cached and
 * bucketed paths compute the same sums over the same keys, so they agree to rounding. */
static void check_paths_agree(const gen_env *env) {
    enum { N_STEPS = 40, V = 512 };
    rlx_generator *gens[3] = {make_gen(env, 256, true, true, true), make_gen(env, 256, false, false, false),
                              make_gen(env, 256, false, true, false)};
    const char *names[3] = {"naive", "bucketed", "exact"};
    if (!gens[0] || !gens[1] || !gens[2]) goto out;
    const int32_t prompt[5] = {1, 403, 407, 261, 378}; /* "Once upon a time" with BOS, ref-hf.json */
    float logits[3][V];
    float worst = 0;
    for (int p = 0; p < 3; p++) T_OK(rlx_generator_prefill(gens[p], prompt, 5, logits[p]));
    for (int step = 0; step < N_STEPS; step++) {
        for (int p = 1; p < 3; p++) {
            float d = max_abs_diff(logits[0], logits[p], V);
            if (d > worst) worst = d;
            T_CHECK(d <= 1e-5f, "step %d: %s vs naive max|dlogit| %g > 1e-5", step, names[p], (double)d);
        }
        int32_t tok = argmax(logits[0], V);
        for (int p = 0; p < 3; p++) T_OK(rlx_generator_decode(gens[p], tok, logits[p]));
    }
    for (int p = 0; p < 3; p++)
        T_CHECK(rlx_generator_n_past(gens[p]) == 5 + N_STEPS, "%s: n_past %d, expected %d", names[p],
                rlx_generator_n_past(gens[p]), 5 + N_STEPS);
    printf("paths: bucketed and exact vs naive over %d greedy steps: worst max|dlogit| %.3g\n", N_STEPS, (double)worst);
    /* program counts: prompt 5 -> prefill bucket 8; decode at n_past 5..44 -> past buckets 8, 16, 32, 64 */
    rlx_generator_stats s = rlx_generator_get_stats(gens[1]);
    T_CHECK(s.n_decode_programs == 4 && s.n_prefill_programs == 1 && s.n_compiles == 5,
            "bucketed: %d decode / %d prefill programs held, %lld compiles; expected 4 / 1 / 5", s.n_decode_programs,
            s.n_prefill_programs, (long long)s.n_compiles);
    s = rlx_generator_get_stats(gens[2]);
    T_CHECK(s.n_decode_programs == 0 && s.n_compiles == 1 + N_STEPS,
            "exact: %d decode programs held, %lld compiles; expected 0 and one per step + prefill (%d)",
            s.n_decode_programs, (long long)s.n_compiles, 1 + N_STEPS);
out:
    for (int p = 0; p < 3; p++) rlx_generator_destroy(gens[p]);
}

/* A backend that forwards to another but refuses every run_chain (RLX_ERR_UNSUPPORTED), as a
 * device backend does for a decode program that is not one token in and one id out. */
typedef struct refusing_backend {
    rlx_backend base;
    rlx_backend_ops ops;
    rlx_backend *inner;
    int chain_calls;
} refusing_backend;

static refusing_backend *g_refusing; /* run_chain is given a program, not its backend */

static rlx_status refusing_session_create(rlx_backend *b, const rlx_weight *w, size_t n, const rlx_state_spec *kv,
                                          rlx_session **out) {
    rlx_backend *inner = ((refusing_backend *)(void *)b)->inner;
    return inner->ops->session_create(inner, w, n, kv, out);
}

static rlx_status refusing_run_chain(rlx_program *p, const rlx_run_args *first, int32_t k, int32_t *outs) {
    (void)p, (void)first, (void)outs;
    g_refusing->chain_calls++;
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "run_chain: refused (test backend, %d runs)", (int)k);
}

/* The generator's answer to a refused chain (runners/generator.c rlx_generator_decode_argmax_ahead):
 * the same ids as greedy steps one at a time (the reference: decode with the logits read back and
 * the argmax taken here), the state as long, and no second chain asked for. */
static void check_chain_refused(const gen_env *env) {
    enum { N_AHEAD = 12, V = 512 };
    refusing_backend rb = {.base = {&rb.ops, "refusing"}, .ops = *env->b->ops, .inner = env->b};
    rb.ops.session_create = refusing_session_create;
    rb.ops.run_chain = refusing_run_chain;
    g_refusing = &rb;
    gen_env refusing = {&rb.base, env->m};
    rlx_generator *ahead = make_gen(&refusing, 256, false, false, false), *steps = make_gen(env, 256, false, false, false);
    const int32_t prompt[5] = {1, 403, 407, 261, 378};
    float logits[V];
    int32_t got[N_AHEAD], want[N_AHEAD];
    if (!ahead || !steps || !T_OK(rlx_generator_prefill(ahead, prompt, 5, logits)) ||
        !T_OK(rlx_generator_prefill(steps, prompt, 5, logits)))
        goto out;
    int32_t first = argmax(logits, V);
    for (int32_t i = 0; i < N_AHEAD; i++) {
        if (!T_OK(rlx_generator_decode(steps, i ? want[i - 1] : first, logits))) goto out;
        want[i] = argmax(logits, V);
    }
    if (!T_OK(rlx_generator_decode_argmax_ahead(ahead, first, 4, got)) ||
        !T_OK(rlx_generator_decode_argmax_ahead(ahead, got[3], N_AHEAD - 4, got + 4)))
        goto out;
    int32_t diff = -1;
    for (int32_t i = 0; i < N_AHEAD && diff < 0; i++)
        if (got[i] != want[i]) diff = i;
    T_CHECK(diff < 0, "refused chain: id %d is %d, one step at a time gives %d", (int)diff, diff < 0 ? 0 : got[diff],
            diff < 0 ? 0 : want[diff]);
    T_CHECK(rlx_generator_n_past(ahead) == 5 + N_AHEAD, "refused chain: n_past %d, expected %d",
            rlx_generator_n_past(ahead), 5 + N_AHEAD);
    T_CHECK(rb.chain_calls == 1, "refused chain: run_chain asked %d times, expected once", rb.chain_calls);
    printf("refused chain: %d greedy ids decoded ahead equal the single steps' (run_chain asked %d time)\n",
           N_AHEAD, rb.chain_calls);
out:
    rlx_generator_destroy(ahead);
    rlx_generator_destroy(steps);
    g_refusing = NULL;
}

/* predict (no-cache graph) leaves the state alone; prefill LRU reuse and eviction. */
static void check_prefill_cache(const gen_env *env) {
    enum { V = 512 };
    rlx_generator *g = make_gen(env, 512, false, false, false);
    if (!g) return;
    int32_t ids[300];
    for (int i = 0; i < 300; i++) ids[i] = (i * 37 + 5) % V;
    float a[V], b[V], c[V];
    T_OK(rlx_generator_prefill(g, ids, 6, a));
    T_OK(rlx_generator_prefill(g, ids, 7, b)); /* same bucket 8: no compile */
    rlx_generator_stats s = rlx_generator_get_stats(g);
    T_CHECK(s.n_compiles == 1, "prefill of 6 then 7 tokens (bucket 8): %lld compiles, expected 1",
            (long long)s.n_compiles);
    /* stateless predict between decode steps, and state intact afterwards */
    T_OK(rlx_generator_logits(g, ids, 7, false, c));
    T_CHECK(max_abs_diff(b, c, V) <= 1e-5f, "predict vs prefill of 7 tokens: max|d| %g", (double)max_abs_diff(b, c, V));
    T_CHECK(rlx_generator_n_past(g) == 7, "predict changed n_past to %d", rlx_generator_n_past(g));
    T_OK(rlx_generator_decode(g, ids[7], a));
    T_OK(rlx_generator_logits(g, ids, 8, false, c));
    T_CHECK(max_abs_diff(a, c, V) <= 1e-5f, "decode after predict vs predict of 8 tokens: max|d| %g",
            (double)max_abs_diff(a, c, V));
    /* all-rows logits: row i equals the last-row logits of the first i+1 tokens */
    float *all = malloc(sizeof(float) * 5 * V);
    T_OK(rlx_generator_logits(g, ids, 5, true, all));
    for (int i = 0; i < 5; i++) {
        T_OK(rlx_generator_logits(g, ids, i + 1, false, c));
        float d = max_abs_diff(all + (size_t)i * V, c, V);
        T_CHECK(d <= 1e-5f, "all-rows row %d vs last row of %d tokens: max|d| %g", i, i + 1, (double)d);
    }
    free(all);
    /* 9 prefill lengths in 9 different buckets (1 .. 256): the LRU keeps 8 */
    for (int n = 1; n <= 256; n *= 2) T_OK(rlx_generator_prefill(g, ids, n, a));
    s = rlx_generator_get_stats(g);
    T_CHECK(s.n_prefill_programs == RLX_PREFILL_CACHE_SIZE, "LRU holds %d prefill programs, expected %d",
            s.n_prefill_programs, RLX_PREFILL_CACHE_SIZE);
    int64_t before = s.n_compiles;
    T_OK(rlx_generator_prefill(g, ids, 200, a)); /* bucket 256: most recent, still cached */
    T_CHECK(rlx_generator_get_stats(g).n_compiles == before, "bucket 256 was evicted");
    printf("prefill cache: %lld compiles, %d programs held\n", (long long)rlx_generator_get_stats(g).n_compiles,
           rlx_generator_get_stats(g).n_prefill_programs);
    rlx_generator_destroy(g);

    g = make_gen(env, 64, false, false, true);
    if (!g) return;
    T_OK(rlx_generator_prefill(g, ids, 6, a));
    T_OK(rlx_generator_prefill(g, ids, 6, a));
    s = rlx_generator_get_stats(g);
    T_CHECK(s.n_compiles == 2 && s.n_prefill_programs == 0, "no_prefill_cache: %lld compiles, %d held; expected 2, 0",
            (long long)s.n_compiles, s.n_prefill_programs);
    rlx_generator_destroy(g);
}

static void check_state_errors(const gen_env *env) {
    enum { V = 512 };
    float l[V];
    int32_t ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    for (int naive = 0; naive < 2; naive++) {
        rlx_generator *g = make_gen(env, 8, naive, false, false);
        if (!g) return;
        T_ERR(rlx_generator_decode(g, 5, l), RLX_ERR_INVALID_ARGUMENT, "prefill a prompt first");
        T_ERR(rlx_generator_prefill(g, ids, 9, l), RLX_ERR_INVALID_ARGUMENT, "context length 8");
        T_ERR(rlx_generator_prefill(g, ids, 0, l), RLX_ERR_INVALID_ARGUMENT, "0 tokens");
        T_OK(rlx_generator_prefill(g, ids, 7, l)); /* bucket 8 = n_ctx */
        T_OK(rlx_generator_decode(g, 5, l));       /* row 7: the last one */
        T_ERR(rlx_generator_decode(g, 5, l), RLX_ERR_INVALID_ARGUMENT, "context is full (8 of 8");
        T_CHECK(rlx_generator_n_past(g) == 8, "n_past %d after a refused decode, expected 8", rlx_generator_n_past(g));
        rlx_generator_destroy(g);
    }
    /* a context that is not a power of two caps the buckets at n_ctx */
    rlx_generator *g = make_gen(env, 12, false, false, false);
    if (!g) return;
    T_OK(rlx_generator_prefill(g, ids, 10, l)); /* bucket 16 capped to 12 */
    T_OK(rlx_generator_decode(g, 3, l));
    T_OK(rlx_generator_decode(g, 3, l));
    T_CHECK(rlx_generator_n_past(g) == 12, "n_past %d, expected 12", rlx_generator_n_past(g));
    rlx_generator_destroy(g);
}

static bool stop_after_3(int32_t token, void *user) {
    (void)token;
    return ++*(int *)user < 3;
}

/* The public API over the same model: metadata from the GGUF header, argument errors, stop rules. */
static void check_runner_api(const char *path) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = "vulkan";
    rlx_runner *r = NULL;
    /* a Vulkan GPU may or may not be present (or built): it opens, or fails with an error naming it */
    rlx_status vs = rlx_runner_open(path, &o, &r);
    T_CHECK(!vs || ((rlx_status_code(vs) == RLX_ERR_DEVICE || rlx_status_code(vs) == RLX_ERR_UNSUPPORTED) &&
                    strstr(rlx_status_message(vs), "vulkan")),
            "backend vulkan: %s", rlx_status_message(vs));
    rlx_status_free(vs);
    rlx_runner_close(r);
    r = NULL;
    o.backend = "tpu";
    T_ERR(rlx_runner_open(path, &o, &r), RLX_ERR_INVALID_ARGUMENT, "unknown backend 'tpu'");
    o.backend = "cpu";
    o.n_ctx = 16;
    if (!T_OK(rlx_runner_open(path, &o, &r))) return;
    /* llama.context_length 2048, eos 2 (tokenizer.ggml.eos_token_id) */
    T_CHECK(!strcmp(rlx_runner_family(r), "llama") && rlx_runner_vocab_size(r) == 512 && rlx_runner_n_ctx(r) == 16 &&
                rlx_runner_eos_id(r) == 2 && !strcmp(rlx_runner_backend_name(r), "cpu") &&
                !rlx_runner_supports_multimodal(r),
            "runner facts: family %s vocab %d n_ctx %d eos %d backend %s", rlx_runner_family(r),
            rlx_runner_vocab_size(r), rlx_runner_n_ctx(r), rlx_runner_eos_id(r), rlx_runner_backend_name(r));
    /* opts.decode_ahead 0 stands for the default, 8 (include/rlx/runner.h); a value given is kept */
    T_CHECK(rlx_runner_decode_ahead(r) == 8, "decode_ahead %d with opts 0, expected the default 8",
            rlx_runner_decode_ahead(r));
    rlx_runner *r3 = NULL;
    o.decode_ahead = 3;
    if (T_OK(rlx_runner_open(path, &o, &r3)))
        T_CHECK(rlx_runner_decode_ahead(r3) == 3, "decode_ahead %d with opts 3", rlx_runner_decode_ahead(r3));
    rlx_runner_close(r3);
    o.decode_ahead = 0;
    int32_t ids[4] = {1, 403, 407, 261}, out[16], n_out = -1;
    float l[512];
    T_ERR(rlx_runner_generate(r, ids, 4, 0, NULL, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT,
          "n_new must be >= 1");
    T_ERR(rlx_runner_generate(r, ids, 0, 4, NULL, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, "empty");
    T_ERR(rlx_runner_generate(r, ids, 4, 13, NULL, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT,
          "exceed the context of 16");
    int32_t bad[2] = {1, 512};
    T_ERR(rlx_runner_predict_logits(r, bad, 2, l), RLX_ERR_INVALID_ARGUMENT, "token id 512 at position 1");
    bad[1] = -3;
    T_ERR(rlx_runner_prefill_get_last_logits(r, bad, 2, l), RLX_ERR_INVALID_ARGUMENT, "token id -3");
    T_ERR(rlx_runner_decode_get_logits(r, 7, l), RLX_ERR_INVALID_ARGUMENT, "prefill a prompt first");
    int calls = 0;
    T_OK(rlx_runner_generate(r, ids, 4, 12, NULL, stop_after_3, &calls, out, &n_out));
    T_CHECK(n_out == 3 && calls == 3, "stop callback false on the 3rd token: n_out %d, calls %d", n_out, calls);
    /* the generation state now holds the prompt and the 2 tokens decoded after it */
    T_CHECK(rlx_runner_n_past(r) == 6, "n_past %d after 3 generated tokens, expected 6", rlx_runner_n_past(r));
    T_OK(rlx_runner_generate(r, ids, 4, 12, NULL, NULL, NULL, out, &n_out));
    T_CHECK(n_out == 12, "n_out %d, expected 12 (prompt 4 + 12 = n_ctx)", n_out);
    rlx_runner_close(r);
}

static int run_stories(void) {
    const char *path = t_source_path("models/stories260K.gguf");
    rlx_model *m = NULL;
    rlx_backend *b = NULL;
    if (!T_OK(rlx_model_open(path, &m))) return t_summary("test_runner_unit");
    check_family_graphs(&rlx_family_llama_ops, m, &stories_expect);
    check_rope_and_attention_attrs(m);
    check_runner_api(path);
    if (T_OK(rlx_backend_cpu_create(2, &b))) {
        gen_env env = {b, m};
        check_paths_agree(&env);
        check_chain_refused(&env);
        check_prefill_cache(&env);
        check_state_errors(&env);
    }
    rlx_backend_destroy(b);
    rlx_model_close(m);
    return t_summary("test_runner_unit");
}

/* ---------------------------------------------------------------- fixture families */

static double jnum(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    T_CHECK(json_is_number(v), "config.json: '%s' missing or not a number", key);
    return json_number_value(v);
}

/* rope_theta of a layer type from transformers-5 `rope_parameters` (flat, or per layer type) */
static double rope_theta(json_t *cfg, const char *layer_type) {
    json_t *rp = json_object_get(cfg, "rope_parameters");
    json_t *per = json_object_get(rp, layer_type);
    return jnum(per ? per : rp, "rope_theta");
}

static void check_fixture_family(const char *fam, const char *gguf, const rlx_family_ops *ops) {
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s/%s", fam, gguf);
    t_require_fixture(rel);
    char cfg_rel[256];
    snprintf(cfg_rel, sizeof cfg_rel, "models/%s/hf/config.json", fam);
    json_t *cfg = t_load_json(t_fixture(cfg_rel));
    rlx_model *m = NULL;
    if (!T_OK(rlx_model_open(t_fixture(rel), &m))) {
        json_decref(cfg);
        return;
    }
    bool is_gemma = !strcmp(fam, "gemma3"), is_moe = !strcmp(fam, "qwen3moe"), is_llama = !strcmp(fam, "llama32");
    bool qk_norm = !is_llama;
    int L = (int)jnum(cfg, "num_hidden_layers");
    json_t *tied = json_object_get(cfg, "tie_word_embeddings");
    expect e = {
        .name = fam, .n_layer = L, .n_head = (int)jnum(cfg, "num_attention_heads"),
        .n_head_kv = (int)jnum(cfg, "num_key_value_heads"), .head_dim = (int)jnum(cfg, "head_dim"),
        .n_vocab = (int)jnum(cfg, "vocab_size"),
        /* pre-norms (2), q/k norms (2), gemma3's post-attention and post-FFN norms (2) */
        .norms_per_layer = 2 + (qk_norm ? 2 : 0) + (is_gemma ? 2 : 0),
        /* q k v o, then gate up down (dense) or the router (MoE) */
        .matmuls_per_layer = 4 + (is_moe ? 1 : 3),
        .layout = is_llama ? RLX_ROPE_LAYOUT_NORMAL : RLX_ROPE_LAYOUT_NEOX,
        .freq_factors = is_llama, /* rope_type llama3 */
        .embd_scaled = is_gemma, .moe_layers = is_moe ? L : 0,
        .head = json_is_true(tied) ? "token_embd.weight" : "output.weight",
    };
    check_family_graphs(ops, m, &e);

    /* per-layer attention attributes against the config */
    rlx_graph *g = NULL;
    if (T_OK(rlx_family_build_decode(ops, m, 1, 16, RLX_DECODE_LOGITS, &g))) {
        double scalar = is_gemma ? jnum(cfg, "query_pre_attn_scalar") : e.head_dim;
        json_t *types = json_object_get(cfg, "layer_types");
        for (int il = 0; il < L; il++) {
            const char *type = types ? json_string_value(json_array_get(types, il)) : "full_attention";
            bool sliding = type && !strcmp(type, "sliding_attention");
            int want_window = sliding ? (int)jnum(cfg, "sliding_window") : 0;
            double want_base = rope_theta(cfg, sliding ? "sliding_attention" : "full_attention");
            const rlx_node_info *a = nth_op(g, RLX_OP_ATTENTION, il), *r = nth_op(g, RLX_OP_ROPE, 2 * il);
            T_CHECK(a->attrs.window == want_window && fabs(a->attrs.scale - 1.0 / sqrt(scalar)) < 1e-7,
                    "%s layer %d: window %d scale %g, expected %d and %g", fam, il, a->attrs.window,
                    (double)a->attrs.scale, want_window, 1.0 / sqrt(scalar));
            T_CHECK(fabs(r->attrs.rope.freq_base - want_base) <= 1e-6 * want_base && r->attrs.rope.n_rot == e.head_dim,
                    "%s layer %d: rope base %g n_rot %d, expected %g and %d", fam, il, (double)r->attrs.rope.freq_base,
                    r->attrs.rope.n_rot, want_base, e.head_dim);
        }
        if (is_gemma) {
            const rlx_node_info *s = nth_op(g, RLX_OP_SCALE, 0);
            double want = sqrt(jnum(cfg, "hidden_size"));
            T_CHECK(s && fabs(s->attrs.scale - want) < 1e-6, "gemma3 embedding scale %g, expected sqrt(hidden) %g",
                    s ? (double)s->attrs.scale : 0.0, want);
            T_CHECK(count_op(g, RLX_OP_GELU_TANH) == L && count_op(g, RLX_OP_SILU) == 0, "gemma3: activation counts");
        }
        if (is_moe) {
            const rlx_node_info *r = nth_op(g, RLX_OP_MOE_ROUTE, 0);
            T_CHECK(r->attrs.top_k == (int)jnum(cfg, "num_experts_per_tok") &&
                        r->attrs.norm_topk == json_is_true(json_object_get(cfg, "norm_topk_prob")),
                    "qwen3moe route top_k %d norm %d", r->attrs.top_k, r->attrs.norm_topk);
        }
        printf("%s: per-layer window / scale / rope base checked against hf/config.json over %d layers\n", fam, L);
        rlx_graph_destroy(g);
    }
    rlx_model_close(m);
    json_decref(cfg);
}

static int run_families(void) {
    check_fixture_family("qwen3", "qwen3-F32.gguf", &rlx_family_qwen3_ops);
    check_fixture_family("llama32", "llama32-F32.gguf", &rlx_family_llama_ops);
    check_fixture_family("gemma3", "gemma3-F16.gguf", &rlx_family_gemma3_ops);
    check_fixture_family("qwen3moe", "qwen3moe-F16.gguf", &rlx_family_qwen3moe_ops);
    const rlx_family_ops *ops = NULL;
    /* the hybrids are found, with their recurrent state's size; the others have none */
    T_CHECK(!rlx_family_ops_find(RLX_FAMILY_QWEN35, &ops) && ops == &rlx_family_qwen35_ops && ops->state_floats,
            "qwen35: its ops with a state size");
    T_CHECK(!rlx_family_ops_find(RLX_FAMILY_QWEN35MOE, &ops) && ops == &rlx_family_qwen35moe_ops && ops->state_floats,
            "qwen35moe: its ops with a state size");
    T_OK(rlx_family_ops_find(RLX_FAMILY_GEMMA3, &ops));
    T_CHECK(ops->state_floats == NULL, "gemma3 has no recurrent state");
    return t_summary("test_runner_unit families");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "families")) return run_families();
    return run_stories();
}
