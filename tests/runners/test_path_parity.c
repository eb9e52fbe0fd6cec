/* Path parity: the generator's fast paths against its reference path, on one model.
 *
 *   test_path_parity MODEL     MODEL: a path relative to the fixtures root, or "stories260K" for
 *                              the model embedded in the repo (models/stories260K.gguf)
 *
 * No external reference: these are properties of the runner (DESIGN.md, "Reference path").
 *   - cached == naive, bucketed == exact: over 32 greedy steps the logits of the speculative
 *     primitives (prefill_get_last_logits, then decode_get_logits) of a bucketed and of an exact
 *     runner agree within 1e-5 with predict_logits of the growing sequence (a no-cache forward), and
 *     the argmax ids are identical; rlx_runner_generate on the three paths gives the same ids;
 *   - prefill cache on/off: identical logits (bitwise) and ids;
 *   - the same seed gives the same sampled ids;
 *   - a stop callback returning false after k tokens stops right there (n_out == k) on every path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/runner.h"
#include "test_util.h"

#define N_STEPS 32
/* Cached vs naive logits: 1e-5 relative to the logits' scale (max(1, max|logit|)). On the CPU
 * every path runs the same kernels in the same order and the difference is exactly 0; on a GPU
 * the naive path's many-row matmuls use the tiled kernel, whose f32 sums run in another order
 * than decode's matvec: a few ulp of the logits, well inside 1e-5 of their scale. */
#define PATH_TOL 1e-5

enum { BUCKETED, EXACT, NAIVE, NO_PREFILL_CACHE, N_RUNNERS };
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

static const char *const RUNNER_NAMES[N_RUNNERS] = {"bucketed", "exact", "naive", "no-prefill-cache"};

/* Two prompts: one token (the smallest prefill), and 7 tokens so that 32 steps cross the decode
 * buckets 8, 16 and 32 (and gemma3's sliding window of 8). Ids below 512, the vocab of every test
 * model; the runner's vocab is checked first. */
static const int32_t PROMPT_A[] = {1};
static const int32_t PROMPT_B[] = {1, 403, 407, 261, 378, 17, 300};

static double max_abs(const float *a, int32_t n) {
    double m = 0;
    for (int32_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i]));
    return m;
}

static double max_abs_diff(const float *a, const float *b, int32_t n) {
    double worst = 0;
    for (int32_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(d)) return INFINITY;
        if (d > worst) worst = d;
    }
    return worst;
}

