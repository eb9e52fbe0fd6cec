/* The CPU backend's thread pool: workers sleep on a condition variable between jobs and take chunks
 * of a job from an atomic counter. Workers spin briefly before sleeping, because a decode step
 * issues jobs back to back and a futex wake-up costs more than these small kernels. */
#include "cpu_fallback/thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* Checks of the job counter a worker makes before it goes to sleep. */
#define SPIN_CHECKS 20000

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
    pthread_mutex_t lock;     /* guards the fields below and the condition variables */
    pthread_cond_t wake;      /* a new job, or shutdown */
    pthread_cond_t done;      /* the last worker left the current job */
    bool shutdown;
    int busy;                 /* workers still inside the current job */
    /* the current job */
    atomic_uint_fast64_t generation;
    rlx_pool_fn fn;
    void *ctx;
    int64_t n_items, chunk;
    atomic_int_fast64_t next;
};

static void work_on_job(rlx_thread_pool *p, int tid) {
    for (;;) {
        int64_t begin = atomic_fetch_add(&p->next, p->chunk);
        if (begin >= p->n_items) return;
        int64_t end = begin + p->chunk < p->n_items ? begin + p->chunk : p->n_items;
        p->fn(p->ctx, begin, end, tid);
    }
}

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    rlx_thread_pool *p = w->pool;
    uint_fast64_t seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_CHECKS && atomic_load_explicit(&p->generation, memory_order_acquire) == seen; i++) {
        }
        pthread_mutex_lock(&p->lock);
        while (!p->shutdown && atomic_load(&p->generation) == seen) pthread_cond_wait(&p->wake, &p->lock);
        if (p->shutdown) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        seen = atomic_load(&p->generation);
        pthread_mutex_unlock(&p->lock);
        work_on_job(p, w->tid);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
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
    atomic_init(&p->generation, 0);
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
    pthread_mutex_lock(&p->lock);
    p->shutdown = true;
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

void rlx_thread_pool_run(rlx_thread_pool *p, int64_t n_items, int64_t chunk, rlx_pool_fn fn, void *ctx) {
    if (n_items <= 0) return;
    if (chunk < 1) chunk = 1;
    if (!p || p->n_started == 0 || n_items <= chunk) {
        fn(ctx, 0, n_items, 0);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_items = n_items;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->busy = p->n_started;
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    work_on_job(p, 0);
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->run_lock);
}
