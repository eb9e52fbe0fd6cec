/* The CPU backend's thread pool. A job is published as one atomic word (a sequence number and the
 * number of threads it uses), so a worker reads which job it is in and whether it takes part in
 * one load. Workers and the caller spin briefly before sleeping on a condition variable, because a
 * decode step issues jobs back to back and a futex wake-up costs more than these small kernels.
 * The sleep/wake hand-offs are Dekker-style: the side that publishes stores, then reads whether
 * the other side sleeps; the side that sleeps announces it, then re-checks, both in sequentially
 * consistent order, so one of them always sees the other and no wake-up is lost. */
#include "cpu_fallback/thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* Checks of a shared word a thread makes (with a pause between) before it goes to sleep. */
#define SPIN_CHECKS 16384
/* The low bits of the job word hold the job's thread count (the pool has at most 1024). */
#define JOB_THREAD_BITS 11
#define JOB_THREAD_MASK ((1u << JOB_THREAD_BITS) - 1u)

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
    pthread_mutex_t lock;     /* pairs with the condition variables */
    pthread_cond_t wake;      /* a new job, or shutdown */
    pthread_cond_t done;      /* the last worker left the current job */
    atomic_bool shutdown;
    atomic_int n_sleeping;    /* workers asleep on `wake` (or about to be) */
    atomic_bool caller_sleeping;
    atomic_int pending;       /* workers still inside the current job */
    /* (sequence << JOB_THREAD_BITS) | threads of the job; the fields below are written before it */
    atomic_uint_fast64_t job;
    rlx_pool_fn fn;
    void *ctx;
    int64_t n_items, chunk;
    atomic_int_fast64_t next;
};

static void work_on_job(rlx_thread_pool *p, int tid) {
    for (;;) {
        int64_t begin = atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
        if (begin >= p->n_items) return;
        int64_t end = begin + p->chunk < p->n_items ? begin + p->chunk : p->n_items;
        p->fn(p->ctx, begin, end, tid);
    }
}

/* The next job word after `seen`; `seen` itself on shutdown. */
static uint_fast64_t wait_for_job(rlx_thread_pool *p, uint_fast64_t seen) {
    for (int i = 0; i < SPIN_CHECKS; i++) {
        uint_fast64_t w = atomic_load_explicit(&p->job, memory_order_acquire);
        if (w != seen || atomic_load_explicit(&p->shutdown, memory_order_relaxed)) return w;
        cpu_relax();
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
        if (w->tid >= (int)(job & JOB_THREAD_MASK)) continue;
        work_on_job(p, w->tid);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
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
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->shutdown, false);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->caller_sleeping, false);
    atomic_init(&p->pending, 0);
    atomic_init(&p->job, 0);
    atomic_init(&p->next, 0);
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
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    free(p->workers);
    free(p);
}

int rlx_thread_pool_size(const rlx_thread_pool *p) { return p ? p->size : 1; }

static void wait_for_workers(rlx_thread_pool *p) {
    for (int i = 0; i < SPIN_CHECKS; i++) {
        if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->caller_sleeping, true);
    while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->lock);
    atomic_store(&p->caller_sleeping, false);
    pthread_mutex_unlock(&p->lock);
}

void rlx_thread_pool_run(rlx_thread_pool *p, int n_threads, int64_t n_items, int64_t chunk, rlx_pool_fn fn,
                         void *ctx) {
    if (n_items <= 0) return;
    if (chunk < 1) chunk = 1;
    int threads = p ? (n_threads < p->n_started + 1 ? n_threads : p->n_started + 1) : 1;
    if (threads <= 1 || n_items <= chunk) {
        fn(ctx, 0, n_items, 0);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_items = n_items;
    p->chunk = chunk;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->pending, threads - 1, memory_order_relaxed);
    uint_fast64_t seq = (atomic_load_explicit(&p->job, memory_order_relaxed) >> JOB_THREAD_BITS) + 1;
    atomic_store(&p->job, (seq << JOB_THREAD_BITS) | (uint_fast64_t)threads);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    work_on_job(p, 0);
    wait_for_workers(p);
    pthread_mutex_unlock(&p->run_lock);
}