static int32_t argmax(const float *v, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

typedef struct {
    rlx_runner *r[N_RUNNERS]; /* owned */
    int32_t vocab;
    const char *model;
} runners;

static bool open_all(const char *path, runners *rs) {
    memset(rs, 0, sizeof *rs);
    rs->model = path;
    for (int i = 0; i < N_RUNNERS; i++) {
        rlx_runner_opts o = rlx_runner_opts_default();
        o.backend = test_backend();
        o.kv_type = test_kv_type();
        o.no_buckets = i == EXACT;
        o.no_kv_cache = i == NAIVE;
        o.no_prefill_cache = i == NO_PREFILL_CACHE;
        if (!T_OK(rlx_runner_open(path, &o, &rs->r[i]))) return false;
    }
    rs->vocab = rlx_runner_vocab_size(rs->r[BUCKETED]);
    return true;
}

static void close_all(runners *rs) {
    for (int i = 0; i < N_RUNNERS; i++) rlx_runner_close(rs->r[i]);
}

/* Steps the bucketed and the exact runner with the speculative primitives and compares each step
 * with predict_logits of the whole sequence so far. Writes the greedy ids to ids_out. */
static void check_cached_vs_naive(runners *rs, const int32_t *prompt, int32_t n_prompt, int32_t *ids_out) {
    int32_t v = rs->vocab, n = n_prompt;
    int32_t *seq = malloc((size_t)(n_prompt + N_STEPS) * sizeof *seq);
    float *lb = malloc((size_t)v * sizeof *lb), *le = malloc((size_t)v * sizeof *le),
          *lr = malloc((size_t)v * sizeof *lr);
    double worst_b = 0, worst_e = 0, worst_be = 0;
    int id_mismatch = 0, step = 0;
    if (!seq || !lb || !le || !lr) goto done;
    memcpy(seq, prompt, (size_t)n_prompt * sizeof *seq);
    if (!T_OK(rlx_runner_prefill_get_last_logits(rs->r[BUCKETED], seq, n, lb)) ||
        !T_OK(rlx_runner_prefill_get_last_logits(rs->r[EXACT], seq, n, le)))
        goto done;
    for (step = 0; step < N_STEPS; step++) {
        if (!T_OK(rlx_runner_predict_logits(rs->r[NAIVE], seq, n, lr))) break;
        double db = max_abs_diff(lb, lr, v), de = max_abs_diff(le, lr, v), dbe = max_abs_diff(lb, le, v);
        double tol = PATH_TOL * fmax(1.0, max_abs(lr, v));
        T_CHECK(db <= tol && de <= tol,
                "prompt of %d, step %d (n_past %d): max|Δ| bucketed-naive %.3g, exact-naive %.3g > %.3g", n_prompt,
                step, n, db, de, tol);
        worst_b = fmax(worst_b, db);
        worst_e = fmax(worst_e, de);
        worst_be = fmax(worst_be, dbe);
        int32_t t = argmax(lr, v);
        id_mismatch += argmax(lb, v) != t || argmax(le, v) != t;
        ids_out[step] = t;
        T_CHECK(rlx_runner_n_past(rs->r[BUCKETED]) == n && rlx_runner_n_past(rs->r[EXACT]) == n,
                "step %d: n_past is %d (bucketed) and %d (exact), expected %d", step,
                rlx_runner_n_past(rs->r[BUCKETED]), rlx_runner_n_past(rs->r[EXACT]), n);
        seq[n++] = t;
        if (step + 1 < N_STEPS && (!T_OK(rlx_runner_decode_get_logits(rs->r[BUCKETED], t, lb)) ||
                                   !T_OK(rlx_runner_decode_get_logits(rs->r[EXACT], t, le))))
            break;
    }
    T_CHECK(id_mismatch == 0, "prompt of %d: the greedy id differed from the naive one at %d steps", n_prompt,
            id_mismatch);
done:
    printf("prompt of %d tokens, %d steps: max|Δ| bucketed-naive %.3g, exact-naive %.3g, bucketed-exact %.3g; "
           "%d argmax mismatches\n",
           n_prompt, step, worst_b, worst_e, worst_be, id_mismatch);
    free(seq);
    free(lb);
    free(le);
    free(lr);
}

/* rlx_runner_generate on every path gives the ids of the stepwise comparison. */
static void check_generate_paths(runners *rs, const int32_t *prompt, int32_t n_prompt, const int32_t *want) {
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    for (int i = 0; i < N_RUNNERS; i++) {
        int32_t out[N_STEPS], n_out = 0;
        if (!T_OK(rlx_runner_generate(rs->r[i], prompt, n_prompt, N_STEPS, &greedy, NULL, NULL, out, &n_out)))
            continue;
        int32_t first_bad = -1;
        for (int32_t k = 0; k < N_STEPS && first_bad < 0; k++)
            if (k >= n_out || out[k] != want[k]) first_bad = k;
        T_CHECK(first_bad < 0 && n_out == N_STEPS,
                "generate on the %s path, prompt of %d: %d ids, first difference from the stepwise ids at %d",
                RUNNER_NAMES[i], n_prompt, n_out, first_bad);
    }
    printf("generate, prompt of %d: %d greedy ids compared on %d paths\n", n_prompt, N_STEPS, N_RUNNERS);
}

/* The prefill cache changes only when graphs are compiled, never what they compute. */
static void check_prefill_cache(runners *rs) {
    int32_t v = rs->vocab, n = (int32_t)(sizeof PROMPT_B / sizeof PROMPT_B[0]);
    float *a = malloc((size_t)v * sizeof *a), *b = malloc((size_t)v * sizeof *b);
    double worst = 0;
    for (int32_t len = 1; len <= n && a && b; len++) {
        /* twice each, so the second call of the cached runner is a cache hit */
        for (int rep = 0; rep < 2; rep++) {
            if (!T_OK(rlx_runner_prefill_get_last_logits(rs->r[BUCKETED], PROMPT_B, len, a)) ||
                !T_OK(rlx_runner_prefill_get_last_logits(rs->r[NO_PREFILL_CACHE], PROMPT_B, len, b)))
                break;
            double d = max_abs_diff(a, b, v);
            T_CHECK(d == 0, "prefill of %d tokens: cache on/off differ by %.3g", len, d);
            worst = fmax(worst, d);
        }
    }
    printf("prefill cache on/off: prefills of 1..%d tokens, max|Δ| = %.3g (expected 0)\n", n, worst);
    free(a);
    free(b);
}

static rlx_status sample_run(rlx_runner *r, uint64_t seed, int32_t *out, int32_t *n_out) {
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.temperature = 1.0f;
    o.top_k = 40;
    o.top_p = 0.95f;
    o.repeat_penalty = 1.1f;
    o.seed = seed;
    o.ignore_eos = true;
    return rlx_runner_generate(r, PROMPT_B, (int32_t)(sizeof PROMPT_B / sizeof PROMPT_B[0]), N_STEPS, &o, NULL,
                               NULL, out, n_out);
}

static void check_seeds(runners *rs) {
    int32_t a[N_STEPS], b[N_STEPS], c[N_STEPS], na = 0, nb = 0, nc = 0;
    if (!T_OK(sample_run(rs->r[BUCKETED], 1234, a, &na)) || !T_OK(sample_run(rs->r[BUCKETED], 1234, b, &nb)) ||
        !T_OK(sample_run(rs->r[BUCKETED], 99, c, &nc)))
        return;
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < N_STEPS && i < na && i < nb; i++) same_ab += a[i] == b[i];
    for (int i = 0; i < N_STEPS && i < na && i < nc; i++) same_ac += a[i] == c[i];
    T_CHECK(na == N_STEPS && nb == N_STEPS && same_ab == N_STEPS,
            "seed 1234 twice: %d and %d ids, %d equal; expected %d identical", na, nb, same_ab, N_STEPS);
    /* informational: another seed usually differs, but a peaked model may not */
    printf("sampling (T=1, top_k 40, top_p 0.95, penalty 1.1): seed 1234 twice equal on %d/%d ids; "
           "seed 99 equal to 1234 on %d/%d\n",
           same_ab, N_STEPS, same_ac, N_STEPS);
}

