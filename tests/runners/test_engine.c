/* The engine's properties on the CPU reference, where they hold bit for bit (ir/ops.def: a row's
 * result never depends on the batch): batched == alone (sequences joining and leaving mid-run,
 * prompts chunked and mixed with decode rows), chunked prefill == one-shot, fork and copy-on-write,
 * prefix sharing, preemption == no preemption, out of pages without preemption, truncate, verify ==
 * decode steps. Expected values are always the same engine run alone or unchunked: a property.
 *
 * On Vulkan (--vulkan) with --deterministic the same properties hold bit for bit; in the default
 * mode within the fixtures' tolerance (README: f16 / mixed compute max|Δlogit| <= 3e-2), and greedy
 * ids match up to the first step whose margin (top1 - top2 logit, alone) is below twice that.
 *
 * A model with recurrent layers (qwen35: Gated DeltaNet) holds bit for bit only where the rows run
 * in the same chunks: its delta rule's chunked form rounds by where a chunk starts (ir/ops.def
 * DELTA_RULE), so chunked, batched and forked runs are held to the fixtures' f32 tolerance on the
 * CPU (README: max|Δlogit| <= 1e-3) with the same near-tie rule, and its prefix cache starts only
 * at a checkpoint (a whole earlier turn here).
 *
 * Usage: test_engine [--vulkan] [--deterministic] [MODEL]  (default: the embedded stories260K; a
 * fixture path is relative to the fixtures root) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/engine.h"
#include "test_util.h"

#define N_PROMPTS 5
#define N_NEW 12
#define MAX_TOK 256

/* the tolerance where not bit for bit: f16 / mixed compute (Vulkan), or f32 (a recurrent model on the
 * CPU) */
static float g_tol = 3e-2f;
#define NEAR_TIE (2 * g_tol)

static const char *g_model;
static int32_t g_vocab;
static const char *g_backend = "cpu";
static bool g_det;   /* --deterministic */
static bool g_exact; /* bit for bit: the CPU, or Vulkan deterministic, and no recurrent layer */
static bool g_recurrent; /* the model has recurrent layers (state slots) */
/* Margins of the alone runs of each prompt slot, per step, for the near-tie rule. */
static float g_margin[N_PROMPTS][64];

typedef struct prompt {
    int32_t ids[MAX_TOK];
    int32_t n;
} prompt;

static prompt g_prompts[N_PROMPTS];

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}

static rlx_engine *open_engine(rlx_engine_opts o) {
    o.model.backend = g_backend;
    o.model.n_threads = 2;
    o.deterministic = g_det;
    if (!o.model.n_ctx) o.model.n_ctx = 256;
    rlx_engine *e = NULL;
    if (!T_OK(rlx_engine_open(g_model, &o, &e))) exit(t_summary("test_engine"));
    return e;
}

static int32_t add_seq(rlx_engine *e, const prompt *p, int32_t n_new, const rlx_sample_opts *so) {
    rlx_seq_opts o = {.n_new = n_new, .sample = so ? *so : rlx_sample_opts_greedy()};
    o.sample.ignore_eos = true;
    int32_t id = -1;
    T_OK(rlx_engine_seq_create(e, &o, &id));
    T_OK(rlx_engine_seq_append(e, id, p->ids, p->n));
    return id;
}

/* The generated ids of a sequence (after its prompt of n_prompt). */
static void generated(const rlx_engine *e, int32_t id, int32_t n_prompt, int32_t *out, int32_t *n) {
    int32_t len;
    const int32_t *t = rlx_engine_seq_tokens(e, id, &len);
    *n = len - n_prompt;
    if (*n > 0) memcpy(out, t + n_prompt, (size_t)*n * sizeof *out);
}

typedef struct margin_rec {
    rlx_engine *e;
    int32_t id, n;
    float *m;
} margin_rec;

/* top1 - top2 of the logits the token was picked from (kept: keep_logits) */
static bool record_margin(int32_t token, void *user) {
    (void)token;
    margin_rec *m = user;
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
    if (m->n < 64) m->m[m->n++] = a - b;
    return true;
}

