/* GGUF v2/v3 reader. Layout: ggml docs/gguf.md. Validation follows llama.cpp's gguf.cpp
 * (gguf_init_from_reader) and is stricter where rlx wants it:
 *   - counts are bounded by the bytes left in the file before anything is allocated;
 *   - n_dims must be 1..4 (llama.cpp also takes 0); dims may be 0, as in llama.cpp;
 *   - tensor data must lie inside the file, aligned, and no two tensors may overlap (llama.cpp
 *     demands exactly packed offsets; rlx accepts any non-overlapping aligned layout);
 *   - nested arrays are read (llama.cpp refuses them) up to GGUF_MAX_ARRAY_DEPTH levels.
 * All multi-byte fields are little-endian; nothing is read outside [base, base + size). */
#include "loader/format/gguf.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/mapped_file.h"

#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_ARRAY_DEPTH 8
#define GGUF_N_VALUE_TYPES 13u
/* The fewest bytes one entry can take; they bound counts read from the file before allocating. */
#define KV_MIN_BYTES 14u     /* key length u64 + at least 1 key byte + type u32 + a 1-byte value */
#define TENSOR_MIN_BYTES 32u /* name length u64 + n_dims u32 + one dim u64 + type u32 + offset u64 */
#define STRING_MIN_BYTES 8u  /* a string array element: its u64 length */
#define ARRAY_MIN_BYTES 12u  /* an array array element: its u32 type and u64 count */
#define SHOWN_NAME_MAX 96    /* longer names are cut in messages */
#define ARENA_BLOCK_BYTES ((size_t)64 * 1024)
/* Each key costs about 100 bytes in memory for its 14 or more in the file (its record, its copy,
 * its index entry), so a file of millions of tiny keys would take several times its size; real
 * models hold about a hundred keys, with the vocabulary in arrays. */
#define GGUF_MAX_KV 65536u
/* Each tensor info costs about 200 bytes in memory (its record, its name, its index entry, the
 * model's weight) for 32+ in the file; the largest models, experts stored one by one, hold tens of
 * thousands. */
#define GGUF_MAX_TENSORS 262144u

static const struct {
    const char *name;
    uint8_t size; /* bytes of one value; 0 for string and array */
} value_types[GGUF_N_VALUE_TYPES] = {
    [RLX_GGUF_UINT8] = {"u8", 1},     [RLX_GGUF_INT8] = {"i8", 1},       [RLX_GGUF_UINT16] = {"u16", 2},
    [RLX_GGUF_INT16] = {"i16", 2},    [RLX_GGUF_UINT32] = {"u32", 4},    [RLX_GGUF_INT32] = {"i32", 4},
    [RLX_GGUF_FLOAT32] = {"f32", 4},  [RLX_GGUF_BOOL] = {"bool", 1},     [RLX_GGUF_STRING] = {"string", 0},
    [RLX_GGUF_ARRAY] = {"array", 0},  [RLX_GGUF_UINT64] = {"u64", 8},    [RLX_GGUF_INT64] = {"i64", 8},
    [RLX_GGUF_FLOAT64] = {"f64", 8},
};

/* ---- arena: every string and decoded array item of one rlx_gguf, freed at once ---- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    max_align_t data[]; /* cap bytes */
} arena_block;

static void *arena_alloc(arena_block **head, size_t n) {
    if (n > SIZE_MAX - sizeof(max_align_t) - sizeof(arena_block)) return NULL;
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    arena_block *b = *head;
    if (b && b->cap - b->used >= n) {
        void *p = (unsigned char *)b->data + b->used;
        b->used += n;
        return p;
    }
    size_t cap = n > ARENA_BLOCK_BYTES / 4 ? n : ARENA_BLOCK_BYTES;
    arena_block *nb = malloc(sizeof *nb + cap);
    if (!nb) return NULL;
    nb->used = n;
    nb->cap = cap;
    /* A large one-off block goes behind the current one so its free space stays usable. */
    if (b && cap == n) {
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        *head = nb;
    }
    return nb->data;
}

static void arena_free(arena_block *b) {
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
}

/* ---- the private side of an rlx_gguf ---- */

typedef struct name_entry {
    const char *s; /* borrowed from the rlx_gguf's kv or tensor array */
    uint64_t len;
    uint64_t index;
} name_entry;

typedef struct gguf_impl {
    rlx_gguf pub;             /* first member: the public handle points here */
    arena_block *arena;       /* owned */
    name_entry *kv_index;     /* owned, n_kv entries sorted by key */
    name_entry *tensor_index; /* owned, n_tensors entries sorted by name */
} gguf_impl;

/* ---- bounded reading ---- */

