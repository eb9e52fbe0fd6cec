/* Bad input for the GGUF reader, crafted byte by byte with tests/gguf_builder: every case must
 * give a clear error (code + a distinctive part of the message) and never read outside the
 * buffer. Each buffer is a fresh malloc of exactly its size, so ASan builds catch any over-read.
 * Expectations come from the format (ggml docs/gguf.md) and llama.cpp's gguf.cpp rules.
 *
 * With `--write-corpus DIR` it instead writes the seed inputs of the fuzz_gguf target. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_builder.h"
#include "loader/core/dequant.h"
#include "loader/format/gguf.h"
#include "loader/core/mapped_file.h"
#include "test_util.h"

/* Opens exactly `len` bytes of b from a private heap copy. */
static rlx_status open_prefix(const gguf_builder *b, size_t len, rlx_gguf **out) {
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) exit(1);
    memcpy(copy, b->buf, len);
    rlx_status s = rlx_gguf_open_memory(copy, len, out);
    if (s) free(copy);
    return s;
}

static void close_with_copy(rlx_gguf *g) {
    if (!g) return;
    void *base = (void *)g->base;
    rlx_gguf_close(g);
    free(base);
}

static rlx_status open_all(const gguf_builder *b) {
    rlx_gguf *g = NULL;
    rlx_status s = open_prefix(b, b->len, &g);
    close_with_copy(g);
    return s;
}

#define EXPECT_ERR(b, code, needle) T_ERR(open_all(b), code, needle)

/* ---- the valid file and its truncations ---- */

static void test_small_valid_reads_back(uint32_t version) {
    gguf_builder b;
    gb_init(&b);
    gb_small_valid(&b, version);
    rlx_gguf *g = NULL;
    if (!T_OK(open_prefix(&b, b.len, &g))) {
        gb_free(&b);
        return;
    }
    T_CHECK(g->version == version && g->n_kv == 16 && g->n_tensors == 3, "v%u: version %u, %" PRIu64 " kvs, %" PRIu64 " tensors",
            version, g->version, g->n_kv, g->n_tensors);
    T_CHECK(g->alignment == 64, "alignment %u, expected 64", g->alignment);
    T_CHECK(g->data_offset % 64 == 0 && g->data_offset + 144 == b.len, "data_offset %" PRIu64 " (file %zu bytes)",
            g->data_offset, b.len);
    const rlx_gguf_tensor *t = rlx_gguf_find_tensor(g, "t.f32");
    T_CHECK(t && t->type == RLX_DTYPE_F32 && t->n_dims == 2 && t->ne[0] == 4 && t->ne[1] == 2 && t->ne[2] == 1 &&
                t->n_elements == 8 && t->nbytes == 32 && t->data == g->base + g->data_offset,
            "t.f32 info");
    float f[32];
    if (t) {
        T_OK(rlx_dequantize_tensor(t->type, t->data, t->nbytes, f, t->n_elements, "t.f32"));
        for (int i = 0; i < 8; i++) T_CHECK(f[i] == (float)i, "t.f32[%d] = %g", i, f[i]);
    }
    t = rlx_gguf_find_tensor(g, "t.q8");
    T_CHECK(t && t->offset == 64 && t->nbytes == 34, "t.q8 info");
    if (t) {
        T_OK(rlx_dequantize_tensor(t->type, t->data, t->nbytes, f, 32, "t.q8"));
        for (int i = 0; i < 32; i++) T_CHECK(f[i] == (float)(i - 16), "t.q8[%d] = %g", i, f[i]);
    }
    t = rlx_gguf_find_tensor(g, "t.f16");
    static const float f16_want[8] = {1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f, -0.0f, 0.25f, 3.0f};
    T_CHECK(t != NULL, "t.f16 missing");
    if (t) {
        T_OK(rlx_dequantize_tensor(t->type, t->data, t->nbytes, f, 8, "t.f16"));
        for (int i = 0; i < 8; i++)
            T_CHECK(f[i] == f16_want[i] && signbit(f[i]) == signbit(f16_want[i]), "t.f16[%d] = %g", i, f[i]);
    }
    T_CHECK(rlx_gguf_find_tensor(g, "t.f3") == NULL && rlx_gguf_find_tensor(g, "t.f32x") == NULL, "prefix names found");
    close_with_copy(g);
    gb_free(&b);
}

