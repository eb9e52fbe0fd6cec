/* The Vulkan planner: the decisions that fusion (vk_fuse.c) and lowering (vk_lower.c) both rest on,
 * as pure functions of the program's graph, the device's capability snapshot and the tuning knobs:
 * which kernel a node gets (matvec.comp, matmul.comp, the tiled or cooperative kernels, the
 * attention kernels) and its plan (threads, rows and groups; tiles; key splits). Nothing here emits
 * a dispatch, so fusion can ask what lowering will do without calling into it.
 *
 * Deterministic mode (vk_deterministic): the default picks kernels by row count and KV capacity,
 * and each kernel sums a row in its own order, so a row's bits would depend on its batch. There,
 * each op takes one kernel and one set of reduction-order constants for every row count:
 *   - MATMUL: shaders/matmul_tiled.comp (f32, each output summed over k in one fixed order whatever
 *     the tile it sits in) for all rows, where its rows of k % 32 == 0 allow, else matmul.comp with
 *     NX fixed (vk_lower.c emit_matmul); never matvec.comp, whose plan (threads per row, units per
 *     trip, rows per group) follows the row count, nor the cooperative kernel (off: rlx_vk_tuning);
 *   - ATTENTION: shaders/attention.comp without key splits (their ranges follow the KV capacity),
 *     never attention_prefill.comp (it takes over from 16 query rows);
 *   - DELTA_RULE: shaders/delta_prep.comp + delta_chunk.comp for every row count (a sequence's bits then follow its
 *     own rows and where its chunks start, as on the CPU), never delta_step.comp; CAUSAL_CONV its
 *     prefill form (vk_lower_recurrent.c);
 *   - fusions that exist for one row or for matvec.comp only (vk_fuse.c: attention_step, the norm
 *     folded into matvecs or computed by their producer, gate + up in one matvec, argmax by the
 *     logits' matvec) do not happen; those for any row count stay;
 *   - MOE_FFN: shaders/moe_mv.comp for every row count, never the grouped path (vk_moe_grouped_plan:
 *     its tile size follows the rows).
 * The norms, RoPE, softmax, argmax, MoE routing and elementwise kernels plan by row length, never by
 * rows. */
#include "runtime/vk_plan.h"

#include "shaders/sync_layout.h"

#define TILED_MIN_ROWS 16       /* from here on a weight tile is reused by 16+ rows: tiles pay */
#define TILED_SHORT_K 3072      /* ... except on a GPU for rows this short, from TILED_MIN_ROWS_SHORT_K rows */
#define TILED_MIN_ROWS_SHORT_K 32
#define ATTN_SPLIT_KEYS 64      /* keys per attention split at least: two chunks */
#define ATTN_SPLIT_GROUPS 256   /* decode attention's workgroups when keys are split, about */
#define ATTN_PREFILL_MIN_ROWS 16 /* query rows from which shaders/attention_prefill.comp takes over */
#define ATTN_SPLIT_MAX_ROWS 8   /* up to here a long key range is split (from 16 rows: attention_prefill.comp) */
#define ATTN_BATCH_SPLITS 2     /* ... past it, a decode batch's sequences each in this many ranges */
#define ATTN_MAX_GW 4           /* query heads per attention workgroup at most (their values are registers) */
/* ... by default where keys are split: each workgroup's walk is long anyway, and its heads share it */
#define ATTN_DEFAULT_GW 2

/* ---- prefill matmuls: the tiled and cooperative kernels ---- */

/* RLX_VK_COOPMAT (the backend's tuning, runtime/vk_options.h) picks how prefill matmuls use the
 * cooperative-matrix kernel on devices that have it:
 *   unset or mixed: f16 operands, f32 accumulation (as GPU runtimes do; F16 weights are exact in
 *     f16, decoded quantized weights round by 2^-12 relative, far below their quantization step;
 *     the fixtures README's f16 / mixed-compute tolerance);
 *   exact: operands split in f16 pairs, f32 accuracy (the f32 tolerances), 2 or 3 multiplies;
 *   0: never (shaders/matmul_tiled.comp, f32);
 *   emulate, emulate-mixed: the exact or mixed kernel with its matrix operations done by plain code
 *     (shaders/matmul_coop_emu.comp) on any device: slow, for testing where there are none.
 * RLX_VK_COOPMAT_TM=64|128 and RLX_VK_COOPMAT_DEPTH=1|2 (4: matmul_batch only) override the tile
 * height and prefetch depth vk_coop_plan_make picks. */
rlx_status vk_coopmat_mode(const rlx_program *p, vk_coop_mode *out) {
    *out = (vk_coop_mode)p->b->tuning.coopmat; /* unset and "no kernel on the device" resolved there */
    return NULL;
}

/* shaders/matmul_coop.glsl PREC: in the exact modes F16 weights go as they are (exact in f16), other
 * types are split too. */
uint32_t vk_coop_prec(vk_coop_mode mode, uint32_t type) {
    if (mode == COOP_MIXED || mode == COOP_EMULATE_MIXED) return 0;
    return type == RLX_DTYPE_F16 ? 1 : 2;
}

/* 64 x 64 tiles from which 128-row tiles still leave a couple of workgroups per multiprocessor of a
 * large GPU: below it, taller tiles would idle part of the device */
#define COOP_TALL_TILES 512

/* Shared memory of shaders/matmul_coop.glsl in bytes: the staged operands or the result rounds of
 * orows rows, whichever is larger, and its flag word. */
static uint64_t coop_shared(uint64_t tm, uint64_t tn, uint64_t bk, uint32_t prec, uint64_t orows) {
    uint64_t s = bk / 8 + 1, ops = (tm * (prec >= 1 ? 2 : 1) + tn * (prec >= 2 ? 2 : 1)) * s;
    uint64_t outs = orows * (tn / 4 + 1);
    return (ops > outs ? ops : outs) * 16 + 4;
}

/* Shared memory of shaders/matmul_batch.glsl in bytes (TM 64, BK 64): two x buffers and each
 * subgroup's 16 weight rows, or the result rounds, whichever is larger; its flag. */
static uint64_t batch_shared(uint64_t tn) {
    uint64_t s = 64 / 8 + 1, ops = (2 * 64 + tn) * s, outs = tn * (16 / 4 + 1);
    return (ops > outs ? ops : outs) * 16 + 4;
}

