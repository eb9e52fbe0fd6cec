/* The engine's state, shared by its files: engine.c (sequences, the public calls), engine_step.c
 * (the scheduler: admission, batch assembly, preemption, sampling) and engine_programs.c (compiled
 * programs per bucket). */
#ifndef RLX_RUNNERS_ENGINE_INTERNAL_H
#define RLX_RUNNERS_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/backend.h"
#include "loader/format/model.h"
#include "rlx/engine.h"
#include "runners/family.h"
#include "loader/format/model_config.h"
#include "runners/kv_pages.h"
#include "runners/sampling.h"

/* Programs kept at once (LRU beyond). The ladder of buckets bounds how many distinct ones a run can
 * ask for: rows and output rows are powers of two up to max_rows, pages powers of two up to the
 * context's (ARCHITECTURE.md). */
#define RLX_ENGINE_PROGRAMS 48

typedef struct eng_program {
    rlx_program *prog; /* owned; NULL: free slot */
    int32_t rows, kv_cap, out_rows;
    rlx_decode_head head;
    bool apart;
    uint64_t last_use;
} eng_program;

typedef struct eng_seq {
    bool used;
    rlx_seq_state state;
    rlx_finish finish;
    char *error;            /* owned; FAILED only */
    rlx_code error_code;
    rlx_seq_opts opts;
    rlx_sampler *sampler;   /* owned; NULL when n_new is 0 */
    int32_t *tokens;        /* owned: appended and generated ids */
    int32_t n_tokens, cap;
    int32_t n_gen;          /* generated since the last append */
    int32_t n_cached;       /* tokens its first admission found in cached pages (-1: not admitted yet) */
    rlx_kv_table table;     /* table.n_tokens: positions whose K/V are computed */
    bool resident;          /* admitted: may hold pages */
    int64_t admitted;       /* admission order: the latest is preempted first */
    int64_t ticket;         /* WAITING: the queue order (earliest admitted first) */
    int32_t ahead;          /* the next decode-ahead chain's length (doubles up to the runner's) */
    int32_t logits_from;    /* all_logits: the first position of the rows kept */
    float *logits;          /* owned: kept logits, logits_cap rows */
    int32_t logits_rows, logits_cap;
    /* recurrent models (engine_state.c) */
    int32_t slot;           /* its state slot while resident, else -1 */
    int32_t recompute_to;   /* a rewind's end: positions [table.n_tokens, recompute_to) are owed */
} eng_seq;

/* A checkpoint of a recurrent model (engine_state.c): a copy of a sequence's state slot at a
 * position, in state slot n_seq_slots + its index, with the attention layers' pages of the
 * positions before it (shared, copy-on-write) and the tokens it stands for. */
typedef struct eng_ckpt {
    int32_t n_tokens;       /* 0: unused */
    int32_t *tokens;        /* owned, n_tokens (cap allocated) */
    int32_t cap;
    rlx_kv_table table;     /* pages of positions [0, n_tokens) */
    int32_t owner;          /* the sequence of a rollback checkpoint (one each), else -1 */
    uint64_t last_use;
} eng_ckpt;

struct rlx_engine {
    rlx_model *owned_model;       /* owned when opened by path */
    rlx_backend *owned_backend;   /* owned when opened by path */
    const rlx_model *model;       /* borrowed (or the owned one) */
    const rlx_family_ops *family; /* a static table */
    rlx_backend *backend;         /* borrowed (or the owned one) */
    rlx_session *session;         /* owned */
    rlx_kv_pages *pages;          /* owned */
    rlx_engine_opts opts;         /* resolved: chunk, max_rows, n_ctx set */
    int32_t n_vocab, page_size, n_pages, decode_ahead;
    int64_t kv_bytes;
    rlx_kv_type kv_type;          /* resolved: RLX_KV_TYPE_F32 or RLX_KV_TYPE_F16 */
    eng_seq *seqs;                /* owned, n_seqs slots; ids index it */
    int32_t n_seqs;
    int64_t n_admitted;
    eng_program programs[RLX_ENGINE_PROGRAMS];
    uint64_t tick;
    bool no_chain;                /* the backend refused to chain a decode program */
    /* one step's buffers, sized for max_rows rows */
    int32_t *ids, *pos, *row_seq, *out_rows, *argmax;
    int32_t *table;               /* table_cap entries: the step's page tables */
    int64_t table_cap;
    int32_t *batch;               /* per row: the engine sequence id */
    int32_t *table_seq;           /* per table row: the engine sequence id */
    float *logits;                /* logits_cap rows of n_vocab: one step's output rows */
    int32_t logits_cap;
    int64_t n_tickets;
    int64_t n_steps, n_rows, n_preempted, n_compiles;
    /* recurrent state (engine_state.c); all zero for an attention-only model */
    bool recurrent;               /* some layer is recurrent */
    uint8_t layer_kind[RLX_MAX_LAYERS]; /* rlx_state_kind per layer, the session's spec */
    int32_t n_seq_slots;          /* state slots of resident sequences: 0 .. n_seq_slots - 1 */
    int32_t *slot_seq;            /* owned, n_seq_slots: the sequence holding each, -1 free */
    eng_ckpt *ckpts;              /* owned, n_ckpts: slots n_seq_slots + i */
    int32_t n_ckpts;
    int64_t state_floats;         /* one recurrent layer's state per slot */
    int32_t n_recurrent;          /* recurrent layers */
    int32_t *table_slot;          /* per table row of a step: its state slot (max_rows) */
    uint64_t ckpt_tick;
    int64_t ckpt_queries, ckpt_hits, n_rewinds, n_checkpoints_made;
};

