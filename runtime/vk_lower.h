/* What the Vulkan lowering (vk_lower.c), its fusion planning (vk_fuse.c) and the warming pass
 * (vk_warm_next.c) share beyond the planner (vk_plan.h). */
#ifndef RLX_RUNTIME_VK_LOWER_H
#define RLX_RUNTIME_VK_LOWER_H

#include "runtime/vk_plan.h"

/* The RMS_NORM a ROPE r absorbed (VK_FUSE_NORM_ROPE), or RLX_NO_NODE. */
static inline rlx_node vk_rope_norm(const rlx_program *p, rlx_node r) {
    return node(p, r)->fuse == VK_FUSE_NORM_ROPE ? node(p, r)->fuse_a : RLX_NO_NODE;
}

#endif
