/* test_vk_ops: the fused patterns of runtime/vk_fuse.c against the CPU reference, which computes
 * them op by op, and which kernels each case dispatches. */
#include <math.h>
#include <stdio.h>

#include "test_vk_ops.h"

/* Fused patterns (runtime/vk_fuse.c): the CPU computes them op by op, so parity checks the fusion. */
static void test_fusions(void) {
    for (int variant = 0; variant < 6; variant++) {
        vkt_graph t;
        vkt_graph_init(&t);
        rlx_node h = vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 256, 0), 1.0f), y;
        const char *label = "";
        switch (variant) {
        case 0: /* residual add in the matmul epilogue (weight split in parts on small devices too) */
            y = rlx_add(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 96, 0), 1.0f),
                        rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q4_K, 2, 96, 256, 0)));
            label = "x + matmul(h, Q4_K)";
            break;
        case 1: /* SiLU-gated FFN: up-projection epilogue */
            y = rlx_mul(t.g,
                        rlx_silu(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q8_0, 2, 64, 256, 0))),
                        rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 64, 256, 0)));
            label = "silu(h Wg) * (h Wu)";
            break;
        case 2: { /* GELU gate, operands swapped, the activation also an output */
            rlx_node act =
                rlx_gelu_tanh(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_Q6_K, 2, 64, 256, 0)));
            rlx_graph_mark_output(t.g, act, "act");
            y = rlx_mul(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_BF16, 2, 64, 256, 0)), act);
            label = "(h Wu) * gelu(h Wg), gelu also out";
            break;
        }
        case 3: /* elementwise silu(a) * b */
            y = rlx_mul(t.g, rlx_silu(t.g, h), vkt_input_f32(&t, &g_rng, vkt_shape(2, 5, 256, 0), 1.0f));
            label = "silu(a) * b";
            break;
        case 4: /* norm then scale */
            y = rlx_scale(t.g, rlx_rms_norm(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, 256, 0, 0), 1e-6f),
                          3.5f);
            label = "rms_norm(h) * 3.5";
            break;
        default: { /* q-norm then RoPE over heads, as Qwen3 prepares Q */
            rlx_node q =
                rlx_reshape(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, 256, 256, 0)),
                            vkt_shape(3, 5, 4, 64));
            q = rlx_rms_norm(t.g, q, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, 64, 0, 0), 1e-6f);
            y = rlx_rope(t.g, q, RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 48, 1e6f});
            label = "rope(rms_norm(heads(h Wq))), rot 48 of 64";
            break;
        }
        }
        rlx_graph_mark_output(t.g, y, "y");
        rlx_op op = variant == 5   ? RLX_OP_ROPE
                    : variant == 4 ? RLX_OP_RMS_NORM
                    : variant == 0 ? RLX_OP_ADD
                                   : RLX_OP_MUL;
        vkt_step steps[] = {{0, 5}, {37, 3}};
        vkt_compare(op, label, &t, steps, 2, true, TOL_F32);
        vkt_graph_free(&t);
    }
}

/* One attention layer as the runners build it: K = rope([rms_norm](x Wk)) goes into the cache
 * through the RoPE kernel (runtime/vk_fuse.c fuse_kv), and V's rows ride along in that dispatch
 * when they are computed before it (v_late: after it, so V keeps its own KV_WRITE). With one query
 * row (decode) the attention kernel does all of it (fuse_attention_step). Checks the attention
 * output and both caches over prefill, decode and padded steps, and which kernels are dispatched:
 * a kv_write copy only for a late V of several rows; no norm or RoPE kernel for one row. With
 * RLX_VK_WARM=1 set (warm), the V matvec of a decode step reads the caches into L2 wherever K and V
 * rows are alike (vk_fuse.c mark_warm), which must not change any value; these rows (32) are too
 * short for the default to warm. The case: kv_case (test_vk_ops.h). */