static void test_every_truncation_fails(void) {
    gguf_builder b;
    gb_init(&b);
    gb_small_valid(&b, 3);
    int bad = 0;
    for (size_t len = 0; len < b.len; len++) {
        rlx_gguf *g = NULL;
        rlx_status s = open_prefix(&b, len, &g);
        t_checks++;
        if (!s) {
            close_with_copy(g);
            t_fail(__FILE__, __LINE__, "prefix of %zu bytes opened", len);
            bad++;
            continue;
        }
        const char *m = rlx_status_message(s);
        if (rlx_status_code(s) != RLX_ERR_BAD_FILE || !strstr(m, "end of file")) {
            t_fail(__FILE__, __LINE__, "prefix of %zu bytes: %s: %s", len, rlx_code_name(rlx_status_code(s)), m);
            bad++;
        }
        rlx_status_free(s);
    }
    printf("truncation: %zu prefixes of a %zu-byte file, %d opened or gave an unexpected error\n", b.len, b.len, bad);
    gb_free(&b);
}

/* ---- header ---- */

static void test_header(void) {
    gguf_builder b;
    gb_init(&b);
    gb_small_valid(&b, 3);
    memcpy(b.buf, "GGUG", 4);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "bad magic 'GGUG'");
    memcpy(b.buf, "GGUF", 4);
    gb_patch_u32(&b, 4, 1);
    EXPECT_ERR(&b, RLX_ERR_UNSUPPORTED, "unsupported GGUF version 1");
    gb_patch_u32(&b, 4, 4);
    EXPECT_ERR(&b, RLX_ERR_UNSUPPORTED, "unsupported GGUF version 4");
    gb_patch_u32(&b, 4, 0);
    EXPECT_ERR(&b, RLX_ERR_UNSUPPORTED, "unsupported GGUF version 0");
    memcpy(b.buf + 4, (const uint8_t[]){0, 0, 0, 3}, 4); /* 3 written big-endian */
    EXPECT_ERR(&b, RLX_ERR_UNSUPPORTED, "big-endian GGUF (version 3) is not supported");
    gb_patch_u32(&b, 4, 3);
    gb_patch_u64(&b, 8, 1ull << 60);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "tensor count 1152921504606846976 is impossible");
    gb_patch_u64(&b, 8, 3);
    gb_patch_u64(&b, 16, 1ull << 60);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv count 1152921504606846976 is impossible");
    gb_patch_u64(&b, 16, UINT64_MAX);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv count 18446744073709551615 is impossible");
    /* Each count alone fits, together they do not. */
    uint64_t remain = b.len - 24;
    gb_patch_u64(&b, 16, remain / 14);
    gb_patch_u64(&b, 8, remain / 32);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "tensor infos need at least");
    gb_free(&b);
    T_ERR(rlx_gguf_open_memory(NULL, 0, &(rlx_gguf *){NULL}), RLX_ERR_BAD_FILE, "magic (4 bytes at offset 0) runs past the end of file (0 bytes)");
    T_ERR(rlx_gguf_open_memory("GGUF", 4, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
}

/* ---- metadata ---- */

/* A v3 file with no tensors whose only kv is whatever `write` appends. */
static void one_kv_file(gguf_builder *b, uint64_t n_kv) {
    gb_init(b);
    gb_header(b, 3, 0, n_kv);
}

static void test_metadata(void) {
    gguf_builder b;

    one_kv_file(&b, 1);
    gb_u64(&b, 1000000000000000000ull); /* key length */
    gb_zeros(&b, 20);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv 0: key length 1000000000000000000 at offset 24 overruns the end of file");
    gb_free(&b);

    one_kv_file(&b, 1);
    gb_kv(&b, "general.name", RLX_GGUF_STRING);
    gb_u64(&b, 1000000000000000000ull);
    gb_bytes(&b, "abc", 3);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv 0 ('general.name'): string length 1000000000000000000 at offset 48 overruns");
    gb_free(&b);

    one_kv_file(&b, 1);
    gb_kv(&b, "a", RLX_GGUF_ARRAY);
    gb_arr(&b, RLX_GGUF_UINT32, 1ull << 40);
    gb_zeros(&b, 16);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "array of 1099511627776 u32 elements at offset 37 overruns the end of file");
    gb_free(&b);

    one_kv_file(&b, 1);
    gb_kv(&b, "a", RLX_GGUF_ARRAY);
    gb_arr(&b, RLX_GGUF_STRING, 3);
    gb_str(&b, "x");
    gb_u64(&b, 99); /* the second string overruns; the zeros let the element count pass */
    gb_zeros(&b, 32);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "string length 99");
    gb_free(&b);

    one_kv_file(&b, 1);
    gb_kv(&b, "a", 13);
    gb_u32(&b, 0);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv 0 ('a'): value type 13 at offset 33 is not a GGUF value type");
    gb_free(&b);

    one_kv_file(&b, 1);
    gb_kv(&b, "a", RLX_GGUF_ARRAY);
    gb_arr(&b, 42, 0);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "array element type 42");
    gb_free(&b);

    one_kv_file(&b, 2);
    gb_kv(&b, "", RLX_GGUF_UINT8);
    gb_u8(&b, 0);
    gb_kv_u32(&b, "b", 1);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv 0: empty key at offset 24");
    gb_free(&b);

    one_kv_file(&b, 3);
    gb_kv_u32(&b, "k", 1);
    gb_kv_u32(&b, "j", 2);
    gb_kv_str(&b, "k", "again");
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "duplicate key 'k' (kv 0 and kv 2)");
    gb_free(&b);
}

