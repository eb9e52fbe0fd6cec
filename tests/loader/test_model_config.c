/* rlx_model_config from config.json variants and from GGUF metadata, and the HF -> GGUF name map.
 * Expected values come from the specs the code follows, not from its output:
 *  - transformers' config classes: rope_theta/rope_scaling (older) and rope_parameters (5.x),
 *    Gemma3TextConfig's sliding_window_pattern (6) and query_pre_attn_scalar, text_config nesting,
 *    Qwen3MoeConfig's num_experts / norm_topk_prob (default false), partial_rotary_factor;
 *  - llama.cpp: GGUF key names (gguf-py constants.py), the rope type table of llama-model.cpp
 *    (llama NORM; qwen3, qwen3moe, gemma3 NEOX), gemma3's swa pattern 6 and local base 10000,
 *    qwen35's full_attention_interval rule;
 *  - gguf-py tensor_mapping.py for names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_builder.h"
#include "loader/format/gguf.h"
#include "loader/format/hf_convert.h"
#include "loader/format/model_config.h"
#include "test_util.h"

static rlx_status from_json(const char *json, rlx_model_config *c) {
    return rlx_model_config_from_json(json, strlen(json), "test config.json", c);
}

#define BASE_DIMS                                                                                                  \
    "\"num_hidden_layers\": 12, \"hidden_size\": 256, \"intermediate_size\": 512, \"vocab_size\": 1000, "         \
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"max_position_embeddings\": 2048, "                 \
    "\"rms_norm_eps\": 1e-5"

static void llama_old_style(void) {
    rlx_model_config c;
    const char *j = "{\"model_type\": \"llama\", " BASE_DIMS ", \"rope_theta\": 500000.0, \"tie_word_embeddings\": true,"
                    " \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0,"
                    " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192},"
                    " \"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009]}";
    if (!T_OK(from_json(j, &c))) return;
    T_CHECK(c.family == RLX_FAMILY_LLAMA && c.rope_mode == RLX_ROPE_NORMAL, "llama: family %d rope_mode %d", c.family,
            c.rope_mode);
    T_CHECK(c.rope_base == 500000.0f && c.rope_base_local == 500000.0f, "llama: rope base %g / %g", c.rope_base,
            c.rope_base_local);
    T_CHECK(c.has_rope_freqs && c.rope_scale_factor == 8.0f && c.rope_low_freq_factor == 1.0f &&
                c.rope_high_freq_factor == 4.0f && c.rope_orig_ctx == 8192,
            "llama3 scaling: %d %g %g %g %u", c.has_rope_freqs, c.rope_scale_factor, c.rope_low_freq_factor,
            c.rope_high_freq_factor, c.rope_orig_ctx);
    T_CHECK(c.head_dim == 64 && c.n_rot == 64 && c.attn_scale == 0.125f && c.embd_scale == 1.0f,
            "llama: head_dim %u n_rot %u attn_scale %g embd_scale %g", c.head_dim, c.n_rot, c.attn_scale, c.embd_scale);
    T_CHECK(c.bos_id == 128000 && c.eos_id == 128001, "llama: bos %d eos %d (first of the eos list)", c.bos_id, c.eos_id);
    T_CHECK(c.tied_embeddings && c.sliding_window == 0, "llama: tied %d window %u", c.tied_embeddings, c.sliding_window);
    for (int il = 0; il < 12; il++)
        T_CHECK(c.layer_kind[il] == RLX_LAYER_FULL_ATTENTION, "llama layer %d kind %d", il, c.layer_kind[il]);
    printf("  llama, rope_theta + rope_scaling (llama3): ok\n");
}

static void gemma3_defaults(void) {
    rlx_model_config c;
    /* No layer_types, no sliding_window_pattern: every 6th layer is global; no local base: 10000. */
    const char *j = "{\"model_type\": \"gemma3_text\", " BASE_DIMS ", \"head_dim\": 128, \"rope_theta\": 1000000.0,"
                    " \"sliding_window\": 512, \"query_pre_attn_scalar\": 144}";
    if (!T_OK(from_json(j, &c))) return;
    T_CHECK(c.family == RLX_FAMILY_GEMMA3 && c.rope_mode == RLX_ROPE_NEOX, "gemma3: family %d mode %d", c.family,
            c.rope_mode);
    for (int il = 0; il < 12; il++) {
        int want = (il == 5 || il == 11) ? RLX_LAYER_FULL_ATTENTION : RLX_LAYER_SLIDING_ATTENTION;
        T_CHECK(c.layer_kind[il] == want, "gemma3 layer %d: kind %d, expected %d", il, c.layer_kind[il], want);
    }
    T_CHECK(c.sliding_window == 512 && c.rope_base == 1e6f && c.rope_base_local == 10000.0f,
            "gemma3: window %u base %g local %g", c.sliding_window, c.rope_base, c.rope_base_local);
    T_CHECK(c.attn_scale == 1.0f / 12.0f && c.embd_scale == 16.0f, "gemma3: attn_scale %.9g (1/sqrt(144)) embd %g",
            c.attn_scale, c.embd_scale);
    T_CHECK(c.tied_embeddings, "gemma3 ties embeddings by default (Gemma3TextConfig)");

    /* Multimodal: the text model's keys sit under text_config; rope_local_base_freq (older name). */
    j = "{\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": \"gemma3_text\", " BASE_DIMS
        ", \"sliding_window\": 1024, \"sliding_window_pattern\": 3, \"rope_local_base_freq\": 20000.0}}";
    if (T_OK(from_json(j, &c))) {
        T_CHECK(c.family == RLX_FAMILY_GEMMA3 && c.n_layer == 12 && c.rope_base_local == 20000.0f,
                "gemma3 text_config: family %d layers %u local base %g", c.family, c.n_layer, c.rope_base_local);
        T_CHECK(c.layer_kind[2] == RLX_LAYER_FULL_ATTENTION && c.layer_kind[3] == RLX_LAYER_SLIDING_ATTENTION,
                "gemma3 pattern 3: layer 2 kind %d, layer 3 kind %d", c.layer_kind[2], c.layer_kind[3]);
        T_CHECK(c.attn_scale == 0.0625f && c.rope_base == 1e6f,
                "gemma3 defaults (Gemma3TextConfig): query_pre_attn_scalar 256 -> %g, rope_theta 1e6 -> %g",
                c.attn_scale, c.rope_base);
    }
    printf("  gemma3 defaults (pattern 6, local base 1e4, 1/sqrt(query_pre_attn_scalar)) and text_config: ok\n");
}

