/* The public runner API (include/rlx/runner.h): one sequence of the engine (runners/engine*.c).
 *
 * State: the generation state is the runner's engine sequence (its tokens and their K/V pages), which
 * generate and the speculative primitives use. predict_logits / predict_all_logits run a sequence of
 * their own, freed after the call, so they never touch that state and may be interleaved freely with
 * prefill_get_last_logits / decode_get_logits.
 * The reference path (no_kv_cache) has no cache to page: it keeps the generator's no-cache graphs,
 * where every step is a full prefill. */
#include "rlx/runner.h"

#include <stdlib.h>

#include "runners/backend_select.h"
#include "runners/engine_internal.h"
#include "runners/family.h"
#include "runners/generator.h"
#include "runners/runner_seq.h"
#include "runners/sampling.h"

/* Default context when the caller gives none: the training context, at most this. */
#define DEFAULT_MAX_CTX 4096

struct rlx_runner {
    rlx_model *model;             /* owned */
    rlx_backend *backend;         /* owned */
    rlx_generator *gen;           /* owned, the naive path only; borrows model and backend */
    rlx_engine *eng;              /* owned, every other path; borrows model and backend */
    int32_t seq;                  /* the generation state: a sequence of eng */
    const rlx_family_ops *family; /* borrowed: a static table */
    float *logits;                /* owned: n_vocab floats, the generate loop's buffer */
    int32_t decode_ahead;         /* greedy steps decoded before their tokens are reported, at most */
};

static int32_t n_vocab(const rlx_runner *r) {
    return (int32_t)r->model->config.n_vocab;
}

static rlx_status open_parts(rlx_runner *r, const char *path, const rlx_runner_opts *o) {
    RLX_TRY(rlx_model_open(path, &r->model));
    const rlx_model_config *c = &r->model->config;
    rlx_status st = rlx_family_ops_find(c->family, &r->family);
    if (st) return rlx_status_annotate(st, "'%s'", path);
    RLX_TRY(rlx_backend_select(o->backend, o->device, o->n_threads, &r->backend));
    uint32_t train = c->n_ctx_train ? c->n_ctx_train : DEFAULT_MAX_CTX;
    int32_t n_ctx = o->n_ctx ? o->n_ctx : (int32_t)(train < DEFAULT_MAX_CTX ? train : DEFAULT_MAX_CTX);
    if (o->no_kv_cache && r->family->state_floats)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "'%s': the naive path (no KV cache) cannot run a %s model: its Gated DeltaNet layers need "
                          "the recurrent state the engine keeps", path, r->family->name);
    if (o->no_kv_cache) {
        rlx_generator_opts go = {.n_ctx = n_ctx, .no_kv_cache = true, .no_buckets = o->no_buckets,
                                 .no_prefill_cache = o->no_prefill_cache};
        RLX_TRY(rlx_generator_create(r->model, r->family, r->backend, &go, &r->gen));
    } else {
        /* one sequence and a stateless one beside it (predict); a prompt runs in chunks of up to
         * RLX_ENGINE_ROWS_DEFAULT rows */
        rlx_engine_opts eo = {.model = *o, .max_parallel = 2, .no_prefix_cache = true,
                              .exact_buckets = o->no_buckets, .no_program_cache = o->no_prefill_cache};
        eo.model.n_ctx = n_ctx;
        eo.chunk = eo.max_rows = RLX_ENGINE_ROWS_DEFAULT;
        RLX_TRY(rlx_engine_create(r->model, r->family, r->backend, &eo, r->decode_ahead, &r->eng));
        RLX_TRY(rlx_engine_seq_create(r->eng, NULL, &r->seq));
    }
    r->logits = malloc((size_t)n_vocab(r) * sizeof *r->logits);
    if (!r->logits) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "logits buffer of %d floats", (int)n_vocab(r));
    return NULL;
}

