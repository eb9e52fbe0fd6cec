/* safetensors reader: one file, or a sharded checkpoint described by `model.safetensors.index.json`.
 * Files are mmap'ed; tensor data is never copied.
 *
 * Format (https://github.com/huggingface/safetensors, README "Format"): an 8-byte little-endian
 * header length N, then N bytes of JSON, then the data buffer. The JSON maps each tensor name to
 * {"dtype", "shape", "data_offsets": [begin, end)}, offsets relative to the first byte after the
 * header; the optional "__metadata__" entry (string to string) is ignored here.
 *
 * Checks made on open: the header fits the file and is < 100 MB; each entry has the three fields
 * with the right JSON types; dims are non-negative and their product times the dtype size (checked
 * multiplication) equals end - begin; data lies inside the file; no two tensors overlap; no name
 * repeats. Gaps between tensors are tolerated. Only F32, F16 and BF16 are supported; any other
 * dtype is an RLX_ERR_UNSUPPORTED error naming the dtype and the tensor. */
#ifndef RLX_LOADER_SAFETENSORS_H
#define RLX_LOADER_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#define RLX_ST_MAX_DIMS 8
#define RLX_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000) /* bytes of JSON header we accept */

typedef struct rlx_st_tensor {
    const char *name;     /* owned by the rlx_safetensors */
    uint32_t type;        /* rlx_dtype: RLX_DTYPE_F32, _F16 or _BF16 */
    uint32_t n_dims;      /* 0 (a scalar) .. RLX_ST_MAX_DIMS */
    uint64_t shape[RLX_ST_MAX_DIMS]; /* PyTorch order: shape[n_dims-1] is contiguous; unused are 1 */
    uint64_t n_elements;
    uint64_t nbytes;
    const uint8_t *data;  /* borrowed: inside the mapping of shard `shard` */
    uint32_t shard;       /* index into the shard list (0 for a single file) */
} rlx_st_tensor;

typedef struct rlx_safetensors {
    rlx_st_tensor *tensors; /* owned, n_tensors entries sorted by name */
    size_t n_tensors;
    size_t n_shards;        /* number of files (1 unless sharded) */
    void *shards_;          /* owned: the shard mappings and their file names */
} rlx_safetensors;

/* `path` is a .safetensors file, a `*.safetensors.index.json`, or a directory holding either
 * `model.safetensors.index.json` or `model.safetensors`. For a sharded checkpoint every shard the
 * index names must exist and hold every tensor the index maps to it; tensors a shard holds but
 * the index does not list are ignored (as transformers does). *out is set only on success. */
rlx_status rlx_safetensors_open(const char *path, rlx_safetensors **out);
/* One safetensors image in caller memory, which must outlive the result (fuzzing and tests). */
rlx_status rlx_safetensors_open_memory(const void *data, size_t size, rlx_safetensors **out);
void rlx_safetensors_close(rlx_safetensors *st); /* NULL is fine */

/* Binary search by name; NULL when absent. */
const rlx_st_tensor *rlx_safetensors_find(const rlx_safetensors *st, const char *name);
/* The file name of shard i (as listed in the index, or the path given to open). */
const char *rlx_safetensors_shard_name(const rlx_safetensors *st, size_t i);

#endif