/* `levels` arrays nested inside each other, the innermost an empty u8 array. */
static void nested_file(gguf_builder *b, int levels) {
    one_kv_file(b, 1);
    gb_kv(b, "deep", RLX_GGUF_ARRAY);
    for (int i = 1; i < levels; i++) gb_arr(b, RLX_GGUF_ARRAY, 1);
    gb_arr(b, RLX_GGUF_UINT8, 0);
}

static void test_nesting(void) {
    gguf_builder b;
    nested_file(&b, 8);
    rlx_gguf *g = NULL;
    if (T_OK(open_prefix(&b, b.len, &g))) {
        const rlx_gguf_value *v = &rlx_gguf_find(g, "deep")->value;
        int depth = 1;
        while (v->arr.elem_type == RLX_GGUF_ARRAY && v->arr.n == 1) v = &v->arr.items[0], depth++;
        T_CHECK(depth == 8 && v->arr.elem_type == RLX_GGUF_UINT8 && v->arr.n == 0, "8 levels read back as %d", depth);
        close_with_copy(g);
    }
    gb_free(&b);
    nested_file(&b, 9);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv 0 ('deep'): arrays nested deeper than 8 levels");
    gb_free(&b);
    nested_file(&b, 100000); /* a depth bomb: must not recurse 100000 deep */
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "arrays nested deeper than 8 levels");
    gb_free(&b);
}

/* ---- tensor infos and data ---- */

typedef struct tensor_spec {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[5];
    uint32_t type;
    uint64_t offset;
} tensor_spec;

/* A v3 file with general.alignment = `alignment` (0: no such kv), the given tensor infos, and
 * data_bytes zero bytes of data after the padded header. */
static void tensor_file(gguf_builder *b, uint32_t alignment, const tensor_spec *ts, int n, size_t data_bytes) {
    gb_init(b);
    gb_header(b, 3, (uint64_t)n, alignment ? 2 : 1);
    gb_kv_str(b, "general.architecture", "test");
    if (alignment) gb_kv_u32(b, "general.alignment", alignment);
    for (int i = 0; i < n; i++) gb_tensor(b, ts[i].name, ts[i].n_dims, ts[i].ne, ts[i].type, ts[i].offset);
    gb_pad(b, alignment && (alignment & (alignment - 1)) == 0 ? alignment : 32);
    gb_zeros(b, data_bytes);
}

static void expect_tensor_err(const tensor_spec *ts, int n, size_t data_bytes, int code, const char *needle) {
    gguf_builder b;
    tensor_file(&b, 0, ts, n, data_bytes);
    EXPECT_ERR(&b, code, needle);
    gb_free(&b);
}

