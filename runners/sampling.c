/* Sampling: logits -> one token id.
 *
 * The filters run in the order of llama.cpp's default sampler chain (common/sampling.cpp:
 * penalties -> top-k -> top-p -> min-p -> temperature -> dist), restricted to the ones rlx offers:
 *   1. repetition penalty over the last repeat_last_n ids of the history, once per distinct id
 *      (llama.cpp's penalties sampler: a logit <= 0 is multiplied by the penalty, a positive one
 *      divided, so either way the token becomes less likely), then OpenAI's frequency and presence
 *      penalties over the same window (a token seen c times loses c * frequency + presence);
 *   2. top-k: keep the k largest logits;
 *   3. top-p: softmax of the survivors (at temperature 1, as in llama.cpp), keep the smallest
 *      prefix, in descending order, whose probability sum reaches p;
 *   4. min-p: keep tokens with p >= min_p * p_max, i.e. logit >= max_logit + ln(min_p);
 *   5. temperature: divide the surviving logits by T;
 *   6. draw from their softmax with the sampler's own RNG (xoshiro256**, seeded by splitmix64).
 * temperature <= 0 is greedy: the penalty still applies, then argmax (first index on ties); the
 * other filters cannot change an argmax, so they are skipped.
 *
 * Ties in sorting are broken by the lower id, so a given seed and logits always give the same id. */
#include "runners/sampling.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_REPEAT_LAST_N 64
#define PARTIAL_SORT_MAX_K 64

typedef struct {
    float logit;
    int32_t id;
} candidate;

struct rlx_sampler {
    rlx_sample_opts opts;   /* copy, validated */
    int32_t n_vocab;
    uint64_t rng[4];        /* xoshiro256** state */
    candidate *cand;        /* owned, n_vocab: the working set of one sample call */
    double *prob;           /* owned, n_vocab: softmax weights of the candidates */
    int32_t *count;         /* owned, n_vocab: occurrences in this call's window, cleared after */
};

/* splitmix64 expands the one 64-bit seed into xoshiro's 256-bit state (Vigna's recommendation,
 * https://prng.di.unimi.it/). */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

static rlx_status validate(const rlx_sample_opts *o, int32_t n_vocab) {
    if (n_vocab < 1) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sampler: n_vocab is %d, expected >= 1", n_vocab);
    if (isnan(o->temperature) || isinf(o->temperature))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sampler: temperature %g is not a finite number",
                          (double)o->temperature);
    if (o->top_k < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sampler: top_k %d is negative, expected >= 0 (0 = off)",
                          o->top_k);
    if (!(o->top_p >= 0.0f && o->top_p <= 1.0f))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sampler: top_p %g is outside [0, 1] (0 or 1 = off)",
                          (double)o->top_p);
    if (!(o->min_p >= 0.0f && o->min_p <= 1.0f))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sampler: min_p %g is outside [0, 1] (0 = off)",
                          (double)o->min_p);
    if (!(o->repeat_penalty >= 0.0f) || isinf(o->repeat_penalty))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "sampler: repeat_penalty %g is not a finite number >= 0 (0 or 1 = off)",
                          (double)o->repeat_penalty);
    if (isnan(o->presence_penalty) || isinf(o->presence_penalty) || isnan(o->frequency_penalty) ||
        isinf(o->frequency_penalty))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "sampler: presence_penalty %g / frequency_penalty %g: expected finite numbers (0 = off)",
                          (double)o->presence_penalty, (double)o->frequency_penalty);
    if (o->repeat_last_n < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "sampler: repeat_last_n %d is negative, expected >= 0 (0 = %d)", o->repeat_last_n,
                          DEFAULT_REPEAT_LAST_N);
    return NULL;
}

rlx_status rlx_sampler_create(const rlx_sample_opts *opts, int32_t n_vocab, rlx_sampler **out) {
    if (!opts || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sampler: opts and out must not be NULL");
    RLX_TRY(validate(opts, n_vocab));
    rlx_sampler *s = calloc(1, sizeof *s);
    if (!s) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "sampler: cannot allocate its state");
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->prob = malloc((size_t)n_vocab * sizeof *s->prob);
    s->count = calloc((size_t)n_vocab, sizeof *s->count);
    if (!s->cand || !s->prob || !s->count) {
        rlx_sampler_destroy(s);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "sampler: cannot allocate %d candidates", n_vocab);
    }
    s->opts = *opts;
    s->n_vocab = n_vocab;
    uint64_t x = opts->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    *out = s;
    return NULL;
}

void rlx_sampler_destroy(rlx_sampler *s) {
    if (!s) return;
    free(s->cand);
    free(s->prob);
    free(s->count);
    free(s);
}

/* The repeat, frequency and presence penalties, once per distinct id of the window (llama.cpp's
 * penalties sampler). */
static void apply_penalties(rlx_sampler *s, float *logits, const int32_t *history, int32_t n_history) {
    float penalty = s->opts.repeat_penalty, freq = s->opts.frequency_penalty, pres = s->opts.presence_penalty;
    bool repeat = penalty != 0.0f && penalty != 1.0f;
    if ((!repeat && freq == 0.0f && pres == 0.0f) || !history || n_history <= 0) return;
    int32_t window = s->opts.repeat_last_n ? s->opts.repeat_last_n : DEFAULT_REPEAT_LAST_N;
    int32_t first = n_history > window ? n_history - window : 0;
    for (int32_t i = first; i < n_history; i++)
        if (history[i] >= 0 && history[i] < s->n_vocab) s->count[history[i]]++; /* the runner validated the ids */
    for (int32_t i = first; i < n_history; i++) {
        int32_t id = history[i];
        if (id < 0 || id >= s->n_vocab || s->count[id] == 0) continue;
        int32_t c = s->count[id];
        s->count[id] = 0; /* once per id; also leaves the array cleared for the next call */
        if (repeat) logits[id] = logits[id] <= 0.0f ? logits[id] * penalty : logits[id] / penalty;
        logits[id] -= (float)c * freq + pres;
    }
}

