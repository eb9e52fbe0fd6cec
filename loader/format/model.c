/* rlx_model: a GGUF file or an HF directory as one config plus one GGUF-named weight table, and
 * the check that the table holds every tensor the family needs in the shape the config implies
 * (the shapes llama.cpp's llama-model.cpp create_tensor calls expect). */
#include "loader/format/model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader/format/hf_convert.h"
#include "loader/format/safetensors.h"

typedef struct hf_state {
    rlx_safetensors *st; /* owned */
    rlx_hf_arena arena;  /* owned: names and transformed tensors */
} hf_state;

const rlx_weight *rlx_model_weight(const rlx_model *m, const char *name) {
    size_t lo = 0, hi = m->n_weights;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->weights[mid].name, name);
        if (!c) return &m->weights[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

uint64_t rlx_model_n_params(const rlx_model *m) {
    uint64_t n = 0;
    for (size_t i = 0; i < m->n_weights; i++) {
        const rlx_weight *w = &m->weights[i];
        n += w->ne[0] * w->ne[1] * w->ne[2] * w->ne[3];
    }
    return n;
}

void rlx_model_close(rlx_model *m) {
    if (!m) return;
    hf_state *hf = m->hf_;
    if (hf) {
        rlx_safetensors_close(hf->st);
        rlx_hf_arena_free(&hf->arena);
        free(hf);
    }
    rlx_gguf_close(m->gguf);
    free(m->weights);
    free(m->path);
    free(m);
}

/* ---- validation ---- */

/* One validation pass: which weights the family's config has claimed so far. */
typedef struct model_check {
    rlx_model *m;       /* borrowed; weights' ranks are set to the family's (expect) */
    uint8_t *used;      /* owned, m->n_weights flags */
} model_check;

static void format_ne(const uint64_t *ne, uint32_t n_dims, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < n_dims && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu64, d ? ", " : "", ne[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* Requires weight `name` with GGUF shape `ne` (n_dims dims; trailing unused dims are 1). A file
 * may store fewer dims when the last ones are 1 (llama-quantize writes ggml_n_dims, so qwen35moe's
 * [n_embd, 1] ffn_gate_inp_shexp becomes [n_embd]); the weight then takes the rank the family
 * reads, as llama.cpp's create_tensor sees the same ne either way. */
static rlx_status expect(model_check *cx, const char *name, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                         uint64_t ne2) {
    rlx_model *m = cx->m;
    uint64_t want[RLX_WEIGHT_MAX_DIMS] = {ne0, ne1, ne2, 1};
    for (uint32_t d = n_dims; d < RLX_WEIGHT_MAX_DIMS; d++) want[d] = 1;
    char ws[96], fs[96];
    format_ne(want, n_dims, ws, sizeof ws);
    const rlx_weight *w = rlx_model_weight(m, name);
    if (!w)
        return rlx_errorf(RLX_ERR_BAD_FILE, "tensor '%s' is missing (a %s model with this config needs it, shape %s)",
                          name, rlx_family_name(m->config.family), ws);
    cx->used[w - m->weights] = 1;
    for (uint32_t d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) {
        if (w->ne[d] != want[d]) {
            format_ne(w->ne, w->n_dims, fs, sizeof fs);
            return rlx_errorf(RLX_ERR_BAD_FILE, "tensor '%s': shape %s, but the config implies %s", name, fs, ws);
        }
    }
    if (w->n_dims < n_dims) m->weights[w - m->weights].n_dims = n_dims;
    return NULL;
}

static rlx_status expect_blk(model_check *cx, uint32_t il, const char *what, uint32_t n_dims, uint64_t ne0,
                             uint64_t ne1, uint64_t ne2) {
    char name[96];
    snprintf(name, sizeof name, "blk.%" PRIu32 ".%s", il, what);
    return expect(cx, name, n_dims, ne0, ne1, ne2);
}

static rlx_status expect_attention(model_check *cx, uint32_t il) {
    const rlx_model_config *c = &cx->m->config;
    uint64_t q = (uint64_t)c->n_head * c->head_dim, k = (uint64_t)c->n_head_kv * c->head_dim;
    uint64_t v = (uint64_t)c->n_head_kv * c->head_dim_v, o = (uint64_t)c->n_head * c->head_dim_v;
    /* Qwen3.5's attention is gated: q_proj holds the query and the output gate of every head. */
    uint64_t q_rows = rlx_family_is_qwen35(c->family) ? 2 * q : q;
    RLX_TRY(expect_blk(cx, il, "attn_q.weight", 2, c->n_embd, q_rows, 1));
    RLX_TRY(expect_blk(cx, il, "attn_k.weight", 2, c->n_embd, k, 1));
    RLX_TRY(expect_blk(cx, il, "attn_v.weight", 2, c->n_embd, v, 1));
    RLX_TRY(expect_blk(cx, il, "attn_output.weight", 2, o, c->n_embd, 1));
    if (c->family != RLX_FAMILY_LLAMA) {
        RLX_TRY(expect_blk(cx, il, "attn_q_norm.weight", 1, c->head_dim, 1, 1));
        RLX_TRY(expect_blk(cx, il, "attn_k_norm.weight", 1, c->head_dim, 1, 1));
    }
    return NULL;
}

/* Gated DeltaNet layer (llama.cpp LLM_ARCH_QWEN35 tensors): fused q/k/v projection of
 * 2 * key_dim * n_key_heads + inner rows, its causal conv, the output gate, decay and beta. */
static rlx_status expect_linear_attention(model_check *cx, uint32_t il) {
    const rlx_model_config *c = &cx->m->config;
    uint64_t inner = c->ssm_inner_size, nv = c->ssm_time_step_rank;
    uint64_t qkv = 2 * (uint64_t)c->ssm_state_size * c->ssm_group_count + inner;
    RLX_TRY(expect_blk(cx, il, "attn_qkv.weight", 2, c->n_embd, qkv, 1));
    RLX_TRY(expect_blk(cx, il, "attn_gate.weight", 2, c->n_embd, inner, 1));
    RLX_TRY(expect_blk(cx, il, "ssm_conv1d.weight", 2, c->ssm_conv_kernel, qkv, 1));
    RLX_TRY(expect_blk(cx, il, "ssm_dt.bias", 1, nv, 1, 1));
    RLX_TRY(expect_blk(cx, il, "ssm_a", 1, nv, 1, 1));
    RLX_TRY(expect_blk(cx, il, "ssm_alpha.weight", 2, c->n_embd, nv, 1));
    RLX_TRY(expect_blk(cx, il, "ssm_beta.weight", 2, c->n_embd, nv, 1));
    RLX_TRY(expect_blk(cx, il, "ssm_norm.weight", 1, inner / nv, 1, 1));
    return expect_blk(cx, il, "ssm_out.weight", 2, inner, c->n_embd, 1);
}

static rlx_status expect_ffn(model_check *cx, uint32_t il) {
    const rlx_model_config *c = &cx->m->config;
    if (c->family == RLX_FAMILY_QWEN35MOE) {
        /* the shared expert: a SwiGLU FFN whose output is scaled by sigmoid(ffn_gate_inp_shexp x) */
        RLX_TRY(expect_blk(cx, il, "ffn_gate_inp_shexp.weight", 2, c->n_embd, 1, 1));
        RLX_TRY(expect_blk(cx, il, "ffn_gate_shexp.weight", 2, c->n_embd, c->n_ff_shexp, 1));
        RLX_TRY(expect_blk(cx, il, "ffn_up_shexp.weight", 2, c->n_embd, c->n_ff_shexp, 1));
        RLX_TRY(expect_blk(cx, il, "ffn_down_shexp.weight", 2, c->n_ff_shexp, c->n_embd, 1));
    }
    if (c->family == RLX_FAMILY_QWEN3MOE || c->family == RLX_FAMILY_QWEN35MOE) {
        RLX_TRY(expect_blk(cx, il, "ffn_gate_inp.weight", 2, c->n_embd, c->n_expert, 1));
        RLX_TRY(expect_blk(cx, il, "ffn_gate_exps.weight", 3, c->n_embd, c->n_ff_exp, c->n_expert));
        RLX_TRY(expect_blk(cx, il, "ffn_up_exps.weight", 3, c->n_embd, c->n_ff_exp, c->n_expert));
        return expect_blk(cx, il, "ffn_down_exps.weight", 3, c->n_ff_exp, c->n_embd, c->n_expert);
    }
    RLX_TRY(expect_blk(cx, il, "ffn_gate.weight", 2, c->n_embd, c->n_ff, 1));
    RLX_TRY(expect_blk(cx, il, "ffn_up.weight", 2, c->n_embd, c->n_ff, 1));
    return expect_blk(cx, il, "ffn_down.weight", 2, c->n_ff, c->n_embd, 1);
}

static rlx_status expect_layer(model_check *cx, uint32_t il) {
    const rlx_model_config *c = &cx->m->config;
    RLX_TRY(expect_blk(cx, il, "attn_norm.weight", 1, c->n_embd, 1, 1));
    if (c->layer_kind[il] == RLX_LAYER_LINEAR_ATTENTION) RLX_TRY(expect_linear_attention(cx, il));
    else RLX_TRY(expect_attention(cx, il));
    /* Qwen3.5 calls its pre-FFN norm post_attention_norm; Gemma 3 has both plus post_ffw_norm. */
    if (rlx_family_is_qwen35(c->family)) {
        RLX_TRY(expect_blk(cx, il, "post_attention_norm.weight", 1, c->n_embd, 1, 1));
    } else {
        RLX_TRY(expect_blk(cx, il, "ffn_norm.weight", 1, c->n_embd, 1, 1));
    }
    if (c->family == RLX_FAMILY_GEMMA3) {
        RLX_TRY(expect_blk(cx, il, "post_attention_norm.weight", 1, c->n_embd, 1, 1));
        RLX_TRY(expect_blk(cx, il, "post_ffw_norm.weight", 1, c->n_embd, 1, 1));
    }
    return expect_ffn(cx, il);
}

static rlx_status expect_all(model_check *cx) {
    const rlx_model_config *c = &cx->m->config;
    RLX_TRY(expect(cx, "token_embd.weight", 2, c->n_embd, c->n_vocab, 1));
    RLX_TRY(expect(cx, "output_norm.weight", 1, c->n_embd, 1, 1));
    if (!c->tied_embeddings) RLX_TRY(expect(cx, "output.weight", 2, c->n_embd, c->n_vocab, 1));
    if (c->has_rope_freqs) RLX_TRY(expect(cx, "rope_freqs.weight", 1, c->n_rot / 2, 1, 1));
    for (uint32_t il = 0; il < c->n_layer; il++) RLX_TRY(expect_layer(cx, il));
    return NULL;
}

/* The layer index of `blk.N.<rest>`, or -1 for any other name. */
static int64_t block_of(const char *name) {
    if (strncmp(name, "blk.", 4) != 0) return -1;
    const char *p = name + 4;
    int64_t n = 0;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        n = n * 10 + (*p - '0');
        if (n > INT32_MAX) return -1;
    }
    return *p == '.' ? n : -1;
}

/* Tensors a file may hold that no family here runs yet, so they are not a sign of a mislabelled
 * model: multi-token-prediction layers (llama.cpp's `blk.N.nextn.*` tensors, and the
 * `nextn_predict_layers` blocks that follow the model's own layers). */
static bool is_ignored(const rlx_model_config *c, const char *name) {
    int64_t il = block_of(name);
    if (il >= 0 && strstr(name, ".nextn.")) return true;
    return il >= (int64_t)c->n_layer && il < (int64_t)c->n_layer + c->n_layer_nextn;
}

/* The reverse of expect_all: a tensor no part of the family's graph reads means the file is not
 * what its metadata says (a qwen3 labelled llama, a block count lower than the file's blocks),
 * and running it anyway would give silently different logits. */
static rlx_status check_all_used(const model_check *cx) {
    const rlx_model *m = cx->m;
    for (size_t i = 0; i < m->n_weights; i++) {
        const char *name = m->weights[i].name;
        if (cx->used[i] || is_ignored(&m->config, name)) continue;
        int64_t il = block_of(name);
        if (il >= (int64_t)m->config.n_layer)
            return rlx_errorf(RLX_ERR_BAD_FILE, "tensor '%s' belongs to layer %" PRId64 ", but the config's layer count is %" PRIu32
                              " (the block count does not match the file's tensors)",
                              name, il, m->config.n_layer);
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "tensor '%s' is not used by a %s model with this config (is the architecture or the "
                          "config right?)",
                          name, rlx_family_name(m->config.family));
    }
    return NULL;
}

/* Takes the ignored tensors (multi-token prediction) out of the weight table, so nothing
 * downstream sees them: a backend session uploads m->weights, and an MTP block is a whole
 * attention + FFN layer of memory that no graph reads. The table stays sorted. */
static void drop_ignored(rlx_model *m) {
    size_t kept = 0;
    for (size_t i = 0; i < m->n_weights; i++)
        if (!is_ignored(&m->config, m->weights[i].name)) m->weights[kept++] = m->weights[i];
    m->n_weights = kept;
}

/* Every tensor the family needs is present in its shape, and every tensor present is needed. */
static rlx_status validate(rlx_model *m) {
    model_check cx = {.m = m, .used = calloc(m->n_weights ? m->n_weights : 1, 1)};
    if (!cx.used) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate %zu weight flags", m->n_weights);
    rlx_status s = expect_all(&cx);
    if (!s) s = check_all_used(&cx);
    free(cx.used);
    return s;
}

/* ---- sources ---- */

static int cmp_weight_name(const void *a, const void *b) {
    return strcmp(((const rlx_weight *)a)->name, ((const rlx_weight *)b)->name);
}

static rlx_status gguf_weights(rlx_model *m) {
    const rlx_gguf *g = m->gguf;
    m->weights = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *m->weights);
    if (!m->weights) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate %" PRIu64 " weights", g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const rlx_gguf_tensor *t = &g->tensors[i];
        rlx_weight *w = &m->weights[i];
        *w = (rlx_weight){.name = t->name.s, .type = t->type, .n_dims = t->n_dims, .nbytes = t->nbytes, .data = t->data};
        for (int d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) w->ne[d] = d < RLX_GGUF_MAX_DIMS ? t->ne[d] : 1;
    }
    m->n_weights = (size_t)g->n_tensors;
    qsort(m->weights, m->n_weights, sizeof *m->weights, cmp_weight_name);
    return NULL;
}

