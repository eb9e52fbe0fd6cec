/* The --like table of `rlx synth`, and the tensors llama.cpp's converter writes for each family.
 *
 * Configs are the models' published config.json (Qwen/Qwen3-0.6B, -4B, -8B; meta-llama
 * Llama-3.2-1B, -3B, Llama-3.1-8B): hidden size, layers, heads, KV heads, head_dim, FFN size,
 * vocabulary, max_position_embeddings, rope_theta, rms_norm_eps, tie_word_embeddings, the llama3
 * rope_scaling block and the bos/eos ids. Llama-3.2-3B's numbers are also those in the llama-bpe
 * vocabulary fixture's metadata. Tensor names, shapes and generated tensors follow
 * convert_hf_to_gguf.py (Qwen3Model, LlamaModel) as the fixtures models/qwen3 and models/llama32
 * show them.
 *
 * Qwen3.5 (Qwen/Qwen3.5-0.8B, -9B, -35B-A3B): the text_config of each published config.json, as
 * mirrored in public code found through the search corpus (a Qwen3.5-0.8B config.json copy in a
 * C++ config test; "the real Qwen3.5-9B config" in a Python architecture test; a
 * Qwen3_5MoeForConditionalGeneration config.json copy and THUDM/slime
 * scripts/models/qwen3.5-35B-A3B.sh and qwen3.5-0.8B.sh for the 35B-A3B and 0.8B):
 *   0.8B: 24 layers, hidden 1024, FFN 3584, 8 heads / 2 KV heads of 256, linear attention 16 key /
 *         16 value heads of 128, tied embeddings;
 *   9B:   32 layers, hidden 4096, FFN 12288, 16 heads / 4 KV heads of 256, linear 16 / 32 heads of
 *         128, untied;
 *   35B-A3B: 40 layers, hidden 2048, 16 heads / 2 KV heads of 256, linear 16 / 32 heads of 128,
 *         256 experts of 512 (8 used) plus a shared expert of 512, no dense FFN, untied;
 *   all: conv kernel 4, full_attention_interval 4, rope_theta 1e7, partial_rotary_factor 0.25
 *   (64 of 256 dims rotated), mrope_section [11, 11, 10], rms_norm_eps 1e-6, vocab 248,320,
 *   max_position_embeddings 262,144.
 * Their GGUF form (tensor names, shapes, which tensors stay F32, the qwen35.* keys) is that of
 * the fixtures' models/qwen35 and models/qwen35moe files (llama.cpp's converter, --no-mtp), and
 * llama-model.cpp's LLM_ARCH_QWEN35 create_tensor shapes. The vocabulary is qwen2's (the qwen3
 * shapes') padded to 248,320, so the special ids are qwen2's <|im_end|> and <|endoftext|>. */
#include "synth_shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN3_VOCAB "ggml-vocab-qwen2.gguf"
#define LLAMA3_VOCAB "ggml-vocab-llama-bpe.gguf"
#define QWEN3_TEMPLATE "Qwen-Qwen3-0.6B.jinja"
#define QWEN35_TEMPLATE "Qwen3.5-4B.jinja"

/* The fields every Qwen3.5 shape shares (see the header comment). */
#define QWEN35_COMMON                                                                                              \
    .head_dim = 256, .n_vocab = 248320, .n_ctx = 262144, .rope_base = 1e7f, .rms_eps = 1e-6f, .qk_norm = true,     \
    .vocab_file = QWEN3_VOCAB, .template_file = QWEN35_TEMPLATE, .bos = -1, .eos = 151645, .pad = 151643,          \
    .full_attn_interval = 4, .ssm_conv_kernel = 4, .ssm_k_heads = 16, .ssm_k_dim = 128, .ssm_v_dim = 128,          \
    .partial_rotary = 0.25f, .rope_sections = {11, 11, 10, 0}, .pre = "qwen35"