/* A prompt alone: its ids, and in g_margin the margin of each step. */
static void alone_n(int32_t k, const rlx_sample_opts *so, int32_t n_new, int32_t *out, int32_t *n) {
    rlx_engine *e = open_engine(rlx_engine_opts_default());
    margin_rec rec = {.e = e, .m = g_margin[k]};
    rlx_seq_opts o = {.n_new = n_new, .sample = so ? *so : rlx_sample_opts_greedy(), .keep_logits = true,
                      .on_token = record_margin, .user = &rec};
    o.sample.ignore_eos = true;
    int32_t id = -1;
    T_OK(rlx_engine_seq_create(e, &o, &id));
    rec.id = id;
    T_OK(rlx_engine_seq_append(e, id, g_prompts[k].ids, g_prompts[k].n));
    T_OK(rlx_engine_run(e));
    T_CHECK(rlx_engine_seq_state(e, id) == RLX_SEQ_DONE, "prompt %d alone: state %d", k, rlx_engine_seq_state(e, id));
    generated(e, id, g_prompts[k].n, out, n);
    rlx_engine_close(e);
}

static void alone(int32_t k, const rlx_sample_opts *so, int32_t *out, int32_t *n) {
    alone_n(k, so, N_NEW, out, n);
}

/* a (batched) against b (alone, whose margins are in g_margin): equal, or, where not bit for bit,
 * equal up to a near-tie of the alone run. */
static void expect_same(const char *what, int32_t k, const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
    const float *margin = g_margin[k];
    bool same = na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
    int32_t at = 0;
    while (at < na && at < nb && a[at] == b[at]) at++;
    if (!same && !g_exact && at < nb && at < 64 && margin[at] < NEAR_TIE) {
        printf("  %s: prompt %d diverges at step %d, a near-tie alone (margin %.3g < %.3g)\n", what, k, at,
               margin[at], NEAR_TIE);
        return;
    }
    T_CHECK(same, "%s: prompt %d: %d ids vs %d alone, first difference at %d (margin there %.3g)", what, k, na, nb,
            at, at < 64 ? margin[at] : 0.0);
}

/* Every sequence's ids in a batched run against its ids alone. Sequences 3 and 4 join after a few
 * steps; chunk 5 cuts the prompts into chunks that share steps with decode rows. */
static void test_batched_equals_alone(const rlx_sample_opts *so, const char *what) {
    int32_t ref[N_PROMPTS][N_NEW + 1], n_ref[N_PROMPTS];
    for (int k = 0; k < N_PROMPTS; k++) alone(k, so, ref[k], &n_ref[k]);
    rlx_engine_opts o = rlx_engine_opts_default();
    o.chunk = 5;
    o.max_rows = 16;
    rlx_engine *e = open_engine(o);
    int32_t id[N_PROMPTS];
    for (int k = 0; k < 3; k++) id[k] = add_seq(e, &g_prompts[k], N_NEW, so);
    for (int s = 0; s < 3; s++) T_OK(rlx_engine_step(e));
    for (int k = 3; k < N_PROMPTS; k++) id[k] = add_seq(e, &g_prompts[k], N_NEW, so);
    T_OK(rlx_engine_run(e));
    for (int k = 0; k < N_PROMPTS; k++) {
        int32_t got[N_NEW + 1], n;
        generated(e, id[k], g_prompts[k].n, got, &n);
        expect_same(what, k, got, n, ref[k], n_ref[k]);
    }
    rlx_engine_stats st = rlx_engine_get_stats(e);
    printf("  %s: %d sequences, %lld steps, %lld rows, %d programs\n", what, N_PROMPTS, (long long)st.n_steps,
           (long long)st.n_rows, st.n_programs);
    rlx_engine_close(e);
}

