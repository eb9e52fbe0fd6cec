/* Random operands for the validation harness: a seeded generator and weights of every stored type
 * with sane contents, so that both backends decode the same bytes to the same sane numbers and only
 * the kernels differ. Shared with the Vulkan tests (tests/support/test_vk_util.h). */
#ifndef RLX_VALIDATE_DATA_H
#define RLX_VALIDATE_DATA_H

#include <stdint.h>

#include "loader/core/weight.h"
#include "rlx/status.h"

typedef struct rlx_validate_rng {
    uint64_t s; /* any value but 0 */
} rlx_validate_rng;

uint64_t rlx_validate_rng_next(rlx_validate_rng *r);              /* xorshift64* */
float rlx_validate_rng_uniform(rlx_validate_rng *r, float lo, float hi);
int32_t rlx_validate_rng_int(rlx_validate_rng *r, int32_t lo, int32_t hi); /* [lo, hi] */

/* *out: a weight of `type` with ne = {ne0, ne1, ne2} (n_dims 1..3) named `name` (borrowed) and
 * random contents: plain types get values in [-1, 1]; block types random quants with their scale
 * fields set to small finite values (ggml-common.h block layouts), so no block decodes to a NaN or
 * a huge number. The data is owned by the weight: rlx_validate_weight_free. */
rlx_status rlx_validate_weight_random(rlx_validate_rng *r, const char *name, uint32_t type, uint32_t n_dims,
                                      uint64_t ne0, uint64_t ne1, uint64_t ne2, rlx_weight *out);
void rlx_validate_weight_free(rlx_weight *w); /* a zeroed weight is fine */

#endif
