/* Fusion planning for the Vulkan lowering: before any memory is planned, each node decides which
 * of its producers its own dispatch absorbs (vk_fuse kinds, runtime/vk_internal.h), so that decode
 * is as few dependent stages as the kernels allow. The lowerings (vk_lower.c) then emit one
 * dispatch per node that was not absorbed. What a node's kernel and plan will be is asked of the
 * planner (vk_plan.c), never of the lowering. */
#include "runtime/vk_lower.h"

/* Node j can be folded into its single consumer: computed, read once, not an output. */
static bool absorbable(const rlx_program *p, rlx_node j, rlx_op op) {
    const vk_node *n = node(p, j);
    return n->info.op == op && n->live && !n->is_output && n->n_consumers == 1 && n->store == VK_STORE_ARENA &&
           n->fused_into == RLX_NO_NODE;
}

static void absorb(rlx_program *p, rlx_node into, vk_fuse kind, rlx_node a, rlx_node b) {
    vk_node *n = &p->nodes[into];
    n->fuse = (uint8_t)kind;
    n->fuse_a = a;
    n->fuse_b = b;
}

/* ADD(matmul, y) or ADD(y, matmul): the residual add becomes the matmul's epilogue; else
 * ADD(rms_norm, y) or ADD(y, rms_norm) (a post-norm, as Gemma 3 has) the norm's. */
static void fuse_add(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    static const rlx_op producers[2] = {RLX_OP_MATMUL, RLX_OP_RMS_NORM};
    static const vk_fuse kinds[2] = {VK_FUSE_MATMUL_ADD, VK_FUSE_NORM_ADD};
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < 2; k++) {
            rlx_node m = n->info.in[k], other = n->info.in[1 - k];
            if (m == other || !absorbable(p, m, producers[f])) continue;
            p->nodes[m].fused_into = i;
            absorb(p, i, kinds[f], m, other);
            return;
        }
}

/* MUL i = act(x Wg) * (x Wu) fused as VK_FUSE_MATMUL_GATE, with the activation absorbed: when the
 * gate matmul reads the same x, its weights match Wu's (type, shape, one binding) and the up matmul
 * runs on shaders/matvec.comp, that matvec computes the gate rows too (its GATE), and the gate
 * projection has no dispatch and no stage of its own. */
static void fuse_gate_up(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    rlx_node g = in0(p, n->fuse_b), u = n->fuse_a;
    if (!absorbable(p, g, RLX_OP_MATMUL) || in0(p, g) != in0(p, u) ||
        !vk_same_single_part_weights(p, in1(p, g), in1(p, u)) || !vk_takes_matvec(p, u))
        return;
    p->nodes[g].fused_into = i;
    p->nodes[i].fuse = VK_FUSE_GATE_UP;
}

static bool is_act(const rlx_program *p, rlx_node j) {
    rlx_op op = node(p, j)->info.op;
    return op == RLX_OP_SILU || op == RLX_OP_GELU_TANH;
}

/* MUL(act(g), u) or MUL(u, act(g)), act SiLU or GELU-tanh: the gated FFN. With u a matmul read only
 * here, the gate is the up-projection's epilogue; otherwise one elementwise kernel does act * u.
 * The activation node is skipped when nothing else reads it. */
