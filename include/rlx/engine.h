/* The engine: many sequences of one model, stepped together (continuous batching).
 *
 * A sequence is a list of tokens whose K/V the engine computes and keeps in pages of a pool shared
 * by all sequences (sized by a memory budget, not by n_ctx x sequences); sequences whose prompts
 * share a prefix share its pages. Each rlx_engine_step advances every active sequence: a sequence
 * with tokens not yet computed gets a prefill chunk (bounded, so one long prompt never stalls the
 * others' next token), one that is generating gets one decode row; all of them run as one batch
 * through one compiled graph, and each generating sequence then samples its next token with its own
 * options and seed. Sequences join (seq_create + seq_append) and leave (seq_free) between steps.
 *
 * When the pool runs out of pages, the engine preempts the sequence admitted last (frees its pages
 * and recomputes it later: the same final output) or, when a sequence cannot fit even alone,
 * finishes it with an error; the others go on. The engine is not thread-safe: one thread calls it.
 *
 * Recurrent models (qwen35: Gated DeltaNet layers) also keep a fixed-size state per sequence in a
 * state slot on the device: each resident sequence holds one, and checkpoints (copies of a slot at
 * a position, with the attention pages before it) let a sequence go back (truncate: the nearest
 * checkpoint at or before the position, then the tokens after it recomputed) and a new prompt
 * resume a history (the prefix cache of such a model starts only at a checkpointed position).
 * Checkpoints are made where generation begins (after the prompt), where a generation ends, and on
 * request (rlx_engine_seq_checkpoint); ARCHITECTURE.md says what they cost. */
#ifndef RLX_ENGINE_H
#define RLX_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "rlx/runner.h"
#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_engine rlx_engine;

typedef struct rlx_engine_opts {
    rlx_runner_opts model;  /* backend, device, threads, n_ctx (the longest sequence), kv_type; the path options
                               are ignored */
    int64_t kv_memory;      /* bytes of K/V for all sequences; 0: a default (ARCHITECTURE.md) */
    int32_t max_parallel;   /* sequences computed at once; 0: as many as the pages allow */
    int32_t chunk;          /* rows of one prefill chunk; 0: RLX_ENGINE_CHUNK_DEFAULT */
    int32_t max_rows;       /* rows of one step, all sequences together; 0: RLX_ENGINE_ROWS_DEFAULT */
    bool no_preempt;        /* out of pages: fail the sequence that needs them instead of preempting */
    bool no_prefix_cache;   /* never reuse another sequence's pages for a new prompt (benchmarks) */
    bool deterministic;     /* a sequence's results do not depend on the batch it ran in (bit for bit) */
    bool exact_buckets;     /* programs for the exact row and page counts (reference paths) */
    bool no_program_cache;  /* compile every step's program anew (reference paths) */
    /* Recurrent models: checkpoint slots on the device, each state_floats x recurrent layers x 4
     * bytes (rlx_engine_stats.state_slot_bytes); 0: RLX_ENGINE_CHECKPOINTS_DEFAULT. The sequences
     * that hold a state at once are max_parallel, or RLX_ENGINE_STATE_SEQS_DEFAULT when that is 0. */
    int32_t checkpoints;
} rlx_engine_opts;

#define RLX_ENGINE_CHUNK_DEFAULT 256
#define RLX_ENGINE_ROWS_DEFAULT 512
#define RLX_ENGINE_CHECKPOINTS_DEFAULT 16
#define RLX_ENGINE_STATE_SEQS_DEFAULT 16

static inline rlx_engine_opts rlx_engine_opts_default(void) {
    rlx_engine_opts o = {0};
    return o;
}

typedef enum {
    RLX_SEQ_RUNNING = 0, /* has tokens to compute or to generate */
    RLX_SEQ_WAITING,     /* admitted later (max_parallel, or preempted for pages) */
    RLX_SEQ_IDLE,        /* every token computed, nothing to generate: append more, or read its logits */
    RLX_SEQ_DONE,        /* generation ended: see rlx_engine_seq_finish */
    RLX_SEQ_FAILED,      /* rlx_engine_seq_error says why; the other sequences are unaffected */
} rlx_seq_state;

typedef enum {
    RLX_FINISH_NONE = 0,
    RLX_FINISH_LENGTH,   /* n_new tokens generated, or the context is full */
    RLX_FINISH_EOS,      /* the model's end-of-sequence token */
    RLX_FINISH_CALLBACK, /* on_token returned false */
} rlx_finish;

typedef struct rlx_seq_opts {
    rlx_sample_opts sample;      /* each sequence its own; seed included */
    int32_t n_new;               /* tokens to generate after the appended ones; 0: none (prefill only) */
    rlx_token_callback on_token; /* may be NULL; false stops the sequence after this token */
    void *user;
    bool keep_logits;            /* keep the logits of the last computed row (rlx_engine_seq_logits) */
    bool all_logits;             /* keep the logits of every appended row (rlx_engine_seq_logits) */
} rlx_seq_opts;

