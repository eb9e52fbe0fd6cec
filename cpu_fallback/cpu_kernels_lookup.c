/* Leaves, views and lookups: INPUT, WEIGHT, KV_CACHE and RESHAPE have no work (their storage is
 * bound before the run: cpu_backend.c), EMBED gathers dequantized table rows, GATHER_ROWS picks rows
 * by index (0 for an index past the valid rows), LAST_ROW copies the
 * last valid row. */
#include <inttypes.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"
#include "loader/core/dequant.h"

rlx_status rlx_cpu_op_INPUT(const rlx_cpu_exec *ex, rlx_node i) {
    (void)ex;
    (void)i;
    return NULL;
}

rlx_status rlx_cpu_op_WEIGHT(const rlx_cpu_exec *ex, rlx_node i) {
    (void)ex;
    (void)i;
    return NULL;
}

rlx_status rlx_cpu_op_KV_CACHE(const rlx_cpu_exec *ex, rlx_node i) {
    (void)ex;
    (void)i;
    return NULL;
}

rlx_status rlx_cpu_op_RESHAPE(const rlx_cpu_exec *ex, rlx_node i) {
    (void)ex;
    (void)i;
    return NULL;
}

rlx_status rlx_cpu_op_EMBED(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    rlx_cpu_matrix table = rlx_cpu_matrix_of(ex, i, 0, 0);
    const int32_t *ids = (const int32_t *)ex->p->data[n->info.in[1]];
    float *out = cpu_f32(ex, i);
    int64_t rows = cpu_valid_outer(ex, n);
    for (int64_t t = 0; t < rows; t++) {
        if (ids[t] < 0 || ids[t] >= table.rows)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d EMBED: token id %" PRId32 " at row %" PRId64
                              " is outside the table's %" PRId64 " rows", i, ids[t], t, table.rows);
        rlx_dequantize(table.dtype, table.data + (size_t)ids[t] * table.row_bytes, out + t * table.cols,
                       (uint64_t)table.cols);
    }
    return NULL;
}

rlx_status rlx_cpu_op_LAST_ROW(const rlx_cpu_exec *ex, rlx_node i) {
    rlx_node xi = cpu_node(ex, i)->info.in[0];
    const rlx_cpu_node *x = cpu_node(ex, xi);
    int64_t row = ex->n_tokens - 1, inner = cpu_inner(x);
    if (row >= x->info.shape.dim[0])
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%%%d LAST_ROW: row n_tokens - 1 = %" PRId64
                          " is outside the input's %" PRId64 " rows", i, row, x->info.shape.dim[0]);
    /* F32 and I32 elements are both 4 bytes */
    memcpy(ex->p->data[i], (const uint8_t *)ex->p->data[xi] + (size_t)(row * inner) * 4, (size_t)inner * 4);
    return NULL;
}

rlx_status rlx_cpu_op_GATHER_ROWS(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    rlx_node xi = n->info.in[0];
    const float *x = ex->p->data[xi];
    const int32_t *idx = ex->p->data[n->info.in[1]];
    float *out = ex->p->data[i];
    int64_t inner = cpu_inner(cpu_node(ex, xi)), m = n->info.shape.dim[0];
    for (int64_t r = 0; r < m; r++) {
        float *dst = out + r * inner;
        if (idx[r] >= 0 && idx[r] < ex->n_tokens) memcpy(dst, x + (int64_t)idx[r] * inner, (size_t)inner * sizeof *dst);
        else memset(dst, 0, (size_t)inner * sizeof *dst);
    }
    return NULL;
}
