/* The Vulkan lowering table: one function per IR op (generated from ops.def, so an op without a
 * lowering does not compile), each appending the dispatches of one node. Kernel semantics are the
 * comments of ir/ops.def; the kernels are in shaders/. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/analysis.h"
#include "loader/core/dequant.h"
#include "runtime/vk_lower.h"

#define MAX_HEAD 512    /* largest Dh and Dv: shaders/attention.comp keeps Dh / subgroup values per lane */
#define MAX_EXPERTS 1024 /* shaders/moe_route.comp: a row's logits in its subgroup's registers */
#define MAX_STRIDE_GROUPS 8192 /* grid-stride kernels: enough groups to fill any device */
#define NORM_MAX_SLOTS 8        /* shaders/rms_norm.comp NS: slots per invocation held in registers */

/* shaders/ew.comp OP */
enum { EW_ADD, EW_MUL, EW_SCALE, EW_SILU, EW_GELU_TANH, EW_SILU_MUL, EW_GELU_MUL, EW_SIGMOID };

static uint64_t stride_groups(uint64_t n, uint32_t wg) {
    uint64_t g = ceil_div(n, wg);
    return g < MAX_STRIDE_GROUPS ? g : MAX_STRIDE_GROUPS;
}
static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

bool vk_weight_type_supported(uint32_t type) {
    switch (type) {
    case RLX_DTYPE_F32:
    case RLX_DTYPE_F16:
    case RLX_DTYPE_BF16:
    case RLX_DTYPE_Q4_0:
    case RLX_DTYPE_Q4_1:
    case RLX_DTYPE_Q5_0:
    case RLX_DTYPE_Q5_1:
    case RLX_DTYPE_Q8_0:
    case RLX_DTYPE_Q2_K:
    case RLX_DTYPE_Q3_K:
    case RLX_DTYPE_Q4_K:
    case RLX_DTYPE_Q5_K:
    case RLX_DTYPE_Q6_K:
    case RLX_DTYPE_Q8_K: return true;
    default: return false;
    }
}

static rlx_status check_type(const rlx_program *p, rlx_node i, const vk_node *w, const char *what) {
    if (vk_weight_type_supported(w->info.dtype)) return NULL;
    return rlx_errorf(RLX_ERR_UNSUPPORTED,
                      "compile: %%%d %s: %s '%s' is %s, which the Vulkan kernels cannot decode (supported: F32 F16 "
                      "BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K)",
                      i, rlx_op_name(p->nodes[i].info.op), what, w->info.name ? w->info.name : "",
                      rlx_dtype_name(w->info.dtype));
}

/* ---- packed matrix operands (MATMUL w, EMBED table, MOE_FFN experts) ---- */

void vk_matrix_part(const matrix *m, uint32_t k, vk_range *r, uint64_t *row0, uint64_t *rows) {
    if (!m->w) {
        *r = m->whole;
        *row0 = 0;
        *rows = m->rows;
        return;
    }
    const vk_weight_part *part = &m->w->parts[k];
    *r = (vk_range){part->alloc.buffer, part->alloc.offset, part->alloc.size};
    *row0 = part->row0;
    *rows = part->rows;
}

rlx_status vk_single_part(const rlx_program *p, rlx_node i, const matrix *m) {
    if (m->n_parts == 1) return NULL;
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d %s: weight '%s' (%" PRIu64 " bytes) exceeds one binding (%" PRIu64
                      " bytes on %s)",
                      i, rlx_op_name(p->nodes[i].info.op), m->w->name, m->rows * m->row_bytes, p->b->dev->max_binding,
                      p->b->dev->caps->name);
}

/* ---- preparation ---- */

/* Input slots read as f32 values (ir/analysis.h), but for ROPE's freq_factors: they are folded into
 * the angle table at compile time. */
static bool f32_slot(rlx_op op, int k) {
    return rlx_op_operand(op, k) == RLX_OPERAND_VALUES && !(op == RLX_OP_ROPE && k == 1);
}

static rlx_status add_check(rlx_program *p, rlx_node i, int64_t cap, int64_t rows) {
    vk_check *grown = realloc(p->checks, (p->n_checks + 1) * sizeof *grown);
    if (!grown) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: run-time checks");
    p->checks = grown;
    p->checks[p->n_checks++] = (vk_check){i, cap, rows};
    return NULL;
}

/* The freq_factors weight of a ROPE node, read back as f32 (compile time only). */
static rlx_status read_factors(rlx_program *p, rlx_node i, float *out, uint32_t n) {
    const vk_node *ff = in(p, i, 1);
    if (ff->store != VK_STORE_WEIGHT)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d ROPE: freq_factors must be a WEIGHT on Vulkan, got %s", i,
                          rlx_op_name(ff->info.op));
    const vk_weight *w = ff->weight;
    uint8_t *raw = malloc(w->row_bytes);
    if (!raw) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: reading '%s'", w->name);
    rlx_status s = rlx_vk_download(p->b->dev, p->b->rb_heap, &w->parts[0].alloc, 0, raw, w->row_bytes);
    if (!s) rlx_dequantize(w->type, raw, out, n);
    free(raw);
    return s;
}

/* Angle steps theta_i / 2pi = base^(-2i/n_rot) / (2pi freq_factors[i]) turns per position, as 64-bit
 * fixed-point fractions of a turn (only the fraction matters: positions are integers), computed in
 * long double. shaders/rope.comp turns them into angles with exact integer arithmetic. */
static rlx_status prepare_rope(rlx_program *p, rlx_node i) {
    vk_node *n = &p->nodes[i];
    const rlx_rope_attrs *r = &n->info.attrs.rope;
    uint32_t half = (uint32_t)r->n_rot / 2;
    float *ff = calloc(half, sizeof *ff);
    if (!ff) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: ROPE table");
    rlx_status s = NULL;
    if (n->info.n_in > 1 && n->info.in[1] != RLX_NO_NODE)
        s = read_factors(p, i, ff, half);
    else
        for (uint32_t k = 0; k < half; k++) ff[k] = 1.0f;
    if (!s) s = vk_const_reserve(p, (VkDeviceSize)half * 8, &n->const_offset);
    if (s) {
        free(ff);
        return s;
    }
    n->has_const = true;
    uint32_t *t = (uint32_t *)(void *)(p->consts_host + n->const_offset);
    const long double two_pi = 6.283185307179586476925286766559L;
    for (uint32_t k = 0; k < half; k++) {
        long double turns = powl((long double)r->freq_base, -2.0L * k / r->n_rot) / ff[k] / two_pi;
        turns -= floorl(turns);
        long double scaled = ldexpl(turns, 64);
        uint64_t fixed = scaled >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)scaled;
        t[2 * k] = (uint32_t)fixed;
        t[2 * k + 1] = (uint32_t)(fixed >> 32);
    }
    free(ff);
    return NULL;
}

static rlx_status prepare_coop_scratch(rlx_program *p, rlx_node i);

rlx_status vk_prepare_node(rlx_program *p, rlx_node i) {
    vk_node *n = &p->nodes[i];
    RLX_TRY(prepare_coop_scratch(p, i));
    for (int k = 0; k < n->info.n_in; k++) {
        rlx_node j = n->info.in[k];
        if (j == RLX_NO_NODE || !f32_slot(n->info.op, k)) continue;
        vk_node *w = &p->nodes[j];
        if (w->store != VK_STORE_WEIGHT || w->info.dtype == RLX_DTYPE_F32 || w->has_const) continue;
        RLX_TRY(check_type(p, i, w, "operand"));
        RLX_TRY(vk_const_reserve(p, w->bytes, &w->const_offset));
        w->has_const = true;
    }
    switch (n->info.op) {
    case RLX_OP_ROPE: return prepare_rope(p, i);
    case RLX_OP_EMBED: return in(p, i, 0)->store == VK_STORE_WEIGHT ? check_type(p, i, in(p, i, 0), "table") : NULL;
    case RLX_OP_MOE_FFN:
        for (int k = 2; k < 5; k++)
            if (in(p, i, k)->store == VK_STORE_WEIGHT) RLX_TRY(check_type(p, i, in(p, i, k), "expert weights"));
        return vk_prepare_moe_ffn(p, i);
    case RLX_OP_MOE_ROUTE:
        if (n->info.shape.dim[1] > MAX_EXPERTS)
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d MOE_ROUTE: %" PRId64 " experts, at most %d supported", i,
                              n->info.shape.dim[1], MAX_EXPERTS);
        return NULL;
    case RLX_OP_ATTENTION:
        if (in(p, i, 0)->info.shape.dim[2] > MAX_HEAD || n->info.shape.dim[2] > MAX_HEAD)
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d ATTENTION: head size %" PRId64 "/%" PRId64
                              " exceeds %d", i, in(p, i, 0)->info.shape.dim[2], n->info.shape.dim[2], MAX_HEAD);
        if (vk_attention_splits(p, i) > 1) /* per (row, head, split): max, sum, acc[Dv] */
            n->scratch_bytes = (uint64_t)(n->numel / n->info.shape.dim[2]) * vk_attention_splits(p, i) *
                               ((uint64_t)n->info.shape.dim[2] + 2) * 4;
        return NULL;
    case RLX_OP_KV_WRITE: return add_check(p, i, n->info.shape.dim[0], in(p, i, 1)->info.shape.dim[0]);
    case RLX_OP_ADD:
        if (n->post == RLX_NO_NODE) return NULL;
        return vk_const_reserve(p, vk_post_sync_bytes(p, i), &n->const_offset);
    case RLX_OP_MATMUL:
        if (n->post != RLX_NO_NODE) RLX_TRY(vk_const_reserve(p, vk_post_sync_bytes(p, i), &n->const_offset));
        return in(p, i, 1)->store == VK_STORE_WEIGHT ? check_type(p, i, in(p, i, 1), "weight") : NULL;
    case RLX_OP_LAST_ROW: return add_check(p, i, in(p, i, 0)->info.shape.dim[0], 0);
    case RLX_OP_CAUSAL_CONV:
    case RLX_OP_DELTA_RULE: return vk_prepare_recurrent(p, i);
    default: return NULL;
    }
}

