/* rlx chat: an interactive conversation through the model's chat template. One line of input is
 * one user turn. The KV cache is kept between turns: each turn re-renders the conversation and the
 * runner runs only what its state does not already hold. Ctrl-C stops the current answer, Ctrl-D
 * (end of input) exits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_input.h"
#include "cli_sampling.h"
#include "cli_text.h"
#include "cli_util.h"
#include "commands.h"
#include "rlx/chat_template.h"

#define DEFAULT_N_NEW 512

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx chat [-m PATH] [--system TEXT] [options]\n"
            "\n"
            "Talks with a model through its chat template. Type a message and press Enter; the answer\n"
            "streams to stdout. Ctrl-C stops the answer being generated, Ctrl-D exits. The conversation\n"
            "stays in the KV cache between turns, so earlier turns are not processed again. When it\n"
            "outgrows the context, its oldest turns are dropped (the system message stays) and it goes\n"
            "on; stderr says so, and gives the speed of each answer. With stdin not a terminal, every\n"
            "line read is one turn (no prompt is shown). A line holds at most " RLX_CLI_MAX_TEXT_HELP " (more is an\n"
            "error).\n"
            "\n"
            "options:\n"
            "  -m, --model PATH       a GGUF file or an HF model directory (default: the embedded model,\n"
            "                         which has no chat template: give --chat-template)\n"
            "  --system TEXT          a system message first\n"
            "  --chat-template FILE   use this Jinja template instead of the model's\n"
            "  -n, --n-predict N      tokens per answer at most (default %d)\n"
            "  --backend NAME         cpu or vulkan (default: a Vulkan GPU when the build and the\n"
            "                         machine have one, else cpu)\n"
            "  --device NAME          the Vulkan device, by index or name substring (default:\n"
            "                         $RLX_VK_DEVICE, else the first GPU; see `rlx devices`)\n"
            "  -t, --threads N        CPU threads (default: every online core)\n"
            "  -c, --ctx N            context length (default: min(the model's, 4096))\n"
            "  --kv-type TYPE         f16 or f32: the K/V cache's element type (default f16 on\n"
            "                         Vulkan, f32 where the device lacks 16-bit storage and on the\n"
            "                         CPU, which has f32 only)\n"
            "  --decode-ahead N       under greedy sampling (--temp 0), steps decoded on the device\n"
            "                         before their tokens are shown, 1..64 (default 8)\n"
            "\n" RLX_CLI_SAMPLING_HELP
            "  defaults: --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05, a seed from the clock\n"
            "  (printed on stderr when sampling, i.e. --temp > 0)\n"
            "  -h, --help             this text\n"
            "\n"
            "exit status: 0 at end of input, 1 when the model or a turn fails, 2 on bad arguments.\n",
            DEFAULT_N_NEW);
}

typedef struct {
    rlx_cli_model_args m;
    rlx_sample_opts sample;
    bool seed_given;
    const char *system, *template_file;
    int32_t n_new;
    bool help;
} chat_args;

enum { OPT_SYSTEM = RLX_OPT_COMMAND, OPT_CHAT_TEMPLATE };

static const struct option options[] = {
    RLX_CLI_GENERATION_OPTIONS,
    {"system", required_argument, NULL, OPT_SYSTEM},
    {"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE},
    {"n-predict", required_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    chat_args *a = args;
    bool matched;
    RLX_TRY(rlx_cli_generation_option(p, opt, &a->m, &a->sample, &matched));
    if (opt == RLX_OPT_TOKENS) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--tokens has no meaning in a chat");
    a->seed_given |= opt == RLX_OPT_SEED;
    if (matched) return NULL;
    switch (opt) {
    case OPT_SYSTEM:
        a->system = p->value;
        return NULL;
    case OPT_CHAT_TEMPLATE:
        a->template_file = p->value;
        return NULL;
    case 'n':
        return rlx_cli_parse_i32(p->name, p->value, 1, INT32_MAX, &a->n_new);
    case 'h':
        a->help = true;
        return NULL;
    }
    return rlx_cli_unknown(p); /* a positional argument */
}

static rlx_status parse(int argc, char **argv, chat_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = RLX_CLI_MODEL_SHORTS "n:h", .longs = options,
                        .long_names = "tcn"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    rlx_cli_sampling_finish(&a->sample);
    return NULL;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* The conversation: roles are static strings, contents owned. */
typedef struct {
    rlx_chat_message *msgs;
    size_t n, cap;
} conversation;

static rlx_status conversation_add(conversation *c, const char *role, const char *content, size_t len) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        rlx_chat_message *p = realloc(c->msgs, cap * sizeof *p);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "conversation of %zu messages", c->n);
        c->msgs = p;
        c->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "message of %zu bytes", len);
    memcpy(copy, content, len);
    copy[len] = '\0';
    c->msgs[c->n++] = (rlx_chat_message){.role = role, .content = copy};
    return NULL;
}

