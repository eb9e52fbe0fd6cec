/* The engine (include/rlx/engine.h): creation, the pool's size, and the sequence calls. Stepping is
 * engine_step.c; programs are engine_programs.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/backend_select.h"
#include "runners/engine_internal.h"

#define PAGE_SIZE 16
/* The pool when no budget is given, in host memory (the CPU backend, lavapipe): room for this many
 * full contexts, within DEFAULT_KV_CAP bytes, but never less than one full context (a sequence of
 * n_ctx tokens must always fit alone). */
#define DEFAULT_CONTEXTS 4
#define DEFAULT_KV_CAP ((int64_t)512 << 20)
/* ... on a GPU: room for every sequence that may run at once (max_parallel) at full context, or
 * with no such bound (a server, a batch) as much as fits, within DEVICE_KV_SHARE of the device
 * memory left after the weights and DEVICE_RESERVE (programs' activations and scratch); never less
 * than the host default. */
#define DEVICE_KV_SHARE 2 /* 1/2 */
#define DEVICE_RESERVE ((int64_t)1 << 30)
#define DEFAULT_MAX_CTX 4096
#define MAX_SEQS (1 << 20)

/* Bytes of one page over every attention layer, K and V, of elem-byte elements (recurrent layers
 * have no pool). */
static int64_t page_bytes(const rlx_model_config *c, int32_t page_size, int64_t elem) {
    int64_t row = (int64_t)c->n_head_kv * ((int64_t)c->head_dim + (int64_t)c->head_dim_v) * elem, layers = 0;
    for (uint32_t il = 0; il < c->n_layer && il < RLX_MAX_LAYERS; il++)
        layers += c->layer_kind[il] != RLX_LAYER_LINEAR_ATTENTION;
    return row * page_size * layers;
}

/* The default budget (kv_memory 0): see DEFAULT_CONTEXTS and DEVICE_KV_SHARE. *max_pages: what
 * one layer's K or V buffer allows on the device (INT64_MAX without a device). */
static int64_t default_budget(const rlx_engine *e, int64_t per_page, int64_t ctx_pages, int64_t *max_pages) {
    int64_t full = ctx_pages * per_page * DEFAULT_CONTEXTS;
    int64_t small = full < DEFAULT_KV_CAP ? full : DEFAULT_KV_CAP;
    rlx_backend_room room;
    *max_pages = INT64_MAX;
    if (!e->backend->ops->memory_room) return small;
    rlx_status st = e->backend->ops->memory_room(e->backend, &room);
    if (st) { /* host memory: the small pool */
        rlx_status_free(st);
        return small;
    }
    const rlx_model_config *c = &e->model->config;
    int64_t weights = 0, elem = e->kv_type == RLX_KV_TYPE_F16 ? 2 : 4;
    for (size_t i = 0; i < e->model->n_weights; i++) weights += (int64_t)e->model->weights[i].nbytes;
    int64_t dim = c->head_dim > c->head_dim_v ? c->head_dim : c->head_dim_v;
    int64_t layer_page = (int64_t)e->page_size * c->n_head_kv * dim * elem;
    *max_pages = layer_page > 0 ? room.max_buffer / layer_page : INT64_MAX;
    int64_t share = (room.free_bytes - weights - DEVICE_RESERVE) / DEVICE_KV_SHARE;
    int64_t want = share;
    if (e->opts.max_parallel > 0 && (ctx_pages * e->opts.max_parallel + 1) * per_page < want)
        want = (ctx_pages * e->opts.max_parallel + 1) * per_page;
    return want > small ? want : small;
}

/* Pages of the pool: the budget's bytes at the resolved K/V type, so an F16 pool holds twice the
 * tokens of an F32 one in the same memory. */
