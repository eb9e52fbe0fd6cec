/* rlx_model_open on small hand-built GGUF files and HF directories: a consistent model opens;
 * tensors that disagree with the config, missing tensors, unmappable names and missing files are
 * clear errors. Two converter transforms are checked against their definitions on tiny data:
 *  - LlamaModel.permute: rows of each head reshaped [2][hd/2] -> [hd/2][2], so with hd = 4 the
 *    stored rows are source rows 0, 2, 1, 3 of the head;
 *  - Gemma3 norms: Gemma3RMSNorm scales by (1 + w), the converter stores w + 1 (in float32).
 * The expected shapes in messages come from llama.cpp's tensor layout (ne[0] = input dim). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_builder.h"
#include "loader/core/dtype.h"
#include "loader/format/gguf.h"
#include "loader/format/model.h"
#include "test_safetensors_builder.h"
#include "test_util.h"

static const char *tmp; /* the test's directory (t_tmp_dir) */

/* ---- GGUF: a 1-layer qwen3 with n_embd 32, n_ff 64, 2 heads / 1 KV head of 16, vocab 8 ---- */

static const gb_f32_tensor qwen3_tensors[] = {
    {"token_embd.weight", 2, {32, 8}},        {"output_norm.weight", 1, {32, 1}},
    {"blk.0.attn_norm.weight", 1, {32, 1}},   {"blk.0.attn_q.weight", 2, {32, 32}},
    {"blk.0.attn_k.weight", 2, {32, 16}},     {"blk.0.attn_v.weight", 2, {32, 16}},
    {"blk.0.attn_output.weight", 2, {32, 32}}, {"blk.0.attn_q_norm.weight", 1, {16, 1}},
    {"blk.0.attn_k_norm.weight", 1, {16, 1}}, {"blk.0.ffn_norm.weight", 1, {32, 1}},
    {"blk.0.ffn_gate.weight", 2, {32, 64}},   {"blk.0.ffn_up.weight", 2, {32, 64}},
    {"blk.0.ffn_down.weight", 2, {64, 32}},
};
#define N_QWEN3 (sizeof qwen3_tensors / sizeof qwen3_tensors[0])

/* Writes the model with tensor `change` (if any) given shape `ne` instead, or left out when
 * `drop`; `extra` (if any) is appended. Returns the path. */
static const char *write_gguf(const char *file, const char *change, const uint64_t *ne, bool drop,
                              const gb_f32_tensor *extra) {
    gb_f32_tensor t[N_QWEN3 + 1];
    size_t n = 0;
    for (size_t i = 0; i < N_QWEN3; i++) {
        if (change && !strcmp(qwen3_tensors[i].name, change)) {
            if (drop) continue;
            t[n] = qwen3_tensors[i];
            t[n].ne[0] = ne[0];
            t[n].ne[1] = ne[1];
            n++;
            continue;
        }
        t[n++] = qwen3_tensors[i];
    }
    if (extra) t[n++] = *extra;
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, n, 9);
    gb_kv_str(&b, "general.architecture", "qwen3");
    gb_kv_u32(&b, "qwen3.block_count", 1);
    gb_kv_u32(&b, "qwen3.embedding_length", 32);
    gb_kv_u32(&b, "qwen3.feed_forward_length", 64);
    gb_kv_u32(&b, "qwen3.context_length", 128);
    gb_kv_u32(&b, "qwen3.attention.head_count", 2);
    gb_kv_u32(&b, "qwen3.attention.head_count_kv", 1);
    gb_kv_u32(&b, "qwen3.vocab_size", 8);
    gb_kv(&b, "qwen3.attention.layer_norm_rms_epsilon", RLX_GGUF_FLOAT32);
    gb_f32(&b, 1e-6f);
    gb_f32_infos(&b, t, n);
    gb_f32_data(&b, t, n, NULL);
    const char *path = t_tmp_path(file);
    t_write_file(path, b.buf, b.len);
    gb_free(&b);
    return path;
}

static void expect_open_error(const char *what, const char *path, int code, const char *needle) {
    rlx_model *m = NULL;
    rlx_status s = rlx_model_open(path, &m);
    if (s) printf("  %-26s -> %s\n", what, rlx_status_message(s));
    T_ERR(s, code, needle);
    T_CHECK(m == NULL, "%s: a failed open set *out", what);
    rlx_model_close(m);
}

