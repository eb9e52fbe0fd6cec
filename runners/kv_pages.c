/* The paged KV pool's bookkeeping (kv_pages.h): refcounts, a free stack, an intrusive LRU list of
 * cached pages and a prefix table (hash buckets chained through the pages). */
#include "runners/kv_pages.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Tests build a second copy with few hash bits, so that unrelated pages collide. */
#ifndef RLX_KV_PAGES_HASH_MASK
#define RLX_KV_PAGES_HASH_MASK UINT64_MAX
#endif

#define NONE (-1)

typedef struct kv_page {
    int32_t ref;            /* holders */
    int32_t hnext;          /* next page in its hash bucket */
    int32_t prev, next;     /* LRU neighbours while cached */
    uint64_t id;            /* identity while registered (never reused); 0: not registered */
    uint64_t parent_id;     /* the registered parent's id; 0 for page 0 of a sequence */
    uint64_t hash;          /* of (parent_id, tokens) */
} kv_page;

struct rlx_kv_pages {
    int32_t n_pages, page_size;
    kv_page *pages;         /* owned, n_pages */
    int32_t *tokens;        /* owned, n_pages * page_size: a registered page's tokens */
    int32_t *free_stack;    /* owned, n_pages; n_free used */
    int32_t n_free;
    int32_t lru_head, lru_tail; /* cached pages, least recently released at the head */
    int32_t n_cached, n_used, n_registered;
    int32_t *buckets;       /* owned, n_buckets (a power of two), heads of hash chains */
    uint32_t bucket_mask;
    uint64_t next_id;       /* ids only grow, so a stale parent id never matches a reused page */
    int64_t prefix_queries, prefix_hits, evictions;
};

/* splitmix64's finaliser: a bijection with full avalanche */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t page_hash(uint64_t parent_id, const int32_t *tokens, int32_t n) {
    uint64_t h = mix64(parent_id + 0x9e3779b97f4a7c15ull);
    for (int32_t i = 0; i < n; i++) h = mix64(h ^ (uint32_t)tokens[i]);
    return h & (uint64_t)RLX_KV_PAGES_HASH_MASK;
}

rlx_status rlx_kv_pages_create(int32_t n_pages, int32_t page_size, rlx_kv_pages **out) {
    if (!out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv pages: out is NULL");
    int32_t rows;
    if (n_pages <= 0 || page_size <= 0 || __builtin_mul_overflow(n_pages, page_size, &rows))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "kv pages: %d pages of %d rows (expected both positive, their product within int32)",
                          n_pages, page_size);
    uint32_t n_buckets = 1;
    while (n_buckets < (uint32_t)n_pages) n_buckets <<= 1; /* load <= 1: every page at most once */
    rlx_kv_pages *kp = calloc(1, sizeof *kp);
    if (kp) {
        kp->pages = calloc((size_t)n_pages, sizeof *kp->pages);
        kp->tokens = calloc((size_t)rows, sizeof *kp->tokens);
        kp->free_stack = calloc((size_t)n_pages, sizeof *kp->free_stack);
        kp->buckets = calloc(n_buckets, sizeof *kp->buckets);
    }
    if (!kp || !kp->pages || !kp->tokens || !kp->free_stack || !kp->buckets) {
        rlx_kv_pages_destroy(kp);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "kv pages: bookkeeping of %d pages of %d rows", n_pages,
                          page_size);
    }
    kp->n_pages = n_pages;
    kp->page_size = page_size;
    kp->bucket_mask = n_buckets - 1;
    for (uint32_t b = 0; b < n_buckets; b++) kp->buckets[b] = NONE;
    /* popped in ascending order: a fresh pool hands out pages 0, 1, 2, ... */
    for (int32_t i = 0; i < n_pages; i++) {
        kp->pages[i] = (kv_page){.hnext = NONE, .prev = NONE, .next = NONE};
        kp->free_stack[i] = n_pages - 1 - i;
    }
    kp->n_free = n_pages;
    kp->lru_head = kp->lru_tail = NONE;
    kp->next_id = 1;
    *out = kp;
    return NULL;
}

void rlx_kv_pages_destroy(rlx_kv_pages *kp) {
    if (!kp) return;
    free(kp->pages);
    free(kp->tokens);
    free(kp->free_stack);
    free(kp->buckets);
    free(kp);
}

/* ---- the LRU list of cached pages ---- */

static void lru_remove(rlx_kv_pages *kp, int32_t p) {
    kv_page *pg = &kp->pages[p];
    if (pg->prev != NONE) kp->pages[pg->prev].next = pg->next;
    else kp->lru_head = pg->next;
    if (pg->next != NONE) kp->pages[pg->next].prev = pg->prev;
    else kp->lru_tail = pg->prev;
    pg->prev = pg->next = NONE;
    kp->n_cached--;
}