static rlx_status size_pool(rlx_engine *e) {
    const rlx_model_config *c = &e->model->config;
    int64_t per_page = page_bytes(c, e->page_size, e->kv_type == RLX_KV_TYPE_F16 ? 2 : 4);
    int64_t ctx_pages = ((int64_t)e->opts.model.n_ctx + e->page_size - 1) / e->page_size;
    int64_t want = e->opts.kv_memory, max_pages = INT64_MAX;
    if (want == 0) want = default_budget(e, per_page, ctx_pages, &max_pages);
    int64_t pages = want / per_page;
    if (pages > max_pages && max_pages > ctx_pages) pages = max_pages;
    if (pages < ctx_pages + 1 && e->opts.kv_memory != 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "KV memory of %lld bytes holds %lld pages of %d tokens (%lld bytes each); one sequence of "
                          "the context's %d tokens needs %lld: raise the KV memory or lower the context",
                          (long long)want, (long long)pages, (int)e->page_size, (long long)per_page,
                          (int)e->opts.model.n_ctx, (long long)(ctx_pages + 1));
    if (pages < ctx_pages + 1) pages = ctx_pages + 1;
    /* a pool past int32 rows is refused by the session (it names the bytes) or by the page table */
    if (pages > INT32_MAX) pages = INT32_MAX;
    e->n_pages = (int32_t)pages;
    e->kv_bytes = pages * per_page;
    return NULL;
}

static rlx_status alloc_buffers(rlx_engine *e) {
    size_t r = (size_t)e->opts.max_rows;
    e->ids = calloc(r, sizeof *e->ids);
    e->pos = calloc(r, sizeof *e->pos);
    e->row_seq = calloc(r, sizeof *e->row_seq);
    e->out_rows = calloc(r, sizeof *e->out_rows);
    e->argmax = calloc(r, sizeof *e->argmax);
    e->batch = calloc(r, sizeof *e->batch);
    e->table_seq = calloc(r, sizeof *e->table_seq);
    e->table_slot = calloc(r, sizeof *e->table_slot);
    if (!e->ids || !e->pos || !e->row_seq || !e->out_rows || !e->argmax || !e->batch || !e->table_seq ||
        !e->table_slot)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "engine: buffers for %zu rows", r);
    return NULL;
}

static rlx_status resolve_opts(rlx_engine *e, const rlx_engine_opts *o) {
    const rlx_model_config *c = &e->model->config;
    e->opts = *o;
    if (o->model.n_ctx < 0 || o->kv_memory < 0 || o->max_parallel < 0 || o->chunk < 0 || o->max_rows < 0 ||
        o->checkpoints < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "engine options: context %d, KV memory %lld, parallel %d, chunk %d, rows %d, checkpoints %d: "
                          "none may be negative", (int)o->model.n_ctx, (long long)o->kv_memory, (int)o->max_parallel,
                          (int)o->chunk, (int)o->max_rows, (int)o->checkpoints);
    uint32_t train = c->n_ctx_train ? c->n_ctx_train : DEFAULT_MAX_CTX;
    if (!o->model.n_ctx) e->opts.model.n_ctx = (int32_t)(train < DEFAULT_MAX_CTX ? train : DEFAULT_MAX_CTX);
    if (!o->max_rows) e->opts.max_rows = RLX_ENGINE_ROWS_DEFAULT;
    if (!o->chunk) e->opts.chunk = RLX_ENGINE_CHUNK_DEFAULT;
    if (e->opts.chunk > e->opts.max_rows) e->opts.chunk = e->opts.max_rows;
    if (c->n_vocab < 1 || c->n_vocab > INT32_MAX)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s model: vocabulary of %u tokens", e->family->name, c->n_vocab);
    e->n_vocab = (int32_t)c->n_vocab;
    e->page_size = PAGE_SIZE;
    if (o->model.kv_type != RLX_KV_TYPE_DEFAULT && o->model.kv_type != RLX_KV_TYPE_F32 &&
        o->model.kv_type != RLX_KV_TYPE_F16)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "engine options: K/V type %d; expected %d (the default), %d (F32) "
                          "or %d (F16)", (int)o->model.kv_type, RLX_KV_TYPE_DEFAULT, RLX_KV_TYPE_F32, RLX_KV_TYPE_F16);
    e->kv_type = rlx_kv_type_resolve(e->backend, o->model.kv_type);
    return NULL;
}

