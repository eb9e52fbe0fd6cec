/* The lowering of MOE_FFN (ir/ops.def), on one of two paths that vk_moe_grouped_plan (vk_plan.c)
 * chooses between:
 *  - shaders/moe_mv.comp, for few rows (decode) and deterministic mode: three passes (gate, up times
 *    act(gate), down with the route-weighted sum over the row's slots), each workgroup a few output
 *    rows of one (row, slot), so each expert's weights are read once per row routed to it; decode
 *    rows whose experts fit matvec plans take shaders/matvec.comp EXPERTS instead (moe_matvec);
 *  - the grouped path, for many rows (prefill): shaders/moe_group.comp lists the (row, slot) pairs
 *    of each expert in row order, shaders/moe_mm.comp runs gate, up and down as tiled matmuls over
 *    each expert's pairs (a weight tile read once per tile of pairs), the down pass writing
 *    route-weighted partials per pair, and shaders/moe_sum.comp adds each row's partials in slot
 *    order.
 * Both keep h, [rows, slots, F], at the start of the dispatching node's scratch, with moe_mv.comp's
 * slot numbering, and add the sums that fusion gave the FFN (vk_fuse.c fuse_moe: a shared expert,
 * gated or not, a residual) in their last pass. vk_lower.c's table points here. */
#include "runtime/vk_lower.h"

#define MAX_STRIDE_GROUPS 8192 /* grid-stride kernels: enough groups to fill any device */

enum { MOE_GATE, MOE_UP, MOE_DOWN };  /* shaders/moe_mv.comp and moe_mm.comp MODE */
enum { GROUP_SLOTS, GROUP_LISTS, GROUP_TILES }; /* shaders/moe_group.comp MODE */

/* The node that dispatches MOE_FFN i: i, or the ADD it is fused into (vk_fuse.c fuse_moe). */
static rlx_node dispatcher(const rlx_program *p, rlx_node i) { return vk_absorbed(p, i) ? node(p, i)->fused_into : i; }

/* The dispatching node holds the scratch: h, and the grouped path's arrays. */
rlx_status vk_prepare_moe_ffn(rlx_program *p, rlx_node i) {
    vk_moe_plan plan;
    p->nodes[dispatcher(p, i)].scratch_bytes = vk_moe_grouped_plan(p, i, &plan) ? plan.bytes : vk_moe_h_bytes(p, i);
    return NULL;
}

/* [at, at + bytes) of the scratch of node `owner`. */
static vk_range scratch(const rlx_program *p, rlx_node owner, uint64_t at, uint64_t bytes) {
    const vk_node *n = node(p, owner);
    return (vk_range){p->arena[n->scratch_bin].buffer, p->arena[n->scratch_bin].offset + n->scratch_offset + at, bytes};
}

/* ---- shaders/moe_mv.comp ---- */

/* What MOE_FFN's down pass adds after the experts' sum (shaders/moe_mv.comp EPI; vk_fuse.c fuse_moe). */
typedef struct moe_epi {
    uint32_t bits;             /* 1 aux, 2 aux gated by sigmoid(aux_gate), 4 resid */
    vk_range aux, aux_gate, resid;
} moe_epi;

