/* Tokenizer behaviour on tiny vocabularies built in memory (tests/support/gguf_builder.c), where every
 * expected id follows by hand from the algorithm's definition (llama.cpp's llm_tokenizer_spm /
 * llm_tokenizer_bpe, GPT-2's byte table), plus the error paths:
 *  - SentencePiece: highest-scoring pair first, <0xNN> byte fallback, space prefix (also after a
 *    special token), control tokens only with RLX_ENCODE_PARSE_SPECIAL, user-defined tokens always;
 *  - byte-level BPE: lowest merge rank first, ignore_merges (llama-bpe) vs not (qwen2), GPT-2's
 *    byte <-> character table;
 *  - the invalid UTF-8 policy (one U+FFFD per bad byte), empty text, decode flags, streaming that
 *    holds back split characters, end-of-generation detection;
 *  - bad metadata: unknown pre-tokenizer (the message lists the supported ones), unknown model,
 *    wrong types, short arrays, duplicate tokens, missing merges, add_bos without a BOS id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_builder.h"
#include "loader/format/gguf.h"
#include "text/tokenizer/tokenizer.h"
#include "test_tokenizer_util.h"
#include "test_util.h"

enum { T_BOOL = 7, T_STRING = 8, T_ARRAY = 9, T_U32 = 4, T_I32 = 5, T_F32 = 6 };

typedef struct {
    gguf_builder b;
    uint64_t n_kv;
} vocab_file;

static void vf_begin(vocab_file *f) {
    gb_init(&f->b);
    gb_header(&f->b, 3, 0, 0);
    f->n_kv = 0;
}

static void vf_str(vocab_file *f, const char *key, const char *v) {
    gb_kv_str(&f->b, key, v);
    f->n_kv++;
}

static void vf_u32(vocab_file *f, const char *key, uint32_t v) {
    gb_kv_u32(&f->b, key, v);
    f->n_kv++;
}

static void vf_bool(vocab_file *f, const char *key, bool v) {
    gb_kv(&f->b, key, T_BOOL);
    gb_u8(&f->b, v);
    f->n_kv++;
}

static void vf_strs(vocab_file *f, const char *key, const char *const *v, size_t n) {
    gb_kv(&f->b, key, T_ARRAY);
    gb_arr(&f->b, T_STRING, n);
    for (size_t i = 0; i < n; i++) gb_str(&f->b, v[i]);
    f->n_kv++;
}

static void vf_f32s(vocab_file *f, const char *key, const float *v, size_t n) {
    gb_kv(&f->b, key, T_ARRAY);
    gb_arr(&f->b, T_F32, n);
    for (size_t i = 0; i < n; i++) gb_f32(&f->b, v[i]);
    f->n_kv++;
}

static void vf_i32s(vocab_file *f, const char *key, const int32_t *v, size_t n) {
    gb_kv(&f->b, key, T_ARRAY);
    gb_arr(&f->b, T_I32, n);
    for (size_t i = 0; i < n; i++) gb_u32(&f->b, (uint32_t)v[i]);
    f->n_kv++;
}

/* Finishes the file and builds a tokenizer from it; frees the builder. */
static rlx_status vf_open(vocab_file *f, rlx_tokenizer **t) {
    gb_patch_u64(&f->b, 16, f->n_kv);
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(f->b.buf, f->b.len, &g);
    if (!s) s = rlx_tokenizer_from_gguf(g, t);
    rlx_gguf_close(g);
    gb_free(&f->b);
    return s;
}

/* ---- SentencePiece ---- */

#define SPM_N 266
#define BYTE_ID(b) (3 + (b)) /* <0x00>.. start at id 3 */
enum { SPM_SPACE = 259, SPM_H, SPM_I, SPM_SPACE_H, SPM_HI, SPM_IM_END, SPM_TOOL };

static char spm_text[SPM_N][16];
static const char *spm_tokens[SPM_N];
static float spm_scores[SPM_N];
static int32_t spm_types[SPM_N];

/* <unk> <s> </s>, the 256 byte tokens, then "▁" "h" "i" "▁h" "hi" "<|im_end|>" "<tool>". The pair
 * "hi" (-1) outscores "▁h" (-2) and there is no "▁hi", so "hi" encodes to [▁, hi]. */
