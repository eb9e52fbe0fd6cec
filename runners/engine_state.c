/* The recurrent state of the engine's sequences (include/rlx/engine.h; ir/ops.def, recurrent
 * state): which state slot each resident sequence holds, and the checkpoints.
 *
 * Slots 0 .. n_seq_slots - 1 belong to resident sequences, one each; slot n_seq_slots + i to
 * checkpoint i. A slot holds its sequence's state through table.n_tokens - 1 between steps (a run
 * advances both). A checkpoint is a copy of a slot at position n (the backend's copy_state, on the
 * device) with a fork of the sequence's page table at n, so that the attention layers' K/V of
 * positions [0, n) stay with it, and the n tokens it stands for: a sequence whose tokens start with
 * those can go on from position n. */
#include <stdlib.h>
#include <string.h>

#include "runners/engine_internal.h"

rlx_status rlx_engine_state_init(rlx_engine *e) {
    const rlx_model_config *c = &e->model->config;
    e->n_recurrent = 0;
    for (uint32_t il = 0; il < c->n_layer && il < RLX_MAX_LAYERS; il++) {
        bool rec = c->layer_kind[il] == RLX_LAYER_LINEAR_ATTENTION;
        e->layer_kind[il] = rec ? RLX_STATE_RECURRENT : RLX_STATE_KV;
        e->n_recurrent += rec;
    }
    e->recurrent = e->n_recurrent > 0;
    if (!e->recurrent) return NULL;
    if (!e->family->state_floats)
        return rlx_errorf(RLX_ERR_INTERNAL, "%s: recurrent layers but no state size", e->family->name);
    if (!e->backend->ops->copy_state)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "backend %s keeps no recurrent state yet (no copy_state): the %s model's %d Gated DeltaNet "
                          "layers need it (run it on the cpu backend)",
                          e->backend->name, e->family->name, (int)e->n_recurrent);
    e->state_floats = e->family->state_floats(c);
    e->n_seq_slots = e->opts.max_parallel > 0 ? e->opts.max_parallel : RLX_ENGINE_STATE_SEQS_DEFAULT;
    e->n_ckpts = e->opts.checkpoints > 0 ? e->opts.checkpoints : RLX_ENGINE_CHECKPOINTS_DEFAULT;
    if (e->state_floats < 1 || (int64_t)e->n_seq_slots + e->n_ckpts > INT32_MAX)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %lld state floats per slot, %d sequence slots + %d checkpoints",
                          e->family->name, (long long)e->state_floats, (int)e->n_seq_slots, (int)e->n_ckpts);
    e->slot_seq = malloc((size_t)e->n_seq_slots * sizeof *e->slot_seq);
    e->ckpts = calloc((size_t)e->n_ckpts, sizeof *e->ckpts);
    if (!e->slot_seq || !e->ckpts)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "engine: %d state slots and %d checkpoints", (int)e->n_seq_slots,
                          (int)e->n_ckpts);
    for (int32_t i = 0; i < e->n_seq_slots; i++) e->slot_seq[i] = -1;
    for (int32_t i = 0; i < e->n_ckpts; i++) e->ckpts[i].owner = -1;
    return NULL;
}

static void ckpt_drop(rlx_engine *e, eng_ckpt *c) {
    rlx_kv_pages_release(e->pages, &c->table);
    c->n_tokens = 0;
    c->owner = -1;
}

void rlx_engine_state_free(rlx_engine *e) {
    for (int32_t i = 0; e->ckpts && i < e->n_ckpts; i++) {
        ckpt_drop(e, &e->ckpts[i]);
        free(e->ckpts[i].tokens);
    }
    free(e->ckpts);
    free(e->slot_seq);
    e->ckpts = NULL;
    e->slot_seq = NULL;
}

static int32_t ckpt_slot(const rlx_engine *e, const eng_ckpt *c) {
    return e->n_seq_slots + (int32_t)(c - e->ckpts);
}

