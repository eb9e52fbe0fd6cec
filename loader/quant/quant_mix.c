/* The file types `rlx quantize` offers and llama.cpp's per-tensor type choices for them. The rules
 * are the facts of llama.cpp src/llama-quant.cpp (tensor_allows_quantization,
 * llama_tensor_get_type_impl, tensor_type_fallback), restricted to the file types below and to a
 * quantization without importance matrix; the tensor order is llama_model_loader's
 * weight_name_comparer.
 *
 * Qwen3.5 (qwen35 / qwen35moe) needs no rule of its own, as in llama-quant.cpp: the Gated
 * DeltaNet's fused attn_qkv counts as attn_v (CAT_ATTN_QKV, in n_attention_wv with the gated
 * attention layers' attn_v), ssm_conv1d and the routers are never quantized, and attn_gate,
 * ssm_alpha, ssm_beta and ssm_out take the default type (tests/loader/test_quantize_mix.c checks
 * this against llama-quantize's files). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loader/quant/quantize.h"

static const rlx_quant_recipe recipes[] = {
    {"Q8_0", RLX_FTYPE_MOSTLY_Q8_0, RLX_DTYPE_Q8_0, false, "8.5 bits/weight"},
    {"Q4_0", RLX_FTYPE_MOSTLY_Q4_0, RLX_DTYPE_Q4_0, false, "4.5 bits/weight; output / tied embeddings Q6_K"},
    {"Q4_1", RLX_FTYPE_MOSTLY_Q4_1, RLX_DTYPE_Q4_1, false, "5.0 bits/weight; output / tied embeddings Q6_K"},
    {"Q5_0", RLX_FTYPE_MOSTLY_Q5_0, RLX_DTYPE_Q5_0, false, "5.5 bits/weight; output / tied embeddings Q6_K"},
    {"Q5_1", RLX_FTYPE_MOSTLY_Q5_1, RLX_DTYPE_Q5_1, false, "6.0 bits/weight; output / tied embeddings Q6_K"},
    {"Q4_K", RLX_FTYPE_MOSTLY_Q4_K_S, RLX_DTYPE_Q4_K, true, "every weight Q4_K (llama-quantize --pure)"},
    {"Q5_K", RLX_FTYPE_MOSTLY_Q5_K_S, RLX_DTYPE_Q5_K, true, "every weight Q5_K (llama-quantize --pure)"},
    {"Q6_K", RLX_FTYPE_MOSTLY_Q6_K, RLX_DTYPE_Q6_K, false, "6.56 bits/weight"},
    {"Q4_K_S", RLX_FTYPE_MOSTLY_Q4_K_S, RLX_DTYPE_Q4_K, false, "Q4_K; some attn_v / ffn_down Q5_K, output Q6_K"},
    {"Q4_K_M", RLX_FTYPE_MOSTLY_Q4_K_M, RLX_DTYPE_Q4_K, false, "Q4_K; half of attn_v / ffn_down Q6_K, output Q6_K"},
    {"Q5_K_S", RLX_FTYPE_MOSTLY_Q5_K_S, RLX_DTYPE_Q5_K, false, "Q5_K; output Q6_K"},
    {"Q5_K_M", RLX_FTYPE_MOSTLY_Q5_K_M, RLX_DTYPE_Q5_K, false, "Q5_K; half of attn_v / ffn_down Q6_K, output Q6_K"},
    {"F16", RLX_FTYPE_MOSTLY_F16, RLX_DTYPE_F16, false, "2-D weights F16, the rest kept"},
    {"BF16", RLX_FTYPE_MOSTLY_BF16, RLX_DTYPE_BF16, false, "2-D weights BF16, the rest kept"},
    {"F32", RLX_FTYPE_ALL_F32, RLX_DTYPE_F32, false, "2-D weights F32, the rest kept"},
};
#define N_RECIPES (sizeof recipes / sizeof recipes[0])

const rlx_quant_recipe *rlx_quant_recipe_find(const char *name) {
    for (size_t i = 0; name && i < N_RECIPES; i++)
        if (!strcasecmp(recipes[i].name, name)) return &recipes[i];
    return NULL;
}

const rlx_quant_recipe *rlx_quant_recipes(size_t *n) {
    if (n) *n = N_RECIPES;
    return recipes;
}

/* ---- tensor order ---- */

/* sscanf(name, "blk.%d.") as llama.cpp does it: the number after "blk.", or -1. */
static long layer_of(const char *name) {
    if (strncmp(name, "blk.", 4) != 0) return -1;
    char *end;
    long v = strtol(name + 4, &end, 10);
    return end == name + 4 ? -1 : v;
}

typedef struct order_item {
    long layer;
    const char *name; /* borrowed */
    size_t index;
} order_item;