static void gguf_cases(void) {
    rlx_model *m = NULL;
    const char *ok = write_gguf("ok.gguf", NULL, NULL, false, NULL);
    if (T_OK(rlx_model_open(ok, &m))) {
        T_CHECK(m->source == RLX_MODEL_GGUF && m->n_weights == N_QWEN3, "GGUF model: source %d, %zu weights",
                m->source, m->n_weights);
        T_CHECK(m->config.tied_embeddings, "no output.weight: embeddings are tied");
        const rlx_weight *w = rlx_model_weight(m, "blk.0.ffn_down.weight");
        T_CHECK(w && w->ne[0] == 64 && w->ne[1] == 32 && w->type == RLX_DTYPE_F32, "ffn_down lookup");
        T_CHECK(rlx_model_weight(m, "blk.0.nope") == NULL, "absent weight found");
        uint64_t params = 0;
        for (size_t i = 0; i < N_QWEN3; i++) params += qwen3_tensors[i].ne[0] * qwen3_tensors[i].ne[1];
        T_CHECK(rlx_model_n_params(m) == params, "n_params %llu, expected %llu",
                (unsigned long long)rlx_model_n_params(m), (unsigned long long)params);
        for (size_t i = 1; i < m->n_weights; i++)
            T_CHECK(strcmp(m->weights[i - 1].name, m->weights[i].name) < 0, "weights not sorted at %zu", i);
    }
    rlx_model_close(m);
    printf("  GGUF 1-layer qwen3: opens, %zu weights, sorted, lookups work\n", N_QWEN3);

    uint64_t k32[2] = {32, 32}, v9[2] = {32, 9};
    expect_open_error("GGUF wrong shape", write_gguf("k.gguf", "blk.0.attn_k.weight", k32, false, NULL),
                      RLX_ERR_BAD_FILE, "tensor 'blk.0.attn_k.weight': shape [32, 32], but the config implies [32, 16]");
    expect_open_error("GGUF vocab mismatch", write_gguf("v.gguf", "token_embd.weight", v9, false, NULL),
                      RLX_ERR_BAD_FILE, "tensor 'token_embd.weight': shape [32, 9], but the config implies [32, 8]");
    expect_open_error("GGUF missing tensor", write_gguf("m.gguf", "blk.0.ffn_up.weight", NULL, true, NULL),
                      RLX_ERR_BAD_FILE, "tensor 'blk.0.ffn_up.weight' is missing (a qwen3 model with this config needs it, shape [32, 64])");
    gb_f32_tensor bad_output = {"output.weight", 2, {32, 7}};
    expect_open_error("GGUF bad output", write_gguf("o.gguf", NULL, NULL, false, &bad_output), RLX_ERR_BAD_FILE,
                      "tensor 'output.weight': shape [32, 7], but the config implies [32, 8]");
    expect_open_error("missing file", t_tmp_path("absent.gguf"), RLX_ERR_NOT_FOUND, "absent.gguf");
    for (const char *f = "ok.gguf\0k.gguf\0v.gguf\0m.gguf\0o.gguf\0"; *f; f += strlen(f) + 1) unlink(t_tmp_path(f));
}

/* ---- HF directories ---- */

typedef struct hf_tensor {
    const char *name;
    uint32_t n_dims;
    uint64_t shape[3]; /* HF order; unused dims 0 */
} hf_tensor;

static uint64_t hf_elements(const hf_tensor *t) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) n *= t->shape[d];
    return n;
}

/* Writes config.json and model.safetensors (all F32; element i of tensor k = k * 1000 + i). */
static void write_hf(const char *config, const hf_tensor *t, size_t n) {
    t_write_file(t_tmp_path("config.json"), config, strlen(config));
    char header[16384];
    size_t used = (size_t)snprintf(header, sizeof header, "{");
    uint64_t off = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t el = hf_elements(&t[k]);
        used += (size_t)snprintf(header + used, sizeof header - used, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                                 k ? "," : "", t[k].name);
        for (uint32_t d = 0; d < t[k].n_dims; d++)
            used += (size_t)snprintf(header + used, sizeof header - used, "%s%llu", d ? "," : "",
                                     (unsigned long long)t[k].shape[d]);
        used += (size_t)snprintf(header + used, sizeof header - used, "],\"data_offsets\":[%llu,%llu]}",
                                 (unsigned long long)off, (unsigned long long)(off + el * 4));
        off += el * 4;
    }
    snprintf(header + used, sizeof header - used, "}");
    st_image im = st_build(header, (size_t)off, UINT64_MAX);
    uint8_t *data = im.bytes + 8 + strlen(header);
    off = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t el = hf_elements(&t[k]);
        for (uint64_t i = 0; i < el; i++) {
            float v = (float)(k * 1000 + i);
            memcpy(data + off + i * 4, &v, 4);
        }
        off += el * 4;
    }
    t_write_file(t_tmp_path("model.safetensors"), im.bytes, im.size);
    free(im.bytes);
}