/* ---- lowerings ---- */

static rlx_status lower_none(rlx_program *p, rlx_node i) {
    (void)p;
    (void)i;
    return NULL;
}
#define lower_INPUT lower_none
#define lower_WEIGHT lower_none
#define lower_KV_CACHE lower_none
#define lower_RESHAPE lower_none
#define lower_STATE lower_none /* the session's state buffer (vk_compile.c bind_state) */
/* the Gated DeltaNet ops: vk_lower_recurrent.c */
#define lower_CAUSAL_CONV vk_lower_CAUSAL_CONV
#define lower_DELTA_RULE vk_lower_DELTA_RULE
#define lower_DELTA_GATE vk_lower_DELTA_GATE
#define lower_L2_NORM vk_lower_L2_NORM
#define lower_SLICE vk_lower_SLICE
#define lower_SCALE_ROWS vk_lower_SCALE_ROWS
#define lower_MOE_FFN vk_lower_MOE_FFN /* vk_lower_moe.c */

static rlx_status lower_EMBED(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i), *ids = in(p, i, 1);
    matrix m = matrix_of(p, n->info.in[0]);
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(embed, W_TYPE)] = m.type};
    uint64_t rows = (uint64_t)ids->numel, d = (uint64_t)n->info.shape.dim[1];
    for (uint32_t k = 0; k < m.n_parts; k++) {
        vk_range bind[3];
        uint64_t row0, part_rows;
        vk_matrix_part(&m, k, &bind[RLX_VK_BIND(embed, TABLE)], &row0, &part_rows);
        bind[RLX_VK_BIND(embed, IDS)] = vk_node_range(p, n->info.in[1]);
        bind[RLX_VK_BIND(embed, OUT)] = vk_node_range(p, i);
        uint32_t push[8] = {(uint32_t)rows, (uint32_t)d, (uint32_t)m.row_bytes, (uint32_t)row0, (uint32_t)part_rows,
                            (uint32_t)m.rows, (uint32_t)i, n->tok ? 1u : 0u};
        RLX_TRY(vk_emit(p, &p->run, i, RLX_VK_KERNEL_embed, spec, bind, 3,
                        RLX_VK_BIT(embed, TABLE) | RLX_VK_BIT(embed, IDS), RLX_VK_BIT(embed, OUT), push, sizeof push,
                        rows));
    }
    return NULL;
}

/* Workgroup size of a one-row-per-workgroup reduction: short rows (head-sized norms) take the small
 * size, so that threads are not mostly idle (and CPU devices do not switch idle fibers). */
static uint32_t row_wg(const rlx_program *p, uint64_t cols) { return cols <= 1024 ? p->b->wg : p->b->wg_row; }

/* Weight rows per matvec workgroup: one per subgroup of the snapshot's size (a different size at
 * run time only changes how rows are shared out, shaders/matmul.comp). */
uint32_t vk_rows_per_group(const rlx_program *p) {
    uint32_t sg = p->b->dev->caps->subgroup_size;
    return sg && p->b->wg_row > sg ? p->b->wg_row / sg : 1;
}

/* The MATMUL whose dispatch node i emits (its own, or one it absorbed with an epilogue), else
 * RLX_NO_NODE. */
static rlx_node matmul_dispatched_by(const rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (n->info.op == RLX_OP_MATMUL) return n->fused_into == RLX_NO_NODE ? i : RLX_NO_NODE;
    bool add = n->info.op == RLX_OP_ADD && n->fuse == VK_FUSE_MATMUL_ADD;
    bool mul = n->info.op == RLX_OP_MUL && (n->fuse == VK_FUSE_MATMUL_GATE || n->fuse == VK_FUSE_GATE_UP);
    return add || mul ? n->fuse_a : RLX_NO_NODE;
}

/* How the cooperative kernel runs MATMUL mm (dispatched by node i): its mode (COOP_OFF: the tiled
 * kernel), whether it reads f16 rows decoded into i's scratch first (vk_coop_f16_weights), and
 * where in that scratch its split-k partials go: after the f16 rows of the largest part. */
typedef struct coop_use {
    vk_coop_mode mode;
    bool f16_rows;
    uint64_t part_at; /* scratch offset of the partials */
} coop_use;

static rlx_status coop_use_of(const rlx_program *p, rlx_node mm, coop_use *out) {
    const vk_node *x = in(p, mm, 0);
    uint64_t k = (uint64_t)last_dim(x), align = p->b->dev->caps->storage_align;
    *out = (coop_use){COOP_OFF, false, 0};
    if (!vk_takes_tiled(p, (uint64_t)x->numel / k, k, matrix_of(p, in1(p, mm)).type)) return NULL;
    RLX_TRY(vk_coopmat_mode(p, &out->mode));
    if (!vk_coop_fits(p)) out->mode = COOP_OFF;
    out->f16_rows = out->mode != COOP_OFF && vk_coop_f16_weights(p, mm, out->mode);
    uint64_t f16 = out->f16_rows ? vk_largest_part_rows(matrix_of(p, in1(p, mm)).w) * k * 2 : 0;
    out->part_at = align > 1 ? ceil_div(f16, align) * align : f16;
    return NULL;
}

/* The cooperative plan of one weight part of part_rows rows, the type the kernel reads it as, and
 * whether that kernel is shaders/matmul_batch.comp (else matmul_coop.comp). */
static vk_coop_plan coop_part_plan(const rlx_program *p, rlx_node mm, const coop_use *u, uint64_t part_rows,
                                   uint32_t *type, bool *batch) {
    const vk_node *x = in(p, mm, 0);
    uint64_t k = (uint64_t)last_dim(x), rows = (uint64_t)x->numel / k;
    *type = u->f16_rows ? RLX_DTYPE_F16 : matrix_of(p, in1(p, mm)).type;
    *batch = vk_batch_takes(p, u->mode, *type, rows, part_rows);
    if (*batch) return vk_batch_plan_make(p, part_rows, k);
    return vk_coop_plan_make(p, part_rows, rows, k, vk_coop_prec(u->mode, *type));
}

/* Node i's scratch for its cooperative matmul: the f16 rows of the weight's largest part, then the
 * largest split-k partials of a part (split x rows x part rows floats). */
static rlx_status prepare_coop_scratch(rlx_program *p, rlx_node i) {
    rlx_node mm = matmul_dispatched_by(p, i);
    coop_use u;
    if (mm == RLX_NO_NODE) return NULL;
    RLX_TRY(coop_use_of(p, mm, &u));
    if (u.mode == COOP_OFF) return NULL;
    matrix m = matrix_of(p, in1(p, mm));
    const vk_node *x = in(p, mm, 0);
    uint64_t rows = (uint64_t)x->numel / (uint64_t)last_dim(x), parts = 0;
    for (uint32_t k = 0; k < m.n_parts; k++) {
        vk_range r;
        uint64_t row0, part_rows;
        uint32_t type;
        bool batch;
        vk_matrix_part(&m, k, &r, &row0, &part_rows);
        vk_coop_plan c = coop_part_plan(p, mm, &u, part_rows, &type, &batch);
        uint64_t bytes = c.split > 1 ? (uint64_t)c.split * rows * part_rows * 4 : 0;
        if (bytes > parts) parts = bytes;
    }
    p->nodes[i].scratch_bytes = parts ? u.part_at + parts : u.f16_rows ? u.part_at : 0;
    return NULL;
}

/* matmul_tiled.comp takes the bindings and the spec constants it has where matmul_coop.comp has them. */
_Static_assert(RLX_VK_BIND(matmul_tiled, X) == RLX_VK_BIND(matmul_coop, X) &&
                   RLX_VK_BIND(matmul_tiled, W) == RLX_VK_BIND(matmul_coop, W) &&
                   RLX_VK_BIND(matmul_tiled, OUT) == RLX_VK_BIND(matmul_coop, OUT) &&
                   RLX_VK_BIND(matmul_tiled, AUX) == RLX_VK_BIND(matmul_coop, AUX) &&
                   RLX_VK_SPEC(matmul_tiled, W_TYPE) == RLX_VK_SPEC(matmul_coop, W_TYPE) &&
                   RLX_VK_SPEC(matmul_tiled, EPI) == RLX_VK_SPEC(matmul_coop, EPI),
               "shaders/kernels.def: matmul_tiled and matmul_coop bindings differ");

/* A split-k cooperative matmul (shaders/matmul_coop.glsl SPLIT): its partials into out_node's
 * scratch at part_at, then shaders/matmul_reduce.comp adds them up into the output with the
 * epilogue. push and spec are the kernel's; bind its bindings, the partials' filled in here. */