/* Workgroups a GPU's plan keeps by splitting k: a couple per multiprocessor of a large GPU */
#define COOP_SPLIT_GROUPS 256
/* k steps (of BK) each split keeps at least: its loads need a few steps to overlap the multiplies */
#define COOP_SPLIT_MIN_STEPS 4
#define COOP_SPLIT_MAX 64

/* 128-wide tiles (TN 128: each subgroup 32 w rows) where a grid of them would still have this
 * many workgroups: each staged x tile feeds twice the weights (one H100, pp512, the knob on every
 * matmul: 8B F16 5,032 -> 6,751 t/s, Q4_K_M 4,707 -> 6,154; 0.6B, whose grids this rule leaves at
 * 64, 1-3% slower; decode batches of 64 rows too, Q4_K_M B = 64 2,504 -> 1,997) */
#define COOP_WIDE_TILES 256

/* plan's k split for a grid of `tiles` workgroups over k: on a GPU up to COOP_SPLIT_GROUPS
 * workgroups (RLX_VK_COOPMAT_GROUPS), each keeping COOP_SPLIT_MIN_STEPS steps of plan->bk, or a
 * count forced by RLX_VK_COOPMAT_SPLIT (at most one per step). */
static void coop_split(const rlx_program *p, vk_coop_plan *plan, uint64_t tiles, uint64_t k) {
    uint64_t steps = ceil_div(k, plan->bk), split = 1;
    uint64_t want = rlx_vk_tuned_pow2(p->b->tuning.coopmat_groups, 1, 65536, COOP_SPLIT_GROUPS);
    if (p->gpu_plans && tiles < want) split = ceil_div(want, tiles);
    if (split > steps / COOP_SPLIT_MIN_STEPS) split = steps >= 2 * COOP_SPLIT_MIN_STEPS ? steps / COOP_SPLIT_MIN_STEPS : 1;
    split = rlx_vk_tuned_pow2(p->b->tuning.coopmat_split, 1, COOP_SPLIT_MAX, (uint32_t)split);
    if (split > steps) split = steps;
    plan->ksplit = (uint32_t)(ceil_div(steps, split) * plan->bk);
    plan->split = (uint32_t)ceil_div(k, plan->ksplit);
}

/* 128-row tiles (512 invocations) where the grid stays large: each staged weight tile feeds twice
 * the multiplies; 128-wide ones from COOP_WIDE_TILES, in the mixed modes (PREC 0), with result
 * rounds of 32 rows where 64 would not fit the shared memory; k steps of 64 where the operands fit
 * in shared memory, else 32. A prefetch depth of 1: the second stage's shared memory costs more
 * occupancy than its early loads hide, small grids included (docs/PERFORMANCE.md). On a GPU, a
 * grid of fewer than COOP_SPLIT_GROUPS tiles (a decode batch: one row tile over a weight of a few
 * thousand rows) splits k until it has that many workgroups (RLX_VK_COOPMAT_GROUPS overrides it),
 * each split keeping COOP_SPLIT_MIN_STEPS steps; RLX_VK_COOPMAT_SPLIT forces a split count (at most
 * one per step) on any device. */
vk_coop_plan vk_coop_plan_make(const rlx_program *p, uint64_t part_rows, uint64_t rows, uint64_t k, uint32_t prec) {
    const rlx_vk_caps *c = p->b->dev->caps;
    uint32_t tn = ceil_div(part_rows, 128) * ceil_div(rows, 64) >= COOP_WIDE_TILES ? 128 : 64;
    tn = prec == 0 ? rlx_vk_tuned_pow2(p->b->tuning.coopmat_tn, 64, 128, tn) : 64; /* RLX_VK_COOPMAT_TN */
    uint32_t orows = coop_shared(64, tn, 32, prec, 64) > c->max_shared ? 32 : 64; /* lavapipe's 32 KiB */
    uint64_t w_tiles = ceil_div(part_rows, tn);
    vk_coop_plan plan = {w_tiles * ceil_div(rows, 64) >= COOP_TALL_TILES && rows >= 128 ? 128 : 64, 64, 1, 1, 0, tn,
                         orows};
    plan.tm = rlx_vk_tuned_pow2(p->b->tuning.coopmat_tm, 64, 128, plan.tm);
    if (4 * plan.tm > c->max_wg_invocations || coop_shared(plan.tm, tn, 32, prec, orows) > c->max_shared) plan.tm = 64;
    plan.depth = rlx_vk_tuned_pow2(p->b->tuning.coopmat_depth, 1, 2, 1);
    plan.bk = rlx_vk_tuned_pow2(p->b->tuning.coopmat_bk, 32, 128, plan.bk);
    while (plan.bk > 32 && coop_shared(plan.tm, tn, plan.bk, prec, orows) > c->max_shared) plan.bk /= 2;
    coop_split(p, &plan, w_tiles * ceil_div(rows, plan.tm), k);
    return plan;
}

/* shaders/matmul_batch.comp (a decode batch over F16, Q4_K or Q6_K weights: each subgroup keeps
 * its own weight loads a few k steps ahead) for at most 64 rows of x in the mixed modes, weight
 * rows in whole blocks of 16; not in deterministic mode (its choice follows the row count).
 * RLX_VK_MATMUL_BATCH=0 keeps matmul_coop.comp, 1 takes it wherever it runs; unset, it runs where
 * RLX_VK_MATMUL_BATCH_DEFAULT says. */
bool vk_batch_takes(const rlx_program *p, vk_coop_mode mode, uint32_t type, uint64_t rows, uint64_t part_rows) {
    int32_t knob = p->b->tuning.matmul_batch;
    bool typed = type == RLX_DTYPE_F16 || type == RLX_DTYPE_Q4_K || type == RLX_DTYPE_Q6_K;
    bool runs = (mode == COOP_MIXED || mode == COOP_EMULATE_MIXED) && typed && rows <= 64 && part_rows % 16 == 0 &&
                p->b->dev->caps->max_wg_invocations >= 256 && batch_shared(64) <= p->b->dev->caps->max_shared &&
                !vk_deterministic(p);
    return runs && (knob > 0 || (knob < 0 && RLX_VK_MATMUL_BATCH_DEFAULT));
}

