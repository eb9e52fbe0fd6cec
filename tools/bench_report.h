/* The results of `rlx bench` and their two forms: a llama-bench-like markdown table with the
 * bandwidth-floor lines, or one JSON object with every number (samples included). */
#ifndef RLX_TOOLS_BENCH_REPORT_H
#define RLX_TOOLS_BENCH_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_device.h"
#include "bench_model.h"

/* The tg floor: what one decode step moves and how fast it could go (DESIGN.md, "Performance
 * model"); set when a bandwidth figure exists. */
typedef struct rlx_bench_floor {
    double mean_context;     /* mean number of positions a timed step attends over */
    double weight_bytes;     /* per step */
    double kv_bytes;         /* per step, at the run's contexts */
    double state_bytes;      /* per step: a recurrent model's state, read and written (2 x its bytes) */
    double bytes_per_token;  /* weight_bytes + kv_bytes + state_bytes */
    double floor_tps;        /* bandwidth / bytes_per_token */
    double ratio;            /* measured mean t/s / floor_tps */
} rlx_bench_floor;

typedef struct rlx_bench_test {
    char name[40];           /* "pp512", "tg128", "tg128 @ d512" */
    bool is_tg;
    int32_t n_depth;         /* tokens already in the KV cache before the test (llama-bench's -d) */
    int32_t n_prompt;        /* pp: the batch; tg: the untimed prompt before the timed steps */
    int32_t n_gen;           /* tg: timed decode steps; pp: 0 */
    int32_t reps;
    double *seconds;         /* owned, reps: each repetition's timed span */
    double *tps;             /* owned, reps: tokens / seconds */
    double mean, sd, min, max; /* over tps; sd is the sample standard deviation (0 for one) */
    bool has_floor;
    rlx_bench_floor floor;
} rlx_bench_test;

/* --parallel: B sequences, each a prompt of n_prompt distinct ids after n_depth untimed ones, then
 * n_gen decode steps of all B together (llama-batched-bench's protocol). pp.tps: B * n_prompt /
 * prefill seconds; tg.tps: B * n_gen / decode seconds; tg_seq.tps: n_gen / decode seconds. */
typedef struct rlx_bench_par {
    char name[48];           /* "pp512+tg128", "pp512+tg128 @ d4096" */
    int32_t n_parallel, n_prompt, n_gen, n_depth, reps;
    rlx_bench_test pp, tg, tg_seq; /* the samples of each figure (seconds, tps) and their stats */
} rlx_bench_par;

typedef struct rlx_bench_result {
    const char *model_path;  /* borrowed */
    rlx_bench_model model;
    const char *backend;     /* borrowed: the runner's backend name (static) */
    rlx_bench_device device;
    int32_t n_ctx;
    int32_t decode_ahead;    /* tg: greedy steps decoded on the device per round trip to the host */
    const char *kv_type;     /* "f16" or "f32": the runner's K/V cache (static) */
    int64_t state_bytes;     /* a recurrent model's state per sequence (rlx_runner_state_bytes); 0: none */
    bool has_bandwidth;
    rlx_bench_bandwidth bandwidth;
    char bandwidth_error[512]; /* why there is no figure, "" otherwise */
    rlx_bench_test *tests;   /* owned, n_tests */
    int n_tests;
    rlx_bench_par *par;      /* owned, n_par: the --parallel tests (then there are no tests) */
    int n_par;
} rlx_bench_result;

/* mean / sd / min / max of t->tps */
void rlx_bench_test_stats(rlx_bench_test *t);

void rlx_bench_print_md(const rlx_bench_result *r, FILE *f);
/* Errors only when out of memory. */
rlx_status rlx_bench_print_json(const rlx_bench_result *r, FILE *f);

#endif
