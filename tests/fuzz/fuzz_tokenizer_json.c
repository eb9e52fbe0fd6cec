/* Fuzz target: an HF tokenizer.json (rlx_tok_load_hf_json: model vocab and merges, added_tokens,
 * normalizer, pre_tokenizer incl. Split regexes, post_processor) with an optional
 * tokenizer_config.json beside it (named special tokens, add_bos_token / add_eos_token), then
 * encoding and decoding a text.
 *
 * Input: byte 0 holds the encode flags (fuzz_tok_exercise) and bit 3 whether the config is used;
 * the rest is "tokenizer.json \xFF tokenizer_config.json \xFF text" (the fixed sample when the text
 * is empty). */
#include "fuzz_tokenizer_util.h"
#include "text/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t *part[3];
    size_t len[3];
    fuzz_tok_split(data + 1, size - 1, 3, part, len);
    const char *json = fuzz_tok_file("tokenizer.json", part[0] ? part[0] : data, len[0]);
    const char *config = (data[0] & 8) && part[1] ? fuzz_tok_file("tokenizer_config.json", part[1], len[1]) : NULL;
    rlx_tokenizer *t = NULL;
    rlx_status s = rlx_tok_load_hf_json(json, config, &t);
    if (!s) fuzz_tok_run(t, part[2], len[2], data[0]);
    rlx_status_free(s);
    return 0;
}
