/* The lowerings of the Gated DeltaNet ops (ir/ops.def): CAUSAL_CONV (shaders/causal_conv.comp),
 * DELTA_RULE (shaders/delta_step.comp for decode, delta_chunk.comp for prefill, as
 * vk_delta_plan_make chooses), DELTA_GATE, SLICE and SCALE_ROWS (shaders/recurrent_ew.comp),
 * L2_NORM (shaders/l2_norm.comp). STATE has no dispatch: it names the session's state buffer of
 * its layer (vk_compile.c bind_state), which the two recurrent kernels read and write in place at
 * the slot of each table row (shaders/common.glsl rlx_seq_slot). vk_lower.c's table points here. */
#include <inttypes.h>
#include <string.h>

#include "runtime/vk_lower.h"

#define CONV_MAX_TAPS 16         /* shaders/causal_conv.comp MAX_TAPS */
#define CONV_MAX_SEQ_GROUPS 64   /* workgroups across the table rows; each strides over the rest */
#define MAX_STRIDE_GROUPS 8192   /* grid-stride kernels: enough groups to fill any device */

enum { REW_DELTA_GATE, REW_SLICE, REW_SCALE_ROWS }; /* shaders/recurrent_ew.comp OP */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The SLICE under j's RESHAPE views that `reader`'s dispatch reads through (vk_fuse.c
 * slice_through), else RLX_NO_NODE. */
static rlx_node slice_read_by(const rlx_program *p, rlx_node j, rlx_node reader) {
    while (node(p, j)->info.op == RLX_OP_RESHAPE) j = node(p, j)->info.in[0];
    return node(p, j)->info.op == RLX_OP_SLICE && node(p, j)->fused_into == reader ? j : RLX_NO_NODE;
}

/* An operand read through SLICE s: its source's range and the words len, in_cols, begin of the
 * kernels' mapping (shaders/l2_norm.comp, delta.glsl); without a slice (s RLX_NO_NODE) node
 * `plain`'s range and 0s. */
static rlx_status operand(const rlx_program *p, rlx_node s, rlx_node plain, vk_range *x, uint32_t words[3]) {
    words[0] = words[1] = words[2] = 0;
    if (s == RLX_NO_NODE) return vk_f32_range(p, plain, x);
    const vk_node *n = node(p, s);
    words[0] = (uint32_t)n->info.attrs.slice_len;
    words[1] = (uint32_t)last_dim(in(p, s, 0));
    words[2] = (uint32_t)n->info.attrs.slice_begin;
    return vk_f32_range(p, n->info.in[0], x);
}

/* The floats of a STATE node's offset and of a slot, as the kernels' 32-bit words (the state of a
 * layer fits one binding: vk_state_layer_bytes). */
static void state_words(const rlx_program *p, rlx_node st, uint32_t *offset, uint32_t *floats) {
    *offset = (uint32_t)node(p, st)->info.attrs.state_offset;
    *floats = (uint32_t)p->s->kv.state_floats;
}

rlx_status vk_prepare_recurrent(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (n->info.op == RLX_OP_CAUSAL_CONV && in(p, i, 1)->info.shape.dim[1] > CONV_MAX_TAPS)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d CAUSAL_CONV: %" PRId64 " taps, at most %d supported", i,
                          in(p, i, 1)->info.shape.dim[1], CONV_MAX_TAPS);
    if (n->info.op == RLX_OP_DELTA_RULE) {
        vk_delta_plan plan;
        const char *why = "";
        if (!vk_delta_plan_make(p, i, &plan, &why))
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d DELTA_RULE: key heads of %" PRId64 " on %s: %s", i,
                              in(p, i, 0)->info.shape.dim[2], p->b->dev->caps->name, why);
        /* the chunked form's records (shaders/delta_prep.comp): per (row, value head) 2L + 1 floats */
        if (plan.chunked)
            p->nodes[i].scratch_bytes = (uint64_t)n->info.shape.dim[0] * (uint64_t)n->info.shape.dim[1] *
                                        (2 * (uint64_t)plan.chunk + 1) * 4;
    }
    return NULL;
}

/* Decode (few rows, or each row its own sequence): one pass, each sequence's channel walking its
 * rows with the inputs in registers. Prefill: the outputs in parallel over (row, channel), each
 * reading its K-1 inputs from x or the state, then the state from each sequence's last inputs. */
