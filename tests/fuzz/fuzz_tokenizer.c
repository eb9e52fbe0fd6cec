/* Fuzz target: tokenizer loading from fuzzed GGUF metadata, then encoding fuzzed text and decoding
 * the ids (whole and streaming) and fuzzed ids.
 *
 * Input: byte 0 picks the mode and the encode flags.
 *  - mode "raw" (bit 0 set): the rest is a GGUF file; the text is a fixed sample.
 *  - mode "built": bytes 1..3 pick the model (gpt2 / llama / bert), the pre-tokenizer (from a list
 *    that includes an unknown name) and add_bos / add_space_prefix; the rest is
 *    "tokens \xFF merges \xFF text", tokens and merges separated by '\n'. A GGUF is written from
 *    that, so the fuzzer explores vocabularies rather than the GGUF parser (fuzz_gguf does that).
 * Sizes are capped to keep each run fast. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tokenizer_util.h"
#include "loader/format/gguf.h"
#include "text/tokenizer/tokenizer.h"

#define MAX_TOKENS 1024

typedef struct {
    uint8_t *p;
    size_t len, cap;
    uint64_t n_kv;
} out_buf;

static void put(out_buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = (b->len + n) * 2 + 256;
        uint8_t *p = realloc(b->p, cap);
        if (!p) abort(); /* test harness: out of memory is not a finding */
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_u32(out_buf *b, uint32_t v) {
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, le, 4);
}

static void put_u64(out_buf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(out_buf *b, const uint8_t *s, size_t n) {
    put_u64(b, n);
    put(b, s, n);
}

static void kv_head(out_buf *b, const char *key, uint32_t type) {
    put_str(b, (const uint8_t *)key, strlen(key));
    put_u32(b, type);
    b->n_kv++;
}

static void kv_str(out_buf *b, const char *key, const char *v) {
    kv_head(b, key, 8);
    put_str(b, (const uint8_t *)v, strlen(v));
}

static void kv_bool(out_buf *b, const char *key, int v) {
    kv_head(b, key, 7);
    uint8_t c = (uint8_t)(v != 0);
    put(b, &c, 1);
}

/* An array of strings from blob split on '\n'; returns the count. */
static uint64_t kv_lines(out_buf *b, const char *key, const uint8_t *blob, size_t n, uint64_t max) {
    uint64_t count = 0;
    for (size_t i = 0; i <= n && count < max; count++) {
        const uint8_t *nl = memchr(blob + i, '\n', n - i);
        i = nl ? (size_t)(nl - blob) + 1 : n + 1;
    }
    kv_head(b, key, 9);
    put_u32(b, 8);
    put_u64(b, count);
    uint64_t written = 0;
    for (size_t i = 0; i <= n && written < count; written++) {
        const uint8_t *nl = memchr(blob + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - blob) : n;
        put_str(b, blob + i, end - i);
        i = end + 1;
    }
    return count;
}

static void kv_f32s(out_buf *b, const char *key, uint64_t n) {
    kv_head(b, key, 9);
    put_u32(b, 6);
    put_u64(b, n);
    for (uint64_t i = 0; i < n; i++) {
        float f = -(float)(i % 97);
        uint32_t bits;
        memcpy(&bits, &f, 4);
        put_u32(b, bits);
    }
}

static const char *const MODELS[] = {"gpt2", "llama", "bert"};
static const char *const PRES[] = {"qwen2", "llama-bpe", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon",
                                   "starcoder", "refact", "mpt", "smaug-bpe", "default", "tekken", "no-such-pre"};

static rlx_gguf *build(const uint8_t *data, size_t size, const uint8_t **text, size_t *text_len, out_buf *b) {
    if (size < 4) return NULL;
    const uint8_t *rest = data + 4, *end = data + size;
    const uint8_t *sep1 = memchr(rest, 0xFF, (size_t)(end - rest));
    const uint8_t *sep2 = sep1 ? memchr(sep1 + 1, 0xFF, (size_t)(end - sep1 - 1)) : NULL;
    if (!sep2) return NULL;
    put(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, 0); /* tensors */
    put_u64(b, 0); /* kv count, patched below */
    kv_str(b, "tokenizer.ggml.model", MODELS[data[1] % 3]);
    kv_str(b, "tokenizer.ggml.pre", PRES[data[2] % (sizeof PRES / sizeof PRES[0])]);
    uint64_t n_tok = kv_lines(b, "tokenizer.ggml.tokens", rest, (size_t)(sep1 - rest), MAX_TOKENS);
    kv_f32s(b, "tokenizer.ggml.scores", n_tok);
    kv_lines(b, "tokenizer.ggml.merges", sep1 + 1, (size_t)(sep2 - sep1 - 1), MAX_TOKENS);
    kv_bool(b, "tokenizer.ggml.add_bos_token", data[3] & 1);
    kv_bool(b, "tokenizer.ggml.add_space_prefix", data[3] & 2);
    for (int i = 0; i < 8; i++) { /* patch the kv count at offset 16 */
        b->p[16 + i] = (uint8_t)(b->n_kv >> (8 * i));
    }
    *text = sep2 + 1;
    *text_len = (size_t)(end - sep2 - 1);
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(b->p, b->len, &g);
    rlx_status_free(s);
    return g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned flags = (data[0] >> 1) & 7; /* bits: ADD_SPECIAL, PARSE_SPECIAL, then decode CONTINUE */
    rlx_gguf *g = NULL;
    out_buf b = {0};
    const uint8_t *text = (const uint8_t *)"Hello, world! <s> <|im_start|> \xC3\xA9\xF0\x9F\x98\x80 3333\n\t ";
    size_t text_len = strlen((const char *)text);
    if (data[0] & 1) {
        rlx_status_free(rlx_gguf_open_memory(data + 1, size - 1, &g));
    } else {
        g = build(data, size, &text, &text_len, &b);
    }
    rlx_tokenizer *t = NULL;
    rlx_status s = g ? rlx_tokenizer_from_gguf(g, &t) : NULL;
    if (g && !s) {
        fuzz_tok_exercise(t, text, text_len, flags);
        rlx_tokenizer_close(t);
    }
    rlx_status_free(s);
    rlx_gguf_close(g);
    free(b.p);
    return 0;
}
