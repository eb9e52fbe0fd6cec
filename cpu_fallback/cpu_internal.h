/* What the CPU backend's files share: the session and program structs, the per-run execution
 * context, and the kernel table generated from ops.def (a new op without a CPU kernel is a
 * compile error: rlx_cpu_op_<NAME> is undeclared). */
#ifndef RLX_CPU_INTERNAL_H
#define RLX_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_fallback/cpu_options.h"
#include "cpu_fallback/thread_pool.h"
#include "ir/backend.h"
#include "loader/core/dtype.h"

/* The vectorised inner loops (cpu_simd.c: a portable baseline; cpu_simd_avx2.c: AVX2 + FMA +
 * F16C), one variant per instruction set. Every variant sums a dot product in one fixed order:
 * its `acc` lanes take consecutive elements round-robin and are reduced in a fixed tree. A row's
 * result therefore never depends on the thread count, and dot[type](x, w) equals
 * gemv(x, dequant[type](w)) bit for bit, so decode (which reads stored weights directly) and
 * prefill (which dequantizes tiles) give the same numbers for the same row. */
typedef void (*rlx_cpu_dot_fn)(float *restrict y, const float *restrict x, const uint8_t *restrict w,
                               size_t row_bytes, int64_t rows, int64_t n);
typedef void (*rlx_cpu_dequant_fn)(float *restrict y, const uint8_t *restrict w, int64_t n);

typedef struct rlx_cpu_simd {
    const char *name;
    /* y[r] = sum_c x[c] * m[r * stride + c] for r < rows, c < n */
    void (*gemv)(float *restrict y, const float *restrict x, const float *restrict m, int64_t stride, int64_t rows,
                 int64_t n);
    /* y[c] += sum_r w[r] * m[r * stride + c] for c < n, rows added in order */
    void (*gemv_t)(float *restrict y, const float *restrict w, const float *restrict m, int64_t stride, int64_t rows,
                   int64_t n);
    /* Per stored type, NULL where the variant has no kernel (callers then use rlx_dequantize):
     * dot: y[r] = x . row r of w, rows of n elements row_bytes apart, weights decoded in registers;
     * dequant: n elements of one row to f32, bit-identical to rlx_dequantize. */
    rlx_cpu_dot_fn dot[RLX_DTYPE_COUNT];
    rlx_cpu_dequant_fn dequant[RLX_DTYPE_COUNT];
    /* Rows shorter than min_row elements run on `narrow` instead (NULL: no such variant): wide
     * vectors pay for a longer reduction and, on some CPUs, a lower clock, which short rows do
     * not earn back. The choice depends on the row length only, so every path and thread count
     * of one op still computes the same bits. */
    int64_t min_row;
    const struct rlx_cpu_simd *narrow;
} rlx_cpu_simd;

/* The per-type part of a variant's table. Every variant covers the same types, each in its own
 * file under the same names: rows_<type> (dot) and dequant_<type>. */
#define RLX_CPU_SIMD_TYPE_KERNELS                                                                                      \
    .dot = {[RLX_DTYPE_F32] = rows_f32,                                                                                \
            [RLX_DTYPE_F16] = rows_f16,                                                                                \
            [RLX_DTYPE_BF16] = rows_bf16,                                                                              \
            [RLX_DTYPE_Q8_0] = rows_q8_0,                                                                              \
            [RLX_DTYPE_Q4_0] = rows_q4_0,                                                                              \
            [RLX_DTYPE_Q4_K] = rows_q4_k,                                                                              \
            [RLX_DTYPE_Q5_K] = rows_q5_k,                                                                              \
            [RLX_DTYPE_Q6_K] = rows_q6_k},                                                                             \
    .dequant = {[RLX_DTYPE_F16] = dequant_f16,                                                                         \
                [RLX_DTYPE_BF16] = dequant_bf16,                                                                       \
                [RLX_DTYPE_Q8_0] = dequant_q8_0,                                                                       \
                [RLX_DTYPE_Q4_0] = dequant_q4_0,                                                                       \
                [RLX_DTYPE_Q4_K] = dequant_q4_k,                                                                       \
                [RLX_DTYPE_Q5_K] = dequant_q5_k,                                                                       \
                [RLX_DTYPE_Q6_K] = dequant_q6_k}

