/* Qwen3.5 and Qwen3.5-MoE (runners/qwen35.c) on the CPU reference against the fixtures, at the graph level: the
 * engine does not hold recurrent state yet, so this test makes the session itself (attention layers
 * KV, Gated DeltaNet layers one state slot) and runs the family's rows graph in the single-sequence
 * form.
 *
 *   test_qwen35_graph FAMILY [MODEL...]   FAMILY: qwen35 | qwen35moe; MODEL: hf | F32 | F16 (default: all)
 *
 * Expected values: ../shared/fixtures/models/<FAMILY>/ref-hf.json, computed by transformers in float64
 * from the HF weights, which the F32 and F16 GGUFs hold too (fixtures README: f32 compute on the CPU
 * within max|Δlogit| 1e-3 for all three; greedy ids equal up to the first step whose greedy_margin
 * is below twice that). Per model and prompt: the last position's logits after the prompt in one
 * run; every position's logits of prompt 1 (all_logits); the prompt as prefill chunks of 16 rows
 * over several runs (the state carried between runs); the 24 greedy ids, one decode run each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/format/model.h"
#include "runners/family.h"
#include "runners/qwen35.h"
#include "test_qwen35_ref.h"
#include "test_util.h"

#define TOL 1e-3
#define PAGE 16

/* Static rows (the longest prompt fits one run) and KV capacity (plus its greedy steps), from the
 * reference's prompts, in whole pages. */
static int32_t g_rows, g_kv_cap;

typedef struct q35 {
    rlx_model *m;
    rlx_backend *cpu;
    rlx_session *s;
    rlx_program *p;
    int32_t n_vocab;
    float *logits; /* [g_rows, n_vocab] */
    int32_t *ids;  /* [g_rows] */
} q35;

static bool q35_open(q35 *q, const char *path, const rlx_family_ops *ops) {
    memset(q, 0, sizeof *q);
    if (!T_OK(rlx_model_open(path, &q->m))) return false;
    const rlx_model_config *c = &q->m->config;
    uint8_t kinds[RLX_MAX_LAYERS];
    for (uint32_t il = 0; il < c->n_layer; il++)
        kinds[il] = c->layer_kind[il] == RLX_LAYER_LINEAR_ATTENTION ? RLX_STATE_RECURRENT : RLX_STATE_KV;
    rlx_state_spec spec = {.n_layer = (int32_t)c->n_layer, .n_head_kv = (int32_t)c->n_head_kv,
                           .head_dim = (int32_t)c->head_dim, .head_dim_v = (int32_t)c->head_dim_v,
                           .page_size = PAGE, .n_pages = g_kv_cap / PAGE, .layer_kind = kinds, .n_state_slots = 1,
                           .state_floats = rlx_qwen35_state_floats(c)};
    rlx_graph *g = NULL;
    bool ok = T_OK(rlx_backend_cpu_create(2, &q->cpu)) &&
              T_OK(q->cpu->ops->session_create(q->cpu, q->m->weights, q->m->n_weights, &spec, &q->s)) &&
              T_OK(rlx_family_build_rows(ops, q->m, g_rows, g_kv_cap, g_rows, RLX_DECODE_LOGITS, false, &g)) &&
              T_OK(q->cpu->ops->compile(q->s, g, &q->p));
    rlx_graph_destroy(g);
    q->n_vocab = (int32_t)c->n_vocab;
    q->logits = malloc((size_t)g_rows * (size_t)q->n_vocab * sizeof *q->logits);
    q->ids = calloc((size_t)g_rows, sizeof *q->ids);
    return ok && q->logits && q->ids;
}

static void q35_close(q35 *q) {
    if (q->p) q->cpu->ops->program_destroy(q->p);
    if (q->s) q->cpu->ops->session_destroy(q->s);
    rlx_backend_destroy(q->cpu);
    rlx_model_close(q->m);
    free(q->logits);
    free(q->ids);
}

/* n ids at positions n_past.. (position 0 starts the sequence afresh: ir/ops.def). */
static bool q35_run(q35 *q, const int32_t *ids, int32_t n_past, int32_t n) {
    memcpy(q->ids, ids, (size_t)n * sizeof *ids);
    const void *in[1] = {q->ids};
    void *out[1] = {q->logits};
    rlx_run_args a = {.n_past = n_past, .n_tokens = n, .inputs = in, .outputs = out};
    return T_OK(q->cpu->ops->run(q->p, &a));
}

static double max_diff(const float *got, const json_t *want, int32_t n) {
    double d = 0;
    for (int32_t v = 0; v < n; v++) d = fmax(d, fabs((double)got[v] - json_number_value(json_array_get(want, v))));
    return d;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t v = 1; v < n; v++)
        if (x[v] > x[best]) best = v;
    return best;
}

static void check_runs(q35 *q, const char *label, size_t pi, const json_t *prompt, const int32_t *ids, int32_t n);

