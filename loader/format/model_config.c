/* Family detection and rlx_model_config from GGUF metadata or from an HF config.json.
 *
 * GGUF keys are those llama.cpp's converter writes (gguf-py/gguf/constants.py, Keys.LLM /
 * Keys.Attention / Keys.Rope / Keys.SSM); defaults follow llama.cpp's loader (llama-model.cpp,
 * load_hparams). config.json keys are transformers' (LlamaConfig, Qwen3Config, Gemma3TextConfig,
 * Qwen3MoeConfig, Qwen3_5TextConfig), read the way convert_hf_to_gguf.py reads them, so that a
 * checkpoint and its conversion give the same config. */
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/regular_file.h"
#include "loader/format/gguf.h"
#include "loader/format/model_config.h"

static const char *const gguf_arch_names[RLX_FAMILY_COUNT] = {
    [RLX_FAMILY_LLAMA] = "llama",       [RLX_FAMILY_QWEN3] = "qwen3",   [RLX_FAMILY_GEMMA3] = "gemma3",
    [RLX_FAMILY_QWEN3MOE] = "qwen3moe", [RLX_FAMILY_QWEN35] = "qwen35", [RLX_FAMILY_QWEN35MOE] = "qwen35moe",
};

const char *rlx_family_name(rlx_family f) { return f < RLX_FAMILY_COUNT ? gguf_arch_names[f] : "unknown"; }

rlx_status rlx_family_from_gguf_arch(const char *arch, rlx_family *out) {
    for (int f = 0; f < RLX_FAMILY_COUNT; f++) {
        if (!strcmp(arch, gguf_arch_names[f])) {
            *out = (rlx_family)f;
            return NULL;
        }
    }
    return rlx_errorf(RLX_ERR_UNSUPPORTED,
                      "GGUF architecture '%s' is not supported (supported: llama, qwen3, gemma3, qwen3moe, qwen35, "
                      "qwen35moe)", arch);
}

static const struct {
    const char *model_type;
    rlx_family family;
} hf_model_types[] = {
    {"llama", RLX_FAMILY_LLAMA},         {"qwen3", RLX_FAMILY_QWEN3},         {"gemma3_text", RLX_FAMILY_GEMMA3},
    {"gemma3", RLX_FAMILY_GEMMA3},       {"qwen3_moe", RLX_FAMILY_QWEN3MOE},  {"qwen3_5_text", RLX_FAMILY_QWEN35},
    {"qwen3_5", RLX_FAMILY_QWEN35},      {"qwen3_5_moe_text", RLX_FAMILY_QWEN35MOE},
    {"qwen3_5_moe", RLX_FAMILY_QWEN35MOE},
};

rlx_status rlx_family_from_hf_model_type(const char *model_type, rlx_family *out) {
    for (size_t i = 0; i < sizeof hf_model_types / sizeof hf_model_types[0]; i++) {
        if (!strcmp(model_type, hf_model_types[i].model_type)) {
            *out = hf_model_types[i].family;
            return NULL;
        }
    }
    return rlx_errorf(RLX_ERR_UNSUPPORTED,
                      "model_type '%s' is not supported (supported: llama, qwen3, gemma3_text, gemma3, qwen3_moe, "
                      "qwen3_5_text, qwen3_5, qwen3_5_moe_text, qwen3_5_moe)",
                      model_type);
}

/* ---- rules shared by both sources ---- */

static bool is_moe(rlx_family f) { return f == RLX_FAMILY_QWEN3MOE || f == RLX_FAMILY_QWEN35MOE; }

/* Gemma 3: every `period`-th layer is global, the rest slide (transformers Gemma3TextConfig:
 * `sliding_window_pattern`, 6; llama.cpp: hparams.set_swa_pattern(6)). */
static void set_sliding_pattern(rlx_model_config *c, uint32_t period) {
    for (uint32_t il = 0; il < c->n_layer; il++)
        c->layer_kind[il] = (period > 1 && (il + 1) % period != 0) ? RLX_LAYER_SLIDING_ATTENTION : RLX_LAYER_FULL_ATTENTION;
}

/* Qwen3.5: every `interval`-th layer is full attention, the others Gated DeltaNet (llama.cpp:
 * recurrent_layer_arr[i] = (i + 1) % full_attn_interval != 0). */
static void set_linear_pattern(rlx_model_config *c, uint32_t interval) {
    for (uint32_t il = 0; il < c->n_layer; il++)
        c->layer_kind[il] = (il + 1) % interval != 0 ? RLX_LAYER_LINEAR_ATTENTION : RLX_LAYER_FULL_ATTENTION;
}

/* RoPE layout per family, as llama.cpp's llama_model_rope_type() assigns it: LLAMA is NORM
 * (adjacent pairs, because the converter permuted Q/K rows); QWEN3, QWEN3MOE and GEMMA3 are NEOX.
 * QWEN35 is IMROPE there, which for text (one position id for every section) rotates exactly as
 * NEOX does. */
