/* Shape and dtype inference of every op, and at least one rejection per op. Expected shapes come
 * from the op semantics written in ir/ops.def (x @ w^T keeps the leading dims, ATTENTION returns
 * [n, H, Dv], ARGMAX drops the last dim, ...). The op list is generated from ops.def: an op
 * without a shape_<OP> test here fails to compile. */
#include <stdio.h>
#include <string.h>

#include "ir/graph.h"
#include "test_util.h"

static rlx_graph *g;

static rlx_shape S1(int64_t a) { return rlx_shape_make(1, (int64_t[]){a}); }
static rlx_shape S2(int64_t a, int64_t b) { return rlx_shape_make(2, (int64_t[]){a, b}); }
static rlx_shape S3(int64_t a, int64_t b, int64_t c) { return rlx_shape_make(3, (int64_t[]){a, b, c}); }

static void fresh(void) {
    rlx_graph_destroy(g);
    g = NULL;
    T_OK(rlx_graph_create(&g));
}

/* The node is valid with the expected dtype and shape. */
static void expect_shape(const char *what, rlx_node n, uint32_t dtype, rlx_shape want) {
    const rlx_node_info *info = rlx_graph_node(g, n);
    char got_s[64], want_s[64];
    bool ok = info && !info->invalid && info->dtype == dtype && info->shape.rank == want.rank;
    for (int32_t i = 0; ok && i < want.rank; i++) ok = info->shape.dim[i] == want.dim[i];
    printf("  %-58s %s%s (expected %s%s)\n", what, info ? rlx_dtype_name(info->dtype) : "-",
           info ? rlx_shape_str(&info->shape, got_s, sizeof got_s) : "[none]", rlx_dtype_name(dtype),
           rlx_shape_str(&want, want_s, sizeof want_s));
    T_CHECK(ok, "%s: got %s%s%s, expected %s%s", what, info ? rlx_dtype_name(info->dtype) : "-",
            info ? rlx_shape_str(&info->shape, got_s, sizeof got_s) : "[none]",
            info && info->invalid ? " (invalid)" : "", rlx_dtype_name(dtype), want_s);
}

/* The node is invalid and verify names it with the given problem. */
static void expect_error(const char *what, rlx_node n, const char *needle) {
    const rlx_node_info *info = rlx_graph_node(g, n);
    T_CHECK(info && info->invalid, "%s: node %%%d is not marked invalid", what, n);
    rlx_graph_mark_output(g, n, "out");
    rlx_status s = rlx_graph_verify(g);
    const char *msg = rlx_status_message(s);
    printf("  %-58s -> %s\n", what, s ? msg : "(no error)");
    T_CHECK(s && strstr(msg, needle), "%s: expected an error containing \"%s\", got: %s", what, needle, msg);
    rlx_status_free(s);
    fresh();
}

static rlx_node in_f32(const char *name, rlx_shape s) { return rlx_input(g, name, RLX_DTYPE_F32, s); }
static rlx_node w_of(const char *name, uint32_t t, rlx_shape s) { return rlx_weight_node(g, name, t, s); }

static void shape_INPUT(void) {
    expect_shape("INPUT ids I32 [7]", rlx_input(g, "ids", RLX_DTYPE_I32, S1(7)), RLX_DTYPE_I32, S1(7));
    expect_error("INPUT of type F16", rlx_input(g, "h", RLX_DTYPE_F16, S1(7)), "%1 INPUT: input 'h' has type F16");
    expect_error("INPUT dim 0", rlx_input(g, "z", RLX_DTYPE_F32, S2(3, 0)), "dim 1 is 0, expected >= 1");
    expect_error("INPUT without a name", rlx_input(g, NULL, RLX_DTYPE_F32, S1(3)), "%0 INPUT: a name is required");
}

static void shape_WEIGHT(void) {
    expect_shape("WEIGHT Q4_K [512, 256]", w_of("w", RLX_DTYPE_Q4_K, S2(512, 256)), RLX_DTYPE_Q4_K, S2(512, 256));
    expect_error("WEIGHT Q4_K rows of 100", w_of("w", RLX_DTYPE_Q4_K, S2(4, 100)),
                 "weight 'w' [4, 100]: rows of 100 are not whole Q4_K blocks of 256");
    expect_error("WEIGHT of type 99", w_of("w", 99, S1(4)), "weight 'w' has unknown type 99");
}

