/* rlx_graph_dump prints one node per line in the form graph.h documents
 * (`%12 = MATMUL(%11, %3) f32[7, 512]`), names, attributes, and the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/graph.h"
#include "test_util.h"

int main(void) {
    rlx_graph *g = NULL;
    T_OK(rlx_graph_create(&g));
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){7}));
    rlx_node tok = rlx_weight_node(g, "token_embd.weight", RLX_DTYPE_Q8_0, rlx_shape_make(2, (int64_t[]){512, 64}));
    rlx_node x = rlx_embed(g, tok, ids);
    rlx_node nw = rlx_weight_node(g, "norm", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){64}));
    rlx_node n = rlx_rms_norm(g, x, nw, 1e-6f);
    rlx_node q = rlx_rope(g, rlx_reshape(g, n, rlx_shape_make(3, (int64_t[]){7, 2, 32})), RLX_NO_NODE,
                          (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 32, 1e6f});
    rlx_node kc = rlx_kv_write(g, rlx_kv_cache(g, 1, true, 16, 2, 32), q);
    rlx_node a = rlx_attention(g, q, kc, kc, 0.25f, 8);
    rlx_node logits = rlx_matmul(g, rlx_reshape(g, a, rlx_shape_make(2, (int64_t[]){7, 64})), tok);
    rlx_graph_mark_output(g, logits, "logits");
    rlx_graph_mark_output(g, rlx_argmax(g, logits), "next");

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rlx_graph_dump(g, f);
    fclose(f);
    printf("%s", text);
    static const char *const want[] = {
        "%0 = INPUT 'ids' i32[7]\n",
        "%1 = WEIGHT 'token_embd.weight' q8_0[512, 64]\n",
        "%2 = EMBED(%1, %0) f32[7, 64]\n",
        "%4 = RMS_NORM(%2, %3) f32[7, 64] eps=1e-06\n",
        "%5 = RESHAPE(%4) f32[7, 2, 32]\n",
        "%6 = ROPE(%5, none) f32[7, 2, 32] layout=neox n_rot=32 base=1e+06\n",
        "%7 = KV_CACHE f32[16, 2, 32] layer=1 v\n",
        "%8 = KV_WRITE(%7, %6) f32[16, 2, 32]\n",
        "%9 = ATTENTION(%6, %8, %8) f32[7, 2, 32] scale=0.25 window=8\n",
        "%11 = MATMUL(%10, %1) f32[7, 512]\n",
        "%12 = ARGMAX(%11) i32[7]\n",
        "output 'logits' = %11\n",
        "output 'next' = %12\n",
    };
    int missing = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        bool found = strstr(text, want[i]) != NULL;
        missing += !found;
        T_CHECK(found, "dump lacks the line: %s", want[i]);
    }
    printf("dump: %zu expected lines, %d missing\n", sizeof want / sizeof want[0], missing);
    free(text);
    rlx_graph_destroy(g);
    return t_summary("test_ir_dump");
}
