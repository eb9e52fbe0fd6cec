/* The runner API: open a model (GGUF file or HF directory), get logits, generate tokens.
 * The C form of RLX's LmRunner: family, vocab_size, predict_logits, and a streaming generate whose
 * callback returns false to stop. */
#ifndef RLX_RUNNER_H
#define RLX_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_runner rlx_runner;

/* The element type of the K/V cache (rlx_runner_opts.kv_type). F16 halves the bytes a decode step
 * reads per cached token and doubles the tokens a memory budget holds, at a relative rounding of
 * 2^-11 per stored element (llama.cpp's default); F32 is what the CPU reference computes. */
typedef enum rlx_kv_type {
    RLX_KV_TYPE_DEFAULT = 0, /* F16 on Vulkan (F32 where the device lacks 16-bit storage), F32 on the CPU */
    RLX_KV_TYPE_F32,         /* on any backend: Vulkan's for parity with the CPU reference */
    RLX_KV_TYPE_F16,         /* Vulkan only: the CPU backend refuses it */
} rlx_kv_type;

typedef struct rlx_runner_opts {
    const char *backend;    /* "cpu", "vulkan", or NULL: vulkan when a GPU exists, else cpu */
    const char *device;     /* backend device index or name substring; NULL: default / $RLX_VK_DEVICE */
    int n_threads;          /* CPU threads; 0 = online cores */
    int32_t n_ctx;          /* context length; 0 = min(model's training context, 4096) */
    /* The reference path turns all three off: every step is a full prefill with no cache. */
    bool no_kv_cache;       /* naive path: recompute the whole sequence each step */
    bool no_buckets;        /* cached path with decode graphs of the exact past length */
    bool no_prefill_cache;  /* rebuild and recompile the prefill graph every call */
    /* Plain greedy generation (temperature <= 0, no repeat penalty) decodes up to this many steps
     * on the device, each taking the previous one's argmax, before it reports their tokens: one
     * round trip to the host per chain instead of per token, so tokens reach on_token in bursts.
     * 0: RLX_DECODE_AHEAD_DEFAULT; 1: one step at a time; at most RLX_DECODE_AHEAD_MAX. */
    int32_t decode_ahead;
    rlx_kv_type kv_type;    /* the K/V cache's element type; RLX_KV_TYPE_DEFAULT: see rlx_kv_type */
} rlx_runner_opts;

#define RLX_DECODE_AHEAD_DEFAULT 8
#define RLX_DECODE_AHEAD_MAX 64

/* Zero-initialised opts are the defaults. */
static inline rlx_runner_opts rlx_runner_opts_default(void) {
    rlx_runner_opts o = {0};
    return o;
}

typedef struct rlx_sample_opts {
    float temperature;      /* <= 0: greedy (argmax) */
    int32_t top_k;          /* 0: off */
    float top_p;            /* 1 (or 0): off */
    float min_p;            /* 0: off */
    float repeat_penalty;   /* 1 (or 0): off; llama.cpp semantics (divide positive, multiply negative logits) */
    int32_t repeat_last_n;  /* window of previous tokens the penalties look at; 0: 64 */
    /* OpenAI's penalties, as llama.cpp applies them after the repeat penalty: a token seen c > 0
     * times in the window loses c * frequency_penalty + presence_penalty from its logit. 0: off. */
    float presence_penalty;
    float frequency_penalty;
    uint64_t seed;          /* same seed => same ids */
    bool ignore_eos;        /* keep going past the model's end-of-sequence token */
} rlx_sample_opts;

static inline rlx_sample_opts rlx_sample_opts_greedy(void) {
    rlx_sample_opts o = {0};
    return o;
}

/* Called once per generated token, after it is appended; return false to stop after it (steps
 * decoded ahead past it are forgotten: the state is as if generation had stopped there). */
typedef bool (*rlx_token_callback)(int32_t token, void *user);

