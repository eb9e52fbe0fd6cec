/* rlx generate: continue a prompt of token ids, print the generated ids, and report the prefill
 * and decode speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool flag(generate_args *a, const char *arg) {
    if (!strcmp(arg, "--ids")) return true; /* ids are the only output so far */
    if (!strcmp(arg, "--no-cache")) return a->m.opts.no_kv_cache = true;
    if (!strcmp(arg, "--no-buckets")) return a->m.opts.no_buckets = true;
    if (!strcmp(arg, "--no-prefill-cache")) return a->m.opts.no_prefill_cache = true;
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) return a->help = true;
    return false;
}

static rlx_status parse(int argc, char **argv, generate_args *a) {
    for (int i = 1; i < argc; i++) {
        bool matched;
        RLX_TRY(rlx_cli_model_option(argc, argv, &i, &a->m, &matched));
        if (matched || flag(a, argv[i])) continue;
        RLX_TRY(rlx_cli_decode_ahead_option(argc, argv, &i, &a->m.opts, &matched));
        if (matched) continue;
        RLX_TRY(rlx_cli_sampling_option(argc, argv, &i, &a->sample, &matched));
        if (matched) continue;
        if (rlx_cli_is(argv[i], "-n", true) || rlx_cli_is(argv[i], "--n-predict", true)) {
            const char *name = argv[i][1] == '-' ? "--n-predict" : "-n", *v;
            int64_t n;
            RLX_TRY(rlx_cli_take_value(argc, argv, &i, name, &v));
            RLX_TRY(rlx_cli_parse_i64(name, v, 1, INT32_MAX, &n));
            a->n_new = (int32_t)n;
            continue;
        }
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown option '%s'", argv[i]);
    }
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

static rlx_status run(const generate_args *a) {
    rlx_runner *r = NULL;
    RLX_TRY(rlx_runner_open(a->m.model, &a->m.opts, &r)); /* its messages name the path */
    progress p = {.t_start = rlx_cli_now()};
    rlx_status s = rlx_runner_generate(r, a->m.ids, a->m.n_ids, a->n_new, &a->sample, on_token, &p, NULL, NULL);
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
    rlx_status s = parse(argc, argv, &a);
    if (s || a.help) {
        free(a.m.ids);
        if (s) return rlx_cli_fail("generate", s, true);
        usage(stdout);
        return RLX_EXIT_OK;
    }
    s = run(&a);
    free(a.m.ids);
    return s ? rlx_cli_fail("generate", s, false) : RLX_EXIT_OK;
}
