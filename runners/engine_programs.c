/* The engine's compiled programs, one per (rows, KV capacity, output rows, head) bucket, kept in an
 * LRU of RLX_ENGINE_PROGRAMS. Rows and output rows are powers of two up to max_rows and the KV
 * capacity a power of two of pages up to the context's, so a run meets at most
 * log2(max_rows)^2 * log2(n_ctx / page_size) * 4 distinct programs (in practice a handful: decode
 * steps use rows = output rows, prefill chunks one output row). */
#include "runners/engine_internal.h"

int32_t rlx_engine_bucket(const rlx_engine *e, int32_t n, int32_t cap) {
    if (e->opts.exact_buckets) return n;
    int64_t p = 1;
    while (p < n) p <<= 1;
    return p < cap ? (int32_t)p : cap;
}

static rlx_status compile(rlx_engine *e, int32_t rows, int32_t kv_cap, int32_t out_rows, rlx_decode_head head,
                          bool apart, rlx_program **out) {
    rlx_graph *g;
    RLX_TRY(rlx_family_build_rows(e->family, e->model, rows, kv_cap, out_rows, head, apart, &g));
    rlx_status st = e->backend->ops->compile(e->session, g, out);
    rlx_graph_destroy(g);
    if (!st) e->n_compiles++;
    return st;
}

rlx_status rlx_engine_program(rlx_engine *e, int32_t rows, int32_t kv_cap, int32_t out_rows, rlx_decode_head head,
                              bool apart, rlx_program **out, bool *owned) {
    *owned = e->opts.no_program_cache;
    if (*owned) return compile(e, rows, kv_cap, out_rows, head, apart, out);
    eng_program *victim = &e->programs[0];
    for (int i = 0; i < RLX_ENGINE_PROGRAMS; i++) {
        eng_program *p = &e->programs[i];
        if (p->prog && p->rows == rows && p->kv_cap == kv_cap && p->out_rows == out_rows && p->head == head &&
            p->apart == apart) {
            p->last_use = ++e->tick;
            *out = p->prog;
            return NULL;
        }
        if (victim->prog && (!p->prog || p->last_use < victim->last_use)) victim = p;
    }
    rlx_program *prog;
    RLX_TRY(compile(e, rows, kv_cap, out_rows, head, apart, &prog));
    if (victim->prog) e->backend->ops->program_destroy(victim->prog);
    *victim = (eng_program){.prog = prog, .rows = rows, .kv_cap = kv_cap, .out_rows = out_rows, .head = head,
                            .apart = apart, .last_use = ++e->tick};
    *out = prog;
    return NULL;
}

void rlx_engine_programs_clear(rlx_engine *e) {
    for (int i = 0; i < RLX_ENGINE_PROGRAMS; i++) {
        if (e->programs[i].prog) e->backend->ops->program_destroy(e->programs[i].prog);
        e->programs[i].prog = NULL;
    }
}

int32_t rlx_engine_n_programs(const rlx_engine *e) {
    int32_t n = 0;
    for (int i = 0; i < RLX_ENGINE_PROGRAMS; i++) n += e->programs[i].prog != NULL;
    return n;
}
