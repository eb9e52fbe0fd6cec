/* GGUF v3 writer. Format: ggml docs/gguf.md; the padding and key-replacement rules follow
 * llama.cpp's gguf.cpp (gguf_write_to_buf, gguf_set_val_*). Each kv value is encoded when it is
 * set (u32 type + value bytes, exactly as in the file), so writing the header is a copy. */
#include "loader/quant/gguf_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"

#define MAX_KEY_BYTES 65535u
#define MAX_ARRAY_DEPTH 8 /* the reader's limit: deeper nesting could not be read back */
#define OUT_BUFFER_BYTES ((size_t)4 << 20)

/* ---- growable byte buffer ---- */

typedef struct bytes {
    uint8_t *p; /* owned */
    size_t len, cap;
    bool oom;   /* sticky: an append failed */
} bytes;

static void b_put(bytes *b, const void *src, size_t n) {
    if (b->oom || n == 0) return;
    if (n > SIZE_MAX - b->len) {
        b->oom = true;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void b_le(bytes *b, uint64_t v, int n) {
    uint8_t le[8];
    for (int i = 0; i < n; i++) le[i] = (uint8_t)(v >> (8 * i));
    b_put(b, le, (size_t)n);
}

static void b_str(bytes *b, const char *s, uint64_t len) {
    b_le(b, len, 8);
    if (len > SIZE_MAX) b->oom = true;
    else b_put(b, s, (size_t)len);
}

/* ---- the writer ---- */

typedef struct kv_entry {
    char *key;    /* owned, NUL-terminated */
    size_t key_len;
    bytes value;  /* owned: u32 type + encoded value */
} kv_entry;

typedef struct tensor_entry {
    char *name;   /* owned, NUL-terminated */
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[RLX_GGUF_MAX_DIMS];
    uint64_t nbytes;
    uint64_t offset; /* set by begin */
} tensor_entry;

struct rlx_gguf_writer {
    kv_entry *kv; /* owned, n_kv entries in file order */
    size_t n_kv, cap_kv;
    tensor_entry *tensors; /* owned, n_tensors entries in file order */
    size_t n_tensors, cap_tensors;
    uint64_t data_bytes;   /* sum of tensor nbytes */
    /* output state */
    FILE *f;               /* owned while begun */
    char *path;            /* owned: the final path */
    char *tmp_path;        /* owned: path + ".tmp" */
    uint32_t alignment;
    size_t cur;            /* tensor being written */
    uint64_t cur_done;     /* its bytes written so far */
    bool begun, finished;
};

static const char *const type_names[] = {
    [RLX_GGUF_UINT8] = "u8",   [RLX_GGUF_INT8] = "i8",     [RLX_GGUF_UINT16] = "u16",  [RLX_GGUF_INT16] = "i16",
    [RLX_GGUF_UINT32] = "u32", [RLX_GGUF_INT32] = "i32",   [RLX_GGUF_FLOAT32] = "f32", [RLX_GGUF_BOOL] = "bool",
    [RLX_GGUF_STRING] = "string", [RLX_GGUF_ARRAY] = "array", [RLX_GGUF_UINT64] = "u64", [RLX_GGUF_INT64] = "i64",
    [RLX_GGUF_FLOAT64] = "f64",
};
#define N_VALUE_TYPES (sizeof type_names / sizeof type_names[0])

/* Bytes of one element of a fixed-size type; 0 for string, array and unknown numbers. */
static int fixed_size(uint32_t t) {
    switch (t) {
    case RLX_GGUF_UINT8: case RLX_GGUF_INT8: case RLX_GGUF_BOOL: return 1;
    case RLX_GGUF_UINT16: case RLX_GGUF_INT16: return 2;
    case RLX_GGUF_UINT32: case RLX_GGUF_INT32: case RLX_GGUF_FLOAT32: return 4;
    case RLX_GGUF_UINT64: case RLX_GGUF_INT64: case RLX_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

rlx_status rlx_gguf_writer_create(rlx_gguf_writer **out) {
    if (!out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: NULL out pointer");
    rlx_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory");
    *out = w;
    return NULL;
}

void rlx_gguf_writer_destroy(rlx_gguf_writer *w) {
    if (!w) return;
    if (w->f) {
        fclose(w->f);
        remove(w->tmp_path);
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].value.p);
    }
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->kv);
    free(w->tensors);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

static rlx_status check_open_for_edits(const rlx_gguf_writer *w, const char *what, const char *name) {
    if (!w) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: NULL writer (%s '%s')", what, name ? name : "");
    if (!name) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: NULL %s name", what);
    if (w->begun)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: %s '%s' added after begin (the header is written)",
                          what, name);
    return NULL;
}

bool rlx_gguf_writer_remove(rlx_gguf_writer *w, const char *key) {
    if (!w || !key || w->begun) return false;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) != 0) continue;
        free(w->kv[i].key);
        free(w->kv[i].value.p);
        memmove(&w->kv[i], &w->kv[i + 1], (w->n_kv - i - 1) * sizeof *w->kv);
        w->n_kv--;
        return true;
    }
    return false;
}