/* Layer 0's input norm and attention projections on hidden 8 with 2 heads / 1 KV head of 4, as
 * every HF model below has them ([out, in] shapes). */
#define HF_ATTENTION_0                                                                                             \
    {"model.layers.0.input_layernorm.weight", 1, {8}}, {"model.layers.0.self_attn.q_proj.weight", 2, {8, 8}},      \
        {"model.layers.0.self_attn.k_proj.weight", 2, {4, 8}}, {"model.layers.0.self_attn.v_proj.weight", 2, {4, 8}}, \
        {"model.layers.0.self_attn.o_proj.weight", 2, {8, 8}}

/* llama: hidden 8, 2 heads / 1 KV head of 4, FFN 16, vocab 4, 1 layer, tied. */
static const hf_tensor llama_tensors[] = {
    {"model.embed_tokens.weight", 2, {4, 8}},
    {"model.norm.weight", 1, {8}},
    HF_ATTENTION_0,
    {"model.layers.0.post_attention_layernorm.weight", 1, {8}},
    {"model.layers.0.mlp.gate_proj.weight", 2, {16, 8}},
    {"model.layers.0.mlp.up_proj.weight", 2, {16, 8}},
    {"model.layers.0.mlp.down_proj.weight", 2, {8, 16}},
};
#define N_LLAMA (sizeof llama_tensors / sizeof llama_tensors[0])

#define LLAMA_CONFIG(hidden, tie)                                                                                  \
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"hidden_size\": " hidden ", \"intermediate_size\": 16,"  \
    " \"vocab_size\": 4, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4,"                  \
    " \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": " tie "}"

/* Row r of the stored tensor must be HF row perm[r % 4] of the same head (values k*1000 + i). */
static void check_permuted(const rlx_model *m, const char *name, size_t k) {
    static const uint64_t perm[4] = {0, 2, 1, 3};
    const rlx_weight *w = rlx_model_weight(m, name);
    T_CHECK(w && w->type == RLX_DTYPE_F32, "%s missing or not F32", name);
    if (!w) return;
    const float *v = w->data;
    uint64_t cols = w->ne[0], rows = w->ne[1], bad = 0;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t src = r / 4 * 4 + perm[r % 4];
        for (uint64_t c = 0; c < cols; c++) bad += v[r * cols + c] != (float)(k * 1000 + src * cols + c);
    }
    T_CHECK(bad == 0, "%s: %llu values not where LlamaModel.permute puts them", name, (unsigned long long)bad);
}

