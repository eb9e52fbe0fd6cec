#include "runners/generator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Decode slot i holds the program of past bucket min(2^i, n_ctx); an int32 n_ctx needs 32 slots. */
#define DECODE_SLOTS 32

typedef struct prefill_entry {
    rlx_program *prog; /* owned; NULL: the slot is free */
    rlx_prefill_kind kind;
    int32_t rows;
    uint64_t last_use; /* g->tick at the last hit, for LRU eviction */
} prefill_entry;

struct rlx_generator {
    const rlx_model *model;       /* borrowed */
    const rlx_family_ops *family; /* borrowed: a static table */
    rlx_backend *backend;         /* borrowed */
    rlx_session *session;         /* owned */
    rlx_generator_opts opts;
    int32_t n_vocab;
    rlx_program *decode[RLX_DECODE_HEAD_COUNT][DECODE_SLOTS]; /* owned; NULL until first used */
    prefill_entry prefill[RLX_PREFILL_CACHE_SIZE];
    uint64_t tick;
    int32_t *history; /* owned: n_ctx tokens; the first n_past are the state */
    int32_t n_past;
    int32_t *ids;     /* owned: n_ctx entries, the zero-padded INPUT of prefill programs */
    float *rows_out;  /* owned: rows_cap * n_vocab floats for [rows, V] outputs */
    int32_t rows_cap;
    int64_t n_compiles;
    bool no_chain;    /* the backend refused to chain this model's decode program: step by step */
};

/* The smallest power of two >= n, capped at n_ctx (n <= n_ctx) */
static int32_t pow2_bucket(int32_t n, int32_t n_ctx) {
    int64_t p = 1;
    while (p < n) p <<= 1;
    return p < n_ctx ? (int32_t)p : n_ctx;
}

static int ceil_log2(int32_t n) {
    int k = 0;
    while (((int64_t)1 << k) < n) k++;
    return k;
}

/* Buckets exist so that programs are reused; without the prefill cache nothing is reused, and the
 * exact length saves the padding rows. */
static int32_t seq_rows(const rlx_generator *g, int32_t n) {
    return g->opts.no_buckets || g->opts.no_prefill_cache ? n : pow2_bucket(n, g->opts.n_ctx);
}

static rlx_status compile_graph(rlx_generator *g, rlx_graph *graph, rlx_program **out) {
    rlx_status st = g->backend->ops->compile(g->session, graph, out);
    rlx_graph_destroy(graph);
    if (!st) g->n_compiles++;
    return st;
}

static rlx_status compile_prefill(rlx_generator *g, rlx_prefill_kind kind, int32_t rows, rlx_program **out) {
    rlx_graph *graph;
    RLX_TRY(rlx_family_build_prefill(g->family, g->model, 1, rows, kind, &graph));
    return compile_graph(g, graph, out);
}

static rlx_status compile_decode(rlx_generator *g, int32_t past_bucket, rlx_decode_head head, rlx_program **out) {
    rlx_graph *graph;
    RLX_TRY(rlx_family_build_decode(g->family, g->model, 1, past_bucket, head, &graph));
    return compile_graph(g, graph, out);
}

/* The program for (kind, rows): from the LRU, or compiled (*owned set: the caller destroys it) when
 * the prefill cache is off. */
static rlx_status prefill_program(rlx_generator *g, rlx_prefill_kind kind, int32_t rows, rlx_program **out,
                                  bool *owned) {
    *owned = g->opts.no_prefill_cache;
    if (*owned) return compile_prefill(g, kind, rows, out);
    prefill_entry *victim = &g->prefill[0];
    for (int i = 0; i < RLX_PREFILL_CACHE_SIZE; i++) {
        prefill_entry *e = &g->prefill[i];
        if (e->prog && e->kind == kind && e->rows == rows) {
            e->last_use = ++g->tick;
            *out = e->prog;
            return NULL;
        }
        if (victim->prog && (!e->prog || e->last_use < victim->last_use)) victim = e;
    }
    rlx_program *p;
    RLX_TRY(compile_prefill(g, kind, rows, &p));
    if (victim->prog) g->backend->ops->program_destroy(victim->prog);
    *victim = (prefill_entry){.prog = p, .kind = kind, .rows = rows, .last_use = ++g->tick};
    *out = p;
    return NULL;
}