typedef struct reader {
    const uint8_t *base; /* borrowed */
    uint64_t size;
    uint64_t pos;        /* always <= size */
    arena_block **arena; /* borrowed: where strings and items go */
    char where[SHOWN_NAME_MAX + 64]; /* the entry being read, e.g. "kv 7 ('general.name')" */
} reader;

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32); }

/* Writes `name` for a message: cut at SHOWN_NAME_MAX, control bytes shown as '?'. */
static void shown_name(char *buf, size_t cap, const rlx_gguf_str *name) {
    size_t n = name->len < SHOWN_NAME_MAX ? (size_t)name->len : SHOWN_NAME_MAX;
    if (n >= cap) n = cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name->s[i];
        buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    buf[n] = '\0';
    if (name->len > n && n >= 3) memcpy(buf + n - 3, "...", 3);
}

static void set_where(reader *r, const char *kind, uint64_t index, const rlx_gguf_str *name) {
    char shown[SHOWN_NAME_MAX + 1];
    if (!name) {
        snprintf(r->where, sizeof r->where, "%s %" PRIu64, kind, index);
        return;
    }
    shown_name(shown, sizeof shown, name);
    snprintf(r->where, sizeof r->where, "%s %" PRIu64 " ('%s')", kind, index, shown);
}

static rlx_status take(reader *r, uint64_t n, const char *field, const uint8_t **out) {
    if (n > r->size - r->pos)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: %s (%" PRIu64 " bytes at offset %" PRIu64 ") runs past the end of file (%" PRIu64
                          " bytes)",
                          r->where, field, n, r->pos, r->size);
    *out = r->base + r->pos;
    r->pos += n;
    return NULL;
}

static rlx_status rd_u32(reader *r, const char *field, uint32_t *out) {
    const uint8_t *p = NULL;
    RLX_TRY(take(r, 4, field, &p));
    *out = le32(p);
    return NULL;
}

static rlx_status rd_u64(reader *r, const char *field, uint64_t *out) {
    const uint8_t *p = NULL;
    RLX_TRY(take(r, 8, field, &p));
    *out = le64(p);
    return NULL;
}

/* A GGUF string: u64 length, then that many bytes (not NUL-terminated in the file). */
static rlx_status rd_str(reader *r, const char *field, rlx_gguf_str *out) {
    uint64_t at = r->pos, len = 0;
    RLX_TRY(rd_u64(r, field, &len));
    if (len > r->size - r->pos)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: %s length %" PRIu64 " at offset %" PRIu64 " overruns the end of file (%" PRIu64
                          " bytes)",
                          r->where, field, len, at, r->size);
    char *s = len < SIZE_MAX ? arena_alloc(r->arena, (size_t)len + 1) : NULL;
    if (!s) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory for a %" PRIu64 "-byte %s", r->where, len, field);
    memcpy(s, r->base + r->pos, (size_t)len);
    s[len] = '\0';
    r->pos += len;
    out->s = s;
    out->len = len;
    return NULL;
}

static rlx_status rd_value_type(reader *r, const char *field, rlx_gguf_type *out) {
    uint64_t at = r->pos;
    uint32_t t = 0;
    RLX_TRY(rd_u32(r, field, &t));
    if (t >= GGUF_N_VALUE_TYPES)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: %s %" PRIu32 " at offset %" PRIu64 " is not a GGUF value type (0..12)",
                          r->where, field, t, at);
    *out = (rlx_gguf_type)t;
    return NULL;
}

/* Decodes one fixed-size value; p holds value_types[type].size bytes. */
static void decode_fixed(rlx_gguf_type type, const uint8_t *p, rlx_gguf_value *v) {
    v->type = type;
    switch (type) {
    case RLX_GGUF_UINT8: v->u64 = p[0]; break;
    case RLX_GGUF_INT8: v->i64 = (int8_t)p[0]; break;
    case RLX_GGUF_UINT16: v->u64 = le16(p); break;
    case RLX_GGUF_INT16: v->i64 = (int16_t)le16(p); break;
    case RLX_GGUF_UINT32: v->u64 = le32(p); break;
    case RLX_GGUF_INT32: v->i64 = (int32_t)le32(p); break;
    case RLX_GGUF_UINT64: v->u64 = le64(p); break;
    case RLX_GGUF_INT64: v->i64 = (int64_t)le64(p); break;
    case RLX_GGUF_BOOL: v->b = p[0] != 0; break; /* llama.cpp reads any non-zero byte as true */
    case RLX_GGUF_FLOAT32: {
        uint32_t bits = le32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        v->f64 = f;
        break;
    }
    case RLX_GGUF_FLOAT64: {
        uint64_t bits = le64(p);
        memcpy(&v->f64, &bits, sizeof v->f64);
        break;
    }
    case RLX_GGUF_STRING:
    case RLX_GGUF_ARRAY: break;
    }
}

