/* rlx serve: the OpenAI-compatible server (server/, docs/SERVER.md). This file is the command
 * line: options, the signals that end it, and the server's life cycle. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_text.h"
#include "cli_util.h"
#include "commands.h"
#include "server/server.h"

#define DRAIN_SECONDS 10.0

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx serve [-m PATH] [--host ADDR] [--port N] [--parallel N] [options]\n"
            "\n"
            "Serves a model over HTTP with OpenAI's API: POST /v1/chat/completions and\n"
            "/v1/completions (streamed or not), GET /v1/models; GET /health (503 while loading,\n"
            "then 200), GET /metrics (Prometheus, vLLM's names and rlx:), POST /tokenize and\n"
            "/detokenize (llama-server's shapes). Requests run together on the engine's continuous\n"
            "batching. Prints the URL once the model is loaded. SIGTERM or Ctrl-C stops accepting,\n"
            "lets requests in flight finish for up to 10 s, cancels the rest, and exits 0.\n"
            "docs/SERVER.md describes the endpoints, the defaults and the errors.\n"
            "\n"
            "options:\n"
            "  -m, --model PATH     a GGUF file or an HF model directory (default: the embedded story\n"
            "                       model, served as \"stories260K\")\n"
            "  --host ADDR          the address to bind (default 127.0.0.1: this machine only)\n"
            "  --port N             the TCP port (default 8080; 0: any free port)\n"
            "  --parallel N         requests computed at once (default 16); more wait in a queue\n"
            "  --queue N            requests that may wait (default 4 x --parallel); one more is\n"
            "                       answered 503 with Retry-After\n"
            "  --kv-memory SIZE     bytes of K/V cache for all requests together, e.g. 2G (default:\n"
            "                       the engine's, docs/ARCHITECTURE.md)\n"
            "  -c, --ctx N          the longest sequence (prompt + answer) one request may reach\n"
            "                       (default 0: min(the model's training context, 4096))\n"
            "  --api-key KEY        require \"Authorization: Bearer KEY\" on /v1/*, /tokenize and\n"
            "                       /detokenize (/health and /metrics stay open)\n"
            "  --chat-template FILE a Jinja chat template instead of the model's (a model without one\n"
            "                       gets the plain fallback: the messages' contents, a newline apart)\n"
            "  --alias NAME         the model id /v1/models reports (default: the file's name)\n"
            "  --http-timeout S     seconds a connection may stay idle, partial headers included\n"
            "                       (default 30)\n"
            "  --deterministic      a request's tokens do not depend on the others computed with it\n"
            "                       (bit for bit; slower): same seed, same answer, under any load\n"
            "  --backend NAME       cpu or vulkan (default: a Vulkan GPU when the build and the machine\n"
            "                       have one, else cpu)\n"
            "  --device NAME        the Vulkan device, by index or name substring\n"
            "  -t, --threads N      CPU threads (default 0: every online core)\n" RLX_CLI_KV_TYPE_HELP
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 after SIGTERM or SIGINT, 1 when the model cannot be loaded or the port\n"
            "cannot be bound, 2 on bad arguments.\n");
}

typedef struct {
    rlx_cli_model_args m;
    rlx_server_opts so;
    bool help;
} serve_args;

enum {
    OPT_HOST = RLX_OPT_COMMAND, OPT_PORT, OPT_PARALLEL, OPT_QUEUE, OPT_KV_MEMORY, OPT_API_KEY, OPT_CHAT_TEMPLATE,
    OPT_ALIAS, OPT_HTTP_TIMEOUT, OPT_DETERMINISTIC,
};

static const struct option options[] = {
    RLX_CLI_RUNNER_OPTIONS,
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"queue", required_argument, NULL, OPT_QUEUE},
    {"kv-memory", required_argument, NULL, OPT_KV_MEMORY},
    {"api-key", required_argument, NULL, OPT_API_KEY},
    {"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE},
    {"alias", required_argument, NULL, OPT_ALIAS},
    {"http-timeout", required_argument, NULL, OPT_HTTP_TIMEOUT},
    {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    serve_args *a = args;
    bool matched;
    RLX_TRY(rlx_cli_model_option(p, opt, &a->m, &matched));
    if (matched) return NULL;
    int32_t v = 0;
    switch (opt) {
    case OPT_HOST:
        a->so.host = p->value;
        return NULL;
    case OPT_PORT:
        RLX_TRY(rlx_cli_parse_i32(p->name, p->value, 0, 65535, &v));
        a->so.port = v;
        return NULL;
    case OPT_PARALLEL:
        return rlx_cli_parse_i32(p->name, p->value, 1, 4096, &a->so.engine.max_parallel);
    case OPT_QUEUE:
        RLX_TRY(rlx_cli_parse_i32(p->name, p->value, 1, 1 << 20, &v));
        a->so.queue = v;
        return NULL;
    case OPT_KV_MEMORY:
        return rlx_cli_parse_size(p->name, p->value, 1, INT64_MAX, &a->so.engine.kv_memory);
    case OPT_API_KEY:
        if (!*p->value) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: the key is empty", p->name);
        a->so.api_key = p->value;
        return NULL;
    case OPT_CHAT_TEMPLATE:
        a->so.chat_template_file = p->value;
        return NULL;
    case OPT_ALIAS:
        a->so.model_name = p->value;
        return NULL;
    case OPT_HTTP_TIMEOUT:
        RLX_TRY(rlx_cli_parse_i32(p->name, p->value, 1, 86400, &v));
        a->so.http_timeout = v;
        return NULL;
    case OPT_DETERMINISTIC:
        a->so.engine.deterministic = true;
        return NULL;
    case 'h':
        a->help = true;
        return NULL;
    }
    return rlx_cli_unknown(p);
}

static rlx_status parse(int argc, char **argv, serve_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = RLX_CLI_MODEL_SHORTS "h", .longs = options,
                        .long_names = "tc"};
    a->so.port = 8080;
    return rlx_cli_parse(&p, apply, a);
}

/* Runs until SIGTERM or SIGINT: both are blocked in every thread (the server's threads inherit the
 * mask) and taken here with sigwait, so no handler runs inside the server's locks. */
