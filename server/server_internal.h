/* The server's state, shared by its files: server.c (life cycle), http.c (libmicrohttpd: bodies,
 * routing, keys), generate.c (the completion endpoints), stream.c (server-sent events),
 * endpoints.c (models, health, tokenize, metrics), response.c (JSON bodies). */
#ifndef RLX_SERVER_INTERNAL_H
#define RLX_SERVER_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "rlx/chat_template.h"
#include "rlx/engine.h"
#include "rlx/tokenizer.h"
#include "server/job.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/server.h"

struct rlx_server {
    rlx_server_opts opts; /* strings borrowed from the caller */
    char *model_name;     /* owned */
    char url[300];
    struct MHD_Daemon *mhd;   /* owned */
    atomic_bool ready;        /* the model is loaded and the engine thread runs */
    atomic_bool draining;     /* shutting down: new requests get 503 */
    atomic_int open_requests; /* requests whose headers came and whose answer is not all sent */
    bool shut_down;
    rlx_engine *engine;      /* owned; the loop's thread alone calls it once ready */
    rlx_tokenizer *tok;      /* owned; thread-safe */
    rlx_chat_template *tmpl; /* owned; thread-safe */
    int32_t n_ctx, vocab;
    rlx_srv_loop loop;
    rlx_srv_metrics metrics;
    atomic_uint_fast64_t next_id;
    int64_t created; /* unix seconds at start: /v1/models' "created" */
};

/* ---- http.c ---- */
struct sockaddr;
rlx_status rlx_srv_http_start(rlx_server *s, const struct sockaddr *addr);
/* Queues a JSON response (takes the reference to body); extra_header may be NULL. */
enum MHD_Result rlx_srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *body, const char *extra_header,
                                   const char *extra_value);
enum MHD_Result rlx_srv_reply_error(struct MHD_Connection *c, const rlx_srv_error *e);
enum MHD_Result rlx_srv_reply_text(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                                   size_t len);
/* Whether the client of c has closed its end (checked without blocking). */
bool rlx_srv_client_gone(struct MHD_Connection *c);

/* ---- generate.c, stream.c ---- */
enum MHD_Result rlx_srv_handle_generate(rlx_server *s, struct MHD_Connection *c, rlx_srv_kind kind, const char *body,
                                        size_t len);
enum MHD_Result rlx_srv_stream_start(rlx_server *s, struct MHD_Connection *c, rlx_srv_job *job, const char *id);

/* ---- endpoints.c ---- */
enum MHD_Result rlx_srv_handle_health(rlx_server *s, struct MHD_Connection *c);
enum MHD_Result rlx_srv_handle_models(rlx_server *s, struct MHD_Connection *c);
enum MHD_Result rlx_srv_handle_metrics(rlx_server *s, struct MHD_Connection *c);
enum MHD_Result rlx_srv_handle_tokenize(rlx_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result rlx_srv_handle_detokenize(rlx_server *s, struct MHD_Connection *c, const char *body, size_t len);

/* ---- response.c ---- */
/* "chatcmpl-..." / "cmpl-...": unique within the process. */
void rlx_srv_new_id(rlx_server *s, rlx_srv_kind kind, char *buf, size_t size);
/* The usage object of a finished job. */
json_t *rlx_srv_usage_json(const rlx_srv_job *j);
/* The whole (non-streamed) answer of a finished job. */
json_t *rlx_srv_completion_json(const rlx_server *s, const rlx_srv_job *j, const char *id, int64_t created);
/* One streamed chunk: text (may be NULL) as the delta / text, finish_reason (may be NULL);
 * role_only: the first chat chunk, {"role": "assistant", "content": ""}. */
json_t *rlx_srv_chunk_json(const rlx_server *s, rlx_srv_kind kind, const char *id, int64_t created, const char *text,
                           size_t len, const char *finish_reason, bool role_only);
/* json_t of an error in OpenAI's shape. */
json_t *rlx_srv_error_json(const rlx_srv_error *e);

#endif
