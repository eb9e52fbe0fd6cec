/* HF -> GGUF names and llama.cpp's converter transforms; see hf_convert.h for the list and the
 * sources. Shapes: safetensors lists dims outermost first, GGUF innermost first, so ne[i] =
 * shape[n_dims - 1 - i]. */
#include "loader/format/hf_convert.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/core/half.h"

/* ---- arena ---- */

static void *arena_alloc(rlx_hf_arena *a, size_t n) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        void **b = realloc(a->blocks, cap * sizeof *b);
        if (!b) return NULL;
        a->blocks = b;
        a->cap = cap;
    }
    void *p = malloc(n ? n : 1);
    if (p) a->blocks[a->n++] = p;
    return p;
}

static char *arena_strdup(rlx_hf_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

void rlx_hf_arena_free(rlx_hf_arena *a) {
    if (!a) return;
    for (size_t i = 0; i < a->n; i++) free(a->blocks[i]);
    free(a->blocks);
    *a = (rlx_hf_arena){0};
}

/* ---- names (gguf-py/gguf/tensor_mapping.py) ---- */

typedef struct name_pair {
    const char *hf;   /* after "model.layers.N." */
    const char *gguf; /* after "blk.N." */
} name_pair;

static const name_pair layer_common[] = {
    {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},           {"mlp.down_proj.weight", "ffn_down.weight"},
    {NULL, NULL},
};

/* llama, qwen3, qwen3moe: the norm before the FFN is HF's post_attention_layernorm. */
static const name_pair layer_pre_ffn_norm[] = {
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"}, /* qwen3moe router */
    {NULL, NULL},
};

/* gemma3 has four norms per layer: post_attention_layernorm is a real post-attention norm. */
static const name_pair layer_gemma3[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {NULL, NULL},
};

static const name_pair layer_qwen35[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    {"linear_attn.A_log", "ssm_a"},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
    {"linear_attn.norm.weight", "ssm_norm.weight"},
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
    {NULL, NULL},
};

/* qwen35moe's FFN: the router and the gated shared expert (its experts: parse_expert). */
static const name_pair layer_qwen35moe_ffn[] = {
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    {NULL, NULL},
};

static const name_pair global_names[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
    {NULL, NULL},
};

/* Prefixes of tensors the converter's text models drop (vision/audio towers, MTP heads). */
static const char *const skipped_prefixes[] = {
    "mtp.", "visual.", "model.visual.", "vision_tower.", "model.vision_tower.", "multi_modal_projector.",
    "model.multi_modal_projector.", "vision_model.", "audio_tower.",
};

/* Multimodal checkpoints nest the text model; the converter strips "language_model.". */
static const char *const nested_prefixes[][2] = {
    {"model.language_model.", "model."},
    {"language_model.model.", "model."},
    {"language_model.lm_head.", "lm_head."},
};

typedef enum { K_PLAIN, K_EXPERT, K_EXPERTS_GATE_UP, K_EXPERTS_DOWN } name_kind;

typedef struct hf_name {
    char gguf[192];
    int64_t layer; /* -1 for global tensors */
    name_kind kind;
    uint64_t expert; /* K_EXPERT */
    int proj;        /* K_EXPERT: 0 gate, 1 up, 2 down */
} hf_name;

static bool starts_with(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static const char *lookup(const name_pair *table, const char *hf) {
    for (; table->hf; table++)
        if (!strcmp(table->hf, hf)) return table->gguf;
    return NULL;
}

static const char *lookup_layer_name(rlx_family f, const char *rest) {
    const char *g = lookup(layer_common, rest);
    if (g) return g;
    if (f == RLX_FAMILY_GEMMA3) return lookup(layer_gemma3, rest);
    if (f == RLX_FAMILY_QWEN35) return lookup(layer_qwen35, rest);
    if (f == RLX_FAMILY_QWEN35MOE) {
        g = lookup(layer_qwen35, rest);
        return g ? g : lookup(layer_qwen35moe_ffn, rest);
    }
    g = lookup(layer_pre_ffn_norm, rest);
    if (g && !strcmp(g, "ffn_gate_inp.weight") && f != RLX_FAMILY_QWEN3MOE) return NULL;
    return g;
}

/* Parses a decimal number at *p (advancing it); false when there is none or it is absurd. */
static bool parse_index(const char **p, uint64_t *out) {
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9') return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT32_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return true;
}

/* "mlp.experts.E.{gate,up,down}_proj.weight" and the fused 3-D forms transformers 5 may write. */
static bool parse_expert(const char *rest, hf_name *out) {
    if (!starts_with(rest, "mlp.experts.")) return false;
    const char *p = rest + strlen("mlp.experts.");
    static const char *const projs[] = {"gate_proj.weight", "up_proj.weight", "down_proj.weight"};
    if (!strcmp(p, "gate_up_proj") || !strcmp(p, "gate_up_proj.weight")) {
        out->kind = K_EXPERTS_GATE_UP;
        return true;
    }
    if (!strcmp(p, "down_proj") || !strcmp(p, "down_proj.weight")) {
        out->kind = K_EXPERTS_DOWN;
        return true;
    }
    if (!parse_index(&p, &out->expert) || *p++ != '.') return false;
    for (int i = 0; i < 3; i++) {
        if (!strcmp(p, projs[i])) {
            out->kind = K_EXPERT;
            out->proj = i;
            return true;
        }
    }
    return false;
}

static const char *const expert_gguf[3] = {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"};

static rlx_status map_layer_name(rlx_family f, const char *hf, const char *p, hf_name *out) {
    uint64_t layer;
    if (!parse_index(&p, &layer) || *p++ != '.')
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "HF tensor '%s': expected model.layers.<N>.<name>", hf);
    out->layer = (int64_t)layer;
    const char *g = lookup_layer_name(f, p);
    if (!g && (f == RLX_FAMILY_QWEN3MOE || f == RLX_FAMILY_QWEN35MOE) && parse_expert(p, out)) {
        int proj = out->kind == K_EXPERT ? out->proj : out->kind == K_EXPERTS_DOWN ? 2 : 0;
        g = expert_gguf[proj];
    }
    if (!g)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "HF tensor '%s': no GGUF name for '%s' in a %s model", hf, p,
                          rlx_family_name(f));
    snprintf(out->gguf, sizeof out->gguf, "blk.%" PRIu64 ".%s", layer, g);
    return NULL;
}

static rlx_status map_name(rlx_family f, const char *hf, hf_name *out, bool *skip) {
    *out = (hf_name){.layer = -1, .kind = K_PLAIN};
    *skip = false;
    char norm[256];
    if (strlen(hf) >= sizeof norm)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "HF tensor name of %zu bytes is longer than rlx supports", strlen(hf));
    snprintf(norm, sizeof norm, "%s", hf);
    for (size_t i = 0; i < sizeof nested_prefixes / sizeof nested_prefixes[0]; i++) {
        if (starts_with(hf, nested_prefixes[i][0])) {
            snprintf(norm, sizeof norm, "%s%s", nested_prefixes[i][1], hf + strlen(nested_prefixes[i][0]));
            break;
        }
    }
    for (size_t i = 0; i < sizeof skipped_prefixes / sizeof skipped_prefixes[0]; i++)
        *skip |= starts_with(norm, skipped_prefixes[i]);
    *skip |= ends_with(norm, ".rotary_emb.inv_freq");
    if (*skip) return NULL;
    const char *g = lookup(global_names, norm);
    if (g) {
        snprintf(out->gguf, sizeof out->gguf, "%s", g);
        return NULL;
    }
    if (starts_with(norm, "model.layers.")) return map_layer_name(f, hf, norm + strlen("model.layers."), out);
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "HF tensor '%s': no GGUF name for it in a %s model", hf,
                      rlx_family_name(f));
}