uint64_t rlx_gguf_writer_n_kv(const rlx_gguf_writer *w) { return w ? w->n_kv : 0; }

/* Takes ownership of value (freed on error too). */
static rlx_status put_kv(rlx_gguf_writer *w, const char *key, bytes *value) {
    rlx_status s = check_open_for_edits(w, "key", key);
    size_t key_len = key ? strlen(key) : 0;
    if (!s && (key_len == 0 || key_len > MAX_KEY_BYTES))
        s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%.64s' is %zu bytes, expected 1..%u", key, key_len,
                       MAX_KEY_BYTES);
    if (!s && value->oom) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory encoding key '%s'", key);
    char *copy = s ? NULL : malloc(key_len + 1);
    if (!s && !copy) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for key '%s'", key);
    if (!s) rlx_gguf_writer_remove(w, key);
    if (!s && w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? w->cap_kv * 2 : 32;
        kv_entry *kv = realloc(w->kv, cap * sizeof *kv);
        if (!kv) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for %zu keys", cap);
        else {
            w->kv = kv;
            w->cap_kv = cap;
        }
    }
    if (s) {
        free(copy);
        free(value->p);
        return s;
    }
    memcpy(copy, key, key_len + 1);
    w->kv[w->n_kv++] = (kv_entry){copy, key_len, *value};
    return NULL;
}

static rlx_status put_scalar(rlx_gguf_writer *w, const char *key, rlx_gguf_type t, uint64_t bits) {
    bytes v = {0};
    b_le(&v, t, 4);
    b_le(&v, bits, fixed_size(t));
    return put_kv(w, key, &v);
}

rlx_status rlx_gguf_writer_set_u32(rlx_gguf_writer *w, const char *key, uint32_t v) {
    return put_scalar(w, key, RLX_GGUF_UINT32, v);
}

rlx_status rlx_gguf_writer_set_i32(rlx_gguf_writer *w, const char *key, int32_t v) {
    return put_scalar(w, key, RLX_GGUF_INT32, (uint32_t)v);
}

rlx_status rlx_gguf_writer_set_u64(rlx_gguf_writer *w, const char *key, uint64_t v) {
    return put_scalar(w, key, RLX_GGUF_UINT64, v);
}

rlx_status rlx_gguf_writer_set_f32(rlx_gguf_writer *w, const char *key, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return put_scalar(w, key, RLX_GGUF_FLOAT32, bits);
}

rlx_status rlx_gguf_writer_set_bool(rlx_gguf_writer *w, const char *key, bool v) {
    return put_scalar(w, key, RLX_GGUF_BOOL, v ? 1u : 0u);
}

rlx_status rlx_gguf_writer_set_str(rlx_gguf_writer *w, const char *key, const char *v) {
    if (!v) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: NULL string for key '%s'", key ? key : "");
    bytes b = {0};
    b_le(&b, RLX_GGUF_STRING, 4);
    b_str(&b, v, strlen(v));
    return put_kv(w, key, &b);
}

/* The bits of host element i of a fixed-size type, as the file stores them. */
static uint64_t host_elem_bits(rlx_gguf_type t, const void *elems, uint64_t i) {
    switch (t) {
    case RLX_GGUF_UINT8: return ((const uint8_t *)elems)[i];
    case RLX_GGUF_INT8: return (uint8_t)((const int8_t *)elems)[i];
    case RLX_GGUF_BOOL: return ((const bool *)elems)[i] ? 1u : 0u;
    case RLX_GGUF_UINT16: return ((const uint16_t *)elems)[i];
    case RLX_GGUF_INT16: return (uint16_t)((const int16_t *)elems)[i];
    case RLX_GGUF_UINT32: return ((const uint32_t *)elems)[i];
    case RLX_GGUF_INT32: return (uint32_t)((const int32_t *)elems)[i];
    case RLX_GGUF_UINT64: return ((const uint64_t *)elems)[i];
    case RLX_GGUF_INT64: return (uint64_t)((const int64_t *)elems)[i];
    case RLX_GGUF_FLOAT32: {
        uint32_t u;
        memcpy(&u, (const float *)elems + i, sizeof u);
        return u;
    }
    case RLX_GGUF_FLOAT64: {
        uint64_t u;
        memcpy(&u, (const double *)elems + i, sizeof u);
        return u;
    }
    default: return 0;
    }
}

