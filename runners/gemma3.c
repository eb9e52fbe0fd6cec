/* Gemma 3 text (HF modeling_gemma3.py; llama.cpp src/models/gemma3.cpp). Against llama it adds:
 *   - embeddings scaled by sqrt(n_embd) (graph_util applies cfg.embd_scale);
 *   - RMSNorm weights (1 + w), which the converter already stores as w + 1, so plain RMS_NORM;
 *   - q/k RMSNorm per head before RoPE;
 *   - norms after attention and after the FFN (post_attention_norm, post_ffw_norm), before the
 *     residual add, besides the usual pre-norms (attn_norm, ffn_norm);
 *   - sliding-window layers with their own RoPE base (rope_base_local); global layers use rope_base
 *     (the linear position scaling of the larger checkpoints is refused by the loader);
 *   - softmax scale 1/sqrt(query_pre_attn_scalar) (cfg.attn_scale);
 *   - a GELU-tanh gated FFN. */
#include "runners/graph_util.h"

static rlx_node attention_block(rlx_fwd *f, int32_t il, rlx_node h) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node q, k, v;
    rlx_fwd_qkv(f, il, h, &q, &k, &v);
    q = rlx_rms_norm(g, q, rlx_fwd_layer_weight(f, il, "attn_q_norm"), c->rms_eps);
    k = rlx_rms_norm(g, k, rlx_fwd_layer_weight(f, il, "attn_k_norm"), c->rms_eps);
    int32_t window = rlx_fwd_window(f, il);
    float base = c->layer_kind[il] == RLX_LAYER_SLIDING_ATTENTION ? c->rope_base_local : c->rope_base;
    q = rlx_fwd_rope(f, q, base);
    k = rlx_fwd_rope(f, k, base);
    rlx_node a = rlx_fwd_attention(f, il, q, k, v, rlx_fwd_attn_scale(f), window);
    return rlx_matmul(g, a, rlx_fwd_layer_weight(f, il, "attn_output"));
}

static rlx_node layer(rlx_fwd *f, int32_t il, rlx_node x) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "attn_norm"), c->rms_eps);
    h = attention_block(f, il, h);
    h = rlx_rms_norm(g, h, rlx_fwd_layer_weight(f, il, "post_attention_norm"), c->rms_eps);
    x = rlx_add(g, x, h);
    h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "ffn_norm"), c->rms_eps);
    h = rlx_fwd_gated_ffn(f, il, h, rlx_gelu_tanh);
    h = rlx_rms_norm(g, h, rlx_fwd_layer_weight(f, il, "post_ffw_norm"), c->rms_eps);
    return rlx_add(g, x, h);
}

const rlx_family_ops rlx_family_gemma3_ops = {RLX_FAMILY_GEMMA3, "gemma3", layer, NULL};
