/* GGUF mutations for the corrupt-file corpus.
 *
 * The walker here is the test's own reading of the format (ggml's docs/gguf.md), independent of
 * loader/format/gguf.c: it records where every field of a fixture lies, so that mutations land on real
 * fields. The expectation of each mutation follows from the format and the fixture's numbers:
 *  - a file cut anywhere before the end of its last tensor's data lacks bytes some tensor needs;
 *  - a u64 length, count, dimension or offset of 2^32 or more cannot fit a fixture (< 4 GiB, and
 *    every element or entry takes at least one byte);
 *  - value types past 12, tensor dimensions outside 1..4, tensor offsets that are not multiples of
 *    the alignment, overlapping or out-of-file tensor data, duplicate names and keys, unknown
 *    versions and magics are malformed by the format;
 *  - hyperparameters that disagree with the tensors' shapes are refused by the model check.
 * Flips inside strings, scalars or tensor data can leave a valid file and are EXPECT_ANY. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corrupt.h"
#include "test_util.h"

/* ggml's type traits (ggml/src/ggml.c: blck_size, type_size; block layouts in ggml-common.h) for
 * the types the fixtures hold. */
static const struct {
    uint32_t type, block, bytes;
} TYPES[] = {
    {0, 1, 4},      {1, 1, 2},       {2, 32, 18},     {3, 32, 20},     {6, 32, 22},     {7, 32, 24},  {8, 32, 34},
    {10, 256, 84},  {11, 256, 110},  {12, 256, 144},  {13, 256, 176},  {14, 256, 210},  {30, 1, 2},
};

enum role { R_MAGIC, R_VERSION, R_COUNT, R_LEN, R_ARR_N, R_VTYPE, R_ATYPE, R_BYTES, R_NDIMS, R_DIM, R_TTYPE, R_TOFF };

typedef struct field {
    uint64_t off, size;
    enum role role;
    int32_t tensor; /* R_NDIMS, R_DIM, R_TTYPE, R_TOFF: the tensor's index; else -1 */
} field;

typedef struct kv_pos {
    uint64_t start, key_len, type_off, value_off, end;
    uint32_t type;
    const char *key; /* borrowed: key_len bytes in the fixture, not NUL-terminated */
} kv_pos;

typedef struct tensor_pos {
    uint64_t name_len_off, name_len, ndims_off, dim_off[4], ne[4], type_off, off_off, offset, nbytes, end;
    uint32_t n_dims, type, block, block_bytes;
} tensor_pos;

typedef struct gguf_map {
    corrupt_runner *runner;
    const char *label;
    const uint8_t *d; /* borrowed: the fixture */
    uint64_t size;
    uint8_t *buf;     /* owned: the copy mutations write into and restore */
    field *fields;    /* owned */
    size_t n_fields, cap;
    kv_pos *kv;       /* owned */
    tensor_pos *t;    /* owned */
    uint64_t n_kv, n_tensors, header_end, data_start, req_end;
    uint32_t alignment;
    corrupt_rng rng;
} gguf_map;

/* ---- walking ---- */

static bool add_field(gguf_map *m, uint64_t off, uint64_t size, enum role role, int32_t tensor) {
    if (size > m->size || off > m->size - size) return false;
    if (m->n_fields == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        field *f = realloc(m->fields, cap * sizeof *f);
        if (!f) return false;
        m->fields = f;
        m->cap = cap;
    }
    m->fields[m->n_fields++] = (field){off, size, role, tensor};
    return true;
}

static bool walk_string(gguf_map *m, uint64_t *p, uint64_t *len) {
    if (!add_field(m, *p, 8, R_LEN, -1)) return false;
    *len = corrupt_get_u64(m->d + *p);
    *p += 8;
    if (*len && !add_field(m, *p, *len, R_BYTES, -1)) return false;
    *p += *len;
    return true;
}

static uint64_t scalar_size(uint32_t type) {
    static const uint8_t sizes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < 13 ? sizes[type] : 0;
}

static bool walk_value(gguf_map *m, uint64_t *p, uint32_t type, int depth) {
    uint64_t len;
    if (type == 8) return walk_string(m, p, &len);
    if (type == 9) {
        if (depth > 4 || !add_field(m, *p, 4, R_ATYPE, -1) || !add_field(m, *p + 4, 8, R_ARR_N, -1)) return false;
        uint32_t elem = corrupt_get_u32(m->d + *p);
        uint64_t n = corrupt_get_u64(m->d + *p + 4);
        *p += 12;
        if (n > m->size) return false;
        if (elem != 8 && elem != 9) {
            uint64_t sz = scalar_size(elem);
            if (!sz || (n && !add_field(m, *p, n * sz, R_BYTES, -1))) return false;
            *p += n * sz;
            return true;
        }
        for (uint64_t i = 0; i < n; i++)
            if (!walk_value(m, p, elem, depth + 1)) return false;
        return true;
    }
    uint64_t sz = scalar_size(type);
    if (!sz || !add_field(m, *p, sz, R_BYTES, -1)) return false;
    *p += sz;
    return true;
}

static bool walk_kv(gguf_map *m, uint64_t i, uint64_t *p) {
    kv_pos *kv = &m->kv[i];
    kv->start = *p;
    if (!walk_string(m, p, &kv->key_len)) return false;
    kv->key = (const char *)m->d + kv->start + 8;
    kv->type_off = *p;
    if (!add_field(m, *p, 4, R_VTYPE, -1)) return false;
    kv->type = corrupt_get_u32(m->d + *p);
    *p += 4;
    kv->value_off = *p;
    if (!walk_value(m, p, kv->type, 0)) return false;
    kv->end = *p;
    return true;
}