static rlx_node kv_heads(vkt_graph *t, rlx_node x, int64_t rows, int64_t heads, int64_t d) {
    rlx_node y = rlx_matmul(t->g, x, vkt_graph_weight(t, &g_rng, RLX_DTYPE_F16, 2, heads * d, 32, 0));
    return rlx_reshape(t->g, y, vkt_shape(3, rows, heads, d));
}

static rlx_node kv_qk(vkt_graph *t, const kv_case *c, rlx_node x, int64_t heads) {
    rlx_node y = kv_heads(t, x, c->rows, heads, c->dh);
    if (c->norm) y = rlx_rms_norm(t->g, y, vkt_graph_weight(t, &g_rng, RLX_DTYPE_F32, 1, c->dh, 0, 0), 1e-6f);
    return rlx_rope(t->g, y, RLX_NO_NODE, (rlx_rope_attrs){c->layout, c->n_rot, 1e4f});
}

/* t: case c's layer, with outputs o (the attention), k and v (the caches). */
void kv_case_graph(vkt_graph *t, const kv_case *c) {
    vkt_graph_init(t);
    t->kv = (rlx_state_spec){.n_layer = 1, .page_size = 1, .n_pages = (int32_t)c->cap, .n_head_kv = (int32_t)c->hkv,
                          .head_dim = (int32_t)c->dh, .head_dim_v = (int32_t)c->dv};
    rlx_node x = vkt_input_f32(t, &g_rng, vkt_shape(2, c->rows, 32, 0), 1.0f);
    rlx_node kcache = rlx_kv_cache(t->g, 0, false, c->cap, c->hkv, c->dh);
    rlx_node vcache = rlx_kv_cache(t->g, 0, true, c->cap, c->hkv, c->dv);
    rlx_node q = kv_qk(t, c, x, c->h), k = kv_qk(t, c, x, c->hkv), v = RLX_NO_NODE;
    if (!c->v_late) v = kv_heads(t, x, c->rows, c->hkv, c->dv);
    rlx_node kw = rlx_kv_write(t->g, kcache, k);
    if (c->v_late) v = kv_heads(t, x, c->rows, c->hkv, c->dv);
    rlx_node vw = rlx_kv_write(t->g, vcache, v);
    rlx_graph_mark_output(t->g, rlx_attention(t->g, q, kw, vw, 1.0f / sqrtf((float)c->dh), c->window), "o");
    rlx_graph_mark_output(t->g, kcache, "k");
    rlx_graph_mark_output(t->g, vcache, "v");
}