static rlx_status emit_coop_split(rlx_program *p, rlx_node out_node, rlx_vk_kernel kernel, const uint32_t *spec,
                                  vk_range *bind, uint32_t reads, const uint32_t *push, uint64_t groups,
                                  uint64_t part_at, uint32_t epi) {
    const vk_node *n = node(p, out_node);
    uint32_t split = spec[RLX_VK_SPEC(matmul_coop, SPLIT)];
    uint64_t rows = push[0], part_rows = push[2];
    vk_range part = {p->arena[n->scratch_bin].buffer, p->arena[n->scratch_bin].offset + n->scratch_offset + part_at,
                     (uint64_t)split * rows * part_rows * 4};
    bind[RLX_VK_BIND(matmul_coop, PART)] = part;
    RLX_TRY(vk_emit(p, &p->run, out_node, kernel, spec, bind, 5, reads, RLX_VK_BIT(matmul_coop, PART), push,
                    8 * sizeof(uint32_t), groups * split));
    vk_range rbind[3] = {[RLX_VK_BIND(matmul_reduce, PART)] = part,
                         [RLX_VK_BIND(matmul_reduce, OUT)] = bind[RLX_VK_BIND(matmul_coop, OUT)],
                         [RLX_VK_BIND(matmul_reduce, AUX)] = bind[RLX_VK_BIND(matmul_coop, AUX)]};
    uint32_t rspec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(matmul_reduce, EPI)] = epi};
    uint32_t rpush[6] = {(uint32_t)rows, (uint32_t)part_rows, push[3], push[4], push[6], split};
    uint32_t rreads = RLX_VK_BIT(matmul_reduce, PART) | (reads & RLX_VK_BIT(matmul_coop, AUX) ? RLX_VK_BIT(matmul_reduce, AUX) : 0u);
    return vk_emit(p, &p->run, out_node, RLX_VK_KERNEL_matmul_reduce, rspec, rbind, 3, rreads,
                   RLX_VK_BIT(matmul_reduce, OUT), rpush, sizeof rpush, ceil_div(rows * part_rows, p->b->wg));
}

/* Many rows (prefill): on cooperative matrices where the device has them (shaders/matmul_coop.comp,
 * TM x TN output tiles), else 64 x 64 tiles through shared memory in f32 (shaders/matmul_tiled.comp). */
static rlx_status emit_matmul_tiled(rlx_program *p, rlx_node out_node, rlx_node mm, rlx_node aux, uint32_t epi) {
    const vk_node *n = node(p, out_node), *x = in(p, mm, 0);
    matrix m = matrix_of(p, node(p, mm)->info.in[1]);
    uint64_t k = (uint64_t)last_dim(x), cols = (uint64_t)last_dim(n), rows = (uint64_t)x->numel / k;
    coop_use u;
    RLX_TRY(coop_use_of(p, mm, &u));
    vk_coop_mode coop = u.mode;
    rlx_vk_kernel kernel = coop == COOP_OFF       ? RLX_VK_KERNEL_matmul_tiled
                           : coop >= COOP_EMULATE ? RLX_VK_KERNEL_matmul_coop_emu
                                                  : RLX_VK_KERNEL_matmul_coop;
    vk_range xr, auxr = vk_node_range(p, out_node);
    RLX_TRY(vk_f32_range(p, node(p, mm)->info.in[0], &xr));
    if (aux != RLX_NO_NODE) RLX_TRY(vk_f32_range(p, aux, &auxr));
    bool f16_rows = u.f16_rows;
    for (uint32_t part = 0; part < m.n_parts; part++) {
        vk_range bind[5];
        uint64_t row0, part_rows;
        bind[RLX_VK_BIND(matmul_coop, X)] = xr;
        vk_matrix_part(&m, part, &bind[RLX_VK_BIND(matmul_coop, W)], &row0, &part_rows);
        bind[RLX_VK_BIND(matmul_coop, OUT)] = vk_node_range(p, out_node);
        bind[RLX_VK_BIND(matmul_coop, AUX)] = auxr;
        bind[RLX_VK_BIND(matmul_coop, PART)] = bind[RLX_VK_BIND(matmul_coop, OUT)]; /* unused unless split */
        uint32_t type = m.type, row_bytes = (uint32_t)m.row_bytes;
        if (f16_rows) { /* the part decoded into the node's scratch, then read as F16 rows */
            vk_range f16 = {p->arena[n->scratch_bin].buffer, p->arena[n->scratch_bin].offset + n->scratch_offset,
                            part_rows * k * 2};
            vk_range dbind[2] = {bind[RLX_VK_BIND(matmul_coop, W)], f16};
            uint32_t dspec[3] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(dequant, W_TYPE)] = m.type,
                                 [RLX_VK_SPEC(dequant, F16_OUT)] = 1};
            uint32_t dpush[4] = {(uint32_t)part_rows, (uint32_t)k, row_bytes, (uint32_t)mm};
            RLX_TRY(vk_emit(p, &p->run, out_node, RLX_VK_KERNEL_dequant, dspec, dbind, 2, RLX_VK_BIT(dequant, W),
                            RLX_VK_BIT(dequant, OUT), dpush, sizeof dpush, part_rows));
            bind[RLX_VK_BIND(matmul_coop, W)] = f16;
            type = RLX_DTYPE_F16;
            row_bytes = (uint32_t)(k * 2);
        }
        uint32_t prec = vk_coop_prec(coop, type), part_type;
        bool batch = false;
        vk_coop_plan c = coop != COOP_OFF ? coop_part_plan(p, mm, &u, part_rows, &part_type, &batch)
                                          : (vk_coop_plan){64, 64, 1, 1, (uint32_t)k, 64, 64};
        rlx_vk_kernel part_kernel = !batch ? kernel : coop >= COOP_EMULATE ? RLX_VK_KERNEL_matmul_batch_emu
                                                                           : RLX_VK_KERNEL_matmul_batch;
        uint32_t push[8] = {(uint32_t)rows, (uint32_t)k, (uint32_t)part_rows, (uint32_t)row0, (uint32_t)cols,
                            row_bytes, vk_tok_rows(n), c.ksplit};
        uint32_t spec[10] = {[RLX_VK_SPEC_WG] = batch ? 2 * c.tn : coop != COOP_OFF ? 4 * c.tm : 256,
                            [RLX_VK_SPEC(matmul_coop, W_TYPE)] = type,
                            [RLX_VK_SPEC(matmul_coop, EPI)] = epi,
                            [RLX_VK_SPEC(matmul_coop, PREC)] = prec,
                            [RLX_VK_SPEC(matmul_coop, TM)] = c.tm,
                            [RLX_VK_SPEC(matmul_coop, BK)] = c.bk,
                            [RLX_VK_SPEC(matmul_coop, DEPTH)] = c.depth,
                            [RLX_VK_SPEC(matmul_coop, SPLIT)] = c.split,
                            [RLX_VK_SPEC(matmul_coop, TN)] = c.tn,
                            [RLX_VK_SPEC(matmul_coop, OROWS)] = c.orows};
        uint32_t reads = RLX_VK_BIT(matmul_coop, X) | RLX_VK_BIT(matmul_coop, W) |
                         (aux != RLX_NO_NODE ? RLX_VK_BIT(matmul_coop, AUX) : 0u);
        uint64_t groups = ceil_div(part_rows, c.tn) * ceil_div(rows, c.tm);
        if (coop == COOP_OFF) { /* matmul_tiled.comp: the first four bindings, the first seven words */
            RLX_TRY(vk_emit(p, &p->run, out_node, kernel, spec, bind, 4, reads, RLX_VK_BIT(matmul_coop, OUT), push,
                            7 * sizeof(uint32_t), groups));
            continue;
        }
        if (c.split == 1) {
            RLX_TRY(vk_emit(p, &p->run, out_node, part_kernel, spec, bind, 5, reads, RLX_VK_BIT(matmul_coop, OUT),
                            push, sizeof push, groups));
            continue;
        }
        RLX_TRY(emit_coop_split(p, out_node, part_kernel, spec, bind, reads, push, groups, u.part_at, epi));
    }
    return NULL;
}

/* The x rows a matmul reads: its x, or, with its RMS_NORM folded in (VK_FUSE_MATVEC_NORM, matvec.comp
 * NORM 1), the norm's input, weights (binding 4; x again when unused) and eps; or, with the norm
 * prepared by its producer (VK_FUSE_MATVEC_SCALED, NORM 2), the norm's storage and the producer's
 * sync block. */
typedef struct matmul_x {
    vk_range rows, norm_w;
    uint32_t norm; /* matvec.comp NORM */
    float eps;
} matmul_x;

vk_range vk_scaled_sync(const rlx_program *p, rlx_node reader) {
    rlx_node add = node(p, node(p, reader)->fuse_a)->fuse_a; /* the norm's producer */
    return vk_const_range(p, node(p, add)->const_offset, vk_post_sync_bytes(p, add));
}

static rlx_status matmul_x_of(rlx_program *p, rlx_node mm, matmul_x *out) {
    const vk_node *n = node(p, mm);
    *out = (matmul_x){.norm = n->fuse == VK_FUSE_MATVEC_NORM ? 1 : n->fuse == VK_FUSE_MATVEC_SCALED ? 2 : 0};
    rlx_node x = out->norm == 1 ? in0(p, n->fuse_a) : n->info.in[0];
    RLX_TRY(vk_f32_range(p, x, &out->rows));
    out->norm_w = out->rows;
    if (out->norm == 2) out->norm_w = vk_scaled_sync(p, mm);
    if (out->norm != 1) return NULL;
    out->eps = node(p, n->fuse_a)->info.attrs.eps;
    return vk_f32_range(p, in1(p, n->fuse_a), &out->norm_w);
}