/* matmul_batch.comp's plan: 128 weight rows a workgroup (RLX_VK_COOPMAT_TN=64 for 64; 64 where
 * 128 staged weight rows would not fit the shared memory, lavapipe's 32 KiB), k steps of 64,
 * two steps of weight loads in flight (RLX_VK_COOPMAT_DEPTH 1, 2 or 4), and k split as
 * matmul_coop.comp's decode batches are. */
vk_coop_plan vk_batch_plan_make(const rlx_program *p, uint64_t part_rows, uint64_t k) {
    vk_coop_plan plan = {64, 64, 2, 1, 0, 128, 64};
    plan.tn = rlx_vk_tuned_pow2(p->b->tuning.coopmat_tn, 64, 128, plan.tn);
    if (batch_shared(plan.tn) > p->b->dev->caps->max_shared) plan.tn = 64;
    plan.depth = rlx_vk_tuned_pow2(p->b->tuning.coopmat_depth, 1, 4, plan.depth);
    coop_split(p, &plan, ceil_div(part_rows, plan.tn), k);
    return plan;
}

/* The cooperative kernel runs where its smallest plan fits the device. */
bool vk_coop_fits(const rlx_program *p) {
    const rlx_vk_caps *c = p->b->dev->caps;
    return c->max_wg_invocations >= 256 && coop_shared(64, 64, 32, 2, 64) <= c->max_shared;
}

/* Rows of the largest part of weight w. */
uint64_t vk_largest_part_rows(const vk_weight *w) {
    uint64_t rows = 0;
    for (uint32_t k = 0; k < w->n_parts; k++)
        if (w->parts[k].rows > rows) rows = w->parts[k].rows;
    return rows;
}

/* In the mixed modes the cooperative kernel rounds every decoded weight to f16 as it stages it; a
 * stored weight of another type than F16 is decoded once per run into f16 rows in the dispatching
 * node's scratch (shaders/dequant.comp F16_OUT), and the kernel reads those as F16 rows: the same
 * values, at the F16 kernel's speed (a 16-byte load per 8 values instead of a decode per chunk),
 * where a part's f16 rows fit one binding and x has more than COOP_F16_MIN_ROWS rows: with fewer (a
 * decode batch) the grid has one row tile, so the kernel decodes each weight once anyway, and the
 * f16 rows would only add their write and read to the weight's. */
#define COOP_F16_MIN_ROWS 64

bool vk_coop_f16_weights(const rlx_program *p, rlx_node mm, vk_coop_mode coop) {
    const vk_node *x = in(p, mm, 0);
    matrix m = matrix_of(p, in1(p, mm));
    uint64_t k = (uint64_t)last_dim(x), rows = (uint64_t)x->numel / k;
    return (coop == COOP_MIXED || coop == COOP_EMULATE_MIXED) && vk_coop_fits(p) && m.w && m.type != RLX_DTYPE_F16 &&
           rows > COOP_F16_MIN_ROWS &&
           vk_takes_tiled(p, rows, k, m.type) && vk_largest_part_rows(m.w) * k * 2 <= p->b->dev->max_binding;
}

/* ---- decode matmuls: shaders/matvec.comp ---- */

/* Few rows (decode): shaders/matvec.comp for the types it decodes, matmul.comp for the rest. */
#define MATVEC_GPU_WG 256      /* a workgroup of several thread groups when rows are short */
#define MATVEC_GPU_WG_KQUANT 128 /* Q4_K / Q6_K: fewer groups per workgroup (see matvec_wg) */
/* Weight rows per thread group in decode (one x row) on a GPU: 2, not 4, so that more groups share
 * a weight and more of its loads are in flight at once */
#define MATVEC_GPU_DECODE_R 2
/* Trips of a Q4_K or Q6_K row's threads on a GPU: 2, half the threads with twice the units, so that
 * each thread's block decode is amortised over more loads */
#define MATVEC_GPU_KQUANT_TRIPS 2
#define MATVEC_MIN_GROUPS 256  /* workgroups to keep: a couple per multiprocessor of a large GPU */
/* Decode weights that would give more groups than this (an output projection over a vocabulary)
 * take twice MATVEC_GPU_DECODE_R rows per group: such a grid fills the device many times over, and
 * fewer, longer groups load x less often */
#define MATVEC_GPU_MANY_GROUPS 32768
/* Plain-type rows of MATVEC_GPU_LONG_K or more take twice those rows per group in two decode
 * matvecs: the one with a norm folded in (q/k/v), whose extra rows share its x and norm-weight
 * loads, and the output projection; elsewhere (o, gate/up, shorter rows) the extra registers cost
 * more than the shared loads save. */
#define MATVEC_GPU_LONG_K 4096
#define MATVEC_MIN_GROUPS_CPU 4
/* x rows per matvec.comp workgroup on a GPU: all of them up to MATVEC_GPU_NX_UPTO, else
 * MATVEC_GPU_NX, each workgroup reading its weight rows once per x group: the registers of 8 x rows
 * cost more than the re-reads (RLX_VK_MATVEC_NX caps it on any device). */
#define MATVEC_GPU_NX_UPTO 4
#define MATVEC_GPU_NX 2

/* Work units per weight row of matvec.comp and the units per thread and loop trip (its UNR), or 0
 * for a type or row length it has no path for. */
static uint64_t matvec_units(uint32_t type, uint64_t k, uint32_t *unroll) {
    *unroll = type == RLX_DTYPE_Q4_K || type == RLX_DTYPE_Q6_K ? 1 : 2;
    switch (type) {
    case RLX_DTYPE_F32: return k % 4 == 0 ? k / 4 : 0;
    case RLX_DTYPE_F16:
    case RLX_DTYPE_BF16: return k % 8 == 0 ? k / 8 : 0;
    case RLX_DTYPE_Q8_0: return k % 32 == 0 ? k / 8 : 0;
    case RLX_DTYPE_Q4_K: return k % 256 == 0 ? k / 32 : 0;
    case RLX_DTYPE_Q6_K: return k % 256 == 0 ? k / 16 : 0;
    default: return 0;
    }
}

/* Invocations per matvec workgroup on a GPU: 256 for plain and Q8_0 weights; the K-quants' longer
 * units want fewer groups per workgroup, whose registers would otherwise limit occupancy: one where
 * a row needs 64+ threads, else 128. */
