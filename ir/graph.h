/* The IR: a graph of typed tensors built by the runners and executed by a backend.
 *
 * Nodes are appended in dependency order (an op's inputs always exist before it), so node order is
 * a valid schedule. Builder calls never fail loudly: a bad call records an error on the graph and
 * returns a node marked invalid, so a runner reads like the model card; rlx_graph_verify() then
 * reports every error found (all of them, not the first). Shapes are row-major (dim[0] outermost). */
#ifndef RLX_IR_GRAPH_H
#define RLX_IR_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "loader/core/dtype.h"
#include "rlx/status.h"

typedef enum {
#define RLX_OP(name, n_in, shape) RLX_OP_##name,
#include "ops.def"
#undef RLX_OP
    RLX_OP_COUNT
} rlx_op;

const char *rlx_op_name(rlx_op op);
int rlx_op_max_inputs(rlx_op op);

#define RLX_MAX_DIMS 4
#define RLX_MAX_INPUTS 6
#define RLX_NO_NODE (-1)

typedef int32_t rlx_node; /* index into rlx_graph.nodes, or RLX_NO_NODE */

typedef struct rlx_shape {
    int32_t rank;               /* 1..RLX_MAX_DIMS */
    int64_t dim[RLX_MAX_DIMS];  /* dim[0] outermost */
} rlx_shape;

typedef enum {
    RLX_ROPE_LAYOUT_NORMAL = 0, /* pairs (x[2i], x[2i+1]) */
    RLX_ROPE_LAYOUT_NEOX,       /* pairs (x[i], x[i + n_rot/2]) */
} rlx_rope_layout;

typedef struct rlx_rope_attrs {
    rlx_rope_layout layout;
    int32_t n_rot;    /* rotated dims per head, even, <= Dh; the rest pass through */
    float freq_base;  /* theta_i = pos * base^(-2i/n_rot) / freq_factors[i] */
} rlx_rope_attrs;

/* Attributes; each op reads only the fields its ops.def comment names. */
typedef struct rlx_attrs {
    float eps;            /* RMS_NORM, L2_NORM */
    float scale;          /* SCALE, ATTENTION */
    int32_t window;       /* ATTENTION: sliding window, 0 = none */
    rlx_rope_attrs rope;  /* ROPE */
    int32_t top_k;        /* MOE_ROUTE */
    bool norm_topk;       /* MOE_ROUTE */
    int32_t layer;        /* KV_CACHE, STATE */
    int64_t state_offset; /* STATE: floats into the layer's state of one slot */
    int32_t chunk;        /* DELTA_RULE: rows per chunk of the chunked form, 0 = 64, 1 = step by step */
    int64_t slice_begin, slice_len; /* SLICE */
    bool kv_is_v;         /* KV_CACHE: false = K, true = V */
    rlx_shape shape;      /* RESHAPE: the new shape */
} rlx_attrs;

typedef struct rlx_node_info {
    rlx_op op;
    int32_t n_in;
    rlx_node in[RLX_MAX_INPUTS]; /* RLX_NO_NODE for an absent optional input */
    uint32_t dtype;              /* rlx_dtype: F32 activations, I32 ids, stored type for WEIGHT */
    rlx_shape shape;
    rlx_attrs attrs;
    const char *name;            /* INPUT / WEIGHT name; owned by the graph */
    bool invalid;                /* a builder error was recorded for this node */
} rlx_node_info;

typedef struct rlx_graph rlx_graph; /* owns its nodes, names and recorded errors */

rlx_status rlx_graph_create(rlx_graph **out);
void rlx_graph_destroy(rlx_graph *g); /* NULL is fine */

int32_t rlx_graph_n_nodes(const rlx_graph *g);
const rlx_node_info *rlx_graph_node(const rlx_graph *g, rlx_node n);
/* Outputs in the order they were marked. */
int32_t rlx_graph_n_outputs(const rlx_graph *g);
rlx_node rlx_graph_output_node(const rlx_graph *g, int32_t i);
const char *rlx_graph_output_name(const rlx_graph *g, int32_t i);
/* INPUT nodes in creation order; a program's run-time inputs are passed in this order. */
int32_t rlx_graph_n_inputs(const rlx_graph *g);
rlx_node rlx_graph_input_node(const rlx_graph *g, int32_t i);

