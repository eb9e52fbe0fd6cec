/* Counters, gauges and histograms of the server, and their Prometheus text (exposition format
 * 0.0.4), under vLLM's names (what dashboards and routers scrape: vllm:num_requests_running, ...)
 * and the same under rlx: names. Thread-safe: the engine thread records, /metrics reads. */
#ifndef RLX_SERVER_METRICS_H
#define RLX_SERVER_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "server/text_out.h"

#define RLX_SRV_HIST_MAX_BUCKETS 24

typedef struct rlx_srv_hist {
    const double *bounds; /* static, n_bounds upper bounds (le), ascending; +Inf is implied */
    int n_bounds;
    uint64_t counts[RLX_SRV_HIST_MAX_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
    double sum;
    uint64_t count;
} rlx_srv_hist;

typedef struct rlx_srv_metrics {
    pthread_mutex_t mu;
    /* gauges, set by the engine thread after each step */
    int64_t running, waiting;
    double kv_usage; /* pages in use / pages, 0..1 */
    /* counters */
    int64_t prompt_tokens, generation_tokens, prefix_queries, prefix_hits;
    int64_t finished_stop, finished_length, finished_abort, finished_error;
    int64_t rejected_queue_full;
    rlx_srv_hist ttft, itl, e2e;
} rlx_srv_metrics;

void rlx_srv_metrics_init(rlx_srv_metrics *m);
void rlx_srv_metrics_destroy(rlx_srv_metrics *m);
void rlx_srv_hist_add(rlx_srv_hist *h, double v); /* the caller holds m->mu */
/* The Prometheus text of every metric, labelled model_name="<model>". */
rlx_status rlx_srv_metrics_render(rlx_srv_metrics *m, const char *model, rlx_srv_buf *out);

#endif
