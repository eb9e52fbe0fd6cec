/* Every GGUF in the fixtures (models/<family>/, stories260K/, tokenizers/) opens, and facts read
 * off the files with an independent pure-python dumper (/tmp/tools/gguf_dump.py, plus a
 * python walk of the header for the data-section offsets) match what the reader reports. The
 * files themselves were written by llama.cpp's converter and quantizer. */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "loader/format/gguf.h"
#include "test_util.h"

typedef struct file_counts {
    const char *rel;
    uint64_t n_tensors, n_kv;
} file_counts;

/* gguf_dump.py: "version 3 tensors N kv M" for each file. */
static const file_counts counts[] = {
    {"models/gemma3/gemma3-F16.gguf", 80, 30},          {"models/gemma3/gemma3-Q4_K_M.gguf", 80, 30},
    {"models/gemma3/gemma3-Q8_0.gguf", 80, 30},         {"models/llama32/llama32-F16.gguf", 21, 29},
    {"models/llama32/llama32-F32.gguf", 21, 29},        {"models/llama32/llama32-Q4_K_M.gguf", 21, 29},
    {"models/llama32/llama32-Q8_0.gguf", 21, 29},       {"models/qwen3/qwen3-BF16.gguf", 24, 24},
    {"models/qwen3/qwen3-F16.gguf", 24, 24},            {"models/qwen3/qwen3-F32.gguf", 24, 24},
    {"models/qwen3/qwen3-Q4_0.gguf", 24, 24},           {"models/qwen3/qwen3-Q4_K_M.gguf", 24, 24},
    {"models/qwen3/qwen3-Q5_K_M.gguf", 24, 24},         {"models/qwen3/qwen3-Q6_K.gguf", 24, 24},
    {"models/qwen3/qwen3-Q8_0.gguf", 24, 24},           {"models/qwen35/qwen35-F16.gguf", 55, 32},
    {"models/qwen35/qwen35-F32.gguf", 55, 32},          {"models/qwen35/qwen35-Q4_K_M.gguf", 55, 32},
    {"models/qwen35/qwen35-Q8_0.gguf", 55, 32},         {"models/qwen3moe/qwen3moe-F16.gguf", 27, 27},
    {"models/qwen3moe/qwen3moe-Q4_K_M.gguf", 27, 27},   {"models/qwen3moe/qwen3moe-Q8_0.gguf", 27, 27},
    {"stories260K/stories260K.gguf", 48, 19},           {"tokenizers/ggml-vocab-baichuan.gguf", 0, 18},
    {"tokenizers/ggml-vocab-bert-bge.gguf", 0, 20},     {"tokenizers/ggml-vocab-deepseek-coder.gguf", 0, 25},
    {"tokenizers/ggml-vocab-deepseek-llm.gguf", 0, 23}, {"tokenizers/ggml-vocab-falcon.gguf", 0, 18},
    {"tokenizers/ggml-vocab-gpt-2.gguf", 0, 16},        {"tokenizers/ggml-vocab-gpt-neox.gguf", 0, 17},
    {"tokenizers/ggml-vocab-llama-bpe.gguf", 0, 25},    {"tokenizers/ggml-vocab-llama-spm.gguf", 0, 22},
    {"tokenizers/ggml-vocab-mpt.gguf", 0, 17},          {"tokenizers/ggml-vocab-phi-3.gguf", 0, 26},
    {"tokenizers/ggml-vocab-qwen2.gguf", 0, 22},        {"tokenizers/ggml-vocab-refact.gguf", 0, 18},
    {"tokenizers/ggml-vocab-starcoder.gguf", 0, 19},
};

static const file_counts *counts_for(const char *rel) {
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (strcmp(counts[i].rel, rel) == 0) return &counts[i];
    return NULL;
}

static int open_one(const char *rel) {
    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture(rel), &g))) return 0;
    const file_counts *c = counts_for(rel);
    T_CHECK(g->version == 3, "%s: version %u, dumper says 3", rel, g->version);
    if (c)
        T_CHECK(g->n_tensors == c->n_tensors && g->n_kv == c->n_kv,
                "%s: %" PRIu64 " tensors, %" PRIu64 " kvs; dumper says %" PRIu64 ", %" PRIu64, rel, g->n_tensors, g->n_kv,
                c->n_tensors, c->n_kv);
    rlx_gguf_close(g);
    return c ? 1 : 0;
}

