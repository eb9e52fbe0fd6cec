/* One engine step (include/rlx/engine.h): admit waiting sequences, give every running one its rows
 * (a prefill chunk, or one decode row), reserve their pages (preempting when the pool is short), run
 * the batch as one program, then commit the K/V, keep logits and sample next tokens.
 *
 * A lone greedy sequence instead decodes ahead on the device (run_chain): up to decode_ahead steps,
 * each taking the previous one's argmax, in one round trip to the host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runners/engine_internal.h"

typedef struct batch {
    int32_t n_rows, n_tables, n_out;
    int32_t max_pos;   /* the largest position + 1 */
    bool host_logits;  /* some output row is sampled on the host or kept */
} batch;

static int32_t ctx_pages(const rlx_engine *e) {
    return (int32_t)(((int64_t)e->opts.model.n_ctx + e->page_size - 1) / e->page_size);
}

static bool plain_greedy(const eng_seq *s) {
    const rlx_sample_opts *o = &s->opts.sample;
    return o->temperature <= 0.0f && (o->repeat_penalty == 0.0f || o->repeat_penalty == 1.0f) &&
           o->presence_penalty == 0.0f && o->frequency_penalty == 0.0f;
}

static int32_t pending(const eng_seq *s) {
    return s->n_tokens - s->table.n_tokens;
}

/* ---- admission and preemption ---- */

static int32_t n_running(const rlx_engine *e) {
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_seqs; i++) n += e->seqs[i].used && e->seqs[i].resident && e->seqs[i].state == RLX_SEQ_RUNNING;
    return n;
}

static eng_seq *next_waiting(rlx_engine *e) {
    eng_seq *best = NULL;
    for (int32_t i = 0; i < e->n_seqs; i++) {
        eng_seq *s = &e->seqs[i];
        if (s->used && s->state == RLX_SEQ_WAITING && (!best || s->ticket < best->ticket)) best = s;
    }
    return best;
}

/* Pages a sequence needs for the tokens it has, and one to start generating in. Its generation
 * budget is not reserved (most stop early, at EOS): growth past the pool preempts instead. */
static int32_t pages_wanted(const rlx_engine *e, const eng_seq *s) {
    int64_t end = (int64_t)s->n_tokens + e->page_size;
    int64_t have = s->table.n_pages;
    int64_t need = (end + e->page_size - 1) / e->page_size - have;
    return need > 0 ? (int32_t)need : 0;
}

/* Waiting sequences become resident, in queue order, while running ones stay under max_parallel and
 * the pool has the pages each needs for its prompt (after its cached prefix); when nothing runs the
 * first is admitted whatever it needs (preemption of idle ones makes the room, or it fails alone). */
static void admit(rlx_engine *e) {
    int32_t running = n_running(e), promised = 0;
    for (eng_seq *s; (s = next_waiting(e));) {
        if (e->opts.max_parallel && running >= e->opts.max_parallel) return;
        /* a recurrent model's sequence holds a state slot while resident */
        if (e->recurrent && !rlx_engine_slot_take(e, s, NULL)) return;
        if (s->table.n_tokens == 0 && s->table.n_pages == 0 && !e->opts.no_prefix_cache) {
            int32_t hit = e->recurrent ? rlx_engine_state_resume(e, s)
                                       : rlx_kv_pages_match_prefix(e->pages, &s->table, s->tokens, s->n_tokens,
                                                                   s->n_tokens - 1);
            if (s->n_cached < 0) s->n_cached = hit;
        }
        int32_t want = pages_wanted(e, s);
        if (running > 0 && promised + want + running > rlx_kv_pages_available(e->pages)) {
            rlx_kv_pages_release(e->pages, &s->table);
            rlx_engine_slot_release(e, s);
            return;
        }
        promised += want;
        s->resident = true;
        s->admitted = ++e->n_admitted;
        s->state = pending(s) > 0 ? RLX_SEQ_RUNNING : RLX_SEQ_IDLE;
        running += s->state == RLX_SEQ_RUNNING;
    }
}

/* Frees a sequence's pages; it is recomputed (from its cached prefix, if any survives) when it is
 * admitted again. Idle and finished ones keep their state and tokens. */
