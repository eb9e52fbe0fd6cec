/* ROPE (RoFormer, arXiv:2104.09864): pair p of a head turns by theta_p = pos * base^(-2p/n_rot) /
 * freq_factors[p] at the row's position (ex->rows). NORMAL pairs (x[2p], x[2p+1]); NEOX pairs (x[p],
 * x[p + n_rot/2]). Dims past n_rot pass through. Angles are computed in double, then cast. */
#include <math.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

rlx_status rlx_cpu_op_ROPE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const rlx_rope_attrs *r = &n->info.attrs.rope;
    const float *x = cpu_f32(ex, n->info.in[0]);
    const float *ff = n->info.in[1] == RLX_NO_NODE ? NULL : cpu_f32(ex, n->info.in[1]);
    float *y = cpu_f32(ex, i);
    int64_t rows = cpu_positioned_rows(ex, n), n_head = n->info.shape.dim[1], dh = n->info.shape.dim[2];
    int64_t half = r->n_rot / 2;
    float *cs = cpu_scratch(ex, 0), *sn = cs + half;
    for (int64_t row = 0; row < rows; row++) {
        double pos = (double)ex->rows->pos[row];
        for (int64_t p = 0; p < half; p++) {
            double theta = pos * pow((double)r->freq_base, -2.0 * (double)p / (double)r->n_rot);
            if (ff) theta /= (double)ff[p];
            cs[p] = (float)cos(theta);
            sn[p] = (float)sin(theta);
        }
        for (int64_t h = 0; h < n_head; h++) {
            const float *xh = x + (row * n_head + h) * dh;
            float *yh = y + (row * n_head + h) * dh;
            /* the two members of pair p sit at p*a and p*a + b */
            int64_t a = r->layout == RLX_ROPE_LAYOUT_NEOX ? 1 : 2, b = r->layout == RLX_ROPE_LAYOUT_NEOX ? half : 1;
            for (int64_t p = 0; p < half; p++) {
                float x0 = xh[p * a], x1 = xh[p * a + b];
                yh[p * a] = x0 * cs[p] - x1 * sn[p];
                yh[p * a + b] = x0 * sn[p] + x1 * cs[p];
            }
            if (dh > r->n_rot) memcpy(yh + r->n_rot, xh + r->n_rot, (size_t)(dh - r->n_rot) * sizeof(float));
        }
    }
    int64_t all = cpu_valid_outer(ex, n);
    if (all > rows) memset(y + rows * n_head * dh, 0, (size_t)((all - rows) * n_head * dh) * sizeof(float));
    return NULL;
}
