/* Family parity: rlx against the fixtures' reference outputs, one family per run.
 *
 *   test_family_parity FAMILY [MODEL...]    FAMILY: qwen3 | llama32 | gemma3 | qwen3moe
 *                                           MODEL: a weight type (F32, Q4_K_M, ...) or "hf";
 *                                           default: every one present
 *
 * Expected values: ../shared/fixtures/models/<family>/ref-<TYPE>.json for <family>-<TYPE>.gguf and
 * ref-hf.json for hf/, computed by Hugging Face transformers in float64 from the same weights (for a
 * GGUF: its tensors as gguf-py dequantizes them). Tolerances and the near-tie rule are the
 * fixtures README's: max|Δlogit| <= 1e-3 for F32/F16/BF16 and the HF directory, <= 3e-2 for
 * quantized files, and <= 3e-2 for every file under RLX_PARITY_MIXED=1 (the README's tolerance for
 * f16 / mixed compute, for a backend run in its mixed-precision mode) or with an F16 KV cache
 * (Vulkan's default; RLX_TEST_KV=f32 keeps the f32 bounds): K and V stored in F16 are f16 activations,
 * the README's f16 class. Each stored element is off by up to 2^-11 relative; every layer's
 * attention output then by about 2^-11 (1 + 2 S) (S = scale * sum|q k|, the scores' size), which
 * the residual stream carries into the logits and these random models' large activations magnify:
 * 1.3e-3 .. 3.4e-3 measured on lavapipe, past f32's 1e-3 and well inside 3e-2 (llama.cpp's f16
 * activations land at 4e-3 .. 8e-3). Greedy ids must match up to the first step whose reference
 * greedy_margin is below twice the tolerance.
 *
 * For every model: last_logits of the 4 prompts; all_logits of prompt 1 (for hf/ and the F32 GGUF,
 * against ref-hf.json, the only file that has them); the 24 greedy ids of every prompt on all three
 * generator paths (bucketed, exact = no_buckets, naive = no_kv_cache). qwen35 and qwen35moe have
 * only ref-hf.json, the reference of their F32 and F16 GGUFs too (fixtures README); their
 * recurrent layers cannot take the naive path, which must refuse them (RLX_ERR_UNSUPPORTED). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rlx/runner.h"
#include "test_util.h"

#define TOL_FLOAT 1e-3
#define TOL_QUANT 3e-2

/* The CPU reference backend unless RLX_TEST_BACKEND names another: the tolerances here are those
 * of f32 compute on the CPU. */
static const char *test_backend(void) {
    const char *b = getenv("RLX_TEST_BACKEND");
    return b && *b ? b : "cpu";
}

/* The K/V type: the backend's default unless RLX_TEST_KV is f32 or f16 (tests/vulkan/tests.cmake). */
static rlx_kv_type test_kv_type(void) {
    const char *k = getenv("RLX_TEST_KV");
    return k && !strcmp(k, "f32") ? RLX_KV_TYPE_F32 : k && !strcmp(k, "f16") ? RLX_KV_TYPE_F16 : RLX_KV_TYPE_DEFAULT;
}

static const char *const ALL_MODELS[] = {"hf", "F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0"};
#define N_ALL_MODELS (sizeof ALL_MODELS / sizeof ALL_MODELS[0])

typedef struct {
    const char *label; /* "hf", "F32", ... */
    char path[4096];   /* the GGUF file or the hf/ directory */
    json_t *ref;       /* owned */
    double tol;
    bool hybrid;       /* recurrent layers: no naive path */
} model_case;

typedef struct {
    double worst_last, worst_all;
    int greedy_compared, greedy_matched;
} model_result;

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static double tolerance_of(const char *label) {
    const char *mixed = getenv("RLX_PARITY_MIXED");
    if (mixed && !strcmp(mixed, "1")) return TOL_QUANT;
    return !strcmp(label, "hf") || !strcmp(label, "F32") || !strcmp(label, "F16") || !strcmp(label, "BF16")
               ? TOL_FLOAT
               : TOL_QUANT;
}

/* Copies a JSON array of integers; returns its length, or -1 when it is not one. */
static int32_t json_ids(const json_t *arr, int32_t **out) {
    if (!json_is_array(arr)) return -1;
    int32_t n = (int32_t)json_array_size(arr);
    int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids) return -1;
    for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    *out = ids;
    return n;
}

/* max |got - ref| over a JSON array of n numbers; +inf when the shapes disagree. */
static double max_diff(const float *got, const json_t *ref, int32_t n) {
    if (!json_is_array(ref) || (int32_t)json_array_size(ref) != n) return INFINITY;
    double worst = 0;
    for (int32_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - json_number_value(json_array_get(ref, (size_t)i)));
        if (isnan(d)) return INFINITY; /* a NaN logit is as wrong as it gets */
        if (d > worst) worst = d;
    }
    return worst;
}

