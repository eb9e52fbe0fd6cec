/* What the Vulkan lowering (vk_lower.c), its fusion planning (vk_fuse.c) and the warming pass
 * (vk_warm_next.c) share beyond the planner (vk_plan.h). */
#ifndef RLX_RUNTIME_VK_LOWER_H
#define RLX_RUNTIME_VK_LOWER_H

#include "runtime/vk_plan.h"

/* The RMS_NORM a ROPE r absorbed (VK_FUSE_NORM_ROPE), or RLX_NO_NODE. */
static inline rlx_node vk_rope_norm(const rlx_program *p, rlx_node r) {
    return node(p, r)->fuse == VK_FUSE_NORM_ROPE ? node(p, r)->fuse_a : RLX_NO_NODE;
}

/* Whether node i's value is computed by another node's dispatch (vk_fuse.c). */
static inline bool vk_absorbed(const rlx_program *p, rlx_node i) { return node(p, i)->fused_into != RLX_NO_NODE; }

/* Rows of the last dim per token row of n (0 when n is not token-major): the kernels' tok. */
static inline uint32_t vk_tok_rows(const vk_node *n) { return n->tok ? (uint32_t)(n->tok / last_dim(n)) : 0; }

/* ---- vk_lower.c: shared with the lowerings in other files ---- */

/* The sync block holding the rsqrt factor of the norm that the matvec before prepared, for node
 * reader (VK_FUSE_MATVEC_SCALED: a matvec, or a MOE_FFN's gate and up passes). */
vk_range vk_scaled_sync(const rlx_program *p, rlx_node reader);

/* Part k of matrix m: its range, first row and rows (an activation: the whole, one part). */
void vk_matrix_part(const matrix *m, uint32_t k, vk_range *r, uint64_t *row0, uint64_t *rows);
/* Refuses a weight of node i split over several bindings, naming it. */
rlx_status vk_single_part(const rlx_program *p, rlx_node i, const matrix *m);
/* Weight rows per matvec workgroup (shaders/matmul.comp, moe_mv.comp R). */
uint32_t vk_rows_per_group(const rlx_program *p);

/* ---- vk_lower_moe.c: MOE_FFN ---- */

/* Reserves MOE_FFN i's scratch (its path's: vk_moe_grouped_plan). */
rlx_status vk_prepare_moe_ffn(rlx_program *p, rlx_node i);
rlx_status vk_lower_MOE_FFN(rlx_program *p, rlx_node i);
/* ADD at, fused with the MOE_FFN it sums (VK_FUSE_MOE_ADD): the MoE's passes, the sums in the last. */
rlx_status vk_lower_moe_add(rlx_program *p, rlx_node at);

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
