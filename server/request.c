#include "server/request.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/text_out.h"

void rlx_srv_error_set(rlx_srv_error *e, int status, const char *type, const char *code, const char *param,
                       const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

#define BAD(param, ...) (rlx_srv_error_set(err, 400, "invalid_request_error", NULL, (param), __VA_ARGS__), false)
#define UNSUPPORTED(param, ...)                                                                                        \
    (rlx_srv_error_set(err, 400, "invalid_request_error", "unsupported_parameter", (param), __VA_ARGS__), false)

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

/* The field, or NULL when absent or null (the official clients send null for "not given"). */
static json_t *field(json_t *root, const char *name) {
    json_t *v = json_object_get(root, name);
    return v && !json_is_null(v) ? v : NULL;
}

/* A number field in [lo, hi] into *out; absent keeps *out. */
static bool get_number(json_t *root, const char *name, double lo, double hi, float *out, rlx_srv_error *err) {
    json_t *v = field(root, name);
    if (!v) return true;
    if (!json_is_number(v)) return BAD(name, "'%s' must be a number, not %s", name, type_name(v));
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return BAD(name, "'%s' is %g, expected a number in [%g, %g]", name, d, lo, hi);
    *out = (float)d;
    return true;
}

/* A whole-number field in [lo, hi]; absent: *given false and *out kept. */
static bool get_int(json_t *root, const char *name, int64_t lo, int64_t hi, int64_t *out, bool *given,
                    rlx_srv_error *err) {
    json_t *v = field(root, name);
    if (given) *given = v != NULL;
    if (!v) return true;
    if (!json_is_integer(v)) {
        /* 3.0 is 3, as JavaScript clients may send it */
        double d = json_is_real(v) ? json_real_value(v) : NAN;
        if (!(d == floor(d) && fabs(d) < 9.0e15))
            return BAD(name, "'%s' must be an integer, not %s", name, type_name(v));
        if (!(d >= (double)lo && d <= (double)hi))
            return BAD(name, "'%s' is %.0f, expected an integer in [%lld, %lld]", name, d, (long long)lo,
                       (long long)hi);
        *out = (int64_t)d;
        return true;
    }
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return BAD(name, "'%s' is %lld, expected an integer in [%lld, %lld]", name, (long long)i, (long long)lo,
                   (long long)hi);
    *out = i;
    return true;
}

static bool get_bool(json_t *root, const char *name, bool *out, rlx_srv_error *err) {
    json_t *v = field(root, name);
    if (!v) return true;
    if (!json_is_boolean(v)) return BAD(name, "'%s' must be a boolean, not %s", name, type_name(v));
    *out = json_is_true(v);
    return true;
}

static char *dup_string(json_t *v) {
    size_t n = json_string_length(v);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, json_string_value(v), n);
        s[n] = '\0';
    }
    return s;
}

#define NOMEM(what) (rlx_srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory reading %s", what), false)

static bool add_stop(rlx_srv_request *r, json_t *v, rlx_srv_error *err) {
    if (!json_is_string(v)) return BAD("stop", "'stop' must be a string or an array of strings, not %s", type_name(v));
    size_t n = json_string_length(v);
    if (n == 0) return BAD("stop", "'stop' holds an empty string, which would stop before any text");
    if (n > RLX_SRV_MAX_STOP_BYTES)
        return BAD("stop", "a 'stop' string is %zu bytes, at most %d allowed", n, RLX_SRV_MAX_STOP_BYTES);
    if (r->n_stop == RLX_SRV_MAX_STOPS) return BAD("stop", "'stop' holds more than %d strings", RLX_SRV_MAX_STOPS);
    if (!(r->stop[r->n_stop] = dup_string(v))) return NOMEM("stop");
    r->n_stop++;
    return true;
}

static bool parse_stop(json_t *root, rlx_srv_request *r, rlx_srv_error *err) {
    json_t *v = field(root, "stop");
    if (!v) return true;
    if (!json_is_array(v)) return add_stop(r, v, err);
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s) if (!add_stop(r, s, err)) return false;
    return true;
}

