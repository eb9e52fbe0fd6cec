/* Malformed safetensors files and sharded indexes: each gives a clear error (code and a
 * distinctive part of the message) and never a crash. The rules come from the safetensors README
 * ("Format": 8-byte LE header size, JSON header of dtype/shape/data_offsets, offsets relative to
 * the data buffer, no overlap) and transformers' sharded index (weight_map: tensor -> file). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/format/safetensors.h"
#include "test_safetensors_builder.h"
#include "test_util.h"

static const char *tmp; /* the test's directory (t_tmp_dir) */

/* Opens header + n_data bytes from memory; expects `code` with `needle` in the message. */
static void expect_mem(const char *what, const char *header, size_t n_data, int code, const char *needle) {
    st_image im = st_build(header, n_data, UINT64_MAX);
    rlx_safetensors *st = NULL;
    rlx_status s = rlx_safetensors_open_memory(im.bytes, im.size, &st);
    if (s) printf("  %-28s -> %s\n", what, rlx_status_message(s));
    T_ERR(s, code, needle);
    rlx_safetensors_close(st);
    free(im.bytes);
}

#define F32_23 "{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"

static void header_size_cases(void) {
    uint8_t tiny[5] = {1, 2, 3, 4, 5};
    rlx_safetensors *st = NULL;
    T_ERR(rlx_safetensors_open_memory(tiny, sizeof tiny, &st), RLX_ERR_BAD_FILE, "too short for the 8-byte header");

    st_image im = st_build("{}", 0, 1000);
    T_ERR(rlx_safetensors_open_memory(im.bytes, im.size, &st), RLX_ERR_BAD_FILE, "header length 1000 exceeds the 2 bytes");
    free(im.bytes);

    im = st_build("{}", 0, UINT64_C(1) << 63);
    T_ERR(rlx_safetensors_open_memory(im.bytes, im.size, &st), RLX_ERR_BAD_FILE,
          "header length 9223372036854775808 exceeds");
    free(im.bytes);
}

static void json_cases(void) {
    expect_mem("invalid JSON", "{\"a\": {\"dtype\": ", 0, RLX_ERR_BAD_FILE, "header JSON is invalid at line 1, column");
    expect_mem("not an object", "[1, 2]", 0, RLX_ERR_BAD_FILE, "header is an array, expected a JSON object");
    expect_mem("duplicate name", "{\"a\":" F32_23 ",\"a\":" F32_23 "}", 24, RLX_ERR_BAD_FILE, "duplicate object key");
    expect_mem("entry not an object", "{\"a\": 5}", 0, RLX_ERR_BAD_FILE, "tensor 'a': entry is an integer, expected an object");
    expect_mem("missing dtype", "{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, RLX_ERR_BAD_FILE,
               "tensor 'a': missing field 'dtype'");
    expect_mem("missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, RLX_ERR_BAD_FILE,
               "tensor 'a': missing field 'shape'");
    expect_mem("missing offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, RLX_ERR_BAD_FILE,
               "tensor 'a': missing field 'data_offsets'");
    expect_mem("dtype not a string", "{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, RLX_ERR_BAD_FILE,
               "field 'dtype' is an integer, expected a string");
    expect_mem("shape not an array", "{\"a\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}", 8,
               RLX_ERR_BAD_FILE, "field 'shape' is a string, expected an array");
    expect_mem("dim not an integer", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8,
               RLX_ERR_BAD_FILE, "shape[0] is a real number, expected an integer");
    expect_mem("offset not an integer", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,\"8\"]}}", 8,
               RLX_ERR_BAD_FILE, "data_offsets[1] is a string, expected an integer");
    expect_mem("one offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}}", 8, RLX_ERR_BAD_FILE,
               "data_offsets has 1 entries, expected 2");
}

static void value_cases(void) {
    expect_mem("offsets past the end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[100],\"data_offsets\":[0,400]}}", 24,
               RLX_ERR_BAD_FILE, "tensor 'a': data [0, 400) extends past the end of the data buffer (24 bytes)");
    expect_mem("offsets reversed", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
               RLX_ERR_BAD_FILE, "end before they begin");
    expect_mem("negative offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
               RLX_ERR_BAD_FILE, "data_offsets[0] is negative (-8)");
    expect_mem("size vs shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24,
               RLX_ERR_BAD_FILE, "tensor 'a': data [0, 20) holds 20 bytes, but shape [2, 3] of F32 needs 24");
    expect_mem("overlap",
               "{\"a\":" F32_23 ",\"b\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[16,40]}}", 40,
               RLX_ERR_BAD_FILE, "'a' [0, 24) and 'b' [16, 40) overlap");
    expect_mem("unsupported dtype", "{\"a\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
               RLX_ERR_UNSUPPORTED, "unsupported dtype I64 for tensor 'a'");
    expect_mem("unknown dtype", "{\"a\":{\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
               RLX_ERR_UNSUPPORTED, "unsupported dtype Q9 for tensor 'a'");
    expect_mem("negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1,3],\"data_offsets\":[0,12]}}", 12,
               RLX_ERR_BAD_FILE, "tensor 'a': shape[0] is negative (-1)");
    expect_mem("dims overflow count",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4,
               RLX_ERR_BAD_FILE, "element count of its shape overflows 64 bits");
    expect_mem("dims overflow bytes",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,2],\"data_offsets\":[0,4]}}", 4,
               RLX_ERR_BAD_FILE, "overflows 64 bits");
    expect_mem("integer too big for JSON",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4,
               RLX_ERR_BAD_FILE, "header JSON is invalid");
    expect_mem("nine dims", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               RLX_ERR_UNSUPPORTED, "9 dimensions, at most 8");
}

