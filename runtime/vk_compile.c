/* IR graph -> dispatch program.
 *
 * Schedule: node order (the graph is built in dependency order), with dead nodes dropped (a node
 * is live when it reaches an output or is a KV_WRITE, whose effect is the cache).
 *
 * Buffers: every computed value gets 4-byte elements in an arena bin; values are placed first-fit
 * when produced and their range is released after their last consumer, so intermediates alias.
 * A bin never grows past the device's binding limit; a value that does not fit opens the next bin.
 * Views (RESHAPE) and KV_WRITE share their input's storage; weights and the KV cache live in the
 * session; INPUTs live in a small device region that is refreshed from host memory at the start
 * of every run together with the run-time scalars.
 *
 * Recording: descriptor sets are allocated and written once per program, and the whole run (input
 * copy, dispatches with the barriers they need, output copy) is recorded once into one command
 * buffer. The run's rows (n_tokens, each row's position and sequence, the sequences' page tables)
 * reach the kernels through a storage buffer (set 0, shaders/common.glsl RlxScalars), not push
 * constants: push constants are frozen into a recorded command buffer, and a buffer lets every
 * decode step replay it unchanged. Push constants carry each dispatch's static parameters.
 *
 * The rows' buffer: a header of ROWS_HEADER_WORDS words {n_past, n_tokens, ring fill, page shift,
 * page columns C, static rows R, table rows used, 0}, then pos[R], seq[R] and pages[R][C]; a
 * program with recurrent state adds the state table (load_state_table). It is sized for the
 * worst run: R rows of R distinct sequences, C = ceil(T / page_size) for the largest KV_CACHE T
 * (positions are below T, so no row reads a later column). load_rows numbers a run's sequences
 * 0.. in order of first use and copies only their tables; rows == NULL is the identity form
 * (pos = n_past + r, seq 0, page k = k), so every kernel has one path. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/analysis.h"
#include "loader/core/half.h"
#include "runtime/vk_internal.h"
#include "runtime/vk_status.h"

#define ROWS_HEADER_WORDS 8 /* shaders/common.glsl RLX_ROWS_HEADER_WORDS */
#define STATUS_BYTES 16
/* the ids a chain gathers, one word per step */
#define RING_BYTES (RLX_RUN_CHAIN_MAX * 4)

static VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

static VkDeviceSize storage_align(const rlx_program *p) {
    VkDeviceSize a = p->b->dev->caps->storage_align;
    return a < 16 ? 16 : a;
}

/* ---- ranges ---- */

static rlx_node storage_root(const rlx_program *p, rlx_node n) {
    while (p->nodes[n].store == VK_STORE_ALIAS) n = p->nodes[n].info.in[0];
    return n;
}

vk_range vk_node_range(const rlx_program *p, rlx_node n) {
    const vk_node *v = &p->nodes[storage_root(p, n)];
    const rlx_session *s = p->s;
    switch (v->store) {
    case VK_STORE_ARENA: return (vk_range){p->arena[v->bin].buffer, p->arena[v->bin].offset + v->offset, v->bytes};
    case VK_STORE_INPUT: return (vk_range){p->in_dev.buffer, p->in_dev.offset + v->input_offset, v->bytes};
    case VK_STORE_WEIGHT: {
        const rlx_vk_alloc *a = &v->weight->parts[0].alloc;
        return (vk_range){a->buffer, a->offset, a->size};
    }
    case VK_STORE_KV: { /* the whole pool: rows are where the page tables put them */
        const rlx_vk_alloc *a = v->info.attrs.kv_is_v ? &s->v_cache[v->info.attrs.layer] : &s->k_cache[v->info.attrs.layer];
        return (vk_range){a->buffer, a->offset, a->size};
    }
    case VK_STORE_STATE: { /* every slot: the kernels add the slot's and the part's offsets */
        const rlx_vk_alloc *a = &s->state[v->info.attrs.layer];
        return (vk_range){a->buffer, a->offset, a->size};
    }
    default: return (vk_range){0};
    }
}

bool vk_reads_pool(const rlx_program *p, rlx_node n) {
    return p->nodes[storage_root(p, n)].store == VK_STORE_KV;
}

bool vk_pool_f16(const rlx_program *p, rlx_node n) {
    return vk_reads_pool(p, n) && vk_kv_elem_bytes(p->s) == 2;
}

rlx_status vk_kv_range(const rlx_program *p, rlx_node n, vk_range *out) {
    if (!vk_reads_pool(p, n)) return vk_f32_range(p, n, out);
    *out = vk_node_range(p, n);
    return NULL;
}

rlx_status vk_f32_range(const rlx_program *p, rlx_node n, vk_range *out) {
    const vk_node *v = &p->nodes[storage_root(p, n)];
    if (vk_pool_f16(p, n))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "compile: %%%d reads the session's F16 K/V pool as f32 values; only "
                          "KV_WRITE and ATTENTION read the pools", n);
    if (v->store == VK_STORE_WEIGHT && v->has_const) {
        *out = vk_const_range(p, v->const_offset, v->bytes);
        return NULL;
    }
    if (v->store == VK_STORE_WEIGHT && v->weight->n_parts > 1)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "weight '%s' (%" PRIu64 " bytes) is read as an f32 operand but exceeds one binding (%" PRIu64
                          " bytes on %s)",
                          v->weight->name, v->weight->rows * v->weight->row_bytes, p->b->dev->max_binding,
                          p->b->dev->caps->name);
    *out = vk_node_range(p, n);
    return NULL;
}

rlx_status vk_const_reserve(rlx_program *p, VkDeviceSize bytes, VkDeviceSize *offset) {
    VkDeviceSize off = align_up(p->consts_size, storage_align(p)), end = off + align_up(bytes, 16);
    uint8_t *grown = realloc(p->consts_host, end);
    if (!grown) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: %" PRIu64 " bytes of constants", (uint64_t)end);
    memset(grown + p->consts_size, 0, end - p->consts_size);
    p->consts_host = grown;
    p->consts_size = end;
    *offset = off;
    return NULL;
}

vk_range vk_const_range(const rlx_program *p, VkDeviceSize offset, VkDeviceSize bytes) {
    return (vk_range){p->consts.buffer, p->consts.offset + offset, bytes};
}

/* ---- dispatches ---- */

rlx_status vk_emit(rlx_program *p, vk_dispatch_list *list, rlx_node node, rlx_vk_kernel k, const uint32_t *spec,
                   const vk_range *bind, uint32_t n_bind, uint32_t reads, uint32_t writes, const void *push,
                   uint32_t push_bytes, uint64_t groups) {
    const rlx_vk_caps *c = p->b->dev->caps;
    const rlx_vk_kernel_info *info = rlx_vk_kernel_get(k);
    if (n_bind != info->n_bindings || push_bytes > info->push_bytes)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d: kernel %s takes %u bindings and %u push bytes, got %u and %u",
                          node, info->name, info->n_bindings, info->push_bytes, n_bind, push_bytes);
    if (groups == 0) return NULL;
    uint64_t x = groups < c->max_wg_count[0] ? groups : c->max_wg_count[0];
    if ((groups + x - 1) / x > c->max_wg_count[1])
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%%%d: kernel %s needs %" PRIu64 " workgroups, more than %s can launch",
                          node, info->name, groups, c->name);
    for (uint32_t i = 0; i < n_bind; i++)
        if (!bind[i].buffer || bind[i].size == 0)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d: kernel %s binding %u has no storage", node, info->name,
                              i);
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 64;
        vk_dispatch *grown = realloc(list->items, cap * sizeof *grown);
        if (!grown) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: %zu dispatches", cap);
        list->items = grown;
        list->cap = cap;
    }
    vk_dispatch *d = &list->items[list->n];
    memset(d, 0, sizeof *d);
    RLX_TRY(rlx_vk_pipeline_get(p->b->pipes, k, spec, &d->pipe));
    memcpy(d->bind, bind, n_bind * sizeof *bind);
    d->n_bind = n_bind;
    d->reads = reads;
    d->writes = writes;
    memcpy(d->push, push, push_bytes);
    d->push_bytes = push_bytes;
    d->groups = groups;
    d->node = node;
    list->n++;
    return NULL;
}

