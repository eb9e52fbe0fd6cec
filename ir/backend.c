#include "ir/backend.h"

#include <inttypes.h>
#include <stdlib.h>

rlx_status rlx_backend_check_run_args(const rlx_run_args *a, int64_t static_rows, int32_t n_inputs,
                                      int32_t n_outputs) {
    if (!a) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: args is NULL");
    if (a->n_tokens < 1 || a->n_tokens > static_rows)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: n_tokens %d is outside [1, %" PRId64 " rows of the graph]",
                          a->n_tokens, static_rows);
    if (!a->rows && a->n_past < 0) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: n_past %d is negative", a->n_past);
    if (n_inputs > 0 && !a->inputs)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: the graph has %d inputs but inputs is NULL", n_inputs);
    for (int32_t k = 0; k < n_inputs; k++)
        if (!a->inputs[k]) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: input %d is NULL", k);
    if (!a->outputs) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: outputs is NULL");
    for (int32_t o = 0; o < n_outputs; o++)
        if (!a->outputs[o]) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: output %d is NULL", o);
    return NULL;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Rows that write the same pool row would race on a device and make the result depend on the
 * order of writes: refused. Sorting a copy is O(n log n) in the run's rows. */
static rlx_status check_distinct_writes(const rlx_run_args *a, int32_t page_size) {
    const rlx_run_rows *r = a->rows;
    int64_t *w = malloc((size_t)a->n_tokens * sizeof *w);
    if (!w) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "run: %d rows' pool rows", a->n_tokens);
    for (int32_t i = 0; i < a->n_tokens; i++) w[i] = rlx_rows_pool_row(r, r->seq[i], r->pos[i], page_size);
    qsort(w, (size_t)a->n_tokens, sizeof *w, cmp_i64);
    rlx_status st = NULL;
    for (int32_t i = 1; i < a->n_tokens && !st; i++)
        if (w[i] == w[i - 1])
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                            "run: two rows write pool row %" PRId64 " (page %" PRId64 "): each (sequence, position) "
                            "of a run must have a page of its own",
                            w[i], w[i] / page_size);
    free(w);
    return st;
}

rlx_status rlx_backend_check_rows(const rlx_run_args *a, const rlx_rows_bounds *b) {
    const rlx_run_rows *r = a->rows;
    if (!r) return NULL;
    if (!r->pos || !r->seq || (!r->pages && r->n_seqs > 0))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: rows has a NULL pos, seq or pages");
    if (r->n_seqs < 1 || r->page_cols < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: rows of %d sequences and %d page columns", r->n_seqs,
                          r->page_cols);
    int64_t cap = b->kv_rows > 0 ? b->kv_rows : (int64_t)INT32_MAX + 1;
    int32_t *last = calloc((size_t)r->n_seqs, sizeof *last); /* per table row: 1 + the last page column read */
    if (!last) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "run: a table of %d sequences", r->n_seqs);
    rlx_status st = NULL;
    for (int32_t i = 0; i < a->n_tokens && !st; i++) {
        int32_t s = r->seq[i], p = r->pos[i];
        if (s < 0 || s >= r->n_seqs)
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: row %d's sequence %d is outside the table's %d rows", i, s,
                            r->n_seqs);
        else if (p < 0 || p >= cap)
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                            "run: row %d's position %d is outside [0, %" PRId64 ") (the program's KV capacity)", i, p,
                            cap);
        else if (b->kv_rows > 0 && p / b->page_size >= r->page_cols)
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                            "run: row %d at position %d needs page column %d, but the table has %d", i, p,
                            p / b->page_size, r->page_cols);
        else if (b->kv_rows > 0 && p / b->page_size + 1 > last[s])
            last[s] = p / b->page_size + 1;
    }
    for (int32_t s = 0; s < r->n_seqs && !st; s++)
        for (int32_t k = 0; k < last[s] && !st; k++) {
            int32_t pg = r->pages[(int64_t)s * r->page_cols + k];
            if (pg < 0 || pg >= b->n_pages)
                st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                                "run: sequence %d's page %d is pool page %d, outside the pool's %d pages", s, k, pg,
                                b->n_pages);
        }
    free(last);
    if (st) return st;
    return b->writes && b->kv_rows > 0 ? check_distinct_writes(a, b->page_size) : NULL;
}

