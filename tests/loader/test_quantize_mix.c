/* llama.cpp's per-tensor type choices (loader/quant/quant_mix.c) and tensor order.
 *
 *  1. Against llama.cpp's own files: the F32 fixtures' tensors, ordered and typed by our rules,
 *     must give exactly the order and types of qwen3-{Q4_0,Q6_K,Q4_K_M,Q5_K_M}.gguf,
 *     llama32-Q4_K_M.gguf, qwen35-Q4_K_M.gguf and qwen35moe-Q4_K_M.gguf (written by llama-quantize;
 *     the hybrid ones hold attn_qkv, attn_gate, ssm_*, and qwen35moe's 8-expert rules).
 *  2. On synth'd models (the tensor lists `rlx synth` writes for qwen3-0.6b, qwen3-8b and
 *     llama3.2-1b), against expectations derived by hand from llama-quant.cpp's rules:
 *       use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2
 *       n = 28: i in {0,1,2} u {24..27} u {5,8,11,14,17,20,23}          (14 layers)
 *       n = 36: i in {0..3} u {31..35} u {6,9,12,15,18,21,24,27,30}      (18 layers)
 *       n = 16: i in {0,1} u {14,15} u {4,7,10,13}                       (8 layers)
 *     Q4_K_M / Q5_K_M: attn_v and ffn_down of those layers Q6_K; output.weight Q6_K, and
 *     token_embd.weight Q6_K when tied (it is the output), else the default type; norms F32.
 *     Q4_K_S: attn_v of layers 0-3 and ffn_down of layers < n/8 Q5_K.
 *  3. Fallbacks (tensor_type_fallback): rows not a multiple of 256 take Q4_K -> Q5_0,
 *     Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 when even 32 does not divide them; the output rule
 *     picks Q8_0 for such rows; 1-D tensors (ggml_n_dims: trailing 1s do not count) never change;
 *     8-expert models put attn_v and attn_k in Q8_0.
 *  2b. The Qwen3.5 shapes (qwen3.5-0.8b: 24 layers, tied; qwen3.5-9b: 32 layers; qwen3.5-35b-a3b:
 *     40 layers, 256 experts), Q4_K_M, by the same rules as llama-quant.cpp applies them to the
 *     hybrid tensor names:
 *       - attn_qkv (the Gated DeltaNet's fused projection) counts as attn_v: n_attention_wv counts
 *         "attn_v.weight" and "attn_qkv.weight" alike, and each layer has one of the two, so the
 *         i-th of them is layer i's and gets Q6_K when use_more_bits(i, n_layer);
 *       - ffn_down, ffn_down_exps and ffn_down_shexp all match "ffn_down": with experts the layer
 *         comes from the name, so both of a layer's go Q6_K together;
 *       - ssm_conv1d and ffn_gate_inp(_shexp) are never quantized (tensor_allows_quantization),
 *         ssm_a / ssm_dt.bias / norms are 1-D; attn_gate, ssm_alpha, ssm_beta, ssm_out, attn_q,
 *         attn_k, attn_output, ffn_gate/up(_exps/_shexp) take the default Q4_K (the 8-expert
 *         attn_k / attn_output rules do not apply to 256 experts);
 *       n = 24: i in {0,1,2} u {21,22,23} u {5,8,11,14,17,20}
 *       n = 32: i in {0..3} u {28..31} u {6,9,...,27}
 *       n = 40: i in {0..4} u {35..39} u {7,10,...,34}
 *     llama-quantize (llama.cpp d32676d, ../shared/bench) gave exactly these types, in this order,
 *     on `rlx synth` F16 files of the three shapes at hidden size 256 (the layer counts as above,
 *     16 experts), which is where the rule reading above was checked.
 *  4. rope_freqs.weight as `rlx synth` computes it for llama3.2-1b (head_dim 64, theta 5e5, llama3
 *     scaling factor 32, low 1, high 4, original context 8192) against the tensor llama.cpp's
 *     converter wrote into fixture llama32-F32.gguf, whose config has those same values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/format/gguf.h"
#include "loader/quant/quantize.h"
#include "test_util.h"
#include "tools/synth_shapes.h"

/* ---- 1: llama.cpp's files ---- */