/* The gate MATMUL that out_node's matvec computes beside mm's rows (VK_FUSE_GATE_UP), else RLX_NO_NODE. */
static rlx_node gate_of(const rlx_program *p, rlx_node out_node) {
    const vk_node *n = node(p, out_node);
    return n->fuse == VK_FUSE_GATE_UP ? in0(p, n->fuse_b) : RLX_NO_NODE;
}

/* matmul.comp is matvec.comp's fallback with the same x, weight, output and aux bindings, so one
 * read mask serves both. */
_Static_assert(RLX_VK_BIND(matmul, X) == RLX_VK_BIND(matvec, X) && RLX_VK_BIND(matmul, W) == RLX_VK_BIND(matvec, W) &&
                   RLX_VK_BIND(matmul, OUT) == RLX_VK_BIND(matvec, OUT) &&
                   RLX_VK_BIND(matmul, AUX) == RLX_VK_BIND(matvec, AUX),
               "shaders/kernels.def: matmul and matvec bindings differ");

/* matvec.comp WARM for decode attention a (runtime/vk_fuse.c mark_warm): its K and V caches at
 * bindings 9 and 10, their rows' 16-byte words (of F32 or F16 elements) in the scalars. */
static void warm_caches(rlx_program *p, rlx_node a, uint32_t *spec, vk_range *bind, uint32_t *push, uint32_t *reads) {
    const vk_node *kc = in(p, node(p, a)->info.in[1], 0);
    spec[RLX_VK_SPEC(matvec, WARM)] = 1;
    bind[RLX_VK_BIND(matvec, WARM_K)] = vk_node_range(p, node(p, a)->info.in[1]);
    bind[RLX_VK_BIND(matvec, WARM_V)] = vk_node_range(p, node(p, a)->info.in[2]);
    push[10] = (uint32_t)(kc->numel / kc->info.shape.dim[0] * vk_kv_elem_bytes(p->s) / 16);
    *reads |= RLX_VK_BIT(matvec, WARM_K) | RLX_VK_BIT(matvec, WARM_V);
}

/* out = epilogue(x @ w^T) of matmul node mm, written to out_node's storage; aux feeds EPI_ADD /
 * EPI_*_MUL (shaders/matmul.comp, matvec.comp), or is RLX_NO_NODE where the gate of EPI_*_MUL is
 * computed in the same matvec (gate_of). */
static rlx_status emit_matmul(rlx_program *p, rlx_node out_node, rlx_node mm, rlx_node aux, uint32_t epi) {
    const vk_node *n = node(p, out_node), *x = in(p, mm, 0);
    matrix m = matrix_of(p, node(p, mm)->info.in[1]);
    uint64_t k = (uint64_t)last_dim(x), cols = (uint64_t)last_dim(n), rows = (uint64_t)x->numel / k;
    if (vk_takes_tiled(p, rows, k, m.type)) return emit_matmul_tiled(p, out_node, mm, aux, epi);
    /* deterministic: one NX (one pipeline) for every row count */
    uint32_t nx = rows < 8 && !vk_deterministic(p) ? (uint32_t)rows : 8, per_group = vk_rows_per_group(p);
    uint32_t mv_nx = vk_matvec_nx(p, rows, nx);
    uint32_t spec[5] = {[RLX_VK_SPEC_WG] = p->b->wg_row,
                        [RLX_VK_SPEC(matmul, W_TYPE)] = m.type,
                        [RLX_VK_SPEC(matmul, NX)] = nx,
                        [RLX_VK_SPEC(matmul, EPI)] = epi,
                        [RLX_VK_SPEC(matmul, R)] = per_group};
    matmul_x x_in;
    vk_range auxr = vk_node_range(p, out_node);
    RLX_TRY(matmul_x_of(p, mm, &x_in));
    if (aux != RLX_NO_NODE) RLX_TRY(vk_f32_range(p, aux, &auxr));
    rlx_node gate = gate_of(p, out_node), post = n->post;
    uint32_t post_kind = post == RLX_NO_NODE ? 0 : node(p, post)->info.op == RLX_OP_RMS_NORM ? 1 : 2;
    uint32_t reads = RLX_VK_BIT(matvec, X) | RLX_VK_BIT(matvec, W) |
                     (aux != RLX_NO_NODE ? RLX_VK_BIT(matvec, AUX) : 0u) |
                     (x_in.norm ? RLX_VK_BIT(matvec, NORM_W) : 0u) |
                     (gate != RLX_NO_NODE ? RLX_VK_BIT(matvec, GATE_W) : 0u) |
                     (post_kind == 1 ? RLX_VK_BIT(matvec, POST_W) : 0u) | (post_kind ? RLX_VK_BIT(matvec, SYNC) : 0u);
    uint32_t writes = RLX_VK_BIT(matvec, OUT) |
                      (post != RLX_NO_NODE ? RLX_VK_BIT(matvec, POST_OUT) | RLX_VK_BIT(matvec, SYNC) : 0u);
    for (uint32_t part = 0; part < m.n_parts; part++) {
        vk_range bind[11];
        uint64_t row0, part_rows;
        bind[RLX_VK_BIND(matvec, X)] = x_in.rows;
        vk_matrix_part(&m, part, &bind[RLX_VK_BIND(matvec, W)], &row0, &part_rows);
        bind[RLX_VK_BIND(matvec, OUT)] = vk_node_range(p, out_node);
        bind[RLX_VK_BIND(matvec, AUX)] = auxr;
        bind[RLX_VK_BIND(matvec, NORM_W)] = x_in.norm_w;
        bind[RLX_VK_BIND(matvec, GATE_W)] = bind[RLX_VK_BIND(matvec, W)];
        if (gate != RLX_NO_NODE) { /* one part: fuse_gate_up */
            matrix mg = matrix_of(p, in1(p, gate));
            uint64_t g_row0, g_rows;
            vk_matrix_part(&mg, 0, &bind[RLX_VK_BIND(matvec, GATE_W)], &g_row0, &g_rows);
        }
        /* without POST its bindings are the output's (written anyway: no hazard of their own) */
        bind[RLX_VK_BIND(matvec, POST_OUT)] = bind[RLX_VK_BIND(matvec, SYNC)] = bind[RLX_VK_BIND(matvec, OUT)];
        bind[RLX_VK_BIND(matvec, POST_W)] = bind[RLX_VK_BIND(matvec, WARM_K)] = bind[RLX_VK_BIND(matvec, WARM_V)] =
            bind[RLX_VK_BIND(matvec, X)];
        float post_eps = 0.0f;
        if (post != RLX_NO_NODE) { /* one part, one row: fuse_norm_into_producer, fuse_argmax_into_producer */
            bind[RLX_VK_BIND(matvec, POST_OUT)] = vk_node_range(p, post);
            if (post_kind == 1) RLX_TRY(vk_f32_range(p, in1(p, post), &bind[RLX_VK_BIND(matvec, POST_W)]));
            bind[RLX_VK_BIND(matvec, SYNC)] = vk_const_range(p, n->const_offset, vk_post_sync_bytes(p, out_node));
            post_eps = post_kind == 1 ? node(p, post)->info.attrs.eps : 0.0f;
        }
        uint32_t push[13] = {(uint32_t)rows, (uint32_t)k, (uint32_t)part_rows, (uint32_t)row0, (uint32_t)cols,
                             (uint32_t)m.row_bytes, vk_tok_rows(n), f32_bits(x_in.eps), f32_bits(post_eps), 0, 0, 0, 0};
        matvec_plan mv;
        if (vk_takes_matvec(p, mm) && vk_matvec_plan_make(p, m.type, k, part_rows, mv_nx, ceil_div(rows, mv_nx), epi,
                                                          x_in.norm != 0, gate != RLX_NO_NODE, &mv)) {
            mv.spec[RLX_VK_SPEC(matvec, NORM)] = x_in.norm;
            mv.spec[RLX_VK_SPEC(matvec, POST)] = post_kind;
            push[9] = (uint32_t)mv.groups;
            if (n->warm != RLX_NO_NODE) warm_caches(p, n->warm, mv.spec, bind, push, &reads);
            rlx_vk_kernel kernel = vk_matvec_kernel(m.type, k, gate != RLX_NO_NODE);
            RLX_TRY(vk_emit(p, &p->run, out_node, kernel, mv.spec, bind, 11, reads, writes, push, sizeof push,
                            mv.groups));
            continue;
        }
        if (post != RLX_NO_NODE || x_in.norm == 2) /* fuse_*_into_producer planned on matvec.comp */
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d: a norm or argmax fused into its matvec without a matvec plan",
                              out_node);
        uint64_t groups = ceil_div(part_rows, per_group) * ceil_div(rows, nx);
        RLX_TRY(vk_emit(p, &p->run, out_node, RLX_VK_KERNEL_matmul, spec, bind, 4, reads, RLX_VK_BIT(matmul, OUT), push,
                        7 * sizeof *push, groups));
    }
    return NULL;
}

static rlx_status lower_MATMUL(rlx_program *p, rlx_node i) {
    return vk_absorbed(p, i) ? NULL : emit_matmul(p, i, i, RLX_NO_NODE, EPI_NONE);
}

static uint32_t subgroup(const rlx_program *p) {
    uint32_t sg = p->b->dev->caps->subgroup_size;
    return sg ? sg : 1;
}

