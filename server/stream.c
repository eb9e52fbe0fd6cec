/* Server-sent events (stream: true): the first chunk names the role (chat), each later one carries
 * the text generated since the one before, cut only at UTF-8 character boundaries (the job's text
 * is, by construction: text_out.h), the last one the finish_reason; with
 * stream_options.include_usage a chunk with empty choices and the usage follows; then
 * "data: [DONE]". While no text comes (a queue, a long prefill), an SSE comment line
 * (": keep-alive") goes out every third of the connection timeout: libmicrohttpd closes a
 * connection whose writer has been silent for that long. A client that goes away (a failed write, or its end closed
 * while the stream waits for text) cancels the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_internal.h"

typedef struct stream {
    rlx_server *srv;
    struct MHD_Connection *conn;
    rlx_srv_job *job; /* held */
    char id[64];
    int64_t created;
    rlx_srv_buf out; /* events not yet handed to libmicrohttpd */
    size_t out_pos;
    size_t sent;      /* bytes of the job's text already sent */
    double last_out;  /* when bytes last went out (monotonic seconds) */
    double keepalive; /* seconds of silence before a keep-alive comment */
    bool started, done;
} stream;

static bool event(stream *st, json_t *chunk) {
    char *text = chunk ? json_dumps(chunk, JSON_COMPACT) : NULL;
    json_decref(chunk);
    if (!text) return false;
    rlx_status s = rlx_srv_buf_printf(&st->out, "data: %s\n\n", text);
    free(text);
    if (s) rlx_status_free(s);
    return !s;
}

/* The events since the last call (none while nothing new has come). false: out of memory. */
static bool next_events(stream *st) {
    rlx_srv_job *j = st->job;
    rlx_srv_kind kind = j->req.kind;
    pthread_mutex_lock(&j->mu);
    rlx_srv_finish f = j->finish;
    size_t len = j->text.len;
    int32_t n_generated = j->n_generated;
    char *text = NULL;
    if (len > st->sent && !(text = malloc(len - st->sent))) {
        pthread_mutex_unlock(&j->mu);
        return false;
    }
    if (text) memcpy(text, j->text.data + st->sent, len - st->sent);
    pthread_mutex_unlock(&j->mu);
    bool ok = true;
    if (!st->started && kind == RLX_SRV_CHAT)
        ok = event(st, rlx_srv_chunk_json(st->srv, kind, st->id, st->created, NULL, 0, NULL, true));
    st->started = true;
    if (ok && text) {
        json_t *chunk = rlx_srv_chunk_json(st->srv, kind, st->id, st->created, text, len - st->sent, NULL, false);
        if (chunk && j->req.continuous_usage)
            json_object_set_new(chunk, "usage",
                                json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)j->n_ids, "completion_tokens",
                                          (json_int_t)n_generated, "total_tokens", (json_int_t)j->n_ids + n_generated));
        ok = event(st, chunk);
    }
    free(text);
    st->sent = len;
    if (!ok || f == RLX_SRV_RUNNING) return ok;
    if (f == RLX_SRV_FINISH_ERROR || f == RLX_SRV_FINISH_ABORT) {
        rlx_srv_error e;
        rlx_srv_error_set(&e, f == RLX_SRV_FINISH_ABORT ? 503 : 500,
                          f == RLX_SRV_FINISH_ABORT ? "unavailable_error" : "server_error", NULL, NULL, "%s",
                          f == RLX_SRV_FINISH_ABORT ? "the request was cancelled: the server is shutting down"
                                                    : j->error);
        ok = event(st, rlx_srv_error_json(&e));
    } else {
        ok =
            event(st, rlx_srv_chunk_json(st->srv, kind, st->id, st->created, NULL, 0, rlx_srv_finish_reason(f), false));
        if (ok && j->req.include_usage) {
            json_t *u = json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", st->id, "object",
                                  kind == RLX_SRV_CHAT ? "chat.completion.chunk" : "text_completion", "created",
                                  (json_int_t)st->created, "model", st->srv->model_name, "choices", "usage",
                                  rlx_srv_usage_json(j));
            ok = event(st, u);
        }
    }
    if (ok) {
        rlx_status s = rlx_srv_buf_printf(&st->out, "data: [DONE]\n\n");
        ok = !s;
        rlx_status_free(s);
    }
    st->done = true;
    return ok;
}

static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *st = cls;
    for (;;) {
        if (st->out_pos < st->out.len) {
            size_t n = st->out.len - st->out_pos;
            if (n > max) n = max;
            memcpy(buf, st->out.data + st->out_pos, n);
            st->out_pos += n;
            st->last_out = rlx_srv_now();
            return (ssize_t)n;
        }
        st->out.len = st->out_pos = 0;
        if (st->done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!next_events(st)) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->out.len) continue;
        if (rlx_srv_client_gone(st->conn)) return MHD_CONTENT_READER_END_WITH_ERROR; /* free_stream cancels */
        if (rlx_srv_now() - st->last_out >= st->keepalive) {
            rlx_status e = rlx_srv_buf_append(&st->out, ": keep-alive\n\n", 14);
            if (e) {
                rlx_status_free(e);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            continue;
        }
        rlx_srv_job_wait(st->job, st->sent, 100);
    }
}

static void free_stream(void *cls) {
    stream *st = cls;
    pthread_mutex_lock(&st->job->mu);
    bool running = st->job->finish == RLX_SRV_RUNNING;
    pthread_mutex_unlock(&st->job->mu);
    if (running) rlx_srv_loop_cancel(&st->srv->loop, st->job);
    rlx_srv_job_release(st->job);
    rlx_srv_buf_free(&st->out);
    free(st);
}

enum MHD_Result rlx_srv_stream_start(rlx_server *s, struct MHD_Connection *c, rlx_srv_job *job, const char *id) {
    stream *st = calloc(1, sizeof *st);
    if (!st) {
        rlx_srv_loop_cancel(&s->loop, job);
        rlx_srv_job_release(job);
        return MHD_NO;
    }
    *st = (stream){.srv = s,
                   .conn = c,
                   .job = job,
                   .created = (int64_t)time(NULL),
                   .last_out = rlx_srv_now(),
                   .keepalive = s->opts.http_timeout / 3.0};
    snprintf(st->id, sizeof st->id, "%s", id);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 << 10, read_events, st, free_stream);
    if (!r) {
        free_stream(st);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r); /* the connection holds it now; free_stream runs when it is done */
    return ok;
}