static void kv_fusion_case(const kv_case *c, bool warm) {
    vkt_graph t;
    kv_case_graph(&t, c);
    int32_t rows = (int32_t)c->rows;
    vkt_step steps[] = {{0, rows}, {rows, 1}, {rows + 1, rows > 1 ? rows - 1 : 1}, {(int32_t)c->cap - 1, 1}};
    char label[64];
    snprintf(label, sizeof label, "%s%s kv rows %d H %lld/%lld Dh %lld Dv %lld rot %d%s", c->norm ? "norm+" : "",
             c->layout == RLX_ROPE_LAYOUT_NEOX ? "neox" : "normal", rows, (long long)c->h, (long long)c->hkv,
             (long long)c->dh, (long long)c->dv, c->n_rot, c->v_late ? " v late" : "");
    vkt_compare(RLX_OP_KV_WRITE, label, &t, steps, 4, true, TOL_F32);
    bool copies = vkt_dispatches(&t, RLX_VK_KERNEL_kv_write), one_row = c->rows == 1;
    bool prep = vkt_dispatches(&t, RLX_VK_KERNEL_rms_norm) || vkt_dispatches(&t, RLX_VK_KERNEL_rope);
    T_CHECK(copies == (c->v_late && !one_row), "%s: kv_write dispatched: %s, expected %s", label, copies ? "yes" : "no",
            c->v_late && !one_row ? "yes (V's own)" : "no (both writes fused)");
    bool fused =
        vkt_dispatches(&t, RLX_VK_KERNEL_attention_step) || vkt_dispatches(&t, RLX_VK_KERNEL_attention_step_fixed);
    T_CHECK(prep != one_row && fused == one_row,
            "%s: norm/RoPE kernels dispatched: %s, attention_step: %s", label, prep ? "yes" : "no",
            one_row ? "expected" : "not expected");
    if (g_kv_dtype == RLX_DTYPE_F16) { /* the pools are touched by the F16 kernels only */
        static const rlx_vk_kernel pool_kernels[] = {RLX_VK_KERNEL_kv_write, RLX_VK_KERNEL_attention,
                                                     RLX_VK_KERNEL_attention_step, RLX_VK_KERNEL_attention_step_fixed,
                                                     RLX_VK_KERNEL_attention_prefill};
        static const rlx_vk_kernel writers16[] = {RLX_VK_KERNEL_kv_write_f16, RLX_VK_KERNEL_rope_f16,
                                                  RLX_VK_KERNEL_rms_norm_f16, RLX_VK_KERNEL_attention_step_f16,
                                                  RLX_VK_KERNEL_attention_step_fixed_f16};
        size_t f32_kernels = 0, w16 = 0;
        for (size_t k = 0; k < sizeof pool_kernels / sizeof pool_kernels[0]; k++)
            f32_kernels += vkt_dispatch_count_exact(&t, pool_kernels[k]);
        for (size_t k = 0; k < sizeof writers16 / sizeof writers16[0]; k++)
            w16 += vkt_dispatch_count_exact(&t, writers16[k]);
        bool writes16 = w16 > 0;
        T_CHECK(f32_kernels == 0 && writes16, "%s: F16 pools: %zu dispatches of f32 pool kernels, F16 writes: %s",
                label, f32_kernels, writes16 ? "yes" : "no");
    }
    size_t elem = g_kv_dtype == RLX_DTYPE_F16 ? 2 : 4; /* cache rows of whole 16-byte words */
    size_t warmed = vkt_warm_count(&t), want = warm && one_row && c->dh == c->dv && c->hkv * c->dh * elem % 16 == 0;
    T_CHECK(warmed == want, "%s: %zu matvec dispatches warm the caches, expected %zu", label, warmed, want);
    printf("  %-10s %-44s kv_write dispatched: %s, norm/RoPE: %s%s%s\n", "KV_WRITE", label, copies ? "yes" : "no",
           prep ? "yes" : "no (in attention)",
           vkt_dispatches(&t, RLX_VK_KERNEL_attention_step_fixed) ? ", attention_step_fixed" : "",
           warmed ? ", caches warmed by the V matvec" : "");
    vkt_graph_free(&t);
}

/* A residual add after a norm (Gemma 3's post-norms) is the norm's epilogue, on either side of the
 * ADD, for a long row (workgroup per row) and head-sized rows (a subgroup per row). */
static void test_norm_add(void) {
    for (int variant = 0; variant < 3; variant++) {
        vkt_graph t;
        vkt_graph_init(&t);
        int64_t cols = variant == 2 ? 64 : 1000;
        rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, 6, cols, 0), 2.0f);
        rlx_node h = rlx_rms_norm(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, 6, cols, 0), 3.0f),
                                  vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 1, cols, 0, 0), 1e-6f);
        rlx_graph_mark_output(t.g, variant == 1 ? rlx_add(t.g, h, x) : rlx_add(t.g, x, h), "y");
        char label[64];
        snprintf(label, sizeof label, "%s, rows of %lld", variant == 1 ? "rms_norm(h) + x" : "x + rms_norm(h)",
                 (long long)cols);
        vkt_step steps[] = {{0, 6}, {9, 4}};
        vkt_compare(RLX_OP_ADD, label, &t, steps, 2, true, TOL_F32);
        bool ew = vkt_dispatches(&t, RLX_VK_KERNEL_ew);
        T_CHECK(!ew, "%s: the add was dispatched on its own", label);
        printf("  %-10s %-44s ew dispatched: %s\n", "ADD", label, ew ? "yes" : "no");
        vkt_graph_free(&t);
    }
}

