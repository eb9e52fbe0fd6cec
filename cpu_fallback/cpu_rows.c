/* The rows of a run on the CPU backend (ir/ops.def, "the run contract"): what a program's rows may
 * address, the checks every run makes before any kernel, the single-sequence form turned into the
 * general one (so that ROPE, KV_WRITE and ATTENTION have one code path), and copy_pages.
 *
 * A KV_CACHE node's storage is its layer's whole pool (n_pages * page_size rows); its dim[0] T is
 * the logical capacity of one sequence, which may be larger than the pool. KV_WRITE and ATTENTION
 * read a view through the rows' page tables; any other reader (a graph output, RESHAPE, an
 * elementwise op) reads the pool as a plain [T, ..] array, so such a view must fit the pool. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

/* Node n reads input slot k through the page table (not as a plain array). */
static bool reads_paged(const rlx_node_info *n, int k) {
    return (n->op == RLX_OP_KV_WRITE && k == 0) || (n->op == RLX_OP_ATTENTION && (k == 1 || k == 2));
}

static rlx_status view_too_big(const rlx_program *p, rlx_node view, const char *reader) {
    const rlx_state_spec *kv = &p->session->kv;
    const rlx_node_info *in = &p->nodes[view].info;
    while (in->op == RLX_OP_KV_WRITE) in = &p->nodes[in->in[0]].info;
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                      "compile: %%%d %s layer %d %s [%" PRId64 ", %" PRId64 ", %" PRId64
                      "] does not fit the session cache: %d layers of [%lld, %d, %d]; a view longer than the pool "
                      "is read through page tables only (KV_WRITE, ATTENTION), but %s reads it as a plain array",
                      view, rlx_op_name(p->nodes[view].info.op), in->attrs.layer, in->attrs.kv_is_v ? "V" : "K",
                      in->shape.dim[0], in->shape.dim[1], in->shape.dim[2], kv->n_layer,
                      (long long)rlx_state_kv_rows(kv), kv->n_head_kv,
                      in->attrs.kv_is_v ? kv->head_dim_v : kv->head_dim, reader);
}

/* A view (KV_CACHE or KV_WRITE) longer than the pool may only be read through page tables. */
static rlx_status check_plain_reads(const rlx_program *p) {
    int64_t pool = rlx_state_kv_rows(&p->session->kv);
    char reader[48];
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        const rlx_node_info *n = &p->nodes[i].info;
        for (int k = 0; k < n->n_in; k++) {
            rlx_node v = n->in[k];
            if (v == RLX_NO_NODE || reads_paged(n, k)) continue;
            const rlx_node_info *in = &p->nodes[v].info;
            if ((in->op == RLX_OP_KV_CACHE || in->op == RLX_OP_KV_WRITE) && in->shape.dim[0] > pool) {
                snprintf(reader, sizeof reader, "%%%d %s", i, rlx_op_name(n->op));
                return view_too_big(p, v, reader);
            }
        }
    }
    for (int32_t o = 0; o < p->n_outputs; o++) {
        const rlx_node_info *in = &p->nodes[p->outputs[o]].info;
        if ((in->op == RLX_OP_KV_CACHE || in->op == RLX_OP_KV_WRITE) && in->shape.dim[0] > pool) {
            snprintf(reader, sizeof reader, "graph output %d", o);
            return view_too_big(p, p->outputs[o], reader);
        }
    }
    return NULL;
}

