/* Greedy generation takes the argmax on the device (the decode graph ends in ARGMAX, runners/
 * generator.c) instead of reading the logits back. Property: the ids it produces equal those of a
 * step-by-step loop over rlx_runner_decode_get_logits with the argmax taken here on the host (first
 * index of the largest logit, the sampler's greedy rule), on every path (bucketed, exact, naive).
 * A repeat penalty must keep the logits path: with it the ids equal the same loop with the penalty
 * applied here. Decoding ahead (a chain of greedy steps per round trip on backends that chain runs):
 * every decode_ahead gives those ids, and a callback's stop in the middle of a chain leaves the
 * state as the step-by-step loop leaves it: as many tokens held, and the same logits after the
 * next token. Model: the embedded stories260K, on $RLX_TEST_BACKEND (default cpu). */
#include <math.h>
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

static bool stop_at(int32_t token, void *user) {
    (void)token;
    int32_t *left = user;
    return --*left > 0;
}

/* Generates until the callback stops after `stop` tokens, then decodes the last one and returns its
 * logits; *n_past receives the state's length before that decode. */
static void stopped_state(const char *model, rlx_runner_opts o, int32_t stop, int32_t *n_past, float *logits) {
    rlx_runner *r = NULL;
    if (!T_OK(rlx_runner_open(model, &o, &r))) return;
    int32_t prompt[] = {1, 403, 407, 261, 378}, got[N_NEW], n_got = 0, left = stop;
    rlx_sample_opts so = rlx_sample_opts_greedy();
    so.ignore_eos = true;
    T_OK(rlx_runner_generate(r, prompt, 5, N_NEW, &so, stop_at, &left, got, &n_got));
    T_CHECK(n_got == stop, "decode_ahead %d: the callback stopped after %d ids, generate returned %d",
            (int)o.decode_ahead, (int)stop, (int)n_got);
    *n_past = rlx_runner_n_past(r);
    T_OK(rlx_runner_decode_get_logits(r, got[stop - 1], logits));
    rlx_runner_close(r);
}

/* A stop inside a chain (decode_ahead 8 chains 1, 2, 4, 8, ... steps: token 13 is the 6th of the
 * chain of 8 that starts after token 8) against one step at a time. */
static void check_stop(const char *model, rlx_runner_opts o) {
    rlx_runner *probe = NULL;
    if (!T_OK(rlx_runner_open(model, &o, &probe))) return;
    int32_t V = rlx_runner_vocab_size(probe);
    rlx_runner_close(probe);
    float *want = malloc((size_t)V * sizeof *want), *got = malloc((size_t)V * sizeof *got);
    int32_t n_want = -1, n_got = -2;
    o.decode_ahead = 1;
    stopped_state(model, o, 13, &n_want, want);
    o.decode_ahead = 8;
    stopped_state(model, o, 13, &n_got, got);
    double worst = 0.0;
    for (int32_t i = 0; i < V; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (d > worst) worst = d;
    }
    printf("stop after 13 ids: %d tokens held (one at a time: %d), logits after the next token max |d| %.3g\n",
           (int)n_got, (int)n_want, worst);
    T_CHECK(n_got == n_want && n_want == 5 + 12, "tokens held after the stop: %d ahead, %d one at a time (want 17)",
            (int)n_got, (int)n_want);
    T_CHECK(worst <= 1e-5, "logits after a stop inside a chain differ from one step at a time by %.3g", worst);
    free(want);
    free(got);
}

int main(void) {
    const char *model = t_source_path("models/stories260K.gguf");
    const char *backend = getenv("RLX_TEST_BACKEND");
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = backend && *backend ? backend : "cpu";
    check_path(model, "bucketed", o, 1.0f);
    check_path(model, "bucketed", o, 1.3f);
    const int32_t aheads[] = {1, 3, RLX_DECODE_AHEAD_DEFAULT, 64};
    for (size_t i = 0; i < sizeof aheads / sizeof *aheads; i++) {
        rlx_runner_opts a = o;
        a.decode_ahead = aheads[i];
        char name[32];
        snprintf(name, sizeof name, "ahead %d", (int)aheads[i]);
        check_path(model, name, a, 1.0f);
    }
    check_stop(model, o);
    rlx_runner_opts exact = o;
    exact.no_buckets = true;
    check_path(model, "exact", exact, 1.0f);
    rlx_runner_opts naive = o;
    naive.no_kv_cache = naive.no_buckets = naive.no_prefill_cache = true;
    check_path(model, "naive", naive, 1.0f);
    return t_summary("test_runner_argmax");
}
