/* How a device's output is held to the CPU reference's: the difference measures and the bounds of
 * the validation harness (docs/VALIDATION.md says where each bound comes from). Shared by
 * `rlx validate` and the Vulkan op tests (tests/vulkan/test_vk_ops.c, test_vk_prefill.c). */
#ifndef RLX_VALIDATE_COMPARE_H
#define RLX_VALIDATE_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

/* llama.cpp test-backend-ops' default maximum NMSE, for computation in f32: every f32-accurate path
 * (weights of any type decode exactly in f32: f16, bf16 and block scales are exact there). */
#define RLX_VALIDATE_BOUND_F32 1e-7
/* Prefill matmuls with f16 operands and f32 sums (cooperative matrices, the "mixed" mode): an
 * operand rounded to f16 is within 2^-11 of itself, so a product within about 2^-10, and the NMSE
 * of a sum of such products stays below (2^-10)^2 = 9.5e-7. */
#define RLX_VALIDATE_BOUND_MIXED 1e-6
/* K/V pools in F16 against the CPU's F32: a cache's contents are within NMSE u^2 = 9.5e-7 of f32's
 * (u = 2^-10, one rounding to F16 in any SPIR-V rounding mode); an attention output read from them
 * within (5u)^2 = 2.4e-5 (tests/support/test_vk_parity.h derives it), held at 3e-5. */
#define RLX_VALIDATE_BOUND_KV_F16_CACHE 1e-6
#define RLX_VALIDATE_BOUND_KV_F16 3e-5

/* The difference of one output (or the worst of several, rlx_validate_diff_merge). */
typedef struct rlx_validate_diff {
    int64_t n;          /* values compared */
    double nmse;        /* sum (got - want)^2 / sum want^2; +inf where only one side is finite */
    double max_abs;     /* max |got - want| over the finite pairs */
    bool ids;           /* I32 values, compared exactly */
    int64_t ids_differ; /* I32: how many differ */
} rlx_validate_diff;

/* Normalised mean squared error of got against want over n values: sum (got - want)^2 /
 * sum want^2 (plain squared error when want is all zero); +inf when either side has a NaN/inf the
 * other does not (test-backend-ops' NMSE). */
double rlx_validate_nmse(const float *got, const float *want, int64_t n);
rlx_validate_diff rlx_validate_diff_f32(const float *got, const float *want, int64_t n);
rlx_validate_diff rlx_validate_diff_i32(const int32_t *got, const int32_t *want, int64_t n);
/* The worst of a and b, the counts summed. */
rlx_validate_diff rlx_validate_diff_merge(rlx_validate_diff a, rlx_validate_diff b);
/* Whether d is within bound: NMSE <= bound for f32 values, no id differing for I32. */
bool rlx_validate_diff_within(const rlx_validate_diff *d, double bound);

#endif
