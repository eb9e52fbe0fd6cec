/* The CPU reference backend: sessions (borrowed weights + f32 KV pools), compile (verify, bind
 * weights and caches, plan buffers: cpu_plan.c, rows: cpu_rows.c) and run (check the rows, then one
 * kernel per node, in node order). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_fallback/cpu_internal.h"
#include "cpu_fallback/host_memory.h"

/* Work (about one multiply-add each) that pays for one more thread: waking a spinning worker and
 * waiting for it costs a few microseconds, about this many multiply-adds. */
#define WORK_PER_THREAD 32768.0
/* Chunks per thread: enough for the shared counter to even out uneven progress. */
#define CHUNKS_PER_THREAD 4

static const rlx_cpu_kernel kernels[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = rlx_cpu_op_##name,
#include "ir/ops.def"
#undef RLX_OP
};

bool rlx_cpu_has_kernel(rlx_op op) { return (unsigned)op < RLX_OP_COUNT && kernels[op] != NULL; }

void rlx_cpu_parallel(const rlx_cpu_exec *ex, int64_t n_items, int64_t min_chunk, double work, rlx_pool_fn fn,
                      void *ctx) {
    if (n_items <= 0) return;
    if (min_chunk < 1) min_chunk = 1;
    int64_t units = (n_items + min_chunk - 1) / min_chunk;
    double worth = work / WORK_PER_THREAD;
    int64_t threads = ex->n_threads;
    if (worth < (double)threads) threads = worth < 1.0 ? 1 : (int64_t)worth;
    if (threads > units) threads = units;
    if (threads <= 1) {
        fn(ctx, 0, n_items, 0);
        return;
    }
    int64_t per = (units + threads * CHUNKS_PER_THREAD - 1) / (threads * CHUNKS_PER_THREAD);
    rlx_thread_pool_run(ex->pool, (int)threads, n_items, per * min_chunk, fn, ctx);
}

/* ---- session ---- */

static int weight_cmp(const void *a, const void *b) {
    return strcmp(((const rlx_weight *)a)->name, ((const rlx_weight *)b)->name);
}

static void session_destroy(rlx_session *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_weights; i++) free((char *)s->weights[i].name);
    free(s->weights);
    for (int32_t l = 0; l < s->kv.n_layer; l++) {
        if (s->k_cache) free(s->k_cache[l]);
        if (s->v_cache) free(s->v_cache[l]);
        if (s->state) free(s->state[l]);
    }
    free(s->k_cache);
    free(s->v_cache);
    free(s->state);
    free(s);
}

/* Checks one weight's table entry and that its data holds the bytes its shape needs. */
static rlx_status check_weight(const rlx_weight *w, size_t index) {
    if (!w->name || !*w->name)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight %zu has no name", index);
    if (w->n_dims < 1 || w->n_dims > RLX_WEIGHT_MAX_DIMS)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s' has %" PRIu32 " dims, expected 1..%d",
                          w->name, w->n_dims, RLX_WEIGHT_MAX_DIMS);
    uint64_t numel = 1, bytes;
    for (uint32_t d = 0; d < w->n_dims; d++)
        if (__builtin_mul_overflow(numel, w->ne[d], &numel))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s': element count overflows", w->name);
    RLX_TRY(rlx_dtype_bytes(w->type, numel, w->name, &bytes));
    if (w->nbytes < bytes || (bytes > 0 && !w->data))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s' holds %" PRIu64 " bytes at %p, its %s shape "
                          "needs %" PRIu64, w->name, w->nbytes, w->data, rlx_dtype_name(w->type), bytes);
    return NULL;
}

/* Refuses, before any allocation, a KV cache larger than the host memory available: calloc would
 * succeed lazily (overcommit) and the process die later, or fail half-way. */
