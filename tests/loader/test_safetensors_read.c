/* Valid safetensors inputs read as the format defines them (safetensors README, "Format"): the
 * data of a tensor is bytes [8 + N + begin, 8 + N + end) of the file; shape is outermost first; a
 * shape of [] is a scalar; "__metadata__" is not a tensor; trailing header whitespace is padding.
 * Sharded checkpoints (transformers' model.safetensors.index.json) take each tensor from the shard
 * the weight map names. The files are built here, so every expected value follows from the bytes
 * written. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/core/dtype.h"
#include "loader/format/safetensors.h"
#include "test_safetensors_builder.h"
#include "test_util.h"

static const char *tmp; /* the test's directory (t_tmp_dir) */

/* Header of the main test image. Data layout: a [0,24) F32 [2,3]; b [24,32) BF16 [4]; s [32,34)
 * F16 scalar; e [34,34) F32 [0] (empty); g [40,44) F32 [1] after a 6-byte gap. The trailing
 * spaces pad the header, as the Rust writer does for alignment. */
static const char *main_header =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[32,34]},"
    "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[34,34]},"
    "\"g\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[40,44]}}    ";

static void check_tensor(const rlx_safetensors *st, const uint8_t *data_base, const char *name, uint32_t type,
                         uint32_t n_dims, uint64_t s0, uint64_t s1, uint64_t begin, uint64_t nbytes) {
    const rlx_st_tensor *t = rlx_safetensors_find(st, name);
    T_CHECK(t != NULL, "tensor '%s' not found", name);
    if (!t) return;
    T_CHECK(t->type == type, "'%s': type %s, expected %s", name, rlx_dtype_name(t->type), rlx_dtype_name(type));
    T_CHECK(t->n_dims == n_dims, "'%s': %u dims, expected %u", name, t->n_dims, n_dims);
    T_CHECK(t->shape[0] == s0 && t->shape[1] == s1, "'%s': shape [%llu, %llu], expected [%llu, %llu]", name,
            (unsigned long long)t->shape[0], (unsigned long long)t->shape[1], (unsigned long long)s0,
            (unsigned long long)s1);
    T_CHECK(t->nbytes == nbytes, "'%s': %llu bytes, expected %llu", name, (unsigned long long)t->nbytes,
            (unsigned long long)nbytes);
    if (data_base)
        T_CHECK(t->data == data_base + begin, "'%s': data at offset %lld of the data buffer, expected %llu", name,
                (long long)(t->data - data_base), (unsigned long long)begin);
}

static void check_main(const rlx_safetensors *st, const uint8_t *data_base) {
    T_CHECK(st->n_tensors == 5, "%zu tensors, expected 5 (__metadata__ is not one)", st->n_tensors);
    for (size_t i = 1; i < st->n_tensors; i++)
        T_CHECK(strcmp(st->tensors[i - 1].name, st->tensors[i].name) < 0, "tensors not sorted by name at %zu", i);
    check_tensor(st, data_base, "a", RLX_DTYPE_F32, 2, 2, 3, 0, 24);
    check_tensor(st, data_base, "b", RLX_DTYPE_BF16, 1, 4, 1, 24, 8);
    check_tensor(st, data_base, "s", RLX_DTYPE_F16, 0, 1, 1, 32, 2);
    check_tensor(st, data_base, "e", RLX_DTYPE_F32, 1, 0, 1, 34, 0);
    check_tensor(st, data_base, "g", RLX_DTYPE_F32, 1, 1, 1, 40, 4);
    const rlx_st_tensor *s = rlx_safetensors_find(st, "s");
    T_CHECK(s && s->n_elements == 1, "scalar 's' should hold 1 element");
    T_CHECK(rlx_safetensors_find(st, "__metadata__") == NULL, "__metadata__ must not be a tensor");
    T_CHECK(rlx_safetensors_find(st, "zz") == NULL, "absent name found");
    const rlx_st_tensor *b = rlx_safetensors_find(st, "b");
    /* The builder writes data byte i as i*7+1: b's first byte is data byte 24. */
    T_CHECK(b && b->data[0] == (uint8_t)(24 * 7 + 1), "'b' data does not start at data byte 24");
}

