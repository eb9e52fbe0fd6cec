/* The backend's run_chain (runtime/vk_compile.c vk_program_run_chain): k runs of a one-token
 * decode program in one submit, each taking the previous run's argmax as its token. Property: the
 * ids equal those of k single runs that feed the argmax back on the host, the last id also lands in
 * the output, and the KV cache afterwards is the same (the next single step gives the same id and
 * the same logits from a twin program). Bad calls are refused: k outside [1, RLX_RUN_CHAIN_MAX], a
 * chain past the cache, and a program that is not one I32 token in and one I32 id out. Under
 * RLX_VK_WAIT=poll (the test test_vk_chain_polled) every submit waits as on a GPU, sleeping until
 * shortly before the expected end and then polling: the same checks, and that the backend polls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vk_backend.h"
#include "test_util.h"
#include "test_vk_util.h"

#define D 64
#define VOCAB 96
#define N_CTX 16
#define STEPS 9

/* embed -> rms_norm -> q -> rope -> kv_write (as K and V) / attention -> lm head -> argmax (or the
 * logits) */
static rlx_graph *decode_graph(bool argmax) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) return NULL;
    rlx_shape heads = rlx_shape_make(3, (int64_t[]){1, 2, 32});
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){1}));
    rlx_node emb = rlx_weight_node(g, "emb", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){VOCAB, D}));
    rlx_node x = rlx_embed(g, emb, ids);
    x = rlx_rms_norm(g, x, rlx_weight_node(g, "norm", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){D})), 1e-6f);
    rlx_node q = rlx_matmul(g, x, rlx_weight_node(g, "wq", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){D, D})));
    q = rlx_rope(g, rlx_reshape(g, q, heads), RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 32, 1e4f});
    rlx_node k = rlx_kv_write(g, rlx_kv_cache(g, 0, false, N_CTX, 2, 32), q);
    rlx_node v = rlx_kv_write(g, rlx_kv_cache(g, 0, true, N_CTX, 2, 32), q);
    rlx_node a = rlx_reshape(g, rlx_attention(g, q, k, v, 0.01f, 0), rlx_shape_make(2, (int64_t[]){1, D}));
    /* V rows carry their position (RoPE'd), the weights are near-even (a small scale), and there is
     * no residual: the id depends on every cached row and on n_past */
    rlx_node wo = rlx_weight_node(g, "wo", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){VOCAB, D}));
    rlx_node logits = rlx_matmul(g, a, wo);
    rlx_graph_mark_output(g, argmax ? rlx_argmax(g, logits) : logits, argmax ? "argmax" : "logits");
    return g;
}

typedef struct decoder {
    rlx_backend *b;
    rlx_session *s;
    rlx_program *p;
} decoder;

static bool decoder_open(decoder *d, rlx_backend *b, const rlx_weight *w, size_t nw, bool argmax) {
    rlx_state_spec kv = {.n_layer = 1, .page_size = 1, .n_pages = N_CTX, .n_head_kv = 2, .head_dim = 32};
    *d = (decoder){.b = b};
    rlx_graph *g = decode_graph(argmax);
    bool ok = g && T_OK(b->ops->session_create(b, w, nw, &kv, &d->s)) && T_OK(b->ops->compile(d->s, g, &d->p));
    rlx_graph_destroy(g);
    return ok;
}

static void decoder_close(decoder *d) {
    if (d->p) d->b->ops->program_destroy(d->p);
    if (d->s) d->b->ops->session_destroy(d->s);
}

static rlx_status step(decoder *d, int32_t n_past, int32_t token, void *out) {
    const void *in[1] = {&token};
    void *outs[1] = {out};
    rlx_run_args a = {n_past, 1, in, outs, NULL};
    return d->b->ops->run(d->p, &a);
}

