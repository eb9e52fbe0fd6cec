/* Qwen3 and Qwen3-MoE (HF modeling_qwen3.py, modeling_qwen3_moe.py; llama.cpp src/models/qwen3*.cpp).
 * One layer builder: pre-norm attention with a per-head RMSNorm of q and k before NEOX RoPE, GQA,
 * then a pre-norm FFN that is dense SwiGLU (qwen3) or a routed mixture of SwiGLU experts (qwen3moe).
 * qwen3 ties the LM head to the embeddings; qwen3moe has its own output.weight (graph_util picks). */
#include "runners/graph_util.h"

static rlx_node attention_block(rlx_fwd *f, int32_t il, rlx_node x) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "attn_norm"), c->rms_eps);
    rlx_node q, k, v;
    rlx_fwd_qkv(f, il, h, &q, &k, &v);
    /* Qwen3Attention: q_norm / k_norm over head_dim, then rotary */
    q = rlx_rms_norm(g, q, rlx_fwd_layer_weight(f, il, "attn_q_norm"), c->rms_eps);
    k = rlx_rms_norm(g, k, rlx_fwd_layer_weight(f, il, "attn_k_norm"), c->rms_eps);
    q = rlx_fwd_rope(f, q, c->rope_base);
    k = rlx_fwd_rope(f, k, c->rope_base);
    rlx_node a = rlx_fwd_attention(f, il, q, k, v, rlx_fwd_attn_scale(f), rlx_fwd_window(f, il));
    return rlx_add(g, x, rlx_matmul(g, a, rlx_fwd_layer_weight(f, il, "attn_output")));
}

/* Qwen3MoeSparseMoeBlock: softmax over the router logits, top-k, renormalised when norm_topk_prob */
static rlx_node moe_ffn(rlx_fwd *f, int32_t il, rlx_node h) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node logits = rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_gate_inp"));
    rlx_node route = rlx_moe_route(g, logits, (int32_t)c->n_expert_used, c->norm_topk_prob);
    return rlx_moe_ffn(g, h, route, rlx_fwd_layer_weight(f, il, "ffn_gate_exps"),
                       rlx_fwd_layer_weight(f, il, "ffn_up_exps"), rlx_fwd_layer_weight(f, il, "ffn_down_exps"));
}

static rlx_node layer(rlx_fwd *f, int32_t il, rlx_node x) {
    x = attention_block(f, il, x);
    rlx_node h = rlx_rms_norm(f->g, x, rlx_fwd_layer_weight(f, il, "ffn_norm"), f->c->rms_eps);
    /* A qwen3moe layer listed in mlp_only_layers (or off decoder_sparse_step) has a dense FFN and no
     * router; the router's presence is what the converter records. */
    bool moe = f->c->family == RLX_FAMILY_QWEN3MOE && rlx_fwd_has_layer_weight(f, il, "ffn_gate_inp");
    rlx_node y = moe ? moe_ffn(f, il, h) : rlx_fwd_gated_ffn(f, il, h, rlx_silu);
    return rlx_add(f->g, x, y);
}

const rlx_family_ops rlx_family_qwen3_ops = {RLX_FAMILY_QWEN3, "qwen3", layer, NULL};
const rlx_family_ops rlx_family_qwen3moe_ops = {RLX_FAMILY_QWEN3MOE, "qwen3moe", layer, NULL};
