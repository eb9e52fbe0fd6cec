/* The --like table of `rlx synth`, and the tensors llama.cpp's converter writes for each family.
 *
 * Configs are the models' published config.json (Qwen/Qwen3-0.6B, -4B, -8B; meta-llama
 * Llama-3.2-1B, -3B, Llama-3.1-8B): hidden size, layers, heads, KV heads, head_dim, FFN size,
 * vocabulary, max_position_embeddings, rope_theta, rms_norm_eps, tie_word_embeddings, the llama3
 * rope_scaling block and the bos/eos ids. Llama-3.2-3B's numbers are also those in the llama-bpe
 * vocabulary fixture's metadata. Tensor names, shapes and generated tensors follow
 * convert_hf_to_gguf.py (Qwen3Model, LlamaModel) as the fixtures models/qwen3 and models/llama32
 * show them. */
#include "synth_shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN3_VOCAB "ggml-vocab-qwen2.gguf"
#define LLAMA3_VOCAB "ggml-vocab-llama-bpe.gguf"
#define QWEN3_TEMPLATE "Qwen-Qwen3-0.6B.jinja"

static const rlx_synth_shape shapes[] = {
    {"qwen3-0.6b", "qwen3", "Qwen3 0.6B", "Qwen3", "0.6B", 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f,
     true, true, 0, 0, 0, 0, QWEN3_VOCAB, QWEN3_TEMPLATE, 151643, 151645, 151643, false},
    {"qwen3-4b", "qwen3", "Qwen3 4B", "Qwen3", "4B", 36, 2560, 32, 8, 128, 9728, 151936, 40960, 1e6f, 1e-6f, true,
     true, 0, 0, 0, 0, QWEN3_VOCAB, QWEN3_TEMPLATE, 151643, 151645, 151643, false},
    {"qwen3-8b", "qwen3", "Qwen3 8B", "Qwen3", "8B", 36, 4096, 32, 8, 128, 12288, 151936, 40960, 1e6f, 1e-6f, false,
     true, 0, 0, 0, 0, QWEN3_VOCAB, QWEN3_TEMPLATE, 151643, 151645, 151643, false},
    {"llama3.2-1b", "llama", "Llama 3.2 1B", "Llama-3.2", "1B", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 500000.0f,
     1e-5f, true, false, 32.0f, 1.0f, 4.0f, 8192, LLAMA3_VOCAB, NULL, 128000, 128001, -1, true},
    {"llama3.2-3b", "llama", "Llama 3.2 3B", "Llama-3.2", "3B", 28, 3072, 24, 8, 128, 8192, 128256, 131072, 500000.0f,
     1e-5f, true, false, 32.0f, 1.0f, 4.0f, 8192, LLAMA3_VOCAB, NULL, 128000, 128001, -1, true},
    {"llama3.1-8b", "llama", "Llama 3.1 8B", "Llama-3.1", "8B", 32, 4096, 32, 8, 128, 14336, 128256, 131072, 500000.0f,
     1e-5f, false, false, 8.0f, 1.0f, 4.0f, 8192, LLAMA3_VOCAB, NULL, 128000, 128001, -1, true},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

const rlx_synth_shape *rlx_synth_shape_find(const char *like) {
    for (size_t i = 0; like && i < N_SHAPES; i++)
        if (!strcmp(shapes[i].like, like)) return &shapes[i];
    return NULL;
}

const rlx_synth_shape *rlx_synth_shapes(size_t *n) {
    if (n) *n = N_SHAPES;
    return shapes;
}

/* One per-layer tensor: GGUF suffix, HF suffix, shape and init. Rows (ne[1]) and columns (ne[0])
 * are picked from the config by the dims below. */
typedef enum { D_ONE, D_EMBD, D_Q, D_KV, D_FF, D_HEAD } dim;

typedef struct layer_tensor {
    const char *gguf, *hf;
    dim ne0, ne1; /* ne1 == D_ONE: a 1-D tensor */
    rlx_synth_init init;
    bool qk_norm_only;
} layer_tensor;

static const layer_tensor layer_tensors[] = {
    {"attn_norm", "input_layernorm", D_EMBD, D_ONE, RLX_SYNTH_ONES, false},
    {"attn_q", "self_attn.q_proj", D_EMBD, D_Q, RLX_SYNTH_RANDOM, false},
    {"attn_k", "self_attn.k_proj", D_EMBD, D_KV, RLX_SYNTH_RANDOM, false},
    {"attn_v", "self_attn.v_proj", D_EMBD, D_KV, RLX_SYNTH_RANDOM, false},
    {"attn_output", "self_attn.o_proj", D_Q, D_EMBD, RLX_SYNTH_RANDOM, false},
    {"attn_q_norm", "self_attn.q_norm", D_HEAD, D_ONE, RLX_SYNTH_ONES, true},
    {"attn_k_norm", "self_attn.k_norm", D_HEAD, D_ONE, RLX_SYNTH_ONES, true},
    {"ffn_norm", "post_attention_layernorm", D_EMBD, D_ONE, RLX_SYNTH_ONES, false},
    {"ffn_gate", "mlp.gate_proj", D_EMBD, D_FF, RLX_SYNTH_RANDOM, false},
    {"ffn_up", "mlp.up_proj", D_EMBD, D_FF, RLX_SYNTH_RANDOM, false},
    {"ffn_down", "mlp.down_proj", D_FF, D_EMBD, RLX_SYNTH_RANDOM, false},
};

static uint64_t dim_of(const rlx_synth_shape *s, dim d) {
    switch (d) {
    case D_EMBD: return s->n_embd;
    case D_Q: return (uint64_t)s->n_head * s->head_dim;
    case D_KV: return (uint64_t)s->n_head_kv * s->head_dim;
    case D_FF: return s->n_ff;
    case D_HEAD: return s->head_dim;
    default: return 1;
    }
}

/* ne1 == 0 makes a 1-D tensor. */
static void set_tensor(rlx_synth_tensor *t, const char *name, const char *hf, uint64_t ne0, uint64_t ne1,
                       rlx_synth_init init) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->hf_name, sizeof t->hf_name, "%s", hf);
    t->n_dims = ne1 ? 2 : 1;
    ne1 = ne1 ? ne1 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->init = init;
}

