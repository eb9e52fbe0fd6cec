/* Hostile tokenizer files must fail cleanly, and within bounds:
 *  - regex cost: a tokenizer.json Split pattern that backtracks without bound, on a 2 KB prompt,
 *    is an RLX_ERR_BAD_FILE naming the pattern and its spent budget (ctest's TIMEOUT is the hang
 *    guard: before the budget this took 43 s); so is a sequence of patterns each tuned to stay just
 *    under PCRE2's per-position limits. Long ordinary texts (prose, code with deep indentation,
 *    long runs of spaces) still encode with the real qwen2 and llama-bpe patterns, and decode back
 *    to themselves (byte-level BPE is lossless);
 *  - memory: a 22 KB tokenizer.json (and a vocab.json) whose one id is 16,777,215 is refused,
 *    not padded to 16.7 M entries; a few holes among the ids are still accepted (they become
 *    UNUSED "[PAD<id>]" tokens, as llama.cpp pads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_tokenizer_util.h"
#include "test_util.h"

static const char *write_file(const char *name, const char *text, size_t len) {
    const char *p = t_tmp_path(name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "FAIL: cannot write %s\n", p);
        exit(1);
    }
    return p;
}

/* A tokenizer.json of the letters a..z (ids 0..25) and "ab" (26, merged from "a b") with the given
 * pre_tokenizer JSON. */
static const char *letters_tokenizer(const char *pre_tokenizer) {
    static char buf[8192];
    int n = snprintf(buf, sizeof buf, "{\"version\": \"1.0\", \"added_tokens\": [], \"pre_tokenizer\": %s, "
                     "\"model\": {\"type\": \"BPE\", \"vocab\": {", pre_tokenizer);
    for (int c = 0; c < 26; c++) n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\"%c\": %d", c ? ", " : "", 'a' + c, c);
    n += snprintf(buf + n, sizeof buf - (size_t)n, ", \"ab\": 26}, \"merges\": [\"a b\"]}}");
    return write_file("tokenizer.json", buf, (size_t)n);
}

static const char *split(char *buf, size_t size, const char *regex) {
    snprintf(buf, size, "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"%s\"}, \"behavior\": \"Isolated\", "
             "\"invert\": false}", regex);
    return buf;
}

static void expect_budget_error(const char *pre_tokenizer, const char *needle) {
    rlx_tokenizer *t = NULL;
    if (!T_OK(rlx_tokenizer_open(letters_tokenizer(pre_tokenizer), &t))) return;
    char prompt[2048];
    for (size_t i = 0; i < sizeof prompt; i++) prompt[i] = (char)('a' + i % 10);
    int32_t *ids = NULL;
    size_t n = 0;
    rlx_status s = rlx_tokenizer_encode(t, prompt, sizeof prompt, 0, &ids, &n);
    if (s) printf("2 KB prompt: %s\n", rlx_status_message(s));
    T_CHECK(s && strstr(rlx_status_message(s), "exceeded the budget"), "expected the regex budget error");
    T_ERR(s, RLX_ERR_BAD_FILE, needle);
    free(ids);
    rlx_tokenizer_close(t);
}

static void regex_budget(void) {
    char one[512];
    /* The pattern: 2^20-ish ways to fail at every start position. */
    expect_budget_error(split(one, sizeof one, "(?:.?){20}.{20}(?!)"), "/(?:.?){20}.{20}(?!)/");
    /* Each of these stays under PCRE2's per-position limit; only the total shows. */
    char seq[4096];
    int n = snprintf(seq, sizeof seq, "{\"type\": \"Sequence\", \"pretokenizers\": [");
    for (int k = 3; k <= 10; k++) {
        char re[64], item[512];
        snprintf(re, sizeof re, "(?:.?){%d}.{%d}(?!)", k, k);
        n += snprintf(seq + n, sizeof seq - (size_t)n, "%s%s", k > 3 ? ", " : "", split(item, sizeof item, re));
    }
    snprintf(seq + n, sizeof seq - (size_t)n, "]}");
    expect_budget_error(seq, "(?!)/: its matching cost exceeded the budget");
}

/* The matcher searches a window of start positions at a time and retries expensive positions one
 * by one: neither may lose a match. A Split that isolates every "b" keeps "a" and "b" apart, so
 * "a...ab" must give k x a then b, never the merged "ab" (26), wherever the b falls. The other
 * patterns cost a unit per character of a run before they fail (the JIT counts the group's
 * iterations, not a plain \s*): past the first limit, positions there go the slow way; the last
 * puts the b itself at the end of such a window. Spaces are not in the vocabulary: no ids. */
static void no_match_lost(void) {
    static const struct {
        const char *regex; /* as JSON string content */
        size_t spaces;     /* before the k leading characters */
        char lead;
    } cases[] = {{"b", 0, 'a'}, {"(?:\\\\s(?!x))*\\\\n|b", 100, 'a'}, {"(?:a(?!x))*\\\\n|b", 0, 'a'}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char one[512];
        rlx_tokenizer *t = NULL;
        if (!T_OK(rlx_tokenizer_open(letters_tokenizer(split(one, sizeof one, cases[c].regex)), &t))) return;
        for (size_t k = 1; k < 140; k++) {
            char text[400];
            size_t sp = cases[c].spaces;
            memset(text, ' ', sp);
            memset(text + sp, cases[c].lead, k);
            text[sp + k] = 'b';
            int32_t *ids = NULL;
            size_t n = 0;
            if (!T_OK(rlx_tokenizer_encode(t, text, sp + k + 1, 0, &ids, &n))) break;
            size_t n_a = cases[c].lead == 'a' ? k : 0;
            bool ok = n == n_a + 1 && ids[n_a] == 1;
            for (size_t i = 0; ok && i < n_a; i++) ok = ids[i] == 0;
            T_CHECK(ok, "case %zu, b after %zu x '%c': %s", c, k, cases[c].lead, tt_ids_str(ids, n));
            free(ids);
        }
        rlx_tokenizer_close(t);
    }
}

