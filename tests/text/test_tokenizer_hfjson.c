/* HF tokenizer files beyond what the fixture models use, written small enough that every expected
 * id follows by hand from the `tokenizers` library's documented behaviour:
 *  - tokenizer.json: Sequence[Digits(individual), ByteLevel] pre-tokenization, merges as "a b"
 *    strings and as ["a", "b"] pairs, added tokens (special -> parsed on request; not special ->
 *    always, with lstrip/rstrip eating the spaces beside them), TemplateProcessing's BOS, the NFC
 *    normalizer, Split on a literal string;
 *  - unsupported pieces (normalizer, model type, pre-tokenizer type, Split behaviour, slow
 *    tokenizer class) are UNSUPPORTED errors naming them;
 *  - an HF directory whose tokenizer.json is SentencePiece-style falls back to its
 *    tokenizer.model (the fixture gemma3 one, when the fixtures are present). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_tokenizer_util.h"
#include "test_util.h"

static const char *dir; /* the test's directory (t_tmp_dir) */

static const char *write_file(const char *name, const char *text) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        fprintf(stderr, "FAIL: cannot write %s\n", p);
        exit(1);
    }
    return p;
}

/* Byte-level vocabulary pieces: "Ġ" is the space byte, "Ã" "©" the two bytes of é (C3 A9). */
#define VOCAB                                                                                      \
    "{\"a\": 0, \"b\": 1, \"\\u0120\": 2, \"1\": 3, \"2\": 4, \"ab\": 5, \"<|bos|>\": 6, \"<x>\": 7, "  \
    "\"\\u00c3\": 8, \"\\u00a9\": 9, \"-\": 10, \"e\": 11}"

static const char *tokenizer_json(const char *normalizer, const char *pre, const char *merges, const char *model_extra) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"version\": \"1.0\", \"added_tokens\": ["
             "{\"id\": 6, \"content\": \"<|bos|>\", \"special\": true, \"lstrip\": false, \"rstrip\": false},"
             "{\"id\": 7, \"content\": \"<x>\", \"special\": false, \"lstrip\": true, \"rstrip\": true}],"
             "\"normalizer\": %s, \"pre_tokenizer\": %s,"
             "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
             "\"<|bos|>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": "
             "{\"<|bos|>\": {\"id\": \"<|bos|>\", \"ids\": [6], \"tokens\": [\"<|bos|>\"]}}},"
             "\"model\": {\"type\": \"BPE\"%s, \"vocab\": " VOCAB ", \"merges\": %s}}",
             normalizer, pre, model_extra, merges);
    return buf;
}

#define DIGITS_BYTELEVEL                                                                           \
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true}, "   \
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}]}"

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static void expect_ids(rlx_tokenizer *t, const char *what, const char *text, unsigned flags, const int32_t *want,
                       size_t n_want) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (!T_OK(rlx_tokenizer_encode(t, text, strlen(text), flags, &ids, &n))) return;
    bool ok = n == n_want && !memcmp(ids, want, n * sizeof *ids);
    T_CHECK(ok, "%s: '%s' -> %s, expected %s", what, tt_text_str(text, strlen(text)), tt_ids_str(ids, n),
            tt_ids_str(want, n_want));
    printf("%s: '%s' -> %s%s\n", what, tt_text_str(text, strlen(text)), tt_ids_str(ids, n), ok ? "" : " (WRONG)");
    free(ids);
}

static rlx_tokenizer *open_ok(const char *path) {
    rlx_tokenizer *t = NULL;
    return T_OK(rlx_tokenizer_open(path, &t)) ? t : NULL;
}

static void supported(void) {
    const char *path = write_file("tokenizer.json", tokenizer_json("null", DIGITS_BYTELEVEL, "[\"a b\"]", ""));
    rlx_tokenizer *t = open_ok(path);
    if (t) {
        /* Digits isolates "1" and "2"; ByteLevel's regex splits "ab " into "ab" and " " (Ġ). */
        expect_ids(t, "digits + byte level", "ab 12", 0, IDS(5, 2, 3, 4));
        expect_ids(t, "TemplateProcessing BOS", "ab", RLX_ENCODE_ADD_SPECIAL, IDS(6, 5));
        expect_ids(t, "special added token, parsed", "<|bos|>ab", RLX_ENCODE_PARSE_SPECIAL, IDS(6, 5));
        expect_ids(t, "lstrip/rstrip added token", "a <x> b", 0, IDS(0, 7, 1));
        expect_ids(t, "é is two byte-level characters", "\xC3\xA9", 0, IDS(8, 9));
        T_CHECK(rlx_tokenizer_special(t, RLX_SPECIAL_BOS) == 6 && rlx_tokenizer_adds_bos(t), "BOS from the template");
        rlx_tokenizer_close(t);
    }
    path = write_file("tokenizer.json", tokenizer_json("{\"type\": \"NFC\"}", DIGITS_BYTELEVEL, "[[\"a\", \"b\"]]", ""));
    if ((t = open_ok(path))) {
        expect_ids(t, "NFC composes e + U+0301 into U+00E9", "e\xCC\x81", 0, IDS(8, 9));
        expect_ids(t, "merges as pairs", "ab", 0, IDS(5));
        rlx_tokenizer_close(t);
    }
    path = write_file("tokenizer.json",
                      tokenizer_json("null",
                                     "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
                                     "{\"String\": \"-\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": "
                                     "\"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
                                     "[\"a b\"]", ""));
    if ((t = open_ok(path))) {
        /* Without the split "a-b" would still be one word; with it "ab" cannot form across "-". */
        expect_ids(t, "Split on a literal string", "a-b", 0, IDS(0, 10, 1));
        expect_ids(t, "merge within a piece", "ab", 0, IDS(5));
        rlx_tokenizer_close(t);
    }
}