static int by_hf_name(const void *a, const void *b) {
    return strcmp(((const rlx_synth_tensor *)a)->hf_name, ((const rlx_synth_tensor *)b)->hf_name);
}

rlx_status rlx_synth_tensor_list(const rlx_synth_shape *s, rlx_synth_tensor **out, size_t *n_out) {
    size_t per_layer = sizeof layer_tensors / sizeof layer_tensors[0];
    size_t cap = 4 + (size_t)s->n_layer * per_layer, n = 0;
    rlx_synth_tensor *t = calloc(cap, sizeof *t);
    if (!t) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory for %zu tensors", cap);
    char name[64], hf[96];
    /* generate_extra_tensors comes before the checkpoint's own tensors. */
    if (s->rope_factor > 0) set_tensor(&t[n++], "rope_freqs.weight", "", s->head_dim / 2, 0, RLX_SYNTH_ROPE_FREQS);
    size_t first_hf = n;
    set_tensor(&t[n++], "token_embd.weight", "model.embed_tokens.weight", s->n_embd, s->n_vocab, RLX_SYNTH_RANDOM);
    for (uint32_t il = 0; il < s->n_layer; il++) {
        for (size_t k = 0; k < per_layer; k++) {
            const layer_tensor *lt = &layer_tensors[k];
            if (lt->qk_norm_only && !s->qk_norm) continue;
            snprintf(name, sizeof name, "blk.%u.%s.weight", il, lt->gguf);
            snprintf(hf, sizeof hf, "model.layers.%u.%s.weight", il, lt->hf);
            set_tensor(&t[n++], name, hf, dim_of(s, lt->ne0), lt->ne1 == D_ONE ? 0 : dim_of(s, lt->ne1), lt->init);
        }
    }
    set_tensor(&t[n++], "output_norm.weight", "model.norm.weight", s->n_embd, 0, RLX_SYNTH_ONES);
    if (!s->tied) set_tensor(&t[n++], "output.weight", "lm_head.weight", s->n_embd, s->n_vocab, RLX_SYNTH_RANDOM);
    qsort(t + first_hf, n - first_hf, sizeof *t, by_hf_name);
    *out = t;
    *n_out = n;
    return NULL;
}

void rlx_synth_rope_factors(const rlx_synth_shape *s, float *out) {
    const double pi = 3.14159265358979323846;
    double low_wavelen = s->rope_orig_ctx / s->rope_low, high_wavelen = s->rope_orig_ctx / s->rope_high;
    for (uint32_t i = 0; i < s->head_dim / 2; i++) {
        double freq = 1.0 / pow(s->rope_base, (double)(2 * i) / s->head_dim), wavelen = 2 * pi / freq, f;
        if (wavelen < high_wavelen) {
            f = 1.0;
        } else if (wavelen > low_wavelen) {
            f = s->rope_factor;
        } else {
            double smooth = (s->rope_orig_ctx / wavelen - s->rope_low) / (s->rope_high - s->rope_low);
            f = 1.0 / ((1.0 - smooth) / s->rope_factor + smooth);
        }
        out[i] = (float)f;
    }
}

uint64_t rlx_synth_param_count(const rlx_synth_shape *s) {
    uint64_t n = (uint64_t)s->n_embd * s->n_vocab * (s->tied ? 1 : 2) + s->n_embd;
    if (s->rope_factor > 0) n += s->head_dim / 2;
    for (size_t k = 0; k < sizeof layer_tensors / sizeof layer_tensors[0]; k++) {
        const layer_tensor *lt = &layer_tensors[k];
        if (!lt->qk_norm_only || s->qk_norm) n += (uint64_t)s->n_layer * dim_of(s, lt->ne0) * dim_of(s, lt->ne1);
    }
    return n;
}