static void preempt(rlx_engine *e, eng_seq *s) {
    rlx_engine_seq_evict(e, s);
    if (s->state == RLX_SEQ_RUNNING) {
        s->state = RLX_SEQ_WAITING;
        s->ticket = -s->admitted; /* before every new arrival, in its original order */
        e->n_preempted++;
    }
}

/* The sequence to preempt for s: an idle resident one first (least recently admitted), else the
 * running one admitted last; never s, never one already in this step's batch. */
static eng_seq *victim_for(rlx_engine *e, const eng_seq *s, const bool *placed) {
    eng_seq *idle = NULL, *run = NULL;
    for (int32_t i = 0; i < e->n_seqs; i++) {
        eng_seq *v = &e->seqs[i];
        if (!v->used || !v->resident || v == s || placed[i] || v->table.n_pages == 0) continue;
        if (v->state != RLX_SEQ_RUNNING) {
            if (!idle || v->admitted < idle->admitted) idle = v;
        } else if (!run || v->admitted > run->admitted) {
            run = v;
        }
    }
    return idle ? idle : run;
}

/* Pages for `take` more rows of s, copying a shared page first. false: s got none this step
 * (preempted itself, or failed); an error is the device's. */
static rlx_status reserve(rlx_engine *e, eng_seq *s, int32_t take, const bool *placed, bool any_placed, bool *ok) {
    *ok = false;
    for (;;) {
        rlx_kv_copy copy[1];
        int32_t n_copies = 0;
        rlx_status st = rlx_kv_pages_reserve(e->pages, &s->table, take, copy, &n_copies);
        if (!st) {
            for (int32_t i = 0; i < n_copies; i++) {
                if (!e->backend->ops->copy_pages)
                    return rlx_errorf(RLX_ERR_UNSUPPORTED, "backend %s cannot copy pages", e->backend->name);
                RLX_TRY(e->backend->ops->copy_pages(e->session, &copy[i].src, &copy[i].dst, 1));
            }
            *ok = true;
            return NULL;
        }
        if (rlx_status_code(st) != RLX_ERR_OUT_OF_MEMORY) {
            rlx_engine_seq_fail(e, s, st);
            return NULL;
        }
        /* pages only a checkpoint holds go first: a checkpoint is a cache */
        if (e->recurrent && rlx_engine_state_drop_ckpt(e)) {
            rlx_status_free(st);
            continue;
        }
        /* a finished or idle sequence's pages are taken even without preemption: it has no work */
        eng_seq *v = victim_for(e, s, placed);
        if (v && (v->state != RLX_SEQ_RUNNING || !e->opts.no_preempt)) {
            rlx_status_free(st);
            preempt(e, v);
            continue;
        }
        if (any_placed && !e->opts.no_preempt) {
            rlx_status_free(st);
            preempt(e, s); /* it waits for the sequences ahead of it */
            return NULL;
        }
        rlx_engine_seq_fail(e, s, rlx_status_annotate(st, "out of KV pages (%d in the pool)", (int)e->n_pages));
        return NULL;
    }
}

/* ---- assembling the batch ---- */

static bool wants_row(const eng_seq *s, int32_t pos) {
    bool last = pos == s->n_tokens - 1;
    if (s->opts.all_logits && pos >= s->logits_from) return true;
    return last && (s->n_gen < s->opts.n_new || s->opts.keep_logits);
}

static void add_rows(rlx_engine *e, batch *b, int32_t id, int32_t take) {
    eng_seq *s = &e->seqs[id];
    int32_t t = b->n_tables++, p0 = s->table.n_tokens;
    e->table_seq[t] = id;
    e->table_slot[t] = s->slot;
    for (int32_t i = 0; i < take; i++) {
        int32_t r = b->n_rows++, pos = p0 + i;
        e->ids[r] = s->tokens[pos];
        e->pos[r] = pos;
        e->row_seq[r] = t;
        e->batch[r] = id;
        if (wants_row(s, pos)) {
            e->out_rows[b->n_out++] = r;
            if (!plain_greedy(s) || s->opts.keep_logits || s->opts.all_logits) b->host_logits = true;
        }
    }
    if (p0 + take > b->max_pos) b->max_pos = p0 + take;
}

