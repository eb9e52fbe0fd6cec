/* libmicrohttpd glue: one thread per connection; the request body gathered (bounded) before the
 * request is handled; the API key checked; the path routed to its handler. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

typedef struct conn_state {
    rlx_srv_buf body;
    bool too_big;
} conn_state;

enum MHD_Result rlx_srv_reply_text(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                                   size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result rlx_srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *body, const char *extra_header,
                                   const char *extra_value) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) return MHD_NO; /* out of memory: drop the connection */
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (extra_header) MHD_add_response_header(r, extra_header, extra_value);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result rlx_srv_reply_error(struct MHD_Connection *c, const rlx_srv_error *e) {
    bool busy = e->status == 503;
    return rlx_srv_reply_json(c, (unsigned)e->status, rlx_srv_error_json(e), busy ? "Retry-After" : NULL,
                              busy ? "1" : NULL);
}

bool rlx_srv_client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return true;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* With --api-key: "Authorization: Bearer KEY", compared in time independent of where it differs. */
static bool authorized(const rlx_server *s, struct MHD_Connection *c) {
    if (!s->opts.api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7)) return false;
    const char *got = h + 7, *want = s->opts.api_key;
    size_t n = strlen(got), m = strlen(want);
    unsigned char diff = n != m;
    for (size_t i = 0; i < m; i++) diff |= (unsigned char)(want[i] ^ (i < n ? got[i] : 0));
    return diff == 0;
}

static bool is(const char *url, const char *a, const char *b) { return !strcmp(url, a) || (b && !strcmp(url, b)); }

static enum MHD_Result error(struct MHD_Connection *c, int status, const char *type, const char *code,
                             const char *message) {
    rlx_srv_error e;
    rlx_srv_error_set(&e, status, type, code, NULL, "%s", message);
    return rlx_srv_reply_error(c, &e);
}

enum route { ROUTE_NONE, ROUTE_CHAT, ROUTE_COMPLETIONS, ROUTE_MODELS, ROUTE_TOKENIZE, ROUTE_DETOKENIZE };

static enum MHD_Result route(rlx_server *s, struct MHD_Connection *c, const char *url, const char *method,
                             const conn_state *st) {
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    const char *body = st->body.data ? st->body.data : "";
    size_t len = st->body.len;
    if (is(url, "/health", NULL))
        return get ? rlx_srv_handle_health(s, c) : error(c, 405, "invalid_request_error", NULL, "use GET /health");
    if (is(url, "/metrics", NULL))
        return get ? rlx_srv_handle_metrics(s, c) : error(c, 405, "invalid_request_error", NULL, "use GET /metrics");
    enum route kind = is(url, "/v1/chat/completions", "/chat/completions") ? ROUTE_CHAT
                      : is(url, "/v1/completions", "/completions")         ? ROUTE_COMPLETIONS
                      : is(url, "/v1/models", "/models")                   ? ROUTE_MODELS
                      : is(url, "/tokenize", NULL)                         ? ROUTE_TOKENIZE
                      : is(url, "/detokenize", NULL)                       ? ROUTE_DETOKENIZE
                                                                           : ROUTE_NONE;
    if (!kind) return error(c, 404, "invalid_request_error", "not_found", "no such endpoint");
    if (!authorized(s, c))
        return error(c, 401, "invalid_request_error", "invalid_api_key",
                     "invalid or missing API key (Authorization: Bearer KEY)");
    if ((kind == ROUTE_MODELS && !get) || (kind != ROUTE_MODELS && !post))
        return error(c, 405, "invalid_request_error", NULL, kind == ROUTE_MODELS ? "use GET" : "use POST");
    if (!atomic_load(&s->ready)) return error(c, 503, "unavailable_error", NULL, "Loading model");
    if (atomic_load(&s->draining)) return error(c, 503, "unavailable_error", NULL, "the server is shutting down");
    if (st->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", s->opts.max_body);
        return error(c, 413, "invalid_request_error", "request_too_large", msg);
    }
    switch (kind) {
    case ROUTE_CHAT: return rlx_srv_handle_generate(s, c, RLX_SRV_CHAT, body, len);
    case ROUTE_COMPLETIONS: return rlx_srv_handle_generate(s, c, RLX_SRV_COMPLETION, body, len);
    case ROUTE_MODELS: return rlx_srv_handle_models(s, c);
    case ROUTE_TOKENIZE: return rlx_srv_handle_tokenize(s, c, body, len);
    default: return rlx_srv_handle_detokenize(s, c, body, len); /* ROUTE_DETOKENIZE */
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    rlx_server *s = cls;
    conn_state *st = *con_cls;
    if (!st) {
        if (!(st = calloc(1, sizeof *st))) return MHD_NO;
        *con_cls = st;
        atomic_fetch_add(&s->open_requests, 1); /* until on_completed: the answer is sent, or the client gone */
        /* a declared length over the limit is refused before the body is read */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->opts.max_body) st->too_big = true;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!st->too_big && st->body.len + *upload_size > s->opts.max_body) st->too_big = true;
        if (!st->too_big) {
            rlx_status e = rlx_srv_buf_append(&st->body, upload, *upload_size);
            if (e) {
                rlx_status_free(e);
                return MHD_NO;
            }
        }
        *upload_size = 0; /* consumed (or dropped, past the limit) */
        return MHD_YES;
    }
    return route(s, c, url, method, st);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)c;
    (void)why;
    rlx_server *s = cls;
    conn_state *st = *con_cls;
    if (!st) return;
    atomic_fetch_sub(&s->open_requests, 1);
    rlx_srv_buf_free(&st->body);
    free(st);
    *con_cls = NULL;
}

rlx_status rlx_srv_http_start(rlx_server *s, const struct sockaddr *addr) {
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    if (addr->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)s->opts.http_timeout, MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->opts.max_connections,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, MHD_OPTION_END);
    if (!s->mhd)
        return rlx_errorf(RLX_ERR_IO, "serve: cannot listen on %s port %d (in use, or not an address of this machine?)",
                          s->opts.host, s->opts.port);
    return NULL;
}
