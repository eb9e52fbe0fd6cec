/* test_vk_ops: the routing and mixture-of-experts ops (MOE_ROUTE, MOE_FFN) against the CPU reference. */
#include <stdio.h>

#include "test_vk_ops.h"

void test_MOE_ROUTE(void) {
    struct {
        int64_t n, e;
        int32_t k;
        bool norm;
    } cases[] = {{5, 4, 2, true},  {5, 4, 2, false},   {3, 60, 4, true},
                 {1, 8, 1, false}, {2, 128, 8, true},  {2, 256, 8, true}, {4, 300, 3, false},
                 {2, 256, 2, true}, {37, 64, 4, true}, {1, 1024, 8, true}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, cases[c].n, cases[c].e, 0), 3.0f);
        float *v = t.in[0];
        if (c == 0) v[1] = v[3] = 5.0f; /* ties between experts 1 and 3 */
        if (c == 7) /* top 2 of a three-way tie, held by different invocations and subgroups: the lower indices */
            v[5] = v[70] = v[200] = v[256 + 9] = v[256 + 130] = v[256 + 131] = 9.0f;
        rlx_graph_mark_output(t.g, rlx_moe_route(t.g, x, cases[c].k, cases[c].norm), "r");
        char label[64];
        snprintf(label, sizeof label, "[%lld,%lld] top %d%s", (long long)cases[c].n, (long long)cases[c].e,
                 cases[c].k, cases[c].norm ? " norm" : "");
        vkt_compare1(RLX_OP_MOE_ROUTE, label, &t, (int32_t)cases[c].n);
        vkt_graph_free(&t);
    }
}

static void moe_case(uint32_t type, int64_t n, int64_t e, int64_t f, int64_t d, bool dense_route) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, n, d, 0), 1.0f), route;
    if (dense_route) {
        route = vkt_input_f32(&t, &g_rng, vkt_shape(2, n, e, 0), 1.0f);
        /* rows that route to fewer experts than the others: the slots they leave must add nothing */
        float *r = t.in[t.nin - 1];
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < e; k++)
                if ((i + k) % 3 == 0 && k != i % e) r[i * e + k] = 0.0f;
    } else {
        route = rlx_moe_route(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, n, e, 0), 2.0f), 2, true);
    }
    rlx_node gate = vkt_graph_weight(&t, &g_rng, type, 3, e, f, d), up = vkt_graph_weight(&t, &g_rng, type, 3, e, f, d);
    rlx_node down = vkt_graph_weight(&t, &g_rng, type, 3, e, d, f);
    rlx_graph_mark_output(t.g, rlx_moe_ffn(t.g, x, route, gate, up, down), "y");
    char label[64];
    snprintf(label, sizeof label, "%s n %lld E %lld F %lld D %lld%s", tname(type), (long long)n, (long long)e,
             (long long)f, (long long)d, dense_route ? " dense" : " top2");
    vkt_compare1(RLX_OP_MOE_FFN, label, &t, (int32_t)(n > 1 ? n - 1 : n));
    vkt_graph_free(&t);
}

void test_MOE_FFN(void) {
    moe_case(RLX_DTYPE_F32, 3, 4, 64, 32, false);
    moe_case(RLX_DTYPE_F16, 5, 4, 32, 96, false);
    moe_case(RLX_DTYPE_Q8_0, 2, 6, 64, 64, true);
    moe_case(RLX_DTYPE_Q4_K, 3, 4, 256, 256, false);
    moe_case(RLX_DTYPE_Q6_K, 1, 8, 256, 256, false);
    moe_case(RLX_DTYPE_Q4_K, 2, 5, 256, 256, true);
}
