/* The recurrent state of a hybrid model (qwen35, qwen35moe) in the engine and the runner: state
 * slots, checkpoints, rewinds (runners/engine_state.c).
 *
 *   test_engine_state [--vulkan] FAMILY MODEL   FAMILY: qwen35 | qwen35moe; MODEL: a fixture path
 *
 * Truth comes from the fixtures' ref-hf.json (transformers, float64; README tolerance for f32
 * compute on the CPU, max|Δlogit| <= 1e-3) or from a property (the same tokens run another way):
 *  - every reference prompt through the engine in prefill chunks of 16 and of 7 rows, so the
 *    70-token prompts span several chunks: last_logits within 1e-3 of the reference;
 *  - a conversation continued from a checkpoint == the whole conversation prefilled at once, and a
 *    truncate between checkpoints == the tokens run afresh (1e-3: the delta rule's chunked form
 *    rounds by where a chunk starts, ir/ops.def DELTA_RULE);
 *  - a speculative step rolled back (runner verify + truncate) == never taken: the next step's
 *    logits are the same bits on the CPU (the state is restored from a checkpoint, never
 *    recomputed differently), also when part of the draft is kept;
 *  - more sequences than state slots: each == alone, an evicted one's next turn == afresh;
 *  - a 10-turn chat, each turn a new sequence of the whole re-rendered history (as the server
 *    does): each prefills only what follows the previous turn's checkpoint; the tokens per turn
 *    are printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/chat_template.h"
#include "rlx/engine.h"
#include "rlx/runner.h"
#include "rlx/tokenizer.h"
#include "runners/engine_internal.h"
#include "test_util.h"

#define TOL 1e-3

static const char *g_backend = "cpu";
static const char *g_model;
static const char *g_family;
static int32_t g_vocab;

static rlx_engine *open_engine(int32_t chunk, bool no_prefix) {
    rlx_engine_opts o = rlx_engine_opts_default();
    o.model.backend = g_backend;
    o.model.n_threads = 2;
    o.model.n_ctx = 512;
    o.chunk = chunk;
    o.no_prefix_cache = no_prefix;
    rlx_engine *e = NULL;
    if (!T_OK(rlx_engine_open(g_model, &o, &e))) exit(t_summary("test_engine_state"));
    return e;
}

static double max_diff_f(const float *a, const float *b, int32_t n) {
    double d = 0;
    for (int32_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

/* The last row's logits of ids run as one new sequence (keep_logits). out: g_vocab floats. */
static bool last_logits(rlx_engine *e, const int32_t *ids, int32_t n, float *out, int32_t *n_cached) {
    rlx_seq_opts so = {.keep_logits = true};
    int32_t id, rows = 0;
    if (!T_OK(rlx_engine_seq_create(e, &so, &id)) || !T_OK(rlx_engine_seq_append(e, id, ids, n)) ||
        !T_OK(rlx_engine_run(e)))
        return false;
    const float *lg = rlx_engine_seq_logits(e, id, &rows);
    T_CHECK(lg && rows == 1, "last_logits: %d rows", rows);
    if (lg) memcpy(out, lg, (size_t)g_vocab * sizeof *out);
    if (n_cached) *n_cached = rlx_engine_seq_n_cached(e, id);
    rlx_engine_seq_free(e, id);
    return lg != NULL;
}

/* ---- reference prompts in small chunks ---- */

static void test_reference_chunks(const json_t *ref) {
    const json_t *prompts = json_object_get(ref, "prompts");
    float *lg = malloc((size_t)g_vocab * sizeof *lg);
    int32_t chunks[] = {16, 7};
    for (size_t c = 0; c < 2; c++) {
        rlx_engine *e = open_engine(chunks[c], true);
        double worst = 0;
        int32_t longest = 0;
        for (size_t p = 0; p < json_array_size(prompts); p++) {
            const json_t *pr = json_array_get(prompts, p), *ids_j = json_object_get(pr, "ids");
            int32_t n = (int32_t)json_array_size(ids_j), ids[512];
            if (n < 1 || n > 512) continue;
            for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(ids_j, (size_t)i));
            if (!last_logits(e, ids, n, lg, NULL)) continue;
            const json_t *want = json_object_get(pr, "last_logits");
            double d = 0;
            for (int32_t v = 0; v < g_vocab; v++)
                d = fmax(d, fabs((double)lg[v] - json_number_value(json_array_get(want, (size_t)v))));
            T_CHECK(d <= TOL, "chunk %d prompt %zu (%d ids): last_logits max|Δ| %.3g > %g", chunks[c], p, n, d, TOL);
            worst = fmax(worst, d);
            longest = n > longest ? n : longest;
        }
        printf("  reference prompts in chunks of %d (the longest, %d ids, in %d chunks): max|Δ| %.3g\n", chunks[c],
               longest, (longest + chunks[c] - 1) / chunks[c], worst);
        rlx_engine_close(e);
    }
    free(lg);
}

