/* The CPU backend's thread pool.
 *
 * A job is published as one atomic word (a sequence number and the number of threads it uses),
 * so a worker learns which job it is in, and whether it takes part, in one load. Items are claimed
 * in chunks by compare-and-swap on a second word that pairs the job's sequence number with the
 * next item, so a worker that arrives late, even after the job ended, can never claim an item of
 * another job. The caller returns when every item is done, not when every worker has checked in:
 * a worker the OS has not scheduled yet costs nothing, because the threads that run take its
 * share. The job's fields are read the way a seqlock is: the caller invalidates the claim word
 * before it rewrites them, and a claim made after reading them fails if they changed.
 *
 * Workers and the caller spin briefly before sleeping on a condition variable, because a decode
 * step issues jobs back to back and a futex wake-up costs more than these small kernels. The
 * sleep/wake hand-offs are Dekker-style: the side that publishes stores, then reads whether the
 * other side sleeps; the side that sleeps announces it, then re-checks, both sequentially
 * consistent, so one of them always sees the other and no wake-up is lost. */
#include "cpu_fallback/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* Checks of a shared word a thread makes before it goes to sleep: first with a pause between,
 * then giving its core away between checks, which lets a descheduled thread that holds part of
 * the job run sooner when the machine has more runnable threads than cores. */
#define SPIN_CHECKS 16384
#define YIELD_CHECKS 64
/* The low bits of the job word hold the job's thread count (the pool has at most 1024). */
#define JOB_THREAD_BITS 11
#define JOB_THREAD_MASK ((1u << JOB_THREAD_BITS) - 1u)
/* The claim word: the job's sequence number (low 32 bits) above the next item (32 bits). */
#define CLAIM_ITEM_MASK 0xffffffffu

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

typedef struct pool_worker {
    rlx_thread_pool *pool; /* borrowed: the owner */
    pthread_t thread;
    int tid;
} pool_worker;

struct rlx_thread_pool {
    int size;                 /* threads including the caller */
    pool_worker *workers;     /* owned, size - 1 */
    int n_started;            /* workers successfully started */
    pthread_mutex_t run_lock; /* serialises rlx_thread_pool_run callers */
    uint64_t seq;             /* the last job's sequence number; under run_lock */
    pthread_mutex_t lock;     /* pairs with the condition variables */
    pthread_cond_t wake;      /* a new job, or shutdown */
    pthread_cond_t done_cv;   /* the current job's last item is done */
    atomic_bool shutdown;
    atomic_int n_sleeping;    /* workers asleep on `wake` (or about to be) */
    atomic_bool caller_sleeping;
    atomic_uint_fast64_t job;   /* (seq << JOB_THREAD_BITS) | threads of the job */
    atomic_uint_fast64_t claim; /* (seq << 32) | next item */
    atomic_int_fast64_t done;   /* items of the current job finished */
    /* the current job, written between invalidating `claim` and publishing `job` */
    _Atomic(rlx_pool_fn) fn;
    _Atomic(void *) ctx;
    atomic_int_fast64_t n_items, chunk;
};

static void job_finished_items(rlx_thread_pool *p, int64_t count, int64_t n_items) {
    if (atomic_fetch_add(&p->done, count) + count == n_items && atomic_load(&p->caller_sleeping)) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->done_cv);
        pthread_mutex_unlock(&p->lock);
    }
}

/* Claims and runs chunks of job `seq` until none is left or another job has begun. */
static void work_on_job(rlx_thread_pool *p, uint32_t seq, int tid) {
    uint_fast64_t c = atomic_load_explicit(&p->claim, memory_order_acquire);
    if ((uint32_t)(c >> 32) != seq) return;
    rlx_pool_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&p->ctx, memory_order_relaxed);
    int64_t n = atomic_load_explicit(&p->n_items, memory_order_relaxed);
    int64_t chunk = atomic_load_explicit(&p->chunk, memory_order_relaxed);
    /* pairs with the release fence in rlx_thread_pool_run: fields of a later job imply that the
     * claim word has moved on, and the claims below then fail */
    atomic_thread_fence(memory_order_acquire);
    for (;;) {
        if ((uint32_t)(c >> 32) != seq) return;
        int64_t begin = (int64_t)(c & CLAIM_ITEM_MASK);
        if (begin >= n) return;
        int64_t end = begin + chunk < n ? begin + chunk : n;
        uint_fast64_t next = ((uint_fast64_t)seq << 32) | (uint_fast64_t)end;
        if (!atomic_compare_exchange_weak_explicit(&p->claim, &c, next, memory_order_acq_rel, memory_order_acquire))
            continue;
        fn(ctx, begin, end, tid);
        job_finished_items(p, end - begin, n);
        c = atomic_load_explicit(&p->claim, memory_order_acquire);
    }
}

