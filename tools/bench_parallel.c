/* rlx bench --parallel, llama-batched-bench's protocol through the engine: per repetition, B new
 * sequences each get n_depth random ids (untimed), then a prompt of n_prompt random ids (timed
 * together until every sequence has computed it and holds its last row's logits: the pp figure),
 * then one more id each and n_gen decode steps of all B at once (timed until the last sequence has
 * its n_gen-th token: the tg figure). The engine is opened with no_prefix_cache (no prompt reuses
 * another's pages) and no_preempt (a pool too small fails instead of timing recomputation). */
#include "bench_parallel.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli_util.h"
#include "rlx/engine.h"

int64_t rlx_bench_par_tokens(const rlx_bench_par *t) {
    return (int64_t)t->n_depth + t->n_prompt + t->n_gen + 1;
}

static rlx_status alloc_figure(rlx_bench_test *f, int32_t reps) {
    f->reps = reps;
    f->seconds = calloc((size_t)reps, sizeof *f->seconds);
    f->tps = calloc((size_t)reps, sizeof *f->tps);
    return f->seconds && f->tps ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: %d samples", (int)reps);
}

rlx_status rlx_bench_par_init(rlx_bench_par *t, int32_t n_parallel, int32_t n_prompt, int32_t n_gen,
                              int32_t n_depth, int32_t reps) {
    *t = (rlx_bench_par){.n_parallel = n_parallel, .n_prompt = n_prompt, .n_gen = n_gen, .n_depth = n_depth,
                         .reps = reps};
    int len = snprintf(t->name, sizeof t->name, "pp%d+tg%d", (int)n_prompt, (int)n_gen);
    if (n_depth > 0) snprintf(t->name + len, sizeof t->name - (size_t)len, " @ d%d", (int)n_depth);
    RLX_TRY(alloc_figure(&t->pp, reps));
    RLX_TRY(alloc_figure(&t->tg, reps));
    return alloc_figure(&t->tg_seq, reps);
}

void rlx_bench_par_free(rlx_bench_par *t) {
    rlx_bench_test *f[] = {&t->pp, &t->tg, &t->tg_seq};
    for (int i = 0; i < 3; i++) {
        free(f[i]->seconds);
        free(f[i]->tps);
        f[i]->seconds = f[i]->tps = NULL;
    }
}

/* ---- one repetition ---- */

typedef struct par_run {
    rlx_engine *e;        /* owned */
    int32_t *ids;         /* owned: one sequence's ids of a phase, max(depth, prompt) of them */
    int32_t *seq;         /* owned: the B sequences of the repetition */
    uint64_t rng;         /* xorshift64: every sequence's ids differ */
    int32_t vocab, bos, eos;
} par_run;

static void random_ids(par_run *r, int32_t n) {
    for (int32_t i = 0; i < n;) {
        r->rng ^= r->rng << 13;
        r->rng ^= r->rng >> 7;
        r->rng ^= r->rng << 17;
        int32_t id = (int32_t)(r->rng % (uint64_t)r->vocab);
        if (r->vocab > 2 && (id == r->bos || id == r->eos)) continue;
        r->ids[i++] = id;
    }
}

/* Appends n fresh random ids to each of the B sequences. */
static rlx_status append_all(par_run *r, int32_t b, int32_t n) {
    for (int32_t k = 0; k < b; k++) {
        random_ids(r, n);
        RLX_TRY(rlx_engine_seq_append(r->e, r->seq[k], r->ids, n));
    }
    return NULL;
}

/* Runs the engine until every sequence is done with what it was given; a failed one fails the test. */
static rlx_status run_phase(par_run *r, const rlx_bench_par *t, const char *phase) {
    RLX_TRY(rlx_engine_run(r->e));
    for (int32_t k = 0; k < t->n_parallel; k++) {
        const char *why = rlx_engine_seq_error(r->e, r->seq[k]);
        if (why) return rlx_errorf(RLX_ERR_DEVICE, "bench %s B=%d: %s of sequence %d: %s", t->name,
                                   (int)t->n_parallel, phase, (int)k + 1, why);
    }
    return NULL;
}

static rlx_status decode_phase(par_run *r, const rlx_bench_par *t, double *seconds) {
    rlx_seq_opts so = {.sample = rlx_sample_opts_greedy(), .n_new = t->n_gen};
    so.sample.ignore_eos = true;
    for (int32_t k = 0; k < t->n_parallel; k++) RLX_TRY(rlx_engine_seq_set_opts(r->e, r->seq[k], &so));
    double t0 = rlx_cli_now();
    RLX_TRY(append_all(r, t->n_parallel, 1)); /* the token each first decode step computes */
    RLX_TRY(run_phase(r, t, "decode"));
    *seconds = rlx_cli_now() - t0;
    for (int32_t k = 0; k < t->n_parallel; k++) {
        int32_t got = rlx_engine_seq_n_generated(r->e, r->seq[k]);
        if (got != t->n_gen)
            return rlx_errorf(RLX_ERR_INTERNAL, "bench %s B=%d: sequence %d generated %d tokens, expected %d", t->name,
                              (int)t->n_parallel, (int)k + 1, (int)got, (int)t->n_gen);
    }
    return NULL;
}

/* One repetition: *pp and *tg the seconds of the prompt and decode phases. */
static rlx_status once(par_run *r, const rlx_bench_par *t, double *pp, double *tg) {
    rlx_seq_opts keep = {.keep_logits = true}; /* the prompt's last row comes back to the host */
    int32_t b = t->n_parallel;
    for (int32_t k = 0; k < b; k++) RLX_TRY(rlx_engine_seq_create(r->e, &keep, &r->seq[k]));
    if (t->n_depth > 0) {
        RLX_TRY(append_all(r, b, t->n_depth));
        RLX_TRY(run_phase(r, t, "depth"));
    }
    double t0 = rlx_cli_now();
    RLX_TRY(append_all(r, b, t->n_prompt));
    RLX_TRY(run_phase(r, t, "prompt"));
    *pp = rlx_cli_now() - t0;
    return decode_phase(r, t, tg);
}