static rlx_status run_program(rlx_generator *g, rlx_program *p, int32_t n_past, int32_t n_tokens, const int32_t *ids,
                              void *out) {
    const void *inputs[1] = {ids};
    void *outputs[1] = {out};
    rlx_run_args args = {.n_past = n_past, .n_tokens = n_tokens, .inputs = inputs, .outputs = outputs};
    return g->backend->ops->run(p, &args);
}

static rlx_status ensure_rows_out(rlx_generator *g, int32_t rows) {
    if (rows <= g->rows_cap) return NULL;
    size_t n;
    if (__builtin_mul_overflow((size_t)rows, (size_t)g->n_vocab, &n) || __builtin_mul_overflow(n, sizeof(float), &n))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "logits of %d rows x %d vocab overflow the address space", (int)rows,
                          (int)g->n_vocab);
    float *p = realloc(g->rows_out, n);
    if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "logits buffer of %zu bytes", n);
    g->rows_out = p;
    g->rows_cap = rows;
    return NULL;
}

/* Runs a prefill program of `kind` over ids[0..n) at n_past 0. Last-row kinds write n_vocab floats to
 * out; all-row kinds write n * n_vocab. */
static rlx_status run_prefill(rlx_generator *g, rlx_prefill_kind kind, const int32_t *ids, int32_t n, float *out) {
    int32_t rows = seq_rows(g, n);
    bool all = kind == RLX_PREFILL_ALL || kind == RLX_PREFILL_NAIVE_ALL;
    /* an [rows, V] output needs room for every static row; the caller's buffer holds n */
    float *dst = out;
    if (all && rows > n) {
        RLX_TRY(ensure_rows_out(g, rows));
        dst = g->rows_out;
    }
    if (g->ids != ids) memmove(g->ids, ids, (size_t)n * sizeof *ids);
    memset(g->ids + n, 0, (size_t)(rows - n) * sizeof *ids);
    rlx_program *p;
    bool owned;
    RLX_TRY(prefill_program(g, kind, rows, &p, &owned));
    rlx_status st = run_program(g, p, 0, n, g->ids, dst);
    if (owned) g->backend->ops->program_destroy(p);
    if (!st && dst != out) memcpy(out, dst, (size_t)n * (size_t)g->n_vocab * sizeof *out);
    return st;
}

static rlx_status check_len(const rlx_generator *g, int32_t n, const char *what) {
    if (n < 1 || n > g->opts.n_ctx)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %d tokens; expected 1 to the context length %d", what, (int)n,
                          (int)g->opts.n_ctx);
    return NULL;
}

rlx_status rlx_generator_prefill(rlx_generator *g, const int32_t *ids, int32_t n, float *logits) {
    RLX_TRY(check_len(g, n, "prefill"));
    g->n_past = 0;
    rlx_prefill_kind kind = g->opts.no_kv_cache ? RLX_PREFILL_NAIVE_LAST : RLX_PREFILL_LAST;
    RLX_TRY(run_prefill(g, kind, ids, n, logits));
    memcpy(g->history, ids, (size_t)n * sizeof *ids);
    g->n_past = n;
    return NULL;
}

/* The decode program of a past bucket, compiled on first use and kept. */
static rlx_status bucket_program(rlx_generator *g, int32_t bucket, rlx_decode_head head, rlx_program **out) {
    rlx_program **slot = &g->decode[head][ceil_log2(bucket)];
    if (!*slot) RLX_TRY(compile_decode(g, bucket, head, slot));
    *out = *slot;
    return NULL;
}

/* A backend's argmax, checked before it becomes a token of the state. ARGMAX gives -1 for a row
 * with a NaN or +inf, or only -inf (ir/ops.def): the model's output overflowed, and no id is right. */
static rlx_status check_argmax(const rlx_generator *g, int32_t id, int32_t pos) {
    if (id >= 0 && id < g->n_vocab) return NULL;
    if (id == -1)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "decode at position %d: the logits hold NaN or infinity (the model's output overflowed)",
                          (int)pos);
    return rlx_errorf(RLX_ERR_DEVICE, "decode at position %d: the argmax %d is outside the vocabulary [0, %d)",
                      (int)pos, (int)id, (int)g->n_vocab);
}

/* One cached step: the token's K/V lands at row n_past. Rows past n_past are never read, so a
 * failure leaves the state as it was. */
static rlx_status decode_cached(rlx_generator *g, int32_t token, rlx_decode_head head, void *out) {
    int32_t need = g->n_past + 1;
    int32_t bucket = g->opts.no_buckets ? need : pow2_bucket(need, g->opts.n_ctx);
    rlx_program *p;
    if (g->opts.no_buckets) {
        RLX_TRY(compile_decode(g, bucket, head, &p));
        rlx_status st = run_program(g, p, g->n_past, 1, &token, out);
        g->backend->ops->program_destroy(p);
        return st;
    }
    RLX_TRY(bucket_program(g, bucket, head, &p));
    return run_program(g, p, g->n_past, 1, &token, out);
}