static rlx_rope_mode rope_mode_of(rlx_family f) { return f == RLX_FAMILY_LLAMA ? RLX_ROPE_NORMAL : RLX_ROPE_NEOX; }

static rlx_status check_positive(const char *what, const char *field, uint64_t v) {
    if (v == 0) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %s is 0, expected a positive value", what, field);
    return NULL;
}

/* Ceilings of the float hyperparameters. An epsilon guards a division and stays far below the
 * mean square it is added to; a softmax scale above 1/sqrt(1) belongs to no published model, and
 * one near FLT_MAX turns every q.k product into inf and every logit into NaN. */
#define RLX_MAX_RMS_EPS 1.0f
#define RLX_MAX_ATTN_SCALE 16.0f

/* A float the graph divides by, takes a power of or scales with: finite and in (0, max]. NaN
 * fails every comparison, so it is caught with inf and the non-positive values. */
static rlx_status check_float(const char *what, const char *field, float v, float max) {
    if (v > 0.0f && v <= max) return NULL;
    return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %s is %g, expected a finite number in (0, %g]", what, field, (double)v,
                      (double)max);
}

static rlx_status validate_attention(const char *what, const rlx_model_config *c) {
    RLX_TRY(check_positive(what, "hidden size", c->n_embd));
    RLX_TRY(check_positive(what, "head count", c->n_head));
    RLX_TRY(check_positive(what, "KV head count", c->n_head_kv));
    RLX_TRY(check_positive(what, "head dim", c->head_dim));
    RLX_TRY(check_positive(what, "value head dim", c->head_dim_v));
    RLX_TRY(check_positive(what, "vocab size", c->n_vocab));
    if (c->n_head_kv > c->n_head || c->n_head % c->n_head_kv)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %" PRIu32 " heads cannot be shared by %" PRIu32 " KV heads", what,
                          c->n_head, c->n_head_kv);
    if (c->n_rot == 0 || c->n_rot % 2 || c->n_rot > c->head_dim)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %" PRIu32 " rotary dims, expected an even number in [2, %" PRIu32 "]",
                          what, c->n_rot, c->head_dim);
    RLX_TRY(check_float(what, "RMS norm epsilon (attention.layer_norm_rms_epsilon / rms_norm_eps)", c->rms_eps, RLX_MAX_RMS_EPS));
    RLX_TRY(check_float(what, "RoPE base (rope.freq_base / rope_theta)", c->rope_base, FLT_MAX));
    RLX_TRY(check_float(what, "local RoPE base (rope.freq_base_swa / rope_local_base_freq)", c->rope_base_local, FLT_MAX));
    RLX_TRY(check_float(what, "attention scale (attention.scale / 1/sqrt(query_pre_attn_scalar))", c->attn_scale, RLX_MAX_ATTN_SCALE));
    return NULL;
}

static rlx_status validate_family(const char *what, const rlx_model_config *c) {
    if (is_moe(c->family)) {
        RLX_TRY(check_positive(what, "expert count", c->n_expert));
        RLX_TRY(check_positive(what, "expert FFN size", c->n_ff_exp));
        if (c->n_expert_used == 0 || c->n_expert_used > c->n_expert)
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %" PRIu32 " experts used per token, expected 1..%" PRIu32, what,
                              c->n_expert_used, c->n_expert);
    } else {
        RLX_TRY(check_positive(what, "FFN size", c->n_ff));
    }
    if (c->family == RLX_FAMILY_QWEN35MOE) RLX_TRY(check_positive(what, "shared expert FFN size", c->n_ff_shexp));
    if (rlx_family_is_qwen35(c->family)) {
        RLX_TRY(check_positive(what, "ssm conv kernel", c->ssm_conv_kernel));
        RLX_TRY(check_positive(what, "ssm state size", c->ssm_state_size));
        RLX_TRY(check_positive(what, "ssm group count", c->ssm_group_count));
        RLX_TRY(check_positive(what, "ssm time step rank", c->ssm_time_step_rank));
        RLX_TRY(check_positive(what, "ssm inner size", c->ssm_inner_size));
        if (c->ssm_inner_size % c->ssm_time_step_rank || c->ssm_time_step_rank % c->ssm_group_count)
            return rlx_errorf(RLX_ERR_BAD_FILE,
                              "%s: ssm inner size %" PRIu32 " / %" PRIu32 " value heads / %" PRIu32
                              " key heads do not divide evenly",
                              what, c->ssm_inner_size, c->ssm_time_step_rank, c->ssm_group_count);
    }
    return NULL;
}

