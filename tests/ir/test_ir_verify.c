/* rlx_graph_verify reports every problem at once, one per line, each naming the node index, the
 * op and the problem; a correct graph verifies. */
#include <stdio.h>
#include <string.h>

#include "ir/graph.h"
#include "test_util.h"

static rlx_shape S2(int64_t a, int64_t b) { return rlx_shape_make(2, (int64_t[]){a, b}); }
static rlx_shape S3(int64_t a, int64_t b, int64_t c) { return rlx_shape_make(3, (int64_t[]){a, b, c}); }

static int count_lines(const char *s) {
    int n = 1;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* verify fails with exactly the given lines (each a substring of one line, in order) */
static void expect_lines(const char *what, rlx_graph *g, const char *const *needles, int n) {
    rlx_status s = rlx_graph_verify(g);
    const char *msg = rlx_status_message(s);
    printf("%s:\n%s\n", what, msg);
    T_CHECK(s && rlx_status_code(s) == RLX_ERR_INVALID_ARGUMENT, "%s: expected invalid argument", what);
    T_CHECK(s && count_lines(msg) == n, "%s: %d lines, expected %d", what, s ? count_lines(msg) : 0, n);
    const char *p = msg;
    for (int i = 0; s && i < n; i++) {
        const char *hit = strstr(p, needles[i]);
        T_CHECK(hit != NULL, "%s: missing (in order) \"%s\"", what, needles[i]);
        if (hit) p = hit + strlen(needles[i]);
    }
    rlx_status_free(s);
}

/* Three distinct mistakes in one graph: all three are reported. */
static void test_three_mistakes(void) {
    rlx_graph *g = NULL;
    T_OK(rlx_graph_create(&g));
    rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, S2(7, 256));                       /* %0 */
    rlx_node w = rlx_weight_node(g, "w", RLX_DTYPE_F32, S2(512, 128));               /* %1 */
    rlx_node y = rlx_matmul(g, x, w);                                                /* %2: K mismatch */
    rlx_node q = rlx_input(g, "q", RLX_DTYPE_F32, S3(7, 4, 64));                     /* %3 */
    rlx_node r = rlx_rope(g, q, RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 63, 1e4f}); /* %4: odd n_rot */
    rlx_node b = rlx_input(g, "b", RLX_DTYPE_F32, S2(7, 255));                       /* %5 */
    rlx_node s = rlx_add(g, x, b);                                                   /* %6: shape mismatch */
    rlx_graph_mark_output(g, y, "y");
    rlx_graph_mark_output(g, r, "r");
    rlx_graph_mark_output(g, s, "s");
    static const char *const want[] = {
        "%2 MATMUL: x has 256 columns but w [512, 128] has 128",
        "%4 ROPE: n_rot 63 must be even and in [2, head size 64]",
        "%6 ADD: a [7, 256] and b [7, 255] differ in shape",
        "output 'y': %2 MATMUL is invalid",
        "output 'r': %4 ROPE is invalid",
        "output 's': %6 ADD is invalid",
    };
    expect_lines("three mistakes", g, want, 6);
    rlx_graph_destroy(g);
}

/* Graph-level problems: names, outputs, node references. */
static void test_structure(void) {
    rlx_graph *g = NULL;
    T_OK(rlx_graph_create(&g));
    static const char *const none[] = {"graph has no outputs"};
    expect_lines("empty graph", g, none, 1);
    rlx_node a = rlx_input(g, "x", RLX_DTYPE_F32, S2(2, 3));                         /* %0 */
    rlx_node b = rlx_input(g, "x", RLX_DTYPE_F32, S2(2, 3));                         /* %1: name reused */
    rlx_node c = rlx_add(g, a, 99);                                                  /* %2: no node 99 */
    rlx_node w = rlx_weight_node(g, "w", RLX_DTYPE_F32, S2(2, 3));                   /* %3 */
    rlx_graph_mark_output(g, rlx_add(g, a, b), "o");                                 /* %4 */
    rlx_graph_mark_output(g, a, "o");
    rlx_graph_mark_output(g, w, "w");
    rlx_graph_mark_output(g, 1234, "nothing");
    (void)c;
    static const char *const want[] = {
        "%2 ADD: input 1 is %99, which is not an earlier node",
        "output 'nothing': %1234 is not a node of this graph",
        "%1 INPUT: name 'x' is already used by %0",
        "output 'o': name already used by output 0",
        "output 'w': %3 is a WEIGHT, which is not computed",
    };
    expect_lines("structural problems", g, want, 5);
    rlx_graph_destroy(g);
}

static void test_valid_graph(void) {
    rlx_graph *g = NULL;
    T_OK(rlx_graph_create(&g));
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){7}));
    rlx_node x = rlx_embed(g, rlx_weight_node(g, "tok", RLX_DTYPE_Q8_0, S2(512, 256)), ids);
    rlx_node k = rlx_reshape(g, rlx_matmul(g, x, rlx_weight_node(g, "wk", RLX_DTYPE_Q4_K, S2(128, 256))), S3(7, 2, 64));
    rlx_node kc = rlx_kv_write(g, rlx_kv_cache(g, 0, false, 16, 2, 64), k);
    rlx_node o = rlx_attention(g, rlx_reshape(g, x, S3(7, 4, 64)), kc, kc, 0.125f, 0);
    rlx_graph_mark_output(g, rlx_argmax(g, rlx_last_row(g, rlx_reshape(g, o, S2(7, 256)))), "next");
    rlx_status s = rlx_graph_verify(g);
    printf("valid graph of %d nodes: %s\n", rlx_graph_n_nodes(g), rlx_status_message(s));
    T_CHECK(s == NULL, "a valid graph failed to verify: %s", rlx_status_message(s));
    T_CHECK(rlx_graph_n_inputs(g) == 1 && rlx_graph_input_node(g, 0) == ids, "input list");
    T_CHECK(rlx_graph_n_outputs(g) == 1 && strcmp(rlx_graph_output_name(g, 0), "next") == 0, "output list");
    rlx_status_free(s);
    rlx_graph_destroy(g);
}

int main(void) {
    test_three_mistakes();
    test_structure();
    test_valid_graph();
    return t_summary("test_ir_verify");
}