static void test_tensor_infos(void) {
    expect_tensor_err((tensor_spec[]){{"w", 1, {4}, RLX_DTYPE_F32, 1024}}, 1, 16, RLX_ERR_BAD_FILE,
                      "tensor 'w': data [1152, 1168) extends past end of file (144 bytes)");
    expect_tensor_err((tensor_spec[]){{"w", 2, {1000, 1000}, RLX_DTYPE_F32, 0}}, 1, 64, RLX_ERR_BAD_FILE,
                      "data [128, 4000128) extends past end of file");
    expect_tensor_err((tensor_spec[]){{"w", 1, {4}, RLX_DTYPE_F32, UINT64_MAX - 31}}, 1, 64, RLX_ERR_BAD_FILE,
                      "overflows 64 bits");
    expect_tensor_err((tensor_spec[]){{"w", 1, {4}, RLX_DTYPE_F32, 16}}, 1, 64, RLX_ERR_BAD_FILE,
                      "data offset 16 is not a multiple of the alignment 32");
    expect_tensor_err((tensor_spec[]){{"w", 0, {0}, RLX_DTYPE_F32, 0}}, 1, 64, RLX_ERR_BAD_FILE, "n_dims is 0");
    expect_tensor_err((tensor_spec[]){{"w", 5, {1, 1, 1, 1, 1}, RLX_DTYPE_F32, 0}}, 1, 64, RLX_ERR_BAD_FILE,
                      "n_dims is 5");
    expect_tensor_err((tensor_spec[]){{"w", 2, {1ull << 32, 1ull << 32}, RLX_DTYPE_F32, 0}}, 1, 64, RLX_ERR_BAD_FILE,
                      "shape [4294967296, 4294967296] has too many elements");
    expect_tensor_err((tensor_spec[]){{"w", 3, {1ull << 31, 1ull << 31, 2}, RLX_DTYPE_F32, 0}}, 1, 64,
                      RLX_ERR_BAD_FILE, "too many elements");
    expect_tensor_err((tensor_spec[]){{"w", 1, {1ull << 63}, RLX_DTYPE_I8, 0}}, 1, 64, RLX_ERR_BAD_FILE,
                      "too many elements");
    /* Elements fit int64, bytes do not. */
    expect_tensor_err((tensor_spec[]){{"w", 1, {1ull << 62}, RLX_DTYPE_F32, 0}}, 1, 64, RLX_ERR_BAD_FILE,
                      "overflows 64 bits");
    expect_tensor_err((tensor_spec[]){{"w", 2, {33, 2}, RLX_DTYPE_Q4_0, 0}}, 1, 64, RLX_ERR_BAD_FILE,
                      "row length ne[0] = 33 is not a multiple of the Q4_0 block size 32");
    expect_tensor_err((tensor_spec[]){{"w", 1, {4}, 99, 0}}, 1, 64, RLX_ERR_UNSUPPORTED,
                      "tensor 0 ('w'): unknown tensor type 99");
    expect_tensor_err((tensor_spec[]){{"w", 1, {4}, 4, 0}}, 1, 64, RLX_ERR_UNSUPPORTED, "unknown tensor type 4");
    expect_tensor_err((tensor_spec[]){{"a", 1, {4}, RLX_DTYPE_F32, 0}, {"b", 1, {4}, RLX_DTYPE_F32, 32},
                                      {"a", 1, {4}, RLX_DTYPE_F32, 64}},
                      3, 96, RLX_ERR_BAD_FILE, "duplicate tensor name 'a' (tensor 0 and tensor 2)");
    expect_tensor_err((tensor_spec[]){{"a", 1, {16}, RLX_DTYPE_F32, 0}, {"b", 1, {4}, RLX_DTYPE_F32, 32}}, 2, 96,
                      RLX_ERR_BAD_FILE, "tensors 'a' [");
    expect_tensor_err((tensor_spec[]){{"a", 1, {16}, RLX_DTYPE_F32, 64}, {"b", 1, {64}, RLX_DTYPE_F32, 0},
                                      {"c", 1, {4}, RLX_DTYPE_F32, 128}},
                      3, 256, RLX_ERR_BAD_FILE, "overlap");
}