rlx_status rlx_cpu_rows_plan(rlx_program *p) {
    const rlx_state_spec *kv = &p->session->kv;
    p->kv_rows = 0;
    p->kv_writes = false;
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        const rlx_node_info *n = &p->nodes[i].info;
        if (n->op == RLX_OP_KV_CACHE && n->shape.dim[0] > p->kv_rows) p->kv_rows = n->shape.dim[0];
        if (n->op == RLX_OP_KV_WRITE) p->kv_writes = true;
    }
    if (p->kv_rows > INT32_MAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "compile: a KV view of %" PRId64 " rows; positions are int32",
                          p->kv_rows);
    RLX_TRY(check_plain_reads(p));
    p->page_size = kv->n_layer > 0 ? kv->page_size : 1;
    /* the single-sequence form reads no page past the pool (check_single) */
    int64_t cols = (p->kv_rows + p->page_size - 1) / p->page_size;
    p->ident_cols = (int32_t)(cols < kv->n_pages ? cols : kv->n_pages);
    p->row_pos = malloc((size_t)p->static_rows * sizeof *p->row_pos);
    p->row_seq = calloc((size_t)p->static_rows, sizeof *p->row_seq);
    p->ident_pages = malloc(((size_t)p->ident_cols + 1) * sizeof *p->ident_pages);
    if (!p->row_pos || !p->row_seq || !p->ident_pages)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: the rows of %" PRId64 " tokens and %d pages",
                          p->static_rows, p->ident_cols);
    for (int32_t k = 0; k < p->ident_cols; k++) p->ident_pages[k] = k;
    if (!p->has_state) return NULL;
    p->row_next = malloc((size_t)p->static_rows * sizeof *p->row_next);
    p->row_first = malloc((size_t)p->static_rows * sizeof *p->row_first);
    if (!p->row_next || !p->row_first)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: the state rows of %" PRId64 " tokens", p->static_rows);
    return NULL;
}

rlx_status rlx_cpu_state_rows(rlx_program *p, const rlx_run_rows *rows, int32_t n_tokens) {
    int32_t *last = malloc((size_t)rows->n_seqs * sizeof *last);
    if (!last) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "run: state rows of %d sequences", rows->n_seqs);
    for (int32_t s = 0; s < rows->n_seqs; s++) last[s] = -1;
    for (int32_t r = 0; r < n_tokens; r++) {
        int32_t s = rows->seq[r];
        p->row_next[r] = -1;
        p->row_first[r] = last[s] < 0;
        if (last[s] >= 0) p->row_next[last[s]] = r;
        last[s] = r;
    }
    free(last);
    return NULL;
}

/* The single-sequence form's own checks: a KV_WRITE past its capacity (the message callers know),
 * and identity pages past the pool, which a view longer than the pool can ask for. */
static rlx_status check_single(const rlx_program *p, const rlx_run_args *a) {
    int64_t end = (int64_t)a->n_past + a->n_tokens;
    if (end - 1 > INT32_MAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: n_past %d + n_tokens %d passes the largest position %d",
                          a->n_past, a->n_tokens, INT32_MAX);
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        const rlx_node_info *n = &p->nodes[i].info;
        if (n->op == RLX_OP_KV_WRITE && end > n->shape.dim[0])
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d KV_WRITE: rows [n_past %d, n_past + n_tokens = %" PRId64
                              ") exceed the cache capacity %" PRId64, i, a->n_past, end, n->shape.dim[0]);
    }
    if (p->kv_rows == 0) return NULL;
    /* a read clamps to the view's last row (ATTENTION), so no page past it is read */
    int64_t last = (end - 1 < p->kv_rows - 1 ? end - 1 : p->kv_rows - 1) / p->page_size;
    int32_t n_pages = p->session->kv.n_pages;
    if (last >= n_pages)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "run: rows [n_past %d, %" PRId64 ") read page %" PRId64 ", outside the pool's %d pages of %d "
                          "rows", a->n_past, end, last, n_pages, p->page_size);
    return NULL;
}

/* With rows: a KV_WRITE of a view shorter than the program's longest (rlx_backend_check_rows
 * bounds positions by that one) still gets no position past its own. */
static rlx_status check_write_capacity(const rlx_program *p, const rlx_run_args *a) {
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        const rlx_node_info *n = &p->nodes[i].info;
        if (n->op != RLX_OP_KV_WRITE || n->shape.dim[0] >= p->kv_rows) continue;
        for (int32_t r = 0; r < a->n_tokens; r++)
            if (a->rows->pos[r] >= n->shape.dim[0])
                return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                                  "%%%d KV_WRITE: row %d's position %d exceeds the cache capacity %" PRId64, i, r,
                                  a->rows->pos[r], n->shape.dim[0]);
    }
    return NULL;
}