static void shape_KV_CACHE(void) {
    expect_shape("KV_CACHE cap 16, 2 heads of 64", rlx_kv_cache(g, 0, false, 16, 2, 64), RLX_DTYPE_F32, S3(16, 2, 64));
    expect_error("KV_CACHE layer -1", rlx_kv_cache(g, -1, true, 16, 2, 64), "layer -1 is negative");
}

static void shape_EMBED(void) {
    rlx_node t = w_of("tok", RLX_DTYPE_Q8_0, S2(100, 64)), ids = rlx_input(g, "ids", RLX_DTYPE_I32, S1(7));
    expect_shape("EMBED Q8_0 [100, 64] by ids [7]", rlx_embed(g, t, ids), RLX_DTYPE_F32, S2(7, 64));
    fresh();
    t = w_of("tok", RLX_DTYPE_F32, S2(100, 64));
    expect_error("EMBED with F32 ids", rlx_embed(g, t, in_f32("ids", S1(7))), "ids are F32, expected I32");
    t = w_of("tok", RLX_DTYPE_IQ2_XXS, S2(100, 256));
    expect_error("EMBED of an IQ2_XXS table", rlx_embed(g, t, rlx_input(g, "ids", RLX_DTYPE_I32, S1(7))),
                 "table has type IQ2_XXS, which cannot be dequantized");
}

static void shape_MATMUL(void) {
    rlx_node w = w_of("w", RLX_DTYPE_Q6_K, S2(512, 256));
    expect_shape("MATMUL [7, 256] x Q6_K [512, 256]", rlx_matmul(g, in_f32("x", S2(7, 256)), w), RLX_DTYPE_F32,
                 S2(7, 512));
    expect_shape("MATMUL [3, 4, 256] x [512, 256]", rlx_matmul(g, in_f32("x3", S3(3, 4, 256)), w), RLX_DTYPE_F32,
                 S3(3, 4, 512));
    expect_shape("MATMUL [256] x [512, 256]", rlx_matmul(g, in_f32("x1", S1(256)), w), RLX_DTYPE_F32, S1(512));
    fresh();
    expect_error("MATMUL K mismatch",
                 rlx_matmul(g, in_f32("x", S2(7, 256)), w_of("w", RLX_DTYPE_F32, S2(512, 128))),
                 "%2 MATMUL: x has 256 columns but w [512, 128] has 128");
    expect_error("MATMUL with I32 x",
                 rlx_matmul(g, rlx_input(g, "ids", RLX_DTYPE_I32, S2(7, 128)), w_of("w", RLX_DTYPE_F32, S2(512, 128))),
                 "x is I32, expected F32");
}

static void shape_RMS_NORM(void) {
    rlx_node x = in_f32("x", S2(7, 256));
    expect_shape("RMS_NORM [7, 256] by w [256]", rlx_rms_norm(g, x, w_of("n", RLX_DTYPE_F32, S1(256)), 1e-6f),
                 RLX_DTYPE_F32, S2(7, 256));
    expect_shape("RMS_NORM [7, 4, 64] by BF16 w [64]",
                 rlx_rms_norm(g, in_f32("q", S3(7, 4, 64)), w_of("qn", RLX_DTYPE_BF16, S1(64)), 1e-6f), RLX_DTYPE_F32,
                 S3(7, 4, 64));
    fresh();
    x = in_f32("x", S2(7, 256));
    expect_error("RMS_NORM w too short", rlx_rms_norm(g, x, w_of("n", RLX_DTYPE_F32, S1(128)), 1e-6f),
                 "x [7, 256] has rows of 256 but w [128] has 128");
}