/* Opens every *.gguf in a fixtures sub-directory; returns how many were in the counts table. */
static int open_dir(const char *rel_dir, int *opened) {
    DIR *d = opendir(t_fixture(rel_dir));
    T_CHECK(d != NULL, "cannot list %s", t_fixture(rel_dir));
    if (!d) return 0;
    int known = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".gguf") != 0) continue;
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", rel_dir, e->d_name);
        known += open_one(rel);
        (*opened)++;
    }
    closedir(d);
    return known;
}

static void test_all_open(void) {
    int opened = 0, known = 0;
    static const char *families[] = {"gemma3", "llama32", "qwen3", "qwen35", "qwen3moe"};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "models/%s", families[i]);
        known += open_dir(rel, &opened);
    }
    known += open_dir("stories260K", &opened);
    known += open_dir("tokenizers", &opened);
    size_t want = sizeof counts / sizeof counts[0];
    T_CHECK((size_t)known == want, "%d of the %zu files the dumper listed were found and opened", known, want);
    printf("opened %d fixture GGUFs (%d with dumper counts compared)\n", opened, known);
}

static void check_tensor(const rlx_gguf *g, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0,
                         uint64_t ne1, uint64_t offset) {
    const rlx_gguf_tensor *t = rlx_gguf_find_tensor(g, name);
    T_CHECK(t != NULL, "tensor %s missing", name);
    if (!t) return;
    T_CHECK(t->type == type && t->n_dims == n_dims && t->ne[0] == ne0 && t->ne[1] == ne1 && t->offset == offset,
            "%s: type %u dims %u [%" PRIu64 ", %" PRIu64 "] offset %" PRIu64 "; dumper: %u %u [%" PRIu64 ", %" PRIu64
            "] %" PRIu64,
            name, t->type, t->n_dims, t->ne[0], t->ne[1], t->offset, type, n_dims, ne0, ne1, offset);
    T_CHECK(t->data == g->base + g->data_offset + offset, "%s: data pointer", name);
}

static void check_str(const rlx_gguf *g, const char *key, const char *want) {
    rlx_status err = NULL;
    const char *s = NULL;
    bool found = rlx_gguf_get_str(g, key, &s, &err);
    T_OK(err);
    T_CHECK(found && s && strcmp(s, want) == 0, "%s = '%s', dumper says '%s'", key, s ? s : "(none)", want);
}

static void check_u32(const rlx_gguf *g, const char *key, uint32_t want) {
    rlx_status err = NULL;
    uint32_t v = 0;
    bool found = rlx_gguf_get_u32(g, key, &v, &err);
    T_OK(err);
    T_CHECK(found && v == want, "%s = %u, dumper says %u", key, v, want);
}

static void check_str_elem(const rlx_gguf *g, const char *key, uint64_t n, uint64_t i, const char *want) {
    rlx_status err = NULL;
    const rlx_gguf_value *arr = NULL;
    rlx_gguf_value v;
    bool found = rlx_gguf_get_arr(g, key, RLX_GGUF_STRING, &arr, &err);
    T_OK(err);
    T_CHECK(found && arr->arr.n == n, "%s: %" PRIu64 " strings, dumper says %" PRIu64, key, found ? arr->arr.n : 0, n);
    T_CHECK(found && rlx_gguf_arr_get(arr, i, &v) && strcmp(v.str.s, want) == 0, "%s[%" PRIu64 "] != '%s'", key, i, want);
}

