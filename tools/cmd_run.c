/* rlx run: text in, text out. Prints the prompt, then streams the generated text as it comes. */
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

#define DEFAULT_PROMPT "Once upon a time"
#define DEFAULT_N_NEW 128

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx run [-m PATH] [-p TEXT | -f FILE] [-n N] [options]\n"
            "\n"
            "Prints the prompt, then streams the model's continuation to stdout as tokens arrive. Stops\n"
            "after N tokens, at an end-of-generation token, or when the context is full. Prefill and\n"
            "decode speed go to stderr.\n"
            "Without -m it runs the embedded default model (models/stories260K.gguf); without -p/-f the\n"
            "prompt is \"" DEFAULT_PROMPT "\". `rlx` with no arguments is `rlx run`.\n"
            "\n"
            "options:\n"
            "  -m, --model PATH     a GGUF file or an HF model directory (default: the embedded model)\n"
            "  -p, --prompt TEXT    the prompt (UTF-8; invalid bytes become U+FFFD)\n"
            "  -f, --file FILE      read the prompt from FILE ('-': standard input), at most\n"
            "                       " RLX_CLI_MAX_TEXT_HELP " (more is an error)\n"
            "  --tokens IDS         the prompt as comma-separated token ids instead of text\n"
            "  -n, --n-predict N    tokens to generate at most (default %d)\n"
            "  --special            parse control-token text in the prompt (e.g. <|im_start|>) as tokens\n"
            "  --no-bos             do not add the vocabulary's BOS token\n"
            "  --backend NAME       cpu or vulkan (default: a Vulkan GPU when the build and the machine\n"
            "                       have one, else cpu)\n"
            "  --device NAME        the Vulkan device, by index or name substring (default:\n"
            "                       $RLX_VK_DEVICE, else the first GPU; see `rlx devices`)\n"
            "  -t, --threads N      CPU threads (default: every online core)\n"
            "  -c, --ctx N          context length (default: min(the model's, 4096))\n" RLX_CLI_KV_TYPE_HELP
                RLX_CLI_DECODE_AHEAD_HELP
            "\n" RLX_CLI_SAMPLING_HELP
            "  defaults: --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05, a seed from the clock\n"
            "  (printed on stderr when sampling, i.e. --temp > 0)\n"
            "  -h, --help           this text\n"
            "\n"
            "Ctrl-C stops the generation: the statistics are printed and the exit status is 130 (as\n"
            "llama.cpp); a second Ctrl-C ends rlx at once. On a terminal a newline ends the text; a file\n"
            "or a pipe gets the prompt and the generated text exactly, with nothing added.\n"
            "\n"
            "exit status: 0 on success, 1 when the model or the run fails, 2 on bad arguments, 130 after\n"
            "Ctrl-C.\n",
            DEFAULT_N_NEW);
}

typedef struct {
    rlx_cli_model_args m;
    rlx_sample_opts sample;
    bool seed_given;
    const char *prompt, *prompt_file;
    char *file_text; /* owned: the text of prompt_file */
    const char *text; /* the prompt text: prompt, file_text or the default */
    int32_t n_new;
    bool special, no_bos, help;
} run_args;

enum { OPT_SPECIAL = RLX_OPT_COMMAND, OPT_NO_BOS };

static const struct option options[] = {
    RLX_CLI_GENERATION_OPTIONS,
    {"prompt", required_argument, NULL, 'p'},
    {"file", required_argument, NULL, 'f'},
    {"n-predict", required_argument, NULL, 'n'},
    {"special", no_argument, NULL, OPT_SPECIAL},
    {"no-bos", no_argument, NULL, OPT_NO_BOS},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    run_args *a = args;
    bool matched;
    RLX_TRY(rlx_cli_generation_option(p, opt, &a->m, &a->sample, &matched));
    a->seed_given |= opt == RLX_OPT_SEED;
    if (matched) return NULL;
    switch (opt) {
    case 'p':
        a->prompt = p->value;
        return NULL;
    case 'f':
        a->prompt_file = p->value;
        return NULL;
    case 'n':
        return rlx_cli_parse_i32(p->name, p->value, 1, INT32_MAX, &a->n_new);
    case OPT_SPECIAL:
        a->special = true;
        return NULL;
    case OPT_NO_BOS:
        a->no_bos = true;
        return NULL;
    case 'h':
        a->help = true;
        return NULL;
    }
    return rlx_cli_unknown(p); /* a positional argument */
}

static rlx_status parse(int argc, char **argv, run_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = RLX_CLI_MODEL_SHORTS "p:f:n:h", .longs = options,
                        .long_names = "tcpfn"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    rlx_cli_sampling_finish(&a->sample);
    if (a->prompt && a->prompt_file) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "give -p or -f, not both");
    if ((a->prompt || a->prompt_file) && a->m.ids)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "give a text prompt or --tokens, not both");
    return NULL;
}

/* The prompt as ids, and the text to echo (the decoded ids when the prompt came as --tokens). */
static rlx_status prompt_ids(const run_args *a, const rlx_tokenizer *tok, int32_t **ids, int32_t *n, char **echo) {
    if (a->m.ids) {
        *n = a->m.n_ids;
        *ids = malloc((size_t)*n * sizeof **ids);
        if (!*ids) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "prompt ids");
        memcpy(*ids, a->m.ids, (size_t)*n * sizeof **ids);
        size_t len;
        return rlx_tokenizer_decode(tok, *ids, (size_t)*n, 0, echo, &len);
    }
    if (!(*echo = strdup(a->text))) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "prompt");
    return rlx_cli_tokenize_prompt(tok, *echo, !a->no_bos, a->special, ids, n);
}

