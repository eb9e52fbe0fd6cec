/* HF-directory mutations for the corrupt-file corpus: config.json, the safetensors header (and
 * its data), a sharded index made from the single file, and the tokenizer files.
 *
 * Expectations, by the formats (JSON: RFC 8259; safetensors: its README's "Format") and the
 * fixture's numbers:
 *  - JSON that does not parse, or a config whose root is not an object, is malformed;
 *  - a size field (hidden_size, heads, layers, ...) that is absent, of the wrong JSON type or of a
 *    value other than the fixture's cannot describe the fixture's tensors: transformers' default
 *    for an absent one (e.g. hidden_size 4096) disagrees with them too;
 *  - a safetensors header length, dtype, shape or data_offsets that does not describe bytes inside
 *    the file, of the size the shape needs, without overlap, is malformed; so is a repeated name;
 *  - a renamed, removed or unmapped tensor leaves the family without a weight it needs.
 * Edits to fields with defaults (head_dim, eps, RoPE parameters, context length) may leave a
 * working model and are EXPECT_ANY. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corrupt.h"
#include "test_util.h"

typedef struct hf_src {
    corrupt_runner *runner;
    corrupt_rng rng;
    uint8_t *config;  /* owned: config.json */
    size_t config_len;
    json_t *config_json; /* owned */
    uint8_t *st;      /* owned: model.safetensors */
    size_t st_len;
    uint64_t hlen;    /* its header length */
    json_t *header;   /* owned: its parsed header */
    uint64_t req_end; /* where its last tensor's data ends */
} hf_src;

static const corrupt_expect F = EXPECT_FAIL, A = EXPECT_ANY, OK = EXPECT_OK;

static uint8_t *read_file(const char *dir, const char *name, size_t *len) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return t_read_file(path, len);
}

static void emit(hf_src *h, corrupt_case c, const char *name, const void *data, size_t size) {
    corrupt_override ov = {name, data, size};
    corrupt_check_dir(h->runner, &c, &ov, 1);
}

static void emit_json(hf_src *h, corrupt_case c, const char *name, json_t *root) {
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    if (!text) {
        t_fail(__FILE__, __LINE__, "cannot serialise the mutated %s (%s)", name, c.what);
        return;
    }
    emit(h, c, name, text, strlen(text));
    free(text);
}

/* Cut points strictly before the last '}' of a JSON text: none of them leaves a complete document. */
static void json_truncations(hf_src *h, const char *kind, const char *name, const uint8_t *text, size_t len,
                             int count, corrupt_expect ins, corrupt_expect run, corrupt_expect gen) {
    size_t last = len;
    while (last > 0 && text[last - 1] != '}') last--;
    if (last < 2) return;
    for (int i = 0; i < count; i++) {
        size_t at = i == 0 ? 0 : i == 1 ? last - 1 : (size_t)corrupt_below(&h->rng, last - 1);
        emit(h, corrupt_case_make(kind, ins, run, gen, "%s cut at %zu of %zu", name, at, len), name, text, at);
    }
}

/* ---- config.json ---- */

static void config_syntax(hf_src *h) {
    static const struct {
        const char *text;
        size_t len;
        bool inspect_may_pass;
    } texts[] = {
#define TEXT(s, may) {s, sizeof(s) - 1, may}
        TEXT("", false),
        TEXT("{", false),
        TEXT("[]", false),
        TEXT("null", false),
        TEXT("\"qwen3\"", false),
        TEXT("{\"model_type\": }", false),
        TEXT("{\"model_type\": \"qwen3\",}", false),
        TEXT("\xff\xfe{\0}", false),
        TEXT("{\"hidden_size\": 1e999999}", false),
        TEXT("{}", true), /* valid JSON without model_type: inspect reports it, nothing runs it */
#undef TEXT
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        emit(h,
             corrupt_case_make("config-syntax", texts[i].inspect_may_pass ? A : F, F, F, "config.json = '%.*s'",
                               (int)texts[i].len, texts[i].text),
             "config.json", texts[i].text, texts[i].len);
    /* the fixture followed by junk; a NUL between two members; nesting deeper than any parser's limit */
    size_t n = h->config_len;
    char *buf = malloc(n + 200001);
    if (!buf) return;
    memcpy(buf, h->config, n);
    memcpy(buf + n, " {\"x\": 1}", 9);
    emit(h, corrupt_case_make("config-syntax", F, F, F, "config.json followed by a second document"), "config.json",
         buf, n + 9);
    char *comma = memchr(buf, ',', n);
    if (comma) {
        memmove(comma + 2, comma + 1, n - (size_t)(comma + 1 - buf));
        comma[1] = '\0';
        emit(h, corrupt_case_make("config-syntax", F, F, F, "config.json with a NUL byte after its first comma"),
             "config.json", buf, n + 1);
    }
    for (size_t i = 0; i < 100000; i++) buf[i] = '[', buf[200000 - 1 - i] = ']';
    emit(h, corrupt_case_make("config-syntax", F, F, F, "config.json = 100000 nested arrays"), "config.json", buf,
         200000);
    free(buf);
}

static const char *const SIZE_KEYS[] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "num_key_value_heads", "intermediate_size", "vocab_size", "head_dim"};

