/* Text generation for rlx run and rlx chat: the embedded default model, a runner with its
 * tokenizer, and the streaming printer that turns generated ids into text as they arrive. */
#ifndef RLX_TOOLS_CLI_TEXT_H
#define RLX_TOOLS_CLI_TEXT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rlx/runner.h"
#include "rlx/tokenizer.h"

/* The model `rlx` and `rlx run` / `rlx chat` without -m use: $RLX_DEFAULT_MODEL, else
 * models/stories260K.gguf as linked into the binary (tools/default_model.c). */
rlx_status rlx_cli_default_model(const char **out);

/* rlx_runner_open, with a progress line on stderr once loading (mapping, checking, uploading to
 * the GPU) has taken over a second and stderr is a terminal. The loader reports no fraction done,
 * so the bar moves to and fro beside the elapsed time instead of filling. */
rlx_status rlx_cli_open_runner(const char *path, const rlx_runner_opts *opts, rlx_runner **out);

/* Streams generated ids to `out` as text. Stops (the callback returns false) at an end-of-generation
 * token, which is not printed, or when *interrupt becomes non-zero (Ctrl-C). */
typedef struct rlx_cli_stream {
    const rlx_tokenizer *tok;   /* borrowed */
    rlx_detokenizer *detok;     /* owned */
    FILE *out;                  /* borrowed */
    volatile sig_atomic_t *interrupt; /* borrowed, may be NULL */
    bool ignore_eog;
    int32_t n;                  /* ids received */
    bool stopped_at_eog;
    double t_start, t_first;    /* monotonic seconds: start, first id */
    char *text;                 /* owned: everything printed, NUL-terminated (chat keeps the reply) */
    size_t len, cap;
} rlx_cli_stream;

rlx_status rlx_cli_stream_init(rlx_cli_stream *s, const rlx_tokenizer *tok, FILE *out);
/* The rlx_token_callback; user = the stream. */
bool rlx_cli_stream_on_token(int32_t token, void *user);
/* Flushes what the detokenizer holds back and resets the stream for another reply. */
rlx_status rlx_cli_stream_finish(rlx_cli_stream *s);
void rlx_cli_stream_destroy(rlx_cli_stream *s);
/* "prefill: N tokens in X ms (Y tokens/s)" and "decode: ..." on stderr. */
void rlx_cli_stream_report(const rlx_cli_stream *s, const char *cmd, const rlx_runner *r, int32_t n_prompt,
                           double t_end);

/* Tokenizes a prompt; adds BOS when the vocabulary asks for one and the text does not already
 * start with it (a chat template often writes it). parse_special: control-token text becomes
 * those tokens. *ids is owned by the caller (free()). */
rlx_status rlx_cli_tokenize_prompt(const rlx_tokenizer *tok, const char *text, bool add_bos, bool parse_special,
                                   int32_t **ids, int32_t *n);

#endif
