/* Qwen3.5's recurrent state, as a session holds it (ir/backend.h rlx_state_spec): what a caller
 * that creates the session needs besides the family's layer (rlx_family_qwen35_ops). */
#ifndef RLX_RUNNERS_QWEN35_H
#define RLX_RUNNERS_QWEN35_H

#include <stdint.h>

#include "loader/format/model_config.h"

/* Floats of one Gated DeltaNet layer's state per sequence slot: the conv's last K-1 inputs of the
 * fused q/k/v channels, then the delta rule's [H_v, d_k, d_v]. */
int64_t rlx_qwen35_state_floats(const rlx_model_config *c);

#endif