/* One expert pass of MOE_FFN i (shaders/moe_mv.comp), dispatched for node at. */
static rlx_status moe_pass(rlx_program *p, rlx_node at, rlx_node i, uint32_t mode, rlx_node w, vk_range x,
                           vk_range route, vk_range y, const moe_epi *epi) {
    const vk_node *n = node(p, i);
    uint32_t slots = vk_moe_slots(p, i);
    matrix m = matrix_of(p, w);
    RLX_TRY(vk_single_part(p, i, &m));
    const rlx_shape *ws = &node(p, w)->info.shape; /* [E, out, in] */
    uint64_t rows = (uint64_t)n->info.shape.dim[0], out = (uint64_t)ws->dim[1];
    vk_range bind[8] = {[RLX_VK_BIND(moe_mv, X)] = x, [RLX_VK_BIND(moe_mv, ROUTE)] = route, [RLX_VK_BIND(moe_mv, Y)] = y,
                        [RLX_VK_BIND(moe_mv, AUX)] = x, [RLX_VK_BIND(moe_mv, AUX_GATE)] = x, [RLX_VK_BIND(moe_mv, RESID)] = x,
                        [RLX_VK_BIND(moe_mv, NS)] = x};
    /* x prepared by the matvec that computed the norm's input (vk_fuse.c): its sync block's factor */
    bool scaled = mode != MOE_DOWN && n->fuse == VK_FUSE_MATVEC_SCALED;
    if (scaled) bind[RLX_VK_BIND(moe_mv, NS)] = vk_scaled_sync(p, i);
    uint64_t row0, part_rows;
    vk_matrix_part(&m, 0, &bind[RLX_VK_BIND(moe_mv, W)], &row0, &part_rows);
    uint32_t epi_bits = mode == MOE_DOWN ? epi->bits : 0u;
    if (epi_bits & 1u) bind[RLX_VK_BIND(moe_mv, AUX)] = epi->aux;
    if (epi_bits & 2u) bind[RLX_VK_BIND(moe_mv, AUX_GATE)] = epi->aux_gate;
    if (epi_bits & 4u) bind[RLX_VK_BIND(moe_mv, RESID)] = epi->resid;
    uint32_t spec[7] = {[RLX_VK_SPEC_WG] = p->b->wg_row,
                        [RLX_VK_SPEC(moe_mv, W_TYPE)] = m.type,
                        [RLX_VK_SPEC(moe_mv, MODE)] = mode,
                        [RLX_VK_SPEC(moe_mv, ACT)] = 0,
                        [RLX_VK_SPEC(moe_mv, R)] = vk_rows_per_group(p),
                        [RLX_VK_SPEC(moe_mv, EPI)] = epi_bits,
                        [RLX_VK_SPEC(moe_mv, SCALED)] = scaled ? 1u : 0u};
    uint32_t push[8] = {(uint32_t)rows,
                        (uint32_t)ws->dim[0],
                        slots,
                        (uint32_t)ws->dim[2],
                        (uint32_t)out,
                        (uint32_t)m.row_bytes,
                        (uint32_t)(out * m.row_bytes),
                        n->tok ? 1u : 0u};
    uint64_t blocks = ceil_div(out, vk_rows_per_group(p));
    uint64_t groups = mode == MOE_DOWN ? blocks * rows : blocks * slots * rows;
    /* the up pass multiplies into the gate pass's rows in y */
    uint32_t reads = RLX_VK_BIT(moe_mv, X) | RLX_VK_BIT(moe_mv, ROUTE) | RLX_VK_BIT(moe_mv, W) |
                     (mode == MOE_UP ? RLX_VK_BIT(moe_mv, Y) : 0u) | ((epi_bits & 1u) ? RLX_VK_BIT(moe_mv, AUX) : 0u) |
                     ((epi_bits & 2u) ? RLX_VK_BIT(moe_mv, AUX_GATE) : 0u) |
                     ((epi_bits & 4u) ? RLX_VK_BIT(moe_mv, RESID) : 0u) | (scaled ? RLX_VK_BIT(moe_mv, NS) : 0u);
    return vk_emit(p, &p->run, at, RLX_VK_KERNEL_moe_mv, spec, bind, 8, reads, RLX_VK_BIT(moe_mv, Y), push, sizeof push,
                   groups);
}

/* MOE_FFN i in decode on shaders/matvec.comp (EXPERTS), where the expert weights are single parts
 * that fit matvec plans: the gate and up rows in one dispatch (GATE), then, where the down experts
 * fit too and a row routes to at most EXPERT_MAX_SLOTS experts, the down pass as one matvec over
 * the slots' rows side by side, with h weighted by the route and the epilogue's sums (EXPERTS 2, 4,
 * 8, 16). Up to MOE_MATVEC_MAX_ROWS rows, a workgroup per x row. Never in deterministic mode, whose
 * one kernel for every row count is moe_mv.comp. *gate_up / *down: which passes it dispatched. */
#define MOE_MATVEC_MAX_ROWS 8
#define EXPERT_MAX_SLOTS 16 /* shaders/matvec.glsl MAX_SLOTS */

typedef struct moe_mv_job {
    rlx_node at, i;
    vk_range x, route, h;
    const moe_epi *epi;
} moe_mv_job;