static void check_last_logits(rlx_runner *r, const model_case *mc, model_result *res) {
    json_t *prompts = json_object_get(mc->ref, "prompts");
    int32_t vocab = rlx_runner_vocab_size(r);
    float *logits = malloc((size_t)vocab * sizeof *logits);
    for (size_t p = 0; p < json_array_size(prompts) && logits; p++) {
        json_t *pr = json_array_get(prompts, p);
        int32_t *ids = NULL, n = json_ids(json_object_get(pr, "ids"), &ids);
        if (n < 1) {
            T_CHECK(false, "%s: prompt %zu has no ids", mc->label, p);
            continue;
        }
        if (T_OK(rlx_runner_predict_logits(r, ids, n, logits))) {
            double d = max_diff(logits, json_object_get(pr, "last_logits"), vocab);
            T_CHECK(d <= mc->tol, "%s prompt %zu (%d tokens): last_logits max|Δ| = %.3g > %.0e", mc->label, p, n, d,
                    mc->tol);
            res->worst_last = fmax(res->worst_last, d);
        }
        free(ids);
    }
    free(logits);
}

/* all_logits exist only in ref-hf.json, prompt 1. */
static void check_all_logits(rlx_runner *r, const model_case *mc, const json_t *ref_hf, model_result *res) {
    json_t *pr = json_array_get(json_object_get(ref_hf, "prompts"), 1);
    json_t *rows = json_object_get(pr, "all_logits");
    int32_t *ids = NULL, n = json_ids(json_object_get(pr, "ids"), &ids);
    int32_t vocab = rlx_runner_vocab_size(r);
    if (n < 1 || !json_is_array(rows) || (int32_t)json_array_size(rows) != n) {
        T_CHECK(false, "%s: ref-hf.json prompt 1 lacks ids or all_logits of matching length", mc->label);
        free(ids);
        return;
    }
    float *logits = malloc((size_t)n * (size_t)vocab * sizeof *logits);
    if (logits && T_OK(rlx_runner_predict_all_logits(r, ids, n, logits))) {
        double worst = 0;
        int32_t worst_row = 0;
        for (int32_t i = 0; i < n; i++) {
            double d = max_diff(logits + (size_t)i * (size_t)vocab, json_array_get(rows, (size_t)i), vocab);
            if (d > worst) {
                worst = d;
                worst_row = i;
            }
        }
        T_CHECK(worst <= mc->tol, "%s prompt 1: all_logits max|Δ| = %.3g at position %d > %.0e", mc->label, worst,
                worst_row, mc->tol);
        res->worst_all = fmax(res->worst_all, worst);
    }
    free(logits);
    free(ids);
}

/* The number of leading greedy steps that must match: up to the first near-tie. */
static int32_t steps_to_compare(const json_t *margins, int32_t n, double tol) {
    for (int32_t i = 0; i < n; i++)
        if (json_number_value(json_array_get(margins, (size_t)i)) < 2 * tol) return i;
    return n;
}

static const char *const PATH_NAMES[3] = {"bucketed", "exact", "naive"};

static void set_path(rlx_runner_opts *o, int path) {
    o->no_buckets = path == 1;
    o->no_kv_cache = path == 2;
}

/* Families of recurrent layers (Gated DeltaNet), whose F32 and F16 files have ref-hf.json as their
 * reference. */
static bool hybrid_family(const char *family) {
    return !strcmp(family, "qwen35") || !strcmp(family, "qwen35moe");
}

static void check_greedy(const model_case *mc, int path, model_result *res) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = test_backend();
    o.kv_type = test_kv_type();
    set_path(&o, path);
    rlx_runner *r = NULL;
    if (path == 2 && mc->hybrid) {
        T_ERR(rlx_runner_open(mc->path, &o, &r), RLX_ERR_UNSUPPORTED, "naive path");
        printf("  naive path: refused for a recurrent model\n");
        rlx_runner_close(r);
        return;
    }
    if (!T_OK(rlx_runner_open(mc->path, &o, &r))) return;
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true; /* the reference ran 24 steps whatever the ids */
    json_t *prompts = json_object_get(mc->ref, "prompts");
    for (size_t p = 0; p < json_array_size(prompts); p++) {
        json_t *pr = json_array_get(prompts, p);
        int32_t *ids = NULL, *want = NULL, out[64], n_out = 0;
        int32_t n = json_ids(json_object_get(pr, "ids"), &ids);
        int32_t n_want = json_ids(json_object_get(pr, "greedy"), &want);
        if (n < 1 || n_want < 1 || n_want > 64) {
            T_CHECK(false, "%s prompt %zu: bad ids/greedy in the reference", mc->label, p);
        } else if (T_OK(rlx_runner_generate(r, ids, n, n_want, &greedy, NULL, NULL, out, &n_out))) {
            int32_t k = steps_to_compare(json_object_get(pr, "greedy_margin"), n_want, mc->tol);
            int32_t first_bad = -1;
            for (int32_t i = 0; i < k && first_bad < 0; i++)
                if (i >= n_out || out[i] != want[i]) first_bad = i;
            int32_t got_id = first_bad >= 0 && first_bad < n_out ? out[first_bad] : -1;
            int32_t want_id = first_bad >= 0 ? want[first_bad] : -1;
            T_CHECK(first_bad < 0, "%s %s prompt %zu: greedy step %d is %d, expected %d (%d of %d steps compared)",
                    mc->label, PATH_NAMES[path], p, first_bad, got_id, want_id, k, n_want);
            T_CHECK(n_out == n_want, "%s %s prompt %zu: generated %d ids, expected %d", mc->label, PATH_NAMES[path],
                    p, n_out, n_want);
            res->greedy_compared += k;
            res->greedy_matched += first_bad < 0 ? k : first_bad;
        }
        free(ids);
        free(want);
    }
    rlx_runner_close(r);
}

