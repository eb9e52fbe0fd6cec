/* The Vulkan planner (vk_plan.c): node accessors, packed matrix operands, and the pure decisions that
 * fusion (vk_fuse.c) and lowering (vk_lower.c) share: which kernel a node gets and its plan. */
#ifndef RLX_RUNTIME_VK_PLAN_H
#define RLX_RUNTIME_VK_PLAN_H

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

/* Deterministic mode (RLX_VK_DETERMINISTIC, rlx_vk_options.deterministic): a row's bits must not
 * depend on the batch's row count, the row's index or the KV capacity, so every planner choice
 * that reads those takes one answer (vk_plan.c lists them). */
static inline bool vk_deterministic(const rlx_program *p) { return p->b->tuning.deterministic; }

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

/* F32, F16, BF16: a weight stored as plain floats (matvec.comp mv_plain). */
static inline bool vk_plain_type(uint32_t type) {
    return type == RLX_DTYPE_F16 || type == RLX_DTYPE_BF16 || type == RLX_DTYPE_F32;
}

/* Rows of the largest part of weight w. */
uint64_t vk_largest_part_rows(const vk_weight *w);

/* ---- prefill matmuls: shaders/matmul_tiled.comp, matmul_coop.comp ---- */

/* Many rows of x of length k go to the tiled kernels (they reuse each weight tile). */
bool vk_takes_tiled(const rlx_program *p, uint64_t rows, uint64_t k, uint32_t type);

/* RLX_VK_COOPMAT: how prefill matmuls use the cooperative-matrix kernel (vk_plan.c says each mode). */
typedef enum {
    COOP_OFF = RLX_VK_COOPMAT_OFF,
    COOP_MIXED = RLX_VK_COOPMAT_MIXED,
    COOP_EXACT = RLX_VK_COOPMAT_EXACT,
    COOP_EMULATE = RLX_VK_COOPMAT_EMULATE,
    COOP_EMULATE_MIXED = RLX_VK_COOPMAT_EMULATE_MIXED
} vk_coop_mode;

typedef struct vk_coop_plan {
    uint32_t tm, bk, depth; /* the kernel's spec TM, BK, DEPTH */
    uint32_t split, ksplit; /* spec SPLIT: k ranges of ksplit values (a multiple of bk); 1: all of k */
    uint32_t tn;            /* spec TN: weight rows per tile, 64 or (PREC 0) 128 */
    uint32_t orows;         /* spec OROWS: result rows per round of the epilogue, 64 or 32 */
} vk_coop_plan;

/* The backend's mode (runtime/vk_options.h), COOP_OFF where the device has no cooperative matrices
 * (the emulated modes run anywhere). */
rlx_status vk_coopmat_mode(const rlx_program *p, vk_coop_mode *out);
/* shaders/matmul_coop.glsl PREC for a weight of type read in mode. */
uint32_t vk_coop_prec(vk_coop_mode mode, uint32_t type);
/* The tiles and k splits for part_rows weight rows of length k and rows of x. */
vk_coop_plan vk_coop_plan_make(const rlx_program *p, uint64_t part_rows, uint64_t rows, uint64_t k, uint32_t prec);
/* Whether shaders/matmul_batch.comp takes a part of part_rows weight rows of type, read in mode, for
 * rows of x; and its plan (spec TN, DEPTH, SPLIT; TM 64, BK 64). */
bool vk_batch_takes(const rlx_program *p, vk_coop_mode mode, uint32_t type, uint64_t rows, uint64_t part_rows);
vk_coop_plan vk_batch_plan_make(const rlx_program *p, uint64_t part_rows, uint64_t k);
/* Whether the cooperative kernel's smallest plan fits the device. */
bool vk_coop_fits(const rlx_program *p);
/* Whether MATMUL mm's weight is decoded into f16 rows first (the mixed modes, a type other than F16). */
bool vk_coop_f16_weights(const rlx_program *p, rlx_node mm, vk_coop_mode coop);

/* ---- decode matmuls: shaders/matvec.comp ---- */