/* The variant that computes rows of n elements. */
static inline const rlx_cpu_simd *rlx_cpu_simd_for(const rlx_cpu_simd *s, int64_t n) {
    return s->narrow && n < s->min_row ? s->narrow : s;
}

/* The best variant this CPU runs, or the one $RLX_CPU_SIMD names ("base", "avx2", "avx512") if it
 * runs. */
const rlx_cpu_simd *rlx_cpu_simd_select(const rlx_cpu_options *o);
/* Writes every variant this CPU runs, baseline first and best last (at most RLX_CPU_SIMD_MAX), to
 * out; returns how many. */
#define RLX_CPU_SIMD_MAX 3
int rlx_cpu_simd_all(const rlx_cpu_simd *out[RLX_CPU_SIMD_MAX]);

#if defined(__x86_64__) && defined(__GNUC__)
#define RLX_CPU_HAVE_AVX2 1
extern const rlx_cpu_simd rlx_cpu_simd_avx2;   /* cpu_simd_avx2.c: needs AVX2, FMA and F16C */
extern const rlx_cpu_simd rlx_cpu_simd_avx512; /* cpu_simd_avx512.c: needs those and AVX-512 F/BW/VL */
#else
#define RLX_CPU_HAVE_AVX2 0
#endif

typedef struct rlx_cpu_backend {
    rlx_backend base;
    rlx_thread_pool *pool;     /* owned */
    int n_threads;
    const rlx_cpu_simd *simd;  /* static table */
} rlx_cpu_backend;

struct rlx_session {
    rlx_cpu_backend *backend; /* borrowed: outlives the session */
    rlx_weight *weights;      /* owned array sorted by name; names owned; data borrowed from the model,
                                 which must outlive the session (backend.h) */
    size_t n_weights;
    rlx_state_spec kv;          /* head_dim_v resolved; layer_kind NULL (borrowed at create only) */
    float **k_cache, **v_cache; /* owned: n_layer pools each, [n_pages * page_size, H_kv, Dh] / [.., Dv];
                                   NULL for a layer that is not RLX_STATE_KV */
    float **state;              /* owned: n_layer; a recurrent layer's [n_state_slots, state_floats], else NULL */
};

/* Where a node's values live during a run. */
typedef enum {
    CPU_STORE_ARENA,  /* a slot of the program's arena (computed nodes) */
    CPU_STORE_INPUT,  /* the caller's input buffer */
    CPU_STORE_WEIGHT, /* the session's weight data, or the program's f32 copy of it */
    CPU_STORE_CACHE,  /* the session's KV cache of one layer */
    CPU_STORE_STATE,  /* the session's recurrent state of one layer (all slots; kernels add the slot) */
    CPU_STORE_ALIAS,  /* the storage of input 0 (RESHAPE, KV_WRITE) */
} rlx_cpu_store;

typedef struct rlx_cpu_node {
    rlx_node_info info;          /* copied from the graph; info.name owned by the program */
    int64_t numel;
    /* dim[0] is the token axis: only its first n_tokens rows are computed; the rest is padding
     * whose contents are unspecified */
    bool token_rows;
    rlx_cpu_store store;
    size_t arena_offset;         /* CPU_STORE_ARENA */
    int32_t input_index;         /* CPU_STORE_INPUT: position among the graph's INPUT nodes */
    const rlx_weight *weight;    /* CPU_STORE_WEIGHT: borrowed from the session */
    float *weight_f32;           /* CPU_STORE_WEIGHT: owned f32 copy when the weight is read as
                                    activations but stored in another type; else NULL */
} rlx_cpu_node;

