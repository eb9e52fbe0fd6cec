/* GGUF writer (loader/quant/gguf_writer.c):
 *  - the bytes of a small file against a prefix written out by hand from the GGUF spec
 *    (ggml docs/gguf.md): magic, version 3, counts, one kv, one tensor info, padding, data;
 *  - every metadata value type (scalars, strings, arrays of each, nested arrays) read back by
 *    loader/format/gguf.c, which test_gguf_* validate against llama.cpp-written files;
 *  - gguf.cpp's key rule (setting a key again moves it to the end), a custom general.alignment,
 *    data streamed in odd chunks across tensor boundaries, zero-sized tensors;
 *  - errors: duplicates, bad names and dims, too many / too few bytes, edits after begin, an
 *    unwritable directory; an unfinished file leaves neither PATH nor PATH.tmp behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/format/gguf.h"
#include "loader/quant/gguf_writer.h"
#include "test_util.h"

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* ---- the hand-checked prefix ---- */

static void test_hand_checked_bytes(void) {
    rlx_gguf_writer *w = NULL;
    if (!T_OK(rlx_gguf_writer_create(&w))) return;
    T_OK(rlx_gguf_writer_set_u32(w, "a", 7));
    T_OK(rlx_gguf_writer_add_tensor(w, "t", 0 /* F32 */, 1, (const uint64_t[]){2}));
    const char *path = t_tmp_path("hand.gguf");
    T_OK(rlx_gguf_writer_begin(w, path));
    T_CHECK(exists(t_tmp_path("hand.gguf.tmp")) && !exists(path), "begin: expected only hand.gguf.tmp to exist");
    float data[2] = {1.0f, -2.0f};
    T_OK(rlx_gguf_writer_write(w, data, sizeof data));
    T_OK(rlx_gguf_writer_finish(w));
    rlx_gguf_writer_destroy(w);
    T_CHECK(exists(path) && !exists(t_tmp_path("hand.gguf.tmp")), "finish: expected hand.gguf and no .tmp");

    /* gguf.md: header, kv "a" u32 7, tensor info "t" [2] F32 at offset 0, pad to 32, data, pad */
    static const uint8_t want[] = {
        'G', 'G', 'U', 'F', 3, 0, 0, 0,             /* magic, version 3 */
        1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, /* n_tensors = 1, n_kv = 1 */
        1, 0, 0, 0, 0, 0, 0, 0, 'a',                /* key: u64 length 1, "a" */
        4, 0, 0, 0, 7, 0, 0, 0,                     /* type u32 (4), value 7 */
        1, 0, 0, 0, 0, 0, 0, 0, 't',                /* tensor name */
        1, 0, 0, 0,                                 /* n_dims 1 */
        2, 0, 0, 0, 0, 0, 0, 0,                     /* ne[0] = 2 */
        0, 0, 0, 0,                                 /* type F32 */
        0, 0, 0, 0, 0, 0, 0, 0,                     /* offset 0 */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,            /* 22 zero bytes: the header's 74 bytes */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,            /* padded to 96, a multiple of 32 */
        0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, /* 1.0f, -2.0f little-endian */
    };
    size_t len = 0;
    uint8_t *got = t_read_file(path, &len);
    T_CHECK(got && len == sizeof want + 24, "file is %zu bytes, expected %zu (+24 bytes of padding after the data)", len,
            sizeof want + 24);
    size_t first_diff = sizeof want;
    for (size_t i = 0; got && i < sizeof want && i < len; i++)
        if (got[i] != want[i]) {
            first_diff = i;
            break;
        }
    T_CHECK(first_diff == sizeof want, "byte %zu is 0x%02x, the spec says 0x%02x", first_diff,
            got && first_diff < len ? got[first_diff] : 0, first_diff < sizeof want ? want[first_diff] : 0);
    bool zero_tail = true;
    for (size_t i = sizeof want; got && i < len; i++) zero_tail &= got[i] == 0;
    T_CHECK(zero_tail, "padding after the last tensor is not zero");
    printf("hand-checked header: %zu bytes compared, first difference at %zu (none if %zu)\n", sizeof want, first_diff,
           sizeof want);
    free(got);
    remove(path);
}

