/* rlx generate: continue a prompt of token ids, print the generated ids, and report the prefill
 * and decode speed. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_sampling.h"
#include "cli_util.h"
#include "commands.h"
#include "rlx/runner.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx generate -m PATH --tokens IDS -n N [options]\n"
            "\n"
            "Generates up to N tokens after the prompt and prints their ids on stdout, space-separated\n"
            "on one line, as they come. It is the validation tool: ids in, ids out, with or without\n"
            "--ids (`rlx run` takes and prints text).\n"
            "Generation stops after N tokens, or at the model's end-of-sequence token unless\n"
            "--ignore-eos. Prefill and decode speed go to stderr.\n"
            "\n"
            "options:\n" RLX_CLI_MODEL_HELP
            "  -n, --n-predict N    how many tokens to generate at most (>= 1)\n"
            "  --ids                print token ids (the only output format so far)\n"
            "\n" RLX_CLI_SAMPLING_HELP
            "  defaults: greedy (--temp 0), every filter off, --seed 0\n"
            "\n"
            "generator paths (for validation; the default is the fast one):\n"
            "  --no-cache           no KV cache: recompute the whole sequence every step (the reference)\n"
            "  --no-buckets         decode graphs of the exact past length, not the power-of-two ladder\n"
            "  --no-prefill-cache   rebuild the prefill graph on every call\n" RLX_CLI_DECODE_AHEAD_HELP
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 on success, 1 when the model or the run fails, 2 on bad arguments.\n");
}

typedef struct {
    rlx_cli_model_args m;
    rlx_sample_opts sample;
    int32_t n_new; /* 0 until -n */
    bool help;
} generate_args;

enum { OPT_IDS = RLX_OPT_COMMAND, OPT_NO_CACHE, OPT_NO_BUCKETS, OPT_NO_PREFILL_CACHE };

static const struct option options[] = {
    RLX_CLI_GENERATION_OPTIONS,
    {"n-predict", required_argument, NULL, 'n'},
    {"ids", no_argument, NULL, OPT_IDS},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"no-buckets", no_argument, NULL, OPT_NO_BUCKETS},
    {"no-prefill-cache", no_argument, NULL, OPT_NO_PREFILL_CACHE},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    generate_args *a = args;
    bool matched;
    RLX_TRY(rlx_cli_generation_option(p, opt, &a->m, &a->sample, &matched));
    if (matched) return NULL;
    switch (opt) {
    case 'n':
        return rlx_cli_parse_i32(p->name, p->value, 1, INT32_MAX, &a->n_new);
    case OPT_IDS: /* ids are the only output so far */
        return NULL;
    case OPT_NO_CACHE:
        a->m.opts.no_kv_cache = true;
        return NULL;
    case OPT_NO_BUCKETS:
        a->m.opts.no_buckets = true;
        return NULL;
    case OPT_NO_PREFILL_CACHE:
        a->m.opts.no_prefill_cache = true;
        return NULL;
    case 'h':
        a->help = true;
        return NULL;
    }
    return rlx_cli_unknown(p); /* a positional argument */
}

static rlx_status parse(int argc, char **argv, generate_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = RLX_CLI_MODEL_SHORTS "n:h", .longs = options,
                        .long_names = "tc"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    rlx_cli_sampling_finish(&a->sample);
    if (a->help) return NULL;
    RLX_TRY(rlx_cli_model_check(&a->m));
    if (!a->n_new) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -n N (how many tokens to generate)");
    return NULL;
}

/* The first callback comes once the prompt is processed and the first id sampled: the time up to it
 * is the prefill (time to first token); the rest is decode. */
typedef struct {
    double t_start, t_first;
    int32_t n;
} progress;

static bool on_token(int32_t token, void *user) {
    progress *p = user;
    if (p->n++ == 0) p->t_first = rlx_cli_now();
    printf(p->n == 1 ? "%d" : " %d", token);
    fflush(stdout); /* stream: a reader sees each id as it comes */
    return true;
}

static void report_speed(const rlx_runner *r, const progress *p, int32_t n_prompt, double t_end) {
    double prefill = p->t_first - p->t_start, decode = t_end - p->t_first;
    fprintf(stderr, "rlx generate: %s on %s\n", rlx_runner_family(r), rlx_runner_backend_name(r));
    fprintf(stderr, "  prefill: %d tokens in %.2f ms, %.1f tokens/s (time to first token)\n", n_prompt,
            prefill * 1e3, prefill > 0 ? n_prompt / prefill : 0.0);
    if (p->n > 1)
        fprintf(stderr, "  decode:  %d tokens in %.2f ms, %.1f tokens/s\n", p->n - 1, decode * 1e3,
                decode > 0 ? (p->n - 1) / decode : 0.0);
}

static rlx_status run(generate_args *a) {
    rlx_runner *r = NULL;
    RLX_TRY(rlx_runner_open(a->m.model, &a->m.opts, &r)); /* its messages name the path */
    progress p = {.t_start = rlx_cli_now()};
    rlx_status s = rlx_cli_check_ids(&a->m, r);
    if (!s) s = rlx_runner_generate(r, a->m.ids, a->m.n_ids, a->n_new, &a->sample, on_token, &p, NULL, NULL);
    double t_end = rlx_cli_now();
    if (p.n > 0) {
        printf("\n");
        fflush(stdout);
    }
    if (!s && p.n > 0) report_speed(r, &p, a->m.n_ids, t_end);
    rlx_runner_close(r);
    return s;
}

int rlx_cmd_generate(int argc, char **argv) {
    generate_args a = {.m = {.opts = rlx_runner_opts_default()}, .sample = rlx_sample_opts_greedy()};
    a.sample.repeat_last_n = RLX_CLI_REPEAT_LAST_N;
    rlx_status s = parse(argc, argv, &a);
    if (s || a.help) {
        free(a.m.ids);
        if (s) return rlx_cli_fail("generate", s, true);
        usage(stdout);
        return RLX_EXIT_OK;
    }
    s = run(&a);
    free(a.m.ids);
    return s ? rlx_cli_fail("generate", s, a.m.bad_ids) : RLX_EXIT_OK;
}