static void hf_llama_cases(void) {
    write_hf(LLAMA_CONFIG("8", "true"), llama_tensors, N_LLAMA);
    rlx_model *m = NULL;
    if (T_OK(rlx_model_open(tmp, &m))) {
        T_CHECK(m->source == RLX_MODEL_HF_DIR && m->n_weights == N_LLAMA, "HF llama: source %d, %zu weights",
                m->source, m->n_weights);
        check_permuted(m, "blk.0.attn_q.weight", 3);
        check_permuted(m, "blk.0.attn_k.weight", 4);
        const rlx_weight *v = rlx_model_weight(m, "blk.0.attn_v.weight");
        T_CHECK(v && ((const float *)v->data)[8] == 5008.0f, "attn_v is stored as is");
    }
    rlx_model_close(m);
    printf("  HF llama: q/k rows permuted per head as 0,2,1,3; v untouched\n");

    write_hf(LLAMA_CONFIG("16", "true"), llama_tensors, N_LLAMA);
    expect_open_error("HF config mismatch", tmp, RLX_ERR_BAD_FILE,
                      "tensor 'token_embd.weight': shape [8, 4], but the config implies [16, 4]");
    write_hf(LLAMA_CONFIG("8", "false"), llama_tensors, N_LLAMA);
    expect_open_error("HF untied, no lm_head", tmp, RLX_ERR_BAD_FILE, "tensor 'output.weight' is missing");
    hf_tensor extra[N_LLAMA + 1];
    memcpy(extra, llama_tensors, sizeof llama_tensors);
    extra[N_LLAMA] = (hf_tensor){"model.layers.0.mlp.foo.weight", 1, {8}};
    write_hf(LLAMA_CONFIG("8", "true"), extra, N_LLAMA + 1);
    expect_open_error("HF unknown tensor", tmp, RLX_ERR_UNSUPPORTED,
                      "HF tensor 'model.layers.0.mlp.foo.weight': no GGUF name for 'mlp.foo.weight' in a llama model");
    extra[N_LLAMA] = (hf_tensor){"model.layers.5.mlp.up_proj.weight", 2, {16, 8}};
    write_hf(LLAMA_CONFIG("8", "true"), extra, N_LLAMA + 1);
    expect_open_error("HF layer out of range", tmp, RLX_ERR_BAD_FILE, "layer 5 but the config has 1 layers");
    unlink(t_tmp_path("model.safetensors"));
    expect_open_error("HF no safetensors", tmp, RLX_ERR_NOT_FOUND, "neither model.safetensors.index.json");
    unlink(t_tmp_path("config.json"));
    expect_open_error("HF no config.json", tmp, RLX_ERR_NOT_FOUND, "has no config.json");
}

/* gemma3: every *norm.weight becomes w + 1. */
static void hf_gemma3_case(void) {
    const hf_tensor t[] = {
        {"model.embed_tokens.weight", 2, {4, 8}},
        {"model.norm.weight", 1, {8}},
        HF_ATTENTION_0,
        {"model.layers.0.self_attn.q_norm.weight", 1, {4}},
        {"model.layers.0.self_attn.k_norm.weight", 1, {4}},
        {"model.layers.0.post_attention_layernorm.weight", 1, {8}},
        {"model.layers.0.pre_feedforward_layernorm.weight", 1, {8}},
        {"model.layers.0.post_feedforward_layernorm.weight", 1, {8}},
        {"model.layers.0.mlp.gate_proj.weight", 2, {16, 8}},
        {"model.layers.0.mlp.up_proj.weight", 2, {16, 8}},
        {"model.layers.0.mlp.down_proj.weight", 2, {8, 16}},
    };
    write_hf("{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 1, \"hidden_size\": 8, \"intermediate_size\": 16,"
             " \"vocab_size\": 4, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4,"
             " \"sliding_window\": 4}",
             t, sizeof t / sizeof t[0]);
    static const struct {
        const char *gguf;
        size_t k;
    } norms[] = {{"output_norm.weight", 1},           {"blk.0.attn_norm.weight", 2},
                 {"blk.0.attn_q_norm.weight", 7},     {"blk.0.attn_k_norm.weight", 8},
                 {"blk.0.post_attention_norm.weight", 9}, {"blk.0.ffn_norm.weight", 10},
                 {"blk.0.post_ffw_norm.weight", 11}};
    rlx_model *m = NULL;
    if (T_OK(rlx_model_open(tmp, &m))) {
        for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
            const rlx_weight *w = rlx_model_weight(m, norms[i].gguf);
            T_CHECK(w && w->type == RLX_DTYPE_F32, "gemma3 %s missing or not F32", norms[i].gguf);
            if (!w) continue;
            const float *v = w->data;
            for (uint64_t j = 0; j < w->ne[0]; j++)
                T_CHECK(v[j] == (float)(norms[i].k * 1000 + j) + 1.0f, "gemma3 %s[%llu] = %g, expected w + 1",
                        norms[i].gguf, (unsigned long long)j, (double)v[j]);
        }
        const rlx_weight *q = rlx_model_weight(m, "blk.0.attn_q.weight");
        T_CHECK(q && ((const float *)q->data)[8] == 3008.0f, "gemma3 q is neither permuted nor shifted");
    }
    rlx_model_close(m);
    unlink(t_tmp_path("config.json"));
    unlink(t_tmp_path("model.safetensors"));
    printf("  HF gemma3: all 7 norms (q/k norms included) stored as w + 1\n");
}