static void run_model(const model_case *file, const json_t *ref_hf) {
    model_result res = {0};
    rlx_runner *r = NULL;
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = test_backend();
    o.kv_type = test_kv_type();
    if (!T_OK(rlx_runner_open(file->path, &o, &r))) return;
    model_case f16 = *file, *mc = &f16; /* an F16 cache: the f16 class (header) */
    if (rlx_runner_kv_type(r) == RLX_KV_TYPE_F16 && f16.tol < TOL_QUANT) f16.tol = TOL_QUANT;
    T_CHECK(rlx_runner_vocab_size(r) == json_integer_value(json_object_get(mc->ref, "vocab_size")),
            "%s: vocab_size %d, reference says %lld", mc->label, rlx_runner_vocab_size(r),
            (long long)json_integer_value(json_object_get(mc->ref, "vocab_size")));
    printf("%s on %s, K/V %s\n", rlx_runner_family(r), rlx_runner_backend_name(r),
           rlx_runner_kv_type(r) == RLX_KV_TYPE_F16 ? "f16" : "f32");
    check_last_logits(r, mc, &res);
    bool do_all = !strcmp(mc->label, "hf") || !strcmp(mc->label, "F32");
    if (do_all) check_all_logits(r, mc, ref_hf, &res);
    rlx_runner_close(r);
    for (int path = 0; path < 3; path++) check_greedy(mc, path, &res);
    printf("%-7s tol %.0e  last_logits worst |Δ| = %.3g", mc->label, mc->tol, res.worst_last);
    if (do_all) printf("  all_logits(prompt 1) worst |Δ| = %.3g", res.worst_all);
    printf("  greedy %d/%d steps matched over %d paths\n", res.greedy_matched, res.greedy_compared,
           mc->hybrid ? 2 : 3);
}

/* Fills mc for one model label; false when its files are absent. */
static bool find_model(const char *family, const char *label, model_case *mc) {
    char rel[512], ref_rel[512];
    if (!strcmp(label, "hf")) {
        snprintf(rel, sizeof rel, "models/%s/hf", family);
        snprintf(ref_rel, sizeof ref_rel, "models/%s/ref-hf.json", family);
    } else {
        snprintf(rel, sizeof rel, "models/%s/%s-%s.gguf", family, family, label);
        snprintf(ref_rel, sizeof ref_rel, "models/%s/ref-%s.json", family, label);
        if (hybrid_family(family) && (!strcmp(label, "F32") || !strcmp(label, "F16")))
            snprintf(ref_rel, sizeof ref_rel, "models/%s/ref-hf.json", family);
    }
    if (!exists(t_fixture(rel))) return false;
    if (!exists(t_fixture(ref_rel))) {
        T_CHECK(false, "%s exists but its reference %s does not", rel, ref_rel);
        return false;
    }
    mc->label = label;
    snprintf(mc->path, sizeof mc->path, "%s", t_fixture(rel));
    mc->ref = t_load_json(t_fixture(ref_rel));
    mc->tol = tolerance_of(label);
    mc->hybrid = hybrid_family(family);
    return true;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_family_parity FAMILY [hf|TYPE...]\n");
        return 2;
    }
    const char *family = argv[1];
    char ref_hf_rel[512];
    snprintf(ref_hf_rel, sizeof ref_hf_rel, "models/%s/ref-hf.json", family);
    t_require_fixture(ref_hf_rel);
    json_t *ref_hf = t_load_json(t_fixture(ref_hf_rel));

    const char *const *labels = argc > 2 ? (const char *const *)argv + 2 : ALL_MODELS;
    size_t n_labels = argc > 2 ? (size_t)argc - 2 : N_ALL_MODELS;
    int n_models = 0;
    for (size_t i = 0; i < n_labels; i++) {
        model_case mc;
        if (!find_model(family, labels[i], &mc)) {
            T_CHECK(argc == 2, "%s: model '%s' was asked for but is not in the fixtures", family, labels[i]);
            continue;
        }
        printf("%s %s: %s\n", family, mc.label, mc.path);
        fflush(stdout);
        run_model(&mc, ref_hf);
        json_decref(mc.ref);
        n_models++;
    }
    T_CHECK(n_models > 0, "%s: no model found in the fixtures", family);
    json_decref(ref_hf);
    char name[128];
    snprintf(name, sizeof name, "test_family_parity %s (%d models)", family, n_models);
    return t_summary(name);
}
