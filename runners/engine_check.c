/* The engine's books checked against each other (engine_internal.h, rlx_engine_check): for tests,
 * between calls. Every rule here is one the rest of the engine relies on without checking. */
#include <stdlib.h>

#include "runners/engine_internal.h"

/* Counts t's pages into refs (n_pages entries); false when a page is outside the pool. */
static bool count_table(const rlx_engine *e, const rlx_kv_table *t, int32_t *refs) {
    for (int32_t k = 0; k < t->n_pages; k++) {
        int32_t p = t->pages[k];
        if (p < 0 || p >= e->n_pages) return false;
        refs[p]++;
    }
    return true;
}

/* A table's own shape: its pages cover its valid positions. */
static rlx_status check_table(const rlx_engine *e, const rlx_kv_table *t, const char *what, int32_t id) {
    if (t->n_tokens < 0 || t->n_pages < 0 || t->n_pages > t->cap ||
        (int64_t)t->n_pages * e->page_size < t->n_tokens || (t->n_pages > 0 && !t->pages))
        return rlx_errorf(RLX_ERR_INTERNAL, "%s %d: table of %d pages (cap %d) for %d positions", what, (int)id,
                          (int)t->n_pages, (int)t->cap, (int)t->n_tokens);
    return NULL;
}

static rlx_status check_seq(const rlx_engine *e, int32_t id) {
    const eng_seq *s = &e->seqs[id];
    RLX_TRY(check_table(e, &s->table, "sequence", id));
    if (s->n_tokens < 0 || s->n_tokens > s->cap || s->table.n_tokens > s->n_tokens ||
        s->recompute_to > s->n_tokens || s->n_tokens > e->opts.model.n_ctx)
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d: %d tokens (cap %d, context %d), %d computed, owed to %d",
                          (int)id, (int)s->n_tokens, (int)s->cap, (int)e->opts.model.n_ctx, (int)s->table.n_tokens,
                          (int)s->recompute_to);
    if (!s->resident && (s->table.n_pages != 0 || s->table.n_tokens != 0 || s->slot >= 0 || s->recompute_to != 0))
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d is not resident but holds %d pages, %d positions, slot %d, "
                          "owed to %d", (int)id, (int)s->table.n_pages, (int)s->table.n_tokens, (int)s->slot,
                          (int)s->recompute_to);
    if (s->state == RLX_SEQ_RUNNING && !s->resident)
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d is RUNNING but not resident", (int)id);
    if (s->state == RLX_SEQ_WAITING && s->resident)
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d is WAITING but resident", (int)id);
    if (s->state == RLX_SEQ_FAILED && s->resident)
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d FAILED but still resident", (int)id);
    if (e->recurrent && s->resident && (s->slot < 0 || s->slot >= e->n_seq_slots))
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d is resident without a state slot (%d of %d)", (int)id,
                          (int)s->slot, (int)e->n_seq_slots);
    if (e->recurrent && s->slot >= 0 && e->slot_seq[s->slot] != id)
        return rlx_errorf(RLX_ERR_INTERNAL, "sequence %d says it holds state slot %d, which the slot table gives to %d",
                          (int)id, (int)s->slot, (int)e->slot_seq[s->slot]);
    return NULL;
}

/* Every state slot held by the one sequence that says it holds it. */
static rlx_status check_slots(const rlx_engine *e) {
    for (int32_t i = 0; i < e->n_seq_slots; i++) {
        int32_t id = e->slot_seq[i];
        if (id == -1) continue;
        const eng_seq *s = rlx_engine_seq_get(e, id);
        if (!s || s->slot != i)
            return rlx_errorf(RLX_ERR_INTERNAL, "state slot %d is given to sequence %d, which %s", (int)i, (int)id,
                              s ? "holds another" : "does not exist");
    }
    return NULL;
}

