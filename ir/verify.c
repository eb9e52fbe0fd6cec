/* rlx_graph_verify: every error the builders recorded, plus graph-level problems found now,
 * reported together (one per line) so a runner author fixes them in one pass. */
#include <stdlib.h>
#include <string.h>

#include "ir/analysis.h"
#include "ir/ir_internal.h"

static bool is_leaf(rlx_op op) { return op == RLX_OP_INPUT || op == RLX_OP_WEIGHT || op == RLX_OP_KV_CACHE; }

static void check_nodes(rlx_graph *scratch, const rlx_graph *g) {
    for (rlx_node i = 0; i < g->n_nodes; i++) {
        const rlx_node_info *n = &g->nodes[i];
        const char *op = rlx_op_name(n->op);
        if (n->n_in > rlx_op_max_inputs(n->op))
            rlx_graph_record_error(scratch, "%%%d %s: %d inputs, at most %d allowed", i, op, n->n_in,
                                   rlx_op_max_inputs(n->op));
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] != RLX_NO_NODE && (n->in[k] < 0 || n->in[k] >= i) && !n->invalid)
                rlx_graph_record_error(scratch, "%%%d %s: input %d is %%%d, not an earlier node", i, op, k, n->in[k]);
        if (is_leaf(n->op) && n->op != RLX_OP_KV_CACHE && !n->name && !n->invalid)
            rlx_graph_record_error(scratch, "%%%d %s: has no name", i, op);
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && n->in[k] < i && g->nodes[n->in[k]].op == RLX_OP_STATE &&
                rlx_op_operand(n->op, k) != RLX_OPERAND_STATE)
                rlx_graph_record_error(scratch, "%%%d %s: input %d is the STATE %%%d, which only CAUSAL_CONV and "
                                       "DELTA_RULE read (in place)", i, op, k, n->in[k]);
    }
}

static void check_unique_inputs(rlx_graph *scratch, const rlx_graph *g) {
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const char *a = g->nodes[g->inputs[i]].name;
        for (int32_t j = 0; a && j < i; j++) {
            const char *b = g->nodes[g->inputs[j]].name;
            if (b && strcmp(a, b) == 0) {
                rlx_graph_record_error(scratch, "%%%d INPUT: name '%s' is already used by %%%d", g->inputs[i], a,
                                       g->inputs[j]);
                break;
            }
        }
    }
}

static void check_outputs(rlx_graph *scratch, const rlx_graph *g) {
    if (g->n_outputs == 0) rlx_graph_record_error(scratch, "graph has no outputs (rlx_graph_mark_output)");
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const rlx_graph_output *o = &g->outputs[i];
        if (g->nodes[o->node].invalid)
            rlx_graph_record_error(scratch, "output '%s': %%%d %s is invalid", o->name, o->node,
                                   rlx_op_name(g->nodes[o->node].op));
        if (g->nodes[o->node].op == RLX_OP_STATE)
            rlx_graph_record_error(scratch, "output '%s': %%%d is a STATE, which only its ops read", o->name, o->node);
        if (g->nodes[o->node].op == RLX_OP_WEIGHT)
            rlx_graph_record_error(scratch, "output '%s': %%%d is a WEIGHT, which is not computed", o->name, o->node);
        for (int32_t j = 0; j < i; j++)
            if (strcmp(o->name, g->outputs[j].name) == 0) {
                rlx_graph_record_error(scratch, "output '%s': name already used by output %d", o->name, j);
                break;
            }
    }
}

rlx_status rlx_graph_verify(const rlx_graph *g) {
    if (!g) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "graph verify: graph is NULL");
    /* Problems found now are collected in a scratch graph's error list, after the recorded ones. */
    rlx_graph scratch = {0};
    check_nodes(&scratch, g);
    check_unique_inputs(&scratch, g);
    check_outputs(&scratch, g);
    rlx_status s = NULL;
    if (g->oom || scratch.oom) {
        s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "graph: out of memory while building (%d nodes)", g->n_nodes);
    } else if (g->n_errors + scratch.n_errors > 0) {
        const char *a = g->errors ? g->errors : "";
        const char *b = scratch.errors ? scratch.errors : "";
        size_t la = strlen(a), lb = strlen(b);
        /* drop the final newline */
        int total = (int)(la + lb) - 1;
        char *joined = malloc(la + lb + 1);
        if (joined) {
            memcpy(joined, a, la);
            memcpy(joined + la, b, lb + 1);
            s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%.*s", total, joined);
            free(joined);
        } else {
            s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "graph verify: out of memory joining %d errors",
                           g->n_errors + scratch.n_errors);
        }
    }
    free(scratch.errors);
    return s;
}
