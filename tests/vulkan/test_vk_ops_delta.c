/* test_vk_ops: the Gated DeltaNet ops (STATE, CAUSAL_CONV, DELTA_RULE, DELTA_GATE) against the CPU
 * reference, one case each here; the recurrent state contract (sequences interleaved, slots,
 * restarts, chunk sizes, copy_state) is tests/vulkan/test_vk_recurrent.c's. */
#include <stdio.h>

#include "test_vk_ops.h"

static const uint8_t g_recurrent[1] = {RLX_STATE_RECURRENT};

/* t's session: one recurrent layer of one slot of `floats` floats. */
static void recurrent_session(vkt_graph *t, int64_t floats) {
    t->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = 1, .n_head_kv = 1, .head_dim = 4,
                             .layer_kind = g_recurrent, .n_state_slots = 1, .state_floats = floats};
}

/* x [8, 24] through a conv of 4 taps (its state at float 5 of the slot): prefill 5 rows, then
 * continued by 3 and by 1 (the state carried between runs), then restarted at position 0. */
static void conv_case(rlx_op op) {
    vkt_graph t;
    vkt_graph_init(&t);
    recurrent_session(&t, 5 + 3 * 24);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 8, 24, 0), 1.0f);
    rlx_node w = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 2, 24, 4, 0);
    rlx_graph_mark_output(t.g, rlx_causal_conv(t.g, x, w, rlx_state(t.g, 0, 5, vkt_shape(2, 3, 24, 0))), "y");
    vkt_step steps[4] = {{0, 5}, {5, 3}, {8, 1}, {0, 8}};
    vkt_compare_fresh(op, "x [8,24] K 4: 5 rows, +3, +1, restart", &t, steps, 4);
    vkt_graph_free(&t);
}

void test_STATE(void) { conv_case(RLX_OP_STATE); }
void test_CAUSAL_CONV(void) { conv_case(RLX_OP_CAUSAL_CONV); }

/* The delta rule over 2 key heads and 4 value heads, as the layer feeds it (q, k L2-normed, beta in
 * (0, 1), g < 0), in a program of `rows` rows (16+: the chunked kernel; fewer: the step kernel). */
static void delta_case(int64_t rows, int32_t chunk, const vkt_step *steps, int n_steps, const char *label) {
    vkt_graph t;
    vkt_graph_init(&t);
    recurrent_session(&t, 7 + 4 * 16 * 8);
    rlx_node q = rlx_l2_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 2, 16), 1.0f), 1e-6f);
    rlx_node k = rlx_l2_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 2, 16), 1.0f), 1e-6f);
    rlx_node v = vkt_input_f32(&t, &g_rng, vkt_shape(3, rows, 4, 8), 1.0f);
    rlx_node g = rlx_scale(t.g, rlx_sigmoid(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, 4, 0), 1.0f)), -0.5f);
    rlx_node beta = rlx_sigmoid(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, 4, 0), 1.0f));
    rlx_node st = rlx_state(t.g, 0, 7, vkt_shape(3, 4, 16, 8));
    rlx_graph_mark_output(t.g, rlx_delta_rule(t.g, q, k, v, g, beta, st, chunk), "o");
    vkt_compare_fresh(RLX_OP_DELTA_RULE, label, &t, steps, n_steps);
    /* prefill: the pre-pass and the chunk walk, the norms their own dispatches; decode: the step
     * kernel alone, normalising q and k itself (runtime/vk_fuse.c fuse_delta) */
    size_t l2 = vkt_dispatch_count(&t, RLX_VK_KERNEL_l2_norm), prep = vkt_dispatch_count(&t, RLX_VK_KERNEL_delta_prep);
    size_t walk = vkt_dispatch_count(&t, RLX_VK_KERNEL_delta_chunk);
    size_t step1 = vkt_dispatch_count(&t, RLX_VK_KERNEL_delta_step);
    bool chunked = rows >= 16;
    T_CHECK(l2 == (chunked ? 2u : 0u) && prep == chunked && walk == chunked && step1 == !chunked,
            "%s: dispatches l2_norm %zu, delta_prep %zu, delta_chunk %zu, delta_step %zu", label, l2, prep, walk,
            step1);
    printf("  %-10s %-44s l2_norm %zu, delta_prep %zu, delta_chunk %zu, delta_step %zu\n", "DELTA_RULE", label, l2,
           prep, walk, step1);
    vkt_graph_free(&t);
}

void test_DELTA_RULE(void) {
    vkt_step pre[3] = {{0, 37}, {37, 20}, {0, 40}};
    delta_case(40, 8, pre, 3, "[40 rows] chunk 8: 37, +20, restart");
    vkt_step dec[4] = {{0, 3}, {3, 1}, {4, 2}, {0, 1}};
    delta_case(4, 0, dec, 4, "[4 rows] step kernel: 3, +1, +2, restart");
}

void test_DELTA_GATE(void) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node a = vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 6, 0), 4.0f);
    rlx_node A = rlx_scale(t.g, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, 6, 0, 0), 2.0f);
    rlx_node bias = vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 1, 6, 0, 0);
    rlx_graph_mark_output(t.g, rlx_delta_gate(t.g, a, A, bias), "g");
    vkt_compare1(RLX_OP_DELTA_GATE, "a [5,6] in [-4,4], dt_bias F16", &t, 4);
    vkt_graph_free(&t);
}