static rlx_status open_gguf(rlx_model *m) {
    m->source = RLX_MODEL_GGUF;
    RLX_TRY(rlx_gguf_open(m->path, &m->gguf));
    RLX_TRY(rlx_model_config_from_gguf(m->gguf, &m->config));
    return gguf_weights(m);
}

static rlx_status open_hf(rlx_model *m) {
    m->source = RLX_MODEL_HF_DIR;
    hf_state *hf = calloc(1, sizeof *hf);
    if (!hf) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate the HF loader state");
    m->hf_ = hf;
    size_t n = strlen(m->path) + sizeof "/config.json";
    char *cfg_path = malloc(n);
    if (!cfg_path) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot build the config.json path");
    snprintf(cfg_path, n, "%s/config.json", m->path);
    struct stat st;
    rlx_status s = NULL;
    if (stat(cfg_path, &st) != 0)
        s = rlx_errorf(RLX_ERR_NOT_FOUND, "directory '%s' has no config.json (an HF model directory needs one)",
                       m->path);
    if (!s) s = rlx_model_config_from_hf_file(cfg_path, &m->config);
    free(cfg_path);
    if (s) return s;
    RLX_TRY(rlx_safetensors_open(m->path, &hf->st));
    return rlx_hf_convert(hf->st, &m->config, &hf->arena, &m->weights, &m->n_weights);
}

rlx_status rlx_model_open(const char *path, rlx_model **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_model_open: NULL argument");
    struct stat st;
    if (stat(path, &st) != 0)
        return rlx_errorf(errno == ENOENT ? RLX_ERR_NOT_FOUND : RLX_ERR_IO, "model '%s': %s", path, strerror(errno));
    rlx_model *m = calloc(1, sizeof *m);
    if (!m) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate a model");
    m->path = strdup(path);
    rlx_status s = m->path ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot copy the model path");
    if (!s) s = S_ISDIR(st.st_mode) ? open_hf(m) : open_gguf(m);
    if (!s) s = validate(m);
    if (!s) drop_ignored(m);
    if (s) {
        rlx_model_close(m);
        return rlx_status_annotate(s, "model '%s'", path);
    }
    *out = m;
    return NULL;
}