/* Running sequences in admission order, each as many rows as it has pending, up to the chunk size
 * and the step's rows. */
static rlx_status assemble(rlx_engine *e, batch *b) {
    bool *placed = calloc((size_t)e->n_seqs, sizeof *placed);
    if (!placed) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "engine: a step over %d sequences", e->n_seqs);
    rlx_status st = NULL;
    for (;;) {
        eng_seq *s = NULL;
        int32_t id = -1;
        for (int32_t i = 0; i < e->n_seqs; i++) {
            eng_seq *v = &e->seqs[i];
            if (v->used && !placed[i] && v->resident && v->state == RLX_SEQ_RUNNING && pending(v) > 0 &&
                (!s || v->admitted < s->admitted)) {
                s = v;
                id = i;
            }
        }
        int32_t room = e->opts.max_rows - b->n_rows;
        if (!s || room == 0) break;
        placed[id] = true;
        int32_t take = pending(s) < e->opts.chunk ? pending(s) : e->opts.chunk;
        if (take > room) take = room;
        bool ok;
        st = reserve(e, s, take, placed, b->n_rows > 0, &ok);
        if (st) break;
        if (ok) add_rows(e, b, id, take);
    }
    free(placed);
    return st;
}

/* ---- running it ---- */

static rlx_status ensure_logits(rlx_engine *e, int32_t rows) {
    if (rows <= e->logits_cap) return NULL;
    size_t n;
    if (__builtin_mul_overflow((size_t)rows, (size_t)e->n_vocab, &n) || __builtin_mul_overflow(n, sizeof(float), &n))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "logits of %d rows overflow the address space", (int)rows);
    float *p = realloc(e->logits, n);
    if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "logits of %d rows (%zu bytes)", (int)rows, n);
    e->logits = p;
    e->logits_cap = rows;
    return NULL;
}

/* The page table rows of the batch's sequences, cols columns each (pool page 0 past a table's end:
 * never read). */
static rlx_status fill_tables(rlx_engine *e, int32_t n_tables, int32_t cols) {
    int64_t need = (int64_t)n_tables * cols;
    if (need > e->table_cap) {
        int32_t *p = realloc(e->table, (size_t)need * sizeof *p);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "page tables of %d sequences x %d pages", (int)n_tables,
                                  (int)cols);
        e->table = p;
        e->table_cap = need;
    }
    for (int32_t t = 0; t < n_tables; t++) {
        const rlx_kv_table *kt = &e->seqs[e->table_seq[t]].table;
        int32_t *row = e->table + (size_t)t * (size_t)cols;
        int32_t n = kt->n_pages < cols ? kt->n_pages : cols;
        memcpy(row, kt->pages, (size_t)n * sizeof *row);
        memset(row + n, 0, (size_t)(cols - n) * sizeof *row);
    }
    return NULL;
}

/* The run of a batch: program buckets, inputs, rows. Output row i of the program is batch row
 * e->out_rows[i]; *gathered false means the program's rows are the batch's rows. */
static rlx_status run_batch(rlx_engine *e, const batch *b, rlx_decode_head head, bool *gathered) {
    int32_t rows = rlx_engine_bucket(e, b->n_rows, e->opts.max_rows);
    int32_t cols = rlx_engine_bucket(e, (b->max_pos + e->page_size - 1) / e->page_size, ctx_pages(e));
    int32_t out = rlx_engine_bucket(e, b->n_out > 0 ? b->n_out : 1, rows);
    *gathered = out < rows;
    if (!*gathered) out = rows;
    for (int32_t r = b->n_rows; r < rows; r++) e->ids[r] = 0;
    for (int32_t i = b->n_out; *gathered && i < out; i++) e->out_rows[i] = -1;
    RLX_TRY(fill_tables(e, b->n_tables, cols));
    RLX_TRY(ensure_logits(e, out));
    rlx_program *prog;
    bool owned;
    /* a decode step of B sequences: each row its own (attention plans for that) */
    bool apart = b->n_tables == b->n_rows && b->n_rows > 1;
    RLX_TRY(rlx_engine_program(e, rows, cols * e->page_size, out, head, apart, &prog, &owned));
    const void *inputs[2] = {e->ids, e->out_rows};
    void *outputs[1] = {head == RLX_DECODE_ARGMAX ? (void *)e->argmax : (void *)e->logits};
    rlx_run_rows rr = {.pos = e->pos, .seq = e->row_seq, .pages = e->table, .n_seqs = b->n_tables, .page_cols = cols,
                       .slots = e->recurrent ? e->table_slot : NULL};
    rlx_run_args args = {.n_tokens = b->n_rows, .inputs = inputs, .outputs = outputs, .rows = &rr};
    rlx_status st = e->backend->ops->run(prog, &args);
    if (owned) e->backend->ops->program_destroy(prog);
    e->n_rows += b->n_rows;
    return st;
}

