/* What the ir/ sources share behind graph.h: the graph struct, error recording, and the shape rules. */
#ifndef RLX_IR_INTERNAL_H
#define RLX_IR_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "ir/graph.h"

typedef struct rlx_graph_output {
    rlx_node node;
    char *name; /* owned */
} rlx_graph_output;

struct rlx_graph {
    rlx_node_info *nodes;       /* owned, n_nodes used of cap_nodes; names owned (see node_info) */
    int32_t n_nodes, cap_nodes;
    rlx_graph_output *outputs;  /* owned, n_outputs used of cap_outputs */
    int32_t n_outputs, cap_outputs;
    rlx_node *inputs;           /* owned: the INPUT nodes in creation order */
    int32_t n_inputs, cap_inputs;
    char *errors;               /* owned: recorded builder errors, one per line ("\n"-terminated) */
    size_t errors_len, errors_cap;
    int32_t n_errors;
    bool oom;                   /* an allocation failed; verify reports it */
    uint32_t hints;             /* rlx_graph_hint bits */
};

/* Appends one line to g->errors. Never fails: on OOM it sets g->oom. */
void rlx_graph_record_error(rlx_graph *g, const char *fmt, ...) RLX_PRINTF(2, 3);

/* A shape rule checks the node's inputs and attributes and fills its shape and dtype. Problems
 * go to `err` (one line each, no node prefix); the rule returns false when it found any. */
typedef struct rlx_shape_errors {
    char text[1024];
    size_t len;
    int count;
} rlx_shape_errors;

void rlx_shape_error(rlx_shape_errors *e, const char *fmt, ...) RLX_PRINTF(2, 3);
bool rlx_shape_infer(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *err);
/* True when ops.def names a shape rule for op (the rule table is generated from it). */
bool rlx_op_has_shape_rule(rlx_op op);

/* True for types rlx_dequantize turns into f32 (F32/F16/BF16 and the supported block formats). */
bool rlx_dtype_is_dequantizable(uint32_t dtype);

#endif