rlx_status rlx_hf_map_name(rlx_family family, const char *name, char *out, size_t cap, bool *skip) {
    hf_name nm;
    RLX_TRY(map_name(family, name, &nm, skip));
    if (!*skip) snprintf(out, cap, "%s", nm.gguf);
    return NULL;
}

/* ---- element access ---- */

static size_t elem_size(uint32_t type) { return rlx_dtype_get(type)->type_size; }

static float load_f32(uint32_t type, const uint8_t *base, uint64_t i) {
    if (type == RLX_DTYPE_F32) {
        float v;
        memcpy(&v, base + i * 4, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, base + i * 2, 2);
    return type == RLX_DTYPE_F16 ? rlx_f16_to_f32(h) : rlx_bf16_to_f32(h);
}

/* ---- transforms ---- */

/* A permutation of the indices [0, n) of one axis. Identity unless set:
 *  - llama: LlamaModel.permute, rows of each of n_head heads go from [2][hd/2] to [hd/2][2];
 *  - tiled: _reorder_v_heads on [first, first + k*r*hd): [k][r][hd] -> [r][k][hd]. */
typedef struct axis_perm {
    uint64_t llama_heads;
    uint64_t first, k, r, hd;
} axis_perm;

static uint64_t perm_src(const axis_perm *p, uint64_t i, uint64_t n) {
    if (p->llama_heads) {
        uint64_t hd = n / p->llama_heads, h = i / hd, t = i % hd;
        return h * hd + (t % 2) * (hd / 2) + t / 2;
    }
    if (p->k && i >= p->first && i < p->first + p->k * p->r * p->hd) {
        uint64_t j = i - p->first, d = j % p->hd, t = j / p->hd;
        return p->first + ((t % p->k) * p->r + t / p->k) * p->hd + d;
    }
    return i;
}

static bool perm_is_identity(const axis_perm *p) { return !p->llama_heads && !p->k; }

static rlx_status perm_check(const char *name, const char *axis, const axis_perm *p, uint64_t n) {
    if (p->llama_heads && (n % p->llama_heads || (n / p->llama_heads) % 2))
        return rlx_errorf(RLX_ERR_BAD_FILE, "HF tensor '%s': %" PRIu64 " %s do not split into %" PRIu64
                          " heads of even size for the RoPE row permutation",
                          name, n, axis, p->llama_heads);
    if (p->k && p->first + p->k * p->r * p->hd > n)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "HF tensor '%s': %" PRIu64 " %s, but the value-head reorder needs %" PRIu64, name, n, axis,
                          p->first + p->k * p->r * p->hd);
    return NULL;
}

