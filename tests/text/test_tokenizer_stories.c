/* The embedded default model's SentencePiece vocabulary (models/stories260K.gguf) against
 * tests/data/stories260K-ref-hf.json, written by transformers from the same GGUF:
 *  - each prompt's text, with BOS, encodes to its "ids" ("Once upon a time" -> [1, 403, 407, 261, 378]);
 *  - the prompt ids followed by the greedy ids decode to "greedy_text" exactly, and the greedy ids
 *    alone (continuing the prompt) decode to greedy_text minus the prompt, in one call and token
 *    by token through the streaming decoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_tokenizer_util.h"
#include "test_util.h"

static int32_t *json_ids(json_t *arr, size_t *n) {
    *n = json_array_size(arr);
    int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
    for (size_t i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
    return ids;
}

static void check_stream(rlx_tokenizer *t, const int32_t *ids, size_t n, const char *want, size_t want_len, size_t p) {
    rlx_detokenizer *d;
    if (!T_OK(rlx_detokenizer_create(t, RLX_DECODE_CONTINUE, &d))) return;
    char *got = malloc(want_len + 1024);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *piece;
        size_t k;
        if (!T_OK(rlx_detokenizer_push(d, ids[i], &piece, &k))) break;
        if (len + k < want_len + 1024) memcpy(got + len, piece, k);
        len += k;
    }
    const char *rest;
    size_t k;
    rlx_detokenizer_finish(d, &rest, &k);
    T_CHECK(k == 0, "prompt %zu: %zu bytes held back at the end of ASCII text", p, k);
    T_CHECK(len == want_len && !memcmp(got, want, len), "prompt %zu: streamed '%s', expected '%s'", p,
            tt_text_str(got, len), tt_text_str(want, want_len));
    printf("prompt %zu: streaming %zu greedy ids gives %zu bytes, %s\n", p, n, len,
           len == want_len && !memcmp(got, want, len) ? "equal to greedy_text minus the prompt" : "DIFFERENT");
    free(got);
    rlx_detokenizer_destroy(d);
}

int main(void) {
    rlx_tokenizer *t = tt_open(t_source_path("models/stories260K.gguf"));
    printf("stories260K: %s\n", rlx_tokenizer_describe(t));
    T_CHECK(rlx_tokenizer_vocab_size(t) == 512, "vocab size %d, expected 512", rlx_tokenizer_vocab_size(t));
    T_CHECK(rlx_tokenizer_special(t, RLX_SPECIAL_BOS) == 1 && rlx_tokenizer_special(t, RLX_SPECIAL_EOS) == 2,
            "BOS %d EOS %d, expected 1 and 2 (the GGUF's ids)", rlx_tokenizer_special(t, RLX_SPECIAL_BOS),
            rlx_tokenizer_special(t, RLX_SPECIAL_EOS));
    T_CHECK(rlx_tokenizer_is_eog(t, 2) && !rlx_tokenizer_is_eog(t, 1), "EOS 2 must end generation, BOS 1 not");

    json_t *ref = t_load_json(t_source_path("tests/data/stories260K-ref-hf.json"));
    json_t *prompts = json_object_get(ref, "prompts"), *p;
    size_t i;
    json_array_foreach(prompts, i, p) {
        const char *text = json_string_value(json_object_get(p, "text"));
        const char *greedy_text = json_string_value(json_object_get(p, "greedy_text"));
        size_t n_want, n_greedy;
        int32_t *want = json_ids(json_object_get(p, "ids"), &n_want);
        int32_t *greedy = json_ids(json_object_get(p, "greedy"), &n_greedy);

        int32_t *ids = NULL;
        size_t n = 0;
        if (T_OK(rlx_tokenizer_encode(t, text, strlen(text), RLX_ENCODE_ADD_SPECIAL, &ids, &n))) {
            bool ok = n == n_want && !memcmp(ids, want, n * sizeof *ids);
            T_CHECK(ok, "prompt %zu '%s': got %s, expected %s", i, text, tt_ids_str(ids, n), tt_ids_str(want, n_want));
            printf("prompt %zu: '%s' with BOS -> %s (%s)\n", i, text, tt_ids_str(ids, n), ok ? "equal to the reference" : "DIFFERENT");
        }
        free(ids);

        int32_t *all = malloc((n_want + n_greedy) * sizeof *all);
        memcpy(all, want, n_want * sizeof *all);
        memcpy(all + n_want, greedy, n_greedy * sizeof *all);
        char *out = NULL;
        size_t len = 0;
        if (T_OK(rlx_tokenizer_decode(t, all, n_want + n_greedy, 0, &out, &len)))
            T_CHECK(len == strlen(greedy_text) && !memcmp(out, greedy_text, len),
                    "prompt %zu: prompt + greedy ids decode to '%s', expected '%s'", i, tt_text_str(out, len),
                    tt_text_str(greedy_text, strlen(greedy_text)));
        free(out);

        size_t plen = strlen(text);
        T_CHECK(!strncmp(greedy_text, text, plen), "prompt %zu: greedy_text does not start with the prompt", i);
        const char *cont = greedy_text + plen;
        if (T_OK(rlx_tokenizer_decode(t, greedy, n_greedy, RLX_DECODE_CONTINUE, &out, &len)))
            T_CHECK(len == strlen(cont) && !memcmp(out, cont, len), "prompt %zu: greedy ids decode to '%s', expected '%s'",
                    i, tt_text_str(out, len), tt_text_str(cont, strlen(cont)));
        free(out);
        check_stream(t, greedy, n_greedy, cont, strlen(cont), i);
        free(all);
        free(want);
        free(greedy);
    }
    json_decref(ref);
    rlx_tokenizer_close(t);
    return t_summary("test_tokenizer_stories");
}
