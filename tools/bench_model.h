/* What `rlx bench` reports of a model, and what one decode step must move through memory (the
 * numerator of the bandwidth floor, DESIGN.md "Performance model"). */
#ifndef RLX_TOOLS_BENCH_MODEL_H
#define RLX_TOOLS_BENCH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "loader/format/model_config.h"
#include "rlx/status.h"

typedef struct rlx_bench_model {
    char description[96];         /* "<family> <params> <file type>", like llama-bench's model column */
    char family[16];
    char file_type[24];           /* general.file_type as llama.cpp names it, else the dominant tensor type */
    uint64_t size_bytes;          /* sum of every tensor's stored bytes */
    uint64_t n_params;            /* sum of every tensor's elements */
    uint64_t weight_bytes_per_token; /* weight bytes one decode step reads (see bench_model.c) */
    rlx_model_config config;      /* copy */
} rlx_bench_model;

rlx_status rlx_bench_model_read(const char *path, rlx_bench_model *out);

/* K/V bytes read per position of context (elements of elem_bytes: 2 for an F16 cache, 4 for F32),
 * over the layers whose attention spans that position:
 * the mean, per step, of the KV bytes the decode steps at contexts first_ctx .. first_ctx + n - 1
 * read (a sliding-window layer reads at most its window; linear-attention layers read no KV). */
double rlx_bench_kv_bytes_per_step(const rlx_bench_model *m, int64_t first_ctx, int64_t n, int32_t elem_bytes);

/* n with a K / M / B suffix and `decimals` decimals: "293K", "596.05M", "8.19B" */
void rlx_bench_format_count(uint64_t n, int decimals, char *buf, size_t size);
/* "1.13 MiB", "15.26 GiB" */
void rlx_bench_format_bytes(double bytes, char *buf, size_t size);

#endif