static rlx_status rd_array(reader *r, int depth, rlx_gguf_value *v);

/* The bytes n strings from r->pos take once packed (each plus its NUL), proving every length
 * lies inside the file; r->pos is left where it was when they do. */
static rlx_status string_array_bytes(reader *r, uint64_t n, uint64_t *total) {
    uint64_t pos = r->pos, sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        RLX_TRY(rd_u64(r, "string length", &len));
        if (len > r->size - r->pos)
            return rlx_errorf(RLX_ERR_BAD_FILE,
                              "%s: string length %" PRIu64 " at offset %" PRIu64 " (array element %" PRIu64
                              ") overruns the end of file (%" PRIu64 " bytes)",
                              r->where, len, r->pos - 8, i, r->size);
        r->pos += len;
        sum += len + 1; /* at most the file size plus n: no overflow */
    }
    r->pos = pos;
    *total = sum;
    return NULL;
}

/* An array of strings packed into one arena block (arr.packed): n + 1 offsets, then the bytes. */
static rlx_status rd_string_array(reader *r, uint64_t n, rlx_gguf_value *v) {
    uint64_t total = 0, head;
    RLX_TRY(string_array_bytes(r, n, &total));
    if (__builtin_mul_overflow(n + 1, (uint64_t)sizeof(uint64_t), &head) || head > SIZE_MAX - total)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: %" PRIu64 " strings do not fit in memory", r->where, n);
    uint64_t *off = arena_alloc(r->arena, (size_t)(head + total));
    if (!off) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory for %" PRIu64 " strings", r->where, n);
    char *bytes = (char *)(off + n + 1);
    uint64_t at = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = le64(r->base + r->pos);
        memcpy(bytes + at, r->base + r->pos + 8, (size_t)len);
        r->pos += 8 + len;
        off[i] = at;
        at += len;
        bytes[at++] = '\0';
    }
    off[n] = at;
    v->arr.packed = off;
    return NULL;
}

/* depth: how many arrays enclose this value. */
static rlx_status rd_value(reader *r, rlx_gguf_type type, int depth, rlx_gguf_value *v) {
    if (type == RLX_GGUF_STRING) {
        v->type = RLX_GGUF_STRING;
        return rd_str(r, "string", &v->str);
    }
    if (type == RLX_GGUF_ARRAY) return rd_array(r, depth + 1, v);
    const uint8_t *p = NULL;
    RLX_TRY(take(r, value_types[type].size, value_types[type].name, &p));
    decode_fixed(type, p, v);
    return NULL;
}

/* An array: u32 element type, u64 count, then the elements. Fixed-size elements stay in the
 * mapping (arr.raw); strings and sub-arrays are decoded into arena items. */
static rlx_status rd_array(reader *r, int depth, rlx_gguf_value *v) {
    uint64_t at = r->pos;
    if (depth > GGUF_MAX_ARRAY_DEPTH)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: arrays nested deeper than %d levels at offset %" PRIu64, r->where,
                          GGUF_MAX_ARRAY_DEPTH, at);
    rlx_gguf_type et = RLX_GGUF_UINT8;
    uint64_t n = 0;
    RLX_TRY(rd_value_type(r, "array element type", &et));
    RLX_TRY(rd_u64(r, "array length", &n));
    v->type = RLX_GGUF_ARRAY;
    v->arr.elem_type = et;
    v->arr.n = n;
    v->arr.raw = NULL;
    v->arr.items = NULL;
    v->arr.packed = NULL;
    uint64_t elem_min = et == RLX_GGUF_STRING ? STRING_MIN_BYTES
                        : et == RLX_GGUF_ARRAY ? ARRAY_MIN_BYTES
                                               : value_types[et].size;
    uint64_t remain = r->size - r->pos;
    if (n > remain / elem_min)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "%s: array of %" PRIu64 " %s elements at offset %" PRIu64
                          " overruns the end of file (%" PRIu64 " bytes remain, each element needs at least %" PRIu64
                          ")",
                          r->where, n, value_types[et].name, at, remain, elem_min);
    if (value_types[et].size) {
        v->arr.raw = r->base + r->pos;
        r->pos += n * elem_min; /* cannot overflow: checked against remain above */
        return NULL;
    }
    if (et == RLX_GGUF_STRING) return rd_string_array(r, n, v);
    size_t bytes;
    if (n > SIZE_MAX || __builtin_mul_overflow((size_t)n, sizeof(rlx_gguf_value), &bytes))
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: %" PRIu64 " array items do not fit in memory", r->where, n);
    rlx_gguf_value *items = n ? arena_alloc(r->arena, bytes) : NULL;
    if (n && !items) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory for %" PRIu64 " array items", r->where, n);
    v->arr.items = items;
    for (uint64_t i = 0; i < n; i++) RLX_TRY(rd_value(r, et, depth, &items[i]));
    return NULL;
}

