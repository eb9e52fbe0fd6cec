#include "ir/backend.h"

#include <inttypes.h>

rlx_status rlx_backend_check_run_args(const rlx_run_args *a, int64_t static_rows, int32_t n_inputs,
                                      int32_t n_outputs) {
    if (!a) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: args is NULL");
    if (a->n_tokens < 1 || a->n_tokens > static_rows)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: n_tokens %d is outside [1, %" PRId64 " rows of the graph]",
                          a->n_tokens, static_rows);
    if (a->n_past < 0) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: n_past %d is negative", a->n_past);
    if (n_inputs > 0 && !a->inputs)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: the graph has %d inputs but inputs is NULL", n_inputs);
    for (int32_t k = 0; k < n_inputs; k++)
        if (!a->inputs[k]) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: input %d is NULL", k);
    if (!a->outputs) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: outputs is NULL");
    for (int32_t o = 0; o < n_outputs; o++)
        if (!a->outputs[o]) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: output %d is NULL", o);
    return NULL;
}