static const rlx_synth_shape shapes[] = {
    {.like = "qwen3-0.6b", .arch = "qwen3", .name = "Qwen3 0.6B", .basename = "Qwen3", .size_label = "0.6B",
     .n_layer = 28, .n_embd = 1024, .n_head = 16, .n_head_kv = 8, .head_dim = 128, .n_ff = 3072, .n_vocab = 151936,
     .n_ctx = 40960, .rope_base = 1e6f, .rms_eps = 1e-6f, .tied = true, .qk_norm = true, .rope_factor = 0,
     .rope_low = 0, .rope_high = 0, .rope_orig_ctx = 0, .vocab_file = QWEN3_VOCAB, .template_file = QWEN3_TEMPLATE,
     .bos = 151643, .eos = 151645, .pad = 151643, .add_bos = false},
    {.like = "qwen3-4b", .arch = "qwen3", .name = "Qwen3 4B", .basename = "Qwen3", .size_label = "4B",
     .n_layer = 36, .n_embd = 2560, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 9728, .n_vocab = 151936,
     .n_ctx = 40960, .rope_base = 1e6f, .rms_eps = 1e-6f, .tied = true, .qk_norm = true, .rope_factor = 0,
     .rope_low = 0, .rope_high = 0, .rope_orig_ctx = 0, .vocab_file = QWEN3_VOCAB, .template_file = QWEN3_TEMPLATE,
     .bos = 151643, .eos = 151645, .pad = 151643, .add_bos = false},
    {.like = "qwen3-8b", .arch = "qwen3", .name = "Qwen3 8B", .basename = "Qwen3", .size_label = "8B",
     .n_layer = 36, .n_embd = 4096, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 12288,
     .n_vocab = 151936, .n_ctx = 40960, .rope_base = 1e6f, .rms_eps = 1e-6f, .tied = false, .qk_norm = true,
     .rope_factor = 0, .rope_low = 0, .rope_high = 0, .rope_orig_ctx = 0, .vocab_file = QWEN3_VOCAB,
     .template_file = QWEN3_TEMPLATE, .bos = 151643, .eos = 151645, .pad = 151643, .add_bos = false},
    {.like = "llama3.2-1b", .arch = "llama", .name = "Llama 3.2 1B", .basename = "Llama-3.2", .size_label = "1B",
     .n_layer = 16, .n_embd = 2048, .n_head = 32, .n_head_kv = 8, .head_dim = 64, .n_ff = 8192, .n_vocab = 128256,
     .n_ctx = 131072, .rope_base = 500000.0f, .rms_eps = 1e-5f, .tied = true, .qk_norm = false,
     .rope_factor = 32.0f, .rope_low = 1.0f, .rope_high = 4.0f, .rope_orig_ctx = 8192, .vocab_file = LLAMA3_VOCAB,
     .template_file = NULL, .bos = 128000, .eos = 128001, .pad = -1, .add_bos = true},
    {.like = "llama3.2-3b", .arch = "llama", .name = "Llama 3.2 3B", .basename = "Llama-3.2", .size_label = "3B",
     .n_layer = 28, .n_embd = 3072, .n_head = 24, .n_head_kv = 8, .head_dim = 128, .n_ff = 8192, .n_vocab = 128256,
     .n_ctx = 131072, .rope_base = 500000.0f, .rms_eps = 1e-5f, .tied = true, .qk_norm = false,
     .rope_factor = 32.0f, .rope_low = 1.0f, .rope_high = 4.0f, .rope_orig_ctx = 8192, .vocab_file = LLAMA3_VOCAB,
     .template_file = NULL, .bos = 128000, .eos = 128001, .pad = -1, .add_bos = true},
    {.like = "llama3.1-8b", .arch = "llama", .name = "Llama 3.1 8B", .basename = "Llama-3.1", .size_label = "8B",
     .n_layer = 32, .n_embd = 4096, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 14336,
     .n_vocab = 128256, .n_ctx = 131072, .rope_base = 500000.0f, .rms_eps = 1e-5f, .tied = false, .qk_norm = false,
     .rope_factor = 8.0f, .rope_low = 1.0f, .rope_high = 4.0f, .rope_orig_ctx = 8192, .vocab_file = LLAMA3_VOCAB,
     .template_file = NULL, .bos = 128000, .eos = 128001, .pad = -1, .add_bos = true},
    {.like = "qwen3.5-0.8b", .arch = "qwen35", .name = "Qwen3.5 0.8B", .basename = "Qwen3.5", .size_label = "0.8B",
     .n_layer = 24, .n_embd = 1024, .n_head = 8, .n_head_kv = 2, .n_ff = 3584, .tied = true, .ssm_v_heads = 16,
     QWEN35_COMMON},
    {.like = "qwen3.5-9b", .arch = "qwen35", .name = "Qwen3.5 9B", .basename = "Qwen3.5", .size_label = "9B",
     .n_layer = 32, .n_embd = 4096, .n_head = 16, .n_head_kv = 4, .n_ff = 12288, .tied = false, .ssm_v_heads = 32,
     QWEN35_COMMON},
    {.like = "qwen3.5-35b-a3b", .arch = "qwen35moe", .name = "Qwen3.5 35B A3B", .basename = "Qwen3.5",
     .size_label = "35B-A3B", .n_layer = 40, .n_embd = 2048, .n_head = 16, .n_head_kv = 2, .n_ff = 0, .tied = false,
     .ssm_v_heads = 32, .n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512, .n_ff_shexp = 512, QWEN35_COMMON},
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
    t->ne[2] = 1;
    t->init = init;
}