/* The decode patterns around a layer's norms (runtime/vk_fuse.c fuse_norm_matvec): an attention
 * norm read by the q, k and v projections, an FFN norm read by the gate and up projections (a
 * gated FFN with its down projection and residual), and a norm with one more reader that is not a
 * matmul. On few rows each matvec normalises x itself and the norm has no dispatch, and the gate
 * and up projections share one matvec (fuse_gate_up); on prefill rows (tiled matmuls) and with the
 * extra reader the norm keeps its own dispatch. */
typedef enum { NORM_QKV, NORM_FFN, NORM_EXTRA } norm_pattern;

static void norm_matvec_case(norm_pattern pat, uint32_t type, int64_t k, int64_t rows, uint32_t norm_type) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 2.0f);
    rlx_node h = rlx_rms_norm(t.g, x, vkt_graph_weight(&t, &g_rng, norm_type, 1, k, 0, 0), 1e-6f);
    int64_t f = 256;
    const char *what = "";
    switch (pat) {
    case NORM_QKV:
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 96, k, 0)), "q");
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 40, k, 0)), "k");
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 40, k, 0)), "v");
        what = "q,k,v(norm(x))";
        break;
    case NORM_FFN: {
        rlx_node g = rlx_silu(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, f, k, 0)));
        rlx_node u = rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, f, k, 0));
        rlx_node y =
            rlx_add(t.g, x, rlx_matmul(t.g, rlx_mul(t.g, g, u), vkt_graph_weight(&t, &g_rng, type, 2, k, f, 0)));
        rlx_graph_mark_output(t.g, y, "y");
        what = "x + down(silu(gate) * up)(norm(x))";
        break;
    }
    case NORM_EXTRA:
        rlx_graph_mark_output(t.g, rlx_matmul(t.g, h, vkt_graph_weight(&t, &g_rng, type, 2, 96, k, 0)), "q");
        rlx_graph_mark_output(t.g, rlx_scale(t.g, h, 0.5f), "half");
        what = "q(norm(x)), norm(x) / 2";
        break;
    }
    char label[96];
    snprintf(label, sizeof label, "%s %s k=%lld rows=%lld nw %s", what, tname(type), (long long)k, (long long)rows,
             tname(norm_type));
    int32_t n = (int32_t)rows;
    vkt_step steps[] = {{0, n}, {n + 2, n > 1 ? n - 1 : 1}};
    vkt_compare(RLX_OP_RMS_NORM, label, &t, steps, 2, true, TOL_F32);
    size_t norms = vkt_dispatch_count(&t, RLX_VK_KERNEL_rms_norm), mvs = vkt_dispatch_count(&t, RLX_VK_KERNEL_matvec);
    size_t want = pat == NORM_EXTRA || rows >= 16 ? 1 : 0;
    size_t want_mv = rows >= 16 ? 0 : pat == NORM_QKV ? 3 : pat == NORM_FFN ? 2 : 1;
    T_CHECK(norms == want, "%s: %zu rms_norm dispatches, expected %zu", label, norms, want);
    T_CHECK(mvs == want_mv, "%s: %zu matvec dispatches, expected %zu", label, mvs, want_mv);
    printf("  %-10s %-44s rms_norm dispatches: %zu, matvec: %zu\n", "RMS_NORM", label, norms, mvs);
    vkt_graph_free(&t);
}