/* The value kinds written into size fields. */
typedef enum { V_ZERO, V_NEG, V_2_31, V_WRAP, V_HUGE_REAL, V_FRACTION, V_STRING, V_ARRAY, V_TRUE, V_NULL, V_COUNT } vkind;

static json_t *make_value(vkind k, json_int_t orig, char *desc, size_t n) {
    switch (k) {
    case V_ZERO: snprintf(desc, n, "0"); return json_integer(0);
    case V_NEG: snprintf(desc, n, "-1"); return json_integer(-1);
    case V_2_31: snprintf(desc, n, "2^31"); return json_integer((json_int_t)1 << 31);
    case V_WRAP: /* equal to the fixture's value modulo 2^32: only a range check sees the difference */
        snprintf(desc, n, "2^32 + %lld", (long long)orig);
        return json_integer(((json_int_t)1 << 32) + orig);
    case V_HUGE_REAL: snprintf(desc, n, "1e300"); return json_real(1e300);
    case V_FRACTION: snprintf(desc, n, "%lld.5", (long long)orig); return json_real((double)orig + 0.5);
    case V_STRING: snprintf(desc, n, "\"%lld\"", (long long)orig); return json_sprintf("%lld", (long long)orig);
    case V_ARRAY: snprintf(desc, n, "[%lld]", (long long)orig); return json_pack("[I]", (json_int_t)orig);
    case V_TRUE: snprintf(desc, n, "true"); return json_true();
    case V_NULL: snprintf(desc, n, "null"); return json_null();
    case V_COUNT: break;
    }
    return NULL;
}

/* What an absent or null size field does: transformers' defaults (4096 hidden, 32 heads, 32 layers,
 * 11008/22016 FFN) disagree with a tiny fixture; KV heads default to the head count (4 here, against
 * 2 or 1); head_dim defaults to hidden/heads (= the fixture's 64) and vocab_size can be read off the
 * embedding, so those two may pass. */
static corrupt_expect absent_expect(const char *key) {
    return !strcmp(key, "head_dim") || !strcmp(key, "vocab_size") ? A : F;
}

/* Layer counts out of range are reported by inspect as an unsupported model, not a malformed one. */
static corrupt_expect inspect_expect(const char *key, corrupt_expect e) {
    return !strcmp(key, "num_hidden_layers") ? A : e;
}

static void config_sizes(hf_src *h) {
    for (size_t i = 0; i < sizeof SIZE_KEYS / sizeof SIZE_KEYS[0]; i++) {
        const char *key = SIZE_KEYS[i];
        json_t *orig = json_object_get(h->config_json, key);
        if (!json_is_integer(orig)) continue;
        json_int_t v = json_integer_value(orig);
        for (vkind k = 0; k < V_COUNT; k++) {
            char desc[64];
            json_t *root = json_deep_copy(h->config_json);
            json_object_set_new(root, key, make_value(k, v, desc, sizeof desc));
            corrupt_expect e = k == V_NULL ? absent_expect(key) : F;
            emit_json(h, corrupt_case_make("config-size", inspect_expect(key, e), e, e, "%s = %s", key, desc),
                      "config.json", root);
            json_decref(root);
        }
        json_t *root = json_deep_copy(h->config_json);
        json_object_del(root, key);
        corrupt_expect e = absent_expect(key);
        emit_json(h, corrupt_case_make("config-missing", inspect_expect(key, e), e, e, "%s removed", key),
                  "config.json", root);
        json_decref(root);
    }
}

