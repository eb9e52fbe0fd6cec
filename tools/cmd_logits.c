/* rlx logits: the logits of a token sequence as raw little-endian float32, for validation against
 * reference implementations. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "rlx/runner.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx logits -m PATH --tokens IDS -o OUT.f32 [options]\n"
            "\n"
            "Runs the model over the token ids and writes its logits as raw little-endian float32:\n"
            "the last position ([vocab] floats), or every position with --all ([n][vocab], row-major).\n"
            "\n"
            "options:\n" RLX_CLI_MODEL_HELP
            "  -o, --output FILE    where to write the logits\n"
            "  --all                write every position, not only the last\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 on success, 1 when the model or the run fails, 2 on bad arguments.\n");
}

typedef struct {
    rlx_cli_model_args m;
    const char *output; /* borrowed from argv */
    bool all;
    bool help;
} logits_args;

enum { OPT_ALL = RLX_OPT_COMMAND };

static const struct option options[] = {
    RLX_CLI_RUNNER_OPTIONS,
    RLX_CLI_TOKENS_OPTION,
    {"output", required_argument, NULL, 'o'},
    {"all", no_argument, NULL, OPT_ALL},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    logits_args *a = args;
    bool matched;
    RLX_TRY(rlx_cli_model_option(p, opt, &a->m, &matched));
    if (matched) return NULL;
    switch (opt) {
    case 'o':
        a->output = p->value;
        return NULL;
    case OPT_ALL:
        a->all = true;
        return NULL;
    case 'h':
        a->help = true;
        return NULL;
    }
    return rlx_cli_unknown(p); /* a positional argument */
}

static rlx_status parse(int argc, char **argv, logits_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = RLX_CLI_MODEL_SHORTS "o:h", .longs = options,
                        .long_names = "tc"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    if (a->help) return NULL;
    RLX_TRY(rlx_cli_model_check(&a->m));
    if (!a->output) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -o OUT.f32 (where to write the logits)");
    return NULL;
}

/* Byte by byte, so the file is little-endian whatever the host is. */
static rlx_status write_f32_le(const char *path, const float *v, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return rlx_errorf(RLX_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        ok = fwrite(b, 1, 4, f) == 4;
    }
    ok = (fclose(f) == 0) && ok;
    return ok ? NULL : rlx_errorf(RLX_ERR_IO, "writing %zu floats to '%s' failed", n, path);
}

static rlx_status run(logits_args *a) {
    rlx_runner *r = NULL;
    RLX_TRY(rlx_runner_open(a->m.model, &a->m.opts, &r)); /* its messages name the path */
    rlx_status s = rlx_cli_check_ids(&a->m, r);
    if (s) {
        rlx_runner_close(r);
        return s;
    }
    size_t vocab = (size_t)rlx_runner_vocab_size(r), rows = a->all ? (size_t)a->m.n_ids : 1, n;
    float *logits = NULL;
    if (__builtin_mul_overflow(rows, vocab, &n) || n > SIZE_MAX / sizeof(float) ||
        !(logits = malloc(n * sizeof *logits)))
        s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "cannot allocate %zu x %zu logits", rows, vocab);
    double t0 = rlx_cli_now();
    if (!s && a->all)
        s = rlx_runner_predict_all_logits(r, a->m.ids, a->m.n_ids, logits);
    else if (!s)
        s = rlx_runner_predict_logits(r, a->m.ids, a->m.n_ids, logits);
    double dt = rlx_cli_now() - t0;
    if (!s) s = write_f32_le(a->output, logits, n);
    if (!s)
        fprintf(stderr, "rlx logits: %s on %s: %d tokens in %.2f ms; wrote [%zu][%zu] float32 to %s\n",
                rlx_runner_family(r), rlx_runner_backend_name(r), a->m.n_ids, dt * 1e3, rows, vocab, a->output);
    free(logits);
    rlx_runner_close(r);
    return s;
}

int rlx_cmd_logits(int argc, char **argv) {
    logits_args a = {.m = {.opts = rlx_runner_opts_default()}};
    rlx_status s = parse(argc, argv, &a);
    if (s || a.help) {
        free(a.m.ids);
        if (s) return rlx_cli_fail("logits", s, true);
        usage(stdout);
        return RLX_EXIT_OK;
    }
    s = run(&a);
    free(a.m.ids);
    return s ? rlx_cli_fail("logits", s, a.m.bad_ids) : RLX_EXIT_OK;
}