static rlx_status try_session(rlx_engine *e) {
    const rlx_model_config *c = &e->model->config;
    rlx_state_spec spec = {
        .n_layer = (int32_t)c->n_layer,
        .n_head_kv = (int32_t)c->n_head_kv,
        .head_dim = (int32_t)c->head_dim,
        .head_dim_v = (int32_t)c->head_dim_v,
        .page_size = e->page_size,
        .n_pages = e->n_pages,
        .kv_dtype = rlx_kv_type_dtype(e->kv_type),
        .layer_kind = e->recurrent ? e->layer_kind : NULL,
        .n_state_slots = e->recurrent ? e->n_seq_slots + e->n_ckpts : 0,
        .state_floats = e->recurrent ? e->state_floats : 0,
    };
    return e->backend->ops->session_create(e->backend, e->model->weights, e->model->n_weights, &spec, &e->session);
}

/* The pool sized for the resolved K/V type, then the session. Where F16 was only the default (not
 * asked for) and the backend refuses it (a Vulkan device without 16-bit storage), the engine falls
 * back to F32 here: the pool is sized again for 4-byte elements within the same budget. */
static rlx_status create_session(rlx_engine *e) {
    RLX_TRY(size_pool(e));
    rlx_status st = try_session(e);
    if (st && rlx_status_code(st) == RLX_ERR_UNSUPPORTED && e->kv_type == RLX_KV_TYPE_F16 &&
        e->opts.model.kv_type == RLX_KV_TYPE_DEFAULT) {
        rlx_status_free(st);
        e->kv_type = RLX_KV_TYPE_F32;
        RLX_TRY(size_pool(e));
        st = try_session(e);
    }
    if (st) return st;
    return rlx_kv_pages_create(e->n_pages, e->page_size, &e->pages);
}

rlx_status rlx_engine_create(const rlx_model *model, const rlx_family_ops *family, rlx_backend *backend,
                             const rlx_engine_opts *opts, int32_t decode_ahead, rlx_engine **out) {
    rlx_engine *e = calloc(1, sizeof *e);
    if (!e) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "engine");
    e->model = model;
    e->family = family;
    e->backend = backend;
    e->decode_ahead = decode_ahead > 0 ? decode_ahead : RLX_DECODE_AHEAD_DEFAULT;
    rlx_status st = resolve_opts(e, opts);
    if (!st) st = rlx_engine_state_init(e);
    if (!st) st = create_session(e);
    if (!st) st = alloc_buffers(e);
    if (st) {
        rlx_engine_close(e);
        return st;
    }
    *out = e;
    return NULL;
}

rlx_status rlx_engine_open(const char *path, const rlx_engine_opts *opts, rlx_engine **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_engine_open: path and out must not be NULL");
    rlx_engine_opts o = opts ? *opts : rlx_engine_opts_default();
    rlx_model *m = NULL;
    rlx_backend *b = NULL;
    const rlx_family_ops *fam = NULL;
    RLX_TRY(rlx_model_open(path, &m));
    rlx_status st = rlx_family_ops_find(m->config.family, &fam);
    if (st) st = rlx_status_annotate(st, "'%s'", path);
    rlx_backend_opts bo = {.deterministic = o.deterministic};
    if (!st) st = rlx_backend_select_opts(o.model.backend, o.model.device, o.model.n_threads, &bo, &b);
    rlx_engine *e = NULL;
    if (!st) st = rlx_engine_create(m, fam, b, &o, o.model.decode_ahead, &e);
    if (st) {
        rlx_backend_destroy(b);
        rlx_model_close(m);
        return st;
    }
    e->owned_model = m;
    e->owned_backend = b;
    *out = e;
    return NULL;
}

rlx_status rlx_engine_kv_memory_for(const char *path, int32_t n_seqs, int32_t n_tokens, int64_t *bytes) {
    if (!path || !bytes || n_seqs < 1 || n_tokens < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv_memory_for: %d sequences of %d tokens (expected >= 1 each)",
                          (int)n_seqs, (int)n_tokens);
    rlx_model *m = NULL;
    RLX_TRY(rlx_model_open(path, &m));
    int64_t per_page = page_bytes(&m->config, PAGE_SIZE, 4); /* F32, the larger type: rlx/engine.h */
    rlx_model_close(m);
    int64_t pages = (int64_t)n_seqs * ((n_tokens + PAGE_SIZE - 1) / PAGE_SIZE) + 1, total;
    if (__builtin_mul_overflow(pages, per_page, &total))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv_memory_for: %lld pages of %lld bytes overflow", (long long)pages,
                          (long long)per_page);
    *bytes = total;
    return NULL;
}

