/* MATMUL: y = x @ w^T with w in any dequantizable type. Work is split over output columns (rows of
 * w). Few rows of x (decode): each weight row is read once, in its stored type, by simd->dot, which
 * decodes it in registers; nothing is expanded to f32. Many rows (prefill): a tile of w is
 * dequantized once into the thread's scratch and reused for every row of x, so dequantization is
 * paid once per weight row, and a whole weight is never expanded. Both paths compute each output
 * element as one dot product in the variant's fixed order, and dot[type] equals gemv over
 * dequant[type] bit for bit (cpu_internal.h), so results are identical for any thread count and
 * on either path. */
#include "cpu_fallback/cpu_internal.h"
#include "loader/core/dequant.h"

/* Bytes of dequantized weight rows a tile holds: about an L1 data cache. */
#define TILE_BYTES (32 * 1024)
#define TILE_MAX_ROWS 64

static int64_t tile_rows(int64_t cols) {
    int64_t t = TILE_BYTES / (int64_t)sizeof(float) / (cols > 0 ? cols : 1);
    return t < 1 ? 1 : t > TILE_MAX_ROWS ? TILE_MAX_ROWS : t;
}

size_t rlx_cpu_matmul_scratch(int64_t cols) { return (size_t)(tile_rows(cols) * cols); }

/* Rows of x up to which weights are decoded in registers once per row of x rather than once into
 * a tile. One row always (decode reads each weight byte once). For a few rows, a float type's
 * decode (a conversion) is cheaper than the tile's store and reloads, while a quantized type's
 * (unpacking, scaling) is not: measured with 4096 x 1024 weights, 1-4 rows, AVX2. */
static int64_t direct_max_rows(uint32_t dtype) {
    return dtype == RLX_DTYPE_F32 || dtype == RLX_DTYPE_F16 || dtype == RLX_DTYPE_BF16 ? 4 : 1;
}

rlx_cpu_matrix rlx_cpu_matrix_of(const rlx_cpu_exec *ex, rlx_node i, int slot, int64_t sub) {
    rlx_node wi = cpu_node(ex, i)->info.in[slot];
    const rlx_cpu_node *w = cpu_node(ex, wi);
    const rlx_shape *s = &w->info.shape;
    rlx_cpu_matrix m = {.rows = s->dim[s->rank - 2], .cols = s->dim[s->rank - 1]};
    if (w->info.op == RLX_OP_WEIGHT) {
        m.data = w->weight->data;
        m.dtype = w->weight->type;
    } else {
        m.data = ex->p->data[wi];
        m.dtype = RLX_DTYPE_F32;
    }
    const rlx_dtype_info *info = rlx_dtype_get(m.dtype);
    m.row_bytes = (size_t)(m.cols / info->block_size) * info->type_size;
    m.data += (size_t)sub * (size_t)m.rows * m.row_bytes;
    return m;
}

typedef struct matmul_job {
    const rlx_cpu_exec *ex;
    const float *x;
    int64_t n;
    const rlx_cpu_matrix *w;
    float *y;
    int64_t tile;
    const rlx_cpu_simd *simd;   /* the variant for w's row length */
    rlx_cpu_dot_fn dot;         /* direct path: the variant's kernel for w's type */
    rlx_cpu_dequant_fn dequant; /* tile path: the variant's dequantization, or NULL (rlx_dequantize) */
} matmul_job;

static void direct_task(void *ctx, int64_t m0, int64_t m1, int tid) {
    (void)tid;
    const matmul_job *j = ctx;
    const rlx_cpu_matrix *w = j->w;
    const uint8_t *rows = w->data + (size_t)m0 * w->row_bytes;
    if (j->n == 1) {
        j->dot(j->y + m0, j->x, rows, w->row_bytes, m1 - m0, w->cols);
        return;
    }
    /* each weight row stays in L1 while every row of x reads it */
    for (int64_t m = m0; m < m1; m++, rows += w->row_bytes)
        for (int64_t i = 0; i < j->n; i++)
            j->dot(j->y + i * w->rows + m, j->x + i * w->cols, rows, w->row_bytes, 1, w->cols);
}

static void tile_task(void *ctx, int64_t m0, int64_t m1, int tid) {
    const matmul_job *j = ctx;
    const rlx_cpu_matrix *w = j->w;
    int64_t k = w->cols, m_total = w->rows;
    float *scratch = cpu_scratch(j->ex, tid);
    for (int64_t mb = m0; mb < m1; mb += j->tile) {
        int64_t mt = m1 - mb < j->tile ? m1 - mb : j->tile;
        const float *rows;
        if (w->dtype == RLX_DTYPE_F32) {
            rows = (const float *)(const void *)(w->data + (size_t)mb * w->row_bytes);
        } else {
            for (int64_t r = 0; r < mt; r++) {
                const uint8_t *src = w->data + (size_t)(mb + r) * w->row_bytes;
                if (j->dequant) j->dequant(scratch + r * k, src, k);
                else rlx_dequantize(w->dtype, src, scratch + r * k, (uint64_t)k);
            }
            rows = scratch;
        }
        for (int64_t i = 0; i < j->n; i++) j->simd->gemv(j->y + i * m_total + mb, j->x + i * k, rows, k, mt, k);
    }
}

void rlx_cpu_matmul(const rlx_cpu_exec *ex, const float *x, int64_t n, const rlx_cpu_matrix *w, float *y) {
    const rlx_cpu_simd *simd = rlx_cpu_simd_for(ex->simd, w->cols);
    matmul_job j = {.ex = ex, .x = x, .n = n, .w = w, .y = y, .tile = tile_rows(w->cols), .simd = simd,
                    .dot = simd->dot[w->dtype], .dequant = simd->dequant[w->dtype]};
    if (j.dot && n <= direct_max_rows(w->dtype)) {
        rlx_cpu_parallel(ex, w->rows, 1, (double)w->rows * (double)w->cols * (double)n, direct_task, &j);
        return;
    }
    /* dequantizing an element costs a few multiply-adds */
    double work = (double)w->rows * (double)w->cols * ((double)n + (w->dtype == RLX_DTYPE_F32 ? 0.0 : 4.0));
    rlx_cpu_parallel(ex, w->rows, j.tile, work, tile_task, &j);
}

rlx_status rlx_cpu_op_MATMUL(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    rlx_cpu_matrix w = rlx_cpu_matrix_of(ex, i, 1, 0);
    rlx_cpu_matmul(ex, cpu_f32(ex, n->info.in[0]), cpu_valid_rows(ex, n), &w, cpu_f32(ex, i));
    return NULL;
}