/* Kernel k, or its *_f16 variant where the pool it reads or writes (node pool) holds F16
 * (shaders/kv_type.glsl). Only these kernels touch pools. */
static rlx_vk_kernel kv_kernel(const rlx_program *p, rlx_node pool, rlx_vk_kernel k) {
    if (pool == RLX_NO_NODE || !vk_pool_f16(p, pool)) return k;
    switch (k) {
    case RLX_VK_KERNEL_kv_write: return RLX_VK_KERNEL_kv_write_f16;
    case RLX_VK_KERNEL_rms_norm: return RLX_VK_KERNEL_rms_norm_f16;
    case RLX_VK_KERNEL_rope: return RLX_VK_KERNEL_rope_f16;
    case RLX_VK_KERNEL_attention: return RLX_VK_KERNEL_attention_f16;
    case RLX_VK_KERNEL_attention_step: return RLX_VK_KERNEL_attention_step_f16;
    case RLX_VK_KERNEL_attention_step_fixed: return RLX_VK_KERNEL_attention_step_fixed_f16;
    case RLX_VK_KERNEL_attention_prefill: return RLX_VK_KERNEL_attention_prefill_f16;
    default: return k;
    }
}

/* The V half of a fused KV write (shaders/rms_norm.comp, rope.comp KV): KV 2 with the V rows and
 * the V cache when kw carries its V partner, else KV 1 (kw != RLX_NO_NODE) or 0, and bindings that
 * the kernel does not touch. */
typedef struct kv_target {
    uint32_t kv, dv;
    vk_range out, vsrc, vcache;
} kv_target;

static rlx_status kv_target_of(rlx_program *p, rlx_node at, rlx_node kw, vk_range x, kv_target *t) {
    *t = (kv_target){0, 0, vk_node_range(p, kw != RLX_NO_NODE ? kw : at), x, vk_node_range(p, at)};
    if (kw == RLX_NO_NODE) return NULL;
    t->kv = 1;
    rlx_node vw = node(p, kw)->fuse_b;
    if (vw == RLX_NO_NODE) return NULL;
    t->kv = 2;
    t->dv = (uint32_t)last_dim(node(p, vw));
    t->vcache = vk_node_range(p, vw);
    return vk_f32_range(p, node(p, vw)->info.in[1], &t->vsrc);
}

/* What one shaders/rms_norm.comp dispatch computes: RMS_NORM node norm for node at (whose dispatch
 * it is), scaled, then rotated by ROPE node rope, written into the caches by KV_WRITE kw, or added
 * to the residual res (gate: multiplied by SiLU of res); the unused ones are RLX_NO_NODE. */
typedef struct norm_job {
    rlx_node at, norm, rope, kw, res;
    float scale;
    bool gate;
} norm_job;

/* Head-sized rows take one subgroup each, several rows per workgroup, and no barriers; longer rows
 * a workgroup, which is wg_row wide only when wg would hold more than NORM_MAX_SLOTS slots per
 * invocation. */
static rlx_status emit_rms_norm(rlx_program *p, norm_job j) {
    const vk_node *n = node(p, j.norm);
    uint64_t cols = (uint64_t)last_dim(n), rows = (uint64_t)n->numel / cols;
    vk_range bind[6];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(rms_norm, X)]));
    RLX_TRY(vk_f32_range(p, n->info.in[1], &bind[RLX_VK_BIND(rms_norm, W)]));
    kv_target kv;
    RLX_TRY(kv_target_of(p, j.at, j.kw, bind[RLX_VK_BIND(rms_norm, X)], &kv));
    bind[RLX_VK_BIND(rms_norm, OUT)] = kv.out;
    bind[RLX_VK_BIND(rms_norm, TURNS)] = kv.out;
    bind[RLX_VK_BIND(rms_norm, V_SRC)] = kv.vsrc;
    bind[RLX_VK_BIND(rms_norm, V_CACHE)] = kv.vcache;
    if (j.res != RLX_NO_NODE) RLX_TRY(vk_f32_range(p, j.res, &bind[RLX_VK_BIND(rms_norm, V_SRC)]));
    uint32_t mode = 0, heads = 1, n_rot = 0, tok = vk_tok_rows(node(p, j.at));
    if (j.rope != RLX_NO_NODE) {
        const vk_node *r = node(p, j.rope);
        mode = r->info.attrs.rope.layout == RLX_ROPE_LAYOUT_NEOX ? 2 : 1;
        heads = (uint32_t)r->info.shape.dim[1];
        n_rot = (uint32_t)r->info.attrs.rope.n_rot;
        bind[RLX_VK_BIND(rms_norm, TURNS)] = vk_const_range(p, r->const_offset, (VkDeviceSize)n_rot / 2 * 8);
        tok = vk_tok_rows(r);
    }
    if (kv.kv) tok = heads; /* a KV_WRITE takes the first n_tokens token rows */
    uint64_t slots = n_rot / 2 + (cols - n_rot + 1) / 2, sg = subgroup(p);
    bool team = slots <= 4 * sg && p->b->wg >= sg;
    uint32_t wg = !team && slots > (uint64_t)NORM_MAX_SLOTS * p->b->wg ? p->b->wg_row : p->b->wg;
    uint64_t per = team ? wg / sg : 1, ns = ceil_div(slots, team ? sg : wg);
    uint32_t spec[7] = {[RLX_VK_SPEC_WG] = wg,
                        [RLX_VK_SPEC(rms_norm, ROPE)] = mode,
                        [RLX_VK_SPEC(rms_norm, TEAM)] = team,
                        [RLX_VK_SPEC(rms_norm, R)] = (uint32_t)per,
                        [RLX_VK_SPEC(rms_norm, NS)] = (uint32_t)(ns < NORM_MAX_SLOTS ? ns : NORM_MAX_SLOTS),
                        [RLX_VK_SPEC(rms_norm, KV)] = kv.kv,
                        [RLX_VK_SPEC(rms_norm, RES)] = j.res == RLX_NO_NODE ? 0u : j.gate ? 2u : 1u};
    uint32_t push[8] = {(uint32_t)rows, (uint32_t)cols, f32_bits(n->info.attrs.eps), f32_bits(j.scale), tok, heads,
                        n_rot, kv.dv};
    uint32_t reads = RLX_VK_BIT(rms_norm, X) | RLX_VK_BIT(rms_norm, W) |
                     (j.rope != RLX_NO_NODE ? RLX_VK_BIT(rms_norm, TURNS) : 0u) |
                     (kv.kv == 2 || j.res != RLX_NO_NODE ? RLX_VK_BIT(rms_norm, V_SRC) : 0u);
    uint32_t writes = RLX_VK_BIT(rms_norm, OUT) | (kv.kv == 2 ? RLX_VK_BIT(rms_norm, V_CACHE) : 0u);
    return vk_emit(p, &p->run, j.at, kv_kernel(p, j.kw, RLX_VK_KERNEL_rms_norm), spec, bind, 6, reads, writes, push,
                   sizeof push, ceil_div(rows, per));
}

static rlx_status lower_RMS_NORM(rlx_program *p, rlx_node i) {
    if (vk_absorbed(p, i) || node(p, i)->fuse == VK_FUSE_NORM_BY_PRODUCER) return NULL;
    return emit_rms_norm(p, (norm_job){i, i, RLX_NO_NODE, RLX_NO_NODE, RLX_NO_NODE, 1.0f, false});
}

/* ROPE node `rope` computed by node at's dispatch, writing K (and V) into the caches when kw is its
 * KV_WRITE (shaders/rope.comp). */
static rlx_status emit_rope(rlx_program *p, rlx_node at, rlx_node rope, rlx_node kw) {
    const vk_node *n = node(p, rope);
    const rlx_rope_attrs *r = &n->info.attrs.rope;
    uint64_t rows = (uint64_t)n->info.shape.dim[0], heads = (uint64_t)n->info.shape.dim[1];
    uint64_t dh = (uint64_t)n->info.shape.dim[2], half = (uint64_t)r->n_rot / 2;
    uint64_t per_head = half + (dh - (uint64_t)r->n_rot + 1) / 2;
    vk_range bind[5];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(rope, X)]));
    bind[RLX_VK_BIND(rope, TURNS)] = vk_const_range(p, n->const_offset, half * 8);
    kv_target kv;
    RLX_TRY(kv_target_of(p, at, kw, bind[RLX_VK_BIND(rope, X)], &kv));
    bind[RLX_VK_BIND(rope, OUT)] = kv.out;
    bind[RLX_VK_BIND(rope, V_SRC)] = kv.vsrc;
    bind[RLX_VK_BIND(rope, V_CACHE)] = kv.vcache;
    uint32_t spec[3] = {[RLX_VK_SPEC_WG] = p->b->wg,
                        [RLX_VK_SPEC(rope, NEOX)] = r->layout == RLX_ROPE_LAYOUT_NEOX,
                        [RLX_VK_SPEC(rope, KV)] = kv.kv};
    uint32_t push[6] = {(uint32_t)rows, (uint32_t)heads, (uint32_t)dh, (uint32_t)r->n_rot,
                        n->tok || kv.kv ? 1u : 0u, kv.dv};
    uint32_t reads = RLX_VK_BIT(rope, X) | RLX_VK_BIT(rope, TURNS) | (kv.kv == 2 ? RLX_VK_BIT(rope, V_SRC) : 0u);
    uint32_t writes = RLX_VK_BIT(rope, OUT) | (kv.kv == 2 ? RLX_VK_BIT(rope, V_CACHE) : 0u);
    return vk_emit(p, &p->run, at, kv_kernel(p, kw, RLX_VK_KERNEL_rope), spec, bind, 5, reads, writes, push,
                   sizeof push, ceil_div(rows * heads * per_head, p->b->wg));
}

