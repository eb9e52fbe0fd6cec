#include "generate_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_input.h"
#include "cli_util.h"

static rlx_status push(rlx_gen_prompts *p, int32_t *ids, int32_t n, const char *file, int32_t line) {
    if (p->n == p->cap) {
        int32_t cap = p->cap ? 2 * p->cap : 8;
        rlx_gen_prompt *v = realloc(p->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(ids);
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "a list of %d prompts", (int)cap);
        }
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = (rlx_gen_prompt){.ids = ids, .n = n, .file = file, .line = line};
    return NULL;
}

rlx_status rlx_gen_prompts_add_ids(rlx_gen_prompts *p, const char *opt, const char *text) {
    int32_t *ids = NULL, n = 0, which = 1;
    RLX_TRY(rlx_cli_parse_ids(opt, text, &ids, &n));
    for (int32_t k = 0; k < p->n; k++) which += !p->v[k].file;
    return push(p, ids, n, NULL, which);
}

static bool blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t') return false;
    return true;
}

/* One line (NUL-terminated in place, its "\r" cut) as a prompt. */
static rlx_status add_line(rlx_gen_prompts *p, const char *path, char *text, int32_t line) {
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] == '\r') text[len - 1] = '\0';
    char where[300];
    snprintf(where, sizeof where, "%s%s%s line %d", strcmp(path, "-") ? "'" : "", strcmp(path, "-") ? path : "standard input",
             strcmp(path, "-") ? "'" : "", (int)line);
    if (blank(text))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--tokens-file: %s is blank (expected one prompt a line: "
                          "comma-separated token ids)", where);
    char opt[340];
    snprintf(opt, sizeof opt, "--tokens-file: %s", where);
    int32_t *ids = NULL, n = 0;
    RLX_TRY(rlx_cli_parse_ids(opt, text, &ids, &n));
    return push(p, ids, n, path, line);
}

rlx_status rlx_gen_prompts_add_file(rlx_gen_prompts *p, const char *path) {
    char *text = NULL;
    size_t len = 0;
    rlx_status s = rlx_cli_read_text(path, RLX_CLI_MAX_TEXT_BYTES, &text, &len);
    if (s) return rlx_status_annotate(s, "--tokens-file");
    if (strlen(text) != len) {
        free(text);
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--tokens-file: '%s' holds a NUL byte: not a list of ids", path);
    }
    int32_t line = 0, before = p->n;
    for (char *at = text; !s && *at;) {
        char *end = strchr(at, '\n');
        if (end) *end = '\0';
        s = add_line(p, path, at, ++line);
        at = end ? end + 1 : at + strlen(at);
    }
    free(text);
    if (!s && p->n == before)
        s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--tokens-file: '%s' holds no prompts (expected one a line)", path);
    return s;
}

void rlx_gen_prompts_free(rlx_gen_prompts *p) {
    for (int32_t k = 0; k < p->n; k++) free(p->v[k].ids);
    free(p->v);
    *p = (rlx_gen_prompts){0};
}

void rlx_gen_prompt_name(const rlx_gen_prompts *p, int32_t k, char *buf, size_t size) {
    const rlx_gen_prompt *q = &p->v[k];
    if (q->file && strcmp(q->file, "-"))
        snprintf(buf, size, "prompt %d ('%s' line %d)", (int)k + 1, q->file, (int)q->line);
    else if (q->file)
        snprintf(buf, size, "prompt %d (standard input line %d)", (int)k + 1, (int)q->line);
    else
        snprintf(buf, size, "prompt %d (--tokens %d)", (int)k + 1, (int)q->line);
}

/* ---- the run ---- */

typedef struct batch_run {
    const rlx_gen_batch *b;
    rlx_engine *e;
    int32_t *seq;   /* owned, per prompt: its engine sequence, -1 once printed or when it never started */
    char **error;   /* owned, per prompt: why it could not start (NULL: it started) */
    int32_t next;   /* the first prompt not printed yet */
    int64_t n_generated, n_prompt_tokens;
    int32_t n_failed;
} batch_run;

static rlx_status check_vocab(const batch_run *r, bool *bad_ids) {
    int32_t vocab = rlx_engine_vocab_size(r->e);
    for (int32_t k = 0; k < r->b->prompts->n; k++) {
        const rlx_gen_prompt *q = &r->b->prompts->v[k];
        for (int32_t i = 0; i < q->n; i++) {
            if (q->ids[i] < vocab) continue;
            char name[400];
            rlx_gen_prompt_name(r->b->prompts, k, name, sizeof name);
            *bad_ids = true;
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: item %d, id %d, is outside the vocabulary [0, %d) of '%s'",
                              name, (int)i + 1, (int)q->ids[i], (int)vocab, r->b->model);
        }
    }
    return NULL;
}