/* Sampling: OpenAI's ranges, llama.cpp's extras. */
static bool parse_sampling(json_t *root, rlx_srv_request *r, rlx_srv_error *err) {
    rlx_sample_opts *o = &r->sample;
    o->temperature = 1.0f; /* OpenAI's default */
    o->top_p = 1.0f;
    o->repeat_penalty = 1.0f;
    if (!get_number(root, "temperature", 0, 2, &o->temperature, err) ||
        !get_number(root, "top_p", 0, 1, &o->top_p, err) || !get_number(root, "min_p", 0, 1, &o->min_p, err) ||
        !get_number(root, "repeat_penalty", 0, 100, &o->repeat_penalty, err) ||
        !get_number(root, "presence_penalty", -2, 2, &o->presence_penalty, err) ||
        !get_number(root, "frequency_penalty", -2, 2, &o->frequency_penalty, err))
        return false;
    int64_t k = 0, seed = 0, last_n = 0;
    bool given;
    if (!get_bool(root, "ignore_eos", &o->ignore_eos, err)) return false; /* llama.cpp's, for benchmarks */
    if (!get_int(root, "top_k", 0, INT32_MAX, &k, NULL, err)) return false;
    o->top_k = (int32_t)k;
    if (!get_int(root, "repeat_last_n", 0, INT32_MAX, &last_n, NULL, err)) return false;
    o->repeat_last_n = (int32_t)last_n;
    if (!get_int(root, "seed", INT64_MIN, INT64_MAX, &seed, &r->seed_given, err)) return false;
    o->seed = (uint64_t)seed;
    int64_t max = 0;
    if (!get_int(root, "max_tokens", 1, INT32_MAX, &max, &given, err)) return false;
    if (given) r->max_tokens = (int32_t)max;
    if (!get_int(root, "max_completion_tokens", 1, INT32_MAX, &max, &given, err)) return false;
    if (given) r->max_tokens = (int32_t)max;
    return true;
}

/* What would change the answer in a way the server does not offer: refused by name. */
static bool refuse_unsupported(json_t *root, rlx_srv_error *err) {
    int64_t n = 1;
    if (!get_int(root, "n", 1, INT32_MAX, &n, NULL, err)) return false;
    if (n != 1)
        return UNSUPPORTED("n", "'n' is %lld: this server returns one choice per request (n = 1)", (long long)n);
    json_t *v = field(root, "logprobs");
    if (v && !json_is_false(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
        return UNSUPPORTED("logprobs", "'logprobs' is not supported by this server");
    if (field(root, "top_logprobs"))
        return UNSUPPORTED("top_logprobs", "'top_logprobs' is not supported by this server");
    v = field(root, "tools");
    if (v && !(json_is_array(v) && json_array_size(v) == 0))
        return UNSUPPORTED("tools", "'tools' (function calling) is not supported by this server");
    v = field(root, "response_format");
    if (v) {
        json_t *t = json_is_object(v) ? json_object_get(v, "type") : NULL;
        if (!json_is_string(t) || strcmp(json_string_value(t), "text"))
            return UNSUPPORTED("response_format", "'response_format' other than {\"type\": \"text\"} is not supported");
    }
    v = field(root, "echo");
    if (v && !json_is_false(v)) return UNSUPPORTED("echo", "'echo' is not supported by this server");
    if (field(root, "suffix")) return UNSUPPORTED("suffix", "'suffix' is not supported by this server");
    int64_t best_of = 1;
    if (!get_int(root, "best_of", 1, 1, &best_of, NULL, err)) return false;
    return true;
}

static bool parse_stream(json_t *root, rlx_srv_request *r, rlx_srv_error *err) {
    if (!get_bool(root, "stream", &r->stream, err)) return false;
    json_t *so = field(root, "stream_options");
    if (!so) return true;
    if (!json_is_object(so)) return BAD("stream_options", "'stream_options' must be an object, not %s", type_name(so));
    json_t *iu = field(so, "include_usage");
    if (iu && !json_is_boolean(iu))
        return BAD("stream_options.include_usage", "'stream_options.include_usage' must be a boolean, not %s",
                   type_name(iu));
    r->include_usage = iu && json_is_true(iu);
    /* vLLM's: usage in every chunk, so a client can count the tokens of a chunk that holds several */
    json_t *cu = field(so, "continuous_usage_stats");
    if (cu && !json_is_boolean(cu))
        return BAD("stream_options.continuous_usage_stats",
                   "'stream_options.continuous_usage_stats' must be a boolean, not %s", type_name(cu));
    r->continuous_usage = cu && json_is_true(cu);
    return true;
}

/* A message's content: a string, or a list of parts of which only text parts are offered. */
static bool message_content(json_t *c, size_t i, char **out, rlx_srv_error *err) {
    char param[64];
    snprintf(param, sizeof param, "messages[%zu].content", i);
    if (!c) {
        *out = strdup("");
        return *out ? true : NOMEM("a message");
    }
    if (json_is_string(c)) {
        *out = dup_string(c);
        return *out ? true : NOMEM("a message");
    }
    if (!json_is_array(c)) return BAD(param, "'%s' must be a string or an array of parts, not %s", param, type_name(c));
    rlx_srv_buf b = {0};
    size_t k;
    json_t *part;
    json_array_foreach(c, k, part) {
        json_t *type = json_is_object(part) ? json_object_get(part, "type") : NULL;
        json_t *text = json_is_object(part) ? json_object_get(part, "text") : NULL;
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") || !json_is_string(text)) {
            rlx_srv_buf_free(&b);
            return UNSUPPORTED(param, "'%s[%zu]': only {\"type\": \"text\", \"text\": ...} parts are supported", param,
                               k);
        }
        rlx_status s = rlx_srv_buf_append(&b, json_string_value(text), json_string_length(text));
        if (s) {
            rlx_status_free(s);
            rlx_srv_buf_free(&b);
            return NOMEM("a message");
        }
    }
    *out = b.data ? b.data : strdup("");
    return *out ? true : NOMEM("a message");
}

static const char *message_role(const char *role) {
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    if (!strcmp(role, "developer")) return "system"; /* OpenAI's newer name for the system role */
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (!strcmp(role, roles[i])) return roles[i];
    return NULL;
}

static bool parse_messages(json_t *root, rlx_srv_request *r, rlx_srv_error *err) {
    json_t *m = field(root, "messages");
    if (!m) return BAD("messages", "'messages' is required");
    if (!json_is_array(m)) return BAD("messages", "'messages' must be an array, not %s", type_name(m));
    size_t n = json_array_size(m);
    if (n == 0) return BAD("messages", "'messages' is empty: a chat needs at least one message");
    if (n > RLX_SRV_MAX_MESSAGES)
        return BAD("messages", "'messages' holds %zu messages, at most %d", n, RLX_SRV_MAX_MESSAGES);
    if (!(r->messages = calloc(n, sizeof *r->messages))) return NOMEM("messages");
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(m, i);
        char param[64];
        snprintf(param, sizeof param, "messages[%zu]", i);
        if (!json_is_object(msg)) return BAD(param, "'%s' must be an object, not %s", param, type_name(msg));
        json_t *role = json_object_get(msg, "role");
        snprintf(param, sizeof param, "messages[%zu].role", i);
        if (!json_is_string(role)) return BAD(param, "'%s' must be a string", param);
        r->messages[i].role = message_role(json_string_value(role));
        if (!r->messages[i].role)
            return BAD(param, "'%s' is '%.64s', expected system, developer, user, assistant or tool", param,
                       json_string_value(role));
        json_t *content = field(msg, "content");
        if (!content && strcmp(r->messages[i].role, "assistant"))
            return BAD(param, "'messages[%zu].content' is required for a %s message", i, r->messages[i].role);
        if (!message_content(content, i, &r->messages[i].content, err)) return false;
        r->n_messages = i + 1;
    }
    return true;
}