static rlx_status lower_ROPE(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (vk_absorbed(p, i)) return NULL;
    if (n->fuse == VK_FUSE_NORM_ROPE)
        return emit_rms_norm(p, (norm_job){i, n->fuse_a, i, RLX_NO_NODE, RLX_NO_NODE, 1.0f, false});
    return emit_rope(p, i, i, RLX_NO_NODE);
}

static rlx_status lower_KV_WRITE(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i), *x = in(p, i, 1);
    if (vk_absorbed(p, i)) return NULL; /* a V write that its K write's kernel does */
    if (n->fuse == VK_FUSE_KV_ROPE) {
        const vk_node *r = node(p, n->fuse_a);
        if (r->fuse == VK_FUSE_NORM_ROPE)
            return emit_rms_norm(p, (norm_job){i, r->fuse_a, n->fuse_a, i, RLX_NO_NODE, 1.0f, false});
        return emit_rope(p, i, n->fuse_a, i);
    }
    uint64_t row = (uint64_t)(n->numel / n->info.shape.dim[0]), rows = (uint64_t)x->info.shape.dim[0];
    vk_range bind[2];
    RLX_TRY(vk_f32_range(p, n->info.in[1], &bind[0]));
    bind[1] = vk_node_range(p, i);
    uint32_t spec[1] = {p->b->wg};
    uint32_t push[2] = {(uint32_t)row, (uint32_t)rows};
    return vk_emit(p, &p->run, i, kv_kernel(p, i, RLX_VK_KERNEL_kv_write), spec, bind, 2, RLX_VK_BIT(kv_write, X),
                   RLX_VK_BIT(kv_write, CACHE), push, sizeof push, stride_groups(rows * row, p->b->wg));
}

/* An attention's K and V are both pools or neither (the kernels take PAGED for both). */
static rlx_status check_kv_operands(const rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (vk_reads_pool(p, n->info.in[1]) == vk_reads_pool(p, n->info.in[2])) return NULL;
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d ATTENTION reads %s from the session's pool and %s from "
                      "this run's rows; both or neither", i, vk_reads_pool(p, n->info.in[1]) ? "K" : "V",
                      vk_reads_pool(p, n->info.in[1]) ? "V" : "K");
}

static rlx_status emit_attention_prefill(rlx_program *p, rlx_node i, vk_prefill_plan plan) {
    const vk_node *n = node(p, i), *q = in(p, i, 0), *k = in(p, i, 1);
    uint64_t rows = (uint64_t)q->info.shape.dim[0], heads = (uint64_t)q->info.shape.dim[1];
    vk_range bind[4];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(attention_prefill, Q)]));
    RLX_TRY(check_kv_operands(p, i));
    RLX_TRY(vk_kv_range(p, n->info.in[1], &bind[RLX_VK_BIND(attention_prefill, K)]));
    RLX_TRY(vk_kv_range(p, n->info.in[2], &bind[RLX_VK_BIND(attention_prefill, V)]));
    bind[RLX_VK_BIND(attention_prefill, OUT)] = vk_node_range(p, i);
    bool vec = q->info.shape.dim[2] % 4 == 0 && n->info.shape.dim[2] % 4 == 0;
    uint32_t spec[5] = {[RLX_VK_SPEC_WG] = 256,
                        [RLX_VK_SPEC(attention_prefill, D)] = plan.d,
                        [RLX_VK_SPEC(attention_prefill, VEC)] = vec, /* rows of 4-float multiples, read as vec4 */
                        [RLX_VK_SPEC(attention_prefill, BKV)] = plan.bkv,
                        [RLX_VK_SPEC(attention_prefill, PAGED)] = vk_reads_pool(p, n->info.in[1])};
    uint32_t push[9] = {(uint32_t)rows,
                        (uint32_t)heads,
                        (uint32_t)k->info.shape.dim[1],
                        (uint32_t)q->info.shape.dim[2],
                        (uint32_t)n->info.shape.dim[2],
                        (uint32_t)k->info.shape.dim[0],
                        (uint32_t)n->info.attrs.window,
                        f32_bits(n->info.attrs.scale),
                        n->tok ? 1u : 0u};
    uint32_t reads =
        RLX_VK_BIT(attention_prefill, Q) | RLX_VK_BIT(attention_prefill, K) | RLX_VK_BIT(attention_prefill, V);
    return vk_emit(p, &p->run, i, kv_kernel(p, n->info.in[1], RLX_VK_KERNEL_attention_prefill), spec, bind, 4, reads,
                   RLX_VK_BIT(attention_prefill, OUT), push, sizeof push,
                   ceil_div(rows, vk_attention_prefill_rows(plan.d)) * heads);
}

/* The q/k side of a fused decode attention: its raw rows, the norm's weights (raw rows when none)
 * and eps, and the RoPE angle steps (runtime/vk_lower.c prepare_rope). */
static rlx_status step_side(rlx_program *p, rlx_node rope, vk_range *x, vk_range *w, vk_range *turns, float *eps) {
    const vk_node *r = node(p, rope);
    rlx_node norm = vk_rope_norm(p, rope);
    RLX_TRY(vk_f32_range(p, norm != RLX_NO_NODE ? in0(p, norm) : in0(p, rope), x));
    *w = *x;
    *eps = 0.0f;
    if (norm != RLX_NO_NODE) {
        RLX_TRY(vk_f32_range(p, in1(p, norm), w));
        *eps = node(p, norm)->info.attrs.eps;
    }
    *turns = vk_const_range(p, r->const_offset, (VkDeviceSize)r->info.attrs.rope.n_rot / 2 * 8);
    return NULL;
}

/* attention_step_fixed.comp where the plan is the one it fixes (one query head per workgroup, blocks
 * of 8 keys, 4 head dims per lane in one load: heads of 128 on subgroups of 32, of 32 on lavapipe's
 * 8), else attention_step.comp. */
static rlx_vk_kernel attention_step_kernel(const rlx_program *p, rlx_node pool, const uint32_t *spec) {
    bool fixed = spec[RLX_VK_SPEC(attention_step, GW)] == 1 && spec[RLX_VK_SPEC(attention_step, KB)] == 8 &&
                 spec[RLX_VK_SPEC(attention_step, EPL)] == 4 && spec[RLX_VK_SPEC(attention_step, EPV)] == 4 &&
                 spec[RLX_VK_SPEC(attention_step, VEC)] == 4;
    return kv_kernel(p, pool, fixed ? RLX_VK_KERNEL_attention_step_fixed : RLX_VK_KERNEL_attention_step);
}

/* attention_step.comp extends attention.comp: its first bindings and spec constants are attention's
 * (but for LPK and VEC, which come after its own: emit_attention_step moves them). */
#define SAME_ATTN_BIND(name) (RLX_VK_BIND(attention, name) == RLX_VK_BIND(attention_step, name))
#define SAME_ATTN_SPEC(name) (RLX_VK_SPEC(attention, name) == RLX_VK_SPEC(attention_step, name))
_Static_assert(SAME_ATTN_BIND(Q) && SAME_ATTN_BIND(K) && SAME_ATTN_BIND(V) && SAME_ATTN_BIND(OUT) &&
                   SAME_ATTN_BIND(PART) && SAME_ATTN_SPEC(GW) && SAME_ATTN_SPEC(SPLIT) && SAME_ATTN_SPEC(KB) &&
                   SAME_ATTN_SPEC(EPL) && SAME_ATTN_SPEC(EPV) && SAME_ATTN_SPEC(DPT),
               "shaders/kernels.def: attention_step does not extend attention");
#undef SAME_ATTN_BIND
#undef SAME_ATTN_SPEC

/* VK_FUSE_ATTN_STEP (fuse_attention_step): the attention's bindings, spec and push constants
 * (its q binding is replaced by the raw q rows) and those of the q/k norm, RoPE and cache writes. */
