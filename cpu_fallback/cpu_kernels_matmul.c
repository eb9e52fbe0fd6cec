/* MATMUL: y = x @ w^T with w in any dequantizable type. Work is split over output columns (rows of
 * w) in tiles: a tile of w is dequantized once into the thread's scratch and reused for every row of
 * x, so prefill pays for dequantization once per weight row, and a whole weight is never expanded.
 * Each output element is one dot product with a fixed order (simd->gemv), so results are bitwise identical for
 * any thread count. */
#include "cpu_fallback/cpu_internal.h"
#include "loader/dequant.h"

/* Bytes of dequantized weight rows a tile holds: about an L1 data cache. */
#define TILE_BYTES (32 * 1024)
#define TILE_MAX_ROWS 64

static int64_t tile_rows(int64_t cols) {
    int64_t t = TILE_BYTES / (int64_t)sizeof(float) / (cols > 0 ? cols : 1);
    return t < 1 ? 1 : t > TILE_MAX_ROWS ? TILE_MAX_ROWS : t;
}

size_t rlx_cpu_matmul_scratch(int64_t cols) { return (size_t)(tile_rows(cols) * cols); }

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
} matmul_job;

static void matmul_task(void *ctx, int64_t m0, int64_t m1, int tid) {
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
            for (int64_t r = 0; r < mt; r++)
                rlx_dequantize(w->dtype, w->data + (size_t)(mb + r) * w->row_bytes, scratch + r * k, (uint64_t)k);
            rows = scratch;
        }
        for (int64_t i = 0; i < j->n; i++) j->ex->simd->gemv(j->y + i * m_total + mb, j->x + i * k, rows, k, mt, k);
    }
}

void rlx_cpu_matmul(const rlx_cpu_exec *ex, const float *x, int64_t n, const rlx_cpu_matrix *w, float *y) {
    matmul_job j = {.ex = ex, .x = x, .n = n, .w = w, .y = y, .tile = tile_rows(w->cols)};
    /* dequantizing an element costs a few multiply-adds */
    double work = (double)w->rows * (double)w->cols * ((double)n + (w->dtype == RLX_DTYPE_F32 ? 0.0 : 4.0));
    rlx_cpu_parallel(ex, w->rows, j.tile, work, matmul_task, &j);
}

rlx_status rlx_cpu_op_MATMUL(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    rlx_cpu_matrix w = rlx_cpu_matrix_of(ex, i, 1, 0);
    rlx_cpu_matmul(ex, cpu_f32(ex, n->info.in[0]), cpu_valid_rows(ex, n), &w, cpu_f32(ex, i));
    return NULL;
}