static void qwen3moe_and_qwen35(void) {
    rlx_model_config c;
    const char *j = "{\"model_type\": \"qwen3_moe\", " BASE_DIMS ", \"num_local_experts\": 8,"
                    " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 128, \"rope_parameters\":"
                    " {\"rope_theta\": 1000000.0, \"rope_type\": \"default\"}}";
    if (T_OK(from_json(j, &c)))
        T_CHECK(c.n_expert == 8 && c.n_expert_used == 2 && c.n_ff_exp == 128 && !c.norm_topk_prob &&
                    c.rope_base == 1e6f && c.rope_mode == RLX_ROPE_NEOX && !c.tied_embeddings,
                "qwen3moe: experts %u/%u ff %u norm %d base %g", c.n_expert, c.n_expert_used, c.n_ff_exp,
                c.norm_topk_prob, c.rope_base);
    j = "{\"model_type\": \"qwen3_moe\", " BASE_DIMS ", \"num_experts\": 8, \"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 128, \"mlp_only_layers\": [0]}";
    T_ERR(from_json(j, &c), RLX_ERR_UNSUPPORTED, "mlp_only_layers");

    /* Qwen3.5 without layer_types: layers 1, 3, 5, ... are full attention for interval 2. */
    j = "{\"model_type\": \"qwen3_5_text\", " BASE_DIMS ", \"head_dim\": 64, \"partial_rotary_factor\": 0.5,"
        " \"full_attention_interval\": 2, \"linear_conv_kernel_dim\": 4, \"linear_key_head_dim\": 32,"
        " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_value_head_dim\": 16}";
    if (T_OK(from_json(j, &c))) {
        T_CHECK(c.n_rot == 32 && c.ssm_inner_size == 64 && c.ssm_state_size == 32 && c.ssm_group_count == 2 &&
                    c.ssm_time_step_rank == 4 && c.ssm_conv_kernel == 4,
                "qwen35: n_rot %u inner %u state %u groups %u rank %u", c.n_rot, c.ssm_inner_size, c.ssm_state_size,
                c.ssm_group_count, c.ssm_time_step_rank);
        T_CHECK(c.layer_kind[0] == RLX_LAYER_LINEAR_ATTENTION && c.layer_kind[1] == RLX_LAYER_FULL_ATTENTION,
                "qwen35 interval 2: kinds %d %d", c.layer_kind[0], c.layer_kind[1]);
    }
    /* Qwen3.5 MoE: the shared expert's size is required; its router renormalises always */
    j = "{\"model_type\": \"qwen3_5_moe_text\", " BASE_DIMS ", \"head_dim\": 64, \"linear_conv_kernel_dim\": 4,"
        " \"linear_key_head_dim\": 32, \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4,"
        " \"linear_value_head_dim\": 16, \"num_experts\": 8, \"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 128, \"shared_expert_intermediate_size\": 192, \"norm_topk_prob\": false}";
    if (T_OK(from_json(j, &c)))
        T_CHECK(c.family == RLX_FAMILY_QWEN35MOE && c.n_ff_shexp == 192 && c.norm_topk_prob && c.n_expert == 8 &&
                    c.layer_kind[3] == RLX_LAYER_FULL_ATTENTION && c.layer_kind[2] == RLX_LAYER_LINEAR_ATTENTION,
                "qwen35moe: family %d shexp %u norm %d experts %u", c.family, c.n_ff_shexp, c.norm_topk_prob,
                c.n_expert);
    j = "{\"model_type\": \"qwen3_5_moe_text\", " BASE_DIMS ", \"linear_conv_kernel_dim\": 4,"
        " \"linear_key_head_dim\": 32, \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4,"
        " \"linear_value_head_dim\": 16, \"num_experts\": 8, \"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 128}";
    T_ERR(from_json(j, &c), RLX_ERR_BAD_FILE, "shared_expert_intermediate_size");
    printf("  qwen3_moe (num_local_experts, norm_topk_prob default), qwen3_5_text and qwen3_5_moe_text: ok\n");
}