static rlx_status emit_attention_step(rlx_program *p, rlx_node i, vk_range *bind, uint32_t *spec, uint32_t *push,
                                      uint64_t groups) {
    const vk_node *n = node(p, i);
    rlx_node qr = n->fuse_a, kw = n->fuse_b, vw = n->info.in[2];
    const rlx_rope_attrs *r = &node(p, qr)->info.attrs.rope;
    float q_eps, k_eps;
    vk_range b[11];
    memcpy(b, bind, 5 * sizeof *b);
    RLX_TRY(step_side(p, qr, &b[RLX_VK_BIND(attention_step, Q)], &b[RLX_VK_BIND(attention_step, Q_NORM_W)],
                      &b[RLX_VK_BIND(attention_step, Q_TURNS)], &q_eps));
    RLX_TRY(step_side(p, node(p, kw)->fuse_a, &b[RLX_VK_BIND(attention_step, K_NEW)],
                      &b[RLX_VK_BIND(attention_step, K_NORM_W)], &b[RLX_VK_BIND(attention_step, K_TURNS)], &k_eps));
    RLX_TRY(vk_f32_range(p, in1(p, vw), &b[RLX_VK_BIND(attention_step, V_NEW)]));
    b[RLX_VK_BIND(attention_step, K)] = vk_node_range(p, kw);
    b[RLX_VK_BIND(attention_step, V)] = vk_node_range(p, vw);
    uint32_t dh = push[3], dv = push[4];
    if (r->n_rot == 0) /* no angle is read */
        b[RLX_VK_BIND(attention_step, Q_TURNS)] = b[RLX_VK_BIND(attention_step, K_TURNS)] =
            b[RLX_VK_BIND(attention_step, Q)];
    uint32_t lpk = spec[RLX_VK_SPEC(attention, LPK)], vec = spec[RLX_VK_SPEC(attention, VEC)];
    spec[RLX_VK_SPEC(attention_step, LPK)] = lpk;
    spec[RLX_VK_SPEC(attention_step, VEC)] = vec;
    spec[RLX_VK_SPEC(attention_step, ROPE)] = r->layout == RLX_ROPE_LAYOUT_NEOX ? 2 : 1;
    spec[RLX_VK_SPEC(attention_step, QK_NORM)] = vk_rope_norm(p, qr) != RLX_NO_NODE;
    spec[RLX_VK_SPEC(attention_step, PD)] = dh > dv ? dh : dv;
    push[10] = (uint32_t)r->n_rot;
    push[11] = f32_bits(q_eps);
    push[12] = f32_bits(k_eps);
    bool split = spec[RLX_VK_SPEC(attention_step, SPLIT)] != 0;
    uint32_t reads = RLX_VK_BIT(attention_step, Q) | RLX_VK_BIT(attention_step, K) | RLX_VK_BIT(attention_step, V) |
                     RLX_VK_BIT(attention_step, K_NEW) | RLX_VK_BIT(attention_step, V_NEW) |
                     RLX_VK_BIT(attention_step, Q_NORM_W) | RLX_VK_BIT(attention_step, K_NORM_W) |
                     RLX_VK_BIT(attention_step, Q_TURNS) | RLX_VK_BIT(attention_step, K_TURNS);
    uint32_t writes = RLX_VK_BIT(attention_step, K) | RLX_VK_BIT(attention_step, V) | RLX_VK_BIT(attention_step, OUT) |
                      (split ? RLX_VK_BIT(attention_step, PART) : 0u);
    return vk_emit(p, &p->run, i, attention_step_kernel(p, kw, spec), spec, b, 11, reads, writes, push,
                   13 * sizeof *push, groups);
}

/* shaders/attention.comp: one workgroup per (query row, block of GW heads, key split) of
 * vk_attention_wg invocations; lanes per key and their shares of the head dims from
 * vk_attention_lanes, and blocks of keys that keep a lane's loads to about 64 values (32 where keys
 * are split). */
static rlx_status lower_ATTENTION(rlx_program *p, rlx_node i) {
    vk_prefill_plan plan;
    if (vk_attention_prefill_plan(p, i, &plan)) return emit_attention_prefill(p, i, plan);
    const vk_node *n = node(p, i), *q = in(p, i, 0), *k = in(p, i, 1);
    uint64_t rows = (uint64_t)q->info.shape.dim[0], heads = (uint64_t)q->info.shape.dim[1];
    uint32_t splits = vk_attention_splits(p, i), dv = (uint32_t)n->info.shape.dim[2];
    uint32_t dh = (uint32_t)q->info.shape.dim[2];
    uint32_t gw = vk_attention_gw(p, (int64_t)rows, (int64_t)heads, k->info.shape.dim[1], splits);
    uint32_t wg = vk_attention_wg(p, gw, dv, dh > dv ? dh : dv, n->fuse == VK_FUSE_ATTN_STEP);
    /* Keys per lane group and block: two blocks of K and V rows are registers. Split key ranges are short
     * walks of many workgroups, which the registers of half the keys let the device hold two of per
     * multiprocessor (8B F16 on an H200, tg128 at depth 4,096: 173.6 t/s against 154.0; depth 512:
     * 195.6 against 188.4); an unsplit walk is long, and keeps the larger blocks. */
    vk_attn_lanes ln = vk_attention_lanes(p, dh, dv);
    uint32_t kb = (splits > 1 ? 32 : 64) / (ln.epl + ln.epv);
    kb = rlx_vk_tuned_pow2(p->b->tuning.attn_kb, 1, 16, kb); /* RLX_VK_ATTN_KB */
    vk_range bind[5];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(attention, Q)]));
    RLX_TRY(check_kv_operands(p, i));
    RLX_TRY(vk_kv_range(p, n->info.in[1], &bind[RLX_VK_BIND(attention, K)]));
    RLX_TRY(vk_kv_range(p, n->info.in[2], &bind[RLX_VK_BIND(attention, V)]));
    bind[RLX_VK_BIND(attention, OUT)] = vk_node_range(p, i);
    bind[RLX_VK_BIND(attention, PART)] = bind[RLX_VK_BIND(attention, OUT)];
    if (splits > 1)
        bind[RLX_VK_BIND(attention, PART)] = (vk_range){
            p->arena[n->scratch_bin].buffer, p->arena[n->scratch_bin].offset + n->scratch_offset, n->scratch_bytes};
    uint32_t spec[12] = {[RLX_VK_SPEC_WG] = wg,
                         [RLX_VK_SPEC(attention, GW)] = gw,
                         [RLX_VK_SPEC(attention, SPLIT)] = splits > 1,
                         [RLX_VK_SPEC(attention, KB)] = kb ? kb : 1,
                         [RLX_VK_SPEC(attention, EPL)] = ln.epl,
                         [RLX_VK_SPEC(attention, EPV)] = ln.epv,
                         [RLX_VK_SPEC(attention, LPK)] = ln.lpk,
                         [RLX_VK_SPEC(attention, VEC)] = ln.vec,
                         [RLX_VK_SPEC(attention, DPT)] = (uint32_t)ceil_div(dv, wg),
                         [RLX_VK_SPEC(attention, PAGED)] = vk_reads_pool(p, n->info.in[1])};
    uint32_t push[13] = {(uint32_t)rows,
                         (uint32_t)heads,
                         (uint32_t)k->info.shape.dim[1],
                         dh,
                         dv,
                         (uint32_t)k->info.shape.dim[0],
                         (uint32_t)n->info.attrs.window,
                         f32_bits(n->info.attrs.scale),
                         n->tok ? 1u : 0u,
                         splits};
    if (n->fuse == VK_FUSE_ATTN_STEP)
        RLX_TRY(emit_attention_step(p, i, bind, spec, push, rows * (heads / gw) * splits));
    else
        RLX_TRY(vk_emit(p, &p->run, i, kv_kernel(p, n->info.in[1], RLX_VK_KERNEL_attention), spec, bind, 5,
                        RLX_VK_BIT(attention, Q) | RLX_VK_BIT(attention, K) | RLX_VK_BIT(attention, V),
                        splits > 1 ? RLX_VK_BIT(attention, PART) : RLX_VK_BIT(attention, OUT), push, 10 * sizeof *push,
                        rows * (heads / gw) * splits));
    if (splits == 1) return NULL;
    vk_range cbind[2] = {[RLX_VK_BIND(attn_combine, PART)] = bind[RLX_VK_BIND(attention, PART)],
                         [RLX_VK_BIND(attn_combine, OUT)] = bind[RLX_VK_BIND(attention, OUT)]};
    uint32_t cspec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(attn_combine, MAX_SPLITS)] = ATTN_MAX_SPLITS};
    uint32_t cpush[5] = {(uint32_t)rows, (uint32_t)heads, dv, splits, n->tok ? 1u : 0u};
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_attn_combine, cspec, cbind, 2, RLX_VK_BIT(attn_combine, PART),
                   RLX_VK_BIT(attn_combine, OUT), cpush, sizeof cpush, rows * heads);
}

/* out_node = op(a, b) elementwise (b RLX_NO_NODE for unary ops). */
static rlx_status elementwise(rlx_program *p, rlx_node i, uint32_t op, rlx_node a, rlx_node b, float scale) {
    const vk_node *n = node(p, i);
    vk_range bind[3];
    RLX_TRY(vk_f32_range(p, a, &bind[RLX_VK_BIND(ew, A)]));
    if (b != RLX_NO_NODE)
        RLX_TRY(vk_f32_range(p, b, &bind[RLX_VK_BIND(ew, B)]));
    else
        bind[RLX_VK_BIND(ew, B)] = bind[RLX_VK_BIND(ew, A)];
    bind[RLX_VK_BIND(ew, OUT)] = vk_node_range(p, i);
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(ew, OP)] = op};
    uint32_t push[3] = {(uint32_t)n->numel, f32_bits(scale), n->tok};
    uint32_t reads = RLX_VK_BIT(ew, A) | (b != RLX_NO_NODE ? RLX_VK_BIT(ew, B) : 0u);
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_ew, spec, bind, 3, reads, RLX_VK_BIT(ew, OUT), push, sizeof push,
                   stride_groups((uint64_t)n->numel, p->b->wg));
}

static rlx_status lower_ADD(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (vk_absorbed(p, i)) return NULL; /* the inner sum of a MoE's (vk_fuse.c fuse_moe) */
    if (n->fuse == VK_FUSE_MATMUL_ADD) return emit_matmul(p, i, n->fuse_a, n->fuse_b, EPI_ADD);
    if (n->fuse == VK_FUSE_MOE_ADD) return vk_lower_moe_add(p, i); /* vk_lower_moe.c */
    if (n->fuse == VK_FUSE_NORM_ADD)
        return emit_rms_norm(p, (norm_job){i, n->fuse_a, RLX_NO_NODE, RLX_NO_NODE, n->fuse_b, 1.0f, false});
    return elementwise(p, i, EW_ADD, in0(p, i), in1(p, i), 1.0f);
}