/* ---- header, metadata, tensor infos ---- */

static uint32_t bswap32(uint32_t x) {
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

static rlx_status read_header(reader *r, rlx_gguf *g, uint64_t *n_tensors, uint64_t *n_kv) {
    const uint8_t *magic = NULL;
    RLX_TRY(take(r, 4, "magic", &magic));
    if (memcmp(magic, "GGUF", 4) != 0) {
        char shown[5];
        for (int i = 0; i < 4; i++) shown[i] = magic[i] >= 0x20 && magic[i] < 0x7f ? (char)magic[i] : '?';
        shown[4] = '\0';
        return rlx_errorf(RLX_ERR_BAD_FILE, "header: bad magic '%s' at offset 0, expected 'GGUF'", shown);
    }
    RLX_TRY(rd_u32(r, "version", &g->version));
    if (g->version != 2 && g->version != 3) {
        /* A big-endian writer stores 3 as 0x03000000: the low 16 bits of a sane version are set. */
        if (g->version && (g->version & 0xffffu) == 0)
            return rlx_errorf(RLX_ERR_UNSUPPORTED,
                              "header: version field 0x%08" PRIx32 " looks byte-swapped: big-endian GGUF (version %" PRIu32
                              ") is not supported",
                              g->version, bswap32(g->version));
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "header: unsupported GGUF version %" PRIu32 " (rlx reads versions 2 and 3)",
                          g->version);
    }
    RLX_TRY(rd_u64(r, "tensor count", n_tensors));
    RLX_TRY(rd_u64(r, "kv count", n_kv));
    uint64_t remain = r->size - r->pos;
    if (*n_kv > remain / KV_MIN_BYTES)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "header: kv count %" PRIu64 " is impossible: each kv needs at least %u bytes and only %" PRIu64
                          " remain before the end of file",
                          *n_kv, KV_MIN_BYTES, remain);
    if (*n_tensors > remain / TENSOR_MIN_BYTES)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "header: tensor count %" PRIu64 " is impossible: each tensor info needs at least %u bytes and "
                          "only %" PRIu64 " remain before the end of file",
                          *n_tensors, TENSOR_MIN_BYTES, remain);
    if (*n_kv * KV_MIN_BYTES + *n_tensors * TENSOR_MIN_BYTES > remain)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "header: %" PRIu64 " kvs and %" PRIu64 " tensor infos need at least %" PRIu64
                          " bytes, only %" PRIu64 " remain before the end of file",
                          *n_kv, *n_tensors, *n_kv * KV_MIN_BYTES + *n_tensors * TENSOR_MIN_BYTES, remain);
    if (*n_kv > GGUF_MAX_KV)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "header: kv count %" PRIu64 " is more than the %u metadata keys rlx reads (models hold about "
                          "a hundred; vocabularies are arrays)",
                          *n_kv, GGUF_MAX_KV);
    if (*n_tensors > GGUF_MAX_TENSORS)
        return rlx_errorf(RLX_ERR_BAD_FILE,
                          "header: tensor count %" PRIu64 " is more than the %u tensors rlx reads (the largest models "
                          "hold tens of thousands)",
                          *n_tensors, GGUF_MAX_TENSORS);
    return NULL;
}

static rlx_status read_kvs(reader *r, rlx_gguf *g) {
    for (uint64_t i = 0; i < g->n_kv; i++) {
        rlx_gguf_kv *kv = &g->kv[i];
        set_where(r, "kv", i, NULL);
        uint64_t at = r->pos;
        RLX_TRY(rd_str(r, "key", &kv->key));
        if (kv->key.len == 0) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: empty key at offset %" PRIu64, r->where, at);
        set_where(r, "kv", i, &kv->key);
        rlx_gguf_type type = RLX_GGUF_UINT8;
        RLX_TRY(rd_value_type(r, "value type", &type));
        RLX_TRY(rd_value(r, type, 0, &kv->value));
    }
    return NULL;
}

static void shape_str(char *buf, size_t cap, const rlx_gguf_tensor *t) {
    int n = snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n > 0 && (size_t)n < cap; d++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
    if (n > 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "]");
}

