#include "inspect_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/core/regular_file.h"
#include "loader/format/safetensors.h"
#include "text/tokenizer/tokenizer_utf8.h"

static json_t *u64_json(uint64_t v) { return json_integer((json_int_t)v); }

json_t *rlx_inspect_text_json(const char *s, size_t n) {
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *clean = NULL;
    size_t len = 0;
    rlx_status err = rlx_utf8_sanitize(s, n, &clean, &len);
    if (err) {
        rlx_status_free(err);
        return NULL;
    }
    j = json_stringn(clean, len);
    free(clean);
    return j;
}

static json_t *cstr_json(const char *s) { return rlx_inspect_text_json(s, strlen(s)); }

static json_t *shape_json(const uint64_t *dims, uint32_t n) {
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++) json_array_append_new(a, u64_json(dims[i]));
    return a;
}

static json_t *tensor_json(const char *name, uint32_t type, const uint64_t *dims, uint32_t n_dims, uint64_t bytes) {
    return json_pack("{s:o, s:s, s:o, s:o}", "name", cstr_json(name), "type", rlx_dtype_name(type), "shape",
                     shape_json(dims, n_dims), "bytes", u64_json(bytes));
}

/* Scalars as themselves; arrays as a summary (a vocabulary is 150k strings). */
static json_t *gguf_value_json(const rlx_gguf_value *v) {
    switch (v->type) {
    case RLX_GGUF_UINT8: case RLX_GGUF_UINT16: case RLX_GGUF_UINT32: case RLX_GGUF_UINT64:
        return u64_json(v->u64);
    case RLX_GGUF_INT8: case RLX_GGUF_INT16: case RLX_GGUF_INT32: case RLX_GGUF_INT64:
        return json_integer((json_int_t)v->i64);
    case RLX_GGUF_FLOAT32: case RLX_GGUF_FLOAT64:
        return json_real(v->f64);
    case RLX_GGUF_BOOL:
        return json_boolean(v->b);
    case RLX_GGUF_STRING:
        return rlx_inspect_text_json(v->str.s, (size_t)v->str.len);
    case RLX_GGUF_ARRAY:
        return json_pack("{s:s, s:o}", "array_of", rlx_gguf_type_name(v->arr.elem_type), "length",
                         u64_json(v->arr.n));
    }
    return json_null();
}

static uint64_t gguf_array_len(const rlx_gguf *g, const char *key) {
    const rlx_gguf_kv *kv = rlx_gguf_find(g, key);
    return kv && kv->value.type == RLX_GGUF_ARRAY ? kv->value.arr.n : 0;
}

static json_t *gguf_tokenizer_json(const rlx_gguf *g) {
    const rlx_gguf_kv *model = rlx_gguf_find(g, "tokenizer.ggml.model");
    if (!model || model->value.type != RLX_GGUF_STRING) return json_null();
    const char *m = model->value.str.s;
    const char *kind = !strcmp(m, "gpt2") ? "byte-level BPE" : !strcmp(m, "llama") ? "SentencePiece"
                     : !strcmp(m, "bert") ? "WordPiece" : "other";
    const rlx_gguf_kv *pre = rlx_gguf_find(g, "tokenizer.ggml.pre");
    return json_pack("{s:s, s:o, s:o, s:o}", "kind", kind, "model", cstr_json(m), "pre",
                     pre && pre->value.type == RLX_GGUF_STRING ? cstr_json(pre->value.str.s) : json_null(),
                     "vocab_size", u64_json(gguf_array_len(g, "tokenizer.ggml.tokens")));
}

static json_t *gguf_context_length(const rlx_gguf *g, const char *arch) {
    char key[256];
    snprintf(key, sizeof key, "%s.context_length", arch);
    uint32_t n = 0;
    rlx_status err = NULL;
    if (!rlx_gguf_get_u32(g, key, &n, &err)) {
        rlx_status_free(err);
        return json_null();
    }
    return u64_json(n);
}