static int by_hf_name(const void *a, const void *b) {
    return strcmp(((const rlx_synth_tensor *)a)->hf_name, ((const rlx_synth_tensor *)b)->hf_name);
}

/* ---- Qwen3.5 ---- */

/* One per-layer tensor of a hybrid shape: GGUF suffix (".weight" included, or not: ssm_a), HF
 * suffix (orders the list as the converter's sorted safetensors do), shape in units of the
 * config's numbers, init and whether the converter keeps it F32 although 2-D. */
typedef enum {
    H_ONE, H_EMBD, H_FF, H_QG, H_Q, H_KV, H_HEAD, H_CONV_K, H_CONV, H_VH, H_VDIM, H_VALUE, H_EXP, H_FF_EXP,
    H_FF_SHEXP,
} hdim;

typedef struct hybrid_tensor {
    const char *gguf, *hf;
    hdim ne[3]; /* trailing H_ONE dims are absent */
    rlx_synth_init init;
    bool force_f32;
} hybrid_tensor;

/* Every layer: the norms around the mixer (input_layernorm, post_attention_layernorm). */
static const hybrid_tensor hybrid_norms[] = {
    {"attn_norm.weight", "input_layernorm.weight", {H_EMBD}, RLX_SYNTH_ONES, false},
    {"post_attention_norm.weight", "post_attention_layernorm.weight", {H_EMBD}, RLX_SYNTH_ONES, false},
};

/* Gated DeltaNet layers (linear_attn.*). conv1d is squeezed to [kernel, channels]; A_log becomes
 * ssm_a = -exp(A_log). */