static bool type_block(uint32_t type, uint32_t *block, uint32_t *bytes) {
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (TYPES[i].type == type) {
            *block = TYPES[i].block;
            *bytes = TYPES[i].bytes;
            return true;
        }
    return false;
}

static bool walk_tensor(gguf_map *m, uint64_t i, uint64_t *p) {
    tensor_pos *t = &m->t[i];
    int32_t ti = (int32_t)i;
    t->name_len_off = *p;
    if (!walk_string(m, p, &t->name_len)) return false;
    t->ndims_off = *p;
    if (!add_field(m, *p, 4, R_NDIMS, ti)) return false;
    t->n_dims = corrupt_get_u32(m->d + *p);
    *p += 4;
    if (t->n_dims < 1 || t->n_dims > 4) return false;
    uint64_t numel = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (!add_field(m, *p, 8, R_DIM, ti)) return false;
        t->dim_off[d] = *p;
        t->ne[d] = corrupt_get_u64(m->d + *p);
        numel *= t->ne[d];
        *p += 8;
    }
    t->type_off = *p;
    if (!add_field(m, *p, 4, R_TTYPE, ti) || !add_field(m, *p + 4, 8, R_TOFF, ti)) return false;
    t->type = corrupt_get_u32(m->d + *p);
    t->off_off = *p + 4;
    t->offset = corrupt_get_u64(m->d + *p + 4);
    *p += 12;
    t->end = *p;
    if (!type_block(t->type, &t->block, &t->block_bytes)) {
        t_fail(__FILE__, __LINE__, "fixture tensor %" PRIu64 " has type %u, not in the test's table", i, t->type);
        return false;
    }
    t->nbytes = numel / t->block * t->block_bytes;
    return true;
}

static bool walk(gguf_map *m) {
    if (m->size < 24 || memcmp(m->d, "GGUF", 4)) return false;
    if (!add_field(m, 0, 4, R_MAGIC, -1) || !add_field(m, 4, 4, R_VERSION, -1) || !add_field(m, 8, 8, R_COUNT, -1) ||
        !add_field(m, 16, 8, R_COUNT, -1))
        return false;
    m->n_tensors = corrupt_get_u64(m->d + 8);
    m->n_kv = corrupt_get_u64(m->d + 16);
    if (m->n_tensors > m->size / 8 || m->n_kv > m->size / 8) return false;
    m->kv = calloc(m->n_kv + 1, sizeof *m->kv);
    m->t = calloc(m->n_tensors + 1, sizeof *m->t);
    if (!m->kv || !m->t) return false;
    uint64_t p = 24;
    m->alignment = 32; /* GGUF_DEFAULT_ALIGNMENT */
    for (uint64_t i = 0; i < m->n_kv; i++) {
        if (!walk_kv(m, i, &p)) return false;
        const kv_pos *kv = &m->kv[i];
        if (kv->key_len == 17 && !memcmp(kv->key, "general.alignment", 17) && kv->type == 4)
            m->alignment = corrupt_get_u32(m->d + kv->value_off);
    }
    for (uint64_t i = 0; i < m->n_tensors; i++)
        if (!walk_tensor(m, i, &p)) return false;
    m->header_end = p;
    m->data_start = (p + m->alignment - 1) / m->alignment * m->alignment;
    m->req_end = m->header_end;
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        uint64_t end = m->data_start + m->t[i].offset + m->t[i].nbytes;
        if (end > m->size) return false;
        if (end > m->req_end) m->req_end = end;
    }
    return true;
}

/* ---- emitting ---- */

typedef struct patch {
    uint64_t off;
    uint8_t bytes[64];
    size_t n;
} patch;

static patch p_u32(uint64_t off, uint32_t v) {
    patch p = {.off = off, .n = 4};
    corrupt_put_u32(p.bytes, v);
    return p;
}

static patch p_u64(uint64_t off, uint64_t v) {
    patch p = {.off = off, .n = 8};
    corrupt_put_u64(p.bytes, v);
    return p;
}

/* A model GGUF without tensors (a vocabulary) cannot run whatever else holds. */
static void fix_vocab_only(const gguf_map *m, corrupt_case *c) {
    if (m->n_tensors == 0) c->expect[CMD_RUN] = c->expect[CMD_GENERATE] = EXPECT_FAIL;
}

static void emit(gguf_map *m, corrupt_case c, const patch *ps, size_t n) {
    fix_vocab_only(m, &c);
    for (size_t i = 0; i < n; i++) memcpy(m->buf + ps[i].off, ps[i].bytes, ps[i].n);
    corrupt_check_file(m->runner, &c, m->buf, m->size);
    for (size_t i = 0; i < n; i++) memcpy(m->buf + ps[i].off, m->d + ps[i].off, ps[i].n);
}

static void emit_truncated(gguf_map *m, corrupt_case c, uint64_t len) {
    fix_vocab_only(m, &c);
    corrupt_check_file(m->runner, &c, m->d, len);
}

/* Both `inspect` and the model commands must fail, or both may succeed. */
static corrupt_case mk2(const char *kind, corrupt_expect e, const char *what, uint64_t v) {
    return corrupt_case_make(kind, e, e, e, "%s = %" PRIu64 " (0x%" PRIx64 ")", what, v, v);
}

