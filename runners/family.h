/* The per-family interface: each supported family turns a model into IR graphs for prefill and for
 * decode. The generator (runners/generator.c) decides which graph it needs and caches the compiled
 * programs; the families only build graphs and know nothing of backends or caches.
 *
 * Every graph has one INPUT, "ids" (I32 [rows]), and one output, "logits" (F32 [rows or 1, n_vocab]),
 * or, for a decode graph built with RLX_DECODE_ARGMAX, "argmax" (I32 [1]).
 * It runs with the run-time scalars n_past and n_tokens of ir/ops.def. */
#ifndef RLX_RUNNERS_FAMILY_H
#define RLX_RUNNERS_FAMILY_H

#include <stdint.h>

#include "ir/graph.h"
#include "loader/format/model.h"
#include "rlx/status.h"

/* What a prefill graph computes. The cached kinds write K/V of the valid rows into the session KV
 * cache at n_past; the naive kinds use no cache at all (K/V flow straight from the projections into
 * ATTENTION), so they need n_past == 0 and touch no state. */
typedef enum {
    RLX_PREFILL_LAST = 0,   /* cached; logits of row n_tokens - 1 only: [1, V] (LAST_ROW before the head) */
    RLX_PREFILL_ALL,        /* cached; logits of every row: [rows, V] */
    RLX_PREFILL_NAIVE_LAST, /* no cache; [1, V] */
    RLX_PREFILL_NAIVE_ALL,  /* no cache; [rows, V] */
    RLX_PREFILL_KIND_COUNT,
} rlx_prefill_kind;

const char *rlx_prefill_kind_name(rlx_prefill_kind kind); /* "last", "all", "naive-last", "naive-all" */

/* What a decode graph ends in. Greedy decoding needs only the argmax, and taking it on the device
 * spares the read-back of n_vocab floats and the host's pass over them at every step. */
typedef enum {
    RLX_DECODE_LOGITS = 0, /* output "logits": F32 [1, V] */
    RLX_DECODE_ARGMAX,     /* output "argmax": I32 [1], the first index of the largest logit */
    RLX_DECODE_HEAD_COUNT,
} rlx_decode_head;

/* The state of one graph build (runners/graph_util.h). */
typedef struct rlx_fwd rlx_fwd;

/* One decoder layer: takes the residual stream [rows, n_embd], returns the next one. */
typedef rlx_node (*rlx_layer_fn)(rlx_fwd *f, int32_t il, rlx_node x);

/* A family is its layer: the frame around it (embedding, final norm, LM head) and the graph kinds
 * are the same for every decoder-only family, so they are built once (runners/graph_util.c). */
typedef struct rlx_family_ops {
    rlx_family family;
    const char *name; /* as rlx_runner_family() reports it */
    rlx_layer_fn layer;
    /* Floats of one recurrent layer's state per sequence slot (ir/backend.h rlx_state_spec); NULL
     * for a family without recurrent layers. */
    int64_t (*state_floats)(const rlx_model_config *c);
} rlx_family_ops;

/* Prefill over `seq_bucket` static rows. Cached kinds view the first `seq_bucket` rows of the KV
 * cache, so they run at n_past == 0 (the generator's prefill always starts there). */
rlx_status rlx_family_build_prefill(const rlx_family_ops *ops, const rlx_model *m, int32_t batch, int32_t seq_bucket,
                                    rlx_prefill_kind kind, rlx_graph **out);
/* One new row attending over KV_CACHE views of capacity `past_bucket` (>= n_past + 1). */
rlx_status rlx_family_build_decode(const rlx_family_ops *ops, const rlx_model *m, int32_t batch, int32_t past_bucket,
                                   rlx_decode_head head, rlx_graph **out);

/* The graph of the run contract (ir/ops.def): `rows` static rows, each of any sequence at any
 * position, over KV_CACHE views of logical capacity kv_cap (> every row's position). out_rows ==
 * rows: the head runs on every row ("logits" [rows, V] or "argmax" [rows]); out_rows < rows: on the
 * rows named by the second INPUT "out_rows" (I32 [out_rows]; ir/ops.def GATHER_ROWS), so a prefill
 * chunk pays the LM head only for the rows whose logits are wanted. A prefill at any offset, a decode
 * step of B sequences and a mix of both are this one graph. rows_apart: the runs will have each row
 * of its own sequence (ir/graph.h RLX_HINT_ROWS_APART), a planning hint. */
rlx_status rlx_family_build_rows(const rlx_family_ops *ops, const rlx_model *m, int32_t rows, int32_t kv_cap,
                                 int32_t out_rows, rlx_decode_head head, bool rows_apart, rlx_graph **out);

extern const rlx_family_ops rlx_family_qwen3_ops;
extern const rlx_family_ops rlx_family_qwen3moe_ops;
extern const rlx_family_ops rlx_family_llama_ops;
extern const rlx_family_ops rlx_family_gemma3_ops;
/* qwen35 and qwen35moe (runners/qwen35.c): hybrids of recurrent (Gated DeltaNet) and attention
 * layers; the engine keeps their state in slots (runners/engine_state.c). */
extern const rlx_family_ops rlx_family_qwen35_ops;
extern const rlx_family_ops rlx_family_qwen35moe_ops;

/* The ops of a family, or RLX_ERR_UNSUPPORTED naming a family that has no runner yet. */
rlx_status rlx_family_ops_find(rlx_family family, const rlx_family_ops **out);

#endif