rlx_status vk_lower_CAUSAL_CONV(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    uint64_t rows = (uint64_t)n->info.shape.dim[0], c = (uint64_t)n->info.shape.dim[1];
    uint64_t k = (uint64_t)in(p, i, 1)->info.shape.dim[1];
    vk_range bind[4];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(causal_conv, X)]));
    RLX_TRY(vk_f32_range(p, n->info.in[1], &bind[RLX_VK_BIND(causal_conv, W)]));
    bind[RLX_VK_BIND(causal_conv, STATE)] = vk_node_range(p, n->info.in[2]);
    bind[RLX_VK_BIND(causal_conv, OUT)] = vk_node_range(p, i);
    uint32_t off, floats, wg = p->b->wg;
    state_words(p, n->info.in[2], &off, &floats);
    uint64_t chan_groups = ceil_div(c, wg), seq_groups = rows < CONV_MAX_SEQ_GROUPS ? rows : CONV_MAX_SEQ_GROUPS;
    uint32_t push[7] = {(uint32_t)rows, (uint32_t)c, (uint32_t)k, off, floats, (uint32_t)chan_groups,
                        (uint32_t)seq_groups};
    uint32_t x = RLX_VK_BIT(causal_conv, X), w = RLX_VK_BIT(causal_conv, W), st = RLX_VK_BIT(causal_conv, STATE);
    uint32_t out = RLX_VK_BIT(causal_conv, OUT);
    bool prefill = vk_deterministic(p) || (rows >= 16 && !p->rows_apart); /* one form in that mode */
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = wg, [RLX_VK_SPEC(causal_conv, PAR)] = prefill ? 1u : 0u};
    if (!prefill)
        return vk_emit(p, &p->run, i, RLX_VK_KERNEL_causal_conv, spec, bind, 4, x | w | st, st | out, push,
                       sizeof push, chan_groups * seq_groups);
    RLX_TRY(vk_emit(p, &p->run, i, RLX_VK_KERNEL_causal_conv, spec, bind, 4, x | w | st, out, push, sizeof push,
                    chan_groups * rows));
    /* the validation layer takes the shader's every store as made by every form: OUT, which pass 2
     * never writes, is bound to what it does write, so that no later reader of the outputs looks
     * unsynchronized */
    spec[RLX_VK_SPEC(causal_conv, PAR)] = 2;
    bind[RLX_VK_BIND(causal_conv, OUT)] = bind[RLX_VK_BIND(causal_conv, STATE)];
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_causal_conv, spec, bind, 4, x | st, st, push, sizeof push,
                   chan_groups * seq_groups);
}

#define DELTA_PUSH_WORDS 21 /* shaders/delta.glsl Push */

/* q and k's L2_NORMs (q's maybe under its SCALE) absorbed by DELTA_RULE x: bind their inputs (or
 * the SLICEs' sources) as Q and K, and set the push words that tell the step kernel so. */
static rlx_status absorbed_norms(rlx_program *p, const rlx_node *x, vk_range *bind, uint32_t *push) {
    float scale = 1.0f;
    rlx_node l2[2] = {x[0], x[1]};
    if (node(p, x[0])->info.op == RLX_OP_SCALE) {
        scale = node(p, x[0])->info.attrs.scale;
        l2[0] = node(p, x[0])->fuse_a;
    }
    int binds[2] = {RLX_VK_BIND(delta_step, Q), RLX_VK_BIND(delta_step, K)};
    for (int k = 0; k < 2; k++) {
        const vk_node *n = node(p, l2[k]);
        rlx_node s = n->fuse == VK_FUSE_L2_SLICE ? n->fuse_a : RLX_NO_NODE;
        RLX_TRY(operand(p, s, n->info.in[0], &bind[binds[k]], &push[12 + 3 * k]));
    }
    push[18] = f32_bits(node(p, l2[0])->info.attrs.eps);
    push[19] = f32_bits(scale);
    push[20] = 1; /* one eps: fuse_delta fuses only norms of equal eps */
    return NULL;
}

/* The chunked form: delta_prep.comp's records of every (chunk, value head) into the node's
 * scratch, then delta_chunk.comp's walk of the state over them. `bind` and `push` are
 * delta_step.comp's (the operands and push constants of all three kernels). */
