/* A randomized property test of the engine's books for a recurrent model (qwen35: Gated DeltaNet
 * state slots, checkpoints, rewinds; runners/engine_state.c) on the CPU backend.
 *
 *   test_engine_props [MODEL]   (default models/qwen35/qwen35-F32.gguf, under the fixtures root)
 *   RLX_PROP_SEED=N, RLX_PROP_OPS=N: another seed (default 1), another length (default 300);
 *   RLX_PROP_TRACE=1: every operation and the books after it
 *
 * A seeded random sequence of operations - create + append a prompt (half of them starting with an
 * earlier history, so the checkpoint prefix cache is hit), step, run, a next turn, fork, truncate
 * (anywhere: before, at and after checkpoints), an explicit checkpoint, free (also mid-run) - on
 * an engine with a small page pool, three state slots and four checkpoints, so preemption,
 * eviction, slot reuse and checkpoint replacement all happen. The model the engine is checked
 * against is simple: each sequence is its token history. Properties:
 *  - after every operation the books agree (rlx_engine_check: the pool's own check, each page's
 *    count == the tables holding it, no state slot held twice, checkpoints within their bound,
 *    rlx_engine_get_stats == the books), and each sequence's tokens are its history;
 *  - every finished sequence's generated ids (greedy) and last logits equal those of its history
 *    run alone on a reference engine (one sequence at a time, no prefix cache: every row computed
 *    from position 0). In prefill chunks of 1 row every position is a one-row step however the run
 *    went (resumed, rewound, preempted, batched), so the CPU gives the same bits; in chunks of 5
 *    the delta rule's chunked form rounds by where a chunk starts (ir/ops.def DELTA_RULE), so the
 *    fixtures' f32 tolerance holds (max|Δlogit| <= 1e-3), and ids are equal up to the first step
 *    whose margin (top1 - top2, alone) is below twice that, as in test_engine;
 *  - the runs exercised what they are for: preemptions, rewinds, checkpoint hits and checkpoints
 *    replaced all happened (else the test proves nothing and fails). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/engine.h"
#include "runners/engine_internal.h"
#include "test_util.h"

#define N_CTX 64
#define MAX_SEQS 8
#define MAX_HIST 16 /* remembered histories new prompts may start with */
#define MAX_GEN 12
#define SLOTS 3
#define CKPTS 4
#ifndef POOL_CTX
#define POOL_CTX 1
#endif

static const char *g_model;
static int32_t g_vocab;
static float g_tol;      /* 0: the same bits */
static int32_t g_chunk;
static char g_op[160];   /* the operation under way, for messages */
static int g_op_no;
static bool g_trace; /* RLX_PROP_TRACE set: every operation and the books after it */

static uint64_t g_rng;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
static int32_t rnd_in(int32_t lo, int32_t hi) { /* [lo, hi] */
    return lo + (int32_t)(rnd() % (uint32_t)(hi - lo + 1));
}

/* One sequence of the model: its history, and what its last append asked for. */
typedef struct mseq {
    bool live;
    int32_t id;
    int32_t hist[N_CTX], n;  /* the tokens the engine must hold */
    int32_t prompt_n;        /* the history when generation began (the last append's end) */
    int32_t n_new;
    bool pending;            /* appended: its result is checked when it finishes */
} mseq;

static mseq g_seqs[MAX_SEQS];
static int32_t g_hist[MAX_HIST][N_CTX], g_hist_n[MAX_HIST], g_n_hist, g_last_hist;

typedef struct counts {
    int64_t checked, bits_equal, near_ties, ops[10];
    double worst;
} counts;
static counts g_counts;
/* over every run: what the runs reached */
static struct {
    int64_t preempted, rewinds, hits, made, checked;
} g_total;

/* ---- the reference: a history alone ---- */

typedef struct margins {
    rlx_engine *e;
    int32_t id, n;
    float m[MAX_GEN];
} margins;

static bool record_margin(int32_t token, void *user) {
    (void)token;
    margins *m = user;
    int32_t rows = 0;
    const float *lg = rlx_engine_seq_logits(m->e, m->id, &rows);
    float a = -INFINITY, b = -INFINITY;
    for (int32_t i = 0; lg && i < g_vocab; i++) {
        if (lg[i] > a) {
            b = a;
            a = lg[i];
        } else if (lg[i] > b) {
            b = lg[i];
        }
    }
    if (m->n < MAX_GEN) m->m[m->n++] = a - b;
    return true;
}