/* Planning hints: facts about every run of a graph that a backend may plan with. A result never
 * depends on them: a run that breaks one is still computed right, maybe slower. */
typedef enum {
    RLX_HINT_ROWS_APART = 1u << 0, /* each valid row is a different sequence (a decode step of B sequences) */
} rlx_graph_hint;
void rlx_graph_set_hints(rlx_graph *g, uint32_t hints);
uint32_t rlx_graph_hints(const rlx_graph *g);

/* Every error recorded by builders plus every structural problem found now, one per line. */
rlx_status rlx_graph_verify(const rlx_graph *g);
/* A readable text form: one node per line, e.g.
 *   %12 = MATMUL(%11, %3) f32[7, 512]  */
void rlx_graph_dump(const rlx_graph *g, FILE *f);

rlx_shape rlx_shape_make(int32_t rank, const int64_t *dims);
int64_t rlx_shape_numel(const rlx_shape *s); /* -1 when the product overflows */
/* Formats a shape as "[7, 512]" into buf (truncated to size) and returns buf. */
const char *rlx_shape_str(const rlx_shape *s, char *buf, size_t size);

/* ---- builders (return the new node, or an invalid node after recording an error) ---- */
rlx_node rlx_input(rlx_graph *g, const char *name, uint32_t dtype, rlx_shape shape);
/* (Named rlx_weight_node because `rlx_weight` is the loader's weight struct, loader/core/weight.h.) */
rlx_node rlx_weight_node(rlx_graph *g, const char *name, uint32_t dtype, rlx_shape shape);
rlx_node rlx_kv_cache(rlx_graph *g, int32_t layer, bool is_v, int64_t cap, int64_t n_head_kv, int64_t head_dim);

rlx_node rlx_embed(rlx_graph *g, rlx_node table, rlx_node ids);
rlx_node rlx_matmul(rlx_graph *g, rlx_node x, rlx_node w);
rlx_node rlx_rms_norm(rlx_graph *g, rlx_node x, rlx_node w, float eps);
rlx_node rlx_rope(rlx_graph *g, rlx_node x, rlx_node freq_factors, rlx_rope_attrs rope);
rlx_node rlx_kv_write(rlx_graph *g, rlx_node cache, rlx_node x);
rlx_node rlx_attention(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, float scale, int32_t window);
rlx_node rlx_add(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_mul(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_scale(rlx_graph *g, rlx_node x, float s);
rlx_node rlx_silu(rlx_graph *g, rlx_node x);
rlx_node rlx_gelu_tanh(rlx_graph *g, rlx_node x);
rlx_node rlx_softmax(rlx_graph *g, rlx_node x);
rlx_node rlx_argmax(rlx_graph *g, rlx_node x);
rlx_node rlx_reshape(rlx_graph *g, rlx_node x, rlx_shape shape);
rlx_node rlx_last_row(rlx_graph *g, rlx_node x);
rlx_node rlx_gather_rows(rlx_graph *g, rlx_node x, rlx_node idx);
rlx_node rlx_moe_route(rlx_graph *g, rlx_node logits, int32_t top_k, bool norm_topk);
rlx_node rlx_moe_ffn(rlx_graph *g, rlx_node x, rlx_node route, rlx_node gate, rlx_node up, rlx_node down);
/* Gated DeltaNet (ir/ops.def): a layer's state part, the causal conv + SiLU, the delta rule. */
rlx_node rlx_state(rlx_graph *g, int32_t layer, int64_t state_offset, rlx_shape shape);
rlx_node rlx_causal_conv(rlx_graph *g, rlx_node x, rlx_node w, rlx_node state);
rlx_node rlx_delta_rule(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, rlx_node gate, rlx_node beta, rlx_node state,
                        int32_t chunk);
rlx_node rlx_delta_gate(rlx_graph *g, rlx_node a, rlx_node A, rlx_node dt_bias);
rlx_node rlx_l2_norm(rlx_graph *g, rlx_node x, float eps);
rlx_node rlx_sigmoid(rlx_graph *g, rlx_node x);
rlx_node rlx_slice(rlx_graph *g, rlx_node x, int64_t begin, int64_t len); /* of the last dim */
rlx_node rlx_scale_rows(rlx_graph *g, rlx_node x, rlx_node s);

/* Marks a node as a graph output; the name is copied. */
void rlx_graph_mark_output(rlx_graph *g, rlx_node n, const char *name);

#endif