/* ---- after the run ---- */

static rlx_status check_id(const rlx_engine *e, int32_t id, int32_t pos) {
    if (id >= 0 && id < e->n_vocab) return NULL;
    if (id == -1)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "decode at position %d: the logits hold NaN or infinity (the model's output overflowed)",
                          (int)pos);
    return rlx_errorf(RLX_ERR_DEVICE, "decode at position %d: the argmax %d is outside the vocabulary [0, %d)",
                      (int)pos, (int)id, (int)e->n_vocab);
}

/* A checkpoint the engine makes on its own (where a history is likely to be resumed); one that
 * fails (the device) fails the sequence. */
static void auto_checkpoint(rlx_engine *e, eng_seq *s) {
    if (!e->recurrent) return;
    rlx_status st = rlx_engine_state_checkpoint(e, s, false);
    if (st) rlx_engine_seq_fail(e, s, rlx_status_annotate(st, "checkpoint at %d tokens", (int)s->table.n_tokens));
}

/* A sampled token joins the sequence; the stop rules decide whether it ends there. in_sync: the
 * state slot stands at the sequence's computed position (not past it, as in a chain). */
static void accept_token(rlx_engine *e, eng_seq *s, int32_t tok, bool in_sync) {
    rlx_status st = rlx_engine_seq_push(s, tok);
    if (st) {
        rlx_engine_seq_fail(e, s, st);
        return;
    }
    s->n_gen++;
    bool go_on = s->opts.on_token ? s->opts.on_token(tok, s->opts.user) : true;
    int32_t eos = rlx_engine_eos_id(e);
    if (!go_on) s->finish = RLX_FINISH_CALLBACK;
    else if (!s->opts.sample.ignore_eos && eos >= 0 && tok == eos) s->finish = RLX_FINISH_EOS;
    else if (s->n_gen >= s->opts.n_new || s->n_tokens >= e->opts.model.n_ctx) s->finish = RLX_FINISH_LENGTH;
    if (s->finish != RLX_FINISH_NONE) s->state = RLX_SEQ_DONE;
    /* the end of a turn: the next turn's prompt starts with this history (its last token, never
     * run, aside) */
    if (s->state == RLX_SEQ_DONE && in_sync) auto_checkpoint(e, s);
}

/* Logits of the last row: kept, then sampled when the sequence generates. */
static void finish_row(rlx_engine *e, eng_seq *s, float *logits, int32_t argmax, bool host) {
    if (s->opts.keep_logits && !s->opts.all_logits) {
        rlx_status st = rlx_engine_seq_keep_logits(e, s, logits, 1, false);
        if (st) return rlx_engine_seq_fail(e, s, st);
    }
    if (s->n_gen >= s->opts.n_new) {
        s->state = s->n_gen > 0 ? RLX_SEQ_DONE : RLX_SEQ_IDLE;
        return;
    }
    /* where generation begins (after the assistant header): a chat template that re-renders the
     * answer differently (Qwen3.5 drops its thinking) still resumes here */
    if (s->n_gen == 0) {
        auto_checkpoint(e, s);
        if (s->state == RLX_SEQ_FAILED) return;
    }
    int32_t tok = argmax;
    rlx_status st = host ? rlx_sampler_sample(s->sampler, logits, s->tokens, s->n_tokens, &tok)
                         : check_id(e, argmax, s->n_tokens - 1);
    if (!st && host) st = check_id(e, tok, s->n_tokens - 1);
    if (st) return rlx_engine_seq_fail(e, s, rlx_status_annotate(st, "generating token %d", (int)s->n_gen));
    accept_token(e, s, tok, true);
}