static void json_errors(void) {
    rlx_model_config c;
    T_ERR(from_json("{\"model_type\": \"mamba\"}", &c), RLX_ERR_UNSUPPORTED, "model_type 'mamba' is not supported (supported: llama");
    T_ERR(from_json("{\"hidden_size\": 4}", &c), RLX_ERR_BAD_FILE, "missing required key 'model_type'");
    T_ERR(from_json("{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2}", &c), RLX_ERR_BAD_FILE,
          "missing required key 'hidden_size'");
    T_ERR(from_json("{\"model_type\": \"qwen3\", \"num_hidden_layers\": \"2\"}", &c), RLX_ERR_BAD_FILE,
          "'num_hidden_layers' must be an integer");
    T_ERR(from_json("{\"model_type\": \"qwen3\",\n \"num_hidden_layers\": ,}", &c), RLX_ERR_BAD_FILE,
          "invalid JSON at line 2");
    T_ERR(from_json("{\"model_type\": \"llama\", " BASE_DIMS ", \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4}}", &c),
          RLX_ERR_UNSUPPORTED, "rope_type 'yarn' is not supported");
    T_ERR(from_json("{\"model_type\": \"qwen3\", " BASE_DIMS ", \"layer_types\": [\"full_attention\"]}", &c),
          RLX_ERR_BAD_FILE, "layer_types has 1 entries for 12 layers");
    T_ERR(from_json("{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"hidden_size\": 256, \"intermediate_size\": 1,"
                    " \"vocab_size\": 10, \"num_attention_heads\": 4, \"num_key_value_heads\": 3,"
                    " \"max_position_embeddings\": 8, \"rms_norm_eps\": 1e-6}",
                    &c),
          RLX_ERR_BAD_FILE, "4 heads cannot be shared by 3 KV heads");
    T_ERR(from_json("{\"model_type\": \"qwen3\", \"num_hidden_layers\": 100000, \"hidden_size\": 256,"
                    " \"intermediate_size\": 512, \"vocab_size\": 10, \"num_attention_heads\": 4,"
                    " \"max_position_embeddings\": 8, \"rms_norm_eps\": 1e-6}",
                    &c),
          RLX_ERR_UNSUPPORTED, "100000 layers, expected 1..512");
    T_ERR(rlx_model_config_from_hf_file("/nonexistent/config.json", &c), RLX_ERR_NOT_FOUND, "/nonexistent/config.json");
    printf("  config.json errors: ok\n");
}