static rlx_status moe_matvec_emit(rlx_program *p, const moe_mv_job *j, bool down, matrix *m, uint64_t k,
                                  uint64_t m_rows, matvec_plan *mv, uint32_t experts_bits) {
    const vk_node *n = node(p, j->i);
    const rlx_shape *ws = &in(p, j->i, 4)->info.shape; /* down [E, D, F] */
    uint64_t rows = (uint64_t)n->info.shape.dim[0];
    vk_range bind[11];
    uint64_t row0, part_rows;
    for (int b = 0; b < 11; b++) bind[b] = down ? j->h : j->x;
    vk_matrix_part(m, 0, &bind[RLX_VK_BIND(matvec, W)], &row0, &part_rows);
    bind[RLX_VK_BIND(matvec, POST_W)] = j->route;
    uint32_t reads = RLX_VK_BIT(matvec, X) | RLX_VK_BIT(matvec, W) | RLX_VK_BIT(matvec, POST_W);
    bool scaled = !down && n->fuse == VK_FUSE_MATVEC_SCALED;
    if (!down) {
        matrix mg = matrix_of(p, n->info.in[2]);
        vk_matrix_part(&mg, 0, &bind[RLX_VK_BIND(matvec, GATE_W)], &row0, &part_rows);
        bind[RLX_VK_BIND(matvec, OUT)] = bind[RLX_VK_BIND(matvec, POST_OUT)] = bind[RLX_VK_BIND(matvec, SYNC)] = j->h;
        reads |= RLX_VK_BIT(matvec, GATE_W);
    } else {
        bind[RLX_VK_BIND(matvec, OUT)] = bind[RLX_VK_BIND(matvec, POST_OUT)] = bind[RLX_VK_BIND(matvec, SYNC)] =
            vk_node_range(p, j->at);
        if (j->epi->bits & 1u) bind[RLX_VK_BIND(matvec, AUX)] = j->epi->aux;
        if (j->epi->bits & 2u) bind[RLX_VK_BIND(matvec, WARM_K)] = j->epi->aux_gate;
        if (j->epi->bits & 4u) bind[RLX_VK_BIND(matvec, WARM_V)] = j->epi->resid;
        reads |= (j->epi->bits & 1u ? RLX_VK_BIT(matvec, AUX) : 0u) | (j->epi->bits & 2u ? RLX_VK_BIT(matvec, WARM_K) : 0u) |
                 (j->epi->bits & 4u ? RLX_VK_BIT(matvec, WARM_V) : 0u);
    }
    if (scaled) {
        bind[RLX_VK_BIND(matvec, NORM_W)] = vk_scaled_sync(p, j->i);
        reads |= RLX_VK_BIT(matvec, NORM_W);
    }
    mv->spec[RLX_VK_SPEC(matvec, NORM)] = scaled ? 2 : 0;
    mv->spec[RLX_VK_SPEC(matvec, EXPERTS)] = experts_bits;
    uint32_t push[13] = {(uint32_t)rows, (uint32_t)k, (uint32_t)m_rows, 0, (uint32_t)m_rows, (uint32_t)m->row_bytes,
                         vk_tok_rows(n), 0, 0, (uint32_t)mv->groups, 0, (uint32_t)ws->dim[0], (uint32_t)ws->dim[2]};
    return vk_emit(p, &p->run, j->at, vk_matvec_kernel(m->type, k, !down), mv->spec, bind, 11, reads,
                   RLX_VK_BIT(matvec, OUT), push, sizeof push, mv->groups);
}

