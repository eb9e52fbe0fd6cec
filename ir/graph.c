/* The graph: node storage, error recording, and the builders. A builder appends its node even when
 * it finds a problem (marked invalid, the problem recorded as "%<index> <OP>: ..."), so node
 * indices stay stable and rlx_graph_verify() can report every error at once. A node whose input
 * is already invalid is marked invalid without a message of its own: the root cause is reported. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

rlx_status rlx_graph_create(rlx_graph **out) {
    rlx_graph *g = calloc(1, sizeof *g);
    if (!g) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "graph: cannot allocate %zu bytes", sizeof *g);
    *out = g;
    return NULL;
}

void rlx_graph_destroy(rlx_graph *g) {
    if (!g) return;
    for (int32_t i = 0; i < g->n_nodes; i++) free((char *)g->nodes[i].name);
    for (int32_t i = 0; i < g->n_outputs; i++) free(g->outputs[i].name);
    free(g->nodes);
    free(g->outputs);
    free(g->inputs);
    free(g->errors);
    free(g);
}

int32_t rlx_graph_n_nodes(const rlx_graph *g) { return g ? g->n_nodes : 0; }

const rlx_node_info *rlx_graph_node(const rlx_graph *g, rlx_node n) {
    if (!g || n < 0 || n >= g->n_nodes) return NULL;
    return &g->nodes[n];
}

int32_t rlx_graph_n_outputs(const rlx_graph *g) { return g ? g->n_outputs : 0; }

rlx_node rlx_graph_output_node(const rlx_graph *g, int32_t i) {
    return g && i >= 0 && i < g->n_outputs ? g->outputs[i].node : RLX_NO_NODE;
}

const char *rlx_graph_output_name(const rlx_graph *g, int32_t i) {
    return g && i >= 0 && i < g->n_outputs ? g->outputs[i].name : NULL;
}

int32_t rlx_graph_n_inputs(const rlx_graph *g) { return g ? g->n_inputs : 0; }
void rlx_graph_set_hints(rlx_graph *g, uint32_t hints) {
    if (g) g->hints = hints;
}
uint32_t rlx_graph_hints(const rlx_graph *g) { return g ? g->hints : 0; }

rlx_node rlx_graph_input_node(const rlx_graph *g, int32_t i) {
    return g && i >= 0 && i < g->n_inputs ? g->inputs[i] : RLX_NO_NODE;
}

rlx_shape rlx_shape_make(int32_t rank, const int64_t *dims) {
    rlx_shape s = {.rank = rank};
    for (int32_t i = 0; i < rank && i < RLX_MAX_DIMS; i++) s.dim[i] = dims[i];
    return s;
}

int64_t rlx_shape_numel(const rlx_shape *s) {
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank && i < RLX_MAX_DIMS; i++)
        if (__builtin_mul_overflow(n, s->dim[i], &n)) return -1;
    return n;
}

/* ---- growable arrays ---- */

/* Makes room for one more element of `size` bytes in *arr (count *n, capacity *cap). */
static bool grow(void **arr, int32_t n, int32_t *cap, size_t size) {
    if (n < *cap) return true;
    int32_t new_cap = *cap ? *cap * 2 : 64;
    if (new_cap <= *cap) return false;
    void *p = realloc(*arr, (size_t)new_cap * size);
    if (!p) return false;
    *arr = p;
    *cap = new_cap;
    return true;
}