static void fuse_mul(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    for (int k = 0; k < 2; k++) {
        rlx_node act = n->info.in[k], u = n->info.in[1 - k];
        if (act == u || !is_act(p, act) || !node(p, act)->live) continue;
        bool act_gone = absorbable(p, act, node(p, act)->info.op);
        if (absorbable(p, u, RLX_OP_MATMUL)) {
            p->nodes[u].fused_into = i;
            if (act_gone) p->nodes[act].fused_into = i;
            absorb(p, i, VK_FUSE_MATMUL_GATE, u, act);
            if (act_gone) fuse_gate_up(p, i);
            return;
        }
        /* RMS_NORM(o) * SiLU(z), the Gated DeltaNet layer's output: the norm's kernel does it */
        if (act_gone && node(p, act)->info.op == RLX_OP_SILU && absorbable(p, u, RLX_OP_RMS_NORM) &&
            node(p, u)->fuse == VK_FUSE_NONE) {
            p->nodes[u].fused_into = i;
            p->nodes[act].fused_into = i;
            absorb(p, i, VK_FUSE_NORM_GATE, u, act);
            return;
        }
        if (act_gone) {
            p->nodes[act].fused_into = i;
            absorb(p, i, VK_FUSE_ACT_MUL, act, u);
            return;
        }
    }
}

/* SCALE(RMS_NORM) -> the norm's scale; ROPE(RMS_NORM over heads) -> q/k norm + RoPE. */
static void fuse_norm(rlx_program *p, rlx_node i, vk_fuse kind) {
    rlx_node m = node(p, i)->info.in[0];
    if (!absorbable(p, m, RLX_OP_RMS_NORM)) return;
    p->nodes[m].fused_into = i;
    absorb(p, i, kind, m, RLX_NO_NODE);
}

/* The SLICE whose values j holds through RESHAPE views, when the dispatch reading j can read the
 * slice's source itself: the slice and every view on the way are read only there. */
static rlx_node slice_through(const rlx_program *p, rlx_node j) {
    while (node(p, j)->info.op == RLX_OP_RESHAPE) {
        if (node(p, j)->n_consumers != 1 || node(p, j)->is_output) return RLX_NO_NODE;
        j = node(p, j)->info.in[0];
    }
    return absorbable(p, j, RLX_OP_SLICE) ? j : RLX_NO_NODE;
}

/* The Gated DeltaNet layer's small steps folded into their readers (decode is dispatch-bound):
 * L2_NORM reads q and k out of the conv's output; SCALE(L2_NORM) is the norm's scale; DELTA_RULE
 * reads v out of the conv's output and computes beta = sigmoid(b) and g = DELTA_GATE(a) itself. */
static void fuse_l2(rlx_program *p, rlx_node i) {
    rlx_node s = slice_through(p, in0(p, i));
    if (s == RLX_NO_NODE) return;
    p->nodes[s].fused_into = i;
    absorb(p, i, VK_FUSE_L2_SLICE, s, RLX_NO_NODE);
}

static void fuse_l2_scale(rlx_program *p, rlx_node i) {
    rlx_node m = in0(p, i);
    if (node(p, i)->fuse != VK_FUSE_NONE || !absorbable(p, m, RLX_OP_L2_NORM)) return;
    p->nodes[m].fused_into = i;
    absorb(p, i, VK_FUSE_L2_SCALE, m, RLX_NO_NODE);
}

/* q (k) when it is an L2_NORM, maybe under q's SCALE (VK_FUSE_L2_SCALE), read by DELTA_RULE alone;
 * *l2 the norm. */
static rlx_node delta_norm(const rlx_program *p, rlx_node j, rlx_node *l2) {
    *l2 = j;
    if (absorbable(p, j, RLX_OP_L2_NORM)) return j;
    if (!absorbable(p, j, RLX_OP_SCALE) || node(p, j)->fuse != VK_FUSE_L2_SCALE) return RLX_NO_NODE;
    *l2 = node(p, j)->fuse_a;
    return j;
}

