/* The endpoints besides the completions: /health, /v1/models, /metrics, and llama-server's
 * /tokenize and /detokenize (its request and response shapes: tools/server/README.md of llama.cpp). */
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

enum MHD_Result rlx_srv_handle_health(rlx_server *s, struct MHD_Connection *c) {
    if (atomic_load(&s->ready) && !atomic_load(&s->draining))
        return rlx_srv_reply_json(c, 200, json_pack("{s:s}", "status", "ok"), NULL, NULL);
    rlx_srv_error e;
    rlx_srv_error_set(&e, 503, "unavailable_error", NULL, NULL, "%s",
                      atomic_load(&s->draining) ? "the server is shutting down" : "Loading model");
    return rlx_srv_reply_error(c, &e);
}

enum MHD_Result rlx_srv_handle_models(rlx_server *s, struct MHD_Connection *c) {
    json_t *m = json_pack("{s:s, s:s, s:I, s:s, s:{s:i}}", "id", s->model_name, "object", "model", "created",
                          (json_int_t)s->created, "owned_by", "rlx", "meta", "n_ctx_train", (int)s->n_ctx);
    return rlx_srv_reply_json(c, 200, json_pack("{s:s, s:[o]}", "object", "list", "data", m), NULL, NULL);
}

enum MHD_Result rlx_srv_handle_metrics(rlx_server *s, struct MHD_Connection *c) {
    rlx_srv_buf out = {0};
    rlx_status st = rlx_srv_metrics_render(&s->metrics, s->model_name, &out);
    if (st) {
        rlx_status_free(st);
        rlx_srv_buf_free(&out);
        return MHD_NO;
    }
    enum MHD_Result ok = rlx_srv_reply_text(c, 200, "text/plain; version=0.0.4", out.data, out.len);
    rlx_srv_buf_free(&out);
    return ok;
}

static bool body_object(const char *body, size_t len, json_t **root, rlx_srv_error *e) {
    json_error_t jerr;
    *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*root) {
        rlx_srv_error_set(e, 400, "invalid_request_error", NULL, NULL, "the body is not valid JSON: %s", jerr.text);
        return false;
    }
    if (!json_is_object(*root)) {
        rlx_srv_error_set(e, 400, "invalid_request_error", NULL, NULL, "the body must be a JSON object");
        json_decref(*root);
        return false;
    }
    return true;
}

static bool opt_bool(json_t *root, const char *name, bool dflt, bool *out, rlx_srv_error *e) {
    json_t *v = json_object_get(root, name);
    *out = dflt;
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) {
        rlx_srv_error_set(e, 400, "invalid_request_error", NULL, name, "'%s' must be a boolean", name);
        return false;
    }
    *out = json_is_true(v);
    return true;
}

/* {"content": TEXT, "add_special": false, "parse_special": true, "with_pieces": false} ->
 * {"tokens": [ids]} or, with_pieces, {"tokens": [{"id", "piece"}]} (a piece that is not valid
 * UTF-8 on its own is given as its bytes, as llama-server does). */