static rlx_status check_kv_fits(const rlx_state_spec *kv, size_t k_bytes, size_t v_bytes) {
    uint64_t need, avail = rlx_host_memory_available();
    bool overflow = __builtin_add_overflow((uint64_t)k_bytes, (uint64_t)v_bytes, &need) ||
                    __builtin_mul_overflow(need, (uint64_t)kv->n_layer, &need);
    if (!overflow && (!avail || need <= avail)) return NULL;
    char needed[32];
    if (overflow) snprintf(needed, sizeof needed, "more than 2^64");
    else snprintf(needed, sizeof needed, "%" PRIu64, need);
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY,
                      "KV pool of %lld rows: it needs %s bytes (%d layers x %lld rows x %d KV heads x "
                      "(%d + %d) dims x 4 bytes), but the host has %" PRIu64 " bytes available",
                      (long long)rlx_state_kv_rows(kv), needed, kv->n_layer, (long long)rlx_state_kv_rows(kv),
                      kv->n_head_kv, kv->head_dim, kv->head_dim_v, avail);
}

/* The recurrent layers' state, one layer's (*layer_bytes) times their count, is refused before any
 * allocation when the host cannot hold it, as the KV pool is (check_kv_fits). */
static rlx_status check_state_fits(const rlx_state_spec *kv, size_t *layer_bytes) {
    uint64_t n_rec = 0, total, avail = rlx_host_memory_available();
    for (int32_t l = 0; kv->layer_kind && l < kv->n_layer; l++) n_rec += kv->layer_kind[l] == RLX_STATE_RECURRENT;
    bool overflow =
        __builtin_mul_overflow((size_t)kv->n_state_slots, (size_t)kv->state_floats * sizeof(float), layer_bytes) ||
        __builtin_mul_overflow((uint64_t)*layer_bytes, n_rec, &total);
    if (!overflow && (!avail || total <= avail)) return NULL;
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY,
                      "recurrent state: %" PRIu64 " layers x %d slots x %lld floats x 4 bytes %s, but the host has %"
                      PRIu64 " bytes available", n_rec, kv->n_state_slots, (long long)kv->state_floats,
                      overflow ? "overflow" : "exceed that", avail);
}

static rlx_status alloc_kv(rlx_session *s, const rlx_state_spec *kv) {
    RLX_TRY(rlx_state_spec_check(kv));
    s->kv = *kv;
    s->kv.layer_kind = NULL; /* borrowed for the call only */
    if (kv->n_layer == 0) return NULL;
    if (kv->kv_dtype != RLX_DTYPE_F32)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "cpu session: K/V of %s; the CPU reference keeps F32",
                          rlx_dtype_name(kv->kv_dtype));
    if (s->kv.head_dim_v == 0) s->kv.head_dim_v = kv->head_dim;
    size_t k_elems, v_elems, rows = (size_t)rlx_state_kv_rows(kv);
    if (__builtin_mul_overflow(rows * (size_t)kv->n_head_kv, (size_t)kv->head_dim * sizeof(float), &k_elems) ||
        __builtin_mul_overflow(rows * (size_t)kv->n_head_kv, (size_t)s->kv.head_dim_v * sizeof(float), &v_elems))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: a KV pool of %zu rows overflows the address space",
                          rows);
    RLX_TRY(check_kv_fits(&s->kv, k_elems, v_elems));
    s->k_cache = calloc((size_t)kv->n_layer, sizeof *s->k_cache);
    s->v_cache = calloc((size_t)kv->n_layer, sizeof *s->v_cache);
    s->state = calloc((size_t)kv->n_layer, sizeof *s->state);
    if (!s->k_cache || !s->v_cache || !s->state) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: KV cache table");
    size_t state_bytes;
    RLX_TRY(check_state_fits(kv, &state_bytes));
    for (int32_t l = 0; l < kv->n_layer; l++) {
        uint8_t kind = kv->layer_kind ? kv->layer_kind[l] : RLX_STATE_KV;
        if (kind == RLX_STATE_RECURRENT) {
            s->state[l] = calloc(1, state_bytes);
            if (!s->state[l])
                return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: recurrent state of layer %d (%zu bytes)", l,
                                  state_bytes);
        }
        if (kind != RLX_STATE_KV) continue;
        s->k_cache[l] = calloc(1, k_elems);
        s->v_cache[l] = calloc(1, v_elems);
        if (!s->k_cache[l] || !s->v_cache[l])
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: KV cache layer %d (%zu + %zu bytes)", l, k_elems,
                              v_elems);
    }
    return NULL;
}

