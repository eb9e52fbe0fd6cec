/* safetensors reader. Format: https://github.com/huggingface/safetensors (README, "Format"); the
 * sharded index layout is transformers' `model.safetensors.index.json` ({"weight_map": {tensor:
 * file}}). See safetensors.h for what is checked. */
#include "loader/format/safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader/core/dtype.h"
#include "loader/core/mapped_file.h"
#include "loader/core/regular_file.h"

typedef struct st_shard {
    char *name;             /* owned: file name as given (for messages and shard_name) */
    const uint8_t *base;    /* borrowed: the mapping or caller memory */
    uint64_t size;
    rlx_mapped_file *map;   /* owned; NULL over caller memory */
} st_shard;

typedef struct st_shards {
    st_shard *v; /* owned, n entries */
    size_t n;
} st_shards;

/* A growable tensor list; entries' names are owned by the list until moved out. */
typedef struct st_list {
    rlx_st_tensor *v;
    size_t n, cap;
} st_list;

static void list_free(st_list *l) {
    for (size_t i = 0; i < l->n; i++) free((char *)l->v[i].name);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static rlx_status list_push(st_list *l, const rlx_st_tensor *t) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        rlx_st_tensor *v = realloc(l->v, cap * sizeof *v);
        if (!v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "safetensors: cannot grow the tensor list to %zu entries", cap);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *t;
    return NULL;
}

/* The JSON type with its article, for "is a string, expected an object" messages. */
static const char *json_type_str(json_type t) {
    switch (t) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown JSON value";
}

static const char *json_type_name(const json_t *j) { return json_type_str(json_typeof(j)); }

static uint64_t read_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Safetensors dtype names (the Rust crate's Dtype enum). Only floats rlx computes with are
 * accepted; everything else is reported by name. */
static bool dtype_from_st(const char *s, uint32_t *type) {
    if (!strcmp(s, "F32")) *type = RLX_DTYPE_F32;
    else if (!strcmp(s, "F16")) *type = RLX_DTYPE_F16;
    else if (!strcmp(s, "BF16")) *type = RLX_DTYPE_BF16;
    else return false;
    return true;
}

static void format_shape(const rlx_st_tensor *t, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* A field of a tensor entry: present, and of the JSON type `want`. */
static rlx_status get_field(const char *what, const char *tname, json_t *entry, const char *field, json_type want,
                            json_t **out) {
    json_t *v = json_object_get(entry, field);
    if (!v) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': missing field '%s'", what, tname, field);
    if (json_typeof(v) != want)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': field '%s' is %s, expected %s", what, tname, field,
                          json_type_name(v), json_type_str(want));
    *out = v;
    return NULL;
}

static rlx_status parse_shape(const char *what, const char *tname, json_t *shape, rlx_st_tensor *t) {
    size_t n = json_array_size(shape);
    if (n > RLX_ST_MAX_DIMS)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: tensor '%s': %zu dimensions, at most %d are supported", what, tname,
                          n, RLX_ST_MAX_DIMS);
    t->n_dims = (uint32_t)n;
    t->n_elements = 1;
    for (size_t d = 0; d < RLX_ST_MAX_DIMS; d++) t->shape[d] = 1;
    for (size_t d = 0; d < n; d++) {
        json_t *dim = json_array_get(shape, d);
        if (!json_is_integer(dim))
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': shape[%zu] is %s, expected an integer", what, tname,
                              d, json_type_name(dim));
        json_int_t v = json_integer_value(dim);
        if (v < 0)
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': shape[%zu] is negative (%" JSON_INTEGER_FORMAT ")",
                              what, tname, d, v);
        t->shape[d] = (uint64_t)v;
        if (__builtin_mul_overflow(t->n_elements, t->shape[d], &t->n_elements))
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': the element count of its shape overflows 64 bits",
                              what, tname);
    }
    return NULL;
}