static void unsupported(void) {
    rlx_tokenizer *t = NULL;
    const char *path = write_file("tokenizer.json", tokenizer_json("{\"type\": \"Lowercase\"}", DIGITS_BYTELEVEL, "[]", ""));
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_UNSUPPORTED, "normalizer 'Lowercase' is not supported");
    path = write_file("tokenizer.json", tokenizer_json("null", "{\"type\": \"Whitespace\"}", "[]", ""));
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_UNSUPPORTED, "pre_tokenizer type 'Whitespace' is not supported");
    path = write_file("tokenizer.json",
                      tokenizer_json("null",
                                     "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"x\"}, \"behavior\": \"Removed\", "
                                     "\"invert\": false}",
                                     "[]", ""));
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_UNSUPPORTED, "behavior 'Removed'");
    path = write_file("tokenizer.json", tokenizer_json("null", "null", "[]", ", \"byte_fallback\": true"));
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_UNSUPPORTED, "byte_fallback");
    path = write_file("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}");
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_UNSUPPORTED, "model type 'WordPiece' is not supported");
    path = write_file("tokenizer.json", "{\"model\": ");
    T_ERR(rlx_tokenizer_open(path, &t), RLX_ERR_BAD_FILE, "invalid JSON");
    unlink(path);

    write_file("vocab.json", "{\"a\": 0}");
    write_file("merges.txt", "#version: 0.2\n");
    const char *config = write_file("tokenizer_config.json", "{\"tokenizer_class\": \"BertTokenizer\"}");
    T_ERR(rlx_tokenizer_open(dir, &t), RLX_ERR_UNSUPPORTED, "tokenizer_class 'BertTokenizer'");
    unlink(config);
    write_file("merges.txt", "#version: 0.2\nnospace\n");
    T_ERR(rlx_tokenizer_open(dir, &t), RLX_ERR_BAD_FILE, "merges.txt line 2");
    char p[600];
    snprintf(p, sizeof p, "%s/vocab.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/merges.txt", dir);
    unlink(p);
    T_ERR(rlx_tokenizer_open(dir, &t), RLX_ERR_NOT_FOUND, "no tokenizer.json, vocab.json + merges.txt, or tokenizer.model");
}

/* A SentencePiece-style tokenizer.json beside a tokenizer.model: the model file is used. */
static void fallback_to_model(void) {
    const char *rel = "models/gemma3/hf/tokenizer.model";
    if (access(t_fixture(rel), R_OK) != 0) {
        printf("fixture %s absent: the tokenizer.model fallback is not checked\n", rel);
        return;
    }
    char link[600];
    snprintf(link, sizeof link, "%s/tokenizer.model", dir);
    if (symlink(t_fixture(rel), link) != 0) {
        T_CHECK(false, "cannot link %s", link);
        return;
    }
    const char *json = write_file("tokenizer.json", tokenizer_json("null", "null", "[]", ", \"byte_fallback\": true"));
    rlx_tokenizer *t = open_ok(dir), *ref = tt_open(t_fixture("models/gemma3/hf"));
    if (t) {
        T_CHECK(rlx_tokenizer_get_kind(t) == RLX_TOKENIZER_SPM, "expected the tokenizer.model (SentencePiece)");
        int32_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        const char *text = "Once upon a time";
        if (T_OK(rlx_tokenizer_encode(t, text, strlen(text), RLX_ENCODE_ADD_SPECIAL, &a, &na)) &&
            T_OK(rlx_tokenizer_encode(ref, text, strlen(text), RLX_ENCODE_ADD_SPECIAL, &b, &nb)))
            T_CHECK(na == nb && !memcmp(a, b, na * sizeof *a), "fallback tokenizer differs from gemma3/hf: %s vs %s",
                    tt_ids_str(a, na), tt_ids_str(b, nb));
        printf("SentencePiece-style tokenizer.json: fell back to tokenizer.model (%s)\n", rlx_tokenizer_describe(t));
        free(a);
        free(b);
        rlx_tokenizer_close(t);
    }
    rlx_tokenizer_close(ref);
    unlink(json);
    unlink(link);
}

int main(void) {
    dir = t_tmp_dir("rlx_tok_hfjson");
    supported();
    unsupported();
    fallback_to_model();
    char p[600];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    unlink(p);
    t_tmp_dir_remove();
    return t_summary("test_tokenizer_hfjson");
}
