/* rlx serve: an OpenAI-compatible HTTP server over the many-sequence engine (docs/SERVER.md).
 *
 *     rlx_server *s;
 *     RLX_TRY(rlx_server_create(&opts, &s));  // listening: /health answers 503 while loading
 *     RLX_TRY(rlx_server_load(s));            // the model is ready: /health answers 200
 *     ... wait for SIGTERM ...
 *     rlx_server_shutdown(s, 10.0);           // stop accepting, finish or cancel, join
 *     rlx_server_destroy(s);
 *
 * HTTP is libmicrohttpd's, a thread per connection; the engine has one thread of its own
 * (loop.h). The server keeps no state a replica would need to share: N of them behind a load
 * balancer is the scale-out (docs/DEPLOY.md). */
#ifndef RLX_SERVER_SERVER_H
#define RLX_SERVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/engine.h"
#include "rlx/status.h"

typedef struct rlx_server rlx_server;

typedef struct rlx_server_opts {
    const char *model_path;         /* borrowed: a GGUF file or an HF directory */
    const char *model_name;         /* borrowed: the id /v1/models reports; NULL: the file's name */
    const char *host;               /* borrowed: the address to bind; NULL: 127.0.0.1 */
    int port;                       /* 0: any free port (rlx_server_url says which) */
    rlx_engine_opts engine;         /* max_parallel (--parallel), kv_memory, model.n_ctx, backend, ... */
    int queue;                      /* requests waiting beyond max_parallel; 0: 4 x max_parallel */
    const char *api_key;            /* borrowed; NULL: no key needed */
    const char *chat_template_file; /* borrowed; NULL: the model's, else the plain fallback */
    int http_timeout;               /* seconds a connection may sit idle (partial headers included); 0: 30 */
    size_t max_body;                /* bytes of one request body; 0: 8 MiB */
    int max_connections;            /* 0: 1024 */
} rlx_server_opts;

rlx_status rlx_server_create(const rlx_server_opts *opts, rlx_server **out);
/* Opens the model, its tokenizer and chat template, and starts the engine thread. */
rlx_status rlx_server_load(rlx_server *s);
const char *rlx_server_url(const rlx_server *s); /* "http://HOST:PORT" */
/* Stops accepting connections, lets requests in flight finish for up to drain_seconds, cancels
 * the rest, and stops every thread. */
void rlx_server_shutdown(rlx_server *s, double drain_seconds);
void rlx_server_destroy(rlx_server *s); /* shuts down first if needed; NULL is fine */

#endif
