/* rlx bench: prompt-processing and text-generation speed by llama-bench's protocol, with the
 * decode bandwidth floor (tools/bench_model.c, tools/bench_device.c). Only the public runner API
 * runs the model, so the figures are what any caller of the library gets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_parallel.h"
#include "bench_report.h"
#include "cli_util.h"
#include "commands.h"
#include "rlx/runner.h"

#define BENCH_MAX_TOKENS (1 << 20)
#define BENCH_MAX_REPS 1000
#define BENCH_MAX_TESTS 64
#define BENCH_MAX_PARALLEL 4096
/* tg's untimed prompt: one token, so the timed steps attend over 2 .. N + 1 positions, next to
 * llama-bench's tg (no prompt: 1 .. N). */
#define TG_PROMPT 1
/* The runner's default context when none is given (include/rlx/runner.h). */
#define RUNNER_DEFAULT_MAX_CTX 4096

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx bench -m PATH [options]\n"
            "\n"
            "Measures speed as llama-bench does, through the public runner API:\n"
            "  ppP  prefill of P prompt tokens in one batch, a fresh sequence each repetition, timed\n"
            "       until the last position's logits are back on the host;\n"
            "  tgN  N decode steps after a prompt of 1 token (llama-bench's tg has no prompt): N + 1\n"
            "       tokens are generated greedily with end-of-sequence ignored, and the time from\n"
            "       the first generated token to the last is the N decode steps.\n"
            "Each test runs once untimed (the warm-up, which also compiles the programs and buckets it\n"
            "needs), then R times; t/s is the mean ± sample standard deviation of the R figures.\n"
            "Prompt ids are a fixed pseudo-random sequence over the vocabulary, without BOS and EOS.\n"
            "With -d D (llama-bench's), each test runs after D such tokens are in the KV cache\n"
            "(computed untimed): ppP @ dD prefills P tokens after them, tgN @ dD decodes after them.\n"
            "\n"
            "With --parallel B (llama-batched-bench's -npl), each test instead runs B sequences stepped\n"
            "together through the engine (continuous batching; no prompt reuses another's pages):\n"
            "each gets D untimed tokens, then P prompt tokens of its own (timed for all B until the\n"
            "last prompt's logits are back: pp t/s = B * P / that time), then N decode steps of all B\n"
            "at once (tg t/s = B * N / their time, summed over the sequences; per sequence: N / it).\n"
            "One row per B, P, N and D; no bandwidth floor. The engine holds B full sequences of\n"
            "D + P + N + 1 tokens (KV memory sized to fit), takes at least B rows a step (a decode step\n"
            "is one batch) and prefills in chunks of P (at most 512, or B rows when more).\n"
            "\n"
            "For each tg test it prints the bandwidth floor: the bytes one decode step must read\n"
            "(every weight tensor once, except the token-embedding table, of which a step reads one\n"
            "row, but which counts whole when the output projection is tied to it; MoE experts at\n"
            "n_expert_used / n_expert; plus the K/V of every attention layer at the contexts of the\n"
            "timed steps, in the cache's type; plus, for a recurrent model (qwen35), its state, read\n"
            "and written whole each step), the device's memory bandwidth, floor t/s = bandwidth /\n"
            "bytes, and the measured t/s as a share of it. The bandwidth is (bytes read + written) /\n"
            "the best time of repeated copies of a large buffer (a compute kernel on Vulkan, memcpy\n"
            "on every core for the CPU), measured once per device and cached in $XDG_CACHE_HOME/rlx (else\n"
            "~/.cache/rlx), keyed by the Vulkan device UUID and driver version, or \"cpu\".\n"
            "\n"
            "options:\n"
            "  -m, --model PATH       a GGUF file or an HF model directory\n"
            "  -p, --n-prompt LIST    prompt lengths, comma-separated, e.g. 128,512 (default 512;\n"
            "                         0 skips pp)\n"
            "  -n, --n-gen LIST       decode steps, comma-separated (default 128; 0 skips tg)\n"
            "  -d, --n-depth LIST     tokens in the KV cache before each test, comma-separated\n"
            "                         (default 0)\n"
            "  --parallel LIST        sequences decoded together, comma-separated, e.g. 1,8,32,64\n"
            "                         (also -npl, llama-batched-bench's spelling); -p and -n >= 1\n"
            "  -r, --repetitions N    timed repetitions of each test, 1..%d (default 3)\n"
            "  --backend NAME         cpu or vulkan (default: a Vulkan GPU when there is one, else cpu)\n"
            "  --device NAME          the Vulkan device, by index or name substring (default:\n"
            "                         $RLX_VK_DEVICE, else the first GPU; see `rlx devices`)\n"
            "  -t, --threads N        CPU threads (default 0: every online core)\n"
            "  --decode-ahead N       tg: greedy steps decoded on the device per round trip to the\n"
            "                         host, 1..64 (default 8; 1: a round trip per token, as llama-bench)\n"
            "  -c, --ctx N            context length (default: the model's, at most 4096, raised to\n"
            "                         fit the largest test: D + P (+ 1 when D > 0), or D + 1 + N + 1;\n"
            "                         --parallel: D + P + N + 1); a smaller N is an error\n"
            "  --kv-type TYPE         f16 or f32: the K/V cache's element type (default f16 on\n"
            "                         Vulkan, f32 where the device lacks 16-bit storage and on the\n"
            "                         CPU); the floor counts its bytes\n"
            "  -o, --output FORMAT    md (default): a llama-bench-like table, then the floor lines and\n"
            "                         the device line; json: one object with every number and sample\n"
            "  --bw-remeasure         measure the bandwidth again and replace the cached figure\n"
            "  -h, --help             this text\n"
            "\n"
            "Results go to stdout; progress goes to stderr when it is a terminal.\n"
            "Each P, N and D is in 0..%d; B in 1..%d.\n"
            "exit status: 0 on success, 1 when the model or a run fails, 2 on bad arguments.\n",
            BENCH_MAX_REPS, BENCH_MAX_TOKENS, BENCH_MAX_PARALLEL);
}

