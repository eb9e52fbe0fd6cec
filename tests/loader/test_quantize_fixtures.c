/* rlx quantize against llama.cpp's own quantizer, on the fixture models/qwen3 (fixtures README:
 * qwen3-<TYPE>.gguf were written by llama-quantize / the converter from the same weights as
 * qwen3-F32.gguf).
 *
 * (b) For Q8_0, Q4_0, Q6_K, Q4_K_M and Q5_K_M: quantize qwen3-F32.gguf with rlx_quantize_file,
 *     then for every tensor check the same type and shape as llama.cpp's file (the mix rules:
 *     which tensors are Q6_K, which stay F32), the same tensor order (llama-quantize's; Q8_0 came
 *     from the converter and is compared by name), the same metadata keys in the same order (Q8_0:
 *     the same set) with
 *     general.file_type equal, and values: both dequantizations (loader/core/dequant, validated against
 *     gguf-py) within the quantization error of the F32 source: our relative RMS error at most
 *     QUALITY_MARGIN x llama.cpp's for the same tensor, and ours vs theirs at most the sum of the two
 *     errors (the triangle inequality; anything larger means a layout or scale bug).
 * (c) llama.cpp-quantized blocks (every quantized tensor of those files) decoded by our dequant
 *     and re-quantized to the same type by us decode to the same values within REQUANT_FRACTION of
 *     that type's quantization error: values already on the format's grid must stay (nearly) put. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/core/dequant.h"
#include "loader/format/gguf.h"
#include "loader/quant/quantize.h"
#include "test_util.h"

#define QUALITY_MARGIN 1.10   /* our error may exceed llama.cpp's by 10% on a tensor */
#define REQUANT_FRACTION 0.35 /* re-quantizing on-grid values: error < 35% of a fresh quantization's */

typedef struct err_stats {
    double worst_ratio;   /* ours / llama.cpp's relative error, worst tensor */
    double sum_ours, sum_theirs;
    int n;
} err_stats;

static float *dequant_all(const rlx_gguf_tensor *t) {
    float *y = malloc((size_t)t->n_elements * sizeof *y + 1);
    if (y) rlx_dequantize(t->type, t->data, y, t->n_elements);
    return y;
}

static double rel_rms(const float *a, const float *b, uint64_t n) {
    double se = 0, ss = 0;
    for (uint64_t i = 0; i < n; i++) {
        se += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ss += (double)b[i] * b[i];
    }
    return ss > 0 ? sqrt(se / ss) : sqrt(se);
}

/* by_name: the file came from the converter, whose key order is its own: compare the key sets. */
static void compare_metadata(const rlx_gguf *ours, const rlx_gguf *theirs, const char *type, bool by_name) {
    T_CHECK(ours->n_kv == theirs->n_kv, "%s: %llu metadata keys, llama.cpp's file has %llu", type,
            (unsigned long long)ours->n_kv, (unsigned long long)theirs->n_kv);
    for (uint64_t i = 0; i < ours->n_kv && i < theirs->n_kv; i++) {
        if (by_name)
            T_CHECK(rlx_gguf_find(theirs, ours->kv[i].key.s), "%s: key '%s' is not in llama.cpp's file", type,
                    ours->kv[i].key.s);
        else
            T_CHECK(!strcmp(ours->kv[i].key.s, theirs->kv[i].key.s), "%s: key %llu is '%s', llama.cpp's is '%s'", type,
                    (unsigned long long)i, ours->kv[i].key.s, theirs->kv[i].key.s);
    }
    uint32_t a = 0, b = 1;
    rlx_status e1 = NULL, e2 = NULL;
    rlx_gguf_get_u32(ours, "general.file_type", &a, &e1);
    rlx_gguf_get_u32(theirs, "general.file_type", &b, &e2);
    T_CHECK(!e1 && !e2 && a == b, "%s: general.file_type %u, llama.cpp's %u", type, a, b);
    rlx_status_free(e1);
    rlx_status_free(e2);
}

static void compare_tensor(const rlx_gguf_tensor *o, const rlx_gguf_tensor *l, const rlx_gguf_tensor *src,
                           const char *type, err_stats *st) {
    T_CHECK(o->type == l->type, "%s: '%s' is %s, llama.cpp chose %s", type, o->name.s, rlx_dtype_name(o->type),
            rlx_dtype_name(l->type));
    bool same_shape = o->n_dims == l->n_dims && !memcmp(o->ne, l->ne, sizeof o->ne);
    T_CHECK(same_shape, "%s: '%s' shape differs from llama.cpp's", type, o->name.s);
    if (!same_shape || o->type == RLX_DTYPE_F32) return;
    float *yo = dequant_all(o), *yl = dequant_all(l), *x = dequant_all(src);
    double eo = rel_rms(yo, x, o->n_elements), el = rel_rms(yl, x, o->n_elements), d = rel_rms(yo, yl, o->n_elements);
    T_CHECK(eo <= QUALITY_MARGIN * el + 1e-7, "%s: '%s' (%s) relative error %.5f vs llama.cpp's %.5f", type, o->name.s,
            rlx_dtype_name(o->type), eo, el);
    T_CHECK(d <= eo + el + 1e-7, "%s: '%s' ours vs llama.cpp's differ by %.5f, more than the errors %.5f + %.5f",
            type, o->name.s, d, eo, el);
    if (el > 0 && eo / el > st->worst_ratio) st->worst_ratio = eo / el;
    st->sum_ours += eo;
    st->sum_theirs += el;
    st->n++;
    free(yo);
    free(yl);
    free(x);
}