/* Every proper prefix of a valid file is an error, never a crash (ASan builds check the reads). */
static void truncation_cases(void) {
    st_image im = st_build("{\"a\":" F32_23 ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}", 32,
                           UINT64_MAX);
    size_t errors = 0;
    for (size_t n = 0; n < im.size; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact-size copy so ASan sees any read past n */
        memcpy(copy, im.bytes, n);
        rlx_safetensors *st = NULL;
        rlx_status s = rlx_safetensors_open_memory(copy, n, &st);
        errors += s != NULL;
        rlx_status_free(s);
        rlx_safetensors_close(st);
        free(copy);
    }
    T_CHECK(errors == im.size, "truncation: %zu of %zu prefixes gave an error", errors, im.size);
    printf("  truncation: all %zu prefixes of a %zu-byte file rejected\n", errors, im.size);
    free(im.bytes);
}

static void write_index(const char *json) { t_write_file(t_tmp_path("model.safetensors.index.json"), json, strlen(json)); }

static void shard_cases(void) {
    st_write_image(t_tmp_path("s1.safetensors"), "{\"a\":" F32_23 "}", 24);
    rlx_safetensors *st = NULL;

    write_index("{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s2.safetensors\"}}");
    rlx_status s = rlx_safetensors_open(tmp, &st);
    printf("  %-28s -> %s\n", "missing shard", rlx_status_message(s));
    T_ERR(s, RLX_ERR_NOT_FOUND, "shard 's2.safetensors' (holding tensor 'b')");

    write_index("{\"weight_map\": {\"a\": \"s1.safetensors\", \"zz\": \"s1.safetensors\"}}");
    s = rlx_safetensors_open(tmp, &st);
    printf("  %-28s -> %s\n", "index names absent tensor", rlx_status_message(s));
    T_ERR(s, RLX_ERR_BAD_FILE, "weight_map puts tensor 'zz' in shard 's1.safetensors', which does not contain it");

    write_index("{\"weight_map\": [\"s1.safetensors\"]}");
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_BAD_FILE, "'weight_map' is an array, expected an object");
    write_index("{\"weight_map\": {\"a\": 3}}");
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_BAD_FILE, "weight_map['a'] is an integer");
    write_index("{\"weight_map\": {\"a\": \"../s1.safetensors\"}}");
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_BAD_FILE, "inside the checkpoint directory");
    write_index("{\"weight_map\": {\"a\": \"/etc/passwd\"}}");
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_BAD_FILE, "inside the checkpoint directory");
    write_index("{\"weight_map\": ");
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_BAD_FILE, "invalid JSON at line 1");

    st_write_image(t_tmp_path("bad.safetensors"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[9],\"data_offsets\":[0,36]}}", 8);
    write_index("{\"weight_map\": {\"a\": \"bad.safetensors\"}}");
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_BAD_FILE, "extends past the end");
    T_CHECK(st == NULL, "a failed open left *out set");
    unlink(t_tmp_path("bad.safetensors"));
    unlink(t_tmp_path("model.safetensors.index.json"));
    unlink(t_tmp_path("s1.safetensors"));
}

static void path_cases(void) {
    rlx_safetensors *st = NULL;
    T_ERR(rlx_safetensors_open(tmp, &st), RLX_ERR_NOT_FOUND, "neither model.safetensors.index.json nor model.safetensors");
    T_ERR(rlx_safetensors_open(t_tmp_path("nope.safetensors"), &st), RLX_ERR_NOT_FOUND, "nope.safetensors");
    t_write_file(t_tmp_path("empty.safetensors"), "", 0);
    T_ERR(rlx_safetensors_open(t_tmp_path("empty.safetensors"), &st), RLX_ERR_BAD_FILE, "empty.safetensors");
    unlink(t_tmp_path("empty.safetensors"));
    T_ERR(rlx_safetensors_open(NULL, &st), RLX_ERR_INVALID_ARGUMENT, "NULL");
}

int main(void) {
    tmp = t_tmp_dir("rlx-st-bad");
    printf("error messages seen:\n");
    header_size_cases();
    json_cases();
    value_cases();
    truncation_cases();
    shard_cases();
    path_cases();
    t_tmp_dir_remove();
    return t_summary("test_safetensors_bad_input");
}