rlx_status rlx_runner_open(const char *path, const rlx_runner_opts *opts, rlx_runner **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_runner_open: path and out must not be NULL");
    rlx_runner_opts o = opts ? *opts : rlx_runner_opts_default();
    if (o.n_ctx < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "context length %d: expected 0 (the model's) or more",
                          (int)o.n_ctx);
    if (o.kv_type != RLX_KV_TYPE_DEFAULT && o.kv_type != RLX_KV_TYPE_F32 && o.kv_type != RLX_KV_TYPE_F16)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv_type %d: expected RLX_KV_TYPE_DEFAULT, _F32 or _F16",
                          (int)o.kv_type);
    if (o.decode_ahead < 0 || o.decode_ahead > RLX_DECODE_AHEAD_MAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode_ahead %d: expected 0 (the default, %d) to %d",
                          (int)o.decode_ahead, RLX_DECODE_AHEAD_DEFAULT, RLX_DECODE_AHEAD_MAX);
    rlx_runner *r = calloc(1, sizeof *r);
    if (!r) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "runner");
    r->decode_ahead = o.decode_ahead ? o.decode_ahead : RLX_DECODE_AHEAD_DEFAULT;
    rlx_status st = open_parts(r, path, &o);
    if (st) {
        rlx_runner_close(r);
        return st;
    }
    *out = r;
    return NULL;
}

void rlx_runner_close(rlx_runner *r) {
    if (!r) return;
    rlx_generator_destroy(r->gen);
    rlx_engine_close(r->eng);
    rlx_backend_destroy(r->backend);
    rlx_model_close(r->model);
    free(r->logits);
    free(r);
}

rlx_kv_type rlx_runner_kv_type(const rlx_runner *r) {
    return r->eng ? rlx_engine_kv_type(r->eng) : RLX_KV_TYPE_F32;
}

int64_t rlx_runner_state_bytes(const rlx_runner *r) {
    return r->eng ? rlx_engine_get_stats(r->eng).state_slot_bytes : 0;
}

const char *rlx_runner_family(const rlx_runner *r) {
    return r->family->name;
}

int32_t rlx_runner_vocab_size(const rlx_runner *r) {
    return n_vocab(r);
}

int32_t rlx_runner_n_ctx(const rlx_runner *r) {
    return r->eng ? rlx_engine_n_ctx(r->eng) : rlx_generator_n_ctx(r->gen);
}

int32_t rlx_runner_decode_ahead(const rlx_runner *r) { return r->decode_ahead; }

int32_t rlx_runner_eos_id(const rlx_runner *r) {
    return r->model->config.eos_id >= 0 ? r->model->config.eos_id : -1;
}

const char *rlx_runner_backend_name(const rlx_runner *r) {
    return r->backend->name;
}

bool rlx_runner_supports_multimodal(const rlx_runner *r) {
    (void)r;
    return false;
}

static rlx_status check_token(const rlx_runner *r, int32_t id, const char *what, int32_t pos) {
    if (id < 0 || id >= n_vocab(r))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: token id %d at position %d is outside the vocabulary [0, %d)",
                          what, (int)id, (int)pos, (int)n_vocab(r));
    return NULL;
}

/* A token sequence the runner can take whole: non-empty, in the vocabulary, within the context. */
static rlx_status check_ids(const rlx_runner *r, const int32_t *ids, int32_t n, const char *what) {
    if (n < 1) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s is empty: expected at least 1 token", what);
    if (!ids) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: ids is NULL with n = %d", what, (int)n);
    for (int32_t i = 0; i < n; i++) RLX_TRY(check_token(r, ids[i], what, i));
    int32_t n_ctx = rlx_runner_n_ctx(r);
    if (n > n_ctx)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s of %d tokens does not fit the context of %d tokens", what,
                          (int)n, (int)n_ctx);
    return NULL;
}

static rlx_status check_out(const void *p, const char *what) {
    return p ? NULL : rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s must not be NULL", what);
}

rlx_status rlx_runner_predict_logits(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out) {
    RLX_TRY(check_out(logits_out, "predict_logits: logits_out"));
    RLX_TRY(check_ids(r, ids, n, "prompt"));
    if (r->eng) return rlx_runner_seq_predict(r->eng, ids, n, false, logits_out);
    return rlx_generator_logits(r->gen, ids, n, false, logits_out);
}

rlx_status rlx_runner_predict_all_logits(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out) {
    RLX_TRY(check_out(logits_out, "predict_all_logits: logits_out"));
    RLX_TRY(check_ids(r, ids, n, "prompt"));
    if (r->eng) return rlx_runner_seq_predict(r->eng, ids, n, true, logits_out);
    return rlx_generator_logits(r->gen, ids, n, true, logits_out);
}

typedef struct gen_call {
    int32_t n_new;
    bool stop_at_eos;
    rlx_token_callback on_token; /* may be NULL */
    void *user;
    int32_t *out_ids; /* may be NULL */
    int32_t *n_out;   /* may be NULL */
    bool device_argmax; /* plain greedy: decode steps return the argmax, not the logits */
} gen_call;