static const char *tname(const gguf_map *m, uint64_t i, char *buf, size_t n) {
    const tensor_pos *t = &m->t[i];
    snprintf(buf, n, "tensor %" PRIu64 " '%.*s'", i, (int)(t->name_len < 48 ? t->name_len : 48),
             (const char *)m->d + t->name_len_off + 8);
    return buf;
}

static const char *kname(const gguf_map *m, uint64_t i, char *buf, size_t n) {
    const kv_pos *kv = &m->kv[i];
    snprintf(buf, n, "kv %" PRIu64 " '%.*s'", i, (int)(kv->key_len < 48 ? kv->key_len : 48), kv->key);
    return buf;
}

/* Up to `want` tensor indices spread over the file, always including the first and the last. */
static size_t sample_tensors(const gguf_map *m, size_t want, uint64_t *out) {
    size_t n = 0;
    if (m->n_tensors == 0) return 0;
    if (m->n_tensors <= want) {
        for (uint64_t i = 0; i < m->n_tensors; i++) out[n++] = i;
        return n;
    }
    for (size_t k = 0; k < want; k++) out[n++] = k * (m->n_tensors - 1) / (want - 1);
    return n;
}

/* ---- mutations ---- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#define MAX_POINTS 2048

typedef struct points {
    uint64_t at[MAX_POINTS];
    const char *why[MAX_POINTS];
    size_t n;
} points;

static void add_point(points *ps, uint64_t at, const char *why) {
    if (ps->n < MAX_POINTS) {
        ps->at[ps->n] = at;
        ps->why[ps->n++] = why;
    }
}

/* Every structural boundary: a file cut there lacks the rest of the header or some tensor's data. */
static void truncate_boundaries(gguf_map *m) {
    static points ps;
    ps.n = 0;
    static const uint64_t fixed[] = {0, 1, 4, 8, 16, 24};
    static const char *fixed_why[] = {"empty", "inside the magic", "after the magic", "after the version",
                                      "after the tensor count", "after the kv count"};
    for (size_t i = 0; i < 6; i++) add_point(&ps, fixed[i], fixed_why[i]);
    for (uint64_t i = 0; i < m->n_kv; i++) {
        const kv_pos *kv = &m->kv[i];
        add_point(&ps, kv->start + 8, "after a key's length");
        add_point(&ps, kv->type_off, "after a key");
        add_point(&ps, kv->value_off, "after a value type");
        if (kv->type == 9) add_point(&ps, kv->value_off + 12, "after an array's type and count");
        if (kv->end - kv->value_off > 16) add_point(&ps, kv->value_off + (kv->end - kv->value_off) / 2, "mid-value");
        add_point(&ps, kv->end, "after a kv");
    }
    uint64_t idx[24];
    size_t n = sample_tensors(m, 24, idx);
    for (size_t k = 0; k < n; k++) {
        const tensor_pos *t = &m->t[idx[k]];
        add_point(&ps, t->ndims_off, "after a tensor name");
        add_point(&ps, t->type_off, "after a tensor's dims");
        add_point(&ps, t->end, "after a tensor info");
    }
    add_point(&ps, m->header_end, "end of the header");
    add_point(&ps, m->data_start, "start of the data section");
    n = sample_tensors(m, 12, idx);
    for (size_t k = 0; k < n; k++) {
        const tensor_pos *t = &m->t[idx[k]];
        add_point(&ps, m->data_start + t->offset, "start of a tensor's data");
        add_point(&ps, m->data_start + t->offset + t->nbytes / 2, "mid-tensor");
    }
    if (m->req_end) add_point(&ps, m->req_end - 1, "one byte short of the last tensor's end");
    /* sort by offset (carrying the reason), then drop repeats and points past the required end */
    static struct {
        uint64_t at;
        const char *why;
    } pairs[MAX_POINTS];
    for (size_t i = 0; i < ps.n; i++) pairs[i].at = ps.at[i], pairs[i].why = ps.why[i];
    qsort(pairs, ps.n, sizeof pairs[0], cmp_u64);
    for (size_t i = 0; i < ps.n; i++) {
        if ((i && pairs[i].at == pairs[i - 1].at) || pairs[i].at >= m->req_end) continue;
        emit_truncated(m,
                       corrupt_case_make("truncate-boundary", EXPECT_FAIL, EXPECT_FAIL, EXPECT_FAIL,
                                         "cut at %" PRIu64 " of %" PRIu64 " (%s; data needs %" PRIu64 ")",
                                         pairs[i].at, m->size, pairs[i].why, m->req_end),
                       pairs[i].at);
    }
}

static void truncate_random(gguf_map *m) {
    for (int i = 0; i < 16; i++) {
        uint64_t at = corrupt_below(&m->rng, m->req_end);
        emit_truncated(m,
                       corrupt_case_make("truncate-random", EXPECT_FAIL, EXPECT_FAIL, EXPECT_FAIL,
                                         "cut at %" PRIu64 " of %" PRIu64 " (data needs %" PRIu64 ")", at, m->size,
                                         m->req_end),
                       at);
    }
}

static const field *field_at(const gguf_map *m, uint64_t pos) {
    size_t lo = 0, hi = m->n_fields;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const field *f = &m->fields[mid];
        if (pos < f->off) hi = mid;
        else if (pos >= f->off + f->size) lo = mid + 1;
        else return f;
    }
    return NULL;
}

