/* decode(encode(x)) == x, a property of every lossless vocabulary: byte-level BPE covers all
 * bytes, and SentencePiece falls back to <0xNN> byte tokens. For one tokenizer (argv[1]) and every
 * text of llama.cpp's vectors plus a few harder ones (NUL, CR LF, lone combining marks, 4-byte
 * characters), with and without BOS:
 *  - the ids decode to exactly x (a text that needed the unknown token is reported, not counted:
 *    the vocabulary cannot represent it; a tokenizer that normalizes to NFC gives back NFC(x));
 *  - the streaming decoder, fed the same ids one at a time, returns exactly x in pieces that are
 *    each valid UTF-8 (it never splits a character).
 * WordPiece (bert) is left out: it lowercases and strips accents by design. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_tokenizer_util.h"
#include "test_util.h"

/* nfc: what a tokenizer that normalizes to NFC first (Qwen2Tokenizer) gives back, by Unicode's
 * composition of e + U+0301 into U+00E9; NULL when NFC leaves the text alone. */
static const struct {
    const char *text;
    size_t len;
    const char *nfc;
} EXTRA[] = {
    {"a\0b", 3, NULL},
    {"line one\r\nline two\r\n", 20, NULL},
    {"\xCC\x81 combining acute alone, then e\xCC\x81", 34, "\xCC\x81 combining acute alone, then \xC3\xA9"},
    {"\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD gothic \xF0\x90\x8C\xB0", 24, NULL},
    {"   leading and trailing spaces   ", 33, NULL},
    {"<|im_start|> and <s> as plain text", 34, NULL},
};

static bool valid_utf8(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] < 0x80 ? 1 : (u[i] >> 5) == 6 ? 2 : (u[i] >> 4) == 14 ? 3 : (u[i] >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if ((u[i + j] & 0xC0) != 0x80) return false;
        i += k;
    }
    return true;
}

static const char *path_of(const char *name) {
    static char rel[256];
    if (!strcmp(name, "stories260K")) return t_source_path("models/stories260K.gguf");
    size_t n = strlen(name);
    if (n > 5 && !strcmp(name + n - 5, "-gguf")) {
        snprintf(rel, sizeof rel, "models/%.*s/%.*s-F16.gguf", (int)(n - 5), name, (int)(n - 5), name);
    } else if (n > 3 && !strcmp(name + n - 3, "-hf")) {
        snprintf(rel, sizeof rel, "models/%.*s/hf", (int)(n - 3), name);
    } else if (!strcmp(name, "hf-qwen2")) {
        snprintf(rel, sizeof rel, "tokenizers/hf-qwen2");
    } else {
        snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf", name);
    }
    t_require_fixture(rel);
    return t_fixture(rel);
}

typedef struct {
    size_t exact, unrepresentable, total;
} tally;

static bool has_unknown(rlx_tokenizer *t, const int32_t *ids, size_t n) {
    int32_t unk = rlx_tokenizer_special(t, RLX_SPECIAL_UNK);
    for (size_t i = 0; i < n; i++)
        if (ids[i] == unk && unk >= 0) return true;
    return false;
}

static bool stream_equals(rlx_tokenizer *t, const int32_t *ids, size_t n, const char *x, size_t len) {
    rlx_detokenizer *d;
    if (!T_OK(rlx_detokenizer_create(t, 0, &d))) return false;
    size_t at = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const char *p;
        size_t k;
        if (!T_OK(rlx_detokenizer_push(d, ids[i], &p, &k))) ok = false;
        else if (!valid_utf8(p, k) || at + k > len || memcmp(x + at, p, k)) ok = false;
        else at += k;
    }
    const char *p;
    size_t k;
    rlx_detokenizer_finish(d, &p, &k);
    rlx_detokenizer_destroy(d);
    return ok && k == 0 && at == len;
}

/* Encodes text[0, len) and expects x[0, xlen) back (x differs from text only under NFC). */
static void roundtrip(rlx_tokenizer *t, const char *text, size_t len, const char *x, size_t xlen, unsigned flags,
                      tally *c) {
    int32_t *ids = NULL;
    size_t n = 0;
    c->total++;
    if (!T_OK(rlx_tokenizer_encode(t, text, len, flags, &ids, &n))) return;
    if (has_unknown(t, ids, n)) {
        printf("  not representable (uses the unknown token): '%s'\n", tt_text_str(text, len));
        c->unrepresentable++;
        free(ids);
        return;
    }
    char *back = NULL;
    size_t blen = 0;
    if (T_OK(rlx_tokenizer_decode(t, ids, n, 0, &back, &blen))) {
        bool same = blen == xlen && !memcmp(back, x, xlen);
        T_CHECK(same, "'%s' (flags %u) -> %s -> '%s'", tt_text_str(text, len), flags, tt_ids_str(ids, n),
                tt_text_str(back, blen));
        T_CHECK(stream_equals(t, ids, n, x, xlen), "'%s' (flags %u): streaming decode differs or splits a character",
                tt_text_str(text, len), flags);
        c->exact += same;
    }
    free(back);
    free(ids);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s NAME (vocab name, stories260K, FAMILY-gguf, FAMILY-hf or hf-qwen2)\n", argv[0]);
        return 2;
    }
    t_require_fixture("tokenizers/ggml-vocab-qwen2.gguf.inp"); /* the texts */
    rlx_tokenizer *t = tt_open(path_of(argv[1]));
    printf("%s: %s\n", argv[1], rlx_tokenizer_describe(t));
    tt_cases cases = tt_load_cases("qwen2");
    bool nfc = strstr(rlx_tokenizer_describe(t), "NFC") != NULL;
    tally c = {0};
    for (int pass = 0; pass < 2; pass++) {
        unsigned flags = pass ? RLX_ENCODE_ADD_SPECIAL : 0;
        for (size_t i = 0; i < cases.n; i++) {
            const tt_case *k = &cases.v[i];
            roundtrip(t, k->text, k->len, k->text, k->len, flags, &c);
        }
        for (size_t i = 0; i < sizeof EXTRA / sizeof EXTRA[0]; i++) {
            const char *x = nfc && EXTRA[i].nfc ? EXTRA[i].nfc : EXTRA[i].text;
            size_t xlen = nfc && EXTRA[i].nfc ? strlen(EXTRA[i].nfc) : EXTRA[i].len;
            roundtrip(t, EXTRA[i].text, EXTRA[i].len, x, xlen, flags, &c);
        }
    }
    printf("%s: decode(encode(x)) == x for %zu of %zu texts (%zu not representable in this vocabulary)\n", argv[1],
           c.exact, c.total, c.unrepresentable);
    tt_free_cases(&cases);
    rlx_tokenizer_close(t);
    return t_summary("test_tokenizer_roundtrip");
}
