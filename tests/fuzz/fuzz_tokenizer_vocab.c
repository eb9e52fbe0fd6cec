/* Fuzz target: an HF directory of vocab.json + merges.txt + tokenizer_config.json
 * (rlx_tokenizer_open on the directory: the vocabulary object, merges lines and the #version
 * header, tokenizer_class, add_prefix_space, added_tokens_decoder, named special tokens), then
 * encoding and decoding a text.
 *
 * Input: byte 0 holds the encode flags (fuzz_tok_exercise) and bit 3 whether the config is written;
 * the rest is "vocab.json \xFF merges.txt \xFF tokenizer_config.json \xFF text" (the fixed sample
 * when the text is empty). */
#include "fuzz_tokenizer_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t *part[4];
    size_t len[4];
    fuzz_tok_split(data + 1, size - 1, 4, part, len);
    fuzz_tok_file("vocab.json", part[0] ? part[0] : data, len[0]);
    fuzz_tok_file("merges.txt", part[1] ? part[1] : data, len[1]);
    fuzz_tok_file("tokenizer_config.json", (data[0] & 8) ? part[2] : NULL, len[2]);
    rlx_tokenizer *t = NULL;
    rlx_status s = rlx_tokenizer_open(fuzz_tok_dir(), &t);
    if (!s) fuzz_tok_run(t, part[3], len[3], data[0]);
    rlx_status_free(s);
    return 0;
}