typedef enum { OP_COPY, OP_ADD_ONE, OP_NEG_EXP } elem_op;

typedef struct xspec {
    axis_perm rows, cols; /* over shape[0] and the product of the other dims */
    elem_op op;           /* computed ops produce F32 */
    bool squeeze;         /* drop size-1 dims (torch's squeeze()) */
} xspec;

static float apply_op(elem_op op, float v) {
    if (op == OP_ADD_ONE) return v + 1.0f;
    if (op == OP_NEG_EXP) return -expf(v);
    return v;
}

/* Qwen3.5 value-head reorder (_LinearAttentionVReorderBase.modify_tensors), when key and value
 * head counts differ: V rows of in_proj_qkv and conv1d, rows of in_proj_z/a/b, A_log and
 * dt_bias, columns of out_proj. */
static void qwen35_vreorder(const rlx_model_config *c, const char *hf, xspec *x) {
    uint64_t nk = c->ssm_group_count, nv = c->ssm_time_step_rank;
    if (!strstr(hf, "linear_attn.") || nk == nv) return;
    axis_perm p = {.k = nk, .r = nv / nk, .hd = c->ssm_inner_size / nv};
    uint64_t qk_rows = 2 * (uint64_t)c->ssm_state_size * nk;
    if (strstr(hf, ".in_proj_qkv.") || strstr(hf, ".conv1d")) p.first = qk_rows;
    else if (strstr(hf, ".in_proj_a.") || strstr(hf, ".in_proj_b.") || strstr(hf, ".A_log") || strstr(hf, ".dt_bias"))
        p.hd = 1;
    else if (!strstr(hf, ".in_proj_z.") && !strstr(hf, ".out_proj.")) return;
    if (strstr(hf, ".out_proj.")) x->cols = p;
    else x->rows = p;
}