/* ---- checkpoints: a conversation continued, a truncate between checkpoints ---- */

static void random_ids(int32_t *ids, int32_t n, uint32_t seed) {
    for (int32_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        ids[i] = (int32_t)((seed >> 8) % (uint32_t)g_vocab);
    }
}

static void test_continued(void) {
    enum { P1 = 29, GEN = 9, P2 = 23 };
    int32_t all[P1 + GEN + P2];
    random_ids(all, P1, 11);
    rlx_engine *e = open_engine(0, false);
    /* turn 1: a prompt and a greedy answer; the engine checkpoints where the answer begins and ends */
    rlx_seq_opts go = {.n_new = GEN, .sample = rlx_sample_opts_greedy()};
    go.sample.ignore_eos = true;
    int32_t id, n;
    T_OK(rlx_engine_seq_create(e, &go, &id));
    T_OK(rlx_engine_seq_append(e, id, all, P1));
    T_OK(rlx_engine_run(e));
    const int32_t *t = rlx_engine_seq_tokens(e, id, &n);
    T_CHECK(n == P1 + GEN, "turn 1: %d tokens, expected %d", n, P1 + GEN);
    memcpy(all, t, (size_t)n * sizeof *t);
    rlx_engine_seq_free(e, id);
    random_ids(all + P1 + GEN, P2, 23);
    /* turn 2 from the checkpoint == the whole conversation in a fresh engine */
    float *got = malloc((size_t)g_vocab * sizeof *got), *want = malloc((size_t)g_vocab * sizeof *want);
    int32_t cached = 0;
    last_logits(e, all, P1 + GEN + P2, got, &cached);
    rlx_engine *fresh = open_engine(0, true);
    last_logits(fresh, all, P1 + GEN + P2, want, NULL);
    double d = max_diff_f(got, want, g_vocab);
    T_CHECK(cached == P1 + GEN - 1, "turn 2 resumed at %d tokens, expected %d (turn 1's end)", cached, P1 + GEN - 1);
    T_CHECK(d <= TOL, "turn 2 from a checkpoint: max|Δlogit| %.3g against the whole conversation > %g", d, TOL);
    printf("  conversation continued from a checkpoint (%d of %d tokens resumed): max|Δlogit| %.3g\n", cached,
           P1 + GEN + P2, d);
    /* an explicit checkpoint inside a history, then a truncate past it: resumed there */
    rlx_seq_opts quiet = {.keep_logits = true};
    T_OK(rlx_engine_seq_create(e, &quiet, &id));
    T_OK(rlx_engine_seq_append(e, id, all + P1, 17)); /* another history */
    T_OK(rlx_engine_run(e));
    T_OK(rlx_engine_seq_checkpoint(e, id));
    T_OK(rlx_engine_seq_append(e, id, all, 20));
    T_OK(rlx_engine_run(e));
    rlx_engine_stats before = rlx_engine_get_stats(e);
    T_OK(rlx_engine_seq_truncate(e, id, 17 + 6));
    T_CHECK(rlx_engine_seq_n_computed(e, id) == 23, "after truncate: %d positions held, expected 23",
            (int)rlx_engine_seq_n_computed(e, id));
    T_OK(rlx_engine_seq_append(e, id, all + 40, 5));
    T_OK(rlx_engine_run(e));
    rlx_engine_stats after = rlx_engine_get_stats(e);
    int32_t rows = 0;
    const float *lg = rlx_engine_seq_logits(e, id, &rows);
    int32_t whole[28];
    memcpy(whole, all + P1, 17 * sizeof *whole);
    memcpy(whole + 17, all, 6 * sizeof *whole);
    memcpy(whole + 23, all + 40, 5 * sizeof *whole);
    last_logits(fresh, whole, 28, want, NULL);
    d = lg ? max_diff_f(lg, want, g_vocab) : INFINITY;
    T_CHECK(d <= TOL, "truncate to 23 and 5 more: max|Δlogit| %.3g against the 28 tokens afresh > %g", d, TOL);
    T_CHECK(after.n_rewinds == before.n_rewinds + 1 && after.n_rows - before.n_rows == 6 + 5,
            "truncate: %lld rewinds and %lld rows, expected 1 and 11 (back to the checkpoint at 17)",
            (long long)(after.n_rewinds - before.n_rewinds), (long long)(after.n_rows - before.n_rows));
    printf("  truncate past an explicit checkpoint: %lld rows recomputed, max|Δlogit| %.3g\n",
           (long long)(after.n_rows - before.n_rows), d);
    printf("  state slot: %lld bytes (%d sequence slots, %d checkpoint slots)\n", (long long)after.state_slot_bytes,
           after.state_seq_slots, after.state_ckpt_slots);
    free(got);
    free(want);
    rlx_engine_close(fresh);
    rlx_engine_close(e);
}