/* Text that real tokenizers meet: prose, code indented by up to 1,000 spaces, runs of spaces and
 * newlines of up to 20,000, digits and non-ASCII letters. */
static char *long_text(size_t size) {
    static const char *const pieces[] = {
        "The quick brown fox jumps over the lazy dog. ", "It's 12345 o'clock; ",  "caf\xC3\xA9 na\xC3\xAFve ",
        "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C ", "x = foo(bar[3], \"baz\");\n", "\t\t}\r\n",
    };
    char *s = malloc(size + 1);
    if (!s) abort();
    uint32_t seed = 12345;
    size_t n = 0;
    while (n < size) {
        seed = seed * 1103515245u + 12345u;
        uint32_t r = (seed >> 8) % 100;
        if (r < 90) {
            const char *p = pieces[r % 6];
            size_t k = strlen(p) < size - n ? strlen(p) : size - n;
            memcpy(s + n, p, k);
            n += k;
        } else {
            size_t run = r < 98 ? (seed >> 3) % 1000 : (seed >> 3) % 20000;
            char c = r % 2 ? ' ' : '\n';
            for (size_t i = 0; i < run && n < size; i++) s[n++] = c;
        }
    }
    while (n && ((uint8_t)s[n - 1] & 0xC0) == 0x80) n--; /* never end inside a character */
    if (n && (uint8_t)s[n - 1] >= 0xC0) n--;
    s[n] = '\0';
    return s;
}

static void long_texts(const char *vocab) {
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf", vocab);
    t_require_fixture(rel);
    rlx_tokenizer *t = tt_open(t_fixture(rel));
    size_t size = 256 * 1024;
    char *text = long_text(size);
    size = strlen(text);
    int32_t *ids = NULL;
    size_t n = 0;
    char *back = NULL;
    size_t back_len = 0;
    if (T_OK(rlx_tokenizer_encode(t, text, size, 0, &ids, &n)) &&
        T_OK(rlx_tokenizer_decode(t, ids, n, 0, &back, &back_len)))
        T_CHECK(back_len == size && !memcmp(back, text, size), "%s: a %zu-byte text does not decode back", vocab, size);
    printf("%s: %zu bytes -> %zu tokens\n", vocab, size, n);
    free(back);
    free(ids);
    free(text);
    rlx_tokenizer_close(t);
}

/* ---- memory: ids far beyond the entries ---- */

/* {"t0": 0, "t1": 1, ...} with n entries, then one more entry "far" with id far_id. With 1,601
 * entries ids may go up to 2 x 1601 + 256 - 1 = 3457. */
static size_t vocab_object(char *buf, size_t size, unsigned n, long far_id) {
    size_t o = (size_t)snprintf(buf, size, "{");
    for (unsigned i = 0; i < n; i++) o += (size_t)snprintf(buf + o, size - o, "\"t%u\": %u, ", i, i);
    o += (size_t)snprintf(buf + o, size - o, "\"far\": %ld}", far_id);
    return o;
}

static void sparse_ids(void) {
    static char vocab[32768], json[40000];
    size_t vn = vocab_object(vocab, sizeof vocab, 1600, 16777215);
    int n = snprintf(json, sizeof json, "{\"version\": \"1.0\", \"added_tokens\": [], \"pre_tokenizer\": null, "
                     "\"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": []}}", vocab);
    printf("tokenizer.json of %d bytes with id 16777215\n", n);
    T_CHECK(n > 20000 && n < 24000, "the crafted tokenizer.json has %d bytes, expected about 22 KB", n);
    rlx_tokenizer *t = NULL;
    const char *path = write_file("tokenizer.json", json, (size_t)n);
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_BAD_FILE, "token 'far' has id 16777215 (expected 0 .. 3457: the files list 1601 tokens");
    unlink(path);

    write_file("vocab.json", vocab, vn);
    write_file("merges.txt", "#version: 0.2\n", 14);
    T_ERR(rlx_tokenizer_open(t_tmp_dir("rlx_tok_limits"), &t), RLX_ERR_BAD_FILE, "token 'far' has id 16777215");

    /* A few holes: ids 0..9 and 12 make a vocabulary of 13 with two padding tokens. */
    vn = vocab_object(vocab, sizeof vocab, 10, 12);
    write_file("vocab.json", vocab, vn);
    if (T_OK(rlx_tokenizer_open(t_tmp_dir("rlx_tok_limits"), &t))) {
        T_CHECK(rlx_tokenizer_vocab_size(t) == 13, "vocabulary size %d, expected 13", rlx_tokenizer_vocab_size(t));
        T_CHECK(rlx_tokenizer_token_type(t, 11) == RLX_TOKEN_TYPE_UNUSED, "id 11 should be an UNUSED hole");
        rlx_tokenizer_close(t);
    }
    unlink(t_tmp_path("vocab.json"));
    unlink(t_tmp_path("merges.txt"));
}

int main(int argc, char **argv) {
    t_tmp_dir("rlx_tok_limits");
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || !strcmp(only, "regex")) {
        regex_budget();
        no_match_lost();
    }
    if (!only || !strcmp(only, "memory")) sparse_ids();
    if (!only || !strcmp(only, "long")) {
        long_texts("qwen2");
        long_texts("llama-bpe");
    }
    unlink(t_tmp_path("tokenizer.json"));
    t_tmp_dir_remove();
    return t_summary("test_tokenizer_limits");
}
