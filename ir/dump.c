/* rlx_graph_dump: one node per line, e.g. `%12 = MATMUL(%11, %3) f32[7, 512]`, then the outputs. */
#include <ctype.h>
#include <inttypes.h>

#include "ir/ir_internal.h"

static void dump_dtype(FILE *f, uint32_t dtype) {
    for (const char *p = rlx_dtype_name(dtype); *p; p++) fputc(tolower((unsigned char)*p), f);
}

static void dump_attrs(FILE *f, const rlx_node_info *n) {
    switch (n->op) {
    case RLX_OP_KV_CACHE: fprintf(f, " layer=%d %s", n->attrs.layer, n->attrs.kv_is_v ? "v" : "k"); break;
    case RLX_OP_RMS_NORM:
    case RLX_OP_L2_NORM: fprintf(f, " eps=%g", (double)n->attrs.eps); break;
    case RLX_OP_STATE: fprintf(f, " layer=%d offset=%lld", n->attrs.layer, (long long)n->attrs.state_offset); break;
    case RLX_OP_DELTA_RULE: fprintf(f, " chunk=%d", n->attrs.chunk); break;
    case RLX_OP_SLICE:
        fprintf(f, " begin=%lld len=%lld", (long long)n->attrs.slice_begin, (long long)n->attrs.slice_len);
        break;
    case RLX_OP_ROPE:
        fprintf(f, " layout=%s n_rot=%d base=%g", n->attrs.rope.layout == RLX_ROPE_LAYOUT_NEOX ? "neox" : "normal",
                n->attrs.rope.n_rot, (double)n->attrs.rope.freq_base);
        break;
    case RLX_OP_ATTENTION: fprintf(f, " scale=%g window=%d", (double)n->attrs.scale, n->attrs.window); break;
    case RLX_OP_SCALE: fprintf(f, " scale=%g", (double)n->attrs.scale); break;
    case RLX_OP_MOE_ROUTE: fprintf(f, " top_k=%d norm=%d", n->attrs.top_k, n->attrs.norm_topk); break;
    default: break;
    }
}

void rlx_graph_dump(const rlx_graph *g, FILE *f) {
    if (!g || !f) return;
    char buf[96];
    for (rlx_node i = 0; i < g->n_nodes; i++) {
        const rlx_node_info *n = &g->nodes[i];
        fprintf(f, "%%%d = %s", i, rlx_op_name(n->op));
        if (n->name) fprintf(f, " '%s'", n->name);
        if (n->n_in > 0) {
            fputc('(', f);
            for (int k = 0; k < n->n_in; k++) {
                if (k) fputs(", ", f);
                if (n->in[k] == RLX_NO_NODE)
                    fputs("none", f);
                else
                    fprintf(f, "%%%d", n->in[k]);
            }
            fputc(')', f);
        }
        fputc(' ', f);
        dump_dtype(f, n->dtype);
        fputs(rlx_shape_str(&n->shape, buf, sizeof buf), f);
        dump_attrs(f, n);
        if (n->invalid) fputs(" INVALID", f);
        fputc('\n', f);
    }
    for (int32_t i = 0; i < g->n_outputs; i++)
        fprintf(f, "output '%s' = %%%d\n", g->outputs[i].name, g->outputs[i].node);
}