static void lru_append(rlx_kv_pages *kp, int32_t p) {
    kv_page *pg = &kp->pages[p];
    pg->prev = kp->lru_tail;
    pg->next = NONE;
    if (kp->lru_tail != NONE) kp->pages[kp->lru_tail].next = p;
    else kp->lru_head = p;
    kp->lru_tail = p;
    kp->n_cached++;
}

/* ---- the prefix table ---- */

static void page_register(rlx_kv_pages *kp, int32_t p, uint64_t parent_id, const int32_t *tokens) {
    kv_page *pg = &kp->pages[p];
    int32_t ps = kp->page_size;
    memcpy(kp->tokens + (size_t)p * (size_t)ps, tokens, (size_t)ps * sizeof *tokens);
    pg->id = kp->next_id++;
    pg->parent_id = parent_id;
    pg->hash = page_hash(parent_id, tokens, ps);
    int32_t *head = &kp->buckets[pg->hash & kp->bucket_mask];
    pg->hnext = *head;
    *head = p;
    kp->n_registered++;
}

static void page_unregister(rlx_kv_pages *kp, int32_t p) {
    kv_page *pg = &kp->pages[p];
    int32_t *link = &kp->buckets[pg->hash & kp->bucket_mask];
    while (*link != p) link = &kp->pages[*link].hnext;
    *link = pg->hnext;
    pg->hnext = NONE;
    pg->id = pg->parent_id = pg->hash = 0;
    kp->n_registered--;
}

/* The registered page holding tokens (page_size of them) after the page of id parent_id, or NONE.
 * Both the parent and the tokens are compared: the hash only narrows the search. */
static int32_t page_lookup(const rlx_kv_pages *kp, uint64_t parent_id, const int32_t *tokens) {
    int32_t ps = kp->page_size;
    uint64_t h = page_hash(parent_id, tokens, ps);
    for (int32_t p = kp->buckets[h & kp->bucket_mask]; p != NONE; p = kp->pages[p].hnext) {
        const kv_page *pg = &kp->pages[p];
        if (pg->hash == h && pg->parent_id == parent_id &&
            memcmp(kp->tokens + (size_t)p * (size_t)ps, tokens, (size_t)ps * sizeof *tokens) == 0)
            return p;
    }
    return NONE;
}

/* ---- taking and giving back pages ---- */

/* A page of refcount 1 for a caller that checked rlx_kv_pages_available. */
static int32_t page_take(rlx_kv_pages *kp) {
    int32_t p;
    if (kp->n_free > 0) {
        p = kp->free_stack[--kp->n_free];
    } else {
        p = kp->lru_head;
        lru_remove(kp, p);
        page_unregister(kp, p);
        kp->evictions++;
    }
    kp->pages[p].ref = 1;
    kp->n_used++;
    return p;
}

static void page_hold(rlx_kv_pages *kp, int32_t p) {
    if (kp->pages[p].ref++ > 0) return;
    lru_remove(kp, p); /* a cached page revived */
    kp->n_used++;
}

static void page_drop(rlx_kv_pages *kp, int32_t p) {
    if (--kp->pages[p].ref > 0) return;
    kp->n_used--;
    if (kp->pages[p].id) lru_append(kp, p);
    else kp->free_stack[kp->n_free++] = p;
}

/* ---- tables ---- */

static int32_t pages_for(const rlx_kv_pages *kp, int32_t n_tokens) {
    return (int32_t)(((int64_t)n_tokens + kp->page_size - 1) / kp->page_size);
}

/* Room for cap >= need entries (need <= the pool's n_pages); t unchanged on failure. */
static bool table_grow(rlx_kv_table *t, int32_t need) {
    if (need <= t->cap) return true;
    int64_t cap = t->cap > 4 ? t->cap : 4;
    while (cap < need) cap *= 2;
    int32_t *p = realloc(t->pages, (size_t)cap * sizeof *p);
    if (!p) return false;
    t->pages = p;
    t->cap = (int32_t)(cap > INT32_MAX ? INT32_MAX : cap);
    return true;
}

static rlx_status table_check(const rlx_kv_pages *kp, const rlx_kv_table *t, const char *what) {
    if (!kp || !t) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv pages %s: pool or table is NULL", what);
    if (t->n_tokens < 0 || t->n_pages < 0 || t->n_pages > t->cap || t->n_pages > kp->n_pages ||
        (t->n_pages > 0 && !t->pages) || pages_for(kp, t->n_tokens) > t->n_pages)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "kv pages %s: table of %d tokens in %d pages (cap %d) of %d rows is inconsistent", what,
                          t->n_tokens, t->n_pages, t->cap, kp->page_size);
    return NULL;
}