static void config_set(hf_src *h, const char *kind, const char *key, json_t *value, corrupt_expect ins,
                       corrupt_expect run, corrupt_expect gen) {
    json_t *root = json_deep_copy(h->config_json);
    char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    if (value) json_object_set(root, key, value);
    else json_object_del(root, key);
    emit_json(h, corrupt_case_make(kind, ins, run, gen, "%s = %.80s", key, value ? text : "(removed)"), "config.json",
              root);
    free(text);
    json_decref(value);
    json_decref(root);
}

static void config_other(hf_src *h) {
    config_set(h, "config-type", "model_type", json_string("not_a_model"), A, F, F);
    config_set(h, "config-type", "model_type", json_integer(5), A, F, F);
    config_set(h, "config-type", "model_type", NULL, A, F, F);
    /* untied embeddings: the family then needs an output weight the checkpoint lacks */
    config_set(h, "config-field", "tie_word_embeddings", json_false(), F, F, F);
    config_set(h, "config-field", "tie_word_embeddings", json_string("yes"), A, A, A);
    config_set(h, "config-field", "rms_norm_eps", json_string("x"), F, F, F);
    config_set(h, "config-field", "rms_norm_eps", json_real(-1.0), F, F, F);
    config_set(h, "config-field", "rms_norm_eps", json_null(), A, A, A);
    config_set(h, "config-field", "rope_parameters", json_integer(5), A, A, A);
    config_set(h, "config-field", "rope_parameters", json_pack("{s:f}", "rope_theta", -1.0), A, A, A);
    config_set(h, "config-field", "max_position_embeddings", json_integer(-1), A, A, A);
    config_set(h, "config-field", "max_position_embeddings", json_integer((json_int_t)1 << 40), A, A, A);
    config_set(h, "config-field", "max_position_embeddings", json_string("1024"), A, A, A);
    config_set(h, "config-field", "layer_types", json_string("full_attention"), A, A, A);
    config_set(h, "config-field", "layer_types", json_pack("[s]", "full_attention"), A, A, A);
    config_set(h, "config-field", "sliding_window", json_integer(-1), A, A, A);
    config_set(h, "config-field", "sliding_window", json_integer((json_int_t)1 << 40), A, A, A);
    config_set(h, "config-field", "bos_token_id", json_integer((json_int_t)1 << 40), A, A, A);
    config_set(h, "config-field", "eos_token_id", json_string("x"), A, A, A);
}

/* ---- model.safetensors ---- */

static bool st_parse(hf_src *h) {
    if (h->st_len < 8) return false;
    h->hlen = corrupt_get_u64(h->st);
    if (h->hlen > h->st_len - 8) return false;
    json_error_t err;
    h->header = json_loadb((const char *)h->st + 8, (size_t)h->hlen, 0, &err);
    if (!json_is_object(h->header)) return false;
    const char *name;
    json_t *v;
    h->req_end = 8 + h->hlen;
    json_object_foreach(h->header, name, v) {
        json_t *end = json_array_get(json_object_get(v, "data_offsets"), 1);
        if (strcmp(name, "__metadata__") && json_is_integer(end) &&
            8 + h->hlen + (uint64_t)json_integer_value(end) > h->req_end)
            h->req_end = 8 + h->hlen + (uint64_t)json_integer_value(end);
    }
    return h->req_end <= h->st_len;
}

/* A safetensors file from a header text and the fixture's data section; the header is padded with
 * spaces to a multiple of 8, plus `extra` more (which leaves the data unaligned). */
static void emit_st_padded(hf_src *h, corrupt_case c, const char *json, size_t json_len, size_t extra) {
    size_t padded = (json_len + 7) / 8 * 8 + extra, data_len = h->st_len - 8 - (size_t)h->hlen;
    uint8_t *buf = malloc(8 + padded + data_len);
    if (!buf) return;
    corrupt_put_u64(buf, padded);
    memcpy(buf + 8, json, json_len);
    memset(buf + 8 + json_len, ' ', padded - json_len);
    memcpy(buf + 8 + padded, h->st + 8 + h->hlen, data_len);
    emit(h, c, "model.safetensors", buf, 8 + padded + data_len);
    free(buf);
}

static void emit_st_text(hf_src *h, corrupt_case c, const char *json, size_t json_len) {
    emit_st_padded(h, c, json, json_len, 0);
}