void rlx_engine_seq_evict(rlx_engine *e, eng_seq *s) {
    if (e->pages) rlx_kv_pages_release(e->pages, &s->table);
    rlx_engine_slot_release(e, s);
    s->resident = false;
    s->recompute_to = 0;
}

static void seq_clear(rlx_engine *e, eng_seq *s) {
    if (e->recurrent) rlx_engine_state_forget(e, (int32_t)(s - e->seqs));
    rlx_engine_seq_evict(e, s);
    rlx_sampler_destroy(s->sampler);
    free(s->tokens);
    free(s->logits);
    free(s->error);
    memset(s, 0, sizeof *s);
}

void rlx_engine_close(rlx_engine *e) {
    if (!e) return;
    for (int32_t i = 0; i < e->n_seqs; i++)
        if (e->seqs[i].used) seq_clear(e, &e->seqs[i]);
    free(e->seqs);
    rlx_engine_state_free(e);
    rlx_engine_programs_clear(e);
    if (e->session) e->backend->ops->session_destroy(e->session);
    rlx_kv_pages_destroy(e->pages);
    free(e->ids);
    free(e->pos);
    free(e->row_seq);
    free(e->out_rows);
    free(e->argmax);
    free(e->batch);
    free(e->table_seq);
    free(e->table_slot);
    free(e->table);
    free(e->logits);
    rlx_backend_destroy(e->owned_backend);
    rlx_model_close(e->owned_model);
    free(e);
}

eng_seq *rlx_engine_seq_get(const rlx_engine *e, int32_t id) {
    if (!e || id < 0 || id >= e->n_seqs || !e->seqs[id].used) return NULL;
    return &e->seqs[id];
}

static rlx_status get_seq(const rlx_engine *e, int32_t id, const char *what, eng_seq **out) {
    *out = rlx_engine_seq_get(e, id);
    if (!*out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: no sequence %d", what, (int)id);
    return NULL;
}

/* The settings of a sequence about to be appended to: a fresh sampler (its seed restarts). Bad
 * settings (rlx_sampler_create checks the sampling ones) leave the sequence as it was. */
static rlx_status apply_opts(const rlx_engine *e, eng_seq *s, const rlx_seq_opts *o) {
    if (o->n_new < 0) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "sequence: n_new %d is negative", (int)o->n_new);
    rlx_sampler *sm = NULL;
    if (o->n_new > 0) RLX_TRY(rlx_sampler_create(&o->sample, e->n_vocab, &sm));
    rlx_sampler_destroy(s->sampler);
    s->sampler = sm;
    s->opts = *o;
    return NULL;
}

rlx_status rlx_engine_seq_create(rlx_engine *e, const rlx_seq_opts *opts, int32_t *id) {
    if (!e || !id) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_create: engine and id must not be NULL");
    rlx_seq_opts o = opts ? *opts : (rlx_seq_opts){0};
    int32_t slot = 0;
    while (slot < e->n_seqs && e->seqs[slot].used) slot++;
    if (slot == e->n_seqs) {
        if (e->n_seqs >= MAX_SEQS)
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "seq_create: %d sequences exist (at most %d)", e->n_seqs,
                              MAX_SEQS);
        int32_t n = e->n_seqs ? 2 * e->n_seqs : 8;
        eng_seq *p = realloc(e->seqs, (size_t)n * sizeof *p);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "seq_create: %d sequences", n);
        memset(p + e->n_seqs, 0, (size_t)(n - e->n_seqs) * sizeof *p);
        e->seqs = p;
        e->n_seqs = n;
    }
    eng_seq *s = &e->seqs[slot];
    *s = (eng_seq){.used = true, .state = RLX_SEQ_IDLE, .n_cached = -1, .slot = -1};
    rlx_status st = apply_opts(e, s, &o);
    if (st) {
        seq_clear(e, s);
        return st;
    }
    *id = slot;
    return NULL;
}