static rlx_engine *open_engine(bool reference) {
    rlx_engine_opts o = rlx_engine_opts_default();
    o.model.backend = "cpu";
    o.model.n_threads = 2;
    o.model.n_ctx = N_CTX;
    o.chunk = g_chunk;
    if (reference) {
        o.no_prefix_cache = true;
    } else {
        /* one full context of pages (and the spare) for three state slots and four checkpoints:
         * the pool runs out */
        o.max_rows = 12;
        o.max_parallel = SLOTS;
        o.checkpoints = CKPTS;
        if (!T_OK(rlx_engine_kv_memory_for(g_model, POOL_CTX, N_CTX, &o.kv_memory))) exit(t_summary("test_engine_props"));
    }
    rlx_engine *e = NULL;
    if (!T_OK(rlx_engine_open(g_model, &o, &e))) exit(t_summary("test_engine_props"));
    return e;
}

/* The ids and last logits of hist[0..n) with n_new greedy tokens, alone. */
static bool alone(rlx_engine *ref, const int32_t *hist, int32_t n, int32_t n_new, int32_t *ids, float *logits,
                  margins *m) {
    *m = (margins){.e = ref};
    rlx_seq_opts so = {.n_new = n_new, .sample = rlx_sample_opts_greedy(), .keep_logits = true,
                       .on_token = record_margin, .user = m};
    so.sample.ignore_eos = true;
    int32_t id, len, rows = 0;
    if (!T_OK(rlx_engine_seq_create(ref, &so, &id))) return false;
    m->id = id;
    bool ok = T_OK(rlx_engine_seq_append(ref, id, hist, n)) && T_OK(rlx_engine_run(ref));
    const int32_t *t = rlx_engine_seq_tokens(ref, id, &len);
    const float *lg = rlx_engine_seq_logits(ref, id, &rows);
    ok = ok && len == n + n_new && lg && rows == 1;
    T_CHECK(ok, "reference of %d tokens + %d: %d tokens, %d rows of logits", n, n_new, len, rows);
    if (ok) {
        memcpy(ids, t + n, (size_t)n_new * sizeof *ids);
        memcpy(logits, lg, (size_t)g_vocab * sizeof *logits);
    }
    rlx_engine_seq_free(ref, id);
    return ok;
}

/* ---- checks ---- */

/* Who holds what, printed after a failed check. */
static void dump_books(const rlx_engine *e) {
    static const char *const states[] = {"running", "waiting", "idle", "done", "failed"};
    for (int32_t i = 0; i < e->n_seqs; i++) {
        const eng_seq *s = &e->seqs[i];
        if (!s->used) continue;
        printf("    sequence %d: %s, %d tokens, %s, slot %d, %d computed, owed to %d, pages", (int)i, states[s->state],
               (int)s->n_tokens, s->resident ? "resident" : "not resident", (int)s->slot, (int)s->table.n_tokens,
               (int)s->recompute_to);
        for (int32_t k = 0; k < s->table.n_pages; k++) printf(" %d", (int)s->table.pages[k]);
        printf("\n");
    }
    for (int32_t i = 0; i < e->n_ckpts; i++) {
        const eng_ckpt *c = &e->ckpts[i];
        if (c->n_tokens == 0) continue;
        printf("    checkpoint %d: %d tokens, owner %d, pages", (int)i, (int)c->n_tokens, (int)c->owner);
        for (int32_t k = 0; k < c->table.n_pages; k++) printf(" %d", (int)c->table.pages[k]);
        printf("\n");
    }
}