/* Logits of every prompt row, prefilled in chunks of 1, 2, 7 and at once: the same bits. */
static void test_chunked_prefill(void) {
    const prompt *p = &g_prompts[1];
    size_t bytes = (size_t)p->n * (size_t)g_vocab * sizeof(float);
    float *ref = NULL;
    int32_t chunks[] = {0, 1, 2, 7};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        rlx_engine_opts o = rlx_engine_opts_default();
        o.chunk = chunks[c];
        rlx_engine *e = open_engine(o);
        rlx_seq_opts so = {.all_logits = true};
        int32_t id, rows = 0;
        T_OK(rlx_engine_seq_create(e, &so, &id));
        T_OK(rlx_engine_seq_append(e, id, p->ids, p->n));
        T_OK(rlx_engine_run(e));
        const float *lg = rlx_engine_seq_logits(e, id, &rows);
        T_CHECK(lg && rows == p->n, "chunk %d: %d rows of logits, expected %d", chunks[c], rows, p->n);
        if (lg && rows == p->n) {
            if (!ref) {
                ref = malloc(bytes);
                memcpy(ref, lg, bytes);
            } else if (g_exact) {
                T_CHECK(memcmp(ref, lg, bytes) == 0, "chunk %d: logits differ from the one-shot prefill",
                        chunks[c]);
            } else {
                float worst = 0.0f;
                for (size_t i = 0; i < bytes / sizeof(float); i++)
                    worst = fabsf(lg[i] - ref[i]) > worst ? fabsf(lg[i] - ref[i]) : worst;
                T_CHECK(worst <= g_tol, "chunk %d: max|Δlogit| %.3g against the one-shot prefill > %.3g",
                        chunks[c], worst, g_tol);
                printf("  chunk %d: max|Δlogit| %.3g against the one-shot prefill\n", chunks[c], worst);
            }
        }
        rlx_engine_close(e);
    }
    printf("  chunked prefill: %d rows in chunks of 1, 2, 7 == one shot%s\n", p->n,
           g_exact ? ", bit for bit" : ", within the tolerance");
    free(ref);
}

/* A fork shares the prompt's pages (the partial last one too); each branch then continues on its
 * own: each equals a fresh sequence of its whole token list. */
static void test_fork(void) {
    prompt a = g_prompts[0], b = g_prompts[0], ext1 = {.n = 3}, ext2 = {.n = 4};
    for (int i = 0; i < 4; i++) ext1.ids[i] = ext2.ids[i] = (int32_t)(rnd() % (uint32_t)g_vocab);
    ext2.ids[0] = (ext1.ids[0] + 1) % g_vocab;
    memcpy(a.ids + a.n, ext1.ids, 3 * sizeof(int32_t));
    a.n += 3;
    memcpy(b.ids + b.n, ext2.ids, 4 * sizeof(int32_t));
    b.n += 4;
    int32_t ra[N_NEW + 1], rb[N_NEW + 1], na, nb;
    prompt saved3 = g_prompts[3], saved4 = g_prompts[4];
    g_prompts[3] = a; /* borrow two slots for alone() */
    alone(3, NULL, ra, &na);
    g_prompts[4] = b;
    alone(4, NULL, rb, &nb);
    g_prompts[3] = saved3;
    g_prompts[4] = saved4;

    rlx_engine *e = open_engine(rlx_engine_opts_default());
    int32_t base = add_seq(e, &g_prompts[0], 0, NULL), fork;
    T_OK(rlx_engine_run(e));
    T_OK(rlx_engine_seq_fork(e, base, &fork));
    rlx_seq_opts go = {.n_new = N_NEW, .sample = rlx_sample_opts_greedy()};
    go.sample.ignore_eos = true;
    T_OK(rlx_engine_seq_set_opts(e, base, &go));
    T_OK(rlx_engine_seq_set_opts(e, fork, &go));
    T_OK(rlx_engine_seq_append(e, base, ext1.ids, ext1.n));
    T_OK(rlx_engine_seq_append(e, fork, ext2.ids, ext2.n));
    T_OK(rlx_engine_run(e));
    int32_t got[N_NEW + 1], n;
    generated(e, base, a.n, got, &n);
    expect_same("fork (original)", 3, got, n, ra, na);
    generated(e, fork, b.n, got, &n);
    expect_same("fork (branch)", 4, got, n, rb, nb);
    rlx_engine_close(e);
}

/* A recurrent model resumes only where a checkpoint is: a prompt that continues a finished
 * sequence's whole history (prompt and answer, its last token never run) starts after that history,
 * and its output equals the same prompt run from nothing. */
