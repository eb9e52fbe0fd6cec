#include "runners/graph_util.h"

#include <stdio.h>

#include "loader/core/dtype.h"

const char *rlx_prefill_kind_name(rlx_prefill_kind kind) {
    switch (kind) {
    case RLX_PREFILL_LAST: return "last";
    case RLX_PREFILL_ALL: return "all";
    case RLX_PREFILL_NAIVE_LAST: return "naive-last";
    case RLX_PREFILL_NAIVE_ALL: return "naive-all";
    case RLX_PREFILL_KIND_COUNT: break;
    }
    return "unknown";
}

rlx_status rlx_family_ops_find(rlx_family family, const rlx_family_ops **out) {
    static const rlx_family_ops *const all[] = {
        &rlx_family_qwen3_ops,  &rlx_family_qwen3moe_ops, &rlx_family_llama_ops,
        &rlx_family_gemma3_ops, &rlx_family_qwen35_ops,   &rlx_family_qwen35moe_ops};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (all[i]->family == family) {
            *out = all[i];
            return NULL;
        }
    }
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "model family '%s' has no runner yet (supported: qwen3, llama, gemma3, qwen3moe, qwen35, qwen35moe)",
                      rlx_family_name(family));
}

rlx_node rlx_fwd_weight(rlx_fwd *f, const char *name) {
    const rlx_weight *w = rlx_model_weight(f->m, name);
    if (!w || w->n_dims < 1 || w->n_dims > RLX_MAX_DIMS) {
        if (!f->err)
            f->err = w ? rlx_errorf(RLX_ERR_BAD_FILE, "weight '%s' has %u dims; the IR takes 1 to %d", name,
                                    w->n_dims, RLX_MAX_DIMS)
                       : rlx_errorf(RLX_ERR_NOT_FOUND, "weight '%s' is missing from the %s model", name,
                                    rlx_family_name(f->c->family));
        return RLX_NO_NODE;
    }
    /* GGUF lists ne[0] (contiguous) first; IR shapes are row-major, outermost first. */
    rlx_shape s = {.rank = (int32_t)w->n_dims};
    for (uint32_t i = 0; i < w->n_dims; i++) s.dim[i] = (int64_t)w->ne[w->n_dims - 1 - i];
    return rlx_weight_node(f->g, name, w->type, s);
}

static void layer_weight_name(char *buf, size_t cap, int32_t il, const char *stem) {
    snprintf(buf, cap, "blk.%d.%s.weight", (int)il, stem);
}

rlx_node rlx_fwd_layer_weight(rlx_fwd *f, int32_t il, const char *stem) {
    char name[128];
    layer_weight_name(name, sizeof name, il, stem);
    return rlx_fwd_weight(f, name);
}

bool rlx_fwd_has_layer_weight(const rlx_fwd *f, int32_t il, const char *stem) {
    char name[128];
    layer_weight_name(name, sizeof name, il, stem);
    return rlx_model_weight(f->m, name) != NULL;
}

rlx_node rlx_fwd_heads(rlx_fwd *f, rlx_node x, uint32_t n_head, uint32_t head_dim) {
    int64_t dims[3] = {f->rows, n_head, head_dim};
    return rlx_reshape(f->g, x, rlx_shape_make(3, dims));
}

rlx_node rlx_fwd_merge_heads(rlx_fwd *f, rlx_node x, uint32_t n_head, uint32_t head_dim) {
    int64_t dims[2] = {f->rows, (int64_t)n_head * head_dim};
    return rlx_reshape(f->g, x, rlx_shape_make(2, dims));
}

void rlx_fwd_qkv(rlx_fwd *f, int32_t il, rlx_node h, rlx_node *q, rlx_node *k, rlx_node *v) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    *q = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_q")), c->n_head, c->head_dim);
    *k = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_k")), c->n_head_kv, c->head_dim);
    *v = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_v")), c->n_head_kv, c->head_dim_v);
}

