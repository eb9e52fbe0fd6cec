/* Sampler properties and hand-computed expectations (runners/sampling.c).
 * Truth here is arithmetic done by hand in the comments (softmax of ln-probabilities, llama.cpp's
 * penalty rule), and properties: top_k=1 and a tiny top_p reduce to argmax, a seed fixes the ids.
 * Empirical frequencies use 20000 draws: a binomial standard error of at most 0.0036, so the
 * tolerance of 0.02 is more than 5 sigma. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runners/sampling.h"
#include "test_util.h"

#define N_DRAWS 20000
#define FREQ_TOL 0.02

static rlx_sampler *make(const rlx_sample_opts *o, int32_t n_vocab) {
    rlx_sampler *s = NULL;
    if (!T_OK(rlx_sampler_create(o, n_vocab, &s))) return NULL;
    return s;
}

/* The sampler's pick, or -1 (a failed check) when it refuses the logits. */
static int32_t sample(rlx_sampler *s, float *logits, const int32_t *history, int32_t n_history) {
    int32_t id = -1;
    return T_OK(rlx_sampler_sample(s, logits, history, n_history, &id)) ? id : -1;
}

/* Draws N_DRAWS ids from fixed logits (restored before every draw) and counts them. */
static void histogram(const rlx_sample_opts *o, const float *logits, int32_t n, double *freq) {
    rlx_sampler *s = make(o, n);
    float work[16];
    for (int32_t i = 0; i < n; i++) freq[i] = 0;
    if (!s) return;
    for (int d = 0; d < N_DRAWS; d++) {
        memcpy(work, logits, (size_t)n * sizeof *work);
        int32_t id = sample(s, work, NULL, 0);
        T_CHECK(id >= 0 && id < n, "sampled id %d outside [0, %d)", id, n);
        if (id >= 0 && id < n) freq[id] += 1.0 / N_DRAWS;
    }
    rlx_sampler_destroy(s);
}

static void check_freq(const char *what, const double *freq, const double *expect, int32_t n) {
    double worst = 0;
    for (int32_t i = 0; i < n; i++) {
        double d = fabs(freq[i] - expect[i]);
        if (d > worst) worst = d;
        /* an id with expected probability 0 must never appear, not merely be rare */
        if (expect[i] == 0)
            T_CHECK(freq[i] == 0, "%s: id %d was filtered out but drawn (freq %.4f)", what, i, freq[i]);
        else
            T_CHECK(d <= FREQ_TOL, "%s: id %d freq %.4f, expected %.4f +- %.2f", what, i, freq[i], expect[i],
                    FREQ_TOL);
    }
    printf("%-44s worst |freq - expected| = %.4f over %d draws\n", what, worst, N_DRAWS);
}

static void test_invalid_opts(void) {
    rlx_sampler *s = NULL;
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.top_k = -1;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "top_k -1");
    o = rlx_sample_opts_greedy();
    o.top_p = 1.5f;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "top_p 1.5");
    o.top_p = NAN;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "top_p");
    o = rlx_sample_opts_greedy();
    o.min_p = -0.1f;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "min_p");
    o = rlx_sample_opts_greedy();
    o.repeat_penalty = -1.0f;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "repeat_penalty");
    o = rlx_sample_opts_greedy();
    o.repeat_last_n = -1;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "repeat_last_n");
    o = rlx_sample_opts_greedy();
    o.temperature = INFINITY;
    T_ERR(rlx_sampler_create(&o, 10, &s), RLX_ERR_INVALID_ARGUMENT, "temperature");
    o = rlx_sample_opts_greedy();
    T_ERR(rlx_sampler_create(&o, 0, &s), RLX_ERR_INVALID_ARGUMENT, "n_vocab");
    T_CHECK(s == NULL, "a failed create must leave *out untouched");
}

