/* Token-major values and operand classes (ir/analysis.h). */
#include "ir/analysis.h"

bool rlx_token_major(const rlx_node_info *n, const rlx_node_info *in0, const bool in_tok[2], int64_t static_rows) {
    switch (n->op) {
    case RLX_OP_INPUT: return n->shape.dim[0] == static_rows;
    case RLX_OP_WEIGHT:
    case RLX_OP_KV_CACHE:
    case RLX_OP_KV_WRITE:
    case RLX_OP_STATE:
    case RLX_OP_LAST_ROW:
    case RLX_OP_GATHER_ROWS: return false;
    case RLX_OP_EMBED: return in_tok[1];
    case RLX_OP_ADD:
    case RLX_OP_MUL:
    case RLX_OP_SCALE_ROWS: return in_tok[0] && in_tok[1];
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_GELU_TANH:
    case RLX_OP_SIGMOID:
    case RLX_OP_ROPE:
    case RLX_OP_ATTENTION:
    case RLX_OP_CAUSAL_CONV:
    case RLX_OP_DELTA_RULE: return in_tok[0];
    case RLX_OP_RESHAPE: return in_tok[0] && n->shape.dim[0] == in0->shape.dim[0];
    /* ops over the last dim: a rank-1 operand is one row, so it has no token axis */
    case RLX_OP_MATMUL:
    case RLX_OP_RMS_NORM:
    case RLX_OP_L2_NORM:
    case RLX_OP_DELTA_GATE:
    case RLX_OP_SLICE:
    case RLX_OP_SOFTMAX:
    case RLX_OP_ARGMAX:
    case RLX_OP_MOE_ROUTE:
    case RLX_OP_MOE_FFN: return in_tok[0] && in0->shape.rank >= 2;
    case RLX_OP_COUNT: break;
    }
    return false;
}

rlx_operand rlx_op_operand(rlx_op op, int k) {
    switch (op) {
    case RLX_OP_EMBED: return k == 0 ? RLX_OPERAND_MATRIX : RLX_OPERAND_IDS;
    case RLX_OP_MATMUL: return k == 1 ? RLX_OPERAND_MATRIX : RLX_OPERAND_VALUES;
    case RLX_OP_MOE_FFN: return k >= 2 ? RLX_OPERAND_MATRIX : RLX_OPERAND_VALUES;
    case RLX_OP_KV_WRITE: return k == 0 ? RLX_OPERAND_CACHE : RLX_OPERAND_VALUES;
    case RLX_OP_GATHER_ROWS: return k == 1 ? RLX_OPERAND_IDS : RLX_OPERAND_VALUES;
    case RLX_OP_CAUSAL_CONV: return k == 2 ? RLX_OPERAND_STATE : RLX_OPERAND_VALUES;
    case RLX_OP_DELTA_RULE: return k == 5 ? RLX_OPERAND_STATE : RLX_OPERAND_VALUES;
    default: return RLX_OPERAND_VALUES;
    }
}