static xspec spec_for(const rlx_model_config *c, const char *hf, const hf_name *nm) {
    xspec x = {0};
    switch (c->family) {
    case RLX_FAMILY_LLAMA:
        if (ends_with(nm->gguf, ".attn_q.weight")) x.rows.llama_heads = c->n_head;
        if (ends_with(nm->gguf, ".attn_k.weight")) x.rows.llama_heads = c->n_head_kv;
        break;
    case RLX_FAMILY_GEMMA3:
        if (ends_with(hf, "norm.weight")) x.op = OP_ADD_ONE;
        break;
    case RLX_FAMILY_QWEN35:
    case RLX_FAMILY_QWEN35MOE:
        if (ends_with(hf, "norm.weight") && !ends_with(hf, "linear_attn.norm.weight")) x.op = OP_ADD_ONE;
        if (ends_with(hf, ".A_log")) x.op = OP_NEG_EXP;
        x.squeeze = strstr(hf, "conv1d") != NULL;
        qwen35_vreorder(c, hf, &x);
        break;
    default: break;
    }
    return x;
}

static rlx_status set_shape(const rlx_st_tensor *t, bool squeeze, rlx_weight *w) {
    uint64_t dims[RLX_ST_MAX_DIMS];
    uint32_t n = 0;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!squeeze || t->shape[d] != 1) dims[n++] = t->shape[d];
    if (n == 0) dims[n++] = 1; /* a scalar is stored as one element, as gguf-py writes it */
    if (n > RLX_WEIGHT_MAX_DIMS)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "HF tensor '%s': %" PRIu32 " dims, GGUF holds at most %d", t->name, n,
                          RLX_WEIGHT_MAX_DIMS);
    w->n_dims = n;
    for (uint32_t i = 0; i < RLX_WEIGHT_MAX_DIMS; i++) w->ne[i] = i < n ? dims[n - 1 - i] : 1;
    return NULL;
}

/* An owned copy of t with rows/cols permuted and `op` applied (output F32 when op computes). */
static rlx_status materialise(rlx_hf_arena *a, const rlx_st_tensor *t, const xspec *x, rlx_weight *w) {
    uint64_t rows = t->n_dims ? t->shape[0] : 1, cols = rows ? t->n_elements / rows : 0;
    RLX_TRY(perm_check(t->name, "rows", &x->rows, rows));
    RLX_TRY(perm_check(t->name, "columns", &x->cols, cols));
    w->type = x->op == OP_COPY ? t->type : RLX_DTYPE_F32;
    size_t in_es = elem_size(t->type), out_es = elem_size(w->type);
    RLX_TRY(rlx_dtype_bytes(w->type, t->n_elements, t->name, &w->nbytes));
    if (w->nbytes > SIZE_MAX) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "HF tensor '%s' does not fit in memory", t->name);
    uint8_t *dst = arena_alloc(a, (size_t)w->nbytes);
    if (!dst) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "HF tensor '%s': cannot allocate %" PRIu64 " bytes", t->name, w->nbytes);
    bool whole_rows = x->op == OP_COPY && perm_is_identity(&x->cols);
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t sr = perm_src(&x->rows, r, rows);
        if (whole_rows) {
            memcpy(dst + r * cols * out_es, t->data + sr * cols * in_es, cols * in_es);
            continue;
        }
        for (uint64_t c = 0; c < cols; c++) {
            uint64_t si = sr * cols + perm_src(&x->cols, c, cols), di = r * cols + c;
            if (x->op == OP_COPY) {
                memcpy(dst + di * out_es, t->data + si * in_es, in_es);
            } else {
                float v = apply_op(x->op, load_f32(t->type, t->data, si));
                memcpy(dst + di * 4, &v, 4);
            }
        }
    }
    w->data = dst;
    return NULL;
}

