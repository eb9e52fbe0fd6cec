/* Chat templates: turn a conversation into the prompt text a model was trained on.
 *
 * A chat template is the Jinja program a model ships (GGUF `tokenizer.chat_template`, an HF
 * directory's chat_template.jinja or tokenizer_config.json "chat_template"). rlx interprets the
 * subset of Jinja that real templates use, with the settings Hugging Face transformers renders
 * them with (trim_blocks, lstrip_blocks, loop controls, tojson without HTML escaping,
 * raise_exception, strftime_now). A construct outside the subset is an error naming it, with
 * its line and column; it is never silently skipped.
 *
 *     rlx_chat_template *t;
 *     RLX_TRY(rlx_chat_template_open("model.gguf", &t));
 *     rlx_chat_message msgs[] = {{"system", "Be brief.", NULL}, {"user", "Hi!", NULL}};
 *     rlx_chat_render_opts o = {.add_generation_prompt = true};
 *     char *prompt;
 *     RLX_TRY(rlx_chat_template_render(t, msgs, 2, &o, &prompt, NULL));
 *     ...
 *     free(prompt);
 *     rlx_chat_template_destroy(t);
 *
 * A template is immutable once made: several threads may render with it at once. */
#ifndef RLX_CHAT_TEMPLATE_H
#define RLX_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_chat_template rlx_chat_template;
struct rlx_gguf; /* loader/format/gguf.h */

typedef struct rlx_chat_message {
    const char *role;    /* borrowed, required: "system", "user", "assistant", "tool", ... */
    const char *content; /* borrowed; NULL renders as none (e.g. an assistant turn that only calls tools) */
    /* borrowed, optional: a JSON object of more fields for this message, as the OpenAI-style
     * messages templates read them: "tool_calls", "reasoning_content", "name", "tool_call_id",
     * or "content" as a list of parts when content is NULL. Ignored unless a template reads it. */
    const char *extra_json;
} rlx_chat_message;

typedef struct rlx_chat_render_opts {
    bool add_generation_prompt; /* end with the header of the assistant's next turn */
    const char *bos_token;      /* borrowed; NULL: the one the template's source names, else "" */
    const char *eos_token;      /* borrowed; NULL: likewise */
    /* borrowed, optional: a JSON object of more variables, e.g. {"tools": [...]} or
     * {"enable_thinking": false}. `tools` is none unless set here; other names are undefined. */
    const char *extra_vars_json;
    /* strftime_now() (Llama 3.2's "Today Date") reads the current local time unless fixed_time
     * is set; then it uses now_unix, read as UTC, so renders are reproducible. */
    bool fixed_time;
    int64_t now_unix;
    /* Bounds for untrusted templates; 0 picks the default (RLX_CHAT_TEMPLATE_DEFAULT_*). */
    size_t max_output_bytes;
    size_t max_memory_bytes;
    uint64_t max_steps;
} rlx_chat_render_opts;

/* The bounds a render gets when its options leave them 0. The fuzz target renders with these
 * too, so what it explores is what production runs. Nesting (of values and of evaluation) has
 * a fixed bound of 1,000 levels. */
#define RLX_CHAT_TEMPLATE_DEFAULT_MAX_OUTPUT ((size_t)16 << 20) /* bytes of rendered text */
#define RLX_CHAT_TEMPLATE_DEFAULT_MAX_MEMORY ((size_t)256 << 20) /* bytes of the render's values */
#define RLX_CHAT_TEMPLATE_DEFAULT_MAX_STEPS 50000000ull          /* evaluation steps */

/* Parses template text (len bytes). `origin` names it in error messages ("chat template" when
 * NULL). Errors: RLX_ERR_BAD_FILE (syntax), RLX_ERR_UNSUPPORTED (valid Jinja outside the subset),
 * each message starting "origin:line:col:". */
rlx_status rlx_chat_template_parse(const char *source, size_t len, const char *origin, rlx_chat_template **out);

/* Finds and parses a model's template. path may be
 *  - a GGUF file (its tokenizer.chat_template),
 *  - an HF model directory (chat_template.jinja, else chat_template.json, else the "chat_template"
 *    of tokenizer_config.json),
 *  - a tokenizer_config.json or chat_template.json file, or
 *  - any other file, read as the template text itself (what `--chat-template FILE` passes).
 * bos/eos tokens named by the source (tokenizer_config.json, or the GGUF's token list) are kept
 * as the defaults for rendering. RLX_ERR_NOT_FOUND when the model has no template. */
rlx_status rlx_chat_template_open(const char *path, rlx_chat_template **out);

/* The template of an already opened GGUF; `origin` names it in messages (NULL: "GGUF"). */
rlx_status rlx_chat_template_from_gguf(const struct rlx_gguf *g, const char *origin, rlx_chat_template **out);

void rlx_chat_template_destroy(rlx_chat_template *t); /* NULL is fine */

/* Renders a conversation. *out is a NUL-terminated string the caller frees with free(); *out_len
 * (if not NULL) gets its length. opts may be NULL (all defaults). A template's own checks
 * (raise_exception, e.g. "System role not supported") fail with RLX_ERR_INVALID_ARGUMENT and the
 * template's message; so do bad extra JSON and passed bounds. */
rlx_status rlx_chat_template_render(const rlx_chat_template *t, const rlx_chat_message *messages, size_t n_messages,
                                    const rlx_chat_render_opts *opts, char **out, size_t *out_len);

const char *rlx_chat_template_source(const rlx_chat_template *t); /* the template text; borrowed */
const char *rlx_chat_template_origin(const rlx_chat_template *t); /* where it came from; borrowed */
/* The bos/eos tokens found beside the template ("" when none); borrowed. */
const char *rlx_chat_template_bos(const rlx_chat_template *t);
const char *rlx_chat_template_eos(const rlx_chat_template *t);

#ifdef __cplusplus
}
#endif
#endif