rlx_status rlx_kv_pages_reserve(rlx_kv_pages *kp, rlx_kv_table *t, int32_t n, rlx_kv_copy *copies,
                                int32_t *n_copies) {
    RLX_TRY(table_check(kp, t, "reserve"));
    if (!copies || !n_copies) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv pages reserve: copies is NULL");
    *n_copies = 0;
    if (n < 0 || n > INT32_MAX - t->n_tokens)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "kv pages reserve: %d positions after %d (expected n >= 0 and the end within int32)", n,
                          t->n_tokens);
    if (n == 0) return NULL;
    int32_t target = pages_for(kp, t->n_tokens + n);
    int32_t append = target > t->n_pages ? target - t->n_pages : 0;
    int32_t k = t->n_tokens / kp->page_size; /* the page of the first written position */
    bool cow = k < t->n_pages && kp->pages[t->pages[k]].ref > 1;
    int32_t need = append + (cow ? 1 : 0);
    int32_t have = rlx_kv_pages_available(kp);
    if (target > kp->n_pages || need > have)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY,
                          "kv pages: %d more positions after %d need %d new pages, %d available (pool of %d pages "
                          "of %d rows)",
                          n, t->n_tokens, need, have, kp->n_pages, kp->page_size);
    if (!table_grow(t, target))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "kv pages: a page table of %d entries", target);
    if (k < t->n_pages) {
        int32_t old = t->pages[k];
        if (cow) {
            t->pages[k] = page_take(kp);
            page_drop(kp, old); /* still held by others: ref was > 1 */
            if (t->n_tokens % kp->page_size != 0) copies[(*n_copies)++] = (rlx_kv_copy){old, t->pages[k]};
        } else if (kp->pages[old].id) {
            page_unregister(kp, old);
        }
    }
    while (t->n_pages < target) t->pages[t->n_pages++] = page_take(kp);
    return NULL;
}

rlx_status rlx_kv_pages_commit(rlx_kv_pages *kp, rlx_kv_table *t, const int32_t *tokens, int32_t n_tokens) {
    RLX_TRY(table_check(kp, t, "commit"));
    int32_t ps = kp->page_size;
    if (n_tokens < t->n_tokens || (int64_t)n_tokens > (int64_t)t->n_pages * ps)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "kv pages commit: %d tokens outside [%d, %d] (the valid positions and the reserved room)",
                          n_tokens, t->n_tokens, (int32_t)((int64_t)t->n_pages * ps));
    int32_t first = t->n_tokens / ps, end = n_tokens / ps; /* pages [first, end) became full */
    if (first < end && !tokens)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv pages commit: tokens is NULL");
    for (int32_t k = first; k < end; k++) {
        int32_t p = t->pages[k];
        uint64_t parent = k > 0 ? kp->pages[t->pages[k - 1]].id : 0;
        /* an unregistered parent has no stable identity; a shared page was not written by t alone */
        if ((k > 0 && parent == 0) || kp->pages[p].id || kp->pages[p].ref != 1) continue;
        page_register(kp, p, parent, tokens + (size_t)k * (size_t)ps);
    }
    t->n_tokens = n_tokens;
    return NULL;
}

int32_t rlx_kv_pages_match_prefix(rlx_kv_pages *kp, rlx_kv_table *t, const int32_t *tokens, int32_t n,
                                  int32_t max_tokens) {
    if (!kp || !t || t->n_pages != 0 || t->n_tokens != 0 || !tokens || n <= 0) return 0;
    kp->prefix_queries += n;
    int32_t ps = kp->page_size;
    int32_t limit = (max_tokens < n ? max_tokens : n) / ps;
    uint64_t parent = 0;
    while (t->n_pages < limit) {
        int32_t p = page_lookup(kp, parent, tokens + (size_t)t->n_pages * (size_t)ps);
        if (p == NONE || !table_grow(t, t->n_pages + 1)) break;
        page_hold(kp, p);
        t->pages[t->n_pages++] = p;
        parent = kp->pages[p].id;
    }
    t->n_tokens = t->n_pages * ps;
    kp->prefix_hits += t->n_tokens;
    return t->n_tokens;
}

rlx_status rlx_kv_pages_fork(rlx_kv_pages *kp, const rlx_kv_table *src, rlx_kv_table *dst) {
    RLX_TRY(table_check(kp, src, "fork"));
    if (!dst || dst == src || dst->n_pages != 0 || dst->n_tokens != 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "kv pages fork: the destination table is not empty");
    int32_t n = pages_for(kp, src->n_tokens);
    if (!table_grow(dst, n))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "kv pages fork: a page table of %d entries", n);
    for (int32_t k = 0; k < n; k++) {
        page_hold(kp, src->pages[k]);
        dst->pages[k] = src->pages[k];
    }
    dst->n_pages = n;
    dst->n_tokens = src->n_tokens;
    return NULL;
}

