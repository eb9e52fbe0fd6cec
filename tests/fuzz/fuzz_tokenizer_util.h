/* What the tokenizer fuzz targets share: splitting an input into its files, writing them where
 * the HF loaders (which take paths) read them, and exercising a loaded tokenizer. Header-only:
 * each target is its own program. */
#ifndef RLX_FUZZ_TOKENIZER_UTIL_H
#define RLX_FUZZ_TOKENIZER_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlx/tokenizer.h"

#define FUZZ_TOK_MAX_TEXT 1024 /* encode cost grows with the text; this keeps runs fast */
#define FUZZ_TOK_SAMPLE "Hello, world! <s> <|im_start|> \xC3\xA9\xF0\x9F\x98\x80 3333\n\t  it's  x"

/* Splits data at its first `parts - 1` 0xFF bytes (never in UTF-8 or JSON text) into part[],
 * len[]; missing parts are empty with part[i] NULL. */
static inline void fuzz_tok_split(const uint8_t *data, size_t size, int parts, const uint8_t **part, size_t *len) {
    for (int i = 0; i < parts; i++) {
        part[i] = NULL;
        len[i] = 0;
    }
    for (int i = 0; i < parts && data; i++) {
        const uint8_t *sep = i + 1 < parts ? memchr(data, 0xFF, size) : NULL;
        part[i] = data;
        len[i] = sep ? (size_t)(sep - data) : size;
        if (!sep) break;
        size -= len[i] + 1;
        data = sep + 1;
    }
}

static char fuzz_tok_dir_path[64];

static inline void fuzz_tok_cleanup(void) {
    static const char *const names[] = {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                                        "tokenizer.model"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", fuzz_tok_dir_path, names[i]);
        unlink(p);
    }
    rmdir(fuzz_tok_dir_path);
}

/* The process's scratch directory (made once, removed at exit). */
static inline const char *fuzz_tok_dir(void) {
    if (!fuzz_tok_dir_path[0]) {
        snprintf(fuzz_tok_dir_path, sizeof fuzz_tok_dir_path, "/tmp/rlx_fuzz_tok-XXXXXX");
        if (!mkdtemp(fuzz_tok_dir_path)) abort(); /* test harness: no scratch space is not a finding */
        atexit(fuzz_tok_cleanup);
    }
    return fuzz_tok_dir_path;
}

/* Writes name in the scratch directory (data NULL: removes it) and returns its path. */
static inline const char *fuzz_tok_file(const char *name, const uint8_t *data, size_t len) {
    static char path[4][128];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", fuzz_tok_dir(), name);
    if (!data) {
        unlink(p);
        return p;
    }
    FILE *f = fopen(p, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) abort();
    return p;
}

/* Encodes text with flags (bits: ADD_SPECIAL, PARSE_SPECIAL, decode CONTINUE), decodes the ids
 * whole and streaming, and decodes ids made from the text's bytes (in and out of range). */
static inline void fuzz_tok_exercise(const rlx_tokenizer *t, const uint8_t *text, size_t len, unsigned flags) {
    if (len > FUZZ_TOK_MAX_TEXT) len = FUZZ_TOK_MAX_TEXT;
    int32_t *ids = NULL;
    size_t n = 0;
    rlx_status s = rlx_tokenizer_encode(t, (const char *)text, len, flags & 3, &ids, &n);
    if (s) {
        rlx_status_free(s);
        return;
    }
    char *out = NULL;
    size_t out_len = 0;
    rlx_status_free(rlx_tokenizer_decode(t, ids, n, RLX_DECODE_SPECIAL, &out, &out_len));
    free(out);
    rlx_detokenizer *d = NULL;
    if (!rlx_detokenizer_create(t, (flags & 4) ? RLX_DECODE_CONTINUE : 0, &d)) {
        const char *p;
        size_t k;
        for (size_t i = 0; i < n; i++) rlx_status_free(rlx_detokenizer_push(d, ids[i], &p, &k));
        rlx_status_free(rlx_detokenizer_push(d, (int32_t)len - 7, &p, &k)); /* maybe out of range */
        rlx_detokenizer_finish(d, &p, &k);
        rlx_detokenizer_destroy(d);
    }
    free(ids);
    int32_t raw[16];
    size_t nr = len < 16 ? len : 16;
    for (size_t i = 0; i < nr; i++) raw[i] = (int32_t)text[i] * 3 - 40;
    out = NULL; /* decode leaves it untouched on error */
    rlx_status_free(rlx_tokenizer_decode(t, raw, nr, 0, &out, &out_len));
    free(out);
    for (int i = 0; i < RLX_SPECIAL_COUNT; i++) (void)rlx_tokenizer_special(t, (rlx_special)i);
    (void)rlx_tokenizer_describe(t);
}

/* Exercises t on text (the fixed sample when empty), then closes it. */
static inline void fuzz_tok_run(rlx_tokenizer *t, const uint8_t *text, size_t len, unsigned flags) {
    if (!text || !len) {
        text = (const uint8_t *)FUZZ_TOK_SAMPLE;
        len = strlen(FUZZ_TOK_SAMPLE);
    }
    fuzz_tok_exercise(t, text, len, flags);
    rlx_tokenizer_close(t);
}

#endif