static void test_greedy_ties(void) {
    rlx_sample_opts o = rlx_sample_opts_greedy();
    rlx_sampler *s = make(&o, 5);
    if (!s) return;
    float l[5] = {1, 3, 3, 2, -7};
    int32_t id = sample(s, l, NULL, 0);
    T_CHECK(id == 1, "greedy over {1,3,3,2,-7} picked %d, expected 1 (first of the tied maxima)", id);
    o.temperature = -1.0f; /* any temperature <= 0 is greedy */
    rlx_sampler_destroy(s);
    s = make(&o, 5);
    if (!s) return;
    float l2[5] = {0, 0, 0, 0, 0.5f};
    id = sample(s, l2, NULL, 0);
    T_CHECK(id == 4, "greedy at temperature -1 picked %d, expected 4", id);
    rlx_sampler_destroy(s);
    printf("greedy: argmax with first index on ties\n");
}

/* A small LCG so the random logits do not depend on the sampler's own RNG. */
static float lcg_logit(uint32_t *x) {
    *x = *x * 1664525u + 1013904223u;
    return (float)(*x >> 8) / (float)(1u << 24) * 8.0f - 4.0f;
}

static int32_t ref_argmax(const float *l, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (l[i] > l[b]) b = i;
    return b;
}

/* top_k = 1 and top_p tiny both leave only the argmax, whatever the temperature. */
static void test_reduces_to_greedy(void) {
    enum { V = 1000, TRIALS = 200 };
    static float l[V], work[V];
    rlx_sample_opts ok = rlx_sample_opts_greedy(), op = rlx_sample_opts_greedy();
    ok.temperature = op.temperature = 1.5f;
    ok.top_k = 1;
    op.top_p = 1e-6f;
    ok.seed = 7;
    op.seed = 8;
    rlx_sampler *sk = make(&ok, V), *sp = make(&op, V);
    if (!sk || !sp) return;
    uint32_t x = 12345;
    int bad_k = 0, bad_p = 0;
    for (int t = 0; t < TRIALS; t++) {
        for (int i = 0; i < V; i++) l[i] = lcg_logit(&x);
        int32_t want = ref_argmax(l, V);
        memcpy(work, l, sizeof l);
        bad_k += sample(sk, work, NULL, 0) != want;
        memcpy(work, l, sizeof l);
        bad_p += sample(sp, work, NULL, 0) != want;
    }
    T_CHECK(bad_k == 0, "top_k=1 differed from argmax in %d of %d trials", bad_k, TRIALS);
    T_CHECK(bad_p == 0, "top_p=1e-6 differed from argmax in %d of %d trials", bad_p, TRIALS);
    printf("top_k=1 and top_p=1e-6 vs argmax: %d and %d mismatches in %d trials of %d logits\n", bad_k, bad_p,
           TRIALS, V);
    rlx_sampler_destroy(sk);
    rlx_sampler_destroy(sp);
}

/* Logits [0, ln 3] at T=1: softmax = [1/4, 3/4]. At T=2: [1, sqrt 3] / (1 + sqrt 3). */
static void test_temperature_frequencies(void) {
    float l[2] = {0.0f, logf(3.0f)};
    double f[2];
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.temperature = 1.0f;
    o.seed = 1;
    histogram(&o, l, 2, f);
    check_freq("T=1 over [0, ln 3]", f, (double[]){0.25, 0.75}, 2);
    o.temperature = 2.0f;
    histogram(&o, l, 2, f);
    double p1 = sqrt(3.0) / (1.0 + sqrt(3.0));
    check_freq("T=2 over [0, ln 3]", f, (double[]){1 - p1, p1}, 2);
}

/* Probabilities [0.5, 0.25, 0.15, 0.1] given as their logarithms. */
static void probs_logits(float *l) {
    l[0] = logf(0.5f);
    l[1] = logf(0.25f);
    l[2] = logf(0.15f);
    l[3] = logf(0.1f);
}