/* Greedy with no penalty is a bare argmax, which the decode graph can take on the device. */
static bool plain_greedy(const rlx_sample_opts *so) {
    return so->temperature <= 0.0f && (so->repeat_penalty == 0.0f || so->repeat_penalty == 1.0f) &&
           so->presence_penalty == 0.0f && so->frequency_penalty == 0.0f;
}

/* The next chain's length: doubling from 1 up to decode_ahead, so that a short generation or an early
 * stop decodes little it will not report; never past the last token to report. */
static int32_t ahead_len(const rlx_runner *r, const gen_call *c, int32_t reported, int32_t *chunk) {
    int32_t k = *chunk < c->n_new - reported ? *chunk : c->n_new - reported;
    *chunk = 2 * *chunk < r->decode_ahead ? 2 * *chunk : r->decode_ahead;
    return k;
}

/* The sampler's pick from r->logits for generated token `step`; it sees prompt + generated, exactly
 * the tokens the state holds. */
static rlx_status sample_step(rlx_runner *r, rlx_sampler *s, int32_t step, int32_t *tok) {
    rlx_status st = rlx_sampler_sample(s, r->logits, rlx_generator_history(r->gen), rlx_generator_n_past(r->gen), tok);
    return rlx_status_annotate(st, "generating token %d (after %d tokens of context)", (int)step,
                               (int)rlx_generator_n_past(r->gen));
}

/* sample -> report -> stop? -> decode, until n_new tokens, EOS or the callback says stop. The last
 * token is never decoded: nothing would read its logits. Plain greedy decodes ahead on the device
 * (its argmax feeds the next step) and reports the tokens after each chain; a stop then forgets the
 * steps decoded past the token reported last. */
static rlx_status generate_loop(rlx_runner *r, rlx_sampler *s, const gen_call *c) {
    int32_t eos = rlx_runner_eos_id(r), chunk = 1;
    int32_t ahead[RLX_DECODE_AHEAD_MAX], n_ahead = 0, used = 0;
    int32_t tok;
    RLX_TRY(sample_step(r, s, 0, &tok));
    for (int32_t i = 0;;) {
        RLX_TRY(check_token(r, tok, "sampler result", i));
        if (c->out_ids) c->out_ids[i] = tok;
        i++;
        if (c->n_out) *c->n_out = i;
        bool go_on = c->on_token ? c->on_token(tok, c->user) : true;
        if (!go_on || i == c->n_new || (c->stop_at_eos && tok == eos)) {
            rlx_generator_truncate(r->gen, rlx_generator_n_past(r->gen) - (n_ahead - used));
            return NULL;
        }
        if (used < n_ahead) {
            tok = ahead[used++];
        } else if (c->device_argmax) {
            n_ahead = ahead_len(r, c, i, &chunk);
            RLX_TRY(rlx_status_annotate(rlx_generator_decode_argmax_ahead(r->gen, tok, n_ahead, ahead),
                                        "generating token %d", (int)i));
            used = 0;
            tok = ahead[used++];
        } else {
            RLX_TRY(rlx_generator_decode(r->gen, tok, r->logits));
            RLX_TRY(sample_step(r, s, i, &tok));
        }
    }
}

static rlx_status check_generate(const rlx_runner *r, const int32_t *ids, int32_t n, int32_t n_new) {
    RLX_TRY(check_ids(r, ids, n, "prompt"));
    if (n_new < 1) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "n_new must be >= 1 (got %d)", (int)n_new);
    /* Checked up front, so a run is never cut short by the context: prompt and output must fit. */
    int32_t n_ctx = rlx_runner_n_ctx(r);
    if ((int64_t)n + n_new > n_ctx)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "prompt of %d tokens + n_new %d = %lld tokens exceed the context of %d tokens", (int)n,
                          (int)n_new, (long long)n + n_new, (int)n_ctx);
    return NULL;
}

/* Brings the state to ids[0..n) and r->logits to the logits after ids[n - 1]: a full prefill, or,
 * when `reuse`, only the steps past the longest prefix the state already holds. */
static rlx_status seed_state(rlx_runner *r, const int32_t *ids, int32_t n, bool reuse) {
    int32_t keep = 0;
    if (reuse) {
        const int32_t *held = rlx_generator_history(r->gen);
        int32_t n_held = rlx_generator_n_past(r->gen);
        while (keep < n_held && keep < n && held[keep] == ids[keep]) keep++;
        /* the logits of ids[n - 1] are needed, so at least that token runs */
        if (keep == n) keep = n - 1;
    }
    if (keep == 0) return rlx_generator_prefill(r->gen, ids, n, r->logits);
    rlx_generator_truncate(r->gen, keep);
    for (int32_t i = keep; i < n; i++) RLX_TRY(rlx_generator_decode(r->gen, ids[i], r->logits));
    return NULL;
}

