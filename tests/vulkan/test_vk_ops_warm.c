/* test_vk_ops: the next stage's weights read into L2 after a stage's last matvec (runtime/vk_warm_next.c). */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/vk_backend.h"
#include "runtime/vk_internal.h" /* white box: the warm_l2 dispatches and the weights they read */
#include "test_vk_ops.h"

/* A warm_l2 dispatch expected: the first `bytes` of weight w's first part (at most all of it). */
typedef struct warm_want {
    rlx_node w;
    uint64_t bytes;
} warm_want;

/* t's program on backend b has exactly the warm_l2 dispatches of want, in that order, each right
 * after the last dispatch of a matvec and reading the start of its weight's first part. */
static void check_warm_next(rlx_backend *b, vkt_graph *t, const char *label, const warm_want *want, size_t n_want) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    size_t k = 0;
    if (T_OK(b->ops->session_create(b, t->w, t->nw, &t->kv, &s)) && T_OK(b->ops->compile(s, t->g, &p)))
        for (size_t i = 0; i < p->run.n && k <= n_want; i++) {
            const vk_dispatch *d = &p->run.items[i];
            if (d->pipe->kernel != RLX_VK_KERNEL_warm_l2) continue;
            const vk_dispatch *mv = NULL;
            for (size_t j = i; j-- > 0 && !mv;)
                if (p->run.items[j].pipe->kernel != RLX_VK_KERNEL_warm_l2) mv = &p->run.items[j];
            bool after_mv = mv && (mv->pipe->kernel == RLX_VK_KERNEL_matvec ||
                                   mv->pipe->kernel == RLX_VK_KERNEL_matvec_stream);
            for (size_t j = i + 1; after_mv && j < p->run.n; j++)
                after_mv = p->run.items[j].node != mv->node || p->run.items[j].pipe->kernel == RLX_VK_KERNEL_warm_l2;
            T_CHECK(after_mv, "%s: warm_l2 dispatch %zu does not follow the last dispatch of a matvec", label, k);
            if (k++ == n_want) break; /* one too many: the count check below reports it */
            const rlx_vk_alloc *a = &p->nodes[want[k - 1].w].weight->parts[0].alloc;
            VkDeviceSize size = (want[k - 1].bytes < a->size ? want[k - 1].bytes : a->size) / 16 * 16;
            T_CHECK(d->n_bind == 1 && d->bind[0].buffer == a->buffer && d->bind[0].offset == a->offset &&
                        d->bind[0].size == size && d->writes == 0,
                    "%s: warm_l2 dispatch %zu reads %llu bytes at %llu, expected the first %llu of weight %%%d at %llu",
                    label, k - 1, (unsigned long long)d->bind[0].size, (unsigned long long)d->bind[0].offset,
                    (unsigned long long)size, want[k - 1].w, (unsigned long long)a->offset);
        }
    T_CHECK(k == n_want, "%s: %zu warm_l2 dispatches, expected %zu", label, k, n_want);
    printf("  %-10s %-44s warm_l2 dispatches: %zu\n", "MATMUL", label, k);
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
}

/* The graph's result against the CPU, then its warm_l2 dispatches, with RLX_VK_WARM_NEXT=knob (NULL:
 * unset) on backend b. */
static void warm_next_case(rlx_backend *b, vkt_graph *t, const char *what, const char *knob, int32_t rows,
                           const warm_want *want, size_t n_want) {
    char label[80];
    snprintf(label, sizeof label, "%s, RLX_VK_WARM_NEXT=%s", what, knob ? knob : "(unset)");
    rlx_vk_options o = g_opts;
    if (knob) o.warm_next_kib = atoi(knob);
    vkt_set_options(b, &o);
    rlx_backend *saved = g_vk;
    g_vk = b;
    vkt_compare1(RLX_OP_MATMUL, label, t, rows);
    g_vk = saved;
    check_warm_next(b, t, label, want, n_want);
    vkt_set_options(b, &g_opts);
}

/* Two matvecs of one x (one stage), a third over the first's result, a gated FFN over that and its
 * down projection: decode warms the third's rows after the second (not after the first: the second
 * runs in its stage), half the bytes each of the up and gate rows after the third, the down rows
 * after the FFN, nothing after the last. Forced by RLX_VK_WARM_NEXT on any device; the values must
 * not change. Unset, these rows (64) are too short for the default; a prefill (3 rows) or 0 never
 * warms. */
