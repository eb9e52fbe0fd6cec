/* The fixtures' hf/model.safetensors files (written by transformers) open, with facts read off
 * independently by a few lines of Python (json + struct on the raw file): tensor counts, and one
 * tensor's dtype, shape, byte offset and first two values. */
#include <stdio.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/core/half.h"
#include "loader/format/safetensors.h"
#include "test_util.h"

static const struct {
    const char *family;
    size_t n_tensors;
} counts[] = {{"qwen3", 24}, {"llama32", 20}, {"gemma3", 80}, {"qwen3moe", 45}, {"qwen35", 55}};

int main(void) {
    char rel[128];
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        snprintf(rel, sizeof rel, "models/%s/hf/model.safetensors", counts[i].family);
        t_require_fixture(rel);
    }
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        snprintf(rel, sizeof rel, "models/%s/hf/model.safetensors", counts[i].family);
        rlx_safetensors *st = NULL;
        if (!T_OK(rlx_safetensors_open(t_fixture(rel), &st))) continue;
        T_CHECK(st->n_tensors == counts[i].n_tensors, "%s: %zu tensors, expected %zu", rel, st->n_tensors,
                counts[i].n_tensors);
        printf("%s: %zu tensors (expected %zu)\n", rel, st->n_tensors, counts[i].n_tensors);
        rlx_safetensors_close(st);
    }

    /* qwen3: 'model.embed_tokens.weight' sits at data offset 0 and 'model.layers.1.mlp.down_proj.weight'
     * (BF16 [256, 512]) at [1443584, 1705728); the latter's first two values are 0.0164794921875
     * and -0.1318359375 (bytes 87 3c 07 be). */
    rlx_safetensors *st = NULL;
    if (T_OK(rlx_safetensors_open(t_fixture("models/qwen3/hf"), &st))) {
        const rlx_st_tensor *e = rlx_safetensors_find(st, "model.embed_tokens.weight");
        const rlx_st_tensor *t = rlx_safetensors_find(st, "model.layers.1.mlp.down_proj.weight");
        T_CHECK(e && t, "qwen3: embed_tokens or layer 1 down_proj missing");
        if (e && t) {
            T_CHECK(t->type == RLX_DTYPE_BF16 && t->n_dims == 2 && t->shape[0] == 256 && t->shape[1] == 512,
                    "qwen3 down_proj: %s, %u dims [%llu, %llu]", rlx_dtype_name(t->type), t->n_dims,
                    (unsigned long long)t->shape[0], (unsigned long long)t->shape[1]);
            T_CHECK(t->data - e->data == 1443584, "qwen3 down_proj at data offset %lld, expected 1443584",
                    (long long)(t->data - e->data));
            uint16_t h[2];
            memcpy(h, t->data, sizeof h);
            float v0 = rlx_bf16_to_f32(h[0]), v1 = rlx_bf16_to_f32(h[1]);
            T_CHECK(v0 == 0.0164794921875f && v1 == -0.1318359375f, "qwen3 down_proj values %.9g %.9g", (double)v0,
                    (double)v1);
            printf("qwen3 down_proj: BF16 [256, 512] at data offset %lld, first values %.9g %.9g\n",
                   (long long)(t->data - e->data), (double)v0, (double)v1);
        }
    }
    rlx_safetensors_close(st);
    return t_summary("test_safetensors_fixtures");
}
