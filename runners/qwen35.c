/* Qwen3.5 (HF modeling_qwen3_5.py Qwen3_5DecoderLayer, modeling_qwen3_5_moe.py; llama.cpp's qwen35
 * and qwen35moe graphs): a hybrid of Gated DeltaNet layers and, every full_attention_interval-th
 * layer, gated full attention, each followed by a SwiGLU FFN: dense (qwen35), or routed experts
 * plus a gated shared expert (qwen35moe). Weights as llama.cpp's converter writes them (loader/format/hf_convert.c does
 * the same for an HF directory): norms stored as 1 + w, ssm_a = -exp(A_log), value heads tiled so
 * that value head h reads key head h % H_k (ir/ops.def DELTA_RULE).
 *
 * A linear-attention layer's recurrent state (one per sequence slot, ir/ops.def) is the conv's last
 * K-1 inputs [K-1, C] followed by the delta rule's [H_v, d_k, d_v]: rlx_qwen35_state_floats. */
#include <math.h>

#include "runners/graph_util.h"
#include "runners/qwen35.h"

/* Channels of the fused q/k/v projection that the causal conv runs over. */
static int64_t conv_channels(const rlx_model_config *c) {
    return 2 * (int64_t)c->ssm_state_size * c->ssm_group_count + (int64_t)c->ssm_inner_size;
}

int64_t rlx_qwen35_state_floats(const rlx_model_config *c) {
    int64_t d_v = c->ssm_inner_size / c->ssm_time_step_rank;
    return ((int64_t)c->ssm_conv_kernel - 1) * conv_channels(c) +
           (int64_t)c->ssm_time_step_rank * c->ssm_state_size * d_v;
}

/* Qwen3_5Attention: q_proj yields each head's query and output gate side by side; q and k are
 * RMS-normed per head before partial NEOX RoPE; the output is scaled by sigmoid(gate). */
static rlx_node gated_attention(rlx_fwd *f, int32_t il, rlx_node h) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node qg = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_q")), c->n_head,
                                2 * c->head_dim);
    rlx_node q = rlx_slice(g, qg, 0, c->head_dim);
    rlx_node gate = rlx_fwd_merge_heads(f, rlx_slice(g, qg, c->head_dim, c->head_dim), c->n_head, c->head_dim);
    rlx_node k = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_k")), c->n_head_kv, c->head_dim);
    rlx_node v = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_v")), c->n_head_kv,
                               c->head_dim_v);
    q = rlx_fwd_rope(f, rlx_rms_norm(g, q, rlx_fwd_layer_weight(f, il, "attn_q_norm"), c->rms_eps), c->rope_base);
    k = rlx_fwd_rope(f, rlx_rms_norm(g, k, rlx_fwd_layer_weight(f, il, "attn_k_norm"), c->rms_eps), c->rope_base);
    rlx_node a = rlx_fwd_attention(f, il, q, k, v, rlx_fwd_attn_scale(f), 0);
    a = rlx_mul(g, a, rlx_sigmoid(g, gate));
    return rlx_matmul(g, a, rlx_fwd_layer_weight(f, il, "attn_output"));
}

/* Qwen3_5GatedDeltaNet: the fused q/k/v projection through the causal conv + SiLU, q and k
 * L2-normed (q also by 1/sqrt(d_k)), beta = sigmoid(b), g = A softplus(a + dt_bias), the delta rule,
 * then an RMS norm of each head's output gated by SiLU(z), and the output projection. */
