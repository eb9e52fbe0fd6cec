/* rlx bench --parallel: aggregate prompt and decode speed of B sequences stepped together through
 * the engine (include/rlx/engine.h), by llama-batched-bench's protocol (tools/bench_parallel.c). */
#ifndef RLX_TOOLS_BENCH_PARALLEL_H
#define RLX_TOOLS_BENCH_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

#include "bench_report.h"
#include "rlx/runner.h"

/* Tokens one sequence of t holds at most: depth + prompt + decode steps + the last sampled token. */
int64_t rlx_bench_par_tokens(const rlx_bench_par *t);

/* Sets up t's name and sample arrays (owned: rlx_bench_par_free). */
rlx_status rlx_bench_par_init(rlx_bench_par *t, int32_t n_parallel, int32_t n_prompt, int32_t n_gen,
                              int32_t n_depth, int32_t reps);
void rlx_bench_par_free(rlx_bench_par *t);

/* Runs res->par (each once untimed, then reps times) on one engine over the model at path, sized
 * for the largest test: a context of every test's tokens (opts->n_ctx when larger), KV memory for
 * the largest B such sequences, a step of at least B rows (one decode step is one batch) and
 * prefill chunks of the largest prompt. Sets res->backend and res->n_ctx. progress: a line on
 * stderr per repetition. */
rlx_status rlx_bench_par_run(const char *path, const rlx_runner_opts *opts, bool progress, rlx_bench_result *res);

#endif