static rlx_status session_create(rlx_backend *b, const rlx_weight *weights, size_t n_weights, const rlx_state_spec *kv,
                                 rlx_session **out) {
    if ((!weights && n_weights) || !kv || !out)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "cpu session_create: weights, kv and out must not be NULL");
    rlx_session *s = calloc(1, sizeof *s);
    if (!s) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: cannot allocate");
    s->backend = (rlx_cpu_backend *)b;
    s->weights = calloc(n_weights ? n_weights : 1, sizeof *s->weights);
    rlx_status st = s->weights ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: %zu weights", n_weights);
    for (size_t i = 0; !st && i < n_weights; i++) {
        st = check_weight(&weights[i], i);
        if (st) break;
        s->weights[i] = weights[i];
        s->weights[i].name = strdup(weights[i].name);
        if (!s->weights[i].name) st = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: weight names");
        s->n_weights = i + 1;
    }
    if (!st) qsort(s->weights, s->n_weights, sizeof *s->weights, weight_cmp);
    for (size_t i = 1; !st && i < s->n_weights; i++)
        if (strcmp(s->weights[i - 1].name, s->weights[i].name) == 0)
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: weight '%s' appears twice", s->weights[i].name);
    if (!st) st = alloc_kv(s, kv);
    if (st) {
        session_destroy(s);
        return st;
    }
    *out = s;
    return NULL;
}

static const rlx_weight *session_find(const rlx_session *s, const char *name) {
    rlx_weight key = {.name = name};
    return bsearch(&key, s->weights, s->n_weights, sizeof *s->weights, weight_cmp);
}

/* ---- compile ---- */

static void program_destroy(rlx_program *p) {
    if (!p) return;
    for (int32_t i = 0; p->nodes && i < p->n_nodes; i++) {
        free((char *)p->nodes[i].info.name);
        free(p->nodes[i].weight_f32);
    }
    free(p->nodes);
    free(p->outputs);
    free(p->arena);
    free(p->data);
    free(p->scratch);
    free(p->op_temp);
    free(p->row_pos);
    free(p->row_seq);
    free(p->ident_pages);
    free(p->row_next);
    free(p->row_first);
    free(p);
}

/* A WEIGHT node [d0, .., dr-1] matches a stored weight with ne = [dr-1, .., d0] (ne[0] contiguous),
 * trailing ne of 1 allowed. */
static bool weight_shape_matches(const rlx_shape *s, const rlx_weight *w) {
    for (uint32_t d = 0; d < RLX_WEIGHT_MAX_DIMS; d++) {
        uint64_t want = (int32_t)d < s->rank ? (uint64_t)s->dim[s->rank - 1 - (int32_t)d] : 1;
        uint64_t have = d < w->n_dims ? w->ne[d] : 1;
        if (want != have) return false;
    }
    return true;
}

static rlx_status bind_weight(const rlx_session *s, rlx_node i, rlx_cpu_node *n) {
    char want[96], have[96];
    const rlx_weight *w = session_find(s, n->info.name);
    if (!w)
        return rlx_errorf(RLX_ERR_NOT_FOUND, "compile: %%%d WEIGHT '%s' is not among the session's %zu weights", i,
                          n->info.name, s->n_weights);
    rlx_shape ws = {.rank = (int32_t)w->n_dims};
    for (uint32_t d = 0; d < w->n_dims; d++) ws.dim[w->n_dims - 1 - d] = (int64_t)w->ne[d];
    if (w->type != n->info.dtype || !weight_shape_matches(&n->info.shape, w))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "compile: %%%d WEIGHT '%s' is declared %s%s but the session "
                          "holds %s%s", i, n->info.name, rlx_dtype_name(n->info.dtype),
                          rlx_shape_str(&n->info.shape, want, sizeof want), rlx_dtype_name(w->type),
                          rlx_shape_str(&ws, have, sizeof have));
    n->store = CPU_STORE_WEIGHT;
    n->weight = w;
    return NULL;
}

/* dim[0] is the view's logical capacity, which may pass the pool's rows: cpu_rows.c checks its
 * readers. */