static void check_books(rlx_engine *e) {
    int failures = t_failures;
    rlx_status st = rlx_engine_check(e);
    T_CHECK(!st, "op %d (%s): the books disagree: %s", g_op_no, g_op, rlx_status_message(st));
    rlx_status_free(st);
    for (int k = 0; k < MAX_SEQS; k++) {
        mseq *m = &g_seqs[k];
        if (!m->live) continue;
        int32_t n;
        const int32_t *t = rlx_engine_seq_tokens(e, m->id, &n);
        /* a generating sequence's history is its prompt so far */
        int32_t want = m->pending ? m->prompt_n : m->n;
        bool ok = (m->pending ? n >= want && n <= want + m->n_new : n == want) &&
                  (want == 0 || memcmp(t, m->hist, (size_t)want * sizeof *t) == 0);
        T_CHECK(ok, "op %d (%s): sequence %d holds %d tokens, its history %d%s", g_op_no, g_op, (int)m->id, (int)n,
                (int)want, m->pending ? " + its generation" : "");
        T_CHECK(rlx_engine_seq_state(e, m->id) != RLX_SEQ_FAILED, "op %d (%s): sequence %d failed: %s", g_op_no, g_op,
                (int)m->id, rlx_engine_seq_error(e, m->id));
    }
    if (t_failures != failures) dump_books(e);
}

static void remember(const int32_t *hist, int32_t n) {
    if (n < 2) return;
    int32_t slot = g_n_hist < MAX_HIST ? g_n_hist++ : (int32_t)(rnd() % MAX_HIST);
    memcpy(g_hist[slot], hist, (size_t)n * sizeof *hist);
    g_hist_n[slot] = n;
    g_last_hist = slot;
}

/* A finished sequence against its history alone. */
static void check_finished(rlx_engine *e, rlx_engine *ref, mseq *m, float *want, int32_t *want_ids) {
    int32_t n, rows = 0;
    const int32_t *t = rlx_engine_seq_tokens(e, m->id, &n);
    T_CHECK(n == m->prompt_n + m->n_new, "op %d: sequence %d finished with %d tokens, expected %d + %d", g_op_no,
            (int)m->id, (int)n, (int)m->prompt_n, (int)m->n_new);
    if (n != m->prompt_n + m->n_new) return;
    memcpy(m->hist + m->prompt_n, t + m->prompt_n, (size_t)m->n_new * sizeof *t);
    m->n = n;
    m->pending = false;
    remember(m->hist, m->prompt_n);
    remember(m->hist, m->n);
    margins mg;
    if (!alone(ref, m->hist, m->prompt_n, m->n_new, want_ids, want, &mg)) return;
    int32_t at = 0;
    while (at < m->n_new && want_ids[at] == m->hist[m->prompt_n + at]) at++;
    g_counts.checked++;
    if (at < m->n_new && g_tol > 0 && mg.m[at] < 2 * g_tol) {
        g_counts.near_ties++; /* the rest follows another token: nothing more to compare */
        return;
    }
    T_CHECK(at == m->n_new, "op %d: sequence %d (%d tokens + %d generated): id %d differs from its history alone "
            "(margin there %.3g)", g_op_no, (int)m->id, (int)m->prompt_n, (int)m->n_new, (int)at,
            at < m->n_new ? mg.m[at] : 0.0);
    const float *lg = rlx_engine_seq_logits(e, m->id, &rows);
    T_CHECK(lg && rows == 1, "op %d: sequence %d kept %d rows of logits", g_op_no, (int)m->id, (int)rows);
    if (!lg || rows != 1) return;
    double d = 0;
    for (int32_t v = 0; v < g_vocab; v++) d = fmax(d, fabs((double)lg[v] - (double)want[v]));
    bool bits = memcmp(lg, want, (size_t)g_vocab * sizeof *lg) == 0;
    g_counts.bits_equal += bits;
    g_counts.worst = fmax(g_counts.worst, d);
    if (g_tol == 0)
        T_CHECK(bits, "op %d: sequence %d (%d tokens + %d): last logits differ from alone (max|Δ| %.3g; expected the "
                "same bits in chunks of 1)", g_op_no, (int)m->id, (int)m->prompt_n, (int)m->n_new, d);
    else
        T_CHECK(d <= g_tol, "op %d: sequence %d (%d tokens + %d): last logits max|Δ| %.3g against alone > %g",
                g_op_no, (int)m->id, (int)m->prompt_n, (int)m->n_new, d, g_tol);
}

static void check_all_finished(rlx_engine *e, rlx_engine *ref, float *want, int32_t *want_ids) {
    for (int k = 0; k < MAX_SEQS; k++) {
        mseq *m = &g_seqs[k];
        rlx_seq_state s = m->live ? rlx_engine_seq_state(e, m->id) : RLX_SEQ_RUNNING;
        if (m->live && m->pending && (s == RLX_SEQ_DONE || s == RLX_SEQ_IDLE)) check_finished(e, ref, m, want, want_ids);
    }
}