static void test_filters(void) {
    float l[4];
    double f[4];
    probs_logits(l);
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.temperature = 1.0f;
    o.seed = 2;

    o.top_k = 2; /* keeps {0, 1}: 0.5/0.75, 0.25/0.75 */
    histogram(&o, l, 4, f);
    check_freq("top_k=2 over [.5 .25 .15 .1]", f, (double[]){2.0 / 3, 1.0 / 3, 0, 0}, 4);
    o.top_k = 0;

    o.top_p = 0.7f; /* cumulative 0.5, 0.75 >= 0.7: keeps {0, 1} */
    histogram(&o, l, 4, f);
    check_freq("top_p=0.7 over [.5 .25 .15 .1]", f, (double[]){2.0 / 3, 1.0 / 3, 0, 0}, 4);
    o.top_p = 0.8f; /* cumulative 0.5, 0.75, 0.9 >= 0.8: keeps {0, 1, 2} */
    histogram(&o, l, 4, f);
    check_freq("top_p=0.8 over [.5 .25 .15 .1]", f, (double[]){0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0}, 4);
    o.top_p = 0;

    o.min_p = 0.4f; /* p >= 0.4 * 0.5 = 0.2: keeps {0, 1} */
    histogram(&o, l, 4, f);
    check_freq("min_p=0.4 over [.5 .25 .15 .1]", f, (double[]){2.0 / 3, 1.0 / 3, 0, 0}, 4);
    o.min_p = 0.25f; /* p >= 0.125: keeps {0, 1, 2} */
    histogram(&o, l, 4, f);
    check_freq("min_p=0.25 over [.5 .25 .15 .1]", f, (double[]){0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0}, 4);
}

/* The chain order is llama.cpp's: top-k -> top-p -> min-p -> temperature. Each case below gives
 * a different answer under another order. */
static void test_filter_order(void) {
    float l[4] = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f)};
    double f[4];
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.temperature = 1.0f;
    o.seed = 3;
    /* top-k first leaves [4/7, 3/7]; top-p 0.5 then keeps only id 0. (top-p first on the full
     * distribution would keep {0, 1}: 0.4 < 0.5 <= 0.7.) */
    o.top_k = 2;
    o.top_p = 0.5f;
    histogram(&o, l, 4, f);
    check_freq("top_k=2 then top_p=0.5", f, (double[]){1, 0, 0, 0}, 4);

    /* min-p at temperature 1: 0.3 >= 0.7 * 0.4 keeps id 1; temperature 0.5 then squares the
     * weights: 0.16 / (0.16 + 0.09) = 0.64. (Temperature first would give id 1 a ratio of
     * 0.09/0.16 = 0.5625 < 0.7 and drop it.) */
    o.top_k = 0;
    o.top_p = 0;
    o.min_p = 0.7f;
    o.temperature = 0.5f;
    histogram(&o, l, 4, f);
    check_freq("min_p=0.7 then T=0.5", f, (double[]){0.64, 0.36, 0, 0}, 4);
}

/* llama.cpp: a logit <= 0 is multiplied by the penalty, a positive one divided, once per distinct
 * id among the last repeat_last_n ids of the history. */
static void test_repeat_penalty(void) {
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.repeat_penalty = 2.0f;
    rlx_sampler *s = make(&o, 5);
    if (!s) return;
    float l[5] = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
    const float want[5] = {1.0f, -2.0f, 0.5f, 3.0f, -4.0f};
    const int32_t hist[4] = {0, 1, 1, 4}; /* id 1 twice: penalised once */
    int32_t id = sample(s, l, hist, 4);
    double worst = 0;
    for (int i = 0; i < 5; i++) worst = fmax(worst, fabs(l[i] - want[i]));
    T_CHECK(worst == 0, "penalty 2 over history {0,1,1,4}: worst |logit - expected| = %g", worst);
    T_CHECK(id == 3, "greedy after penalty picked %d, expected 3", id);
    printf("repeat_penalty=2 on [2 -1 .5 3 -2] with history {0 1 1 4}: worst |delta| = %g\n", worst);
    rlx_sampler_destroy(s);

    /* A window of 1 sees only the last id. */
    o.repeat_last_n = 1;
    s = make(&o, 3);
    if (!s) return;
    float l2[3] = {4.0f, 4.0f, 1.0f};
    id = sample(s, l2, (const int32_t[]){1, 0}, 2);
    T_CHECK(l2[0] == 2.0f && l2[1] == 4.0f, "repeat_last_n=1: logits [%g %g], expected [2 4]", l2[0], l2[1]);
    T_CHECK(id == 1, "repeat_last_n=1 penalised the wrong id: picked %d, expected 1", id);
    rlx_sampler_destroy(s);

    /* Penalty 1 and 0 are off. */
    o.repeat_penalty = 1.0f;
    o.repeat_last_n = 0;
    s = make(&o, 2);
    if (!s) return;
    float l3[2] = {3.0f, 2.0f};
    T_CHECK(sample(s, l3, (const int32_t[]){0}, 1) == 0 && l3[0] == 3.0f,
            "repeat_penalty=1 changed the logits");
    rlx_sampler_destroy(s);
}