static bool parse_ids(json_t *a, rlx_srv_request *r, rlx_srv_error *err) {
    size_t n = json_array_size(a);
    if (n == 0) return BAD("prompt", "'prompt' is an empty list of token ids");
    if (n > RLX_SRV_MAX_PROMPT_IDS)
        return BAD("prompt", "'prompt' holds %zu ids, at most %d", n, RLX_SRV_MAX_PROMPT_IDS);
    if (!(r->prompt_ids = malloc(n * sizeof *r->prompt_ids))) return NOMEM("prompt");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
            return BAD("prompt", "'prompt[%zu]' must be a token id (an integer >= 0), not %s", i, type_name(v));
        r->prompt_ids[i] = (int32_t)json_integer_value(v);
    }
    r->n_prompt_ids = (int32_t)n;
    return true;
}

/* A string, a list of ids, or a batch of one of either (a batch of more is n > 1 in disguise). */
static bool parse_prompt(json_t *root, rlx_srv_request *r, rlx_srv_error *err) {
    json_t *p = field(root, "prompt");
    if (!p) return BAD("prompt", "'prompt' is required");
    if (json_is_array(p) && json_array_size(p) >= 1 && !json_is_integer(json_array_get(p, 0))) {
        if (json_array_size(p) > 1)
            return UNSUPPORTED("prompt", "'prompt' holds %zu prompts: this server completes one per request",
                               json_array_size(p));
        p = json_array_get(p, 0);
    }
    if (json_is_string(p)) {
        r->prompt = dup_string(p);
        return r->prompt ? true : NOMEM("prompt");
    }
    if (json_is_array(p)) return parse_ids(p, r, err);
    return BAD("prompt", "'prompt' must be a string or a list of token ids, not %s", type_name(p));
}

bool rlx_srv_request_parse(rlx_srv_kind kind, const char *body, size_t len, rlx_srv_request *out, rlx_srv_error *err) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return BAD(NULL, "the body is not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
    bool ok;
    if (!json_is_object(root)) {
        ok = BAD(NULL, "the body must be a JSON object, not %s", type_name(root));
    } else {
        json_t *model = field(root, "model");
        ok = !(model && !json_is_string(model)) || BAD("model", "'model' must be a string, not %s", type_name(model));
        ok = ok && refuse_unsupported(root, err) && parse_sampling(root, out, err) && parse_stop(root, out, err) &&
             parse_stream(root, out, err) &&
             (kind == RLX_SRV_CHAT ? parse_messages(root, out, err) : parse_prompt(root, out, err));
    }
    json_decref(root);
    return ok;
}

void rlx_srv_request_free(rlx_srv_request *r) {
    for (size_t i = 0; i < r->n_messages; i++) free(r->messages[i].content);
    free(r->messages);
    free(r->prompt);
    free(r->prompt_ids);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}
