#include "server/metrics.h"

#include <stdio.h>
#include <string.h>

/* vLLM's bucket bounds for these histograms (vllm/v1/metrics/loggers.py), so that a dashboard's
 * quantiles read the same on either server. */
static const double TTFT_BOUNDS[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double ITL_BOUNDS[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double E2E_BOUNDS[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

_Static_assert(N_OF(TTFT_BOUNDS) <= RLX_SRV_HIST_MAX_BUCKETS && N_OF(ITL_BOUNDS) <= RLX_SRV_HIST_MAX_BUCKETS &&
                   N_OF(E2E_BOUNDS) <= RLX_SRV_HIST_MAX_BUCKETS,
               "a histogram has more bounds than rlx_srv_hist holds");

void rlx_srv_metrics_init(rlx_srv_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->ttft = (rlx_srv_hist){.bounds = TTFT_BOUNDS, .n_bounds = N_OF(TTFT_BOUNDS)};
    m->itl = (rlx_srv_hist){.bounds = ITL_BOUNDS, .n_bounds = N_OF(ITL_BOUNDS)};
    m->e2e = (rlx_srv_hist){.bounds = E2E_BOUNDS, .n_bounds = N_OF(E2E_BOUNDS)};
}

void rlx_srv_metrics_destroy(rlx_srv_metrics *m) { pthread_mutex_destroy(&m->mu); }

void rlx_srv_hist_add(rlx_srv_hist *h, double v) {
    int b = 0;
    while (b < h->n_bounds && v > h->bounds[b]) b++;
    h->counts[b]++;
    h->sum += v;
    h->count++;
}

/* A label value with \, " and newline escaped (the exposition format's rule). */
static rlx_status label(rlx_srv_buf *out, const char *v) {
    for (; *v; v++) {
        const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
        RLX_TRY(esc ? rlx_srv_buf_append(out, esc, 2) : rlx_srv_buf_append(out, v, 1));
    }
    return NULL;
}

typedef struct {
    rlx_srv_buf *out;
    const char *model;
} writer;

static rlx_status head(writer *w, const char *prefix, const char *name, const char *type, const char *help) {
    return rlx_srv_buf_printf(w->out, "# HELP %s:%s %s\n# TYPE %s:%s %s\n", prefix, name, help, prefix, name, type);
}

static rlx_status sample(writer *w, const char *prefix, const char *name, const char *extra, double v) {
    RLX_TRY(rlx_srv_buf_printf(w->out, "%s:%s{model_name=\"", prefix, name));
    RLX_TRY(label(w->out, w->model));
    return rlx_srv_buf_printf(w->out, "\"%s} %.17g\n", extra ? extra : "", v);
}

static rlx_status scalar(writer *w, const char *prefix, const char *name, const char *type, const char *help,
                         double v) {
    RLX_TRY(head(w, prefix, name, type, help));
    return sample(w, prefix, name, NULL, v);
}

static rlx_status histogram(writer *w, const char *prefix, const char *name, const char *help, const rlx_srv_hist *h) {
    RLX_TRY(head(w, prefix, name, "histogram", help));
    char bucket[80], extra[64];
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    uint64_t cum = 0;
    for (int b = 0; b <= h->n_bounds; b++) {
        cum += h->counts[b];
        if (b < h->n_bounds)
            snprintf(extra, sizeof extra, ",le=\"%g\"", h->bounds[b]);
        else
            snprintf(extra, sizeof extra, ",le=\"+Inf\"");
        RLX_TRY(sample(w, prefix, bucket, extra, (double)cum));
    }
    snprintf(bucket, sizeof bucket, "%s_sum", name);
    RLX_TRY(sample(w, prefix, bucket, NULL, h->sum));
    snprintf(bucket, sizeof bucket, "%s_count", name);
    return sample(w, prefix, bucket, NULL, (double)h->count);
}

static rlx_status render_one(writer *w, const rlx_srv_metrics *m, const char *p) {
    RLX_TRY(scalar(w, p, "num_requests_running", "gauge", "Requests being computed (prefill or decode).",
                   (double)m->running));
    RLX_TRY(scalar(w, p, "num_requests_waiting", "gauge", "Requests waiting for a sequence slot or K/V pages.",
                   (double)m->waiting));
    RLX_TRY(
        scalar(w, p, "kv_cache_usage_perc", "gauge", "Fraction of K/V cache pages in use (1 = full).", m->kv_usage));
    RLX_TRY(scalar(w, p, "prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
                   (double)m->prompt_tokens));
    RLX_TRY(scalar(w, p, "generation_tokens_total", "counter", "Generated tokens.", (double)m->generation_tokens));
    RLX_TRY(scalar(w, p, "prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
                   (double)m->prefix_queries));
    RLX_TRY(scalar(w, p, "prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
                   (double)m->prefix_hits));
    RLX_TRY(head(w, p, "request_success_total", "counter", "Finished requests, by finish reason."));
    RLX_TRY(sample(w, p, "request_success_total", ",finished_reason=\"stop\"", (double)m->finished_stop));
    RLX_TRY(sample(w, p, "request_success_total", ",finished_reason=\"length\"", (double)m->finished_length));
    RLX_TRY(sample(w, p, "request_success_total", ",finished_reason=\"abort\"", (double)m->finished_abort));
    RLX_TRY(scalar(w, p, "request_failure_total", "counter", "Requests the engine failed.", (double)m->finished_error));
    RLX_TRY(scalar(w, p, "request_rejected_total", "counter", "Requests refused with 503 (queue full).",
                   (double)m->rejected_queue_full));
    RLX_TRY(
        histogram(w, p, "time_to_first_token_seconds", "Time from arrival to the first generated token.", &m->ttft));
    RLX_TRY(histogram(w, p, "inter_token_latency_seconds", "Time between generated tokens.", &m->itl));
    return histogram(w, p, "e2e_request_latency_seconds", "Time from arrival to the last token.", &m->e2e);
}

rlx_status rlx_srv_metrics_render(rlx_srv_metrics *m, const char *model, rlx_srv_buf *out) {
    writer w = {out, model};
    pthread_mutex_lock(&m->mu);
    rlx_srv_metrics copy = *m;
    pthread_mutex_unlock(&m->mu);
    RLX_TRY(render_one(&w, &copy, "vllm"));
    return render_one(&w, &copy, "rlx");
}