/* qwen3moe: 2 experts of FFN size 4 on hidden 8. Per-expert tensors are stacked expert-major
 * (Qwen2MoeModel: torch.stack(dim=0)); transformers 5's fused gate_up_proj [E, 2F, D] splits into
 * gate = rows [0, F) and up = rows [F, 2F) of each expert. Element (e, r, c) of a stacked tensor
 * is element (r, c) of expert e. */
#define MOE_CONFIG                                                                                                 \
    "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 1, \"hidden_size\": 8, \"vocab_size\": 4,"             \
    " \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4, \"max_position_embeddings\": 64,"    \
    " \"rms_norm_eps\": 1e-6, \"num_experts\": 2, \"num_experts_per_tok\": 1, \"moe_intermediate_size\": 4,"         \
    " \"tie_word_embeddings\": false}"

static const hf_tensor moe_common[] = {
    {"model.embed_tokens.weight", 2, {4, 8}},
    {"lm_head.weight", 2, {4, 8}},
    {"model.norm.weight", 1, {8}},
    HF_ATTENTION_0,
    {"model.layers.0.self_attn.q_norm.weight", 1, {4}},
    {"model.layers.0.self_attn.k_norm.weight", 1, {4}},
    {"model.layers.0.post_attention_layernorm.weight", 1, {8}},
    {"model.layers.0.mlp.gate.weight", 2, {2, 8}},
};
#define N_MOE_COMMON (sizeof moe_common / sizeof moe_common[0])

/* Checks stacked tensor `name` ([cols, rows, 2] in GGUF order): expert e's (r, c) must be element
 * row0(e) * cols + r * cols + c of source tensor k(e) (values k * 1000 + i). */
static void check_stacked(const rlx_model *m, const char *name, uint64_t rows, uint64_t cols, const size_t k[2],
                          const uint64_t row0[2]) {
    const rlx_weight *w = rlx_model_weight(m, name);
    T_CHECK(w && w->n_dims == 3 && w->ne[0] == cols && w->ne[1] == rows && w->ne[2] == 2,
            "%s: expected ne [%llu, %llu, 2]", name, (unsigned long long)cols, (unsigned long long)rows);
    if (!w || w->ne[0] != cols || w->ne[1] != rows) return;
    const float *v = w->data;
    uint64_t bad = 0;
    for (uint64_t e = 0; e < 2; e++)
        for (uint64_t i = 0; i < rows * cols; i++)
            bad += v[e * rows * cols + i] != (float)(k[e] * 1000 + row0[e] * cols + i);
    T_CHECK(bad == 0, "%s: %llu values not where expert stacking puts them", name, (unsigned long long)bad);
}