static void fuse_delta(rlx_program *p, rlx_node i) {
    const rlx_node *in = node(p, i)->info.in;
    rlx_node v = slice_through(p, in[2]), taken[5] = {v, RLX_NO_NODE, RLX_NO_NODE, RLX_NO_NODE, RLX_NO_NODE};
    if (in[3] != in[4] && absorbable(p, in[3], RLX_OP_DELTA_GATE)) taken[1] = in[3];
    if (in[3] != in[4] && absorbable(p, in[4], RLX_OP_SIGMOID)) taken[2] = in[4];
    /* decode (shaders/delta_step.comp): q and k normalised by the step itself, two dispatches fewer
     * per layer; both or neither, the kernel has one switch */
    vk_delta_plan plan;
    const char *why = "";
    rlx_node ql2, kl2, qn = delta_norm(p, in[0], &ql2), kn = delta_norm(p, in[1], &kl2);
    if (vk_delta_plan_make(p, i, &plan, &why) && !plan.chunked && qn != RLX_NO_NODE && kn != RLX_NO_NODE &&
        qn != kn && node(p, ql2)->info.attrs.eps == node(p, kl2)->info.attrs.eps) {
        taken[3] = qn;
        taken[4] = kn;
    }
    bool any = false;
    for (int k = 0; k < 5; k++)
        if (taken[k] != RLX_NO_NODE) {
            p->nodes[taken[k]].fused_into = i;
            any = true;
        }
    if (any) absorb(p, i, VK_FUSE_DELTA_INPUTS, RLX_NO_NODE, RLX_NO_NODE);
}

/* The node that computes the values j reads (through RESHAPE views). */
static rlx_node producer(const rlx_program *p, rlx_node j) {
    while (node(p, j)->info.op == RLX_OP_RESHAPE) j = node(p, j)->info.in[0];
    return j;
}

/* The V KV_WRITE that K's write kw can carry out as well: the V operand of the attention that reads
 * kw, when its rows exist by kw's dispatch (a leaf, or computed earlier by a dispatch of its own),
 * match K's rows, and nothing reads the V cache until after kw. RLX_NO_NODE otherwise. */
static rlx_node v_partner(const rlx_program *p, rlx_node kw) {
    rlx_node a = kw + 1;
    for (; a < p->n_nodes; a++)
        if (node(p, a)->live && node(p, a)->info.op == RLX_OP_ATTENTION && node(p, a)->info.in[1] == kw) break;
    if (a >= p->n_nodes) return RLX_NO_NODE;
    rlx_node vw = node(p, a)->info.in[2];
    const vk_node *v = node(p, vw);
    if (vw == kw || v->info.op != RLX_OP_KV_WRITE || v->fused_into != RLX_NO_NODE || v->fuse != VK_FUSE_NONE ||
        node(p, v->info.in[0])->n_consumers != 1)
        return RLX_NO_NODE;
    rlx_node src = producer(p, v->info.in[1]);
    bool leaf = node(p, src)->store == VK_STORE_INPUT || node(p, src)->store == VK_STORE_WEIGHT;
    if (!leaf && (src > kw || node(p, src)->fused_into != RLX_NO_NODE)) return RLX_NO_NODE;
    if (node(p, v->info.in[1])->info.shape.dim[0] != in(p, kw, 1)->info.shape.dim[0]) return RLX_NO_NODE;
    for (rlx_node j = 0; j <= kw; j++)
        if (node(p, j)->live && vk_reads(p, j, vw)) return RLX_NO_NODE;
    return vw;
}

/* KV_WRITE(cache, ROPE(..)): the RoPE kernel (or the q/k norm + RoPE kernel it absorbed) writes K
 * straight into the cache, and copies V's rows into the V cache when v_partner allows: two
 * dispatches fewer per layer. */
static void fuse_kv(rlx_program *p, rlx_node i) {
    rlx_node r = node(p, i)->info.in[1];
    if (node(p, i)->fused_into != RLX_NO_NODE || !absorbable(p, r, RLX_OP_ROPE)) return;
    p->nodes[r].fused_into = i;
    rlx_node vw = v_partner(p, i);
    if (vw != RLX_NO_NODE) p->nodes[vw].fused_into = i;
    absorb(p, i, VK_FUSE_KV_ROPE, r, vw);
}