rlx_status rlx_inspect_gguf(const char *path, json_t **out) {
    rlx_gguf *g = NULL;
    RLX_TRY(rlx_gguf_open(path, &g));
    const rlx_gguf_kv *arch_kv = rlx_gguf_find(g, "general.architecture");
    const char *arch = arch_kv && arch_kv->value.type == RLX_GGUF_STRING ? arch_kv->value.str.s : NULL;

    json_t *meta = json_object(), *tensors = json_array();
    for (uint64_t i = 0; i < g->n_kv; i++) {
        json_t *key = cstr_json(g->kv[i].key.s);
        if (key) json_object_set_new(meta, json_string_value(key), gguf_value_json(&g->kv[i].value));
        json_decref(key);
    }
    uint64_t n_params = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const rlx_gguf_tensor *t = &g->tensors[i];
        json_array_append_new(tensors, tensor_json(t->name.s, t->type, t->ne, t->n_dims, t->nbytes));
        n_params += t->n_elements;
    }
    *out = json_pack("{s:o, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o}", "path", cstr_json(path), "format",
                     "gguf", "gguf_version", (json_int_t)g->version, "file_bytes", u64_json(g->size), "architecture",
                     arch ? cstr_json(arch) : json_null(), "n_params", u64_json(n_params), "context_length",
                     arch ? gguf_context_length(g, arch) : json_null(), "tokenizer", gguf_tokenizer_json(g),
                     "chat_template", rlx_gguf_find(g, "tokenizer.chat_template") != NULL, "metadata", meta,
                     "tensors", tensors);
    rlx_gguf_close(g);
    return *out ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "'%s': cannot build the inspect report", path);
}

static bool file_exists(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static json_t *load_json_in(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    rlx_status special = rlx_file_refuse_special(p); /* a FIFO would block json_load_file */
    if (special) {
        rlx_status_free(special);
        return NULL;
    }
    return json_load_file(p, 0, NULL);
}

/* tokenizer.json (HF tokenizers), vocab.json + merges.txt, or a SentencePiece tokenizer.model
 * (whose protobuf we do not parse: its size comes from config.json's vocab_size). */
static json_t *hf_tokenizer_json(const char *dir, const json_t *config) {
    json_t *tok = load_json_in(dir, "tokenizer.json");
    if (tok) {
        json_t *model = json_object_get(tok, "model");
        const char *type = json_string_value(json_object_get(model, "type"));
        size_t n = json_object_size(json_object_get(model, "vocab"));
        json_t *added = json_object_get(tok, "added_tokens");
        size_t i;
        json_t *a;
        json_array_foreach(added, i, a) {
            json_int_t id = json_integer_value(json_object_get(a, "id"));
            if (id >= 0 && (size_t)id >= n) n = (size_t)id + 1;
        }
        json_t *r = json_pack("{s:s, s:s, s:o, s:o}", "kind", type && !strcmp(type, "BPE") ? "byte-level BPE" : "other",
                              "model", "tokenizer.json", "pre", json_null(), "vocab_size", u64_json(n));
        json_decref(tok);
        return r;
    }
    if (file_exists(dir, "vocab.json") && file_exists(dir, "merges.txt")) {
        json_t *vocab = load_json_in(dir, "vocab.json");
        json_t *r = json_pack("{s:s, s:s, s:o, s:o}", "kind", "byte-level BPE", "model", "vocab.json+merges.txt",
                              "pre", json_null(), "vocab_size", u64_json(json_object_size(vocab)));
        json_decref(vocab);
        return r;
    }
    if (file_exists(dir, "tokenizer.model"))
        return json_pack("{s:s, s:s, s:o, s:O?}", "kind", "SentencePiece", "model", "tokenizer.model", "pre",
                         json_null(), "vocab_size", json_object_get(config, "vocab_size"));
    return json_null();
}

static bool hf_has_chat_template(const char *dir) {
    if (file_exists(dir, "chat_template.jinja")) return true;
    json_t *tc = load_json_in(dir, "tokenizer_config.json");
    bool has = tc && json_object_get(tc, "chat_template");
    json_decref(tc);
    return has;
}

rlx_status rlx_inspect_hf_dir(const char *dir, json_t **out) {
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", dir);
    RLX_TRY(rlx_file_refuse_special(p)); /* a FIFO would block json_load_file */
    json_error_t jerr;
    json_t *config = json_load_file(p, 0, &jerr);
    if (!config)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %s (line %d, column %d)", p, jerr.text, jerr.line, jerr.column);
    rlx_safetensors *st = NULL;
    rlx_status s = rlx_safetensors_open(dir, &st);
    if (s) {
        json_decref(config);
        return s;
    }
    json_t *tensors = json_array();
    uint64_t n_params = 0;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const rlx_st_tensor *t = &st->tensors[i];
        json_array_append_new(tensors, tensor_json(t->name, t->type, t->shape, t->n_dims, t->nbytes));
        n_params += t->n_elements;
    }
    json_t *arch = json_object_get(config, "model_type");
    *out = json_pack("{s:o, s:s, s:O?, s:o, s:O?, s:o, s:b, s:O, s:o}", "path", cstr_json(dir), "format", "hf",
                     "architecture",
                     arch, "n_params", u64_json(n_params), "context_length",
                     json_object_get(config, "max_position_embeddings"),
                     "tokenizer", hf_tokenizer_json(dir, config), "chat_template", hf_has_chat_template(dir),
                     "metadata", config, "tensors", tensors);
    json_decref(config);
    rlx_safetensors_close(st);
    return *out ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "'%s': cannot build the inspect report", dir);
}