static void test_prefix_sharing_recurrent(void) {
    rlx_engine *e = open_engine(rlx_engine_opts_default());
    int32_t first = add_seq(e, &g_prompts[2], N_NEW, NULL);
    T_OK(rlx_engine_run(e));
    prompt p = {0};
    const int32_t *t = rlx_engine_seq_tokens(e, first, &p.n);
    memcpy(p.ids, t, (size_t)p.n * sizeof *t);
    p.ids[p.n++] = g_prompts[0].ids[0]; /* the next turn */
    rlx_engine_seq_free(e, first);
    prompt saved = g_prompts[3];
    g_prompts[3] = p;
    int32_t ref[N_NEW + 1], n_ref;
    alone(3, NULL, ref, &n_ref);
    g_prompts[3] = saved;
    int32_t second = add_seq(e, &p, N_NEW, NULL);
    T_OK(rlx_engine_run(e));
    int32_t hit = rlx_engine_seq_n_cached(e, second), want = p.n - 2;
    T_CHECK(hit == want, "checkpoint resume: %d tokens cached of a %d-token prompt, expected %d (the first sequence's "
            "history less its last token)", (int)hit, p.n, (int)want);
    int32_t got[N_NEW + 1], n;
    generated(e, second, p.n, got, &n);
    expect_same("checkpoint resume", 3, got, n, ref, n_ref);
    printf("  prefix from a checkpoint: %d of %d prompt tokens resumed\n", (int)hit, p.n);
    rlx_engine_close(e);
}

/* A second prompt with the first's prefix reuses its full pages; its output is unchanged. */
static void test_prefix_sharing(void) {
    if (g_recurrent) return test_prefix_sharing_recurrent();
    prompt p = g_prompts[2];
    int32_t ref[N_NEW + 1], n_ref;
    alone(2, NULL, ref, &n_ref);
    rlx_engine *e = open_engine(rlx_engine_opts_default());
    int32_t first = add_seq(e, &p, N_NEW, NULL);
    T_OK(rlx_engine_run(e));
    T_CHECK(rlx_engine_seq_n_cached(e, first) == 0, "the first prompt found %d cached tokens in an empty pool",
            (int)rlx_engine_seq_n_cached(e, first));
    rlx_engine_seq_free(e, first);
    int32_t second = add_seq(e, &p, N_NEW, NULL);
    T_OK(rlx_engine_run(e));
    rlx_engine_stats st = rlx_engine_get_stats(e);
    T_CHECK(st.prefix_hits >= 16 * ((p.n - 1) / 16) && st.prefix_hits > 0,
            "prefix cache: %lld tokens hit of a %d-token prompt seen before", (long long)st.prefix_hits, p.n);
    /* the sequence's own count is the pool's: the first found nothing, the second all the hits */
    T_CHECK(rlx_engine_seq_n_cached(e, second) == st.prefix_hits,
            "seq_n_cached %d, expected the pool's prefix hits %lld", (int)rlx_engine_seq_n_cached(e, second),
            (long long)st.prefix_hits);
    int32_t got[N_NEW + 1], n;
    generated(e, second, p.n, got, &n);
    expect_same("prefix hit", 2, got, n, ref, n_ref);
    printf("  prefix sharing: %lld of %lld prompt tokens from cached pages\n", (long long)st.prefix_hits,
           (long long)st.prefix_queries);
    rlx_engine_close(e);
}

/* A pool too small for every sequence at once: preemption recomputes and the ids are unchanged;
 * without preemption the sequences that do not fit fail with a clear error, the rest finish right. */
static void test_pages_exhausted(bool preempt) {
    enum { LONG_NEW = 40 };
    int32_t ref[N_PROMPTS][LONG_NEW + 1], n_ref[N_PROMPTS];
    for (int k = 0; k < N_PROMPTS; k++) alone_n(k, NULL, LONG_NEW, ref[k], &n_ref[k]);
    rlx_engine_opts o = rlx_engine_opts_default();
    o.no_preempt = !preempt;
    o.chunk = 8;
    o.model.n_ctx = 96;
    /* 7 pages of 16, the least that holds one full context; the first two sequences admitted grow
     * to 3 + 5 pages */
    rlx_engine *probe = open_engine(o);
    rlx_engine_stats ps = rlx_engine_get_stats(probe);
    rlx_engine_close(probe);
    o.kv_memory = ps.kv_bytes / ps.n_pages * 7;
    rlx_engine *e = open_engine(o);
    int32_t id[N_PROMPTS];
    for (int k = 0; k < N_PROMPTS; k++) id[k] = add_seq(e, &g_prompts[k], LONG_NEW, NULL);
    T_OK(rlx_engine_run(e));
    int failed = 0;
    for (int k = 0; k < N_PROMPTS; k++) {
        if (rlx_engine_seq_state(e, id[k]) == RLX_SEQ_FAILED) {
            failed++;
            const char *msg = rlx_engine_seq_error(e, id[k]);
            T_CHECK(msg && strstr(msg, "KV pages"), "prompt %d failed with '%s'", k, msg ? msg : "(none)");
            continue;
        }
        int32_t got[LONG_NEW + 1], n;
        generated(e, id[k], g_prompts[k].n, got, &n);
        expect_same(preempt ? "preemption" : "out of pages", k, got, n, ref[k], n_ref[k]);
    }
    rlx_engine_stats st = rlx_engine_get_stats(e);
    if (preempt) {
        T_CHECK(failed == 0 && st.n_preempted > 0, "preemption: %d failed, %lld preempted (expected 0 and > 0)",
                failed, (long long)st.n_preempted);
    } else {
        T_CHECK(failed > 0 && failed < N_PROMPTS && st.n_preempted == 0,
                "no preemption: %d of %d failed, %lld preempted", failed, N_PROMPTS, (long long)st.n_preempted);
    }
    printf("  %d pages: %s: %lld preempted, %d failed, the rest == alone\n", st.n_pages,
           preempt ? "preemption" : "no preemption", (long long)st.n_preempted, failed);
    rlx_engine_close(e);
}