/* Fills what follows from the fields read and checks the whole. */
static rlx_status finish_config(const char *what, rlx_model_config *c) {
    if (c->n_layer == 0 || c->n_layer > RLX_MAX_LAYERS)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: %" PRIu32 " layers, expected 1..%d", what, c->n_layer,
                          RLX_MAX_LAYERS);
    c->rope_mode = rope_mode_of(c->family);
    c->embd_scale = c->family == RLX_FAMILY_GEMMA3 ? sqrtf((float)c->n_embd) : 1.0f;
    bool any_sliding = false;
    for (uint32_t il = 0; il < c->n_layer; il++) any_sliding |= c->layer_kind[il] == RLX_LAYER_SLIDING_ATTENTION;
    if (!any_sliding) c->sliding_window = 0;
    if (any_sliding && c->sliding_window == 0)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: sliding-attention layers but no sliding window size", what);
    RLX_TRY(validate_attention(what, c));
    return validate_family(what, c);
}

/* ---- GGUF ---- */

typedef struct gguf_src {
    const rlx_gguf *g;
    const char *arch;
} gguf_src;

static void arch_key(const gguf_src *s, const char *suffix, char *key, size_t cap) {
    snprintf(key, cap, "%s.%s", s->arch, suffix);
}

/* `<arch>.<suffix>` as u32; when absent: an error if required, else *out = def. */
static rlx_status gg_u32(const gguf_src *s, const char *suffix, bool required, uint32_t def, uint32_t *out) {
    char key[160];
    arch_key(s, suffix, key, sizeof key);
    rlx_status err = NULL;
    if (rlx_gguf_get_u32(s->g, key, out, &err)) return NULL;
    if (err) return err;
    if (required) return rlx_errorf(RLX_ERR_BAD_FILE, "GGUF: missing required key '%s'", key);
    *out = def;
    return NULL;
}

static rlx_status gg_f32(const gguf_src *s, const char *suffix, bool required, float def, float *out) {
    char key[160];
    arch_key(s, suffix, key, sizeof key);
    rlx_status err = NULL;
    if (rlx_gguf_get_f32(s->g, key, out, &err)) return NULL;
    if (err) return err;
    if (required) return rlx_errorf(RLX_ERR_BAD_FILE, "GGUF: missing required key '%s'", key);
    *out = def;
    return NULL;
}

/* A token id key, -1 when absent. */
static rlx_status gg_token(const rlx_gguf *g, const char *key, int32_t *out) {
    uint32_t v;
    rlx_status err = NULL;
    if (rlx_gguf_get_u32(g, key, &v, &err)) {
        if (v > INT32_MAX) return rlx_errorf(RLX_ERR_BAD_FILE, "GGUF: '%s' = %" PRIu32 " is not a token id", key, v);
        *out = (int32_t)v;
        return NULL;
    }
    *out = -1;
    return err;
}

static rlx_status gg_attention(const gguf_src *s, rlx_model_config *c) {
    RLX_TRY(gg_u32(s, "block_count", true, 0, &c->n_layer));
    RLX_TRY(gg_u32(s, "embedding_length", true, 0, &c->n_embd));
    RLX_TRY(gg_u32(s, "feed_forward_length", !is_moe(c->family), 0, &c->n_ff));
    RLX_TRY(gg_u32(s, "context_length", true, 0, &c->n_ctx_train));
    RLX_TRY(gg_u32(s, "attention.head_count", true, 0, &c->n_head));
    RLX_TRY(gg_u32(s, "attention.head_count_kv", false, c->n_head, &c->n_head_kv));
    RLX_TRY(gg_u32(s, "attention.key_length", false, c->n_head ? c->n_embd / c->n_head : 0, &c->head_dim));
    RLX_TRY(gg_u32(s, "attention.value_length", false, c->head_dim, &c->head_dim_v));
    RLX_TRY(gg_f32(s, "attention.layer_norm_rms_epsilon", true, 0, &c->rms_eps));
    RLX_TRY(gg_u32(s, "rope.dimension_count", false, c->head_dim, &c->n_rot));
    RLX_TRY(gg_f32(s, "rope.freq_base", false, 10000.0f, &c->rope_base));
    float local_default = c->family == RLX_FAMILY_GEMMA3 ? 10000.0f : c->rope_base;
    RLX_TRY(gg_f32(s, "rope.freq_base_swa", false, local_default, &c->rope_base_local));
    return gg_u32(s, "attention.sliding_window", false, 0, &c->sliding_window);
}

/* llama.cpp counts multi-token-prediction blocks in block_count and runs the first
 * block_count - nextn_predict_layers (llama-model.cpp, LLM_KV_NEXTN_PREDICT_LAYERS). */
static rlx_status gg_nextn(const gguf_src *s, rlx_model_config *c) {
    RLX_TRY(gg_u32(s, "nextn_predict_layers", false, 0, &c->n_layer_nextn));
    if (c->n_layer_nextn >= c->n_layer && c->n_layer_nextn)
        return rlx_errorf(RLX_ERR_BAD_FILE, "GGUF: '%s.nextn_predict_layers' = %" PRIu32 " leaves no layer of %" PRIu32
                          " blocks to run", s->arch, c->n_layer_nextn, c->n_layer);
    c->n_layer -= c->n_layer_nextn;
    return NULL;
}