static void test_norm_matvec(void) {
    static const uint32_t types[] = {RLX_DTYPE_F16, RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K};
    static const int64_t rows[] = {1, 2, 3, 5, 8, 40};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            norm_matvec_case(NORM_QKV, types[i], 512, rows[r], RLX_DTYPE_F32);
            norm_matvec_case(NORM_FFN, types[i], 512, rows[r], RLX_DTYPE_F32);
        }
    for (int64_t r = 1; r <= 8; r++) norm_matvec_case(NORM_QKV, RLX_DTYPE_Q4_K, 1024, r, RLX_DTYPE_F32);
    norm_matvec_case(NORM_QKV, RLX_DTYPE_F32, 600, 3, RLX_DTYPE_F16);  /* norm weights decoded to f32 */
    norm_matvec_case(NORM_QKV, RLX_DTYPE_BF16, 1200, 12, RLX_DTYPE_F32); /* two workgroups of 8 x rows */
    norm_matvec_case(NORM_EXTRA, RLX_DTYPE_Q8_0, 512, 2, RLX_DTYPE_F32);
}

/* A norm of a residual add computed by a matvec (runtime/vk_fuse.c fuse_norm_into_producer):
 * norm(y + x Wp) read by matmuls that do not fold it in (K-quant rows over 2,048). On one row the
 * producer writes the input times the norm's weights and leaves the rsqrt factor for the readers
 * (no rms_norm dispatch), over runs of fresh inputs that each reuse its counter; with several rows, a reader that
 * folds the norm (F16) or a norm that is also an output, the norm is dispatched or folded as before. */
typedef struct norm_post_case {
    uint32_t producer, reader;
    int64_t rows;
    bool norm_out;
    size_t want_norms; /* rms_norm dispatches expected */
} norm_post_case;

static void norm_post_run(const norm_post_case *c) {
    vkt_graph t;
    vkt_graph_init(&t);
    int64_t k = 256, m = 2304;
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, k, 0), 1.0f);
    rlx_node y = vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, m, 0), 2.0f);
    rlx_node h = rlx_add(t.g, y, rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, c->producer, 2, m, k, 0)));
    rlx_node n = rlx_rms_norm(t.g, h, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, m, 0, 0), 1e-6f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, n, vkt_graph_weight(&t, &g_rng, c->reader, 2, 64, m, 0)), "q");
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, n, vkt_graph_weight(&t, &g_rng, c->reader, 2, 40, m, 0)), "k");
    rlx_graph_mark_output(t.g, h, "h");
    if (c->norm_out) rlx_graph_mark_output(t.g, n, "n");
    char label[96];
    snprintf(label, sizeof label, "%s(norm(y + x Wp %s)) rows=%lld%s", tname(c->reader), tname(c->producer),
             (long long)c->rows, c->norm_out ? " +norm out" : "");
    int32_t r = (int32_t)c->rows;
    vkt_step steps[] = {{0, r}, {r + 2, r}, {2 * r + 5, r}};
    vkt_compare_fresh(RLX_OP_RMS_NORM, label, &t, steps, 3);
    size_t norms = vkt_dispatch_count(&t, RLX_VK_KERNEL_rms_norm);
    T_CHECK(norms == c->want_norms, "%s: %zu rms_norm dispatches, expected %zu", label, norms, c->want_norms);
    printf("  %-10s %-44s rms_norm dispatches: %zu\n", "RMS_NORM", label, norms);
    vkt_graph_free(&t);
}