/* Every prompt becomes a sequence; one that cannot (too long for the context) fails alone. */
static rlx_status start_all(batch_run *r) {
    rlx_seq_opts so = {.sample = r->b->sample, .n_new = r->b->n_new};
    for (int32_t k = 0; k < r->b->prompts->n; k++) {
        const rlx_gen_prompt *q = &r->b->prompts->v[k];
        int32_t id = -1;
        RLX_TRY(rlx_engine_seq_create(r->e, &so, &id)); /* only out of memory: the engine's error */
        rlx_status s = rlx_engine_seq_append(r->e, id, q->ids, q->n);
        if (s) {
            rlx_engine_seq_free(r->e, id);
            r->error[k] = strdup(rlx_status_message(s));
            rlx_status_free(s);
            if (!r->error[k]) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "an error message");
            continue;
        }
        r->seq[k] = id;
        r->n_prompt_tokens += q->n;
    }
    return NULL;
}

static void print_failure(batch_run *r, int32_t k, const char *why) {
    char name[400];
    rlx_gen_prompt_name(r->b->prompts, k, name, sizeof name);
    fprintf(stderr, "rlx generate: %s: %s\n", name, why);
    r->n_failed++;
}

/* Prompt k's line: its generated ids (kept by the engine), or an empty line and an error. */
static void print_one(batch_run *r, int32_t k) {
    int32_t id = r->seq[k];
    if (id < 0) {
        print_failure(r, k, r->error[k]);
    } else if (rlx_engine_seq_state(r->e, id) == RLX_SEQ_FAILED) {
        print_failure(r, k, rlx_engine_seq_error(r->e, id));
    } else {
        int32_t n;
        const int32_t *t = rlx_engine_seq_tokens(r->e, id, &n);
        int32_t from = r->b->prompts->v[k].n;
        for (int32_t i = from; i < n; i++) printf(i == from ? "%d" : " %d", t[i]);
        r->n_generated += n - from;
    }
    printf("\n");
    fflush(stdout); /* stream: a reader sees each prompt's line as soon as it is done */
    if (id >= 0) rlx_engine_seq_free(r->e, id);
    r->seq[k] = -1;
}

static bool finished(const batch_run *r, int32_t k) {
    if (r->seq[k] < 0) return true;
    rlx_seq_state st = rlx_engine_seq_state(r->e, r->seq[k]);
    return st == RLX_SEQ_DONE || st == RLX_SEQ_FAILED;
}

static rlx_status step_all(batch_run *r) {
    int32_t n = r->b->prompts->n;
    for (;;) {
        while (r->next < n && finished(r, r->next)) print_one(r, r->next++);
        if (r->next == n) return NULL;
        if (!rlx_engine_busy(r->e))
            return rlx_errorf(RLX_ERR_INTERNAL, "generate: the engine is idle but prompt %d is not done",
                              (int)r->next + 1);
        RLX_TRY(rlx_engine_step(r->e));
    }
}

static void report_speed(const batch_run *r, double seconds) {
    rlx_engine_stats st = rlx_engine_get_stats(r->e);
    int32_t n = r->b->prompts->n;
    fprintf(stderr, "rlx generate: %s on %s, %d prompts (%d at once at most)\n", rlx_engine_family(r->e),
            rlx_engine_backend_name(r->e), (int)n,
            r->b->opts.max_parallel > 0 && r->b->opts.max_parallel < n ? (int)r->b->opts.max_parallel : (int)n);
    fprintf(stderr, "  %lld prompt tokens, %lld generated tokens in %.2f ms (%lld steps)\n",
            (long long)r->n_prompt_tokens, (long long)r->n_generated, seconds * 1e3, (long long)st.n_steps);
    fprintf(stderr, "  aggregate: %.1f generated tokens/s, %.1f tokens/s with the prompts\n",
            seconds > 0 ? (double)r->n_generated / seconds : 0.0,
            seconds > 0 ? (double)(r->n_generated + r->n_prompt_tokens) / seconds : 0.0);
}

rlx_status rlx_gen_batch_run(const rlx_gen_batch *b, bool *bad_ids, int32_t *n_failed) {
    int32_t n = b->prompts->n;
    batch_run r = {.b = b, .seq = malloc((size_t)n * sizeof *r.seq), .error = calloc((size_t)n, sizeof *r.error)};
    *n_failed = 0;
    if (!r.seq || !r.error) {
        free(r.seq);
        free(r.error);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "generate: %d prompts", (int)n);
    }
    for (int32_t k = 0; k < n; k++) r.seq[k] = -1;
    rlx_status s = rlx_engine_open(b->model, &b->opts, &r.e); /* its messages name the path */
    if (!s) s = check_vocab(&r, bad_ids);
    double t0 = rlx_cli_now();
    if (!s) s = start_all(&r);
    if (!s) s = step_all(&r);
    if (!s) report_speed(&r, rlx_cli_now() - t0);
    *n_failed = r.n_failed;
    for (int32_t k = 0; k < n; k++) free(r.error[k]);
    free(r.error);
    free(r.seq);
    rlx_engine_close(r.e);
    return s;
}