static void emit_st(hf_src *h, corrupt_case c, json_t *header) {
    char *text = json_dumps(header, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    if (text) emit_st_text(h, c, text, strlen(text));
    free(text);
}

static void emit_st_patched(hf_src *h, corrupt_case c, uint64_t off, const uint8_t *bytes, size_t n) {
    uint8_t *buf = malloc(h->st_len);
    if (!buf) return;
    memcpy(buf, h->st, h->st_len);
    memcpy(buf + off, bytes, n);
    emit(h, c, "model.safetensors", buf, h->st_len);
    free(buf);
}

static void st_header_length(hf_src *h) {
    uint64_t vals[] = {0, 1, 7, h->st_len, h->st_len - 7, (uint64_t)1 << 40, UINT64_MAX, 100000001, h->hlen + 1};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t b[8];
        corrupt_put_u64(b, vals[i]);
        emit_st_patched(h, corrupt_case_make("st-header-len", F, F, F, "header length = %" PRIu64, vals[i]), 0, b, 8);
    }
    /* one byte short: still valid JSON only when the header was padded with a space */
    uint8_t last = h->st[8 + h->hlen - 1];
    corrupt_expect e = last == ' ' || last == '\t' || last == '\n' || last == '\r' ? A : F;
    uint8_t b[8];
    corrupt_put_u64(b, h->hlen - 1);
    emit_st_patched(h, corrupt_case_make("st-header-len", e, e, e, "header length = %" PRIu64 " (one short)", h->hlen - 1),
                    0, b, 8);
}

static void st_truncations(hf_src *h) {
    uint64_t cuts[16] = {0, 4, 8, 8 + h->hlen / 2, 8 + h->hlen, h->req_end - 1};
    size_t n = 6;
    while (n < 16) cuts[n++] = corrupt_below(&h->rng, h->req_end);
    for (size_t i = 0; i < n; i++)
        emit(h,
             corrupt_case_make("st-truncate", F, F, F, "model.safetensors cut at %" PRIu64 " of %zu (data needs %" PRIu64 ")",
                               cuts[i], h->st_len, h->req_end),
             "model.safetensors", h->st, cuts[i]);
}

/* Three tensor names: the first, a middle and the last entry. */
static void st_pick(const hf_src *h, const char *names[3]) {
    size_t n = 0, count = json_object_size(h->header) - (json_object_get(h->header, "__metadata__") ? 1 : 0);
    const char *name;
    json_t *v;
    json_object_foreach(h->header, name, v) {
        if (!strcmp(name, "__metadata__")) continue;
        if (n == 0) names[0] = name;
        if (n == count / 2) names[1] = name;
        names[2] = name;
        n++;
    }
}

static void st_edit(hf_src *h, const char *kind, const char *tensor, const char *field, json_t *value,
                    corrupt_expect e) {
    json_t *header = json_deep_copy(h->header);
    json_t *entry = json_object_get(header, tensor);
    char *text = value ? json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (!field) json_object_set(header, tensor, value);
    else if (value) json_object_set(entry, field, value);
    else json_object_del(entry, field);
    emit_st(h, corrupt_case_make(kind, e, e, e, "'%s'%s%s = %.60s", tensor, field ? "." : "", field ? field : "",
                                 text ? text : "(removed)"),
            header);
    free(text);
    json_decref(value);
    json_decref(header);
}

/* Would [begin, end) of `tensor` leave the data section or overlap another tensor? */
static bool st_misplaced(const hf_src *h, const char *tensor, int64_t begin, int64_t end) {
    int64_t data_len = (int64_t)(h->st_len - 8 - h->hlen);
    if (begin < 0 || end > data_len || begin > end) return true;
    const char *name;
    json_t *v;
    json_object_foreach(h->header, name, v) {
        if (!strcmp(name, "__metadata__") || !strcmp(name, tensor)) continue;
        json_t *offs = json_object_get(v, "data_offsets");
        int64_t b = json_integer_value(json_array_get(offs, 0)), e = json_integer_value(json_array_get(offs, 1));
        if (begin < e && b < end && begin < end) return true;
    }
    return false;
}