rlx_status rlx_runner_open(const char *path, const rlx_runner_opts *opts, rlx_runner **out);
void rlx_runner_close(rlx_runner *r); /* NULL is fine */

const char *rlx_runner_family(const rlx_runner *r);  /* "qwen3", "llama", "gemma3", "qwen3moe", "qwen35", ... */
int32_t rlx_runner_vocab_size(const rlx_runner *r);
int32_t rlx_runner_n_ctx(const rlx_runner *r);
int32_t rlx_runner_decode_ahead(const rlx_runner *r); /* opts.decode_ahead, or the default it stood for */
int32_t rlx_runner_eos_id(const rlx_runner *r);      /* -1 when the model has none */
const char *rlx_runner_backend_name(const rlx_runner *r);
/* The K/V cache's element type as resolved (F32 or F16; F32 on the naive path, which keeps none). */
rlx_kv_type rlx_runner_kv_type(const rlx_runner *r);
bool rlx_runner_supports_multimodal(const rlx_runner *r); /* false for every family so far */
/* Recurrent models (qwen35: Gated DeltaNet layers): the bytes of one sequence's recurrent state
 * over every recurrent layer, which each decode step reads and writes (rlx_engine_stats'
 * state_slot_bytes); 0 for attention-only models and on the naive path. */
int64_t rlx_runner_state_bytes(const rlx_runner *r);

/* Logits of the last position: logits_out holds vocab_size floats. Stateless: does not touch the
 * generation state. */
rlx_status rlx_runner_predict_logits(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out);
/* Logits of every position: logits_out holds n * vocab_size floats, row-major. */
rlx_status rlx_runner_predict_all_logits(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out);

/* Generates up to n_new tokens after the prompt. Stops at n_new, at EOS (unless ignore_eos), or
 * when on_token returns false. out_ids (capacity n_new, may be NULL) receives the generated ids;
 * *n_out (may be NULL) their count. */
rlx_status rlx_runner_generate(rlx_runner *r, const int32_t *ids, int32_t n, int32_t n_new,
                               const rlx_sample_opts *sample, rlx_token_callback on_token, void *user,
                               int32_t *out_ids, int32_t *n_out);

/* Like rlx_runner_generate, but ids is the whole conversation so far and the generation state is
 * reused: the longest common prefix of ids and the tokens the state holds is kept, and only the
 * rest of ids is run through the model (one decode step per token). A chat calls this once per
 * turn with the re-rendered conversation, so history is never prefilled twice. With an empty
 * state it is rlx_runner_generate. */
rlx_status rlx_runner_generate_incremental(rlx_runner *r, const int32_t *ids, int32_t n, int32_t n_new,
                                           const rlx_sample_opts *sample, rlx_token_callback on_token, void *user,
                                           int32_t *out_ids, int32_t *n_out);

/* Speculative-decoding primitives over the runner's generation state (its KV cache):
 * prefill resets the state to `ids` and returns the last position's logits; decode appends one
 * token and returns its logits. */
rlx_status rlx_runner_prefill_get_last_logits(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out);
rlx_status rlx_runner_decode_get_logits(rlx_runner *r, int32_t token, float *logits_out);
/* Speculative verification: appends ids[0..n) after the state's tokens in one offset pass (not n
 * decode steps) and writes the logits of every one (n * vocab_size floats, row-major). Rejected
 * draft tokens are then dropped with rlx_runner_truncate. */
rlx_status rlx_runner_verify(rlx_runner *r, const int32_t *ids, int32_t n, float *logits_out);
/* Keeps the first n tokens of the state (n <= rlx_runner_n_past): free for attention-only models. A
 * recurrent model (qwen35) checkpoints its state before verify's draft rows, so dropping them
 * restores it exactly; other cuts go back to the nearest checkpoint and recompute from there. */
rlx_status rlx_runner_truncate(rlx_runner *r, int32_t n);
/* Tokens currently held by the generation state. */
int32_t rlx_runner_n_past(const rlx_runner *r);

#ifdef __cplusplus
}
#endif
#endif