static rlx_status parse_offsets(const char *what, const char *tname, json_t *offs, uint64_t *begin, uint64_t *end) {
    if (json_array_size(offs) != 2)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': data_offsets has %zu entries, expected 2", what, tname,
                          json_array_size(offs));
    uint64_t v[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *o = json_array_get(offs, i);
        if (!json_is_integer(o))
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': data_offsets[%zu] is %s, expected an integer", what,
                              tname, i, json_type_name(o));
        if (json_integer_value(o) < 0)
            return rlx_errorf(RLX_ERR_BAD_FILE,
                              "%s: tensor '%s': data_offsets[%zu] is negative (%" JSON_INTEGER_FORMAT ")", what, tname,
                              i, json_integer_value(o));
        v[i] = (uint64_t)json_integer_value(o);
    }
    if (v[1] < v[0])
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") end before they begin",
                          what, tname, v[0], v[1]);
    *begin = v[0];
    *end = v[1];
    return NULL;
}

/* Parses one header entry into *t (name not yet set). `data`/`data_size` is the data buffer. */
static rlx_status parse_entry(const char *what, const char *tname, json_t *entry, const uint8_t *data,
                              uint64_t data_size, rlx_st_tensor *t) {
    if (!json_is_object(entry))
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: tensor '%s': entry is %s, expected an object", what, tname,
                          json_type_name(entry));
    json_t *dtype, *shape, *offs;
    RLX_TRY(get_field(what, tname, entry, "dtype", JSON_STRING, &dtype));
    RLX_TRY(get_field(what, tname, entry, "shape", JSON_ARRAY, &shape));
    RLX_TRY(get_field(what, tname, entry, "data_offsets", JSON_ARRAY, &offs));
    if (!dtype_from_st(json_string_value(dtype), &t->type))
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: unsupported dtype %s for tensor '%s' (rlx reads F32, F16, BF16)",
                          what, json_string_value(dtype), tname);
    RLX_TRY(parse_shape(what, tname, shape, t));
    uint64_t begin = 0, end = 0;
    RLX_TRY(parse_offsets(what, tname, offs, &begin, &end));
    if (end > data_size)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: tensor '%s': data [%" PRIu64 ", %" PRIu64 ") extends past the end of the data buffer (%" PRIu64
                          " bytes)",
                          what, tname, begin, end, data_size);
    char label[320];
    snprintf(label, sizeof label, "%s: tensor '%s'", what, tname);
    RLX_TRY(rlx_dtype_bytes(t->type, t->n_elements, label, &t->nbytes));
    if (end - begin != t->nbytes) {
        char sh[160];
        format_shape(t, sh, sizeof sh);
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: tensor '%s': data [%" PRIu64 ", %" PRIu64 ") holds %" PRIu64
                          " bytes, but shape %s of %s needs %" PRIu64,
                          what, tname, begin, end, end - begin, sh, rlx_dtype_name(t->type), t->nbytes);
    }
    t->data = data + begin;
    return NULL;
}

static int cmp_by_data(const void *a, const void *b) {
    const rlx_st_tensor *x = a, *y = b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* Tensors [first, l->n) all come from one data buffer at `data`: no two may share a byte. */
static rlx_status check_overlap(const char *what, st_list *l, size_t first, const uint8_t *data) {
    if (first >= l->n) return NULL; /* no tensors (and maybe no list: NULL + 0 is undefined) */
    size_t n = l->n - first;
    rlx_st_tensor *v = l->v + first;
    qsort(v, n, sizeof *v, cmp_by_data);
    const rlx_st_tensor *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].nbytes) continue;
        if (prev && prev->data + prev->nbytes > v[i].data) {
            uint64_t pb = (uint64_t)(prev->data - data), cb = (uint64_t)(v[i].data - data);
            return rlx_errorf(RLX_ERR_BAD_FILE,
                              "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64 ") overlap",
                              what, prev->name, pb, pb + prev->nbytes, v[i].name, cb, cb + v[i].nbytes);
        }
        prev = &v[i];
    }
    return NULL;
}

