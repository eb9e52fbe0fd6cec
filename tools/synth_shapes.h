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
    const char *arch;       /* general.architecture: "qwen3" or "llama" */
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
} rlx_synth_shape;

const rlx_synth_shape *rlx_synth_shape_find(const char *like); /* NULL when unknown */
const rlx_synth_shape *rlx_synth_shapes(size_t *n);

typedef enum { RLX_SYNTH_RANDOM, RLX_SYNTH_ONES, RLX_SYNTH_ROPE_FREQS } rlx_synth_init;

typedef struct rlx_synth_tensor {
    char name[64];    /* GGUF name */
    char hf_name[96]; /* the HF name it is converted from (orders the converter's output) */
    uint32_t n_dims;
    uint64_t ne[2];   /* ne[0] contiguous */
    rlx_synth_init init;
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