static rlx_status check_ckpts(const rlx_engine *e) {
    for (int32_t i = 0; i < e->n_ckpts; i++) {
        const eng_ckpt *c = &e->ckpts[i];
        RLX_TRY(check_table(e, &c->table, "checkpoint", i));
        if (c->n_tokens < 0 || c->n_tokens > c->cap || (c->n_tokens > 0 && c->table.n_tokens != c->n_tokens) ||
            (c->n_tokens == 0 && (c->table.n_pages != 0 || c->owner != -1)))
            return rlx_errorf(RLX_ERR_INTERNAL, "checkpoint %d: %d tokens (cap %d), a table of %d positions and %d "
                              "pages, owner %d", (int)i, (int)c->n_tokens, (int)c->cap, (int)c->table.n_tokens,
                              (int)c->table.n_pages, (int)c->owner);
        if (c->owner != -1 && !rlx_engine_seq_get(e, c->owner))
            return rlx_errorf(RLX_ERR_INTERNAL, "checkpoint %d belongs to sequence %d, which does not exist", (int)i,
                              (int)c->owner);
    }
    return NULL;
}

/* Each page's count in the pool == the tables (sequences and checkpoints) that hold it; the
 * pages in use are those held. */
static rlx_status check_refs(const rlx_engine *e) {
    int32_t *refs = calloc((size_t)e->n_pages, sizeof *refs);
    if (!refs) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "engine check: %d page counts", (int)e->n_pages);
    rlx_status st = NULL;
    for (int32_t i = 0; !st && i < e->n_seqs; i++)
        if (e->seqs[i].used && !count_table(e, &e->seqs[i].table, refs))
            st = rlx_errorf(RLX_ERR_INTERNAL, "sequence %d holds a page outside the pool of %d", (int)i, (int)e->n_pages);
    for (int32_t i = 0; !st && i < e->n_ckpts; i++)
        if (!count_table(e, &e->ckpts[i].table, refs))
            st = rlx_errorf(RLX_ERR_INTERNAL, "checkpoint %d holds a page outside the pool of %d", (int)i,
                            (int)e->n_pages);
    int32_t held = 0;
    for (int32_t p = 0; !st && p < e->n_pages; p++) {
        int32_t rc = rlx_kv_pages_refcount(e->pages, p);
        if (rc != refs[p])
            st = rlx_errorf(RLX_ERR_INTERNAL, "page %d: count %d in the pool, held by %d tables", (int)p, (int)rc,
                            (int)refs[p]);
        held += refs[p] > 0;
    }
    rlx_kv_pages_stats ps = rlx_kv_pages_get_stats(e->pages);
    if (!st && ps.used != held)
        st = rlx_errorf(RLX_ERR_INTERNAL, "the pool counts %d pages in use, the tables hold %d", (int)ps.used, (int)held);
    free(refs);
    return st;
}

/* What rlx_engine_get_stats reports against what the books hold. */
static rlx_status check_stats(const rlx_engine *e) {
    rlx_engine_stats st = rlx_engine_get_stats(e);
    rlx_kv_pages_stats ps = rlx_kv_pages_get_stats(e->pages);
    if (st.n_pages != e->n_pages || st.pages_used + st.pages_cached + ps.free != e->n_pages)
        return rlx_errorf(RLX_ERR_INTERNAL, "stats: %d pages used + %d cached + %d free, a pool of %d (stats say %d)",
                          (int)st.pages_used, (int)st.pages_cached, (int)ps.free, (int)e->n_pages, (int)st.n_pages);
    int32_t held = 0;
    for (int32_t i = 0; i < e->n_ckpts; i++) held += e->ckpts[i].n_tokens > 0;
    if (st.checkpoints_held != held || held > st.state_ckpt_slots || st.state_ckpt_slots != e->n_ckpts ||
        st.state_seq_slots != e->n_seq_slots)
        return rlx_errorf(RLX_ERR_INTERNAL, "stats: %d checkpoints held of %d slots (the books: %d of %d), %d sequence "
                          "slots (the books: %d)", (int)st.checkpoints_held, (int)st.state_ckpt_slots, (int)held,
                          (int)e->n_ckpts, (int)st.state_seq_slots, (int)e->n_seq_slots);
    return NULL;
}

rlx_status rlx_engine_check(const rlx_engine *e) {
    if (!e) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "engine check: engine is NULL");
    RLX_TRY(rlx_kv_pages_check(e->pages));
    for (int32_t i = 0; i < e->n_seqs; i++)
        if (e->seqs[i].used) RLX_TRY(check_seq(e, i));
    if (e->recurrent) {
        RLX_TRY(check_slots(e));
        RLX_TRY(check_ckpts(e));
    }
    RLX_TRY(check_refs(e));
    return check_stats(e);
}
