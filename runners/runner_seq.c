/* The runner's calls as uses of one engine sequence (runners/runner_seq.h). */
#include "runners/runner_seq.h"

#include <string.h>

/* Runs the engine until the sequence has no work left; its failure becomes the call's. An error of
 * the engine's own (the device lost, out of device memory) fails the sequence too: the runner's
 * next call then starts from an empty state instead of finding it mid-generation. */
static rlx_status run_seq(rlx_engine *e, int32_t seq) {
    rlx_status st = rlx_engine_run(e);
    eng_seq *s = rlx_engine_seq_get(e, seq);
    if (st && s && s->state != RLX_SEQ_FAILED)
        rlx_engine_seq_fail(e, s, rlx_errorf(rlx_status_code(st), "%s", rlx_status_message(st)));
    if (st) return st;
    return rlx_engine_seq_status(e, seq);
}

/* After a failure the sequence's pages are gone: the runner's state starts empty again. */
static rlx_status reset_if_failed(rlx_engine *e, int32_t *seq, rlx_status st) {
    if (rlx_engine_seq_state(e, *seq) != RLX_SEQ_FAILED) return st;
    rlx_engine_seq_free(e, *seq);
    rlx_status again = rlx_engine_seq_create(e, NULL, seq);
    if (again) {
        rlx_status_free(again);
        *seq = -1;
    }
    return st;
}

static rlx_status check_seq(int32_t seq) {
    return seq >= 0 ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "runner: the generation state could not be recreated");
}

rlx_status rlx_runner_seq_predict(rlx_engine *e, const int32_t *ids, int32_t n, bool all_rows, float *out) {
    rlx_seq_opts o = {.keep_logits = !all_rows, .all_logits = all_rows};
    int32_t id;
    RLX_TRY(rlx_engine_seq_create(e, &o, &id));
    rlx_status st = rlx_engine_seq_append(e, id, ids, n);
    if (!st) st = run_seq(e, id);
    int32_t rows = 0;
    const float *lg = st ? NULL : rlx_engine_seq_logits(e, id, &rows);
    if (!st && (!lg || rows != (all_rows ? n : 1)))
        st = rlx_errorf(RLX_ERR_INTERNAL, "predict: %d rows of logits, expected %d", (int)rows, all_rows ? (int)n : 1);
    if (!st) memcpy(out, lg, (size_t)rows * (size_t)rlx_engine_vocab_size(e) * sizeof *out);
    rlx_engine_seq_free(e, id);
    return st;
}

/* Tokens the sequence holds that ids starts with; at least one token of ids is left to run, for its
 * logits. */
static int32_t common_prefix(const rlx_engine *e, int32_t seq, const int32_t *ids, int32_t n) {
    int32_t held, keep = 0;
    const int32_t *tok = rlx_engine_seq_tokens(e, seq, &held);
    while (keep < held && keep < n && tok[keep] == ids[keep]) keep++;
    return keep == n ? n - 1 : keep;
}

typedef struct gen_sink {
    rlx_token_callback on_token;
    void *user;
    int32_t *out_ids, *n_out;
    int32_t n;
} gen_sink;

static bool sink_token(int32_t token, void *user) {
    gen_sink *k = user;
    if (k->out_ids) k->out_ids[k->n] = token;
    k->n++;
    if (k->n_out) *k->n_out = k->n;
    return k->on_token ? k->on_token(token, k->user) : true;
}

/* Brings the sequence to ids[0..n) with settings o: everything past the kept prefix goes. */
static rlx_status seed(rlx_engine *e, int32_t seq, const int32_t *ids, int32_t n, bool reuse,
                       const rlx_seq_opts *o) {
    int32_t keep = reuse ? common_prefix(e, seq, ids, n) : 0;
    RLX_TRY(rlx_engine_seq_truncate(e, seq, keep));
    RLX_TRY(rlx_engine_seq_set_opts(e, seq, o));
    return rlx_engine_seq_append(e, seq, ids + keep, n - keep);
}

