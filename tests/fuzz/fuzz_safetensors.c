/* Fuzz target for the safetensors reader and the HF -> GGUF conversion behind it: parse an image
 * from memory, touch the first and last byte of every tensor (validated to lie inside the input),
 * look each name up, then convert the tensor set as a small llama, qwen3moe, qwen35 and qwen35moe checkpoint
 * (name mapping, Q/K permutation, expert stacking, value-head reorder, norm shifts).
 * Seeds: tests/corpus/safetensors/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "loader/format/hf_convert.h"
#include "loader/format/model_config.h"
#include "loader/format/safetensors.h"

static const char *const configs[] = {
    "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":8,\"intermediate_size\":16,\"vocab_size\":4,"
    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4,\"max_position_embeddings\":64,"
    "\"rms_norm_eps\":1e-5,\"rope_parameters\":{\"rope_type\":\"llama3\",\"rope_theta\":500000.0,\"factor\":32.0}}",
    "{\"model_type\":\"qwen3_moe\",\"num_hidden_layers\":2,\"hidden_size\":8,\"vocab_size\":4,"
    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4,\"max_position_embeddings\":64,"
    "\"rms_norm_eps\":1e-6,\"num_experts\":2,\"num_experts_per_tok\":1,\"moe_intermediate_size\":4}",
    "{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":2,\"hidden_size\":8,\"intermediate_size\":16,"
    "\"vocab_size\":4,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4,"
    "\"max_position_embeddings\":64,\"rms_norm_eps\":1e-6,\"linear_conv_kernel_dim\":2,\"linear_key_head_dim\":2,"
    "\"linear_num_key_heads\":1,\"linear_num_value_heads\":2,\"linear_value_head_dim\":2}",
    "{\"model_type\":\"qwen3_5_moe_text\",\"num_hidden_layers\":2,\"hidden_size\":8,\"vocab_size\":4,"
    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4,\"max_position_embeddings\":64,"
    "\"rms_norm_eps\":1e-6,\"linear_conv_kernel_dim\":2,\"linear_key_head_dim\":2,\"linear_num_key_heads\":1,"
    "\"linear_num_value_heads\":2,\"linear_value_head_dim\":2,\"num_experts\":2,\"num_experts_per_tok\":1,"
    "\"moe_intermediate_size\":4,\"shared_expert_intermediate_size\":4}",
};

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rlx_safetensors *st = NULL;
    rlx_status s = rlx_safetensors_open_memory(data, size, &st);
    if (s) {
        rlx_status_free(s);
        return 0;
    }
    fuzz_touch_safetensors(st, &sink);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        rlx_model_config cfg;
        s = rlx_model_config_from_json(configs[c], strlen(configs[c]), "fuzz config", &cfg);
        if (s) abort(); /* the fixed configs are valid */
        rlx_hf_arena arena = {0};
        rlx_weight *w = NULL;
        size_t n = 0;
        s = rlx_hf_convert(st, &cfg, &arena, &w, &n);
        for (size_t i = 0; !s && i < n; i++) {
            const uint8_t *p = w[i].data;
            if (w[i].nbytes) sink ^= p[0] ^ p[w[i].nbytes - 1];
        }
        rlx_status_free(s);
        free(w);
        rlx_hf_arena_free(&arena);
    }
    rlx_safetensors_close(st);
    return 0;
}