rlx_status rlx_gguf_writer_set_arr(rlx_gguf_writer *w, const char *key, rlx_gguf_type elem_type, const void *elems,
                                   uint64_t n) {
    int size = fixed_size(elem_type);
    if (!size)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "gguf writer: key '%s': set_arr takes a fixed-size element type, not %s (number %u)",
                          key ? key : "", elem_type < N_VALUE_TYPES ? type_names[elem_type] : "unknown",
                          (unsigned)elem_type);
    if (n && !elems) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': NULL array", key ? key : "");
    bytes b = {0};
    b_le(&b, RLX_GGUF_ARRAY, 4);
    b_le(&b, elem_type, 4);
    b_le(&b, n, 8);
    for (uint64_t i = 0; i < n && !b.oom; i++) b_le(&b, host_elem_bits(elem_type, elems, i), size);
    return put_kv(w, key, &b);
}

rlx_status rlx_gguf_writer_set_arr_str(rlx_gguf_writer *w, const char *key, const char *const *strs,
                                       const uint64_t *lens, uint64_t n) {
    if (n && !strs) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': NULL array", key ? key : "");
    bytes b = {0};
    b_le(&b, RLX_GGUF_ARRAY, 4);
    b_le(&b, RLX_GGUF_STRING, 4);
    b_le(&b, n, 8);
    for (uint64_t i = 0; i < n && !b.oom; i++) {
        if (!strs[i]) {
            free(b.p);
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': string %" PRIu64 " is NULL", key ? key : "",
                              i);
        }
        b_str(&b, strs[i], lens ? lens[i] : strlen(strs[i]));
    }
    return put_kv(w, key, &b);
}

/* The bits of a decoded scalar (the reader keeps integers in u64/i64 and floats in f64). */
static uint64_t value_bits(const rlx_gguf_value *v) {
    switch (v->type) {
    case RLX_GGUF_INT8: case RLX_GGUF_INT16: case RLX_GGUF_INT32: case RLX_GGUF_INT64: return (uint64_t)v->i64;
    case RLX_GGUF_BOOL: return v->b ? 1u : 0u;
    case RLX_GGUF_FLOAT32: {
        float f = (float)v->f64;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
    }
    case RLX_GGUF_FLOAT64: {
        uint64_t u;
        memcpy(&u, &v->f64, sizeof u);
        return u;
    }
    default: return v->u64;
    }
}

/* Encodes v without its type tag (an array's elements carry no tag of their own). */
static rlx_status encode_body(bytes *b, const rlx_gguf_value *v, int depth, const char *key) {
    if (v->type == RLX_GGUF_STRING) {
        if (v->str.len && !v->str.s)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': NULL string", key);
        b_str(b, v->str.s, v->str.len);
        return NULL;
    }
    if (v->type != RLX_GGUF_ARRAY) {
        if (!fixed_size(v->type))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': unknown value type %u", key,
                              (unsigned)v->type);
        b_le(b, value_bits(v), fixed_size(v->type));
        return NULL;
    }
    if (depth >= MAX_ARRAY_DEPTH)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': arrays nested deeper than %d levels", key,
                          MAX_ARRAY_DEPTH);
    uint32_t et = v->arr.elem_type;
    int size = fixed_size(et);
    if (!size && et != RLX_GGUF_STRING && et != RLX_GGUF_ARRAY)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': unknown array element type %u", key,
                          (unsigned)et);
    b_le(b, et, 4);
    b_le(b, v->arr.n, 8);
    if (size) {
        /* raw holds the elements exactly as a file stores them (the reader borrows them). */
        uint64_t n_bytes;
        if (__builtin_mul_overflow(v->arr.n, (uint64_t)size, &n_bytes) || n_bytes > SIZE_MAX)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': array of %" PRIu64 " elements is too big",
                              key, v->arr.n);
        if (n_bytes && !v->arr.raw) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': NULL array", key);
        b_put(b, v->arr.raw, (size_t)n_bytes);
        return NULL;
    }
    bool packed = et == RLX_GGUF_STRING && v->arr.packed; /* strings as the reader keeps them */
    if (v->arr.n && !v->arr.items && !packed)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': NULL items", key);
    for (uint64_t i = 0; i < v->arr.n && !b->oom; i++) {
        rlx_gguf_value item;
        rlx_gguf_arr_get(v, i, &item);
        if (item.type != et)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "gguf writer: key '%s': item %" PRIu64 " has value type %u in an array of type %u", key, i,
                              (unsigned)item.type, (unsigned)et);
        RLX_TRY(encode_body(b, &item, depth + 1, key));
    }
    return NULL;
}