static void conversation_free(conversation *c) {
    for (size_t i = 0; i < c->n; i++) free((char *)c->msgs[i].content);
    free(c->msgs);
}

typedef struct {
    const chat_args *a;
    rlx_runner *r;
    rlx_tokenizer *tok;
    rlx_chat_template *tmpl;
    conversation conv;
    rlx_cli_stream out;
} chat;

/* Removes the oldest turn (a user message and the answer after it), never the system message nor
 * the last message (the one being answered); false when nothing is left to drop. */
static bool conversation_drop_oldest(conversation *c) {
    size_t i = 0;
    while (i < c->n && !strcmp(c->msgs[i].role, "system")) i++;
    if (i + 1 >= c->n) return false;
    size_t k = i + 2 < c->n && !strcmp(c->msgs[i + 1].role, "assistant") ? 2 : 1;
    for (size_t j = i; j < i + k; j++) free((char *)c->msgs[j].content);
    memmove(&c->msgs[i], &c->msgs[i + k], (c->n - i - k) * sizeof *c->msgs);
    c->n -= k;
    return true;
}

/* The whole conversation, rendered and tokenized. */
static rlx_status render_ids(chat *c, int32_t **ids, int32_t *n) {
    char *prompt = NULL;
    rlx_chat_render_opts ro = {.add_generation_prompt = true};
    RLX_TRY(rlx_chat_template_render(c->tmpl, c->conv.msgs, c->conv.n, &ro, &prompt, NULL));
    rlx_status s = rlx_cli_tokenize_prompt(c->tok, prompt, true, true, ids, n);
    free(prompt);
    return s;
}

/* Renders the conversation, first dropping its oldest turns while it leaves less room than an
 * answer needs: -n tokens, or half the context when -n is larger, so that a long -n does not
 * empty the history at every turn. *dropped: how many turns went. */
static rlx_status fit_conversation(chat *c, int32_t **ids, int32_t *n, int *dropped) {
    int32_t n_ctx = rlx_runner_n_ctx(c->r);
    int32_t want = c->a->n_new < n_ctx / 2 ? c->a->n_new : n_ctx / 2;
    *dropped = 0;
    RLX_TRY(render_ids(c, ids, n));
    while (n_ctx - *n < (want > 1 ? want : 1) && conversation_drop_oldest(&c->conv)) {
        free(*ids);
        *ids = NULL;
        ++*dropped;
        RLX_TRY(render_ids(c, ids, n));
    }
    if (*dropped)
        fprintf(stderr, "rlx chat: the conversation outgrew the context of %d tokens: dropped its oldest %d turn%s\n",
                n_ctx, *dropped, *dropped > 1 ? "s" : "");
    return NULL;
}

/* One line on stderr per answer: prefill (the tokens the cache did not hold) and decode speed. */
static void report_turn(const rlx_cli_stream *out, int32_t n_prefill, double t_end) {
    if (out->n == 0) return;
    double prefill = out->t_first - out->t_start, decode = t_end - out->t_first;
    fprintf(stderr, "[prefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s]\n", n_prefill,
            prefill > 0 ? n_prefill / prefill : 0.0, out->n - 1, decode > 0 ? (out->n - 1) / decode : 0.0);
}

/* One turn: render the whole conversation, tokenize, and let the runner reuse what its cache holds.
 * After turns were dropped the history no longer starts as the cache does: the shortened
 * conversation is prefilled whole (a reused prefix would run token by token). */
