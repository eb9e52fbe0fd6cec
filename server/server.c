/* The server's life cycle: listen, load, serve, drain. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/server_internal.h"

/* The plain fallback for a model without a chat template (the embedded story model): the messages'
 * contents, one after another, a newline between two; no roles, no markers. The model continues
 * the text, so a chat with one user message is the completion of that message (docs/SERVER.md). */
static const char PLAIN_TEMPLATE[] =
    "{%- for m in messages -%}{%- if not loop.first -%}{{ \"\\n\" }}{%- endif -%}{{ m.content }}{%- endfor -%}";

static rlx_status resolve(const char *host, int port, struct sockaddr_storage *out) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--host '%s': %s", host, gai_strerror(rc));
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return NULL;
}

static char *base_name(const char *path) {
    const char *end = path + strlen(path);
    while (end > path && end[-1] == '/') end--;
    const char *start = end;
    while (start > path && start[-1] != '/') start--;
    size_t n = (size_t)(end - start);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, start, n);
        s[n] = '\0';
    }
    return s;
}

rlx_status rlx_server_create(const rlx_server_opts *opts, rlx_server **out) {
    rlx_server *s = calloc(1, sizeof *s);
    if (!s) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "serve: the server's state");
    s->opts = *opts;
    if (!s->opts.host) s->opts.host = "127.0.0.1";
    if (!s->opts.http_timeout) s->opts.http_timeout = 30;
    if (!s->opts.max_body) s->opts.max_body = (size_t)8 << 20;
    if (!s->opts.max_connections) s->opts.max_connections = 1024;
    s->created = (int64_t)time(NULL);
    atomic_init(&s->ready, false);
    atomic_init(&s->draining, false);
    atomic_init(&s->open_requests, 0);
    atomic_init(&s->next_id, 1);
    rlx_srv_metrics_init(&s->metrics);
    s->model_name = opts->model_name ? strdup(opts->model_name) : base_name(opts->model_path);
    rlx_status st = s->model_name ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "serve: the model's name");
    struct sockaddr_storage addr;
    if (!st) st = resolve(s->opts.host, s->opts.port, &addr);
    if (!st) st = rlx_srv_http_start(s, (const struct sockaddr *)&addr);
    if (st) {
        rlx_server_destroy(s);
        return st;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? di->port : s->opts.port;
    bool v6 = addr.ss_family == AF_INET6;
    snprintf(s->url, sizeof s->url, "http://%s%s%s:%d", v6 ? "[" : "", s->opts.host, v6 ? "]" : "", port);
    *out = s;
    return NULL;
}

static rlx_status open_template(rlx_server *s) {
    const char *from = s->opts.chat_template_file ? s->opts.chat_template_file : s->opts.model_path;
    rlx_status st = rlx_chat_template_open(from, &s->tmpl);
    if (st && rlx_status_code(st) == RLX_ERR_NOT_FOUND && !s->opts.chat_template_file) {
        rlx_status_free(st);
        return rlx_chat_template_parse(PLAIN_TEMPLATE, strlen(PLAIN_TEMPLATE), "the plain fallback template", &s->tmpl);
    }
    return st ? rlx_status_annotate(st, "--chat-template") : NULL;
}

rlx_status rlx_server_load(rlx_server *s) {
    RLX_TRY(rlx_engine_open(s->opts.model_path, &s->opts.engine, &s->engine));
    RLX_TRY(rlx_tokenizer_open(s->opts.model_path, &s->tok));
    RLX_TRY(open_template(s));
    s->n_ctx = rlx_engine_n_ctx(s->engine);
    s->vocab = rlx_engine_vocab_size(s->engine);
    int parallel = s->opts.engine.max_parallel > 0 ? s->opts.engine.max_parallel : 16;
    s->loop = (rlx_srv_loop){.engine = s->engine,
                             .tok = s->tok,
                             .metrics = &s->metrics,
                             .max_in_flight = parallel + (s->opts.queue > 0 ? s->opts.queue : 4 * parallel)};
    RLX_TRY(rlx_srv_loop_start(&s->loop));
    atomic_store(&s->ready, true);
    return NULL;
}

const char *rlx_server_url(const rlx_server *s) { return s->url; }

void rlx_server_shutdown(rlx_server *s, double drain_seconds) {
    if (!s || s->shut_down) return;
    s->shut_down = true;
    atomic_store(&s->draining, true);
    if (s->mhd) {
        MHD_socket fd = MHD_quiesce_daemon(s->mhd); /* no new connections */
        if (fd != MHD_INVALID_SOCKET) close(fd);
    }
    double deadline = rlx_srv_now() + drain_seconds;
    rlx_srv_loop_stop(&s->loop, drain_seconds);
    /* every job has finished; let the connections send what is left of their answers (the last
     * events of a stream) before they are closed, within the drain's time and a second more */
    while (atomic_load(&s->open_requests) > 0 && rlx_srv_now() < deadline + 1.0) {
        struct timespec ms10 = {0, 10000000};
        nanosleep(&ms10, NULL);
    }
    if (s->mhd) MHD_stop_daemon(s->mhd); /* close the connections, join their threads */
    s->mhd = NULL;
}

void rlx_server_destroy(rlx_server *s) {
    if (!s) return;
    rlx_server_shutdown(s, 0);
    rlx_chat_template_destroy(s->tmpl);
    rlx_tokenizer_close(s->tok);
    rlx_engine_close(s->engine);
    rlx_srv_metrics_destroy(&s->metrics);
    free(s->model_name);
    free(s);
}
