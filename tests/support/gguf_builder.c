#include "gguf_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/format/gguf.h"

void gb_init(gguf_builder *b) { *b = (gguf_builder){0}; }

void gb_free(gguf_builder *b) {
    free(b->buf);
    *b = (gguf_builder){0};
}

static void reserve(gguf_builder *b, size_t n) {
    if (b->cap - b->len >= n) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) cap *= 2;
    uint8_t *p = realloc(b->buf, cap);
    if (!p) {
        fprintf(stderr, "gguf_builder: out of memory (%zu bytes)\n", cap);
        exit(1);
    }
    b->buf = p;
    b->cap = cap;
}

void gb_bytes(gguf_builder *b, const void *p, size_t n) {
    reserve(b, n);
    if (n) memcpy(b->buf + b->len, p, n);
    b->len += n;
}

void gb_zeros(gguf_builder *b, size_t n) {
    reserve(b, n);
    memset(b->buf + b->len, 0, n);
    b->len += n;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void le(gguf_builder *b, uint64_t v, int n) {
    reserve(b, (size_t)n);
    put_le(b->buf + b->len, v, n);
    b->len += (size_t)n;
}

void gb_u8(gguf_builder *b, uint8_t v) { le(b, v, 1); }
void gb_u16(gguf_builder *b, uint16_t v) { le(b, v, 2); }
void gb_u32(gguf_builder *b, uint32_t v) { le(b, v, 4); }
void gb_u64(gguf_builder *b, uint64_t v) { le(b, v, 8); }

void gb_f32(gguf_builder *b, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    gb_u32(b, u);
}

void gb_f64(gguf_builder *b, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    gb_u64(b, u);
}

void gb_str(gguf_builder *b, const char *s) {
    size_t n = strlen(s);
    gb_u64(b, n);
    gb_bytes(b, s, n);
}

void gb_pad(gguf_builder *b, uint32_t alignment) {
    size_t rem = b->len % alignment;
    if (rem) gb_zeros(b, alignment - rem);
}

void gb_patch_u32(gguf_builder *b, size_t at, uint32_t v) { put_le(b->buf + at, v, 4); }
void gb_patch_u64(gguf_builder *b, size_t at, uint64_t v) { put_le(b->buf + at, v, 8); }

void gb_header(gguf_builder *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

void gb_kv(gguf_builder *b, const char *key, uint32_t value_type) {
    gb_str(b, key);
    gb_u32(b, value_type);
}

void gb_arr(gguf_builder *b, uint32_t elem_type, uint64_t n) {
    gb_u32(b, elem_type);
    gb_u64(b, n);
}

void gb_kv_u32(gguf_builder *b, const char *key, uint32_t v) {
    gb_kv(b, key, RLX_GGUF_UINT32);
    gb_u32(b, v);
}

void gb_kv_str(gguf_builder *b, const char *key, const char *v) {
    gb_kv(b, key, RLX_GGUF_STRING);
    gb_str(b, v);
}

void gb_tensor(gguf_builder *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
               uint64_t offset) {
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gb_u64(b, ne[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

static uint64_t f32_bytes(const gb_f32_tensor *t) { return t->ne[0] * (t->n_dims > 1 ? t->ne[1] : 1) * 4; }

void gb_f32_infos(gguf_builder *b, const gb_f32_tensor *t, size_t n) {
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        gb_tensor(b, t[i].name, t[i].n_dims, t[i].ne, RLX_DTYPE_F32, off);
        off += (f32_bytes(&t[i]) + 31) / 32 * 32;
    }
}

void gb_f32_data(gguf_builder *b, const gb_f32_tensor *t, size_t n, float (*fill)(size_t i, uint64_t row, uint64_t col)) {
    gb_pad(b, 32);
    for (size_t i = 0; i < n; i++) {
        if (!fill) gb_zeros(b, (size_t)f32_bytes(&t[i]));
        uint64_t rows = t[i].n_dims > 1 ? t[i].ne[1] : 1;
        for (uint64_t r = 0; fill && r < rows; r++)
            for (uint64_t c = 0; c < t[i].ne[0]; c++) gb_f32(b, fill(i, r, c));
        gb_pad(b, 32);
    }
}

static void small_valid_kvs(gguf_builder *b) {
    gb_kv_str(b, "general.architecture", "test");
    gb_kv(b, "test.u8", RLX_GGUF_UINT8), gb_u8(b, 200);
    gb_kv(b, "test.i8", RLX_GGUF_INT8), gb_u8(b, 0xfe); /* -2 */
    gb_kv(b, "test.u16", RLX_GGUF_UINT16), gb_u16(b, 60000);
    gb_kv(b, "test.i16", RLX_GGUF_INT16), gb_u16(b, 0x8000); /* -32768 */
    gb_kv_u32(b, "test.u32", 7);
    gb_kv(b, "test.i32", RLX_GGUF_INT32), gb_u32(b, (uint32_t)-5);
    gb_kv(b, "test.f32", RLX_GGUF_FLOAT32), gb_f32(b, 0.5f);
    gb_kv(b, "test.bool", RLX_GGUF_BOOL), gb_u8(b, 1);
    gb_kv(b, "test.u64", RLX_GGUF_UINT64), gb_u64(b, 1ull << 40);
    gb_kv(b, "test.i64", RLX_GGUF_INT64), gb_u64(b, (uint64_t)-3);
    gb_kv(b, "test.f64", RLX_GGUF_FLOAT64), gb_f64(b, 0.1);
    gb_kv(b, "test.arr_u32", RLX_GGUF_ARRAY), gb_arr(b, RLX_GGUF_UINT32, 3);
    for (uint32_t i = 1; i <= 3; i++) gb_u32(b, i);
    gb_kv(b, "test.arr_str", RLX_GGUF_ARRAY), gb_arr(b, RLX_GGUF_STRING, 2);
    gb_str(b, "a"), gb_str(b, "bc");
    gb_kv(b, "test.nested", RLX_GGUF_ARRAY), gb_arr(b, RLX_GGUF_ARRAY, 2);
    gb_arr(b, RLX_GGUF_STRING, 1), gb_str(b, "x");
    gb_arr(b, RLX_GGUF_STRING, 2), gb_str(b, "y"), gb_str(b, "z");
    gb_kv_u32(b, "general.alignment", 64);
}

#define SMALL_VALID_N_KV 16

void gb_small_valid(gguf_builder *b, uint32_t version) {
    gb_header(b, version, 3, SMALL_VALID_N_KV);
    small_valid_kvs(b);
    gb_tensor(b, "t.f32", 2, (const uint64_t[]){4, 2}, RLX_DTYPE_F32, 0);
    gb_tensor(b, "t.q8", 1, (const uint64_t[]){32}, RLX_DTYPE_Q8_0, 64);
    gb_tensor(b, "t.f16", 1, (const uint64_t[]){8}, RLX_DTYPE_F16, 128);
    gb_pad(b, 64);
    size_t data = b->len;
    for (int i = 0; i < 8; i++) gb_f32(b, (float)i);
    gb_zeros(b, data + 64 - b->len);
    gb_u16(b, 0x3c00);
    for (int i = -16; i < 16; i++) gb_u8(b, (uint8_t)(int8_t)i);
    gb_zeros(b, data + 128 - b->len);
    static const uint16_t f16[8] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000, 0x3400, 0x4200};
    for (int i = 0; i < 8; i++) gb_u16(b, f16[i]);
}