static rlx_status emit_chunked(rlx_program *p, rlx_node i, const vk_delta_plan *plan, const vk_range *bind,
                               uint32_t *push, bool gate, bool sig) {
    const vk_node *n = node(p, i);
    uint64_t hv = (uint64_t)n->info.shape.dim[1];
    uint32_t dk = (uint32_t)in(p, i, 0)->info.shape.dim[2];
    vk_range wy = {p->arena[n->scratch_bin].buffer, p->arena[n->scratch_bin].offset + n->scratch_offset,
                   n->scratch_bytes};
#define FROM_STEP(kernel, name) [RLX_VK_BIND(kernel, name)] = bind[RLX_VK_BIND(delta_step, name)]
    vk_range prep_bind[7] = {FROM_STEP(delta_prep, Q),      FROM_STEP(delta_prep, K),
                             FROM_STEP(delta_prep, G),      FROM_STEP(delta_prep, BETA),
                             FROM_STEP(delta_prep, GATE_A), FROM_STEP(delta_prep, GATE_BIAS),
                             [RLX_VK_BIND(delta_prep, WY)] = wy};
    vk_range chunk_bind[6] = {FROM_STEP(delta_chunk, Q),     FROM_STEP(delta_chunk, K),
                              FROM_STEP(delta_chunk, V),     FROM_STEP(delta_chunk, STATE),
                              FROM_STEP(delta_chunk, OUT),   [RLX_VK_BIND(delta_chunk, WY)] = wy};
#undef FROM_STEP
    uint32_t prep_reads = RLX_VK_BIT(delta_prep, Q) | RLX_VK_BIT(delta_prep, K) | RLX_VK_BIT(delta_prep, G) |
                          RLX_VK_BIT(delta_prep, BETA) |
                          (gate ? RLX_VK_BIT(delta_prep, GATE_A) | RLX_VK_BIT(delta_prep, GATE_BIAS) : 0u);
    uint32_t prep_spec[5] = {[RLX_VK_SPEC_WG] = plan->wg, [RLX_VK_SPEC(delta_prep, L)] = plan->chunk,
                             [RLX_VK_SPEC(delta_prep, DK)] = dk, [RLX_VK_SPEC(delta_prep, GATE)] = gate,
                             [RLX_VK_SPEC(delta_prep, SIG)] = sig};
    uint32_t seq_groups = push[8];
    push[8] = plan->prep_groups; /* delta_prep.comp strides its chunks over these */
    RLX_TRY(vk_emit(p, &p->run, i, RLX_VK_KERNEL_delta_prep, prep_spec, prep_bind, 7, prep_reads,
                    RLX_VK_BIT(delta_prep, WY), push, DELTA_PUSH_WORDS * 4, (uint64_t)plan->prep_groups * hv));
    push[8] = seq_groups;
    uint32_t spec[4] = {[RLX_VK_SPEC_WG] = plan->wg, [RLX_VK_SPEC(delta_chunk, CW)] = plan->cw,
                        [RLX_VK_SPEC(delta_chunk, L)] = plan->chunk, [RLX_VK_SPEC(delta_chunk, DK)] = dk};
    uint32_t reads = RLX_VK_BIT(delta_chunk, Q) | RLX_VK_BIT(delta_chunk, K) | RLX_VK_BIT(delta_chunk, V) |
                     RLX_VK_BIT(delta_chunk, STATE) | RLX_VK_BIT(delta_chunk, WY);
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_delta_chunk, spec, chunk_bind, 6, reads,
                   RLX_VK_BIT(delta_chunk, STATE) | RLX_VK_BIT(delta_chunk, OUT), push, DELTA_PUSH_WORDS * 4,
                   (uint64_t)plan->seq_groups * hv * plan->col_blocks);
}

/* DELTA_RULE i, with the operands it computes itself where it absorbed their producers
 * (VK_FUSE_DELTA_INPUTS): v through a SLICE, g from DELTA_GATE's inputs, beta from SIGMOID's. */