static rlx_node gated_deltanet(rlx_fwd *f, int32_t il, rlx_node h) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    int64_t hk = c->ssm_group_count, hv = c->ssm_time_step_rank, dk = c->ssm_state_size;
    int64_t dv = c->ssm_inner_size / hv, ch = conv_channels(c), km1 = (int64_t)c->ssm_conv_kernel - 1;
    char name[96];
    snprintf(name, sizeof name, "blk.%d.ssm_a", (int)il);
    rlx_node A = rlx_fwd_weight(f, name);
    snprintf(name, sizeof name, "blk.%d.ssm_dt.bias", (int)il);
    rlx_node dt_bias = rlx_fwd_weight(f, name);

    rlx_node conv_state = rlx_state(g, il, 0, rlx_shape_make(2, (int64_t[]){km1, ch}));
    rlx_node qkv = rlx_causal_conv(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_qkv")),
                                   rlx_fwd_layer_weight(f, il, "ssm_conv1d"), conv_state);
    rlx_node q = rlx_fwd_heads(f, rlx_slice(g, qkv, 0, hk * dk), (uint32_t)hk, (uint32_t)dk);
    rlx_node k = rlx_fwd_heads(f, rlx_slice(g, qkv, hk * dk, hk * dk), (uint32_t)hk, (uint32_t)dk);
    rlx_node v = rlx_fwd_heads(f, rlx_slice(g, qkv, 2 * hk * dk, hv * dv), (uint32_t)hv, (uint32_t)dv);
    q = rlx_scale(g, rlx_l2_norm(g, q, 1e-6f), 1.0f / sqrtf((float)dk));
    k = rlx_l2_norm(g, k, 1e-6f);
    rlx_node beta = rlx_sigmoid(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ssm_beta")));
    rlx_node decay = rlx_delta_gate(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ssm_alpha")), A, dt_bias);

    rlx_node delta_state = rlx_state(g, il, km1 * ch, rlx_shape_make(3, (int64_t[]){hv, dk, dv}));
    rlx_node o = rlx_delta_rule(g, q, k, v, decay, beta, delta_state, 0);
    rlx_node z = rlx_fwd_heads(f, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "attn_gate")), (uint32_t)hv,
                               (uint32_t)dv);
    o = rlx_mul(g, rlx_rms_norm(g, o, rlx_fwd_layer_weight(f, il, "ssm_norm"), c->rms_eps), rlx_silu(g, z));
    return rlx_matmul(g, rlx_fwd_merge_heads(f, o, (uint32_t)hv, (uint32_t)dv), rlx_fwd_layer_weight(f, il, "ssm_out"));
}

/* Qwen3_5MoeSparseMoeBlock: softmax over the router logits, the top-k renormalised, their experts'
 * sum; plus the shared expert, every row scaled by sigmoid(shared_expert_gate h). */
static rlx_node moe_ffn(rlx_fwd *f, int32_t il, rlx_node h) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    rlx_node route = rlx_moe_route(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_gate_inp")),
                                   (int32_t)c->n_expert_used, c->norm_topk_prob);
    rlx_node routed = rlx_moe_ffn(g, h, route, rlx_fwd_layer_weight(f, il, "ffn_gate_exps"),
                                  rlx_fwd_layer_weight(f, il, "ffn_up_exps"), rlx_fwd_layer_weight(f, il, "ffn_down_exps"));
    rlx_node gate = rlx_silu(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_gate_shexp")));
    rlx_node up = rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_up_shexp"));
    rlx_node shared = rlx_matmul(g, rlx_mul(g, gate, up), rlx_fwd_layer_weight(f, il, "ffn_down_shexp"));
    rlx_node share = rlx_sigmoid(g, rlx_matmul(g, h, rlx_fwd_layer_weight(f, il, "ffn_gate_inp_shexp")));
    return rlx_add(g, routed, rlx_scale_rows(g, shared, share));
}

static rlx_node layer(rlx_fwd *f, int32_t il, rlx_node x) {
    const rlx_model_config *c = f->c;
    rlx_graph *g = f->g;
    if (f->kv_cap == 0 && !f->err) {
        /* the naive graphs keep no state, and a Gated DeltaNet layer cannot run without it */
        f->err = rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: the no-cache graphs have no recurrent state for the Gated "
                            "DeltaNet layers", rlx_family_name(c->family));
        return x;
    }
    rlx_node h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "attn_norm"), c->rms_eps);
    bool linear = c->layer_kind[il] == RLX_LAYER_LINEAR_ATTENTION;
    x = rlx_add(g, x, linear ? gated_deltanet(f, il, h) : gated_attention(f, il, h));
    h = rlx_rms_norm(g, x, rlx_fwd_layer_weight(f, il, "post_attention_norm"), c->rms_eps);
    bool moe = c->family == RLX_FAMILY_QWEN35MOE;
    return rlx_add(g, x, moe ? moe_ffn(f, il, h) : rlx_fwd_gated_ffn(f, il, h, rlx_silu));
}

const rlx_family_ops rlx_family_qwen35_ops = {RLX_FAMILY_QWEN35, "qwen35", layer, rlx_qwen35_state_floats};
const rlx_family_ops rlx_family_qwen35moe_ops = {RLX_FAMILY_QWEN35MOE, "qwen35moe", layer, rlx_qwen35_state_floats};