static void test_norm_post(void) {
    static const norm_post_case cases[] = {
        {RLX_DTYPE_F16, RLX_DTYPE_Q4_K, 1, false, 0}, {RLX_DTYPE_Q4_K, RLX_DTYPE_Q6_K, 1, false, 0},
        {RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_K, 1, false, 0}, {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, 1, true, 1},
        {RLX_DTYPE_F16, RLX_DTYPE_Q4_K, 3, false, 1},  {RLX_DTYPE_F16, RLX_DTYPE_F16, 1, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) norm_post_run(&cases[i]);
}

/* Greedy decode's argmax of the logits (runtime/vk_fuse.c fuse_argmax_into_producer): on one row
 * of a matmul on matvec.comp the matvec's last workgroups reduce the workgroups' maxima (no argmax
 * dispatch), over runs of fresh inputs that each reuse its counters, with the norm before it folded, prepared by
 * a residual matvec, or absent; with several rows, or logits that are an output too, the argmax
 * keeps its dispatch. Vocabularies of several teams of 64 workgroups. */
static void argmax_post_case(uint32_t type, int64_t k, int64_t vocab, int64_t rows, int norm, bool logits_out) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f);
    if (norm == 2) /* prepared by the residual matvec when the reader cannot fold it (K-quant, k > 2048) */
        x = rlx_add(t.g, vkt_input_f32(&t, &g_rng, vkt_shape(2, rows, k, 0), 1.0f),
                    rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F16, 2, k, k, 0)));
    if (norm) x = rlx_rms_norm(t.g, x, vkt_graph_weight(&t, &g_rng, RLX_DTYPE_F32, 1, k, 0, 0), 1e-6f);
    rlx_node logits = rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, type, 2, vocab, k, 0));
    rlx_graph_mark_output(t.g, rlx_argmax(t.g, logits), "id");
    if (logits_out) rlx_graph_mark_output(t.g, logits, "logits");
    char label[96];
    snprintf(label, sizeof label, "argmax(%s%s k=%lld) vocab %lld rows=%lld%s", tname(type),
             norm == 2 ? " prepared norm" : norm ? " norm" : "", (long long)k, (long long)vocab, (long long)rows,
             logits_out ? " +logits out" : "");
    int32_t r = (int32_t)rows;
    vkt_step steps[] = {{0, r}, {r + 2, r}, {2 * r + 5, r}};
    vkt_compare_fresh(RLX_OP_ARGMAX, label, &t, steps, 3);
    bool own = vkt_dispatches(&t, RLX_VK_KERNEL_argmax), want = rows > 1 || logits_out;
    T_CHECK(own == want, "%s: argmax dispatched: %s, expected %s", label, own ? "yes" : "no", want ? "yes" : "no");
    printf("  %-10s %-44s argmax dispatched: %s\n", "ARGMAX", label, own ? "yes" : "no");
    vkt_graph_free(&t);
}

static void test_argmax_post(void) {
    argmax_post_case(RLX_DTYPE_F16, 64, 20000, 1, 0, false);
    argmax_post_case(RLX_DTYPE_Q6_K, 256, 70000, 1, 1, false);
    argmax_post_case(RLX_DTYPE_Q4_K, 2304, 3000, 1, 2, false);
    argmax_post_case(RLX_DTYPE_Q8_0, 64, 777, 1, 1, false);
    argmax_post_case(RLX_DTYPE_F16, 64, 5000, 3, 0, false);
    argmax_post_case(RLX_DTYPE_F16, 64, 5000, 1, 0, true);
}

/* act(x Wg) * (x Wu) in one matvec (runtime/vk_fuse.c fuse_gate_up) where the two projections
 * read the same x and have weights of one type and shape, in either operand order and for both
 * activations; two matvecs otherwise (types differ, x differs). */
typedef struct gate_up_case {
    uint32_t gate_type, up_type;
    bool gelu, swapped, other_x;
    int64_t k, f, rows;
    bool stream; /* expected on matvec_stream.comp (runtime/vk_lower.c matvec_kernel) */
} gate_up_case;