/* ---- speculative rollback ---- */

static void test_rollback(void) {
    enum { N = 21, K = 6 };
    int32_t prompt[N], draft[K], next[2];
    random_ids(prompt, N, 5);
    random_ids(draft, K, 77);
    random_ids(next, 2, 99);
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = g_backend;
    o.n_threads = 2;
    rlx_runner *ref = NULL, *r = NULL;
    if (!T_OK(rlx_runner_open(g_model, &o, &ref)) || !T_OK(rlx_runner_open(g_model, &o, &r))) {
        rlx_runner_close(ref);
        return;
    }
    size_t V = (size_t)g_vocab;
    float *a = malloc(V * sizeof *a), *b = malloc(V * sizeof *b), *rows = malloc((K + 1) * V * sizeof *rows);
    /* never taken: the prompt, then the next token */
    T_OK(rlx_runner_prefill_get_last_logits(ref, prompt, N, a));
    T_OK(rlx_runner_decode_get_logits(ref, next[0], a));
    /* taken and dropped whole: verify K drafts, truncate back to N, the next token */
    T_OK(rlx_runner_prefill_get_last_logits(r, prompt, N, b));
    T_OK(rlx_runner_verify(r, draft, K, rows));
    T_OK(rlx_runner_truncate(r, N));
    T_CHECK(rlx_runner_n_past(r) == N, "after the rollback: %d tokens held, expected %d", rlx_runner_n_past(r), N);
    T_OK(rlx_runner_decode_get_logits(r, next[0], b));
    T_CHECK(memcmp(a, b, V * sizeof *a) == 0, "a rejected draft changed the next step's logits (max|Δ| %.3g)",
            max_diff_f(a, b, g_vocab));
    printf("  rejected draft of %d: the next step's logits are the same bits (max|Δ| %.3g)\n", K,
           max_diff_f(a, b, g_vocab));
    /* 2 of K kept, twice over (the drafts verified from the state a rollback left): the next
     * token's logits == the kept tokens and it verified together, never having seen the rest (the
     * same rows in one run from the same state: the same bits) */
    for (int round = 0; round < 2; round++) {
        int32_t held = rlx_runner_n_past(r), kept[3] = {draft[0], draft[1], next[1]};
        T_OK(rlx_runner_verify(r, draft, K, rows));
        T_OK(rlx_runner_truncate(r, held + 2));
        T_OK(rlx_runner_decode_get_logits(r, next[1], b));
        T_OK(rlx_runner_verify(ref, kept, 3, rows));
        memcpy(a, rows + 2 * V, V * sizeof *a);
        double d = max_diff_f(a, b, g_vocab);
        T_CHECK(memcmp(a, b, V * sizeof *a) == 0, "round %d: 2 of %d drafts kept: max|Δlogit| %.3g against never "
                "drafting (expected the same bits)", round, K, d);
        printf("  round %d: 2 of %d drafts kept, then the next token: max|Δlogit| %.3g against no draft\n", round, K,
               d);
    }
    free(a);
    free(b);
    free(rows);
    rlx_runner_close(ref);
    rlx_runner_close(r);
}

/* ---- more sequences than state slots ---- */

/* Two sequence slots and two checkpoints for six sequences: each waits for a slot, takes the one a
 * finished sequence gives up, and generates what it generates alone (the same rows in the same
 * runs: the same ids); a finished sequence whose slot was taken, given a next turn, is readmitted
 * from a checkpoint or from nothing and equals that history run afresh. */
