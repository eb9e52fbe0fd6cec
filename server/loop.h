/* The engine thread: the one thread that calls the engine (which is not thread-safe), and the
 * mailbox that the HTTP threads hand it jobs through.
 *
 * Each turn of the loop takes the new jobs from the inbox (each becomes an engine sequence), frees
 * the sequences of cancelled jobs (their pages go back at once), runs one engine step (continuous
 * batching: every running sequence advances), and finishes the jobs whose sequences are done. It
 * sleeps when there is nothing to compute. At most max_in_flight jobs are submitted and not
 * finished at once: the engine runs --parallel of them, the rest wait in its queue; one more is
 * refused (the server answers 503 with Retry-After). */
#ifndef RLX_SERVER_LOOP_H
#define RLX_SERVER_LOOP_H

#include <pthread.h>
#include <stdbool.h>

#include "rlx/engine.h"
#include "rlx/tokenizer.h"
#include "server/job.h"
#include "server/metrics.h"

typedef struct rlx_srv_loop {
    rlx_engine *engine;       /* borrowed; the loop's thread alone calls it once started */
    const rlx_tokenizer *tok; /* borrowed */
    rlx_srv_metrics *metrics; /* borrowed */
    int max_in_flight;
    /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rlx_srv_job *inbox, *inbox_tail;
    int in_flight;
    bool stopping; /* no new jobs; finish the running ones until drain_deadline */
    double drain_deadline;
    /* the loop's thread alone */
    pthread_t thread;
    bool started;
    rlx_srv_job **active; /* owned array of held jobs */
    int n_active, cap_active;
} rlx_srv_loop;

/* Starts the thread. The caller sets engine, tok, metrics and max_in_flight first. */
rlx_status rlx_srv_loop_start(rlx_srv_loop *l);
/* Hands j to the engine (the loop takes its own reference). false: the queue is full or the
 * server is stopping, and j is not taken. */
bool rlx_srv_loop_submit(rlx_srv_loop *l, rlx_srv_job *j);
/* Cancels j (a client went away): its sequence is freed at the loop's next turn. */
void rlx_srv_loop_cancel(rlx_srv_loop *l, rlx_srv_job *j);
/* Jobs submitted and not finished. */
int rlx_srv_loop_in_flight(rlx_srv_loop *l);
/* Refuses new jobs, lets the running ones finish for up to drain_seconds, cancels what is left,
 * and joins the thread. */
void rlx_srv_loop_stop(rlx_srv_loop *l, double drain_seconds);

#endif