/* Would tensor i with this offset and size overlap another tensor or leave the file? */
static bool tensor_misplaced(const gguf_map *m, uint64_t i, uint64_t offset, uint64_t nbytes) {
    if (offset % m->alignment || offset > m->size || nbytes > m->size || m->data_start + offset + nbytes > m->size)
        return true;
    for (uint64_t j = 0; j < m->n_tensors; j++) {
        const tensor_pos *o = &m->t[j];
        if (j != i && nbytes && o->nbytes && offset < o->offset + o->nbytes && o->offset < offset + nbytes) return true;
    }
    return false;
}

/* What a byte flip at `pos` (the byte after it is `now`) must do, by the field it lands in. */
static corrupt_expect flip_expect(const gguf_map *m, uint64_t pos, uint8_t now) {
    const field *f = field_at(m, pos);
    if (!f) return EXPECT_ANY; /* padding */
    uint64_t k = pos - f->off;
    uint8_t word[8];
    memcpy(word, m->d + f->off, f->size < 8 ? f->size : 8);
    if (k < 8) word[k] = now;
    switch (f->role) {
    case R_MAGIC: return EXPECT_FAIL;
    case R_VERSION: {
        uint32_t v = corrupt_get_u32(word);
        return v == 2 || v == 3 ? EXPECT_ANY : EXPECT_FAIL;
    }
    case R_COUNT:
    case R_LEN:
    case R_ARR_N: return k >= 4 ? EXPECT_FAIL : EXPECT_ANY;
    case R_VTYPE:
    case R_ATYPE: return corrupt_get_u32(word) > 12 ? EXPECT_FAIL : EXPECT_ANY;
    case R_NDIMS: {
        uint32_t v = corrupt_get_u32(word);
        return v < 1 || v > 4 ? EXPECT_FAIL : EXPECT_ANY;
    }
    case R_TTYPE: return k >= 1 ? EXPECT_FAIL : EXPECT_ANY;
    case R_DIM: {
        if (k >= 4) return EXPECT_FAIL;
        const tensor_pos *t = &m->t[f->tensor];
        uint64_t numel = 1;
        for (uint32_t d = 0; d < t->n_dims; d++)
            numel *= t->dim_off[d] == f->off ? corrupt_get_u64(word) : t->ne[d];
        if (t->dim_off[0] == f->off && corrupt_get_u64(word) % t->block) return EXPECT_FAIL;
        return tensor_misplaced(m, (uint64_t)f->tensor, t->offset, numel / t->block * t->block_bytes) ? EXPECT_FAIL
                                                                                                      : EXPECT_ANY;
    }
    case R_TOFF: {
        if (k >= 4) return EXPECT_FAIL;
        const tensor_pos *t = &m->t[f->tensor];
        return tensor_misplaced(m, (uint64_t)f->tensor, corrupt_get_u64(word), t->nbytes) ? EXPECT_FAIL : EXPECT_ANY;
    }
    case R_BYTES: return EXPECT_ANY;
    }
    return EXPECT_ANY;
}

static void flip_header(gguf_map *m) {
    for (int i = 0; i < 48; i++) {
        uint64_t pos = corrupt_below(&m->rng, m->header_end);
        uint8_t x = (uint8_t)(1 + corrupt_below(&m->rng, 255));
        patch p = {.off = pos, .n = 1, .bytes = {(uint8_t)(m->d[pos] ^ x)}};
        const field *f = field_at(m, pos);
        static const char *const roles[] = {"magic",      "version",  "count",      "length",     "array count",
                                            "value type", "elem type", "value bytes", "tensor n_dims", "tensor dim",
                                            "tensor type", "tensor offset"};
        corrupt_expect e = flip_expect(m, pos, p.bytes[0]);
        emit(m,
             corrupt_case_make("flip-header", e, e, e, "byte %" PRIu64 " (%s, byte %" PRIu64 " of it) ^= 0x%02x", pos,
                               f ? roles[f->role] : "padding", f ? pos - f->off : 0, x),
             &p, 1);
    }
}

/* Tensor data is not validated (any bits decode to some number, maybe NaN): the model must simply
 * run or fail cleanly. */
static void flip_data(gguf_map *m) {
    if (m->n_tensors == 0) return;
    for (int i = 0; i < 6; i++) {
        uint64_t pos = m->data_start + corrupt_below(&m->rng, m->req_end - m->data_start);
        uint8_t x = (uint8_t)(1 + corrupt_below(&m->rng, 255));
        patch p = {.off = pos, .n = 1, .bytes = {(uint8_t)(m->d[pos] ^ x)}};
        emit(m, corrupt_case_make("flip-data", EXPECT_ANY, EXPECT_ANY, EXPECT_ANY, "byte %" PRIu64 " ^= 0x%02x", pos, x),
             &p, 1);
    }
}

static const uint64_t HUGE_U64[] = {(uint64_t)1 << 32, (uint64_t)1 << 60, (uint64_t)1 << 63, UINT64_MAX};

static void absurd_counts(gguf_map *m) {
    for (size_t i = 0; i < 4; i++) {
        patch p = p_u64(8, HUGE_U64[i]);
        emit(m, mk2("absurd-count", EXPECT_FAIL, "tensor count", HUGE_U64[i]), &p, 1);
        p = p_u64(16, HUGE_U64[i]);
        emit(m, mk2("absurd-count", EXPECT_FAIL, "kv count", HUGE_U64[i]), &p, 1);
    }
}