static void after_run(rlx_engine *e, const batch *b, bool gathered, bool host) {
    /* K/V of every batch row is now written: the sequences' tables advance */
    for (int32_t t = 0; t < b->n_tables; t++) {
        eng_seq *s = &e->seqs[e->table_seq[t]];
        int32_t end = 0;
        for (int32_t r = 0; r < b->n_rows; r++)
            if (e->row_seq[r] == t) end = e->pos[r] + 1;
        rlx_status st = rlx_kv_pages_commit(e->pages, &s->table, s->tokens, end);
        if (st) rlx_engine_seq_fail(e, s, st);
    }
    for (int32_t i = 0; i < b->n_out; i++) {
        int32_t r = e->out_rows[i], slot = gathered ? i : r;
        eng_seq *s = &e->seqs[e->batch[r]];
        if (s->state == RLX_SEQ_FAILED) continue;
        float *lg = e->logits + (size_t)slot * (size_t)e->n_vocab;
        bool last = e->pos[r] == s->n_tokens - 1;
        if (s->opts.all_logits && e->pos[r] >= s->logits_from) {
            rlx_status st = rlx_engine_seq_keep_logits(e, s, lg, 1, true);
            if (st) {
                rlx_engine_seq_fail(e, s, st);
                continue;
            }
        }
        if (last) finish_row(e, s, lg, host ? -1 : e->argmax[slot], host);
    }
    for (int32_t t = 0; t < b->n_tables; t++) {
        eng_seq *s = &e->seqs[e->table_seq[t]];
        if (s->state == RLX_SEQ_RUNNING && pending(s) == 0) s->state = s->n_gen > 0 ? RLX_SEQ_DONE : RLX_SEQ_IDLE;
    }
}

/* ---- decoding ahead ---- */

/* The one sequence that may decode ahead: alone, generating, plain greedy, nothing kept. */
static eng_seq *chain_candidate(rlx_engine *e) {
    if (!e->backend->ops->run_chain || e->no_chain || e->opts.exact_buckets || e->opts.no_program_cache) return NULL;
    eng_seq *only = NULL;
    for (int32_t i = 0; i < e->n_seqs; i++) {
        eng_seq *s = &e->seqs[i];
        if (!s->used || (s->state != RLX_SEQ_RUNNING && s->state != RLX_SEQ_WAITING)) continue;
        if (only || !s->resident) return NULL;
        only = s;
    }
    if (!only || pending(only) != 1 || only->n_gen >= only->opts.n_new || !plain_greedy(only) ||
        only->opts.keep_logits || only->opts.all_logits)
        return NULL;
    return only;
}

/* k steps on the device; the tokens are then taken one by one, and a stop forgets the steps decoded
 * past it (their positions are released). */
