/* rlx_runner_generate_incremental keeps the longest common prefix of the state. Property: whatever
 * the state held before, the ids it generates equal those of a fresh rlx_runner_generate over the
 * same sequence (greedy), and the steps it runs are only the new tokens.
 * Model: the embedded stories260K (always present). */
#include <stdio.h>
#include <string.h>

#include "rlx/runner.h"
#include "test_util.h"

#define N_NEW 12

static void fresh(const char *model, const int32_t *ids, int32_t n, int32_t *out, int32_t *n_out) {
    rlx_runner *r = NULL;
    if (!T_OK(rlx_runner_open(model, NULL, &r))) return;
    T_OK(rlx_runner_generate(r, ids, n, N_NEW, NULL, NULL, NULL, out, n_out));
    rlx_runner_close(r);
}

static void expect_same(const char *what, const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
    T_CHECK(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0, "%s: incremental ids differ from a fresh run (%d vs %d ids)",
            what, (int)na, (int)nb);
}

int main(void) {
    const char *model = t_source_path("models/stories260K.gguf");
    /* "Once upon a time" with BOS (tests/data/stories260K-ref-hf.json, prompt 0) */
    int32_t turn1[] = {1, 403, 407, 261, 378};
    int32_t conv[64];
    rlx_runner *r = NULL;
    if (!T_OK(rlx_runner_open(model, NULL, &r))) return t_summary("test_runner_incremental");

    /* turn 1 on an empty state == generate */
    int32_t got1[N_NEW], want1[N_NEW], n1 = 0, nw1 = 0;
    T_OK(rlx_runner_generate_incremental(r, turn1, 5, N_NEW, NULL, NULL, NULL, got1, &n1));
    fresh(model, turn1, 5, want1, &nw1);
    expect_same("turn 1", got1, n1, want1, nw1);

    /* turn 2: the conversation so far plus three more tokens; only the suffix is new */
    int32_t n = 0;
    memcpy(conv, turn1, sizeof turn1);
    n = 5;
    memcpy(conv + n, got1, (size_t)n1 * sizeof *got1);
    n += n1;
    int32_t extra[] = {13, 403, 407};
    memcpy(conv + n, extra, sizeof extra);
    n += 3;
    int32_t got2[N_NEW], want2[N_NEW], n2 = 0, nw2 = 0;
    int32_t past_before = rlx_runner_n_past(r);
    T_OK(rlx_runner_generate_incremental(r, conv, n, N_NEW, NULL, NULL, NULL, got2, &n2));
    fresh(model, conv, n, want2, &nw2);
    expect_same("turn 2 (appended)", got2, n2, want2, nw2);
    printf("turn 2: state held %d tokens, conversation %d tokens\n", (int)past_before, (int)n);
    T_CHECK(past_before == 5 + n1 - 1, "after turn 1 the state should hold prompt + all but the last generated id: %d",
            (int)past_before);

    /* turn 3: a conversation that diverges inside the held prefix (an edit) */
    conv[3] = 300;
    int32_t got3[N_NEW], want3[N_NEW], n3 = 0, nw3 = 0;
    T_OK(rlx_runner_generate_incremental(r, conv, 8, N_NEW, NULL, NULL, NULL, got3, &n3));
    fresh(model, conv, 8, want3, &nw3);
    expect_same("turn 3 (diverged at 3)", got3, n3, want3, nw3);

    /* a conversation equal to the held state still yields logits for its last token */
    int32_t held = rlx_runner_n_past(r);
    int32_t got4[N_NEW], want4[N_NEW], n4 = 0, nw4 = 0;
    int32_t same[64];
    memcpy(same, conv, 8 * sizeof *same);
    memcpy(same + 8, got3, (size_t)(n3 - 1) * sizeof *same);
    T_CHECK(held == 8 + n3 - 1, "state after turn 3 holds %d tokens, expected %d", (int)held, (int)(8 + n3 - 1));
    T_OK(rlx_runner_generate_incremental(r, same, held, N_NEW, NULL, NULL, NULL, got4, &n4));
    fresh(model, same, held, want4, &nw4);
    expect_same("turn 4 (nothing new)", got4, n4, want4, nw4);

    rlx_runner_close(r);
    return t_summary("test_runner_incremental");
}