/* A u64 length at `off`: one past what remains of the file, and huge values. */
static void absurd_length(gguf_map *m, uint64_t off, const char *what) {
    uint64_t vals[] = {m->size - (off + 8) + 1, (uint64_t)1 << 40, UINT64_MAX};
    for (size_t i = 0; i < 3; i++) {
        patch p = p_u64(off, vals[i]);
        emit(m, mk2("absurd-length", EXPECT_FAIL, what, vals[i]), &p, 1);
    }
}

static void absurd_lengths(gguf_map *m) {
    char buf[96], what[160];
    for (uint64_t i = 0; i < m->n_kv; i++) {
        const kv_pos *kv = &m->kv[i];
        bool sampled = i == 0 || i + 1 == m->n_kv || kv->type == 8 || kv->type == 9;
        if (!sampled) continue;
        snprintf(what, sizeof what, "%s: key length", kname(m, i, buf, sizeof buf));
        absurd_length(m, kv->start, what);
        if (kv->type == 8) {
            snprintf(what, sizeof what, "%s: string length", kname(m, i, buf, sizeof buf));
            absurd_length(m, kv->value_off, what);
        } else if (kv->type == 9) {
            snprintf(what, sizeof what, "%s: array count", kname(m, i, buf, sizeof buf));
            absurd_length(m, kv->value_off + 4, what);
        }
    }
    uint64_t idx[3];
    size_t n = sample_tensors(m, 3, idx);
    for (size_t k = 0; k < n; k++) {
        snprintf(what, sizeof what, "%s: name length", tname(m, idx[k], buf, sizeof buf));
        absurd_length(m, m->t[idx[k]].name_len_off, what);
    }
}

static void bad_types(gguf_map *m) {
    char buf[96], what[160];
    static const uint32_t vtypes[] = {13, 0xFFFFFFFFu, 0x10008};
    for (uint64_t i = 0; i < m->n_kv; i += m->n_kv > 6 ? m->n_kv / 6 : 1) {
        for (size_t k = 0; k < 3; k++) {
            patch p = p_u32(m->kv[i].type_off, vtypes[k]);
            snprintf(what, sizeof what, "%s: value type", kname(m, i, buf, sizeof buf));
            emit(m, mk2("bad-type", EXPECT_FAIL, what, vtypes[k]), &p, 1);
        }
        if (m->kv[i].type == 9) {
            patch p = p_u32(m->kv[i].value_off, 13);
            snprintf(what, sizeof what, "%s: array element type", kname(m, i, buf, sizeof buf));
            emit(m, mk2("bad-type", EXPECT_FAIL, what, 13), &p, 1);
        }
    }
    static const uint32_t ttypes[] = {1000, 0x10000, 0xFFFFFFFFu};
    uint64_t idx[3];
    size_t n = sample_tensors(m, 3, idx);
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < 3; j++) {
            patch p = p_u32(m->t[idx[k]].type_off, ttypes[j]);
            snprintf(what, sizeof what, "%s: type", tname(m, idx[k], buf, sizeof buf));
            emit(m, mk2("bad-type", EXPECT_FAIL, what, ttypes[j]), &p, 1);
        }
}

static void absurd_dims(gguf_map *m) {
    char buf[96], what[160];
    uint64_t idx[4];
    size_t n = sample_tensors(m, 4, idx);
    for (size_t k = 0; k < n; k++) {
        const tensor_pos *t = &m->t[idx[k]];
        tname(m, idx[k], buf, sizeof buf);
        static const uint32_t ndims[] = {0, 5, 0xFFFFFFFFu};
        for (size_t j = 0; j < 3; j++) {
            patch p = p_u32(t->ndims_off, ndims[j]);
            snprintf(what, sizeof what, "%s: n_dims", buf);
            emit(m, mk2("absurd-dims", EXPECT_FAIL, what, ndims[j]), &p, 1);
        }
        static const uint64_t dims[] = {(uint64_t)1 << 32, (uint64_t)1 << 62, UINT64_MAX};
        for (size_t j = 0; j < 3; j++) {
            patch p = p_u64(t->dim_off[t->n_dims - 1], dims[j]);
            snprintf(what, sizeof what, "%s: ne[%u]", buf, t->n_dims - 1);
            emit(m, mk2("absurd-dims", EXPECT_FAIL, what, dims[j]), &p, 1);
        }
        if (t->n_dims >= 2) { /* 2^32 * 2^32 wraps to 0 in 64 bits: only checked multiplication sees it */
            patch ps[2] = {p_u64(t->dim_off[0], (uint64_t)1 << 32), p_u64(t->dim_off[1], (uint64_t)1 << 32)};
            snprintf(what, sizeof what, "%s: ne[0] and ne[1]", buf);
            emit(m, mk2("absurd-dims", EXPECT_FAIL, what, (uint64_t)1 << 32), ps, 2);
        }
        if (t->block > 1) { /* ggml: ne[0] must be a whole number of blocks */
            patch p = p_u64(t->dim_off[0], t->ne[0] + 1);
            snprintf(what, sizeof what, "%s: ne[0] not a multiple of the block size %u", buf, t->block);
            emit(m, mk2("absurd-dims", EXPECT_FAIL, what, t->ne[0] + 1), &p, 1);
        }
    }
}