rlx_status rlx_cpu_rows_of(rlx_program *p, const rlx_run_args *a, rlx_run_rows *ident, const rlx_run_rows **out) {
    if (a->rows) {
        rlx_rows_bounds b = {.kv_rows = p->kv_rows, .page_size = p->page_size,
                             .n_pages = p->session->kv.n_pages, .writes = p->kv_writes};
        RLX_TRY(rlx_backend_check_rows(a, &b));
        RLX_TRY(check_write_capacity(p, a));
        *out = a->rows;
        return NULL;
    }
    RLX_TRY(check_single(p, a));
    for (int32_t r = 0; r < a->n_tokens; r++) p->row_pos[r] = a->n_past + r;
    *ident = (rlx_run_rows){.pos = p->row_pos, .seq = p->row_seq, .pages = p->ident_pages, .n_seqs = 1,
                            .page_cols = p->ident_cols};
    *out = ident;
    return NULL;
}

rlx_status rlx_cpu_copy_pages(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n) {
    if (!s || n < 0 || (n > 0 && (!src || !dst)))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "copy_pages: session %p, src %p, dst %p, n %d", (void *)s,
                          (const void *)src, (const void *)dst, n);
    const rlx_state_spec *kv = &s->kv;
    if (n > 0 && kv->n_layer == 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "copy_pages: the session has no KV pool");
    for (int32_t i = 0; i < n; i++)
        if (src[i] < 0 || src[i] >= kv->n_pages || dst[i] < 0 || dst[i] >= kv->n_pages)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "copy_pages: copy %d is page %d -> page %d, outside the pool's %d pages", i, src[i],
                              dst[i], kv->n_pages);
    size_t k_page = (size_t)kv->page_size * (size_t)kv->n_head_kv * (size_t)kv->head_dim;
    size_t v_page = (size_t)kv->page_size * (size_t)kv->n_head_kv * (size_t)kv->head_dim_v;
    for (int32_t i = 0; i < n; i++) {
        if (src[i] == dst[i]) continue;
        for (int32_t l = 0; l < kv->n_layer; l++) {
            if (!s->k_cache[l]) continue; /* not an attention layer */
            memcpy(s->k_cache[l] + (size_t)dst[i] * k_page, s->k_cache[l] + (size_t)src[i] * k_page,
                   k_page * sizeof(float));
            memcpy(s->v_cache[l] + (size_t)dst[i] * v_page, s->v_cache[l] + (size_t)src[i] * v_page,
                   v_page * sizeof(float));
        }
    }
    return NULL;
}

rlx_status rlx_cpu_copy_state(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n) {
    if (!s || n < 0 || (n > 0 && (!src || !dst)))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "copy_state: session %p, src %p, dst %p, n %d", (void *)s,
                          (const void *)src, (const void *)dst, n);
    const rlx_state_spec *kv = &s->kv;
    for (int32_t i = 0; i < n; i++)
        if (src[i] < -1 || src[i] >= kv->n_state_slots || dst[i] < 0 || dst[i] >= kv->n_state_slots)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "copy_state: copy %d is slot %d -> slot %d, outside the session's %d state slots", i,
                              src[i], dst[i], kv->n_state_slots);
    size_t slot = (size_t)kv->state_floats;
    for (int32_t i = 0; i < n; i++) {
        if (src[i] == dst[i]) continue;
        for (int32_t l = 0; l < kv->n_layer; l++) {
            if (!s->state[l]) continue; /* not a recurrent layer */
            float *to = s->state[l] + (size_t)dst[i] * slot;
            if (src[i] < 0) memset(to, 0, slot * sizeof(float));
            else memcpy(to, s->state[l] + (size_t)src[i] * slot, slot * sizeof(float));
        }
    }
    return NULL;
}