/* ---- every value type ---- */

static void test_all_value_types(void) {
    rlx_gguf_writer *w = NULL;
    if (!T_OK(rlx_gguf_writer_create(&w))) return;
    rlx_gguf_value v = {.type = RLX_GGUF_UINT8, .u64 = 200};
    T_OK(rlx_gguf_writer_set_value(w, "k.u8", &v));
    v = (rlx_gguf_value){.type = RLX_GGUF_INT8, .i64 = -100};
    T_OK(rlx_gguf_writer_set_value(w, "k.i8", &v));
    v = (rlx_gguf_value){.type = RLX_GGUF_UINT16, .u64 = 60000};
    T_OK(rlx_gguf_writer_set_value(w, "k.u16", &v));
    v = (rlx_gguf_value){.type = RLX_GGUF_INT16, .i64 = -30000};
    T_OK(rlx_gguf_writer_set_value(w, "k.i16", &v));
    T_OK(rlx_gguf_writer_set_u32(w, "k.u32", 4000000000u));
    T_OK(rlx_gguf_writer_set_i32(w, "k.i32", -2000000000));
    T_OK(rlx_gguf_writer_set_u64(w, "k.u64", 0xfedcba9876543210ull));
    v = (rlx_gguf_value){.type = RLX_GGUF_INT64, .i64 = -5000000000ll};
    T_OK(rlx_gguf_writer_set_value(w, "k.i64", &v));
    T_OK(rlx_gguf_writer_set_f32(w, "k.f32", 0.1f));
    v = (rlx_gguf_value){.type = RLX_GGUF_FLOAT64, .f64 = 1e-300};
    T_OK(rlx_gguf_writer_set_value(w, "k.f64", &v));
    T_OK(rlx_gguf_writer_set_bool(w, "k.bool", true));
    T_OK(rlx_gguf_writer_set_str(w, "k.str", "h\xc3\xa9llo"));
    const int16_t i16s[3] = {-1, 2, -32768};
    T_OK(rlx_gguf_writer_set_arr(w, "k.arr_i16", RLX_GGUF_INT16, i16s, 3));
    const double f64s[2] = {3.5, -0.25};
    T_OK(rlx_gguf_writer_set_arr(w, "k.arr_f64", RLX_GGUF_FLOAT64, f64s, 2));
    const bool bools[3] = {true, false, true};
    T_OK(rlx_gguf_writer_set_arr(w, "k.arr_bool", RLX_GGUF_BOOL, bools, 3));
    const char *strs[3] = {"a", "", "ccc"};
    T_OK(rlx_gguf_writer_set_arr_str(w, "k.arr_str", strs, NULL, 3));
    T_OK(rlx_gguf_writer_set_arr(w, "k.arr_empty", RLX_GGUF_UINT32, NULL, 0));
    /* an array of two arrays of strings: [["x", "yy"], ["zzz"]] */
    rlx_gguf_value s1[2] = {{.type = RLX_GGUF_STRING, .str = {"x", 1}}, {.type = RLX_GGUF_STRING, .str = {"yy", 2}}};
    rlx_gguf_value s2[1] = {{.type = RLX_GGUF_STRING, .str = {"zzz", 3}}};
    rlx_gguf_value inner[2] = {{.type = RLX_GGUF_ARRAY, .arr = {RLX_GGUF_STRING, 2, NULL, s1, NULL}},
                               {.type = RLX_GGUF_ARRAY, .arr = {RLX_GGUF_STRING, 1, NULL, s2, NULL}}};
    v = (rlx_gguf_value){.type = RLX_GGUF_ARRAY, .arr = {RLX_GGUF_ARRAY, 2, NULL, inner, NULL}};
    T_OK(rlx_gguf_writer_set_value(w, "k.nested", &v));
    const char *path = t_tmp_path("types.gguf");
    T_OK(rlx_gguf_writer_begin(w, path));
    T_OK(rlx_gguf_writer_finish(w));
    rlx_gguf_writer_destroy(w);

    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(path, &g))) return;
    const rlx_gguf_kv *kv;
