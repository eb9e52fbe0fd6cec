#include "validate/validate_compare.h"

#include <math.h>

double rlx_validate_nmse(const float *got, const float *want, int64_t n) {
    double err = 0.0, ref = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(got[i]) != isfinite(want[i])) return INFINITY;
        if (!isfinite(want[i])) continue;
        double d = (double)got[i] - (double)want[i];
        err += d * d;
        ref += (double)want[i] * (double)want[i];
    }
    return ref > 0.0 ? err / ref : err;
}

rlx_validate_diff rlx_validate_diff_f32(const float *got, const float *want, int64_t n) {
    rlx_validate_diff d = {.n = n, .nmse = rlx_validate_nmse(got, want, n)};
    for (int64_t i = 0; i < n; i++) {
        double a = fabs((double)got[i] - (double)want[i]);
        if (isfinite(a) && a > d.max_abs) d.max_abs = a;
    }
    return d;
}

rlx_validate_diff rlx_validate_diff_i32(const int32_t *got, const int32_t *want, int64_t n) {
    rlx_validate_diff d = {.n = n, .ids = true};
    for (int64_t i = 0; i < n; i++) {
        d.ids_differ += got[i] != want[i];
        double a = fabs((double)got[i] - (double)want[i]);
        if (a > d.max_abs) d.max_abs = a;
    }
    return d;
}

rlx_validate_diff rlx_validate_diff_merge(rlx_validate_diff a, rlx_validate_diff b) {
    rlx_validate_diff d = a;
    d.n = a.n + b.n;
    /* NaN compares false: a NaN NMSE (never made above) would not hide a finite one */
    if (!(b.nmse <= d.nmse)) d.nmse = b.nmse;
    if (b.max_abs > d.max_abs) d.max_abs = b.max_abs;
    d.ids = a.ids || b.ids;
    d.ids_differ = a.ids_differ + b.ids_differ;
    return d;
}

bool rlx_validate_diff_within(const rlx_validate_diff *d, double bound) {
    return d->nmse <= bound && d->ids_differ == 0;
}
