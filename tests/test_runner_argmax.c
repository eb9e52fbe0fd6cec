/* Greedy generation takes the argmax on the device (the decode graph ends in ARGMAX, runners/
 * generator.c) instead of reading the logits back. Property: the ids it produces equal those of a
 * step-by-step loop over rlx_runner_decode_get_logits with the argmax taken here on the host (first
 * index of the largest logit, the sampler's greedy rule), on every path (bucketed, exact, naive).
 * A repeat penalty must keep the logits path: with it the ids equal the same loop with the penalty
 * applied here. Model: the embedded stories260K, on $RLX_TEST_BACKEND (default cpu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/runner.h"
#include "test_util.h"

#define N_NEW 40

static int32_t host_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* llama.cpp's penalty (divide positive, multiply negative logits of ids in the window) */
static void penalize(float *logits, const int32_t *seen, int32_t n_seen, float penalty) {
    static char mark[1 << 16];
    memset(mark, 0, sizeof mark);
    for (int32_t i = n_seen > 64 ? n_seen - 64 : 0; i < n_seen; i++) mark[seen[i]] = 1;
    for (int32_t id = 0; id < (int32_t)sizeof mark; id++)
        if (mark[id]) logits[id] = logits[id] <= 0.0f ? logits[id] * penalty : logits[id] / penalty;
}

/* The reference: prefill, then one decode per token, argmax (after the penalty) on the host. */
static void reference(rlx_runner *r, const int32_t *prompt, int32_t n, float penalty, int32_t *out) {
    int32_t V = rlx_runner_vocab_size(r), seq[N_NEW + 16];
    float *logits = malloc((size_t)V * sizeof *logits);
    memcpy(seq, prompt, (size_t)n * sizeof *prompt);
    if (!T_OK(rlx_runner_prefill_get_last_logits(r, prompt, n, logits))) goto done;
    for (int32_t i = 0; i < N_NEW; i++) {
        if (penalty != 1.0f) penalize(logits, seq, n + i, penalty);
        out[i] = seq[n + i] = host_argmax(logits, V);
        if (i + 1 < N_NEW && !T_OK(rlx_runner_decode_get_logits(r, out[i], logits))) goto done;
    }
done:
    free(logits);
}

static void check_path(const char *model, const char *path, rlx_runner_opts o, float penalty) {
    rlx_runner *r = NULL;
    if (!T_OK(rlx_runner_open(model, &o, &r))) return;
    T_CHECK(rlx_runner_vocab_size(r) <= 1 << 16, "vocabulary of %d exceeds the test's table", rlx_runner_vocab_size(r));
    /* "Once upon a time" with BOS (tests/data/stories260K-ref-hf.json, prompt 0) */
    int32_t prompt[] = {1, 403, 407, 261, 378};
    int32_t got[N_NEW], want[N_NEW], n_got = 0;
    rlx_sample_opts so = rlx_sample_opts_greedy();
    so.ignore_eos = true;
    so.repeat_penalty = penalty;
    T_OK(rlx_runner_generate(r, prompt, 5, N_NEW, &so, NULL, NULL, got, &n_got));
    reference(r, prompt, 5, penalty, want);
    int32_t first_diff = -1;
    for (int32_t i = 0; i < N_NEW && first_diff < 0; i++)
        if (i >= n_got || got[i] != want[i]) first_diff = i;
    printf("%-9s penalty %.2f on %s: %d ids, %s\n", path, (double)penalty, rlx_runner_backend_name(r), (int)n_got,
           first_diff < 0 ? "equal to the host-argmax loop" : "DIFFERENT");
    T_CHECK(n_got == N_NEW && first_diff < 0, "%s penalty %.2f: generate and the host-argmax loop differ at id %d",
            path, (double)penalty, (int)first_diff);
    rlx_runner_close(r);
}

int main(void) {
    const char *model = t_source_path("models/stories260K.gguf");
    const char *backend = getenv("RLX_TEST_BACKEND");
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = backend && *backend ? backend : "cpu";
    check_path(model, "bucketed", o, 1.0f);
    check_path(model, "bucketed", o, 1.3f);
    rlx_runner_opts exact = o;
    exact.no_buckets = true;
    check_path(model, "exact", exact, 1.0f);
    rlx_runner_opts naive = o;
    naive.no_kv_cache = naive.no_buckets = naive.no_prefill_cache = true;
    check_path(model, "naive", naive, 1.0f);
    return t_summary("test_runner_argmax");
}
