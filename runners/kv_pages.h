/* The host-side bookkeeping of the paged KV pool (ir/backend.h, rlx_state_spec): which sequence holds
 * which of the pool's n_pages pages of page_size rows. Pure host code; the backend only ever sees the
 * page tables (rlx_run_rows) and the copies (copy_pages) this module hands out.
 *
 * Prefix caching follows vLLM's "automatic prefix caching": a full page is registered under (its
 * parent's identity, its page_size tokens), the parent being the page before it in the sequence that
 * wrote it, so a new prompt that starts like a cached one reuses its pages, whether live (shared,
 * refcount++) or recently freed (cached, revived). Every registered page stores its tokens and its
 * parent's identity, and a lookup compares both: a hash collision can cost a miss, never wrong KV.
 *
 * A page is in exactly one state:
 *   used    refcount > 0: held by that many tables;
 *   cached  refcount 0 and registered: its K/V are kept for reuse, evictable least recently released
 *           first;
 *   free    refcount 0 and not registered.
 * A registered page's content never changes: one about to be written is first either copied (when
 * shared: copy-on-write) or unregistered (when its one holder writes it).
 *
 * Every operation is O(pages it touches), amortised; the pool's memory is fixed at create (tables
 * grow to at most n_pages entries). Not thread-safe: one engine thread owns a pool. */
#ifndef RLX_RUNNERS_KV_PAGES_H
#define RLX_RUNNERS_KV_PAGES_H

#include <stdint.h>

#include "rlx/status.h"

typedef struct rlx_kv_pages rlx_kv_pages; /* the pool's bookkeeping */

/* A page the backend must copy (all layers, K and V) before the run that writes dst. */
typedef struct rlx_kv_copy {
    int32_t src, dst;
} rlx_kv_copy;

/* One sequence's page table; zero-initialised is empty. The fields are read by the engine (to build
 * rlx_run_rows) and written only by this module. A table belongs to one pool. */
typedef struct rlx_kv_table {
    int32_t *pages;   /* owned: logical page k -> pool page, n_pages entries (cap allocated) */
    int32_t n_pages;  /* pages held: at least ceil(n_tokens / page_size); more after a reserve */
    int32_t cap;      /* allocated entries */
    int32_t n_tokens; /* positions [0, n_tokens) hold valid K/V */
} rlx_kv_table;

/* n_pages and page_size positive, n_pages * page_size within int32 (positions are int32).
 * *out set only on success. */
rlx_status rlx_kv_pages_create(int32_t n_pages, int32_t page_size, rlx_kv_pages **out);
/* NULL is fine. Tables still holding pages keep their arrays: release them first (or free them). */
void rlx_kv_pages_destroy(rlx_kv_pages *kp);

/* Room for positions [t->n_tokens, t->n_tokens + n) (n >= 0): new pages appended as needed. The page
 * holding position t->n_tokens is the only held page a write can reach that may be shared or
 * registered (fork shares only pages with valid rows, truncate drops the rest, commit registers only
 * full pages); when the write reaches it:
 *   shared (refcount > 1): replaced in t by a fresh page, and {old, fresh} written to copies[0] when
 *     the old page holds valid rows of t (t->n_tokens % page_size != 0). copies needs room for 1;
 *     *n_copies gets 0 or 1. The backend copies before the run that writes.
 *   registered and held only by t: unregistered (its content is about to change).
 * Several reserves may precede one run (a batch): the backend then applies all their copies, in the
 * order they were returned, before the run writes anything; a page released in between may already
 * be another copy's destination or a fresh page of a later reserve, which that order keeps right.
 * Fresh pages come from the free stack, else by evicting the least recently released cached page.
 * All or nothing: RLX_ERR_OUT_OF_MEMORY (message: pages needed vs available) with t and the pool
 * unchanged when the pool lacks pages or the table's array cannot grow; RLX_ERR_INVALID_ARGUMENT
 * for n < 0, an overflowing n_tokens + n, NULL copies/n_copies or a table whose fields are
 * inconsistent. */