/* ---- operations ---- */

enum { OP_NEW, OP_STEP, OP_RUN, OP_TURN, OP_FORK, OP_TRUNCATE, OP_CHECKPOINT, OP_FREE, OP_COUNT };
static const char *const g_op_names[OP_COUNT] = {"new", "step", "run", "turn", "fork", "truncate", "checkpoint",
                                                 "free"};

static mseq *pick(bool finished_only) {
    int idx[MAX_SEQS], n = 0;
    for (int k = 0; k < MAX_SEQS; k++)
        if (g_seqs[k].live && (!finished_only || !g_seqs[k].pending)) idx[n++] = k;
    return n ? &g_seqs[idx[rnd() % (uint32_t)n]] : NULL;
}

static mseq *free_model_seq(void) {
    for (int k = 0; k < MAX_SEQS; k++)
        if (!g_seqs[k].live) return &g_seqs[k];
    return NULL;
}

static void random_tokens(int32_t *out, int32_t n) {
    for (int32_t i = 0; i < n; i++) out[i] = (int32_t)(rnd() % (uint32_t)g_vocab);
}

/* Appends to m's history: n tokens (random), then n_new generated. */
static void append(rlx_engine *e, mseq *m, int32_t n, int32_t n_new) {
    rlx_seq_opts so = {.n_new = n_new, .sample = rlx_sample_opts_greedy(), .keep_logits = true};
    so.sample.ignore_eos = true;
    random_tokens(m->hist + m->n, n);
    T_OK(rlx_engine_seq_set_opts(e, m->id, &so));
    T_OK(rlx_engine_seq_append(e, m->id, m->hist + m->n, n));
    m->n += n;
    m->prompt_n = m->n;
    m->n_new = n_new;
    m->pending = true;
}

/* A new sequence: a remembered history's prefix (checkpoints sit at such ends) and new tokens, or
 * new tokens alone. */
static void op_new(rlx_engine *e) {
    mseq *m = free_model_seq();
    if (!m) return;
    *m = (mseq){.live = true};
    rlx_seq_opts so = {.keep_logits = true};
    if (!T_OK(rlx_engine_seq_create(e, &so, &m->id))) {
        m->live = false;
        return;
    }
    if (g_n_hist > 0 && rnd() % 2) {
        /* mostly the latest history: its checkpoints are the likeliest to survive */
        int32_t h = rnd() % 4 ? g_last_hist : (int32_t)(rnd() % (uint32_t)g_n_hist), keep = g_hist_n[h];
        if (rnd() % 3 == 0) keep = rnd_in(1, keep); /* anywhere: the checkpoint before it resumes */
        if (keep > N_CTX - 1 - MAX_GEN) keep = N_CTX - 1 - MAX_GEN;
        memcpy(m->hist, g_hist[h], (size_t)keep * sizeof *m->hist);
        m->n = keep;
    }
    int32_t room = N_CTX - m->n - MAX_GEN;
    int32_t n = rnd_in(1, room < 32 ? room : 32), n_new = rnd_in(0, MAX_GEN);
    /* the remembered prefix goes in with the new tokens, as one prompt */
    int32_t before = m->n;
    random_tokens(m->hist + before, n);
    rlx_seq_opts go = {.n_new = n_new, .sample = rlx_sample_opts_greedy(), .keep_logits = true};
    go.sample.ignore_eos = true;
    T_OK(rlx_engine_seq_set_opts(e, m->id, &go));
    T_OK(rlx_engine_seq_append(e, m->id, m->hist, before + n));
    m->n = before + n;
    m->prompt_n = m->n;
    m->n_new = n_new;
    m->pending = true;
    snprintf(g_op, sizeof g_op, "new sequence %d: %d tokens (%d of an earlier history) + %d", (int)m->id,
             (int)m->n, (int)before, (int)n_new);
}