typedef struct bench_args {
    rlx_cli_model_args m;   /* model, backend, device, threads, ctx (no --tokens) */
    int32_t *pp, *tg;       /* owned: the lists as given (0 entries skip) */
    int32_t n_pp, n_tg;
    int32_t *depth, *npl;   /* owned: -d (NULL: 0) and --parallel (NULL: single-sequence tests) */
    int32_t n_depth, n_npl;
    int32_t reps;
    bool json, remeasure, help;
} bench_args;

/* "128,512": each item a whole number in [min, max]. */
static rlx_status parse_list(const char *name, const char *v, int64_t min, int64_t max, int32_t **list, int32_t *n) {
    free(*list);
    *n = 1;
    for (const char *c = v; *c; c++) *n += *c == ',';
    *list = malloc((size_t)*n * sizeof **list);
    if (!*list) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: %d items", name, (int)*n);
    const char *item = v;
    for (int32_t k = 0; k < *n; k++) {
        size_t len = strcspn(item, ",");
        char text[32];
        if (len == 0 || len >= sizeof text)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s': item %d is %s, expected a whole number", name, v,
                              (int)k + 1, len ? "too long" : "empty");
        memcpy(text, item, len);
        text[len] = 0;
        int64_t x;
        RLX_TRY(rlx_cli_parse_i64(name, text, min, max, &x));
        (*list)[k] = (int32_t)x;
        item += len + 1;
    }
    return NULL;
}

enum { OPT_BW_REMEASURE = RLX_OPT_COMMAND, OPT_PARALLEL };

/* The model options but --tokens: bench makes its own ids. */
static const struct option options[] = {
    RLX_CLI_RUNNER_OPTIONS,
    RLX_CLI_DECODE_AHEAD_OPTION,
    {"n-prompt", required_argument, NULL, 'p'},
    {"n-gen", required_argument, NULL, 'n'},
    {"n-depth", required_argument, NULL, 'd'},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"repetitions", required_argument, NULL, 'r'},
    {"output", required_argument, NULL, 'o'},
    {"bw-remeasure", no_argument, NULL, OPT_BW_REMEASURE},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    bench_args *a = args;
    bool matched;
    RLX_TRY(rlx_cli_model_option(p, opt, &a->m, &matched));
    if (!matched) RLX_TRY(rlx_cli_decode_ahead_option(p, opt, &a->m.opts, &matched));
    if (matched) return NULL;
    switch (opt) {
    case 'p':
        return parse_list(p->name, p->value, 0, BENCH_MAX_TOKENS, &a->pp, &a->n_pp);
    case 'n':
        return parse_list(p->name, p->value, 0, BENCH_MAX_TOKENS, &a->tg, &a->n_tg);
    case 'd':
        return parse_list(p->name, p->value, 0, BENCH_MAX_TOKENS, &a->depth, &a->n_depth);
    case OPT_PARALLEL:
        return parse_list(p->name, p->value, 1, BENCH_MAX_PARALLEL, &a->npl, &a->n_npl);
    case 'r':
        return rlx_cli_parse_i32(p->name, p->value, 1, BENCH_MAX_REPS, &a->reps);
    case 'o':
        if (strcmp(p->value, "md") && strcmp(p->value, "json"))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a format (expected md or json)", p->name,
                              p->value);
        a->json = !strcmp(p->value, "json");
        return NULL;
    case OPT_BW_REMEASURE:
        a->remeasure = true;
        return NULL;
    case 'h':
        a->help = true;
        return NULL;
    }
    return rlx_cli_unknown(p); /* a positional argument */
}

