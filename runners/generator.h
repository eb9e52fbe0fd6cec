/* The generator: one model's backend session (weights + KV cache), its compiled programs, and the
 * generation state (the tokens whose K/V the cache holds).
 *
 * Paths (rlx_generator_opts):
 *   - bucketed (default): prefill graphs over a power-of-two sequence bucket S >= n (capped at
 *     n_ctx), decode graphs over a power-of-two past bucket P >= n_past + 1 (capped at n_ctx). The
 *     ladder bounds the decode programs, kept one per bucket, at O(log n_ctx).
 *   - exact (no_buckets): S = n and P = n_past + 1. Decode programs are then compiled for one step
 *     and dropped, since each past length is used once.
 *   - naive (no_kv_cache): the session has no KV cache; every step runs a no-cache prefill graph over
 *     the whole history.
 * Prefill programs are kept in an LRU keyed by (kind, rows) of RLX_PREFILL_CACHE_SIZE entries, or,
 * when no_prefill_cache is set, compiled per call for the exact length (nothing would reuse a
 * bucket).
 *
 * Callers validate token ids; the generator checks lengths against n_ctx. */
#ifndef RLX_RUNNERS_GENERATOR_H
#define RLX_RUNNERS_GENERATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/backend.h"
#include "loader/format/model.h"
#include "runners/family.h"
#include "rlx/status.h"

#define RLX_PREFILL_CACHE_SIZE 8

typedef struct rlx_generator_opts {
    int32_t n_ctx; /* >= 1: KV capacity and the longest sequence */
    bool no_kv_cache;
    bool no_buckets;
    bool no_prefill_cache;
} rlx_generator_opts;

typedef struct rlx_generator rlx_generator;

/* model, family and backend are borrowed and must outlive the generator (the session borrows the
 * model's weights). */
rlx_status rlx_generator_create(const rlx_model *model, const rlx_family_ops *family, rlx_backend *backend,
                                const rlx_generator_opts *opts, rlx_generator **out);
void rlx_generator_destroy(rlx_generator *g); /* NULL is fine */

/* Resets the state to ids[0..n) (1 <= n <= n_ctx) and writes the last position's logits
 * (n_vocab floats). On error the state is empty. */
rlx_status rlx_generator_prefill(rlx_generator *g, const int32_t *ids, int32_t n, float *logits);
/* Appends one token (n_past < n_ctx, after a prefill) and writes its logits. On error the state is
 * unchanged (a K/V row written past n_past is never read). */
rlx_status rlx_generator_decode(rlx_generator *g, int32_t token, float *logits);
/* As rlx_generator_decode, but writes only the argmax of the logits (the first index of the
 * largest): greedy decoding without reading the logits back. */
rlx_status rlx_generator_decode_argmax(rlx_generator *g, int32_t token, int32_t *next);

/* Greedy decoding ahead: k steps (1 <= k, n_past + k <= n_ctx), the first appending token, each
 * later one the previous step's argmax; next[i] receives step i's argmax. Where the backend chains
 * runs on the device (run_chain), the steps within one past bucket cost one round trip to the
 * host instead of one each. On error the state holds the steps finished before it. */
rlx_status rlx_generator_decode_argmax_ahead(rlx_generator *g, int32_t token, int32_t k, int32_t *next);

/* Stateless: logits of ids[0..n) from a no-cache prefill graph, which touches neither the KV cache
 * nor the generation state. all_rows: n * n_vocab floats, row-major; else the last row's n_vocab. */
rlx_status rlx_generator_logits(rlx_generator *g, const int32_t *ids, int32_t n, bool all_rows, float *out);

/* Forgets every token past the first n (n <= n_past): their K/V rows are simply never read again,
 * and the next decode overwrites them. Lets a conversation keep its common prefix. */
void rlx_generator_truncate(rlx_generator *g, int32_t n);

int32_t rlx_generator_n_past(const rlx_generator *g);
int32_t rlx_generator_n_ctx(const rlx_generator *g);
/* The tokens of the state, n_past of them; borrowed, valid until the next prefill/decode. */
const int32_t *rlx_generator_history(const rlx_generator *g);

/* Counters for tests and benchmarks: programs compiled so far, and those held now. */
typedef struct rlx_generator_stats {
    int64_t n_compiles;
    int32_t n_decode_programs;
    int32_t n_prefill_programs;
} rlx_generator_stats;
rlx_generator_stats rlx_generator_get_stats(const rlx_generator *g);

#endif
