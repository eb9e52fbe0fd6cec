/* What the Vulkan lowering (vk_lower.c) and its fusion planning (vk_fuse.c) share: node accessors,
 * packed matrix operands, and the matvec plan, which decides both what may fuse and how it runs. */
#ifndef RLX_RUNTIME_VK_LOWER_H
#define RLX_RUNTIME_VK_LOWER_H

#include "runtime/vk_internal.h"

/* shaders/matmul.comp and shaders/matvec.comp EPI */
enum { EPI_NONE, EPI_ADD, EPI_SILU_MUL, EPI_GELU_MUL };

static inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static inline const vk_node *node(const rlx_program *p, rlx_node i) { return &p->nodes[i]; }
static inline const vk_node *in(const rlx_program *p, rlx_node i, int k) { return &p->nodes[p->nodes[i].info.in[k]]; }
static inline rlx_node in0(const rlx_program *p, rlx_node i) { return node(p, i)->info.in[0]; }
static inline rlx_node in1(const rlx_program *p, rlx_node i) { return node(p, i)->info.in[1]; }
static inline int64_t last_dim(const vk_node *n) { return n->info.shape.dim[n->info.shape.rank - 1]; }

/* Whether node j takes x as one of its inputs. */
static inline bool vk_reads(const rlx_program *p, rlx_node j, rlx_node x) {
    for (int k = 0; k < node(p, j)->info.n_in; k++)
        if (node(p, j)->info.in[k] == x) return true;
    return false;
}

/* ---- packed matrix operands (MATMUL w, EMBED table, MOE_FFN experts) ---- */

typedef struct matrix {
    uint32_t type;
    uint64_t rows, row_bytes;
    uint32_t n_parts;
    const vk_weight *w; /* NULL for an F32 activation (one part) */
    vk_range whole;     /* the activation's range */
} matrix;

static inline matrix matrix_of(const rlx_program *p, rlx_node n) {
    const vk_node *v = node(p, n);
    if (v->store == VK_STORE_WEIGHT) {
        const vk_weight *w = v->weight;
        return (matrix){w->type, w->rows, w->row_bytes, w->n_parts, w, {0}};
    }
    uint64_t cols = (uint64_t)last_dim(v);
    return (matrix){RLX_DTYPE_F32, (uint64_t)v->numel / cols, cols * 4, 1, NULL, vk_node_range(p, n)};
}

/* ---- vk_lower.c: the decode matvec (shaders/matvec.comp) ---- */

/* F32, F16, BF16: a weight stored as plain floats (matvec.comp mv_plain). */
static inline bool vk_plain_type(uint32_t type) {
    return type == RLX_DTYPE_F16 || type == RLX_DTYPE_BF16 || type == RLX_DTYPE_F32;
}

typedef struct matvec_plan {
    uint32_t spec[11]; /* matvec.comp's, by RLX_VK_SPEC(matvec, ...) */
    uint64_t groups;
} matvec_plan;

/* The plan for a weight of type and row length k, m_rows rows, nx x rows per workgroup over
 * x_groups groups of x rows; false where matvec.comp has no path for it on this device. */
bool vk_matvec_plan_make(const rlx_program *p, uint32_t type, uint64_t k, uint64_t m_rows, uint32_t nx,
                         uint64_t x_groups, uint32_t epi, bool norm, bool gate, matvec_plan *out);
/* Whether MATMUL mm runs on matvec.comp (few x rows, a type it decodes). */
bool vk_takes_matvec(const rlx_program *p, rlx_node mm);
/* Whether weights a and b have one type and shape and fit one binding each. */
bool vk_same_single_part_weights(const rlx_program *p, rlx_node a, rlx_node b);

/* ---- vk_warm_next.c ---- */

/* After the last part of the decode matvec of MATMUL mm that out_node dispatches: where the next
 * matvec stage's weights are known, a dispatch reading their first bytes into L2 (RLX_VK_WARM_NEXT). */
rlx_status vk_emit_warm_next(rlx_program *p, rlx_node out_node, rlx_node mm);

/* ---- vk_fuse.c ---- */

/* Bytes of the sync block of the matvec at node at whose POST computes node at's post. */
uint64_t vk_post_sync_bytes(const rlx_program *p, rlx_node at);
/* The RMS_NORM a ROPE r absorbed (VK_FUSE_NORM_ROPE), or RLX_NO_NODE. */
rlx_node vk_rope_norm(const rlx_program *p, rlx_node r);

#endif