static rlx_status parse_header_entries(const char *what, json_t *root, const uint8_t *data, uint64_t data_size,
                                       uint32_t shard, st_list *out) {
    const char *key;
    json_t *entry;
    json_object_foreach(root, key, entry) {
        if (!strcmp(key, "__metadata__")) continue;
        rlx_st_tensor t = {.shard = shard};
        RLX_TRY(parse_entry(what, key, entry, data, data_size, &t));
        t.name = strdup(key);
        if (!t.name) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: cannot copy tensor name '%s'", what, key);
        rlx_status s = list_push(out, &t);
        if (s) {
            free((char *)t.name);
            return s;
        }
    }
    return NULL;
}

/* Parses one safetensors image, appending its tensors (tagged `shard`) to *out. On error the
 * entries appended so far stay in *out for the caller to free. */
static rlx_status parse_image(const char *what, const uint8_t *base, uint64_t size, uint32_t shard, st_list *out) {
    if (size < 8)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %" PRIu64 " bytes is too short for the 8-byte header length", what,
                          size);
    uint64_t hlen = read_le64(base);
    if (hlen > size - 8)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: header length %" PRIu64 " exceeds the %" PRIu64 " bytes after the 8-byte length field",
                          what, hlen, size - 8);
    if (hlen >= RLX_ST_MAX_HEADER)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: header length %" PRIu64 " exceeds the limit of %" PRIu64 " bytes",
                          what, hlen, RLX_ST_MAX_HEADER);
    json_error_t err;
    json_t *root = json_loadb((const char *)base + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: header JSON is invalid at line %d, column %d: %s", what, err.line,
                          err.column, err.text);
    rlx_status s = NULL;
    if (!json_is_object(root))
        s = rlx_errorf(RLX_ERR_BAD_FILE, "%s: header is %s, expected a JSON object", what, json_type_name(root));
    const uint8_t *data = base + 8 + hlen;
    size_t first = out->n;
    if (!s) s = parse_header_entries(what, root, data, size - 8 - hlen, shard, out);
    json_decref(root);
    if (!s) s = check_overlap(what, out, first, data);
    return s;
}

static int cmp_by_name_then_shard(const void *a, const void *b) {
    const rlx_st_tensor *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->shard < y->shard ? -1 : x->shard > y->shard;
}

static void shards_free(st_shards *sh) {
    if (!sh) return;
    for (size_t i = 0; i < sh->n; i++) {
        free(sh->v[i].name);
        rlx_mapped_file_close(sh->v[i].map);
    }
    free(sh->v);
    free(sh);
}

void rlx_safetensors_close(rlx_safetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n_tensors; i++) free((char *)st->tensors[i].name);
    free(st->tensors);
    shards_free(st->shards_);
    free(st);
}

/* Wraps the parsed list and shard table into a rlx_safetensors (taking both on success). */
static rlx_status finish(st_list *l, st_shards *sh, rlx_safetensors **out) {
    rlx_safetensors *st = calloc(1, sizeof *st);
    if (!st) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "safetensors: cannot allocate the reader");
    if (l->n > 1) qsort(l->v, l->n, sizeof *l->v, cmp_by_name_then_shard); /* no tensors: v may be NULL */
    st->tensors = l->v;
    st->n_tensors = l->n;
    st->n_shards = sh->n;
    st->shards_ = sh;
    *l = (st_list){0};
    *out = st;
    return NULL;
}

static rlx_status shards_add(st_shards *sh, const char *name, rlx_mapped_file *map, const uint8_t *base,
                             uint64_t size) {
    st_shard *v = realloc(sh->v, (sh->n + 1) * sizeof *v);
    if (!v) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "safetensors: cannot grow the shard table");
    sh->v = v;
    char *copy = strdup(name);
    if (!copy) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "safetensors: cannot copy shard name '%s'", name);
    sh->v[sh->n++] = (st_shard){.name = copy, .base = base, .size = size, .map = map};
    return NULL;
}