static void shape_ROPE(void) {
    rlx_rope_attrs neox = {RLX_ROPE_LAYOUT_NEOX, 64, 1e6f}, partial = {RLX_ROPE_LAYOUT_NORMAL, 32, 1e4f};
    rlx_node x = in_f32("x", S3(7, 4, 64));
    expect_shape("ROPE NEOX [7, 4, 64]", rlx_rope(g, x, RLX_NO_NODE, neox), RLX_DTYPE_F32, S3(7, 4, 64));
    expect_shape("ROPE partial 32 with freq_factors [16]",
                 rlx_rope(g, x, w_of("rope_freqs.weight", RLX_DTYPE_F32, S1(16)), partial), RLX_DTYPE_F32,
                 S3(7, 4, 64));
    fresh();
    x = in_f32("x", S3(7, 4, 64));
    expect_error("ROPE n_rot 66", rlx_rope(g, x, RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 66, 1e4f}),
                 "n_rot 66 must be even and in [2, head size 64]");
    x = in_f32("x", S3(7, 4, 64));
    expect_error("ROPE freq_factors [32] for n_rot 32",
                 rlx_rope(g, x, w_of("ff", RLX_DTYPE_F32, S1(32)), partial),
                 "freq_factors [32], expected [n_rot/2 = 16]");
    x = in_f32("x", S2(7, 256));
    expect_error("ROPE of a rank-2 x", rlx_rope(g, x, RLX_NO_NODE, neox), "x [7, 256] has rank 2, expected 3");
}

static void shape_KV_WRITE(void) {
    rlx_node c = rlx_kv_cache(g, 0, false, 16, 2, 64);
    rlx_node x = in_f32("k", S3(7, 2, 64));
    expect_shape("KV_WRITE cache [16, 2, 64] <- [7, 2, 64]", rlx_kv_write(g, c, x), RLX_DTYPE_F32, S3(16, 2, 64));
    fresh();
    c = rlx_kv_cache(g, 0, false, 16, 2, 64);
    expect_error("KV_WRITE x with 3 heads", rlx_kv_write(g, c, in_f32("k", S3(7, 3, 64))),
                 "x [7, 3, 64] does not match cache [16, 2, 64] in [H_kv, Dh]");
    expect_error("KV_WRITE into an INPUT", rlx_kv_write(g, in_f32("c", S3(16, 2, 64)), in_f32("k", S3(7, 2, 64))),
                 "cache is INPUT, expected a KV_CACHE or KV_WRITE node");
}

static void shape_ATTENTION(void) {
    rlx_node q = in_f32("q", S3(7, 4, 64)), k = in_f32("k", S3(16, 2, 64)), v = in_f32("v", S3(16, 2, 32));
    expect_shape("ATTENTION q [7,4,64] k [16,2,64] v [16,2,32]", rlx_attention(g, q, k, v, 0.125f, 0), RLX_DTYPE_F32,
                 S3(7, 4, 32));
    fresh();
    q = in_f32("q", S3(7, 3, 64));
    k = in_f32("k", S3(16, 2, 64));
    expect_error("ATTENTION 3 heads over 2 kv heads", rlx_attention(g, q, k, k, 0.125f, 0),
                 "q has 3 heads, not a multiple of k's 2");
    q = in_f32("q", S3(7, 4, 64));
    k = in_f32("k", S3(16, 2, 64));
    expect_error("ATTENTION v of another length", rlx_attention(g, q, k, in_f32("v", S3(15, 2, 64)), 1, 0),
                 "k [16, 2, 64] and v [15, 2, 64] differ in [T, H_kv]");
    q = in_f32("q", S3(7, 4, 64));
    expect_error("ATTENTION window -1", rlx_attention(g, q, q, q, 1, -1), "window -1 is negative");
}

static void binary(const char *name, rlx_node (*fn)(rlx_graph *, rlx_node, rlx_node)) {
    char what[64];
    snprintf(what, sizeof what, "%s [7, 4, 64] [7, 4, 64]", name);
    expect_shape(what, fn(g, in_f32("a", S3(7, 4, 64)), in_f32("b", S3(7, 4, 64))), RLX_DTYPE_F32, S3(7, 4, 64));
    fresh();
    snprintf(what, sizeof what, "%s [7, 4] [4, 7]", name);
    expect_error(what, fn(g, in_f32("a", S2(7, 4)), in_f32("b", S2(4, 7))), "a [7, 4] and b [4, 7] differ in shape");
}

