/* A persistent pool of worker threads for the CPU backend. One job at a time: the caller's thread
 * works too, and rlx_thread_pool_run returns when every item is done. Items are handed out in
 * chunks from a shared counter, so the split adapts to load; a kernel whose per-item result does
 * not depend on which thread ran it is therefore deterministic for any thread count. A job may
 * ask for fewer threads than the pool has: the others are not woken into it and not waited for,
 * so a small job pays for the hand-off to few threads only. */
#ifndef RLX_CPU_THREAD_POOL_H
#define RLX_CPU_THREAD_POOL_H

#include <stdint.h>

#include "rlx/status.h"

typedef struct rlx_thread_pool rlx_thread_pool;

/* fn processes items [begin, end); tid in [0, size) is unique among concurrently running calls
 * (use it to pick per-thread scratch). */
typedef void (*rlx_pool_fn)(void *ctx, int64_t begin, int64_t end, int tid);

/* n_threads counts the caller: n_threads - 1 workers are started. */
rlx_status rlx_thread_pool_create(int n_threads, rlx_thread_pool **out);
void rlx_thread_pool_destroy(rlx_thread_pool *p); /* NULL is fine; joins the workers */
int rlx_thread_pool_size(const rlx_thread_pool *p);

/* Runs fn over [0, n_items) in chunks of `chunk` items on at most n_threads threads (the caller
 * and workers 1 .. n_threads - 1; clamped to the pool size). Calls are serialised: a second
 * thread calling run waits until the first job is finished. */
void rlx_thread_pool_run(rlx_thread_pool *p, int n_threads, int64_t n_items, int64_t chunk, rlx_pool_fn fn,
                         void *ctx);

#endif