static void bad_offsets(gguf_map *m) {
    char buf[96], what[160];
    uint64_t idx[4];
    size_t n = sample_tensors(m, 4, idx);
    uint64_t a = m->alignment;
    for (size_t k = 0; k < n; k++) {
        const tensor_pos *t = &m->t[idx[k]];
        tname(m, idx[k], buf, sizeof buf);
        uint64_t past = (m->size - m->data_start + a) / a * a;
        uint64_t vals[] = {past, (uint64_t)1 << 63, UINT64_MAX / a * a, UINT64_MAX};
        for (size_t j = 0; j < 4; j++) {
            patch p = p_u64(t->off_off, vals[j]);
            snprintf(what, sizeof what, "%s: offset", buf);
            emit(m, mk2("absurd-offset", EXPECT_FAIL, what, vals[j]), &p, 1);
        }
        if (a > 1) {
            uint64_t mis[] = {t->offset + 1, t->offset + a / 2};
            for (size_t j = 0; j < 2; j++) {
                patch p = p_u64(t->off_off, mis[j]);
                snprintf(what, sizeof what, "%s: offset not a multiple of the alignment %" PRIu64, buf, a);
                emit(m, mk2("misaligned", EXPECT_FAIL, what, mis[j]), &p, 1);
            }
        }
    }
}

/* Tensor i's data placed on (or into) tensor j's. */
static void overlaps(gguf_map *m) {
    char bi[96], bj[96], what[240];
    if (m->n_tensors < 2) return;
    for (int k = 0; k < 4; k++) {
        uint64_t i = corrupt_below(&m->rng, m->n_tensors), j = corrupt_below(&m->rng, m->n_tensors);
        const tensor_pos *ti = &m->t[i], *tj = &m->t[j];
        if (i == j || !ti->nbytes || !tj->nbytes) continue;
        uint64_t into = tj->offset + (tj->nbytes > m->alignment ? m->alignment : 0);
        uint64_t vals[] = {tj->offset, into};
        for (size_t v = 0; v < 2; v++) {
            if (v == 1 && into == tj->offset) continue;
            patch p = p_u64(ti->off_off, vals[v]);
            snprintf(what, sizeof what, "%s placed at offset %" PRIu64 ", inside %s", tname(m, i, bi, sizeof bi),
                     vals[v], tname(m, j, bj, sizeof bj));
            emit(m, corrupt_case_make("overlap", EXPECT_FAIL, EXPECT_FAIL, EXPECT_FAIL, "%s", what), &p, 1);
        }
    }
}

/* general.alignment: write it where it exists, else turn a 17-character u32 key into it
 * (general.file_type or <arch>.block_count: same length, same type). Invalid alignments fail;
 * valid ones fail only when the data no longer lines up or fits. */
static void alignments(gguf_map *m) {
    uint64_t at = UINT64_MAX;
    bool renamed = false;
    for (uint64_t i = 0; i < m->n_kv && at == UINT64_MAX; i++)
        if (m->kv[i].key_len == 17 && m->kv[i].type == 4 && !memcmp(m->kv[i].key, "general.alignment", 17)) at = i;
    for (uint64_t i = 0; i < m->n_kv && at == UINT64_MAX; i++)
        if (m->kv[i].key_len == 17 && m->kv[i].type == 4 && !memcmp(m->kv[i].key, "general.file_type", 17)) at = i;
    for (uint64_t i = 0; i < m->n_kv && at == UINT64_MAX; i++)
        if (m->kv[i].key_len == 17 && m->kv[i].type == 4) at = i;
    if (at == UINT64_MAX) return;
    const kv_pos *kv = &m->kv[at];
    renamed = memcmp(kv->key, "general.alignment", 17) != 0;
    static const uint32_t vals[] = {0, 1, 3, 4, 48, 0x80000001u, 8, 16, 64, 4096};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        uint32_t a = vals[k];
        corrupt_expect e = EXPECT_FAIL;
        if (a >= 8 && !(a & (a - 1))) { /* docs/gguf.md: a power of two and a multiple of 8 */
            uint64_t start = (m->header_end + a - 1) / a * a;
            bool fits = true;
            for (uint64_t i = 0; i < m->n_tensors; i++)
                fits &= m->t[i].offset % a == 0 && start + m->t[i].offset + m->t[i].nbytes <= m->size;
            e = fits ? EXPECT_ANY : EXPECT_FAIL;
        }
        patch ps[2] = {p_u32(kv->value_off, a), {.off = kv->start + 8, .n = 17}};
        memcpy(ps[1].bytes, "general.alignment", 17);
        corrupt_case c = corrupt_case_make("alignment", e, e, e, "general.alignment = %u%s%.*s", a,
                                           renamed ? ", written over " : "", renamed ? 17 : 0, kv->key);
        /* the renamed key is gone: a model that needed it cannot run (inspect may still list it) */
        if (renamed && memcmp(kv->key, "general.file_type", 17)) c.expect[CMD_RUN] = c.expect[CMD_GENERATE] = EXPECT_FAIL;
        emit(m, c, ps, 2);
    }
}

static void versions_and_magic(gguf_map *m) {
    static const uint32_t vers[] = {0, 1, 4, 0xFFFFFFFFu, 0x03000000u};
    for (size_t k = 0; k < 5; k++) {
        patch p = p_u32(4, vers[k]);
        emit(m, mk2("bad-version", EXPECT_FAIL, "version", vers[k]), &p, 1);
    }
    static const char *const magics[] = {"GGUG", "GGML", "FUGG", "\0\0\0\0"};
    for (size_t k = 0; k < 4; k++) {
        patch p = {.off = 0, .n = 4};
        memcpy(p.bytes, magics[k], 4);
        emit(m, corrupt_case_make("bad-magic", EXPECT_FAIL, EXPECT_FAIL, EXPECT_FAIL, "magic %02x %02x %02x %02x",
                                  p.bytes[0], p.bytes[1], p.bytes[2], p.bytes[3]),
             &p, 1);
    }
}