/* ATTENTION a of one query row (a decode step) whose q is a ROPE [of an RMS_NORM] read only here and
 * whose K write carries K's RoPE [and norm] (fuse_kv): shaders/attention_step.comp does the q/k
 * norms, the RoPE and both cache writes itself, so they take no stage of their own (a stage fewer
 * per layer). The q and k sides must match (both normed or neither, one RoPE layout and n_rot),
 * and the V write may be K's partner or a plain KV_WRITE. Not in deterministic mode: a one-row
 * kernel, whose norms and attention sum in another order than the kernels of more rows. */
static void fuse_attention_step(rlx_program *p, rlx_node a) {
    rlx_node qr = in0(p, a), kw = in1(p, a), vw = node(p, a)->info.in[2];
    const vk_node *q = node(p, qr), *k = node(p, kw), *v = node(p, vw);
    if (vk_deterministic(p) || q->info.shape.dim[0] != 1 || !absorbable(p, qr, RLX_OP_ROPE) ||
        (q->fuse != VK_FUSE_NONE && q->fuse != VK_FUSE_NORM_ROPE))
        return;
    if (k->info.op != RLX_OP_KV_WRITE || k->fuse != VK_FUSE_KV_ROPE || k->fused_into != RLX_NO_NODE ||
        k->n_consumers != 1 || in(p, kw, 0)->n_consumers != 1 || in(p, kw, 1)->info.shape.dim[0] != 1)
        return;
    const rlx_rope_attrs *qa = &q->info.attrs.rope, *ka = &node(p, k->fuse_a)->info.attrs.rope;
    if ((vk_rope_norm(p, qr) == RLX_NO_NODE) != (vk_rope_norm(p, k->fuse_a) == RLX_NO_NODE) || qa->layout != ka->layout ||
        qa->n_rot != ka->n_rot)
        return;
    bool partner = k->fuse_b == vw;
    if (vw == kw || v->info.op != RLX_OP_KV_WRITE || v->n_consumers != 1 || in(p, vw, 0)->n_consumers != 1 ||
        in(p, vw, 1)->info.shape.dim[0] != 1 || (!partner && (v->fused_into != RLX_NO_NODE || v->fuse != VK_FUSE_NONE)))
        return;
    p->nodes[qr].fused_into = a;
    p->nodes[kw].fused_into = a;
    if (!partner) p->nodes[vw].fused_into = a;
    absorb(p, a, VK_FUSE_ATTN_STEP, qr, kw);
}

/* Decode attention reads its cache rows from L2 where the V matvec warmed them (mark_warm) on a GPU
 * for plain weight types with rows of WARM_MIN_K or more: there the V matvec is long enough to hide
 * the extra loads; shorter rows and the K-quants' V matvecs slow down by more than attention gains
 * (docs/PERFORMANCE.md). */
#define WARM_MIN_K 4096

/* RLX_VK_WARM=0|1 (the backend's tuning, runtime/vk_options.h): never
 * warm, or wherever mark_warm can; unset or empty: the default above. */
static bool warm_wanted(const rlx_program *p, rlx_node mm) {
    int set = p->b->tuning.warm;
    if (set >= 0) return set == 1;
    return p->gpu_plans && vk_plain_type(matrix_of(p, in1(p, mm)).type) &&
           last_dim(in(p, mm, 0)) >= WARM_MIN_K;
}

/* Decode attention a (VK_FUSE_ATTN_STEP) has its cache rows read into L2 by the matvec that computes
 * its new V rows (shaders/matvec.comp WARM), the last of the stage before it in the families'
 * graphs: the walk's loads then come from L2, not memory, which decode attention's latency is
 * bound by. Where warm_wanted, the V matmul is its own matvec dispatch of one weight part, and K and
 * V cache rows are alike and whole 16-byte words (of F32 or F16 elements). */
