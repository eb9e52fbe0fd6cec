/* Fuzz target: a SentencePiece tokenizer.model (rlx_tok_load_spm_model: the protobuf wire format,
 * pieces, trainer and normalizer specs), then encoding and decoding a fixed text and the model's
 * own bytes as text.
 *
 * Input: byte 0 holds the encode flags (fuzz_tok_exercise); the rest is the tokenizer.model (its
 * bytes may be anything, so no separator splits it). */
#include "fuzz_tokenizer_util.h"
#include "text/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *path = fuzz_tok_file("tokenizer.model", data + 1, size - 1);
    rlx_tokenizer *t = NULL;
    rlx_status s = rlx_tok_load_spm_model(path, NULL, &t);
    if (!s) {
        fuzz_tok_exercise(t, data + 1, size - 1, data[0]);
        fuzz_tok_run(t, NULL, 0, data[0]);
    }
    rlx_status_free(s);
    return 0;
}
