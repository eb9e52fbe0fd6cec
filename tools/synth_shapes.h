/* The models `rlx synth --like NAME` imitates: their published configs (the HF config.json of each)
 * and the tensors llama.cpp's converter (convert_hf_to_gguf.py) writes for them. */
#ifndef RLX_TOOLS_SYNTH_SHAPES_H
#define RLX_TOOLS_SYNTH_SHAPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

typedef struct rlx_synth_shape {
    const char *like;       /* the --like name */
    const char *arch;       /* general.architecture: "qwen3", "llama", "qwen35" or "qwen35moe" */
    const char *name;       /* general.name */
    const char *basename;   /* general.basename */
    const char *size_label; /* general.size_label */
    uint32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
    float rope_base, rms_eps;
    bool tied;              /* tie_word_embeddings: no output.weight */
    bool qk_norm;           /* qwen3: attn_q_norm / attn_k_norm */
    /* llama3 RoPE scaling (a rope_freqs.weight tensor); rope_factor 0 = none */
    float rope_factor, rope_low, rope_high;
    uint32_t rope_orig_ctx;
    const char *vocab_file;    /* fixtures/tokenizers/<file> */
    const char *template_file; /* fixtures/templates/<file>, or NULL */
    int32_t bos, eos, pad;     /* special token ids; -1 = none */
    bool add_bos;
    /* Qwen3.5 (arch qwen35 / qwen35moe): Gated DeltaNet layers, every full_attn_interval-th layer
     * gated attention (attn_q rows doubled: query and gate), partial RoPE. 0 = not hybrid. */
    uint32_t full_attn_interval;
    uint32_t ssm_conv_kernel;          /* linear_conv_kernel_dim */
    uint32_t ssm_k_heads, ssm_v_heads; /* linear_num_key_heads, linear_num_value_heads */
    uint32_t ssm_k_dim, ssm_v_dim;     /* linear_key_head_dim, linear_value_head_dim */
    float partial_rotary;              /* partial_rotary_factor */
    int32_t rope_sections[4];          /* rope.dimension_sections (mrope_section, 0-padded) */
    const char *pre;                   /* tokenizer.ggml.pre written, or NULL: the vocabulary's own */
    /* MoE (qwen35moe): routed experts plus a gated shared expert; n_expert 0 = dense FFN */
    uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
} rlx_synth_shape;

const rlx_synth_shape *rlx_synth_shape_find(const char *like); /* NULL when unknown */
static inline bool rlx_synth_is_hybrid(const rlx_synth_shape *s) { return s->full_attn_interval > 0; }
/* Whether layer il of a hybrid shape is gated full attention ((il + 1) % interval == 0, as
 * llama-model.cpp derives it from full_attention_interval). */
static inline bool rlx_synth_layer_is_full(const rlx_synth_shape *s, uint32_t il) {
    return !rlx_synth_is_hybrid(s) || (il + 1) % s->full_attn_interval == 0;
}
const rlx_synth_shape *rlx_synth_shapes(size_t *n);

/* RANDOM: normal, std 0.02; ONES / MINUS_ONES: constants (norms, dt_bias; ssm_a = -exp(A_log) must
 * be negative or the delta rule's state grows without bound); ROPE_FREQS: llama3's factors. */
typedef enum { RLX_SYNTH_RANDOM, RLX_SYNTH_ONES, RLX_SYNTH_MINUS_ONES, RLX_SYNTH_ROPE_FREQS } rlx_synth_init;

typedef struct rlx_synth_tensor {
    char name[64];    /* GGUF name */
    char hf_name[96]; /* the HF name it is converted from (orders the converter's output) */
    uint32_t n_dims;
    uint64_t ne[3];   /* ne[0] contiguous; unused dims 1 */
    rlx_synth_init init;
    bool force_f32;   /* a 2-D tensor the converter keeps in F32 (ssm_conv1d, the MoE routers) */
} rlx_synth_tensor;

/* Every tensor of the shape, in the converter's order: generated tensors (rope_freqs) first, then
 * in the order of the HF names (a single safetensors file lists them sorted). *out is owned by the
 * caller (free()). */
rlx_status rlx_synth_tensor_list(const rlx_synth_shape *s, rlx_synth_tensor **out, size_t *n);

/* rope_freqs.weight: llama3's per-frequency wavelength factors (the converter's
 * LlamaModel.generate_extra_tensors), head_dim / 2 values. */
void rlx_synth_rope_factors(const rlx_synth_shape *s, float *out);

/* Parameter count of the shape (every element of every tensor). */
uint64_t rlx_synth_param_count(const rlx_synth_shape *s);

#endif