/* Maps `path` and records it as shard `label` (closing the map when recording fails). */
static rlx_status shards_map(st_shards *sh, const char *path, const char *label) {
    rlx_mapped_file *map;
    RLX_TRY(rlx_mapped_file_open(path, &map));
    rlx_status s = shards_add(sh, label, map, map->data, map->size);
    if (s) rlx_mapped_file_close(map);
    return s;
}

rlx_status rlx_safetensors_open_memory(const void *data, size_t size, rlx_safetensors **out) {
    if (!out || (!data && size)) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_safetensors_open_memory: NULL argument");
    st_shards *sh = calloc(1, sizeof *sh);
    if (!sh) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "safetensors: cannot allocate the shard table");
    st_list l = {0};
    rlx_status s = shards_add(sh, "<memory>", NULL, data, size);
    if (!s) s = parse_image("safetensors image", data, size, 0, &l);
    if (!s) s = finish(&l, sh, out);
    if (s) {
        list_free(&l);
        shards_free(sh);
    }
    return s;
}

static rlx_status open_single(const char *path, rlx_safetensors **out) {
    st_shards *sh = calloc(1, sizeof *sh);
    if (!sh) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "safetensors: cannot allocate the shard table");
    st_list l = {0};
    rlx_status s = shards_map(sh, path, path);
    if (!s) s = parse_image(path, sh->v[0].base, sh->v[0].size, 0, &l);
    if (!s) s = finish(&l, sh, out);
    if (s) {
        list_free(&l);
        shards_free(sh);
    }
    return s;
}

/* ---- sharded checkpoints ---- */

static char *path_join(const char *dir, const char *file) {
    size_t n = strlen(dir) + 1 + strlen(file) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, file);
    return p;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Shard file names come from the index; they must stay inside the checkpoint directory. */
static rlx_status check_shard_name(const char *index, const char *tname, const char *file) {
    if (!*file || file[0] == '/' || strstr(file, ".."))
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: tensor '%s' maps to shard file '%s', expected a file name inside the checkpoint "
                          "directory",
                          index, tname, file);
    return NULL;
}

/* An index lists one line per tensor: a few megabytes for the largest checkpoints. */
#define MAX_INDEX_JSON_BYTES ((size_t)256 << 20)

static rlx_status load_weight_map(const char *index, json_t **root, json_t **map) {
    json_error_t err;
    char *text;
    size_t len;
    RLX_TRY(rlx_file_read_regular(index, MAX_INDEX_JSON_BYTES, &text, &len));
    *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    free(text);
    if (!*root)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: invalid JSON at line %d, column %d: %s", index, err.line, err.column,
                          err.text);
    *map = json_object_get(*root, "weight_map");
    if (!json_is_object(*map))
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: 'weight_map' is %s, expected an object of tensor name -> file name",
                          index, *map ? json_type_name(*map) : "missing");
    return NULL;
}

static size_t shard_index(const st_shards *sh, const char *file) {
    for (size_t i = 0; i < sh->n; i++)
        if (!strcmp(sh->v[i].name, file)) return i;
    return SIZE_MAX;
}

/* Maps (and parses into *all) every distinct shard the weight map names, in first-seen order. */
static rlx_status open_shards(const char *index, const char *dir, json_t *map, st_shards *sh, st_list *all) {
    const char *tname;
    json_t *file;
    json_object_foreach(map, tname, file) {
        if (!json_is_string(file))
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: weight_map['%s'] is %s, expected a file name string", index,
                              tname, json_type_name(file));
        const char *fname = json_string_value(file);
        RLX_TRY(check_shard_name(index, tname, fname));
        if (shard_index(sh, fname) != SIZE_MAX) continue;
        char *path = path_join(dir, fname);
        if (!path) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: cannot build the path of shard '%s'", index, fname);
        rlx_status s = shards_map(sh, path, fname);
        if (!s) s = parse_image(path, sh->v[sh->n - 1].base, sh->v[sh->n - 1].size, (uint32_t)(sh->n - 1), all);
        free(path);
        if (s) return rlx_status_annotate(s, "%s: shard '%s' (holding tensor '%s')", index, fname, tname);
    }
    return NULL;
}

