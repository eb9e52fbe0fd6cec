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
#include "loader/dtype.h"
#include "loader/gguf.h"
#include "loader/model.h"
#include "test_safetensors_builder.h"
#include "test_util.h"

static char tmp[64];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, 512, "%s/%s", tmp, name);
    return b;
}

/* ---- GGUF: a 1-layer qwen3 with n_embd 32, n_ff 64, 2 heads / 1 KV head of 16, vocab 8 ---- */

typedef struct tdesc {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[2];
} tdesc;

static const tdesc qwen3_tensors[] = {
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
static const char *write_gguf(const char *file, const char *change, const uint64_t *ne, bool drop, const tdesc *extra) {
    tdesc t[N_QWEN3 + 1];
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
    uint64_t off = 0, sizes[N_QWEN3 + 1];
    for (size_t i = 0; i < n; i++) {
        gb_tensor(&b, t[i].name, t[i].n_dims, t[i].ne, RLX_DTYPE_F32, off);
        sizes[i] = t[i].ne[0] * (t[i].n_dims > 1 ? t[i].ne[1] : 1) * 4;
        off += (sizes[i] + 31) / 32 * 32;
    }
    gb_pad(&b, 32);
    for (size_t i = 0; i < n; i++) {
        gb_zeros(&b, (size_t)sizes[i]);
        gb_pad(&b, 32);
    }
    const char *path = tmp_path(file);
    st_write_file(path, b.buf, b.len);
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
    tdesc bad_output = {"output.weight", 2, {32, 7}};
    expect_open_error("GGUF bad output", write_gguf("o.gguf", NULL, NULL, false, &bad_output), RLX_ERR_BAD_FILE,
                      "tensor 'output.weight': shape [32, 7], but the config implies [32, 8]");
    expect_open_error("missing file", tmp_path("absent.gguf"), RLX_ERR_NOT_FOUND, "absent.gguf");
    for (const char *f = "ok.gguf\0k.gguf\0v.gguf\0m.gguf\0o.gguf\0"; *f; f += strlen(f) + 1) unlink(tmp_path(f));
}

/* ---- HF directories ---- */

typedef struct hf_tensor {
    const char *name;
    uint32_t n_dims;
    uint64_t shape[2]; /* HF order */
} hf_tensor;

/* Writes config.json and model.safetensors (all F32; element i of tensor k = k * 1000 + i). */
static void write_hf(const char *config, const hf_tensor *t, size_t n) {
    st_write_file(tmp_path("config.json"), config, strlen(config));
    char header[8192];
    size_t used = (size_t)snprintf(header, sizeof header, "{");
    uint64_t off = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t el = t[k].shape[0] * (t[k].n_dims > 1 ? t[k].shape[1] : 1);
        if (t[k].n_dims > 1)
            used += (size_t)snprintf(header + used, sizeof header - used,
                                     "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%llu,%llu],\"data_offsets\":[%llu,%llu]}",
                                     k ? "," : "", t[k].name, (unsigned long long)t[k].shape[0],
                                     (unsigned long long)t[k].shape[1], (unsigned long long)off,
                                     (unsigned long long)(off + el * 4));
        else
            used += (size_t)snprintf(header + used, sizeof header - used,
                                     "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}",
                                     k ? "," : "", t[k].name, (unsigned long long)t[k].shape[0],
                                     (unsigned long long)off, (unsigned long long)(off + el * 4));
        off += el * 4;
    }
    snprintf(header + used, sizeof header - used, "}");
    st_image im = st_build(header, (size_t)off, UINT64_MAX);
    float *data = (float *)(void *)(im.bytes + 8 + strlen(header));
    off = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t el = t[k].shape[0] * (t[k].n_dims > 1 ? t[k].shape[1] : 1);
        for (uint64_t i = 0; i < el; i++) {
            float v = (float)(k * 1000 + i);
            memcpy((uint8_t *)data + off + i * 4, &v, 4);
        }
        off += el * 4;
    }
    st_write_file(tmp_path("model.safetensors"), im.bytes, im.size);
    free(im.bytes);
}

/* llama: hidden 8, 2 heads / 1 KV head of 4, FFN 16, vocab 4, 1 layer, tied. */
static const hf_tensor llama_tensors[] = {
    {"model.embed_tokens.weight", 2, {4, 8}},
    {"model.norm.weight", 1, {8, 1}},
    {"model.layers.0.input_layernorm.weight", 1, {8, 1}},
    {"model.layers.0.self_attn.q_proj.weight", 2, {8, 8}},
    {"model.layers.0.self_attn.k_proj.weight", 2, {4, 8}},
    {"model.layers.0.self_attn.v_proj.weight", 2, {4, 8}},
    {"model.layers.0.self_attn.o_proj.weight", 2, {8, 8}},
    {"model.layers.0.post_attention_layernorm.weight", 1, {8, 1}},
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
    extra[N_LLAMA] = (hf_tensor){"model.layers.0.mlp.foo.weight", 1, {8, 1}};
    write_hf(LLAMA_CONFIG("8", "true"), extra, N_LLAMA + 1);
    expect_open_error("HF unknown tensor", tmp, RLX_ERR_UNSUPPORTED,
                      "HF tensor 'model.layers.0.mlp.foo.weight': no GGUF name for 'mlp.foo.weight' in a llama model");
    extra[N_LLAMA] = (hf_tensor){"model.layers.5.mlp.up_proj.weight", 2, {16, 8}};
    write_hf(LLAMA_CONFIG("8", "true"), extra, N_LLAMA + 1);
    expect_open_error("HF layer out of range", tmp, RLX_ERR_BAD_FILE, "layer 5 but the config has 1 layers");
    unlink(tmp_path("model.safetensors"));
    expect_open_error("HF no safetensors", tmp, RLX_ERR_NOT_FOUND, "neither model.safetensors.index.json");
    unlink(tmp_path("config.json"));
    expect_open_error("HF no config.json", tmp, RLX_ERR_NOT_FOUND, "has no config.json");
}

/* gemma3: every *norm.weight becomes w + 1. */
static void hf_gemma3_case(void) {
    const hf_tensor t[] = {
        {"model.embed_tokens.weight", 2, {4, 8}},
        {"model.norm.weight", 1, {8, 1}},
        {"model.layers.0.input_layernorm.weight", 1, {8, 1}},
        {"model.layers.0.self_attn.q_proj.weight", 2, {8, 8}},
        {"model.layers.0.self_attn.k_proj.weight", 2, {4, 8}},
        {"model.layers.0.self_attn.v_proj.weight", 2, {4, 8}},
        {"model.layers.0.self_attn.o_proj.weight", 2, {8, 8}},
        {"model.layers.0.self_attn.q_norm.weight", 1, {4, 1}},
        {"model.layers.0.self_attn.k_norm.weight", 1, {4, 1}},
        {"model.layers.0.post_attention_layernorm.weight", 1, {8, 1}},
        {"model.layers.0.pre_feedforward_layernorm.weight", 1, {8, 1}},
        {"model.layers.0.post_feedforward_layernorm.weight", 1, {8, 1}},
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
    unlink(tmp_path("config.json"));
    unlink(tmp_path("model.safetensors"));
    printf("  HF gemma3: all 7 norms (q/k norms included) stored as w + 1\n");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/rlx-model-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    gguf_cases();
    hf_llama_cases();
    hf_gemma3_case();
    rmdir(tmp);
    return t_summary("test_model_open");
}