static rlx_status moe_matvec(rlx_program *p, const moe_mv_job *j, bool *gate_up, bool *down) {
    const vk_node *n = node(p, j->i);
    uint64_t rows = (uint64_t)n->info.shape.dim[0], d = (uint64_t)in(p, j->i, 0)->info.shape.dim[1];
    rlx_node wg = n->info.in[2], wu = n->info.in[3], wd = n->info.in[4];
    matrix mu = matrix_of(p, wu), md = matrix_of(p, wd);
    uint64_t slots = vk_moe_slots(p, j->i), f = (uint64_t)in(p, j->i, 3)->info.shape.dim[1];
    matvec_plan mv_gu, mv_d;
    *gate_up = *down = false;
    if (vk_deterministic(p) || rows > MOE_MATVEC_MAX_ROWS || !vk_same_single_part_weights(p, wg, wu) ||
        !vk_matvec_plan_make(p, mu.type, d, slots * f, 1, rows, EPI_SILU_MUL, false, true, &mv_gu))
        return NULL;
    uint32_t epi = j->epi->bits & 1u ? EPI_ADD : EPI_NONE;
    /* a slot's part of the virtual row is whole units of matvec.glsl's loads (its wblock): a
     * quantized type's blocks, 16 bytes of a plain type */
    const rlx_dtype_info *ti = rlx_dtype_get(md.type);
    uint32_t block = !ti ? 0 : ti->block_size > 1 ? ti->block_size : 16 / ti->type_size;
    bool with_down = md.w && md.n_parts == 1 && slots <= EXPERT_MAX_SLOTS && block && f % block == 0 &&
                     vk_matvec_plan_make(p, md.type, slots * f, d, 1, rows, epi, false, false, &mv_d);
    *gate_up = true;
    RLX_TRY(moe_matvec_emit(p, j, false, &mu, d, slots * f, &mv_gu, with_down ? 3u : 1u));
    if (!with_down) return NULL;
    *down = true;
    uint32_t bits = 4u | (j->epi->bits & 2u ? 8u : 0u) | (j->epi->bits & 4u ? 16u : 0u);
    return moe_matvec_emit(p, j, true, &md, slots * f, d, &mv_d, bits);
}

/* MOE_FFN i's three passes, dispatched for node at (i itself, or the ADD it is fused into), the down
 * pass writing at's rows. */
static rlx_status emit_moe(rlx_program *p, rlx_node at, rlx_node i, const moe_epi *epi) {
    const vk_node *n = node(p, i);
    vk_range x, route;
    RLX_TRY(vk_f32_range(p, n->info.in[0], &x));
    RLX_TRY(vk_f32_range(p, n->info.in[1], &route));
    vk_range h = scratch(p, at, 0, vk_moe_h_bytes(p, i));
    bool gate_up, down;
    moe_mv_job job = {at, i, x, route, h, epi};
    RLX_TRY(moe_matvec(p, &job, &gate_up, &down));
    if (!gate_up) {
        RLX_TRY(moe_pass(p, at, i, MOE_GATE, n->info.in[2], x, route, h, epi));
        RLX_TRY(moe_pass(p, at, i, MOE_UP, n->info.in[3], x, route, h, epi));
    }
    return down ? NULL : moe_pass(p, at, i, MOE_DOWN, n->info.in[4], h, route, vk_node_range(p, at), epi);
}

/* ---- the grouped path ---- */

/* The grouped path of MOE_FFN i, dispatched for node at (i, or the ADD it is fused into). */
typedef struct grouped {
    rlx_node at;
    vk_moe_plan plan;
    uint32_t rows, experts, slots, f, d, tok;
    vk_range x, route, h, slots_r, list, part;
} grouped;

/* moe_group.comp in `mode`: a workgroup per row (GROUP_SLOTS), per expert (GROUP_LISTS), or one
 * (GROUP_TILES, over the lists' counts). */
static rlx_status emit_group(rlx_program *p, const grouped *g, uint32_t mode) {
    vk_range bind[3] = {[RLX_VK_BIND(moe_group, ROUTE)] = g->route,
                        [RLX_VK_BIND(moe_group, SLOTS)] = g->slots_r,
                        [RLX_VK_BIND(moe_group, LIST)] = g->list};
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(moe_group, MODE)] = mode};
    uint32_t push[5] = {g->rows, g->experts, g->slots, g->tok, 16 * g->plan.rm};
    uint32_t reads = mode == GROUP_SLOTS   ? RLX_VK_BIT(moe_group, ROUTE)
                     : mode == GROUP_LISTS ? RLX_VK_BIT(moe_group, ROUTE) | RLX_VK_BIT(moe_group, SLOTS)
                                           : RLX_VK_BIT(moe_group, LIST);
    uint32_t writes = mode == GROUP_SLOTS ? RLX_VK_BIT(moe_group, SLOTS) : RLX_VK_BIT(moe_group, LIST);
    uint64_t groups = mode == GROUP_SLOTS ? g->rows : mode == GROUP_LISTS ? g->experts : 1;
    return vk_emit(p, &p->run, g->at, RLX_VK_KERNEL_moe_group, spec, bind, 3, reads, writes, push, sizeof push,
                   groups);
}