static void check_chain(rlx_backend *b, const rlx_weight *w, size_t nw) {
    decoder one, chain;
    bool ok = decoder_open(&one, b, w, nw, true) && decoder_open(&chain, b, w, nw, true);
    int32_t want[STEPS], got[STEPS], last = -1, tok = 7;
    for (int32_t i = 0; ok && i < STEPS; i++) {
        ok = T_OK(step(&one, i, tok, &want[i]));
        tok = want[i];
    }
    int32_t first = 7;
    const void *in[1] = {&first};
    void *outs[1] = {&last};
    rlx_run_args a = {0, 1, in, outs, NULL};
    ok = ok && T_OK(b->ops->run_chain(chain.p, &a, STEPS, got));
    int32_t diff = -1;
    for (int32_t i = 0; ok && i < STEPS && diff < 0; i++)
        if (got[i] != want[i]) diff = i;
    int distinct = 0;
    for (int32_t i = 0; ok && i < STEPS; i++) {
        bool seen = false;
        for (int32_t j = 0; j < i; j++) seen |= want[j] == want[i];
        distinct += !seen;
    }
    printf("chain of %d: %s the single runs (%d distinct ids), last output %d\n", STEPS,
           diff < 0 ? "equal to" : "DIFFERENT from", distinct, (int)last);
    T_CHECK(ok && diff < 0, "run_chain and single runs differ at step %d", (int)diff);
    T_CHECK(ok && last == want[STEPS - 1], "run_chain's output %d is not its last id %d", (int)last,
            (int)want[STEPS - 1]);
    /* the caches: the next step from each gives the same id */
    int32_t next_one = -1, next_chain = -2;
    if (ok && T_OK(step(&one, STEPS, want[STEPS - 1], &next_one)) &&
        T_OK(step(&chain, STEPS, want[STEPS - 1], &next_chain)))
        T_CHECK(next_one == next_chain, "after the chain the next step gives %d, after single runs %d",
                (int)next_chain, (int)next_one);
    /* refused calls */
    T_ERR(b->ops->run_chain(chain.p, &a, 0, got), RLX_ERR_INVALID_ARGUMENT, "runs");
    T_ERR(b->ops->run_chain(chain.p, &a, RLX_RUN_CHAIN_MAX + 1, got), RLX_ERR_INVALID_ARGUMENT, "runs");
    a.n_past = N_CTX - 2;
    T_ERR(b->ops->run_chain(chain.p, &a, 3, got), RLX_ERR_INVALID_ARGUMENT, "capacity");
    decoder_close(&one);
    decoder_close(&chain);
}

static void check_not_chainable(rlx_backend *b, const rlx_weight *w, size_t nw) {
    decoder d;
    if (decoder_open(&d, b, w, nw, false)) {
        static float logits[VOCAB];
        int32_t first = 7, got[2];
        const void *in[1] = {&first};
        void *outs[1] = {logits};
        rlx_run_args a = {0, 1, in, outs, NULL};
        T_ERR(b->ops->run_chain(d.p, &a, 2, got), RLX_ERR_UNSUPPORTED, "I32");
        printf("a program with logits out: run_chain refused\n");
    }
    decoder_close(&d);
}

int main(void) {
    rlx_backend *b = vkt_backend();
    /* RLX_VK_WAIT=poll (test_vk_chain_polled): the GPU's way of waiting, here on any device */
    const char *wait = getenv("RLX_VK_WAIT");
    bool want_polls = wait && strcmp(wait, "poll") == 0;
    printf("fences %s\n", rlx_vk_backend_polls(b) ? "polled" : "waited for by blocking");
    if (want_polls) T_CHECK(rlx_vk_backend_polls(b), "RLX_VK_WAIT=poll, but the backend blocks on its fences");
    T_CHECK(b->ops->run_chain != NULL, "the Vulkan backend has no run_chain");
    vkt_rng r = {2026};
    rlx_weight w[4] = {vkt_weight(&r, "emb", RLX_DTYPE_F16, 2, D, VOCAB, 1),
                       vkt_weight(&r, "norm", RLX_DTYPE_F32, 1, D, 1, 1),
                       vkt_weight(&r, "wq", RLX_DTYPE_F16, 2, D, D, 1), vkt_weight(&r, "wo", RLX_DTYPE_F16, 2, D, VOCAB, 1)};
    if (b->ops->run_chain) {
        check_chain(b, w, 4);
        check_not_chainable(b, w, 4);
    }
    for (int i = 0; i < 4; i++) vkt_weight_free(&w[i]);
    rlx_backend_destroy(b);
    vkt_check_validation();
    return t_summary("test_vk_chain");
}
