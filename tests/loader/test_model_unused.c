/* rlx_model_open refuses a file whose tensors the family would not all read, the check llama.cpp
 * makes by counting the tensors it created against the file's. Each case is a model whose
 * metadata lies about its tensors; the truth comes from the model definitions, not from rlx:
 *  - HF LlamaAttention has no q_norm / k_norm (Qwen3Attention does), so a qwen3 labelled llama
 *    leaves blk.N.attn_k_norm.weight (the first such name in sorted order) unread;
 *  - a 2-layer file whose block_count says 1 leaves every blk.1.* tensor unread;
 *  - no family here has attention biases, so blk.0.attn_q.bias is unread;
 *  - llama.cpp's nextn_predict_layers blocks (multi-token prediction) and blk.N.nextn.* tensors are
 *    on the documented ignore list: such a file opens, with the MTP block left out of n_layer and
 *    out of the weight table (a qwen35 with llama.cpp's NEXTN tensors as well as a llama).
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

/* ---- Qwen3.5 with a multi-token-prediction block ---- */

/* A tiny qwen35: layer 0 Gated DeltaNet, layer 1 gated attention (full_attention_interval 2),
 * shapes as llama-model.cpp's LLM_ARCH_QWEN35 create_tensor calls give them for n_embd 16, 2 heads
 * of 8 (1 KV head), FFN 32, ssm: kernel 4, key dim 4, 1 key head, 2 value heads, inner 8. */
static const gb_f32_tensor q35_linear[] = {
    {"attn_norm.weight", 1, {16, 1}},  {"attn_qkv.weight", 2, {16, 16}}, {"attn_gate.weight", 2, {16, 8}},
    {"ssm_conv1d.weight", 2, {4, 16}}, {"ssm_dt.bias", 1, {2, 1}},       {"ssm_a", 1, {2, 1}},
    {"ssm_alpha.weight", 2, {16, 2}},  {"ssm_beta.weight", 2, {16, 2}},  {"ssm_norm.weight", 1, {4, 1}},
    {"ssm_out.weight", 2, {8, 16}},
};
static const gb_f32_tensor q35_attention[] = {
    {"attn_norm.weight", 1, {16, 1}},   {"attn_q.weight", 2, {16, 32}},     {"attn_k.weight", 2, {16, 8}},
    {"attn_v.weight", 2, {16, 8}},      {"attn_output.weight", 2, {16, 16}}, {"attn_q_norm.weight", 1, {8, 1}},
    {"attn_k_norm.weight", 1, {8, 1}},
};
static const gb_f32_tensor q35_ffn[] = {
    {"post_attention_norm.weight", 1, {16, 1}}, {"ffn_gate.weight", 2, {16, 32}}, {"ffn_up.weight", 2, {16, 32}},
    {"ffn_down.weight", 2, {32, 16}},
};
/* llama.cpp's NEXTN tensors of an MTP block (LLM_TENSOR_NEXTN_*: eh_proj [2 n_embd, n_embd] and
 * three norms), beside the block's own attention + FFN tensors. */
static const gb_f32_tensor q35_nextn[] = {
    {"nextn.eh_proj.weight", 2, {32, 16}}, {"nextn.enorm.weight", 1, {16, 1}}, {"nextn.hnorm.weight", 1, {16, 1}},
    {"nextn.shared_head_norm.weight", 1, {16, 1}},
};
#define Q35_MAX_T 64

static void add_block(gb_f32_tensor *t, size_t *n, char (*names)[64], uint32_t il, const gb_f32_tensor *part, size_t count) {
    for (size_t i = 0; i < count; i++, (*n)++) {
        snprintf(names[*n], 64, "blk.%u.%s", il, part[i].name);
        t[*n] = part[i];
        t[*n].name = names[*n];
    }
}

/* Two layers plus one MTP block numbered `mtp_block`, with block_count `block_count` and
 * nextn_predict_layers 1. llama.cpp's converter counts the MTP block in block_count (blocks 0, 1,
 * MTP 2, block_count 3): the llama.cpp build in ../shared/bench loads such a file and refuses one
 * whose block_count leaves the MTP block out. */