rlx_status rlx_kv_pages_reserve(rlx_kv_pages *kp, rlx_kv_table *t, int32_t n, rlx_kv_copy *copies,
                                int32_t *n_copies);

/* After the backend wrote positions [t->n_tokens, n_tokens) (reserved before): t->n_tokens =
 * n_tokens, and every page that became full is registered under (the table's previous page, its
 * tokens). tokens: the sequence's ids, at least n_tokens of them (only those of pages that became
 * full are read). A page is registered only when its parent (the page before it) is registered, or
 * it is page 0, and it is held by t alone. RLX_ERR_INVALID_ARGUMENT, t unchanged, when n_tokens is
 * below t->n_tokens or past the reserved room (t->n_pages * page_size), or tokens is NULL while a
 * page becomes full. */
rlx_status rlx_kv_pages_commit(rlx_kv_pages *kp, rlx_kv_table *t, const int32_t *tokens, int32_t n_tokens);

/* For an empty t (no pages, n_tokens 0): attaches the registered pages that hold the longest prefix
 * of tokens[0..n) in whole pages, at most max_tokens of them (the engine passes n - 1: the last
 * token is always computed, for its logits), and sets t->n_tokens to the tokens covered, which it
 * returns (a multiple of page_size). Pages come from live sequences (refcount++) or from the cached
 * list (revived). Returns 0 and attaches nothing for a non-empty t, n <= 0 or NULL tokens; should the
 * table's array fail to grow, the prefix found so far is kept (a shorter match is still correct).
 * Counts n query tokens and the returned hit tokens in the stats. */
int32_t rlx_kv_pages_match_prefix(rlx_kv_pages *kp, rlx_kv_table *t, const int32_t *tokens, int32_t n,
                                  int32_t max_tokens);

/* dst (empty) shares the pages of src that hold its valid positions, the partial last page included
 * (copy-on-write at the next reserve of either); dst->n_tokens = src->n_tokens. Pages src reserved
 * past its n_tokens are not shared. RLX_ERR_INVALID_ARGUMENT for a non-empty dst (or dst == src);
 * RLX_ERR_OUT_OF_MEMORY, dst unchanged, when its array cannot be allocated. */
rlx_status rlx_kv_pages_fork(rlx_kv_pages *kp, const rlx_kv_table *src, rlx_kv_table *dst);

/* Keeps positions [0, n_tokens), n_tokens clamped into [0, t->n_tokens]; pages past
 * ceil(n_tokens / page_size) (reserved ones included) are released. A registered page left partly
 * valid stays registered until a reserve writes it. */
void rlx_kv_pages_truncate(rlx_kv_pages *kp, rlx_kv_table *t, int32_t n_tokens);

/* Releases every page of t, last first (so a sequence's tail is evicted before its head), and frees
 * its array; t becomes empty (zeroed). Registered pages whose count drops to 0 become cached; the
 * others free. NULL t is fine. */
void rlx_kv_pages_release(rlx_kv_pages *kp, rlx_kv_table *t);

/* Pages a reserve could still obtain (free + cached). */
int32_t rlx_kv_pages_available(const rlx_kv_pages *kp);

typedef struct rlx_kv_pages_stats {
    int32_t n_pages, page_size;
    int32_t used, cached, free; /* used + cached + free == n_pages */
    int32_t registered;         /* pages in the prefix table (used or cached) */
    int64_t prefix_queries;     /* tokens asked of match_prefix (its n, summed) */
    int64_t prefix_hits;        /* tokens it returned */
    int64_t evictions;          /* cached pages taken for reuse */
} rlx_kv_pages_stats;
rlx_kv_pages_stats rlx_kv_pages_get_stats(const rlx_kv_pages *kp);

/* For tests and debugging. The holders of a pool page (-1 outside [0, n_pages)). */
int32_t rlx_kv_pages_refcount(const rlx_kv_pages *kp, int32_t page);
/* Walks every structure (free stack, LRU list, prefix table, counters) and checks they agree:
 * RLX_ERR_INTERNAL naming the first disagreement. O(n_pages). */
rlx_status rlx_kv_pages_check(const rlx_kv_pages *kp);

#endif
