/* Fuzz target for the GGUF reader: parse, then touch everything a caller would. For each tensor
 * rlx can dequantize, the first block is dequantized (its bytes were validated to lie inside the
 * input); a few keys go through every getter; arrays are walked with rlx_gguf_arr_get.
 * Seeds: tests/corpus/gguf/ (written by `test_gguf_bad_input --write-corpus`). */
#include <stddef.h>
#include <stdint.h>

#include "loader/core/dequant.h"
#include "loader/format/gguf.h"

static void touch_getters(const rlx_gguf *g, const char *key) {
    rlx_status err = NULL;
    uint32_t u;
    float f;
    bool b;
    const char *s;
    const rlx_gguf_value *arr;
    rlx_gguf_get_u32(g, key, &u, &err), rlx_status_free(err);
    rlx_gguf_get_f32(g, key, &f, &err), rlx_status_free(err);
    rlx_gguf_get_bool(g, key, &b, &err), rlx_status_free(err);
    rlx_gguf_get_str(g, key, &s, &err), rlx_status_free(err);
    for (int t = 0; t <= RLX_GGUF_FLOAT64; t++) {
        if (rlx_gguf_get_arr(g, key, (rlx_gguf_type)t, &arr, &err)) {
            rlx_gguf_value v;
            for (uint64_t i = 0; i < arr->arr.n && i < 64; i++) rlx_gguf_arr_get(arr, i, &v);
            rlx_gguf_arr_get(arr, arr->arr.n, &v);
        }
        rlx_status_free(err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(data, size, &g);
    if (s) {
        rlx_status_free(s);
        return 0;
    }
    static float block[256]; /* the largest block (K-quants) holds 256 elements */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const rlx_gguf_tensor *t = &g->tensors[i];
        const rlx_dtype_info *info = rlx_dtype_get(t->type);
        if (!info || !info->can_dequantize || t->n_elements < info->block_size) continue;
        uint64_t n = info->block_size > 1 ? info->block_size : t->n_elements < 256 ? t->n_elements : 256;
        rlx_status_free(rlx_dequantize_tensor(t->type, t->data, t->nbytes, block, n, "fuzz"));
        rlx_gguf_find_tensor(g, t->name.s);
    }
    static const char *keys[] = {"general.architecture", "general.alignment", "general.name", "tokenizer.ggml.tokens"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) touch_getters(g, keys[i]);
    for (uint64_t i = 0; i < g->n_kv && i < 8; i++) touch_getters(g, g->kv[i].key.s);
    rlx_gguf_close(g);
    return 0;
}
