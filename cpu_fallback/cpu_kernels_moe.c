/* Mixture of experts. MOE_ROUTE: softmax over the router logits, keep the top_k largest (ties go
 * to the lower expert index), optionally renormalised to sum 1, as Qwen3-MoE's router does.
 * MOE_FFN: for each expert some row selected, gather those rows, run the expert's SiLU-gated FFN
 * over them with the shared matmul, and add route * result back; unselected experts cost nothing.
 * Experts are visited in index order, so the sum order is fixed. */
#include <math.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"

/* Expert a ranks below expert b: a smaller logit, or an equal one at a higher index. */
static bool ranks_below(const float *x, int64_t a, int64_t b) { return x[a] < x[b] || (x[a] == x[b] && a > b); }

rlx_status rlx_cpu_op_MOE_ROUTE(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const float *x = cpu_f32(ex, n->info.in[0]);
    float *y = cpu_f32(ex, i);
    int64_t n_exp = n->info.shape.dim[1], rows = cpu_valid_rows(ex, n);
    int32_t top_k = n->info.attrs.top_k;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n_exp;
        float *yr = y + r * n_exp;
        float mx = -INFINITY;
        for (int64_t e = 0; e < n_exp; e++) mx = xr[e] > mx ? xr[e] : mx;
        double sum = 0.0;
        for (int64_t e = 0; e < n_exp; e++) sum += exp((double)xr[e] - (double)mx);
        /* the k-th pick is the best expert ranking below the previous pick (softmax is monotonic,
         * so ranking by logit is ranking by probability) */
        for (int64_t e = 0; e < n_exp; e++) yr[e] = 0.0f;
        double kept = 0.0;
        int64_t prev = -1;
        for (int32_t k = 0; k < top_k; k++) {
            int64_t best = -1;
            for (int64_t e = 0; e < n_exp; e++)
                if ((prev < 0 || ranks_below(xr, e, prev)) && (best < 0 || ranks_below(xr, best, e))) best = e;
            double p = exp((double)xr[best] - (double)mx) / sum;
            yr[best] = (float)p;
            kept += p;
            prev = best;
        }
        if (n->info.attrs.norm_topk && kept > 0.0)
            for (int64_t e = 0; e < n_exp; e++) yr[e] = (float)((double)yr[e] / kept);
    }
    return NULL;
}

rlx_status rlx_cpu_op_MOE_FFN(const rlx_cpu_exec *ex, rlx_node i) {
    const rlx_cpu_node *n = cpu_node(ex, i);
    const rlx_node_info *in = &n->info;
    const float *x = cpu_f32(ex, in->in[0]), *route = cpu_f32(ex, in->in[1]);
    float *y = cpu_f32(ex, i);
    const rlx_shape *gs = &cpu_node(ex, in->in[2])->info.shape;
    int64_t n_exp = gs->dim[0], f = gs->dim[1], d = gs->dim[2], rows = cpu_valid_rows(ex, n);
    int64_t *sel = (int64_t *)(void *)ex->p->op_temp;
    float *xs = (float *)(void *)(sel + in->shape.dim[0]);
    float *g = xs + in->shape.dim[0] * d, *u = g + in->shape.dim[0] * f, *dn = u + in->shape.dim[0] * f;
    memset(y, 0, (size_t)(rows * d) * sizeof(float));
    for (int64_t e = 0; e < n_exp; e++) {
        int64_t cnt = 0;
        for (int64_t r = 0; r < rows; r++)
            if (route[r * n_exp + e] != 0.0f) {
                sel[cnt] = r;
                memcpy(xs + cnt * d, x + r * d, (size_t)d * sizeof(float));
                cnt++;
            }
        if (cnt == 0) continue;
        rlx_cpu_matrix gate = rlx_cpu_matrix_of(ex, i, 2, e), up = rlx_cpu_matrix_of(ex, i, 3, e);
        rlx_cpu_matrix down = rlx_cpu_matrix_of(ex, i, 4, e);
        rlx_cpu_matmul(ex, xs, cnt, &gate, g);
        rlx_cpu_matmul(ex, xs, cnt, &up, u);
        for (int64_t k = 0; k < cnt * f; k++) g[k] = g[k] / (1.0f + expf(-g[k])) * u[k];
        rlx_cpu_matmul(ex, g, cnt, &down, dn);
        for (int64_t c = 0; c < cnt; c++) {
            float w = route[sel[c] * n_exp + e];
            float *yr = y + sel[c] * d;
            const float *dr = dn + c * d;
            for (int64_t k = 0; k < d; k++) yr[k] += w * dr[k];
        }
    }
    return NULL;
}
