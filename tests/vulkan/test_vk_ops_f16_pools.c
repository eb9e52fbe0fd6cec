/* test_vk_ops kv-f16: the kernels that read or write the K/V pools, with F16 pools on the Vulkan
 * side against the CPU's F32 reference (the bounds: test_vk_parity.h), and the fused decode step
 * against the unfused kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_vk_ops.h"

/* The fused decode step (attention_step_f16: norm, RoPE, cache write and attention in one dispatch)
 * against the unfused kernels (RLX_VK_FUSION=0: rms_norm_f16 / rope_f16 write the cache, then
 * attention_f16 reads it), both over F16 pools, over `steps` decode steps of fresh inputs. The
 * unfused attention reads the new key back from the cache, rounded; the fused step must attend to
 * the same rounded key and value, so the two agree to f32 arithmetic plus the rare F16 rounding
 * that f32 differences in the norm flip (one F16 step, 2^-11, of one element): TOL_STEP_F16. A
 * step that attended to its unrounded key and value would be off by F16's rounding of each of
 * their elements: a build without the rounding measured NMSE 4e-8 ... 2e-7 on these cases (this one
 * ~1e-14, caches bit for bit). */
#define TOL_STEP_F16 1e-10
static void fused_vs_unfused_case(const kv_case *c, int32_t steps) {
    vkt_graph t;
    kv_case_graph(&t, c);
    int32_t n_out = rlx_graph_n_outputs(t.g);
    rlx_vk_options o = g_opts;
    o.fusion = false;
    vkt_side fused, plain;
    bool ok = vkt_side_open(g_vk, &t, &fused, n_out);
    vkt_set_options(g_vk, &o);
    ok = vkt_side_open(g_vk, &t, &plain, n_out) && ok;
    vkt_set_options(g_vk, &g_opts);
    double worst[3] = {0, 0, 0};
    for (int32_t k = 0; ok && k < steps; k++) {
        float *x = t.in[0];
        for (int64_t e = 0; e < 32; e++) x[e] = vkt_uniform(&g_rng, -1, 1);
        vkt_step st = {k, 1};
        if (!T_OK(vkt_side_run(g_vk, &t, &fused, st)) || !T_OK(vkt_side_run(g_vk, &t, &plain, st))) break;
        for (int32_t out = 0; out < n_out; out++) {
            const rlx_node_info *n = rlx_graph_node(t.g, rlx_graph_output_node(t.g, out));
            int64_t numel = rlx_shape_numel(&n->shape);
            double e = vkt_nmse(fused.out[out], plain.out[out], numel);
            if (e > worst[out]) worst[out] = e;
        }
    }
    char label[64];
    snprintf(label, sizeof label, "%s H %lld/%lld Dh %lld Dv %lld, %d steps", c->norm ? "norm+rope" : "rope",
             (long long)c->h, (long long)c->hkv, (long long)c->dh, (long long)c->dv, steps);
    printf("  %-10s %-44s fused vs unfused: nmse o %.2e k %.2e v %.2e (tol %.0e)\n", "F16 step", label, worst[0],
           worst[1], worst[2], TOL_STEP_F16);
    T_CHECK(ok && worst[0] <= TOL_STEP_F16 && worst[1] <= TOL_STEP_F16 && worst[2] <= TOL_STEP_F16,
            "%s: fused vs unfused over F16 pools: nmse o %.3e k %.3e v %.3e > %.0e", label, worst[0], worst[1],
            worst[2], TOL_STEP_F16);
    vkt_side_close(g_vk, &fused, n_out);
    vkt_side_close(g_vk, &plain, n_out);
    vkt_graph_free(&t);
}

/* copy_pages over F16 pools of 2 layers (pages of 4 rows): rows written at positions 0..7 (pages 0
 * and 1), read back through a program whose outputs are the four pools, pages 0, 1 copied to 3, 5.
 * Expected: pages 3 and 5 of every pool hold pages 0 and 1 as they were, bit for bit (a copy of
 * bytes; the readback widens F16 exactly), the other pages are unchanged, and the written rows are
 * the inputs within F16's rounding (relative 2^-10). */
