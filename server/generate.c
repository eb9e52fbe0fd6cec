/* POST /v1/chat/completions and /v1/completions: the request parsed, the prompt rendered and
 * tokenized, checked against the context, run as a job; the answer whole, or streamed (stream.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_internal.h"

/* Like the CLI (tools/cli_text.c): BOS when the vocabulary wants one and the text (a rendered
 * template) does not already start with it. */
static rlx_status tokenize(const rlx_tokenizer *tok, const char *text, bool parse_special, int32_t **ids, int32_t *n) {
    unsigned flags = parse_special ? RLX_ENCODE_PARSE_SPECIAL : 0;
    int32_t bos = rlx_tokenizer_special(tok, RLX_SPECIAL_BOS);
    size_t bos_len = 0;
    const char *bos_text = bos != RLX_TOKEN_NULL ? rlx_tokenizer_piece(tok, bos, &bos_len) : NULL;
    bool has_bos = parse_special && bos_text && bos_len && !strncmp(text, bos_text, bos_len);
    if (!has_bos) flags |= RLX_ENCODE_ADD_SPECIAL;
    size_t count = 0;
    RLX_TRY(rlx_tokenizer_encode(tok, text, strlen(text), flags, ids, &count));
    if (count > INT32_MAX) {
        free(*ids);
        *ids = NULL;
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "a prompt of %zu tokens", count);
    }
    *n = (int32_t)count;
    return NULL;
}

/* A status from rendering or tokenizing as the client's error (a template's own check, e.g.
 * "roles must alternate", is the request's fault) or the server's. */
static void status_error(rlx_status st, const char *what, rlx_srv_error *err) {
    bool theirs = rlx_status_code(st) == RLX_ERR_INVALID_ARGUMENT;
    rlx_srv_error_set(err, theirs ? 400 : 500, theirs ? "invalid_request_error" : "server_error", NULL, NULL, "%s: %s",
                      what, rlx_status_message(st));
    rlx_status_free(st);
}

static bool chat_prompt(rlx_server *s, const rlx_srv_request *r, int32_t **ids, int32_t *n, rlx_srv_error *err) {
    rlx_chat_message *msgs = calloc(r->n_messages, sizeof *msgs);
    if (!msgs) {
        rlx_srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return false;
    }
    for (size_t i = 0; i < r->n_messages; i++)
        msgs[i] = (rlx_chat_message){r->messages[i].role, r->messages[i].content, NULL};
    rlx_chat_render_opts ro = {.add_generation_prompt = true};
    char *text = NULL;
    rlx_status st = rlx_chat_template_render(s->tmpl, msgs, r->n_messages, &ro, &text, NULL);
    free(msgs);
    if (st) {
        status_error(st, "the chat template", err);
        return false;
    }
    /* the template writes control tokens (<|im_start|>) as text: they are parsed as tokens */
    st = tokenize(s->tok, text, true, ids, n);
    free(text);
    if (st) {
        status_error(st, "tokenizing the prompt", err);
        return false;
    }
    return true;
}

static bool completion_prompt(rlx_server *s, rlx_srv_request *r, int32_t **ids, int32_t *n, rlx_srv_error *err) {
    if (r->prompt_ids) {
        for (int32_t i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] >= s->vocab) {
                rlx_srv_error_set(err, 400, "invalid_request_error", NULL, "prompt",
                                  "'prompt[%d]' is %d, outside the vocabulary [0, %d)", (int)i, (int)r->prompt_ids[i],
                                  (int)s->vocab);
                return false;
            }
        *ids = r->prompt_ids;
        *n = r->n_prompt_ids;
        r->prompt_ids = NULL;
        r->n_prompt_ids = 0;
        return true;
    }
    /* a text prompt is read as `rlx run -p` reads it: control-token text stays text */
    rlx_status st = tokenize(s->tok, r->prompt, false, ids, n);
    if (st) {
        status_error(st, "tokenizing the prompt", err);
        return false;
    }
    return true;
}

