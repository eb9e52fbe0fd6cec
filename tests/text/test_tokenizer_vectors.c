/* llama.cpp's test-tokenizer-0 vectors: for one vocabulary (argv[1]), every case of
 * tokenizers/ggml-vocab-<name>.gguf.inp must tokenize (no BOS, special tokens not parsed) to the
 * ids on the matching line of .out. Those ids come from the model's own HF tokenizer, as
 * recorded by llama.cpp's tests/test-tokenizer-0.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_tokenizer_util.h"
#include "test_util.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s VOCAB (e.g. qwen2)\n", argv[0]);
        return 2;
    }
    const char *name = argv[1];
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf", name);
    t_require_fixture(rel);
    rlx_tokenizer *t = tt_open(t_fixture(rel));
    printf("%s: %s\n", rel, rlx_tokenizer_describe(t));
    tt_cases cases = tt_load_cases(name);
    size_t matched = 0;
    for (size_t i = 0; i < cases.n; i++) {
        const tt_case *c = &cases.v[i];
        int32_t *ids = NULL;
        size_t n = 0;
        if (!T_OK(rlx_tokenizer_encode(t, c->text, c->len, 0, &ids, &n))) continue;
        bool same = n == c->n_ids && (n == 0 || !memcmp(ids, c->ids, n * sizeof *ids));
        T_CHECK(same, "%s case %zu '%s': got %s, expected %s", name, i, tt_text_str(c->text, c->len),
                tt_ids_str(ids, n), tt_ids_str(c->ids, c->n_ids));
        matched += same;
        free(ids);
    }
    printf("%s: %zu/%zu cases match llama.cpp's expected ids\n", name, matched, cases.n);
    tt_free_cases(&cases);
    rlx_tokenizer_close(t);
    return t_summary("test_tokenizer_vectors");
}