static const hybrid_tensor hybrid_linear[] = {
    {"ssm_a", "linear_attn.A_log", {H_VH}, RLX_SYNTH_MINUS_ONES, false},
    {"ssm_conv1d.weight", "linear_attn.conv1d.weight", {H_CONV_K, H_CONV}, RLX_SYNTH_RANDOM, true},
    {"ssm_dt.bias", "linear_attn.dt_bias", {H_VH}, RLX_SYNTH_ONES, false},
    {"ssm_alpha.weight", "linear_attn.in_proj_a.weight", {H_EMBD, H_VH}, RLX_SYNTH_RANDOM, false},
    {"ssm_beta.weight", "linear_attn.in_proj_b.weight", {H_EMBD, H_VH}, RLX_SYNTH_RANDOM, false},
    {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight", {H_EMBD, H_CONV}, RLX_SYNTH_RANDOM, false},
    {"attn_gate.weight", "linear_attn.in_proj_z.weight", {H_EMBD, H_VALUE}, RLX_SYNTH_RANDOM, false},
    {"ssm_norm.weight", "linear_attn.norm.weight", {H_VDIM}, RLX_SYNTH_ONES, false},
    {"ssm_out.weight", "linear_attn.out_proj.weight", {H_VALUE, H_EMBD}, RLX_SYNTH_RANDOM, false},
};

/* Gated attention layers (self_attn.*): q_proj yields the query and its gate, head by head. */
static const hybrid_tensor hybrid_attention[] = {
    {"attn_k_norm.weight", "self_attn.k_norm.weight", {H_HEAD}, RLX_SYNTH_ONES, false},
    {"attn_k.weight", "self_attn.k_proj.weight", {H_EMBD, H_KV}, RLX_SYNTH_RANDOM, false},
    {"attn_output.weight", "self_attn.o_proj.weight", {H_Q, H_EMBD}, RLX_SYNTH_RANDOM, false},
    {"attn_q_norm.weight", "self_attn.q_norm.weight", {H_HEAD}, RLX_SYNTH_ONES, false},
    {"attn_q.weight", "self_attn.q_proj.weight", {H_EMBD, H_QG}, RLX_SYNTH_RANDOM, false},
    {"attn_v.weight", "self_attn.v_proj.weight", {H_EMBD, H_KV}, RLX_SYNTH_RANDOM, false},
};

static const hybrid_tensor hybrid_dense_ffn[] = {
    {"ffn_down.weight", "mlp.down_proj.weight", {H_FF, H_EMBD}, RLX_SYNTH_RANDOM, false},
    {"ffn_gate.weight", "mlp.gate_proj.weight", {H_EMBD, H_FF}, RLX_SYNTH_RANDOM, false},
    {"ffn_up.weight", "mlp.up_proj.weight", {H_EMBD, H_FF}, RLX_SYNTH_RANDOM, false},
};

/* qwen35moe: experts stacked on ne[2]; the routers (ffn_gate_inp, the shared expert's gate of one
 * row, kept [n_embd, 1] by the converter) stay F32. */
static const hybrid_tensor hybrid_moe_ffn[] = {
    {"ffn_down_exps.weight", "mlp.experts.down_proj", {H_FF_EXP, H_EMBD, H_EXP}, RLX_SYNTH_RANDOM, false},
    {"ffn_gate_exps.weight", "mlp.experts.gate_proj", {H_EMBD, H_FF_EXP, H_EXP}, RLX_SYNTH_RANDOM, false},
    {"ffn_up_exps.weight", "mlp.experts.up_proj", {H_EMBD, H_FF_EXP, H_EXP}, RLX_SYNTH_RANDOM, false},
    {"ffn_gate_inp.weight", "mlp.gate.weight", {H_EMBD, H_EXP}, RLX_SYNTH_RANDOM, true},
    {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight", {H_FF_SHEXP, H_EMBD}, RLX_SYNTH_RANDOM, false},
    {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight", {H_EMBD, H_FF_SHEXP}, RLX_SYNTH_RANDOM, false},
    {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight", {H_EMBD, H_FF_SHEXP}, RLX_SYNTH_RANDOM, false},
    {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight", {H_EMBD, H_ONE}, RLX_SYNTH_RANDOM, true},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t hdim_of(const rlx_synth_shape *s, hdim d) {
    uint64_t k = (uint64_t)s->ssm_k_heads * s->ssm_k_dim, v = (uint64_t)s->ssm_v_heads * s->ssm_v_dim;
    switch (d) {
    case H_EMBD: return s->n_embd;
    case H_FF: return s->n_ff;
    case H_QG: return 2ull * s->n_head * s->head_dim;
    case H_Q: return (uint64_t)s->n_head * s->head_dim;
    case H_KV: return (uint64_t)s->n_head_kv * s->head_dim;
    case H_HEAD: return s->head_dim;
    case H_CONV_K: return s->ssm_conv_kernel;
    case H_CONV: return 2 * k + v; /* q, k and v channels through the conv */
    case H_VH: return s->ssm_v_heads;
    case H_VDIM: return s->ssm_v_dim;
    case H_VALUE: return v;
    case H_EXP: return s->n_expert;
    case H_FF_EXP: return s->n_ff_exp;
    case H_FF_SHEXP: return s->n_ff_shexp;
    default: return 1;
    }
}

static void add_hybrid(rlx_synth_tensor *t, size_t *n, const rlx_synth_shape *s, uint32_t il, const hybrid_tensor *h,
                       size_t count) {
    for (size_t k = 0; k < count; k++) {
        rlx_synth_tensor *o = &t[(*n)++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "blk.%u.%s", il, h[k].gguf);
        snprintf(o->hf_name, sizeof o->hf_name, "model.layers.%u.%s", il, h[k].hf);
        o->n_dims = 0;
        for (int d = 0; d < 3; d++) {
            o->ne[d] = hdim_of(s, h[k].ne[d]);
            if (h[k].ne[d] != H_ONE || (d == 1 && h[k].force_f32)) o->n_dims = (uint32_t)d + 1;
        }
        o->init = h[k].init;
        o->force_f32 = h[k].force_f32;
    }
}

static size_t hybrid_per_layer_max(void) {
    return COUNT(hybrid_norms) + COUNT(hybrid_linear) + COUNT(hybrid_attention) + COUNT(hybrid_moe_ffn);
}

static void hybrid_layers(const rlx_synth_shape *s, rlx_synth_tensor *t, size_t *n) {
    for (uint32_t il = 0; il < s->n_layer; il++) {
        add_hybrid(t, n, s, il, hybrid_norms, COUNT(hybrid_norms));
        if (rlx_synth_layer_is_full(s, il)) add_hybrid(t, n, s, il, hybrid_attention, COUNT(hybrid_attention));
        else add_hybrid(t, n, s, il, hybrid_linear, COUNT(hybrid_linear));
        if (s->n_expert) add_hybrid(t, n, s, il, hybrid_moe_ffn, COUNT(hybrid_moe_ffn));
        else add_hybrid(t, n, s, il, hybrid_dense_ffn, COUNT(hybrid_dense_ffn));
    }
}

/* ---- the list ---- */

rlx_status rlx_synth_tensor_list(const rlx_synth_shape *s, rlx_synth_tensor **out, size_t *n_out) {
    size_t per_layer = rlx_synth_is_hybrid(s) ? hybrid_per_layer_max() : sizeof layer_tensors / sizeof layer_tensors[0];
    size_t cap = 4 + (size_t)s->n_layer * per_layer, n = 0;
    rlx_synth_tensor *t = calloc(cap, sizeof *t);
    if (!t) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "synth: out of memory for %zu tensors", cap);
    char name[64], hf[96];
    /* generate_extra_tensors comes before the checkpoint's own tensors. */
    if (s->rope_factor > 0) set_tensor(&t[n++], "rope_freqs.weight", "", s->head_dim / 2, 0, RLX_SYNTH_ROPE_FREQS);
    size_t first_hf = n;
    set_tensor(&t[n++], "token_embd.weight", "model.embed_tokens.weight", s->n_embd, s->n_vocab, RLX_SYNTH_RANDOM);
    if (rlx_synth_is_hybrid(s)) hybrid_layers(s, t, &n);
    for (uint32_t il = 0; il < s->n_layer && !rlx_synth_is_hybrid(s); il++) {
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
    if (rlx_synth_is_hybrid(s)) {
        rlx_synth_tensor *t = NULL;
        size_t nt = 0;
        uint64_t total = 0;
        rlx_status st = rlx_synth_tensor_list(s, &t, &nt);
        for (size_t i = 0; !st && i < nt; i++) total += t[i].ne[0] * t[i].ne[1] * t[i].ne[2];
        rlx_status_free(st);
        free(t);
        return total;
    }
    uint64_t n = (uint64_t)s->n_embd * s->n_vocab * (s->tied ? 1 : 2) + s->n_embd;
    if (s->rope_factor > 0) n += s->head_dim / 2;
    for (size_t k = 0; k < sizeof layer_tensors / sizeof layer_tensors[0]; k++) {
        const layer_tensor *lt = &layer_tensors[k];
        if (!lt->qk_norm_only || s->qk_norm) n += (uint64_t)s->n_layer * dim_of(s, lt->ne0) * dim_of(s, lt->ne1);
    }
    return n;
}