static rlx_status default_list(int32_t n, int32_t **list, int32_t *count) {
    *list = malloc(sizeof **list);
    if (!*list) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: a test list");
    **list = n;
    *count = 1;
    return NULL;
}

static rlx_status parse(int argc, char **argv, bench_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = RLX_CLI_MODEL_SHORTS "p:n:d:r:o:h", .longs = options,
                        .long_names = "tc"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    if (a->help) return NULL;
    if (!a->m.model) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -m PATH (a GGUF file or HF model directory)");
    /* llama-bench's defaults, each list on its own: -p 64 alone still runs tg128 */
    if (!a->pp) RLX_TRY(default_list(512, &a->pp, &a->n_pp));
    if (!a->tg) RLX_TRY(default_list(128, &a->tg, &a->n_tg));
    if (!a->depth) RLX_TRY(default_list(0, &a->depth, &a->n_depth));
    int64_t tests = 0;
    if (a->npl) {
        for (int32_t k = 0; k < a->n_pp; k++)
            if (a->pp[k] == 0) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--parallel: -p 0: every prompt needs >= 1 token");
        for (int32_t k = 0; k < a->n_tg; k++)
            if (a->tg[k] == 0) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--parallel: -n 0: every test decodes >= 1 step");
        tests = (int64_t)a->n_pp * a->n_tg * a->n_npl * a->n_depth;
    } else {
        for (int32_t k = 0; k < a->n_pp; k++) tests += a->pp[k] > 0;
        for (int32_t k = 0; k < a->n_tg; k++) tests += a->tg[k] > 0;
        if (tests == 0) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "nothing to run: every -p and -n is 0");
        tests *= a->n_depth;
    }
    if (tests > BENCH_MAX_TESTS)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%lld tests: at most %d", (long long)tests, BENCH_MAX_TESTS);
    return NULL;
}

/* Tokens a test's sequence holds: pp at a depth runs as a continuation with one sampled token. */
static int64_t test_tokens(const rlx_bench_test *t) {
    if (t->is_tg) return (int64_t)t->n_depth + t->n_prompt + t->n_gen + 1;
    return (int64_t)t->n_depth + t->n_prompt + (t->n_depth > 0);
}

/* The context every test fits in: the one asked for (an error when too small), else the
 * runner's default raised as needed (--parallel: bench_parallel.c sizes the engine). */
static rlx_status fit_context(bench_args *a, const rlx_bench_result *res) {
    int64_t need = 0;
    const char *what = NULL;
    for (int i = 0; i < res->n_tests; i++)
        if (test_tokens(&res->tests[i]) > need) {
            need = test_tokens(&res->tests[i]);
            what = res->tests[i].name;
        }
    for (int i = 0; i < res->n_par; i++)
        if (rlx_bench_par_tokens(&res->par[i]) > need) {
            need = rlx_bench_par_tokens(&res->par[i]);
            what = res->par[i].name;
        }
    if (a->m.opts.n_ctx > 0 && a->m.opts.n_ctx < need)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--ctx %d is too small for %s: it needs %lld tokens",
                          (int)a->m.opts.n_ctx, what, (long long)need);
    if (need > INT32_MAX) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s needs %lld tokens", what, (long long)need);
    uint32_t train = res->model.config.n_ctx_train ? res->model.config.n_ctx_train : RUNNER_DEFAULT_MAX_CTX;
    int64_t dflt = train < RUNNER_DEFAULT_MAX_CTX ? train : RUNNER_DEFAULT_MAX_CTX;
    if (res->n_par == 0 && a->m.opts.n_ctx == 0 && need > dflt) a->m.opts.n_ctx = (int32_t)need;
    return NULL;
}

