/* Chat templates: where a model keeps its template, and rendering a conversation with it.
 * See include/rlx/chat_template.h. The interpreter is text/template/jinja_*.c. */
#include "rlx/chat_template.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader/core/regular_file.h"
#include "loader/format/gguf.h"
#include "text/template/jinja_eval.h"
#include "text/template/jinja_parser.h"

/* Real templates are a few KiB (Gemma 4's, the largest fixture, is 16 KiB). */
#define MAX_TEMPLATE_BYTES ((size_t)4 << 20)

struct rlx_chat_template {
    rlx_jinja_arena arena; /* owned: the parsed tree and its strings */
    rlx_jinja_node *root;  /* in arena */
    char *source;          /* owned, NUL-terminated */
    char *origin;          /* owned */
    char *bos, *eos;       /* owned, "" when the source names none */
};

static rlx_status oom(const char *what) { return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "chat template: out of memory %s", what); }

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static rlx_status set_tokens(rlx_chat_template *t, const char *bos, const char *eos) {
    char *b = dup_str(bos ? bos : ""), *e = dup_str(eos ? eos : "");
    if (!b || !e) {
        free(b);
        free(e);
        return oom("copying the bos/eos tokens");
    }
    free(t->bos);
    free(t->eos);
    t->bos = b;
    t->eos = e;
    return NULL;
}

rlx_status rlx_chat_template_parse(const char *source, size_t len, const char *origin, rlx_chat_template **out) {
    if (!source || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_chat_template_parse: source and out are required");
    if (!origin) origin = "chat template";
    if (len > MAX_TEMPLATE_BYTES)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %zu bytes is larger than the %zu-byte limit for a chat template",
                          origin, len, MAX_TEMPLATE_BYTES);
    rlx_chat_template *t = calloc(1, sizeof *t);
    if (!t) return oom("creating a template");
    rlx_jinja_arena_init(&t->arena, 0);
    t->source = malloc(len + 1);
    t->origin = dup_str(origin);
    rlx_status s = NULL;
    if (!t->source || !t->origin) s = oom("copying the template");
    if (!s) {
        memcpy(t->source, source, len);
        t->source[len] = 0;
        s = set_tokens(t, "", "");
    }
    if (!s) s = rlx_jinja_parse(t->source, len, t->origin, &t->arena, &t->root);
    if (s) {
        rlx_chat_template_destroy(t);
        return s;
    }
    *out = t;
    return NULL;
}

void rlx_chat_template_destroy(rlx_chat_template *t) {
    if (!t) return;
    rlx_jinja_arena_free(&t->arena);
    free(t->source);
    free(t->origin);
    free(t->bos);
    free(t->eos);
    free(t);
}

const char *rlx_chat_template_source(const rlx_chat_template *t) { return t->source; }
const char *rlx_chat_template_origin(const rlx_chat_template *t) { return t->origin; }
const char *rlx_chat_template_bos(const rlx_chat_template *t) { return t->bos; }
const char *rlx_chat_template_eos(const rlx_chat_template *t) { return t->eos; }

/* ---- sources ---- */

static rlx_status read_text(const char *path, char **out, size_t *len) {
    RLX_TRY(rlx_status_annotate(rlx_file_refuse_special(path), "chat template")); /* a FIFO would block */
    FILE *f = fopen(path, "rb");
    if (!f)
        return rlx_errorf(errno == ENOENT ? RLX_ERR_NOT_FOUND : RLX_ERR_IO, "chat template '%s': cannot open: %s", path,
                          strerror(errno));
    char *buf = malloc(MAX_TEMPLATE_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_TEMPLATE_BYTES + 1, f) : 0;
    bool err = ferror(f);
    fclose(f);
    if (!buf) return oom("reading a template file");
    if (err || n > MAX_TEMPLATE_BYTES) {
        free(buf);
        if (err) return rlx_errorf(RLX_ERR_IO, "chat template '%s': read error", path);
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "chat template '%s': larger than the %zu-byte limit", path,
                          MAX_TEMPLATE_BYTES);
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return NULL;
}

/* An HF special token: a string, or an AddedToken object {"content": "..."}. */
static const char *token_text(const json_t *v) {
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_object(v) && json_is_string(json_object_get(v, "content")))
        return json_string_value(json_object_get(v, "content"));
    return NULL;
}

/* "chat_template" of tokenizer_config.json / chat_template.json: a string, or a list of
 * {"name", "template"} where the one named "default" is the chat template. */