/* Dims and the element count must fit int64 (llama.cpp reads dims as int64_t and checks the
 * same); like llama.cpp, a zero dim makes an empty tensor whatever the other dims are. */
static rlx_status check_shape(const reader *r, rlx_gguf_tensor *t) {
    uint64_t n = 1;
    bool overflow = false, empty = false;
    for (uint32_t d = 0; d < RLX_GGUF_MAX_DIMS; d++) {
        overflow = overflow || t->ne[d] > INT64_MAX;
        empty = empty || t->ne[d] == 0;
    }
    for (uint32_t d = 0; d < RLX_GGUF_MAX_DIMS && !overflow && !empty; d++)
        overflow = __builtin_mul_overflow(n, t->ne[d], &n) || n > INT64_MAX;
    if (empty) n = 0;
    if (overflow) {
        char shape[128];
        shape_str(shape, sizeof shape, t);
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: shape %s has too many elements (the product overflows 2^63-1)",
                          r->where, shape);
    }
    t->n_elements = n;
    return NULL;
}

static rlx_status check_type(const reader *r, rlx_gguf_tensor *t) {
    const rlx_dtype_info *info = rlx_dtype_get(t->type);
    if (!info) return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: unknown tensor type %" PRIu32, r->where, t->type);
    if (t->ne[0] % info->block_size != 0)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: row length ne[0] = %" PRIu64 " is not a multiple of the %s block size %" PRIu32,
                          r->where, t->ne[0], info->name, info->block_size);
    return rlx_dtype_bytes(t->type, t->n_elements, r->where, &t->nbytes);
}

static rlx_status read_tensor_info(reader *r, uint64_t i, uint32_t alignment, rlx_gguf_tensor *t) {
    set_where(r, "tensor", i, NULL);
    RLX_TRY(rd_str(r, "name", &t->name));
    set_where(r, "tensor", i, &t->name);
    uint64_t at = r->pos;
    RLX_TRY(rd_u32(r, "n_dims", &t->n_dims));
    if (t->n_dims < 1 || t->n_dims > RLX_GGUF_MAX_DIMS)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: n_dims is %" PRIu32 " at offset %" PRIu64 ", expected 1..%d", r->where,
                          t->n_dims, at, RLX_GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < RLX_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims) RLX_TRY(rd_u64(r, "dimension", &t->ne[d]));
    }
    RLX_TRY(check_shape(r, t));
    RLX_TRY(rd_u32(r, "type", &t->type));
    RLX_TRY(check_type(r, t));
    RLX_TRY(rd_u64(r, "data offset", &t->offset));
    if (t->offset % alignment != 0)
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: data offset %" PRIu64 " is not a multiple of the alignment %" PRIu32,
                          r->where, t->offset, alignment);
    return NULL;
}

/* ---- name indices (sorted, for lookups and duplicate detection) ---- */

