/* Printing `rlx bench` results. The markdown table follows llama-bench's columns (model, size,
 * params, backend, threads or device, test, t/s as mean ± sd), so the figures read side by side. */
#include "bench_report.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

void rlx_bench_test_stats(rlx_bench_test *t) {
    double sum = 0.0;
    t->min = t->max = t->reps > 0 ? t->tps[0] : 0.0;
    for (int32_t i = 0; i < t->reps; i++) {
        sum += t->tps[i];
        if (t->tps[i] < t->min) t->min = t->tps[i];
        if (t->tps[i] > t->max) t->max = t->tps[i];
    }
    t->mean = t->reps > 0 ? sum / t->reps : 0.0;
    double sq = 0.0;
    for (int32_t i = 0; i < t->reps; i++) sq += (t->tps[i] - t->mean) * (t->tps[i] - t->mean);
    t->sd = t->reps > 1 ? sqrt(sq / (t->reps - 1)) : 0.0;
}

static void print_floor(const rlx_bench_result *r, const rlx_bench_test *t, FILE *f) {
    const rlx_bench_floor *fl = &t->floor;
    char total[32], weights[32], kv[32];
    rlx_bench_format_bytes(fl->bytes_per_token, total, sizeof total);
    rlx_bench_format_bytes(fl->weight_bytes, weights, sizeof weights);
    rlx_bench_format_bytes(fl->kv_bytes, kv, sizeof kv);
    fprintf(f, "%s: %.0f bytes/token (%s = weights %s + %s KV %s at a mean context of %.1f", t->name,
            fl->bytes_per_token, total, weights, r->kv_type ? r->kv_type : "f32", kv, fl->mean_context);
    if (fl->state_bytes > 0) {
        char state[32];
        rlx_bench_format_bytes(fl->state_bytes, state, sizeof state);
        fprintf(f, " + recurrent state %s, read and written", state);
    }
    fprintf(f, ")\n");
    fprintf(f, "%s: bandwidth %.2f GB/s, floor %.2f t/s, measured %.2f t/s = %.1f%% of the floor\n", t->name,
            r->bandwidth.bytes_per_s / 1e9, fl->floor_tps, t->mean, 100.0 * fl->ratio);
    if (r->backend && strcmp(r->backend, "vulkan") == 0) /* the backend that chains decode steps */
        fprintf(f, "%s: up to %d greedy steps per round trip to the host (--decode-ahead)\n", t->name,
                (int)r->decode_ahead);
}

/* The columns every row starts with: model, size, params, backend, threads or device. */
static void row_start(const rlx_bench_result *r, FILE *f) {
    char size[32], params[32];
    rlx_bench_format_bytes((double)r->model.size_bytes, size, sizeof size);
    rlx_bench_format_count(r->model.n_params, 2, params, sizeof params);
    fprintf(f, "| %s | %s | %s | %s | ", r->model.description, size, params, r->backend);
    if (r->device.n_threads > 0)
        fprintf(f, "%d |", r->device.n_threads);
    else
        fprintf(f, "%s |", r->device.name);
}

/* --parallel: one row per test (per B), llama-batched-bench's figures as mean ± sd. */
static void print_par_md(const rlx_bench_result *r, FILE *f) {
    fprintf(f, "| model | size | params | backend | %s | test | B | pp t/s | tg t/s | tg t/s per sequence |\n",
            r->device.n_threads > 0 ? "threads" : "device");
    fprintf(f, "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < r->n_par; i++) {
        const rlx_bench_par *t = &r->par[i];
        row_start(r, f);
        fprintf(f, " %s | %d | %.2f ± %.2f | %.2f ± %.2f | %.2f ± %.2f |\n", t->name, (int)t->n_parallel, t->pp.mean,
                t->pp.sd, t->tg.mean, t->tg.sd, t->tg_seq.mean, t->tg_seq.sd);
    }
    fprintf(f, "\ndevice: %s\n", r->device.line);
}

void rlx_bench_print_md(const rlx_bench_result *r, FILE *f) {
    if (r->n_par > 0) {
        print_par_md(r, f);
        return;
    }
    fprintf(f, "| model | size | params | backend | %s | test | t/s |\n", r->device.n_threads > 0 ? "threads" : "device");
    fprintf(f, "| --- | ---: | ---: | --- | --- | ---: | ---: |\n");
    for (int i = 0; i < r->n_tests; i++) {
        const rlx_bench_test *t = &r->tests[i];
        row_start(r, f);
        fprintf(f, " %s | %.2f ± %.2f |\n", t->name, t->mean, t->sd);
    }
    fprintf(f, "\n");
    bool any_tg = false;
    for (int i = 0; i < r->n_tests; i++) {
        if (!r->tests[i].is_tg) continue;
        any_tg = true;
        if (r->tests[i].has_floor) print_floor(r, &r->tests[i], f);
    }
    if (r->has_bandwidth)
        fprintf(f, "bandwidth: %.2f GB/s (%s; %s%s)\n", r->bandwidth.bytes_per_s / 1e9, r->bandwidth.method,
                r->bandwidth.from_cache ? "cached in " : "measured now",
                r->bandwidth.from_cache ? r->bandwidth.cache_path : "");
    else if (any_tg)
        fprintf(f, "bandwidth: unavailable (%s)\n", r->bandwidth_error);
    fprintf(f, "device: %s\n", r->device.line);
}