/* ---- running the tests ---- */

typedef struct bench_run {
    rlx_runner *r;         /* owned */
    int32_t *ids;          /* owned: the prompt pool, max P tokens (at least TG_PROMPT) */
    bool progress;         /* stderr is a terminal */
} bench_run;

/* xorshift64 over the vocabulary, skipping BOS and EOS; the same ids every run. */
static rlx_status make_ids(bench_run *b, const rlx_bench_model *m, int32_t n) {
    int32_t vocab = (int32_t)m->config.n_vocab;
    if (vocab < 1) return rlx_errorf(RLX_ERR_BAD_FILE, "bench: the model's vocabulary is empty");
    b->ids = malloc((size_t)n * sizeof *b->ids);
    if (!b->ids) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: %d prompt ids", (int)n);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int32_t i = 0; i < n;) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int32_t id = (int32_t)(x % (uint64_t)vocab);
        if (vocab > 2 && (id == m->config.bos_id || id == m->config.eos_id)) continue;
        b->ids[i++] = id;
    }
    return NULL;
}

static void show_progress(const bench_run *b, const rlx_bench_test *t, int32_t rep) {
    if (!b->progress) return;
    if (rep < 0)
        fprintf(stderr, "\r\033[Krlx bench: %s warm-up", t->name);
    else
        fprintf(stderr, "\r\033[Krlx bench: %s %d/%d", t->name, (int)rep + 1, (int)t->reps);
}

/* At a depth, the depth's tokens are prefilled untimed and the prompt continues them (one offset
 * prefill and one sampled token). */
static rlx_status time_pp(bench_run *b, const rlx_bench_test *t, float *logits, double *seconds) {
    if (t->n_depth > 0) {
        RLX_TRY(rlx_runner_prefill_get_last_logits(b->r, b->ids, t->n_depth, logits));
        rlx_sample_opts so = rlx_sample_opts_greedy();
        so.ignore_eos = true;
        double t0 = rlx_cli_now();
        RLX_TRY(rlx_runner_generate_incremental(b->r, b->ids, t->n_depth + t->n_prompt, 1, &so, NULL, NULL, NULL,
                                                NULL));
        *seconds = rlx_cli_now() - t0;
        return NULL;
    }
    double t0 = rlx_cli_now();
    RLX_TRY(rlx_runner_prefill_get_last_logits(b->r, b->ids, t->n_prompt, logits));
    *seconds = rlx_cli_now() - t0;
    return NULL;
}

typedef struct tg_clock {
    double first, last;
    int32_t n;
} tg_clock;

static bool on_token(int32_t token, void *user) {
    (void)token;
    tg_clock *c = user;
    double now = rlx_cli_now();
    if (c->n++ == 0) c->first = now;
    c->last = now;
    return true;
}

static rlx_status time_tg(bench_run *b, const rlx_bench_test *t, double *seconds) {
    rlx_sample_opts so = rlx_sample_opts_greedy();
    so.ignore_eos = true;
    tg_clock c = {0};
    RLX_TRY(rlx_runner_generate(b->r, b->ids, t->n_depth + t->n_prompt, t->n_gen + 1, &so, on_token, &c, NULL, NULL));
    if (c.n != t->n_gen + 1)
        return rlx_errorf(RLX_ERR_DEVICE, "bench %s: generated %d tokens, expected %d", t->name, (int)c.n,
                          (int)t->n_gen + 1);
    *seconds = c.last - c.first;
    return NULL;
}

static rlx_status run_test(bench_run *b, rlx_bench_test *t, float *logits) {
    double s = 0.0;
    for (int32_t rep = -1; rep < t->reps; rep++) {
        show_progress(b, t, rep);
        RLX_TRY(t->is_tg ? time_tg(b, t, &s) : time_pp(b, t, logits, &s));
        if (rep < 0) continue;
        if (s <= 0.0) return rlx_errorf(RLX_ERR_IO, "bench %s: repetition %d took no measurable time", t->name, rep + 1);
        t->seconds[rep] = s;
        t->tps[rep] = (t->is_tg ? t->n_gen : t->n_prompt) / s;
    }
    rlx_bench_test_stats(t);
    return NULL;
}