rlx_status rlx_runner_seq_generate(rlx_engine *e, int32_t *seq, const rlx_runner_gen *g) {
    RLX_TRY(check_seq(*seq));
    gen_sink sink = {.on_token = g->on_token, .user = g->user, .out_ids = g->out_ids, .n_out = g->n_out};
    rlx_seq_opts o = {.sample = g->sample, .n_new = g->n_new, .on_token = sink_token, .user = &sink};
    rlx_status st = seed(e, *seq, g->ids, g->n, g->reuse, &o);
    if (!st) st = run_seq(e, *seq);
    /* the sink points into this frame: no later step may call it */
    rlx_seq_opts quiet = {0};
    if (rlx_engine_seq_state(e, *seq) != RLX_SEQ_FAILED) {
        rlx_status q = rlx_engine_seq_set_opts(e, *seq, &quiet);
        if (!st) st = q;
        else rlx_status_free(q);
    }
    return reset_if_failed(e, seq, st);
}

/* Appends ids and keeps the logits of the last row (or of every row) into out. */
static rlx_status append_logits(rlx_engine *e, int32_t *seq, const int32_t *ids, int32_t n, bool all, float *out) {
    rlx_seq_opts o = {.keep_logits = !all, .all_logits = all};
    rlx_status st = rlx_engine_seq_set_opts(e, *seq, &o);
    if (!st) st = rlx_engine_seq_append(e, *seq, ids, n);
    if (!st) st = run_seq(e, *seq);
    int32_t rows = 0;
    const float *lg = st ? NULL : rlx_engine_seq_logits(e, *seq, &rows);
    if (!st && (!lg || rows != (all ? n : 1)))
        st = rlx_errorf(RLX_ERR_INTERNAL, "%d rows of logits, expected %d", (int)rows, all ? (int)n : 1);
    if (!st) memcpy(out, lg, (size_t)rows * (size_t)rlx_engine_vocab_size(e) * sizeof *out);
    return reset_if_failed(e, seq, st);
}

rlx_status rlx_runner_seq_prefill(rlx_engine *e, int32_t *seq, const int32_t *ids, int32_t n, float *logits) {
    RLX_TRY(check_seq(*seq));
    RLX_TRY(rlx_engine_seq_truncate(e, *seq, 0));
    return append_logits(e, seq, ids, n, false, logits);
}

/* A recurrent model's checkpoint before draft rows, so that dropping them (truncate) restores the
 * state exactly: first the positions a rewind left owed are computed, else the checkpoint would
 * have to stand further back. */
static rlx_status rollback_point(rlx_engine *e, int32_t *seq) {
    if (!e->recurrent) return NULL;
    RLX_TRY(rlx_engine_seq_compute(e, *seq));
    rlx_status st = run_seq(e, *seq);
    eng_seq *s = rlx_engine_seq_get(e, *seq);
    if (!st && s) st = rlx_engine_state_checkpoint(e, s, true);
    return reset_if_failed(e, seq, st);
}

/* Tokens go after the computed ones: a generated token that was never run (the last of a
 * generation) is dropped, as the state never held it. */
static rlx_status after_computed(rlx_engine *e, int32_t *seq, const int32_t *ids, int32_t n, bool all, float *out,
                                 const char *what, bool rollback) {
    RLX_TRY(check_seq(*seq));
    int32_t held = rlx_engine_seq_n_computed(e, *seq);
    if (held < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: the generation state is empty (prefill a prompt first)", what);
    if ((int64_t)held + n > rlx_engine_n_ctx(e))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: the context is full (%d of %d tokens, %d more)", what,
                          (int)held, (int)rlx_engine_n_ctx(e), (int)n);
    RLX_TRY(rlx_engine_seq_truncate(e, *seq, held));
    if (rollback) RLX_TRY(rollback_point(e, seq));
    return append_logits(e, seq, ids, n, all, out);
}

rlx_status rlx_runner_seq_decode(rlx_engine *e, int32_t *seq, int32_t token, float *logits) {
    return after_computed(e, seq, &token, 1, false, logits, "decode", false);
}

rlx_status rlx_runner_seq_verify(rlx_engine *e, int32_t *seq, const int32_t *ids, int32_t n, float *logits) {
    return after_computed(e, seq, ids, n, true, logits, "verify", true);
}