static const char *json_template(const json_t *root) {
    const json_t *ct = json_object_get(root, "chat_template");
    if (json_is_string(ct)) return json_string_value(ct);
    if (!json_is_array(ct)) return NULL;
    size_t i;
    const json_t *item;
    json_array_foreach(ct, i, item) {
        const json_t *name = json_object_get(item, "name"), *tpl = json_object_get(item, "template");
        if (json_is_string(name) && !strcmp(json_string_value(name), "default") && json_is_string(tpl))
            return json_string_value(tpl);
    }
    return NULL;
}

static rlx_status load_json(const char *path, json_t **out) {
    json_error_t e;
    RLX_TRY(rlx_file_refuse_special(path)); /* a FIFO would block json_load_file */
    /* tokenizer_config.json may hold integers past 64 bits (model_max_length = 1e30): read them
     * as reals, since only strings are used here */
    *out = json_load_file(path, JSON_DECODE_INT_AS_REAL, &e);
    if (*out && json_is_object(*out)) return NULL;
    json_decref(*out);
    struct stat st;
    if (stat(path, &st) != 0) return rlx_errorf(RLX_ERR_NOT_FOUND, "'%s' does not exist", path);
    return rlx_errorf(RLX_ERR_BAD_FILE, "'%s': not a JSON object (%s at line %d, column %d)", path, e.text, e.line,
                      e.column);
}

/* A template from a JSON file; *found is false when it has no "chat_template". */
static rlx_status from_json_file(const char *path, bool *found, rlx_chat_template **out) {
    json_t *root;
    RLX_TRY(load_json(path, &root));
    const char *tpl = json_template(root);
    rlx_status s = NULL;
    *found = tpl != NULL;
    if (tpl) {
        char origin[4096];
        snprintf(origin, sizeof origin, "%s \"chat_template\"", path);
        s = rlx_chat_template_parse(tpl, strlen(tpl), origin, out);
        if (!s) s = set_tokens(*out, token_text(json_object_get(root, "bos_token")),
                               token_text(json_object_get(root, "eos_token")));
        if (s && *out) {
            rlx_chat_template_destroy(*out);
            *out = NULL;
        }
    }
    json_decref(root);
    return s;
}