static void shape_ADD(void) { binary("ADD", rlx_add); }
static void shape_MUL(void) { binary("MUL", rlx_mul); }

static rlx_node scale_half(rlx_graph *gr, rlx_node x) { return rlx_scale(gr, x, 0.5f); }

static void unary(const char *name, rlx_node (*fn)(rlx_graph *, rlx_node)) {
    char what[64];
    snprintf(what, sizeof what, "%s [7, 512]", name);
    expect_shape(what, fn(g, in_f32("x", S2(7, 512))), RLX_DTYPE_F32, S2(7, 512));
    fresh();
    snprintf(what, sizeof what, "%s of I32", name);
    expect_error(what, fn(g, rlx_input(g, "ids", RLX_DTYPE_I32, S1(7))), "x is I32, expected F32");
}

static void shape_SCALE(void) { unary("SCALE", scale_half); }
static void shape_SILU(void) { unary("SILU", rlx_silu); }
static void shape_GELU_TANH(void) { unary("GELU_TANH", rlx_gelu_tanh); }
static void shape_SOFTMAX(void) { unary("SOFTMAX", rlx_softmax); }

static void shape_ARGMAX(void) {
    expect_shape("ARGMAX [7, 512]", rlx_argmax(g, in_f32("x", S2(7, 512))), RLX_DTYPE_I32, S1(7));
    expect_shape("ARGMAX [512]", rlx_argmax(g, in_f32("y", S1(512))), RLX_DTYPE_I32, S1(1));
    fresh();
    expect_error("ARGMAX of I32", rlx_argmax(g, rlx_input(g, "ids", RLX_DTYPE_I32, S1(7))), "x is I32, expected F32");
}

static void shape_RESHAPE(void) {
    expect_shape("RESHAPE [7, 256] -> [7, 4, 64]", rlx_reshape(g, in_f32("x", S2(7, 256)), S3(7, 4, 64)),
                 RLX_DTYPE_F32, S3(7, 4, 64));
    fresh();
    expect_error("RESHAPE [7, 256] -> [7, 4, 60]", rlx_reshape(g, in_f32("x", S2(7, 256)), S3(7, 4, 60)),
                 "new shape [7, 4, 60] has 1680 elements but x [7, 256] has 1792");
}

static void shape_LAST_ROW(void) {
    expect_shape("LAST_ROW [7, 512]", rlx_last_row(g, in_f32("x", S2(7, 512))), RLX_DTYPE_F32, S2(1, 512));
    expect_shape("LAST_ROW [7, 4, 64]", rlx_last_row(g, in_f32("y", S3(7, 4, 64))), RLX_DTYPE_F32, S3(1, 4, 64));
    fresh();
    expect_error("LAST_ROW of a BF16 weight", rlx_last_row(g, w_of("w", RLX_DTYPE_BF16, S2(3, 4))),
                 "x is BF16, expected F32 or I32");
}

static void shape_GATHER_ROWS(void) {
    rlx_node idx = rlx_input(g, "idx", RLX_DTYPE_I32, S1(3));
    expect_shape("GATHER_ROWS [7, 512] by 3", rlx_gather_rows(g, in_f32("x", S2(7, 512)), idx), RLX_DTYPE_F32,
                 S2(3, 512));
    fresh();
    idx = rlx_input(g, "idx", RLX_DTYPE_I32, S2(3, 2));
    expect_error("GATHER_ROWS by a matrix", rlx_gather_rows(g, in_f32("x", S2(7, 512)), idx),
                 "expected I32 of rank 1");
    fresh();
    expect_error("GATHER_ROWS by F32 rows", rlx_gather_rows(g, in_f32("x", S2(7, 512)), in_f32("i", S1(3))),
                 "idx is F32[3], expected I32 of rank 1");
}

static void shape_MOE_ROUTE(void) {
    expect_shape("MOE_ROUTE [7, 8] top 2", rlx_moe_route(g, in_f32("r", S2(7, 8)), 2, true), RLX_DTYPE_F32, S2(7, 8));
    fresh();
    expect_error("MOE_ROUTE top 9 of 8", rlx_moe_route(g, in_f32("r", S2(7, 8)), 9, true),
                 "top_k 9 is outside [1, 8 experts]");
}