static uint32_t matvec_wg(uint32_t type, uint64_t t) {
    if (type != RLX_DTYPE_Q4_K && type != RLX_DTYPE_Q6_K) return MATVEC_GPU_WG;
    return t >= 64 ? (uint32_t)t : MATVEC_GPU_WG_KQUANT;
}

/* Threads per weight row of matvec.comp on a GPU at most: a row reduction's workgroup, twice that
 * for plain types, so that their longest decode rows take fewer serial trips (the K-quants' rows
 * gain nothing from it; rows of 4,096 and less take one trip either way). */
#define MATVEC_GPU_PLAIN_WG_FACTOR 2
/* Plain-type decode rows this long or longer (not gate/up) take one unit per thread and trip (UNR
 * 1, from 2): more threads with fewer loads each; shorter rows, gate/up and the output projection
 * keep 2, where the extra threads' reduction costs more than it spreads. */
#define MATVEC_GPU_ONE_UNIT_K 8192

static uint32_t matvec_wg_max(const rlx_program *p, uint32_t type) {
    const rlx_vk_caps *c = p->b->dev->caps;
    if (!p->gpu_plans) return p->b->wg;
    return vk_plain_type(type) ? rlx_vk_caps_wg_pow2(c, MATVEC_GPU_PLAIN_WG_FACTOR * p->b->wg_row) : p->b->wg_row;
}

/* Whether matvec.comp has a path for the type and row length on this device. */
static bool matvec_fits(const rlx_program *p, uint32_t type, uint64_t k) {
    uint32_t unroll, sg = p->b->dev->caps->subgroup_size;
    return matvec_units(type, k, &unroll) != 0 && sg >= 4 && (sg & (sg - 1)) == 0 && sg <= matvec_wg_max(p, type);
}

/* T threads per weight row: about TRIPS trips of UNR units each (1, 2 for Q4_K and Q6_K on a GPU, or
 * RLX_VK_MATVEC_TRIPS; more where a row would need more than wg_max threads, shared evenly), in
 * whole subgroups (matvec.comp's reduction needs subgroups of >= 4 invocations that divide T, and
 * T >= RO * NX <= 8, RO its output rows per group); G groups of RO rows per workgroup (and RO gate
 * rows under GATE), fewer while the weight would give too few workgroups to fill the device.
 * RLX_VK_MATVEC_WG, _R and _MIN_GROUPS override the GPU defaults, _UNR (plain types) and _TRIPS the
 * defaults on any device: knobs for measuring, as the best values differ between devices. */
bool vk_matvec_plan_make(const rlx_program *p, uint32_t type, uint64_t k, uint64_t m_rows, uint32_t nx,
                         uint64_t x_groups, uint32_t epi, bool norm, bool gate, matvec_plan *out) {
    const rlx_vk_caps *c = p->b->dev->caps;
    const rlx_vk_tuning *tu = &p->b->tuning;
    uint32_t unroll, sg = c->subgroup_size, wg_max = matvec_wg_max(p, type);
    if (!matvec_fits(p, type, k)) return false;
    uint64_t units = matvec_units(type, k, &unroll);
    if (vk_plain_type(type)) {
        bool one = p->gpu_plans && nx == 1 && !gate && k >= MATVEC_GPU_ONE_UNIT_K;
        unroll = rlx_vk_tuned_pow2(tu->matvec_unr, 1, 8, one ? 1 : unroll);
    }
    bool kquant = type == RLX_DTYPE_Q4_K || type == RLX_DTYPE_Q6_K;
    uint64_t trips = rlx_vk_tuned_pow2(tu->matvec_trips, 1, 64, kquant && p->gpu_plans ? MATVEC_GPU_KQUANT_TRIPS : 1);
    uint64_t t = ceil_div(units, (uint64_t)unroll * trips), t_max = wg_max / sg * sg;
    if (t > t_max) /* as many trips as t_max threads need, shared out evenly */
        t = ceil_div(units, (uint64_t)unroll * ceil_div(units, (uint64_t)unroll * t_max));
    t = ceil_div(t < 8 ? 8 : t, sg) * sg;
    uint32_t wg_want = !p->gpu_plans ? p->b->wg : rlx_vk_tuned_pow2(tu->matvec_wg, 32, wg_max, matvec_wg(type, t));
    /* r: output rows per group. Under GATE a gate row rides beside each: in GPU decode on top of
     * r (its loads are independent, and halving r would halve those in flight), else taking the
     * registers of a row */
    uint64_t groups_per_wg = wg_want > t ? wg_want / t : 1, r = nx <= 2 ? 4 : nx <= 4 ? 2 : 1;
    if (p->gpu_plans && nx == 1) {
        bool many = ceil_div(m_rows, groups_per_wg * MATVEC_GPU_DECODE_R) > MATVEC_GPU_MANY_GROUPS;
        r = many ? 2 * MATVEC_GPU_DECODE_R : MATVEC_GPU_DECODE_R;
        if (vk_plain_type(type) && k >= MATVEC_GPU_LONG_K && (many || (norm && !gate))) r *= 2;
    }
    if (p->gpu_plans) r = rlx_vk_tuned_pow2(tu->matvec_r, 1, 8 / nx ? 8 / nx : 1, (uint32_t)r);
    if (gate && r > 1 && (!p->gpu_plans || nx > 1)) r /= 2;
    uint64_t min_groups =
        !p->gpu_plans ? MATVEC_MIN_GROUPS_CPU : rlx_vk_tuned_pow2(tu->matvec_min_groups, 1, 65536, MATVEC_MIN_GROUPS);
    while (r > 1 && ceil_div(m_rows, groups_per_wg * r) * x_groups < min_groups) r /= 2;
    while (groups_per_wg > 1 && ceil_div(m_rows, groups_per_wg * r) * x_groups < min_groups) groups_per_wg /= 2;
    *out = (matvec_plan){{[RLX_VK_SPEC_WG] = (uint32_t)(groups_per_wg * t),
                          [RLX_VK_SPEC(matvec, W_TYPE)] = type,
                          [RLX_VK_SPEC(matvec, NX)] = nx,
                          [RLX_VK_SPEC(matvec, EPI)] = epi,
                          [RLX_VK_SPEC(matvec, R)] = (uint32_t)(gate ? 2 * r : r),
                          [RLX_VK_SPEC(matvec, T)] = (uint32_t)t,
                          [RLX_VK_SPEC(matvec, NORM)] = norm,
                          [RLX_VK_SPEC(matvec, GATE)] = gate,
                          [RLX_VK_SPEC(matvec, POST)] = 0,
                          [RLX_VK_SPEC(matvec, UNR)] = vk_plain_type(type) ? unroll : 2},
                         ceil_div(m_rows, groups_per_wg * r) * x_groups};
    return true;
}