/* A second tensor or key under an existing name (same length, so nothing else moves). */
static void duplicates(gguf_map *m) {
    char bi[96], bj[96];
    int made = 0;
    for (uint64_t i = 0; i + 1 < m->n_tensors && made < 2; i++)
        for (uint64_t j = i + 1; j < m->n_tensors && made < 2; j++) {
            const tensor_pos *ti = &m->t[i], *tj = &m->t[j];
            if (ti->name_len != tj->name_len || ti->name_len > 64) continue;
            patch p = {.off = ti->name_len_off + 8, .n = (size_t)ti->name_len};
            if (p.n > sizeof p.bytes) continue;
            memcpy(p.bytes, m->d + tj->name_len_off + 8, p.n);
            emit(m,
                 corrupt_case_make("duplicate", EXPECT_FAIL, EXPECT_FAIL, EXPECT_FAIL, "%s renamed to the name of %s",
                                   tname(m, i, bi, sizeof bi), tname(m, j, bj, sizeof bj)),
                 &p, 1);
            made++;
            i = j; /* spread the pairs out */
        }
    made = 0;
    for (uint64_t i = 0; i + 1 < m->n_kv && made < 2; i++)
        for (uint64_t j = i + 1; j < m->n_kv && made < 2; j++) {
            const kv_pos *ki = &m->kv[i], *kj = &m->kv[j];
            if (ki->key_len != kj->key_len || ki->key_len > sizeof(((patch *)0)->bytes)) continue;
            patch p = {.off = ki->start + 8, .n = (size_t)ki->key_len};
            memcpy(p.bytes, kj->key, p.n);
            emit(m,
                 corrupt_case_make("duplicate", EXPECT_FAIL, EXPECT_FAIL, EXPECT_FAIL, "%s renamed to the key of %s",
                                   kname(m, i, bi, sizeof bi), kname(m, j, bj, sizeof bj)),
                 &p, 1);
            made++;
            i = j;
        }
}

/* ---- hyperparameters and tokenizer fields ---- */

typedef enum { HP_SIZE, HP_LAYERS, HP_CTX, HP_ROT, HP_WINDOW, HP_EPS, HP_BASE } hp_kind;

static const struct {
    const char *suffix;
    hp_kind kind;
} HPARAMS[] = {
    {"block_count", HP_LAYERS},
    {"embedding_length", HP_SIZE},
    {"feed_forward_length", HP_SIZE},
    {"attention.head_count", HP_SIZE},
    {"attention.head_count_kv", HP_SIZE},
    {"attention.key_length", HP_SIZE},
    {"attention.value_length", HP_SIZE},
    {"context_length", HP_CTX},
    {"rope.dimension_count", HP_ROT},
    {"attention.sliding_window", HP_WINDOW},
    {"attention.layer_norm_rms_epsilon", HP_EPS},
    {"rope.freq_base", HP_BASE},
    {"rope.freq_base_swa", HP_BASE},
};

static int64_t find_kv(const gguf_map *m, const char *key, uint32_t type) {
    size_t len = strlen(key);
    for (uint64_t i = 0; i < m->n_kv; i++)
        if (m->kv[i].key_len == len && m->kv[i].type == type && !memcmp(m->kv[i].key, key, len)) return (int64_t)i;
    return -1;
}

static void emit_u32(gguf_map *m, const char *kind, uint64_t kv, uint32_t v, corrupt_expect ins, corrupt_expect run,
                     corrupt_expect gen) {
    char buf[96];
    patch p = p_u32(m->kv[kv].value_off, v);
    emit(m, corrupt_case_make(kind, ins, run, gen, "%s = %u", kname(m, kv, buf, sizeof buf), v), &p, 1);
}

static void emit_f32(gguf_map *m, uint64_t kv, float v, corrupt_expect e) {
    char buf[96];
    uint32_t bits;
    memcpy(&bits, &v, 4);
    patch p = p_u32(m->kv[kv].value_off, bits);
    emit(m, corrupt_case_make("hparam", e, e, e, "%s = %g", kname(m, kv, buf, sizeof buf), (double)v), &p, 1);
}

/* Values that disagree with the tensors (the model check refuses them) or that are invalid in
 * themselves; context length and sliding window have no wrong value. */