static void check_prompt(q35 *q, const char *label, size_t pi, const json_t *prompt) {
    const json_t *ids_j = json_object_get(prompt, "ids");
    int32_t n = (int32_t)json_array_size(ids_j), *ids = malloc((size_t)g_rows * sizeof *ids);
    if (!ids || n < 1 || n > g_rows) {
        T_CHECK(false, "%s prompt %zu: %d ids, expected 1..%d", label, pi, n, g_rows);
        free(ids);
        return;
    }
    for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(ids_j, i));
    /* the whole prompt in one run */
    bool ok = q35_run(q, ids, 0, n);
    if (ok) check_runs(q, label, pi, prompt, ids, n);
    free(ids);
}

static void check_runs(q35 *q, const char *label, size_t pi, const json_t *prompt, const int32_t *ids, int32_t n) {
    int32_t V = q->n_vocab;
    double last = max_diff(q->logits + (size_t)(n - 1) * V, json_object_get(prompt, "last_logits"), V), all = 0;
    const json_t *all_j = json_object_get(prompt, "all_logits");
    for (int32_t r = 0; all_j && r < n; r++) all = fmax(all, max_diff(q->logits + (size_t)r * V, json_array_get(all_j, r), V));
    /* the prompt in runs of 16 rows */
    double chunked = 0;
    for (int32_t at = 0; at < n; at += 16) {
        int32_t m = n - at < 16 ? n - at : 16;
        if (!q35_run(q, ids + at, at, m)) return;
        if (at + m == n)
            chunked = max_diff(q->logits + (size_t)(m - 1) * V, json_object_get(prompt, "last_logits"), V);
    }
    /* greedy: the state after the chunked prefill, one row per step */
    const json_t *greedy = json_object_get(prompt, "greedy"), *margin = json_object_get(prompt, "greedy_margin");
    int32_t steps = (int32_t)json_array_size(greedy), matched = 0, next = argmax(q->logits + (size_t)((n - 1) % 16) * V, V);
    bool tie = false;
    for (int32_t s = 0; s < steps && n + s < g_kv_cap; s++) {
        int32_t want = (int32_t)json_integer_value(json_array_get(greedy, s));
        if (json_number_value(json_array_get(margin, s)) < 2 * TOL) tie = true; /* past a near-tie: may differ */
        if (tie) break;
        T_CHECK(next == want, "%s prompt %zu greedy step %d: %d, reference %d", label, pi, s, next, want);
        if (next != want) break;
        matched++;
        if (!q35_run(q, &next, n + s, 1)) return;
        next = argmax(q->logits, V);
    }
    printf("  %-4s prompt %zu (%2d ids): last max|d| %.2e%s, in runs of 16 %.2e, greedy %d/%d%s\n", label, pi, n, last,
           all_j ? "" : "", chunked, matched, steps, tie ? " (stopped at a near-tie)" : "");
    if (all_j) printf("       prompt %zu every position: max|d| %.2e\n", pi, all);
    T_CHECK(last <= TOL && all <= TOL && chunked <= TOL, "%s prompt %zu: max|d| last %.3g all %.3g chunked %.3g > %g",
            label, pi, last, all, chunked, TOL);
}

int main(int argc, char **argv) {
    const char *fam = argc > 1 ? argv[1] : "";
    const rlx_family_ops *ops = t_qwen35_family(fam);
    if (!ops) {
        fprintf(stderr, "usage: test_qwen35_graph qwen35|qwen35moe [hf|F32|F16...]\n");
        return 2;
    }
    char rel[128];
    snprintf(rel, sizeof rel, "models/%s/ref-hf.json", fam);
    t_require_fixture(rel);
    json_t *ref = t_load_json(t_fixture(rel));
    const json_t *prompts = json_object_get(ref, "prompts");
    size_t longest, steps;
    t_qwen35_ref_extent(prompts, &longest, &steps);
    g_rows = (int32_t)((longest + PAGE - 1) / PAGE * PAGE);
    g_kv_cap = (int32_t)((longest + steps + PAGE - 1) / PAGE * PAGE);
    static const char *const all[] = {"hf", "F32", "F16"};
    const char *const *models = argc > 2 ? (const char *const *)argv + 2 : all;
    int n_models = argc > 2 ? argc - 2 : 3;
    for (int k = 0; k < n_models; k++) {
        if (!strcmp(models[k], "hf")) snprintf(rel, sizeof rel, "models/%s/hf", fam);
        else snprintf(rel, sizeof rel, "models/%s/%s-%s.gguf", fam, fam, models[k]);
        t_require_fixture(rel);
        q35 q;
        if (q35_open(&q, t_fixture(rel), ops)) {
            for (size_t pi = 0; pi < json_array_size(prompts); pi++)
                check_prompt(&q, models[k], pi, json_array_get(prompts, pi));
        }
        q35_close(&q);
    }
    json_decref(ref);
    return t_summary("test_qwen35_graph");
}