/* Many rows (prefill) go to the tiled kernels: they reuse each weight tile for 16+ rows. On a GPU,
 * rows of up to TILED_SHORT_K stay on matvec.comp up to TILED_MIN_ROWS_SHORT_K rows: a short row's
 * tile is too little work to pay for staging it. Longer rows of a plain type (F32, F16, BF16) go
 * to the cooperative kernel from COOP_PLAIN_MIN_ROWS rows, where it runs (mixed or exact): with
 * split k it reads the weights once for all rows, where matvec.comp reads them once per two (8B
 * F16, 8 sequences, H200: 499.6 against 366.4 t/s); K-quant rows stay on matvec, whose decode of
 * a block serves both rows (Q4_K_M: 325.7 against 384.3). */
#define COOP_PLAIN_MIN_ROWS 8

bool vk_takes_tiled(const rlx_program *p, uint64_t rows, uint64_t k, uint32_t type) {
    bool fits = k % 32 == 0 && p->b->wg_row == 256;
    if (vk_deterministic(p)) return fits; /* one kernel for every row count */
    bool short_k = p->gpu_plans && k <= TILED_SHORT_K;
    vk_coop_mode coop = (vk_coop_mode)p->b->tuning.coopmat;
    bool coop_plain = p->gpu_plans && !short_k && vk_plain_type(type) && (coop == COOP_MIXED || coop == COOP_EXACT) &&
                      vk_coop_fits(p);
    uint32_t min_rows = rlx_vk_tuned_pow2(p->b->tuning.tiled_min_rows, 1, 512,
                                          short_k      ? TILED_MIN_ROWS_SHORT_K
                                          : coop_plain ? COOP_PLAIN_MIN_ROWS
                                                       : TILED_MIN_ROWS);
    return rows >= min_rows && fits;
}

/* Whether a and b are weights of one type and shape, each in a single binding. */
bool vk_same_single_part_weights(const rlx_program *p, rlx_node a, rlx_node b) {
    matrix ma = matrix_of(p, a), mb = matrix_of(p, b);
    return ma.w && mb.w && ma.n_parts == 1 && mb.n_parts == 1 && ma.type == mb.type && ma.rows == mb.rows &&
           ma.row_bytes == mb.row_bytes;
}

/* Whether emit_matmul runs MATMUL mm on shaders/matvec.comp, every part of it (matvec_fits depends
 * on the type and row length only). Never in deterministic mode: its plan follows the row count. */
bool vk_takes_matvec(const rlx_program *p, rlx_node mm) {
    if (vk_deterministic(p)) return false;
    const vk_node *x = in(p, mm, 0);
    matrix m = matrix_of(p, node(p, mm)->info.in[1]);
    uint64_t k = (uint64_t)last_dim(x), rows = (uint64_t)x->numel / k;
    return !vk_takes_tiled(p, rows, k, m.type) && matvec_fits(p, m.type, k);
}

/* x rows per matvec.comp workgroup for rows of x, of which matmul.comp takes nx (see MATVEC_GPU_NX). */
uint32_t vk_matvec_nx(const rlx_program *p, uint64_t rows, uint32_t nx) {
    if (p->gpu_plans && rows > MATVEC_GPU_NX_UPTO) nx = MATVEC_GPU_NX;
    uint32_t cap = rlx_vk_tuned_pow2(p->b->tuning.matvec_nx, 1, 8, 0);
    return cap && cap < nx ? cap : nx;
}

/* The gated FFN's matvec (GATE) over rows of a plain type and MATVEC_STREAM_MIN_K or more reads its
 * weights past the L1 cache (shaders/matvec_stream.comp), which keeps x and the folded norm's
 * weights there: its two weights' rows would otherwise evict them. Other matvecs, shorter rows and
 * the K-quants keep matvec.comp, which gains nothing from it. */
#define MATVEC_STREAM_MIN_K 4096

rlx_vk_kernel vk_matvec_kernel(uint32_t type, uint64_t k, bool gate) {
    return gate && vk_plain_type(type) && k >= MATVEC_STREAM_MIN_K ? RLX_VK_KERNEL_matvec_stream : RLX_VK_KERNEL_matvec;
}

/* ---- MOE_FFN ---- */

uint32_t vk_moe_slots(const rlx_program *p, rlx_node i) {
    const vk_node *route = in(p, i, 1);
    if (route->info.op == RLX_OP_MOE_ROUTE) return (uint32_t)route->info.attrs.top_k;
    return (uint32_t)route->info.shape.dim[1];
}

uint64_t vk_moe_h_bytes(const rlx_program *p, rlx_node i) {
    return (uint64_t)node(p, i)->info.shape.dim[0] * vk_moe_slots(p, i) * (uint64_t)in(p, i, 2)->info.shape.dim[1] * 4;
}

/* Rows grouped by expert (the grouped path) from MOE_GROUPED_MIN_ROWS token rows, where the experts
 * take MOE_GROUPED_MIN_PAIRS (row, slot) pairs each on average: each weight tile then serves that
 * many rows, where shaders/moe_mv.comp reads it once per pair; below that (a decode batch over many
 * experts) most experts have one pair or none and a tile would mostly compute padding. */
#define MOE_GROUPED_MIN_ROWS 16
#define MOE_GROUPED_MIN_PAIRS 4
#define MOE_MM_SHARED (32 * 65 * 4 + 32 * 16 * 16 + 64 * 4) /* its xs, ws and pair arrays, in bytes */

static uint64_t align_to(uint64_t x, uint64_t a) { return a > 1 ? ceil_div(x, a) * a : x; }

