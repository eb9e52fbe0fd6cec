/* Op names and input counts, generated from ops.def so no op can be missed. */
#include "ir/graph.h"

static const char *const op_names[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = #name,
#include "ops.def"
#undef RLX_OP
};

static const int op_max_inputs[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = n_in,
#include "ops.def"
#undef RLX_OP
};

const char *rlx_op_name(rlx_op op) {
    if ((unsigned)op >= RLX_OP_COUNT) return "UNKNOWN_OP";
    return op_names[op];
}

int rlx_op_max_inputs(rlx_op op) {
    if ((unsigned)op >= RLX_OP_COUNT) return 0;
    return op_max_inputs[op];
}