static rlx_status from_text_file(const char *path, rlx_chat_template **out) {
    char *text = NULL;
    size_t len = 0;
    RLX_TRY(read_text(path, &text, &len));
    rlx_status s = rlx_chat_template_parse(text, len, path, out);
    free(text);
    return s;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static rlx_status from_directory(const char *dir, rlx_chat_template **out) {
    char jinja[4096], ct_json[4096], tok_cfg[4096];
    snprintf(jinja, sizeof jinja, "%s/chat_template.jinja", dir);
    snprintf(ct_json, sizeof ct_json, "%s/chat_template.json", dir);
    snprintf(tok_cfg, sizeof tok_cfg, "%s/tokenizer_config.json", dir);
    bool found = false;
    rlx_chat_template *t = NULL;
    if (exists(jinja)) {
        RLX_TRY(from_text_file(jinja, &t));
        found = true;
    }
    if (!found && exists(ct_json)) RLX_TRY(from_json_file(ct_json, &found, &t));
    if (!found && exists(tok_cfg)) RLX_TRY(from_json_file(tok_cfg, &found, &t));
    if (!found)
        return rlx_errorf(RLX_ERR_NOT_FOUND,
                          "'%s' has no chat template (looked for chat_template.jinja, chat_template.json and "
                          "\"chat_template\" in tokenizer_config.json)",
                          dir);
    /* the special tokens live in tokenizer_config.json whichever file held the template */
    json_t *cfg = NULL;
    rlx_status cfg_err = exists(tok_cfg) ? load_json(tok_cfg, &cfg) : NULL;
    if (cfg_err) {
        rlx_chat_template_destroy(t);
        return cfg_err;
    }
    if (cfg) {
        const char *bos = token_text(json_object_get(cfg, "bos_token")), *eos = token_text(json_object_get(cfg, "eos_token"));
        rlx_status s = set_tokens(t, bos ? bos : t->bos, eos ? eos : t->eos);
        json_decref(cfg);
        if (s) {
            rlx_chat_template_destroy(t);
            return s;
        }
    }
    *out = t;
    return NULL;
}

/* tokenizer.ggml.tokens[id] for the special-token id stored under `key`, or NULL. */
static const char *gguf_token(const rlx_gguf *g, const char *key) {
    rlx_status err = NULL;
    uint32_t id;
    const rlx_gguf_value *tokens;
    if (!rlx_gguf_get_u32(g, key, &id, &err) ||
        !rlx_gguf_get_arr(g, "tokenizer.ggml.tokens", RLX_GGUF_STRING, &tokens, &err)) {
        rlx_status_free(err);
        return NULL;
    }
    rlx_gguf_value v;
    return rlx_gguf_arr_get(tokens, id, &v) && v.type == RLX_GGUF_STRING ? v.str.s : NULL;
}

rlx_status rlx_chat_template_from_gguf(const struct rlx_gguf *g, const char *origin, rlx_chat_template **out) {
    if (!origin) origin = "GGUF";
    rlx_status err = NULL;
    const char *tpl;
    if (!rlx_gguf_get_str(g, "tokenizer.chat_template", &tpl, &err)) {
        if (err) return rlx_status_annotate(err, "%s", origin);
        return rlx_errorf(RLX_ERR_NOT_FOUND, "%s has no tokenizer.chat_template", origin);
    }
    const rlx_gguf_kv *kv = rlx_gguf_find(g, "tokenizer.chat_template");
    char name[4096];
    snprintf(name, sizeof name, "%s tokenizer.chat_template", origin);
    RLX_TRY(rlx_chat_template_parse(tpl, (size_t)kv->value.str.len, name, out));
    rlx_status s = set_tokens(*out, gguf_token(g, "tokenizer.ggml.bos_token_id"), gguf_token(g, "tokenizer.ggml.eos_token_id"));
    if (s) {
        rlx_chat_template_destroy(*out);
        *out = NULL;
    }
    return s;
}

static bool is_gguf_file(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    bool yes = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (f) fclose(f);
    return yes;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

rlx_status rlx_chat_template_open(const char *path, rlx_chat_template **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_chat_template_open: path and out are required");
    struct stat st;
    if (stat(path, &st) != 0)
        return rlx_errorf(errno == ENOENT ? RLX_ERR_NOT_FOUND : RLX_ERR_IO, "chat template source '%s': %s", path,
                          strerror(errno));
    if (S_ISDIR(st.st_mode)) return from_directory(path, out);
    /* anything but a directory must be a regular file: a FIFO would block the reads below */
    RLX_TRY(rlx_status_annotate(rlx_file_refuse_special(path), "chat template source"));
    if (is_gguf_file(path)) {
        rlx_gguf *g;
        RLX_TRY(rlx_gguf_open(path, &g));
        rlx_status s = rlx_chat_template_from_gguf(g, path, out);
        rlx_gguf_close(g);
        return s;
    }
    if (ends_with(path, ".json")) {
        bool found;
        RLX_TRY(from_json_file(path, &found, out));
        if (!found) return rlx_errorf(RLX_ERR_NOT_FOUND, "'%s' has no \"chat_template\"", path);
        return NULL;
    }
    return from_text_file(path, out);
}

/* ---- rendering ---- */

static rlx_status parse_json_object(const char *text, const char *what, json_t **out) {
    json_error_t e;
    *out = json_loads(text, 0, &e);
    if (*out && json_is_object(*out)) return NULL;
    json_decref(*out);
    *out = NULL;
    if (!e.text[0]) snprintf(e.text, sizeof e.text, "not an object");
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s must be a JSON object: %s (line %d, column %d)", what, e.text, e.line,
                      e.column);
}

static rlx_status put(rlx_jinja_arena *a, rlx_jv_dict *d, const char *key, rlx_jv v) {
    return rlx_jv_dict_set(a, d, rlx_jv_cstr(key), v) ? NULL : oom("building the template variables");
}

/* The fields of every key of a JSON object, except those in `skip`. */
static rlx_status put_json_fields(rlx_jinja_arena *a, rlx_jv_dict *d, json_t *obj, const char *const *skip) {
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        bool skipped = false;
        for (size_t i = 0; skip && skip[i] && !skipped; i++) skipped = !strcmp(skip[i], key);
        if (skipped) continue;
        char *k = rlx_jinja_strndup(a, key, strlen(key));
        if (!k) return oom("building the template variables");
        rlx_jv v;
        rlx_status s = rlx_jv_from_json(a, val, &v);
        if (s) return rlx_status_annotate(s, "field '%s'", key);
        RLX_TRY(put(a, d, k, v));
    }
    return NULL;
}

