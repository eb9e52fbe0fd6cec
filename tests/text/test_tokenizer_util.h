/* Helpers shared by the tokenizer tests: llama.cpp's test-tokenizer-0 vectors (fixtures
 * tokenizers/ggml-vocab-<name>.gguf.inp / .out), opening tokenizers, and printing id lists. */
#ifndef RLX_TESTS_TOKENIZER_UTIL_H
#define RLX_TESTS_TOKENIZER_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/tokenizer.h"

/* The vocabularies in the fixtures that come with .inp/.out vectors. */
extern const char *const TT_VOCABS_WITH_VECTORS[];
extern const size_t TT_N_VOCABS_WITH_VECTORS;

typedef struct tt_case {
    char *text;      /* owned */
    size_t len;
    int32_t *ids;    /* owned: the expected ids (no BOS, special tokens not parsed) */
    size_t n_ids;
} tt_case;

typedef struct tt_cases {
    tt_case *v; /* owned */
    size_t n;
} tt_cases;

/* Loads tokenizers/ggml-vocab-<name>.gguf.inp/.out: cases split on "\n__ggml_vocab_test__\n", one
 * .out line of space-separated ids per case. Exits 1 when the files disagree in count. */
tt_cases tt_load_cases(const char *name);
void tt_free_cases(tt_cases *c);

/* Opens a tokenizer or exits 1 with the message. */
rlx_tokenizer *tt_open(const char *path);

/* Formats up to 40 ids as "[1, 2, 3 ...]" into a static buffer rotated 4 ways. */
const char *tt_ids_str(const int32_t *ids, size_t n);
/* A printable, escaped, truncated rendering of text (static buffer rotated 4 ways). */
const char *tt_text_str(const char *text, size_t len);

/* Reads a whole file or exits 1. */
char *tt_read_file(const char *path, size_t *len);

#endif