#define GET(key) ((kv = rlx_gguf_find(g, key)) ? &kv->value : NULL)
    const rlx_gguf_value *r;
    T_CHECK((r = GET("k.u8")) && r->type == RLX_GGUF_UINT8 && r->u64 == 200, "u8");
    T_CHECK((r = GET("k.i8")) && r->type == RLX_GGUF_INT8 && r->i64 == -100, "i8");
    T_CHECK((r = GET("k.u16")) && r->type == RLX_GGUF_UINT16 && r->u64 == 60000, "u16");
    T_CHECK((r = GET("k.i16")) && r->type == RLX_GGUF_INT16 && r->i64 == -30000, "i16");
    T_CHECK((r = GET("k.u32")) && r->type == RLX_GGUF_UINT32 && r->u64 == 4000000000u, "u32");
    T_CHECK((r = GET("k.i32")) && r->type == RLX_GGUF_INT32 && r->i64 == -2000000000, "i32");
    T_CHECK((r = GET("k.u64")) && r->type == RLX_GGUF_UINT64 && r->u64 == 0xfedcba9876543210ull, "u64");
    T_CHECK((r = GET("k.i64")) && r->type == RLX_GGUF_INT64 && r->i64 == -5000000000ll, "i64");
    T_CHECK((r = GET("k.f32")) && r->type == RLX_GGUF_FLOAT32 && (float)r->f64 == 0.1f, "f32");
    T_CHECK((r = GET("k.f64")) && r->type == RLX_GGUF_FLOAT64 && r->f64 == 1e-300, "f64");
    T_CHECK((r = GET("k.bool")) && r->type == RLX_GGUF_BOOL && r->b, "bool");
    T_CHECK((r = GET("k.str")) && r->type == RLX_GGUF_STRING && r->str.len == 6 && !strcmp(r->str.s, "h\xc3\xa9llo"), "str");
    rlx_gguf_value e;
    T_CHECK((r = GET("k.arr_i16")) && r->arr.elem_type == RLX_GGUF_INT16 && r->arr.n == 3 && rlx_gguf_arr_get(r, 2, &e) &&
                e.i64 == -32768,
            "array of i16");
    T_CHECK((r = GET("k.arr_f64")) && r->arr.n == 2 && rlx_gguf_arr_get(r, 1, &e) && e.f64 == -0.25, "array of f64");
    T_CHECK((r = GET("k.arr_bool")) && r->arr.n == 3 && rlx_gguf_arr_get(r, 1, &e) && !e.b && rlx_gguf_arr_get(r, 2, &e) &&
                e.b,
            "array of bool");
    T_CHECK((r = GET("k.arr_str")) && r->arr.elem_type == RLX_GGUF_STRING && r->arr.n == 3 &&
                !strcmp(rlx_gguf_arr_str(r, 2).s, "ccc") && rlx_gguf_arr_str(r, 1).len == 0,
            "array of strings");
    T_CHECK((r = GET("k.arr_empty")) && r->arr.n == 0 && r->arr.elem_type == RLX_GGUF_UINT32, "empty array");
    T_CHECK((r = GET("k.nested")) && r->arr.elem_type == RLX_GGUF_ARRAY && r->arr.n == 2 &&
                r->arr.items[0].arr.n == 2 && !strcmp(rlx_gguf_arr_str(&r->arr.items[0], 1).s, "yy") &&
                !strcmp(rlx_gguf_arr_str(&r->arr.items[1], 0).s, "zzz"),
            "nested array of arrays of strings");
