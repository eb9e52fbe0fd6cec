/* rlx_model_open refuses a file whose tensors the family would not all read, the check llama.cpp
 * makes by counting the tensors it created against the file's. Each case is a model whose
 * metadata lies about its tensors; the truth comes from the model definitions, not from rlx:
 *  - HF LlamaAttention has no q_norm / k_norm (Qwen3Attention does), so a qwen3 labelled llama
 *    leaves blk.N.attn_k_norm.weight (the first such name in sorted order) unread;
 *  - a 2-layer file whose block_count says 1 leaves every blk.1.* tensor unread;
 *  - no family here has attention biases, so blk.0.attn_q.bias is unread;
 *  - llama.cpp's nextn_predict_layers blocks (multi-token prediction) and blk.N.nextn.* tensors are
 *    on the documented ignore list: such a file opens, with the MTP block left out of n_layer.
 * The relabelled fixtures are written into the test's temporary directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_builder.h"
#include "loader/core/dtype.h"
#include "loader/format/gguf.h"
#include "loader/format/model.h"
#include "test_util.h"

static const char *const qwen3_gguf = "models/qwen3/qwen3-Q8_0.gguf";

static void expect_refused(const char *what, const char *path, const char *needle) {
    rlx_model *m = NULL;
    rlx_status s = rlx_model_open(path, &m);
    if (s) printf("  %s: %s\n", what, rlx_status_message(s));
    T_CHECK(s != NULL, "%s: expected a refusal", what);
    T_ERR(s, RLX_ERR_BAD_FILE, needle);
    rlx_model_close(m);
}

/* Replaces every `from` by `to` (`len` bytes each) in the first `n` bytes of `buf`; returns how
 * many. */
static int replace_n(uint8_t *buf, size_t n, const char *from, const char *to, size_t len) {
    int count = 0;
    for (size_t i = 0; i + len <= n; i++) {
        if (!memcmp(buf + i, from, len)) {
            memcpy(buf + i, to, len);
            count++;
        }
    }
    return count;
}

static int replace_all(uint8_t *buf, size_t n, const char *from, const char *to) {
    return replace_n(buf, n, from, to, strlen(from));
}

/* The fixture's bytes and the end of its metadata (the tensor data's offset). */
static uint8_t *read_gguf(size_t *len, size_t *meta_end) {
    uint8_t *buf = t_read_file(t_fixture(qwen3_gguf), len);
    rlx_gguf *g = NULL;
    if (!buf || !T_OK(rlx_gguf_open_memory(buf, *len, &g))) exit(1);
    *meta_end = (size_t)g->data_offset;
    rlx_gguf_close(g);
    return buf;
}

/* "qwen3" and "llama" have the same length, so the keys and the architecture string can be
 * rewritten in place. */
static void gguf_relabelled(void) {
    size_t len, meta;
    uint8_t *buf = read_gguf(&len, &meta);
    int n = replace_all(buf, meta, "qwen3.", "llama.");
    /* the value of general.architecture: a u64 length of 5, then the bytes */
    n += replace_n(buf, meta, "\x05\0\0\0\0\0\0\0qwen3", "\x05\0\0\0\0\0\0\0llama", 13);
    T_CHECK(n > 5, "relabelled %d keys and values", n);
    const char *path = t_tmp_path("relabelled.gguf");
    t_write_file(path, buf, len);
    expect_refused("qwen3 GGUF labelled llama", path,
                   "tensor 'blk.0.attn_k_norm.weight' is not used by a llama model");
    unlink(path);
    free(buf);
}

static void gguf_short_block_count(void) {
    size_t len, meta;
    uint8_t *buf = read_gguf(&len, &meta);
    static const char key[] = "qwen3.block_count";
    uint8_t *at = NULL;
    for (size_t i = 0; !at && i + sizeof key <= meta; i++)
        if (!memcmp(buf + i, key, sizeof key - 1)) at = buf + i;
    T_CHECK(at != NULL, "the fixture has %s", key);
    if (at) {
        uint32_t two = 2, one = 1, type = RLX_GGUF_UINT32;
        uint8_t *val = at + sizeof key - 1;
        T_CHECK(!memcmp(val, &type, 4) && !memcmp(val + 4, &two, 4), "%s is a u32 of 2", key);
        memcpy(val + 4, &one, 4);
        const char *path = t_tmp_path("one-block.gguf");
        t_write_file(path, buf, len);
        expect_refused("2-layer GGUF with block_count 1", path, "'blk.1.attn_k.weight' belongs to layer 1");
        unlink(path);
    }
    free(buf);
}

/* The qwen3 HF directory with model_type llama: config.json rewritten, the weights linked. */
static void hf_relabelled(void) {
    size_t len;
    char *cfg = t_read_file(t_fixture("models/qwen3/hf/config.json"), &len);
    if (!cfg) exit(1);
    T_CHECK(replace_all((uint8_t *)cfg, len, "\"model_type\": \"qwen3\"", "\"model_type\": \"llama\"") == 1,
            "relabelled config.json");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", t_tmp_path("hf"));
    T_CHECK(mkdir(dir, 0700) == 0, "made %s", dir);
    char cfg_path[4200], st_path[4200];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    t_write_file(cfg_path, cfg, len);
    T_CHECK(symlink(t_fixture("models/qwen3/hf/model.safetensors"), st_path) == 0, "linked the weights");
    expect_refused("qwen3 HF directory labelled llama", dir,
                   "tensor 'blk.0.attn_k_norm.weight' is not used by a llama model");
    unlink(cfg_path);
    unlink(st_path);
    rmdir(dir);
    free(cfg);
}

