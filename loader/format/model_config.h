/* The model configuration of every supported family, filled identically from GGUF metadata
 * (`<arch>.*` keys) or from an HF `config.json`. */
#ifndef RLX_LOADER_MODEL_CONFIG_H
#define RLX_LOADER_MODEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#define RLX_MAX_LAYERS 512

typedef enum {
    RLX_FAMILY_LLAMA = 0, /* GGUF arch "llama", HF model_type "llama" (Llama 3.x) */
    RLX_FAMILY_QWEN3,     /* "qwen3" / "qwen3" */
    RLX_FAMILY_GEMMA3,    /* "gemma3" / "gemma3_text" (and "gemma3" text part) */
    RLX_FAMILY_QWEN3MOE,  /* "qwen3moe" / "qwen3_moe" */
    RLX_FAMILY_QWEN35,    /* "qwen35" / "qwen3_5_text": hybrid Gated-DeltaNet + attention */
    RLX_FAMILY_QWEN35MOE, /* "qwen35moe" / "qwen3_5_moe_text": the same with routed + shared experts */
    RLX_FAMILY_COUNT,
} rlx_family;

typedef enum {
    RLX_LAYER_FULL_ATTENTION = 0,
    RLX_LAYER_SLIDING_ATTENTION, /* attention limited to the last `sliding_window` positions */
    RLX_LAYER_LINEAR_ATTENTION,  /* qwen35 / qwen35moe Gated DeltaNet */
} rlx_layer_kind;

typedef enum {
    RLX_ROPE_NORMAL = 0, /* rotate adjacent pairs (x[2i], x[2i+1]); GGUF llama after Q/K permutation */
    RLX_ROPE_NEOX,       /* rotate halves (x[i], x[i + n_rot/2]); HF's rotate_half */
} rlx_rope_mode;

typedef struct rlx_model_config {
    rlx_family family;
    uint32_t n_layer;    /* decoder layers the model runs */
    uint32_t n_layer_nextn; /* multi-token-prediction blocks stored after them (GGUF
                             * `nextn_predict_layers`, counted in its block_count); not run */
    uint32_t n_embd;     /* hidden size */
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t head_dim;   /* key/query head size (attention.key_length) */
    uint32_t head_dim_v; /* value head size (attention.value_length) */
    uint32_t n_ff;       /* dense FFN inner size */
    uint32_t n_vocab;
    uint32_t n_ctx_train; /* context_length / max_position_embeddings */
    float rms_eps;
    bool tied_embeddings; /* output.weight absent: the LM head reuses token_embd.weight */

    /* RoPE */
    rlx_rope_mode rope_mode;
    uint32_t n_rot;        /* rotated dims per head (partial rotary: < head_dim) */
    float rope_base;       /* global layers */
    float rope_base_local; /* sliding layers (gemma3: 10000); equals rope_base otherwise */
    bool has_rope_freqs;   /* a `rope_freqs.weight` [n_rot/2] divides the frequencies (llama3) */
    float rope_scale_factor, rope_low_freq_factor, rope_high_freq_factor; /* llama3 scaling */
    uint32_t rope_orig_ctx;

    /* Attention */
    uint32_t sliding_window;     /* 0: none */
    float attn_scale;            /* softmax scale: 1/sqrt(head_dim), or 1/sqrt(query_pre_attn_scalar) */
    float embd_scale;            /* token embeddings are multiplied by this (gemma3: sqrt(n_embd)); else 1 */
    uint8_t layer_kind[RLX_MAX_LAYERS]; /* rlx_layer_kind per layer */

    /* MoE (qwen3moe, qwen35moe) */
    uint32_t n_expert, n_expert_used, n_ff_exp;
    bool norm_topk_prob;
    uint32_t n_ff_shexp; /* qwen35moe: the shared expert's FFN size (its output gated by sigmoid) */

    /* Gated DeltaNet (qwen35 / qwen35moe linear-attention layers) */
    uint32_t ssm_conv_kernel, ssm_state_size, ssm_group_count, ssm_inner_size, ssm_time_step_rank;
    uint32_t full_attention_interval;

    /* Special tokens (-1: none) */
    int32_t bos_id, eos_id;
} rlx_model_config;

const char *rlx_family_name(rlx_family f); /* "qwen3", "llama", "gemma3", "qwen3moe", "qwen35", "qwen35moe" */
/* The Qwen3.5 hybrid families (qwen35, qwen35moe): Gated DeltaNet + gated attention layers. */
static inline bool rlx_family_is_qwen35(rlx_family f) { return f == RLX_FAMILY_QWEN35 || f == RLX_FAMILY_QWEN35MOE; }

/* Family from GGUF `general.architecture` / from HF `model_type`; an unknown name is an
 * RLX_ERR_UNSUPPORTED error listing the supported ones. */
rlx_status rlx_family_from_gguf_arch(const char *arch, rlx_family *out);
rlx_status rlx_family_from_hf_model_type(const char *model_type, rlx_family *out);

struct rlx_gguf;
/* Config from GGUF metadata (`<arch>.*`, `tokenizer.ggml.*`), plus two facts only the tensor list
 * holds: tied embeddings (no `output.weight`) and llama3 `rope_freqs.weight`. GGUF does not carry
 * llama3's scaling parameters (the converter bakes them into `rope_freqs`), so those four fields
 * stay 0 there. A missing required key is an error naming it. */
rlx_status rlx_model_config_from_gguf(const struct rlx_gguf *g, rlx_model_config *out);
/* Config from the text of an HF config.json (`what` names it in messages). A nested
 * `text_config` (multimodal checkpoints) takes precedence over top-level keys, as in llama.cpp's
 * converter. */
rlx_status rlx_model_config_from_json(const char *text, size_t len, const char *what, rlx_model_config *out);
rlx_status rlx_model_config_from_hf_file(const char *config_json_path, rlx_model_config *out);

#endif