static rlx_status lower_MUL(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (n->fuse == VK_FUSE_MATMUL_GATE || n->fuse == VK_FUSE_GATE_UP) {
        bool gelu = node(p, n->fuse_b)->info.op == RLX_OP_GELU_TANH;
        rlx_node gate = n->fuse == VK_FUSE_GATE_UP ? RLX_NO_NODE : in0(p, n->fuse_b); /* else in the matvec */
        return emit_matmul(p, i, n->fuse_a, gate, gelu ? EPI_GELU_MUL : EPI_SILU_MUL);
    }
    if (n->fuse == VK_FUSE_NORM_GATE)
        return emit_rms_norm(p, (norm_job){i, n->fuse_a, RLX_NO_NODE, RLX_NO_NODE, in0(p, n->fuse_b), 1.0f, true});
    if (n->fuse == VK_FUSE_ACT_MUL) {
        bool gelu = node(p, n->fuse_a)->info.op == RLX_OP_GELU_TANH;
        return elementwise(p, i, gelu ? EW_GELU_MUL : EW_SILU_MUL, in0(p, n->fuse_a), n->fuse_b, 1.0f);
    }
    return elementwise(p, i, EW_MUL, in0(p, i), in1(p, i), 1.0f);
}

static rlx_status lower_SCALE(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (n->fused_into != RLX_NO_NODE) return NULL; /* q's scale, absorbed by DELTA_RULE (vk_fuse.c) */
    if (n->fuse == VK_FUSE_L2_SCALE) return vk_emit_l2_norm(p, i, n->fuse_a, n->info.attrs.scale);
    if (n->fuse == VK_FUSE_NORM_SCALE)
        return emit_rms_norm(p, (norm_job){i, n->fuse_a, RLX_NO_NODE, RLX_NO_NODE, RLX_NO_NODE, n->info.attrs.scale, false});
    return elementwise(p, i, EW_SCALE, in0(p, i), RLX_NO_NODE, n->info.attrs.scale);
}

static rlx_status lower_SILU(rlx_program *p, rlx_node i) {
    return vk_absorbed(p, i) ? NULL : elementwise(p, i, EW_SILU, in0(p, i), RLX_NO_NODE, 1.0f);
}

static rlx_status lower_SIGMOID(rlx_program *p, rlx_node i) {
    return vk_absorbed(p, i) ? NULL : elementwise(p, i, EW_SIGMOID, in0(p, i), RLX_NO_NODE, 1.0f);
}

static rlx_status lower_GELU_TANH(rlx_program *p, rlx_node i) {
    return vk_absorbed(p, i) ? NULL : elementwise(p, i, EW_GELU_TANH, in0(p, i), RLX_NO_NODE, 1.0f);
}

/* SOFTMAX: one workgroup per row of the last dim of x. */
static rlx_status row_reduction(rlx_program *p, rlx_node i, rlx_vk_kernel k, uint32_t tok) {
    _Static_assert(RLX_VK_BIND(softmax, X) == 0 && RLX_VK_BIND(softmax, OUT) == 1, "softmax: x, out");
    const vk_node *x = in(p, i, 0);
    uint64_t cols = (uint64_t)last_dim(x), rows = (uint64_t)x->numel / cols;
    vk_range bind[2];
    RLX_TRY(vk_f32_range(p, node(p, i)->info.in[0], &bind[0]));
    bind[1] = vk_node_range(p, i);
    uint32_t spec[1] = {row_wg(p, cols)};
    uint32_t push[3] = {(uint32_t)rows, (uint32_t)cols, tok};
    return vk_emit(p, &p->run, i, k, spec, bind, 2, RLX_VK_BIT(softmax, X), RLX_VK_BIT(softmax, OUT), push, sizeof push,
                   rows);
}

static rlx_status lower_SOFTMAX(rlx_program *p, rlx_node i) {
    return row_reduction(p, i, RLX_VK_KERNEL_softmax, vk_tok_rows(node(p, i)));
}
/* ARGMAX's output holds one element per row of x, so its token row size is its rows per token.
 * Greedy decoding takes it over one vocabulary row: a single workgroup, so it gets the largest. */
static rlx_status lower_ARGMAX(rlx_program *p, rlx_node i) {
    if (node(p, i)->fuse == VK_FUSE_ARGMAX_BY_PRODUCER) return NULL;
    const vk_node *x = in(p, i, 0);
    uint64_t cols = (uint64_t)last_dim(x), rows = (uint64_t)x->numel / cols;
    vk_range bind[2];
    RLX_TRY(vk_f32_range(p, node(p, i)->info.in[0], &bind[0]));
    bind[1] = vk_node_range(p, i);
    const rlx_vk_caps *c = p->b->dev->caps;
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = cols > 8192 ? rlx_vk_caps_wg_pow2(c, 1024) : row_wg(p, cols),
                        [RLX_VK_SPEC(argmax, VEC)] = cols % 4 == 0};
    uint32_t push[3] = {(uint32_t)rows, (uint32_t)cols, node(p, i)->tok};
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_argmax, spec, bind, 2, RLX_VK_BIT(argmax, X), RLX_VK_BIT(argmax, OUT),
                   push, sizeof push, rows);
}

static rlx_status lower_LAST_ROW(rlx_program *p, rlx_node i) {
    const vk_node *x = in(p, i, 0);
    uint64_t row = (uint64_t)(x->numel / x->info.shape.dim[0]);
    vk_range bind[2];
    RLX_TRY(vk_f32_range(p, node(p, i)->info.in[0], &bind[0]));
    bind[1] = vk_node_range(p, i);
    uint32_t spec[1] = {p->b->wg};
    uint32_t push[1] = {(uint32_t)row};
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_last_row, spec, bind, 2, RLX_VK_BIT(last_row, X),
                   RLX_VK_BIT(last_row, OUT), push, sizeof push, stride_groups(row, p->b->wg));
}

static rlx_status lower_GATHER_ROWS(rlx_program *p, rlx_node i) {
    const vk_node *x = in(p, i, 0), *n = node(p, i);
    uint64_t row = (uint64_t)(x->numel / x->info.shape.dim[0]), rows = (uint64_t)n->info.shape.dim[0];
    vk_range bind[3];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(gather_rows, X)]));
    bind[RLX_VK_BIND(gather_rows, IDX)] = vk_node_range(p, n->info.in[1]);
    bind[RLX_VK_BIND(gather_rows, OUT)] = vk_node_range(p, i);
    uint32_t spec[1] = {p->b->wg};
    uint32_t push[2] = {(uint32_t)row, (uint32_t)rows};
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_gather_rows, spec, bind, 3,
                   RLX_VK_BIT(gather_rows, X) | RLX_VK_BIT(gather_rows, IDX), RLX_VK_BIT(gather_rows, OUT), push,
                   sizeof push, stride_groups(row * rows, p->b->wg));
}

static rlx_status lower_MOE_ROUTE(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    uint64_t rows = (uint64_t)n->info.shape.dim[0], experts = (uint64_t)n->info.shape.dim[1];
    vk_range bind[2];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[0]));
    bind[1] = vk_node_range(p, i);
    /* registers for ceil(E / S) logits a lane, S the smallest subgroup size the device may run */
    uint32_t per = 1, s_min = p->b->dev->caps->subgroup_min ? p->b->dev->caps->subgroup_min : 1;
    while (per * s_min < experts) per *= 2;
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(moe_route, PER)] = per};
    uint32_t push[5] = {(uint32_t)rows, (uint32_t)experts, (uint32_t)n->info.attrs.top_k, n->info.attrs.norm_topk,
                        vk_tok_rows(n)};
    /* a row per subgroup: at least wg / (the largest subgroup size) rows per workgroup */
    uint32_t per_wg = p->b->wg / p->b->dev->caps->subgroup_max;
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_moe_route, spec, bind, 2, RLX_VK_BIT(moe_route, X),
                   RLX_VK_BIT(moe_route, OUT), push, sizeof push, ceil_div(rows, per_wg ? per_wg : 1));
}

typedef rlx_status (*lower_fn)(rlx_program *p, rlx_node i);

static const lower_fn lowerings[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = lower_##name,
#include "ir/ops.def"
#undef RLX_OP
};

bool vk_op_supported(rlx_op op) { return (unsigned)op < RLX_OP_COUNT && lowerings[op] != NULL; }

/* Names every op of the graph the backend lacks, each once, with its first node. */
rlx_status vk_check_ops(const rlx_graph *g) {
    bool seen[RLX_OP_COUNT] = {false};
    char list[512];
    size_t used = 0;
    for (rlx_node i = 0; i < rlx_graph_n_nodes(g); i++) {
        rlx_op op = rlx_graph_node(g, i)->op;
        if (vk_op_supported(op) || seen[op]) continue;
        seen[op] = true;
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s (%%%d)", used ? ", " : "",
                                     rlx_op_name(op), i);
    }
    if (used == 0) return NULL;
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: the Vulkan backend has no kernel for %s yet (the CPU backend runs "
                      "them)", list);
}

rlx_status vk_lower_node(rlx_program *p, rlx_node i) {
    rlx_op op = p->nodes[i].info.op;
    if (!vk_op_supported(op))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d %s: no Vulkan lowering", i, rlx_op_name(op));
    return lowerings[op](p, i);
}