static json_t *samples(const double *v, int32_t n) {
    json_t *a = json_array();
    for (int32_t i = 0; a && i < n; i++) json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *floor_json(const rlx_bench_floor *fl) {
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "mean_context", fl->mean_context,
                     "weight_bytes_per_token", fl->weight_bytes, "kv_bytes_per_token", fl->kv_bytes,
                     "state_bytes_per_token", fl->state_bytes, "bytes_per_token", fl->bytes_per_token, "floor_ts",
                     fl->floor_tps, "ratio", fl->ratio);
}

static json_t *test_json(const rlx_bench_test *t) {
    json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:i, s:o, s:o, s:f, s:f, s:f, s:f}", "name", t->name, "kind",
                          t->is_tg ? "tg" : "pp", "n_prompt", (int)t->n_prompt, "n_gen", (int)t->n_gen, "repetitions",
                          (int)t->reps, "samples_s", samples(t->seconds, t->reps), "samples_ts",
                          samples(t->tps, t->reps), "avg_ts", t->mean, "stddev_ts", t->sd, "min_ts", t->min, "max_ts",
                          t->max);
    if (j) json_object_set_new(j, "n_depth", json_integer(t->n_depth));
    if (j && t->is_tg) json_object_set_new(j, "floor", t->has_floor ? floor_json(&t->floor) : json_null());
    return j;
}

/* One figure of a --parallel test: its samples and their statistics. */
static json_t *figure_json(const rlx_bench_test *t) {
    return json_pack("{s:o, s:o, s:f, s:f, s:f, s:f}", "samples_s", samples(t->seconds, t->reps), "samples_ts",
                     samples(t->tps, t->reps), "avg_ts", t->mean, "stddev_ts", t->sd, "min_ts", t->min, "max_ts",
                     t->max);
}

static json_t *par_json(const rlx_bench_par *t) {
    return json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "name", t->name, "kind", "parallel",
                     "n_parallel", (int)t->n_parallel, "n_prompt", (int)t->n_prompt, "n_gen", (int)t->n_gen, "n_depth",
                     (int)t->n_depth, "repetitions", (int)t->reps, "pp", figure_json(&t->pp), "tg",
                     figure_json(&t->tg), "tg_per_sequence", figure_json(&t->tg_seq));
}

static json_t *bandwidth_json(const rlx_bench_result *r) {
    if (!r->has_bandwidth) return r->bandwidth_error[0] ? json_pack("{s:s}", "error", r->bandwidth_error) : json_null();
    const rlx_bench_bandwidth *b = &r->bandwidth;
    return json_pack("{s:f, s:s, s:b, s:s}", "bytes_per_s", b->bytes_per_s, "method", b->method, "from_cache",
                     b->from_cache, "cache_file", b->cache_path);
}

rlx_status rlx_bench_print_json(const rlx_bench_result *r, FILE *f) {
    const rlx_bench_model *m = &r->model;
    json_t *tests = json_array();
    for (int i = 0; tests && i < r->n_tests; i++) json_array_append_new(tests, test_json(&r->tests[i]));
    for (int i = 0; tests && i < r->n_par; i++) json_array_append_new(tests, par_json(&r->par[i]));
    json_t *device = json_pack("{s:s, s:s}", "name", r->device.name, "line", r->device.line);
    if (device && r->device.n_threads > 0) json_object_set_new(device, "n_threads", json_integer(r->device.n_threads));
    json_t *j = json_pack("{s:{s:s, s:s, s:s, s:s, s:I, s:I, s:I}, s:s, s:o, s:i, s:o, s:o}", "model", "path",
                          r->model_path, "description", m->description, "family", m->family, "file_type",
                          m->file_type, "size_bytes", (json_int_t)m->size_bytes, "n_params", (json_int_t)m->n_params,
                          "weight_bytes_per_token", (json_int_t)m->weight_bytes_per_token, "backend", r->backend,
                          "device", device, "n_ctx", (int)r->n_ctx, "bandwidth", bandwidth_json(r), "tests", tests);
    if (!j) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: building the JSON report");
    json_object_set_new(j, "decode_ahead", json_integer(r->decode_ahead));
    if (r->kv_type) json_object_set_new(j, "kv_type", json_string(r->kv_type));
    json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(j);
    return NULL;
}