static void warm_next_stages(void) {
    for (int variant = 0; variant < 4; variant++) {
        static const char *const knob[] = {"8", "8", NULL, "0"};
        int64_t rows = variant == 1 ? 3 : 1;
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, 64, 0), 1.0f);
        rlx_node w1 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0);
        rlx_node w2 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 24, 64, 0);
        rlx_node w3 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 48, 32, 0);
        rlx_node wg = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 96, 48, 0);
        rlx_node wu = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 96, 48, 0);
        rlx_node wd = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_BF16, 2, 40, 96, 0);
        rlx_node y1 = rlx_matmul(t.g, x, w1);
        rlx_graph_mark_output(t.g, y1, "y1");
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, w2), "y2");
        rlx_node h = rlx_matmul(t.g, y1, w3);
        rlx_node g = rlx_silu(t.g, rlx_matmul(t.g, h, wg));
        rlx_node a = rlx_mul(t.g, g, rlx_matmul(t.g, h, wu));
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, a, wd), "y");
        const warm_want want[4] = {{w3, 8192}, {wu, 4096}, {wg, 4096}, {wd, 8192}};
        char what[48];
        snprintf(what, sizeof what, "x W1, x W2, W3, gate/up, down, rows %lld", (long long)rows);
        warm_next_case(g_vk, &t, what, knob[variant], (int32_t)rows, want, variant == 0 ? 4 : 0);
        vkt_graph_free(&t);
    }
}

/* x Wa + x Wb, the add in Wa's epilogue: Wb's matvec comes first and Wa's reads its result, so Wa's
 * is the next stage, though of the same x. */
static void warm_next_residual(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_node wa = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0);
    rlx_node wb = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0);
    rlx_node ya = rlx_matmul(t.g, x, wa);
    rlx_node yb = rlx_matmul(t.g, x, wb);
    rlx_graph_mark_output(t.g, rlx_add(t.g, ya, yb), "y");
    const warm_want want[1] = {{wa, 8192}};
    warm_next_case(g_vk, &t, "x Wa + x Wb (add in Wa's matvec)", "8", 1, want, 1);
    vkt_graph_free(&t);
}

/* x W1, a MoE FFN, then W2: the stage after W1 is the MoE's, whose experts are chosen at run time,
 * so nothing is warmed after W1 (not W2, two stages on); W2 is the last matvec. */
static void warm_next_moe(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_node h = rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 32, 64, 0));
    rlx_node route = rlx_moe_route(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 4, 0), 2.0f), 2, true);
    rlx_node up = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 3, 4, 48, 32);
    rlx_node gate = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 3, 4, 48, 32);
    rlx_node y = rlx_moe_ffn(t.g, h, route, gate, up, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 3, 4, 32, 48));
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, y, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 40, 32, 0)), "y");
    warm_next_case(g_vk, &t, "x W1, MoE FFN, W2", "8", 1, NULL, 0);
    vkt_graph_free(&t);
}

/* Weights split in parts (bindings of 4 KiB): the warm follows the last part of W1's matvec and
 * reads the first part of W2's rows. */
static void warm_next_split(void) {
    rlx_vk_options o = g_opts;
    o.max_binding_bytes = 4096;
    rlx_backend *small = vkt_backend_with(&o);
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_node w1 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 80, 64, 0);
    rlx_node w2 = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 72, 80, 0);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, rlx_matmul(t.g, x, w1), w2), "y");
    const warm_want want[1] = {{w2, 65536}};
    warm_next_case(small, &t, "x W1 W2, weights in parts of <= 4 KiB", "64", 1, want, 1);
    vkt_graph_free(&t);
    rlx_backend_destroy(small);
}

/* The default: on a GPU (or with its plans, RLX_VK_PLANS=gpu), plain-type rows of 4,096 warm the
 * next stage's first 3 MiB (here all of a 16-row weight); K-quant rows never do, nor anything on a
 * CPU device with its own plans (lavapipe). The next stage reads another x, so it is one whatever
 * the add. */
static void warm_next_default(void) {
    static const uint32_t types[2] = {RLX_DTYPE_F16, RLX_DTYPE_Q4_K};
    bool gpu = !rlx_vk_backend_caps(g_vk)->is_cpu || g_opts.gpu_plans;
    for (int i = 0; i < 2; i++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 4096, 0), 1.0f);
        rlx_node x2 = vkt_input_f32(&t, &g_rng, vkt_shape(2, 1, 4096, 0), 1.0f);
        rlx_node w1 = vkt_graph_weight(&t, &g_rng, types[i], 2, 16, 4096, 0);
        rlx_node w2 = vkt_graph_weight(&t, &g_rng, types[i], 2, 16, 4096, 0);
        rlx_node y1 = rlx_matmul(t.g, x, w1);
        rlx_graph_mark_output(t.g, rlx_add(t.g, y1, rlx_matmul(t.g, x2, w2)), "y");
        const warm_want want[1] = {{w1, 3u << 20}}; /* W2's matvec first, then W1's with the add */
        char what[48];
        snprintf(what, sizeof what, "x W1 + x' W2, %s rows of 4096", tname(types[i]));
        warm_next_case(g_vk, &t, what, NULL, 1, want, gpu && types[i] == RLX_DTYPE_F16 ? 1 : 0);
        vkt_graph_free(&t);
    }
}

void test_warm_next(void) {
    warm_next_stages();
    warm_next_residual();
    warm_next_moe();
    warm_next_split();
    warm_next_default();
}
