/* Quantization of f32 rows to ggml's stored types, llama.cpp's per-tensor type choice for its
 * file types (the _M mixes), and whole-model quantization into a GGUF file.
 *
 * Block layouts are bit-exact ggml (llama.cpp ggml/src/ggml-common.h), so loader/core/dequant.c and
 * gguf-py read our bytes. The choice of scales is ours: every block's scale (and min) is picked by
 * a search that minimises the block's squared error, then re-fit by least squares; the K-quants
 * quantize their sub-block scales to 6 or 8 bits and re-quantize the values against the scales
 * actually stored. */
#ifndef RLX_LOADER_QUANTIZE_H
#define RLX_LOADER_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "loader/core/half.h"
#include "loader/quant/gguf_writer.h"
#include "rlx/status.h"
#include "loader/core/weight.h"

/* ---- rows ---- */

/* True for the types rlx_quantize_rows writes: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q4_K, Q5_K, Q6_K. */
bool rlx_quantize_supported(uint32_t type);

/* Quantizes n_rows rows of n_per_row floats (src, row-major) into dst, rows packed back to back.
 * Preconditions (asserted): the type is supported, n_per_row is a multiple of its block size.
 * Returns the bytes written. Reentrant and allocation-free: threads call it on disjoint rows.
 * Non-finite inputs give non-finite scales, never undefined behaviour; callers that must refuse
 * them check first (rlx_quantize_find_nonfinite). */
size_t rlx_quantize_rows(uint32_t type, const float *src, void *dst, uint64_t n_rows, uint64_t n_per_row);

/* Index of the first NaN or infinity in x[0..n), or n when all are finite. */
uint64_t rlx_quantize_find_nonfinite(const float *x, uint64_t n);

/* Block quantizers shared by quantize.c and quantize_kquants.c (one block in, one block out). */
void rlx_quantize_block_q4_k(const float *x, uint8_t *out);
void rlx_quantize_block_q5_k(const float *x, uint8_t *out);
void rlx_quantize_block_q6_k(const float *x, uint8_t *out);

/* Round to nearest, ties to even; |v| must be below 2^22 (callers clamp first). Adding 1.5 * 2^23
 * leaves the rounded integer in the low mantissa bits, as the FPU rounds. */
