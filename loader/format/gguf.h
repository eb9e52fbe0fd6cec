/* GGUF reader (v2 and v3), as llama.cpp writes it: header, metadata key/values, tensor infos,
 * alignment and data section. The file is mmap'ed; tensor data is never copied.
 * Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md */
#ifndef RLX_LOADER_GGUF_H
#define RLX_LOADER_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/core/dtype.h"
#include "rlx/status.h"

#define RLX_GGUF_MAX_DIMS 4

typedef enum {
    RLX_GGUF_UINT8 = 0,
    RLX_GGUF_INT8 = 1,
    RLX_GGUF_UINT16 = 2,
    RLX_GGUF_INT16 = 3,
    RLX_GGUF_UINT32 = 4,
    RLX_GGUF_INT32 = 5,
    RLX_GGUF_FLOAT32 = 6,
    RLX_GGUF_BOOL = 7,
    RLX_GGUF_STRING = 8,
    RLX_GGUF_ARRAY = 9,
    RLX_GGUF_UINT64 = 10,
    RLX_GGUF_INT64 = 11,
    RLX_GGUF_FLOAT64 = 12,
} rlx_gguf_type;

typedef struct rlx_gguf_str {
    const char *s; /* owned by the rlx_gguf, NUL-terminated (the file's bytes may hold NULs: use len) */
    uint64_t len;
} rlx_gguf_str;

typedef struct rlx_gguf_value rlx_gguf_value;
struct rlx_gguf_value {
    rlx_gguf_type type;
    union {
        uint64_t u64; /* UINT8/16/32/64 */
        int64_t i64;  /* INT8/16/32/64 */
        double f64;   /* FLOAT32/64 */
        bool b;       /* BOOL */
        rlx_gguf_str str;
        struct {
            rlx_gguf_type elem_type;
            uint64_t n;
            const uint8_t *raw;    /* borrowed (mmap): the packed elements when elem_type is fixed-size */
            rlx_gguf_value *items; /* n items when elem_type is ARRAY, or STRING in a value built by hand
                                    * (owned by the rlx_gguf, or by whoever built the value) */
            /* STRING elements as the reader keeps them, owned by the rlx_gguf: n + 1 offsets, then
             * the NUL-terminated strings back to back (item i spans [off[i], off[i + 1] - 1) past
             * the offsets). Eight bytes an element at most, where an item would take 40: a file of
             * millions of empty strings costs about its own size. NULL: use items. Read elements
             * with rlx_gguf_arr_get or rlx_gguf_arr_str, which handle both. */
            const uint64_t *packed;
        } arr;
    };
};

typedef struct rlx_gguf_kv {
    rlx_gguf_str key;
    rlx_gguf_value value;
} rlx_gguf_kv;

typedef struct rlx_gguf_tensor {
    rlx_gguf_str name;
    uint32_t type;     /* rlx_dtype number; may be a type rlx cannot dequantize */
    uint32_t n_dims;   /* 1..RLX_GGUF_MAX_DIMS */
    uint64_t ne[RLX_GGUF_MAX_DIMS]; /* ne[0] is the contiguous dimension; unused dims are 1 */
    uint64_t n_elements;
    uint64_t offset;   /* relative to the data section, as stored */
    uint64_t nbytes;
    const uint8_t *data; /* borrowed: points into the mapping, validated to lie inside it */
} rlx_gguf_tensor;

typedef struct rlx_gguf {
    uint32_t version;
    uint32_t alignment;        /* general.alignment, default 32 */
    uint64_t data_offset;      /* file offset of the data section */
    rlx_gguf_kv *kv;           /* owned, n_kv entries in file order */
    uint64_t n_kv;
    rlx_gguf_tensor *tensors;  /* owned, n_tensors entries in file order */
    uint64_t n_tensors;
    const uint8_t *base;       /* borrowed: the mapping (or caller memory), size bytes */
    uint64_t size;
    void *mapping_;            /* owned: the mmap, NULL for rlx_gguf_open_memory */
} rlx_gguf;

/* Opens and fully validates a GGUF file. *out is set only on success. */
rlx_status rlx_gguf_open(const char *path, rlx_gguf **out);
/* Same over caller memory, which must outlive the rlx_gguf (used by fuzzing and tests). */
rlx_status rlx_gguf_open_memory(const void *data, size_t size, rlx_gguf **out);
void rlx_gguf_close(rlx_gguf *g); /* NULL is fine */

const rlx_gguf_kv *rlx_gguf_find(const rlx_gguf *g, const char *key);
const rlx_gguf_tensor *rlx_gguf_find_tensor(const rlx_gguf *g, const char *name);

/* Typed getters. They return false when the key is missing; when it is present with a type that
 * cannot represent the request (a string for a u32, a negative int for a u32, ...) they return an
 * error status through *err (which the caller must check) and false. */
bool rlx_gguf_get_u32(const rlx_gguf *g, const char *key, uint32_t *out, rlx_status *err);
bool rlx_gguf_get_f32(const rlx_gguf *g, const char *key, float *out, rlx_status *err);
bool rlx_gguf_get_bool(const rlx_gguf *g, const char *key, bool *out, rlx_status *err);
bool rlx_gguf_get_str(const rlx_gguf *g, const char *key, const char **out, rlx_status *err);

const char *rlx_gguf_type_name(rlx_gguf_type t);

/* Array access. rlx_gguf_get_arr finds `key` and checks that it is an array of `elem_type`
 * (errors through *err like the scalar getters). rlx_gguf_arr_get decodes element i of any array
 * value into a scalar rlx_gguf_value (strings and sub-arrays are shallow copies that borrow from
 * the rlx_gguf); it returns false when i is out of range or `arr` is not an array. */
bool rlx_gguf_get_arr(const rlx_gguf *g, const char *key, rlx_gguf_type elem_type, const rlx_gguf_value **out,
                      rlx_status *err);
bool rlx_gguf_arr_get(const rlx_gguf_value *arr, uint64_t i, rlx_gguf_value *out);
/* String element i of an array of STRING (NUL-terminated, borrowed); {"", 0} when i is out of
 * range or `arr` is not an array of strings. */
rlx_gguf_str rlx_gguf_arr_str(const rlx_gguf_value *arr, uint64_t i);

#endif