/* ---- graph copy and leaf binding ---- */

static int weight_cmp_name(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const vk_weight *)elem)->name);
}

static bool weight_shape_matches(const rlx_shape *s, const vk_weight *w) {
    for (uint32_t d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) {
        uint64_t want = (int32_t)d < s->rank ? (uint64_t)s->dim[s->rank - 1 - (int32_t)d] : 1;
        uint64_t have = d < w->n_dims ? w->ne[d] : 1;
        if (want != have) return false;
    }
    return true;
}

static const char *shape_str(const rlx_shape *s, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < s->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %" PRId64 : "%" PRId64, s->dim[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

static rlx_status bind_weight(rlx_program *p, rlx_node i) {
    vk_node *n = &p->nodes[i];
    const rlx_session *s = p->s;
    const vk_weight *w = bsearch(n->info.name, s->weights, s->n_weights, sizeof *s->weights, weight_cmp_name);
    if (!w)
        return rlx_errorf(RLX_ERR_NOT_FOUND, "compile: %%%d WEIGHT '%s' is not among the session's %zu weights", i,
                          n->info.name, s->n_weights);
    char want[96];
    if (w->type != n->info.dtype || !weight_shape_matches(&n->info.shape, w))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "compile: %%%d WEIGHT '%s' is declared %s%s but the session holds %s with ne [%" PRIu64
                          ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]",
                          i, n->info.name, rlx_dtype_name(n->info.dtype),
                          shape_str(&n->info.shape, want, sizeof want), rlx_dtype_name(w->type), w->ne[0],
                          w->ne[1], w->ne[2], w->ne[3]);
    n->store = VK_STORE_WEIGHT;
    n->weight = w;
    return NULL;
}

static rlx_status bind_cache(rlx_program *p, rlx_node i) {
    vk_node *n = &p->nodes[i];
    const rlx_state_spec *kv = &p->s->kv;
    const rlx_attrs *a = &n->info.attrs;
    const rlx_shape *sh = &n->info.shape;
    int32_t dh = a->kv_is_v ? kv->head_dim_v : kv->head_dim;
    if (vk_layer_recurrent(p->s, a->layer))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "compile: %%%d KV_CACHE of layer %d: the session keeps recurrent "
                          "state for that layer, no KV pool", i, a->layer);
    /* T is a sequence's logical capacity, not the pool's: a run's positions are checked against
     * both (check_run_args) */
    if (a->layer >= kv->n_layer || sh->dim[0] > INT32_MAX || sh->dim[1] != kv->n_head_kv || sh->dim[2] != dh)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "compile: %%%d KV_CACHE layer %d %s [%" PRId64 ", %" PRId64 ", %" PRId64
                          "] does not fit the session cache: %d layers of [T <= %d, %d, %d]",
                          i, a->layer, a->kv_is_v ? "V" : "K", sh->dim[0], sh->dim[1], sh->dim[2], kv->n_layer,
                          INT32_MAX, kv->n_head_kv, dh);
    n->store = VK_STORE_KV;
    if (sh->dim[0] > p->kv_rows) p->kv_rows = sh->dim[0];
    return NULL;
}

/* A STATE node: one part of a recurrent layer's state per slot, within the layer's state_floats. */
static rlx_status bind_state(rlx_program *p, rlx_node i) {
    vk_node *n = &p->nodes[i];
    const rlx_session *s = p->s;
    const rlx_attrs *a = &n->info.attrs;
    RLX_TRY(rlx_backend_check_state_node(&s->kv, vk_layer_recurrent(s, a->layer), i, a->layer, a->state_offset,
                                         n->numel));
    n->store = VK_STORE_STATE;
    p->has_state = true;
    return NULL;
}

static rlx_status copy_graph(rlx_program *p, const rlx_graph *g) {
    p->n_nodes = rlx_graph_n_nodes(g);
    p->n_inputs = rlx_graph_n_inputs(g);
    p->n_outputs = rlx_graph_n_outputs(g);
    p->nodes = calloc((size_t)p->n_nodes, sizeof *p->nodes);
    p->inputs = calloc((size_t)p->n_inputs + 1, sizeof *p->inputs);
    p->outputs = calloc((size_t)p->n_outputs + 1, sizeof *p->outputs);
    p->output_offset = calloc((size_t)p->n_outputs + 1, sizeof *p->output_offset);
    if (!p->nodes || !p->inputs || !p->outputs || !p->output_offset)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: %d nodes", p->n_nodes);
    for (int32_t k = 0; k < p->n_inputs; k++) p->inputs[k] = rlx_graph_input_node(g, k);
    for (int32_t o = 0; o < p->n_outputs; o++) p->outputs[o] = rlx_graph_output_node(g, o);
    p->static_rows = p->n_inputs > 0 ? rlx_graph_node(g, p->inputs[0])->shape.dim[0] : 1;
    p->rows_apart = (rlx_graph_hints(g) & RLX_HINT_ROWS_APART) != 0;
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        vk_node *n = &p->nodes[i];
        n->info = *rlx_graph_node(g, i);
        if (n->info.name && !(n->info.name = strdup(n->info.name)))
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: node names");
        n->numel = rlx_shape_numel(&n->info.shape);
        n->bytes = (uint64_t)n->numel * 4;
        switch (n->info.op) {
        case RLX_OP_INPUT: n->store = VK_STORE_INPUT; break;
        case RLX_OP_WEIGHT: RLX_TRY(bind_weight(p, i)); break;
        case RLX_OP_KV_CACHE: RLX_TRY(bind_cache(p, i)); break;
        case RLX_OP_STATE: RLX_TRY(bind_state(p, i)); break;
        case RLX_OP_KV_WRITE: p->writes_kv = true; /* fall through */
        case RLX_OP_RESHAPE: n->store = VK_STORE_ALIAS; break;
        default: n->store = VK_STORE_ARENA; break;
        }
    }
    return NULL;
}

/* A KV_CACHE (or KV_WRITE) output is read back as its first T rows of the pool, the view of the
 * single-sequence form: they must lie in the pool. */
static rlx_status check_pool_outputs(const rlx_program *p) {
    for (int32_t o = 0; o < p->n_outputs; o++) {
        rlx_node n = p->outputs[o];
        if (!vk_reads_pool(p, n)) continue;
        vk_range r = vk_node_range(p, n);
        if ((uint64_t)p->nodes[n].numel * vk_kv_elem_bytes(p->s) > r.size) /* in the pool's elements */
            return rlx_errorf(RLX_ERR_UNSUPPORTED,
                              "compile: output %d (%%%d) reads %" PRId64 " cache rows back, more than the session's "
                              "pool of %" PRId64 " rows",
                              o, n, p->nodes[n].info.shape.dim[0], rlx_state_kv_rows(&p->s->kv));
    }
    return NULL;
}