static rlx_status add_test(rlx_bench_result *res, bool is_tg, int32_t n, int32_t depth, int32_t reps) {
    rlx_bench_test *t = &res->tests[res->n_tests];
    *t = (rlx_bench_test){.is_tg = is_tg, .n_prompt = is_tg ? TG_PROMPT : n, .n_gen = is_tg ? n : 0, .n_depth = depth,
                          .reps = reps};
    int len = snprintf(t->name, sizeof t->name, "%s%d", is_tg ? "tg" : "pp", (int)n);
    if (depth > 0) snprintf(t->name + len, sizeof t->name - (size_t)len, " @ d%d", (int)depth); /* llama-bench's */
    t->seconds = calloc((size_t)reps, sizeof *t->seconds);
    t->tps = calloc((size_t)reps, sizeof *t->tps);
    res->n_tests++;
    return t->seconds && t->tps ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: %d samples", (int)reps);
}

/* --parallel: every P, N, D and B, B innermost (one row per B). */
static rlx_status plan_par(const bench_args *a, rlx_bench_result *res) {
    res->par = calloc(BENCH_MAX_TESTS, sizeof *res->par);
    if (!res->par) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: the test table");
    for (int32_t p = 0; p < a->n_pp; p++)
        for (int32_t n = 0; n < a->n_tg; n++)
            for (int32_t d = 0; d < a->n_depth; d++)
                for (int32_t b = 0; b < a->n_npl; b++)
                    RLX_TRY(rlx_bench_par_init(&res->par[res->n_par++], a->npl[b], a->pp[p], a->tg[n], a->depth[d],
                                               a->reps));
    return NULL;
}

static rlx_status plan_tests(const bench_args *a, rlx_bench_result *res) {
    if (a->npl) return plan_par(a, res);
    res->tests = calloc(BENCH_MAX_TESTS, sizeof *res->tests);
    if (!res->tests) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: the test table");
    for (int32_t k = 0; k < a->n_pp; k++)
        for (int32_t d = 0; d < a->n_depth; d++)
            if (a->pp[k] > 0) RLX_TRY(add_test(res, false, a->pp[k], a->depth[d], a->reps));
    for (int32_t k = 0; k < a->n_tg; k++)
        for (int32_t d = 0; d < a->n_depth; d++)
            if (a->tg[k] > 0) RLX_TRY(add_test(res, true, a->tg[k], a->depth[d], a->reps));
    return NULL;
}

static rlx_status run_tests(const bench_args *a, rlx_bench_result *res) {
    bench_run b = {.progress = isatty(STDERR_FILENO)};
    int32_t n_ids = TG_PROMPT;
    for (int i = 0; i < res->n_tests; i++)
        if (res->tests[i].n_depth + res->tests[i].n_prompt > n_ids) n_ids = res->tests[i].n_depth + res->tests[i].n_prompt;
    RLX_TRY(make_ids(&b, &res->model, n_ids));
    float *logits = NULL;
    rlx_status s = rlx_runner_open(a->m.model, &a->m.opts, &b.r);
    if (!s) {
        res->backend = rlx_runner_backend_name(b.r);
        res->n_ctx = rlx_runner_n_ctx(b.r);
        res->decode_ahead = rlx_runner_decode_ahead(b.r);
        res->kv_type = rlx_runner_kv_type(b.r) == RLX_KV_TYPE_F16 ? "f16" : "f32";
        res->state_bytes = rlx_runner_state_bytes(b.r);
        logits = malloc((size_t)rlx_runner_vocab_size(b.r) * sizeof *logits);
        if (!logits) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: logits of %d floats", (int)rlx_runner_vocab_size(b.r));
    }
    for (int i = 0; !s && i < res->n_tests; i++) s = run_test(&b, &res->tests[i], logits);
    if (b.progress) fprintf(stderr, "\r\033[K");
    free(logits);
    free(b.ids);
    rlx_runner_close(b.r);
    return s;
}

/* ---- the floor ---- */