/* RoPE scaling types GGUF names (none, linear, yarn, longrope) other than none are not done;
 * llama3's scaling is baked into rope_freqs.weight by the converter. The factor and original
 * context, when a file carries them, are kept for reference. */
static rlx_status gg_rope_scaling(const gguf_src *s, rlx_model_config *c) {
    char key[160];
    arch_key(s, "rope.scaling.type", key, sizeof key);
    const char *type = NULL;
    rlx_status err = NULL;
    if (!rlx_gguf_get_str(s->g, key, &type, &err) && err) return err;
    if (type && strcmp(type, "none"))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "GGUF: '%s' = '%s' is not supported (only llama3 rope_freqs)", key,
                          type);
    RLX_TRY(gg_f32(s, "rope.scaling.factor", false, 0.0f, &c->rope_scale_factor));
    return gg_u32(s, "rope.scaling.original_context_length", false, 0, &c->rope_orig_ctx);
}

/* Gemma 3: llama.cpp has no softmax-scale key for it and uses 1/sqrt(n_embd/n_head) for the 27B
 * model (62 layers, where query_pre_attn_scalar = n_embd/n_head) and 1/sqrt(head_dim) otherwise
 * (llama-model.cpp, LLM_ARCH_GEMMA3). An explicit `<arch>.attention.scale` wins. */
static rlx_status gg_attn_scale(const gguf_src *s, rlx_model_config *c) {
    float scale_dim = (float)c->head_dim;
    if (c->family == RLX_FAMILY_GEMMA3 && c->n_layer == 62) scale_dim = (float)(c->n_embd / c->n_head);
    return gg_f32(s, "attention.scale", false, 1.0f / sqrtf(scale_dim), &c->attn_scale);
}

static rlx_status gg_layers(const gguf_src *s, rlx_model_config *c) {
    if (c->n_layer > RLX_MAX_LAYERS) return NULL; /* reported by finish_config */
    if (c->family == RLX_FAMILY_GEMMA3 && c->sliding_window) {
        uint32_t period;
        RLX_TRY(gg_u32(s, "attention.sliding_window_pattern", false, 6, &period));
        set_sliding_pattern(c, period);
    } else if (rlx_family_is_qwen35(c->family)) {
        RLX_TRY(gg_u32(s, "full_attention_interval", false, 4, &c->full_attention_interval));
        RLX_TRY(check_positive("GGUF", "full_attention_interval", c->full_attention_interval));
        set_linear_pattern(c, c->full_attention_interval);
    }
    return NULL;
}

static rlx_status gg_family_extras(const gguf_src *s, rlx_model_config *c) {
    if (is_moe(c->family)) {
        RLX_TRY(gg_u32(s, "expert_count", true, 0, &c->n_expert));
        RLX_TRY(gg_u32(s, "expert_used_count", true, 0, &c->n_expert_used));
        RLX_TRY(gg_u32(s, "expert_feed_forward_length", true, 0, &c->n_ff_exp));
        /* llama.cpp's qwen3moe graph always renormalises the top-k weights (build_moe_ffn, norm_w). */
        char key[160];
        arch_key(s, "expert_weights_norm", key, sizeof key);
        rlx_status err = NULL;
        c->norm_topk_prob = true;
        if (!rlx_gguf_get_bool(s->g, key, &c->norm_topk_prob, &err) && err) return err;
    }
    if (c->family == RLX_FAMILY_QWEN35MOE)
        RLX_TRY(gg_u32(s, "expert_shared_feed_forward_length", true, 0, &c->n_ff_shexp));
    if (rlx_family_is_qwen35(c->family)) {
        RLX_TRY(gg_u32(s, "ssm.conv_kernel", true, 0, &c->ssm_conv_kernel));
        RLX_TRY(gg_u32(s, "ssm.state_size", true, 0, &c->ssm_state_size));
        RLX_TRY(gg_u32(s, "ssm.group_count", true, 0, &c->ssm_group_count));
        RLX_TRY(gg_u32(s, "ssm.inner_size", true, 0, &c->ssm_inner_size));
        RLX_TRY(gg_u32(s, "ssm.time_step_rank", true, 0, &c->ssm_time_step_rank));
    }
    return NULL;
}

/* Vocab size: `<arch>.vocab_size`, else the token list, else token_embd's second dim (the order
 * llama.cpp's loader uses). */
