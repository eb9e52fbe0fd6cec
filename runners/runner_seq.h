/* The runner's calls (include/rlx/runner.h) as uses of one engine sequence: a thin layer that maps
 * each call onto append / step / truncate. *seq is the runner's state; a call that fails the
 * sequence (a model overflow, say) replaces it by an empty one, so the runner stays usable. */
#ifndef RLX_RUNNERS_RUNNER_SEQ_H
#define RLX_RUNNERS_RUNNER_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#include "runners/engine_internal.h"

typedef struct rlx_runner_gen {
    const int32_t *ids;
    int32_t n, n_new;
    bool reuse; /* keep the longest common prefix of ids and the state (generate_incremental) */
    rlx_sample_opts sample;
    rlx_token_callback on_token; /* may be NULL */
    void *user;
    int32_t *out_ids, *n_out;    /* may be NULL */
} rlx_runner_gen;

/* Stateless: a sequence of its own, freed after. all_rows: n * vocab floats, else vocab. */
rlx_status rlx_runner_seq_predict(rlx_engine *e, const int32_t *ids, int32_t n, bool all_rows, float *out);
rlx_status rlx_runner_seq_generate(rlx_engine *e, int32_t *seq, const rlx_runner_gen *g);
/* The state becomes ids; the last row's logits. */
rlx_status rlx_runner_seq_prefill(rlx_engine *e, int32_t *seq, const int32_t *ids, int32_t n, float *logits);
/* One token after the computed ones; its logits. */
rlx_status rlx_runner_seq_decode(rlx_engine *e, int32_t *seq, int32_t token, float *logits);
/* n tokens after the computed ones in one pass; the logits of each (n * vocab floats). */
rlx_status rlx_runner_seq_verify(rlx_engine *e, int32_t *seq, const int32_t *ids, int32_t n, float *logits);

#endif
