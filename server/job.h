/* One request in flight: the tokens to run, the settings, and the text generated so far.
 *
 * A job is shared by the HTTP thread that answers its request and the engine thread that runs it;
 * each holds a reference and the last to let go frees it. The engine thread appends text (valid
 * UTF-8, stop strings removed: text_out.h) under mu and signals cv; the HTTP thread waits on cv and
 * reads text[0, len) as it grows. `cancel` is the HTTP side's way back: a client that went away
 * sets it, and the engine frees the sequence's pages at its next iteration. */
#ifndef RLX_SERVER_JOB_H
#define RLX_SERVER_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rlx/engine.h"
#include "rlx/tokenizer.h"
#include "server/request.h"
#include "server/text_out.h"

typedef enum {
    RLX_SRV_RUNNING = 0,
    RLX_SRV_FINISH_STOP,   /* the model's end of turn, or a stop string */
    RLX_SRV_FINISH_LENGTH, /* max_tokens, or the context is full */
    RLX_SRV_FINISH_ABORT,  /* cancelled: the client went away, or the server is shutting down */
    RLX_SRV_FINISH_ERROR,  /* the engine failed the sequence: error says why */
} rlx_srv_finish;

typedef struct rlx_srv_job {
    /* set before submission, read-only after */
    rlx_srv_request req; /* owned: the parsed request (stop strings, stream flags) */
    int32_t *ids;        /* owned, n_ids: the prompt's tokens */
    int32_t n_ids;
    int32_t n_new;    /* tokens to generate at most */
    double t_arrival; /* monotonic seconds */
    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    rlx_srv_buf text; /* the completion so far */
    int32_t n_generated, n_cached;
    rlx_srv_finish finish;
    char error[256];
    atomic_bool cancel;
    /* the engine thread's alone */
    int32_t seq;            /* engine sequence, -1 before admission */
    rlx_detokenizer *detok; /* owned */
    rlx_srv_stop stop;
    rlx_srv_utf8 utf8;
    rlx_srv_buf piece;         /* scratch: one token's text after the stop strings */
    rlx_srv_buf clean;         /* scratch: that text as valid UTF-8 */
    bool ended;                /* an end-of-turn token or a stop string ended it */
    double t_last;             /* when its last token came (0: none yet) */
    struct rlx_srv_loop *loop; /* borrowed: for the tokenizer and the metrics in on_token */
    struct rlx_srv_job *next;  /* the inbox list */
} rlx_srv_job;

/* A job with one reference (the caller's), taking ownership of req and ids. */
rlx_status rlx_srv_job_create(rlx_srv_request *req, int32_t *ids, int32_t n_ids, int32_t n_new, rlx_srv_job **out);
void rlx_srv_job_retain(rlx_srv_job *j);
void rlx_srv_job_release(rlx_srv_job *j); /* NULL is fine */
/* Waits until the text is longer than `seen`, the job has finished, or timeout_ms passed. */
void rlx_srv_job_wait(rlx_srv_job *j, size_t seen, int timeout_ms);

const char *rlx_srv_finish_reason(rlx_srv_finish f); /* "stop", "length", ... as OpenAI names them */
double rlx_srv_now(void);                            /* monotonic seconds */

#endif