static void test_tensor_edge_cases_open(void) {
    gguf_builder b;
    /* A zero-sized dimension is legal (llama.cpp accepts it): no bytes, so nothing can overlap. */
    tensor_file(&b, 0, (tensor_spec[]){{"empty", 2, {0, 8}, RLX_DTYPE_F32, 0}, {"w", 1, {8}, RLX_DTYPE_F32, 0}}, 2, 32);
    T_OK(open_all(&b));
    gb_free(&b);
    /* Still empty when the other dims' product would overflow (llama.cpp: ggml_nelements is 0). */
    tensor_file(&b, 0, (tensor_spec[]){{"empty", 3, {1ull << 40, 1ull << 40, 0}, RLX_DTYPE_F32, 0}}, 1, 0);
    rlx_gguf *g = NULL;
    if (T_OK(open_prefix(&b, b.len, &g))) {
        T_CHECK(g->tensors[0].n_elements == 0 && g->tensors[0].nbytes == 0, "[2^40, 2^40, 0] has %" PRIu64 " elements",
                g->tensors[0].n_elements);
        close_with_copy(g);
    }
    gb_free(&b);
    /* A type rlx cannot dequantize still opens; dequantizing it is the unsupported part. */
    tensor_file(&b, 0, (tensor_spec[]){{"iq", 1, {256}, RLX_DTYPE_IQ2_XXS, 0}}, 1, 66);
    if (T_OK(open_prefix(&b, b.len, &g))) {
        const rlx_gguf_tensor *t = &g->tensors[0];
        float out[256];
        T_CHECK(t->nbytes == 66, "IQ2_XXS block of 256 is %" PRIu64 " bytes, expected 66", t->nbytes);
        T_ERR(rlx_dequantize_tensor(t->type, t->data, t->nbytes, out, 256, "iq"), RLX_ERR_UNSUPPORTED,
              "iq: dequantizing IQ2_XXS to f32 is not supported");
        T_ERR(rlx_dequantize_tensor(RLX_DTYPE_Q8_0, t->data, 33, out, 32, "short"), RLX_ERR_INVALID_ARGUMENT,
              "need 34 bytes, only 33 given");
        T_ERR(rlx_dequantize_tensor(RLX_DTYPE_Q8_0, t->data, 66, out, 31, "odd"), RLX_ERR_INVALID_ARGUMENT,
              "31 elements is not a multiple of the Q8_0 block size 32");
        T_ERR(rlx_dequantize_tensor(77, t->data, 66, out, 1, "u"), RLX_ERR_UNSUPPORTED, "unknown tensor type 77");
        close_with_copy(g);
    }
    gb_free(&b);
}

static void test_alignment(void) {
    static const tensor_spec w = {"w", 1, {4}, RLX_DTYPE_F32, 0};
    gguf_builder b;
    static const uint32_t bad[] = {0, 3, 48, 0xffffffffu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gb_init(&b);
        gb_header(&b, 3, 1, 1);
        gb_kv_u32(&b, "general.alignment", bad[i]);
        gb_tensor(&b, "w", 1, (const uint64_t[]){4}, RLX_DTYPE_F32, 0);
        gb_pad(&b, 32);
        gb_zeros(&b, 16);
        EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "is not a non-zero power of two");
        gb_free(&b);
    }
    gb_init(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv(&b, "general.alignment", RLX_GGUF_UINT64);
    gb_u64(&b, 32);
    EXPECT_ERR(&b, RLX_ERR_BAD_FILE, "kv 'general.alignment': type is u64, expected u32");
    gb_free(&b);
    /* A legal large alignment moves the data section. */
    tensor_file(&b, 256, &w, 1, 16);
    rlx_gguf *g = NULL;
    if (T_OK(open_prefix(&b, b.len, &g))) {
        T_CHECK(g->alignment == 256 && g->data_offset == 256, "alignment %u, data_offset %" PRIu64, g->alignment,
                g->data_offset);
        close_with_copy(g);
    }
    gb_free(&b);
}

/* ---- getters ---- */