static int cmp_bytes(const char *a, uint64_t alen, const char *b, uint64_t blen) {
    int c = memcmp(a, b, (size_t)(alen < blen ? alen : blen));
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

static int cmp_entry(const void *pa, const void *pb) {
    const name_entry *a = pa, *b = pb;
    int c = cmp_bytes(a->s, a->len, b->s, b->len);
    if (c) return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Sorts names into a new index; a repeated name is an error naming both entries. */
static rlx_status build_index(const rlx_gguf_str *(*name_of)(const rlx_gguf *, uint64_t), const rlx_gguf *g,
                              uint64_t n, const char *label, const char *entry, name_entry **out) {
    name_entry *e = malloc(n ? n * sizeof *e : 1);
    if (!e) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "out of memory indexing %" PRIu64 " %s entries", n, entry);
    for (uint64_t i = 0; i < n; i++) {
        const rlx_gguf_str *s = name_of(g, i);
        e[i] = (name_entry){s->s, s->len, i};
    }
    qsort(e, (size_t)n, sizeof *e, cmp_entry);
    for (uint64_t i = 1; i < n; i++) {
        if (cmp_bytes(e[i - 1].s, e[i - 1].len, e[i].s, e[i].len) == 0) {
            char shown[SHOWN_NAME_MAX + 1];
            shown_name(shown, sizeof shown, name_of(g, e[i].index));
            rlx_status s = rlx_errorf(RLX_ERR_BAD_FILE, "duplicate %s '%s' (%s %" PRIu64 " and %s %" PRIu64 ")", label,
                                      shown, entry, e[i - 1].index, entry, e[i].index);
            free(e);
            return s;
        }
    }
    *out = e;
    return NULL;
}

static const rlx_gguf_str *kv_name(const rlx_gguf *g, uint64_t i) { return &g->kv[i].key; }
static const rlx_gguf_str *tensor_name(const rlx_gguf *g, uint64_t i) { return &g->tensors[i].name; }

static const name_entry *index_find(const name_entry *e, uint64_t n, const char *key) {
    uint64_t klen = strlen(key), lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = cmp_bytes(e[mid].s, e[mid].len, key, klen);
        if (c == 0) return &e[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---- alignment and data placement ---- */

static rlx_status read_alignment(rlx_gguf *g) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const rlx_gguf_kv *kv = rlx_gguf_find(g, "general.alignment");
    if (!kv) return NULL;
    if (kv->value.type != RLX_GGUF_UINT32)
        return rlx_errorf(RLX_ERR_BAD_FILE, "kv 'general.alignment': type is %s, expected u32",
                          rlx_gguf_type_name(kv->value.type));
    uint64_t a = kv->value.u64;
    if (a == 0 || (a & (a - 1)) != 0)
        return rlx_errorf(RLX_ERR_BAD_FILE, "kv 'general.alignment': %" PRIu64 " is not a non-zero power of two", a);
    /* docs/gguf.md: "it must be a multiple of 8". Less would leave tensor data misaligned for its
     * element type (f32 at an odd address), which kernels reading it in place must not see. */
    if (a < 8)
        return rlx_errorf(RLX_ERR_BAD_FILE, "kv 'general.alignment': %" PRIu64 " is below 8 (the format requires a "
                          "multiple of 8)", a);
    g->alignment = (uint32_t)a;
    return NULL;
}

typedef struct span {
    uint64_t start, end, index;
} span;

static int cmp_span(const void *pa, const void *pb) {
    const span *a = pa, *b = pb;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return a->end < b->end ? -1 : a->end > b->end;
}

static rlx_status check_overlaps(const rlx_gguf *g) {
    span *sp = malloc(g->n_tensors * sizeof *sp);
    if (!sp) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "out of memory checking %" PRIu64 " tensors", g->n_tensors);
    uint64_t n = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const rlx_gguf_tensor *t = &g->tensors[i];
        if (t->nbytes) sp[n++] = (span){g->data_offset + t->offset, g->data_offset + t->offset + t->nbytes, i};
    }
    qsort(sp, (size_t)n, sizeof *sp, cmp_span);
    rlx_status s = NULL;
    uint64_t prev = 0; /* the span reaching furthest so far */
    for (uint64_t i = 1; i < n && !s; i++) {
        if (sp[i].start < sp[prev].end) {
            char a[SHOWN_NAME_MAX + 1], b[SHOWN_NAME_MAX + 1];
            shown_name(a, sizeof a, &g->tensors[sp[prev].index].name);
            shown_name(b, sizeof b, &g->tensors[sp[i].index].name);
            s = rlx_errorf(RLX_ERR_BAD_FILE,
                           "tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64 ") overlap", a,
                           sp[prev].start, sp[prev].end, b, sp[i].start, sp[i].end);
        }
        if (sp[i].end > sp[prev].end) prev = i;
    }
    free(sp);
    return s;
}

/* The data section starts at the header's end padded to the alignment (unpadded when there are
 * no tensors, as llama.cpp writes vocab-only files); each tensor's bytes must lie inside the file. */
static rlx_status place_tensors(rlx_gguf *g, uint64_t header_end) {
    g->data_offset = header_end;
    if (g->n_tensors == 0) return NULL;
    g->data_offset = (header_end + g->alignment - 1) / g->alignment * g->alignment; /* header_end <= size */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        rlx_gguf_tensor *t = &g->tensors[i];
        char shown[SHOWN_NAME_MAX + 1];
        uint64_t start = 0, end = 0;
        bool overflow = __builtin_add_overflow(g->data_offset, t->offset, &start) ||
                        __builtin_add_overflow(start, t->nbytes, &end);
        if (overflow || end > g->size) {
            shown_name(shown, sizeof shown, &t->name);
            if (overflow)
                return rlx_errorf(RLX_ERR_BAD_FILE,
                                  "tensor '%s': data offset %" PRIu64 " + %" PRIu64 " + %" PRIu64
                                  " bytes overflows 64 bits (past end of file, %" PRIu64 " bytes)",
                                  shown, g->data_offset, t->offset, t->nbytes, g->size);
            return rlx_errorf(RLX_ERR_BAD_FILE,
                              "tensor '%s': data [%" PRIu64 ", %" PRIu64 ") extends past end of file (%" PRIu64 " bytes)",
                              shown, start, end, g->size);
        }
        t->data = g->base + start;
    }
    return check_overlaps(g);
}

