/* Fuzz target for the model config read from GGUF metadata (rlx_model_config_from_gguf): any bytes
 * that parse as a GGUF give a config or an error, never a crash. Seeds: tests/corpus/gguf_config/,
 * the metadata of each family's fixture GGUF (qwen3, llama32, gemma3, qwen3moe, qwen35, qwen35moe,
 * stories260K) without the tokenizer arrays and tensors, with `<arch>.vocab_size` set. */
#include <stddef.h>
#include <stdint.h>

#include "loader/format/gguf.h"
#include "loader/format/model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(data, size, &g);
    if (s) {
        rlx_status_free(s);
        return 0;
    }
    rlx_model_config c;
    rlx_status_free(rlx_model_config_from_gguf(g, &c));
    rlx_gguf_close(g);
    return 0;
}
