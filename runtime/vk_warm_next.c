/* Warming the next stage's weights: after the last matvec of a decode stage, a small dispatch
 * (shaders/warm_l2.comp) reads the first bytes of the weights the next matvec stage starts with.
 * Recorded with no barrier before it, it runs while that matvec's last workgroups drain, when
 * memory would otherwise idle, and the next stage's first workgroups then find their rows in L2
 * instead of paying a memory round trip while the GPU ramps up again. A stage's last matvec is one
 * whose next matvec dispatch reads another x or its result (same_stage); the next stage is that
 * dispatch's, unless a MoE FFN comes first.
 *
 * A pass over the finished dispatch list (vk_warm_next_pass), after lowering: it inserts the warming
 * right after each node's last matvec dispatch. The default (a GPU's plans, plain-type rows of
 * WARM_NEXT_MIN_K or more, WARM_NEXT_DEFAULT_KIB) reads little enough to end within the drain: a
 * larger read outlasts it and holds the next barrier back; on shorter rows and the K-quants the
 * next stage starts fast enough without it (docs/PERFORMANCE.md). */
#include "runtime/vk_lower.h"

#include <stdlib.h>
#include <string.h>

#define WARM_NEXT_DEFAULT_KIB 3072
#define WARM_NEXT_MIN_K 4096
#define WARM_NEXT_WG 256
#define WARM_NEXT_PER 8 /* 16-byte loads in flight per invocation */

/* RLX_VK_WARM_NEXT=<KiB> (the backend's tuning, runtime/vk_options.h): 0 never; otherwise that many KiB
 * wherever a next stage's weights can be found, on any device and weight. Unset or empty: the
 * default above, with a GPU's plans (runtime/vk_internal.h gpu_plans) for plain-type rows of
 * WARM_NEXT_MIN_K or more. */
static bool warm_next_forced(const rlx_program *p, uint64_t *bytes) {
    if (p->b->tuning.warm_next_kib < 0) return false;
    *bytes = (uint64_t)p->b->tuning.warm_next_kib * 1024;
    return true;
}

static bool plain_long_rows(const rlx_program *p, rlx_node mm) {
    return vk_plain_type(matrix_of(p, in1(p, mm)).type) && last_dim(in(p, mm, 0)) >= WARM_NEXT_MIN_K;
}

/* The MATMUL whose matvec node j dispatches (itself, or the one it absorbed), else RLX_NO_NODE. */
static rlx_node dispatched_matmul(const rlx_program *p, rlx_node j) {
    const vk_node *n = node(p, j);
    if (!n->live || n->fused_into != RLX_NO_NODE) return RLX_NO_NODE;
    if (n->info.op == RLX_OP_MATMUL) return j;
    bool absorbs = n->fuse == VK_FUSE_MATMUL_ADD || n->fuse == VK_FUSE_MATMUL_GATE || n->fuse == VK_FUSE_GATE_UP;
    return absorbs ? n->fuse_a : RLX_NO_NODE;
}

/* The next node after `after` that dispatches a matmul, or RLX_NO_NODE. A MoE FFN met first is the
 * next weight stage itself (its experts are chosen at run time): none. */
static rlx_node next_matmul_dispatch(const rlx_program *p, rlx_node after) {
    for (rlx_node j = after + 1; j < p->n_nodes; j++) {
        if (node(p, j)->live && node(p, j)->info.op == RLX_OP_MOE_FFN) return RLX_NO_NODE;
        if (dispatched_matmul(p, j) != RLX_NO_NODE) return j;
    }
    return RLX_NO_NODE;
}

/* Whether dispatch node j may run in the stage of out_node's matvec over matmul mm: it reads the
 * same x and not out_node's result, itself or through a node it absorbed (the barrier planner then
 * puts no barrier between them). */
static bool same_stage(const rlx_program *p, rlx_node out_node, rlx_node mm, rlx_node j) {
    if (in0(p, dispatched_matmul(p, j)) != in0(p, mm) || vk_reads(p, j, out_node)) return false;
    const vk_node *n = node(p, j);
    rlx_node absorbed[2] = {n->fuse_a, n->fuse_b};
    for (int k = 0; k < 2; k++)
        if (n->fuse != VK_FUSE_NONE && absorbed[k] != RLX_NO_NODE && node(p, absorbed[k])->fused_into == j &&
            vk_reads(p, absorbed[k], out_node))
            return false;
    return true;
}