static rlx_status copy_slot(rlx_engine *e, int32_t src, int32_t dst) {
    return e->backend->ops->copy_state(e->session, &src, &dst, 1);
}

void rlx_engine_slot_release(rlx_engine *e, eng_seq *s) {
    if (s->slot >= 0 && s->slot < e->n_seq_slots) e->slot_seq[s->slot] = -1;
    s->slot = -1;
}

bool rlx_engine_slot_take(rlx_engine *e, eng_seq *s, const eng_seq *keep) {
    if (s->slot >= 0) return true;
    int32_t id = (int32_t)(s - e->seqs);
    for (int32_t i = 0; i < e->n_seq_slots; i++) {
        if (e->slot_seq[i] < 0) {
            e->slot_seq[i] = id;
            s->slot = i;
            return true;
        }
    }
    /* every slot is held: the resident sequence without work admitted first gives its up (it is
     * recomputed, from a checkpoint where one matches, when it is given tokens again) */
    eng_seq *v = NULL;
    for (int32_t i = 0; i < e->n_seqs; i++) {
        eng_seq *c = &e->seqs[i];
        if (c->used && c->resident && c != s && c != keep && c->slot >= 0 && c->state != RLX_SEQ_RUNNING &&
            (!v || c->admitted < v->admitted))
            v = c;
    }
    if (!v) return false;
    int32_t slot = v->slot;
    rlx_engine_seq_evict(e, v);
    e->slot_seq[slot] = id;
    s->slot = slot;
    return true;
}

/* The checkpoint of the longest history that tokens[0..max_n) starts with, or NULL. */
static eng_ckpt *ckpt_find(rlx_engine *e, const int32_t *tokens, int32_t max_n) {
    eng_ckpt *best = NULL;
    for (int32_t i = 0; i < e->n_ckpts; i++) {
        eng_ckpt *c = &e->ckpts[i];
        if (c->n_tokens < 1 || c->n_tokens > max_n || (best && c->n_tokens <= best->n_tokens)) continue;
        if (memcmp(c->tokens, tokens, (size_t)c->n_tokens * sizeof *tokens) == 0) best = c;
    }
    return best;
}

int32_t rlx_engine_state_resume(rlx_engine *e, eng_seq *s) {
    e->ckpt_queries += s->n_tokens;
    eng_ckpt *c = ckpt_find(e, s->tokens, s->n_tokens - 1);
    if (!c || s->slot < 0 || s->table.n_pages != 0) return 0;
    rlx_status st = rlx_kv_pages_fork(e->pages, &c->table, &s->table);
    if (!st) st = copy_slot(e, ckpt_slot(e, c), s->slot);
    if (st) { /* from position 0 instead: slower, still right */
        rlx_status_free(st);
        rlx_kv_pages_release(e->pages, &s->table);
        return 0;
    }
    c->last_use = ++e->ckpt_tick;
    e->ckpt_hits += c->n_tokens;
    return c->n_tokens;
}

rlx_status rlx_engine_state_rewind(rlx_engine *e, eng_seq *s, int32_t n) {
    eng_ckpt *c = ckpt_find(e, s->tokens, n);
    int32_t to = c ? c->n_tokens : 0;
    if (c) {
        RLX_TRY(copy_slot(e, ckpt_slot(e, c), s->slot));
        c->last_use = ++e->ckpt_tick;
    }
    /* position 0 needs no copy: a sequence's row there starts from the zero state */
    rlx_kv_pages_truncate(e->pages, &s->table, to);
    s->recompute_to = n;
    e->n_rewinds++;
    return NULL;
}

/* Where a new checkpoint goes: the sequence's earlier rollback one, else a free one, else the one
 * used least recently. */