static void against_llama(const char *family, const char *type) {
    char src_rel[128], ref_rel[128];
    snprintf(src_rel, sizeof src_rel, "models/%s/%s-F32.gguf", family, family);
    snprintf(ref_rel, sizeof ref_rel, "models/%s/%s-%s.gguf", family, family, type);
    t_require_fixture(src_rel);
    t_require_fixture(ref_rel);
    rlx_gguf *src = NULL, *ref = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture(src_rel), &src)) || !T_OK(rlx_gguf_open(t_fixture(ref_rel), &ref))) {
        rlx_gguf_close(src);
        return;
    }
    size_t n = (size_t)src->n_tensors;
    const char **names = malloc(n * sizeof *names);
    size_t *order = malloc(n * sizeof *order);
    rlx_weight *w = calloc(n, sizeof *w);
    uint32_t *types = calloc(n, sizeof *types);
    for (size_t i = 0; i < n; i++) names[i] = src->tensors[i].name.s;
    rlx_quant_sort_order(names, n, order);
    for (size_t i = 0; i < n; i++) {
        const rlx_gguf_tensor *t = &src->tensors[order[i]];
        w[i] = (rlx_weight){t->name.s, t->type, t->n_dims, {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}, t->nbytes, NULL};
    }
    const char *arch = !strcmp(family, "llama32") ? "llama" : family;
    uint32_t n_layer = 0;
    char key[64];
    rlx_status err = NULL;
    snprintf(key, sizeof key, "%s.block_count", arch);
    T_CHECK(rlx_gguf_get_u32(src, key, &n_layer, &err), "%s: no %s", src_rel, key);
    rlx_status_free(err);
    err = NULL;
    uint32_t n_expert = 0;
    snprintf(key, sizeof key, "%s.expert_count", arch);
    rlx_gguf_get_u32(src, key, &n_expert, &err); /* dense: absent, 0 */
    rlx_status_free(err);
    rlx_quant_model_info m = {arch, n_layer, n_expert, 0, 0};
    T_OK(rlx_quant_choose_types(rlx_quant_recipe_find(type), &m, w, n, types));
    int diffs = 0;
    T_CHECK(ref->n_tensors == n, "%s %s: %zu tensors, llama.cpp's file %llu", family, type, n,
            (unsigned long long)ref->n_tensors);
    for (size_t i = 0; i < n && i < ref->n_tensors; i++) {
        const rlx_gguf_tensor *r = &ref->tensors[i];
        bool same = !strcmp(w[i].name, r->name.s) && types[i] == r->type;
        diffs += !same;
        T_CHECK(same, "%s %s: position %zu is '%s' %s, llama.cpp wrote '%s' %s", family, type, i, w[i].name,
                rlx_dtype_name(types[i]), r->name.s, rlx_dtype_name(r->type));
    }
    printf("%-8s %-6s: %zu tensors, order and types vs llama-quantize's file: %d differences\n", family, type, n, diffs);
    free(names);
    free(order);
    free(w);
    free(types);
    rlx_gguf_close(src);
    rlx_gguf_close(ref);
}

/* ---- 2: synth'd models ---- */

typedef struct mix_case {
    const char *like, *type;
    const int *more_bits; /* layers whose attn_v / ffn_down get the bigger type, -1 terminated */
    uint32_t base, bigger, embd, output; /* expected types */
} mix_case;

static const int layers28[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27, -1};
static const int layers36[] = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35, -1};
static const int layers16[] = {0, 1, 4, 7, 10, 13, 14, 15, -1};
static const int layers24[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23, -1};
static const int layers32[] = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31, -1};
static const int layers40[] = {0, 1, 2, 3, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 35, 36, 37, 38, 39, -1};
static const int q4ks_v[] = {0, 1, 2, 3, -1};      /* Q4_K_S attn_v: i_attention_wv < 4 */
static const int q4ks_down36[] = {0, 1, 2, 3, -1}; /* Q4_K_S ffn_down: i < 36/8 = 4 */