typedef struct matvec_plan {
    uint32_t spec[12]; /* matvec.comp's, by RLX_VK_SPEC(matvec, ...) */
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
/* x rows per matvec.comp workgroup for rows of x, of which matmul.comp takes nx. */
uint32_t vk_matvec_nx(const rlx_program *p, uint64_t rows, uint32_t nx);
/* matvec.comp, or matvec_stream.comp for a gated FFN's long plain-type rows. */
rlx_vk_kernel vk_matvec_kernel(uint32_t type, uint64_t k, bool gate);
/* The matvec plan of node at (a MATMUL, or a residual ADD of one, VK_FUSE_MATMUL_ADD) for one x
 * row in one weight part, or false when it has none: what a POST needs. */
bool vk_post_plan(const rlx_program *p, rlx_node at, matvec_plan *mv);
/* Bytes of the sync block of the matvec at node at whose POST computes node at's post
 * (shaders/sync_layout.h); 0 where that matvec has no plan. */
uint64_t vk_post_sync_bytes(const rlx_program *p, rlx_node at);

/* ---- MOE_FFN: shaders/moe_mv.comp, or the grouped path (moe_group, moe_mm, moe_sum) ---- */

/* Slots per row of MOE_FFN i: top_k where its route is a MOE_ROUTE, else the expert count. */
uint32_t vk_moe_slots(const rlx_program *p, rlx_node i);

#define MOE_MM_WG 256 /* shaders/moe_mm.comp: 16 x 16 threads */
#define MOE_MM_TN 64  /* ... each workgroup 64 outputs of its pairs */

/* The grouped path of MOE_FFN i (runtime/vk_lower_moe.c): its tiles and where each of its arrays
 * sits in the node's scratch (byte offsets from the scratch's start). */
typedef struct vk_moe_plan {
    uint32_t rm;    /* shaders/moe_mm.comp RM: 16 rm pairs per tile */
    uint64_t tiles; /* tiles of pairs in moe_mm.comp's grid: a bound on those that hold pairs */
    uint64_t h_at, slots_at, list_at, part_at, bytes;
} vk_moe_plan;

/* Scratch bytes of MOE_FFN i on shaders/moe_mv.comp: h [rows, slots, F] in f32. */
uint64_t vk_moe_h_bytes(const rlx_program *p, rlx_node i);
/* The plan of MOE_FFN i on the grouped path, or false for shaders/moe_mv.comp. */
bool vk_moe_grouped_plan(const rlx_program *p, rlx_node i, vk_moe_plan *out);

/* ---- attention ---- */

#define ATTN_MAX_SPLITS 64 /* shaders/attn_combine.comp MAX_SPLITS */

/* Key splits of ATTENTION i (flash decoding; 1: none). */
uint32_t vk_attention_splits(const rlx_program *p, rlx_node i);
/* Query heads per attention workgroup. */
uint32_t vk_attention_gw(const rlx_program *p, int64_t rows, int64_t heads, int64_t kv_heads, uint32_t splits);

/* How shaders/attention.glsl's lanes take a key: lpk lanes per key, each with epl K and epv V dims
 * in load units of vec elements. */
typedef struct vk_attn_lanes {
    uint32_t lpk, epl, epv, vec;
} vk_attn_lanes;

vk_attn_lanes vk_attention_lanes(const rlx_program *p, uint32_t dh, uint32_t dv);

/* Decode attention's workgroup size for gw query heads of dv values (step: the fused decode step,
 * whose prep rows of pd floats take shared memory too). */
uint32_t vk_attention_wg(const rlx_program *p, uint32_t gw, uint32_t dv, uint32_t pd, bool step);

/* shaders/attention_prefill.comp's spec D (64, 128 or 256: the head sizes rounded up) and BKV (keys
 * per block: 32, or 16 where 32 do not fit the shared memory); its query rows per workgroup, BQ,
 * follow from D. */
typedef struct vk_prefill_plan {
    uint32_t d, bkv;
} vk_prefill_plan;

uint64_t vk_attention_prefill_rows(uint32_t d);
/* The plan of ATTENTION i on attention_prefill.comp, or false for attention.comp. */
bool vk_attention_prefill_plan(const rlx_program *p, rlx_node i, vk_prefill_plan *out);

/* ---- the Gated DeltaNet delta rule: shaders/delta_step.comp, delta_prep.comp + delta_chunk.comp ---- */

typedef struct vk_delta_plan {
    bool chunked;      /* delta_chunk.comp (prefill) rather than delta_step.comp (decode) */
    uint32_t wg;       /* workgroup size */
    uint32_t cw;       /* state columns per workgroup */
    uint32_t nr;       /* delta_step: state rows per invocation */
    uint32_t chunk;    /* delta_chunk: rows per chunk */
    uint32_t col_blocks, seq_groups;
    uint32_t prep_groups; /* delta_prep.comp: workgroups across the chunks (each strides over them) */
} vk_delta_plan;

/* The plan of DELTA_RULE node i; false (with *why) when no plan fits the device (a head too large). */
bool vk_delta_plan_make(const rlx_program *p, rlx_node i, vk_delta_plan *out, const char **why);

#endif