static void test_copy_pages_f16(void) {
    enum { PAGE = 4, PAGES = 6, HKV = 2, DH = 8, ROWS = 8, POOL = PAGE * PAGES * HKV * DH };
    rlx_state_spec kv = {.n_layer = 2, .n_head_kv = HKV, .head_dim = DH, .page_size = PAGE, .n_pages = PAGES,
                         .kv_dtype = RLX_DTYPE_F16};
    vkt_graph w, r;
    vkt_graph_init(&w);
    vkt_graph_init(&r);
    w.kv = r.kv = kv;
    for (int32_t l = 0; l < 2; l++)
        for (int v = 0; v < 2; v++) {
            char name[8];
            snprintf(name, sizeof name, "%c%d", v ? 'v' : 'k', l);
            rlx_node x = vkt_input_f32(&w, &g_rng, vkt_shape(3, ROWS, HKV, DH), 4.0f);
            rlx_graph_mark_output(w.g, rlx_kv_write(w.g, rlx_kv_cache(w.g, l, v, PAGE * PAGES, HKV, DH), x), name);
            rlx_graph_mark_output(r.g, rlx_kv_cache(r.g, l, v, PAGE * PAGES, HKV, DH), name);
        }
    rlx_session *s = NULL;
    rlx_program *pw = NULL, *pr = NULL;
    float *wout[4], *before[4], *after[4];
    for (int i = 0; i < 4; i++) {
        wout[i] = calloc(POOL, sizeof(float));
        before[i] = calloc(POOL, sizeof(float));
        after[i] = calloc(POOL, sizeof(float));
    }
    bool ok = T_OK(g_vk->ops->session_create(g_vk, NULL, 0, &kv, &s)) && T_OK(g_vk->ops->compile(s, w.g, &pw)) &&
              T_OK(g_vk->ops->compile(s, r.g, &pr));
    rlx_run_args aw = {0, ROWS, (const void *const *)w.in, (void *const *)wout, NULL};
    rlx_run_args ab = {0, 1, NULL, (void *const *)before, NULL}, aa = {0, 1, NULL, (void *const *)after, NULL};
    int32_t src[2] = {0, 1}, dst[2] = {3, 5};
    ok = ok && T_OK(g_vk->ops->run(pw, &aw)) && T_OK(g_vk->ops->run(pr, &ab)) &&
         T_OK(g_vk->ops->copy_pages(s, src, dst, 2)) && T_OK(g_vk->ops->run(pr, &aa));
    size_t page_floats = PAGE * HKV * DH;
    int64_t moved = 0, kept = 0, bad = 0;
    double worst_rel = 0.0;
    for (int i = 0; ok && i < 4; i++) {
        for (int32_t pg = 0; pg < PAGES; pg++) {
            int32_t from = pg == 3 ? 0 : pg == 5 ? 1 : pg;
            bool same = memcmp(after[i] + pg * page_floats, before[i] + from * page_floats, page_floats * 4) == 0;
            bad += !same;
            moved += same && from != pg;
            kept += same && from == pg;
        }
        const float *x = w.in[i];
        for (int64_t e = 0; e < ROWS * HKV * DH; e++) {
            double rel = fabs((double)before[i][e] - x[e]) / (fabs(x[e]) > 1e-3 ? fabs(x[e]) : 1e-3);
            if (rel > worst_rel) worst_rel = rel;
        }
    }
    printf("  copy_pages 2 layers x K, V of 6 pages of 4 rows, F16: %lld pages copied, %lld kept, %lld wrong; "
           "written rows within %.2e of the inputs (bound 2^-10)\n", (long long)moved, (long long)kept, (long long)bad,
           worst_rel);
    T_CHECK(ok && bad == 0 && moved == 8 && kept == 16, "copy_pages F16: %lld pages wrong", (long long)bad);
    T_CHECK(worst_rel <= 1.0 / 1024, "copy_pages F16: written rows %.3e from the inputs", worst_rel);
    if (pr) g_vk->ops->program_destroy(pr);
    if (pw) g_vk->ops->program_destroy(pw);
    if (s) g_vk->ops->session_destroy(s);
    for (int i = 0; i < 4; i++) {
        free(wout[i]);
        free(before[i]);
        free(after[i]);
    }
    vkt_graph_free(&w);
    vkt_graph_free(&r);
}

/* Every kernel that reads or writes the pools, with F16 pools on the Vulkan side and the CPU's F32
 * reference (the tolerances: TOL_KV_F16 above); then the fused decode step against the unfused
 * path. */
void test_kv_f16(void) {
    g_kv_dtype = RLX_DTYPE_F16;
    test_copy_pages_f16();
    printf("F16 pools (Vulkan) against the F32 reference\n");
    test_KV_CACHE();
    test_KV_WRITE();
    attention_cached_cases();
    test_kv_fusions();
    static const kv_case steps[] = {
        {true, false, 1, 16, 8, 128, 128, 40, 128, 0, RLX_ROPE_LAYOUT_NEOX}, /* fixed plan on subgroups of 32 */
        {true, false, 1, 8, 4, 32, 32, 40, 32, 0, RLX_ROPE_LAYOUT_NEOX},     /* fixed plan on subgroups of 8 */
        {true, true, 1, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL},      /* odd sizes, window */
        {false, false, 1, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX},   /* key splits */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        fused_vs_unfused_case(&steps[i], (int32_t)steps[i].cap);
    g_kv_dtype = RLX_DTYPE_F32;
}