static bool in_list(const int *l, int v) {
    for (; *l >= 0; l++)
        if (*l == v) return true;
    return false;
}

static void check_synth_mix(const mix_case *c, const int *more_v, const int *more_down) {
    const rlx_synth_shape *s = rlx_synth_shape_find(c->like);
    rlx_synth_tensor *t = NULL;
    size_t n = 0;
    T_CHECK(s != NULL, "no --like shape '%s'", c->like);
    if (!s || !T_OK(rlx_synth_tensor_list(s, &t, &n))) return;
    const char **names = malloc(n * sizeof *names);
    size_t *order = malloc(n * sizeof *order);
    rlx_weight *w = calloc(n, sizeof *w);
    uint32_t *types = calloc(n, sizeof *types);
    for (size_t i = 0; i < n; i++) names[i] = t[i].name;
    rlx_quant_sort_order(names, n, order);
    for (size_t i = 0; i < n; i++) {
        const rlx_synth_tensor *x = &t[order[i]];
        w[i] = (rlx_weight){x->name, x->n_dims == 1 || x->force_f32 ? RLX_DTYPE_F32 : RLX_DTYPE_F16, x->n_dims,
                            {x->ne[0], x->ne[1], x->ne[2], 1}, 0, NULL};
    }
    rlx_quant_model_info m = {s->arch, s->n_layer, s->n_expert, s->n_head, s->n_head_kv};
    T_OK(rlx_quant_choose_types(rlx_quant_recipe_find(c->type), &m, w, n, types));
    int bad = 0, n_big = 0;
    for (size_t i = 0; i < n; i++) {
        int layer = -1;
        sscanf(w[i].name, "blk.%d.", &layer);
        uint32_t want = c->base;
        bool v_like = strstr(w[i].name, "attn_v.weight") || strstr(w[i].name, "attn_qkv.weight");
        if (w[i].n_dims == 1 || strstr(w[i].name, "ssm_conv1d") || strstr(w[i].name, "ffn_gate_inp")) want = RLX_DTYPE_F32;
        else if (!strcmp(w[i].name, "output.weight")) want = c->output;
        else if (!strcmp(w[i].name, "token_embd.weight")) want = c->embd;
        else if (v_like && in_list(more_v, layer)) want = c->bigger;
        else if (strstr(w[i].name, "ffn_down") && in_list(more_down, layer)) want = c->bigger;
        n_big += want == c->bigger;
        bad += types[i] != want;
        T_CHECK(types[i] == want, "%s %s: '%s' got %s, llama.cpp's rules give %s", c->like, c->type, w[i].name,
                rlx_dtype_name(types[i]), rlx_dtype_name(want));
    }
    printf("%-11s %-6s: %zu tensors, %d expected in %s (attn_v/ffn_down/output/embd), %d mismatches\n", c->like, c->type,
           n, n_big, rlx_dtype_name(c->bigger), bad);
    free(names);
    free(order);
    free(w);
    free(types);
    free(t);
}

