/* Warming the next stage's weights: after the last matvec of a decode stage, a small dispatch
 * (shaders/warm_l2.comp) reads the first bytes of the weights the next matvec stage starts with.
 * Recorded with no barrier before it, it runs while that matvec's last workgroups drain, when
 * memory would otherwise idle, and the next stage's first workgroups then find their rows in L2
 * instead of paying a memory round trip while the GPU ramps up again.
 *
 * H100 (the default's measurements), Qwen3-8B F16 tg128 in one run: 168.24 -> 169.71 t/s with 4
 * MiB, 169.99 with 3 MiB, 168.39 with 8 and 161.04 with 16 (the read outlasts the drain and holds
 * the barrier back). Each boundary helps alone (2 MiB: v -> o 168.30 -> 168.62, o -> gate/up
 * 168.88, gate/up -> down 168.43 (4 MiB 168.86), down -> q 168.62). Not on smaller rows or
 * K-quants, as measured there: Qwen3-0.6B F16 920.1 -> 904.5 (1 MiB), 8B Q4_K_M 243.4 -> 242.8
 * (2 MiB). */
#include "runtime/vk_lower.h"

#include <stdlib.h>

#define WARM_NEXT_DEFAULT_KIB 3072
#define WARM_NEXT_MIN_K 4096
#define WARM_NEXT_WG 256
#define WARM_NEXT_PER 8 /* 16-byte loads in flight per invocation: shaders/warm_l2.comp PER */

/* RLX_VK_WARM_NEXT=<KiB> (checked by runtime/vk_knobs.c): 0 never; otherwise that many KiB
 * wherever a next stage's weights can be found, on any device and weight. Unset or empty: the
 * default above, on a GPU for plain-type rows of WARM_NEXT_MIN_K or more. */
static bool warm_next_set(uint64_t *bytes) {
    const char *v = getenv("RLX_VK_WARM_NEXT");
    if (!v || !*v) return false;
    *bytes = strtoull(v, NULL, 10) * 1024;
    return true;
}

static bool plain_long_rows(const rlx_program *p, rlx_node mm) {
    return vk_plain_type(matrix_of(p, in1(p, mm)).type) && last_dim(in(p, mm, 0)) >= WARM_NEXT_MIN_K;
}

/* The first MATMUL after node `after` in program order, or RLX_NO_NODE. A MoE FFN met first is the
 * next weight stage itself (its experts are chosen at run time): none. */
static rlx_node next_matmul(const rlx_program *p, rlx_node after) {
    for (rlx_node j = after + 1; j < p->n_nodes; j++) {
        if (!node(p, j)->live) continue;
        if (node(p, j)->info.op == RLX_OP_MOE_FFN) return RLX_NO_NODE;
        if (node(p, j)->info.op == RLX_OP_MATMUL) return j;
    }
    return RLX_NO_NODE;
}

static rlx_status emit_warm(rlx_program *p, rlx_node at, rlx_node mm, uint64_t bytes) {
    matrix m = matrix_of(p, in1(p, mm));
    if (!m.w) return NULL; /* an activation: nothing resident to warm */
    const vk_weight_part *part = &m.w->parts[0];
    uint64_t n = (bytes < part->alloc.size ? bytes : part->alloc.size) / 16;
    if (n == 0 || n > UINT32_MAX) return NULL;
    vk_range w = {part->alloc.buffer, part->alloc.offset, n * 16};
    uint32_t spec[1] = {WARM_NEXT_WG}, push[1] = {(uint32_t)n};
    return vk_emit(p, &p->run, at, RLX_VK_KERNEL_warm_l2, spec, &w, 1, 1u, 0u, push, sizeof push,
                   ceil_div(n, WARM_NEXT_WG * WARM_NEXT_PER));
}

rlx_status vk_emit_warm_next(rlx_program *p, rlx_node out_node, rlx_node mm) {
    uint64_t bytes = (uint64_t)WARM_NEXT_DEFAULT_KIB * 1024;
    bool forced = warm_next_set(&bytes);
    const vk_node *x = in(p, mm, 0);
    if (bytes == 0 || x->numel != last_dim(x)) return NULL; /* decode: one x row */
    rlx_node next = next_matmul(p, out_node);
    /* a later matmul of the same x runs in this stage: this is not its last matvec */
    if (next == RLX_NO_NODE || in0(p, next) == in0(p, mm) || !vk_takes_matvec(p, next)) return NULL;
    if (!forced && (p->b->dev->caps->is_cpu || !plain_long_rows(p, mm) || !plain_long_rows(p, next))) return NULL;
    rlx_node into = node(p, next)->fused_into;
    if (into == RLX_NO_NODE || node(p, into)->fuse != VK_FUSE_GATE_UP) return emit_warm(p, out_node, next, bytes);
    /* a gated FFN's matvec reads its up and gate rows side by side: the first half of each */
    RLX_TRY(emit_warm(p, out_node, node(p, into)->fuse_a, bytes / 2));
    return emit_warm(p, out_node, in0(p, node(p, into)->fuse_b), bytes / 2);
}