static eng_ckpt *ckpt_place(rlx_engine *e, int32_t owner) {
    eng_ckpt *lru = NULL;
    for (int32_t i = 0; i < e->n_ckpts; i++) {
        eng_ckpt *c = &e->ckpts[i];
        if (owner >= 0 && c->owner == owner) return c;
    }
    for (int32_t i = 0; i < e->n_ckpts; i++) {
        eng_ckpt *c = &e->ckpts[i];
        if (c->n_tokens == 0) return c;
        if (!lru || c->last_use < lru->last_use) lru = c;
    }
    return lru;
}

rlx_status rlx_engine_state_checkpoint(rlx_engine *e, eng_seq *s, bool rollback) {
    int32_t n = s->table.n_tokens, id = (int32_t)(s - e->seqs);
    if (!e->recurrent || !s->resident || s->slot < 0 || n < 1 || s->recompute_to > n || e->n_ckpts < 1) return NULL;
    for (int32_t i = 0; i < e->n_ckpts; i++) { /* this history is kept already */
        eng_ckpt *c = &e->ckpts[i];
        if (c->n_tokens == n && memcmp(c->tokens, s->tokens, (size_t)n * sizeof *s->tokens) == 0) {
            c->last_use = ++e->ckpt_tick;
            return NULL;
        }
    }
    eng_ckpt *c = ckpt_place(e, rollback ? id : -1);
    ckpt_drop(e, c);
    if (n > c->cap) {
        int32_t *t = realloc(c->tokens, (size_t)n * sizeof *t);
        if (!t) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "checkpoint of %d tokens", (int)n);
        c->tokens = t;
        c->cap = n;
    }
    memcpy(c->tokens, s->tokens, (size_t)n * sizeof *s->tokens);
    RLX_TRY(rlx_kv_pages_fork(e->pages, &s->table, &c->table));
    rlx_status st = copy_slot(e, s->slot, ckpt_slot(e, c));
    if (st) {
        ckpt_drop(e, c);
        return st;
    }
    c->n_tokens = n;
    c->owner = rollback ? id : -1;
    c->last_use = ++e->ckpt_tick;
    e->n_checkpoints_made++;
    return NULL;
}

/* Pages of c that only checkpoints hold (c alone, or c and others): dropping every checkpoint that
 * holds one gives it back to the pool. */
static int32_t ckpt_cache_pages(const rlx_engine *e, const eng_ckpt *c) {
    int32_t n = 0;
    for (int32_t k = 0; k < c->table.n_pages; k++) {
        int32_t page = c->table.pages[k], held = 0;
        for (int32_t i = 0; i < e->n_ckpts; i++) {
            const rlx_kv_table *t = &e->ckpts[i].table;
            for (int32_t j = 0; j < t->n_pages; j++) held += t->pages[j] == page;
        }
        n += rlx_kv_pages_refcount(e->pages, page) == held;
    }
    return n;
}

/* The checkpoint used least recently among those holding pages only checkpoints hold: two
 * checkpoints of one history share its pages, so neither holds one alone, yet dropping both
 * frees them (the caller drops again while it is short). */
bool rlx_engine_state_drop_ckpt(rlx_engine *e) {
    eng_ckpt *lru = NULL;
    for (int32_t i = 0; i < e->n_ckpts; i++) {
        eng_ckpt *c = &e->ckpts[i];
        if (c->n_tokens > 0 && (!lru || c->last_use < lru->last_use) && ckpt_cache_pages(e, c) > 0) lru = c;
    }
    if (lru) ckpt_drop(e, lru);
    return lru != NULL;
}

void rlx_engine_state_forget(rlx_engine *e, int32_t id) {
    for (int32_t i = 0; i < e->n_ckpts; i++)
        if (e->ckpts[i].owner == id) ckpt_drop(e, &e->ckpts[i]);
}

int32_t rlx_engine_n_checkpoints(const rlx_engine *e) {
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_ckpts; i++) n += e->ckpts[i].n_tokens > 0;
    return n;
}