rlx_status vk_lower_DELTA_RULE(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i), *q = in(p, i, 0);
    vk_delta_plan plan;
    const char *why = "";
    if (!vk_delta_plan_make(p, i, &plan, &why))
        return rlx_errorf(RLX_ERR_INTERNAL, "compile: %%%d DELTA_RULE: no plan (%s) after preparation", i, why);
    const rlx_node *x = n->info.in;
    bool gate = vk_absorbed(p, x[3]) && node(p, x[3])->fused_into == i;
    bool sig = vk_absorbed(p, x[4]) && node(p, x[4])->fused_into == i;
    rlx_node vs = slice_read_by(p, x[2], i);
    vk_range bind[9];
    uint32_t vwords[3];
    RLX_TRY(vk_f32_range(p, x[0], &bind[RLX_VK_BIND(delta_step, Q)]));
    RLX_TRY(vk_f32_range(p, x[1], &bind[RLX_VK_BIND(delta_step, K)]));
    RLX_TRY(operand(p, vs, x[2], &bind[RLX_VK_BIND(delta_step, V)], vwords));
    RLX_TRY(vk_f32_range(p, gate ? in0(p, x[3]) : x[3], &bind[RLX_VK_BIND(delta_step, G)]));
    RLX_TRY(vk_f32_range(p, sig ? in0(p, x[4]) : x[4], &bind[RLX_VK_BIND(delta_step, BETA)]));
    bind[RLX_VK_BIND(delta_step, GATE_A)] = bind[RLX_VK_BIND(delta_step, G)];
    bind[RLX_VK_BIND(delta_step, GATE_BIAS)] = bind[RLX_VK_BIND(delta_step, G)];
    if (gate) {
        RLX_TRY(vk_f32_range(p, node(p, x[3])->info.in[1], &bind[RLX_VK_BIND(delta_step, GATE_A)]));
        RLX_TRY(vk_f32_range(p, node(p, x[3])->info.in[2], &bind[RLX_VK_BIND(delta_step, GATE_BIAS)]));
    }
    bind[RLX_VK_BIND(delta_step, STATE)] = vk_node_range(p, x[5]);
    bind[RLX_VK_BIND(delta_step, OUT)] = vk_node_range(p, i);
    uint32_t off, floats;
    state_words(p, x[5], &off, &floats);
    uint64_t rows = (uint64_t)n->info.shape.dim[0], hv = (uint64_t)n->info.shape.dim[1];
    uint32_t push[DELTA_PUSH_WORDS] = {(uint32_t)rows, (uint32_t)q->info.shape.dim[1], (uint32_t)hv,
                                       (uint32_t)q->info.shape.dim[2], (uint32_t)n->info.shape.dim[2], off, floats,
                                       plan.col_blocks, plan.seq_groups, vwords[0], vwords[1], vwords[2]};
    if (node(p, x[0])->fused_into == i) /* q and k normalised here (vk_fuse.c fuse_delta): both or neither */
        RLX_TRY(absorbed_norms(p, x, bind, push));
    uint32_t reads = RLX_VK_BIT(delta_step, Q) | RLX_VK_BIT(delta_step, K) | RLX_VK_BIT(delta_step, V) |
                     RLX_VK_BIT(delta_step, G) | RLX_VK_BIT(delta_step, BETA) | RLX_VK_BIT(delta_step, STATE) |
                     (gate ? RLX_VK_BIT(delta_step, GATE_A) | RLX_VK_BIT(delta_step, GATE_BIAS) : 0u);
    uint32_t writes = RLX_VK_BIT(delta_step, STATE) | RLX_VK_BIT(delta_step, OUT);
    uint64_t groups = (uint64_t)plan.seq_groups * hv * plan.col_blocks;
    if (plan.chunked) return emit_chunked(p, i, &plan, bind, push, gate, sig);
    uint32_t spec[5] = {[RLX_VK_SPEC_WG] = plan.wg, [RLX_VK_SPEC(delta_step, CW)] = plan.cw,
                        [RLX_VK_SPEC(delta_step, NR)] = plan.nr, [RLX_VK_SPEC(delta_step, GATE)] = gate,
                        [RLX_VK_SPEC(delta_step, SIG)] = sig};
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_delta_step, spec, bind, 9, reads, writes, push, sizeof push, groups);
}