rlx_node rlx_fwd_rope(rlx_fwd *f, rlx_node x, float base) {
    const rlx_model_config *c = f->c;
    rlx_rope_attrs a = {
        .layout = c->rope_mode == RLX_ROPE_NEOX ? RLX_ROPE_LAYOUT_NEOX : RLX_ROPE_LAYOUT_NORMAL,
        .n_rot = (int32_t)(c->n_rot ? c->n_rot : c->head_dim),
        .freq_base = base,
    };
    if (c->has_rope_freqs && f->rope_freqs == RLX_NO_NODE) f->rope_freqs = rlx_fwd_weight(f, "rope_freqs.weight");
    return rlx_rope(f->g, x, c->has_rope_freqs ? f->rope_freqs : RLX_NO_NODE, a);
}

rlx_node rlx_fwd_attention(rlx_fwd *f, int32_t il, rlx_node q, rlx_node k, rlx_node v, float scale,
                           int32_t window) {
    const rlx_model_config *c = f->c;
    if (f->kv_cap > 0) {
        rlx_node kc = rlx_kv_cache(f->g, il, false, f->kv_cap, c->n_head_kv, c->head_dim);
        rlx_node vc = rlx_kv_cache(f->g, il, true, f->kv_cap, c->n_head_kv, c->head_dim_v);
        k = rlx_kv_write(f->g, kc, k);
        v = rlx_kv_write(f->g, vc, v);
    }
    rlx_node a = rlx_attention(f->g, q, k, v, scale, window);
    return rlx_fwd_merge_heads(f, a, c->n_head, c->head_dim_v);
}

float rlx_fwd_attn_scale(const rlx_fwd *f) {
    return f->c->attn_scale;
}

int32_t rlx_fwd_window(const rlx_fwd *f, int32_t il) {
    if (f->c->layer_kind[il] != RLX_LAYER_SLIDING_ATTENTION) return 0;
    /* a window past INT32_MAX covers any context (n_ctx is an int32): clamp, never wrap negative */
    return f->c->sliding_window > INT32_MAX ? INT32_MAX : (int32_t)f->c->sliding_window;
}

rlx_node rlx_fwd_gated_ffn(rlx_fwd *f, int32_t il, rlx_node h, rlx_node (*act)(rlx_graph *, rlx_node)) {
    rlx_graph *g = f->g;
    rlx_node gate = act(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_gate")));
    rlx_node up = rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_up"));
    return rlx_matmul(g, rlx_mul(g, gate, up), rlx_fwd_layer_weight(f, il, "ffn_down"));
}

/* embedding -> layers -> [LAST_ROW or GATHER_ROWS] -> final norm -> LM head, as every family here
 * does it. out_rows > 0 gathers that many rows by the INPUT "out_rows" (made second, after "ids"). */
static void build_body(rlx_fwd *f, bool last_row, int32_t out_rows, rlx_decode_head head, rlx_layer_fn layer) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    int64_t rows = f->rows;
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, &rows));
    int64_t m = out_rows;
    rlx_node pick = out_rows > 0 ? rlx_input(g, "out_rows", RLX_DTYPE_I32, rlx_shape_make(1, &m)) : RLX_NO_NODE;
    rlx_node table = rlx_fwd_weight(f, "token_embd.weight");
    rlx_node x = rlx_embed(g, table, ids);
    /* gemma3 multiplies by sqrt(n_embd) (HF Gemma3TextScaledWordEmbedding); 1 elsewhere. HF rounds
     * the factor to the weights' dtype first; the references (float64) and llama.cpp use it exact. */
    if (c->embd_scale != 0.0f && c->embd_scale != 1.0f) x = rlx_scale(g, x, c->embd_scale);
    for (uint32_t il = 0; il < c->n_layer && !f->err; il++) x = layer(f, (int32_t)il, x);
    /* Per-row ops from here on, so only the row whose logits are wanted needs them. */
    if (last_row) x = rlx_last_row(g, x);
    if (pick != RLX_NO_NODE) x = rlx_gather_rows(g, x, pick);
    x = rlx_rms_norm(g, x, rlx_fwd_weight(f, "output_norm.weight"), c->rms_eps);
    /* tied embeddings: the converter writes no output.weight and the head reuses the table */
    rlx_node w_out = rlx_model_weight(f->m, "output.weight") ? rlx_fwd_weight(f, "output.weight") : table;
    rlx_node logits = rlx_matmul(g, x, w_out);
    if (head == RLX_DECODE_ARGMAX)
        rlx_graph_mark_output(g, rlx_argmax(g, logits), "argmax");
    else
        rlx_graph_mark_output(g, logits, "logits");
}