enum MHD_Result rlx_srv_handle_tokenize(rlx_server *s, struct MHD_Connection *c, const char *body, size_t len) {
    json_t *root;
    rlx_srv_error e;
    bool add_special, parse_special, with_pieces;
    if (!body_object(body, len, &root, &e)) return rlx_srv_reply_error(c, &e);
    json_t *content = json_object_get(root, "content");
    if (!json_is_string(content)) {
        rlx_srv_error_set(&e, 400, "invalid_request_error", NULL, "content", "'content' must be a string");
    } else if (opt_bool(root, "add_special", false, &add_special, &e) &&
               opt_bool(root, "parse_special", true, &parse_special, &e) &&
               opt_bool(root, "with_pieces", false, &with_pieces, &e)) {
        int32_t *ids = NULL;
        size_t n = 0;
        unsigned flags = (add_special ? RLX_ENCODE_ADD_SPECIAL : 0) | (parse_special ? RLX_ENCODE_PARSE_SPECIAL : 0);
        rlx_status st =
            rlx_tokenizer_encode(s->tok, json_string_value(content), json_string_length(content), flags, &ids, &n);
        if (st) {
            rlx_srv_error_set(&e, 500, "server_error", NULL, NULL, "tokenize: %s", rlx_status_message(st));
            rlx_status_free(st);
        } else {
            json_t *tokens = json_array();
            for (size_t i = 0; i < n; i++) {
                if (!with_pieces) {
                    json_array_append_new(tokens, json_integer(ids[i]));
                    continue;
                }
                char *piece = NULL;
                size_t plen = 0;
                json_t *p = NULL;
                rlx_status ps =
                    rlx_tokenizer_decode(s->tok, &ids[i], 1, RLX_DECODE_SPECIAL | RLX_DECODE_CONTINUE, &piece, &plen);
                if (!ps) p = json_stringn(piece, plen);
                if (!ps && !p) {
                    p = json_array();
                    for (size_t k = 0; k < plen; k++) json_array_append_new(p, json_integer((unsigned char)piece[k]));
                }
                rlx_status_free(ps);
                free(piece);
                json_array_append_new(
                    tokens, json_pack("{s:i, s:o}", "id", (json_int_t)ids[i], "piece", p ? p : json_string("")));
            }
            free(ids);
            json_decref(root);
            return rlx_srv_reply_json(c, 200, json_pack("{s:o}", "tokens", tokens), NULL, NULL);
        }
    }
    json_decref(root);
    return rlx_srv_reply_error(c, &e);
}

/* {"tokens": [ids]} -> {"content": TEXT}; bytes that are not valid UTF-8 become U+FFFD. */
enum MHD_Result rlx_srv_handle_detokenize(rlx_server *s, struct MHD_Connection *c, const char *body, size_t len) {
    json_t *root;
    rlx_srv_error e;
    if (!body_object(body, len, &root, &e)) return rlx_srv_reply_error(c, &e);
    json_t *tokens = json_object_get(root, "tokens");
    size_t n = json_is_array(tokens) ? json_array_size(tokens) : 0;
    int32_t *ids = json_is_array(tokens) ? malloc((n ? n : 1) * sizeof *ids) : NULL;
    bool ok = ids != NULL;
    if (!json_is_array(tokens))
        rlx_srv_error_set(&e, 400, "invalid_request_error", NULL, "tokens", "'tokens' must be an array of token ids");
    else if (!ids)
        rlx_srv_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        json_t *v = json_array_get(tokens, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= s->vocab) {
            rlx_srv_error_set(&e, 400, "invalid_request_error", NULL, "tokens",
                              "'tokens[%zu]' must be a token id in [0, %d)", i, (int)s->vocab);
            ok = false;
        } else {
            ids[i] = (int32_t)json_integer_value(v);
        }
    }
    json_decref(root);
    char *text = NULL;
    size_t tlen = 0;
    rlx_srv_buf clean = {0};
    rlx_srv_utf8 u = {0};
    if (ok) {
        rlx_status st = rlx_tokenizer_decode(s->tok, ids, n, 0, &text, &tlen);
        if (!st) st = rlx_srv_utf8_push(&u, text, tlen, &clean);
        if (!st) st = rlx_srv_utf8_finish(&u, &clean);
        if (!st) st = rlx_srv_buf_append(&clean, "", 0);
        if (st) {
            rlx_srv_error_set(&e, 500, "server_error", NULL, NULL, "detokenize: %s", rlx_status_message(st));
            rlx_status_free(st);
            ok = false;
        }
    }
    free(ids);
    free(text);
    enum MHD_Result r =
        ok ? rlx_srv_reply_json(c, 200, json_pack("{s:o}", "content", json_stringn(clean.data, clean.len)), NULL, NULL)
           : rlx_srv_reply_error(c, &e);
    rlx_srv_buf_free(&clean);
    return r;
}
