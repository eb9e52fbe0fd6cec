/* The embedded default model (models/stories260K.gguf) as the resource-limit tests use it: the
 * size of its KV cache and a short run that proves a context still fits. */
#ifndef RLX_TEST_STORIES_H
#define RLX_TEST_STORIES_H

#include <stdint.h>

#include "rlx/runner.h"

/* Bytes of its K and V at n_ctx in elements of elem bytes (4: F32, 2: F16):
 * 2 * n_layer * n_ctx * n_head_kv * head_dim * elem, with the shape of the fixtures README (5
 * layers, dim 64, 8 heads and 4 KV heads, so head_dim 8). */
uint64_t t_stories_kv_bytes(uint64_t n_ctx, uint64_t elem);
/* Rows of the KV pool a runner of context n_ctx takes when one context is all that fits: the
 * engine's rule (ARCHITECTURE.md), pages of 16 rows for the context plus one page to copy into. */
uint64_t t_stories_pool_rows(uint64_t n_ctx);

/* Opens model with o and generates 2 tokens greedily (EOS ignored) from token 1; checks that both
 * came. */
void t_stories_generates(const char *model, const rlx_runner_opts *o);

#endif