/* The next job word after `seen` (returned unchanged on shutdown). */
static uint_fast64_t wait_for_job(rlx_thread_pool *p, uint_fast64_t seen) {
    for (int i = 0; i < SPIN_CHECKS + YIELD_CHECKS; i++) {
        uint_fast64_t w = atomic_load_explicit(&p->job, memory_order_acquire);
        if (w != seen || atomic_load_explicit(&p->shutdown, memory_order_relaxed)) return w;
        if (i < SPIN_CHECKS) cpu_relax();
        else sched_yield();
    }
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->n_sleeping, 1);
    uint_fast64_t w;
    while ((w = atomic_load(&p->job)) == seen && !atomic_load(&p->shutdown)) pthread_cond_wait(&p->wake, &p->lock);
    atomic_fetch_sub(&p->n_sleeping, 1);
    pthread_mutex_unlock(&p->lock);
    return w;
}

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    rlx_thread_pool *p = w->pool;
    uint_fast64_t seen = 0;
    for (;;) {
        uint_fast64_t job = wait_for_job(p, seen);
        if (atomic_load(&p->shutdown)) return NULL;
        seen = job;
        if (w->tid < (int)(job & JOB_THREAD_MASK)) work_on_job(p, (uint32_t)(job >> JOB_THREAD_BITS), w->tid);
    }
}

rlx_status rlx_thread_pool_create(int n_threads, rlx_thread_pool **out) {
    if (n_threads < 1 || n_threads > 1024)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "thread pool: %d threads, expected 1..1024", n_threads);
    rlx_thread_pool *p = calloc(1, sizeof *p);
    if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "thread pool: cannot allocate");
    p->size = n_threads;
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->shutdown, false);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->caller_sleeping, false);
    atomic_init(&p->job, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->n_items, 0);
    atomic_init(&p->chunk, 1);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            rlx_thread_pool_destroy(p);
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "thread pool: cannot allocate %d workers", n_threads - 1);
        }
    }
    for (int i = 0; i < n_threads - 1; i++) {
        p->workers[i] = (pool_worker){.pool = p, .tid = i + 1};
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            rlx_thread_pool_destroy(p);
            return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "thread pool: cannot start worker thread %d of %d", i + 1,
                              n_threads - 1);
        }
        p->n_started++;
    }
    *out = p;
    return NULL;
}

void rlx_thread_pool_destroy(rlx_thread_pool *p) {
    if (!p) return;
    atomic_store(&p->shutdown, true);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_started; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    free(p->workers);
    free(p);
}

int rlx_thread_pool_size(const rlx_thread_pool *p) { return p ? p->size : 1; }

static void wait_for_items(rlx_thread_pool *p, int64_t n_items) {
    for (int i = 0; i < SPIN_CHECKS + YIELD_CHECKS; i++) {
        if (atomic_load_explicit(&p->done, memory_order_acquire) == n_items) return;
        if (i < SPIN_CHECKS) cpu_relax();
        else sched_yield();
    }
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->caller_sleeping, true);
    while (atomic_load(&p->done) != n_items) pthread_cond_wait(&p->done_cv, &p->lock);
    atomic_store(&p->caller_sleeping, false);
    pthread_mutex_unlock(&p->lock);
}

void rlx_thread_pool_run(rlx_thread_pool *p, int n_threads, int64_t n_items, int64_t chunk, rlx_pool_fn fn,
                         void *ctx) {
    if (n_items <= 0) return;
    if (chunk < 1) chunk = 1;
    int threads = p ? (n_threads < p->n_started + 1 ? n_threads : p->n_started + 1) : 1;
    /* items are numbered in 32 bits of the claim word */
    if (threads <= 1 || n_items <= chunk || n_items > (int64_t)CLAIM_ITEM_MASK) {
        fn(ctx, 0, n_items, 0);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    uint64_t seq = ++p->seq;
    atomic_store_explicit(&p->claim, (uint_fast64_t)(uint32_t)seq << 32, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&p->n_items, n_items, memory_order_relaxed);
    atomic_store_explicit(&p->chunk, chunk, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store(&p->job, ((uint_fast64_t)seq << JOB_THREAD_BITS) | (uint_fast64_t)threads);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    work_on_job(p, (uint32_t)seq, 0);
    wait_for_items(p, n_items);
    pthread_mutex_unlock(&p->run_lock);
}