static void free_seqs(par_run *r, int32_t b) {
    for (int32_t k = 0; k < b; k++)
        if (r->seq[k] >= 0) rlx_engine_seq_free(r->e, r->seq[k]);
    for (int32_t k = 0; k < b; k++) r->seq[k] = -1;
}

static void record(rlx_bench_par *t, int32_t rep, double pp, double tg) {
    t->pp.seconds[rep] = pp;
    t->pp.tps[rep] = (double)t->n_parallel * t->n_prompt / pp;
    t->tg.seconds[rep] = t->tg_seq.seconds[rep] = tg;
    t->tg.tps[rep] = (double)t->n_parallel * t->n_gen / tg;
    t->tg_seq.tps[rep] = t->n_gen / tg;
}

static rlx_status run_test(par_run *r, rlx_bench_par *t, bool progress) {
    for (int32_t rep = -1; rep < t->reps; rep++) {
        if (progress && rep < 0) fprintf(stderr, "\r\033[Krlx bench: %s B=%d warm-up", t->name, (int)t->n_parallel);
        if (progress && rep >= 0)
            fprintf(stderr, "\r\033[Krlx bench: %s B=%d %d/%d", t->name, (int)t->n_parallel, (int)rep + 1, (int)t->reps);
        double pp = 0.0, tg = 0.0;
        rlx_status s = once(r, t, &pp, &tg);
        free_seqs(r, t->n_parallel);
        RLX_TRY(s);
        if (rep < 0) continue;
        if (pp <= 0.0 || tg <= 0.0)
            return rlx_errorf(RLX_ERR_IO, "bench %s B=%d: repetition %d took no measurable time", t->name,
                              (int)t->n_parallel, (int)rep + 1);
        record(t, rep, pp, tg);
    }
    rlx_bench_test_stats(&t->pp);
    rlx_bench_test_stats(&t->tg);
    rlx_bench_test_stats(&t->tg_seq);
    return NULL;
}

/* ---- the engine ---- */

/* The engine options every test fits in (see rlx_bench_par_run). */
static rlx_status size_engine(const char *path, const rlx_bench_result *res, rlx_engine_opts *o) {
    int32_t max_b = 1, max_p = 1;
    int64_t tokens = 1;
    for (int i = 0; i < res->n_par; i++) {
        const rlx_bench_par *t = &res->par[i];
        if (t->n_parallel > max_b) max_b = t->n_parallel;
        if (t->n_prompt > max_p) max_p = t->n_prompt;
        if (rlx_bench_par_tokens(t) > tokens) tokens = rlx_bench_par_tokens(t);
    }
    if (tokens > INT32_MAX) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "bench: %lld tokens a sequence", (long long)tokens);
    if (o->model.n_ctx < tokens) o->model.n_ctx = (int32_t)tokens;
    int64_t all = 0, one_ctx = 0;
    RLX_TRY(rlx_engine_kv_memory_for(path, max_b, (int32_t)tokens, &all));
    RLX_TRY(rlx_engine_kv_memory_for(path, 1, o->model.n_ctx, &one_ctx)); /* the engine's floor */
    o->kv_memory = all > one_ctx ? all : one_ctx;
    o->max_rows = max_b > RLX_ENGINE_ROWS_DEFAULT ? max_b : RLX_ENGINE_ROWS_DEFAULT;
    o->chunk = max_p < o->max_rows ? max_p : o->max_rows;
    o->max_parallel = max_b;
    o->no_prefix_cache = true;
    o->no_preempt = true;
    return NULL;
}

rlx_status rlx_bench_par_run(const char *path, const rlx_runner_opts *opts, bool progress, rlx_bench_result *res) {
    rlx_engine_opts o = rlx_engine_opts_default();
    o.model = *opts;
    RLX_TRY(size_engine(path, res, &o));
    par_run r = {.rng = 0x9e3779b97f4a7c15ull, .vocab = (int32_t)res->model.config.n_vocab,
                 .bos = res->model.config.bos_id, .eos = res->model.config.eos_id};
    int32_t max_b = o.max_parallel, max_ids = 1;
    for (int i = 0; i < res->n_par; i++) {
        if (res->par[i].n_depth > max_ids) max_ids = res->par[i].n_depth;
        if (res->par[i].n_prompt > max_ids) max_ids = res->par[i].n_prompt;
    }
    if (r.vocab < 1) return rlx_errorf(RLX_ERR_BAD_FILE, "bench: the model's vocabulary is empty");
    r.ids = malloc((size_t)max_ids * sizeof *r.ids);
    r.seq = malloc((size_t)max_b * sizeof *r.seq);
    rlx_status s = r.ids && r.seq ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "bench: %d sequences", (int)max_b);
    for (int32_t k = 0; !s && k < max_b; k++) r.seq[k] = -1;
    if (!s) s = rlx_engine_open(path, &o, &r.e);
    if (!s) {
        res->backend = rlx_engine_backend_name(r.e);
        res->n_ctx = rlx_engine_n_ctx(r.e);
    }
    for (int i = 0; !s && i < res->n_par; i++) s = run_test(&r, &res->par[i], progress);
    if (progress) fprintf(stderr, "\r\033[K");
    rlx_engine_close(r.e);
    free(r.ids);
    free(r.seq);
    return s;
}
