/* The paged KV pool's bookkeeping (runners/kv_pages.c) against a model kept here: a simulated pool
 * (page_size rows per page, each row holding the token written there) that the test writes through
 * the tables the module hands out, after applying every copy it asks for. Truth is the model: after
 * every operation each live sequence must read back exactly its own tokens through its table, every
 * refcount must equal the tables holding that page, used + cached + free must be the pool, a failed
 * reserve must change nothing, and a prefix match must only attach pages whose content is the
 * prompt's. Tokens come from a tiny alphabet so that prefixes repeat and pages are shared, cached,
 * evicted and matched often. Built twice: as is, and with the prefix hash masked to 2 bits
 * (RLX_KV_PAGES_HASH_MASK), where unrelated pages collide and only the token and parent checks keep
 * matches right. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/kv_pages.h"
#include "test_util.h"

#define MAX_SEQS 10
#define MAX_LEN 64
#define ALPHABET 3

typedef struct seq {
    bool live;
    rlx_kv_table t;
    int32_t tok[MAX_LEN]; /* the sequence's ids; the first t.n_tokens are in the pool */
    int32_t len;
} seq;

typedef struct world {
    rlx_kv_pages *kp;
    int32_t n_pages, ps;
    int32_t *sim; /* n_pages * ps rows: the token each row holds, -1 never written */
    seq s[MAX_SEQS];
    uint64_t rng;
    int64_t ops, ooms, copies, matched, evictions_seen;
} world;