static void test_getters(void) {
    gguf_builder b;
    gb_init(&b);
    gb_small_valid(&b, 3);
    rlx_gguf *g = NULL;
    if (!T_OK(open_prefix(&b, b.len, &g))) {
        gb_free(&b);
        return;
    }
    rlx_status err = NULL;
    uint32_t u = 0;
    float f = 0;
    bool bo = false;
    const char *s = NULL;
    const rlx_gguf_value *arr = NULL;

    T_CHECK(rlx_gguf_get_u32(g, "test.u32", &u, &err) && u == 7 && !err, "test.u32 = %u", u);
    T_CHECK(rlx_gguf_get_u32(g, "test.u8", &u, &err) && u == 200, "test.u8 = %u", u);
    T_CHECK(rlx_gguf_get_u32(g, "test.u16", &u, &err) && u == 60000, "test.u16 = %u", u);
    T_CHECK(!rlx_gguf_get_u32(g, "no.such.key", &u, &err) && !err, "missing key");
    T_CHECK(!rlx_gguf_get_u32(g, "test.i32", &u, &err), "i32 -5 as u32");
    T_ERR(err, RLX_ERR_BAD_FILE, "key 'test.i32': value -5 (i32) does not fit a u32");
    T_CHECK(!rlx_gguf_get_u32(g, "test.u64", &u, &err), "u64 2^40 as u32");
    T_ERR(err, RLX_ERR_BAD_FILE, "value 1099511627776 (u64) does not fit a u32");
    T_CHECK(!rlx_gguf_get_u32(g, "general.architecture", &u, &err), "string as u32");
    T_ERR(err, RLX_ERR_BAD_FILE, "key 'general.architecture': type is string, expected an integer");
    T_CHECK(!rlx_gguf_get_u32(g, "test.f32", &u, &err), "f32 as u32");
    T_ERR(err, RLX_ERR_BAD_FILE, "type is f32");

    T_CHECK(rlx_gguf_get_f32(g, "test.f32", &f, &err) && f == 0.5f, "test.f32 = %g", f);
    T_CHECK(rlx_gguf_get_f32(g, "test.f64", &f, &err) && f == 0.1f, "test.f64 = %g", f);
    T_CHECK(rlx_gguf_get_f32(g, "test.i16", &f, &err) && f == -32768.0f, "test.i16 = %g", f);
    T_CHECK(!rlx_gguf_get_f32(g, "test.bool", &f, &err), "bool as f32");
    T_ERR(err, RLX_ERR_BAD_FILE, "type is bool, expected a number");

    T_CHECK(rlx_gguf_get_bool(g, "test.bool", &bo, &err) && bo, "test.bool");
    T_CHECK(!rlx_gguf_get_bool(g, "test.u8", &bo, &err), "u8 as bool");
    T_ERR(err, RLX_ERR_BAD_FILE, "key 'test.u8': type is u8, expected bool");

    T_CHECK(rlx_gguf_get_str(g, "general.architecture", &s, &err) && s && strcmp(s, "test") == 0, "architecture");
    T_CHECK(!rlx_gguf_get_str(g, "test.arr_str", &s, &err), "array as string");
    T_ERR(err, RLX_ERR_BAD_FILE, "type is array, expected string");

    T_CHECK(rlx_gguf_get_arr(g, "test.arr_str", RLX_GGUF_STRING, &arr, &err) && arr->arr.n == 2, "arr_str");
    T_CHECK(!rlx_gguf_get_arr(g, "test.arr_str", RLX_GGUF_UINT32, &arr, &err), "arr_str as u32 array");
    T_ERR(err, RLX_ERR_BAD_FILE, "type is array of string, expected array of u32");
    T_CHECK(!rlx_gguf_get_arr(g, "test.u32", RLX_GGUF_UINT32, &arr, &err), "u32 as array");
    T_ERR(err, RLX_ERR_BAD_FILE, "type is u32, expected array of u32");

    rlx_gguf_value v;
    if (rlx_gguf_get_arr(g, "test.arr_u32", RLX_GGUF_UINT32, &arr, &err)) {
        T_CHECK(rlx_gguf_arr_get(arr, 1, &v) && v.type == RLX_GGUF_UINT32 && v.u64 == 2, "arr_u32[1]");
        T_CHECK(!rlx_gguf_arr_get(arr, 3, &v), "arr_u32[3] is out of range");
    }
    const rlx_gguf_kv *kv = rlx_gguf_find(g, "test.nested");
    T_CHECK(kv && kv->value.arr.elem_type == RLX_GGUF_ARRAY && kv->value.arr.n == 2, "nested");
    if (kv && rlx_gguf_arr_get(&kv->value, 1, &v))
        T_CHECK(v.arr.n == 2 && strcmp(rlx_gguf_arr_str(&v, 1).s, "z") == 0 && rlx_gguf_arr_str(&v, 1).len == 1,
                "nested[1][1]");
    kv = rlx_gguf_find(g, "test.i8");
    T_CHECK(kv && kv->value.i64 == -2, "test.i8");
    kv = rlx_gguf_find(g, "test.i64");
    T_CHECK(kv && kv->value.i64 == -3, "test.i64");
    /* A getter with no err slot must not leak or crash. */
    T_CHECK(!rlx_gguf_get_str(g, "test.u32", &s, NULL), "no err slot");
    close_with_copy(g);
    gb_free(&b);
}

/* ---- files ---- */