/* One moe_mm.comp pass: gate (x -> h), up (x, h -> h) or down (h -> the partials). */
static rlx_status emit_tiles(rlx_program *p, const grouped *g, uint32_t mode, rlx_node w) {
    matrix m = matrix_of(p, w);
    RLX_TRY(vk_single_part(p, g->at, &m));
    uint64_t out = mode == MOE_DOWN ? g->d : g->f, k = mode == MOE_DOWN ? g->f : g->d, row0, part_rows;
    vk_range bind[5] = {[RLX_VK_BIND(moe_mm, X)] = mode == MOE_DOWN ? g->h : g->x,
                        [RLX_VK_BIND(moe_mm, ROUTE)] = g->route,
                        [RLX_VK_BIND(moe_mm, LIST)] = g->list,
                        [RLX_VK_BIND(moe_mm, Y)] = mode == MOE_DOWN ? g->part : g->h};
    vk_matrix_part(&m, 0, &bind[RLX_VK_BIND(moe_mm, W)], &row0, &part_rows);
    uint32_t spec[4] = {[RLX_VK_SPEC_WG] = MOE_MM_WG,
                        [RLX_VK_SPEC(moe_mm, W_TYPE)] = m.type,
                        [RLX_VK_SPEC(moe_mm, MODE)] = mode,
                        [RLX_VK_SPEC(moe_mm, RM)] = g->plan.rm};
    uint32_t push[7] = {g->rows, g->experts, g->slots, (uint32_t)k, (uint32_t)out, (uint32_t)m.row_bytes,
                        (uint32_t)(out * m.row_bytes)};
    /* the up pass multiplies into the gate pass's h; the down pass weighs by the route */
    uint32_t reads = RLX_VK_BIT(moe_mm, X) | RLX_VK_BIT(moe_mm, W) | RLX_VK_BIT(moe_mm, LIST) |
                     (mode == MOE_UP ? RLX_VK_BIT(moe_mm, Y) : 0u) |
                     (mode == MOE_DOWN ? RLX_VK_BIT(moe_mm, ROUTE) : 0u);
    uint64_t groups = g->plan.tiles * ceil_div(out, MOE_MM_TN);
    return vk_emit(p, &p->run, g->at, RLX_VK_KERNEL_moe_mm, spec, bind, 5, reads, RLX_VK_BIT(moe_mm, Y), push,
                   sizeof push, groups);
}

/* moe_sum.comp: each row's partials in slot order, then the sums fusion gave the FFN (epi). */
static rlx_status emit_sum(rlx_program *p, const grouped *g, const moe_epi *epi) {
    vk_range out = vk_node_range(p, g->at);
    vk_range bind[6] = {[RLX_VK_BIND(moe_sum, SLOTS)] = g->slots_r,
                        [RLX_VK_BIND(moe_sum, PART)] = g->part,
                        [RLX_VK_BIND(moe_sum, Y)] = out,
                        [RLX_VK_BIND(moe_sum, AUX)] = epi->bits & 1u ? epi->aux : g->part,
                        [RLX_VK_BIND(moe_sum, AUX_GATE)] = epi->bits & 2u ? epi->aux_gate : g->part,
                        [RLX_VK_BIND(moe_sum, RESID)] = epi->bits & 4u ? epi->resid : g->part};
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(moe_sum, EPI)] = epi->bits};
    uint32_t push[4] = {g->rows, g->slots, g->d, g->tok};
    uint32_t reads = RLX_VK_BIT(moe_sum, SLOTS) | RLX_VK_BIT(moe_sum, PART) |
                     (epi->bits & 1u ? RLX_VK_BIT(moe_sum, AUX) : 0u) |
                     (epi->bits & 2u ? RLX_VK_BIT(moe_sum, AUX_GATE) : 0u) |
                     (epi->bits & 4u ? RLX_VK_BIT(moe_sum, RESID) : 0u);
    uint64_t groups = ceil_div((uint64_t)g->rows * g->d, p->b->wg);
    return vk_emit(p, &p->run, g->at, RLX_VK_KERNEL_moe_sum, spec, bind, 6, reads, RLX_VK_BIT(moe_sum, Y), push,
                   sizeof push, groups < MAX_STRIDE_GROUPS ? groups : MAX_STRIDE_GROUPS);
}