static void spm_vocab(vocab_file *f) {
    const char *head[] = {"<unk>", "<s>", "</s>"};
    const int32_t head_types[] = {2, 3, 3};
    for (int i = 0; i < 3; i++) {
        spm_tokens[i] = head[i];
        spm_types[i] = head_types[i];
        spm_scores[i] = 0;
    }
    for (int b = 0; b < 256; b++) {
        snprintf(spm_text[BYTE_ID(b)], 16, "<0x%02X>", b);
        spm_tokens[BYTE_ID(b)] = spm_text[BYTE_ID(b)];
        spm_types[BYTE_ID(b)] = 6;
        spm_scores[BYTE_ID(b)] = 0;
    }
    const char *tail[] = {"\xE2\x96\x81", "h", "i", "\xE2\x96\x81h", "hi", "<|im_end|>", "<tool>"};
    const float tail_scores[] = {-5, -5, -5, -2, -1, 0, 0};
    const int32_t tail_types[] = {1, 1, 1, 1, 1, 1, 4};
    for (int i = 0; i < 7; i++) {
        spm_tokens[SPM_SPACE + i] = tail[i];
        spm_scores[SPM_SPACE + i] = tail_scores[i];
        spm_types[SPM_SPACE + i] = tail_types[i];
    }
    vf_begin(f);
    vf_str(f, "tokenizer.ggml.model", "llama");
    vf_strs(f, "tokenizer.ggml.tokens", spm_tokens, SPM_N);
    vf_f32s(f, "tokenizer.ggml.scores", spm_scores, SPM_N);
    vf_i32s(f, "tokenizer.ggml.token_type", spm_types, SPM_N);
    vf_u32(f, "tokenizer.ggml.bos_token_id", 1);
    vf_u32(f, "tokenizer.ggml.eos_token_id", 2);
    vf_u32(f, "tokenizer.ggml.seperator_token_id", 0xFFFFFFFFu); /* "none", as stories260K writes it */
}

static void expect_ids(rlx_tokenizer *t, const char *what, const char *text, size_t len, unsigned flags,
                       const int32_t *want, size_t n_want) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (!T_OK(rlx_tokenizer_encode(t, text, len, flags, &ids, &n))) return;
    bool ok = n == n_want && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
    T_CHECK(ok, "%s: '%s' (flags %u) -> %s, expected %s", what, tt_text_str(text, len), flags, tt_ids_str(ids, n),
            tt_ids_str(want, n_want));
    printf("%s: '%s' -> %s%s\n", what, tt_text_str(text, len), tt_ids_str(ids, n), ok ? "" : " (WRONG)");
    free(ids);
}