rlx_status rlx_gguf_writer_set_value(rlx_gguf_writer *w, const char *key, const rlx_gguf_value *v) {
    if (!v) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: NULL value for key '%s'", key ? key : "");
    bytes b = {0};
    b_le(&b, v->type, 4);
    rlx_status s = encode_body(&b, v, 0, key ? key : "");
    if (s) {
        free(b.p);
        return s;
    }
    return put_kv(w, key, &b);
}

/* ---- tensors ---- */

rlx_status rlx_gguf_writer_add_tensor(rlx_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                      const uint64_t *ne) {
    RLX_TRY(check_open_for_edits(w, "tensor", name));
    size_t len = strlen(name);
    if (len == 0 || len > RLX_GGUF_MAX_NAME)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor name '%.80s' is %zu bytes, expected 1..%u",
                          name, len, RLX_GGUF_MAX_NAME);
    if (n_dims < 1 || n_dims > RLX_GGUF_MAX_DIMS || !ne)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s': %u dims, expected 1..%d", name,
                          (unsigned)n_dims, RLX_GGUF_MAX_DIMS);
    const rlx_dtype_info *info = rlx_dtype_get(type);
    if (!info) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s': unknown type %u", name, (unsigned)type);
    if (ne[0] % info->block_size)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "gguf writer: tensor '%s': row of %" PRIu64 " elements is not a multiple of the %s block size %u",
                          name, ne[0], info->name, (unsigned)info->block_size);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s' added twice", name);
    tensor_entry t = {.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}};
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        t.ne[d] = ne[d];
        if (__builtin_mul_overflow(n, ne[d], &n))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s': element count overflows 64 bits", name);
    }
    RLX_TRY(rlx_dtype_bytes(type, n, name, &t.nbytes));
    uint64_t total;
    if (__builtin_add_overflow(w->data_bytes, t.nbytes, &total))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s': data size overflows 64 bits", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? w->cap_tensors * 2 : 64;
        tensor_entry *ts = realloc(w->tensors, cap * sizeof *ts);
        if (!ts) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for %zu tensors", cap);
        w->tensors = ts;
        w->cap_tensors = cap;
    }
    if (!(t.name = malloc(len + 1))) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for '%s'", name);
    memcpy(t.name, name, len + 1);
    w->tensors[w->n_tensors++] = t;
    w->data_bytes = total;
    return NULL;
}

uint64_t rlx_gguf_writer_n_tensors(const rlx_gguf_writer *w) { return w ? w->n_tensors : 0; }

uint64_t rlx_gguf_writer_tensor_nbytes(const rlx_gguf_writer *w, uint64_t i) {
    return w && i < w->n_tensors ? w->tensors[i].nbytes : 0;
}

uint64_t rlx_gguf_writer_data_bytes(const rlx_gguf_writer *w) { return w ? w->data_bytes : 0; }

/* ---- output ---- */

static rlx_status alignment_from_kv(const rlx_gguf_writer *w, uint32_t *out) {
    *out = RLX_GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment") != 0) continue;
        const uint8_t *v = w->kv[i].value.p;
        uint32_t type = v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
        uint32_t a = w->kv[i].value.len == 8 ? v[4] | (uint32_t)v[5] << 8 | (uint32_t)v[6] << 16 | (uint32_t)v[7] << 24 : 0;
        if (type != RLX_GGUF_UINT32 || a == 0 || (a & (a - 1)))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "gguf writer: general.alignment must be a u32 power of two (it is type %u, value %u)",
                              (unsigned)type, (unsigned)a);
        *out = a;
    }
    return NULL;
}

static uint64_t pad_to(uint64_t n, uint32_t a) { return (a - n % a) % a; }

static rlx_status write_raw(rlx_gguf_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->f) != n)
        return rlx_errorf(RLX_ERR_IO, "writing '%s' failed: %s", w->tmp_path, strerror(errno));
    return NULL;
}