void rlx_graph_record_error(rlx_graph *g, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    g->n_errors++;
    size_t need = g->errors_len + (n > 0 ? (size_t)n : 0) + 2;
    if (n < 0 || need > g->errors_cap) {
        size_t cap = g->errors_cap ? g->errors_cap : 256;
        while (cap < need) cap *= 2;
        char *p = n < 0 ? NULL : realloc(g->errors, cap);
        if (!p) {
            g->oom = true;
            va_end(ap2);
            return;
        }
        g->errors = p;
        g->errors_cap = cap;
    }
    vsnprintf(g->errors + g->errors_len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    g->errors_len += (size_t)n;
    g->errors[g->errors_len++] = '\n';
    g->errors[g->errors_len] = '\0';
}

/* ---- appending a node ---- */

/* Checks the inputs, runs the shape rule, copies the name, and appends. `optional_mask` has bit i
 * set when input i may be RLX_NO_NODE. */
static rlx_node add_node(rlx_graph *g, rlx_node_info n, unsigned optional_mask) {
    if (!g) return RLX_NO_NODE;
    rlx_node index = g->n_nodes;
    const char *op = rlx_op_name(n.op);
    bool inputs_ok = true;
    for (int i = 0; i < n.n_in; i++) {
        if (n.in[i] == RLX_NO_NODE && (optional_mask >> i & 1u)) continue;
        if (n.in[i] < 0 || n.in[i] >= index) {
            rlx_graph_record_error(g, "%%%d %s: input %d is %%%d, which is not an earlier node", index, op, i,
                                   n.in[i]);
            n.invalid = true;
            inputs_ok = false;
        } else if (g->nodes[n.in[i]].invalid) {
            n.invalid = true;
            inputs_ok = false;
        }
    }
    if (inputs_ok) {
        rlx_shape_errors err = {.len = 0};
        if (!rlx_shape_infer(g, &n, &err)) {
            n.invalid = true;
            for (char *line = err.text; line && *line;) {
                char *nl = strchr(line, '\n');
                int len = nl ? (int)(nl - line) : (int)strlen(line);
                rlx_graph_record_error(g, "%%%d %s: %.*s", index, op, len, line);
                line = nl ? nl + 1 : NULL;
            }
        }
    }
    if (n.invalid && (n.shape.rank < 1 || n.shape.rank > RLX_MAX_DIMS)) n.shape = rlx_shape_make(1, (int64_t[]){1});
    if (n.name) {
        n.name = strdup(n.name);
        if (!n.name) {
            g->oom = true;
            return RLX_NO_NODE;
        }
    }
    if (!grow((void **)&g->nodes, g->n_nodes, &g->cap_nodes, sizeof *g->nodes)) {
        free((char *)n.name);
        g->oom = true;
        return RLX_NO_NODE;
    }
    g->nodes[g->n_nodes++] = n;
    return index;
}

static rlx_node_info node_of(rlx_op op, int n_in, const rlx_node *in) {
    rlx_node_info n = {.op = op, .n_in = n_in, .dtype = RLX_DTYPE_F32};
    for (int i = 0; i < RLX_MAX_INPUTS; i++) n.in[i] = i < n_in ? in[i] : RLX_NO_NODE;
    return n;
}

static rlx_node add_op(rlx_graph *g, rlx_op op, int n_in, const rlx_node *in) {
    return add_node(g, node_of(op, n_in, in), 0);
}

static rlx_node add_leaf(rlx_graph *g, rlx_op op, const char *name, uint32_t dtype, rlx_shape shape) {
    rlx_node_info n = node_of(op, 0, NULL);
    n.dtype = dtype;
    n.shape = shape;
    n.name = name;
    if (!name || !*name) {
        if (g) rlx_graph_record_error(g, "%%%d %s: a name is required", g->n_nodes, rlx_op_name(op));
        n.invalid = true;
        n.name = NULL;
    }
    return add_node(g, n, 0);
}

/* ---- builders ---- */

rlx_node rlx_input(rlx_graph *g, const char *name, uint32_t dtype, rlx_shape shape) {
    rlx_node n = add_leaf(g, RLX_OP_INPUT, name, dtype, shape);
    if (n == RLX_NO_NODE) return n;
    if (!grow((void **)&g->inputs, g->n_inputs, &g->cap_inputs, sizeof *g->inputs)) {
        g->oom = true;
        return RLX_NO_NODE;
    }
    g->inputs[g->n_inputs++] = n;
    return n;
}

rlx_node rlx_weight_node(rlx_graph *g, const char *name, uint32_t dtype, rlx_shape shape) {
    return add_leaf(g, RLX_OP_WEIGHT, name, dtype, shape);
}

rlx_node rlx_kv_cache(rlx_graph *g, int32_t layer, bool is_v, int64_t cap, int64_t n_head_kv, int64_t head_dim) {
    rlx_node_info n = node_of(RLX_OP_KV_CACHE, 0, NULL);
    n.shape = rlx_shape_make(3, (int64_t[]){cap, n_head_kv, head_dim});
    n.attrs.layer = layer;
    n.attrs.kv_is_v = is_v;
    return add_node(g, n, 0);
}

rlx_node rlx_embed(rlx_graph *g, rlx_node table, rlx_node ids) {
    return add_op(g, RLX_OP_EMBED, 2, (rlx_node[]){table, ids});
}

rlx_node rlx_matmul(rlx_graph *g, rlx_node x, rlx_node w) {
    return add_op(g, RLX_OP_MATMUL, 2, (rlx_node[]){x, w});
}

rlx_node rlx_rms_norm(rlx_graph *g, rlx_node x, rlx_node w, float eps) {
    rlx_node_info n = node_of(RLX_OP_RMS_NORM, 2, (rlx_node[]){x, w});
    n.attrs.eps = eps;
    return add_node(g, n, 0);
}

rlx_node rlx_rope(rlx_graph *g, rlx_node x, rlx_node freq_factors, rlx_rope_attrs rope) {
    rlx_node_info n = node_of(RLX_OP_ROPE, 2, (rlx_node[]){x, freq_factors});
    n.attrs.rope = rope;
    return add_node(g, n, 1u << 1);
}

rlx_node rlx_kv_write(rlx_graph *g, rlx_node cache, rlx_node x) {
    return add_op(g, RLX_OP_KV_WRITE, 2, (rlx_node[]){cache, x});
}

rlx_node rlx_attention(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, float scale, int32_t window) {
    rlx_node_info n = node_of(RLX_OP_ATTENTION, 3, (rlx_node[]){q, k, v});
    n.attrs.scale = scale;
    n.attrs.window = window;
    return add_node(g, n, 0);
}

rlx_node rlx_add(rlx_graph *g, rlx_node a, rlx_node b) { return add_op(g, RLX_OP_ADD, 2, (rlx_node[]){a, b}); }

rlx_node rlx_mul(rlx_graph *g, rlx_node a, rlx_node b) { return add_op(g, RLX_OP_MUL, 2, (rlx_node[]){a, b}); }

rlx_node rlx_scale(rlx_graph *g, rlx_node x, float s) {
    rlx_node_info n = node_of(RLX_OP_SCALE, 1, (rlx_node[]){x});
    n.attrs.scale = s;
    return add_node(g, n, 0);
}

rlx_node rlx_silu(rlx_graph *g, rlx_node x) { return add_op(g, RLX_OP_SILU, 1, (rlx_node[]){x}); }

rlx_node rlx_gelu_tanh(rlx_graph *g, rlx_node x) { return add_op(g, RLX_OP_GELU_TANH, 1, (rlx_node[]){x}); }

rlx_node rlx_softmax(rlx_graph *g, rlx_node x) { return add_op(g, RLX_OP_SOFTMAX, 1, (rlx_node[]){x}); }

rlx_node rlx_argmax(rlx_graph *g, rlx_node x) { return add_op(g, RLX_OP_ARGMAX, 1, (rlx_node[]){x}); }

rlx_node rlx_reshape(rlx_graph *g, rlx_node x, rlx_shape shape) {
    rlx_node_info n = node_of(RLX_OP_RESHAPE, 1, (rlx_node[]){x});
    n.attrs.shape = shape;
    return add_node(g, n, 0);
}

rlx_node rlx_last_row(rlx_graph *g, rlx_node x) { return add_op(g, RLX_OP_LAST_ROW, 1, (rlx_node[]){x}); }
rlx_node rlx_gather_rows(rlx_graph *g, rlx_node x, rlx_node idx) {
    return add_op(g, RLX_OP_GATHER_ROWS, 2, (rlx_node[]){x, idx});
}

rlx_node rlx_moe_route(rlx_graph *g, rlx_node logits, int32_t top_k, bool norm_topk) {
    rlx_node_info n = node_of(RLX_OP_MOE_ROUTE, 1, (rlx_node[]){logits});
    n.attrs.top_k = top_k;
    n.attrs.norm_topk = norm_topk;
    return add_node(g, n, 0);
}

rlx_node rlx_moe_ffn(rlx_graph *g, rlx_node x, rlx_node route, rlx_node gate, rlx_node up, rlx_node down) {
    return add_op(g, RLX_OP_MOE_FFN, 5, (rlx_node[]){x, route, gate, up, down});
}

rlx_node rlx_state(rlx_graph *g, int32_t layer, int64_t state_offset, rlx_shape shape) {
    rlx_node_info n = node_of(RLX_OP_STATE, 0, NULL);
    n.shape = shape;
    n.attrs.layer = layer;
    n.attrs.state_offset = state_offset;
    return add_node(g, n, 0);
}

rlx_node rlx_causal_conv(rlx_graph *g, rlx_node x, rlx_node w, rlx_node state) {
    return add_op(g, RLX_OP_CAUSAL_CONV, 3, (rlx_node[]){x, w, state});
}

rlx_node rlx_delta_rule(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, rlx_node gate, rlx_node beta, rlx_node state,
                        int32_t chunk) {
    rlx_node_info n = node_of(RLX_OP_DELTA_RULE, 6, (rlx_node[]){q, k, v, gate, beta, state});
    n.attrs.chunk = chunk;
    return add_node(g, n, 0);
}

rlx_node rlx_delta_gate(rlx_graph *g, rlx_node a, rlx_node A, rlx_node dt_bias) {
    return add_op(g, RLX_OP_DELTA_GATE, 3, (rlx_node[]){a, A, dt_bias});
}

rlx_node rlx_l2_norm(rlx_graph *g, rlx_node x, float eps) {
    rlx_node_info n = node_of(RLX_OP_L2_NORM, 1, (rlx_node[]){x});
    n.attrs.eps = eps;
    return add_node(g, n, 0);
}

rlx_node rlx_sigmoid(rlx_graph *g, rlx_node x) { return add_op(g, RLX_OP_SIGMOID, 1, (rlx_node[]){x}); }

rlx_node rlx_scale_rows(rlx_graph *g, rlx_node x, rlx_node s) {
    return add_op(g, RLX_OP_SCALE_ROWS, 2, (rlx_node[]){x, s});
}

rlx_node rlx_slice(rlx_graph *g, rlx_node x, int64_t begin, int64_t len) {
    rlx_node_info n = node_of(RLX_OP_SLICE, 1, (rlx_node[]){x});
    n.attrs.slice_begin = begin;
    n.attrs.slice_len = len;
    return add_node(g, n, 0);
}

void rlx_graph_mark_output(rlx_graph *g, rlx_node n, const char *name) {
    if (!g) return;
    if (n < 0 || n >= g->n_nodes) {
        rlx_graph_record_error(g, "output '%s': %%%d is not a node of this graph", name ? name : "", n);
        return;
    }
    if (!name || !*name) {
        rlx_graph_record_error(g, "output %%%d: a name is required", n);
        return;
    }
    char *copy = strdup(name);
    if (!copy || !grow((void **)&g->outputs, g->n_outputs, &g->cap_outputs, sizeof *g->outputs)) {
        free(copy);
        g->oom = true;
        return;
    }
    g->outputs[g->n_outputs++] = (rlx_graph_output){.node = n, .name = copy};
}