rlx_status rlx_engine_seq_push(eng_seq *s, int32_t token) {
    if (s->n_tokens == s->cap) {
        int32_t n = s->cap ? 2 * s->cap : 64;
        int32_t *p = realloc(s->tokens, (size_t)n * sizeof *p);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "sequence of %d tokens", n);
        s->tokens = p;
        s->cap = n;
    }
    s->tokens[s->n_tokens++] = token;
    return NULL;
}

static bool generating(const eng_seq *s) {
    return (s->state == RLX_SEQ_RUNNING || s->state == RLX_SEQ_WAITING) && s->n_gen < s->opts.n_new;
}

/* A sequence with tokens to compute goes back to the scheduler: a new generation from nothing
 * generated, logits kept from position logits_from, behind every sequence queued before it. */
static void requeue(rlx_engine *e, eng_seq *s, int32_t logits_from) {
    s->logits_from = logits_from;
    s->logits_rows = 0;
    s->n_gen = 0;
    s->finish = RLX_FINISH_NONE;
    s->ahead = 1;
    s->state = s->resident ? RLX_SEQ_RUNNING : RLX_SEQ_WAITING;
    s->ticket = ++e->n_tickets;
}

rlx_status rlx_engine_seq_append(rlx_engine *e, int32_t id, const int32_t *ids, int32_t n) {
    eng_seq *s;
    RLX_TRY(get_seq(e, id, "seq_append", &s));
    if (s->state == RLX_SEQ_FAILED) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_append: sequence %d failed", id);
    if (generating(s))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_append: sequence %d is still generating", (int)id);
    if (n < 1 || !ids) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_append: %d tokens (expected >= 1)", (int)n);
    int32_t room = e->opts.model.n_ctx - s->n_tokens;
    if (n > room || (int64_t)n + s->opts.n_new > room)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "seq_append: %d tokens + n_new %d after %d would exceed the context of %d tokens", (int)n,
                          (int)s->opts.n_new, (int)s->n_tokens, (int)e->opts.model.n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= e->n_vocab)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_append: token id %d at %d is outside the vocabulary "
                              "[0, %d)", (int)ids[i], (int)i, (int)e->n_vocab);
    int32_t before = s->n_tokens;
    for (int32_t i = 0; i < n; i++) {
        rlx_status st = rlx_engine_seq_push(s, ids[i]);
        if (st) {
            s->n_tokens = before;
            return st;
        }
    }
    /* a sequence that ended with an uncomputed token computes it with these */
    requeue(e, s, s->table.n_tokens);
    return NULL;
}

rlx_status rlx_engine_seq_compute(rlx_engine *e, int32_t id) {
    eng_seq *s;
    RLX_TRY(get_seq(e, id, "seq_compute", &s));
    if (s->state == RLX_SEQ_FAILED || generating(s))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_compute: sequence %d is %s", (int)id,
                          s->state == RLX_SEQ_FAILED ? "failed" : "still generating");
    int32_t owed = rlx_engine_seq_n_computed(e, id);
    if (s->table.n_tokens >= owed) return NULL;
    s->n_tokens = owed; /* a generated token never run goes: the state never held it */
    rlx_seq_opts quiet = {0};
    RLX_TRY(apply_opts(e, s, &quiet));
    requeue(e, s, owed);
    return NULL;
}

rlx_status rlx_engine_seq_set_opts(rlx_engine *e, int32_t id, const rlx_seq_opts *opts) {
    eng_seq *s;
    RLX_TRY(get_seq(e, id, "seq_set_opts", &s));
    if (!opts) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_set_opts: opts is NULL");
    if (generating(s))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_set_opts: sequence %d is still generating", (int)id);
    return apply_opts(e, s, opts);
}