/* ---- open / close ---- */

static rlx_status parse(gguf_impl *im) {
    rlx_gguf *g = &im->pub;
    reader r = {.base = g->base, .size = g->size, .pos = 0, .arena = &im->arena};
    snprintf(r.where, sizeof r.where, "header");
    uint64_t n_tensors = 0, n_kv = 0;
    RLX_TRY(read_header(&r, g, &n_tensors, &n_kv));
    /* Both counts are bounded by the file size (read_header), so these allocations are too. */
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu64 " kvs and %" PRIu64 " tensor infos", n_kv,
                          n_tensors);
    g->n_kv = n_kv;
    RLX_TRY(read_kvs(&r, g));
    RLX_TRY(build_index(kv_name, g, n_kv, "key", "kv", &im->kv_index));
    RLX_TRY(read_alignment(g));
    g->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++) RLX_TRY(read_tensor_info(&r, i, g->alignment, &g->tensors[i]));
    RLX_TRY(build_index(tensor_name, g, n_tensors, "tensor name", "tensor", &im->tensor_index));
    return place_tensors(g, r.pos);
}

static void impl_free(gguf_impl *im) {
    free(im->pub.kv);
    free(im->pub.tensors);
    free(im->kv_index);
    free(im->tensor_index);
    arena_free(im->arena);
    rlx_mapped_file_close(im->pub.mapping_);
    free(im);
}

rlx_status rlx_gguf_open_memory(const void *data, size_t size, rlx_gguf **out) {
    if (!out || (!data && size)) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_gguf_open_memory: NULL data or out");
    gguf_impl *im = calloc(1, sizeof *im);
    if (!im) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "out of memory opening a GGUF");
    static const uint8_t empty[1];
    im->pub.base = data ? data : empty;
    im->pub.size = size;
    rlx_status s = parse(im);
    if (s) {
        impl_free(im);
        return s;
    }
    *out = &im->pub;
    return NULL;
}

rlx_status rlx_gguf_open(const char *path, rlx_gguf **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_gguf_open: NULL path or out");
    rlx_mapped_file *f;
    RLX_TRY(rlx_mapped_file_open(path, &f));
    rlx_gguf *g;
    rlx_status s = rlx_gguf_open_memory(f->data, f->size, &g);
    if (s) {
        rlx_mapped_file_close(f);
        return rlx_status_annotate(s, "'%s'", path);
    }
    g->mapping_ = f;
    *out = g;
    return NULL;
}

void rlx_gguf_close(rlx_gguf *g) {
    if (g) impl_free((gguf_impl *)g);
}

/* ---- lookups ---- */

const rlx_gguf_kv *rlx_gguf_find(const rlx_gguf *g, const char *key) {
    if (!g || !key) return NULL;
    const gguf_impl *im = (const gguf_impl *)g;
    const name_entry *e = index_find(im->kv_index, g->n_kv, key);
    return e ? &g->kv[e->index] : NULL;
}

const rlx_gguf_tensor *rlx_gguf_find_tensor(const rlx_gguf *g, const char *name) {
    if (!g || !name) return NULL;
    const gguf_impl *im = (const gguf_impl *)g;
    const name_entry *e = index_find(im->tensor_index, g->n_tensors, name);
    return e ? &g->tensors[e->index] : NULL;
}

const char *rlx_gguf_type_name(rlx_gguf_type t) {
    return (unsigned)t < GGUF_N_VALUE_TYPES ? value_types[t].name : "unknown";
}

static bool is_unsigned(rlx_gguf_type t) {
    return t == RLX_GGUF_UINT8 || t == RLX_GGUF_UINT16 || t == RLX_GGUF_UINT32 || t == RLX_GGUF_UINT64;
}

static bool is_signed(rlx_gguf_type t) {
    return t == RLX_GGUF_INT8 || t == RLX_GGUF_INT16 || t == RLX_GGUF_INT32 || t == RLX_GGUF_INT64;
}

/* Hands a getter's error to the caller (or drops it when the caller passed no err). */
static bool fail(rlx_status *err, rlx_status s) {
    if (err) *err = s;
    else rlx_status_free(s);
    return false;
}

static rlx_status type_error(const char *key, const rlx_gguf_value *v, const char *expected) {
    return rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': type is %s, expected %s", key, rlx_gguf_type_name(v->type), expected);
}

/* Finds key for a getter: clears *err, returns NULL when the key is absent. */
static const rlx_gguf_value *getter_find(const rlx_gguf *g, const char *key, rlx_status *err) {
    if (err) *err = NULL;
    const rlx_gguf_kv *kv = rlx_gguf_find(g, key);
    return kv ? &kv->value : NULL;
}