/* The tokens to generate at most, or false when the prompt and max_tokens do not fit. */
static bool fit_context(const rlx_server *s, const rlx_srv_request *r, int32_t n_ids, int32_t *n_new,
                        rlx_srv_error *err) {
    if (n_ids == 0) {
        rlx_srv_error_set(err, 400, "invalid_request_error", NULL, "prompt", "the prompt is empty (no tokens)");
        return false;
    }
    if (n_ids >= s->n_ctx) {
        rlx_srv_error_set(err, 400, "invalid_request_error", "context_length_exceeded",
                          r->kind == RLX_SRV_CHAT ? "messages" : "prompt",
                          "the prompt is %d tokens; this server's context is %d tokens (see --ctx), which leaves "
                          "no room for an answer",
                          (int)n_ids, (int)s->n_ctx);
        return false;
    }
    if (r->max_tokens > s->n_ctx - n_ids) {
        rlx_srv_error_set(err, 400, "invalid_request_error", "context_length_exceeded", "max_tokens",
                          "max_tokens %d after a prompt of %d tokens exceeds the context of %d tokens (see --ctx)",
                          (int)r->max_tokens, (int)n_ids, (int)s->n_ctx);
        return false;
    }
    *n_new = r->max_tokens ? r->max_tokens : s->n_ctx - n_ids;
    return true;
}

/* Waits for the whole answer; a client that goes away meanwhile cancels it. */
static enum MHD_Result answer_whole(rlx_server *s, struct MHD_Connection *c, rlx_srv_job *j, const char *id) {
    for (;;) {
        rlx_srv_job_wait(j, (size_t)-1, 100);
        pthread_mutex_lock(&j->mu);
        rlx_srv_finish f = j->finish;
        pthread_mutex_unlock(&j->mu);
        if (f != RLX_SRV_RUNNING) break;
        if (rlx_srv_client_gone(c)) {
            rlx_srv_loop_cancel(&s->loop, j);
            return MHD_NO;
        }
    }
    if (j->finish == RLX_SRV_FINISH_ERROR || j->finish == RLX_SRV_FINISH_ABORT) {
        rlx_srv_error e;
        bool abort = j->finish == RLX_SRV_FINISH_ABORT;
        rlx_srv_error_set(&e, abort ? 503 : 500, abort ? "unavailable_error" : "server_error", NULL, NULL, "%s",
                          abort ? "the request was cancelled: the server is shutting down" : j->error);
        return rlx_srv_reply_error(c, &e);
    }
    return rlx_srv_reply_json(c, 200, rlx_srv_completion_json(s, j, id, (int64_t)time(NULL)), NULL, NULL);
}

enum MHD_Result rlx_srv_handle_generate(rlx_server *s, struct MHD_Connection *c, rlx_srv_kind kind, const char *body,
                                        size_t len) {
    rlx_srv_request r;
    rlx_srv_error err;
    int32_t *ids = NULL, n_ids = 0, n_new = 0;
    if (!rlx_srv_request_parse(kind, body, len, &r, &err) ||
        !(kind == RLX_SRV_CHAT ? chat_prompt(s, &r, &ids, &n_ids, &err)
                               : completion_prompt(s, &r, &ids, &n_ids, &err)) ||
        !fit_context(s, &r, n_ids, &n_new, &err)) {
        rlx_srv_request_free(&r);
        free(ids);
        return rlx_srv_reply_error(c, &err);
    }
    rlx_srv_job *j = NULL;
    rlx_status st = rlx_srv_job_create(&r, ids, n_ids, n_new, &j);
    if (st) {
        rlx_status_free(st);
        rlx_srv_request_free(&r);
        free(ids);
        return MHD_NO;
    }
    if (!rlx_srv_loop_submit(&s->loop, j)) {
        rlx_srv_job_release(j);
        pthread_mutex_lock(&s->metrics.mu);
        s->metrics.rejected_queue_full++;
        pthread_mutex_unlock(&s->metrics.mu);
        rlx_srv_error_set(&err, 503, "unavailable_error", "server_busy", NULL,
                          "the server is busy: %d requests are running or waiting; retry later",
                          rlx_srv_loop_in_flight(&s->loop));
        return rlx_srv_reply_error(c, &err);
    }
    char id[64];
    rlx_srv_new_id(s, kind, id, sizeof id);
    if (j->req.stream) return rlx_srv_stream_start(s, c, j, id); /* takes the job */
    enum MHD_Result ok = answer_whole(s, c, j, id);
    rlx_srv_job_release(j);
    return ok;
}
