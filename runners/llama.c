/* Llama 3.x (HF modeling_llama.py; llama.cpp src/models/llama.cpp): pre-norm GQA attention and a
 * SwiGLU FFN. llama.cpp's converter permutes the Q/K rows of the GGUF (and the loader does the same
 * for an HF directory), which turns HF's rotate_half into the NORMAL (adjacent pairs) layout; the
 * config says so and rlx_fwd_rope follows it. Llama 3 frequency scaling arrives as the
 * `rope_freqs.weight` factors that rlx_fwd_rope passes to ROPE. */
#include "runners/graph_util.h"

static rlx_node layer(rlx_fwd *f, int32_t il, rlx_node x) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "attn_norm"), c->rms_eps);
    rlx_node q, k, v;
    rlx_fwd_qkv(f, il, h, &q, &k, &v);
    q = rlx_fwd_rope(f, q, c->rope_base);
    k = rlx_fwd_rope(f, k, c->rope_base);
    rlx_node a = rlx_fwd_attention(f, il, q, k, v, rlx_fwd_attn_scale(f), rlx_fwd_window(f, il));
    x = rlx_add(g, x, rlx_matmul(g, a, rlx_fwd_layer_weight(f, il, "attn_output")));
    h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "ffn_norm"), c->rms_eps);
    return rlx_add(g, x, rlx_fwd_gated_ffn(f, il, h, rlx_silu));
}

const rlx_family_ops rlx_family_llama_ops = {RLX_FAMILY_LLAMA, "llama", layer, NULL};