static void hf_moe_cases(void) {
    hf_tensor t[N_MOE_COMMON + 6];
    memcpy(t, moe_common, sizeof moe_common);
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    char names[6][80];
    for (int e = 0; e < 2; e++)
        for (int p = 0; p < 3; p++) {
            snprintf(names[e * 3 + p], sizeof names[0], "model.layers.0.mlp.experts.%d.%s.weight", e, proj[p]);
            t[N_MOE_COMMON + (size_t)(e * 3 + p)] =
                (hf_tensor){names[e * 3 + p], 2, {p == 2 ? 8 : 4, p == 2 ? 4 : 8, 0}};
        }
    write_hf(MOE_CONFIG, t, N_MOE_COMMON + 6);
    rlx_model *m = NULL;
    if (T_OK(rlx_model_open(tmp, &m))) {
        size_t k0 = N_MOE_COMMON;
        check_stacked(m, "blk.0.ffn_gate_exps.weight", 4, 8, (size_t[2]){k0, k0 + 3}, (uint64_t[2]){0, 0});
        check_stacked(m, "blk.0.ffn_up_exps.weight", 4, 8, (size_t[2]){k0 + 1, k0 + 4}, (uint64_t[2]){0, 0});
        check_stacked(m, "blk.0.ffn_down_exps.weight", 8, 4, (size_t[2]){k0 + 2, k0 + 5}, (uint64_t[2]){0, 0});
        T_CHECK(rlx_model_weight(m, "output.weight") != NULL, "untied: lm_head becomes output.weight");
    }
    rlx_model_close(m);

    t[N_MOE_COMMON] = (hf_tensor){"model.layers.0.mlp.experts.gate_up_proj", 3, {2, 8, 8}};
    t[N_MOE_COMMON + 1] = (hf_tensor){"model.layers.0.mlp.experts.down_proj", 3, {2, 8, 4}};
    write_hf(MOE_CONFIG, t, N_MOE_COMMON + 2);
    m = NULL;
    if (T_OK(rlx_model_open(tmp, &m))) {
        size_t k = N_MOE_COMMON;
        /* Expert e's gate rows start at row e * 8 of the [16][8] view, its up rows 4 later. */
        check_stacked(m, "blk.0.ffn_gate_exps.weight", 4, 8, (size_t[2]){k, k}, (uint64_t[2]){0, 8});
        check_stacked(m, "blk.0.ffn_up_exps.weight", 4, 8, (size_t[2]){k, k}, (uint64_t[2]){4, 12});
        check_stacked(m, "blk.0.ffn_down_exps.weight", 8, 4, (size_t[2]){k + 1, k + 1}, (uint64_t[2]){0, 8});
    }
    rlx_model_close(m);

    write_hf(MOE_CONFIG, t, N_MOE_COMMON); /* no experts at all */
    expect_open_error("HF MoE without experts", tmp, RLX_ERR_BAD_FILE, "tensor 'blk.0.ffn_gate_exps.weight' is missing");
    memcpy(t, moe_common, sizeof moe_common);
    for (int p = 0; p < 3; p++) /* expert 1 missing */
        t[N_MOE_COMMON + (size_t)p] = (hf_tensor){names[p], 2, {p == 2 ? 8 : 4, p == 2 ? 4 : 8, 0}};
    write_hf(MOE_CONFIG, t, N_MOE_COMMON + 3);
    expect_open_error("HF MoE missing expert", tmp, RLX_ERR_BAD_FILE,
                      "model.layers.0.mlp.experts.1.gate_proj.weight is missing");
    unlink(t_tmp_path("config.json"));
    unlink(t_tmp_path("model.safetensors"));
    printf("  HF qwen3moe: per-expert tensors stacked, fused gate_up_proj split, missing experts reported\n");
}

/* llama-quantize writes ggml_n_dims, so fixture qwen35moe-Q4_K_M.gguf stores the shared expert's
 * gate as [256] where the converter's F16 file has [256, 1]; both open with the rank the family
 * reads (2), so a graph sees one shape whatever wrote the file. */
static void trailing_one_dims(void) {
    const char *q4 = "models/qwen35moe/qwen35moe-Q4_K_M.gguf", *f16 = "models/qwen35moe/qwen35moe-F16.gguf";
    t_require_fixture(q4);
    t_require_fixture(f16);
    rlx_gguf *g = NULL;
    if (T_OK(rlx_gguf_open(t_fixture(q4), &g))) {
        const rlx_gguf_tensor *t = rlx_gguf_find_tensor(g, "blk.0.ffn_gate_inp_shexp.weight");
        T_CHECK(t && t->n_dims == 1 && t->ne[0] == 256, "the Q4_K_M fixture's shared-expert gate is no longer 1-D");
    }
    rlx_gguf_close(g);
    for (const char *f = q4;; f = f16) {
        rlx_model *m = NULL;
        if (T_OK(rlx_model_open(t_fixture(f), &m))) {
            const rlx_weight *w = rlx_model_weight(m, "blk.0.ffn_gate_inp_shexp.weight");
            T_CHECK(w && w->n_dims == 2 && w->ne[0] == 256 && w->ne[1] == 1, "%s: shared-expert gate rank %u, want 2", f,
                    w ? w->n_dims : 0);
        }
        rlx_model_close(m);
        if (f == f16) break;
    }
    printf("  qwen35moe ffn_gate_inp_shexp: [256] in the Q4_K_M file, [256, 1] in the F16 one, rank 2 once open\n");
}

int main(void) {
    tmp = t_tmp_dir("rlx-model");
    gguf_cases();
    hf_llama_cases();
    hf_gemma3_case();
    hf_moe_cases();
    t_tmp_dir_remove();
    trailing_one_dims();
    return t_summary("test_model_open");
}