static void expect_text(rlx_tokenizer *t, const char *what, const int32_t *ids, size_t n, unsigned flags,
                        const char *want, size_t want_len) {
    char *text = NULL;
    size_t len = 0;
    if (!T_OK(rlx_tokenizer_decode(t, ids, n, flags, &text, &len))) return;
    T_CHECK(len == want_len && !memcmp(text, want, len), "%s: %s (flags %u) -> '%s', expected '%s'", what,
            tt_ids_str(ids, n), flags, tt_text_str(text, len), tt_text_str(want, want_len));
    free(text);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define S(lit) lit, (sizeof lit - 1)

static void spm_tests(void) {
    vocab_file f;
    spm_vocab(&f);
    rlx_tokenizer *t = NULL;
    if (!T_OK(vf_open(&f, &t))) return;
    T_CHECK(rlx_tokenizer_get_kind(t) == RLX_TOKENIZER_SPM && rlx_tokenizer_adds_bos(t), "llama vocab: SPM adding BOS");
    T_CHECK(rlx_tokenizer_special(t, RLX_SPECIAL_SEP) == RLX_TOKEN_NULL, "sep 0xFFFFFFFF must mean none");

    expect_ids(t, "spm score order", S("hi"), 0, IDS(SPM_SPACE, SPM_HI));
    expect_ids(t, "spm with BOS", S("hi"), RLX_ENCODE_ADD_SPECIAL, IDS(1, SPM_SPACE, SPM_HI));
    expect_ids(t, "spm special parsed, space prefix after it", S("<s>hi"), RLX_ENCODE_PARSE_SPECIAL, IDS(1, SPM_SPACE, SPM_HI));
    expect_ids(t, "spm special as text", S("<s>hi"), 0, IDS(SPM_SPACE, BYTE_ID('<'), BYTE_ID('s'), BYTE_ID('>'), SPM_HI));
    expect_ids(t, "spm user-defined always", S("a<tool>b"), 0,
               IDS(SPM_SPACE, BYTE_ID('a'), SPM_TOOL, SPM_SPACE, BYTE_ID('b')));
    expect_ids(t, "spm byte fallback", S("\xC3\xA9"), 0, IDS(SPM_SPACE, BYTE_ID(0xC3), BYTE_ID(0xA9)));
    /* Invalid UTF-8: 0xFF becomes U+FFFD (EF BF BD), which falls back to three byte tokens. */
    expect_ids(t, "spm invalid byte", S("h\xFFi"), 0,
               IDS(SPM_SPACE_H, BYTE_ID(0xEF), BYTE_ID(0xBF), BYTE_ID(0xBD), SPM_I));
    /* A truncated 3-byte sequence is two bad bytes: two U+FFFD. */
    expect_ids(t, "spm truncated sequence", S("\xE2\x82"), 0,
               IDS(SPM_SPACE, BYTE_ID(0xEF), BYTE_ID(0xBF), BYTE_ID(0xBD), BYTE_ID(0xEF), BYTE_ID(0xBF), BYTE_ID(0xBD)));
    expect_ids(t, "spm empty", S(""), 0, NULL, 0);
    expect_ids(t, "spm empty with BOS", S(""), RLX_ENCODE_ADD_SPECIAL, IDS(1));

    expect_text(t, "spm decode", IDS(1, SPM_SPACE, SPM_HI), 0, S("hi"));
    expect_text(t, "spm decode special", IDS(1, SPM_SPACE, SPM_HI), RLX_DECODE_SPECIAL, S("<s> hi"));
    expect_text(t, "spm decode continue", IDS(SPM_SPACE, SPM_HI), RLX_DECODE_CONTINUE, S(" hi"));
    expect_text(t, "spm decode bytes", IDS(SPM_SPACE_H, BYTE_ID(0xEF), BYTE_ID(0xBF), BYTE_ID(0xBD), SPM_I), 0,
                S("h\xEF\xBF\xBDi"));
    expect_text(t, "spm decode user-defined", IDS(SPM_TOOL), 0, S("<tool>"));

    T_CHECK(rlx_tokenizer_is_eog(t, 2) && rlx_tokenizer_is_eog(t, SPM_IM_END) && !rlx_tokenizer_is_eog(t, SPM_HI),
            "EOS and <|im_end|> end generation, 'hi' does not");
    T_CHECK(rlx_tokenizer_token_type(t, SPM_IM_END) == RLX_TOKEN_TYPE_CONTROL, "<|im_end|> must be forced to CONTROL");
    T_CHECK(rlx_tokenizer_special(t, RLX_SPECIAL_EOT) == SPM_IM_END, "EOT %d, expected <|im_end|> %d",
            rlx_tokenizer_special(t, RLX_SPECIAL_EOT), SPM_IM_END);
    T_CHECK(rlx_tokenizer_find(t, S("hi")) == SPM_HI && rlx_tokenizer_find(t, S("nope")) == RLX_TOKEN_NULL, "find");
    size_t len;
    const char *piece = rlx_tokenizer_piece(t, SPM_SPACE_H, &len);
    T_CHECK(piece && len == 4 && !memcmp(piece, "\xE2\x96\x81h", 4), "piece of '▁h'");
    T_CHECK(!rlx_tokenizer_piece(t, SPM_N, NULL) && rlx_tokenizer_token_type(t, -1) == RLX_TOKEN_TYPE_UNDEFINED,
            "out-of-range piece / type");

    char *text = NULL;
    T_ERR(rlx_tokenizer_decode(t, IDS(1, 999), 0, &text, &len), RLX_ERR_INVALID_ARGUMENT, "ids[1]");
    T_ERR(rlx_tokenizer_decode(t, IDS(-5), 0, &text, &len), RLX_ERR_INVALID_ARGUMENT, "outside the vocabulary");

    /* Streaming: é as two byte tokens comes out whole, after the second. */
    rlx_detokenizer *d;
    if (T_OK(rlx_detokenizer_create(t, RLX_DECODE_CONTINUE, &d))) {
        const char *p;
        size_t k;
        T_OK(rlx_detokenizer_push(d, BYTE_ID(0xC3), &p, &k));
        T_CHECK(k == 0, "first half of é: %zu bytes out, expected 0 (held back)", k);
        T_OK(rlx_detokenizer_push(d, BYTE_ID(0xA9), &p, &k));
        T_CHECK(k == 2 && !memcmp(p, "\xC3\xA9", 2), "second half of é: got '%s'", tt_text_str(p, k));
        T_OK(rlx_detokenizer_push(d, BYTE_ID(0xF0), &p, &k));
        T_CHECK(k == 0, "lead byte of a 4-byte sequence must be held");
        rlx_detokenizer_finish(d, &p, &k);
        T_CHECK(k == 1 && (unsigned char)p[0] == 0xF0, "finish returns the held byte as is");
        T_OK(rlx_detokenizer_push(d, BYTE_ID(0x80), &p, &k));
        T_CHECK(k == 1 && (unsigned char)p[0] == 0x80, "a stray continuation byte passes through");
        T_ERR(rlx_detokenizer_push(d, SPM_N, &p, &k), RLX_ERR_INVALID_ARGUMENT, "outside the vocabulary");
        rlx_detokenizer_destroy(d);
    }
    rlx_tokenizer_close(t);
}

/* ---- byte-level BPE ---- */

/* GPT-2's bytes_to_unicode, written out from its definition: printable Latin-1 bytes map to
 * themselves, the other 68 to U+0100.. in byte order. */
static void gpt2_char(int b, char out[3]) {
    int cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

#define BPE_N 261
enum { BPE_HI = 256, BPE_G_H, BPE_G_HI, BPE_EOT, BPE_TOOL };

static void bpe_vocab(vocab_file *f, const char *pre, bool with_merges) {
    static char chars[256][3];
    static const char *tokens[BPE_N];
    static int32_t types[BPE_N];
    for (int b = 0; b < 256; b++) {
        gpt2_char(b, chars[b]);
        tokens[b] = chars[b];
        types[b] = 1;
    }
    const char *tail[] = {"hi", "\xC4\xA0h", "\xC4\xA0hi", "<|endoftext|>", "<tool>"}; /* Ġ = U+0120 */
    const int32_t tail_types[] = {1, 1, 1, 3, 4};
    for (int i = 0; i < 5; i++) {
        tokens[BPE_HI + i] = tail[i];
        types[BPE_HI + i] = tail_types[i];
    }
    const char *merges[] = {"h i", "\xC4\xA0 h"}; /* rank 0: h+i, rank 1: Ġ+h; nothing builds Ġhi */
    vf_begin(f);
    vf_str(f, "tokenizer.ggml.model", "gpt2");
    vf_str(f, "tokenizer.ggml.pre", pre);
    vf_strs(f, "tokenizer.ggml.tokens", tokens, BPE_N);
    vf_i32s(f, "tokenizer.ggml.token_type", types, BPE_N);
    if (with_merges) vf_strs(f, "tokenizer.ggml.merges", merges, 2);
    vf_u32(f, "tokenizer.ggml.bos_token_id", BPE_EOT);
    vf_u32(f, "tokenizer.ggml.eos_token_id", BPE_EOT);
}

static void bpe_tests(void) {
    vocab_file f;
    rlx_tokenizer *t = NULL;
    bpe_vocab(&f, "qwen2", true);
    if (T_OK(vf_open(&f, &t))) {
        expect_ids(t, "bpe rank order", S(" hi"), 0, IDS(' ', BPE_HI));
        expect_ids(t, "bpe byte table", S("\n\t"), 0, IDS('\n', '\t')); /* ids follow byte order */
        expect_ids(t, "bpe two-byte character", S("\xC3\xA9"), 0, IDS(0xC3, 0xA9));
        expect_ids(t, "bpe special parsed", S("<|endoftext|>"), RLX_ENCODE_PARSE_SPECIAL, IDS(BPE_EOT));
        expect_ids(t, "bpe user-defined always", S("<tool>"), 0, IDS(BPE_TOOL));
        expect_ids(t, "bpe invalid byte", S("\x80"), 0, IDS(0xEF, 0xBF, 0xBD));
        expect_ids(t, "bpe no BOS for qwen2", S("hi"), RLX_ENCODE_ADD_SPECIAL, IDS(BPE_HI));
        int32_t *ids = NULL;
        size_t n = 0;
        if (T_OK(rlx_tokenizer_encode(t, S("<|endoftext|>"), 0, &ids, &n))) {
            bool found = false;
            for (size_t i = 0; i < n; i++) found |= ids[i] == BPE_EOT;
            T_CHECK(!found && n > 1, "control token text must not become the token without PARSE_SPECIAL: %s",
                    tt_ids_str(ids, n));
        }
        free(ids);
        expect_text(t, "bpe decode bytes", IDS(' ', BPE_HI, '\n', 0xC3, 0xA9), 0, S(" hi\n\xC3\xA9"));
        expect_text(t, "bpe decode control hidden", IDS(BPE_HI, BPE_EOT), 0, S("hi"));
        expect_text(t, "bpe decode control shown", IDS(BPE_HI, BPE_EOT), RLX_DECODE_SPECIAL, S("hi<|endoftext|>"));
        rlx_tokenizer_close(t);
    }
    bpe_vocab(&f, "llama-bpe", true);
    if (T_OK(vf_open(&f, &t))) {
        /* ignore_merges: "Ġhi" is a token, so the word is taken whole though no merge builds it. */
        expect_ids(t, "bpe llama-bpe ignore_merges", S(" hi"), 0, IDS(BPE_G_HI));
        expect_ids(t, "bpe llama-bpe adds BOS", S(" hi"), RLX_ENCODE_ADD_SPECIAL, IDS(BPE_EOT, BPE_G_HI));
        rlx_tokenizer_close(t);
    }

    bpe_vocab(&f, "no-such-pre", true);
    T_ERR(vf_open(&f, &t), RLX_ERR_UNSUPPORTED, "unknown pre-tokenizer 'no-such-pre'");
    bpe_vocab(&f, "no-such-pre", true);
    rlx_status s = vf_open(&f, &t);
    const char *msg = rlx_status_message(s);
    T_CHECK(s && strstr(msg, "qwen2") && strstr(msg, "llama-bpe") && strstr(msg, "deepseek-coder") && strstr(msg, "smaug-bpe"),
            "the unknown pre-tokenizer error must list the supported names: %s", msg);
    printf("unknown pre-tokenizer: %s\n", msg);
    rlx_status_free(s);
    bpe_vocab(&f, "qwen2", false);
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "without tokenizer.ggml.merges");
}

/* ---- bad metadata ---- */

static void bad_metadata(void) {
    vocab_file f;
    rlx_tokenizer *t = NULL;
    const char *toks[] = {"a", "b", "a"};
    const float scores[] = {0, 0};

    vf_begin(&f);
    vf_str(&f, "general.architecture", "llama");
    T_ERR(vf_open(&f, &t), RLX_ERR_NOT_FOUND, "no tokenizer.ggml.model");

    vf_begin(&f);
    vf_str(&f, "tokenizer.ggml.model", "t5");
    vf_strs(&f, "tokenizer.ggml.tokens", toks, 2);
    T_ERR(vf_open(&f, &t), RLX_ERR_UNSUPPORTED, "'t5' is not supported (supported: gpt2, llama, bert)");

    vf_begin(&f);
    vf_str(&f, "tokenizer.ggml.model", "llama");
    vf_u32(&f, "tokenizer.ggml.tokens", 3);
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "tokenizer.ggml.tokens");

    vf_begin(&f);
    vf_str(&f, "tokenizer.ggml.model", "llama");
    vf_strs(&f, "tokenizer.ggml.tokens", toks, 3);
    vf_f32s(&f, "tokenizer.ggml.scores", scores, 2);
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "2 entries for 3 tokens");

    vf_begin(&f);
    vf_str(&f, "tokenizer.ggml.model", "llama");
    vf_strs(&f, "tokenizer.ggml.tokens", toks, 3);
    vf_u32(&f, "tokenizer.ggml.bos_token_id", 0);
    vf_u32(&f, "tokenizer.ggml.eos_token_id", 1);
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "duplicate token in vocabulary: 'a' has ids 0 and 2");

    /* The llama default BOS id 1 does not exist in a 1-token vocabulary, yet BOS is added. */
    vf_begin(&f);
    vf_str(&f, "tokenizer.ggml.model", "llama");
    vf_strs(&f, "tokenizer.ggml.tokens", toks, 1);
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "add_bos_token is true, but the BOS token id is not set");

    vf_begin(&f);
    vf_str(&f, "tokenizer.ggml.model", "llama");
    vf_strs(&f, "tokenizer.ggml.tokens", toks, 2);
    vf_bool(&f, "tokenizer.ggml.add_bos_token", false);
    vf_str(&f, "tokenizer.ggml.eos_token_id", "two");
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "expected an integer token id");

    const char *bad_merge[] = {"nospace"};
    bpe_vocab(&f, "gpt-2", false);
    vf_strs(&f, "tokenizer.ggml.merges", bad_merge, 1);
    T_ERR(vf_open(&f, &t), RLX_ERR_BAD_FILE, "merge 'nospace' has no space");
}

int main(void) {
    spm_tests();
    bpe_tests();
    bad_metadata();
    return t_summary("test_tokenizer_unit");
}
