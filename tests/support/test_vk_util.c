#include "test_vk_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/core/half.h"
#include "runtime/vk_backend.h"
#include "test_util.h"

rlx_vk_options vkt_options(void) {
    rlx_vk_options o;
    rlx_status s = rlx_vk_options_from_env(&o);
    if (s) {
        fprintf(stderr, "FAIL: the test's environment: %s\n", rlx_status_message(s));
        rlx_status_free(s);
        exit(1);
    }
    return o;
}

rlx_backend *vkt_backend_with(const rlx_vk_options *o) {
    rlx_backend *b = NULL;
    rlx_status s = rlx_backend_vulkan_create_with(o, &b);
    if (s && rlx_status_code(s) == RLX_ERR_DEVICE && !(o->device && *o->device)) {
        fprintf(stderr, "no GPU (%s); asking for lavapipe\n", rlx_status_message(s));
        rlx_status_free(s);
        rlx_vk_options named = *o;
        named.device = "llvmpipe";
        named.device_from_env = false;
        s = rlx_backend_vulkan_create_with(&named, &b);
    }
    if (s) {
        const char *ci = getenv("CI");
        bool in_ci = ci && strcmp(ci, "true") == 0;
        fprintf(stderr, "%s: no Vulkan device: %s\n", in_ci ? "FAIL" : "SKIPPED", rlx_status_message(s));
        rlx_status_free(s);
        exit(in_ci ? 1 : T_SKIP_CODE);
    }
    const rlx_vk_caps *c = rlx_vk_backend_caps(b);
    printf("vulkan device %u: %s (%s), subgroup %u, validation %s\n", c->index, c->name, c->driver_info,
           c->subgroup_size, rlx_vk_validation_enabled() ? "on" : "off");
    return b;
}

rlx_backend *vkt_backend(void) {
    rlx_vk_options o = vkt_options();
    return vkt_backend_with(&o);
}

void vkt_set_options(rlx_backend *b, const rlx_vk_options *o) {
    if (!T_OK(rlx_vk_backend_set_options(b, o))) exit(1);
}

void vkt_check_validation(void) {
    uint64_t n = rlx_vk_validation_message_count();
    printf("validation messages: %llu\n", (unsigned long long)n);
    T_CHECK(n == 0, "the Vulkan validation layer reported %llu message(s) (printed above)", (unsigned long long)n);
}

rlx_weight vkt_weight(vkt_rng *r, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                      uint64_t ne2) {
    rlx_weight w;
    rlx_status s = rlx_validate_weight_random(r, name, type, n_dims, ne0, ne1, ne2, &w);
    if (s) {
        fprintf(stderr, "vkt_weight: %s\n", rlx_status_message(s));
        exit(1);
    }
    return w;
}

void vkt_weight_free(rlx_weight *w) { rlx_validate_weight_free(w); }

void vkt_graph_init(vkt_graph *t) {
    memset(t, 0, sizeof *t);
    if (!T_OK(rlx_graph_create(&t->g))) exit(1);
}

void vkt_graph_free(vkt_graph *t) {
    rlx_graph_destroy(t->g);
    for (size_t i = 0; i < t->nw; i++) vkt_weight_free(&t->w[i]);
    for (int i = 0; i < t->nin; i++) free(t->in[i]);
}

rlx_status vkt_compile_status(rlx_backend *b, const vkt_graph *t) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    rlx_status st = b->ops->session_create(b, t->w, t->nw, &t->kv, &s);
    if (!st) st = b->ops->compile(s, t->g, &p);
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
    return st;
}

rlx_shape vkt_shape(int32_t rank, int64_t d0, int64_t d1, int64_t d2) {
    int64_t d[3] = {d0, d1, d2};
    return rlx_shape_make(rank, d);
}

/* Room for one more input, and its name. */
static void next_input(vkt_graph *t, char name[16]) {
    if (t->nin >= VKT_MAX_INPUTS) {
        fprintf(stderr, "vkt_graph: more than %d inputs\n", VKT_MAX_INPUTS);
        exit(1);
    }
    snprintf(name, 16, "in%d", t->nin);
}