static void compute_floors(rlx_bench_result *res) {
    for (int i = 0; i < res->n_tests; i++) {
        rlx_bench_test *t = &res->tests[i];
        if (!t->is_tg || !res->has_bandwidth) continue;
        rlx_bench_floor *fl = &t->floor;
        /* timed step k (1..N) feeds generated token k and attends over depth + TG_PROMPT + k positions */
        int64_t before = (int64_t)t->n_depth + TG_PROMPT;
        fl->mean_context = (double)before + (t->n_gen + 1) / 2.0;
        fl->weight_bytes = (double)res->model.weight_bytes_per_token;
        int32_t elem = res->kv_type && !strcmp(res->kv_type, "f16") ? 2 : 4;
        fl->kv_bytes = rlx_bench_kv_bytes_per_step(&res->model, before + 1, t->n_gen, elem);
        /* a recurrent layer's state is read and written whole every step, whatever the context */
        fl->state_bytes = 2.0 * (double)res->state_bytes;
        fl->bytes_per_token = fl->weight_bytes + fl->kv_bytes + fl->state_bytes;
        fl->floor_tps = fl->bytes_per_token > 0 ? res->bandwidth.bytes_per_s / fl->bytes_per_token : 0.0;
        fl->ratio = fl->floor_tps > 0 ? t->mean / fl->floor_tps : 0.0;
        t->has_floor = true;
    }
}

/* The bandwidth is measured after the runner is closed, so the probe has the device to itself. A
 * failed probe costs the floor lines, not the results. */
static void add_bandwidth(const bench_args *a, rlx_bench_result *res) {
    bool any_tg = false;
    for (int i = 0; i < res->n_tests; i++) any_tg |= res->tests[i].is_tg;
    if (!any_tg) return;
    rlx_status s = rlx_bench_bandwidth_get(&res->device, a->m.opts.device, a->remeasure, &res->bandwidth);
    if (s) {
        snprintf(res->bandwidth_error, sizeof res->bandwidth_error, "%s", rlx_status_message(s));
        fprintf(stderr, "rlx bench: no bandwidth figure: %s\n", rlx_status_message(s));
        rlx_status_free(s);
        return;
    }
    res->has_bandwidth = true;
    compute_floors(res);
}

static rlx_status measure_and_print(bench_args *a, rlx_bench_result *res) {
    if (res->n_par > 0)
        RLX_TRY(rlx_bench_par_run(a->m.model, &a->m.opts, isatty(STDERR_FILENO), res));
    else
        RLX_TRY(run_tests(a, res));
    RLX_TRY(rlx_bench_device_describe(res->backend, a->m.opts.device, a->m.opts.n_threads, &res->device));
    add_bandwidth(a, res);
    if (a->json) return rlx_bench_print_json(res, stdout);
    rlx_bench_print_md(res, stdout);
    return NULL;
}

static void bench_free(bench_args *a, rlx_bench_result *res) {
    for (int i = 0; res->tests && i < res->n_tests; i++) {
        free(res->tests[i].seconds);
        free(res->tests[i].tps);
    }
    free(res->tests);
    for (int i = 0; res->par && i < res->n_par; i++) rlx_bench_par_free(&res->par[i]);
    free(res->par);
    free(a->pp);
    free(a->tg);
    free(a->depth);
    free(a->npl);
}

/* Usage errors in one line (rlx_cli_fail adds a second one pointing at --help). */
static int usage_fail(rlx_status s) {
    fprintf(stderr, "rlx bench: %s (see rlx bench --help)\n", rlx_status_message(s));
    rlx_status_free(s);
    return RLX_EXIT_USAGE;
}

static int run_bench(bench_args *a, rlx_bench_result *res) {
    res->model_path = a->m.model;
    rlx_status s = rlx_bench_model_read(a->m.model, &res->model);
    if (s) return rlx_cli_fail("bench", s, false);
    s = plan_tests(a, res);
    if (s) return rlx_cli_fail("bench", s, false);
    s = fit_context(a, res);
    if (s) return usage_fail(s);
    s = measure_and_print(a, res);
    return s ? rlx_cli_fail("bench", s, false) : RLX_EXIT_OK;
}

int rlx_cmd_bench(int argc, char **argv) {
    bench_args a = {.m = {.opts = rlx_runner_opts_default()}, .reps = 3};
    rlx_bench_result res = {0};
    /* llama-batched-bench's -npl: getopt would read it as -n pl */
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args) return rlx_cli_fail("bench", rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: arguments"), false);
    for (int i = 0; i <= argc; i++) args[i] = i < argc && argv[i] && !strcmp(argv[i], "-npl") ? "--parallel" : argv[i];
    rlx_status s = parse(argc, args, &a);
    int code = RLX_EXIT_OK;
    if (s)
        code = usage_fail(s);
    else if (a.help)
        usage(stdout);
    else
        code = run_bench(&a, &res);
    bench_free(&a, &res);
    free(args);
    return code;
}