static rlx_status check_decode(const rlx_generator *g) {
    if (g->n_past < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode: the generation state is empty (prefill a prompt first)");
    if (g->n_past >= g->opts.n_ctx)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode: the context is full (%d of %d tokens)", (int)g->n_past,
                          (int)g->opts.n_ctx);
    return NULL;
}

rlx_status rlx_generator_decode(rlx_generator *g, int32_t token, float *logits) {
    RLX_TRY(check_decode(g));
    /* the naive path recomputes the whole history, the new token included */
    g->history[g->n_past] = token;
    rlx_status st = g->opts.no_kv_cache ? run_prefill(g, RLX_PREFILL_NAIVE_LAST, g->history, g->n_past + 1, logits)
                                        : decode_cached(g, token, RLX_DECODE_LOGITS, logits);
    if (!st) g->n_past++;
    return st;
}

/* The naive path has no decode graph: it takes the argmax of its logits on the host, as the
 * sampler would, with ARGMAX's -1 for a row that overflowed. */
static rlx_status decode_naive_argmax(rlx_generator *g, int32_t *next) {
    RLX_TRY(ensure_rows_out(g, 1));
    RLX_TRY(run_prefill(g, RLX_PREFILL_NAIVE_LAST, g->history, g->n_past + 1, g->rows_out));
    const float *x = g->rows_out;
    int32_t best = 0;
    for (int32_t i = 0; i < g->n_vocab && best >= 0; i++) {
        if (isnan(x[i]) || x[i] == INFINITY) best = -1;
        else if (x[i] > x[best]) best = i;
    }
    *next = best >= 0 && x[best] == -INFINITY ? -1 : best;
    return NULL;
}

rlx_status rlx_generator_decode_argmax(rlx_generator *g, int32_t token, int32_t *next) {
    RLX_TRY(check_decode(g));
    g->history[g->n_past] = token;
    rlx_status st = g->opts.no_kv_cache ? decode_naive_argmax(g, next) : decode_cached(g, token, RLX_DECODE_ARGMAX, next);
    if (!st) st = check_argmax(g, *next, g->n_past);
    if (!st) g->n_past++;
    return st;
}

/* Steps of a chain from here: within the current past bucket, and only where the backend chains. */
static int32_t chain_len(const rlx_generator *g, int32_t want) {
    if (!g->backend->ops->run_chain || g->no_chain || g->opts.no_kv_cache || g->opts.no_buckets) return 1;
    int32_t room = pow2_bucket(g->n_past + 1, g->opts.n_ctx) - g->n_past;
    int32_t k = want < room ? want : room;
    return k < RLX_RUN_CHAIN_MAX ? k : RLX_RUN_CHAIN_MAX;
}

static rlx_status decode_chain(rlx_generator *g, int32_t token, int32_t k, int32_t *next) {
    rlx_program *p;
    RLX_TRY(bucket_program(g, pow2_bucket(g->n_past + 1, g->opts.n_ctx), RLX_DECODE_ARGMAX, &p));
    int32_t last;
    const void *inputs[1] = {&token};
    void *outputs[1] = {&last};
    rlx_run_args args = {.n_past = g->n_past, .n_tokens = 1, .inputs = inputs, .outputs = outputs};
    RLX_TRY(g->backend->ops->run_chain(p, &args, k, next));
    for (int32_t i = 0; i < k; i++)
        RLX_TRY(rlx_status_annotate(check_argmax(g, next[i], g->n_past + i), "chained step %d", (int)i));
    g->history[g->n_past] = token;
    memcpy(g->history + g->n_past + 1, next, (size_t)(k - 1) * sizeof *next);
    g->n_past += k;
    return NULL;
}

