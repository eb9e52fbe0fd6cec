/* GGUF == HF for every fixture family: the config read from the GGUF's metadata equals the config
 * read from hf/config.json, field by field, and every tensor of the GGUF equals the hf/
 * safetensors tensor after rlx's name mapping and converter transforms.
 *
 * Truth: the GGUFs were written by llama.cpp's convert_hf_to_gguf.py from the same hf/ weights
 * (fixtures README). The F32 GGUF holds the converter's float32 values exactly, so against the
 * bf16 source (bf16 -> f32 is exact) every value must match bit for bit; where only an F16 GGUF
 * exists, the F16-stored tensors must match within f16 rounding: |d| <= 2^-11 |x| (half an ulp
 * of the 11-bit significand), or <= 2^-25 in the subnormal range, while the tensors the converter
 * keeps in F32 (norms, router) must still match exactly.
 *
 * llama3's rope scaling parameters live only in config.json (the converter bakes them into
 * rope_freqs.weight), so those four config fields are compared only when both sources have them.
 *
 * Every other GGUF of the family (BF16, Q8_0, K-quants, written by llama-quantize from the same
 * conversion) must open too, pass the shape validation, and give the same config. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dequant.h"
#include "loader/format/model.h"
#include "test_util.h"

typedef struct family_case {
    const char *dir;  /* under models/ */
    const char *gguf; /* the least-rounded GGUF the fixtures hold */
} family_case;

static const family_case cases[] = {
    {"qwen3", "qwen3-F32.gguf"},       {"llama32", "llama32-F32.gguf"}, {"gemma3", "gemma3-F16.gguf"},
    {"qwen3moe", "qwen3moe-F16.gguf"}, {"qwen35", "qwen35-F32.gguf"},   {"qwen35moe", "qwen35moe-F32.gguf"},
};

#define CMP_U(field)                                                                                               \
    T_CHECK(a->field == b->field, "%s config." #field ": GGUF %llu, HF %llu", fam, (unsigned long long)a->field,  \
            (unsigned long long)b->field)
#define CMP_I(field) T_CHECK(a->field == b->field, "%s config." #field ": GGUF %d, HF %d", fam, (int)a->field, (int)b->field)
#define CMP_F(field)                                                                                               \
    T_CHECK(a->field == b->field, "%s config." #field ": GGUF %.9g, HF %.9g", fam, (double)a->field, (double)b->field)

static void compare_config(const char *fam, const rlx_model_config *a, const rlx_model_config *b) {
    int before = t_failures;
    CMP_I(family);
    CMP_U(n_layer);
    CMP_U(n_embd);
    CMP_U(n_head);
    CMP_U(n_head_kv);
    CMP_U(head_dim);
    CMP_U(head_dim_v);
    CMP_U(n_ff);
    CMP_U(n_vocab);
    CMP_U(n_ctx_train);
    CMP_F(rms_eps);
    CMP_I(tied_embeddings);
    CMP_I(rope_mode);
    CMP_U(n_rot);
    CMP_F(rope_base);
    CMP_F(rope_base_local);
    CMP_I(has_rope_freqs);
    if (a->rope_scale_factor != 0.0f) { /* see the header comment */
        CMP_F(rope_scale_factor);
        CMP_F(rope_low_freq_factor);
        CMP_F(rope_high_freq_factor);
        CMP_U(rope_orig_ctx);
    }
    CMP_U(sliding_window);
    CMP_F(attn_scale);
    CMP_F(embd_scale);
    for (uint32_t il = 0; il < a->n_layer && il < RLX_MAX_LAYERS; il++)
        T_CHECK(a->layer_kind[il] == b->layer_kind[il], "%s config.layer_kind[%u]: GGUF %d, HF %d", fam, il,
                a->layer_kind[il], b->layer_kind[il]);
    CMP_U(n_expert);
    CMP_U(n_expert_used);
    CMP_U(n_ff_exp);
    CMP_I(norm_topk_prob);
    CMP_U(n_ff_shexp);
    CMP_U(ssm_conv_kernel);
    CMP_U(ssm_state_size);
    CMP_U(ssm_group_count);
    CMP_U(ssm_inner_size);
    CMP_U(ssm_time_step_rank);
    CMP_U(full_attention_interval);
    CMP_I(bos_id);
    CMP_I(eos_id);
    printf("%s: config GGUF vs HF: %s (n_layer %u, n_embd %u, heads %u/%u, head_dim %u, n_rot %u, vocab %u)\n", fam,
           t_failures == before ? "all fields equal" : "DIFFERENT", a->n_layer, a->n_embd, a->n_head, a->n_head_kv,
           a->head_dim, a->n_rot, a->n_vocab);
}

static uint64_t n_elements(const rlx_weight *w) { return w->ne[0] * w->ne[1] * w->ne[2] * w->ne[3]; }

static float *to_f32(const rlx_weight *w) {
    uint64_t n = n_elements(w);
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        fprintf(stderr, "FAIL: out of memory for '%s'\n", w->name);
        exit(1);
    }
    if (!T_OK(rlx_dequantize_tensor(w->type, w->data, w->nbytes, v, n, w->name))) memset(v, 0, n * sizeof *v);
    return v;
}

typedef struct stats {
    size_t tensors, exact_tensors;
    double worst_abs, worst_rel; /* over F16-stored tensors */
    const char *worst_name;
} stats;