/* Whether the grouped kernels run MOE_FFN i here at all: never in deterministic mode (moe_mv.comp
 * sums a row the same way for every row count: vk_plan.c's top comment), nor where fusion gave
 * moe_mv.comp a norm's scale (vk_fuse.c fuse_norm_into_producer asks this plan first, so only
 * where the answer was already no), rows of k % 32 == 0 for both dot lengths (moe_mm.comp's
 * steps), weights in one binding each, a device that fits moe_mm.comp's workgroup. The sums after
 * the FFN (vk_fuse.c fuse_moe) go into moe_sum.comp as into moe_mv.comp's down pass. */
static bool moe_grouped_fits(const rlx_program *p, rlx_node i) {
    const rlx_vk_caps *c = p->b->dev->caps;
    int64_t f = in(p, i, 2)->info.shape.dim[1], d = in(p, i, 2)->info.shape.dim[2];
    for (int k = 2; k < 5; k++)
        if (matrix_of(p, node(p, i)->info.in[k]).n_parts != 1) return false;
    if (node(p, i)->fuse != VK_FUSE_NONE) return false;
    return !vk_deterministic(p) && f % 32 == 0 && d % 32 == 0 && c->max_wg_invocations >= MOE_MM_WG &&
           c->max_wg_size[0] >= MOE_MM_WG && c->max_shared >= MOE_MM_SHARED;
}

/* Tiles of 16, 32 or 64 pairs: the smallest that holds an expert's average pairs, so that the
 * usual expert fills one tile (RLX_VK_MOE_TM overrides). The experts' tiles that hold pairs number
 * at most rows x slots / tm, plus one partial tile per expert with pairs (at most E, and at most
 * rows x slots), and at most E ceil(rows / tm): moe_mm.comp's grid is that bound, not the E
 * ceil(rows / tm) tiles there could be (at 512 rows of 256 experts, top 8, 16 times fewer
 * workgroups). RLX_VK_MOE_GROUPED=0 keeps moe_mv.comp, =1 takes the grouped path wherever it
 * fits, whatever the rows. Its scratch, all of it in one binding: h, then the slots [rows, slots],
 * the lists and the tiles (moe_group.comp), then the partials of the down pass [rows, slots, D]. */
bool vk_moe_grouped_plan(const rlx_program *p, rlx_node i, vk_moe_plan *out) {
    uint64_t rows = (uint64_t)node(p, i)->info.shape.dim[0], slots = vk_moe_slots(p, i);
    uint64_t experts = (uint64_t)in(p, i, 2)->info.shape.dim[0], d = (uint64_t)in(p, i, 2)->info.shape.dim[2];
    int32_t want = p->b->tuning.moe_grouped;
    if (want == 0 || !moe_grouped_fits(p, i)) return false;
    if (want < 0 && (rows < MOE_GROUPED_MIN_ROWS || rows * slots < MOE_GROUPED_MIN_PAIRS * experts)) return false;
    uint64_t pairs = ceil_div(rows * slots, experts), tm = pairs <= 16 ? 16 : pairs <= 32 ? 32 : 64;
    tm = rlx_vk_tuned_pow2(p->b->tuning.moe_tm, 16, 64, (uint32_t)tm);
    uint64_t align = p->b->dev->caps->storage_align;
    uint64_t pairs_all = rows * slots, partial = experts < pairs_all ? experts : pairs_all;
    uint64_t tiles = ceil_div(pairs_all, tm) + partial, most = experts * ceil_div(rows, tm);
    *out = (vk_moe_plan){.rm = (uint32_t)(tm / 16), .tiles = tiles < most ? tiles : most, .h_at = 0};
    out->slots_at = align_to(vk_moe_h_bytes(p, i), align);
    out->list_at = align_to(out->slots_at + rows * slots * 4, align);
    out->part_at = align_to(out->list_at + (experts + experts * rows + 1 + out->tiles) * 4, align);
    out->bytes = out->part_at + rows * slots * d * 4;
    return out->bytes <= p->b->dev->max_binding;
}

/* ---- attention ---- */

/* Key splits of an ATTENTION (flash-decoding): a few query rows over a long key range would keep
 * only a few workgroups busy, each walking its keys one chunk (one memory round trip) after the
 * other, so from 256 keys on they are shared out in ranges. As many ranges as fill the device about
 * twice over (ATTN_SPLIT_GROUPS workgroups, at two heads each: the kernel's registers allow one
 * workgroup per multiprocessor on an H100 / H200), each of ATTN_SPLIT_KEYS keys or more: more
 * ranges only queue up behind the first ones and give the combine more partials (tg128 at depth
 * 4,096, H200: 8B F16 153.6 t/s with 16 ranges against 132.6 with 64; 0.6B F16 540 against 451;
 * unchanged at depth 0 and 512). RLX_VK_ATTN_SPLIT_KEYS sets the
 * range instead. A decode batch of more rows (each its own sequence) already has a workgroup per
 * (sequence, kv head), but each walk is one workgroup's, and the registers of an unsplit walk's
 * blocks hold one per multiprocessor: two ranges from 256 keys on, of half-size blocks, let two
 * run side by side (faster than none or 4 at 16-64 sequences: docs/PERFORMANCE.md, "Decode batches
 * split their keys in two"; RLX_VK_ATTN_BATCH_SPLITS sets the count, 1 for none). None in
 * deterministic mode: the ranges follow the KV capacity, and the partials' combine sums a row in
 * another order. */
uint32_t vk_attention_splits(const rlx_program *p, rlx_node i) {
    if (vk_deterministic(p)) return 1;
    const rlx_shape *q = &in(p, i, 0)->info.shape;
    int64_t rows = q->dim[0], keys = in(p, i, 1)->info.shape.dim[0];
    int64_t per = rlx_vk_tuned_pow2(p->b->tuning.attn_split_keys, 16, 4096, ATTN_SPLIT_KEYS);
    if (rows > ATTN_SPLIT_MAX_ROWS) { /* a decode batch, or a prefill (attention_prefill.comp's) */
        if (!p->rows_apart) return 1;
        int64_t want = rlx_vk_tuned_pow2(p->b->tuning.attn_batch_splits, 1, ATTN_MAX_SPLITS,
                                         keys >= 4 * per ? ATTN_BATCH_SPLITS : 1);
        return keys >= want * per ? (uint32_t)want : 1;
    }
    if (keys < 4 * per) return 1;
    int64_t splits = keys / per;
    if (!p->b->tuning.attn_split_keys) {
        int64_t blocks = rows * (q->dim[1] > ATTN_DEFAULT_GW ? q->dim[1] / ATTN_DEFAULT_GW : 1);
        int64_t fill = ATTN_SPLIT_GROUPS / blocks > 1 ? ATTN_SPLIT_GROUPS / blocks : 1;
        if (splits > fill) splits = fill;
    }
    return (uint32_t)(splits < ATTN_MAX_SPLITS ? splits : ATTN_MAX_SPLITS);
}