rlx_status rlx_generator_decode_argmax_ahead(rlx_generator *g, int32_t token, int32_t k, int32_t *next) {
    if (k < 1) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode ahead: %d steps (need >= 1)", (int)k);
    if ((int64_t)g->n_past + k > g->opts.n_ctx)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "decode ahead: %d steps after %d tokens exceed the context of %d",
                          (int)k, (int)g->n_past, (int)g->opts.n_ctx);
    for (int32_t done = 0; done < k;) {
        RLX_TRY(check_decode(g));
        int32_t in = done ? next[done - 1] : token;
        int32_t run = chain_len(g, k - done);
        rlx_status st = run > 1 ? decode_chain(g, in, run, next + done) : NULL;
        /* a decode graph that is not one token in, one id out: the steps one at a time from now on */
        if (rlx_status_code(st) == RLX_ERR_UNSUPPORTED) {
            rlx_status_free(st);
            st = NULL;
            g->no_chain = true;
            run = 1;
        }
        RLX_TRY(st);
        if (run == 1) RLX_TRY(rlx_generator_decode_argmax(g, in, next + done));
        done += run;
    }
    return NULL;
}

rlx_status rlx_generator_logits(rlx_generator *g, const int32_t *ids, int32_t n, bool all_rows, float *out) {
    RLX_TRY(check_len(g, n, "logits"));
    return run_prefill(g, all_rows ? RLX_PREFILL_NAIVE_ALL : RLX_PREFILL_NAIVE_LAST, ids, n, out);
}

void rlx_generator_truncate(rlx_generator *g, int32_t n) {
    if (n >= 0 && n < g->n_past) g->n_past = n;
}

int32_t rlx_generator_n_past(const rlx_generator *g) {
    return g->n_past;
}

int32_t rlx_generator_n_ctx(const rlx_generator *g) {
    return g->opts.n_ctx;
}

const int32_t *rlx_generator_history(const rlx_generator *g) {
    return g->history;
}

rlx_generator_stats rlx_generator_get_stats(const rlx_generator *g) {
    rlx_generator_stats s = {.n_compiles = g->n_compiles};
    for (int h = 0; h < RLX_DECODE_HEAD_COUNT; h++)
        for (int i = 0; i < DECODE_SLOTS; i++) s.n_decode_programs += g->decode[h][i] != NULL;
    for (int i = 0; i < RLX_PREFILL_CACHE_SIZE; i++) s.n_prefill_programs += g->prefill[i].prog != NULL;
    return s;
}

rlx_status rlx_generator_create(const rlx_model *model, const rlx_family_ops *family, rlx_backend *backend,
                                const rlx_generator_opts *opts, rlx_generator **out) {
    const rlx_model_config *c = &model->config;
    if (opts->n_ctx < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "context length %d: expected >= 1", (int)opts->n_ctx);
    if (c->n_vocab < 1 || c->n_vocab > INT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s model: vocabulary of %u tokens", family->name, c->n_vocab);
    rlx_generator *g = calloc(1, sizeof *g);
    if (!g) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "generator");
    *g = (rlx_generator){.model = model, .family = family, .backend = backend, .opts = *opts,
                         .n_vocab = (int32_t)c->n_vocab};
    /* the naive path keeps no K/V at all; one sequence whose page k is pool page k */
    rlx_state_spec kv = {
        .n_layer = opts->no_kv_cache ? 0 : (int32_t)c->n_layer,
        .n_head_kv = (int32_t)c->n_head_kv,
        .head_dim = (int32_t)c->head_dim,
        .head_dim_v = (int32_t)c->head_dim_v,
        .page_size = 1,
        .n_pages = opts->n_ctx,
    };
    /* the session first: the backend refuses a context too large for its memory before the token
     * buffers below take their share of it */
    rlx_status st = backend->ops->session_create(backend, model->weights, model->n_weights, &kv, &g->session);
    if (st) {
        rlx_generator_destroy(g);
        return st;
    }
    g->history = malloc((size_t)opts->n_ctx * sizeof *g->history);
    g->ids = malloc((size_t)opts->n_ctx * sizeof *g->ids);
    if (!g->history || !g->ids) {
        rlx_generator_destroy(g);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "token buffers for a context of %d", (int)opts->n_ctx);
    }
    *out = g;
    return NULL;
}

void rlx_generator_destroy(rlx_generator *g) {
    if (!g) return;
    const rlx_backend_ops *ops = g->backend->ops;
    for (int h = 0; h < RLX_DECODE_HEAD_COUNT; h++)
        for (int i = 0; i < DECODE_SLOTS; i++)
            if (g->decode[h][i]) ops->program_destroy(g->decode[h][i]);
    for (int i = 0; i < RLX_PREFILL_CACHE_SIZE; i++)
        if (g->prefill[i].prog) ops->program_destroy(g->prefill[i].prog);
    if (g->session) ops->session_destroy(g->session);
    free(g->history);
    free(g->ids);
    free(g->rows_out);
    free(g);
}