/* ---- the weight table ---- */

typedef struct wlist {
    rlx_weight *v; /* malloc'ed */
    size_t n, cap;
} wlist;

static rlx_status wlist_push(wlist *l, const rlx_weight *w) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        rlx_weight *v = realloc(l->v, cap * sizeof *v);
        if (!v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot grow the weight table to %zu entries", cap);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *w;
    return NULL;
}

typedef struct conv {
    const rlx_model_config *c;
    rlx_hf_arena *a;
    wlist out;
    const rlx_st_tensor **experts; /* [n_layer][3][n_expert], NULL entries until seen; malloc'ed */
} conv;

static rlx_status add_weight(conv *cv, const char *name, rlx_weight *w) {
    w->name = arena_strdup(cv->a, name);
    if (!w->name) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot copy weight name '%s'", name);
    return wlist_push(&cv->out, w);
}

static rlx_status add_plain(conv *cv, const rlx_st_tensor *t, const hf_name *nm) {
    xspec x = spec_for(cv->c, t->name, nm);
    rlx_weight w = {0};
    RLX_TRY(set_shape(t, x.squeeze, &w));
    /* Borrow only naturally aligned data: the safetensors header length need not keep tensors
     * aligned, and backends read elements in place. */
    bool aligned = (uintptr_t)t->data % elem_size(t->type) == 0;
    if (x.op == OP_COPY && perm_is_identity(&x.rows) && perm_is_identity(&x.cols) && aligned) {
        w.type = t->type;
        w.nbytes = t->nbytes;
        w.data = t->data;
    } else {
        RLX_TRY(materialise(cv->a, t, &x, &w));
    }
    return add_weight(cv, nm->gguf, &w);
}

static const rlx_st_tensor **expert_slot(conv *cv, const hf_name *nm) {
    uint64_t ne = cv->c->n_expert;
    return &cv->experts[((uint64_t)nm->layer * 3 + (uint64_t)nm->proj) * ne + nm->expert];
}

/* One stacked tensor [n_expert][rows][cols] from the per-expert slices (or row ranges of fused
 * tensors): src[e] names expert e's source tensor and the first row of its slice. */
typedef struct stack_src {
    const rlx_st_tensor *t;
    uint64_t row0;
} stack_src;

static rlx_status stack_experts(conv *cv, const char *name, const stack_src *src, uint64_t rows, uint64_t cols) {
    uint64_t ne = cv->c->n_expert;
    rlx_weight w = {.type = src[0].t->type, .n_dims = 3, .ne = {cols, rows, ne, 1}};
    uint64_t n_el;
    if (__builtin_mul_overflow(rows * cols, ne, &n_el))
        return rlx_errorf(RLX_ERR_BAD_FILE, "'%s': stacked size overflows", name);
    RLX_TRY(rlx_dtype_bytes(w.type, n_el, name, &w.nbytes));
    size_t es = elem_size(w.type), slice = (size_t)(rows * cols) * es;
    uint8_t *dst = arena_alloc(cv->a, (size_t)w.nbytes);
    if (!dst) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "'%s': cannot allocate %" PRIu64 " bytes", name, w.nbytes);
    for (uint64_t e = 0; e < ne; e++)
        memcpy(dst + e * slice, src[e].t->data + src[e].row0 * cols * es, slice);
    w.data = dst;
    return add_weight(cv, name, &w);
}