rlx_node vkt_input_f32(vkt_graph *t, vkt_rng *r, rlx_shape s, float a) {
    char name[16];
    next_input(t, name);
    int64_t n = rlx_shape_numel(&s);
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) exit(1);
    for (int64_t i = 0; i < n; i++) x[i] = vkt_uniform(r, -a, a);
    t->in[t->nin++] = x;
    return rlx_input(t->g, name, RLX_DTYPE_F32, s);
}

void vkt_attention_direct(vkt_graph *t, vkt_rng *r, int64_t n, int64_t h, int64_t hkv, int64_t dh, int64_t dv,
                          int32_t window) {
    rlx_node q = vkt_input_f32(t, r, vkt_shape(3, n, h, dh), 1.0f);
    rlx_node k = vkt_input_f32(t, r, vkt_shape(3, n, hkv, dh), 1.0f);
    rlx_node v = vkt_input_f32(t, r, vkt_shape(3, n, hkv, dv), 1.0f);
    rlx_graph_mark_output(t->g, rlx_attention(t->g, q, k, v, 2.0f / sqrtf((float)dh), window), "o");
}

void vkt_attention_cached(vkt_graph *t, vkt_rng *r, int64_t rows, int64_t cap, int64_t h, int64_t hkv, int64_t dh,
                          int32_t window) {
    t->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = (int32_t)cap, .n_head_kv = (int32_t)hkv, .head_dim = (int32_t)dh};
    rlx_node q = vkt_input_f32(t, r, vkt_shape(3, rows, h, dh), 1.0f);
    rlx_node k = vkt_input_f32(t, r, vkt_shape(3, rows, hkv, dh), 1.0f);
    rlx_node v = vkt_input_f32(t, r, vkt_shape(3, rows, hkv, dh), 1.0f);
    rlx_node kc = rlx_kv_write(t->g, rlx_kv_cache(t->g, 0, false, cap, hkv, dh), k);
    rlx_node vc = rlx_kv_write(t->g, rlx_kv_cache(t->g, 0, true, cap, hkv, dh), v);
    rlx_graph_mark_output(t->g, rlx_attention(t->g, q, kc, vc, 0.125f, window), "o");
}

rlx_node vkt_input_ids(vkt_graph *t, vkt_rng *r, int64_t n, int32_t lo, int32_t hi) {
    char name[16];
    next_input(t, name);
    int32_t *x = malloc((size_t)n * sizeof *x);
    if (!x) exit(1);
    for (int64_t i = 0; i < n; i++) x[i] = vkt_int(r, lo, hi);
    t->in[t->nin++] = x;
    return rlx_input(t->g, name, RLX_DTYPE_I32, vkt_shape(1, n, 0, 0));
}

rlx_node vkt_graph_weight(vkt_graph *t, vkt_rng *r, uint32_t type, int32_t rank, int64_t d0, int64_t d1, int64_t d2) {
    if (t->nw >= VKT_MAX_WEIGHTS) {
        fprintf(stderr, "vkt_graph: more than %d weights\n", VKT_MAX_WEIGHTS);
        exit(1);
    }
    size_t k = t->nw++;
    snprintf(t->wname[k], sizeof t->wname[k], "w%zu", k);
    uint64_t ne0 = (uint64_t)(rank == 1 ? d0 : rank == 2 ? d1 : d2);
    uint64_t ne1 = (uint64_t)(rank == 1 ? 1 : rank == 2 ? d0 : d1), ne2 = (uint64_t)(rank == 3 ? d0 : 1);
    t->w[k] = vkt_weight(r, t->wname[k], type, (uint32_t)rank, ne0, ne1, ne2);
    return rlx_weight_node(t->g, t->wname[k], type, vkt_shape(rank, d0, d1, d2));
}