static rlx_status bind_cache(const rlx_session *s, rlx_node i, rlx_cpu_node *n) {
    const rlx_attrs *a = &n->info.attrs;
    const rlx_shape *sh = &n->info.shape;
    int32_t dh = a->kv_is_v ? s->kv.head_dim_v : s->kv.head_dim;
    if (a->layer >= s->kv.n_layer || !s->k_cache[a->layer] || sh->dim[1] != s->kv.n_head_kv || sh->dim[2] != dh)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "compile: %%%d KV_CACHE layer %d %s [%" PRId64 ", %" PRId64
                          ", %" PRId64 "] does not fit the session cache: %d layers of [%lld, %d, %d]", i, a->layer,
                          a->kv_is_v ? "V" : "K", sh->dim[0], sh->dim[1], sh->dim[2], s->kv.n_layer,
                          (long long)rlx_state_kv_rows(&s->kv), s->kv.n_head_kv, dh);
    n->store = CPU_STORE_CACHE;
    return NULL;
}

/* A STATE node: one part of a recurrent layer's state per slot, within the layer's state_floats. */
static rlx_status bind_state(const rlx_session *s, rlx_node i, rlx_cpu_node *n) {
    const rlx_attrs *a = &n->info.attrs;
    bool recurrent = a->layer < s->kv.n_layer && s->state[a->layer];
    RLX_TRY(rlx_backend_check_state_node(&s->kv, recurrent, i, a->layer, a->state_offset, n->numel));
    n->store = CPU_STORE_STATE;
    return NULL;
}

static rlx_status copy_graph(rlx_session *s, const rlx_graph *g, rlx_program *p) {
    p->n_nodes = rlx_graph_n_nodes(g);
    p->n_outputs = rlx_graph_n_outputs(g);
    p->nodes = calloc((size_t)p->n_nodes, sizeof *p->nodes);
    p->outputs = calloc((size_t)p->n_outputs, sizeof *p->outputs);
    if (!p->nodes || !p->outputs) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: %d nodes", p->n_nodes);
    for (int32_t o = 0; o < p->n_outputs; o++) p->outputs[o] = rlx_graph_output_node(g, o);
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        rlx_cpu_node *n = &p->nodes[i];
        n->info = *rlx_graph_node(g, i);
        n->numel = rlx_shape_numel(&n->info.shape);
        if (n->info.name && !(n->info.name = strdup(n->info.name)))
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: node names");
        switch (n->info.op) {
        case RLX_OP_INPUT:
            n->store = CPU_STORE_INPUT;
            n->input_index = p->n_inputs++;
            break;
        case RLX_OP_WEIGHT: RLX_TRY(bind_weight(s, i, n)); break;
        case RLX_OP_KV_CACHE: RLX_TRY(bind_cache(s, i, n)); break;
        case RLX_OP_STATE:
            RLX_TRY(bind_state(s, i, n));
            p->has_state = true;
            break;
        case RLX_OP_RESHAPE:
        case RLX_OP_KV_WRITE: n->store = CPU_STORE_ALIAS; break;
        default: n->store = CPU_STORE_ARENA; break;
        }
    }
    return NULL;
}

static rlx_status compile(rlx_session *s, const rlx_graph *g, rlx_program **out) {
    if (!s || !g || !out)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "cpu compile: session, graph and out are required");
    rlx_status st = rlx_graph_verify(g);
    if (st) return rlx_status_annotate(st, "compile: the graph does not verify");
    rlx_program *p = calloc(1, sizeof *p);
    if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: cannot allocate a program");
    p->session = s;
    st = copy_graph(s, g, p);
    if (!st) st = rlx_cpu_plan(p, s->backend->n_threads);
    if (!st) st = rlx_cpu_rows_plan(p);
    if (st) {
        program_destroy(p);
        return st;
    }
    *out = p;
    return NULL;
}

/* ---- run ---- */