struct rlx_program {
    rlx_session *session;        /* borrowed: must outlive the program */
    rlx_cpu_node *nodes;         /* owned, n_nodes */
    int32_t n_nodes;
    rlx_node *outputs;           /* owned, n_outputs */
    int32_t n_outputs;
    int32_t n_inputs;
    int64_t static_rows;         /* dim[0] of the first INPUT (1 without inputs): n_tokens <= this */
    uint8_t *arena;              /* owned, arena_size bytes */
    size_t arena_size;
    void **data;                 /* owned, n_nodes: each node's values during the current run */
    float *scratch;              /* owned: per-thread scratch, scratch_floats per thread */
    size_t scratch_floats;
    uint8_t *op_temp;            /* owned: one op's temporaries (MOE_FFN), op_temp_size bytes */
    size_t op_temp_size;
    /* rows (cpu_rows.c) */
    int64_t kv_rows;             /* the largest KV_CACHE dim[0] (logical capacity); 0: none */
    bool kv_writes;              /* the graph has a KV_WRITE */
    bool has_state;              /* the graph has a STATE */
    int32_t page_size;           /* the session's (1 without a KV pool) */
    int32_t *row_pos, *row_seq;  /* owned, static_rows: the single-sequence form's rows */
    int32_t *ident_pages;        /* owned, ident_cols: page k is pool page k */
    int32_t ident_cols;
    /* recurrent state (cpu_rows.c), when has_state: owned, static_rows each */
    int32_t *row_next;           /* the next row of the same sequence in this run, -1: none */
    int32_t *row_first;          /* 1 where a row is its sequence's first in this run */
};

/* One run: what every kernel sees. */
typedef struct rlx_cpu_exec {
    rlx_program *p;
    rlx_thread_pool *pool; /* borrowed from the backend */
    int n_threads;
    const rlx_cpu_simd *simd;
    int32_t n_tokens;
    /* borrowed: the run's rows, in the general form also when the caller gave the single-sequence
     * one (n_past), already checked (rlx_backend_check_rows) */
    const rlx_run_rows *rows;
    int32_t page_size;
    /* a STATE's floats in slot s of its layer: data + slot_of(row's table row) * state_floats + offset */
    int64_t state_floats;
    const int32_t *row_next, *row_first; /* the program's, set for this run when it has a STATE */
} rlx_cpu_exec;

/* The state slot of table row s (ir/ops.def, recurrent state). */
static inline int32_t cpu_slot_of(const rlx_cpu_exec *ex, int32_t s) {
    return ex->rows->slots ? ex->rows->slots[s] : s;
}

static inline const rlx_cpu_node *cpu_node(const rlx_cpu_exec *ex, rlx_node i) { return &ex->p->nodes[i]; }
static inline float *cpu_f32(const rlx_cpu_exec *ex, rlx_node i) { return (float *)ex->p->data[i]; }
static inline float *cpu_scratch(const rlx_cpu_exec *ex, int tid) {
    return ex->p->scratch + (size_t)tid * ex->p->scratch_floats;
}
/* Rows of dim[0] to compute this run, and elements per row of dim[0]. */
static inline int64_t cpu_valid_outer(const rlx_cpu_exec *ex, const rlx_cpu_node *n) {
    return n->token_rows ? ex->n_tokens : n->info.shape.dim[0];
}
static inline int64_t cpu_inner(const rlx_cpu_node *n) { return n->numel / n->info.shape.dim[0]; }
static inline int64_t cpu_last_dim(const rlx_cpu_node *n) { return n->info.shape.dim[n->info.shape.rank - 1]; }
/* Rows of dim[0] that have a position this run (ROPE, ATTENTION): the valid rows, never past
 * n_tokens; a node without the token axis may have more rows than the run, and those have none
 * (the kernels write 0 there). */