#undef GET
    printf("value types: %llu keys of every GGUF value type read back by loader/format/gguf.c\n", (unsigned long long)g->n_kv);
    rlx_gguf_close(g);
    remove(path);
}

/* ---- key order, alignment, streaming ---- */

static void test_layout(void) {
    rlx_gguf_writer *w = NULL;
    if (!T_OK(rlx_gguf_writer_create(&w))) return;
    T_OK(rlx_gguf_writer_set_u32(w, "first", 1));
    T_OK(rlx_gguf_writer_set_u32(w, "general.alignment", 64));
    T_OK(rlx_gguf_writer_set_u32(w, "second", 2));
    T_OK(rlx_gguf_writer_set_str(w, "first", "again")); /* moves to the end */
    T_CHECK(rlx_gguf_writer_remove(w, "second") && !rlx_gguf_writer_remove(w, "second"), "remove");
    T_CHECK(rlx_gguf_writer_n_kv(w) == 2, "expected 2 keys, have %llu", (unsigned long long)rlx_gguf_writer_n_kv(w));
    /* three tensors: 5 floats, an empty one, 100 bytes of Q8_0 (3 blocks of 34 = 102 bytes) */
    T_OK(rlx_gguf_writer_add_tensor(w, "a", 0, 1, (const uint64_t[]){5}));
    T_OK(rlx_gguf_writer_add_tensor(w, "empty", 0, 2, (const uint64_t[]){4, 0}));
    T_OK(rlx_gguf_writer_add_tensor(w, "q", 8 /* Q8_0 */, 2, (const uint64_t[]){32, 3}));
    T_CHECK(rlx_gguf_writer_data_bytes(w) == 20 + 102, "data bytes %llu, expected 122",
            (unsigned long long)rlx_gguf_writer_data_bytes(w));
    const char *path = t_tmp_path("layout.gguf");
    T_OK(rlx_gguf_writer_begin(w, path));
    uint8_t data[122];
    for (int i = 0; i < 122; i++) data[i] = (uint8_t)(i * 7 + 1);
    size_t chunks[] = {3, 17, 1, 60, 41}, at = 0; /* the 17 spans the end of "a" */
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        T_OK(rlx_gguf_writer_write(w, data + at, chunks[i]));
        at += chunks[i];
    }
    T_ERR(rlx_gguf_writer_write(w, data, 1), RLX_ERR_INVALID_ARGUMENT, "past the last tensor");
    T_OK(rlx_gguf_writer_finish(w));
    rlx_gguf_writer_destroy(w);
    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(path, &g))) return;
    T_CHECK(g->n_kv == 2 && !strcmp(g->kv[0].key.s, "general.alignment") && !strcmp(g->kv[1].key.s, "first") &&
                g->kv[1].value.type == RLX_GGUF_STRING,
            "key order after re-setting 'first' and removing 'second'");
    T_CHECK(g->alignment == 64 && g->data_offset % 64 == 0, "alignment %u, data offset %llu", g->alignment,
            (unsigned long long)g->data_offset);
    const rlx_gguf_tensor *a = rlx_gguf_find_tensor(g, "a"), *q = rlx_gguf_find_tensor(g, "q");
    T_CHECK(a && q && a->offset == 0 && q->offset == 64 && !memcmp(a->data, data, 20) && !memcmp(q->data, data + 20, 102),
            "tensor offsets (0 and 64) or data differ");
    printf("layout: keys re-set/removed in gguf.cpp's order, alignment 64, 5 chunks across 3 tensors read back\n");
    rlx_gguf_close(g);
    remove(path);
}

/* ---- errors ---- */

