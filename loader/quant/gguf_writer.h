/* GGUF v3 writer: metadata of every value type (nested arrays included), tensor infos, alignment
 * padding, and tensor data streamed to the file in order, so a model larger than memory can be
 * written chunk by chunk. The layout is the one gguf.h reads (ggml docs/gguf.md):
 *   "GGUF" u32 version=3, u64 n_tensors, u64 n_kv,
 *   n_kv x (string key, u32 value type, value),
 *   n_tensors x (string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset),
 *   zero padding to the alignment, then each tensor's bytes padded to the alignment
 *   (llama.cpp's gguf.cpp pads after every tensor, the last one included).
 * Strings are a u64 byte count and the bytes (no NUL); every number is little-endian.
 *
 * Use: create, set metadata and add tensors (in file order), begin(path), write the data of every
 * tensor in order, finish. The file is written as PATH.tmp and renamed to PATH by finish, so PATH
 * never holds a half-written model; destroying an unfinished writer removes PATH.tmp. */
#ifndef RLX_LOADER_GGUF_WRITER_H
#define RLX_LOADER_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/format/gguf.h"
#include "rlx/status.h"

#define RLX_GGUF_WRITER_VERSION 3u
#define RLX_GGUF_DEFAULT_ALIGNMENT 32u
#define RLX_GGUF_MAX_NAME 63u /* llama.cpp's GGML_MAX_NAME (64) less the NUL */

typedef struct rlx_gguf_writer rlx_gguf_writer;

rlx_status rlx_gguf_writer_create(rlx_gguf_writer **out); /* *out set only on success */
/* NULL is fine. An unfinished file (begun, not finished) is closed and PATH.tmp removed. */
void rlx_gguf_writer_destroy(rlx_gguf_writer *w);

/* ---- metadata (before begin) ----
 * Setting a key that exists removes the old entry and appends the new one, as gguf.cpp's
 * gguf_set_val_* does, so copying a file and then setting general.file_type gives llama.cpp's key
 * order. Keys are 1..65535 bytes. */
rlx_status rlx_gguf_writer_set_u32(rlx_gguf_writer *w, const char *key, uint32_t v);
rlx_status rlx_gguf_writer_set_i32(rlx_gguf_writer *w, const char *key, int32_t v);
rlx_status rlx_gguf_writer_set_u64(rlx_gguf_writer *w, const char *key, uint64_t v);
rlx_status rlx_gguf_writer_set_f32(rlx_gguf_writer *w, const char *key, float v);
rlx_status rlx_gguf_writer_set_bool(rlx_gguf_writer *w, const char *key, bool v);
rlx_status rlx_gguf_writer_set_str(rlx_gguf_writer *w, const char *key, const char *v);
/* An array of a fixed-size element type (u8..f64, bool) from host values: uint8_t/int8_t/...,
 * float for FLOAT32, double for FLOAT64, bool for BOOL. */
rlx_status rlx_gguf_writer_set_arr(rlx_gguf_writer *w, const char *key, rlx_gguf_type elem_type, const void *elems,
                                   uint64_t n);
/* An array of strings; lens may be NULL (then each string is NUL-terminated). */
rlx_status rlx_gguf_writer_set_arr_str(rlx_gguf_writer *w, const char *key, const char *const *strs,
                                       const uint64_t *lens, uint64_t n);
/* Any value as the reader represents it (scalars, strings, arrays of anything, nested arrays):
 * copying a kv from an rlx_gguf is set_value(w, kv->key.s, &kv->value). */
rlx_status rlx_gguf_writer_set_value(rlx_gguf_writer *w, const char *key, const rlx_gguf_value *v);
/* Returns whether the key existed. */
bool rlx_gguf_writer_remove(rlx_gguf_writer *w, const char *key);
uint64_t rlx_gguf_writer_n_kv(const rlx_gguf_writer *w);

/* ---- tensors (before begin), in the order their data will be written ----
 * Names are 1..RLX_GGUF_MAX_NAME bytes and unique; 1..4 dims, ne[0] a multiple of the type's
 * block size; the type must be a known ggml type. */
rlx_status rlx_gguf_writer_add_tensor(rlx_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                      const uint64_t *ne);
uint64_t rlx_gguf_writer_n_tensors(const rlx_gguf_writer *w);
uint64_t rlx_gguf_writer_tensor_nbytes(const rlx_gguf_writer *w, uint64_t i); /* unpadded; 0 if out of range */
/* Sum of all tensors' bytes, padding excluded: what write() must be given in total. */
uint64_t rlx_gguf_writer_data_bytes(const rlx_gguf_writer *w);

/* ---- output ----
 * begin: the alignment is general.alignment when set (a u32 power of two), else 32; creates
 * PATH.tmp and writes the header, metadata and tensor infos. No more metadata or tensors after. */
rlx_status rlx_gguf_writer_begin(rlx_gguf_writer *w, const char *path);
/* The next n bytes of tensor data (any chunking; a chunk may span tensors). Padding between
 * tensors is written here. Errors when more bytes come than the tensors hold. */
rlx_status rlx_gguf_writer_write(rlx_gguf_writer *w, const void *data, size_t n);
/* Checks that every tensor got all its bytes, flushes, closes and renames PATH.tmp to PATH. */
rlx_status rlx_gguf_writer_finish(rlx_gguf_writer *w);

#endif