static int order_cmp(const void *a, const void *b) {
    const order_item *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

void rlx_quant_sort_order(const char *const *names, size_t n, size_t *order) {
    order_item *items = malloc(n * sizeof *items + 1);
    if (!items) { /* keep the given order rather than fail: the order is cosmetic */
        for (size_t i = 0; i < n; i++) order[i] = i;
        return;
    }
    for (size_t i = 0; i < n; i++) items[i] = (order_item){layer_of(names[i]), names[i], i};
    qsort(items, n, sizeof *items, order_cmp);
    for (size_t i = 0; i < n; i++) order[i] = items[i].index;
    free(items);
}

/* ---- which tensors are quantized ---- */

/* tensor_allows_quantization: substrings whose tensors are never quantized. */
static const char *const never_quantized[] = {
    "_norm.weight",      "ffn_gate_inp.weight",   "ffn_gate_tid2eid.weight", "altup",
    "laurel",            "per_layer_model_proj",  "ssm_conv1d",              "shortconv.conv.weight",
    "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight",
    "time_mix_w1.weight", "time_mix_w2.weight",   "time_mix_v0.weight",      "time_mix_v1.weight",
    "time_mix_v2.weight", "time_mix_a0.weight",   "time_mix_a1.weight",      "time_mix_a2.weight",
    "time_mix_g1.weight", "time_mix_g2.weight",   "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",     "sam.pos_embd",
    "sam.neck.",         "sam.net_",              ".rel_pos",                ".patch_embd",
    ".patch_merger",     "a.rvq.codebook",        "mm.a.code_embd",
};

/* ggml_n_dims: trailing dimensions of 1 do not count. */
static uint32_t effective_dims(const rlx_weight *t) {
    uint32_t n = t->n_dims;
    while (n > 1 && t->ne[n - 1] == 1) n--;
    return n;
}

static bool allows_quantization(const rlx_weight *t) {
    if (effective_dims(t) < 2) return false;
    size_t len = strlen(t->name);
    if (len < 6 || strcmp(t->name + len - 6, "weight") != 0) return false;
    /* BERT's positional and token-type embeddings (LLM_TENSOR_POS_EMBD / TOKEN_TYPES). */
    if (!strcmp(t->name, "position_embd.weight") || !strcmp(t->name, "token_types.weight")) return false;
    for (size_t i = 0; i < sizeof never_quantized / sizeof never_quantized[0]; i++)
        if (strstr(t->name, never_quantized[i])) return false;
    return true;
}

/* ---- llama_tensor_get_type_impl ---- */

typedef enum {
    CAT_TOKEN_EMBD, CAT_ATTN_Q, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_QKV, CAT_ATTN_KV_B, CAT_ATTN_OUTPUT,
    CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OUTPUT, CAT_OTHER,
} category;

static category category_of(const char *name) {
    if (!strcmp(name, "output.weight")) return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight")) return CAT_TOKEN_EMBD;
    static const struct {
        const char *needle;
        category cat;
    } by_substring[] = {
        {"attn_qkv.weight", CAT_ATTN_QKV}, {"attn_kv_b.weight", CAT_ATTN_KV_B}, {"attn_v.weight", CAT_ATTN_V},
        {"attn_k.weight", CAT_ATTN_K},     {"attn_q.weight", CAT_ATTN_Q},       {"attn_output.weight", CAT_ATTN_OUTPUT},
        {"ffn_up", CAT_FFN_UP},            {"ffn_gate", CAT_FFN_GATE},          {"ffn_down", CAT_FFN_DOWN},
    };
    for (size_t i = 0; i < sizeof by_substring / sizeof by_substring[0]; i++)
        if (strstr(name, by_substring[i].needle)) return by_substring[i].cat;
    return CAT_OTHER;
}

typedef struct mix_state {
    const rlx_quant_model_info *m;
    rlx_ftype ftype;
    bool tied;           /* no output.weight: token_embd doubles as the output */
    bool falcon;
    bool is_70b;         /* llama's 80-layer GQA model (llama-model.cpp: LLM_TYPE_70B) */
    int n_attention_wv;  /* attn_v-like tensors in the file */
    int i_attention_wv;  /* of them, seen so far */
    int i_ffn_down;
} mix_state;

static bool use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

static uint32_t block_size_of(uint32_t type) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    return info ? info->block_size : 1;
}

static uint32_t output_type(const mix_state *s, const rlx_weight *t, uint32_t type) {
    if (s->falcon || t->ne[0] % block_size_of(type) != 0) return RLX_DTYPE_Q8_0;
    return type != RLX_DTYPE_Q8_0 ? RLX_DTYPE_Q6_K : type;
}

static uint32_t attn_v_type(mix_state *s, uint32_t type) {
    rlx_ftype f = s->ftype;
    if ((f == RLX_FTYPE_MOSTLY_Q4_K_M || f == RLX_FTYPE_MOSTLY_Q5_K_M) && use_more_bits(s->i_attention_wv, s->n_attention_wv))
        type = RLX_DTYPE_Q6_K;
    else if (f == RLX_FTYPE_MOSTLY_Q4_K_S && s->i_attention_wv < 4)
        type = RLX_DTYPE_Q5_K;
    if (s->is_70b && (type == RLX_DTYPE_Q3_K || type == RLX_DTYPE_Q4_K)) type = RLX_DTYPE_Q5_K;
    if (s->m->n_expert == 8) type = RLX_DTYPE_Q8_0;
    s->i_attention_wv++;
    return type;
}