static void test_errors(void) {
    rlx_gguf_writer *w = NULL;
    if (!T_OK(rlx_gguf_writer_create(&w))) return;
    const uint64_t ne[2] = {32, 2};
    T_OK(rlx_gguf_writer_add_tensor(w, "x", 8, 2, ne));
    T_ERR(rlx_gguf_writer_add_tensor(w, "x", 8, 2, ne), RLX_ERR_INVALID_ARGUMENT, "added twice");
    T_ERR(rlx_gguf_writer_add_tensor(w, "", 0, 1, ne), RLX_ERR_INVALID_ARGUMENT, "expected 1..63");
    T_ERR(rlx_gguf_writer_add_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123", 0, 1, ne),
          RLX_ERR_INVALID_ARGUMENT, "expected 1..63");
    T_ERR(rlx_gguf_writer_add_tensor(w, "y", 0, 5, ne), RLX_ERR_INVALID_ARGUMENT, "expected 1..4");
    T_ERR(rlx_gguf_writer_add_tensor(w, "y", 8, 1, (const uint64_t[]){33}), RLX_ERR_INVALID_ARGUMENT, "block size 32");
    T_ERR(rlx_gguf_writer_add_tensor(w, "y", 99, 1, ne), RLX_ERR_INVALID_ARGUMENT, "unknown type 99");
    T_ERR(rlx_gguf_writer_set_u32(w, "", 1), RLX_ERR_INVALID_ARGUMENT, "expected 1..65535");
    T_ERR(rlx_gguf_writer_set_arr(w, "k", RLX_GGUF_STRING, NULL, 0), RLX_ERR_INVALID_ARGUMENT, "fixed-size element type");
    T_OK(rlx_gguf_writer_set_u32(w, "general.alignment", 48));
    T_ERR(rlx_gguf_writer_begin(w, t_tmp_path("bad_align.gguf")), RLX_ERR_INVALID_ARGUMENT, "power of two");
    T_CHECK(!exists(t_tmp_path("bad_align.gguf.tmp")), "a refused begin created a file");
    T_OK(rlx_gguf_writer_set_u32(w, "general.alignment", 32));
    T_ERR(rlx_gguf_writer_begin(w, "/nonexistent-dir/x.gguf"), RLX_ERR_IO, "/nonexistent-dir/x.gguf.tmp");
    rlx_gguf_writer_destroy(w);

    /* begun, partly written, then given up: neither PATH nor PATH.tmp remains */
    if (!T_OK(rlx_gguf_writer_create(&w))) return;
    T_OK(rlx_gguf_writer_add_tensor(w, "x", 8, 2, ne));
    const char *path = t_tmp_path("partial.gguf");
    T_OK(rlx_gguf_writer_begin(w, path));
    T_ERR(rlx_gguf_writer_set_u32(w, "late", 1), RLX_ERR_INVALID_ARGUMENT, "after begin");
    T_ERR(rlx_gguf_writer_add_tensor(w, "late", 0, 1, ne), RLX_ERR_INVALID_ARGUMENT, "after begin");
    T_ERR(rlx_gguf_writer_begin(w, path), RLX_ERR_INVALID_ARGUMENT, "twice");
    uint8_t block[34] = {0};
    T_OK(rlx_gguf_writer_write(w, block, sizeof block));
    T_ERR(rlx_gguf_writer_finish(w), RLX_ERR_INVALID_ARGUMENT, "has 34 of its 68 bytes");
    rlx_gguf_writer_destroy(w);
    T_CHECK(!exists(path) && !exists(t_tmp_path("partial.gguf.tmp")), "an unfinished file left something behind");
    printf("errors: duplicate/long/empty names, bad dims/types/keys/alignment, unwritable path, edits after begin, "
           "short data; nothing left behind\n");
}

int main(void) {
    t_tmp_dir("rlx_test_gguf_writer");
    test_hand_checked_bytes();
    test_all_value_types();
    test_layout();
    test_errors();
    t_tmp_dir_remove();
    return t_summary("test_gguf_writer");
}