static const char *write_qwen35_mtp(const char *file, uint32_t block_count) {
    static char names[Q35_MAX_T][64];
    gb_f32_tensor t[Q35_MAX_T];
    size_t n = 0;
    t[n++] = (gb_f32_tensor){"token_embd.weight", 2, {16, 4}};
    t[n++] = (gb_f32_tensor){"output_norm.weight", 1, {16, 1}};
    add_block(t, &n, names, 0, q35_linear, sizeof q35_linear / sizeof q35_linear[0]);
    add_block(t, &n, names, 0, q35_ffn, sizeof q35_ffn / sizeof q35_ffn[0]);
    for (uint32_t il = 1; il <= 2; il++) {
        add_block(t, &n, names, il, q35_attention, sizeof q35_attention / sizeof q35_attention[0]);
        add_block(t, &n, names, il, q35_ffn, sizeof q35_ffn / sizeof q35_ffn[0]);
    }
    add_block(t, &n, names, 2, q35_nextn, sizeof q35_nextn / sizeof q35_nextn[0]);
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, n, 18);
    gb_kv_str(&b, "general.architecture", "qwen35");
    gb_kv_u32(&b, "qwen35.block_count", block_count);
    gb_kv_u32(&b, "qwen35.nextn_predict_layers", 1);
    gb_kv_u32(&b, "qwen35.context_length", 64);
    gb_kv_u32(&b, "qwen35.embedding_length", 16);
    gb_kv_u32(&b, "qwen35.feed_forward_length", 32);
    gb_kv_u32(&b, "qwen35.attention.head_count", 2);
    gb_kv_u32(&b, "qwen35.attention.head_count_kv", 1);
    gb_kv_u32(&b, "qwen35.attention.key_length", 8);
    gb_kv_u32(&b, "qwen35.attention.value_length", 8);
    gb_kv(&b, "qwen35.attention.layer_norm_rms_epsilon", RLX_GGUF_FLOAT32);
    gb_f32(&b, 1e-6f);
    gb_kv_u32(&b, "qwen35.ssm.conv_kernel", 4);
    gb_kv_u32(&b, "qwen35.ssm.state_size", 4);
    gb_kv_u32(&b, "qwen35.ssm.group_count", 1);
    gb_kv_u32(&b, "qwen35.ssm.time_step_rank", 2);
    gb_kv_u32(&b, "qwen35.ssm.inner_size", 8);
    gb_kv_u32(&b, "qwen35.full_attention_interval", 2);
    gb_kv_u32(&b, "qwen35.rope.dimension_count", 2);
    gb_f32_infos(&b, t, n);
    gb_f32_data(&b, t, n, NULL);
    const char *path = t_tmp_path(file);
    t_write_file(path, b.buf, b.len);
    gb_free(&b);
    return path;
}

static void qwen35_mtp(void) {
    const char *path = write_qwen35_mtp("qwen35-mtp.gguf", 3);
    rlx_model *m = NULL;
    if (T_OK(rlx_model_open(path, &m))) {
        const rlx_model_config *c = &m->config;
        T_CHECK(c->n_layer == 2 && c->n_layer_nextn == 1, "qwen35 MTP: %u layers run, %u MTP", c->n_layer,
                c->n_layer_nextn);
        T_CHECK(c->layer_kind[0] == RLX_LAYER_LINEAR_ATTENTION && c->layer_kind[1] == RLX_LAYER_FULL_ATTENTION,
                "qwen35 MTP: layer kinds %d %d, want linear, full", c->layer_kind[0], c->layer_kind[1]);
        /* 2 + 14 (linear layer) + 11 (attention layer) tensors are the model's; the 11 + 4 of block
         * 2 are not in the table a backend session uploads */
        T_CHECK(m->n_weights == 27, "qwen35 MTP: %zu weights kept, want 27", m->n_weights);
        T_CHECK(!rlx_model_weight(m, "blk.2.nextn.eh_proj.weight") && !rlx_model_weight(m, "blk.2.attn_q.weight"),
                "qwen35 MTP: block 2's tensors are still in the weight table");
        T_CHECK(rlx_model_weight(m, "blk.1.attn_q.weight") && rlx_model_weight(m, "blk.0.ssm_a"),
                "qwen35 MTP: the model's own tensors went missing");
        for (size_t i = 0; i < m->n_weights; i++)
            T_CHECK(strncmp(m->weights[i].name, "blk.2.", 6), "qwen35 MTP: '%s' kept", m->weights[i].name);
        printf("  qwen35 with an MTP block (block_count 3, nextn 1): %u layers, %zu weights kept, block 2 dropped\n",
               c->n_layer, m->n_weights);
    }
    rlx_model_close(m);
    unlink(path);
    path = write_qwen35_mtp("qwen35-mtp-uncounted.gguf", 2);
    expect_refused("an MTP block outside block_count", path, "belongs to layer 2");
    unlink(path);
}

int main(void) {
    t_tmp_dir("rlx-unused");
    built_cases();
    qwen35_mtp();
    t_require_fixture(qwen3_gguf);
    gguf_relabelled();
    gguf_short_block_count();
    t_require_fixture("models/qwen3/hf/config.json");
    hf_relabelled();
    t_tmp_dir_remove();
    return t_summary("test_model_unused");
}