static void st_tensor_edits(hf_src *h, const char *t) {
    json_t *entry = json_object_get(h->header, t);
    json_t *shape = json_object_get(entry, "shape"), *offs = json_object_get(entry, "data_offsets");
    json_int_t b = json_integer_value(json_array_get(offs, 0)), e = json_integer_value(json_array_get(offs, 1));
    st_edit(h, "st-dtype", t, "dtype", json_string("F8_E4M3"), F);
    st_edit(h, "st-dtype", t, "dtype", json_string("I64"), F);
    st_edit(h, "st-dtype", t, "dtype", json_string(""), F);
    st_edit(h, "st-dtype", t, "dtype", json_integer(5), F);
    st_edit(h, "st-shape", t, "shape", json_pack("[i,i]", -1, 256), F);
    st_edit(h, "st-shape", t, "shape", json_pack("[I,I]", (json_int_t)1 << 40, (json_int_t)1 << 40), F);
    st_edit(h, "st-shape", t, "shape", json_pack("[I,I]", (json_int_t)1 << 32, (json_int_t)1 << 32), F);
    st_edit(h, "st-shape", t, "shape", json_pack("[f]", 1.5), F);
    st_edit(h, "st-shape", t, "shape", json_string("256"), F);
    st_edit(h, "st-shape", t, "shape", json_array(), F);
    if (json_array_size(shape) == 2 &&
        json_integer_value(json_array_get(shape, 0)) != json_integer_value(json_array_get(shape, 1)))
        st_edit(h, "st-shape", t, "shape",
                json_pack("[O,O]", json_array_get(shape, 1), json_array_get(shape, 0)), F); /* transposed */
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[I,I]", e, b), F);
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[I,I]", b, e + 2), F);
    st_edit(h, "st-offsets", t, "data_offsets",
            json_pack("[I,I]", b + (json_int_t)h->st_len, e + (json_int_t)h->st_len), F);
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[I,I]", (json_int_t)0, (json_int_t)INT64_MAX), F);
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[I,I]", (json_int_t)-2, e - b - 2), F);
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[s,I]", "0", e), F);
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[I]", b), F);
    st_edit(h, "st-offsets", t, "data_offsets", json_pack("[I,I]", b + 2, e + 2),
            st_misplaced(h, t, b + 2, e + 2) ? F : A);
    st_edit(h, "st-field", t, "dtype", NULL, F);
    st_edit(h, "st-field", t, "shape", NULL, F);
    st_edit(h, "st-field", t, "data_offsets", NULL, F);
    st_edit(h, "st-field", t, NULL, json_integer(5), F);
}

/* Tensor a's data placed on tensor b's (same byte size, so only the overlap check sees it). */
static void st_overlap(hf_src *h) {
    const char *na, *nb;
    json_t *va, *vb;
    json_object_foreach(h->header, na, va) {
        json_t *oa = json_object_get(va, "data_offsets");
        if (!oa) continue;
        json_int_t sa = json_integer_value(json_array_get(oa, 1)) - json_integer_value(json_array_get(oa, 0));
        json_object_foreach(h->header, nb, vb) {
            json_t *ob = json_object_get(vb, "data_offsets");
            if (!ob || !strcmp(na, nb) ||
                json_integer_value(json_array_get(ob, 1)) - json_integer_value(json_array_get(ob, 0)) != sa || !sa)
                continue;
            st_edit(h, "st-overlap", na, "data_offsets", json_deep_copy(ob), F);
            return;
        }
    }
}

