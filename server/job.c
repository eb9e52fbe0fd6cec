#include "server/job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double rlx_srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

rlx_status rlx_srv_job_create(rlx_srv_request *req, int32_t *ids, int32_t n_ids, int32_t n_new, rlx_srv_job **out) {
    rlx_srv_job *j = calloc(1, sizeof *j);
    if (!j) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "a request's state");
    j->req = *req;
    memset(req, 0, sizeof *req);
    j->ids = ids;
    j->n_ids = n_ids;
    j->n_new = n_new;
    j->t_arrival = rlx_srv_now();
    j->refs = 1;
    j->seq = -1;
    atomic_init(&j->cancel, false);
    pthread_mutex_init(&j->mu, NULL);
    /* waits are timed on the monotonic clock, so a wall-clock jump cannot stall a stream */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->stop = (rlx_srv_stop){.stops = j->req.stop, .n_stops = j->req.n_stop};
    *out = j;
    return NULL;
}

void rlx_srv_job_retain(rlx_srv_job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void rlx_srv_job_release(rlx_srv_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left > 0) return;
    rlx_srv_request_free(&j->req);
    free(j->ids);
    rlx_srv_buf_free(&j->text);
    rlx_srv_buf_free(&j->piece);
    rlx_srv_buf_free(&j->clean);
    rlx_srv_stop_free(&j->stop);
    rlx_detokenizer_destroy(j->detok);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

void rlx_srv_job_wait(rlx_srv_job *j, size_t seen, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)timeout_ms % 1000 * 1000000L;
    until.tv_sec += timeout_ms / 1000 + until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&j->mu);
    while (j->text.len <= seen && j->finish == RLX_SRV_RUNNING)
        if (pthread_cond_timedwait(&j->cv, &j->mu, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&j->mu);
}

const char *rlx_srv_finish_reason(rlx_srv_finish f) {
    switch (f) {
    case RLX_SRV_FINISH_STOP: return "stop";
    case RLX_SRV_FINISH_LENGTH: return "length";
    case RLX_SRV_FINISH_ABORT: return "abort";
    case RLX_SRV_FINISH_ERROR: return "error";
    case RLX_SRV_RUNNING: break;
    }
    return NULL;
}
