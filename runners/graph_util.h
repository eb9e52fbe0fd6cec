/* Helpers shared by the family graph builders: weight lookup from the model, head reshapes, RoPE
 * from the config, attention through the KV cache, and the frame every decoder-only family shares
 * (embedding, layers, final norm, LM head). A family supplies only its layer. */
#ifndef RLX_RUNNERS_GRAPH_UTIL_H
#define RLX_RUNNERS_GRAPH_UTIL_H

#include <stdint.h>

#include "ir/graph.h"
#include "loader/format/model.h"
#include "runners/family.h"
#include "rlx/status.h"

/* The state of one graph build. */
struct rlx_fwd {
    rlx_graph *g;               /* borrowed: the graph being built */
    const rlx_model *m;         /* borrowed */
    const rlx_model_config *c;  /* borrowed: &m->config */
    int32_t rows;               /* static rows of this graph */
    int32_t kv_cap;             /* capacity of the KV_CACHE views; 0: no cache */
    rlx_node rope_freqs;        /* the `rope_freqs.weight` node once made, else RLX_NO_NODE */
    rlx_status err;             /* owned: the first failure that the graph cannot record (a missing weight) */
};

/* A WEIGHT node for model tensor `name` with its stored dtype and shape (GGUF ne reversed into
 * row-major dims). A missing tensor sets f->err and returns RLX_NO_NODE. */
rlx_node rlx_fwd_weight(rlx_fwd *f, const char *name);
/* `blk.<il>.<stem>.weight` */
rlx_node rlx_fwd_layer_weight(rlx_fwd *f, int32_t il, const char *stem);
/* true when the model has `blk.<il>.<stem>.weight` */
bool rlx_fwd_has_layer_weight(const rlx_fwd *f, int32_t il, const char *stem);

/* [rows, n_head * head_dim] -> [rows, n_head, head_dim] and back */
rlx_node rlx_fwd_heads(rlx_fwd *f, rlx_node x, uint32_t n_head, uint32_t head_dim);
rlx_node rlx_fwd_merge_heads(rlx_fwd *f, rlx_node x, uint32_t n_head, uint32_t head_dim);

/* q, k and v of layer il: h times attn_q / attn_k / attn_v, split into the config's heads
 * (q [rows, H, Dh], k [rows, H_kv, Dh], v [rows, H_kv, Dv]). */
void rlx_fwd_qkv(rlx_fwd *f, int32_t il, rlx_node h, rlx_node *q, rlx_node *k, rlx_node *v);

/* RoPE of [rows, H, Dh] in the config's layout over cfg.n_rot dims with the given base; llama3's
 * `rope_freqs.weight` divides the frequencies when the config has it. */
rlx_node rlx_fwd_rope(rlx_fwd *f, rlx_node x, float base);

/* Attention of layer il. With a cache, k and v are first written into the layer's KV_CACHE views
 * and the attention reads the views; without one, k and v go straight in. q [rows, H, Dh],
 * k [rows, H_kv, Dh], v [rows, H_kv, Dv] with the config's head counts; returns [rows, H*Dv]. */
rlx_node rlx_fwd_attention(rlx_fwd *f, int32_t il, rlx_node q, rlx_node k, rlx_node v, float scale,
                           int32_t window);
/* The softmax scale from the config (the loader proves it finite and positive). */
float rlx_fwd_attn_scale(const rlx_fwd *f);
/* The sliding window of layer il: cfg.sliding_window on sliding layers, else 0. */
int32_t rlx_fwd_window(const rlx_fwd *f, int32_t il);

/* down(act(gate x) * up x) with the layer's ffn_gate / ffn_up / ffn_down */
rlx_node rlx_fwd_gated_ffn(rlx_fwd *f, int32_t il, rlx_node h, rlx_node (*act)(rlx_graph *, rlx_node));

#endif
