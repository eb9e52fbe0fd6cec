/* The parts of test_vk_ops, one program built from a source per concept (tests/vulkan/tests.cmake):
 * test_vk_ops.c the ops one by one and main; _moe.c the routing and expert ops; _delta.c the Gated
 * DeltaNet ops; _fusions.c the fused patterns; _warm.c the next stage's weights read into L2;
 * _f16_pools.c the F16 K/V pools (the kv-f16 run). They share one parity state and random stream
 * (tests/support/test_vk_parity.h), so main's order of the cases fixes every input. */
#ifndef RLX_TESTS_VULKAN_TEST_VK_OPS_H
#define RLX_TESTS_VULKAN_TEST_VK_OPS_H

#include "loader/core/dtype.h"
#include "test_util.h"
#include "test_vk_parity.h"

/* One per op of ir/ops.def: main's table names each, so an op without its function does not link. */
#define RLX_OP(name, n_in, shape) void test_##name(void);
#include "ir/ops.def"
#undef RLX_OP

static inline const char *tname(uint32_t type) { return rlx_dtype_name(type); }

/* Attention over the session cache: prefill then decode steps, as the runners do (test_vk_ops.c);
 * the cases ATTENTION runs, which the F16 pools run again. */
void attention_cached(int64_t h, int64_t hkv, int64_t dh, int32_t window, int64_t rows, int64_t cap);
void attention_cached_cases(void);

/* One attention layer as the runners build it, K (and V) written through the fused kernels
 * (test_vk_ops_fusions.c says what its cases check). */
typedef struct kv_case {
    bool norm, v_late;
    int64_t rows, h, hkv, dh, dv, cap;
    int32_t n_rot, window;
    rlx_rope_layout layout;
} kv_case;

/* t: case c's layer, with outputs o (the attention), k and v (the caches). */
void kv_case_graph(vkt_graph *t, const kv_case *c);
void test_kv_fusions(void);   /* the kv_case layers, also over F16 pools */
void test_all_fusions(void);  /* every fusion case, test_kv_fusions among them */
void test_warm_next(void);
void test_kv_f16(void);       /* the kv-f16 run */

#endif
