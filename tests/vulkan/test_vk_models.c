/* Vulkan against the CPU reference backend on every fixture model (each family, each weight type)
 * and on the embedded stories260K: the logits of every position of one prompt, and 8 greedy ids.
 *
 * Bounds (fixtures README): max|Δlogit| <= 3e-2, the tolerance for f16/mixed compute that the
 * backend must meet; and, since every Vulkan kernel computes in f32 like the CPU when run with
 * RLX_VK_COOPMAT=exact (tests/vulkan/tests.cmake) and F32 K/V, also <= 1e-3, the f32 tolerance. Greedy ids must agree exactly up to the first step whose top-2 logit margin (on
 * the CPU) is below twice that f32 bound (the near-tie rule).
 *
 *   test_vk_models [FAMILY...]    default: every family */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/runner.h"
#include "test_util.h"
#include "test_vk_util.h"

#define TOL 3e-2
#define TOL_F32 1e-3
#define N_GREEDY 8

static const int32_t PROMPT[] = {1, 403, 407, 261, 378, 17, 300, 5, 66, 111, 42};
#define N_PROMPT ((int32_t)(sizeof PROMPT / sizeof PROMPT[0]))

static const char *const MODELS[] = {
    "qwen3/qwen3-F32",     "qwen3/qwen3-F16",       "qwen3/qwen3-BF16",     "qwen3/qwen3-Q8_0",
    "qwen3/qwen3-Q6_K",    "qwen3/qwen3-Q5_K_M",    "qwen3/qwen3-Q4_K_M",   "qwen3/qwen3-Q4_0",
    "llama32/llama32-F32", "llama32/llama32-Q8_0",  "llama32/llama32-Q4_K_M", "gemma3/gemma3-F16",
    "gemma3/gemma3-Q4_K_M", "qwen3moe/qwen3moe-F16", "qwen3moe/qwen3moe-Q4_K_M",
};

static double g_worst;

static rlx_runner *open_on(const char *path, const char *backend) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = backend;
    o.n_ctx = 64;
    /* the f32 bound holds for f32 K/V; F16's (Vulkan's default) is held to the f16 class by
     * vk_family_parity_* (tests/vulkan/tests.cmake) */
    o.kv_type = RLX_KV_TYPE_F32;
    rlx_runner *r = NULL;
    return T_OK(rlx_runner_open(path, &o, &r)) ? r : NULL;
}

/* Top-2 margin of a logit row. */
static double margin(const float *l, int32_t v) {
    float a = -INFINITY, b = -INFINITY;
    for (int32_t i = 0; i < v; i++) {
        if (l[i] > a) {
            b = a;
            a = l[i];
        } else if (l[i] > b) {
            b = l[i];
        }
    }
    return (double)a - (double)b;
}

static void compare_model(const char *label, const char *path) {
    rlx_runner *vk = open_on(path, "vulkan"), *cpu = open_on(path, "cpu");
    if (!vk || !cpu) {
        rlx_runner_close(vk);
        rlx_runner_close(cpu);
        return;
    }
    int32_t v = rlx_runner_vocab_size(cpu);
    float *lv = malloc((size_t)N_PROMPT * (size_t)v * sizeof *lv), *lc = malloc((size_t)N_PROMPT * (size_t)v * sizeof *lc);
    double worst = 0.0;
    if (lv && lc && T_OK(rlx_runner_predict_all_logits(vk, PROMPT, N_PROMPT, lv)) &&
        T_OK(rlx_runner_predict_all_logits(cpu, PROMPT, N_PROMPT, lc))) {
        for (int64_t i = 0; i < (int64_t)N_PROMPT * v; i++) {
            double d = fabs((double)lv[i] - (double)lc[i]);
            if (!(d <= worst)) worst = d; /* NaN propagates */
        }
    }
    T_CHECK(worst <= TOL, "%s: max|Δlogit| %.3e > %.0e", label, worst, TOL);
    T_CHECK(worst <= TOL_F32, "%s: max|Δlogit| %.3e > %.0e (f32 compute)", label, worst, TOL_F32);
    if (worst > g_worst || isnan(worst)) g_worst = worst;

    /* greedy: the CPU's margins say where a tie may legitimately flip the choice */
    int32_t ids_v[N_GREEDY], ids_c[N_GREEDY], nv = 0, nc = 0, agree = 0;
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    T_OK(rlx_runner_generate(vk, PROMPT, N_PROMPT, N_GREEDY, &greedy, NULL, NULL, ids_v, &nv));
    T_OK(rlx_runner_generate(cpu, PROMPT, N_PROMPT, N_GREEDY, &greedy, NULL, NULL, ids_c, &nc));
    int32_t seq[N_PROMPT + N_GREEDY];
    memcpy(seq, PROMPT, sizeof PROMPT);
    float *row = malloc((size_t)v * sizeof *row);
    for (int32_t k = 0; row && k < nc && k < nv; k++) {
        T_OK(rlx_runner_predict_logits(cpu, seq, N_PROMPT + k, row));
        if (margin(row, v) < 2 * TOL_F32) break; /* near-tie: the sequences may part here */
        T_CHECK(ids_v[k] == ids_c[k], "%s: greedy step %d: vulkan %d, cpu %d", label, k, ids_v[k], ids_c[k]);
        if (ids_v[k] != ids_c[k]) break;
        agree++;
        seq[N_PROMPT + k] = ids_c[k];
    }
    printf("  %-26s max|Δlogit| %.2e over %d x %d, greedy %d/%d agree\n", label, worst, N_PROMPT, v, agree, nc);
    free(row);
    free(lv);
    free(lc);
    rlx_runner_close(vk);
    rlx_runner_close(cpu);
}

static const char *model_rel(size_t i) {
    static char rel[128];
    snprintf(rel, sizeof rel, "models/%s.gguf", MODELS[i]);
    return rel;
}

/* With arguments, only the models of those families ("qwen3", "gemma3", ...). */
static bool selected(size_t i, int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        size_t n = strlen(argv[a]);
        if (strncmp(MODELS[i], argv[a], n) == 0 && MODELS[i][n] == '/') return true;
    }
    return argc < 2;
}

int main(int argc, char **argv) {
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (selected(i, argc, argv)) t_require_fixture(model_rel(i));
    rlx_backend_destroy(vkt_backend()); /* skips here without a Vulkan device */
    compare_model("stories260K", t_source_path("models/stories260K.gguf"));
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (selected(i, argc, argv)) compare_model(MODELS[i], t_fixture(model_rel(i)));
    printf("worst max|Δlogit| vulkan vs cpu: %.3e (bounds %.0e and, f32 compute, %.0e)\n", g_worst, TOL, TOL_F32);
    vkt_check_validation();
    return t_summary("test_vk_models");
}