/* MOE_FFN i on the grouped path, dispatched for node at, epi the sums fusion gave it. */
static rlx_status lower_grouped(rlx_program *p, rlx_node at, rlx_node i, const vk_moe_plan *plan,
                                const moe_epi *epi) {
    const vk_node *n = node(p, i);
    const rlx_shape *gs = &in(p, i, 2)->info.shape; /* [E, F, D] */
    grouped g = {.at = at,
                 .plan = *plan,
                 .rows = (uint32_t)n->info.shape.dim[0],
                 .experts = (uint32_t)gs->dim[0],
                 .slots = vk_moe_slots(p, i),
                 .f = (uint32_t)gs->dim[1],
                 .d = (uint32_t)gs->dim[2],
                 .tok = n->tok ? 1u : 0u};
    RLX_TRY(vk_f32_range(p, n->info.in[0], &g.x));
    RLX_TRY(vk_f32_range(p, n->info.in[1], &g.route));
    g.h = scratch(p, at, plan->h_at, vk_moe_h_bytes(p, i));
    g.slots_r = scratch(p, at, plan->slots_at, (uint64_t)g.rows * g.slots * 4);
    g.list = scratch(p, at, plan->list_at, ((uint64_t)g.experts + (uint64_t)g.experts * g.rows + 1 + plan->tiles) * 4);
    g.part = scratch(p, at, plan->part_at, (uint64_t)g.rows * g.slots * g.d * 4);
    RLX_TRY(emit_group(p, &g, GROUP_SLOTS));
    RLX_TRY(emit_group(p, &g, GROUP_LISTS));
    RLX_TRY(emit_group(p, &g, GROUP_TILES));
    RLX_TRY(emit_tiles(p, &g, MOE_GATE, n->info.in[2]));
    RLX_TRY(emit_tiles(p, &g, MOE_UP, n->info.in[3]));
    RLX_TRY(emit_tiles(p, &g, MOE_DOWN, n->info.in[4]));
    return emit_sum(p, &g, epi);
}

/* MOE_FFN i on the path its plan chose, dispatched for node at with the sums epi. */
static rlx_status emit_either(rlx_program *p, rlx_node at, rlx_node i, const moe_epi *epi) {
    vk_moe_plan plan;
    return vk_moe_grouped_plan(p, i, &plan) ? lower_grouped(p, at, i, &plan, epi) : emit_moe(p, at, i, epi);
}

rlx_status vk_lower_MOE_FFN(rlx_program *p, rlx_node i) {
    if (vk_absorbed(p, i)) return NULL; /* dispatched by the ADD it is fused into */
    moe_epi none = {0};
    return emit_either(p, i, i, &none);
}

/* ADD at = [x +] (moe + y) (VK_FUSE_MOE_ADD): y, or y's SCALE_ROWS(shared, SIGMOID(g)) when both were
 * absorbed, and x go into the down pass (moe_sum.comp on the grouped path). */
rlx_status vk_lower_moe_add(rlx_program *p, rlx_node at) {
    const vk_node *n = node(p, at);
    rlx_node moe = n->fuse_a, c1 = n->fuse_b != RLX_NO_NODE ? n->fuse_b : at;
    rlx_node y = in0(p, c1) == moe ? in1(p, c1) : in0(p, c1);
    moe_epi epi = {.bits = 1u};
    if (node(p, y)->fused_into == at) { /* SCALE_ROWS(shared, SIGMOID(g)) */
        RLX_TRY(vk_f32_range(p, in0(p, y), &epi.aux));
        RLX_TRY(vk_f32_range(p, in0(p, in1(p, y)), &epi.aux_gate));
        epi.bits |= 2u;
    } else
        RLX_TRY(vk_f32_range(p, y, &epi.aux));
    if (n->fuse_b != RLX_NO_NODE) {
        RLX_TRY(vk_f32_range(p, in0(p, at) == c1 ? in1(p, at) : in0(p, at), &epi.resid));
        epi.bits |= 4u;
    }
    return emit_either(p, at, moe, &epi);
}