static void hparam(gguf_map *m, uint64_t kv, hp_kind kind) {
    const corrupt_expect F = EXPECT_FAIL, A = EXPECT_ANY;
    uint32_t v = corrupt_get_u32(m->d + m->kv[kv].value_off);
    switch (kind) {
    case HP_SIZE:
        emit_u32(m, "hparam", kv, 0, F, F, F);
        emit_u32(m, "hparam", kv, UINT32_MAX, F, F, F);
        emit_u32(m, "hparam", kv, v + 1, F, F, F);
        break;
    case HP_LAYERS: /* 0 or 2^32-1 layers is reported as unsupported by inspect, not as malformed */
        emit_u32(m, "hparam", kv, v + 1, F, F, F);
        emit_u32(m, "hparam", kv, 0, A, F, F);
        emit_u32(m, "hparam", kv, UINT32_MAX, A, F, F);
        break;
    case HP_CTX:
    case HP_WINDOW:
        emit_u32(m, "hparam", kv, 0, A, A, A);
        emit_u32(m, "hparam", kv, 1, A, A, A);
        emit_u32(m, "hparam", kv, UINT32_MAX, A, A, A);
        break;
    case HP_ROT: /* rotary dims: an even number in [2, head_dim] */
        emit_u32(m, "hparam", kv, 0, F, F, F);
        emit_u32(m, "hparam", kv, v + 1, F, F, F);
        emit_u32(m, "hparam", kv, UINT32_MAX, F, F, F);
        break;
    case HP_EPS:
        emit_f32(m, kv, NAN, F);
        emit_f32(m, kv, -1.0f, F);
        emit_f32(m, kv, INFINITY, F);
        emit_f32(m, kv, 0.0f, F);
        emit_f32(m, kv, 3e38f, F);
        break;
    case HP_BASE:
        emit_f32(m, kv, NAN, F);
        emit_f32(m, kv, -1.0f, F);
        emit_f32(m, kv, 0.0f, F);
        emit_f32(m, kv, INFINITY, F);
        break;
    }
}

/* A string value changed in place to a name nobody knows (same length). */
static void unknown_name(gguf_map *m, const char *key, corrupt_expect ins, corrupt_expect run, corrupt_expect gen) {
    int64_t kv = find_kv(m, key, 8);
    if (kv < 0) return;
    uint64_t len = corrupt_get_u64(m->d + m->kv[kv].value_off);
    if (len == 0 || len > 32) return;
    patch p = {.off = m->kv[kv].value_off + 8, .n = 1, .bytes = {'x'}};
    emit(m,
         corrupt_case_make("unknown-name", ins, run, gen, "%s = 'x%.*s'", key, (int)len - 1,
                           (const char *)m->d + m->kv[kv].value_off + 9),
         &p, 1);
}

static void hparams(gguf_map *m) {
    const corrupt_expect F = EXPECT_FAIL, A = EXPECT_ANY;
    int64_t arch = find_kv(m, "general.architecture", 8);
    if (arch >= 0 && m->n_tensors) {
        const kv_pos *a = &m->kv[arch];
        uint64_t alen = corrupt_get_u64(m->d + a->value_off);
        for (size_t k = 0; k < sizeof HPARAMS / sizeof HPARAMS[0]; k++) {
            char key[128];
            snprintf(key, sizeof key, "%.*s.%s", (int)(alen < 32 ? alen : 32), (const char *)m->d + a->value_off + 8,
                     HPARAMS[k].suffix);
            int64_t kv = find_kv(m, key, HPARAMS[k].kind == HP_EPS || HPARAMS[k].kind == HP_BASE ? 6 : 4);
            if (kv >= 0) hparam(m, (uint64_t)kv, HPARAMS[k].kind);
        }
    }
    /* An unknown architecture is reported by inspect, and nothing runs it. */
    unknown_name(m, "general.architecture", A, F, F);
    /* An unknown tokenizer model: `run` needs the tokenizer, `generate` takes ids. */
    unknown_name(m, "tokenizer.ggml.model", A, F, A);
    /* Special ids outside the vocabulary: llama.cpp keeps the vocabulary's default for such ids
     * (0xFFFFFFFF is its "none"), so a loader may run on. */
    int64_t bos = find_kv(m, "tokenizer.ggml.bos_token_id", 4), tokens = find_kv(m, "tokenizer.ggml.tokens", 9);
    if (bos >= 0 && tokens >= 0) {
        uint32_t n_vocab = (uint32_t)corrupt_get_u64(m->d + m->kv[tokens].value_off + 4);
        emit_u32(m, "token-id", (uint64_t)bos, n_vocab, A, A, A);
        emit_u32(m, "token-id", (uint64_t)bos, UINT32_MAX - 1, A, A, A);
    }
    int64_t eos = find_kv(m, "tokenizer.ggml.eos_token_id", 4);
    if (eos >= 0) {
        emit_u32(m, "token-id", (uint64_t)eos, UINT32_MAX - 1, A, A, A);
        emit_u32(m, "token-id", (uint64_t)eos, 1u << 31, A, A, A);
    }
}

bool corrupt_gguf_cases(corrupt_runner *r, const char *label, const uint8_t *data, size_t size) {
    gguf_map m = {.runner = r, .label = label, .d = data, .size = size, .rng = corrupt_rng_for(label)};
    bool ok = (m.buf = malloc(size)) != NULL && walk(&m);
    if (!ok) {
        t_fail(__FILE__, __LINE__, "%s: the test's GGUF walker cannot read the fixture", label);
    } else {
        memcpy(m.buf, data, size);
        corrupt_expect model = m.n_tensors ? EXPECT_OK : EXPECT_FAIL;
        emit(&m, corrupt_case_make("baseline", EXPECT_OK, model, model, "the fixture unchanged"), NULL, 0);
        truncate_boundaries(&m);
        truncate_random(&m);
        flip_header(&m);
        flip_data(&m);
        absurd_counts(&m);
        absurd_lengths(&m);
        bad_types(&m);
        absurd_dims(&m);
        bad_offsets(&m);
        overlaps(&m);
        alignments(&m);
        versions_and_magic(&m);
        duplicates(&m);
        hparams(&m);
    }
    free(m.buf);
    free(m.fields);
    free(m.kv);
    free(m.t);
    return ok;
}