static void gate_up_case_run(const gate_up_case *c) {
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, c->k, 0), 1.0f);
    rlx_node xu = c->other_x ? vkt_input_f32(&t, &g_rng, vkt_shape(2, c->rows, c->k, 0), 1.0f) : x;
    rlx_node g = rlx_matmul(t.g, x, vkt_graph_weight(&t, &g_rng, c->gate_type, 2, c->f, c->k, 0));
    g = c->gelu ? rlx_gelu_tanh(t.g, g) : rlx_silu(t.g, g);
    rlx_node u = rlx_matmul(t.g, xu, vkt_graph_weight(&t, &g_rng, c->up_type, 2, c->f, c->k, 0));
    rlx_graph_mark_output(t.g, c->swapped ? rlx_mul(t.g, u, g) : rlx_mul(t.g, g, u), "y");
    char label[96];
    snprintf(label, sizeof label, "%s(x Wg %s)%s(x%s Wu %s) k=%lld f=%lld rows=%lld", c->gelu ? "gelu" : "silu",
             tname(c->gate_type), c->swapped ? " *r " : " * ", c->other_x ? "'" : "", tname(c->up_type),
             (long long)c->k, (long long)c->f, (long long)c->rows);
    int32_t n = (int32_t)c->rows;
    vkt_step steps[] = {{0, n}, {5, n > 1 ? n - 1 : 1}};
    vkt_compare(RLX_OP_MUL, label, &t, steps, 2, true, TOL_F32);
    size_t streams = vkt_dispatch_count(&t, RLX_VK_KERNEL_matvec_stream);
    size_t mvs = vkt_dispatch_count(&t, RLX_VK_KERNEL_matvec) + streams;
    size_t want = c->gate_type == c->up_type && !c->other_x ? 1 : 2;
    T_CHECK(mvs == want, "%s: %zu matvec dispatches, expected %zu", label, mvs, want);
    T_CHECK((streams > 0) == c->stream, "%s: matvec_stream dispatched: %s, expected %s", label, streams ? "yes" : "no",
            c->stream ? "yes" : "no");
    printf("  %-10s %-44s matvec dispatches: %zu%s\n", "MUL", label, mvs, streams ? " (matvec_stream)" : "");
    vkt_graph_free(&t);
}

