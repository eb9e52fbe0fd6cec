#include "server/loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the HTTP threads' side ---- */

bool rlx_srv_loop_submit(rlx_srv_loop *l, rlx_srv_job *j) {
    pthread_mutex_lock(&l->mu);
    bool ok = !l->stopping && l->in_flight < l->max_in_flight;
    if (ok) {
        rlx_srv_job_retain(j);
        j->loop = l;
        j->next = NULL;
        if (l->inbox_tail)
            l->inbox_tail->next = j;
        else
            l->inbox = j;
        l->inbox_tail = j;
        l->in_flight++;
        pthread_cond_signal(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}

void rlx_srv_loop_cancel(rlx_srv_loop *l, rlx_srv_job *j) {
    atomic_store(&j->cancel, true);
    pthread_mutex_lock(&l->mu);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

int rlx_srv_loop_in_flight(rlx_srv_loop *l) {
    pthread_mutex_lock(&l->mu);
    int n = l->in_flight;
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* ---- the engine thread ---- */

/* Text for the client: through the stop strings, then made valid UTF-8, then published. */
static rlx_status emit(rlx_srv_job *j, const char *bytes, size_t n, bool last) {
    j->piece.len = 0;
    j->clean.len = 0;
    RLX_TRY(rlx_srv_stop_push(&j->stop, bytes, n, &j->piece));
    if (last) RLX_TRY(rlx_srv_stop_finish(&j->stop, &j->piece));
    RLX_TRY(rlx_srv_utf8_push(&j->utf8, j->piece.data ? j->piece.data : "", j->piece.len, &j->clean));
    if (last || j->stop.matched) RLX_TRY(rlx_srv_utf8_finish(&j->utf8, &j->clean));
    if (j->clean.len == 0) return NULL;
    pthread_mutex_lock(&j->mu);
    rlx_status s = rlx_srv_buf_append(&j->text, j->clean.data, j->clean.len);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return s;
}

static void record_token(rlx_srv_job *j) {
    double now = rlx_srv_now();
    rlx_srv_metrics *m = j->loop->metrics;
    pthread_mutex_lock(&m->mu);
    m->generation_tokens++;
    if (j->t_last == 0)
        rlx_srv_hist_add(&m->ttft, now - j->t_arrival);
    else
        rlx_srv_hist_add(&m->itl, now - j->t_last);
    pthread_mutex_unlock(&m->mu);
    j->t_last = now;
}

/* The engine's rlx_token_callback: false ends the sequence after this token. */
static bool on_token(int32_t token, void *user) {
    rlx_srv_job *j = user;
    record_token(j);
    pthread_mutex_lock(&j->mu);
    j->n_generated++;
    pthread_mutex_unlock(&j->mu);
    if (atomic_load(&j->cancel)) return false;
    if (!j->req.sample.ignore_eos && rlx_tokenizer_is_eog(j->loop->tok, token)) {
        j->ended = true; /* the end of the turn is not text */
        return false;
    }
    const char *text;
    size_t len;
    rlx_status s = rlx_detokenizer_push(j->detok, token, &text, &len);
    if (!s) s = emit(j, text, len, false);
    if (s) {
        fprintf(stderr, "rlx serve: a request's text: %s\n", rlx_status_message(s));
        rlx_status_free(s);
        atomic_store(&j->cancel, true);
        return false;
    }
    if (j->stop.matched) j->ended = true;
    return !j->ended;
}

static void finish(rlx_srv_loop *l, rlx_srv_job *j, rlx_srv_finish f, const char *error) {
    if (f == RLX_SRV_FINISH_STOP || f == RLX_SRV_FINISH_LENGTH) {
        const char *rest;
        size_t len;
        rlx_detokenizer_finish(j->detok, &rest, &len);
        rlx_status s = emit(j, rest, len, true);
        if (!s && j->stop.matched) f = RLX_SRV_FINISH_STOP; /* a stop string confirmed only at the end */
        if (s) {
            f = RLX_SRV_FINISH_ERROR;
            error = rlx_status_message(s);
        }
        rlx_status_free(s);
    }
    if (j->seq >= 0) {
        pthread_mutex_lock(&j->mu);
        j->n_cached = rlx_engine_seq_n_cached(l->engine, j->seq);
        pthread_mutex_unlock(&j->mu);
        rlx_engine_seq_free(l->engine, j->seq);
        j->seq = -1;
    }
    rlx_srv_metrics *m = l->metrics;
    pthread_mutex_lock(&m->mu);
    if (f == RLX_SRV_FINISH_STOP) m->finished_stop++;
    if (f == RLX_SRV_FINISH_LENGTH) m->finished_length++;
    if (f == RLX_SRV_FINISH_ABORT) m->finished_abort++;
    if (f == RLX_SRV_FINISH_ERROR) m->finished_error++;
    if (f == RLX_SRV_FINISH_STOP || f == RLX_SRV_FINISH_LENGTH) rlx_srv_hist_add(&m->e2e, rlx_srv_now() - j->t_arrival);
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_lock(&j->mu);
    j->finish = f;
    if (error) snprintf(j->error, sizeof j->error, "%s", error);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    rlx_srv_job_release(j);
    pthread_mutex_lock(&l->mu);
    l->in_flight--;
    pthread_mutex_unlock(&l->mu);
}

static uint64_t fresh_seed(void) {
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^ ++counter << 32;
}

/* A new job becomes a sequence; one that cannot (out of memory) fails alone. */
static void admit(rlx_srv_loop *l, rlx_srv_job *j) {
    if (l->n_active == l->cap_active) {
        int cap = l->cap_active ? 2 * l->cap_active : 64;
        rlx_srv_job **p = realloc(l->active, (size_t)cap * sizeof *p);
        if (!p) {
            finish(l, j, RLX_SRV_FINISH_ERROR, "out of memory admitting the request");
            return;
        }
        l->active = p;
        l->cap_active = cap;
    }
    rlx_seq_opts so = {.sample = j->req.sample, .n_new = j->n_new, .on_token = on_token, .user = j};
    if (!j->req.seed_given) so.sample.seed = fresh_seed();
    /* generated text continues the prompt: keep SentencePiece's leading space (as rlx run does) */
    rlx_status s = rlx_detokenizer_create(l->tok, RLX_DECODE_CONTINUE, &j->detok);
    if (!s) s = rlx_engine_seq_create(l->engine, &so, &j->seq);
    if (!s) s = rlx_engine_seq_append(l->engine, j->seq, j->ids, j->n_ids);
    if (s) {
        finish(l, j, RLX_SRV_FINISH_ERROR, rlx_status_message(s));
        rlx_status_free(s);
        return;
    }
    pthread_mutex_lock(&l->metrics->mu);
    l->metrics->prompt_tokens += j->n_ids;
    pthread_mutex_unlock(&l->metrics->mu);
    l->active[l->n_active++] = j;
}

/* Finishes the jobs whose sequences ended (or that were cancelled), keeping the others in order. */
static void sweep(rlx_srv_loop *l, bool cancel_all) {
    int kept = 0;
    for (int i = 0; i < l->n_active; i++) {
        rlx_srv_job *j = l->active[i];
        rlx_seq_state st = rlx_engine_seq_state(l->engine, j->seq);
        if (st == RLX_SEQ_FAILED) {
            finish(l, j, RLX_SRV_FINISH_ERROR, rlx_engine_seq_error(l->engine, j->seq));
        } else if (atomic_load(&j->cancel) || cancel_all) {
            finish(l, j, RLX_SRV_FINISH_ABORT, "cancelled");
        } else if (st == RLX_SEQ_DONE || st == RLX_SEQ_IDLE) {
            bool stopped = j->ended || rlx_engine_seq_finish(l->engine, j->seq) == RLX_FINISH_EOS;
            finish(l, j, stopped ? RLX_SRV_FINISH_STOP : RLX_SRV_FINISH_LENGTH, NULL);
        } else {
            l->active[kept++] = j;
        }
    }
    l->n_active = kept;
}

static void publish_gauges(rlx_srv_loop *l) {
    int64_t running = 0, waiting = 0;
    for (int i = 0; i < l->n_active; i++) {
        rlx_seq_state st = rlx_engine_seq_state(l->engine, l->active[i]->seq);
        running += st == RLX_SEQ_RUNNING;
        waiting += st == RLX_SEQ_WAITING;
    }
    rlx_engine_stats es = rlx_engine_get_stats(l->engine);
    rlx_srv_metrics *m = l->metrics;
    pthread_mutex_lock(&m->mu);
    m->running = running;
    m->waiting = waiting;
    m->kv_usage = es.n_pages > 0 ? (double)es.pages_used / es.n_pages : 0.0;
    m->prefix_queries = es.prefix_queries;
    m->prefix_hits = es.prefix_hits;
    pthread_mutex_unlock(&m->mu);
}

/* Takes the inbox; sleeps first when there is nothing to do. *stop: the loop should end now. */
static rlx_srv_job *take_inbox(rlx_srv_loop *l, bool *stop, bool *drain_over) {
    pthread_mutex_lock(&l->mu);
    while (!l->inbox && !l->stopping && l->n_active == 0) pthread_cond_wait(&l->cv, &l->mu);
    rlx_srv_job *in = l->inbox;
    l->inbox = l->inbox_tail = NULL;
    *drain_over = l->stopping && rlx_srv_now() >= l->drain_deadline;
    *stop = l->stopping && l->n_active == 0 && !in;
    pthread_mutex_unlock(&l->mu);
    return in;
}

static void *run(void *arg) {
    rlx_srv_loop *l = arg;
    for (;;) {
        bool stop, drain_over;
        rlx_srv_job *in = take_inbox(l, &stop, &drain_over);
        if (stop) break;
        while (in) {
            rlx_srv_job *next = in->next;
            admit(l, in);
            in = next;
        }
        sweep(l, drain_over);
        if (l->n_active > 0 && rlx_engine_busy(l->engine)) {
            rlx_status s = rlx_engine_step(l->engine);
            if (s) {
                /* the device or a program failed: every request in flight fails with its message */
                fprintf(stderr, "rlx serve: engine step: %s\n", rlx_status_message(s));
                for (int i = 0; i < l->n_active; i++)
                    finish(l, l->active[i], RLX_SRV_FINISH_ERROR, rlx_status_message(s));
                l->n_active = 0;
                rlx_status_free(s);
            }
        }
        sweep(l, false);
        publish_gauges(l);
    }
    return NULL;
}

rlx_status rlx_srv_loop_start(rlx_srv_loop *l) {
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->thread, NULL, run, l)) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "serve: the engine thread");
    l->started = true;
    return NULL;
}

void rlx_srv_loop_stop(rlx_srv_loop *l, double drain_seconds) {
    if (!l->started) return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    l->drain_deadline = rlx_srv_now() + drain_seconds;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->started = false;
    free(l->active);
    l->active = NULL;
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}