static rlx_status generate(rlx_runner *r, const int32_t *ids, int32_t n, int32_t n_new, bool reuse,
                           const rlx_sample_opts *sample, rlx_token_callback on_token, void *user, int32_t *out_ids,
                           int32_t *n_out) {
    if (n_out) *n_out = 0;
    RLX_TRY(check_generate(r, ids, n, n_new));
    rlx_sample_opts so = sample ? *sample : rlx_sample_opts_greedy();
    if (r->eng) {
        rlx_runner_gen g = {.ids = ids, .n = n, .n_new = n_new, .reuse = reuse, .sample = so, .on_token = on_token,
                            .user = user, .out_ids = out_ids, .n_out = n_out};
        return rlx_runner_seq_generate(r->eng, &r->seq, &g);
    }
    rlx_sampler *s;
    RLX_TRY(rlx_sampler_create(&so, n_vocab(r), &s));
    gen_call c = {.n_new = n_new, .stop_at_eos = !so.ignore_eos && rlx_runner_eos_id(r) >= 0, .on_token = on_token,
                  .user = user, .out_ids = out_ids, .n_out = n_out, .device_argmax = plain_greedy(&so)};
    rlx_status st = seed_state(r, ids, n, reuse);
    if (!st) st = generate_loop(r, s, &c);
    rlx_sampler_destroy(s);
    return st;
}

rlx_status rlx_runner_generate(rlx_runner *r, const int32_t *ids, int32_t n, int32_t n_new,
                               const rlx_sample_opts *sample, rlx_token_callback on_token, void *user,
                               int32_t *out_ids, int32_t *n_out) {
    return generate(r, ids, n, n_new, false, sample, on_token, user, out_ids, n_out);
}

rlx_status rlx_runner_generate_incremental(rlx_runner *r, const int32_t *ids, int32_t n, int32_t n_new,
                                           const rlx_sample_opts *sample, rlx_token_callback on_token, void *user,
                                           int32_t *out_ids, int32_t *n_out) {
    return generate(r, ids, n, n_new, true, sample, on_token, user, out_ids, n_out);
}

rlx_status rlx_runner_prefill_get_last_logits(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out) {
    RLX_TRY(check_out(logits_out, "prefill_get_last_logits: logits_out"));
    RLX_TRY(check_ids(r, ids, n, "prompt"));
    if (r->eng) return rlx_runner_seq_prefill(r->eng, &r->seq, ids, n, logits_out);
    return rlx_generator_prefill(r->gen, ids, n, logits_out);
}

rlx_status rlx_runner_decode_get_logits(rlx_runner *r, int32_t token, float *logits_out) {
    RLX_TRY(check_out(logits_out, "decode_get_logits: logits_out"));
    RLX_TRY(check_token(r, token, "decode", rlx_runner_n_past(r)));
    if (r->eng) return rlx_runner_seq_decode(r->eng, &r->seq, token, logits_out);
    return rlx_generator_decode(r->gen, token, logits_out);
}

rlx_status rlx_runner_verify(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out) {
    RLX_TRY(check_out(logits_out, "verify: logits_out"));
    RLX_TRY(check_ids(r, ids, n, "draft"));
    if (r->eng) return rlx_runner_seq_verify(r->eng, &r->seq, ids, n, logits_out);
    /* the naive path: one decode step per draft token, each row's logits kept */
    for (int32_t i = 0; i < n; i++)
        RLX_TRY(rlx_generator_decode(r->gen, ids[i], logits_out + (size_t)i * (size_t)n_vocab(r)));
    return NULL;
}

int32_t rlx_runner_n_past(const rlx_runner *r) {
    return r->eng ? rlx_engine_seq_n_computed(r->eng, r->seq) : rlx_generator_n_past(r->gen);
}

rlx_status rlx_runner_truncate(rlx_runner *r, int32_t n) {
    int32_t held = rlx_runner_n_past(r);
    if (n < 0 || n > held)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "truncate: %d tokens of the %d the state holds", (int)n,
                          (int)held);
    if (r->eng) return rlx_engine_seq_truncate(r->eng, r->seq, n);
    rlx_generator_truncate(r->gen, n);
    return NULL;
}