static void op_turn(rlx_engine *e) {
    mseq *m = pick(true);
    if (!m || m->n > N_CTX - 2 - MAX_GEN) return;
    int32_t room = N_CTX - m->n - MAX_GEN;
    int32_t n = rnd_in(1, room < 24 ? room : 24), n_new = rnd_in(0, MAX_GEN);
    snprintf(g_op, sizeof g_op, "turn of sequence %d: %d tokens after %d, + %d", (int)m->id, (int)n, (int)m->n,
             (int)n_new);
    append(e, m, n, n_new);
}

static void op_fork(rlx_engine *e) {
    mseq *src = pick(true), *dst = free_model_seq();
    if (!src || !dst) return;
    int32_t id;
    if (!T_OK(rlx_engine_seq_fork(e, src->id, &id))) return;
    *dst = *src;
    dst->id = id;
    snprintf(g_op, sizeof g_op, "fork of sequence %d (%d tokens) as %d", (int)src->id, (int)src->n, (int)id);
}

static void op_truncate(rlx_engine *e) {
    mseq *m = pick(true);
    if (!m) return;
    /* anywhere, often at or next to where generation began (a checkpoint) */
    int32_t n = rnd_in(0, m->n);
    if (rnd() % 2) n = m->prompt_n + rnd_in(-1, 1);
    if (n < 0) n = 0;
    if (n > m->n) n = m->n;
    snprintf(g_op, sizeof g_op, "truncate sequence %d from %d to %d tokens", (int)m->id, (int)m->n, (int)n);
    int32_t before = rlx_engine_seq_n_computed(e, m->id);
    if (!T_OK(rlx_engine_seq_truncate(e, m->id, n))) return;
    /* the positions kept are held (a rewind owes them), never more */
    int32_t held = rlx_engine_seq_n_computed(e, m->id), want = before < n ? before : n;
    T_CHECK(held == want, "op %d (%s): %d positions held after it, expected %d (%d before)", g_op_no, g_op, (int)held,
            (int)want, (int)before);
    m->n = n;
    if (m->prompt_n > n) m->prompt_n = n;
}

static void op_checkpoint(rlx_engine *e) {
    mseq *m = pick(true);
    if (!m) return;
    snprintf(g_op, sizeof g_op, "checkpoint of sequence %d (%d tokens)", (int)m->id, (int)m->n);
    T_OK(rlx_engine_seq_checkpoint(e, m->id));
}

static void op_free(rlx_engine *e) {
    mseq *m = pick(false);
    if (!m) return;
    snprintf(g_op, sizeof g_op, "free sequence %d (%s)", (int)m->id, m->pending ? "mid-run" : "finished");
    rlx_engine_seq_free(e, m->id);
    m->live = false;
}

static int pick_op(void) {
    /* weights: steps most, then new prompts and turns */
    static const int w[OP_COUNT] = {12, 30, 3, 18, 6, 10, 6, 6};
    int total = 0;
    for (int i = 0; i < OP_COUNT; i++) total += w[i];
    int r = (int)(rnd() % (uint32_t)total);
    for (int i = 0; i < OP_COUNT; i++) {
        if (r < w[i]) return i;
        r -= w[i];
    }
    return OP_STEP;
}