static void mark_warm(rlx_program *p, rlx_node a) {
    const vk_node *n = node(p, a), *kc = in(p, n->info.in[1], 0), *vc = in(p, n->info.in[2], 0);
    if (n->fuse != VK_FUSE_ATTN_STEP) return;
    rlx_node mm = producer(p, in1(p, n->info.in[2]));
    const vk_node *m = node(p, mm);
    if (m->info.op != RLX_OP_MATMUL || m->fused_into != RLX_NO_NODE || m->post != RLX_NO_NODE ||
        m->fuse == VK_FUSE_GATE_UP || !vk_takes_matvec(p, mm) || matrix_of(p, in1(p, mm)).n_parts != 1 ||
        !warm_wanted(p, mm))
        return;
    int64_t row = kc->numel / kc->info.shape.dim[0];
    if (row != vc->numel / vc->info.shape.dim[0] || kc->info.shape.dim[0] != vc->info.shape.dim[0] ||
        row * vk_kv_elem_bytes(p->s) % 16 != 0)
        return;
    p->nodes[mm].warm = a;
}

static bool norm_fold_pays(const rlx_program *p, rlx_node mm);

/* Whether node j reads i only as the x of a MOE_FFN on shaders/moe_mv.comp, whose gate and up
 * passes can scale their sums (SCALED; the grouped path's moe_mm.comp has no such scale). */
static bool read_as_moe_x(const rlx_program *p, rlx_node j, rlx_node i) {
    const vk_node *c = node(p, j);
    vk_moe_plan grouped;
    if (c->info.op != RLX_OP_MOE_FFN || c->fuse != VK_FUSE_NONE || c->info.in[0] != i) return false;
    if (vk_moe_grouped_plan(p, j, &grouped)) return false;
    for (int k = 1; k < c->info.n_in; k++)
        if (c->info.in[k] == i) return false;
    return true;
}

/* Whether every live reader of node i reads it only as the x of a MATMUL not yet fused that runs
 * on matvec.comp (and, with fold, one that a norm folded into pays: norm_fold_pays), or, without
 * fold, of a MOE_FFN. */
static bool read_as_matvec_x(const rlx_program *p, rlx_node i, bool fold) {
    int32_t readers = 0;
    for (rlx_node j = i + 1; j < p->n_nodes; j++) {
        const vk_node *c = node(p, j);
        if (!c->live || !vk_reads(p, j, i)) continue;
        if (!fold && read_as_moe_x(p, j, i)) {
            readers++;
            continue;
        }
        if (c->info.op != RLX_OP_MATMUL || c->info.in[0] != i || c->info.in[1] == i || c->fuse != VK_FUSE_NONE ||
            !vk_takes_matvec(p, j) || (fold && !norm_fold_pays(p, j)))
            return false;
        readers++;
    }
    return readers == node(p, i)->n_consumers;
}

/* ARGMAX i of the one row of a MATMUL on matvec.comp that nothing else reads (the logits of greedy
 * decode): that matvec's workgroups leave their maxima, and the last ones to finish reduce them,
 * so the argmax has no dispatch and no stage of its own. */
static void fuse_argmax_into_producer(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i), *mm = node(p, in0(p, i));
    matvec_plan mv;
    if (n->fused_into != RLX_NO_NODE || n->store != VK_STORE_ARENA || mm->info.op != RLX_OP_MATMUL ||
        mm->n_consumers != 1 || mm->is_output || mm->fused_into != RLX_NO_NODE || mm->post != RLX_NO_NODE ||
        last_dim(mm) != mm->numel || !vk_post_plan(p, in0(p, i), &mv))
        return;
    absorb(p, i, VK_FUSE_ARGMAX_BY_PRODUCER, in0(p, i), RLX_NO_NODE);
    p->nodes[in0(p, i)].post = i;
}

/* RMS_NORM i of one row whose input is a residual add computed by a matvec (VK_FUSE_MATMUL_ADD:
 * decode's o and down projections) and read only as the x of matmuls on matvec.comp that do not
 * fold it in (K-quant rows over NORM_FOLD_MAX_KQUANT_K): that matvec writes the input times the
 * norm's weights and leaves the rsqrt factor, which the readers apply to their sums (SCALED), so
 * the norm has no dispatch and no stage of its own. */