static void draw_sequence(uint64_t seed, int32_t *out, int n) {
    enum { V = 50 };
    float l[V];
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.temperature = 1.0f;
    o.top_k = 40;
    o.top_p = 0.95f;
    o.seed = seed;
    rlx_sampler *s = make(&o, V);
    if (!s) return;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < V; j++) l[j] = (float)((j * 37 + i * 11) % 17) * 0.05f; /* a flat-ish landscape */
        out[i] = sample(s, l, out, i);
    }
    rlx_sampler_destroy(s);
}

static void test_seeds(void) {
    enum { N = 200 };
    int32_t a[N] = {0}, b[N] = {0}, c[N] = {0};
    draw_sequence(42, a, N);
    draw_sequence(42, b, N);
    draw_sequence(43, c, N);
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < N; i++) {
        same_ab += a[i] == b[i];
        same_ac += a[i] == c[i];
    }
    T_CHECK(same_ab == N, "seed 42 twice: only %d of %d ids equal", same_ab, N);
    T_CHECK(same_ac < N / 2, "seeds 42 and 43 agree on %d of %d ids: the seed barely matters", same_ac, N);
    printf("seeds: 42 vs 42 equal on %d/%d ids, 42 vs 43 on %d/%d\n", same_ab, N, same_ac, N);
}

/* top_k above and below the partial-selection limit draws only from the k largest logits, and
 * reaches each of them. */
static void test_top_k_large_vocab(int32_t k) {
    enum { V = 3000 };
    static float l[V], work[V];
    uint32_t x = 99;
    for (int i = 0; i < V; i++) l[i] = lcg_logit(&x) * 0.1f; /* flat: every one of the top k is likely */
    int32_t n_above = 0;
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.temperature = 1.0f;
    o.top_k = k;
    o.seed = 5;
    rlx_sampler *s = make(&o, V);
    if (!s) return;
    static int hits[V];
    memset(hits, 0, sizeof hits);
    int outside = 0;
    for (int d = 0; d < 2000; d++) {
        memcpy(work, l, sizeof l);
        int32_t id = sample(s, work, NULL, 0);
        /* id is in the top k iff fewer than k logits beat it (the LCG makes ties unlikely) */
        n_above = 0;
        for (int i = 0; i < V; i++) n_above += l[i] > l[id];
        outside += n_above >= k;
        hits[id]++;
    }
    int distinct = 0;
    for (int i = 0; i < V; i++) distinct += hits[i] > 0;
    T_CHECK(outside == 0, "top_k=%d: %d draws fell outside the top %d", k, outside, k);
    T_CHECK(distinct == k, "top_k=%d: %d distinct ids drawn, expected all %d", k, distinct, k);
    printf("top_k=%d over %d logits: %d draws outside the top k, %d distinct ids\n", k, V, outside, distinct);
    rlx_sampler_destroy(s);
}

/* Logits that overflowed have no distribution: NaN or +inf anywhere, or only -inf, is an error
 * naming the first bad id, greedy or not, before the penalty could touch them. A -inf beside
 * finite logits is an impossible token and never drawn. */
