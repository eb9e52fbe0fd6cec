/* Elementwise ops and reductions over the last dim: ADD, MUL, SCALE, SILU, GELU_TANH, SOFTMAX,
 * ARGMAX. They are cheap next to MATMUL and ATTENTION, so they run on the calling thread. */
#include <math.h>

#include "cpu_fallback/cpu_internal.h"

/* Elements to compute this run. */
static int64_t valid_elems(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    return cpu_valid_outer(ex, n) * cpu_inner(n);
}

rlx_status rlx_cpu_op_ADD(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_node_info *n = &cpu_node(ex, i)->info;
    const float *restrict a = cpu_f32(ex, n->in[0]), *restrict b = cpu_f32(ex, n->in[1]);
    float *restrict y = cpu_f32(ex, i);
    int64_t count = valid_elems(ex, i);
    for (int64_t k = 0; k < count; k++) y[k] = a[k] + b[k];
    return NULL;
}

rlx_status rlx_cpu_op_MUL(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_node_info *n = &cpu_node(ex, i)->info;
    const float *restrict a = cpu_f32(ex, n->in[0]), *restrict b = cpu_f32(ex, n->in[1]);
    float *restrict y = cpu_f32(ex, i);
    int64_t count = valid_elems(ex, i);
    for (int64_t k = 0; k < count; k++) y[k] = a[k] * b[k];
    return NULL;
}

rlx_status rlx_cpu_op_SCALE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_node_info *n = &cpu_node(ex, i)->info;
    const float *restrict x = cpu_f32(ex, n->in[0]);
    float *restrict y = cpu_f32(ex, i);
    float s = n->attrs.scale;
    int64_t count = valid_elems(ex, i);
    for (int64_t k = 0; k < count; k++) y[k] = x[k] * s;
    return NULL;
}

rlx_status rlx_cpu_op_SILU(const rlx_cpu_exec *ex, rlx_node i) {
    const float *restrict x = cpu_f32(ex, cpu_node(ex, i)->info.in[0]);
    float *restrict y = cpu_f32(ex, i);
    int64_t count = valid_elems(ex, i);
    for (int64_t k = 0; k < count; k++) y[k] = x[k] / (1.0f + expf(-x[k]));
    return NULL;
}

rlx_status rlx_cpu_op_GELU_TANH(const rlx_cpu_exec *ex, rlx_node i) {
    const float *restrict x = cpu_f32(ex, cpu_node(ex, i)->info.in[0]);
    float *restrict y = cpu_f32(ex, i);
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    int64_t count = valid_elems(ex, i);
    /* 0.5 (1 + tanh z) = 1 / (1 + exp(-2z)): the same function without the cancellation of
     * 1 + tanh z near -1, so negative inputs keep their relative precision */
    for (int64_t k = 0; k < count; k++) {
        float v = x[k];
        y[k] = v / (1.0f + expf(-2.0f * c * (v + 0.044715f * v * v * v)));
    }
    return NULL;
}

rlx_status rlx_cpu_op_SOFTMAX(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const float *x = cpu_f32(ex, n->info.in[0]);
    float *y = cpu_f32(ex, i);
    int64_t d = cpu_last_dim(n), rows = cpu_valid_rows(ex, n);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        float mx = -INFINITY;
        for (int64_t k = 0; k < d; k++) mx = xr[k] > mx ? xr[k] : mx;
        double sum = 0.0;
        for (int64_t k = 0; k < d; k++) {
            yr[k] = expf(xr[k] - mx);
            sum += yr[k];
        }
        float inv = (float)(1.0 / sum);
        for (int64_t k = 0; k < d; k++) yr[k] *= inv;
    }
    return NULL;
}

rlx_status rlx_cpu_op_ARGMAX(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i), *xn = cpu_node(ex, n->info.in[0]);
    const float *x = cpu_f32(ex, n->info.in[0]);
    int32_t *y = (int32_t *)ex->p->data[i];
    int64_t d = cpu_last_dim(xn), rows = cpu_valid_rows(ex, xn);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        int64_t best = 0;
        for (int64_t k = 0; k < d && best >= 0; k++) {
            if (isnan(xr[k]) || xr[k] == INFINITY) best = -1; /* ops.def: a row that overflowed */
            else if (xr[k] > xr[best]) best = k;
        }
        y[r] = best >= 0 && xr[best] == -INFINITY ? -1 : (int32_t)best;
    }
    return NULL;
}
