/* A quick end-to-end check of the runner on one model per family (the full matrix is
 * test_family_parity): last-position logits of every reference prompt, and greedy generation.
 *
 *   test_runner_smoke <stories|qwen3|llama32|gemma3|qwen3moe>
 *
 * Expected values: ref-<TYPE>.json beside each fixture model (transformers in float64 from the
 * same tensors; schema and tolerances in the fixtures README), and for stories260K the copy of its
 * ref-hf.json in tests/data. f32 compute on the CPU: max|dlogit| <= 1e-3. Greedy ids must match up
 * to the first step whose greedy_margin is below twice that bound (the README's near-tie rule). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/runner.h"
#include "test_util.h"

#define TOL 1e-3

typedef struct model_case {
    const char *name;
    const char *model; /* fixture-relative, or source-relative when in_repo */
    const char *ref;
    bool in_repo;
    bool ignore_eos;   /* random-weight references run their 24 steps regardless of EOS */
} model_case;

static const model_case cases[] = {
    {"stories", "models/stories260K.gguf", "tests/data/stories260K-ref-hf.json", true, false},
    {"qwen3", "models/qwen3/qwen3-F32.gguf", "models/qwen3/ref-F32.json", false, true},
    {"llama32", "models/llama32/llama32-F32.gguf", "models/llama32/ref-F32.json", false, true},
    {"gemma3", "models/gemma3/gemma3-F16.gguf", "models/gemma3/ref-F16.json", false, true},
    {"qwen3moe", "models/qwen3moe/qwen3moe-F16.gguf", "models/qwen3moe/ref-F16.json", false, true},
};

static int32_t *json_ids(json_t *arr, size_t *n) {
    *n = json_array_size(arr);
    int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
    for (size_t i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
    return ids;
}

static void check_logits(rlx_runner *r, const char *name, size_t p, json_t *prompt, const int32_t *ids, size_t n) {
    json_t *ref = json_object_get(prompt, "last_logits");
    int32_t V = rlx_runner_vocab_size(r);
    T_CHECK((int32_t)json_array_size(ref) == V, "%s prompt %zu: reference has %zu logits, runner vocab %d", name, p,
            json_array_size(ref), V);
    float *got = malloc((size_t)V * sizeof *got);
    double worst = 0;
    int at = -1;
    if (T_OK(rlx_runner_predict_logits(r, ids, (int32_t)n, got))) {
        for (int32_t i = 0; i < V && i < (int32_t)json_array_size(ref); i++) {
            double d = fabs(got[i] - json_number_value(json_array_get(ref, (size_t)i)));
            if (!(d <= worst)) {
                worst = d;
                at = i;
            }
        }
        T_CHECK(worst <= TOL, "%s prompt %zu (%zu tokens): max|dlogit| %.3g at id %d > %g", name, p, n, worst, at, TOL);
        printf("%s prompt %zu (%zu tokens): last_logits max|dlogit| %.3g\n", name, p, n, worst);
    }
    free(got);
}

static void check_greedy(rlx_runner *r, const model_case *c, size_t p, json_t *prompt, const int32_t *ids, size_t n) {
    size_t n_ref;
    int32_t *want = json_ids(json_object_get(prompt, "greedy"), &n_ref);
    json_t *margin = json_object_get(prompt, "greedy_margin");
    int32_t *got = calloc(n_ref ? n_ref : 1, sizeof *got);
    int32_t n_got = 0;
    rlx_sample_opts so = rlx_sample_opts_greedy();
    so.ignore_eos = c->ignore_eos;
    if (T_OK(rlx_runner_generate(r, ids, (int32_t)n, (int32_t)n_ref, &so, NULL, NULL, got, &n_got))) {
        T_CHECK((size_t)n_got == n_ref, "%s prompt %zu: %d ids generated, expected %zu", c->name, p, n_got, n_ref);
        size_t checked = 0;
        for (; checked < n_ref && checked < (size_t)n_got; checked++) {
            if (json_number_value(json_array_get(margin, checked)) < 2 * TOL) break; /* near-tie: may diverge */
            T_CHECK(got[checked] == want[checked], "%s prompt %zu: greedy step %zu id %d, expected %d", c->name, p,
                    checked, got[checked], want[checked]);
            if (got[checked] != want[checked]) break;
        }
        printf("%s prompt %zu: greedy ids equal over %zu of %zu steps (stop at near-tie or end)\n", c->name, p,
               checked, n_ref);
    }
    free(got);
    free(want);
}

int main(int argc, char **argv) {
    const model_case *c = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[1], cases[i].name)) c = &cases[i];
    if (!c) {
        fprintf(stderr, "usage: test_runner_smoke <stories|qwen3|llama32|gemma3|qwen3moe>\n");
        return 2;
    }
    if (!c->in_repo) {
        t_require_fixture(c->model);
        t_require_fixture(c->ref);
    }
    const char *model = c->in_repo ? t_source_path(c->model) : t_fixture(c->model);
    json_t *ref = t_load_json(c->in_repo ? t_source_path(c->ref) : t_fixture(c->ref));
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = "cpu";
    rlx_runner *r = NULL;
    if (T_OK(rlx_runner_open(model, &o, &r))) {
        json_t *prompts = json_object_get(ref, "prompts");
        for (size_t p = 0; p < json_array_size(prompts); p++) {
            json_t *prompt = json_array_get(prompts, p);
            size_t n;
            int32_t *ids = json_ids(json_object_get(prompt, "ids"), &n);
            check_logits(r, c->name, p, prompt, ids, n);
            check_greedy(r, c, p, prompt, ids, n);
            free(ids);
        }
    }
    rlx_runner_close(r);
    json_decref(ref);
    char name[64];
    snprintf(name, sizeof name, "test_runner_smoke %s", c->name);
    return t_summary(name);
}