static void test_slots(void) {
    enum { SEQS = 6, GEN = 8 };
    int32_t prompts[SEQS][24], alone_ids[SEQS][GEN], got_n;
    rlx_seq_opts go = {.n_new = GEN, .sample = rlx_sample_opts_greedy()};
    go.sample.ignore_eos = true;
    for (int k = 0; k < SEQS; k++) {
        random_ids(prompts[k], 10 + 2 * k, 1000u + (uint32_t)k);
        rlx_engine *e = open_engine(0, true);
        int32_t id;
        T_OK(rlx_engine_seq_create(e, &go, &id));
        T_OK(rlx_engine_seq_append(e, id, prompts[k], 10 + 2 * k));
        T_OK(rlx_engine_run(e));
        const int32_t *t = rlx_engine_seq_tokens(e, id, &got_n);
        if (got_n == 10 + 2 * k + GEN) memcpy(alone_ids[k], t + 10 + 2 * k, GEN * sizeof *t);
        rlx_engine_close(e);
    }
    rlx_engine_opts o = rlx_engine_opts_default();
    o.model.backend = g_backend;
    o.model.n_threads = 2;
    o.model.n_ctx = 512;
    o.max_parallel = 2;
    o.checkpoints = 2;
    rlx_engine *e = NULL;
    if (!T_OK(rlx_engine_open(g_model, &o, &e))) return;
    int32_t id[SEQS];
    for (int k = 0; k < SEQS; k++) {
        T_OK(rlx_engine_seq_create(e, &go, &id[k]));
        T_OK(rlx_engine_seq_append(e, id[k], prompts[k], 10 + 2 * k));
        if (k == 2) T_OK(rlx_engine_step(e)); /* the rest join a running batch */
    }
    T_OK(rlx_engine_run(e));
    int same = 0;
    for (int k = 0; k < SEQS; k++) {
        const int32_t *t = rlx_engine_seq_tokens(e, id[k], &got_n);
        bool eq = got_n == 10 + 2 * k + GEN && !memcmp(t + 10 + 2 * k, alone_ids[k], GEN * sizeof *t);
        T_CHECK(eq, "slots: sequence %d (%d tokens) differs from its run alone", k, got_n);
        same += eq;
    }
    rlx_engine_stats st = rlx_engine_get_stats(e);
    T_CHECK(st.checkpoints_held <= 2 && st.checkpoints_made > 2, "slots: %d checkpoints held, %lld made (expected "
            "at most 2 held, more made)", st.checkpoints_held, (long long)st.checkpoints_made);
    /* sequence 0 gave its slot up long ago: a next turn readmits it */
    int32_t more[5], whole[40];
    random_ids(more, 5, 4242);
    const int32_t *t = rlx_engine_seq_tokens(e, id[0], &got_n);
    memcpy(whole, t, (size_t)got_n * sizeof *t);
    memcpy(whole + got_n, more, sizeof more);
    int32_t n_whole = got_n + 5;
    rlx_seq_opts keep = {.keep_logits = true};
    T_OK(rlx_engine_seq_set_opts(e, id[0], &keep));
    T_OK(rlx_engine_seq_append(e, id[0], more, 5));
    T_OK(rlx_engine_run(e));
    int32_t rows = 0;
    const float *lg = rlx_engine_seq_logits(e, id[0], &rows);
    float *want = malloc((size_t)g_vocab * sizeof *want);
    rlx_engine *fresh = open_engine(0, true);
    last_logits(fresh, whole, n_whole, want, NULL);
    double d = lg && rows == 1 ? max_diff_f(lg, want, g_vocab) : INFINITY;
    T_CHECK(d <= TOL, "slots: the evicted sequence's next turn: max|Δlogit| %.3g against its history afresh > %g", d,
            TOL);
    printf("  %d sequences over 2 state slots and 2 checkpoints: %d == alone (%lld checkpoints made); an evicted one's "
           "next turn: max|Δlogit| %.3g\n", SEQS, same, (long long)st.checkpoints_made, d);
    free(want);
    rlx_engine_close(fresh);
    rlx_engine_close(e);
}

/* ---- a 10-turn chat ---- */