static uint64_t rnd(world *w) { /* splitmix64 */
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int32_t rnd_below(world *w, int32_t n) { return n > 0 ? (int32_t)(rnd(w) % (uint64_t)n) : 0; }

static int32_t row_of(const world *w, const rlx_kv_table *t, int32_t j) {
    return t->pages[j / w->ps] * w->ps + j % w->ps;
}

/* ---- the model's checks ---- */

static bool check_world(world *w, const char *after) {
    int before = t_failures;
    int32_t *holders = calloc((size_t)w->n_pages, sizeof *holders);
    for (int i = 0; i < MAX_SEQS; i++) {
        seq *q = &w->s[i];
        if (!q->live) {
            T_CHECK(q->t.n_pages == 0 && q->t.n_tokens == 0, "%s: dead slot %d holds pages", after, i);
            continue;
        }
        T_CHECK(q->t.n_tokens == q->len, "%s: seq %d has %d tokens, model %d", after, i, q->t.n_tokens, q->len);
        T_CHECK((int64_t)q->t.n_pages * w->ps >= q->len, "%s: seq %d: %d pages for %d tokens", after, i,
                q->t.n_pages, q->len);
        bool pages_ok = true;
        for (int32_t k = 0; k < q->t.n_pages; k++) {
            int32_t p = q->t.pages[k];
            T_CHECK(p >= 0 && p < w->n_pages, "%s: seq %d page %d is %d", after, i, k, p);
            if (p < 0 || p >= w->n_pages) {
                pages_ok = false;
                continue;
            }
            for (int32_t k2 = 0; k2 < k; k2++)
                T_CHECK(q->t.pages[k2] != p, "%s: seq %d holds page %d twice", after, i, p);
            holders[p]++;
        }
        for (int32_t j = 0; pages_ok && j < q->len && j < q->t.n_pages * w->ps; j++) {
            int32_t got = w->sim[row_of(w, &q->t, j)];
            T_CHECK(got == q->tok[j], "%s: seq %d position %d reads %d, wrote %d", after, i, j, got, q->tok[j]);
            if (got != q->tok[j]) break;
        }
    }
    int32_t used = 0;
    for (int32_t p = 0; p < w->n_pages; p++) {
        used += holders[p] > 0;
        int32_t rc = rlx_kv_pages_refcount(w->kp, p);
        T_CHECK(rc == holders[p], "%s: page %d refcount %d, held by %d tables", after, p, rc, holders[p]);
    }
    rlx_kv_pages_stats st = rlx_kv_pages_get_stats(w->kp);
    T_CHECK(st.used == used, "%s: %d pages used, the tables hold %d", after, st.used, used);
    T_CHECK(st.used + st.cached + st.free == w->n_pages, "%s: used %d + cached %d + free %d != %d", after, st.used,
            st.cached, st.free, w->n_pages);
    T_CHECK(rlx_kv_pages_available(w->kp) == st.cached + st.free, "%s: available %d != cached %d + free %d", after,
            rlx_kv_pages_available(w->kp), st.cached, st.free);
    T_CHECK(st.registered >= st.cached, "%s: %d registered < %d cached", after, st.registered, st.cached);
    T_OK(rlx_kv_pages_check(w->kp));
    free(holders);
    return t_failures == before;
}

/* What a failed reserve must leave as it was. */
typedef struct snapshot {
    rlx_kv_table t;
    int32_t pages[MAX_LEN + 1];
    int32_t *refs;
    rlx_kv_pages_stats st;
} snapshot;

static void snap_take(const world *w, const rlx_kv_table *t, snapshot *s) {
    s->t = *t;
    if (t->n_pages > 0) memcpy(s->pages, t->pages, (size_t)t->n_pages * sizeof *t->pages);
    s->refs = malloc((size_t)w->n_pages * sizeof *s->refs);
    for (int32_t p = 0; p < w->n_pages; p++) s->refs[p] = rlx_kv_pages_refcount(w->kp, p);
    s->st = rlx_kv_pages_get_stats(w->kp);
}

static void snap_compare(const world *w, const rlx_kv_table *t, snapshot *s) {
    T_CHECK(t->n_pages == s->t.n_pages && t->n_tokens == s->t.n_tokens, "failed reserve changed the table");
    T_CHECK(t->n_pages == 0 || memcmp(t->pages, s->pages, (size_t)t->n_pages * sizeof *t->pages) == 0,
            "failed reserve changed the page entries");
    int32_t changed = 0;
    for (int32_t p = 0; p < w->n_pages; p++) changed += rlx_kv_pages_refcount(w->kp, p) != s->refs[p];
    rlx_kv_pages_stats st = rlx_kv_pages_get_stats(w->kp);
    T_CHECK(changed == 0 && st.used == s->st.used && st.cached == s->st.cached && st.free == s->st.free &&
                st.registered == s->st.registered && st.evictions == s->st.evictions,
            "failed reserve changed the pool (%d refcounts; used %d->%d cached %d->%d free %d->%d)", changed,
            s->st.used, st.used, s->st.cached, st.cached, s->st.free, st.free);
    free(s->refs);
}

/* ---- operations, each mirrored in the model ---- */

/* Reserves n positions of seq i, writes toks there (applying copies first) and commits n_commit of
 * them. False on OOM (checked to have changed nothing). */
static bool extend(world *w, int i, const int32_t *toks, int32_t n, int32_t n_commit) {
    seq *q = &w->s[i];
    snapshot snap;
    snap_take(w, &q->t, &snap);
    rlx_kv_copy cp[1] = {{-7, -7}};
    int32_t n_cp = -1;
    rlx_status st = rlx_kv_pages_reserve(w->kp, &q->t, n, cp, &n_cp);
    if (st) {
        T_CHECK(rlx_status_code(st) == RLX_ERR_OUT_OF_MEMORY && strstr(rlx_status_message(st), "available"),
                "reserve of %d: %s", n, rlx_status_message(st));
        T_CHECK(n_cp == 0, "failed reserve reported %d copies", n_cp);
        rlx_status_free(st);
        snap_compare(w, &q->t, &snap);
        w->ooms++;
        return false;
    }
    free(snap.refs);
    T_CHECK(n_cp == 0 || n_cp == 1, "reserve reported %d copies", n_cp);
    for (int32_t c = 0; c < n_cp && c < 1; c++) {
        T_CHECK(cp[c].src >= 0 && cp[c].src < w->n_pages && cp[c].dst >= 0 && cp[c].dst < w->n_pages &&
                    cp[c].src != cp[c].dst,
                "copy %d -> %d", cp[c].src, cp[c].dst);
        memmove(w->sim + (size_t)cp[c].dst * w->ps, w->sim + (size_t)cp[c].src * w->ps, (size_t)w->ps * sizeof *w->sim);
        w->copies++;
    }
    T_CHECK((int64_t)q->t.n_pages * w->ps >= (int64_t)q->len + n, "reserve of %d after %d left %d pages", n, q->len,
            q->t.n_pages);
    for (int32_t j = q->len; j < q->len + n; j++) {
        int32_t p = q->t.pages[j / w->ps];
        T_CHECK(rlx_kv_pages_refcount(w->kp, p) == 1, "position %d goes to page %d of refcount %d", j, p,
                rlx_kv_pages_refcount(w->kp, p));
        w->sim[row_of(w, &q->t, j)] = toks[j - q->len];
        q->tok[j] = toks[j - q->len];
    }
    q->len += n_commit;
    T_OK(rlx_kv_pages_commit(w->kp, &q->t, q->tok, q->len));
    return true;
}

static void random_tokens(world *w, int32_t *out, int32_t n) {
    for (int32_t j = 0; j < n; j++) out[j] = rnd_below(w, ALPHABET);
}

/* A prompt that often starts like a live sequence, matched, then computed. */
static void op_new(world *w, int i) {
    int32_t prompt[MAX_LEN];
    int32_t n = 1 + rnd_below(w, MAX_LEN / 2);
    int32_t from = 0;
    int donor = rnd_below(w, MAX_SEQS);
    if (rnd_below(w, 3) > 0 && w->s[donor].live) {
        from = rnd_below(w, (w->s[donor].len < n ? w->s[donor].len : n) + 1);
        memcpy(prompt, w->s[donor].tok, (size_t)from * sizeof *prompt);
    }
    random_tokens(w, prompt + from, n - from);
    seq *q = &w->s[i];
    q->live = true;
    int32_t got = rlx_kv_pages_match_prefix(w->kp, &q->t, prompt, n, n - 1);
    T_CHECK(got >= 0 && got % w->ps == 0 && got <= n - 1 && got == q->t.n_tokens && got / w->ps == q->t.n_pages,
            "match of %d tokens returned %d (table %d tokens, %d pages; page size %d)", n, got, q->t.n_tokens,
            q->t.n_pages, w->ps);
    for (int32_t j = 0; j < got; j++) {
        T_CHECK(w->sim[row_of(w, &q->t, j)] == prompt[j], "match gave position %d holding %d, prompt has %d", j,
                w->sim[row_of(w, &q->t, j)], prompt[j]);
        q->tok[j] = prompt[j];
    }
    q->len = got;
    w->matched += got;
    if (!extend(w, i, prompt + got, n - got, n - got) && rnd_below(w, 2)) {
        rlx_kv_pages_release(w->kp, &q->t);
        q->live = false;
    }
}

static void op_grow(world *w, int i) {
    seq *q = &w->s[i];
    int32_t room = MAX_LEN - q->len;
    if (room <= 0) return;
    int32_t toks[MAX_LEN];
    int32_t n = rnd_below(w, (room < 12 ? room : 12) + 1);
    random_tokens(w, toks, n);
    /* sometimes the backend wrote fewer rows than reserved (a batch cut short) */
    int32_t n_commit = rnd_below(w, 4) == 0 ? rnd_below(w, n + 1) : n;
    extend(w, i, toks, n, n_commit);
}

static void op_fork(world *w, int src, int dst) {
    T_OK(rlx_kv_pages_fork(w->kp, &w->s[src].t, &w->s[dst].t));
    w->s[dst].live = true;
    w->s[dst].len = w->s[src].len;
    memcpy(w->s[dst].tok, w->s[src].tok, sizeof w->s[dst].tok);
}

static void op_truncate(world *w, int i) {
    seq *q = &w->s[i];
    int32_t n = rnd_below(w, q->len + 1);
    rlx_kv_pages_truncate(w->kp, &q->t, n);
    q->len = n;
}

static void op_release(world *w, int i) {
    rlx_kv_pages_release(w->kp, &w->s[i].t);
    w->s[i].live = false;
    w->s[i].len = 0;
}

static bool world_init(world *w, int32_t n_pages, int32_t ps, uint64_t seed) {
    memset(w, 0, sizeof *w);
    w->n_pages = n_pages;
    w->ps = ps;
    w->rng = seed;
    w->sim = malloc((size_t)n_pages * (size_t)ps * sizeof *w->sim);
    for (int32_t r = 0; r < n_pages * ps; r++) w->sim[r] = -1;
    return T_OK(rlx_kv_pages_create(n_pages, ps, &w->kp));
}

static void world_free(world *w) {
    for (int i = 0; i < MAX_SEQS; i++) rlx_kv_pages_release(w->kp, &w->s[i].t);
    if (w->kp) {
        rlx_kv_pages_stats st = rlx_kv_pages_get_stats(w->kp);
        T_CHECK(st.used == 0 && st.free + st.cached == w->n_pages, "after releasing all: used %d", st.used);
    }
    rlx_kv_pages_destroy(w->kp);
    free(w->sim);
}

static void property(int32_t n_pages, int32_t ps, uint64_t seed, int n_ops) {
    world w;
    if (!world_init(&w, n_pages, ps, seed)) return;
    char what[96];
    for (int op = 0; op < n_ops; op++) {
        int i = rnd_below(&w, MAX_SEQS), j = rnd_below(&w, MAX_SEQS);
        int kind = rnd_below(&w, 10);
        const char *name;
        if (!w.s[i].live) {
            name = "new";
            op_new(&w, i);
        } else if (kind < 4) {
            name = "grow";
            op_grow(&w, i);
        } else if (kind < 6 && !w.s[j].live) {
            name = "fork";
            op_fork(&w, i, j);
        } else if (kind < 8) {
            name = "truncate";
            op_truncate(&w, i);
        } else {
            name = "release";
            op_release(&w, i);
        }
        w.ops++;
        snprintf(what, sizeof what, "seed %" PRIu64 " op %d (%s seq %d)", seed, op, name, i);
        if (!check_world(&w, what)) break; /* the first failure explains itself */
    }
    rlx_kv_pages_stats st = rlx_kv_pages_get_stats(w.kp);
    printf("property: %d pages x %d rows, seed %" PRIu64 ": %" PRId64 " ops, %" PRId64 " OOM, %" PRId64
           " copies, %" PRId64 " evictions, prefix hits %" PRId64 "/%" PRId64 " tokens\n",
           n_pages, ps, seed, w.ops, w.ooms, w.copies, st.evictions, st.prefix_hits, st.prefix_queries);
    /* pages of one row are never partly filled: nothing to copy */
    T_CHECK(w.ooms > 0 && (w.copies > 0 || ps == 1) && st.evictions > 0 && st.prefix_hits > 0,
            "seed %" PRIu64 " never exercised OOM (%" PRId64 "), copies (%" PRId64 "), evictions (%" PRId64
            ") or prefix hits (%" PRId64 ")",
            seed, w.ooms, w.copies, st.evictions, st.prefix_hits);
    world_free(&w);
}

/* ---- targeted cases ---- */

static void fill_tokens(int32_t *t, int32_t n, int32_t base) {
    for (int32_t j = 0; j < n; j++) t[j] = base + j;
}

static void test_capacity(void) {
    world w;
    if (!world_init(&w, 8, 4, 1)) return;
    int32_t toks[MAX_LEN];
    fill_tokens(toks, 32, 100);
    w.s[0].live = true;
    T_CHECK(extend(&w, 0, toks, 32, 32), "32 positions fit 8 pages of 4");
    T_CHECK(rlx_kv_pages_available(w.kp) == 0, "full pool: %d available", rlx_kv_pages_available(w.kp));
    w.s[1].live = true;
    rlx_kv_copy cp[1];
    int32_t n_cp;
    T_ERR(rlx_kv_pages_reserve(w.kp, &w.s[1].t, 1, cp, &n_cp), RLX_ERR_OUT_OF_MEMORY, "1 new pages, 0 available");
    T_ERR(rlx_kv_pages_reserve(w.kp, &w.s[0].t, 1, cp, &n_cp), RLX_ERR_OUT_OF_MEMORY, "0 available");
    check_world(&w, "capacity: full");
    op_release(&w, 0); /* all 8 pages registered: they become cached, and a reserve evicts them */
    rlx_kv_pages_stats st = rlx_kv_pages_get_stats(w.kp);
    T_CHECK(st.cached == 8 && st.free == 0, "released full pages: %d cached %d free, expected 8 0", st.cached,
            st.free);
    fill_tokens(toks, 32, 200);
    T_CHECK(extend(&w, 1, toks, 32, 32), "reuse of a released pool");
    st = rlx_kv_pages_get_stats(w.kp);
    T_CHECK(st.evictions == 8, "reuse evicted %" PRId64 " pages, expected 8", st.evictions);
    check_world(&w, "capacity: reused");
    /* bigger than the pool itself: refused, naming the need */
    T_ERR(rlx_kv_pages_reserve(w.kp, &w.s[1].t, 33, cp, &n_cp), RLX_ERR_OUT_OF_MEMORY, "need 9 new pages");
    world_free(&w);
}

static void test_fork_partial(void) {
    world w;
    if (!world_init(&w, 8, 4, 2)) return;
    int32_t toks[8];
    fill_tokens(toks, 6, 10);
    w.s[0].live = true;
    extend(&w, 0, toks, 6, 6); /* page 1 holds positions 4, 5 */
    op_fork(&w, 0, 1);
    int32_t shared = w.s[0].t.pages[1];
    T_CHECK(rlx_kv_pages_refcount(w.kp, shared) == 2, "forked partial page refcount %d",
            rlx_kv_pages_refcount(w.kp, shared));
    int64_t copies = w.copies;
    int32_t b = 77;
    extend(&w, 1, &b, 1, 1);
    T_CHECK(w.copies == copies + 1 && w.s[1].t.pages[1] != shared && w.s[0].t.pages[1] == shared,
            "write into the shared partial page: %" PRId64 " copies, pages %d / %d", w.copies - copies,
            w.s[1].t.pages[1], w.s[0].t.pages[1]);
    int32_t a = 55;
    extend(&w, 0, &a, 1, 1); /* now held by seq 0 alone: written in place */
    T_CHECK(w.copies == copies + 1 && w.s[0].t.pages[1] == shared, "the sole holder copied (%" PRId64 ")",
            w.copies - copies);
    check_world(&w, "fork then write");
    world_free(&w);
}

static void test_truncate_registered(void) {
    world w;
    if (!world_init(&w, 8, 4, 3)) return;
    int32_t toks[9];
    fill_tokens(toks, 9, 30);
    w.s[0].live = true;
    extend(&w, 0, toks, 8, 8); /* two full, registered pages */
    int32_t p1 = w.s[0].t.pages[1];
    w.s[1].live = true;
    int32_t got = rlx_kv_pages_match_prefix(w.kp, &w.s[1].t, toks, 9, 8);
    T_CHECK(got == 8 && w.s[1].t.pages[1] == p1, "match of the written prefix gave %d tokens", got);
    w.s[1].len = got;
    memcpy(w.s[1].tok, toks, 8 * sizeof *toks);
    rlx_kv_pages_truncate(w.kp, &w.s[0].t, 6);
    w.s[0].len = 6;
    int64_t copies = w.copies;
    int32_t x = 99;
    extend(&w, 0, &x, 1, 1); /* page 1 shared with seq 1: copied */
    T_CHECK(w.copies == copies + 1 && w.s[0].t.pages[1] != p1, "truncate into a shared registered page: %" PRId64
            " copies", w.copies - copies);
    check_world(&w, "truncate shared then write");
    /* seq 1 alone holds p1 now: truncating and writing it unregisters it instead */
    rlx_kv_pages_truncate(w.kp, &w.s[1].t, 6);
    w.s[1].len = 6;
    extend(&w, 1, &x, 1, 1);
    T_CHECK(w.copies == copies + 1 && w.s[1].t.pages[1] == p1, "the sole holder copied");
    w.s[2].live = true;
    got = rlx_kv_pages_match_prefix(w.kp, &w.s[2].t, toks, 9, 8);
    T_CHECK(got == 4, "after p1 changed, the original prompt matched %d tokens, expected 4", got);
    w.s[2].len = got;
    memcpy(w.s[2].tok, toks, 4 * sizeof *toks);
    check_world(&w, "truncate alone then write");
    world_free(&w);
}

static void test_lru(void) {
    world w;
    if (!world_init(&w, 5, 2, 4)) return;
    int32_t a[2] = {1, 1}, b[2] = {2, 2}, c[2] = {3, 3}, d[4] = {4, 4, 5, 5}, f[2] = {6, 6}, g[2] = {7, 7};
    for (int i = 0; i < 3; i++) w.s[i].live = true;
    extend(&w, 0, a, 2, 2);
    extend(&w, 1, b, 2, 2);
    extend(&w, 2, c, 2, 2);
    op_release(&w, 0);
    op_release(&w, 2);
    op_release(&w, 1); /* cached, least recent first: a, c, b */
    w.s[3].live = true;
    extend(&w, 3, d, 4, 4); /* 2 pages: the 2 free ones */
    T_CHECK(rlx_kv_pages_get_stats(w.kp).evictions == 0, "evicted while pages were free");
    w.s[4].live = true;
    extend(&w, 4, f, 2, 2); /* evicts a */
    int32_t q[3] = {1, 1, 0};
    rlx_kv_table t = {0};
    T_CHECK(rlx_kv_pages_match_prefix(w.kp, &t, q, 3, 2) == 0, "a was evicted first, yet matched");
    rlx_kv_pages_release(w.kp, &t);
    w.s[5].live = true;
    extend(&w, 5, g, 2, 2); /* evicts c */
    q[0] = q[1] = 3;
    T_CHECK(rlx_kv_pages_match_prefix(w.kp, &t, q, 3, 2) == 0, "c was evicted second, yet matched");
    rlx_kv_pages_release(w.kp, &t);
    q[0] = q[1] = 2;
    T_CHECK(rlx_kv_pages_match_prefix(w.kp, &t, q, 3, 2) == 2, "b, released last, is no longer cached");
    rlx_kv_pages_release(w.kp, &t);
    check_world(&w, "lru");
    /* a sequence releases its tail first: its last page is evicted before its first */
    op_release(&w, 3);
    op_release(&w, 4);
    op_release(&w, 5); /* cached now: b (revived and released by the match), d's page 1, d's page 0, f, g */
    int32_t e[2] = {9, 9};
    for (int k = 0; k < 2; k++) {
        w.s[k].live = true;
        extend(&w, k, e, 2, 2); /* evicts b, then d's page 1 */
    }
    T_CHECK(rlx_kv_pages_match_prefix(w.kp, &t, d, 4, 4) == 2, "d's head went before its tail");
    rlx_kv_pages_release(w.kp, &t);
    check_world(&w, "lru tail first");
    world_free(&w);
}

static void test_reuse_and_args(void) {
    world w;
    if (!world_init(&w, 8, 4, 5)) return;
    int32_t toks[13];
    fill_tokens(toks, 13, 40);
    w.s[0].live = true;
    extend(&w, 0, toks, 12, 12);
    int32_t pages[3];
    memcpy(pages, w.s[0].t.pages, sizeof pages);
    op_release(&w, 0);
    rlx_kv_table t = {0};
    T_CHECK(rlx_kv_pages_match_prefix(w.kp, &t, toks, 12, 11) == 8, "12-token prompt, max 11: not 8 tokens");
    T_CHECK(t.pages[0] == pages[0] && t.pages[1] == pages[1], "revived pages %d %d, wrote %d %d", t.pages[0],
            t.pages[1], pages[0], pages[1]);
    T_CHECK(rlx_kv_pages_match_prefix(w.kp, &t, toks, 12, 12) == 0, "matched into a non-empty table");
    rlx_kv_pages_stats st = rlx_kv_pages_get_stats(w.kp);
    T_CHECK(st.prefix_queries == 12 && st.prefix_hits == 8, "stats %" PRId64 "/%" PRId64 ", expected 8/12",
            st.prefix_hits, st.prefix_queries);
    rlx_kv_copy cp[1];
    int32_t n_cp;
    T_ERR(rlx_kv_pages_reserve(w.kp, &t, -1, cp, &n_cp), RLX_ERR_INVALID_ARGUMENT, "within int32");
    T_ERR(rlx_kv_pages_reserve(w.kp, &t, INT32_MAX, cp, &n_cp), RLX_ERR_INVALID_ARGUMENT, "within int32");
    T_ERR(rlx_kv_pages_reserve(w.kp, &t, 1, NULL, &n_cp), RLX_ERR_INVALID_ARGUMENT, "copies");
    T_ERR(rlx_kv_pages_commit(w.kp, &t, toks, 9), RLX_ERR_INVALID_ARGUMENT, "[8, 8]");
    T_ERR(rlx_kv_pages_commit(w.kp, &t, toks, 7), RLX_ERR_INVALID_ARGUMENT, "outside");
    rlx_kv_table u = {0};
    T_OK(rlx_kv_pages_fork(w.kp, &t, &u));
    T_ERR(rlx_kv_pages_fork(w.kp, &t, &u), RLX_ERR_INVALID_ARGUMENT, "not empty");
    rlx_kv_pages_truncate(w.kp, &u, 100); /* clamped: nothing changes */
    T_CHECK(u.n_tokens == 8 && u.n_pages == 2, "truncate past the end changed the table");
    rlx_kv_pages_release(w.kp, &u);
    rlx_kv_pages_release(w.kp, &t);
    rlx_kv_pages *kp = NULL;
    T_ERR(rlx_kv_pages_create(0, 4, &kp), RLX_ERR_INVALID_ARGUMENT, "0 pages");
    T_ERR(rlx_kv_pages_create(1 << 20, 1 << 12, &kp), RLX_ERR_INVALID_ARGUMENT, "int32");
    T_CHECK(kp == NULL, "a failed create set *out");
    world_free(&w);
}

int main(void) {
#ifdef RLX_KV_PAGES_HASH_MASK
    printf("prefix hash masked to %#llx: unrelated pages collide\n", (unsigned long long)RLX_KV_PAGES_HASH_MASK);
#endif
    test_capacity();
    test_fork_partial();
    test_truncate_registered();
    test_lru();
    test_reuse_and_args();
    static const struct { int32_t n_pages, ps; } pools[] = {{24, 4}, {40, 2}, {16, 8}, {64, 1}, {12, 16}};
    for (uint64_t seed = 1; seed <= 10; seed++)
        property(pools[seed % 5].n_pages, pools[seed % 5].ps, seed, 3000);
    return t_summary("test_kv_pages");
}