/* Query heads per attention workgroup: the largest divisor of H / H_kv up to a default (or up to
 * RLX_VK_ATTN_GW <= ATTN_MAX_GW, a tuning knob), so a workgroup's heads share one kv head. Where
 * the keys are not split, decode attention of one sequence is latency and one head per workgroup
 * halves each workgroup's walk; split key ranges keep ATTN_DEFAULT_GW. A decode batch of many
 * sequences (rows apart, more than ATTN_SPLIT_MAX_ROWS, split or not) is bandwidth: each sequence's
 * K and V are read once per workgroup, so its heads share one, ATTN_MAX_GW (8B F16 at 64 sequences
 * of 512 tokens, H200: 2,213 -> 2,590 t/s). */
uint32_t vk_attention_gw(const rlx_program *p, int64_t rows, int64_t heads, int64_t kv_heads, uint32_t splits) {
    int64_t g = heads / kv_heads;
    bool batch = p->rows_apart && (splits == 1 || rows > ATTN_SPLIT_MAX_ROWS);
    int64_t want = batch ? ATTN_MAX_GW : splits > 1 ? ATTN_DEFAULT_GW : 1;
    int64_t gw = rlx_vk_tuned_pow2(p->b->tuning.attn_gw, 1, ATTN_MAX_GW, (uint32_t)want);
    for (; gw > 1; gw--)
        if (g % gw == 0) return (uint32_t)gw;
    return 1;
}

/* Lanes per key: the device's smallest subgroup, or RLX_VK_ATTN_LPK (a power of two up to it), so
 * that a subgroup walks subgroup / lpk keys side by side. Fewer lanes per key mean fewer shuffles
 * per key but more registers per lane: slower on an H100 for heads of 128 (docs/PERFORMANCE.md,
 * "Decode at depth"). Loads of 4 elements where the head sizes allow (a lane's share rounded up to
 * whole units; dims past the head are not used), else of 2 or 1. Not a function of the row count:
 * deterministic mode gets one plan for every bucket. */
vk_attn_lanes vk_attention_lanes(const rlx_program *p, uint32_t dh, uint32_t dv) {
    const rlx_vk_caps *c = p->b->dev->caps;
    uint32_t sg_min = c->subgroup_min ? c->subgroup_min : 1;
    uint32_t lpk = rlx_vk_tuned_pow2(p->b->tuning.attn_lpk, 1, sg_min, sg_min); /* RLX_VK_ATTN_LPK */
    uint32_t vec = dh % 4 == 0 && dv % 4 == 0 ? 4 : dh % 2 == 0 && dv % 2 == 0 ? 2 : 1;
    uint32_t epl = (dh + lpk - 1) / lpk, epv = (dv + lpk - 1) / lpk;
    return (vk_attn_lanes){lpk, (epl + vec - 1) / vec * vec, (epv + vec - 1) / vec * vec, vec};
}

/* shaders/attention.glsl's shared memory in floats at workgroup size wg: sm and sl (gw wg each),
 * so (gw DPT wg), subs (SUBS_CAP) and the step's prep rows ((gw + 2) pd). */
static uint64_t attention_shared(uint32_t wg, uint32_t gw, uint32_t dv, uint32_t pd, bool step) {
    uint64_t dpt = (dv + wg - 1) / wg, subs = wg > 256 ? 8ull * wg : 2048;
    return 4 * (2ull * gw * wg + gw * dpt * wg + subs + (step ? (gw + 2ull) * pd : 0));
}

/* On a GPU wg_row invocations (more subgroups walking keys side by side), on a CPU device at least
 * as wide as dv; RLX_VK_ATTN_WG sets it instead, halved until the shared memory fits. */
uint32_t vk_attention_wg(const rlx_program *p, uint32_t gw, uint32_t dv, uint32_t pd, bool step) {
    uint32_t wg = !p->gpu_plans ? p->b->wg : p->b->wg_row;
    while (wg < dv && wg < p->b->wg_row) wg *= 2;
    const rlx_vk_caps *c = p->b->dev->caps;
    uint32_t most = c->max_wg_invocations < c->max_wg_size[0] ? c->max_wg_invocations : c->max_wg_size[0];
    uint32_t set = rlx_vk_tuned_pow2(p->b->tuning.attn_wg, 32, most, 0);
    if (!set) return wg;
    while (set > 32 && attention_shared(set, gw, dv, pd, step) > c->max_shared) set /= 2;
    return set;
}

uint64_t vk_attention_prefill_rows(uint32_t d) { return 4096 / d; }

/* Many query rows (prefill): tiled flash attention (shaders/attention_prefill.comp) where the head
 * sizes are at most 256 and a plan fits the device's shared memory; false for attention.comp. Rows
 * of different sequences (RLX_HINT_ROWS_APART, a decode batch) share no keys, so a tile would walk
 * each row's sequence in turn: attention.comp's workgroup per row walks them side by side. Always
 * false in deterministic mode: one attention kernel for every row count. */
bool vk_attention_prefill_plan(const rlx_program *p, rlx_node i, vk_prefill_plan *out) {
    if (vk_deterministic(p)) return false;
    int64_t rows = in(p, i, 0)->info.shape.dim[0], dh = in(p, i, 0)->info.shape.dim[2];
    int64_t dv = node(p, i)->info.shape.dim[2];
    uint32_t d = 64;
    while (d < dh || d < dv) d *= 2;
    if (rows < ATTN_PREFILL_MIN_ROWS || p->rows_apart || d > 256 || p->b->wg_row != 256) return false;
    uint64_t bq = vk_attention_prefill_rows(d);
    for (uint32_t bkv = 32; bkv >= 16; bkv /= 2) {
        /* words, as in the shader: Q rows and a K / V block (rows of d + 4), the P block, the factors,
         * the rows' positions, sequences and first-of-sequence flags */
        uint64_t bytes = ((bq + bkv) * (d + 4) + bkv * (bq + 4) + 4 * bq) * 4;
        if (bytes <= p->b->dev->caps->max_shared) {
            *out = (vk_prefill_plan){d, bkv};
            return true;
        }
    }
    return false;
}