static void fuse_norm_into_producer(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i), *a = node(p, in0(p, i));
    matvec_plan mv;
    if (n->fused_into != RLX_NO_NODE || n->fuse != VK_FUSE_NONE || n->is_output || n->store != VK_STORE_ARENA ||
        n->numel != last_dim(n) || n->n_consumers == 0 || a->info.op != RLX_OP_ADD || a->fuse != VK_FUSE_MATMUL_ADD ||
        a->fused_into != RLX_NO_NODE || a->post != RLX_NO_NODE || !vk_post_plan(p, in0(p, i), &mv) ||
        !read_as_matvec_x(p, i, false))
        return;
    for (rlx_node j = i + 1; j < p->n_nodes; j++)
        if (node(p, j)->live && vk_reads(p, j, i)) absorb(p, j, VK_FUSE_MATVEC_SCALED, i, RLX_NO_NODE);
    absorb(p, i, VK_FUSE_NORM_BY_PRODUCER, in0(p, i), RLX_NO_NODE);
    p->nodes[in0(p, i)].post = i;
}

/* The node whose dispatch computes node j's value. */
static rlx_node dispatch_of(const rlx_program *p, rlx_node j) {
    while (node(p, j)->fused_into != RLX_NO_NODE) j = node(p, j)->fused_into;
    return j;
}

/* A folded norm makes every x load of a matvec also load and multiply the norm's weights. On long
 * K-quant rows, whose decode already limits the matvec, that costs more than the stage it saves;
 * shorter rows gain. */
#define NORM_FOLD_MAX_KQUANT_K 2048

static bool norm_fold_pays(const rlx_program *p, rlx_node mm) {
    uint32_t type = matrix_of(p, node(p, mm)->info.in[1]).type;
    return (type != RLX_DTYPE_Q4_K && type != RLX_DTYPE_Q6_K) || last_dim(in(p, mm, 0)) <= NORM_FOLD_MAX_KQUANT_K;
}

/* RMS_NORM read only as the x of matmuls that run on shaders/matvec.comp (decode: q/k/v, gate/up):
 * each of them normalises its x rows itself, and the norm has no dispatch of its own (a stage
 * fewer, twice a layer). Where any reader takes another kernel (prefill rows, types matvec.comp
 * does not decode) the norm keeps its dispatch: computed once, not once per reader. The norm's
 * fused_into is its last reader's, so that its operands stay live until that dispatch. */
static void fuse_norm_matvec(rlx_program *p, rlx_node i) {
    const vk_node *n = node(p, i);
    if (n->is_output || n->store != VK_STORE_ARENA || n->fused_into != RLX_NO_NODE || n->n_consumers == 0 ||
        !read_as_matvec_x(p, i, true))
        return;
    rlx_node last = RLX_NO_NODE;
    for (rlx_node j = i + 1; j < p->n_nodes; j++) {
        if (!node(p, j)->live || !vk_reads(p, j, i)) continue;
        absorb(p, j, VK_FUSE_MATVEC_NORM, i, RLX_NO_NODE);
        if (last == RLX_NO_NODE || dispatch_of(p, j) > dispatch_of(p, last)) last = j;
    }
    p->nodes[i].fused_into = last;
}

/* The one live node that reads j (j has one consumer), or RLX_NO_NODE. */
static rlx_node consumer_of(const rlx_program *p, rlx_node j) {
    for (rlx_node c = j + 1; c < p->n_nodes; c++)
        if (node(p, c)->live && vk_reads(p, c, j)) return c;
    return RLX_NO_NODE;
}

static bool same_numel(const rlx_program *p, rlx_node a, rlx_node b) { return node(p, a)->numel == node(p, b)->numel; }

