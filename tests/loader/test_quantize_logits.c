/* Quantize, then run: the logits of fixture qwen3 quantized by rlx_quantize_file, against the F32
 * model's reference logits (ref-hf.json: transformers in float64; the F32 GGUF holds the same
 * weights, fixtures README).
 *
 * Bound (loose, as quantization moves logits for real): for every weight type, the largest
 * |logit - reference| over the 4 prompts may be at most LOGIT_MARGIN x the largest deviation
 * llama.cpp's own quantized file of that type shows against the same reference; that deviation is
 * read from the fixtures (ref-<TYPE>.json: transformers on llama.cpp's quantized weights vs
 * ref-hf.json), so the bound is independent of our code. The runner is the CPU reference backend
 * (or $RLX_TEST_BACKEND), which the family parity tests hold to 3e-2 on quantized files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/quant/quantize.h"
#include "rlx/runner.h"
#include "test_util.h"

#define LOGIT_MARGIN 2.0
#define N_PROMPTS_MAX 8

static const char *test_backend(void) {
    const char *b = getenv("RLX_TEST_BACKEND");
    return b && *b ? b : "cpu";
}

static double max_abs_diff_json(const json_t *a, const json_t *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(json_number_value(json_array_get(a, i)) - json_number_value(json_array_get(b, i))));
    return worst;
}

static size_t argmax_json(const json_t *a, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (json_number_value(json_array_get(a, i)) > json_number_value(json_array_get(a, best))) best = i;
    return best;
}

static void check_type(const char *type, const json_t *ref_hf) {
    char ref_rel[128], out[256];
    snprintf(ref_rel, sizeof ref_rel, "models/qwen3/ref-%s.json", type);
    t_require_fixture(ref_rel);
    json_t *ref_q = t_load_json(t_fixture(ref_rel));
    snprintf(out, sizeof out, "/tmp/rlx_test_quantize_logits_%d_%s.gguf", (int)getpid(), type);
    rlx_runner *r = NULL;
    rlx_runner_opts opts = rlx_runner_opts_default();
    opts.backend = test_backend();
    if (!T_OK(rlx_quantize_file(t_fixture("models/qwen3/qwen3-F32.gguf"), out, rlx_quant_recipe_find(type), 2, NULL,
                                NULL)) ||
        !T_OK(rlx_runner_open(out, &opts, &r))) {
        json_decref(ref_q);
        remove(out);
        return;
    }
    size_t vocab = (size_t)rlx_runner_vocab_size(r);
    const json_t *prompts = json_object_get(ref_hf, "prompts"), *qprompts = json_object_get(ref_q, "prompts");
    float *logits = malloc(vocab * sizeof *logits);
    double ours = 0, llama = 0;
    int top1_same = 0, n = 0;
    for (size_t p = 0; p < json_array_size(prompts) && p < N_PROMPTS_MAX; p++) {
        const json_t *ids_j = json_object_get(json_array_get(prompts, p), "ids");
        const json_t *want = json_object_get(json_array_get(prompts, p), "last_logits");
        const json_t *theirs = json_object_get(json_array_get(qprompts, p), "last_logits");
        int32_t n_ids = (int32_t)json_array_size(ids_j), ids[256];
        if (n_ids > 256 || json_array_size(want) != vocab || json_array_size(theirs) != vocab) {
            T_CHECK(false, "%s: prompt %zu: unexpected reference shape", type, p);
            continue;
        }
        for (int32_t i = 0; i < n_ids; i++) ids[i] = (int32_t)json_integer_value(json_array_get(ids_j, (size_t)i));
        if (!T_OK(rlx_runner_predict_logits(r, ids, n_ids, logits))) continue;
        double d = 0;
        size_t top = 0;
        for (size_t i = 0; i < vocab; i++) {
            d = fmax(d, fabs((double)logits[i] - json_number_value(json_array_get(want, i))));
            if (logits[i] > logits[top]) top = i;
        }
        ours = fmax(ours, isnan(d) ? INFINITY : d);
        llama = fmax(llama, max_abs_diff_json(theirs, want, vocab));
        top1_same += top == argmax_json(want, vocab);
        n++;
    }
    printf("%-6s: max|logit - F32 reference| over %d prompts: ours %.4f, llama.cpp's file %.4f (bound %.1fx); "
           "top-1 same as F32 in %d/%d\n",
           type, n, ours, llama, LOGIT_MARGIN, top1_same, n);
    T_CHECK(n == (int)json_array_size(prompts), "%s: %d of %zu prompts ran", type, n, json_array_size(prompts));
    T_CHECK(ours <= LOGIT_MARGIN * llama, "%s: logits deviate by %.4f, more than %.1f x llama.cpp's %.4f", type, ours,
            LOGIT_MARGIN, llama);
    free(logits);
    rlx_runner_close(r);
    json_decref(ref_q);
    remove(out);
}

int main(void) {
    t_require_fixture("models/qwen3/qwen3-F32.gguf");
    t_require_fixture("models/qwen3/ref-hf.json");
    json_t *ref_hf = t_load_json(t_fixture("models/qwen3/ref-hf.json"));
    static const char *types[] = {"Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i], ref_hf);
    json_decref(ref_hf);
    return t_summary("test_quantize_logits");
}