/* ---- hand-built GGUFs: a 1-layer llama, n_embd 16, n_ff 32, 2 heads of 8, vocab 4 ---- */

static const gb_f32_tensor llama_layer[] = {
    {"attn_norm.weight", 1, {16, 1}},   {"attn_q.weight", 2, {16, 16}}, {"attn_k.weight", 2, {16, 16}},
    {"attn_v.weight", 2, {16, 16}},     {"attn_output.weight", 2, {16, 16}}, {"ffn_norm.weight", 1, {16, 1}},
    {"ffn_gate.weight", 2, {16, 32}},   {"ffn_up.weight", 2, {16, 32}}, {"ffn_down.weight", 2, {32, 16}},
};
#define N_LAYER_T (sizeof llama_layer / sizeof llama_layer[0])
#define MAX_T 32

/* A llama GGUF of `blocks` full blocks plus `extra` tensors; nextn_predict_layers written when
 * `nextn` > 0. */
static const char *write_llama(const char *file, uint32_t blocks, uint32_t nextn, const gb_f32_tensor *extra, size_t n_extra) {
    static char names[MAX_T][64];
    gb_f32_tensor t[MAX_T];
    size_t n = 0;
    t[n++] = (gb_f32_tensor){"token_embd.weight", 2, {16, 4}};
    t[n++] = (gb_f32_tensor){"output_norm.weight", 1, {16, 1}};
    for (uint32_t il = 0; il < blocks; il++) {
        for (size_t i = 0; i < N_LAYER_T; i++, n++) {
            snprintf(names[n], sizeof names[n], "blk.%u.%s", il, llama_layer[i].name);
            t[n] = llama_layer[i];
            t[n].name = names[n];
        }
    }
    for (size_t i = 0; i < n_extra; i++) t[n++] = extra[i];
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, n, nextn ? 9 : 8);
    gb_kv_str(&b, "general.architecture", "llama");
    gb_kv_u32(&b, "llama.block_count", blocks);
    gb_kv_u32(&b, "llama.embedding_length", 16);
    gb_kv_u32(&b, "llama.feed_forward_length", 32);
    gb_kv_u32(&b, "llama.context_length", 64);
    gb_kv_u32(&b, "llama.attention.head_count", 2);
    gb_kv_u32(&b, "llama.vocab_size", 4);
    gb_kv(&b, "llama.attention.layer_norm_rms_epsilon", RLX_GGUF_FLOAT32);
    gb_f32(&b, 1e-5f);
    if (nextn) gb_kv_u32(&b, "llama.nextn_predict_layers", nextn);
    gb_f32_infos(&b, t, n);
    gb_f32_data(&b, t, n, NULL);
    const char *path = t_tmp_path(file);
    t_write_file(path, b.buf, b.len);
    gb_free(&b);
    return path;
}

static void built_cases(void) {
    rlx_model *m = NULL;
    const char *path = write_llama("plain.gguf", 1, 0, NULL, 0);
    T_OK(rlx_model_open(path, &m));
    rlx_model_close(m);
    unlink(path);

    gb_f32_tensor bias = {"blk.0.attn_q.bias", 1, {16, 1}};
    path = write_llama("bias.gguf", 1, 0, &bias, 1);
    expect_refused("a llama with an attention bias", path, "tensor 'blk.0.attn_q.bias' is not used by a llama model");
    unlink(path);

    gb_f32_tensor stray = {"blk.0.ffn_gate_inp.weight", 2, {16, 4}};
    path = write_llama("router.gguf", 1, 0, &stray, 1);
    expect_refused("a dense llama with a MoE router", path, "'blk.0.ffn_gate_inp.weight' is not used");
    unlink(path);

    /* block 1 is the MTP block; blk.1.nextn.eh_proj is one of llama.cpp's NEXTN tensors */
    gb_f32_tensor mtp = {"blk.1.nextn.eh_proj.weight", 2, {32, 16}};
    path = write_llama("nextn.gguf", 2, 1, &mtp, 1);
    m = NULL;
    if (T_OK(rlx_model_open(path, &m))) {
        T_CHECK(m->config.n_layer == 1 && m->config.n_layer_nextn == 1, "nextn: %u layers run, %u MTP",
                m->config.n_layer, m->config.n_layer_nextn);
        printf("  nextn_predict_layers 1 of 2 blocks: opens with %u layer, %u MTP block ignored\n", m->config.n_layer,
               m->config.n_layer_nextn);
    }
    rlx_model_close(m);
    unlink(path);

    path = write_llama("nextn-all.gguf", 1, 1, NULL, 0);
    expect_refused("nextn_predict_layers = block_count", path, "leaves no layer");
    unlink(path);
}

int main(void) {
    t_tmp_dir("rlx-unused");
    built_cases();
    t_require_fixture(qwen3_gguf);
    gguf_relabelled();
    gguf_short_block_count();
    t_require_fixture("models/qwen3/hf/config.json");
    hf_relabelled();
    t_tmp_dir_remove();
    return t_summary("test_model_unused");
}