json_t *rlx_inspect_config_json(const rlx_model_config *c) {
    json_t *kinds = json_array();
    static const char *kind_names[] = {"full", "sliding", "linear"};
    for (uint32_t i = 0; i < c->n_layer && i < RLX_MAX_LAYERS; i++)
        json_array_append_new(kinds, json_string(c->layer_kind[i] < 3 ? kind_names[c->layer_kind[i]] : "?"));
    json_t *j = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:b, s:s, s:i, s:f, s:f, s:b, s:i, s:f, s:f, s:o}",
                          "n_layer", (json_int_t)c->n_layer, "n_embd", (json_int_t)c->n_embd, "n_head",
                          (json_int_t)c->n_head, "n_head_kv", (json_int_t)c->n_head_kv, "head_dim",
                          (json_int_t)c->head_dim, "head_dim_v", (json_int_t)c->head_dim_v, "n_ff",
                          (json_int_t)c->n_ff, "n_vocab", (json_int_t)c->n_vocab, "n_ctx_train",
                          (json_int_t)c->n_ctx_train, "rms_eps", (double)c->rms_eps, "tied_embeddings",
                          c->tied_embeddings, "rope_mode", c->rope_mode == RLX_ROPE_NEOX ? "neox" : "normal",
                          "n_rot", (json_int_t)c->n_rot, "rope_base", (double)c->rope_base, "rope_base_local",
                          (double)c->rope_base_local, "rope_freqs", c->has_rope_freqs, "sliding_window",
                          (json_int_t)c->sliding_window, "attn_scale", (double)c->attn_scale, "embd_scale",
                          (double)c->embd_scale, "layers", kinds);
    if (c->n_expert)
        json_object_set_new(j, "moe", json_pack("{s:i, s:i, s:i, s:b, s:i}", "n_expert", (json_int_t)c->n_expert,
                                                "n_expert_used", (json_int_t)c->n_expert_used, "n_ff_exp",
                                                (json_int_t)c->n_ff_exp, "norm_topk_prob", c->norm_topk_prob,
                                                "n_ff_shexp", (json_int_t)c->n_ff_shexp));
    json_object_set_new(j, "bos_id", json_integer(c->bos_id));
    json_object_set_new(j, "eos_id", json_integer(c->eos_id));
    return j;
}

json_t *rlx_inspect_weights_json(const rlx_model *m) {
    json_t *a = json_array();
    for (size_t i = 0; i < m->n_weights; i++) {
        const rlx_weight *w = &m->weights[i];
        json_array_append_new(a, tensor_json(w->name, w->type, w->ne, w->n_dims, w->nbytes));
    }
    return a;
}

/* ---- text form ---- */

static void print_count(FILE *f, const char *label, const json_t *v) {
    if (!json_is_integer(v)) {
        fprintf(f, "%-15s -\n", label);
        return;
    }
    double n = (double)json_integer_value(v);
    if (n < 1e3) {
        fprintf(f, "%-15s %" JSON_INTEGER_FORMAT "\n", label, json_integer_value(v));
        return;
    }
    const char *unit = n >= 1e9 ? "B" : n >= 1e6 ? "M" : "K";
    double scaled = n >= 1e9 ? n / 1e9 : n >= 1e6 ? n / 1e6 : n / 1e3;
    fprintf(f, "%-15s %.2f%s (%" JSON_INTEGER_FORMAT ")\n", label, scaled, unit, json_integer_value(v));
}

static void print_tensors(FILE *f, const char *title, const json_t *tensors) {
    fprintf(f, "%s (%zu):\n", title, json_array_size(tensors));
    size_t i;
    json_t *t;
    json_array_foreach(tensors, i, t) {
        char shape[128] = "[";
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(t, "shape"), k, d) {
            size_t len = strlen(shape);
            snprintf(shape + len, sizeof shape - len, "%s%" JSON_INTEGER_FORMAT, k ? ", " : "", json_integer_value(d));
        }
        strncat(shape, "]", sizeof shape - strlen(shape) - 1);
        fprintf(f, "  %-40s %-6s %-22s %12" JSON_INTEGER_FORMAT " bytes\n", json_string_value(json_object_get(t, "name")),
                json_string_value(json_object_get(t, "type")), shape, json_integer_value(json_object_get(t, "bytes")));
    }
}