static rlx_status gg_vocab(const gguf_src *s, rlx_model_config *c) {
    RLX_TRY(gg_u32(s, "vocab_size", false, 0, &c->n_vocab));
    if (c->n_vocab) return NULL;
    const rlx_gguf_kv *tokens = rlx_gguf_find(s->g, "tokenizer.ggml.tokens");
    if (tokens && tokens->value.type == RLX_GGUF_ARRAY) {
        if (tokens->value.arr.n > UINT32_MAX)
            return rlx_errorf(RLX_ERR_BAD_FILE, "GGUF: %" PRIu64 " tokens is more than rlx supports",
                              tokens->value.arr.n);
        c->n_vocab = (uint32_t)tokens->value.arr.n;
        return NULL;
    }
    const rlx_gguf_tensor *embd = rlx_gguf_find_tensor(s->g, "token_embd.weight");
    if (!embd || embd->n_dims != 2 || embd->ne[1] > UINT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "GGUF: vocab size unknown: no '%s.vocab_size', no tokenizer.ggml.tokens, and no 2-D "
                          "token_embd.weight",
                          s->arch);
    c->n_vocab = (uint32_t)embd->ne[1];
    return NULL;
}

rlx_status rlx_model_config_from_gguf(const rlx_gguf *g, rlx_model_config *out) {
    if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_model_config_from_gguf: NULL argument");
    rlx_model_config c = {0};
    gguf_src s = {.g = g};
    rlx_status err = NULL;
    if (!rlx_gguf_get_str(g, "general.architecture", &s.arch, &err))
        return err ? err : rlx_errorf(RLX_ERR_BAD_FILE, "GGUF: missing required key 'general.architecture'");
    RLX_TRY(rlx_family_from_gguf_arch(s.arch, &c.family));
    RLX_TRY(gg_attention(&s, &c));
    RLX_TRY(gg_nextn(&s, &c));
    RLX_TRY(gg_rope_scaling(&s, &c));
    RLX_TRY(gg_attn_scale(&s, &c));
    RLX_TRY(gg_layers(&s, &c));
    RLX_TRY(gg_family_extras(&s, &c));
    RLX_TRY(gg_vocab(&s, &c));
    RLX_TRY(gg_token(g, "tokenizer.ggml.bos_token_id", &c.bos_id));
    RLX_TRY(gg_token(g, "tokenizer.ggml.eos_token_id", &c.eos_id));
    c.tied_embeddings = !rlx_gguf_find_tensor(g, "output.weight");
    c.has_rope_freqs = rlx_gguf_find_tensor(g, "rope_freqs.weight") != NULL;
    RLX_TRY(finish_config("GGUF", &c));
    *out = c;
    return NULL;
}

/* ---- config.json ---- */

typedef struct hf_src {
    json_t *root;
    json_t *text;     /* text_config, or NULL */
    const char *what; /* the file, for messages */
} hf_src;

/* A key from text_config, else from the root; JSON null counts as absent. */
static json_t *hf_get(const hf_src *h, const char *key) {
    json_t *v = h->text ? json_object_get(h->text, key) : NULL;
    if (!v) v = json_object_get(h->root, key);
    return json_is_null(v) ? NULL : v;
}

static rlx_status hf_u32_of(const hf_src *h, const char *key, json_t *v, uint32_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (json_int_t)UINT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: '%s' must be an integer in [0, 2^32), got %s", h->what, key,
                          json_is_integer(v) ? "an out-of-range integer" : "another JSON type");
    *out = (uint32_t)json_integer_value(v);
    return NULL;
}

static rlx_status hf_u32(const hf_src *h, const char *key, bool required, uint32_t def, uint32_t *out) {
    json_t *v = hf_get(h, key);
    if (v) return hf_u32_of(h, key, v, out);
    if (required) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: missing required key '%s'", h->what, key);
    *out = def;
    return NULL;
}

/* The first of two alternative keys that is present. */
static rlx_status hf_u32_either(const hf_src *h, const char *k1, const char *k2, bool required, uint32_t *out) {
    if (hf_get(h, k1)) return hf_u32(h, k1, true, 0, out);
    if (hf_get(h, k2) || !required) return hf_u32(h, k2, false, 0, out);
    return rlx_errorf(RLX_ERR_BAD_FILE, "%s: missing required key '%s' (or '%s')", h->what, k1, k2);
}

static rlx_status hf_num_of(const hf_src *h, const char *key, json_t *v, double *out) {
    if (!json_is_number(v))
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: '%s' must be a number", h->what, key);
    *out = json_number_value(v);
    return NULL;
}

static rlx_status hf_f32_in(const hf_src *h, json_t *obj, const char *key, float def, float *out) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    double d = def;
    if (v && !json_is_null(v)) RLX_TRY(hf_num_of(h, key, v, &d));
    *out = (float)d;
    return NULL;
}

static rlx_status hf_f32(const hf_src *h, const char *key, bool required, float def, float *out) {
    json_t *v = hf_get(h, key);
    double d = def;
    if (v) RLX_TRY(hf_num_of(h, key, v, &d));
    else if (required) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: missing required key '%s'", h->what, key);
    *out = (float)d;
    return NULL;
}

