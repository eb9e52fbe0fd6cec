/* What the Vulkan lowering (vk_lower.c), its fusion planning (vk_fuse.c) and the warming pass
 * (vk_warm_next.c) share beyond the planner (vk_plan.h). */
#ifndef RLX_RUNTIME_VK_LOWER_H
#define RLX_RUNTIME_VK_LOWER_H

#include "runtime/vk_plan.h"

/* The RMS_NORM a ROPE r absorbed (VK_FUSE_NORM_ROPE), or RLX_NO_NODE. */
static inline rlx_node vk_rope_norm(const rlx_program *p, rlx_node r) {
    return node(p, r)->fuse == VK_FUSE_NORM_ROPE ? node(p, r)->fuse_a : RLX_NO_NODE;
}

/* ---- vk_lower_recurrent.c: the Gated DeltaNet ops ---- */

/* Refuses what the kernels cannot run (a conv of too many taps, a key head too large). */
rlx_status vk_prepare_recurrent(rlx_program *p, rlx_node i);
rlx_status vk_lower_CAUSAL_CONV(rlx_program *p, rlx_node i);
rlx_status vk_lower_DELTA_RULE(rlx_program *p, rlx_node i);
rlx_status vk_lower_DELTA_GATE(rlx_program *p, rlx_node i);
rlx_status vk_lower_L2_NORM(rlx_program *p, rlx_node i);
/* L2_NORM node l2 (reading its x through a SLICE when it absorbed one), times scale, dispatched by
 * node at (l2 itself, or a SCALE that absorbed it). */
rlx_status vk_emit_l2_norm(rlx_program *p, rlx_node at, rlx_node l2, float scale);
rlx_status vk_lower_SLICE(rlx_program *p, rlx_node i);
rlx_status vk_lower_SCALE_ROWS(rlx_program *p, rlx_node i);

#endif