/* ---- analysis ---- */

/* Whether dim 0 of node n is the token axis (ir/analysis.h rlx_token_major, the CPU reference's
 * rule too), over the nodes before n. */
static bool token_rows_of(const rlx_program *p, const vk_node *n) {
    const rlx_node_info *in = &n->info;
    bool tok[2] = {false, false};
    for (int k = 0; k < 2 && k < in->n_in; k++) tok[k] = in->in[k] != RLX_NO_NODE && p->nodes[in->in[k]].tok != 0;
    const rlx_node_info *x = in->n_in > 0 && in->in[0] != RLX_NO_NODE ? &p->nodes[in->in[0]].info : NULL;
    return rlx_token_major(in, x, tok, p->static_rows);
}

static void analyse(rlx_program *p) {
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        vk_node *n = &p->nodes[i];
        /* tok: elements of one token row, so kernels scale it to their own row unit */
        n->tok = token_rows_of(p, n) ? (uint32_t)(n->numel / n->info.shape.dim[0]) : 0;
        n->last_use = -1;
        n->fused_into = RLX_NO_NODE;
        n->post = RLX_NO_NODE;
        n->warm = RLX_NO_NODE;
    }
    for (int32_t o = 0; o < p->n_outputs; o++) p->nodes[p->outputs[o]].live = p->nodes[p->outputs[o]].is_output = true;
    /* side effects: the cache, the recurrent state */
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        rlx_op op = p->nodes[i].info.op;
        if (op == RLX_OP_KV_WRITE || op == RLX_OP_CAUSAL_CONV || op == RLX_OP_DELTA_RULE) p->nodes[i].live = true;
    }
    for (rlx_node i = p->n_nodes - 1; i >= 0; i--) {
        vk_node *n = &p->nodes[i];
        if (!n->live) continue;
        for (int k = 0; k < n->info.n_in; k++) {
            if (n->info.in[k] == RLX_NO_NODE) continue;
            p->nodes[n->info.in[k]].live = true;
            p->nodes[n->info.in[k]].n_consumers++;
        }
    }
    if (p->b->fusion) vk_plan_fusion(p);
    /* a value is needed until the last dispatch that reads it: its consumer's, or the dispatch of
     * the node its consumer was fused into */
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        vk_node *n = &p->nodes[i];
        if (!n->live) continue;
        rlx_node at = i;
        while (p->nodes[at].fused_into != RLX_NO_NODE) at = p->nodes[at].fused_into;
        for (int k = 0; k < n->info.n_in; k++) {
            if (n->info.in[k] == RLX_NO_NODE) continue;
            vk_node *r = &p->nodes[storage_root(p, n->info.in[k])];
            if (r->last_use < at) r->last_use = at;
        }
    }
    for (int32_t o = 0; o < p->n_outputs; o++) p->nodes[storage_root(p, p->outputs[o])].last_use = INT32_MAX;
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        vk_node *n = &p->nodes[i];
        if (n->store == VK_STORE_ARENA && (!n->live || n->fused_into != RLX_NO_NODE)) n->store = VK_STORE_NONE;
    }
}

/* ---- arena planning ---- */

typedef struct span {
    VkDeviceSize offset, size;
} span;

typedef struct bin_plan {
    span *live; /* sorted by offset */
    size_t n, cap;
} bin_plan;

static rlx_status bin_place(bin_plan *bp, VkDeviceSize cap, VkDeviceSize size, VkDeviceSize align, bool *ok,
                            VkDeviceSize *offset) {
    VkDeviceSize at = 0;
    size_t i = 0;
    for (; i < bp->n; i++) {
        if (at + size <= bp->live[i].offset) break;
        at = align_up(bp->live[i].offset + bp->live[i].size, align);
    }
    *ok = at + size <= cap;
    if (!*ok) return NULL;
    if (bp->n == bp->cap) {
        size_t c = bp->cap ? 2 * bp->cap : 16;
        span *grown = realloc(bp->live, c * sizeof *grown);
        if (!grown) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: buffer plan");
        bp->live = grown;
        bp->cap = c;
    }
    memmove(&bp->live[i + 1], &bp->live[i], (bp->n - i) * sizeof *bp->live);
    bp->live[i] = (span){at, size};
    bp->n++;
    *offset = at;
    return NULL;
}

static void bin_release(bin_plan *bp, VkDeviceSize offset) {
    for (size_t i = 0; i < bp->n; i++) {
        if (bp->live[i].offset != offset) continue;
        memmove(&bp->live[i], &bp->live[i + 1], (bp->n - i - 1) * sizeof *bp->live);
        bp->n--;
        return;
    }
}

static rlx_status place(rlx_program *p, bin_plan *bins, rlx_node i, uint64_t bytes, uint32_t *bin,
                        VkDeviceSize *offset) {
    VkDeviceSize cap = p->b->dev->max_binding, size = align_up(bytes, 16);
    if (size > cap)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "compile: %%%d %s needs %" PRIu64 " bytes, more than one binding may cover on %s (%" PRIu64
                          ")",
                          i, rlx_op_name(p->nodes[i].info.op), (uint64_t)size, p->b->dev->caps->name, (uint64_t)cap);
    for (uint32_t b = 0; b < VK_MAX_BINS; b++) {
        bool ok;
        RLX_TRY(bin_place(&bins[b], cap, size, storage_align(p), &ok, offset));
        if (!ok) continue;
        *bin = b;
        if (b + 1 > p->n_bins) p->n_bins = b + 1;
        if (*offset + size > p->bin_peak[b]) p->bin_peak[b] = *offset + size;
        return NULL;
    }
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: intermediates need more than %d bins of %" PRIu64 " bytes",
                      VK_MAX_BINS, (uint64_t)cap);
}

static rlx_status plan_arena(rlx_program *p) {
    bin_plan bins[VK_MAX_BINS] = {0};
    /* release_next[r]: the next root released at the same node (a list per node, through heads) */
    rlx_node *head = malloc((size_t)p->n_nodes * sizeof *head), *next = malloc((size_t)p->n_nodes * sizeof *next);
    rlx_status s = head && next ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: buffer plan");
    for (rlx_node i = 0; !s && i < p->n_nodes; i++) head[i] = RLX_NO_NODE;
    for (rlx_node r = 0; !s && r < p->n_nodes; r++) {
        int32_t at = p->nodes[r].last_use;
        if (p->nodes[r].store != VK_STORE_ARENA || at < 0 || at >= p->n_nodes) continue;
        next[r] = head[at];
        head[at] = r;
    }
    for (rlx_node i = 0; !s && i < p->n_nodes; i++) {
        vk_node *n = &p->nodes[i];
        bool by_producer = n->fuse == VK_FUSE_NORM_BY_PRODUCER || n->fuse == VK_FUSE_ARGMAX_BY_PRODUCER;
        if (!n->live || n->fused_into != RLX_NO_NODE || by_producer) continue;
        if (n->store == VK_STORE_ARENA) s = place(p, bins, i, n->bytes, &n->bin, &n->offset);
        /* a node its producer's matvec writes (post) is placed with the producer's output, beside
         * everything that dispatch reads: no node between them may take its range */
        vk_node *pn = n->post != RLX_NO_NODE ? &p->nodes[n->post] : NULL;
        if (!s && pn) s = place(p, bins, n->post, pn->bytes, &pn->bin, &pn->offset);
        if (!s && n->scratch_bytes) s = place(p, bins, i, n->scratch_bytes, &n->scratch_bin, &n->scratch_offset);
        if (s) break;
        if (n->scratch_bytes) bin_release(&bins[n->scratch_bin], n->scratch_offset);
        /* values whose last reader is this node's dispatch: their range is free for later nodes */
        for (rlx_node r = head[i]; r != RLX_NO_NODE; r = next[r]) bin_release(&bins[p->nodes[r].bin], p->nodes[r].offset);
    }
    free(head);
    free(next);
    for (uint32_t b = 0; b < VK_MAX_BINS; b++) free(bins[b].live);
    return s;
}