/* Per-expert 2-D tensors of one layer and projection: all present, same shape and dtype. */
static rlx_status stack_layer_proj(conv *cv, uint64_t il, int proj) {
    uint64_t ne = cv->c->n_expert;
    const rlx_st_tensor **slot = &cv->experts[(il * 3 + (uint64_t)proj) * ne];
    bool any = false;
    for (uint64_t e = 0; e < ne; e++) any |= slot[e] != NULL;
    if (!any) return NULL;
    static const char *const hf_proj[3] = {"gate_proj", "up_proj", "down_proj"};
    stack_src *src = calloc(ne, sizeof *src);
    if (!src) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate the expert list");
    rlx_status s = NULL;
    for (uint64_t e = 0; e < ne && !s; e++) {
        const rlx_st_tensor *t = slot[e];
        if (!t)
            s = rlx_errorf(RLX_ERR_BAD_FILE, "HF checkpoint: model.layers.%" PRIu64 ".mlp.experts.%" PRIu64 ".%s.weight is missing",
                           il, e, hf_proj[proj]);
        else if (t->n_dims != 2 || t->type != slot[0]->type || t->shape[0] != slot[0]->shape[0] ||
                 t->shape[1] != slot[0]->shape[1])
            s = rlx_errorf(RLX_ERR_BAD_FILE, "HF tensor '%s': shape or dtype differs from expert 0's", t->name);
        else
            src[e] = (stack_src){t, 0};
    }
    char name[96];
    snprintf(name, sizeof name, "blk.%" PRIu64 ".%s", il, expert_gguf[proj]);
    if (!s) s = stack_experts(cv, name, src, slot[0]->shape[0], slot[0]->shape[1]);
    free(src);
    return s;
}

/* transformers 5's fused gate_up_proj [n_expert, 2*n_ff, n_embd]: gate is the first n_ff rows of
 * each expert, up the rest (Qwen2MoeModel.modify_tensors). */
static rlx_status split_gate_up(conv *cv, const rlx_st_tensor *t, const hf_name *nm) {
    uint64_t ne = cv->c->n_expert;
    if (t->n_dims != 3 || t->shape[0] != ne || t->shape[1] % 2)
        return rlx_errorf(RLX_ERR_BAD_FILE, "HF tensor '%s': expected [%" PRIu64 ", 2*n_ff, n_embd]", t->name, ne);
    uint64_t n_ff = t->shape[1] / 2, cols = t->shape[2];
    stack_src *src = calloc(ne, sizeof *src);
    if (!src) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate the expert list");
    rlx_status s = NULL;
    for (int half = 0; half < 2 && !s; half++) {
        for (uint64_t e = 0; e < ne; e++) {
            /* A view of expert e as rows [e*2*n_ff + half*n_ff, ...) of one [ne*2*n_ff][cols] matrix. */
            src[e] = (stack_src){t, e * 2 * n_ff + (uint64_t)half * n_ff};
        }
        char name[96];
        snprintf(name, sizeof name, "blk.%" PRId64 ".%s", nm->layer, expert_gguf[half]);
        s = stack_experts(cv, name, src, n_ff, cols);
    }
    free(src);
    return s;
}