/* The operand of ADD a other than x. */
static rlx_node other_in(const rlx_program *p, rlx_node a, rlx_node x) { return in0(p, a) == x ? in1(p, a) : in0(p, a); }

/* A MoE FFN's sums in its down pass (shaders/moe_mv.comp EPI): ADD(moe, y), and a residual
 * ADD(x, ADD(moe, y)) around it, with y = SCALE_ROWS(shared, SIGMOID(g)) (Qwen3.5-MoE's gated shared
 * expert) absorbed as well. The outermost ADD dispatches; decode is dispatch-bound, and these
 * were up to four stages a layer of a few kilobytes each. */
static void fuse_moe(rlx_program *p, rlx_node moe) {
    if (!absorbable(p, moe, RLX_OP_MOE_FFN)) return;
    rlx_node c1 = consumer_of(p, moe);
    if (c1 == RLX_NO_NODE || node(p, c1)->info.op != RLX_OP_ADD || in0(p, c1) == in1(p, c1) ||
        !same_numel(p, c1, moe) || !same_numel(p, other_in(p, c1, moe), moe))
        return;
    rlx_node at = c1, inner = RLX_NO_NODE, c2 = absorbable(p, c1, RLX_OP_ADD) ? consumer_of(p, c1) : RLX_NO_NODE;
    if (c2 != RLX_NO_NODE && node(p, c2)->info.op == RLX_OP_ADD && in0(p, c2) != in1(p, c2) && same_numel(p, c2, moe) &&
        same_numel(p, other_in(p, c2, c1), moe)) {
        at = c2;
        inner = c1;
        p->nodes[c1].fused_into = c2;
    }
    p->nodes[moe].fused_into = at;
    absorb(p, at, VK_FUSE_MOE_ADD, moe, inner);
    rlx_node y = other_in(p, c1, moe);
    if (!absorbable(p, y, RLX_OP_SCALE_ROWS) || !absorbable(p, in1(p, y), RLX_OP_SIGMOID)) return;
    p->nodes[y].fused_into = at;
    p->nodes[in1(p, y)].fused_into = at;
}

void vk_plan_fusion(rlx_program *p) {
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (node(p, i)->live && node(p, i)->info.op == RLX_OP_MOE_FFN) fuse_moe(p, i);
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        if (!node(p, i)->live) continue;
        switch (node(p, i)->info.op) {
        case RLX_OP_ADD:
            if (node(p, i)->fuse == VK_FUSE_NONE && node(p, i)->fused_into == RLX_NO_NODE) fuse_add(p, i);
            break;
        case RLX_OP_MUL: fuse_mul(p, i); break;
        case RLX_OP_SCALE:
            fuse_norm(p, i, VK_FUSE_NORM_SCALE);
            fuse_l2_scale(p, i);
            break;
        case RLX_OP_L2_NORM: fuse_l2(p, i); break;
        case RLX_OP_DELTA_RULE: fuse_delta(p, i); break;
        case RLX_OP_ROPE: fuse_norm(p, i, VK_FUSE_NORM_ROPE); break;
        default: break;
        }
    }
    /* after the others, so that v_partner sees every node's final fused_into, and a norm folded into
     * matvecs sees where each of them is dispatched */
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        if (!node(p, i)->live) continue;
        if (node(p, i)->info.op == RLX_OP_KV_WRITE) fuse_kv(p, i);
        if (node(p, i)->info.op == RLX_OP_RMS_NORM) fuse_norm_matvec(p, i);
    }
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (node(p, i)->live && node(p, i)->info.op == RLX_OP_RMS_NORM) fuse_norm_into_producer(p, i);
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (node(p, i)->live && node(p, i)->info.op == RLX_OP_ARGMAX) fuse_argmax_into_producer(p, i);
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (node(p, i)->live && node(p, i)->info.op == RLX_OP_ATTENTION) {
            fuse_attention_step(p, i);
            mark_warm(p, i);
        }
}