/* One recurrent_ew.comp dispatch over node i's elements; a and c are RLX_NO_NODE when unused. */
static rlx_status recurrent_ew(rlx_program *p, rlx_node i, uint32_t op, rlx_node a, rlx_node c, uint32_t in_cols,
                               uint32_t begin) {
    const vk_node *n = node(p, i);
    vk_range bind[4];
    RLX_TRY(vk_f32_range(p, n->info.in[0], &bind[RLX_VK_BIND(recurrent_ew, X)]));
    bind[RLX_VK_BIND(recurrent_ew, A)] = bind[RLX_VK_BIND(recurrent_ew, X)];
    bind[RLX_VK_BIND(recurrent_ew, C)] = bind[RLX_VK_BIND(recurrent_ew, X)];
    if (a != RLX_NO_NODE) RLX_TRY(vk_f32_range(p, a, &bind[RLX_VK_BIND(recurrent_ew, A)]));
    if (c != RLX_NO_NODE) RLX_TRY(vk_f32_range(p, c, &bind[RLX_VK_BIND(recurrent_ew, C)]));
    bind[RLX_VK_BIND(recurrent_ew, OUT)] = vk_node_range(p, i);
    uint32_t reads = RLX_VK_BIT(recurrent_ew, X) | (a != RLX_NO_NODE ? RLX_VK_BIT(recurrent_ew, A) : 0u) |
                     (c != RLX_NO_NODE ? RLX_VK_BIT(recurrent_ew, C) : 0u);
    uint32_t spec[2] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(recurrent_ew, OP)] = op};
    uint32_t push[5] = {(uint32_t)n->numel, (uint32_t)last_dim(n), in_cols, begin, n->tok};
    uint64_t groups = ceil_div((uint64_t)n->numel, p->b->wg);
    return vk_emit(p, &p->run, i, RLX_VK_KERNEL_recurrent_ew, spec, bind, 4, reads, RLX_VK_BIT(recurrent_ew, OUT), push,
                   sizeof push, groups < MAX_STRIDE_GROUPS ? groups : MAX_STRIDE_GROUPS);
}

rlx_status vk_lower_DELTA_GATE(rlx_program *p, rlx_node i) {
    if (vk_absorbed(p, i)) return NULL;
    return recurrent_ew(p, i, REW_DELTA_GATE, node(p, i)->info.in[1], node(p, i)->info.in[2], 0, 0);
}

rlx_status vk_lower_SLICE(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (vk_absorbed(p, i)) return NULL;
    return recurrent_ew(p, i, REW_SLICE, RLX_NO_NODE, RLX_NO_NODE, (uint32_t)last_dim(in(p, i, 0)),
                        (uint32_t)n->info.attrs.slice_begin);
}

rlx_status vk_lower_SCALE_ROWS(rlx_program *p, rlx_node i) {
    if (vk_absorbed(p, i)) return NULL; /* a MoE's gated shared expert, in its down pass (vk_fuse.c fuse_moe) */
    return recurrent_ew(p, i, REW_SCALE_ROWS, node(p, i)->info.in[1], RLX_NO_NODE, 0, 0);
}

rlx_status vk_emit_l2_norm(rlx_program *p, rlx_node at, rlx_node l2, float scale) {
    const vk_node *n = node(p, l2), *out = node(p, at);
    uint64_t cols = (uint64_t)last_dim(n), rows = (uint64_t)n->numel / cols;
    vk_range bind[2];
    uint32_t words[3];
    rlx_node s = n->fuse == VK_FUSE_L2_SLICE ? n->fuse_a : RLX_NO_NODE;
    RLX_TRY(operand(p, s, n->info.in[0], &bind[RLX_VK_BIND(l2_norm, X)], words));
    bind[RLX_VK_BIND(l2_norm, OUT)] = vk_node_range(p, at);
    uint32_t spec[1] = {cols <= 1024 ? p->b->wg : p->b->wg_row};
    uint32_t push[8] = {(uint32_t)rows, (uint32_t)cols, f32_bits(n->info.attrs.eps),
                        out->tok ? (uint32_t)(out->tok / cols) : 0u, f32_bits(scale), words[0], words[1], words[2]};
    return vk_emit(p, &p->run, at, RLX_VK_KERNEL_l2_norm, spec, bind, 2, RLX_VK_BIT(l2_norm, X), RLX_VK_BIT(l2_norm, OUT),
                   push, sizeof push, rows);
}

rlx_status vk_lower_L2_NORM(rlx_program *p, rlx_node i) { return vk_absorbed(p, i) ? NULL : vk_emit_l2_norm(p, i, i, 1.0f); }
