/* rlx generate: continue prompts of token ids, print the generated ids, and report the speed.
 * One prompt runs through the runner API (ids streamed as they come); several run together through
 * the engine, continuously batched (tools/generate_batch.c). */
#include <stdio.h>
#include <stdlib.h>

#include "cli_input.h"
#include "cli_sampling.h"
#include "cli_util.h"
#include "commands.h"
#include "generate_batch.h"
#include "rlx/engine.h"
#include "rlx/runner.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx generate -m PATH --tokens IDS [--tokens IDS ...] -n N [options]\n"
            "       rlx generate -m PATH --tokens-file FILE -n N [options]\n"
            "\n"
            "Generates up to N tokens after each prompt and prints their ids on stdout, space-separated,\n"
            "one line per prompt. It is the validation tool: ids in, ids out, with or without --ids\n"
            "(`rlx run` takes and prints text).\n"
            "Generation stops after N tokens, or at the model's end-of-sequence token unless\n"
            "--ignore-eos.\n"
            "\n"
            "One prompt: its ids are printed as they come; prefill and decode speed go to stderr.\n"
            "Several prompts (--tokens repeated, --tokens-file, or both, in the order given) are\n"
            "decoded together, continuously batched over one paged KV cache: line k of stdout is\n"
            "prompt k's, printed once it and every prompt before it are done. Each prompt samples\n"
            "with the same options and seed, so it prints what it prints alone. A prompt that fails\n"
            "(e.g. longer than the context) prints an empty line and an error naming it on stderr;\n"
            "the others still run, and the exit status is 1. Prompts, tokens and the aggregate\n"
            "tokens/s go to stderr. The options below marked (batch) also put one prompt on this\n"
            "path.\n"
            "\n"
            "options:\n" RLX_CLI_MODEL_HELP
            "  --tokens-file FILE   prompts, one a line, each comma-separated token ids (\"-\": standard\n"
            "                       input; at most " RLX_CLI_MAX_TEXT_HELP "); a blank or bad line is an error\n"
            "  -n, --n-predict N    how many tokens to generate at most (>= 1)\n"
            "  --ids                print token ids (the only output format so far)\n"
            "  --parallel N         (batch) prompts computed at once, >= 1 (default: all of them;\n"
            "                       fewer when the KV memory runs short)\n"
            "  --chunk N            (batch) prompt tokens one prompt computes per step, >= 1\n"
            "                       (default %d)\n"
            "  --kv-memory SIZE     (batch) bytes of KV cache for all prompts together, with K, M or G\n"
            "                       (powers of 1024), e.g. 512M (default: on a GPU, --parallel full\n"
            "                       contexts within half the free device memory, or that half\n"
            "                       without --parallel; else 4 full contexts, at most 512M); it\n"
            "                       must hold at least one full context\n"
            "  --deterministic      (batch) each prompt's ids do not depend on the others in its batch\n"
            "\n" RLX_CLI_SAMPLING_HELP
            "  defaults: greedy (--temp 0), every filter off, --seed 0\n"
            "\n"
            "generator paths (for validation; the default is the fast one; several prompts then run\n"
            "one after another, not batched):\n"
            "  --no-cache           no KV cache: recompute the whole sequence every step (the reference)\n"
            "  --no-buckets         decode graphs of the exact past length, not the power-of-two ladder\n"
            "  --no-prefill-cache   rebuild the prefill graph on every call\n" RLX_CLI_DECODE_AHEAD_HELP
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 on success, 1 when the model, the run or a prompt fails, 2 on bad arguments.\n",
            RLX_ENGINE_CHUNK_DEFAULT);
}

typedef struct {
    rlx_cli_model_args m;
    rlx_gen_prompts prompts;
    rlx_sample_opts sample;
    int32_t n_new; /* 0 until -n */
    int32_t parallel, chunk;
    int64_t kv_memory;
    bool deterministic;
    bool batch_option, path_option; /* one of the (batch) options / the generator paths was given */
    bool help;
} generate_args;

