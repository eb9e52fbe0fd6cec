/* Deterministic mode (runtime/vk_plan.c) on fixture models: the logits of a prompt prefilled in one
 * shot (one run of a 32-row program, the rows past the prompt padding) and in chunks of 1, 2 and 7
 * rows (legacy single-sequence form: chunk j at n_past = its first position), the 1-row chunks'
 * program over another KV capacity bucket, must be the same bits row for row. The graphs are the
 * engine's (rlx_family_build_rows, every row's logits). The default mode runs the same prompts and
 * its distance from bitwise is printed, not checked.
 *
 *   test_vk_det_models [MODEL...]   paths under the fixtures' models/, default: the list below */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/format/model.h"
#include "runners/family.h"
#include "runtime/vk_backend.h"
#include "test_util.h"
#include "test_vk_util.h"

static const int32_t PROMPT[] = {1,   403, 407, 261, 378, 17, 300, 5,  66, 111, 42, 7,
                                 9,   250, 31,  400, 12,  88, 61,  3,  77, 19,  205};
#define N_PROMPT ((int32_t)(sizeof PROMPT / sizeof PROMPT[0]))
#define SHOT_ROWS 32 /* the one-shot program's bucket */
#define CAP 64       /* KV capacity of the programs' views */
#define CAP_ONE 128  /* ... of the 1-row chunks' program */

static const char *const MODELS[] = {"qwen3/qwen3-Q4_K_M", "qwen3moe/qwen3moe-Q8_0", "gemma3/gemma3-F16"};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

static rlx_backend *g_vk;

/* The logits of every prompt row, run in chunks of `chunk` rows (chunk 0: one shot in SHOT_ROWS). */
static bool prefill(rlx_session *s, const rlx_model *m, const rlx_family_ops *fam, int32_t chunk, float *logits) {
    int32_t rows = chunk ? chunk : SHOT_ROWS, cap = chunk == 1 ? CAP_ONE : CAP, v = (int32_t)m->config.n_vocab;
    rlx_graph *g = NULL;
    rlx_program *p = NULL;
    int32_t *ids = calloc((size_t)rows, sizeof *ids);
    float *out = malloc((size_t)rows * (size_t)v * sizeof *out);
    bool ok = ids && out && T_OK(rlx_family_build_rows(fam, m, rows, cap, rows, RLX_DECODE_LOGITS, false, &g)) &&
              T_OK(g_vk->ops->compile(s, g, &p));
    for (int32_t at = 0; ok && at < N_PROMPT; at += rows) {
        int32_t n = N_PROMPT - at < rows ? N_PROMPT - at : rows;
        memset(ids, 0, (size_t)rows * sizeof *ids);
        memcpy(ids, PROMPT + at, (size_t)n * sizeof *ids);
        void *outs[1] = {out};
        const void *ins[1] = {ids};
        rlx_run_args a = {at, n, ins, outs, NULL};
        ok = T_OK(g_vk->ops->run(p, &a));
        if (ok) memcpy(logits + (size_t)at * (size_t)v, out, (size_t)n * (size_t)v * sizeof *out);
    }
    if (p) g_vk->ops->program_destroy(p);
    rlx_graph_destroy(g);
    free(ids);
    free(out);
    return ok;
}

static void check_model(const char *rel, bool det) {
    rlx_model *m = NULL;
    const rlx_family_ops *fam = NULL;
    rlx_session *s = NULL;
    if (!T_OK(rlx_model_open(t_fixture(rel), &m)) || !T_OK(rlx_family_ops_find(m->config.family, &fam))) {
        rlx_model_close(m);
        return;
    }
    const rlx_model_config *c = &m->config;
    rlx_state_spec spec = {.n_layer = (int32_t)c->n_layer, .n_head_kv = (int32_t)c->n_head_kv,
                           .head_dim = (int32_t)c->head_dim, .head_dim_v = (int32_t)c->head_dim_v,
                           .page_size = 1, .n_pages = CAP_ONE, .kv_dtype = RLX_DTYPE_F32};
    size_t n = (size_t)N_PROMPT * c->n_vocab;
    float *shot = malloc(n * sizeof *shot), *chunked = malloc(n * sizeof *chunked);
    bool ok = shot && chunked && T_OK(g_vk->ops->session_create(g_vk, m->weights, m->n_weights, &spec, &s)) &&
              prefill(s, m, fam, 0, shot);
    static const int32_t chunks[] = {1, 2, 7};
    for (int k = 0; ok && k < 3; k++) {
        ok = prefill(s, m, fam, chunks[k], chunked);
        int32_t rows_diff = 0;
        double max_diff = 0.0;
        for (int32_t r = 0; ok && r < N_PROMPT; r++) {
            const float *a = shot + (size_t)r * c->n_vocab, *b = chunked + (size_t)r * c->n_vocab;
            if (memcmp(a, b, c->n_vocab * sizeof *a) == 0) continue;
            rows_diff++;
            for (uint32_t e = 0; e < c->n_vocab; e++) {
                double d = fabs((double)a[e] - (double)b[e]);
                if (d > max_diff || isnan(d)) max_diff = d;
            }
        }
        printf("  %-36s %-13s chunks of %d vs one shot: %2d of %d logit rows differ (max |diff| %.2e)\n", rel,
               det ? "deterministic" : "default", chunks[k], rows_diff, N_PROMPT, max_diff);
        if (det)
            T_CHECK(rows_diff == 0, "%s: chunks of %d: %d of %d logit rows differ from the one-shot prefill", rel,
                    chunks[k], rows_diff, N_PROMPT);
    }
    T_CHECK(ok, "%s: a run failed", rel);
    if (s) g_vk->ops->session_destroy(s);
    free(shot);
    free(chunked);
    rlx_model_close(m);
}

static void model_path(char *buf, size_t size, const char *name) { snprintf(buf, size, "models/%s.gguf", name); }

int main(int argc, char **argv) {
    size_t n_models = argc > 1 ? (size_t)(argc - 1) : N_MODELS;
    char rel[8][128];
    for (size_t i = 0; i < n_models && i < 8; i++) {
        model_path(rel[i], sizeof rel[i], argc > 1 ? argv[i + 1] : MODELS[i]);
        t_require_fixture(rel[i]);
    }
    rlx_vk_options o = vkt_options();
    g_vk = vkt_backend_with(&o);
    for (int mode = 0; mode < 2; mode++) {
        o.deterministic = mode == 0;
        vkt_set_options(g_vk, &o);
        for (size_t i = 0; i < n_models && i < 8; i++) check_model(rel[i], mode == 0);
    }
    rlx_backend_destroy(g_vk);
    vkt_check_validation();
    return t_summary("test_vk_det_models");
}