static void test_files(void) {
    rlx_gguf *g = NULL;
    rlx_mapped_file *f = NULL;
    T_ERR(rlx_gguf_open("/nonexistent/dir/x.gguf", &g), RLX_ERR_NOT_FOUND, "'/nonexistent/dir/x.gguf': no such file");
    T_ERR(rlx_mapped_file_open(t_source_path("tests"), &f), RLX_ERR_IO, "is a directory");
    char path[] = "/tmp/rlx_gguf_test_XXXXXX";
    int fd = mkstemp(path);
    T_CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
    if (fd < 0) return;
    T_ERR(rlx_gguf_open(path, &g), RLX_ERR_BAD_FILE, "file is empty (0 bytes)");

    gguf_builder b;
    gb_init(&b);
    gb_small_valid(&b, 3);
    T_CHECK(write(fd, b.buf, b.len) == (ssize_t)b.len, "write %s", path);
    close(fd);
    if (T_OK(rlx_gguf_open(path, &g))) {
        T_CHECK(g->mapping_ && g->n_tensors == 3, "mapped open");
        rlx_gguf_close(g);
    }
    /* Truncated on disk: the message names the file. */
    T_CHECK(truncate(path, 100) == 0, "truncate");
    T_ERR(rlx_gguf_open(path, &g), RLX_ERR_BAD_FILE, path);
    chmod(path, 0);
    if (geteuid() == 0) {
        printf("permission check skipped: running as root, which reads mode-000 files\n");
    } else {
        T_ERR(rlx_mapped_file_open(path, &f), RLX_ERR_IO, "permission denied");
    }
    unlink(path);
    gb_free(&b);
}

/* ---- the fuzz seed corpus ---- */

static void write_file(const char *dir, const char *name, const gguf_builder *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(b->buf, 1, b->len, fp) != b->len || fclose(fp) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    printf("wrote %s (%zu bytes)\n", path, b->len);
}

/* One block of every dequantizable type, filled with a fixed pseudo-random byte pattern. */
static void all_types_file(gguf_builder *b) {
    static const uint32_t types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_1,
                                     RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1, RLX_DTYPE_Q8_0, RLX_DTYPE_Q2_K, RLX_DTYPE_Q3_K,
                                     RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K, RLX_DTYPE_Q8_K};
    const int n = (int)(sizeof types / sizeof types[0]);
    gb_init(b);
    gb_header(b, 3, (uint64_t)n, 1);
    gb_kv_str(b, "general.architecture", "seed");
    uint64_t off = 0, sizes[16];
    for (int i = 0; i < n; i++) {
        const rlx_dtype_info *info = rlx_dtype_get(types[i]);
        uint64_t ne = info->block_size == 1 ? 8 : info->block_size;
        sizes[i] = ne / info->block_size * info->type_size;
        gb_tensor(b, info->name, 1, &ne, types[i], off);
        off += (sizes[i] + 31) / 32 * 32;
    }
    gb_pad(b, 32);
    uint32_t x = 12345;
    for (int i = 0; i < n; i++) {
        for (uint64_t j = 0; j < sizes[i]; j++) {
            x = x * 1103515245u + 12345u;
            gb_u8(b, (uint8_t)(x >> 16));
        }
        if (i + 1 < n) gb_pad(b, 32);
    }
}

static int write_corpus(const char *dir) {
    mkdir(dir, 0755);
    gguf_builder b;
    gb_init(&b);
    gb_small_valid(&b, 3);
    write_file(dir, "small_v3.gguf", &b);
    gb_free(&b);
    gb_init(&b);
    gb_small_valid(&b, 2);
    write_file(dir, "small_v2.gguf", &b);
    gb_free(&b);
    all_types_file(&b);
    write_file(dir, "all_types.gguf", &b);
    gb_free(&b);
    nested_file(&b, 8);
    write_file(dir, "nested8.gguf", &b);
    gb_free(&b);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0) return write_corpus(argv[2]);
    test_small_valid_reads_back(3);
    test_small_valid_reads_back(2);
    test_every_truncation_fails();
    test_header();
    test_metadata();
    test_nesting();
    test_tensor_infos();
    test_tensor_edge_cases_open();
    test_alignment();
    test_getters();
    test_files();
    {
        gguf_builder b;
        all_types_file(&b);
        T_OK(open_all(&b));
        gb_free(&b);
    }
    return t_summary("test_gguf_bad_input");
}