/* One I32 token in and one I32 id out (a greedy decode step): the output can feed the next run's
 * input on the device (vk_program_run_chain). */
static bool chainable(const rlx_program *p) {
    if (p->static_rows != 1 || p->n_inputs != 1 || p->n_outputs != 1) return false;
    const vk_node *in = &p->nodes[p->inputs[0]], *out = &p->nodes[p->outputs[0]];
    return in->info.dtype == RLX_DTYPE_I32 && in->numel == 1 && out->info.dtype == RLX_DTYPE_I32 && out->numel == 1;
}

/* The rows' buffer (the file's top comment): its size, for R rows of R sequences. */
static rlx_status plan_rows(rlx_program *p) {
    uint32_t ps = (uint32_t)(p->s->kv.page_size > 0 ? p->s->kv.page_size : 1);
    p->page_shift = 0;
    while ((1u << p->page_shift) < ps) p->page_shift++;
    p->page_cols = (uint32_t)((p->kv_rows + ps - 1) / ps);
    uint64_t words;
    /* pos, seq, the page table; with state also slot, first, count and order (shaders/common.glsl) */
    uint64_t per_row = (uint64_t)p->page_cols + (p->has_state ? 6u : 2u);
    if (__builtin_mul_overflow((uint64_t)p->static_rows, per_row, &words) ||
        words + ROWS_HEADER_WORDS > p->b->dev->max_binding / 4)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "compile: page tables of %" PRId64 " rows x %u pages (capacity %" PRId64
                          ", pages of %u rows) exceed one binding on %s",
                          p->static_rows, p->page_cols, p->kv_rows, ps, p->b->dev->caps->name);
    p->scalars_bytes = (words + ROWS_HEADER_WORDS) * 4;
    return NULL;
}

static void plan_io(rlx_program *p) {
    VkDeviceSize a = storage_align(p);
    p->status_offset = align_up(p->scalars_bytes, a);
    VkDeviceSize at = p->status_offset + STATUS_BYTES;
    for (int32_t k = 0; k < p->n_inputs; k++) {
        vk_node *n = &p->nodes[p->inputs[k]];
        at = align_up(at, a);
        n->input_offset = at;
        at += align_up(n->bytes, 16);
    }
    if (chainable(p)) {
        p->ring_offset = align_up(at, a);
        at = p->ring_offset + RING_BYTES;
    }
    p->in_size = at;
    at = STATUS_BYTES;
    for (int32_t o = 0; o < p->n_outputs; o++) {
        p->output_offset[o] = at;
        at += align_up(p->nodes[p->outputs[o]].bytes, 16);
    }
    if (p->ring_offset) {
        p->rb_ring_offset = at;
        at += RING_BYTES;
    }
    p->rb_size = at;
}

static rlx_status allocate(rlx_program *p) {
    rlx_vk_backend *b = p->b;
    /* a batch too large for the device is refused before its first allocation (vk_memory.h) */
    uint64_t need = p->in_size + p->consts_size;
    for (uint32_t i = 0; i < p->n_bins; i++) need += p->bin_peak[i];
    RLX_TRY(rlx_vk_heap_check_room(b->dev_heap, need, "compile: the program's inputs, constants and intermediates"));
    RLX_TRY(rlx_vk_heap_alloc(b->up_heap, p->in_size, "program inputs (host)", &p->in_host));
    RLX_TRY(rlx_vk_heap_alloc(b->dev_heap, p->in_size, "program inputs", &p->in_dev));
    RLX_TRY(rlx_vk_heap_alloc(b->rb_heap, p->rb_size, "program outputs", &p->rb));
    for (uint32_t i = 0; i < p->n_bins; i++)
        RLX_TRY(rlx_vk_heap_alloc(b->dev_heap, p->bin_peak[i], "program intermediates", &p->arena[i]));
    if (p->consts_size) RLX_TRY(rlx_vk_heap_alloc(b->dev_heap, p->consts_size, "program constants", &p->consts));
    return NULL;
}

/* Weights read as f32 operands get an f32 copy in the consts region, decoded once at compile. */
static rlx_status emit_init(rlx_program *p) {
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        vk_node *n = &p->nodes[i];
        if (!n->has_const || n->info.op != RLX_OP_WEIGHT) continue;
        const vk_weight *w = n->weight;
        if (w->n_parts > 1)
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "weight '%s' is read as an f32 operand but exceeds one binding",
                              w->name);
        uint32_t spec[3] = {[RLX_VK_SPEC_WG] = p->b->wg, [RLX_VK_SPEC(dequant, W_TYPE)] = w->type,
                            [RLX_VK_SPEC(dequant, F16_OUT)] = 0};
        uint32_t push[3] = {(uint32_t)w->rows, (uint32_t)w->ne[0], (uint32_t)w->row_bytes};
        vk_range bind[2] = {[RLX_VK_BIND(dequant, W)] = vk_node_range(p, i),
                            [RLX_VK_BIND(dequant, OUT)] = vk_const_range(p, n->const_offset, n->bytes)};
        RLX_TRY(vk_emit(p, &p->init, i, RLX_VK_KERNEL_dequant, spec, bind, 2, RLX_VK_BIT(dequant, W),
                        RLX_VK_BIT(dequant, OUT), push, sizeof push, w->rows));
    }
    return NULL;
}

/* The step between chained runs (shaders/chain_step.comp). */
static rlx_status emit_step(rlx_program *p) {
    if (!p->ring_offset) return NULL;
    const vk_node *in = &p->nodes[p->inputs[0]];
    uint32_t spec[1] = {1};
    uint32_t push[3] = {(uint32_t)(in->input_offset / 4), (uint32_t)(p->ring_offset / 4), RLX_RUN_CHAIN_MAX};
    vk_range bind[2] = {[RLX_VK_BIND(chain_step, ARGMAX_ID)] = vk_node_range(p, p->outputs[0]),
                        [RLX_VK_BIND(chain_step, INPUT)] = {p->in_dev.buffer, p->in_dev.offset, p->in_size}};
    return vk_emit(p, &p->step, p->outputs[0], RLX_VK_KERNEL_chain_step, spec, bind, 2, RLX_VK_BIT(chain_step, ARGMAX_ID),
                   RLX_VK_BIT(chain_step, INPUT), push, sizeof push, 1);
}

/* ---- descriptors and recording ---- */