enum {
    OPT_IDS = RLX_OPT_COMMAND,
    OPT_NO_CACHE,
    OPT_NO_BUCKETS,
    OPT_NO_PREFILL_CACHE,
    OPT_TOKENS_FILE,
    OPT_PARALLEL,
    OPT_CHUNK,
    OPT_KV_MEMORY,
    OPT_DETERMINISTIC,
};

static const struct option options[] = {
    RLX_CLI_GENERATION_OPTIONS,
    {"n-predict", required_argument, NULL, 'n'},
    {"ids", no_argument, NULL, OPT_IDS},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"no-buckets", no_argument, NULL, OPT_NO_BUCKETS},
    {"no-prefill-cache", no_argument, NULL, OPT_NO_PREFILL_CACHE},
    {"tokens-file", required_argument, NULL, OPT_TOKENS_FILE},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"chunk", required_argument, NULL, OPT_CHUNK},
    {"kv-memory", required_argument, NULL, OPT_KV_MEMORY},
    {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* The generator paths (runner options) and the batch's options (engine options). */
static rlx_status apply_path(const rlx_cli_parser *p, int opt, generate_args *a) {
    bool batch = opt == OPT_PARALLEL || opt == OPT_CHUNK || opt == OPT_KV_MEMORY || opt == OPT_DETERMINISTIC;
    a->batch_option |= batch;
    a->path_option |= !batch;
    switch (opt) {
    case OPT_NO_CACHE:
        a->m.opts.no_kv_cache = true;
        return NULL;
    case OPT_NO_BUCKETS:
        a->m.opts.no_buckets = true;
        return NULL;
    case OPT_NO_PREFILL_CACHE:
        a->m.opts.no_prefill_cache = true;
        return NULL;
    case OPT_PARALLEL:
        return rlx_cli_parse_i32(p->name, p->value, 1, INT32_MAX, &a->parallel);
    case OPT_CHUNK:
        return rlx_cli_parse_i32(p->name, p->value, 1, INT32_MAX, &a->chunk);
    case OPT_KV_MEMORY:
        return rlx_cli_parse_size(p->name, p->value, 1, INT64_MAX, &a->kv_memory);
    default: /* OPT_DETERMINISTIC */
        a->deterministic = true;
        return NULL;
    }
}

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    generate_args *a = args;
    if (opt == RLX_OPT_TOKENS) return rlx_gen_prompts_add_ids(&a->prompts, p->name, p->value);
    if (opt == OPT_TOKENS_FILE) return rlx_gen_prompts_add_file(&a->prompts, p->value);
    bool matched;
    RLX_TRY(rlx_cli_generation_option(p, opt, &a->m, &a->sample, &matched));
    if (matched) return NULL;
    switch (opt) {
    case 'n':
        return rlx_cli_parse_i32(p->name, p->value, 1, INT32_MAX, &a->n_new);
    case OPT_IDS: /* ids are the only output so far */
        return NULL;
    case OPT_NO_CACHE:
    case OPT_NO_BUCKETS:
    case OPT_NO_PREFILL_CACHE:
    case OPT_PARALLEL:
    case OPT_CHUNK:
    case OPT_KV_MEMORY:
    case OPT_DETERMINISTIC:
        return apply_path(p, opt, a);
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
    if (!a->m.model) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -m PATH (a GGUF file or HF model directory)");
    if (a->prompts.n == 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "missing --tokens IDS (comma-separated token ids) or --tokens-file FILE");
    if (!a->n_new) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -n N (how many tokens to generate)");
    if (a->batch_option && a->path_option)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--parallel, --chunk, --kv-memory and --deterministic batch "
                          "prompts: they do not go with --no-cache, --no-buckets or --no-prefill-cache");
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

/* One prompt through the runner: ids streamed as they come, then the speed. */
static rlx_status run_one(rlx_runner *r, generate_args *a) {
    progress p = {.t_start = rlx_cli_now()};
    rlx_status s = rlx_runner_generate(r, a->m.ids, a->m.n_ids, a->n_new, &a->sample, on_token, &p, NULL, NULL);
    double t_end = rlx_cli_now();
    if (p.n > 0) {
        printf("\n");
        fflush(stdout);
    }
    if (!s && p.n > 0) report_speed(r, &p, a->m.n_ids, t_end);
    return s;
}

/* The runner's path: one prompt, or several one after another (the generator paths). A prompt's
 * failure is named and the next one runs; *n_failed counts them. */
static rlx_status run_runner(generate_args *a, int32_t *n_failed) {
    rlx_runner *r = NULL;
    RLX_TRY(rlx_runner_open(a->m.model, &a->m.opts, &r)); /* its messages name the path */
    rlx_status s = NULL;
    for (int32_t k = 0; !s && k < a->prompts.n; k++) {
        a->m.ids = a->prompts.v[k].ids; /* borrowed for rlx_cli_check_ids */
        a->m.n_ids = a->prompts.v[k].n;
        s = rlx_cli_check_ids(&a->m, r);
        char name[400];
        rlx_gen_prompt_name(&a->prompts, k, name, sizeof name);
        if (s && a->prompts.n > 1) s = rlx_status_annotate(s, "%s", name);
    }
    for (int32_t k = 0; !s && k < a->prompts.n; k++) {
        a->m.ids = a->prompts.v[k].ids;
        a->m.n_ids = a->prompts.v[k].n;
        rlx_status e = run_one(r, a);
        if (!e) continue;
        if (a->prompts.n == 1) {
            s = e;
            break;
        }
        char name[400];
        rlx_gen_prompt_name(&a->prompts, k, name, sizeof name);
        fprintf(stderr, "rlx generate: %s: %s\n", name, rlx_status_message(e));
        rlx_status_free(e);
        printf("\n"); /* line k stays prompt k's */
        (*n_failed)++;
    }
    a->m.ids = NULL;
    rlx_runner_close(r);
    return s;
}

static rlx_status run_batch(generate_args *a, int32_t *n_failed) {
    rlx_gen_batch b = {.model = a->m.model, .sample = a->sample, .n_new = a->n_new, .prompts = &a->prompts};
    b.opts = rlx_engine_opts_default();
    b.opts.model = a->m.opts;
    b.opts.max_parallel = a->parallel;
    b.opts.chunk = a->chunk;
    b.opts.kv_memory = a->kv_memory;
    b.opts.deterministic = a->deterministic;
    bool bad_ids = false;
    rlx_status s = rlx_gen_batch_run(&b, &bad_ids, n_failed);
    /* an id outside the vocabulary, or a KV memory too small for the model, is a bad argument */
    a->m.bad_ids = bad_ids || (s && a->kv_memory > 0 && rlx_status_code(s) == RLX_ERR_INVALID_ARGUMENT);
    return s;
}

int rlx_cmd_generate(int argc, char **argv) {
    generate_args a = {.m = {.opts = rlx_runner_opts_default()}, .sample = rlx_sample_opts_greedy()};
    a.sample.repeat_last_n = RLX_CLI_REPEAT_LAST_N;
    rlx_status s = parse(argc, argv, &a);
    if (s || a.help) {
        rlx_gen_prompts_free(&a.prompts);
        if (s) return rlx_cli_fail("generate", s, true);
        usage(stdout);
        return RLX_EXIT_OK;
    }
    int32_t n_failed = 0;
    bool batch = a.batch_option || (a.prompts.n > 1 && !a.path_option);
    s = batch ? run_batch(&a, &n_failed) : run_runner(&a, &n_failed);
    rlx_gen_prompts_free(&a.prompts);
    if (s) return rlx_cli_fail("generate", s, a.m.bad_ids);
    return n_failed ? RLX_EXIT_RUNTIME : RLX_EXIT_OK;
}