/* A qwen3 GGUF header with metadata only; `skip_key` leaves one key out, `arch` names the family. */
static rlx_status gguf_config(const char *arch, const char *skip_key, rlx_model_config *c) {
    static const char *const u32_keys[] = {"block_count", "embedding_length", "feed_forward_length", "context_length",
                                           "attention.head_count", "attention.head_count_kv"};
    static const uint32_t u32_vals[] = {2, 256, 512, 4096, 8, 2};
    gguf_builder b;
    gb_init(&b);
    size_t n_kv = 2 + 6 + 1 - (skip_key ? 1 : 0);
    gb_header(&b, 3, 0, n_kv);
    gb_kv_str(&b, "general.architecture", arch);
    char key[96];
    for (int i = 0; i < 6; i++) {
        if (skip_key && !strcmp(skip_key, u32_keys[i])) continue;
        snprintf(key, sizeof key, "%s.%s", arch, u32_keys[i]);
        gb_kv_u32(&b, key, u32_vals[i]);
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    gb_kv(&b, key, RLX_GGUF_FLOAT32);
    gb_f32(&b, 1e-6f);
    gb_kv(&b, "tokenizer.ggml.tokens", RLX_GGUF_ARRAY);
    gb_arr(&b, RLX_GGUF_STRING, 3);
    gb_str(&b, "a");
    gb_str(&b, "b");
    gb_str(&b, "c");
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(b.buf, b.len, &g);
    if (!s) s = rlx_model_config_from_gguf(g, c);
    rlx_gguf_close(g);
    gb_free(&b);
    return s;
}

static void gguf_cases(void) {
    rlx_model_config c;
    if (T_OK(gguf_config("qwen3", NULL, &c)))
        T_CHECK(c.family == RLX_FAMILY_QWEN3 && c.n_layer == 2 && c.head_dim == 32 && c.n_rot == 32 &&
                    c.rope_base == 10000.0f && c.n_vocab == 3 && c.tied_embeddings && c.bos_id == -1 &&
                    c.attn_scale == 1.0f / sqrtf(32.0f),
                "qwen3 GGUF defaults: layers %u head_dim %u (n_embd/n_head) n_rot %u base %g vocab %u (token list) "
                "tied %d bos %d",
                c.n_layer, c.head_dim, c.n_rot, c.rope_base, c.n_vocab, c.tied_embeddings, c.bos_id);
    T_ERR(gguf_config("qwen3", "block_count", &c), RLX_ERR_BAD_FILE, "missing required key 'qwen3.block_count'");
    T_ERR(gguf_config("qwen3", "attention.head_count", &c), RLX_ERR_BAD_FILE,
          "missing required key 'qwen3.attention.head_count'");
    T_ERR(gguf_config("mamba", NULL, &c), RLX_ERR_UNSUPPORTED,
          "GGUF architecture 'mamba' is not supported (supported: llama, qwen3, gemma3, qwen3moe, qwen35, qwen35moe)");
    T_ERR(gguf_config("qwen3moe", NULL, &c), RLX_ERR_BAD_FILE, "missing required key 'qwen3moe.expert_count'");
    if (T_OK(gguf_config("gemma3", NULL, &c)))
        T_CHECK(c.rope_base_local == 10000.0f && c.embd_scale == 16.0f && c.sliding_window == 0,
                "gemma3 GGUF defaults: local base %g embd_scale %g window %u", c.rope_base_local, c.embd_scale,
                c.sliding_window);
    printf("  GGUF metadata: defaults and missing/unknown keys: ok\n");
}

static void name_cases(void) {
    static const struct {
        rlx_family f;
        const char *hf, *gguf;
    } names[] = {
        {RLX_FAMILY_QWEN3, "model.embed_tokens.weight", "token_embd.weight"},
        {RLX_FAMILY_QWEN3, "model.norm.weight", "output_norm.weight"},
        {RLX_FAMILY_QWEN3MOE, "lm_head.weight", "output.weight"},
        {RLX_FAMILY_LLAMA, "model.layers.7.self_attn.q_proj.weight", "blk.7.attn_q.weight"},
        {RLX_FAMILY_LLAMA, "model.layers.0.self_attn.o_proj.weight", "blk.0.attn_output.weight"},
        {RLX_FAMILY_LLAMA, "model.layers.3.post_attention_layernorm.weight", "blk.3.ffn_norm.weight"},
        {RLX_FAMILY_QWEN3, "model.layers.1.self_attn.k_norm.weight", "blk.1.attn_k_norm.weight"},
        {RLX_FAMILY_GEMMA3, "model.layers.2.post_attention_layernorm.weight", "blk.2.post_attention_norm.weight"},
        {RLX_FAMILY_GEMMA3, "model.layers.2.pre_feedforward_layernorm.weight", "blk.2.ffn_norm.weight"},
        {RLX_FAMILY_GEMMA3, "model.layers.2.post_feedforward_layernorm.weight", "blk.2.post_ffw_norm.weight"},
        {RLX_FAMILY_GEMMA3, "language_model.model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"},
        {RLX_FAMILY_QWEN3MOE, "model.layers.4.mlp.gate.weight", "blk.4.ffn_gate_inp.weight"},
        {RLX_FAMILY_QWEN3MOE, "model.layers.4.mlp.experts.3.up_proj.weight", "blk.4.ffn_up_exps.weight"},
        {RLX_FAMILY_QWEN35, "model.layers.0.linear_attn.in_proj_qkv.weight", "blk.0.attn_qkv.weight"},
        {RLX_FAMILY_QWEN35, "model.layers.0.linear_attn.in_proj_z.weight", "blk.0.attn_gate.weight"},
        {RLX_FAMILY_QWEN35, "model.layers.0.linear_attn.A_log", "blk.0.ssm_a"},
        {RLX_FAMILY_QWEN35, "model.layers.0.linear_attn.dt_bias", "blk.0.ssm_dt.bias"},
        {RLX_FAMILY_QWEN35, "model.layers.0.linear_attn.norm.weight", "blk.0.ssm_norm.weight"},
        {RLX_FAMILY_QWEN35, "model.language_model.layers.3.post_attention_layernorm.weight",
         "blk.3.post_attention_norm.weight"},
    };
    char out[128];
    bool skip;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        out[0] = 0;
        if (T_OK(rlx_hf_map_name(names[i].f, names[i].hf, out, sizeof out, &skip)))
            T_CHECK(!skip && !strcmp(out, names[i].gguf), "%s: '%s' -> '%s', expected '%s'",
                    rlx_family_name(names[i].f), names[i].hf, out, names[i].gguf);
    }
    T_OK(rlx_hf_map_name(RLX_FAMILY_QWEN35, "mtp.layers.0.mlp.up_proj.weight", out, sizeof out, &skip));
    T_CHECK(skip, "MTP tensors are dropped (converted with --no-mtp)");
    T_OK(rlx_hf_map_name(RLX_FAMILY_GEMMA3, "vision_tower.vision_model.x.weight", out, sizeof out, &skip));
    T_CHECK(skip, "vision tensors are dropped");
    T_ERR(rlx_hf_map_name(RLX_FAMILY_LLAMA, "model.layers.0.mlp.experts.0.up_proj.weight", out, sizeof out, &skip),
          RLX_ERR_UNSUPPORTED, "no GGUF name for 'mlp.experts.0.up_proj.weight' in a llama model");
    T_ERR(rlx_hf_map_name(RLX_FAMILY_QWEN3, "model.foo.weight", out, sizeof out, &skip), RLX_ERR_UNSUPPORTED,
          "HF tensor 'model.foo.weight': no GGUF name");
    printf("  HF -> GGUF names (tensor_mapping.py): %zu mapped, skips and unknowns: ok\n",
           sizeof names / sizeof names[0]);
}

int main(void) {
    llama_old_style();
    gemma3_defaults();
    qwen3moe_and_qwen35();
    json_errors();
    gguf_cases();
    name_cases();
    return t_summary("test_model_config");
}