static rlx_status make_descriptors(rlx_program *p) {
    rlx_vk_device *d = p->b->dev;
    vk_dispatch_list *lists[3] = {&p->init, &p->run, &p->step};
    size_t n_sets = 1, n_buffers = RLX_VK_COMMON_BINDINGS;
    for (int l = 0; l < 3; l++) {
        n_sets += lists[l]->n;
        for (size_t i = 0; i < lists[l]->n; i++) n_buffers += lists[l]->items[i].n_bind;
    }
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, (uint32_t)n_buffers};
    VkDescriptorPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = (uint32_t)n_sets,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    RLX_VK_TRY(d->vk.vkCreateDescriptorPool(d->dev, &pi, NULL, &p->pool), "creating the descriptor pool");
    VkDescriptorSetLayout common = rlx_vk_common_set_layout(p->b->pipes);
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = p->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &common,
    };
    RLX_VK_TRY(d->vk.vkAllocateDescriptorSets(d->dev, &ai, &p->common), "allocating the common descriptor set");
    VkDescriptorBufferInfo cb[2] = {
        {p->in_dev.buffer, p->in_dev.offset, p->scalars_bytes},
        {p->in_dev.buffer, p->in_dev.offset + p->status_offset, STATUS_BYTES},
    };
    VkWriteDescriptorSet w = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = p->common,
        .descriptorCount = 2,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = cb,
    };
    d->vk.vkUpdateDescriptorSets(d->dev, 1, &w, 0, NULL);
    for (int l = 0; l < 3; l++) {
        for (size_t i = 0; i < lists[l]->n; i++) {
            vk_dispatch *dp = &lists[l]->items[i];
            VkDescriptorSetLayout layout = rlx_vk_kernel_set_layout(p->b->pipes, dp->pipe->kernel);
            ai.pSetLayouts = &layout;
            RLX_VK_TRY(d->vk.vkAllocateDescriptorSets(d->dev, &ai, &dp->set), "allocating a descriptor set");
            VkDescriptorBufferInfo bi[RLX_VK_MAX_BINDINGS];
            for (uint32_t k = 0; k < dp->n_bind; k++) bi[k] = (VkDescriptorBufferInfo){dp->bind[k].buffer, dp->bind[k].offset, dp->bind[k].size};
            w.dstSet = dp->set;
            w.descriptorCount = dp->n_bind;
            w.pBufferInfo = bi;
            d->vk.vkUpdateDescriptorSets(d->dev, 1, &w, 0, NULL);
        }
    }
    return NULL;
}

static bool overlaps(const vk_range *a, const vk_range *b) {
    return a->buffer == b->buffer && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

/* Ranges read and written since the last barrier. */
typedef struct hazards {
    vk_range *r, *w;
    size_t nr, nw, cap;
} hazards;

static bool needs_barrier(const hazards *h, const vk_dispatch *dp) {
    for (uint32_t k = 0; k < dp->n_bind; k++) {
        bool rd = dp->reads & (1u << k), wr = dp->writes & (1u << k);
        for (size_t i = 0; (rd || wr) && i < h->nw; i++)
            if (overlaps(&dp->bind[k], &h->w[i])) return true;
        for (size_t i = 0; wr && i < h->nr; i++)
            if (overlaps(&dp->bind[k], &h->r[i])) return true;
    }
    return false;
}

static void compute_barrier(rlx_vk_device *d, VkCommandBuffer cb) {
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

static rlx_status record_dispatches(rlx_program *p, VkCommandBuffer cb, const vk_dispatch_list *list,
                                    bool profile) {
    rlx_vk_device *d = p->b->dev;
    if (profile) d->vk.vkCmdResetQueryPool(cb, p->timestamps, 0, (uint32_t)(2 * list->n));
    hazards h = {0};
    size_t cap = 0;
    for (size_t i = 0; i < list->n; i++) cap += list->items[i].n_bind;
    h.r = calloc(cap + 1, sizeof *h.r);
    h.w = calloc(cap + 1, sizeof *h.w);
    if (!h.r || !h.w) {
        free(h.r);
        free(h.w);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: barrier plan of %zu dispatches", list->n);
    }
    d->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, rlx_vk_common_pipeline_layout(p->b->pipes), 0, 1,
                                  &p->common, 0, NULL);
    for (size_t i = 0; i < list->n; i++) {
        const vk_dispatch *dp = &list->items[i];
        if (needs_barrier(&h, dp)) {
            compute_barrier(d, cb);
            p->n_barriers++;
            h.nr = h.nw = 0;
        }
        for (uint32_t k = 0; k < dp->n_bind; k++) {
            if (dp->reads & (1u << k)) h.r[h.nr++] = dp->bind[k];
            if (dp->writes & (1u << k)) h.w[h.nw++] = dp->bind[k];
        }
        d->vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, dp->pipe->pipeline);
        d->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, dp->pipe->layout, 1, 1, &dp->set, 0, NULL);
        if (dp->push_bytes)
            d->vk.vkCmdPushConstants(cb, dp->pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, dp->push_bytes, dp->push);
        uint32_t x = dp->groups < d->caps->max_wg_count[0] ? (uint32_t)dp->groups : d->caps->max_wg_count[0];
        if (profile)
            d->vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->timestamps, (uint32_t)(2 * i));
        d->vk.vkCmdDispatch(cb, x, (uint32_t)((dp->groups + x - 1) / x), 1);
        if (profile)
            d->vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->timestamps, (uint32_t)(2 * i + 1));
    }
    free(h.r);
    free(h.w);
    return NULL;
}

static rlx_status begin_cb(rlx_program *p, VkCommandBuffer *cb, VkCommandBufferUsageFlags flags) {
    rlx_vk_device *d = p->b->dev;
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = p->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    RLX_VK_TRY(d->vk.vkAllocateCommandBuffers(d->dev, &ai, cb), "allocating a command buffer");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = flags};
    RLX_VK_TRY(d->vk.vkBeginCommandBuffer(*cb, &bi), "beginning a command buffer");
    return NULL;
}

/* Everything earlier on the queue (uploads, other programs' KV writes) before anything after. */
static void after_earlier_work(rlx_vk_device *d, VkCommandBuffer cb) {
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT);
}