static rlx_status write_zeros(rlx_gguf_writer *w, uint64_t n) {
    static const uint8_t zeros[256];
    while (n) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        RLX_TRY(write_raw(w, zeros, k));
        n -= k;
    }
    return NULL;
}

static rlx_status write_header(rlx_gguf_writer *w) {
    bytes h = {0};
    b_put(&h, "GGUF", 4);
    b_le(&h, RLX_GGUF_WRITER_VERSION, 4);
    b_le(&h, w->n_tensors, 8);
    b_le(&h, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv && !h.oom; i++) {
        b_str(&h, w->kv[i].key, w->kv[i].key_len);
        b_put(&h, w->kv[i].value.p, w->kv[i].value.len);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors && !h.oom; i++) {
        tensor_entry *t = &w->tensors[i];
        b_str(&h, t->name, strlen(t->name));
        b_le(&h, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) b_le(&h, t->ne[d], 8);
        b_le(&h, t->type, 4);
        b_le(&h, offset, 8);
        t->offset = offset;
        if (__builtin_add_overflow(offset, t->nbytes + pad_to(t->nbytes, w->alignment), &offset)) {
            free(h.p);
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s': data offset overflows 64 bits", t->name);
        }
    }
    rlx_status s = h.oom ? rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for the header") : NULL;
    if (!s) s = write_raw(w, h.p, h.len);
    if (!s) s = write_zeros(w, pad_to(h.len, w->alignment));
    free(h.p);
    return s;
}

static char *concat(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

rlx_status rlx_gguf_writer_begin(rlx_gguf_writer *w, const char *path) {
    if (!w || !path || !*path) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: begin needs a writer and a path");
    if (w->begun) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: '%s': begin called twice", path);
    RLX_TRY(alignment_from_kv(w, &w->alignment));
    if (!(w->path = concat(path, "")) || !(w->tmp_path = concat(path, ".tmp")))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for path '%s'", path);
    if (!(w->f = fopen(w->tmp_path, "wb")))
        return rlx_errorf(RLX_ERR_IO, "cannot create '%s': %s", w->tmp_path, strerror(errno));
    w->begun = true;
    setvbuf(w->f, NULL, _IOFBF, OUT_BUFFER_BYTES);
    rlx_status s = write_header(w);
    /* Tensors of 0 bytes are complete before any write. */
    while (!s && w->cur < w->n_tensors && w->tensors[w->cur].nbytes == 0) w->cur++;
    return s;
}

rlx_status rlx_gguf_writer_write(rlx_gguf_writer *w, const void *data, size_t n) {
    if (!w || !w->f || w->finished)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: write before begin or after finish");
    if (n && !data) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: '%s': NULL data", w->path);
    const uint8_t *p = data;
    while (n) {
        if (w->cur >= w->n_tensors)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: '%s': %zu bytes past the last tensor's data", w->path,
                              n);
        tensor_entry *t = &w->tensors[w->cur];
        uint64_t left = t->nbytes - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        RLX_TRY(write_raw(w, p, k));
        p += k;
        n -= k;
        w->cur_done += k;
        if (w->cur_done == t->nbytes) {
            RLX_TRY(write_zeros(w, pad_to(t->nbytes, w->alignment)));
            w->cur_done = 0;
            do w->cur++;
            while (w->cur < w->n_tensors && w->tensors[w->cur].nbytes == 0);
        }
    }
    return NULL;
}

rlx_status rlx_gguf_writer_finish(rlx_gguf_writer *w) {
    if (!w || !w->f || w->finished)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "gguf writer: finish before begin or twice");
    if (w->cur < w->n_tensors)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "gguf writer: '%s': tensor '%s' has %" PRIu64 " of its %" PRIu64 " bytes at finish", w->path,
                          w->tensors[w->cur].name, w->cur_done, w->tensors[w->cur].nbytes);
    FILE *f = w->f;
    w->f = NULL;
    bool ok = fflush(f) == 0 && !ferror(f);
    int err = errno;
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        remove(w->tmp_path);
        return rlx_errorf(RLX_ERR_IO, "writing '%s' failed: %s", w->tmp_path, strerror(err ? err : errno));
    }
    if (rename(w->tmp_path, w->path) != 0) {
        err = errno;
        remove(w->tmp_path);
        return rlx_errorf(RLX_ERR_IO, "cannot rename '%s' to '%s': %s", w->tmp_path, w->path, strerror(err));
    }
    w->finished = true;
    return NULL;
}
