/* Facts about a graph's values that every backend plans with, derived once here so that the
 * backends cannot disagree: which values carry the token axis, and how an op reads each input. */
#ifndef RLX_IR_ANALYSIS_H
#define RLX_IR_ANALYSIS_H

#include <stdbool.h>

#include "ir/graph.h"

/* Whether dim 0 of node n is the token axis, so that its rows past n_tokens are padding: a value is
 * token-major when it is computed row by row from token-major inputs. in0 is the info of n's input
 * 0 (NULL without one), in_tok[k] whether input k (0, 1) is token-major, static_rows the graph's
 * static row count (ir/backend.h). */
bool rlx_token_major(const rlx_node_info *n, const rlx_node_info *in0, const bool in_tok[2], int64_t static_rows);

/* How an op reads input slot k. */
typedef enum {
    RLX_OPERAND_VALUES, /* f32 values (a WEIGHT there is decoded to f32 once) */
    RLX_OPERAND_MATRIX, /* a packed matrix in its stored type (MATMUL w, EMBED table, MOE_FFN experts) */
    RLX_OPERAND_IDS,    /* I32 ids (EMBED) */
    RLX_OPERAND_CACHE,  /* the KV cache written in place (KV_WRITE) */
    RLX_OPERAND_STATE,  /* a recurrent state read and written in place (CAUSAL_CONV, DELTA_RULE) */
} rlx_operand;

rlx_operand rlx_op_operand(rlx_op op, int k);

#endif