static rlx_status run_init(rlx_program *p) {
    if (p->init.n == 0) return NULL;
    rlx_vk_device *d = p->b->dev;
    VkCommandBuffer cb;
    RLX_TRY(begin_cb(p, &cb, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
    after_earlier_work(d, cb);
    rlx_status s = record_dispatches(p, cb, &p->init, false);
    if (!s) s = rlx_vk_check(d->vk.vkEndCommandBuffer(cb), "ending the init command buffer");
    if (!s) s = rlx_vk_submit_wait(d, cb, p->fence, "decoding weights used as f32 operands");
    d->vk.vkFreeCommandBuffers(d->dev, p->cmd_pool, 1, &cb);
    return s;
}

static void record_input_copy(rlx_program *p, VkCommandBuffer cb) {
    rlx_vk_device *d = p->b->dev;
    after_earlier_work(d, cb);
    VkBufferCopy in = {p->in_host.offset, p->in_dev.offset, p->in_size};
    d->vk.vkCmdCopyBuffer(cb, p->in_host.buffer, p->in_dev.buffer, 1, &in);
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

/* Bytes copied out for output o: its f32 or i32 values, or an F16 pool's elements, which the
 * readback widens to f32 (read_output). */
static VkDeviceSize output_copy_bytes(const rlx_program *p, int32_t o) {
    const vk_node *n = &p->nodes[p->outputs[o]];
    return vk_pool_f16(p, p->outputs[o]) ? (VkDeviceSize)n->numel * 2 : n->bytes;
}

static void read_output(const rlx_program *p, int32_t o, const uint8_t *rb, void *out) {
    const vk_node *n = &p->nodes[p->outputs[o]];
    if (!vk_pool_f16(p, p->outputs[o])) {
        memcpy(out, rb, n->bytes);
        return;
    }
    float *f = out;
    for (int64_t i = 0; i < n->numel; i++) {
        uint16_t h;
        memcpy(&h, rb + 2 * i, 2);
        f[i] = rlx_f16_to_f32(h);
    }
}

static void record_output_copy(rlx_program *p, VkCommandBuffer cb) {
    rlx_vk_device *d = p->b->dev;
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy st = {p->in_dev.offset + p->status_offset, p->rb.offset, STATUS_BYTES};
    d->vk.vkCmdCopyBuffer(cb, p->in_dev.buffer, p->rb.buffer, 1, &st);
    for (int32_t o = 0; o < p->n_outputs; o++) {
        vk_range r = vk_node_range(p, p->outputs[o]);
        VkBufferCopy c = {r.offset, p->rb.offset + p->output_offset[o], output_copy_bytes(p, o)};
        d->vk.vkCmdCopyBuffer(cb, r.buffer, p->rb.buffer, 1, &c);
    }
    if (p->ring_offset) {
        VkBufferCopy c = {p->in_dev.offset + p->ring_offset, p->rb.offset + p->rb_ring_offset, RING_BYTES};
        d->vk.vkCmdCopyBuffer(cb, p->in_dev.buffer, p->rb.buffer, 1, &c);
    }
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                       VK_ACCESS_HOST_READ_BIT);
}

/* A chain's parts: the input copy, one run with the step after it (submitted k times in one batch,
 * so recorded for simultaneous use), the output copy. Under RLX_VK_PROFILE each run of the chain
 * resets and writes the timestamps, so those of its last run remain. */
static rlx_status record_chain(rlx_program *p) {
    rlx_vk_device *d = p->b->dev;
    RLX_TRY(begin_cb(p, &p->cb_in, 0));
    record_input_copy(p, p->cb_in);
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(p->cb_in), "ending the input copy's command buffer");
    RLX_TRY(begin_cb(p, &p->cb_step, VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT));
    VkCommandBuffer cb = p->cb_step;
    RLX_TRY(record_dispatches(p, cb, &p->run, p->timestamps != VK_NULL_HANDLE));
    compute_barrier(d, cb);
    RLX_TRY(record_dispatches(p, cb, &p->step, false));
    compute_barrier(d, cb);
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(cb), "ending the chain step's command buffer");
    RLX_TRY(begin_cb(p, &p->cb_out, 0));
    record_output_copy(p, p->cb_out);
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(p->cb_out), "ending the output copy's command buffer");
    return NULL;
}

static rlx_status record_run(rlx_program *p) {
    rlx_vk_device *d = p->b->dev;
    bool profile = p->b->profile && d->caps->timestamp_period > 0.0f && p->run.n > 0;
    if (profile) {
        VkQueryPoolCreateInfo qi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = (uint32_t)(2 * p->run.n),
        };
        RLX_VK_TRY(d->vk.vkCreateQueryPool(d->dev, &qi, NULL, &p->timestamps), "creating a timestamp pool");
    }
    RLX_TRY(begin_cb(p, &p->cb, 0));
    record_input_copy(p, p->cb);
    RLX_TRY(record_dispatches(p, p->cb, &p->run, profile));
    record_output_copy(p, p->cb);
    RLX_VK_TRY(d->vk.vkEndCommandBuffer(p->cb), "ending the program's command buffer");
    return p->step.n ? record_chain(p) : NULL;
}

static rlx_status make_sync(rlx_program *p) {
    rlx_vk_device *d = p->b->dev;
    VkCommandPoolCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = d->caps->queue_family,
    };
    RLX_VK_TRY(d->vk.vkCreateCommandPool(d->dev, &ci, NULL, &p->cmd_pool), "creating a command pool");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    RLX_VK_TRY(d->vk.vkCreateFence(d->dev, &fi, NULL, &p->fence), "creating a fence");
    return NULL;
}

static rlx_status upload_consts(rlx_program *p) {
    if (!p->consts_size) return NULL;
    rlx_vk_uploader *u;
    RLX_TRY(rlx_vk_uploader_create(p->b->dev, p->b->up_heap, &u));
    rlx_status s = rlx_vk_uploader_copy(u, &p->consts, 0, p->consts_host, p->consts_size);
    if (!s) s = rlx_vk_uploader_flush(u);
    rlx_vk_uploader_destroy(u);
    free(p->consts_host);
    p->consts_host = NULL;
    return s;
}

static void print_plan(const rlx_program *p, double ms) {
    uint64_t arena = 0;
    for (uint32_t i = 0; i < p->n_bins; i++) arena += p->bin_peak[i];
    int32_t live = 0;
    for (rlx_node i = 0; i < p->n_nodes; i++) live += p->nodes[i].live;
    fprintf(stderr,
            "rlx vulkan plan: %d nodes (%d live), %zu dispatches, %u barriers, intermediates %.2f MiB in %u bin(s), "
            "inputs %" PRIu64 " B, outputs %" PRIu64 " B, constants %" PRIu64 " B; compiled in %.1f ms\n",
            p->n_nodes, live, p->run.n, p->n_barriers, (double)arena / 1048576.0, p->n_bins, (uint64_t)p->in_size,
            (uint64_t)p->rb_size, (uint64_t)p->consts_size, ms);
}

static double ms_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static rlx_status build(rlx_program *p, const rlx_graph *g) {
    double t0 = ms_now();
    RLX_TRY(copy_graph(p, g));
    RLX_TRY(check_pool_outputs(p));
    analyse(p);
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].live) RLX_TRY(vk_prepare_node(p, i));
    RLX_TRY(plan_arena(p));
    RLX_TRY(plan_rows(p));
    plan_io(p);
    RLX_TRY(allocate(p));
    RLX_TRY(upload_consts(p));
    RLX_TRY(emit_init(p));
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].live) RLX_TRY(vk_lower_node(p, i));
    RLX_TRY(vk_warm_next_pass(p));
    RLX_TRY(emit_step(p));
    RLX_TRY(make_descriptors(p));
    RLX_TRY(make_sync(p));
    RLX_TRY(run_init(p));
    RLX_TRY(record_run(p));
    if (p->b->debug) print_plan(p, ms_now() - t0);
    return NULL;
}

rlx_status vk_program_compile(rlx_session *s, const rlx_graph *g, rlx_program **out) {
    if (!s || !g || !out)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan compile: session, graph and out are required");
    rlx_status st = rlx_graph_verify(g);
    if (st) return rlx_status_annotate(st, "compile: the graph does not verify");
    RLX_TRY(vk_check_ops(g));
    rlx_program *p = calloc(1, sizeof *p);
    if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: cannot allocate a program");
    p->s = s;
    p->b = s->b;
    p->gpu_plans = p->b->tuning.gpu_plans;
    st = build(p, g);
    if (st) {
        vk_program_destroy(p);
        return st;
    }
    *out = p;
    return NULL;
}

void vk_program_destroy(rlx_program *p) {
    if (!p) return;
    rlx_vk_backend *b = p->b;
    rlx_vk_device *d = b->dev;
    if (p->timestamps) d->vk.vkDestroyQueryPool(d->dev, p->timestamps, NULL);
    if (p->fence) d->vk.vkDestroyFence(d->dev, p->fence, NULL);
    if (p->cmd_pool) d->vk.vkDestroyCommandPool(d->dev, p->cmd_pool, NULL);
    if (p->pool) d->vk.vkDestroyDescriptorPool(d->dev, p->pool, NULL);
    rlx_vk_heap_free(b->up_heap, &p->in_host);
    rlx_vk_heap_free(b->dev_heap, &p->in_dev);
    rlx_vk_heap_free(b->rb_heap, &p->rb);
    for (uint32_t i = 0; i < p->n_bins; i++) rlx_vk_heap_free(b->dev_heap, &p->arena[i]);
    rlx_vk_heap_free(b->dev_heap, &p->consts);
    for (int32_t i = 0; p->nodes && i < p->n_nodes; i++) free((char *)p->nodes[i].info.name);
    free(p->nodes);
    free(p->inputs);
    free(p->outputs);
    free(p->output_offset);
    free(p->checks);
    free(p->seq_map);
    free(p->consts_host);
    free(p->init.items);
    free(p->run.items);
    free(p->step.items);
    free(p);
}