static inline int64_t cpu_positioned_rows(const rlx_cpu_exec *ex, const rlx_cpu_node *n) {
    int64_t rows = cpu_valid_outer(ex, n);
    return rows < ex->n_tokens ? rows : ex->n_tokens;
}
/* Rows of the last dim to compute this run (a rank-1 node is one row). */
static inline int64_t cpu_valid_rows(const rlx_cpu_exec *ex, const rlx_cpu_node *n) {
    if (n->info.shape.rank == 1) return 1;
    return cpu_valid_outer(ex, n) * cpu_inner(n) / cpu_last_dim(n);
}

/* Runs fn over [0, n_items) in chunks of a multiple of min_chunk items, on as many threads as
 * `work` (roughly, multiply-adds) is worth: one per WORK_PER_THREAD (cpu_backend.c), at most
 * the backend's count, so a small op is not handed to threads that would only wait for it. */
void rlx_cpu_parallel(const rlx_cpu_exec *ex, int64_t n_items, int64_t min_chunk, double work, rlx_pool_fn fn,
                      void *ctx);

/* A matrix operand: rows of `cols` elements of `dtype`, row_bytes apart. */
typedef struct rlx_cpu_matrix {
    const uint8_t *data;
    uint32_t dtype;
    int64_t rows, cols;
    size_t row_bytes;
} rlx_cpu_matrix;

/* The matrix of input `slot` of node i (a WEIGHT in its stored type, or an F32 node); for a
 * rank-3 operand, `sub` selects the [rows, cols] matrix sub of dim[0]. */
rlx_cpu_matrix rlx_cpu_matrix_of(const rlx_cpu_exec *ex, rlx_node i, int slot, int64_t sub);
/* y[n, w->rows] = x[n, w->cols] @ w^T, weight rows dequantized into per-thread scratch. */
void rlx_cpu_matmul(const rlx_cpu_exec *ex, const float *x, int64_t n, const rlx_cpu_matrix *w, float *y);
/* Per-thread scratch (floats) rlx_cpu_matmul needs for rows of `cols` elements. */
size_t rlx_cpu_matmul_scratch(int64_t cols);

/* Per-thread scratch floats DELTA_RULE node n needs, its values dv wide (cpu_kernels_recurrent.c). */
size_t rlx_cpu_delta_scratch(const rlx_node_info *n, int64_t dv);

/* Program planning (cpu_plan.c): token rows, storage, arena and scratch sizes. */
rlx_status rlx_cpu_plan(rlx_program *p, int n_threads);

/* Rows (cpu_rows.c). rows_plan: what the program's rows may address (kv_rows, kv_writes) and the
 * single-sequence form's tables; refuses a view longer than the pool that is read as a plain array.
 * rows_of: checks a run's rows before any kernel and sets *out to them, or to the single-sequence
 * form written out in *ident (borrowing the program's tables). copy_pages, copy_state: backend.h. */
rlx_status rlx_cpu_rows_plan(rlx_program *p);
rlx_status rlx_cpu_rows_of(rlx_program *p, const rlx_run_args *a, rlx_run_rows *ident, const rlx_run_rows **out);
/* Fills the program's row_next / row_first for rows (checked) of n_tokens valid rows. */
rlx_status rlx_cpu_state_rows(rlx_program *p, const rlx_run_rows *rows, int32_t n_tokens);
rlx_status rlx_cpu_copy_pages(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n);
rlx_status rlx_cpu_copy_state(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n);

typedef rlx_status (*rlx_cpu_kernel)(const rlx_cpu_exec *ex, rlx_node i);
#define RLX_OP(name, n_in, shape) rlx_status rlx_cpu_op_##name(const rlx_cpu_exec *ex, rlx_node i);
#include "ir/ops.def"
#undef RLX_OP

/* True when the CPU backend has a kernel for op (the table is generated from ops.def). */
bool rlx_cpu_has_kernel(rlx_op op);

#endif