static rlx_status serve(serve_args *a, const sigset_t *stop) {
    if (!a->m.model) {
        RLX_TRY(rlx_cli_default_model(&a->m.model));
        if (!a->so.model_name) a->so.model_name = "stories260K";
    }
    a->so.model_path = a->m.model;
    a->so.engine.model = a->m.opts;
    rlx_server *s = NULL;
    RLX_TRY(rlx_server_create(&a->so, &s));
    fprintf(stderr, "rlx serve: loading %s\n", a->m.model);
    rlx_status st = rlx_server_load(s);
    if (st) {
        rlx_server_destroy(s);
        return st;
    }
    printf("rlx serve: listening on %s\n", rlx_server_url(s));
    fflush(stdout);
    int sig = 0;
    sigwait(stop, &sig);
    fprintf(stderr, "rlx serve: %s: draining (up to %.0f s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", DRAIN_SECONDS);
    rlx_server_shutdown(s, DRAIN_SECONDS);
    rlx_server_destroy(s);
    fprintf(stderr, "rlx serve: stopped\n");
    return NULL;
}

int rlx_cmd_serve(int argc, char **argv) {
    serve_args a = {0};
    rlx_status s = parse(argc, argv, &a);
    if (s) return rlx_cli_fail("serve", s, true);
    if (a.help) {
        usage(stdout);
        return RLX_EXIT_OK;
    }
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is an error return, not the end of the server */
    s = serve(&a, &stop);
    /* SIGTERM and SIGINT stay blocked to the end: a second one sent while the server drained is
     * pending, and unblocked it would kill the process after its clean stop (exit 143, not 0) */
    (void)old;
    free(a.m.ids);
    return s ? rlx_cli_fail("serve", s, false) : RLX_EXIT_OK;
}