static rlx_status emit_warm(rlx_program *p, rlx_node at, rlx_node mm, uint64_t bytes) {
    matrix m = matrix_of(p, in1(p, mm));
    if (!m.w) return NULL; /* an activation: nothing resident to warm */
    const vk_weight_part *part = &m.w->parts[0];
    uint64_t n = (bytes < part->alloc.size ? bytes : part->alloc.size) / 16;
    vk_range w = {part->alloc.buffer, part->alloc.offset, n * 16};
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = WARM_NEXT_WG, [RLX_VK_SPEC(warm_l2, PER)] = WARM_NEXT_PER};
    uint32_t push[1] = {(uint32_t)n};
    return vk_emit(p, &p->run, at, RLX_VK_KERNEL_warm_l2, spec, &w, 1, RLX_VK_BIT(warm_l2, W), 0u, push, sizeof push,
                   ceil_div(n, WARM_NEXT_WG * WARM_NEXT_PER));
}

/* After the last part of the decode matvec of MATMUL mm that out_node dispatches: where the next
 * matvec stage's weights are known, dispatches reading their first bytes into L2 (at most 2). */
static rlx_status warm_after(rlx_program *p, rlx_node out_node, rlx_node mm) {
    uint64_t bytes = (uint64_t)WARM_NEXT_DEFAULT_KIB * 1024;
    bool forced = warm_next_forced(p, &bytes);
    if (mm == RLX_NO_NODE) return NULL; /* a MoE FFN's experts on matvec.comp: not a MATMUL */
    const vk_node *x = in(p, mm, 0);
    if (bytes == 0 || x->numel != last_dim(x)) return NULL; /* decode: one x row */
    rlx_node j = next_matmul_dispatch(p, out_node);
    if (j == RLX_NO_NODE || same_stage(p, out_node, mm, j)) return NULL;
    rlx_node next = dispatched_matmul(p, j);
    if (!vk_takes_matvec(p, next)) return NULL;
    if (!forced && (!p->gpu_plans || !plain_long_rows(p, mm) || !plain_long_rows(p, next))) return NULL;
    if (node(p, j)->fuse != VK_FUSE_GATE_UP) return emit_warm(p, out_node, next, bytes);
    /* a gated FFN's matvec reads its up and gate rows side by side: the first half of each */
    RLX_TRY(emit_warm(p, out_node, next, bytes / 2));
    return emit_warm(p, out_node, in0(p, node(p, j)->fuse_b), bytes / 2);
}

/* Whether run dispatch i is the last matvec.comp dispatch of its node (its last weight part). */
static bool last_matvec_part(const rlx_program *p, size_t i) {
    const vk_dispatch *d = &p->run.items[i];
    rlx_vk_kernel k = d->pipe->kernel;
    if (k != RLX_VK_KERNEL_matvec && k != RLX_VK_KERNEL_matvec_stream) return false;
    return i + 1 == p->run.n || p->run.items[i + 1].node != d->node;
}

#define WARM_NEXT_MAX_PER_STAGE 2 /* warm_after: the up and gate rows of a gated FFN */

rlx_status vk_warm_next_pass(rlx_program *p) {
    for (size_t i = 0; i < p->run.n; i++) {
        if (!last_matvec_part(p, i)) continue;
        size_t before = p->run.n;
        RLX_TRY(warm_after(p, p->run.items[i].node, dispatched_matmul(p, p->run.items[i].node)));
        size_t added = p->run.n - before;
        if (added > WARM_NEXT_MAX_PER_STAGE)
            return rlx_errorf(RLX_ERR_INTERNAL, "compile: %%%d: %zu warming dispatches after one matvec",
                              p->run.items[i].node, added);
        if (added == 0) continue;
        /* vk_emit appended them: move them to just after dispatch i */
        vk_dispatch warm[WARM_NEXT_MAX_PER_STAGE];
        memcpy(warm, &p->run.items[before], added * sizeof *warm);
        memmove(&p->run.items[i + 1 + added], &p->run.items[i + 1], (before - i - 1) * sizeof *warm);
        memcpy(&p->run.items[i + 1], warm, added * sizeof *warm);
        i += added;
    }
    return NULL;
}