static void test_non_finite(void) {
    static const struct {
        float l[4];
        int32_t bad;
    } cases[] = {
        {{1.0f, NAN, 2.0f, 0.0f}, 1},
        {{1.0f, 2.0f, 0.0f, INFINITY}, 3},
        {{NAN, NAN, NAN, NAN}, 0},
        {{-INFINITY, -INFINITY, -INFINITY, -INFINITY}, 0},
    };
    const float temps[] = {0.0f, 0.8f};
    for (size_t t = 0; t < 2; t++) {
        rlx_sample_opts o = rlx_sample_opts_greedy();
        o.temperature = temps[t];
        o.repeat_penalty = 1.3f;
        rlx_sampler *s = make(&o, 4);
        if (!s) return;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            float l[4];
            memcpy(l, cases[i].l, sizeof l);
            int32_t id = 77;
            char needle[48];
            snprintf(needle, sizeof needle, "the logit of id %d is", (int)cases[i].bad);
            T_ERR(rlx_sampler_sample(s, l, (const int32_t[]){1}, 1, &id), RLX_ERR_BAD_FILE, needle);
            T_CHECK(id == 77, "temperature %g case %zu: *out untouched on error (%d)", (double)temps[t], i, (int)id);
        }
        int32_t hits = 0;
        for (int d = 0; d < 200; d++) {
            float l[4] = {1.0f, -INFINITY, 0.5f, -INFINITY};
            int32_t id = sample(s, l, NULL, 0);
            hits += id == 1 || id == 3;
        }
        T_CHECK(hits == 0, "temperature %g: a -inf token was drawn %d times", (double)temps[t], (int)hits);
        rlx_sampler_destroy(s);
    }
    printf("  NaN / +inf / all -inf logits refused at temperature 0 and 0.8; -inf beside finite never drawn\n");
}

/* OpenAI's rule as llama.cpp applies it after the repeat penalty: logit -= c * frequency + presence
 * for an id seen c > 0 times in the window. By hand: history {0 1 1 1}, frequency 0.5, presence 1:
 * id 0 (c=1) 2 - 1.5 = 0.5; id 1 (c=3) 1 - 2.5 = -1.5; id 2 (unseen) stays 1.8. */
static void test_frequency_presence(void) {
    rlx_sample_opts o = rlx_sample_opts_greedy();
    o.frequency_penalty = 0.5f;
    o.presence_penalty = 1.0f;
    rlx_sampler *s = make(&o, 3);
    if (!s) return;
    float l[3] = {2.0f, 1.0f, 1.8f};
    const float want[3] = {0.5f, -1.5f, 1.8f};
    int32_t id = sample(s, l, (const int32_t[]){0, 1, 1, 1}, 4);
    double worst = 0;
    for (int i = 0; i < 3; i++) worst = fmax(worst, fabs(l[i] - want[i]));
    T_CHECK(worst == 0, "frequency 0.5 presence 1 over {0,1,1,1}: worst |logit - expected| = %g", worst);
    T_CHECK(id == 2, "greedy after frequency/presence picked %d, expected 2", id);
    /* a second call counts afresh: the counts were cleared */
    float l2[3] = {2.0f, 1.0f, 1.8f};
    sample(s, l2, (const int32_t[]){2}, 1);
    T_CHECK(l2[0] == 2.0f && l2[1] == 1.0f && fabsf(l2[2] - 0.3f) < 1e-6f, "second call: logits [%g %g %g], expected [2 1 0.3]",
            l2[0], l2[1], l2[2]);
    rlx_sampler_destroy(s);
    /* both with the repeat penalty: divide first (2 / 2 = 1), then subtract (1 - 0.5 - 1 = -0.5) */
    o.repeat_penalty = 2.0f;
    s = make(&o, 2);
    if (!s) return;
    float l3[2] = {2.0f, 0.0f};
    sample(s, l3, (const int32_t[]){0}, 1);
    T_CHECK(l3[0] == -0.5f, "repeat 2 then frequency/presence on logit 2: %g, expected -0.5", l3[0]);
    rlx_sampler_destroy(s);
    o.presence_penalty = NAN;
    T_ERR(rlx_sampler_create(&o, 3, &s), RLX_ERR_INVALID_ARGUMENT, "presence_penalty");
    printf("frequency 0.5 / presence 1 on [2 1 1.8] with history {0 1 1 1}: worst |delta| = %g\n", worst);
}

int main(void) {
    test_invalid_opts();
    test_greedy_ties();
    test_reduces_to_greedy();
    test_temperature_frequencies();
    test_filters();
    test_filter_order();
    test_repeat_penalty();
    test_frequency_presence();
    test_seeds();
    test_top_k_large_vocab(5);
    test_top_k_large_vocab(100);
    test_non_finite();
    return t_summary("test_sampling");
}
