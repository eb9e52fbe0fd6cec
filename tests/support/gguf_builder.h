/* Test-only GGUF byte builder: writes the format field by field (ggml docs/gguf.md), so tests can
 * craft valid files and precisely corrupted ones in memory. It never validates anything: a
 * builder that refused bad files could not make them. Allocation failure exits the test. */
#ifndef RLX_TESTS_GGUF_BUILDER_H
#define RLX_TESTS_GGUF_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gguf_builder {
    uint8_t *buf; /* owned */
    size_t len;
    size_t cap;
} gguf_builder;

void gb_init(gguf_builder *b);
void gb_free(gguf_builder *b);

/* Raw little-endian fields. */
void gb_bytes(gguf_builder *b, const void *p, size_t n);
void gb_zeros(gguf_builder *b, size_t n);
void gb_u8(gguf_builder *b, uint8_t v);
void gb_u16(gguf_builder *b, uint16_t v);
void gb_u32(gguf_builder *b, uint32_t v);
void gb_u64(gguf_builder *b, uint64_t v);
void gb_f32(gguf_builder *b, float v);
void gb_f64(gguf_builder *b, double v);
void gb_str(gguf_builder *b, const char *s);                  /* u64 length + bytes */
void gb_pad(gguf_builder *b, uint32_t alignment);             /* zeros up to a multiple */
void gb_patch_u32(gguf_builder *b, size_t at, uint32_t v);    /* overwrite in place */
void gb_patch_u64(gguf_builder *b, size_t at, uint64_t v);

/* Structure: "GGUF", version, tensor count, kv count (the counts are at offsets 8 and 16). */
void gb_header(gguf_builder *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
/* A kv's key and value type; the caller writes the value (for arrays: gb_arr, then elements). */
void gb_kv(gguf_builder *b, const char *key, uint32_t value_type);
void gb_arr(gguf_builder *b, uint32_t elem_type, uint64_t n); /* an array value's type + count */
void gb_kv_u32(gguf_builder *b, const char *key, uint32_t v);
void gb_kv_str(gguf_builder *b, const char *key, const char *v);
/* A tensor info; ne has n_dims entries (ne[0] contiguous). */
void gb_tensor(gguf_builder *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
               uint64_t offset);

/* One F32 tensor of a hand-built model: its name and shape (ne[0] contiguous; ne[1] = 1 when 1-D). */
typedef struct gb_f32_tensor {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[2];
} gb_f32_tensor;

/* The tensor infos of t[0..n), F32, each at a 32-byte aligned offset (the default alignment). */
void gb_f32_infos(gguf_builder *b, const gb_f32_tensor *t, size_t n);
/* The data section after those infos: padding to 32, then each tensor's values, fill(i, row, col)
 * for tensor i (zeros when fill is NULL), each padded to 32. */
void gb_f32_data(gguf_builder *b, const gb_f32_tensor *t, size_t n, float (*fill)(size_t i, uint64_t row, uint64_t col));

/* The small valid v3 file most tests start from. Metadata: one kv of every value type, arrays of
 * u32 and strings, an array of arrays of strings, general.alignment = 64. Tensors (data section at
 * the header end padded to 64; the file ends exactly at the last tensor's last byte):
 *   "t.f32"  F32  [4, 2] at 0:   0, 1, ..., 7
 *   "t.q8"   Q8_0 [32]   at 64:  d = 1.0 (f16 0x3C00), quants -16..15
 *   "t.f16"  F16  [8]    at 128: 1.0, -2.0, 0.5, 65504, 2^-24, -0, 0.25, 3.0 */
void gb_small_valid(gguf_builder *b, uint32_t version);

#endif