/* F32 in the GGUF: bit-exact. F16: within f16 rounding of the HF value. */
static void compare_values(const char *fam, const rlx_weight *g, const rlx_weight *h, stats *st) {
    uint64_t n = n_elements(g);
    float *gv = to_f32(g), *hv = to_f32(h);
    uint64_t bad = 0, first_bad = 0;
    bool exact = true;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)gv[i] - (double)hv[i]);
        if (d != 0.0) exact = false;
        bool ok;
        if (g->type == RLX_DTYPE_F16) {
            ok = d <= fmax(ldexp(fabs((double)hv[i]), -11), ldexp(1.0, -25));
            /* relative error is reported over f16's normal range (|x| >= 2^-14) */
            double rel = fabs((double)hv[i]) >= 0x1p-14 ? d / fabs((double)hv[i]) : 0.0;
            if (d > st->worst_abs) st->worst_abs = d;
            if (rel > st->worst_rel) {
                st->worst_rel = rel;
                st->worst_name = g->name;
            }
        } else {
            ok = memcmp(&gv[i], &hv[i], sizeof(float)) == 0;
        }
        if (!ok && bad++ == 0) first_bad = i;
    }
    T_CHECK(bad == 0, "%s '%s' (GGUF %s, HF %s): %llu of %llu values differ; first at %llu: GGUF %.9g, HF %.9g", fam,
            g->name, rlx_dtype_name(g->type), rlx_dtype_name(h->type), (unsigned long long)bad, (unsigned long long)n,
            (unsigned long long)first_bad, (double)gv[first_bad], (double)hv[first_bad]);
    st->tensors++;
    st->exact_tensors += exact;
    free(gv);
    free(hv);
}

static void compare_weights(const char *fam, const rlx_model *g, const rlx_model *h) {
    stats st = {0};
    size_t i = 0, j = 0;
    while (i < g->n_weights || j < h->n_weights) {
        int c = i == g->n_weights ? 1 : j == h->n_weights ? -1 : strcmp(g->weights[i].name, h->weights[j].name);
        if (c < 0) {
            T_CHECK(0, "%s: tensor '%s' is in the GGUF but not in the mapped HF checkpoint", fam, g->weights[i++].name);
            continue;
        }
        if (c > 0) {
            T_CHECK(0, "%s: tensor '%s' is in the mapped HF checkpoint but not in the GGUF", fam, h->weights[j++].name);
            continue;
        }
        const rlx_weight *gw = &g->weights[i++], *hw = &h->weights[j++];
        bool same_shape = gw->n_dims == hw->n_dims && !memcmp(gw->ne, hw->ne, sizeof gw->ne);
        T_CHECK(same_shape, "%s '%s': GGUF shape [%llu %llu %llu %llu] (%u dims), HF [%llu %llu %llu %llu] (%u dims)",
                fam, gw->name, (unsigned long long)gw->ne[0], (unsigned long long)gw->ne[1],
                (unsigned long long)gw->ne[2], (unsigned long long)gw->ne[3], gw->n_dims,
                (unsigned long long)hw->ne[0], (unsigned long long)hw->ne[1], (unsigned long long)hw->ne[2],
                (unsigned long long)hw->ne[3], hw->n_dims);
        if (same_shape) compare_values(fam, gw, hw, &st);
    }
    printf("%s: %zu GGUF tensors vs %zu mapped HF tensors; %zu compared, %zu bit-exact; worst over F16-stored: "
           "|d| %.3g, relative %.3g in the normal range (bound 2^-11 = 4.9e-4) (%s)\n",
           fam, g->n_weights, h->n_weights, st.tensors, st.exact_tensors, st.worst_abs, st.worst_rel,
           st.worst_name ? st.worst_name : "none");
}

/* The quantized and other GGUFs of the family: open (validated) with the HF config. */
static void other_ggufs(const family_case *fc, const rlx_model *h) {
    char rel[512];
    snprintf(rel, sizeof rel, "models/%s", fc->dir);
    DIR *d = opendir(t_fixture(rel));
    if (!d) return;
    struct dirent *e;
    size_t n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".gguf") || !strcmp(e->d_name, fc->gguf)) continue;
        snprintf(rel, sizeof rel, "models/%s/%s", fc->dir, e->d_name);
        rlx_model *g = NULL;
        if (T_OK(rlx_model_open(t_fixture(rel), &g))) {
            char label[320];
            snprintf(label, sizeof label, "%s (%s)", fc->dir, e->d_name);
            int before = t_failures;
            compare_config(label, &g->config, &h->config);
            T_CHECK(g->n_weights == h->n_weights, "%s: %zu tensors, HF %zu", label, g->n_weights, h->n_weights);
            n += t_failures == before;
        }
        rlx_model_close(g);
    }
    closedir(d);
    printf("%s: %zu other GGUF files open with the HF config\n", fc->dir, n);
}

static void run_case(const family_case *fc) {
    char gguf_rel[256], hf_rel[256];
    snprintf(gguf_rel, sizeof gguf_rel, "models/%s/%s", fc->dir, fc->gguf);
    snprintf(hf_rel, sizeof hf_rel, "models/%s/hf", fc->dir);
    rlx_model *g = NULL, *h = NULL;
    if (T_OK(rlx_model_open(t_fixture(gguf_rel), &g)) && T_OK(rlx_model_open(t_fixture(hf_rel), &h))) {
        compare_config(fc->dir, &g->config, &h->config);
        compare_weights(fc->dir, g, h);
        other_ggufs(fc, h);
        T_CHECK(rlx_model_n_params(g) == rlx_model_n_params(h), "%s: parameter counts GGUF %llu, HF %llu", fc->dir,
                (unsigned long long)rlx_model_n_params(g), (unsigned long long)rlx_model_n_params(h));
    }
    rlx_model_close(g);
    rlx_model_close(h);
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "models/%s/%s", cases[i].dir, cases[i].gguf);
        t_require_fixture(rel);
        snprintf(rel, sizeof rel, "models/%s/hf/model.safetensors", cases[i].dir);
        t_require_fixture(rel);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    return t_summary("test_model_parity");
}