/* Truncating back into the prompt and appending again == a fresh sequence of the same tokens. */
static void test_truncate(void) {
    prompt p = g_prompts[3];
    int32_t ref[N_NEW + 1], n_ref;
    alone(3, NULL, ref, &n_ref);
    rlx_engine *e = open_engine(rlx_engine_opts_default());
    prompt other = g_prompts[4];
    int32_t id = add_seq(e, &other, N_NEW, NULL);
    T_OK(rlx_engine_run(e));
    int32_t keep = 0;
    while (keep < p.n && keep < other.n && p.ids[keep] == other.ids[keep]) keep++;
    T_OK(rlx_engine_seq_truncate(e, id, keep));
    rlx_seq_opts go = {.n_new = N_NEW, .sample = rlx_sample_opts_greedy()};
    go.sample.ignore_eos = true;
    T_OK(rlx_engine_seq_set_opts(e, id, &go));
    T_OK(rlx_engine_seq_append(e, id, p.ids + keep, p.n - keep));
    T_OK(rlx_engine_run(e));
    int32_t got[N_NEW + 1], n;
    generated(e, id, p.n, got, &n);
    expect_same("truncate", 3, got, n, ref, n_ref);
    rlx_engine_close(e);
}

static void test_bad_calls(void) {
    rlx_engine *e = open_engine(rlx_engine_opts_default());
    int32_t id;
    T_OK(rlx_engine_seq_create(e, NULL, &id));
    int32_t bad = g_vocab;
    T_ERR(rlx_engine_seq_append(e, id, &bad, 1), RLX_ERR_INVALID_ARGUMENT, "outside the vocabulary");
    T_ERR(rlx_engine_seq_append(e, id, NULL, 0), RLX_ERR_INVALID_ARGUMENT, "expected >= 1");
    T_ERR(rlx_engine_seq_append(e, 999, g_prompts[0].ids, 1), RLX_ERR_INVALID_ARGUMENT, "no sequence 999");
    T_ERR(rlx_engine_seq_truncate(e, id, 5), RLX_ERR_INVALID_ARGUMENT, "5 tokens of 0");
    rlx_seq_opts o = {.n_new = 300};
    T_OK(rlx_engine_seq_set_opts(e, id, &o));
    T_ERR(rlx_engine_seq_append(e, id, g_prompts[0].ids, 1), RLX_ERR_INVALID_ARGUMENT, "exceed the context");
    rlx_seq_opts neg = {.n_new = -1};
    T_ERR(rlx_engine_seq_set_opts(e, id, &neg), RLX_ERR_INVALID_ARGUMENT, "n_new -1");
    rlx_engine_opts bo = rlx_engine_opts_default();
    bo.model.backend = "cpu";
    bo.model.n_ctx = 256;
    bo.kv_memory = 1000;
    rlx_engine *small = NULL;
    T_ERR(rlx_engine_open(g_model, &bo, &small), RLX_ERR_INVALID_ARGUMENT, "raise the KV memory");
    rlx_engine_close(e);
}

/* The K/V type (include/rlx/runner.h rlx_kv_type): the default is F32 on the CPU, which refuses F16,
 * and F16 on Vulkan (every device the tests run on has 16-bit storage), where F32 is asked for;
 * a budget of KV bytes holds twice the pages in F16 (2 bytes per element, not 4). */