/* The sequence of an id, or NULL. */
eng_seq *rlx_engine_seq_get(const rlx_engine *e, int32_t id);
/* FAILED with a message; pages released. Takes ownership of st. */
void rlx_engine_seq_fail(rlx_engine *e, eng_seq *s, rlx_status st);
/* Appends one token to a sequence's list (growing it). */
rlx_status rlx_engine_seq_push(eng_seq *s, int32_t token);
/* Keeps the logits of `rows` rows from src for a sequence. */
rlx_status rlx_engine_seq_keep_logits(const rlx_engine *e, eng_seq *s, const float *src, int32_t rows, bool append);

/* The program for (rows, kv_cap, out_rows, head, apart: every row its own sequence): from the cache
 * or compiled. *owned: the caller
 * destroys it after the run (no_program_cache). */
rlx_status rlx_engine_program(rlx_engine *e, int32_t rows, int32_t kv_cap, int32_t out_rows, rlx_decode_head head,
                              bool apart, rlx_program **out, bool *owned);
void rlx_engine_programs_clear(rlx_engine *e);
int32_t rlx_engine_n_programs(const rlx_engine *e);

/* Buckets: the smallest power of two >= n, at most cap (n <= cap); exact when exact_buckets. */
int32_t rlx_engine_bucket(const rlx_engine *e, int32_t n, int32_t cap);

/* Queues a rewound sequence's owed positions (rlx_engine_seq_n_computed past its table) to be
 * computed by the next steps, with no logits kept and nothing generated; the tokens past them go. */
rlx_status rlx_engine_seq_compute(rlx_engine *e, int32_t id);
/* Positions a sequence's state holds: those whose K/V are computed, and a rewind's owed ones. */
int32_t rlx_engine_seq_n_computed(const rlx_engine *e, int32_t id);
/* A sequence's failure as a status (NULL unless FAILED). */
rlx_status rlx_engine_seq_status(const rlx_engine *e, int32_t id);

/* ---- recurrent state (engine_state.c) ---- */

/* The state spec's recurrent part from the model: layer kinds, slots, floats per slot; the slot and
 * checkpoint tables. RLX_ERR_UNSUPPORTED for a recurrent model on a backend without copy_state. */
rlx_status rlx_engine_state_init(rlx_engine *e);
void rlx_engine_state_free(rlx_engine *e);
/* A state slot for s (resident from here on); a sequence that is not RUNNING and not `keep` is
 * preempted for it when none is free. false: none could be had. */
bool rlx_engine_slot_take(rlx_engine *e, eng_seq *s, const eng_seq *keep);
void rlx_engine_slot_release(rlx_engine *e, eng_seq *s);
/* For a sequence admitted with an empty table: its state and pages from the checkpoint of the
 * longest prefix of its tokens (at most n_tokens - 1, so its last token runs for its logits).
 * Returns the tokens resumed (0: it starts from position 0). */
int32_t rlx_engine_state_resume(rlx_engine *e, eng_seq *s);
/* Keeps positions [0, n) of a resident sequence whose state is past n: its state and table go back
 * to the nearest checkpoint at or before n (or position 0) and positions up to n are owed. */
rlx_status rlx_engine_state_rewind(rlx_engine *e, eng_seq *s, int32_t n);
/* A checkpoint of s at its computed position (a resident sequence whose state is not owed).
 * rollback: the sequence's one rollback checkpoint, replaced by the next. */
rlx_status rlx_engine_state_checkpoint(rlx_engine *e, eng_seq *s, bool rollback);
/* Drops the checkpoint used least recently among those holding pages no sequence holds (alone,
 * or with other checkpoints): true when one was dropped. Called while the pool is short. */
bool rlx_engine_state_drop_ckpt(rlx_engine *e);
/* Drops the rollback checkpoint of sequence id (when it is freed). */
void rlx_engine_state_forget(rlx_engine *e, int32_t id);
int32_t rlx_engine_n_checkpoints(const rlx_engine *e);
/* A resident sequence gives up its pages and state slot (preemption, failure, a slot for another);
 * its tokens stay, to be recomputed when it is admitted again. */
void rlx_engine_seq_evict(rlx_engine *e, eng_seq *s);

/* For tests: walks the books (the pool's own check, every table's pages against the pool's
 * counts, state slots against their sequences, checkpoints within their bound, the stats) and
 * returns RLX_ERR_INTERNAL naming the first disagreement. Call between engine calls. */
rlx_status rlx_engine_check(const rlx_engine *e);

/* The engine over a loaded model and backend (borrowed; they outlive it): the runner's. */
rlx_status rlx_engine_create(const rlx_model *model, const rlx_family_ops *family, rlx_backend *backend,
                             const rlx_engine_opts *opts, int32_t decode_ahead, rlx_engine **out);

#endif