typedef struct {
    int32_t calls, stop_after;
} stop_state;

static bool stop_cb(int32_t token, void *user) {
    (void)token;
    stop_state *st = user;
    return ++st->calls < st->stop_after;
}

static void check_stop_callback(runners *rs) {
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    for (int i = 0; i < N_RUNNERS; i++) {
        for (int32_t k = 1; k <= 3; k += 2) {
            stop_state st = {0, k};
            int32_t out[N_STEPS], n_out = -1;
            if (!T_OK(rlx_runner_generate(rs->r[i], PROMPT_B, 7, N_STEPS, &greedy, stop_cb, &st, out, &n_out)))
                continue;
            T_CHECK(n_out == k && st.calls == k,
                    "%s path: callback returned false at token %d, but n_out = %d and it was called %d times",
                    RUNNER_NAMES[i], k, n_out, st.calls);
        }
    }
    printf("stop callback: false after 1 and 3 tokens honoured on %d paths\n", N_RUNNERS);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_path_parity MODEL (relative to the fixtures, or stories260K)\n");
        return 2;
    }
    const char *path;
    if (!strcmp(argv[1], "stories260K")) {
        path = t_source_path("models/stories260K.gguf");
    } else {
        t_require_fixture(argv[1]);
        path = t_fixture(argv[1]);
    }
    printf("model: %s\n", path);
    runners rs;
    if (open_all(path, &rs)) {
        T_CHECK(rs.vocab >= 512, "vocab %d is smaller than the test prompts assume (512)", rs.vocab);
        printf("family %s, backend %s, vocab %d\n", rlx_runner_family(rs.r[BUCKETED]),
               rlx_runner_backend_name(rs.r[BUCKETED]), rs.vocab);
        int32_t ids[N_STEPS];
        check_cached_vs_naive(&rs, PROMPT_A, 1, ids);
        check_generate_paths(&rs, PROMPT_A, 1, ids);
        check_cached_vs_naive(&rs, PROMPT_B, 7, ids);
        check_generate_paths(&rs, PROMPT_B, 7, ids);
        check_prefill_cache(&rs);
        check_seeds(&rs);
        check_stop_callback(&rs);
    }
    close_all(&rs);
    char name[600];
    snprintf(name, sizeof name, "test_path_parity %s", argv[1]);
    return t_summary(name);
}