/* layer_info: the layer is the running count of ffn_down tensors, or parsed from the name when
 * the model has experts (their tensors are not one per layer). */
static rlx_status ffn_down_type(mix_state *s, const rlx_weight *t, uint32_t type, uint32_t *out) {
    int n_layer = (int)s->m->n_layer, i_layer = s->i_ffn_down;
    if (s->m->n_expert > 1) {
        long l = layer_of(t->name);
        if (l < 0 || l >= n_layer)
            return rlx_errorf(RLX_ERR_BAD_FILE, "tensor '%s': layer %ld is outside [0, %d) (block_count)", t->name, l,
                              n_layer);
        i_layer = (int)l;
    }
    rlx_ftype f = s->ftype;
    if (f == RLX_FTYPE_MOSTLY_Q4_K_M) {
        if (s->falcon)
            type = i_layer < n_layer / 16 ? RLX_DTYPE_Q6_K : use_more_bits(i_layer, n_layer) ? RLX_DTYPE_Q5_K : RLX_DTYPE_Q4_K;
        else if (use_more_bits(i_layer, n_layer))
            type = RLX_DTYPE_Q6_K;
    } else if (f == RLX_FTYPE_MOSTLY_Q5_K_M && use_more_bits(i_layer, n_layer)) {
        type = RLX_DTYPE_Q6_K;
    } else if (f == RLX_FTYPE_MOSTLY_Q4_K_S && !s->falcon && i_layer < n_layer / 8) {
        type = RLX_DTYPE_Q5_K;
    }
    s->i_ffn_down++;
    *out = type;
    return NULL;
}

static rlx_status mix_type(mix_state *s, const rlx_weight *t, uint32_t type, uint32_t *out) {
    category c = category_of(t->name);
    if (c == CAT_OUTPUT || (s->tied && c == CAT_TOKEN_EMBD)) type = output_type(s, t, type);
    else if (c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B) type = attn_v_type(s, type);
    else if (c == CAT_ATTN_K && s->m->n_expert == 8) type = RLX_DTYPE_Q8_0;
    else if (c == CAT_FFN_DOWN) return ffn_down_type(s, t, type, out);
    else if (c == CAT_ATTN_OUTPUT && !s->falcon && s->m->n_expert == 8 &&
             (s->ftype == RLX_FTYPE_MOSTLY_Q4_K_S || s->ftype == RLX_FTYPE_MOSTLY_Q4_K_M))
        type = RLX_DTYPE_Q5_K;
    *out = type;
    return NULL;
}

/* tensor_type_fallback: rows that do not split into the type's blocks. llama.cpp defines no
 * fallback for the 32-element types and stops; rlx keeps such a tensor as it is instead. */
static uint32_t fallback_type(const rlx_weight *t, uint32_t type) {
    if (t->ne[0] % block_size_of(type) == 0) return type;
    uint32_t alt;
    switch (type) {
    case RLX_DTYPE_Q4_K: alt = RLX_DTYPE_Q5_0; break;
    case RLX_DTYPE_Q5_K: alt = RLX_DTYPE_Q5_1; break;
    case RLX_DTYPE_Q6_K: alt = RLX_DTYPE_Q8_0; break;
    default: return t->type;
    }
    return t->ne[0] % block_size_of(alt) == 0 ? alt : RLX_DTYPE_F16;
}

static bool is_quantized(uint32_t type) { return block_size_of(type) > 1; }

rlx_status rlx_quant_choose_types(const rlx_quant_recipe *r, const rlx_quant_model_info *m, const rlx_weight *tensors,
                                  size_t n, uint32_t *types_out) {
    if (!r || !m || (n && (!tensors || !types_out)))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "quantize: NULL recipe, model info or tensor list");
    mix_state s = {.m = m, .ftype = r->ftype, .tied = true};
    s.falcon = m->arch && !strcmp(m->arch, "falcon");
    s.is_70b = m->arch && !strcmp(m->arch, "llama") && m->n_layer == 80 && m->n_head != m->n_head_kv;
    for (size_t i = 0; i < n; i++) {
        category c = category_of(tensors[i].name);
        if (c == CAT_OUTPUT) s.tied = false;
        if (c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B) s.n_attention_wv++;
    }
    for (size_t i = 0; i < n; i++) {
        const rlx_weight *t = &tensors[i];
        uint32_t type = t->type;
        if (allows_quantization(t)) {
            type = r->default_type;
            if (is_quantized(type)) {
                if (!r->pure) RLX_TRY(mix_type(&s, t, type, &type));
                type = fallback_type(t, type);
            }
        }
        types_out[i] = type;
    }
    return NULL;
}