static void test_chat(void) {
    char hf[512];
    snprintf(hf, sizeof hf, "models/%s/hf", g_family);
    rlx_tokenizer *tok = NULL;
    rlx_chat_template *tmpl = NULL;
    if (!T_OK(rlx_tokenizer_open(t_fixture(hf), &tok)) || !T_OK(rlx_chat_template_open(t_fixture(hf), &tmpl))) {
        rlx_tokenizer_close(tok);
        return;
    }
    static const char *const asks[10] = {"Hello there.", "What is a tree?", "And a river?", "Count to five.",
                                         "Why is the sky blue?", "Name a colour.", "Say it again.",
                                         "Tell me a story.", "Shorter, please.", "Goodbye."};
    rlx_chat_message msgs[20];
    char *answers[10] = {0};
    rlx_engine *e = open_engine(0, false);
    int32_t prev_len = 0, prev_prompt = 0;
    printf("  10-turn chat (each turn a new sequence of the re-rendered history):\n");
    for (int k = 0; k < 10; k++) {
        msgs[2 * k] = (rlx_chat_message){"user", asks[k], NULL};
        rlx_chat_render_opts ro = {.add_generation_prompt = true};
        char *text = NULL;
        int32_t *ids = NULL;
        size_t n = 0;
        if (!T_OK(rlx_chat_template_render(tmpl, msgs, (size_t)(2 * k + 1), &ro, &text, NULL)) ||
            !T_OK(rlx_tokenizer_encode(tok, text, strlen(text), RLX_ENCODE_PARSE_SPECIAL, &ids, &n))) {
            free(text);
            break;
        }
        rlx_seq_opts so = {.n_new = 6, .sample = rlx_sample_opts_greedy()};
        int32_t id, len;
        T_OK(rlx_engine_seq_create(e, &so, &id));
        T_OK(rlx_engine_seq_append(e, id, ids, (int32_t)n));
        T_OK(rlx_engine_run(e));
        int32_t cached = rlx_engine_seq_n_cached(e, id), fresh = (int32_t)n - cached;
        const int32_t *t = rlx_engine_seq_tokens(e, id, &len);
        /* the answer as the history will hold it: its text, an end-of-turn token dropped */
        int32_t n_ans = len - (int32_t)n;
        if (n_ans > 0 && t[len - 1] == rlx_engine_eos_id(e)) n_ans--;
        size_t alen;
        T_OK(rlx_tokenizer_decode(tok, t + n, (size_t)n_ans, 0, &answers[k], &alen));
        msgs[2 * k + 1] = (rlx_chat_message){"assistant", answers[k] ? answers[k] : "", NULL};
        printf("    turn %2d: prompt %3zu tokens, %3d resumed from a checkpoint, %3d prefilled (the previous turn "
               "held %d; its prompt %d)\n", k + 1, n, cached, fresh, prev_len, prev_prompt);
        /* at least the previous turn's prompt (its generation checkpoint) is resumed */
        T_CHECK(k == 0 || cached >= prev_prompt, "turn %d resumed %d tokens, less than the previous prompt's %d", k + 1,
                cached, prev_prompt);
        prev_len = len;
        prev_prompt = (int32_t)n;
        rlx_engine_seq_free(e, id);
        free(text);
        free(ids);
    }
    rlx_engine_close(e);
    for (int k = 0; k < 10; k++) free(answers[k]);
    rlx_chat_template_destroy(tmpl);
    rlx_tokenizer_close(tok);
}

int main(int argc, char **argv) {
    int a = 1;
    if (a < argc && !strcmp(argv[a], "--vulkan")) {
        g_backend = "vulkan";
        a++;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: test_engine_state [--vulkan] qwen35|qwen35moe MODEL\n");
        return 2;
    }
    g_family = argv[a];
    char ref_rel[256];
    snprintf(ref_rel, sizeof ref_rel, "models/%s/ref-hf.json", g_family);
    t_require_fixture(ref_rel);
    t_require_fixture(argv[a + 1]);
    g_model = t_fixture(argv[a + 1]);
    json_t *ref = t_load_json(t_fixture(ref_rel));
    rlx_engine *e = open_engine(0, false);
    g_vocab = rlx_engine_vocab_size(e);
    rlx_engine_close(e);
    printf("test_engine_state on %s (%s)\n", g_model, g_backend);
    test_reference_chunks(ref);
    test_continued();
    test_rollback();
    test_slots();
    test_chat();
    json_decref(ref);
    return t_summary("test_engine_state");
}