static void st_structure(hf_src *h) {
    const char *names[3] = {NULL, NULL, NULL};
    st_pick(h, names);
    emit_st(h, corrupt_case_make("baseline", OK, OK, OK, "safetensors header re-serialised"), h->header);
    /* The format does not align the data buffer (only its writer pads the header to 8): a valid file
     * whose tensors start at odd addresses, which no reader may load through a misaligned pointer. */
    char *compact = json_dumps(h->header, JSON_COMPACT | JSON_PRESERVE_ORDER);
    for (size_t extra = 1; compact && extra < 8; extra += 5)
        emit_st_padded(h, corrupt_case_make("st-unaligned", OK, OK, OK, "header padded to 8k+%zu bytes", extra),
                       compact, strlen(compact), extra);
    free(compact);
    for (int i = 0; i < 3; i++)
        if (names[i] && (i == 0 || names[i] != names[i - 1])) st_tensor_edits(h, names[i]);
    st_overlap(h);
    /* a renamed or removed tensor: the family misses a weight (a removed one's bytes are a gap) */
    json_t *header = json_deep_copy(h->header);
    json_t *entry = json_deep_copy(json_object_get(header, names[1]));
    json_object_del(header, names[1]);
    json_object_set_new(header, "model.layers.0.bogus.weight", entry);
    /* an HF name with no GGUF mapping is reported as an unsupported model by inspect */
    emit_st(h, corrupt_case_make("st-name", A, F, F, "'%s' renamed to 'model.layers.0.bogus.weight'", names[1]), header);
    json_object_del(header, "model.layers.0.bogus.weight");
    emit_st(h, corrupt_case_make("st-name", F, F, F, "'%s' removed", names[1]), header);
    json_decref(header);
    emit_st_text(h, corrupt_case_make("st-root", F, F, F, "header = []"), "[]", 2);
    emit_st_text(h, corrupt_case_make("st-root", A, F, F, "header = {} (no tensors)"), "{}", 2);
    emit_st_text(h, corrupt_case_make("st-root", F, F, F, "header = {"), "{", 1);
    /* the first tensor's entry written twice (a repeated name; JSON parsers keep one silently) */
    char *full = json_dumps(h->header, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_t *one = json_pack("{sO}", names[0], json_object_get(h->header, names[0]));
    char *dup = json_dumps(one, JSON_COMPACT);
    if (full && dup) {
        size_t lf = strlen(full), ld = strlen(dup);
        char *text = malloc(lf + ld + 2);
        memcpy(text, dup, ld - 1); /* "{"name":{...}" without its closing brace */
        text[ld - 1] = ',';
        memcpy(text + ld, full + 1, lf - 1);
        emit_st_text(h, corrupt_case_make("st-duplicate", F, F, F, "'%s' listed twice", names[0]), text, ld + lf - 1);
        free(text);
    }
    free(full);
    free(dup);
    json_decref(one);
    json_t *meta = json_deep_copy(h->header);
    json_object_set_new(meta, "__metadata__", json_integer(5));
    emit_st(h, corrupt_case_make("st-metadata", A, A, A, "__metadata__ = 5"), meta);
    json_object_set_new(meta, "__metadata__", json_pack("{s:i}", "format", 5));
    emit_st(h, corrupt_case_make("st-metadata", A, A, A, "__metadata__ = {\"format\": 5}"), meta);
    json_decref(meta);
}

static void st_flips(hf_src *h) {
    for (int i = 0; i < 11; i++) {
        bool in_header = i < 8;
        uint64_t pos = in_header ? 8 + corrupt_below(&h->rng, h->hlen)
                                 : 8 + h->hlen + corrupt_below(&h->rng, h->st_len - 8 - h->hlen);
        uint8_t x = (uint8_t)(1 + corrupt_below(&h->rng, 255)), b = h->st[pos] ^ x;
        emit_st_patched(h,
                        corrupt_case_make(in_header ? "st-flip-header" : "st-flip-data", A, A, A,
                                          "model.safetensors byte %" PRIu64 " ^= 0x%02x", pos, x),
                        pos, &b, 1);
    }
}

/* ---- a sharded index over the single file ---- */

static json_t *index_for(const hf_src *h) {
    json_t *map = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(h->header, name, v) {
        if (strcmp(name, "__metadata__")) json_object_set_new(map, name, json_string("model.safetensors"));
    }
    return json_pack("{s:{s:I},s:o}", "metadata", "total_size", (json_int_t)(h->st_len - 8 - h->hlen), "weight_map",
                     map);
}

static void index_set(hf_src *h, const char *tensor, json_t *value, corrupt_expect ins, corrupt_expect run) {
    json_t *index = index_for(h);
    json_t *map = json_object_get(index, "weight_map");
    char *text = value ? json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (value) json_object_set(map, tensor, value);
    else json_object_del(map, tensor);
    emit_json(h, corrupt_case_make("index", ins, run, run, "weight_map['%s'] = %.80s", tensor, text ? text : "(removed)"),
              "model.safetensors.index.json", index);
    free(text);
    json_decref(value);
    json_decref(index);
}

static void index_cases(hf_src *h) {
    const char *names[3] = {NULL, NULL, NULL};
    st_pick(h, names);
    json_t *index = index_for(h);
    emit_json(h, corrupt_case_make("baseline", OK, OK, OK, "a sharded index over model.safetensors"),
              "model.safetensors.index.json", index);
    index_set(h, names[0], json_string("model-00002-of-00002.safetensors"), F, F);
    index_set(h, names[0], json_string("config.json"), F, F);
    index_set(h, names[0], json_string("../../../../../../../../../etc/passwd"), F, F);
    index_set(h, names[0], json_integer(5), F, F);
    index_set(h, "model.layers.99.bogus.weight", json_string("model.safetensors"), F, F);
    index_set(h, names[1], NULL, F, F); /* unlisted: ignored as transformers does, so missing */
    static const char *const maps[] = {"[]", "\"model.safetensors\"", "5"};
    for (size_t i = 0; i < 3; i++) {
        json_t *copy = json_deep_copy(index);
        json_object_set_new(copy, "weight_map", json_loads(maps[i], JSON_DECODE_ANY, NULL));
        emit_json(h, corrupt_case_make("index", F, F, F, "weight_map = %s", maps[i]), "model.safetensors.index.json",
                  copy);
        json_decref(copy);
    }
    json_t *copy = json_deep_copy(index);
    json_object_set_new(copy, "weight_map", json_object());
    emit_json(h, corrupt_case_make("index", A, F, F, "weight_map = {} (no tensors)"), "model.safetensors.index.json",
              copy);
    json_object_del(copy, "weight_map");
    emit_json(h, corrupt_case_make("index", F, F, F, "weight_map removed"), "model.safetensors.index.json", copy);
    json_decref(copy);
    char *text = json_dumps(index, JSON_INDENT(2));
    if (text) json_truncations(h, "index-truncate", "model.safetensors.index.json", (const uint8_t *)text, strlen(text),
                               4, F, F, F);
    free(text);
    json_decref(index);
}

/* ---- tokenizer files ---- */

static void tokenizer_cases(hf_src *h, const char *dir) {
    size_t len = 0;
    uint8_t *tj = read_file(dir, "tokenizer.json", &len);
    if (tj) { /* `run` needs the tokenizer; inspect reports it; `generate` takes ids */
        json_truncations(h, "tokenizer-json", "tokenizer.json", tj, len, 4, A, F, A);
        emit(h, corrupt_case_make("tokenizer-json", A, F, A, "tokenizer.json = []"), "tokenizer.json", "[]", 2);
    }
    free(tj);
    uint8_t *tm = read_file(dir, "tokenizer.model", &len);
    if (tm && len > 16) { /* protobuf: a cut at a record boundary leaves fewer pieces, which may still load */
        emit(h, corrupt_case_make("tokenizer-model", A, F, A, "tokenizer.model empty"), "tokenizer.model", tm, 0);
        for (int i = 0; i < 4; i++) {
            size_t at = 1 + (size_t)corrupt_below(&h->rng, len - 1);
            emit(h, corrupt_case_make("tokenizer-model", A, A, A, "tokenizer.model cut at %zu of %zu", at, len),
                 "tokenizer.model", tm, at);
        }
        for (int i = 0; i < 4; i++) {
            size_t pos = (size_t)corrupt_below(&h->rng, len);
            uint8_t x = (uint8_t)(1 + corrupt_below(&h->rng, 255));
            tm[pos] ^= x;
            emit(h, corrupt_case_make("tokenizer-model", A, A, A, "tokenizer.model byte %zu ^= 0x%02x", pos, x),
                 "tokenizer.model", tm, len);
            tm[pos] ^= x;
        }
    }
    free(tm);
}

bool corrupt_hf_cases(corrupt_runner *r, const char *label, const char *dir) {
    hf_src h = {.runner = r, .rng = corrupt_rng_for(label)};
    json_error_t err;
    h.config = read_file(dir, "config.json", &h.config_len);
    h.st = read_file(dir, "model.safetensors", &h.st_len);
    h.config_json = h.config ? json_loadb((const char *)h.config, h.config_len, 0, &err) : NULL;
    bool ok = json_is_object(h.config_json) && h.st && st_parse(&h);
    if (!ok) {
        t_fail(__FILE__, __LINE__, "%s: cannot read config.json and model.safetensors of %s", label, dir);
    } else {
        emit(&h, corrupt_case_make("baseline", OK, OK, OK, "the fixture unchanged"), "config.json", h.config,
             h.config_len);
        json_truncations(&h, "config-truncate", "config.json", h.config, h.config_len, 8, F, F, F);
        config_syntax(&h);
        config_sizes(&h);
        config_other(&h);
        st_header_length(&h);
        st_truncations(&h);
        st_structure(&h);
        st_flips(&h);
        index_cases(&h);
        tokenizer_cases(&h, dir);
    }
    json_decref(h.config_json);
    json_decref(h.header);
    free(h.config);
    free(h.st);
    return ok;
}