static rlx_status turn(chat *c) {
    int32_t *ids = NULL, n = 0;
    int dropped = 0;
    RLX_TRY(fit_conversation(c, &ids, &n, &dropped));
    int32_t n_ctx = rlx_runner_n_ctx(c->r), room = n_ctx - n;
    if (room < 1) {
        /* even alone the message does not fit: say so, forget it, and keep the session */
        fprintf(stderr, "rlx chat: this message makes a conversation of %d tokens, past the context of %d "
                        "tokens (see --ctx); it is not sent\n", n, n_ctx);
        free(ids);
        free((char *)c->conv.msgs[--c->conv.n].content);
        return NULL;
    }
    int32_t n_new = c->a->n_new < room ? c->a->n_new : room;
    int32_t held = dropped ? 0 : rlx_runner_n_past(c->r);
    int32_t n_prefill = n - (held < n ? held : n - 1);
    interrupted = 0;
    c->out.t_start = rlx_cli_now();
    rlx_status s = (dropped ? rlx_runner_generate : rlx_runner_generate_incremental)(
        c->r, ids, n, n_new, &c->a->sample, rlx_cli_stream_on_token, &c->out, NULL, NULL);
    free(ids);
    if (!s) s = rlx_cli_stream_finish(&c->out);
    double t_end = rlx_cli_now();
    fputc('\n', stdout);
    fflush(stdout);
    if (interrupted) fprintf(stderr, "[stopped]\n");
    if (!s) report_turn(&c->out, n_prefill, t_end);
    if (!s) s = conversation_add(&c->conv, "assistant", c->out.text ? c->out.text : "", c->out.len);
    c->out.len = 0;
    c->out.n = 0;
    return s;
}

static rlx_status chat_loop(chat *c) {
    bool tty = isatty(STDIN_FILENO);
    char *line = NULL;
    size_t cap = 0;
    rlx_status s = NULL;
    for (;;) {
        if (tty) {
            fputs("> ", stderr);
            fflush(stderr);
        }
        size_t len = 0;
        bool got = false;
        if ((s = rlx_cli_read_line(stdin, "standard input", RLX_CLI_MAX_TEXT_BYTES, &line, &cap, &len, &got)))
            break;
        if (!got) break; /* Ctrl-D or end of input */
        while (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        if (len == 0) continue;
        if ((s = conversation_add(&c->conv, "user", line, len)) || (s = turn(c))) break;
    }
    free(line);
    if (tty && !s) fputc('\n', stderr);
    return s;
}

static rlx_status open_chat(chat *c, chat_args *a) {
    if (!a->m.model) RLX_TRY(rlx_cli_default_model(&a->m.model));
    /* the model before its tokenizer: when -m names no model, the loader's error says why */
    RLX_TRY(rlx_cli_open_runner(a->m.model, &a->m.opts, &c->r));
    RLX_TRY(rlx_tokenizer_open(a->m.model, &c->tok));
    rlx_status s = rlx_chat_template_open(a->template_file ? a->template_file : a->m.model, &c->tmpl);
    if (s && rlx_status_code(s) == RLX_ERR_NOT_FOUND && !a->template_file)
        return rlx_status_annotate(s, "'%s' has no chat template (give one with --chat-template FILE)", a->m.model);
    if (s) return s;
    RLX_TRY(rlx_cli_stream_init(&c->out, c->tok, stdout));
    if (a->system) RLX_TRY(conversation_add(&c->conv, "system", a->system, strlen(a->system)));
    return NULL;
}

static rlx_status run(chat_args *a) {
    if (!a->seed_given) {
        a->sample.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        /* greedy (--temp 0) draws nothing: its seed would only be noise */
        if (a->sample.temperature > 0)
            fprintf(stderr, "rlx chat: seed %llu\n", (unsigned long long)a->sample.seed);
    }
    chat c = {.a = a};
    rlx_status s = open_chat(&c, a);
    if (!s) {
        struct sigaction sa = {.sa_handler = on_sigint};
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART; /* a Ctrl-C at the prompt must not end the line being read */
        sigaction(SIGINT, &sa, NULL);
        c.out.interrupt = &interrupted;
        c.out.ignore_eog = a->sample.ignore_eos;
        s = chat_loop(&c);
    }
    rlx_cli_stream_destroy(&c.out);
    conversation_free(&c.conv);
    rlx_runner_close(c.r);
    rlx_chat_template_destroy(c.tmpl);
    rlx_tokenizer_close(c.tok);
    return s;
}

int rlx_cmd_chat(int argc, char **argv) {
    chat_args a = {.m = {.opts = rlx_runner_opts_default()},
                   .sample = {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                              .repeat_last_n = RLX_CLI_REPEAT_LAST_N},
                   .n_new = DEFAULT_N_NEW};
    rlx_status s = parse(argc, argv, &a);
    if (s || a.help) {
        free(a.m.ids);
        if (s) return rlx_cli_fail("chat", s, true);
        usage(stdout);
        return RLX_EXIT_OK;
    }
    s = run(&a);
    free(a.m.ids);
    return s ? rlx_cli_fail("chat", s, false) : RLX_EXIT_OK;
}