/* ---- a norm or argmax computed by its producer's matvec (POST) ---- */

/* The matvec plan of node at (a MATMUL, or a residual ADD of one, VK_FUSE_MATMUL_ADD) for one x
 * row in one weight part, or false when it has none. */
bool vk_post_plan(const rlx_program *p, rlx_node at, matvec_plan *mv) {
    bool add = node(p, at)->info.op == RLX_OP_ADD;
    rlx_node mm = add ? node(p, at)->fuse_a : at;
    matrix w = matrix_of(p, in1(p, mm));
    uint64_t k = (uint64_t)last_dim(in(p, mm, 0));
    return vk_takes_matvec(p, mm) && w.n_parts == 1 && (uint64_t)in(p, mm, 0)->numel == k &&
           vk_matvec_plan_make(p, w.type, k, w.rows, 1, 1, add ? EPI_ADD : EPI_NONE,
                               node(p, mm)->fuse != VK_FUSE_NONE, false, mv);
}

/* Bytes of shaders/matvec.comp POST's sync block (its layout: shaders/sync_layout.h). */
uint64_t vk_post_sync_bytes(const rlx_program *p, rlx_node at) {
    matvec_plan mv;
    if (!vk_post_plan(p, at, &mv)) return 0;
    uint64_t g4 = ceil_div(mv.groups, 4) * 4, teams4 = ceil_div(ceil_div(mv.groups, RLX_SYNC_ARGMAX_TEAM), 4) * 4;
    bool argmax = node(p, node(p, at)->post)->info.op == RLX_OP_ARGMAX;
    return (RLX_SYNC_LISTS + (argmax ? teams4 + 2 * g4 + 2 * teams4 : g4)) * 4;
}

/* ---- DELTA_RULE ---- */

static uint32_t pow2_at_least(uint64_t x) {
    uint32_t v = 1;
    while (v < x && v < (1u << 30)) v <<= 1;
    return v;
}

/* Shared bytes of delta_chunk.comp (S [dk, cw]; X, P, U [L, cw]; three arrays of L) and of
 * delta_prep.comp (32 staged key columns [32, L], M [L, L], three arrays of L): the larger. */
static uint64_t delta_chunk_shared(uint64_t dk, uint64_t cw, uint64_t l) {
    uint64_t chunk = 4 * (dk * cw + 3 * l * cw + 3 * l), prep = 4 * (32 * l + l * l + 3 * l);
    return chunk > prep ? chunk : prep;
}

/* Decode (a few rows per sequence, or chunk 1) takes the step kernel: the state stays in registers
 * and each row costs three barriers (seven with q and k normalised there). Prefill takes the
 * chunked form: a pre-pass does the state-free intra-chunk work of all chunks in parallel, and the
 * state is touched once per chunk. Either way a workgroup owns a block of state
 * columns of one head, so the state is read and written once per run. */
bool vk_delta_plan_make(const rlx_program *p, rlx_node i, vk_delta_plan *out, const char **why) {
    const vk_node *n = node(p, i), *q = in(p, i, 0);
    const rlx_vk_caps *c = p->b->dev->caps;
    uint64_t rows = (uint64_t)n->info.shape.dim[0], dk = (uint64_t)q->info.shape.dim[2];
    uint64_t dv = (uint64_t)n->info.shape.dim[2];
    int32_t chunk = n->info.attrs.chunk ? n->info.attrs.chunk : 64;
    *out = (vk_delta_plan){0};
    /* deterministic mode: one kernel for every program, so that a sequence's bits depend on its own
     * rows only (the chunked form rounds by where its chunks start, as on the CPU) */
    out->chunked = chunk > 1 && (vk_deterministic(p) || (!p->rows_apart && rows >= 16));
    uint32_t cw = pow2_at_least(dv < 32 ? dv : 32);
    if (out->chunked) /* narrower blocks: twice the workgroups, each sequential over the chunks */
        cw = pow2_at_least(dv < 16 ? dv : 16);
    if (!out->chunked) {
        uint32_t rg = 8;
        while (rg < 64 && ceil_div(dk, rg) > 16) rg *= 2;
        while (cw > 1 && cw * rg > c->max_wg_invocations) cw /= 2;
        if (cw * rg > c->max_wg_invocations || ceil_div(dk, rg) > 16) {
            *why = "a key head too large for the step kernel's registers";
            return false;
        }
        out->wg = cw * rg;
        out->cw = cw;
        out->nr = (uint32_t)ceil_div(dk, rg);
        out->seq_groups = (uint32_t)rows;
    } else {
        uint32_t l = chunk < 64 ? (uint32_t)chunk : 64;
        while (cw > 1 && delta_chunk_shared(dk, cw, l) > c->max_shared) cw /= 2;
        while (l > 8 && delta_chunk_shared(dk, cw, l) > c->max_shared) l /= 2;
        if (delta_chunk_shared(dk, cw, l) > c->max_shared) {
            *why = "a key head too large for the chunk kernel's shared memory";
            return false;
        }
        if (p->b->wg_row < l) { /* delta_prep.comp inverts with an invocation per column */
            *why = "a workgroup smaller than the chunk";
            return false;
        }
        out->wg = p->b->wg_row;
        out->cw = cw;
        out->chunk = l;
        /* delta_prep.comp: the rows fill ceil(rows / l) chunks, and one more group for the partial
         * chunks of several sequences (the groups stride over any more) */
        out->prep_groups = (uint32_t)(ceil_div(rows, l) + 1);
        /* a prefill program's rows are mostly one sequence's: few groups stride over the table */
        out->seq_groups = (uint32_t)(rows < 16 ? rows : 16);
    }
    out->col_blocks = (uint32_t)ceil_div(dv, out->cw);
    return true;
}