static rlx_status step_chain(rlx_engine *e, eng_seq *s, bool *done) {
    *done = false;
    int32_t left = s->opts.n_new - s->n_gen, k = s->ahead < left ? s->ahead : left;
    if (k > RLX_RUN_CHAIN_MAX) k = RLX_RUN_CHAIN_MAX;
    int32_t p0 = s->table.n_tokens;
    bool none[1] = {false}, ok;
    bool *placed = e->n_seqs > 1 ? calloc((size_t)e->n_seqs, sizeof *placed) : none;
    if (!placed) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "engine: a step over %d sequences", e->n_seqs);
    rlx_status st = reserve(e, s, k, placed, false, &ok);
    if (placed != none) free(placed);
    if (st || !ok) {
        *done = true;
        return st;
    }
    int32_t cols = rlx_engine_bucket(e, (p0 + k + e->page_size - 1) / e->page_size, ctx_pages(e));
    e->table_seq[0] = (int32_t)(s - e->seqs);
    RLX_TRY(fill_tables(e, 1, cols));
    rlx_program *prog;
    bool owned;
    RLX_TRY(rlx_engine_program(e, 1, cols * e->page_size, 1, RLX_DECODE_ARGMAX, false, &prog, &owned));
    int32_t tok = s->tokens[p0], seq0 = 0, outs[RLX_RUN_CHAIN_MAX], last;
    const void *inputs[1] = {&tok};
    void *outputs[1] = {&last};
    rlx_run_rows rr = {.pos = &p0, .seq = &seq0, .pages = e->table, .n_seqs = 1, .page_cols = cols,
                       .slots = e->recurrent ? &s->slot : NULL};
    rlx_run_args args = {.n_tokens = 1, .inputs = inputs, .outputs = outputs, .rows = &rr};
    st = e->backend->ops->run_chain(prog, &args, k, outs);
    if (st && rlx_status_code(st) == RLX_ERR_UNSUPPORTED) {
        rlx_status_free(st);
        e->no_chain = true;
        rlx_kv_pages_truncate(e->pages, &s->table, p0);
        return NULL; /* the plain step takes it */
    }
    RLX_TRY(st);
    *done = true;
    e->n_rows += k;
    int32_t used = 0;
    while (used < k && s->state == RLX_SEQ_RUNNING) {
        rlx_status bad = check_id(e, outs[used], p0 + used);
        used++;
        if (!bad) bad = rlx_kv_pages_commit(e->pages, &s->table, s->tokens, p0 + used);
        if (bad) {
            rlx_engine_seq_fail(e, s, rlx_status_annotate(bad, "generating token %d", (int)s->n_gen));
            break;
        }
        accept_token(e, s, outs[used - 1], used == k);
    }
    if (s->state != RLX_SEQ_FAILED && used < k && e->recurrent) {
        /* the state ran past the stop: back to a checkpoint, the rest owed */
        rlx_status bad = rlx_engine_state_rewind(e, s, p0 + used);
        if (bad) rlx_engine_seq_fail(e, s, rlx_status_annotate(bad, "after a decode chain"));
    }
    if (s->state != RLX_SEQ_FAILED) rlx_kv_pages_truncate(e->pages, &s->table, p0 + used);
    s->ahead = 2 * s->ahead < e->decode_ahead ? 2 * s->ahead : e->decode_ahead;
    return NULL;
}

/* ---- the step ---- */

bool rlx_engine_busy(const rlx_engine *e) {
    for (int32_t i = 0; i < e->n_seqs; i++)
        if (e->seqs[i].used && (e->seqs[i].state == RLX_SEQ_RUNNING || e->seqs[i].state == RLX_SEQ_WAITING))
            return true;
    return false;
}

rlx_status rlx_engine_step(rlx_engine *e) {
    if (!e) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "engine_step: engine is NULL");
    admit(e);
    e->n_steps++;
    eng_seq *lone = chain_candidate(e);
    if (lone) {
        bool done;
        RLX_TRY(step_chain(e, lone, &done));
        if (done) return NULL;
    }
    batch b = {0};
    RLX_TRY(assemble(e, &b));
    if (b.n_rows == 0) return NULL;
    bool host = b.host_logits, gathered;
    rlx_status st = run_batch(e, &b, host ? RLX_DECODE_LOGITS : RLX_DECODE_ARGMAX, &gathered);
    if (st) {
        /* the rows' K/V may be half written: their positions stay uncomputed, so nothing reads them */
        return rlx_status_annotate(st, "engine step of %d rows over %d sequences", (int)b.n_rows, (int)b.n_tables);
    }
    after_run(e, &b, gathered, host);
    return NULL;
}

rlx_status rlx_engine_run(rlx_engine *e) {
    /* every step computes rows or changes a sequence's state; a few without rows in a row would be
     * a scheduler bug, reported rather than spun on */
    for (int idle = 0; rlx_engine_busy(e);) {
        int64_t rows = e->n_rows, preempted = e->n_preempted;
        RLX_TRY(rlx_engine_step(e));
        idle = e->n_rows == rows && e->n_preempted == preempted ? idle + 1 : 0;
        if (idle > 3) return rlx_errorf(RLX_ERR_INTERNAL, "engine: no sequence makes progress");
    }
    return NULL;
}
