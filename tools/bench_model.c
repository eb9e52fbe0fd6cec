/* Model facts for `rlx bench`: size, parameters, description, and the bytes of one decode step.
 *
 * Weight bytes per decode step: every tensor once, except
 *  - token_embd.weight: the step reads one row of it, which is left out as negligible; when the
 *    output projection is tied to it, the LM head reads it whole, so it counts once in full;
 *  - MoE expert tensors (`*_exps.*`): a token reads n_expert_used of the n_expert experts, so they
 *    count at that fraction. */
#include "bench_model.h"

#include <stdio.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/format/gguf.h"
#include "loader/format/model.h"

/* llama.cpp's llama_ftype numbers (include/llama.h) and the names it prints for them. */
static const struct {
    uint32_t ftype;
    const char *name;
} ftype_names[] = {
    {0, "F32"},     {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},     {7, "Q8_0"},     {8, "Q5_0"},
    {9, "Q5_1"},    {10, "Q2_K"},    {11, "Q3_K_S"},  {12, "Q3_K_M"},  {13, "Q3_K_L"},  {14, "Q4_K_S"},
    {15, "Q4_K_M"}, {16, "Q5_K_S"},  {17, "Q5_K_M"},  {18, "Q6_K"},    {32, "BF16"},
};
/* llama_ftype's flag for a type llama.cpp guessed rather than read */
#define FTYPE_GUESSED 1024u

/* The stored type holding the most bytes among 2-D and larger tensors (what "mostly" means). */
static const char *dominant_type(const rlx_model *m) {
    uint64_t bytes[RLX_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < m->n_weights; i++)
        if (m->weights[i].n_dims >= 2 && m->weights[i].type < RLX_DTYPE_COUNT)
            bytes[m->weights[i].type] += m->weights[i].nbytes;
    uint32_t best = 0;
    for (uint32_t t = 1; t < RLX_DTYPE_COUNT; t++)
        if (bytes[t] > bytes[best]) best = t;
    return rlx_dtype_name(best);
}

static rlx_status file_type(const rlx_model *m, char *buf, size_t size) {
    uint32_t ft = 0;
    rlx_status err = NULL;
    if (!m->gguf || !rlx_gguf_get_u32(m->gguf, "general.file_type", &ft, &err)) {
        if (err) return err;
        snprintf(buf, size, "%s", dominant_type(m));
        return NULL;
    }
    ft &= ~FTYPE_GUESSED;
    for (size_t i = 0; i < sizeof ftype_names / sizeof ftype_names[0]; i++)
        if (ftype_names[i].ftype == ft) {
            snprintf(buf, size, "%s", ftype_names[i].name);
            return NULL;
        }
    snprintf(buf, size, "%s (ftype %u)", dominant_type(m), ft);
    return NULL;
}

static uint64_t step_bytes(const rlx_model *m, const rlx_weight *w) {
    const rlx_model_config *c = &m->config;
    if (!strcmp(w->name, "token_embd.weight")) return c->tied_embeddings ? w->nbytes : 0;
    if (strstr(w->name, "_exps.") && c->n_expert > 0) return w->nbytes / c->n_expert * c->n_expert_used;
    return w->nbytes;
}

rlx_status rlx_bench_model_read(const char *path, rlx_bench_model *out) {
    rlx_model *m = NULL;
    RLX_TRY(rlx_model_open(path, &m));
    rlx_bench_model b = {.config = m->config, .n_params = rlx_model_n_params(m)};
    rlx_status s = file_type(m, b.file_type, sizeof b.file_type);
    for (size_t i = 0; !s && i < m->n_weights; i++) {
        b.size_bytes += m->weights[i].nbytes;
        b.weight_bytes_per_token += step_bytes(m, &m->weights[i]);
    }
    rlx_model_close(m);
    if (s) return rlx_status_annotate(s, "'%s'", path);
    snprintf(b.family, sizeof b.family, "%s", rlx_family_name(b.config.family));
    char params[32];
    rlx_bench_format_count(b.n_params, b.n_params >= 1000000000ull ? 2 : 0, params, sizeof params);
    snprintf(b.description, sizeof b.description, "%s %s %s", b.family, params, b.file_type);
    *out = b;
    return NULL;
}

double rlx_bench_kv_bytes_per_step(const rlx_bench_model *m, int64_t first_ctx, int64_t n, int32_t elem_bytes) {
    const rlx_model_config *c = &m->config;
    if (n <= 0) return 0.0;
    double per_pos = (double)(c->head_dim + c->head_dim_v) * c->n_head_kv * elem_bytes;
    double positions = 0.0; /* summed over layers and steps */
    for (uint32_t l = 0; l < c->n_layer && l < RLX_MAX_LAYERS; l++) {
        if (c->layer_kind[l] == RLX_LAYER_LINEAR_ATTENTION) continue;
        bool window = c->layer_kind[l] == RLX_LAYER_SLIDING_ATTENTION && c->sliding_window > 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t ctx = first_ctx + i;
            positions += (double)(window && ctx > (int64_t)c->sliding_window ? (int64_t)c->sliding_window : ctx);
        }
    }
    return per_pos * positions / (double)n;
}

void rlx_bench_format_count(uint64_t n, int decimals, char *buf, size_t size) {
    if (n >= 1000000000ull)
        snprintf(buf, size, "%.*fB", decimals, (double)n / 1e9);
    else if (n >= 1000000ull)
        snprintf(buf, size, "%.*fM", decimals, (double)n / 1e6);
    else if (n >= 1000ull)
        snprintf(buf, size, "%.*fK", decimals, (double)n / 1e3);
    else
        snprintf(buf, size, "%llu", (unsigned long long)n);
}

void rlx_bench_format_bytes(double bytes, char *buf, size_t size) {
    if (bytes >= 1073741824.0)
        snprintf(buf, size, "%.2f GiB", bytes / 1073741824.0);
    else if (bytes >= 1048576.0)
        snprintf(buf, size, "%.2f MiB", bytes / 1048576.0);
    else if (bytes >= 1024.0)
        snprintf(buf, size, "%.2f KiB", bytes / 1024.0);
    else
        snprintf(buf, size, "%.0f B", bytes);
}