rlx_status rlx_engine_seq_fork(rlx_engine *e, int32_t id, int32_t *new_id) {
    eng_seq *src;
    RLX_TRY(get_seq(e, id, "seq_fork", &src));
    if (generating(src) || src->state == RLX_SEQ_FAILED)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_fork: sequence %d is %s", (int)id,
                          src->state == RLX_SEQ_FAILED ? "failed" : "still generating");
    rlx_seq_opts o = src->opts;
    RLX_TRY(rlx_engine_seq_create(e, &o, new_id));
    eng_seq *dst = &e->seqs[*new_id];
    src = &e->seqs[id]; /* create may have moved the array */
    rlx_status st = NULL;
    for (int32_t i = 0; i < src->n_tokens && !st; i++) st = rlx_engine_seq_push(dst, src->tokens[i]);
    /* a recurrent model's branch also copies the state, into a slot of its own; with none to be had
     * it waits, its tokens recomputed when it is given more */
    bool resident = src->resident && (!e->recurrent || rlx_engine_slot_take(e, dst, src));
    if (!st && resident) st = rlx_kv_pages_fork(e->pages, &src->table, &dst->table);
    if (!st && resident && e->recurrent) st = e->backend->ops->copy_state(e->session, &src->slot, &dst->slot, 1);
    if (st) {
        rlx_engine_seq_free(e, *new_id);
        return st;
    }
    dst->resident = resident;
    dst->recompute_to = resident ? src->recompute_to : 0;
    dst->admitted = ++e->n_admitted;
    dst->state = RLX_SEQ_IDLE; /* uncomputed tokens run with the next append */
    dst->n_gen = dst->opts.n_new;
    return NULL;
}

rlx_status rlx_engine_seq_truncate(rlx_engine *e, int32_t id, int32_t n) {
    eng_seq *s;
    RLX_TRY(get_seq(e, id, "seq_truncate", &s));
    if (generating(s))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_truncate: sequence %d is still generating", (int)id);
    if (n < 0 || n > s->n_tokens)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_truncate: %d tokens of %d", (int)n, (int)s->n_tokens);
    if (s->table.n_tokens > n && e->recurrent && s->resident) {
        rlx_status st = rlx_engine_state_rewind(e, s, n);
        if (st) {
            rlx_engine_seq_fail(e, s, rlx_errorf(rlx_status_code(st), "%s", rlx_status_message(st)));
            return rlx_status_annotate(st, "seq_truncate: sequence %d back to %d tokens", (int)id, (int)n);
        }
    } else if (s->table.n_tokens > n) {
        rlx_kv_pages_truncate(e->pages, &s->table, n);
    }
    s->n_tokens = n;
    if (s->recompute_to > n) s->recompute_to = n;
    if (s->state == RLX_SEQ_FAILED) return NULL;
    /* tokens left uncomputed (a generation's last) run with the next append */
    s->state = RLX_SEQ_IDLE;
    s->finish = RLX_FINISH_NONE;
    s->n_gen = s->opts.n_new; /* nothing left to generate until the next append */
    s->logits_rows = 0;
    return NULL;
}

rlx_status rlx_engine_seq_checkpoint(rlx_engine *e, int32_t id) {
    eng_seq *s;
    RLX_TRY(get_seq(e, id, "seq_checkpoint", &s));
    if (s->state == RLX_SEQ_RUNNING || s->state == RLX_SEQ_WAITING)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "seq_checkpoint: sequence %d has tokens to compute", (int)id);
    return rlx_engine_state_checkpoint(e, s, false);
}

void rlx_engine_seq_free(rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    if (s) seq_clear(e, s);
}

void rlx_engine_seq_fail(rlx_engine *e, eng_seq *s, rlx_status st) {
    const char *msg = rlx_status_message(st);
    s->error_code = rlx_status_code(st);
    free(s->error);
    s->error = strdup(msg ? msg : "failed");
    rlx_status_free(st);
    rlx_engine_seq_evict(e, s);
    s->state = RLX_SEQ_FAILED;
}