/* RLX_VK_PROFILE=2: every dispatch with the op, shape and weight type of its node, to see which
 * shapes a kernel is slow on. */
static void print_each_dispatch(const rlx_program *p, const uint64_t *ts) {
    double period = p->b->dev->caps->timestamp_period;
    for (size_t i = 0; i < p->run.n; i++) {
        const vk_dispatch *dp = &p->run.items[i];
        const vk_node *n = &p->nodes[dp->node];
        char shape[64];
        rlx_shape_str(&n->info.shape, shape, sizeof shape);
        const char *w = "";
        if (n->info.op == RLX_OP_MATMUL && n->info.n_in > 1)
            w = rlx_dtype_name(p->nodes[n->info.in[1]].info.dtype);
        double us = (double)(ts[2 * i + 1] - ts[2 * i]) * period / 1000.0;
        fprintf(stderr, "    %4zu %-14s %-10s %-16s %-6s groups %-8" PRIu64 " %8.2f us\n", i,
                rlx_vk_kernel_get(dp->pipe->kernel)->name, rlx_op_name(n->info.op), shape, w, dp->groups, us);
    }
}

/* RLX_VK_PROFILE: GPU time per kernel of the last run, of a chain of `runs` its last (RLX_VK_PROFILE=2:
 * and of every dispatch). */
static void print_profile(const rlx_program *p, int32_t runs) {
    rlx_vk_device *d = p->b->dev;
    size_t n = p->run.n;
    uint64_t *ts = malloc(2 * n * sizeof *ts);
    double per_kernel[RLX_VK_KERNEL_COUNT] = {0}, total = 0.0;
    int count[RLX_VK_KERNEL_COUNT] = {0};
    if (!ts || d->vk.vkGetQueryPoolResults(d->dev, p->timestamps, 0, (uint32_t)(2 * n), 2 * n * sizeof *ts, ts,
                                           sizeof *ts, VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
        free(ts);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double us = (double)(ts[2 * i + 1] - ts[2 * i]) * d->caps->timestamp_period / 1000.0;
        per_kernel[p->run.items[i].pipe->kernel] += us;
        count[p->run.items[i].pipe->kernel]++;
        total += us;
    }
    double wall = (double)(ts[2 * n - 1] - ts[0]) * d->caps->timestamp_period / 1000.0;
    char chain[48] = "";
    if (runs > 1) snprintf(chain, sizeof chain, " (the last of %d chained runs)", (int)runs);
    fprintf(stderr, "rlx vulkan profile%s: %zu dispatches, %.1f us busy, %.1f us first to last\n", chain, n, total,
            wall);
    for (int k = 0; k < RLX_VK_KERNEL_COUNT; k++)
        if (count[k])
            fprintf(stderr, "  %-14s %4d x %9.1f us\n", rlx_vk_kernel_get((rlx_vk_kernel)k)->name, count[k],
                    per_kernel[k]);
    if (p->b->profile_each) print_each_dispatch(p, ts);
    free(ts);
}

/* ---- run ---- */

/* The single-sequence form reads pool page k for position k (identity): the positions it reaches,
 * below n_past + n_tokens and below T, must lie in the pool. */
static rlx_status check_identity_pages(const rlx_program *p, const rlx_run_args *a) {
    int64_t reach = (int64_t)a->n_past + a->n_tokens, pool = rlx_state_kv_rows(&p->s->kv);
    if (reach > p->kv_rows) reach = p->kv_rows;
    if (reach > pool)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "run: positions up to %" PRId64 " (n_past %d + n_tokens %d) reach past the session's KV pool "
                          "of %" PRId64 " rows",
                          reach - 1, a->n_past, a->n_tokens, pool);
    return NULL;
}

static rlx_status check_run_args(const rlx_program *p, const rlx_run_args *a) {
    RLX_TRY(rlx_backend_check_run_args(a, p->static_rows, p->n_inputs, p->n_outputs));
    rlx_rows_bounds bounds = {p->kv_rows, p->s->kv.page_size, p->s->kv.n_pages, p->writes_kv};
    RLX_TRY(rlx_backend_check_rows(a, &bounds));
    if (p->has_state) RLX_TRY(rlx_backend_check_state_rows(a, p->s->kv.n_state_slots));
    for (size_t c = 0; c < p->n_checks; c++) {
        const vk_check *k = &p->checks[c];
        if (p->nodes[k->node].info.op == RLX_OP_KV_WRITE) {
            if (!a->rows && (int64_t)a->n_past + a->n_tokens > k->cap)
                return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                                  "%%%d KV_WRITE: rows [n_past %d, n_past + n_tokens = %" PRId64
                                  ") exceed the cache capacity %" PRId64,
                                  k->node, a->n_past, (int64_t)a->n_past + a->n_tokens, k->cap);
            if (a->n_tokens > k->rows)
                return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d KV_WRITE: n_tokens %d exceeds x's %" PRId64 " rows",
                                  k->node, a->n_tokens, k->rows);
        } else if (a->n_tokens > k->cap) {
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "%%%d LAST_ROW: row n_tokens - 1 = %d is outside the input's %" PRId64 " rows", k->node,
                              a->n_tokens - 1, k->cap);
        }
    }
    return !a->rows && p->kv_rows > 0 ? check_identity_pages(p, a) : NULL;
}

static rlx_status status_error(const rlx_program *p, const uint32_t *st) {
    rlx_node node = (rlx_node)st[1];
    if (st[0] == 1 && node >= 0 && node < p->n_nodes) {
        const vk_node *n = &p->nodes[node];
        const vk_node *table = &p->nodes[n->info.in[0]];
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d EMBED: token id %" PRId32 " is outside the table's %" PRId64
                          " rows%s%s%s",
                          node, (int32_t)st[2], table->info.shape.dim[0], table->info.name ? " ('" : "",
                          table->info.name ? table->info.name : "", table->info.name ? "')" : "");
    }
    if (st[0] == 2 && node >= 0 && node < p->n_nodes && p->nodes[node].info.op == RLX_OP_MATMUL) {
        const vk_node *w = &p->nodes[p->nodes[node].info.in[1]];
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "%%%d MATMUL: weight '%s' row %u holds values beyond f16's range (65504), which the "
                          "mixed-precision prefill cannot hold: run with RLX_VK_COOPMAT=exact",
                          node, w->info.name ? w->info.name : "?", st[2]);
    }
    return rlx_errorf(RLX_ERR_DEVICE, "run: a kernel reported error %u at node %u (value %u)", st[0], st[1], st[2]);
}

/* A run's table rows -> device table rows, in order of first use (rows past the checks). */
static rlx_status map_seqs(rlx_program *p, const rlx_run_rows *r) {
    if (r->n_seqs > p->seq_map_cap) {
        int32_t *grown = realloc(p->seq_map, (size_t)r->n_seqs * sizeof *grown);
        if (!grown) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "run: a table of %d sequences", r->n_seqs);
        p->seq_map = grown;
        p->seq_map_cap = r->n_seqs;
    }
    for (int32_t s = 0; s < r->n_seqs; s++) p->seq_map[s] = -1;
    return NULL;
}

