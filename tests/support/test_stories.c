#include "test_stories.h"

#include <inttypes.h>
#include <stdio.h>

#include "test_util.h"

#define STORIES_LAYERS 5
#define STORIES_KV_HEADS 4
#define STORIES_HEAD_DIM 8

uint64_t t_stories_pool_rows(uint64_t n_ctx) {
    return 16 * ((n_ctx + 15) / 16 + 1);
}

uint64_t t_stories_kv_bytes(uint64_t n_ctx, uint64_t elem) {
    return 2 * STORIES_LAYERS * n_ctx * STORIES_KV_HEADS * STORIES_HEAD_DIM * elem;
}

void t_stories_generates(const char *model, const rlx_runner_opts *o) {
    rlx_runner *r = NULL;
    if (T_OK(rlx_runner_open(model, o, &r))) {
        int32_t ids[] = {1}, out[2], n_out = 0;
        rlx_sample_opts greedy = rlx_sample_opts_greedy();
        greedy.ignore_eos = true;
        T_OK(rlx_runner_generate(r, ids, 1, 2, &greedy, NULL, NULL, out, &n_out));
        uint64_t elem = rlx_runner_kv_type(r) == RLX_KV_TYPE_F16 ? 2 : 4;
        printf("%s runner n_ctx %d (%" PRIu64 " KV bytes): opened and generated %d tokens\n", o->backend,
               (int)o->n_ctx, t_stories_kv_bytes((uint64_t)o->n_ctx, elem), (int)n_out);
        T_CHECK(n_out == 2, "n_ctx %d: generated %d tokens, expected 2", (int)o->n_ctx, (int)n_out);
    }
    rlx_runner_close(r);
}