static void test_qwen3_q8_0(void) {
    const char *rel = "models/qwen3/qwen3-Q8_0.gguf";
    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture(rel), &g))) return;
    check_str(g, "general.architecture", "qwen3");
    check_str(g, "tokenizer.ggml.pre", "qwen2");
    check_u32(g, "qwen3.block_count", 2);
    check_u32(g, "qwen3.context_length", 1024);
    check_u32(g, "qwen3.attention.head_count_kv", 2);
    check_u32(g, "general.file_type", 7);
    rlx_status err = NULL;
    float f = 0;
    T_CHECK(rlx_gguf_get_f32(g, "qwen3.rope.freq_base", &f, &err) && f == 1e6f, "rope.freq_base = %g", f);
    T_CHECK(rlx_gguf_get_f32(g, "qwen3.attention.layer_norm_rms_epsilon", &f, &err) && f == 1e-6f, "rms eps = %g", f);
    check_str_elem(g, "tokenizer.ggml.tokens", 512, 0, "<|endoftext|>");
    check_str_elem(g, "tokenizer.ggml.tokens", 512, 3, "!");
    check_str_elem(g, "tokenizer.ggml.merges", 253, 0, "\xc4\xa0 \xc4\xa0"); /* "Ġ Ġ" */
    const rlx_gguf_value *tt = NULL;
    rlx_gguf_value v;
    T_CHECK(rlx_gguf_get_arr(g, "tokenizer.ggml.token_type", RLX_GGUF_INT32, &tt, &err) && tt->arr.n == 512 &&
                rlx_gguf_arr_get(tt, 0, &v) && v.i64 == 3 && rlx_gguf_arr_get(tt, 3, &v) && v.i64 == 1,
            "token_type: i32[512] starting 3, 3, 3, 1");
    T_CHECK(g->alignment == 32 && g->data_offset == 13408, "data_offset %" PRIu64 ", python header walk says 13408",
            g->data_offset);
    check_tensor(g, "token_embd.weight", 8, 2, 256, 512, 0);
    check_tensor(g, "blk.0.ffn_down.weight", 8, 2, 512, 256, 140288);
    check_tensor(g, "blk.1.attn_v.weight", 8, 2, 256, 128, 1362944);
    check_tensor(g, "output_norm.weight", 0, 1, 256, 1, 1397760);
    const rlx_gguf_tensor *last = rlx_gguf_find_tensor(g, "output_norm.weight");
    T_CHECK(last && last->data + last->nbytes == g->base + g->size, "output_norm.weight ends the file (%" PRIu64 " bytes)",
            g->size);
    T_CHECK(rlx_gguf_find_tensor(g, "output.weight") == NULL, "tied embeddings: no output.weight");
    rlx_gguf_close(g);
}

static void test_others(void) {
    rlx_gguf *g = NULL;
    if (T_OK(rlx_gguf_open(t_fixture("models/qwen3/qwen3-Q4_K_M.gguf"), &g))) {
        check_tensor(g, "token_embd.weight", 14, 2, 256, 512, 1024); /* Q6_K */
        check_tensor(g, "blk.0.attn_k.weight", 12, 2, 256, 128, 108544); /* Q4_K */
        check_tensor(g, "blk.1.ffn_down.weight", 14, 2, 512, 256, 563456);
        rlx_gguf_close(g);
    }
    if (T_OK(rlx_gguf_open(t_fixture("stories260K/stories260K.gguf"), &g))) {
        check_str(g, "general.architecture", "llama");
        check_u32(g, "tokenizer.ggml.seperator_token_id", 4294967295u);
        check_u32(g, "llama.embedding_length", 64);
        check_u32(g, "llama.attention.head_count_kv", 4);
        check_str_elem(g, "tokenizer.ggml.tokens", 512, 1, "<s>");
        check_tensor(g, "blk.0.ffn_down.weight", 0, 2, 172, 64, 355840);
        check_tensor(g, "output.weight", 0, 2, 64, 512, 131328);
        T_CHECK(g->data_offset == 14176, "stories260K data_offset %" PRIu64 ", python says 14176", g->data_offset);
        rlx_gguf_close(g);
    }
    if (T_OK(rlx_gguf_open(t_fixture("tokenizers/ggml-vocab-llama-spm.gguf"), &g))) {
        rlx_status err = NULL;
        bool b = false;
        T_CHECK(rlx_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b, &err) && b, "add_bos_token = True");
        T_CHECK(rlx_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b, &err) && !b, "add_eos_token = False");
        check_str_elem(g, "tokenizer.ggml.tokens", 32000, 2, "</s>");
        const rlx_gguf_value *scores = NULL;
        T_CHECK(rlx_gguf_get_arr(g, "tokenizer.ggml.scores", RLX_GGUF_FLOAT32, &scores, &err) && scores->arr.n == 32000,
                "scores: f32[32000]");
        /* No tensors: llama.cpp writes no padding, the header ends the file. */
        T_CHECK(g->n_tensors == 0 && g->data_offset == g->size && g->size == 723869, "vocab-only data_offset %" PRIu64,
                g->data_offset);
        rlx_gguf_close(g);
    }
}

int main(void) {
    t_require_fixture("models/qwen3/qwen3-Q8_0.gguf");
    t_require_fixture("stories260K/stories260K.gguf");
    t_require_fixture("tokenizers/ggml-vocab-llama-spm.gguf");
    test_all_open();
    test_qwen3_q8_0();
    test_others();
    return t_summary("test_gguf_fixtures");
}