static void compare_with_llama(const char *type, const rlx_gguf *src) {
    char ref_rel[128], out[256];
    snprintf(ref_rel, sizeof ref_rel, "models/qwen3/qwen3-%s.gguf", type);
    snprintf(out, sizeof out, "/tmp/rlx_test_quantize_%d_%s.gguf", (int)getpid(), type);
    if (!T_OK(rlx_quantize_file(t_fixture("models/qwen3/qwen3-F32.gguf"), out, rlx_quant_recipe_find(type), 2, NULL,
                                NULL)))
        return;
    rlx_gguf *ours = NULL, *theirs = NULL;
    if (T_OK(rlx_gguf_open(out, &ours)) && T_OK(rlx_gguf_open(t_fixture(ref_rel), &theirs))) {
        bool by_name = !strcmp(type, "Q8_0"); /* written by the converter, in its own order */
        compare_metadata(ours, theirs, type, by_name);
        T_CHECK(ours->n_tensors == theirs->n_tensors, "%s: %llu tensors, llama.cpp's file %llu", type,
                (unsigned long long)ours->n_tensors, (unsigned long long)theirs->n_tensors);
        err_stats st = {0};
        for (uint64_t i = 0; i < ours->n_tensors && i < theirs->n_tensors; i++) {
            const rlx_gguf_tensor *o = &ours->tensors[i];
            const rlx_gguf_tensor *l = by_name ? rlx_gguf_find_tensor(theirs, o->name.s) : &theirs->tensors[i];
            const rlx_gguf_tensor *x = rlx_gguf_find_tensor(src, o->name.s);
            T_CHECK(l && !strcmp(l->name.s, o->name.s), "%s: tensor %llu is '%s', llama.cpp's is '%s'", type,
                    (unsigned long long)i, o->name.s, l ? l->name.s : "(missing)");
            if (l && x && !strcmp(l->name.s, o->name.s)) compare_tensor(o, l, x, type, &st);
        }
        printf("%-6s: %d quantized tensors, mean relative error ours %.4f%% / llama.cpp %.4f%%, worst ratio %.3f\n",
               type, st.n, st.n ? 100 * st.sum_ours / st.n : 0, st.n ? 100 * st.sum_theirs / st.n : 0, st.worst_ratio);
    }
    rlx_gguf_close(ours);
    rlx_gguf_close(theirs);
    remove(out);
}

/* (c): llama.cpp's bytes -> our dequant -> our quantizer -> our dequant. */
static void requantize_llama(const char *type, const rlx_gguf *src) {
    char rel[128];
    snprintf(rel, sizeof rel, "models/qwen3/qwen3-%s.gguf", type);
    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture(rel), &g))) return;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const rlx_gguf_tensor *t = &g->tensors[i];
        if (rlx_dtype_get(t->type)->block_size == 1) continue;
        const rlx_gguf_tensor *s = rlx_gguf_find_tensor(src, t->name.s);
        float *x = dequant_all(t), *y = malloc((size_t)t->n_elements * sizeof *y), *orig = dequant_all(s);
        uint8_t *q = malloc((size_t)t->nbytes);
        rlx_quantize_rows(t->type, x, q, t->n_elements / t->ne[0], t->ne[0]);
        rlx_dequantize(t->type, q, y, t->n_elements);
        double again = rel_rms(y, x, t->n_elements), fresh = rel_rms(x, orig, t->n_elements);
        printf("%-6s: %-26s %-5s re-quantized on-grid values: error %.4f%% (fresh quantization %.4f%%)\n", type,
               t->name.s, rlx_dtype_name(t->type), 100 * again, 100 * fresh);
        T_CHECK(again <= REQUANT_FRACTION * fresh, "%s: '%s' (%s) re-quantized with error %.5f, fresh %.5f", type,
                t->name.s, rlx_dtype_name(t->type), again, fresh);
        free(x);
        free(y);
        free(orig);
        free(q);
    }
    rlx_gguf_close(g);
}

int main(void) {
    t_require_fixture("models/qwen3/qwen3-F32.gguf");
    static const char *types[] = {"Q8_0", "Q4_0", "Q6_K", "Q4_K_M", "Q5_K_M"};
    rlx_gguf *src = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture("models/qwen3/qwen3-F32.gguf"), &src))) return t_summary("test_quantize_fixtures");
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "models/qwen3/qwen3-%s.gguf", types[i]);
        t_require_fixture(rel);
        compare_with_llama(types[i], src);
    }
    requantize_llama("Q4_0", src);
    requantize_llama("Q8_0", src);
    requantize_llama("Q4_K_M", src);
    requantize_llama("Q5_K_M", src);
    rlx_gguf_close(src);
    return t_summary("test_quantize_fixtures");
}
