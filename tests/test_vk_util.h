/* Shared by the Vulkan tests: backend creation with the skip rule, the validation-message check,
 * a seeded RNG, random weights of every stored type, and the NMSE comparison. */
#ifndef RLX_TESTS_TEST_VK_UTIL_H
#define RLX_TESTS_TEST_VK_UTIL_H

#include <stdint.h>

#include "ir/backend.h"
#include "loader/weight.h"

/* The Vulkan backend for a test. With RLX_VK_DEVICE unset and no GPU present, lavapipe is asked
 * for by name ("llvmpipe"). No usable device at all: exits 77 (SKIPPED), or fails under CI=true
 * (CI installs lavapipe, so there it must work). Prints the device chosen. */
rlx_backend *vkt_backend(void);

/* Fails the test when the validation layer reported anything (the messages were printed as they
 * arrived); prints whether validation was active. Call after destroying every Vulkan object. */
void vkt_check_validation(void);

typedef struct vkt_rng {
    uint64_t s;
} vkt_rng;
uint64_t vkt_next(vkt_rng *r);
float vkt_uniform(vkt_rng *r, float lo, float hi);
int32_t vkt_int(vkt_rng *r, int32_t lo, int32_t hi); /* [lo, hi] */

/* A weight of `type` with ne = {ne0, ne1, ne2} (n_dims 1..3) and random contents: plain types get
 * values in [-1, 1]; block types random quants with scale fields set to small finite f16 values
 * (ggml-common.h block layouts), so both backends decode the same sane numbers. The data is
 * owned by the weight: vkt_weight_free. */
rlx_weight vkt_weight(vkt_rng *r, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                      uint64_t ne2);
void vkt_weight_free(rlx_weight *w);

/* Normalised mean squared error of got against want over n values: sum (got - want)^2 /
 * sum want^2 (plain squared error when want is all zero); +inf when either side has a NaN/inf the
 * other does not. */
double vkt_nmse(const float *got, const float *want, int64_t n);

#endif