static void bind_storage(rlx_program *p, const rlx_run_args *a) {
    const rlx_session *s = p->session;
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        rlx_cpu_node *n = &p->nodes[i];
        switch (n->store) {
        case CPU_STORE_ARENA: p->data[i] = p->arena + n->arena_offset; break;
        case CPU_STORE_INPUT: p->data[i] = (void *)a->inputs[n->input_index]; break;
        case CPU_STORE_WEIGHT:
            p->data[i] = n->weight_f32 ? (void *)n->weight_f32 : (void *)n->weight->data;
            break;
        case CPU_STORE_CACHE:
            p->data[i] = n->info.attrs.kv_is_v ? s->v_cache[n->info.attrs.layer] : s->k_cache[n->info.attrs.layer];
            break;
        case CPU_STORE_STATE: p->data[i] = s->state[n->info.attrs.layer] + n->info.attrs.state_offset; break;
        case CPU_STORE_ALIAS: p->data[i] = p->data[n->info.in[0]]; break;
        }
    }
}

static rlx_status run(rlx_program *p, const rlx_run_args *a) {
    if (!p) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: program is NULL");
    RLX_TRY(rlx_backend_check_run_args(a, p->static_rows, p->n_inputs, p->n_outputs));
    rlx_run_rows ident;
    const rlx_run_rows *rows;
    RLX_TRY(rlx_cpu_rows_of(p, a, &ident, &rows));
    if (p->has_state) {
        RLX_TRY(rlx_backend_check_state_rows(a, p->session->kv.n_state_slots));
        RLX_TRY(rlx_cpu_state_rows(p, rows, a->n_tokens));
    }
    rlx_cpu_backend *b = p->session->backend;
    rlx_cpu_exec ex = {.p = p, .pool = b->pool, .n_threads = b->n_threads, .simd = b->simd, .n_tokens = a->n_tokens,
                       .rows = rows, .page_size = p->page_size, .state_floats = p->session->kv.state_floats,
                       .row_next = p->row_next, .row_first = p->row_first};
    bind_storage(p, a);
    for (rlx_node i = 0; i < p->n_nodes; i++) RLX_TRY(kernels[p->nodes[i].info.op](&ex, i));
    for (int32_t o = 0; o < p->n_outputs; o++) {
        const rlx_cpu_node *n = &p->nodes[p->outputs[o]];
        memcpy(a->outputs[o], p->data[p->outputs[o]], (size_t)n->numel * 4);
    }
    return NULL;
}

/* ---- backend ---- */

static void backend_destroy(rlx_backend *base) {
    rlx_cpu_backend *b = (rlx_cpu_backend *)base;
    if (!b) return;
    rlx_thread_pool_destroy(b->pool);
    free(b);
}

static const rlx_backend_ops cpu_ops = {
    .session_create = session_create,
    .session_destroy = session_destroy,
    .copy_pages = rlx_cpu_copy_pages,
    .copy_state = rlx_cpu_copy_state,
    .compile = compile,
    .run = run,
    .program_destroy = program_destroy,
    .destroy = backend_destroy,
};

/* Every online core, but no more than the process may run on (a cpuset or taskset), since more
 * threads than cores only take turns and wait for each other at every op. */
static int default_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < cores)
        cores = CPU_COUNT(&set);
#endif
    return cores < 1 ? 1 : cores > 1024 ? 1024 : (int)cores;
}

rlx_status rlx_backend_cpu_create(int n_threads, rlx_backend **out) {
    rlx_cpu_options o = rlx_cpu_options_from_env();
    return rlx_backend_cpu_create_with(n_threads, &o, out);
}

rlx_status rlx_backend_cpu_create_with(int n_threads, const rlx_cpu_options *opts, rlx_backend **out) {
    if (!out || !opts) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "cpu backend: %s is NULL", out ? "opts" : "out");
    if (n_threads < 0 || n_threads > 1024)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "cpu backend: n_threads %d, expected 0 (online cores) .. 1024",
                          n_threads);
    if (n_threads == 0) n_threads = default_threads();
    rlx_cpu_backend *b = calloc(1, sizeof *b);
    if (!b) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cpu backend: cannot allocate");
    b->base.ops = &cpu_ops;
    b->base.name = "cpu";
    b->n_threads = n_threads;
    b->simd = rlx_cpu_simd_select(opts);
    rlx_status st = rlx_thread_pool_create(n_threads, &b->pool);
    if (st) {
        free(b);
        return st;
    }
    *out = &b->base;
    return NULL;
}