static void test_kv_type(void) {
    rlx_engine_opts o = rlx_engine_opts_default();
    o.model.kv_type = RLX_KV_TYPE_F32;
    rlx_engine *e32 = open_engine(o);
    rlx_engine_stats s32 = rlx_engine_get_stats(e32);
    T_CHECK(rlx_engine_kv_type(e32) == RLX_KV_TYPE_F32, "kv_type F32 asked for, %d resolved",
            (int)rlx_engine_kv_type(e32));
    rlx_engine_close(e32);
    rlx_engine *ed = open_engine(rlx_engine_opts_default());
    rlx_kv_type def = rlx_engine_kv_type(ed), want = !strcmp(g_backend, "vulkan") ? RLX_KV_TYPE_F16 : RLX_KV_TYPE_F32;
    T_CHECK(def == want, "%s: default K/V type %d, expected %d", g_backend, (int)def, (int)want);
    rlx_engine_close(ed);
    int64_t per_page32 = s32.kv_bytes / s32.n_pages;
    o.kv_memory = per_page32 * 40;
    o.model.kv_type = RLX_KV_TYPE_F16;
    if (strcmp(g_backend, "vulkan") != 0) {
        o.model.backend = g_backend;
        o.model.n_ctx = 256;
        rlx_engine *bad = NULL;
        T_ERR(rlx_engine_open(g_model, &o, &bad), RLX_ERR_UNSUPPORTED, "F16");
        printf("  K/V type: F32 by default on the CPU, F16 refused\n");
        return;
    }
    rlx_engine *e16 = open_engine(o);
    rlx_engine_stats s16 = rlx_engine_get_stats(e16);
    T_CHECK(s16.n_pages == 80 && s16.kv_bytes == 40 * per_page32,
            "F16 pool in %lld bytes: %d pages of %lld bytes (expected 80 of %lld)", (long long)o.kv_memory, s16.n_pages,
            (long long)(s16.kv_bytes / s16.n_pages), (long long)(per_page32 / 2));
    printf("  K/V type: F16 by default on Vulkan; %lld bytes hold %d F16 pages, %d F32 ones\n", (long long)o.kv_memory,
           s16.n_pages, 40);
    rlx_engine_close(e16);
}

int main(int argc, char **argv) {
    int a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "--vulkan")) g_backend = "vulkan";
        else if (!strcmp(argv[a], "--deterministic")) g_det = true;
        else return fprintf(stderr, "usage: test_engine [--vulkan] [--deterministic] [MODEL]\n"), 2;
    }
    g_model = a < argc ? t_fixture(argv[a]) : t_source_path("models/stories260K.gguf");
    if (a < argc) t_require_fixture(argv[a]);
    rlx_engine *e = open_engine(rlx_engine_opts_default());
    g_vocab = rlx_engine_vocab_size(e);
    g_recurrent = rlx_engine_get_stats(e).state_seq_slots > 0;
    rlx_engine_close(e);
    g_exact = (!strcmp(g_backend, "cpu") || g_det) && !g_recurrent;
    if (g_recurrent && !strcmp(g_backend, "cpu")) g_tol = 1e-3f;
    static const int32_t lens[N_PROMPTS] = {7, 40, 37, 19, 3};
    for (int k = 0; k < N_PROMPTS; k++) {
        g_prompts[k].n = lens[k];
        for (int i = 0; i < lens[k]; i++) g_prompts[k].ids[i] = (int32_t)(rnd() % (uint32_t)g_vocab);
    }
    /* prompts 3 and 4 share a start, which truncate keeps */
    memcpy(g_prompts[4].ids, g_prompts[3].ids, 2 * sizeof(int32_t));
    printf("test_engine on %s (%s%s%s)\n", g_model, g_backend, g_det ? ", deterministic" : "",
           g_recurrent ? ", recurrent layers" : "");
    test_batched_equals_alone(NULL, "greedy batched == alone");
    rlx_sample_opts so = {.temperature = 0.9f, .top_k = 20, .top_p = 0.95f, .seed = 7};
    if (g_exact)
        test_batched_equals_alone(&so, "sampled batched == alone");
    else
        printf("  sampled batched == alone: only where bit for bit (a draw has no near-tie rule)\n");
    test_chunked_prefill();
    test_fork();
    test_prefix_sharing();
    test_truncate();
    test_pages_exhausted(true);
    test_pages_exhausted(false);
    test_bad_calls();
    test_kv_type();
    return t_summary("test_engine");
}