static void test_synth_mixes(void) {
    const mix_case cases[] = {
        {"qwen3-0.6b", "Q4_K_M", layers28, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K},
        {"qwen3-0.6b", "Q5_K_M", layers28, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K},
        {"qwen3-8b", "Q4_K_M", layers36, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K},
        {"qwen3-8b", "Q5_K_M", layers36, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K},
        {"llama3.2-1b", "Q4_K_M", layers16, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K},
        {"qwen3.5-0.8b", "Q4_K_M", layers24, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K},
        {"qwen3.5-9b", "Q4_K_M", layers32, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K},
        {"qwen3.5-35b-a3b", "Q4_K_M", layers40, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_synth_mix(&cases[i], cases[i].more_bits, cases[i].more_bits);
    const mix_case q4ks = {"qwen3-8b", "Q4_K_S", NULL, RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K};
    check_synth_mix(&q4ks, q4ks_v, q4ks_down36);
    const int none[] = {-1};
    const mix_case others[] = {
        {"qwen3-8b", "Q6_K", none, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K},
        {"qwen3-8b", "Q8_0", none, RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0},
        {"qwen3-0.6b", "Q4_0", none, RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_0, RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K},
        {"qwen3-8b", "Q4_K", none, RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K}, /* pure */
        {"qwen3-8b", "F16", none, RLX_DTYPE_F16, RLX_DTYPE_F16, RLX_DTYPE_F16, RLX_DTYPE_F16},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) check_synth_mix(&others[i], none, none);
}

/* ---- 3: fallbacks and special cases ---- */

static uint32_t choose_one(const char *type, const rlx_weight *ts, size_t n, size_t which, uint32_t n_expert) {
    uint32_t types[8] = {0};
    rlx_quant_model_info m = {"qwen3", 8, n_expert, 8, 2};
    T_OK(rlx_quant_choose_types(rlx_quant_recipe_find(type), &m, ts, n, types));
    return types[which];
}

static void test_fallbacks(void) {
#define W(name, ne0, ne1) ((rlx_weight){name, RLX_DTYPE_F16, 2, {ne0, ne1, 1, 1}, 0, NULL})
    const rlx_weight q96[] = {W("blk.0.attn_q.weight", 96, 64), W("output.weight", 96, 64)};
    T_CHECK(choose_one("Q4_K_M", q96, 2, 0, 0) == RLX_DTYPE_Q5_0, "96 columns: Q4_K should fall back to Q5_0");
    T_CHECK(choose_one("Q5_K_M", q96, 2, 0, 0) == RLX_DTYPE_Q5_1, "96 columns: Q5_K should fall back to Q5_1");
    T_CHECK(choose_one("Q6_K", q96, 2, 0, 0) == RLX_DTYPE_Q8_0, "96 columns: Q6_K should fall back to Q8_0");
    T_CHECK(choose_one("Q4_K_M", q96, 2, 1, 0) == RLX_DTYPE_Q8_0, "96-column output should be Q8_0");
    const rlx_weight q100[] = {W("blk.0.attn_q.weight", 100, 64), W("output.weight", 100, 64)};
    T_CHECK(choose_one("Q4_K_M", q100, 2, 0, 0) == RLX_DTYPE_F16, "100 columns: nothing divides, F16");
    T_CHECK(choose_one("Q8_0", q100, 2, 0, 0) == RLX_DTYPE_F16, "100 columns under Q8_0: kept as it is (F16)");
    const rlx_weight flat[] = {(rlx_weight){"blk.0.attn_q.weight", RLX_DTYPE_F32, 2, {256, 1, 1, 1}, 0, NULL},
                               (rlx_weight){"blk.0.ffn_norm.weight", RLX_DTYPE_F32, 2, {256, 4, 1, 1}, 0, NULL},
                               (rlx_weight){"blk.0.ffn_gate_inp.weight", RLX_DTYPE_F32, 2, {256, 8, 1, 1}, 0, NULL}};
    T_CHECK(choose_one("Q4_K_M", flat, 3, 0, 0) == RLX_DTYPE_F32, "[256, 1] counts as 1-D and stays");
    T_CHECK(choose_one("Q4_K_M", flat, 3, 1, 0) == RLX_DTYPE_F32, "a 2-D *_norm.weight stays");
    T_CHECK(choose_one("Q4_K_M", flat, 3, 2, 0) == RLX_DTYPE_F32, "the expert router stays");
    const rlx_weight moe[] = {W("blk.0.attn_k.weight", 256, 64), W("blk.0.attn_v.weight", 256, 64),
                              (rlx_weight){"blk.3.ffn_down_exps.weight", RLX_DTYPE_F16, 3, {512, 256, 8, 1}, 0, NULL}};
    T_CHECK(choose_one("Q4_K_M", moe, 3, 0, 8) == RLX_DTYPE_Q8_0, "8 experts: attn_k Q8_0");
    T_CHECK(choose_one("Q4_K_M", moe, 3, 1, 8) == RLX_DTYPE_Q8_0, "8 experts: attn_v Q8_0");
    /* 8 layers: use_more_bits(3, 8) = (3 - 1) % 3 == 2: the layer comes from the name */
    T_CHECK(choose_one("Q4_K_M", moe, 3, 2, 8) == RLX_DTYPE_Q6_K, "8 experts: blk.3 ffn_down_exps Q6_K");
    rlx_weight bad_layer = (rlx_weight){"blk.9.ffn_down_exps.weight", RLX_DTYPE_F16, 3, {512, 256, 8, 1}, 0, NULL};
    uint32_t t1;
    rlx_quant_model_info m = {"qwen3moe", 8, 8, 8, 2};
    T_ERR(rlx_quant_choose_types(rlx_quant_recipe_find("Q4_K_M"), &m, &bad_layer, 1, &t1), RLX_ERR_BAD_FILE,
          "outside [0, 8)");
#undef W
    /* recipes: llama.h's LLAMA_FTYPE numbers, names case-insensitive */
    T_CHECK(rlx_quant_recipe_find("q4_k_m") && rlx_quant_recipe_find("q4_k_m")->ftype == 15, "Q4_K_M is ftype 15");
    T_CHECK(rlx_quant_recipe_find("Q5_K_M")->ftype == 17 && rlx_quant_recipe_find("Q6_K")->ftype == 18 &&
                rlx_quant_recipe_find("Q8_0")->ftype == 7 && rlx_quant_recipe_find("Q4_0")->ftype == 2 &&
                rlx_quant_recipe_find("F16")->ftype == 1 && rlx_quant_recipe_find("BF16")->ftype == 32,
            "ftype numbers differ from llama.h");
    T_CHECK(!rlx_quant_recipe_find("Q3_K_M") && !rlx_quant_recipe_find(""), "unknown recipes must not be found");
    printf("fallbacks: Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, ->F16, output Q8_0, 1-D/norm/router kept, 8-expert rules\n");
}

/* ---- 4: llama3 rope factors ---- */

static void test_rope_factors(void) {
    t_require_fixture("models/llama32/llama32-F32.gguf");
    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture("models/llama32/llama32-F32.gguf"), &g))) return;
    const rlx_gguf_tensor *t = rlx_gguf_find_tensor(g, "rope_freqs.weight");
    const rlx_synth_shape *s = rlx_synth_shape_find("llama3.2-1b");
    float ours[64];
    T_CHECK(t && t->type == RLX_DTYPE_F32 && t->n_elements == s->head_dim / 2, "fixture rope_freqs.weight: unexpected");
    if (t && t->n_elements == s->head_dim / 2) {
        rlx_synth_rope_factors(s, ours);
        double worst = 0;
        for (uint64_t i = 0; i < t->n_elements; i++) {
            float ref;
            memcpy(&ref, t->data + 4 * i, 4);
            worst = fmax(worst, fabs((double)ours[i] - ref) / ref);
        }
        printf("rope_freqs: %llu factors vs the converter's, worst relative difference %.2g\n",
               (unsigned long long)t->n_elements, worst);
        T_CHECK(worst <= 1e-6, "rope factors differ from the converter's by %g (relative)", worst);
    }
    rlx_gguf_close(g);
}

int main(void) {
    against_llama("qwen3", "Q4_0");
    against_llama("qwen3", "Q6_K");
    against_llama("qwen3", "Q4_K_M");
    against_llama("qwen3", "Q5_K_M");
    against_llama("llama32", "Q4_K_M");
    against_llama("qwen35", "Q4_K_M");
    against_llama("qwen35moe", "Q4_K_M");
    test_synth_mixes();
    test_fallbacks();
    test_rope_factors();
    return t_summary("test_quantize_mix");
}