static void shape_MOE_FFN(void) {
    rlx_node x = in_f32("x", S2(7, 256)), r = in_f32("r", S2(7, 8));
    rlx_node gate = w_of("gate", RLX_DTYPE_Q4_K, S3(8, 512, 256)), up = w_of("up", RLX_DTYPE_Q4_K, S3(8, 512, 256));
    rlx_node down = w_of("down", RLX_DTYPE_Q6_K, S3(8, 256, 512));
    expect_shape("MOE_FFN x [7,256] 8 experts of F 512", rlx_moe_ffn(g, x, r, gate, up, down), RLX_DTYPE_F32,
                 S2(7, 256));
    fresh();
    x = in_f32("x", S2(7, 256));
    r = in_f32("r", S2(7, 8));
    gate = w_of("gate", RLX_DTYPE_F32, S3(8, 512, 256));
    up = w_of("up", RLX_DTYPE_F32, S3(8, 512, 256));
    down = w_of("down", RLX_DTYPE_F32, S3(8, 512, 256));
    expect_error("MOE_FFN down not [E, D, F]", rlx_moe_ffn(g, x, r, gate, up, down),
                 "down [8, 512, 256], expected [8, 256, 512]");
}

static void shape_STATE(void) {
    expect_shape("STATE layer 1 at 12, [3, 64]", rlx_state(g, 1, 12, S2(3, 64)), RLX_DTYPE_F32, S2(3, 64));
    expect_error("STATE offset -1", rlx_state(g, 0, -1, S2(3, 64)), "layer 0, state_offset -1: expected both >= 0");
}

static void shape_CAUSAL_CONV(void) {
    rlx_node st = rlx_state(g, 0, 0, S2(3, 96));
    expect_shape("CAUSAL_CONV x [7, 96] w [96, 4] state [3, 96]",
                 rlx_causal_conv(g, in_f32("x", S2(7, 96)), w_of("w", RLX_DTYPE_F32, S2(96, 4)), st), RLX_DTYPE_F32,
                 S2(7, 96));
    fresh();
    st = rlx_state(g, 0, 0, S2(4, 96));
    expect_error("CAUSAL_CONV state of K rows",
                 rlx_causal_conv(g, in_f32("x", S2(7, 96)), w_of("w", RLX_DTYPE_F32, S2(96, 4)), st),
                 "state [4, 96], expected [K-1 = 3, 96]");
    expect_error("CAUSAL_CONV state not a STATE",
                 rlx_causal_conv(g, in_f32("x", S2(7, 96)), w_of("w", RLX_DTYPE_F32, S2(96, 4)),
                                 in_f32("s", S2(3, 96))),
                 "state is INPUT, expected a STATE node");
}

static void shape_DELTA_RULE(void) {
    rlx_node q = in_f32("q", S3(7, 2, 16)), k = in_f32("k", S3(7, 2, 16)), v = in_f32("v", S3(7, 4, 32));
    rlx_node gt = in_f32("g", S2(7, 4)), b = in_f32("b", S2(7, 4));
    expect_shape("DELTA_RULE q,k [7,2,16] v [7,4,32]",
                 rlx_delta_rule(g, q, k, v, gt, b, rlx_state(g, 0, 0, S3(4, 16, 32)), 0), RLX_DTYPE_F32,
                 S3(7, 4, 32));
    fresh();
    q = in_f32("q", S3(7, 3, 16));
    k = in_f32("k", S3(7, 3, 16));
    v = in_f32("v", S3(7, 4, 32));
    gt = in_f32("g", S2(7, 4));
    b = in_f32("b", S2(7, 5));
    expect_error("DELTA_RULE 4 value heads over 3 key heads, beta [7, 5]",
                 rlx_delta_rule(g, q, k, v, gt, b, rlx_state(g, 0, 0, S3(4, 16, 32)), 0),
                 "v [7, 4, 32], expected [7, a multiple of 3 key heads, dv]");
    q = in_f32("q", S3(7, 2, 16));
    v = in_f32("v", S3(7, 4, 32));
    gt = in_f32("g", S2(7, 4));
    expect_error("DELTA_RULE state [4, 32, 16], chunk -1",
                 rlx_delta_rule(g, q, q, v, gt, gt, rlx_state(g, 0, 0, S3(4, 32, 16)), -1), "chunk -1 is negative");
}