static rlx_status hf_bool(const hf_src *h, const char *key, bool def, bool *out) {
    json_t *v = hf_get(h, key);
    if (!v) {
        *out = def;
        return NULL;
    }
    if (!json_is_boolean(v)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: '%s' must be true or false", h->what, key);
    *out = json_is_true(v);
    return NULL;
}

/* bos/eos: an id, a list of ids (the first is taken), or null/absent (-1). */
static rlx_status hf_token(const hf_src *h, const char *key, int32_t *out) {
    json_t *v = hf_get(h, key);
    if (json_is_array(v)) v = json_array_get(v, 0);
    *out = -1;
    if (!v) return NULL;
    uint32_t id = 0;
    RLX_TRY(hf_u32_of(h, key, v, &id));
    if (id > INT32_MAX) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: '%s' = %" PRIu32 " is not a token id", h->what, key, id);
    *out = (int32_t)id;
    return NULL;
}

/* RoPE parameters for one layer type. transformers 5 writes `rope_parameters`, either flat or per
 * layer type ({"full_attention": {...}, "sliding_attention": {...}}); older configs write
 * `rope_scaling` next to a top-level `rope_theta`. NULL when the source has none for that type. */
static json_t *hf_rope_params(const hf_src *h, const char *layer_type) {
    json_t *rp = hf_get(h, "rope_parameters");
    if (!json_is_object(rp)) rp = hf_get(h, "rope_scaling");
    if (!json_is_object(rp)) return NULL;
    if (json_object_get(rp, "full_attention") || json_object_get(rp, "sliding_attention"))
        return json_object_get(rp, layer_type);
    return strcmp(layer_type, "full_attention") ? NULL : rp;
}

static const char *rope_type_of(json_t *params) {
    json_t *t = params ? json_object_get(params, "rope_type") : NULL;
    if (!json_is_string(t) && params) t = json_object_get(params, "type");
    return json_is_string(t) ? json_string_value(t) : "default";
}

/* llama3 scaling, with the converter's defaults (LlamaModel.generate_extra_tensors). It reads the
 * original context from the top level of the config, defaulting to 8192; a value inside the rope
 * parameters (where transformers keeps it) is used when the top level has none. */
static rlx_status hf_llama3_scaling(const hf_src *h, json_t *full, rlx_model_config *c) {
    RLX_TRY(hf_f32_in(h, full, "factor", 8.0f, &c->rope_scale_factor));
    RLX_TRY(hf_f32_in(h, full, "low_freq_factor", 1.0f, &c->rope_low_freq_factor));
    RLX_TRY(hf_f32_in(h, full, "high_freq_factor", 4.0f, &c->rope_high_freq_factor));
    json_t *orig = hf_get(h, "original_max_position_embeddings");
    if (!orig) orig = json_object_get(full, "original_max_position_embeddings");
    c->rope_orig_ctx = 8192;
    if (orig) RLX_TRY(hf_u32_of(h, "original_max_position_embeddings", orig, &c->rope_orig_ctx));
    /* the factors become rope_freqs.weight here (GGUF carries that tensor and no factors) */
    RLX_TRY(check_float(h->what, "llama3 RoPE factor", c->rope_scale_factor, FLT_MAX));
    RLX_TRY(check_float(h->what, "llama3 RoPE high_freq_factor", c->rope_high_freq_factor, FLT_MAX));
    RLX_TRY(check_float(h->what, "llama3 RoPE low_freq_factor", c->rope_low_freq_factor, FLT_MAX));
    if (!(c->rope_scale_factor > 0.0f) || !(c->rope_high_freq_factor > c->rope_low_freq_factor) || !c->rope_orig_ctx)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: llama3 rope scaling needs factor > 0, high_freq_factor > low_freq_factor and an "
                          "original context > 0 (got %g, %g, %g, %" PRIu32 ")",
                          h->what, c->rope_scale_factor, c->rope_high_freq_factor, c->rope_low_freq_factor,
                          c->rope_orig_ctx);
    c->has_rope_freqs = true;
    return NULL;
}

static rlx_status hf_rope(const hf_src *h, rlx_model_config *c) {
    json_t *full = hf_rope_params(h, "full_attention");
    json_t *sliding = hf_rope_params(h, "sliding_attention");
    /* Defaults: transformers' (Gemma3TextConfig rope_theta 1e6; the others 1e4). */
    float top_theta;
    RLX_TRY(hf_f32(h, "rope_theta", false, c->family == RLX_FAMILY_GEMMA3 ? 1e6f : 10000.0f, &top_theta));
    RLX_TRY(hf_f32_in(h, full, "rope_theta", top_theta, &c->rope_base));
    float local_default = c->rope_base;
    if (c->family == RLX_FAMILY_GEMMA3) RLX_TRY(hf_f32(h, "rope_local_base_freq", false, 10000.0f, &local_default));
    RLX_TRY(hf_f32_in(h, sliding, "rope_theta", local_default, &c->rope_base_local));

    float partial;
    RLX_TRY(hf_f32(h, "partial_rotary_factor", false, 1.0f, &partial));
    RLX_TRY(hf_f32_in(h, full, "partial_rotary_factor", partial, &partial));
    if (!(partial > 0.0f && partial <= 1.0f))
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: partial_rotary_factor %g, expected (0, 1]", h->what, partial);
    c->n_rot = (uint32_t)((float)c->head_dim * partial); /* the converter's int(head_dim * factor) */

    const char *type = rope_type_of(full);
    if (!strcmp(type, "llama3")) return hf_llama3_scaling(h, full, c);
    if (strcmp(type, "default"))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: rope_type '%s' is not supported (supported: default, llama3)",
                          h->what, type);
    return NULL;
}