static rlx_status build(const rlx_model *m, int32_t batch, int32_t rows, int32_t kv_cap, bool last_row,
                        int32_t out_rows, rlx_decode_head head, rlx_layer_fn layer, const char *what,
                        rlx_graph **out) {
    const char *fam = rlx_family_name(m->config.family);
    if (batch != 1)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s %s graph: batch %d is not supported (only batch 1)", fam, what,
                          (int)batch);
    if (rows < 1 || kv_cap < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s %s graph: %d rows, KV capacity %d (need rows >= 1, capacity >= 0)",
                          fam, what, (int)rows, (int)kv_cap);
    if (m->config.n_layer > RLX_MAX_LAYERS)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s model: %u layers (at most %d)", fam, m->config.n_layer, RLX_MAX_LAYERS);
    rlx_fwd f = {.m = m, .c = &m->config, .rows = rows, .kv_cap = kv_cap, .rope_freqs = RLX_NO_NODE};
    RLX_TRY(rlx_graph_create(&f.g));
    build_body(&f, last_row, out_rows, head, layer);
    rlx_status st = f.err ? f.err : rlx_graph_verify(f.g);
    if (st) {
        rlx_graph_destroy(f.g);
        return rlx_status_annotate(st, "building the %s %s graph (%d rows, KV capacity %d)", fam, what, (int)rows,
                                   (int)kv_cap);
    }
    *out = f.g;
    return NULL;
}

rlx_status rlx_family_build_prefill(const rlx_family_ops *ops, const rlx_model *m, int32_t batch, int32_t seq_bucket,
                                    rlx_prefill_kind kind, rlx_graph **out) {
    bool naive = kind == RLX_PREFILL_NAIVE_LAST || kind == RLX_PREFILL_NAIVE_ALL;
    bool last = kind == RLX_PREFILL_LAST || kind == RLX_PREFILL_NAIVE_LAST;
    if ((unsigned)kind >= RLX_PREFILL_KIND_COUNT)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "prefill graph kind %d does not exist", (int)kind);
    char what[32];
    snprintf(what, sizeof what, "prefill-%s", rlx_prefill_kind_name(kind));
    return build(m, batch, seq_bucket, naive ? 0 : seq_bucket, last, 0, RLX_DECODE_LOGITS, ops->layer, what, out);
}

rlx_status rlx_family_build_decode(const rlx_family_ops *ops, const rlx_model *m, int32_t batch, int32_t past_bucket,
                                   rlx_decode_head head, rlx_graph **out) {
    if (past_bucket < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode graph: past bucket %d (need >= 1)", (int)past_bucket);
    if (head != RLX_DECODE_LOGITS && head != RLX_DECODE_ARGMAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode graph: head %d does not exist", (int)head);
    return build(m, batch, 1, past_bucket, false, 0, head, ops->layer,
                 head == RLX_DECODE_ARGMAX ? "decode-argmax" : "decode", out);
}

rlx_status rlx_family_build_rows(const rlx_family_ops *ops, const rlx_model *m, int32_t rows, int32_t kv_cap,
                                 int32_t out_rows, rlx_decode_head head, bool rows_apart, rlx_graph **out) {
    if (kv_cap < 1 || out_rows < 0 || out_rows > rows)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rows graph: KV capacity %d, %d output rows of %d (need capacity "
                          ">= 1, 0 <= output rows <= rows)", (int)kv_cap, (int)out_rows, (int)rows);
    if (head != RLX_DECODE_LOGITS && head != RLX_DECODE_ARGMAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rows graph: head %d does not exist", (int)head);
    RLX_TRY(build(m, 1, rows, kv_cap, false, out_rows == rows ? 0 : out_rows, head, ops->layer,
                  head == RLX_DECODE_ARGMAX ? "rows-argmax" : "rows", out));
    if (rows_apart) rlx_graph_set_hints(*out, RLX_HINT_ROWS_APART);
    return NULL;
}