rlx_status rlx_engine_seq_keep_logits(const rlx_engine *e, eng_seq *s, const float *src, int32_t rows, bool append) {
    int32_t have = append ? s->logits_rows : 0, need = have + rows;
    if (need > s->logits_cap) {
        size_t n = (size_t)need * (size_t)e->n_vocab;
        float *p = realloc(s->logits, n * sizeof *p);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "logits of %d rows", (int)need);
        s->logits = p;
        s->logits_cap = need;
    }
    memcpy(s->logits + (size_t)have * (size_t)e->n_vocab, src, (size_t)rows * (size_t)e->n_vocab * sizeof *src);
    s->logits_rows = need;
    return NULL;
}

rlx_seq_state rlx_engine_seq_state(const rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    return s ? s->state : RLX_SEQ_FAILED;
}

rlx_finish rlx_engine_seq_finish(const rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    return s ? s->finish : RLX_FINISH_NONE;
}

const char *rlx_engine_seq_error(const rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    return s && s->state == RLX_SEQ_FAILED ? s->error : NULL;
}

const int32_t *rlx_engine_seq_tokens(const rlx_engine *e, int32_t id, int32_t *n) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    if (n) *n = s ? s->n_tokens : 0;
    return s ? s->tokens : NULL;
}

int32_t rlx_engine_seq_n_generated(const rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    return s ? s->n_gen : 0;
}

const float *rlx_engine_seq_logits(const rlx_engine *e, int32_t id, int32_t *n_rows) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    int32_t rows = s ? s->logits_rows : 0;
    if (n_rows) *n_rows = rows;
    return rows ? s->logits : NULL;
}

int32_t rlx_engine_seq_n_computed(const rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    if (!s) return 0;
    return s->recompute_to > s->table.n_tokens ? s->recompute_to : s->table.n_tokens;
}

rlx_status rlx_engine_seq_status(const rlx_engine *e, int32_t id) {
    eng_seq *s = rlx_engine_seq_get(e, id);
    if (!s || s->state != RLX_SEQ_FAILED) return NULL;
    return rlx_errorf(s->error_code ? s->error_code : RLX_ERR_INTERNAL, "%s", s->error ? s->error : "failed");
}

int32_t rlx_engine_vocab_size(const rlx_engine *e) { return e->n_vocab; }
int32_t rlx_engine_n_ctx(const rlx_engine *e) { return e->opts.model.n_ctx; }
int32_t rlx_engine_seq_n_cached(const rlx_engine *e, int32_t id) {
    const eng_seq *s = rlx_engine_seq_get(e, id);
    return s && s->n_cached > 0 ? s->n_cached : 0;
}

int32_t rlx_engine_eos_id(const rlx_engine *e) { return e->model->config.eos_id >= 0 ? e->model->config.eos_id : -1; }
const char *rlx_engine_family(const rlx_engine *e) { return e->family->name; }
const char *rlx_engine_backend_name(const rlx_engine *e) { return e->backend->name; }
rlx_kv_type rlx_engine_kv_type(const rlx_engine *e) { return e->kv_type; }

rlx_engine_stats rlx_engine_get_stats(const rlx_engine *e) {
    rlx_kv_pages_stats ps = rlx_kv_pages_get_stats(e->pages);
    return (rlx_engine_stats){
        .page_size = e->page_size,
        .n_pages = e->n_pages,
        .pages_used = ps.used,
        .pages_cached = ps.cached,
        .kv_bytes = e->kv_bytes,
        .prefix_queries = ps.prefix_queries + e->ckpt_queries,
        .prefix_hits = ps.prefix_hits + e->ckpt_hits,
        .n_steps = e->n_steps,
        .n_rows = e->n_rows,
        .n_preempted = e->n_preempted,
        .n_compiles = e->n_compiles,
        .n_programs = rlx_engine_n_programs(e),
        .state_seq_slots = e->n_seq_slots,
        .state_ckpt_slots = e->n_ckpts,
        .checkpoints_held = e->recurrent ? rlx_engine_n_checkpoints(e) : 0,
        .state_slot_bytes = e->state_floats * e->n_recurrent * (int64_t)sizeof(float),
        .checkpoints_made = e->n_checkpoints_made,
        .n_rewinds = e->n_rewinds,
    };
}