static rlx_status hf_layer_types(const hf_src *h, json_t *types, rlx_model_config *c) {
    if (json_array_size(types) != c->n_layer)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: layer_types has %zu entries for %" PRIu32 " layers", h->what,
                          json_array_size(types), c->n_layer);
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const char *t = json_string_value(json_array_get(types, il));
        if (t && !strcmp(t, "full_attention")) c->layer_kind[il] = RLX_LAYER_FULL_ATTENTION;
        else if (t && !strcmp(t, "sliding_attention")) c->layer_kind[il] = RLX_LAYER_SLIDING_ATTENTION;
        else if (t && !strcmp(t, "linear_attention") && rlx_family_is_qwen35(c->family))
            c->layer_kind[il] = RLX_LAYER_LINEAR_ATTENTION;
        else
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: layer_types[%" PRIu32 "] = '%s' is not supported for %s",
                              h->what, il, t ? t : "(not a string)", rlx_family_name(c->family));
    }
    return NULL;
}

static rlx_status hf_layers(const hf_src *h, rlx_model_config *c) {
    /* Gemma3TextConfig's default window is 4096; elsewhere a window only matters with sliding layers. */
    RLX_TRY(hf_u32(h, "sliding_window", false, c->family == RLX_FAMILY_GEMMA3 ? 4096 : 0, &c->sliding_window));
    if (rlx_family_is_qwen35(c->family)) {
        RLX_TRY(hf_u32(h, "full_attention_interval", false, 4, &c->full_attention_interval));
        RLX_TRY(check_positive(h->what, "full_attention_interval", c->full_attention_interval));
    }
    if (c->n_layer == 0 || c->n_layer > RLX_MAX_LAYERS) return NULL; /* reported by finish_config */
    json_t *types = hf_get(h, "layer_types");
    if (json_is_array(types)) return hf_layer_types(h, types, c);
    if (c->family == RLX_FAMILY_GEMMA3) {
        uint32_t period;
        RLX_TRY(hf_u32(h, "_sliding_window_pattern", false, 6, &period));
        RLX_TRY(hf_u32(h, "sliding_window_pattern", false, period, &period));
        set_sliding_pattern(c, period);
    } else if (rlx_family_is_qwen35(c->family)) {
        set_linear_pattern(c, c->full_attention_interval);
    }
    return NULL;
}

static rlx_status hf_moe(const hf_src *h, rlx_model_config *c) {
    RLX_TRY(hf_u32_either(h, "num_experts", "num_local_experts", true, &c->n_expert));
    RLX_TRY(hf_u32(h, "num_experts_per_tok", true, 0, &c->n_expert_used));
    RLX_TRY(hf_u32(h, "moe_intermediate_size", true, 0, &c->n_ff_exp));
    RLX_TRY(hf_bool(h, "norm_topk_prob", false, &c->norm_topk_prob));
    if (c->family == RLX_FAMILY_QWEN35MOE) {
        /* Qwen3_5MoeTopKRouter renormalises the top-k weights always (it has no norm_topk_prob);
         * the shared expert's FFN size is shared_expert_intermediate_size. */
        c->norm_topk_prob = true;
        RLX_TRY(hf_u32(h, "shared_expert_intermediate_size", true, 0, &c->n_ff_shexp));
    }
    /* Dense layers between MoE ones (Qwen3MoeConfig mlp_only_layers / decoder_sparse_step) are a
     * layout rlx does not build. */
    uint32_t step;
    RLX_TRY(hf_u32(h, "decoder_sparse_step", false, 1, &step));
    json_t *dense = hf_get(h, "mlp_only_layers");
    if (step != 1 || json_array_size(dense) > 0)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: dense layers inside a MoE model (mlp_only_layers, decoder_sparse_step) are not supported",
                          h->what);
    return NULL;
}

/* Qwen3.5 Gated DeltaNet sizes, named as the converter's Qwen3NextModel.set_gguf_parameters maps
 * them onto GGUF's ssm.* keys. */
static rlx_status hf_linear_attention(const hf_src *h, rlx_model_config *c) {
    uint32_t v_head_dim;
    RLX_TRY(hf_u32(h, "linear_conv_kernel_dim", true, 0, &c->ssm_conv_kernel));
    RLX_TRY(hf_u32(h, "linear_key_head_dim", true, 0, &c->ssm_state_size));
    RLX_TRY(hf_u32(h, "linear_num_key_heads", true, 0, &c->ssm_group_count));
    RLX_TRY(hf_u32(h, "linear_num_value_heads", true, 0, &c->ssm_time_step_rank));
    RLX_TRY(hf_u32(h, "linear_value_head_dim", true, 0, &v_head_dim));
    uint64_t inner = (uint64_t)v_head_dim * c->ssm_time_step_rank;
    if (inner > UINT32_MAX) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: linear attention inner size overflows", h->what);
    c->ssm_inner_size = (uint32_t)inner;
    return NULL;
}