void rlx_kv_pages_truncate(rlx_kv_pages *kp, rlx_kv_table *t, int32_t n_tokens) {
    if (!kp || !t) return;
    if (n_tokens > t->n_tokens) n_tokens = t->n_tokens;
    if (n_tokens < 0) n_tokens = 0;
    int32_t keep = pages_for(kp, n_tokens);
    while (t->n_pages > keep) page_drop(kp, t->pages[--t->n_pages]);
    t->n_tokens = n_tokens;
}

void rlx_kv_pages_release(rlx_kv_pages *kp, rlx_kv_table *t) {
    if (!t) return;
    if (kp) rlx_kv_pages_truncate(kp, t, 0);
    free(t->pages);
    *t = (rlx_kv_table){0};
}

int32_t rlx_kv_pages_available(const rlx_kv_pages *kp) {
    return kp ? kp->n_free + kp->n_cached : 0;
}

rlx_kv_pages_stats rlx_kv_pages_get_stats(const rlx_kv_pages *kp) {
    if (!kp) return (rlx_kv_pages_stats){0};
    return (rlx_kv_pages_stats){
        .n_pages = kp->n_pages,
        .page_size = kp->page_size,
        .used = kp->n_used,
        .cached = kp->n_cached,
        .free = kp->n_free,
        .registered = kp->n_registered,
        .prefix_queries = kp->prefix_queries,
        .prefix_hits = kp->prefix_hits,
        .evictions = kp->evictions,
    };
}

int32_t rlx_kv_pages_refcount(const rlx_kv_pages *kp, int32_t page) {
    return kp && page >= 0 && page < kp->n_pages ? kp->pages[page].ref : -1;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) return rlx_errorf(RLX_ERR_INTERNAL, "kv pages check: " __VA_ARGS__);          \
    } while (0)

rlx_status rlx_kv_pages_check(const rlx_kv_pages *kp) {
    CHECK(kp, "pool is NULL");
    int32_t used = 0, cached = 0, reg = 0, in_free = 0;
    for (int32_t p = 0; p < kp->n_pages; p++) {
        const kv_page *pg = &kp->pages[p];
        CHECK(pg->ref >= 0, "page %d has refcount %d", p, pg->ref);
        used += pg->ref > 0;
        cached += pg->ref == 0 && pg->id != 0;
        reg += pg->id != 0;
        CHECK(pg->id < kp->next_id && pg->parent_id < kp->next_id, "page %d has an id from the future", p);
    }
    for (int32_t i = 0; i < kp->n_free; i++) {
        int32_t p = kp->free_stack[i];
        CHECK(p >= 0 && p < kp->n_pages, "free stack entry %d is %d", i, p);
        CHECK(kp->pages[p].ref == 0 && kp->pages[p].id == 0, "free page %d is held (%d) or registered", p,
              kp->pages[p].ref);
        in_free++;
    }
    CHECK(used == kp->n_used && cached == kp->n_cached && reg == kp->n_registered && in_free == kp->n_free,
          "counted used %d cached %d registered %d free %d, kept %d %d %d %d", used, cached, reg, in_free,
          kp->n_used, kp->n_cached, kp->n_registered, kp->n_free);
    CHECK(used + cached + in_free == kp->n_pages, "used %d + cached %d + free %d != %d pages", used, cached,
          in_free, kp->n_pages);
    int32_t walked = 0, prev = NONE;
    for (int32_t p = kp->lru_head; p != NONE; prev = p, p = kp->pages[p].next) {
        CHECK(++walked <= cached, "the LRU list is longer than the %d cached pages (a cycle?)", cached);
        CHECK(kp->pages[p].prev == prev, "LRU page %d links back to %d, not %d", p, kp->pages[p].prev, prev);
        CHECK(kp->pages[p].ref == 0 && kp->pages[p].id != 0, "LRU page %d is held or unregistered", p);
    }
    CHECK(walked == cached && prev == kp->lru_tail, "LRU list of %d pages ends at %d; %d cached, tail %d", walked,
          prev, cached, kp->lru_tail);
    int32_t chained = 0;
    for (uint32_t b = 0; b <= kp->bucket_mask; b++) {
        for (int32_t p = kp->buckets[b]; p != NONE; p = kp->pages[p].hnext) {
            CHECK(++chained <= reg, "hash chains hold more than the %d registered pages (a cycle?)", reg);
            const kv_page *pg = &kp->pages[p];
            CHECK(pg->id != 0 && (pg->hash & kp->bucket_mask) == b, "page %d is in bucket %u wrongly", p, b);
            CHECK(pg->hash == page_hash(pg->parent_id, kp->tokens + (size_t)p * (size_t)kp->page_size,
                                        kp->page_size),
                  "page %d's hash does not match its tokens", p);
        }
    }
    CHECK(chained == reg, "hash chains hold %d pages, %d registered", chained, reg);
    return NULL;
}