bool rlx_gguf_get_u32(const rlx_gguf *g, const char *key, uint32_t *out, rlx_status *err) {
    const rlx_gguf_value *v = getter_find(g, key, err);
    if (!v) return false;
    if (is_signed(v->type) && v->i64 < 0)
        return fail(err, rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': value %" PRId64 " (%s) does not fit a u32", key, v->i64,
                                    rlx_gguf_type_name(v->type)));
    if (!is_signed(v->type) && !is_unsigned(v->type)) return fail(err, type_error(key, v, "an integer (for a u32)"));
    uint64_t u = is_signed(v->type) ? (uint64_t)v->i64 : v->u64;
    if (u > UINT32_MAX)
        return fail(err, rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': value %" PRIu64 " (%s) does not fit a u32", key, u,
                                    rlx_gguf_type_name(v->type)));
    *out = (uint32_t)u;
    return true;
}

bool rlx_gguf_get_f32(const rlx_gguf *g, const char *key, float *out, rlx_status *err) {
    const rlx_gguf_value *v = getter_find(g, key, err);
    if (!v) return false;
    double d;
    if (v->type == RLX_GGUF_FLOAT32 || v->type == RLX_GGUF_FLOAT64) d = v->f64;
    else if (is_signed(v->type)) d = (double)v->i64;
    else if (is_unsigned(v->type)) d = (double)v->u64;
    else return fail(err, type_error(key, v, "a number (for an f32)"));
    if (isfinite(d) && (d > FLT_MAX || d < -FLT_MAX)) /* NaN and inf pass: f32 has them too */
        return fail(err, rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': value %g does not fit an f32", key, d));
    *out = (float)d;
    return true;
}

bool rlx_gguf_get_bool(const rlx_gguf *g, const char *key, bool *out, rlx_status *err) {
    const rlx_gguf_value *v = getter_find(g, key, err);
    if (!v) return false;
    if (v->type != RLX_GGUF_BOOL) return fail(err, type_error(key, v, "bool"));
    *out = v->b;
    return true;
}

bool rlx_gguf_get_str(const rlx_gguf *g, const char *key, const char **out, rlx_status *err) {
    const rlx_gguf_value *v = getter_find(g, key, err);
    if (!v) return false;
    if (v->type != RLX_GGUF_STRING) return fail(err, type_error(key, v, "string"));
    *out = v->str.s;
    return true;
}

bool rlx_gguf_get_arr(const rlx_gguf *g, const char *key, rlx_gguf_type elem_type, const rlx_gguf_value **out,
                      rlx_status *err) {
    const rlx_gguf_value *v = getter_find(g, key, err);
    if (!v) return false;
    if (v->type != RLX_GGUF_ARRAY || v->arr.elem_type != elem_type) {
        char expected[32];
        snprintf(expected, sizeof expected, "array of %s", rlx_gguf_type_name(elem_type));
        if (v->type == RLX_GGUF_ARRAY)
            return fail(err, rlx_errorf(RLX_ERR_BAD_FILE, "key '%s': type is array of %s, expected %s", key,
                                        rlx_gguf_type_name(v->arr.elem_type), expected));
        return fail(err, type_error(key, v, expected));
    }
    *out = v;
    return true;
}

bool rlx_gguf_arr_get(const rlx_gguf_value *arr, uint64_t i, rlx_gguf_value *out) {
    if (!arr || !out || arr->type != RLX_GGUF_ARRAY || i >= arr->arr.n) return false;
    uint8_t size = value_types[arr->arr.elem_type].size;
    if (size) {
        decode_fixed(arr->arr.elem_type, arr->arr.raw + i * size, out);
    } else if (arr->arr.elem_type == RLX_GGUF_STRING && arr->arr.packed) {
        out->type = RLX_GGUF_STRING;
        out->str = rlx_gguf_arr_str(arr, i);
    } else {
        *out = arr->arr.items[i];
    }
    return true;
}

rlx_gguf_str rlx_gguf_arr_str(const rlx_gguf_value *arr, uint64_t i) {
    rlx_gguf_str none = {"", 0};
    if (!arr || arr->type != RLX_GGUF_ARRAY || arr->arr.elem_type != RLX_GGUF_STRING || i >= arr->arr.n) return none;
    const uint64_t *off = arr->arr.packed;
    if (!off) return arr->arr.items[i].type == RLX_GGUF_STRING ? arr->arr.items[i].str : none;
    const char *bytes = (const char *)(off + arr->arr.n + 1);
    return (rlx_gguf_str){bytes + off[i], off[i + 1] - off[i] - 1};
}