/* Set by the first Ctrl-C during generation; the stream stops at the next token. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* Ctrl-C while generating stops it cleanly (the text so far, then the statistics, then exit 130,
 * as llama.cpp's llama-cli); SA_RESETHAND restores the default, so a second Ctrl-C ends the
 * process at once. A SIGINT the caller ignores (a background job of a shell without job control)
 * stays ignored. *old: the action to restore afterwards. */
static void catch_sigint(struct sigaction *old) {
    sigaction(SIGINT, NULL, old);
    if (old->sa_handler == SIG_IGN) return;
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* On a terminal the text ends with a newline, so that the statistics on stderr start a line of
 * their own; a file or a pipe gets the prompt and the generated text exactly. */
static void end_text(const rlx_cli_stream *out, const char *echo) {
    size_t n = strlen(echo);
    char last = out->len ? out->text[out->len - 1] : n ? echo[n - 1] : '\n';
    if (last != '\n' && isatty(STDOUT_FILENO)) fputc('\n', stdout);
    fflush(stdout);
}

/* -n past the context stops where the context is full, as llama.cpp without context shift, rather
 * than refusing to start; said on stderr. */
static rlx_status fit_context(const rlx_runner *r, int32_t n_prompt, int32_t n_new, int32_t *fit) {
    int32_t n_ctx = rlx_runner_n_ctx(r), room = n_ctx - n_prompt;
    if (room < 1)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "the prompt of %d tokens fills the context of %d tokens (see --ctx)",
                          n_prompt, n_ctx);
    *fit = n_new < room ? n_new : room;
    if (*fit < n_new)
        fprintf(stderr, "rlx run: -n %d is past the context of %d tokens: at most %d new tokens (see --ctx)\n", n_new,
                n_ctx, room);
    return NULL;
}

static rlx_status generate_text(const run_args *a, rlx_runner *r, rlx_tokenizer *tok) {
    int32_t *ids = NULL, n = 0;
    char *echo = NULL;
    rlx_status s = prompt_ids(a, tok, &ids, &n, &echo);
    if (!s && n == 0) s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "the prompt is empty: it gives no tokens");
    int32_t n_new = 0;
    if (!s) s = fit_context(r, n, a->n_new, &n_new);
    rlx_cli_stream out;
    if (!s) s = rlx_cli_stream_init(&out, tok, stdout);
    if (s) {
        free(ids);
        free(echo);
        return s;
    }
    fputs(echo, stdout);
    fflush(stdout);
    out.ignore_eog = a->sample.ignore_eos;
    out.interrupt = &interrupted;
    interrupted = 0; /* a command may run twice in one process (tests) */
    struct sigaction old_sigint;
    catch_sigint(&old_sigint);
    out.t_start = rlx_cli_now();
    s = rlx_runner_generate(r, ids, n, n_new, &a->sample, rlx_cli_stream_on_token, &out, NULL, NULL);
    if (!s) s = rlx_cli_stream_finish(&out);
    double t_end = rlx_cli_now();
    sigaction(SIGINT, &old_sigint, NULL);
    end_text(&out, echo);
    if (!s && interrupted) fprintf(stderr, "rlx run: stopped by Ctrl-C after %d tokens\n", out.n);
    if (!s) rlx_cli_stream_report(&out, "run", r, n, t_end);
    rlx_cli_stream_destroy(&out);
    free(ids);
    free(echo);
    return s;
}

static rlx_status run(run_args *a) {
    if (!a->m.model) RLX_TRY(rlx_cli_default_model(&a->m.model));
    if (!a->seed_given) {
        a->sample.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        /* greedy (--temp 0) draws nothing: its seed would only be noise */
        if (a->sample.temperature > 0)
            fprintf(stderr, "rlx run: seed %llu\n", (unsigned long long)a->sample.seed);
    }
    /* the prompt file first: a missing one must not cost a model load */
    size_t len = 0;
    if (a->prompt_file) RLX_TRY(rlx_cli_read_text(a->prompt_file, RLX_CLI_MAX_TEXT_BYTES, &a->file_text, &len));
    a->text = a->file_text ? a->file_text : a->prompt ? a->prompt : DEFAULT_PROMPT;
    /* the model before its tokenizer: when -m names no model, the loader's error says why */
    rlx_runner *r = NULL;
    RLX_TRY(rlx_cli_open_runner(a->m.model, &a->m.opts, &r));
    rlx_tokenizer *tok = NULL;
    rlx_status s = rlx_cli_check_ids(&a->m, r);
    if (!s) s = rlx_tokenizer_open(a->m.model, &tok);
    if (!s) s = generate_text(a, r, tok);
    rlx_runner_close(r);
    rlx_tokenizer_close(tok);
    return s;
}

int rlx_cmd_run(int argc, char **argv) {
    run_args a = {.m = {.opts = rlx_runner_opts_default()},
                  .sample = {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                             .repeat_last_n = RLX_CLI_REPEAT_LAST_N},
                  .n_new = DEFAULT_N_NEW};
    rlx_status s = parse(argc, argv, &a);
    if (s || a.help) {
        free(a.m.ids);
        if (s) return rlx_cli_fail("run", s, true);
        usage(stdout);
        return RLX_EXIT_OK;
    }
    s = run(&a);
    free(a.m.ids);
    free(a.file_text);
    if (s) return rlx_cli_fail("run", s, a.m.bad_ids);
    return interrupted ? RLX_EXIT_INTERRUPTED : RLX_EXIT_OK;
}