static rlx_status message_value(rlx_jinja_arena *a, const rlx_chat_message *m, size_t i, rlx_jv *out) {
    if (!m->role) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "chat message %zu has no role", i);
    rlx_jv_dict *d = rlx_jv_dict_new(a, 4);
    if (!d) return oom("building the messages");
    RLX_TRY(put(a, d, "role", rlx_jv_cstr(m->role)));
    json_t *extra = NULL;
    if (m->extra_json) {
        char what[64];
        snprintf(what, sizeof what, "chat message %zu's extra_json", i);
        RLX_TRY(parse_json_object(m->extra_json, what, &extra));
    }
    rlx_status s = NULL;
    if (m->content || !extra || !json_object_get(extra, "content"))
        s = put(a, d, "content", m->content ? rlx_jv_cstr(m->content) : rlx_jv_none());
    static const char *const skip_with_content[] = {"role", "content", NULL};
    static const char *const skip_role[] = {"role", NULL};
    if (!s && extra) s = put_json_fields(a, d, extra, m->content ? skip_with_content : skip_role);
    json_decref(extra);
    if (s) return rlx_status_annotate(s, "chat message %zu", i);
    *out = (rlx_jv){.kind = RLX_JV_DICT, .dict = d};
    return NULL;
}

static rlx_status build_globals(const rlx_chat_template *t, rlx_jinja_arena *a, const rlx_chat_message *messages,
                                size_t n, const rlx_chat_render_opts *o, rlx_jv_dict **out) {
    rlx_jv_dict *g = rlx_jv_dict_new(a, 8);
    rlx_jv_list *msgs = rlx_jv_list_new(a, n);
    if (!g || !msgs) return oom("building the template variables");
    for (size_t i = 0; i < n; i++) RLX_TRY(message_value(a, &messages[i], i, &msgs->items[msgs->n++]));
    RLX_TRY(put(a, g, "messages", (rlx_jv){.kind = RLX_JV_LIST, .list = msgs}));
    RLX_TRY(put(a, g, "add_generation_prompt", rlx_jv_bool(o->add_generation_prompt)));
    RLX_TRY(put(a, g, "bos_token", rlx_jv_cstr(o->bos_token ? o->bos_token : t->bos)));
    RLX_TRY(put(a, g, "eos_token", rlx_jv_cstr(o->eos_token ? o->eos_token : t->eos)));
    /* transformers passes tools=None when there are none: defined, and none */
    RLX_TRY(put(a, g, "tools", rlx_jv_none()));
    if (o->extra_vars_json) {
        json_t *extra;
        RLX_TRY(parse_json_object(o->extra_vars_json, "extra_vars_json", &extra));
        rlx_status s = put_json_fields(a, g, extra, NULL);
        json_decref(extra);
        if (s) return rlx_status_annotate(s, "extra_vars_json");
    }
    *out = g;
    return NULL;
}

rlx_status rlx_chat_template_render(const rlx_chat_template *t, const rlx_chat_message *messages, size_t n_messages,
                                    const rlx_chat_render_opts *opts, char **out, size_t *out_len) {
    if (!t || !out || (n_messages && !messages))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_chat_template_render: template, messages and out are required");
    rlx_chat_render_opts o = opts ? *opts : (rlx_chat_render_opts){0};
    rlx_jinja_limits lim = {
        .max_output = o.max_output_bytes ? o.max_output_bytes : RLX_CHAT_TEMPLATE_DEFAULT_MAX_OUTPUT,
        .max_memory = o.max_memory_bytes ? o.max_memory_bytes : RLX_CHAT_TEMPLATE_DEFAULT_MAX_MEMORY,
        .max_steps = o.max_steps ? o.max_steps : RLX_CHAT_TEMPLATE_DEFAULT_MAX_STEPS,
        .max_depth = RLX_JINJA_MAX_DEPTH,
    };
    rlx_jinja_arena arena;
    rlx_jinja_arena_init(&arena, lim.max_memory);
    rlx_jinja_buf buf = {0};
    rlx_jv_dict *globals = NULL;
    rlx_status s = build_globals(t, &arena, messages, n_messages, &o, &globals);
    if (!s) s = rlx_jinja_render(t->root, t->origin, &arena, globals, &lim, o.fixed_time, o.now_unix, &buf);
    rlx_jinja_arena_free(&arena);
    if (!s && !buf.p && !rlx_jinja_buf_append(&buf, "", 0)) s = oom("writing the rendered text");
    if (s) {
        rlx_jinja_buf_free(&buf);
        return s;
    }
    *out = buf.p;
    if (out_len) *out_len = buf.n;
    return NULL;
}