rlx_status rlx_backend_check_state_rows(const rlx_run_args *a, int32_t n_state_slots) {
    if (n_state_slots < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: the program has recurrent state but the session has no "
                          "state slots (rlx_state_spec.n_state_slots)");
    const rlx_run_rows *r = a->rows;
    if (!r) return NULL;
    /* last[s]: the last row seen of table row s (-1: none); owner[slot]: the table row using it */
    int32_t *last = malloc(((size_t)r->n_seqs + (size_t)n_state_slots) * sizeof *last);
    if (!last) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "run: state rows of %d sequences", r->n_seqs);
    int32_t *owner = last + r->n_seqs;
    for (int32_t s = 0; s < r->n_seqs; s++) last[s] = -1;
    for (int32_t k = 0; k < n_state_slots; k++) owner[k] = -1;
    rlx_status st = NULL;
    for (int32_t i = 0; !st && i < a->n_tokens; i++) {
        int32_t s = r->seq[i], prev = last[s];
        if (prev >= 0 && r->pos[i] != r->pos[prev] + 1) {
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: row %d is position %d of sequence %d, whose previous row "
                            "%d is position %d: a recurrent state needs consecutive positions in row order", i,
                            r->pos[i], s, prev, r->pos[prev]);
            break;
        }
        last[s] = i;
        if (prev >= 0) continue;
        int32_t slot = r->slots ? r->slots[s] : s;
        if (slot < 0 || slot >= n_state_slots)
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: sequence %d's state slot %d is outside the session's %d",
                            s, slot, n_state_slots);
        else if (owner[slot] >= 0)
            st = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "run: sequences %d and %d share state slot %d", owner[slot], s,
                            slot);
        else
            owner[slot] = s;
    }
    free(last);
    return st;
}

rlx_status rlx_state_spec_check(const rlx_state_spec *s) {
    if (s->n_layer == 0) return NULL;
    if (s->n_layer < 0 || s->n_head_kv < 1 || s->head_dim < 1 || s->head_dim_v < 0 || s->n_pages < 1 ||
        s->page_size < 1 || (s->page_size & (s->page_size - 1)) != 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "session: state spec n_layer %d, n_head_kv %d, head_dim %d, head_dim_v %d, %d pages of %d "
                          "rows: expected all >= 1 (head_dim_v 0 = head_dim) and a power-of-two page size",
                          s->n_layer, s->n_head_kv, s->head_dim, s->head_dim_v, s->n_pages, s->page_size);
    if (s->kv_dtype != RLX_DTYPE_F32 && s->kv_dtype != RLX_DTYPE_F16)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: K/V of %s; expected F32 or F16",
                          rlx_dtype_name(s->kv_dtype));
    for (int32_t l = 0; s->layer_kind && l < s->n_layer; l++)
        if (s->layer_kind[l] > RLX_STATE_RECURRENT)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: layer %d has state kind %d", l, s->layer_kind[l]);
    bool recurrent = false;
    for (int32_t l = 0; s->layer_kind && l < s->n_layer; l++) recurrent |= s->layer_kind[l] == RLX_STATE_RECURRENT;
    if (s->n_state_slots < 0 || s->state_floats < 0 || (recurrent && (s->n_state_slots < 1 || s->state_floats < 1)))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "session: %d state slots of %lld floats%s", s->n_state_slots,
                          (long long)s->state_floats, recurrent ? ", expected both >= 1 for the recurrent layers" : "");
    return NULL;
}

rlx_status rlx_backend_check_state_node(const rlx_state_spec *kv, bool recurrent, rlx_node i, int32_t layer,
                                        int64_t offset, int64_t numel) {
    if (recurrent && offset <= kv->state_floats - numel) return NULL;
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "compile: %%%d STATE layer %d floats [%" PRId64 ", +%" PRId64
                      ") is not within a recurrent layer's state of the session (%d layers, %lld floats per slot%s)",
                      i, layer, offset, numel, kv->n_layer, (long long)kv->state_floats,
                      layer < kv->n_layer && !recurrent ? "; this layer is not recurrent" : "");
}