static void memory_case(void) {
    st_image im = st_build(main_header, 44, UINT64_MAX);
    rlx_safetensors *st = NULL;
    if (T_OK(rlx_safetensors_open_memory(im.bytes, im.size, &st))) {
        check_main(st, im.bytes + 8 + strlen(main_header));
        T_CHECK(st->n_shards == 1, "%zu shards for one image", st->n_shards);
    }
    rlx_safetensors_close(st);
    free(im.bytes);
    printf("  memory image: 5 tensors (2-D, 1-D, scalar, empty, after a gap) read as written\n");
}

static void file_cases(void) {
    st_write_image(t_tmp_path("model.safetensors"), main_header, 44);
    rlx_safetensors *st = NULL;
    if (T_OK(rlx_safetensors_open(t_tmp_path("model.safetensors"), &st))) check_main(st, NULL);
    rlx_safetensors_close(st);
    st = NULL;
    if (T_OK(rlx_safetensors_open(tmp, &st))) { /* a directory with model.safetensors */
        check_main(st, NULL);
        T_CHECK(!strcmp(rlx_safetensors_shard_name(st, 0), t_tmp_path("model.safetensors")), "shard name '%s'",
                rlx_safetensors_shard_name(st, 0));
    }
    rlx_safetensors_close(st);
    unlink(t_tmp_path("model.safetensors"));
    printf("  file and directory: same 5 tensors\n");
}

static void sharded_case(void) {
    st_write_image(t_tmp_path("m-1.safetensors"),
                   "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"unlisted\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                   12);
    st_write_image(t_tmp_path("m-2.safetensors"), "{\"y\":{\"dtype\":\"BF16\",\"shape\":[3,2],\"data_offsets\":[4,16]}}",
                   16);
    const char *index = "{\"metadata\":{\"total_size\":20},\"weight_map\":{\"y\":\"m-2.safetensors\",\"x\":\"m-1.safetensors\"}}";
    t_write_file(t_tmp_path("model.safetensors.index.json"), index, strlen(index));
    for (int via_index = 0; via_index < 2; via_index++) {
        rlx_safetensors *st = NULL;
        const char *path = via_index ? t_tmp_path("model.safetensors.index.json") : tmp;
        if (!T_OK(rlx_safetensors_open(path, &st))) continue;
        T_CHECK(st->n_tensors == 2, "%zu tensors, expected the 2 the weight map lists", st->n_tensors);
        T_CHECK(st->n_shards == 2, "%zu shards, expected 2", st->n_shards);
        check_tensor(st, NULL, "x", RLX_DTYPE_F32, 1, 2, 1, 0, 8);
        check_tensor(st, NULL, "y", RLX_DTYPE_BF16, 2, 3, 2, 4, 12);
        const rlx_st_tensor *y = rlx_safetensors_find(st, "y");
        if (y) {
            T_CHECK(!strcmp(rlx_safetensors_shard_name(st, y->shard), "m-2.safetensors"), "'y' from shard '%s'",
                    rlx_safetensors_shard_name(st, y->shard));
            T_CHECK(y->data[0] == (uint8_t)(4 * 7 + 1), "'y' data does not start at its shard's data byte 4");
        }
        T_CHECK(rlx_safetensors_find(st, "unlisted") == NULL, "a tensor the index does not list was read");
        rlx_safetensors_close(st);
    }
    unlink(t_tmp_path("model.safetensors.index.json"));
    unlink(t_tmp_path("m-1.safetensors"));
    unlink(t_tmp_path("m-2.safetensors"));
    printf("  sharded: 2 tensors from 2 shards via the directory and via the index path\n");
}

int main(void) {
    tmp = t_tmp_dir("rlx-st-read");
    memory_case();
    file_cases();
    sharded_case();
    t_tmp_dir_remove();
    return t_summary("test_safetensors_read");
}