rlx_status rlx_engine_open(const char *path, const rlx_engine_opts *opts, rlx_engine **out);
/* The kv_memory that holds n_seqs sequences of n_tokens tokens each at once (whole pages, plus the
 * spare page the pool keeps), for the model at path: a caller sizing the pool for a known load (a
 * benchmark) need not know the page size or the K/V layout. Counted in F32 K/V, the larger type,
 * as the backend is not known here: an F16 pool (Vulkan's default) of that budget holds twice the
 * pages. */
rlx_status rlx_engine_kv_memory_for(const char *path, int32_t n_seqs, int32_t n_tokens, int64_t *bytes);
void rlx_engine_close(rlx_engine *e); /* NULL is fine */

/* A new, empty sequence. *id is valid until rlx_engine_seq_free. */
rlx_status rlx_engine_seq_create(rlx_engine *e, const rlx_seq_opts *opts, int32_t *id);
/* Queues tokens to compute after the sequence's tokens (a prompt, a chat turn, draft tokens to
 * verify). The sequence must not be generating (RUNNING with tokens to generate): append to an IDLE,
 * DONE or new one; its generation budget (n_new) starts again from here. */
rlx_status rlx_engine_seq_append(rlx_engine *e, int32_t id, const int32_t *ids, int32_t n);
/* Replaces the generation settings of an IDLE, DONE or new sequence. */
rlx_status rlx_engine_seq_set_opts(rlx_engine *e, int32_t id, const rlx_seq_opts *opts);
/* A new sequence with the same tokens, sharing their pages (copied on the first write). */
rlx_status rlx_engine_seq_fork(rlx_engine *e, int32_t id, int32_t *new_id);
/* Keeps the first n tokens (n <= its length); free for attention-only models. A recurrent model's
 * state goes back to the nearest checkpoint at or before n (or to position 0), and the tokens from
 * there to n are recomputed with the next append; rlx_engine_seq_n_computed counts them as held. */
rlx_status rlx_engine_seq_truncate(rlx_engine *e, int32_t id, int32_t n);
/* Recurrent models: a checkpoint of the sequence's state at its computed position, so that a later
 * truncate or a new prompt with this history resumes there. Idle, done or new sequences only;
 * nothing for an attention-only model or a sequence not holding a state. */
rlx_status rlx_engine_seq_checkpoint(rlx_engine *e, int32_t id);
void rlx_engine_seq_free(rlx_engine *e, int32_t id); /* an unknown id is ignored */

/* One step of every active sequence. Errors that belong to one sequence fail that sequence only
 * (RLX_SEQ_FAILED); an error returned here is the engine's (the device, a program). */
rlx_status rlx_engine_step(rlx_engine *e);
/* Steps until no sequence is RUNNING or WAITING. */
rlx_status rlx_engine_run(rlx_engine *e);
bool rlx_engine_busy(const rlx_engine *e);

rlx_seq_state rlx_engine_seq_state(const rlx_engine *e, int32_t id);
rlx_finish rlx_engine_seq_finish(const rlx_engine *e, int32_t id);
const char *rlx_engine_seq_error(const rlx_engine *e, int32_t id); /* NULL unless FAILED */
/* The sequence's tokens (appended and generated), *n of them; borrowed until the next call. */
const int32_t *rlx_engine_seq_tokens(const rlx_engine *e, int32_t id, int32_t *n);
int32_t rlx_engine_seq_n_generated(const rlx_engine *e, int32_t id);
/* Tokens of its prompt that its first admission found in cached pages (the prefix cache; the rest
 * was computed): an OpenAI server's usage.prompt_tokens_details.cached_tokens. 0 before then. */
int32_t rlx_engine_seq_n_cached(const rlx_engine *e, int32_t id);
/* keep_logits: the last computed row's logits (vocab floats); all_logits: the rows appended last,
 * *n_rows of them. NULL when there are none. Borrowed until the next call. */
const float *rlx_engine_seq_logits(const rlx_engine *e, int32_t id, int32_t *n_rows);

int32_t rlx_engine_vocab_size(const rlx_engine *e);
int32_t rlx_engine_n_ctx(const rlx_engine *e);
int32_t rlx_engine_eos_id(const rlx_engine *e);
const char *rlx_engine_family(const rlx_engine *e);
const char *rlx_engine_backend_name(const rlx_engine *e);
rlx_kv_type rlx_engine_kv_type(const rlx_engine *e); /* as resolved: RLX_KV_TYPE_F32 or RLX_KV_TYPE_F16 */

typedef struct rlx_engine_stats {
    int32_t page_size, n_pages, pages_used, pages_cached;
    int64_t kv_bytes;           /* the pool, all layers, at the resolved K/V type (rlx_engine_kv_type) */
    int64_t prefix_queries, prefix_hits; /* tokens looked up / found in cached pages (or checkpoints) */
    int64_t n_steps, n_rows, n_preempted, n_compiles;
    int32_t n_programs;
    /* recurrent models (0 otherwise): state slots of sequences and of checkpoints, the bytes of one
     * slot over every recurrent layer, checkpoints held and made, rewinds (truncates that went back
     * to a checkpoint) */
    int32_t state_seq_slots, state_ckpt_slots, checkpoints_held;
    int64_t state_slot_bytes, checkpoints_made, n_rewinds;
} rlx_engine_stats;
rlx_engine_stats rlx_engine_get_stats(const rlx_engine *e);

#ifdef __cplusplus
}
#endif
#endif