/* The state table after the page table (shaders/common.glsl rlx_seq_*): for each of the run's
 * `used` device table rows its slot, where its rows start in order[] and how many it has; order
 * lists the valid rows grouped by table row, each group in row order (the order CAUSAL_CONV and
 * DELTA_RULE visit them). */
static void load_state_table(const rlx_program *p, const rlx_run_args *a, uint32_t used) {
    uint32_t R = (uint32_t)p->static_rows;
    uint32_t *w = p->in_host.mapped, *seq = w + ROWS_HEADER_WORDS + R;
    uint32_t *slot = w + ROWS_HEADER_WORDS + 2 * R + R * p->page_cols, *first = slot + R, *count = first + R,
             *order = count + R;
    memset(count, 0, used * sizeof *count);
    for (int32_t i = 0; i < a->n_tokens; i++) count[seq[i]]++;
    for (uint32_t u = 0, at = 0; u < used; u++) {
        first[u] = at;
        at += count[u];
        count[u] = 0; /* refilled below as the rows are placed */
    }
    for (int32_t i = 0; i < a->n_tokens; i++) order[first[seq[i]] + count[seq[i]]++] = (uint32_t)i;
    const rlx_run_rows *r = a->rows;
    if (!r) {
        slot[0] = 0;
        return;
    }
    for (int32_t s = 0; s < r->n_seqs; s++)
        if (p->seq_map[s] >= 0) slot[p->seq_map[s]] = (uint32_t)(r->slots ? r->slots[s] : s);
}

/* The rows' buffer (the file's top comment) from args (checked). */
static rlx_status load_rows(rlx_program *p, const rlx_run_args *a) {
    uint32_t *w = p->in_host.mapped, R = (uint32_t)p->static_rows, cols = p->page_cols;
    uint32_t *pos = w + ROWS_HEADER_WORDS, *seq = pos + R, *pages = seq + R;
    const rlx_run_rows *r = a->rows;
    uint32_t header[ROWS_HEADER_WORDS] = {r ? 0u : (uint32_t)a->n_past, (uint32_t)a->n_tokens, 0, p->page_shift,
                                          cols, R};
    memcpy(w, header, sizeof header);
    if (!r) {
        for (uint32_t i = 0; i < R; i++) {
            pos[i] = (uint32_t)a->n_past + i;
            seq[i] = 0;
        }
        for (uint32_t k = 0; k < cols; k++) pages[k] = k;
        w[6] = 1;
        if (p->has_state) load_state_table(p, a, 1);
        return NULL;
    }
    RLX_TRY(map_seqs(p, r));
    uint32_t used = 0, copy = (uint32_t)r->page_cols < cols ? (uint32_t)r->page_cols : cols;
    for (int32_t i = 0; i < a->n_tokens; i++) {
        int32_t s = r->seq[i];
        if (p->seq_map[s] < 0) {
            p->seq_map[s] = (int32_t)used;
            memcpy(pages + (size_t)used * cols, r->pages + (size_t)s * (size_t)r->page_cols, copy * sizeof *pages);
            used++;
        }
        pos[i] = (uint32_t)r->pos[i];
        seq[i] = (uint32_t)p->seq_map[s];
    }
    for (uint32_t i = (uint32_t)a->n_tokens; i < R; i++) pos[i] = seq[i] = 0; /* padding: never written */
    w[6] = used;
    if (p->has_state) load_state_table(p, a, used);
    return NULL;
}

static rlx_status load_inputs(rlx_program *p, const rlx_run_args *a) {
    uint8_t *in = p->in_host.mapped;
    RLX_TRY(load_rows(p, a));
    memset(in + p->status_offset, 0, STATUS_BYTES);
    for (int32_t k = 0; k < p->n_inputs; k++) {
        const vk_node *n = &p->nodes[p->inputs[k]];
        memcpy(in + n->input_offset, a->inputs[k], n->bytes);
    }
    return NULL;
}

/* Submits cbs, then turns the status words into an error or copies the outputs out. runs: how
 * many runs the batch holds, for the next wait's expectation (the profile is of the last). */
static rlx_status submit_and_read(rlx_program *p, const VkCommandBuffer *cbs, uint32_t n_cbs, int32_t runs,
                                  const rlx_run_args *a) {
    double took = 0.0, t0 = p->b->debug ? ms_now() : 0.0;
    rlx_vk_wait wait = {.expect_ms = p->last_run_ms * runs, .took_ms = &took};
    RLX_TRY(rlx_vk_submit_batch(p->b->dev, cbs, n_cbs, p->fence, wait, "running a program"));
    p->last_run_ms = took / runs;
    if (p->b->debug)
        fprintf(stderr, "rlx vulkan run: %d x %zu dispatches in %.2f ms\n", runs, p->run.n, ms_now() - t0);
    if (p->timestamps) print_profile(p, runs);
    const uint8_t *rb = p->rb.mapped;
    uint32_t st[4];
    memcpy(st, rb, sizeof st);
    if (st[0] != 0) return status_error(p, st);
    for (int32_t o = 0; o < p->n_outputs; o++)
        read_output(p, o, rb + p->output_offset[o], a->outputs[o]);
    return NULL;
}

rlx_status vk_program_run(rlx_program *p, const rlx_run_args *a) {
    if (!p) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: program is NULL");
    RLX_TRY(check_run_args(p, a));
    RLX_TRY(load_inputs(p, a));
    return submit_and_read(p, &p->cb, 1, 1, a);
}

/* A chain's last run, at row 0's position + k - 1, passes the checks of a run (its page table
 * covers every position the chain reaches). */
static rlx_status check_chain_end(const rlx_program *p, const rlx_run_args *first, int32_t k) {
    int32_t pos0 = first->rows ? first->rows->pos[0] : first->n_past;
    if ((int64_t)pos0 + k - 1 > INT32_MAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run_chain: position %d + %d runs overflows", pos0, k);
    rlx_run_args last = *first;
    if (!first->rows) {
        last.n_past += k - 1;
        return check_run_args(p, &last);
    }
    rlx_run_rows rows = *first->rows;
    int32_t pos_last = pos0 + k - 1; /* a chain runs one row */
    rows.pos = &pos_last;
    last.rows = &rows;
    return check_run_args(p, &last);
}

rlx_status vk_program_run_chain(rlx_program *p, const rlx_run_args *first, int32_t k, int32_t *outs) {
    if (!p || !outs) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run_chain: program and outs are required");
    if (!p->cb_step)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "run_chain: the program does not map one I32 token to one I32 id");
    if (k < 1 || k > RLX_RUN_CHAIN_MAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run_chain: %d runs is outside [1, %d]", k, RLX_RUN_CHAIN_MAX);
    RLX_TRY(check_run_args(p, first));
    RLX_TRY(check_chain_end(p, first, k));
    RLX_TRY(load_inputs(p, first));
    VkCommandBuffer cbs[RLX_RUN_CHAIN_MAX + 2];
    uint32_t n = 0;
    cbs[n++] = p->cb_in;
    for (int32_t i = 0; i < k; i++) cbs[n++] = p->cb_step;
    cbs[n++] = p->cb_out;
    RLX_TRY(submit_and_read(p, cbs, n, k, first));
    memcpy(outs, (const uint8_t *)p->rb.mapped + p->rb_ring_offset, (size_t)k * sizeof *outs);
    return NULL;
}
