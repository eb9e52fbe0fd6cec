/* Turning logits into a token id: greedy, temperature, top-k, top-p, min-p, repetition penalty,
 * with a seeded RNG owned by the sampler (same seed and same logits => same ids). */
#ifndef RLX_RUNNERS_SAMPLING_H
#define RLX_RUNNERS_SAMPLING_H

#include <stdint.h>

#include "rlx/runner.h"
#include "rlx/status.h"

typedef struct rlx_sampler rlx_sampler;

/* Validates opts (e.g. top_p in [0,1], no negative top_k) with a clear error. */
rlx_status rlx_sampler_create(const rlx_sample_opts *opts, int32_t n_vocab, rlx_sampler **out);
void rlx_sampler_destroy(rlx_sampler *s); /* NULL is fine */

/* Picks the next id into *out. `logits` (n_vocab floats) may be modified. `history` holds the ids
 * so far (prompt then generated), for the repetition penalty. A NaN or +inf among the logits, or
 * only -inf, is an RLX_ERR_BAD_FILE error naming the first such id: a model whose output
 * overflowed has no distribution to sample, and any id picked from it would be a silent wrong
 * answer. A -inf beside finite logits is an impossible token. */
rlx_status rlx_sampler_sample(rlx_sampler *s, float *logits, const int32_t *history, int32_t n_history,
                              int32_t *out);

#endif