static rlx_status add_rope_freqs(conv *cv) {
    uint64_t n = cv->c->head_dim / 2;
    float *v = arena_alloc(cv->a, n * sizeof *v);
    if (!v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate rope_freqs");
    rlx_hf_llama3_rope_freqs(cv->c, v);
    rlx_weight w = {.type = RLX_DTYPE_F32, .n_dims = 1, .ne = {n, 1, 1, 1}, .nbytes = n * sizeof *v, .data = v};
    return add_weight(cv, "rope_freqs.weight", &w);
}

static rlx_status add_tensor(conv *cv, const rlx_st_tensor *t) {
    hf_name nm;
    bool skip;
    RLX_TRY(map_name(cv->c->family, t->name, &nm, &skip));
    if (skip) return NULL;
    if (nm.layer >= (int64_t)cv->c->n_layer)
        return rlx_errorf(RLX_ERR_BAD_FILE, "HF tensor '%s': layer %" PRId64 " but the config has %" PRIu32 " layers",
                          t->name, nm.layer, cv->c->n_layer);
    if (!strcmp(nm.gguf, "output.weight") && cv->c->tied_embeddings) return NULL;
    switch (nm.kind) {
    case K_EXPERT:
        if (nm.expert >= cv->c->n_expert)
            return rlx_errorf(RLX_ERR_BAD_FILE, "HF tensor '%s': expert %" PRIu64 " but the config has %" PRIu32,
                              t->name, nm.expert, cv->c->n_expert);
        *expert_slot(cv, &nm) = t;
        return NULL;
    case K_EXPERTS_GATE_UP: return split_gate_up(cv, t, &nm);
    case K_EXPERTS_DOWN:
    case K_PLAIN: return add_plain(cv, t, &nm);
    }
    return NULL;
}

static int cmp_weight_name(const void *a, const void *b) {
    return strcmp(((const rlx_weight *)a)->name, ((const rlx_weight *)b)->name);
}

static rlx_status convert_all(conv *cv, const rlx_safetensors *st) {
    for (size_t i = 0; i < st->n_tensors; i++) RLX_TRY(add_tensor(cv, &st->tensors[i]));
    if (cv->experts)
        for (uint64_t il = 0; il < cv->c->n_layer; il++)
            for (int proj = 0; proj < 3; proj++) RLX_TRY(stack_layer_proj(cv, il, proj));
    if (cv->c->family == RLX_FAMILY_LLAMA && cv->c->has_rope_freqs) RLX_TRY(add_rope_freqs(cv));
    if (cv->out.n > 1) qsort(cv->out.v, cv->out.n, sizeof *cv->out.v, cmp_weight_name); /* empty: v may be NULL */
    for (size_t i = 1; i < cv->out.n; i++)
        if (!strcmp(cv->out.v[i - 1].name, cv->out.v[i].name))
            return rlx_errorf(RLX_ERR_BAD_FILE, "HF checkpoint: two tensors map to '%s'", cv->out.v[i].name);
    return NULL;
}

rlx_status rlx_hf_convert(const rlx_safetensors *st, const rlx_model_config *cfg, rlx_hf_arena *arena,
                          rlx_weight **out, size_t *n_out) {
    if (!st || !cfg || !arena || !out || !n_out)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_hf_convert: NULL argument");
    conv cv = {.c = cfg, .a = arena};
    if (cfg->family == RLX_FAMILY_QWEN3MOE || cfg->family == RLX_FAMILY_QWEN35MOE) {
        cv.experts = calloc((size_t)cfg->n_layer * 3 * cfg->n_expert, sizeof *cv.experts);
        if (!cv.experts) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate the expert table");
    }
    rlx_status s = convert_all(&cv, st);
    free(cv.experts);
    if (s) {
        free(cv.out.v);
        return s;
    }
    *out = cv.out.v;
    *n_out = cv.out.n;
    return NULL;
}

/* The converter's torch code, one float32 rounding per step: `base ** (arange(0, dim, 2) / dim)`;
 * `1.0 / x` and `2 * math.pi / freq` are Tensor.__rtruediv__, i.e. reciprocal(x) * scalar; Python
 * scalars meet float32 tensors as float32. */
void rlx_hf_llama3_rope_freqs(const rlx_model_config *c, float *out) {
    uint32_t dim = c->head_dim;
    double old_ctx = c->rope_orig_ctx, lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
    float low_wavelen = (float)(old_ctx / lo), high_wavelen = (float)(old_ctx / hi);
    float two_pi = (float)6.283185307179586 /* Python's 2 * math.pi */, span = (float)(hi - lo), factor = c->rope_scale_factor;
    for (uint32_t i = 0; i < dim / 2; i++) {
        float freq = (1.0f / powf(c->rope_base, (float)(2 * i) / (float)dim)) * 1.0f;
        float wavelen = (1.0f / freq) * two_pi;
        if (wavelen < high_wavelen) {
            out[i] = 1.0f;
        } else if (wavelen > low_wavelen) {
            out[i] = factor;
        } else {
            float smooth = ((1.0f / wavelen) * (float)old_ctx - (float)lo) / span;
            out[i] = 1.0f / ((1.0f - smooth) / factor + smooth);
        }
    }
}