static void run_ops(uint64_t seed, int32_t n_ops) {
    g_rng = seed * 2654435761u + 0x9e3779b97f4a7c15ull;
    memset(g_seqs, 0, sizeof g_seqs);
    memset(&g_counts, 0, sizeof g_counts);
    g_n_hist = 0;
    rlx_engine *e = open_engine(false), *ref = open_engine(true);
    float *want = malloc((size_t)g_vocab * sizeof *want);
    int32_t want_ids[MAX_GEN];
    int failures = t_failures; /* the first failure ends the run: what follows it proves little */
    for (g_op_no = 0; g_op_no < n_ops && t_failures == failures; g_op_no++) {
        int op = pick_op();
        snprintf(g_op, sizeof g_op, "%s", g_op_names[op]);
        g_counts.ops[op]++;
        switch (op) {
        case OP_NEW: op_new(e); break;
        case OP_STEP: T_OK(rlx_engine_step(e)); break;
        case OP_RUN: T_OK(rlx_engine_run(e)); break;
        case OP_TURN: op_turn(e); break;
        case OP_FORK: op_fork(e); break;
        case OP_TRUNCATE: op_truncate(e); break;
        case OP_CHECKPOINT: op_checkpoint(e); break;
        default: op_free(e); break;
        }
        if (g_trace) {
            printf("  op %d: %s\n", g_op_no, g_op);
            dump_books(e);
        }
        check_books(e);
        check_all_finished(e, ref, want, want_ids);
    }
    /* the rest run out, then everything goes: only checkpoints hold pages */
    snprintf(g_op, sizeof g_op, "the last run");
    T_OK(rlx_engine_run(e));
    check_books(e);
    check_all_finished(e, ref, want, want_ids);
    for (int k = 0; k < MAX_SEQS; k++)
        if (g_seqs[k].live) rlx_engine_seq_free(e, g_seqs[k].id);
    memset(g_seqs, 0, sizeof g_seqs);
    snprintf(g_op, sizeof g_op, "every sequence freed");
    check_books(e);
    rlx_engine_stats st = rlx_engine_get_stats(e);
    printf("  chunks of %d, seed %llu, %d operations (new %lld, step %lld, run %lld, turn %lld, fork %lld, truncate "
           "%lld, checkpoint %lld, free %lld)\n", (int)g_chunk, (unsigned long long)seed, (int)n_ops,
           (long long)g_counts.ops[0], (long long)g_counts.ops[1], (long long)g_counts.ops[2],
           (long long)g_counts.ops[3], (long long)g_counts.ops[4], (long long)g_counts.ops[5],
           (long long)g_counts.ops[6], (long long)g_counts.ops[7]);
    printf("    %lld finished sequences == alone (%lld the same bits, %lld near-ties; max|Δlogit| %.3g); %lld steps, "
           "%lld preempted, %lld rewinds, %lld checkpoints made (%d held of %d), %lld of %lld prefix tokens from "
           "checkpoints; a pool of %d pages\n", (long long)g_counts.checked, (long long)g_counts.bits_equal,
           (long long)g_counts.near_ties, g_counts.worst, (long long)st.n_steps, (long long)st.n_preempted,
           (long long)st.n_rewinds, (long long)st.checkpoints_made, st.checkpoints_held, st.state_ckpt_slots,
           (long long)st.prefix_hits, (long long)st.prefix_queries, st.n_pages);
    g_total.preempted += st.n_preempted;
    g_total.rewinds += st.n_rewinds;
    g_total.hits += st.prefix_hits;
    g_total.made += st.checkpoints_made;
    g_total.checked += g_counts.checked;
    free(want);
    rlx_engine_close(ref);
    rlx_engine_close(e);
}

int main(int argc, char **argv) {
    const char *rel = argc > 1 ? argv[1] : "models/qwen35/qwen35-F32.gguf";
    t_require_fixture(rel);
    g_model = t_fixture(rel);
    g_trace = getenv("RLX_PROP_TRACE") != NULL;
    const char *seed_s = getenv("RLX_PROP_SEED"), *ops_s = getenv("RLX_PROP_OPS");
    uint64_t seed = seed_s ? strtoull(seed_s, NULL, 10) : 1;
    int32_t n_ops = ops_s ? (int32_t)strtol(ops_s, NULL, 10) : 300;
    g_chunk = 1;
    rlx_engine *e = open_engine(true);
    g_vocab = rlx_engine_vocab_size(e);
    T_CHECK(rlx_engine_get_stats(e).state_seq_slots > 0, "%s has no recurrent layers", g_model);
    rlx_engine_close(e);
    printf("test_engine_props on %s (cpu)\n", g_model);
    /* one-row chunks: the same bits as alone */
    g_tol = 0;
    run_ops(seed, n_ops);
    /* chunks of 5: the f32 tolerance */
    g_chunk = 5;
    g_tol = 1e-3f;
    run_ops(seed + 1, n_ops);
    /* runs that never reached these prove nothing about them */
    T_CHECK(g_total.preempted > 0 && g_total.rewinds > 0 && g_total.hits > 0 && g_total.made > 2 * CKPTS &&
                g_total.checked > 40,
            "the runs exercised too little: %lld preempted, %lld rewinds, %lld prefix hits, %lld checkpoints made, "
            "%lld sequences checked", (long long)g_total.preempted, (long long)g_total.rewinds,
            (long long)g_total.hits, (long long)g_total.made, (long long)g_total.checked);
    return t_summary("test_engine_props");
}