static rlx_status hf_attention(const hf_src *h, rlx_model_config *c) {
    bool gemma = c->family == RLX_FAMILY_GEMMA3;
    RLX_TRY(hf_u32(h, "num_hidden_layers", true, 0, &c->n_layer));
    RLX_TRY(hf_u32(h, "hidden_size", true, 0, &c->n_embd));
    RLX_TRY(hf_u32(h, "intermediate_size", !is_moe(c->family), 0, &c->n_ff));
    RLX_TRY(hf_u32(h, "vocab_size", true, 0, &c->n_vocab));
    RLX_TRY(hf_u32(h, "max_position_embeddings", !gemma, 131072, &c->n_ctx_train));
    RLX_TRY(hf_u32(h, "num_attention_heads", true, 0, &c->n_head));
    RLX_TRY(hf_u32(h, "num_key_value_heads", false, c->n_head, &c->n_head_kv));
    RLX_TRY(hf_u32(h, "head_dim", false, c->n_head ? c->n_embd / c->n_head : 0, &c->head_dim));
    c->head_dim_v = c->head_dim;
    RLX_TRY(hf_f32(h, "rms_norm_eps", !gemma, 1e-6f, &c->rms_eps));
    /* transformers' defaults: Gemma3TextConfig ties the LM head, the others do not. */
    RLX_TRY(hf_bool(h, "tie_word_embeddings", gemma, &c->tied_embeddings));
    if (gemma) {
        float q;
        RLX_TRY(hf_f32(h, "query_pre_attn_scalar", false, 256.0f, &q)); /* Gemma3TextConfig default */
        if (!(q > 0.0f)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: query_pre_attn_scalar %g must be > 0", h->what, q);
        c->attn_scale = 1.0f / sqrtf(q);
    } else {
        c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    }
    return NULL;
}

static rlx_status hf_config(const hf_src *h, rlx_model_config *c) {
    json_t *mt = hf_get(h, "model_type");
    if (!json_is_string(mt)) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: missing required key 'model_type'", h->what);
    RLX_TRY(rlx_status_annotate(rlx_family_from_hf_model_type(json_string_value(mt), &c->family), "%s", h->what));
    RLX_TRY(hf_attention(h, c));
    RLX_TRY(hf_rope(h, c));
    RLX_TRY(hf_layers(h, c));
    if (is_moe(c->family)) RLX_TRY(hf_moe(h, c));
    if (rlx_family_is_qwen35(c->family)) RLX_TRY(hf_linear_attention(h, c));
    RLX_TRY(hf_token(h, "bos_token_id", &c->bos_id));
    RLX_TRY(hf_token(h, "eos_token_id", &c->eos_id));
    return finish_config(h->what, c);
}

static rlx_status config_from_root(json_t *root, const json_error_t *err, const char *what, rlx_model_config *out) {
    if (!root && err->line < 0) /* jansson could not read the file at all */
        return rlx_errorf(RLX_ERR_IO, "%s: %s", what, err->text);
    if (!root)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: invalid JSON at line %d, column %d: %s", what, err->line, err->column,
                          err->text);
    rlx_status s = NULL;
    if (!json_is_object(root)) s = rlx_errorf(RLX_ERR_BAD_FILE, "%s: expected a JSON object", what);
    json_t *text_cfg = json_object_get(root, "text_config");
    hf_src h = {.root = root, .text = json_is_object(text_cfg) ? text_cfg : NULL, .what = what};
    rlx_model_config c = {0};
    if (!s) s = hf_config(&h, &c);
    json_decref(root);
    if (!s) *out = c;
    return s;
}

rlx_status rlx_model_config_from_json(const char *text, size_t len, const char *what, rlx_model_config *out) {
    if (!text || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_model_config_from_json: NULL argument");
    json_error_t err;
    json_t *root = json_loadb(text, len, 0, &err);
    return config_from_root(root, &err, what ? what : "config.json", out);
}

/* A config.json is a few kilobytes; multimodal ones with a vision config stay far below this. */
#define MAX_CONFIG_JSON_BYTES ((size_t)16 << 20)

rlx_status rlx_model_config_from_hf_file(const char *path, rlx_model_config *out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_model_config_from_hf_file: NULL argument");
    char *text;
    size_t len;
    RLX_TRY(rlx_file_read_regular(path, MAX_CONFIG_JSON_BYTES, &text, &len));
    rlx_status s = rlx_model_config_from_json(text, len, path, out);
    free(text);
    return s;
}