static inline int rlx_quant_nearest_int(float v) {
    float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* round(v) clamped to [lo, hi]; NaN maps to lo. Clamping before the conversion keeps huge and
 * non-finite values defined. */
static inline int rlx_quant_round_clamp(float v, int lo, int hi) {
    v = v > (float)lo ? v : (float)lo; /* NaN compares false: it becomes lo */
    v = v < (float)hi ? v : (float)hi;
    return rlx_quant_nearest_int(v);
}

/* Stores v as a little-endian f16 at p (ggml's half fields). */
static inline void rlx_quant_put_f16(uint8_t *p, float v) {
    uint16_t h = rlx_f32_to_f16(v);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* The value a scale has once stored as f16: quants are chosen against it, not the exact one. */
static inline float rlx_quant_f16_round(float v) { return rlx_f16_to_f32(rlx_f32_to_f16(v)); }

/* Search helpers (quantize.c), also used by the K-quants. Each returns the squared error of its
 * fit. */
/* Symmetric: x ~ d * q with q in [-nmax, nmax - 1] (ggml's signed ranges: -8..7, -16..15,
 * -32..31). Sets *d and q[0..n). */
float rlx_quant_fit_symmetric(const float *x, int n, int nmax, float *d, int8_t *q);
/* Asymmetric: x ~ d * q + m with q in [0, nmax]. With nonpositive_min, m is forced <= 0 (the
 * K-quants store -m as an unsigned 6-bit number). Sets *d, *m and q[0..n). */
float rlx_quant_fit_affine(const float *x, int n, int nmax, bool nonpositive_min, float *d, float *m, uint8_t *q);

/* ---- file types: what `rlx quantize TYPE` means ---- */

/* llama.cpp's LLAMA_FTYPE numbers (include/llama.h), written as general.file_type. */
typedef enum {
    RLX_FTYPE_ALL_F32 = 0,
    RLX_FTYPE_MOSTLY_F16 = 1,
    RLX_FTYPE_MOSTLY_Q4_0 = 2,
    RLX_FTYPE_MOSTLY_Q4_1 = 3,
    RLX_FTYPE_MOSTLY_Q8_0 = 7,
    RLX_FTYPE_MOSTLY_Q5_0 = 8,
    RLX_FTYPE_MOSTLY_Q5_1 = 9,
    RLX_FTYPE_MOSTLY_Q4_K_S = 14,
    RLX_FTYPE_MOSTLY_Q4_K_M = 15,
    RLX_FTYPE_MOSTLY_Q5_K_S = 16,
    RLX_FTYPE_MOSTLY_Q5_K_M = 17,
    RLX_FTYPE_MOSTLY_Q6_K = 18,
    RLX_FTYPE_MOSTLY_BF16 = 32,
} rlx_ftype;

typedef struct rlx_quant_recipe {
    const char *name;      /* as typed on the command line: "Q4_K_M" */
    rlx_ftype ftype;
    uint32_t default_type; /* rlx_dtype most tensors get */
    bool pure;             /* llama-quantize --pure: no per-tensor mix rules, only the row-size fallback */
    const char *summary;
} rlx_quant_recipe;

/* Case-insensitive; NULL when unknown. */
const rlx_quant_recipe *rlx_quant_recipe_find(const char *name);
/* The whole table (for listing the valid names). */
const rlx_quant_recipe *rlx_quant_recipes(size_t *n);

/* What the mix rules need to know of the model (llama.cpp reads the same from its hparams). */
typedef struct rlx_quant_model_info {
    const char *arch;  /* general.architecture; borrowed */
    uint32_t n_layer;  /* <arch>.block_count */
    uint32_t n_expert; /* <arch>.expert_count, 0 when dense */
    uint32_t n_head;
    uint32_t n_head_kv;
} rlx_quant_model_info;

/* llama.cpp's tensor order in a quantized file (llama_model_loader's weight_name_comparer): by
 * layer number ("blk.N." prefix; others count as layer -1), then by name. Sorts the n indices in
 * order[] by names[order[i]]. */
void rlx_quant_sort_order(const char *const *names, size_t n, size_t *order);

/* llama.cpp's type for every tensor (llama-quant.cpp: tensor_allows_quantization,
 * llama_tensor_get_type_impl, tensor_type_fallback), tensors given in the quantized file's order
 * (the mix counts attn_v tensors in that order). A tensor that is not quantized keeps its type.
 * types_out has n entries. */
rlx_status rlx_quant_choose_types(const rlx_quant_recipe *r, const rlx_quant_model_info *m, const rlx_weight *tensors,
                                  size_t n, uint32_t *types_out);

/* ---- whole files ---- */

/* Bytes done so far out of total, from the thread that writes the file. */
typedef void (*rlx_quant_progress_fn)(void *user, uint64_t done, uint64_t total, const char *tensor);

/* Produces rows [row0, row0 + n_rows) of tensor `tensor` as f32 into dst (n_rows * ne[0] floats).
 * Called from worker threads on disjoint rows. */
typedef rlx_status (*rlx_quant_fill_fn)(void *user, size_t tensor, uint64_t row0, uint64_t n_rows, float *dst);

typedef struct rlx_quant_job {
    const char *name;     /* borrowed; for messages */
    uint32_t out_type;    /* the type written (rlx_quantize_supported unless copy_src) */
    uint64_t row_len;     /* ne[0] */
    uint64_t n_rows;      /* product of ne[1..] */
    const void *copy_src; /* borrowed: when set, these bytes (already out_type) are written as-is */
} rlx_quant_job;

/* Writes the data of every job, in order, through w (begun, with the same tensors added in the
 * same order): rows are produced by fill and quantized by n_threads workers (0 = online cores) in
 * chunks, and written in order as they complete, so memory stays bounded whatever the model size.
 * A non-finite value in a row to quantize is an error naming the tensor and row. */
rlx_status rlx_quant_write_jobs(rlx_gguf_writer *w, const rlx_quant_job *jobs, size_t n_jobs,
                                rlx_quant_fill_fn fill, void *fill_user, int n_threads,
                                rlx_quant_progress_fn progress, void *progress_user);

/* rlx quantize: reads in_path (F32/F16/BF16 tensors), writes out_path with the recipe's types,
 * metadata copied, general.quantization_version = 2 and general.file_type = the recipe's ftype
 * (appended last, as llama-quantize does), tensors in llama.cpp's order. Errors on input that
 * holds quantized tensors. out_path is written as out_path.tmp, renamed at the end. */
rlx_status rlx_quantize_file(const char *in_path, const char *out_path, const rlx_quant_recipe *r, int n_threads,
                             rlx_quant_progress_fn progress, void *progress_user);

#endif
