#include "test_tokenizer_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

const char *const TT_VOCABS_WITH_VECTORS[] = {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon",
                                               "gpt-2",    "llama-bpe",      "llama-spm",    "mpt",
                                               "phi-3",    "qwen2",          "refact",       "starcoder"};
const size_t TT_N_VOCABS_WITH_VECTORS = sizeof TT_VOCABS_WITH_VECTORS / sizeof TT_VOCABS_WITH_VECTORS[0];

char *tt_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "FAIL: cannot open %s\n", path);
        exit(1);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "FAIL: out of memory reading %s\n", path);
        exit(1);
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int32_t *parse_ids(const char *line, size_t len, size_t *n_out) {
    int32_t *ids = malloc((len / 2 + 1) * sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && line[i] == ' ') i++;
        if (i >= len) break;
        long v = 0;
        while (i < len && line[i] >= '0' && line[i] <= '9') v = v * 10 + (line[i++] - '0');
        ids[n++] = (int32_t)v;
        if (i < len && line[i] != ' ') {
            fprintf(stderr, "FAIL: bad character in .out line: '%.*s'\n", (int)len, line);
            exit(1);
        }
    }
    *n_out = n;
    return ids;
}

tt_cases tt_load_cases(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf.inp", name);
    size_t inp_len, out_len;
    char *inp = tt_read_file(t_fixture(rel), &inp_len);
    snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf.out", name);
    char *out = tt_read_file(t_fixture(rel), &out_len);

    static const char SEP[] = "\n__ggml_vocab_test__\n";
    tt_cases c = {0};
    size_t cap = 64;
    c.v = calloc(cap, sizeof *c.v);
    for (const char *p = inp, *end = inp + inp_len; p <= end;) {
        const char *s = strstr(p, SEP);
        const char *e = s ? s : end;
        if (c.n == cap) c.v = realloc(c.v, (cap *= 2) * sizeof *c.v);
        tt_case *k = &c.v[c.n++];
        *k = (tt_case){0};
        k->len = (size_t)(e - p);
        k->text = malloc(k->len + 1);
        memcpy(k->text, p, k->len);
        k->text[k->len] = '\0';
        if (!s) break;
        p = s + sizeof SEP - 1;
    }
    size_t line = 0;
    for (const char *p = out, *end = out + out_len; p <= end && line < c.n; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        c.v[line].ids = parse_ids(p, (size_t)(e - p), &c.v[line].n_ids);
        if (!nl) {
            line++;
            break;
        }
        p = nl + 1;
    }
    if (line != c.n) {
        fprintf(stderr, "FAIL: %s: %zu cases in .inp but %zu lines in .out\n", name, c.n, line);
        exit(1);
    }
    free(inp);
    free(out);
    return c;
}

void tt_free_cases(tt_cases *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].text);
        free(c->v[i].ids);
    }
    free(c->v);
    *c = (tt_cases){0};
}

rlx_tokenizer *tt_open(const char *path) {
    rlx_tokenizer *t = NULL;
    rlx_status s = rlx_tokenizer_open(path, &t);
    if (s) {
        fprintf(stderr, "FAIL: opening %s: %s\n", path, rlx_status_message(s));
        rlx_status_free(s);
        exit(1);
    }
    return t;
}

const char *tt_ids_str(const int32_t *ids, size_t n) {
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4];
    size_t o = (size_t)snprintf(b, 512, "[");
    for (size_t i = 0; i < n && i < 40 && o < 480; i++) o += (size_t)snprintf(b + o, 512 - o, "%s%d", i ? ", " : "", ids[i]);
    snprintf(b + o, 512 - o, "%s]", n > 40 ? " ..." : "");
    return b;
}

const char *tt_text_str(const char *text, size_t len) {
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4];
    size_t o = 0;
    for (size_t i = 0; i < len && o < 490; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') o += (size_t)snprintf(b + o, 512 - o, "\\n");
        else if (c == '\t') o += (size_t)snprintf(b + o, 512 - o, "\\t");
        else if (c < 0x20 || c == 0x7F) o += (size_t)snprintf(b + o, 512 - o, "\\x%02x", c);
        else b[o++] = (char)c;
    }
    snprintf(b + o, 512 - o, "%s", o >= 490 ? "..." : "");
    return b;
}
