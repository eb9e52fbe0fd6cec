/* The JSON bodies of OpenAI's API: chat.completion, text_completion, their streamed chunks,
 * usage, and errors (https://platform.openai.com/docs/api-reference). */
#include <stdio.h>
#include <time.h>

#include "server/server_internal.h"

void rlx_srv_new_id(rlx_server *s, rlx_srv_kind kind, char *buf, size_t size) {
    uint64_t n = atomic_fetch_add(&s->next_id, 1);
    snprintf(buf, size, "%s-%llx%08llx", kind == RLX_SRV_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)s->created,
             (unsigned long long)n);
}

json_t *rlx_srv_usage_json(const rlx_srv_job *j) {
    return json_pack("{s:I, s:I, s:I, s:{s:I}}", "prompt_tokens", (json_int_t)j->n_ids, "completion_tokens",
                     (json_int_t)j->n_generated, "total_tokens", (json_int_t)j->n_ids + j->n_generated,
                     "prompt_tokens_details", "cached_tokens", (json_int_t)j->n_cached);
}

/* The text as a JSON string; it is valid UTF-8 by construction (text_out.h), NULs included. */
static json_t *text_json(const char *text, size_t len) {
    json_t *t = json_stringn(text ? text : "", text ? len : 0);
    return t ? t : json_string("\xEF\xBF\xBD"); /* unreachable: text_out made it valid */
}

json_t *rlx_srv_completion_json(const rlx_server *s, const rlx_srv_job *j, const char *id, int64_t created) {
    const char *reason = rlx_srv_finish_reason(j->finish);
    json_t *choice;
    if (j->req.kind == RLX_SRV_CHAT)
        choice = json_pack("{s:i, s:{s:s, s:o}, s:n, s:s}", "index", 0, "message", "role", "assistant", "content",
                           text_json(j->text.data, j->text.len), "logprobs", "finish_reason", reason);
    else
        choice = json_pack("{s:i, s:o, s:n, s:s}", "index", 0, "text", text_json(j->text.data, j->text.len), "logprobs",
                           "finish_reason", reason);
    return json_pack("{s:s, s:s, s:I, s:s, s:[o], s:o}", "id", id, "object",
                     j->req.kind == RLX_SRV_CHAT ? "chat.completion" : "text_completion", "created",
                     (json_int_t)created, "model", s->model_name, "choices", choice, "usage", rlx_srv_usage_json(j));
}

json_t *rlx_srv_chunk_json(const rlx_server *s, rlx_srv_kind kind, const char *id, int64_t created, const char *text,
                           size_t len, const char *finish_reason, bool role_only) {
    json_t *choice;
    json_t *reason = finish_reason ? json_string(finish_reason) : json_null();
    if (kind == RLX_SRV_CHAT) {
        json_t *delta = role_only ? json_pack("{s:s, s:s}", "role", "assistant", "content", "")
                        : text    ? json_pack("{s:o}", "content", text_json(text, len))
                                  : json_object();
        choice = json_pack("{s:i, s:o, s:n, s:o}", "index", 0, "delta", delta, "logprobs", "finish_reason", reason);
    } else {
        choice = json_pack("{s:i, s:o, s:n, s:o}", "index", 0, "text", text_json(text, len), "logprobs",
                           "finish_reason", reason);
    }
    return json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", id, "object",
                     kind == RLX_SRV_CHAT ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)created,
                     "model", s->model_name, "choices", choice);
}

json_t *rlx_srv_error_json(const rlx_srv_error *e) {
    json_t *msg = json_string(e->message);
    if (!msg) msg = json_string("(the message was not valid UTF-8)");
    json_t *param = e->param[0] ? json_string(e->param) : json_null();
    if (!param) param = json_null();
    return json_pack("{s:{s:o, s:s, s:o, s:o}}", "error", "message", msg, "type", e->type, "param", param, "code",
                     e->code ? json_string(e->code) : json_null());
}