static void shape_DELTA_GATE(void) {
    expect_shape("DELTA_GATE a [7, 4] A [4] dt_bias [4]",
                 rlx_delta_gate(g, in_f32("a", S2(7, 4)), w_of("A", RLX_DTYPE_F32, S1(4)), w_of("b", RLX_DTYPE_F32, S1(4))),
                 RLX_DTYPE_F32, S2(7, 4));
    fresh();
    expect_error("DELTA_GATE A of 5 heads",
                 rlx_delta_gate(g, in_f32("a", S2(7, 4)), w_of("A", RLX_DTYPE_F32, S1(5)), w_of("b", RLX_DTYPE_F32, S1(4))),
                 "A [5] and dt_bias [4], expected both [4 heads]");
}

static rlx_node l2_norm_1e6(rlx_graph *gr, rlx_node x) { return rlx_l2_norm(gr, x, 1e-6f); }
static void shape_L2_NORM(void) {
    unary("L2_NORM", l2_norm_1e6);
    expect_error("L2_NORM eps -1", rlx_l2_norm(g, in_f32("x", S2(7, 512)), -1.0f), "eps -1 is not >= 0");
}
static void shape_SIGMOID(void) { unary("SIGMOID", rlx_sigmoid); }

static void shape_SCALE_ROWS(void) {
    expect_shape("SCALE_ROWS [7, 256] by [7, 1]", rlx_scale_rows(g, in_f32("x", S2(7, 256)), in_f32("s", S2(7, 1))),
                 RLX_DTYPE_F32, S2(7, 256));
    fresh();
    expect_error("SCALE_ROWS by [7, 2]", rlx_scale_rows(g, in_f32("x", S2(7, 256)), in_f32("s", S2(7, 2))),
                 "s [7, 2], expected [7, 1] (one scalar per row of x [7, 256])");
}

static void shape_SLICE(void) {
    expect_shape("SLICE [7, 4, 128] [64, +64)", rlx_slice(g, in_f32("x", S3(7, 4, 128)), 64, 64), RLX_DTYPE_F32,
                 S3(7, 4, 64));
    fresh();
    expect_error("SLICE past the end", rlx_slice(g, in_f32("x", S2(7, 96)), 64, 40),
                 "slice [64, +40) of x [7, 96] is not within its last dim of 96");
}

typedef void (*shape_test)(void);

static const shape_test shape_tests[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = shape_##name,
#include "ir/ops.def"
#undef RLX_OP
};

/* A node fed by an invalid node is invalid too, without a message of its own. */
static void test_invalid_propagates(void) {
    fresh();
    rlx_node bad = rlx_matmul(g, in_f32("x", S2(7, 256)), w_of("w", RLX_DTYPE_F32, S2(512, 128)));
    rlx_node next = rlx_silu(g, rlx_silu(g, bad));
    rlx_graph_mark_output(g, next, "y");
    rlx_status s = rlx_graph_verify(g);
    const char *msg = rlx_status_message(s);
    printf("  invalid input propagates: %s\n", msg);
    T_CHECK(rlx_graph_node(g, next)->invalid, "a node fed by an invalid node should be invalid");
    T_CHECK(s && strstr(msg, "%2 MATMUL") && !strstr(msg, "SILU: ") && strstr(msg, "output 'y': %4 SILU is invalid"),
            "unexpected message: %s", msg);
    rlx_status_free(s);
}

int main(void) {
    for (int op = 0; op < RLX_OP_COUNT; op++) {
        printf("%s\n", rlx_op_name((rlx_op)op));
        fresh();
        T_CHECK(shape_tests[op] != NULL, "op %s has no shape test", rlx_op_name((rlx_op)op));
        if (shape_tests[op]) shape_tests[op]();
    }
    test_invalid_propagates();
    rlx_graph_destroy(g);
    return t_summary("test_ir_shapes");
}