static int32_t argmax(const float *logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Descending logit, then ascending id: a total order, so qsort's instability cannot matter. */
static int cmp_candidate(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Sorts the candidates; with top-k on, only the k best end up (sorted) in front. */
static int32_t sort_top(candidate *c, int32_t n, int32_t k) {
    if (k <= 0 || k >= n || k > PARTIAL_SORT_MAX_K) {
        qsort(c, (size_t)n, sizeof *c, cmp_candidate);
        return k > 0 && k < n ? k : n;
    }
    /* Partial selection: keep a sorted front of k, insert anything that beats its last entry.
     * O(n k) worst case, about O(n) for a small k; larger k take the full sort above. */
    qsort(c, (size_t)k, sizeof *c, cmp_candidate);
    for (int32_t i = k; i < n; i++) {
        if (cmp_candidate(&c[i], &c[k - 1]) >= 0) continue;
        candidate x = c[i];
        int32_t j = k - 1;
        while (j > 0 && cmp_candidate(&x, &c[j - 1]) < 0) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = x;
    }
    return k;
}

/* Softmax weights exp(logit - max) of the n sorted candidates, returned in p (double), and their sum. */
static double softmax_weights(const candidate *c, int32_t n, double scale, double *p) {
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        p[i] = exp(((double)c[i].logit - (double)c[0].logit) * scale);
        sum += p[i];
    }
    return sum;
}

static int32_t apply_top_p(const candidate *c, int32_t n, float top_p, double *p) {
    if (top_p <= 0.0f || top_p >= 1.0f) return n;
    /* needs c sorted in descending order */
    double sum = softmax_weights(c, n, 1.0, p), cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += p[i] / sum;
        if (cum >= (double)top_p) return i + 1;
    }
    return n;
}

/* Keeps the order of the survivors; c[0] must hold the largest logit. */
static int32_t apply_min_p(candidate *c, int32_t n, float min_p) {
    if (min_p <= 0.0f) return n;
    double threshold = (double)c[0].logit + log((double)min_p);
    int32_t keep = 1;
    for (int32_t i = 1; i < n; i++)
        if ((double)c[i].logit >= threshold) c[keep++] = c[i];
    return keep;
}

/* Without top-k or top-p no order is needed: only the maximum goes to the front. */
static void max_to_front(candidate *c, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (c[i].logit > c[best].logit) best = i;
    candidate t = c[0];
    c[0] = c[best];
    c[best] = t;
}

/* The first id whose logit is NaN or +inf, else -1; 0 when every logit is -inf (no token is
 * possible). A -inf among finite logits is an impossible token, as ARGMAX treats it (ir/ops.def).
 * Checked before the penalty, which can itself overflow a huge finite logit. */
static int32_t first_overflow(const float *logits, int32_t n) {
    bool any_finite = false;
    for (int32_t i = 0; i < n; i++) {
        if (isnan(logits[i]) || logits[i] == INFINITY) return i;
        any_finite |= logits[i] != -INFINITY;
    }
    return any_finite ? -1 : 0;
}

static int32_t sample_finite(rlx_sampler *s, float *logits, const int32_t *history, int32_t n_history) {
    apply_penalties(s, logits, history, n_history);
    if (s->opts.temperature <= 0.0f) return argmax(logits, s->n_vocab);

    candidate *c = s->cand;
    for (int32_t i = 0; i < s->n_vocab; i++) c[i] = (candidate){logits[i], i};
    double *p = s->prob;
    bool top_p_on = s->opts.top_p > 0.0f && s->opts.top_p < 1.0f;
    int32_t n = s->n_vocab;
    if (s->opts.top_k > 0 || top_p_on)
        n = sort_top(c, n, s->opts.top_k);
    else
        max_to_front(c, n);
    /* a penalty can push a huge finite logit to +-inf: an infinite maximum wins outright */
    if (isinf(c[0].logit)) return c[0].id;
    n = apply_top_p(c, n, s->opts.top_p, p);
    n = apply_min_p(c, n, s->opts.min_p);

    double sum = softmax_weights(c, n, 1.0 / (double)s->opts.temperature, p);
    double u = rng_uniform(s->rng) * sum, cum = 0.0;
    int32_t pick = n - 1; /* rounding can leave u just above the final cumulative sum */
    for (int32_t i = 0; i < n; i++) {
        cum += p[i];
        if (u < cum) {
            pick = i;
            break;
        }
    }
    return c[pick].id;
}

rlx_status rlx_sampler_sample(rlx_sampler *s, float *logits, const int32_t *history, int32_t n_history,
                              int32_t *out) {
    int32_t bad = first_overflow(logits, s->n_vocab);
    if (bad >= 0)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "sampler: the logit of id %d is %g (of %d logits), expected finite numbers (-inf only "
                          "beside them): the model's output overflowed",
                          (int)bad, (double)logits[bad], (int)s->n_vocab);
    *out = sample_finite(s, logits, history, n_history);
    return NULL;
}