/* "24 (18 linear attention, 6 full attention): L L L A ..." for a model whose layers differ in
 * kind (Qwen3.5's Gated DeltaNet and gated attention, Gemma 3's sliding windows); the count alone
 * when every layer is full attention. */
static void print_layers(FILE *f, const json_t *config) {
    const json_t *kinds = json_object_get(config, "layers");
    size_t n = json_array_size(kinds), n_linear = 0, n_sliding = 0, i;
    const json_t *k;
    json_array_foreach(kinds, i, k) {
        n_linear += !strcmp(json_string_value(k), "linear");
        n_sliding += !strcmp(json_string_value(k), "sliding");
    }
    fprintf(f, "%-15s %zu", "layers", n);
    if (!n_linear && !n_sliding) {
        fprintf(f, " (full attention)\n");
        return;
    }
    fprintf(f, " (");
    if (n_linear) fprintf(f, "%zu linear attention, ", n_linear);
    if (n_sliding) fprintf(f, "%zu sliding window, ", n_sliding);
    fprintf(f, "%zu full attention):", n - n_linear - n_sliding);
    json_array_foreach(kinds, i, k) {
        const char *s = json_string_value(k);
        fprintf(f, " %c", !strcmp(s, "linear") ? 'L' : !strcmp(s, "sliding") ? 'S' : 'A');
    }
    fprintf(f, "\n");
}

static void print_config(FILE *f, const json_t *config) {
    fprintf(f, "config:\n");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)config, k, v) {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(7));
        fprintf(f, "  %-18s %s\n", k, s ? s : "?");
        free(s);
    }
}

void rlx_inspect_print_text(const json_t *r, FILE *f) {
    const char *format = json_string_value(json_object_get(r, "format"));
    fprintf(f, "%-15s %s\n", "path", json_string_value(json_object_get(r, "path")));
    if (!strcmp(format, "gguf"))
        fprintf(f, "%-15s GGUF v%" JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT " bytes\n", "format",
                json_integer_value(json_object_get(r, "gguf_version")), json_integer_value(json_object_get(r, "file_bytes")));
    else
        fprintf(f, "%-15s Hugging Face directory (config.json + safetensors)\n", "format");
    const json_t *arch = json_object_get(r, "architecture");
    fprintf(f, "%-15s %s\n", "architecture", json_is_string(arch) ? json_string_value(arch) : "-");
    const json_t *family = json_object_get(r, "family");
    const json_t *note = json_object_get(r, "family_note");
    fprintf(f, "%-15s %s\n", "family", family ? json_string_value(family) : note ? json_string_value(note) : "-");
    print_count(f, "parameters", json_object_get(r, "n_params"));
    const json_t *ctx = json_object_get(r, "context_length");
    if (json_is_integer(ctx)) fprintf(f, "%-15s %" JSON_INTEGER_FORMAT "\n", "context length", json_integer_value(ctx));
    else fprintf(f, "%-15s -\n", "context length");
    const json_t *tok = json_object_get(r, "tokenizer");
    if (json_is_object(tok))
        fprintf(f, "%-15s %s (%s%s%s), %" JSON_INTEGER_FORMAT " tokens\n", "tokenizer",
                json_string_value(json_object_get(tok, "kind")), json_string_value(json_object_get(tok, "model")),
                json_is_string(json_object_get(tok, "pre")) ? ", pre " : "",
                json_is_string(json_object_get(tok, "pre")) ? json_string_value(json_object_get(tok, "pre")) : "",
                json_integer_value(json_object_get(tok, "vocab_size")));
    else
        fprintf(f, "%-15s none\n", "tokenizer");
    fprintf(f, "%-15s %s\n", "chat template", json_is_true(json_object_get(r, "chat_template")) ? "yes" : "no");
    const json_t *config = json_object_get(r, "config");
    if (json_is_array(json_object_get(config, "layers"))) print_layers(f, config);
    if (config) print_config(f, config);
    print_tensors(f, !strcmp(format, "gguf") ? "tensors (shape as GGUF ne: contiguous dim first)"
                                             : "tensors (safetensors names; shape outermost first)",
                  json_object_get(r, "tensors"));
    const json_t *mapped = json_object_get(r, "rlx_tensors");
    if (mapped) print_tensors(f, "as rlx loads them (GGUF names and conventions; shape as ne)", mapped);
}
