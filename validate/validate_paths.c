/* The pipeline cache, cold == warm: programs whose pipelines came from the on-disk cache (the
 * sweep's backend; warm once any run has filled it) against a backend of the same device that
 * compiles every pipeline from SPIR-V (RLX_VK_PIPELINE_CACHE=0), on a graph shaped like a decoder
 * layer (norm, q/k/v matmuls, RoPE, the cache writes, attention, a gated FFN): the same SPIR-V on
 * the same driver must give the same bits. The other paths need a model (validate_model.c). */
#include <math.h>
#include <string.h>

#include "runtime/vk_backend.h"
#include "validate/validate_internal.h"

/* x [rows, 256] through one attention + FFN block of Q4_K / F16 weights over a cache of 32. */
static void layer_case(vl_sweep *sw, vl_case *c) {
    enum { D = 256, H = 4, HKV = 2, DH = 64, F = 512, CAP = 32, ROWS = 5 };
    vl_case_begin(sw, c, -1, ROWS);
    c->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = CAP, .n_head_kv = HKV, .head_dim = DH};
    const int32_t steps[3][2] = {{0, ROWS}, {ROWS, 1}, {ROWS + 1, 1}};
    memcpy(c->steps, steps, sizeof steps);
    c->n_steps = 3;
    rlx_graph *g = c->g;
    rlx_node x = vl_input_f32(c, vl_shape(2, ROWS, D, 0), 1.0f);
    rlx_node h = rlx_rms_norm(g, x, vl_weight(c, RLX_DTYPE_F32, 1, D, 0, 0), 1e-6f);
    rlx_rope_attrs rope = {RLX_ROPE_LAYOUT_NEOX, DH, 1e6f};
    rlx_node q = rlx_rope(g, rlx_reshape(g, rlx_matmul(g, h, vl_weight(c, RLX_DTYPE_Q4_K, 2, H * DH, D, 0)),
                                         vl_shape(3, ROWS, H, DH)), RLX_NO_NODE, rope);
    rlx_node k = rlx_rope(g, rlx_reshape(g, rlx_matmul(g, h, vl_weight(c, RLX_DTYPE_Q4_K, 2, HKV * DH, D, 0)),
                                         vl_shape(3, ROWS, HKV, DH)), RLX_NO_NODE, rope);
    rlx_node v = rlx_reshape(g, rlx_matmul(g, h, vl_weight(c, RLX_DTYPE_F16, 2, HKV * DH, D, 0)), vl_shape(3, ROWS, HKV, DH));
    rlx_node kc = rlx_kv_write(g, rlx_kv_cache(g, 0, false, CAP, HKV, DH), k);
    rlx_node vc = rlx_kv_write(g, rlx_kv_cache(g, 0, true, CAP, HKV, DH), v);
    rlx_node a = rlx_reshape(g, rlx_attention(g, q, kc, vc, 0.125f, 0), vl_shape(2, ROWS, H * DH, 0));
    x = rlx_add(g, x, rlx_matmul(g, a, vl_weight(c, RLX_DTYPE_Q8_0, 2, D, H * DH, 0)));
    h = rlx_rms_norm(g, x, vl_weight(c, RLX_DTYPE_F32, 1, D, 0, 0), 1e-6f);
    rlx_node gate = rlx_silu(g, rlx_matmul(g, h, vl_weight(c, RLX_DTYPE_Q6_K, 2, F, D, 0)));
    rlx_node up = rlx_matmul(g, h, vl_weight(c, RLX_DTYPE_Q6_K, 2, F, D, 0));
    x = rlx_add(g, x, rlx_matmul(g, rlx_mul(g, gate, up), vl_weight(c, RLX_DTYPE_Q4_K, 2, D, F, 0)));
    vl_output(c, rlx_argmax(g, x), "argmax");
    vl_output(c, x, "x");
}

void vl_pipeline_cache_path(vl_sweep *sw) {
    rlx_validate_report *r = sw->r;
    if (r->n_paths >= sizeof r->paths / sizeof r->paths[0]) return;
    rlx_validate_path *p = &r->paths[r->n_paths++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "pipeline cache cold == warm (a layer, bits)");
    rlx_vk_options cold = sw->o->vk;
    cold.pipeline_cache = false;
    cold.coopmat = RLX_VK_COOPMAT_EXACT;
    rlx_backend *b = NULL;
    rlx_status s = rlx_backend_vulkan_create_with(&cold, &b);
    rlx_vk_options warm = sw->o->vk;
    warm.coopmat = RLX_VK_COOPMAT_EXACT;
    if (!s) s = rlx_vk_backend_set_options(sw->vk, &warm);
    rlx_validate_diff d = {0};
    if (!s) {
        vl_case c;
        layer_case(sw, &c);
        s = vl_case_compare(&c, sw->vk, b, &d);
    }
    rlx_backend_destroy(b);
    if (s) {
        const char *m = rlx_status_message(s);
        p->error = strdup(m ? m : "unknown error");
        rlx_status_free(s);
    }
    p->max_delta = d.max_abs;
    p->ids_differ = (int32_t)d.ids_differ;
    p->pass = !p->error && d.n > 0 && d.max_abs == 0.0 && d.ids_differ == 0;
}
