/* An OpenAI request body, parsed and checked into a struct before anything runs.
 *
 * The body of POST /v1/chat/completions or /v1/completions (OpenAI's API reference, as the
 * official clients send it; llama.cpp's top_k, min_p and repeat_penalty besides). Every field the
 * server reads is checked for its type and range here; a field that would change the answer in a
 * way the server does not offer (n > 1, logprobs, tools, echo, ...) is refused by name rather
 * than ignored; fields that do not change the answer (user, metadata, store, ...) are ignored.
 * Nothing here knows the model: the prompt's length against the context is checked once it is
 * tokenized (handlers.c). Any input gives a request or an error, never a crash: fuzz_server_request. */
#ifndef RLX_SERVER_REQUEST_H
#define RLX_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/runner.h"

/* An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}, with its HTTP status. */
typedef struct rlx_srv_error {
    int status;       /* 400, 401, 404, 413, 503, ... */
    const char *type; /* static: "invalid_request_error", "authentication_error", ... */
    const char *code; /* static or NULL: "context_length_exceeded", "invalid_api_key", ... */
    char param[64];   /* the field at fault, "" when none */
    char message[512];
} rlx_srv_error;

void rlx_srv_error_set(rlx_srv_error *e, int status, const char *type, const char *code, const char *param,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

typedef enum { RLX_SRV_CHAT = 1, RLX_SRV_COMPLETION } rlx_srv_kind;

#define RLX_SRV_MAX_STOPS 16
#define RLX_SRV_MAX_STOP_BYTES 256
#define RLX_SRV_MAX_MESSAGES 4096
#define RLX_SRV_MAX_PROMPT_IDS 1048576

typedef struct rlx_srv_message {
    const char *role; /* static: "system", "user", "assistant", "tool" ("developer" reads as "system") */
    char *content;    /* owned; "" for an assistant turn without content */
} rlx_srv_message;

typedef struct rlx_srv_request {
    rlx_srv_kind kind;
    rlx_srv_message *messages; /* owned, n_messages: chat */
    size_t n_messages;
    char *prompt;        /* owned: a completion's text prompt, or NULL */
    int32_t *prompt_ids; /* owned: a completion's prompt as token ids (n_prompt_ids >= 1), or NULL */
    int32_t n_prompt_ids;
    int32_t max_tokens;     /* 0: not given (up to the context) */
    rlx_sample_opts sample; /* OpenAI's defaults where not given: temperature 1, nothing else */
    bool seed_given;
    char *stop[RLX_SRV_MAX_STOPS]; /* owned, n_stop non-empty strings */
    int n_stop;
    bool stream, include_usage;
    bool continuous_usage;     /* stream_options.continuous_usage_stats (vLLM): usage in every chunk */
} rlx_srv_request;

/* Parses body[0, len) as a request of that kind into *out (zeroed first; free it with
 * rlx_srv_request_free either way). false: *err says why (status 400). */
bool rlx_srv_request_parse(rlx_srv_kind kind, const char *body, size_t len, rlx_srv_request *out, rlx_srv_error *err);
void rlx_srv_request_free(rlx_srv_request *r);

#endif