/* Finds `name` from shard `shard` in the name-sorted list; SIZE_MAX when absent. */
static size_t find_in_shard(const st_list *l, const char *name, uint32_t shard) {
    rlx_st_tensor key = {.name = name, .shard = shard};
    const rlx_st_tensor *hit = bsearch(&key, l->v, l->n, sizeof key, cmp_by_name_then_shard);
    return hit ? (size_t)(hit - l->v) : SIZE_MAX;
}

/* Copies the tensors the weight map lists from *all into *picked, checking each is where the map
 * says it is. */
static rlx_status pick_mapped(const char *index, json_t *map, const st_shards *sh, st_list *all, st_list *picked) {
    if (all->n > 1) qsort(all->v, all->n, sizeof *all->v, cmp_by_name_then_shard); /* empty: v may be NULL */
    const char *tname;
    json_t *file;
    json_object_foreach(map, tname, file) {
        size_t shard = shard_index(sh, json_string_value(file));
        size_t at = find_in_shard(all, tname, (uint32_t)shard);
        if (at == SIZE_MAX)
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: weight_map puts tensor '%s' in shard '%s', which does not contain it",
                              index, tname, json_string_value(file));
        rlx_st_tensor t = all->v[at];
        t.name = strdup(t.name);
        if (!t.name) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: cannot copy tensor name '%s'", index, tname);
        rlx_status s = list_push(picked, &t);
        if (s) {
            free((char *)t.name);
            return s;
        }
    }
    return NULL;
}

static rlx_status open_index(const char *index, rlx_safetensors **out) {
    char *dir = dir_of(index);
    st_shards *sh = calloc(1, sizeof *sh);
    if (!dir || !sh) {
        free(dir);
        free(sh);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: cannot allocate the shard table", index);
    }
    json_t *root = NULL, *map = NULL;
    st_list all = {0}, picked = {0};
    rlx_status s = load_weight_map(index, &root, &map);
    if (!s) s = open_shards(index, dir, map, sh, &all);
    if (!s) s = pick_mapped(index, map, sh, &all, &picked);
    if (!s) s = finish(&picked, sh, out);
    if (s) shards_free(sh);
    list_free(&picked);
    list_free(&all);
    json_decref(root);
    free(dir);
    return s;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The index when there is one (of any file type: the open refuses what is not a regular file). */
static rlx_status open_dir(const char *dir, rlx_safetensors **out) {
    char *index = path_join(dir, "model.safetensors.index.json");
    char *single = path_join(dir, "model.safetensors");
    rlx_status s;
    if (!index || !single) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: cannot build file paths", dir);
    else if (exists(index)) s = open_index(index, out);
    else if (exists(single)) s = open_single(single, out);
    else
        s = rlx_errorf(RLX_ERR_NOT_FOUND, "%s: neither model.safetensors.index.json nor model.safetensors is there",
                       dir);
    free(index);
    free(single);
    return s;
}

rlx_status rlx_safetensors_open(const char *path, rlx_safetensors **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_safetensors_open: NULL argument");
    struct stat st;
    if (stat(path, &st) != 0)
        return rlx_errorf(errno == ENOENT ? RLX_ERR_NOT_FOUND : RLX_ERR_IO, "%s: cannot open: %s", path,
                          strerror(errno));
    if (S_ISDIR(st.st_mode)) return open_dir(path, out);
    if (ends_with(path, ".index.json")) return open_index(path, out);
    return open_single(path, out);
}

const rlx_st_tensor *rlx_safetensors_find(const rlx_safetensors *st, const char *name) {
    size_t lo = 0, hi = st->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[mid].name, name);
        if (!c) return &st->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *rlx_safetensors_shard_name(const rlx_safetensors *st, size_t i) {
    const st_shards *sh = st->shards_;
    return i < sh->n ? sh->v[i].name : NULL;
}