static void test_gate_up(void) {
    static const gate_up_case cases[] = {
        {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, true, false, false, 512, 300, 1, false},
        {RLX_DTYPE_Q6_K, RLX_DTYPE_Q6_K, false, true, false, 256, 130, 3, false},
        {RLX_DTYPE_Q8_0, RLX_DTYPE_Q8_0, true, true, false, 224, 70, 8, false},
        {RLX_DTYPE_F16, RLX_DTYPE_F16, false, false, false, 296, 37, 12, false},
        {RLX_DTYPE_F32, RLX_DTYPE_F32, false, false, false, 148, 19, 5, false},
        {RLX_DTYPE_BF16, RLX_DTYPE_BF16, true, false, false, 1200, 65, 2, false},
        {RLX_DTYPE_Q8_0, RLX_DTYPE_F16, false, false, false, 256, 64, 2, false},
        {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, false, false, true, 512, 64, 2, false},
        /* rows of 4,096 of a plain type: the weights read past L1 */
        {RLX_DTYPE_F16, RLX_DTYPE_F16, false, false, false, 4096, 40, 1, true},
        {RLX_DTYPE_BF16, RLX_DTYPE_BF16, true, true, false, 4096, 24, 3, true},
        {RLX_DTYPE_Q4_K, RLX_DTYPE_Q4_K, false, false, false, 4096, 24, 1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) gate_up_case_run(&cases[i]);
}

void test_kv_fusions(void) {
    static const kv_case cases[] = {
        {true, false, 1, 16, 8, 128, 128, 40, 128, 0, RLX_ROPE_LAYOUT_NEOX},  /* qwen3-0.6b decode shape */
        {true, false, 5, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX},     /* long cache: key splits */
        {true, true, 3, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL},       /* odd sizes, window */
        {false, false, 4, 4, 4, 32, 16, 20, 32, 0, RLX_ROPE_LAYOUT_NORMAL},   /* llama: RoPE alone */
        {false, true, 2, 8, 2, 16, 16, 20, 16, 0, RLX_ROPE_LAYOUT_NEOX},
        {true, false, 17, 4, 2, 64, 64, 40, 64, 0, RLX_ROPE_LAYOUT_NEOX},    /* prefill rows */
        {true, false, 1, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX},     /* decode, long cache: key splits */
        {true, true, 1, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL},       /* decode, odd sizes, window */
        {false, false, 1, 4, 4, 32, 16, 20, 32, 0, RLX_ROPE_LAYOUT_NORMAL},   /* decode, llama: RoPE alone */
        {false, true, 1, 8, 2, 16, 16, 20, 16, 0, RLX_ROPE_LAYOUT_NEOX},      /* decode, late V */
        {true, false, 1, 12, 4, 256, 256, 20, 256, 0, RLX_ROPE_LAYOUT_NEOX},  /* decode, gemma3-sized heads */
        /* heads of 32 on subgroups of 8 (lavapipe), of 128 on subgroups of 32 (the first case):
         * the plan attention_step_fixed.comp has in its source */
        {true, false, 1, 8, 4, 32, 32, 40, 32, 0, RLX_ROPE_LAYOUT_NEOX},
        {true, false, 1, 8, 2, 32, 32, 40, 16, 0, RLX_ROPE_LAYOUT_NORMAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) kv_fusion_case(&cases[i], false);
    rlx_vk_options o = g_opts;
    o.warm = 1;
    vkt_set_options(g_vk, &o);
    printf("  RLX_VK_WARM=1:\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].rows == 1) kv_fusion_case(&cases[i], true);
    /* Unsplit decode takes one query head per workgroup; the knob RLX_VK_ATTN_GW gives it more
     * (heads sharing one kv head), on the plain and the fused kernel. */
    static const uint32_t gw[] = {2, 4};
    static const kv_case gqa4 = {true, false, 1, 8, 2, 64, 64, 40, 64, 0, RLX_ROPE_LAYOUT_NEOX};
    for (size_t i = 0; i < 2; i++) {
        o = g_opts;
        o.attn_gw = gw[i];
        vkt_set_options(g_vk, &o);
        printf("  RLX_VK_ATTN_GW=%u:\n", gw[i]);
        kv_fusion_case(&gqa4, false);
        attention_cached(8, 2, 64, 0, 1, 96);
    }
    /* Lanes per key (RLX_VK_ATTN_LPK): one lane a key (a subgroup of 8 walks 8 keys side by side),
     * two, and 8 (heads of 64 the whole subgroup on lavapipe), on decode with and without key
     * splits and a window, and a few query rows. */
    static const uint32_t lpk[] = {1, 2, 8};
    static const kv_case split = {true, false, 1, 4, 2, 64, 64, 300, 48, 0, RLX_ROPE_LAYOUT_NEOX};
    static const kv_case odd = {true, true, 1, 6, 2, 10, 7, 24, 6, 4, RLX_ROPE_LAYOUT_NORMAL};
    for (size_t i = 0; i < 3; i++) {
        o = g_opts;
        o.attn_lpk = lpk[i];
        vkt_set_options(g_vk, &o);
        printf("  RLX_VK_ATTN_LPK=%u:\n", lpk[i]);
        kv_fusion_case(&gqa4, false);
        kv_fusion_case(&split, false);
        kv_fusion_case(&odd, false);
        attention_cached(4, 2, 64, 0, 1, 1100);
        attention_cached(4, 4, 32, 100, 3, 2000);
    }
    /* Wider workgroups (RLX_VK_ATTN_WG): more subgroups walk keys side by side and meet in the
     * larger side-by-side space (shaders/attention.glsl SUBS_CAP); with and without key splits. */
    static const uint32_t wgs[] = {512, 1024};
    for (size_t i = 0; i < 2; i++) {
        o = g_opts;
        o.attn_wg = wgs[i];
        o.attn_split_keys = i == 1 ? 4096 : 0;
        vkt_set_options(g_vk, &o);
        printf("  RLX_VK_ATTN_WG=%u%s:\n", wgs[i], i == 1 ? " RLX_VK_ATTN_SPLIT_KEYS=4096" : "");
        kv_fusion_case(&gqa4, false);
        kv_fusion_case(&split, false);
        attention_cached(4, 2, 64, 0, 1, 1100);
        attention_cached(4, 4, 32, 100, 3, 2000);
    }
    vkt_set_options(g_vk, &g_opts);
}

void test_all_fusions(void) {
    test_fusions();
    test_kv_fusions();
    test_norm_add();
    test_norm_matvec();
    test_norm_post();
    test_argmax_post();
    test_gate_up();
}
