/* The parity harness of the Vulkan op tests (tests/vulkan/test_vk_ops*.c): a test graph compiled on
 * the Vulkan backend and on the CPU reference, run over the same steps on the same inputs, each
 * output compared (validate/validate_compare.h's measures and bounds); and, white box, the kernels a
 * Vulkan program dispatches. A program holds one parity state, the globals below, made by
 * vkt_parity_open and released by vkt_parity_close. */
#ifndef RLX_TESTS_TEST_VK_PARITY_H
#define RLX_TESTS_TEST_VK_PARITY_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/backend.h"
#include "runtime/vk_pipeline.h"
#include "test_vk_util.h"

#define TOL_F32 RLX_VALIDATE_BOUND_F32 /* test-backend-ops' default max NMSE */

/* F16 pools (test_kv_f16): the Vulkan sessions' K/V pools hold F16, the CPU reference's F32, so the
 * comparisons measure F16's rounding of K/V. u = 2^-10 bounds the relative error of one element
 * rounded to F16 (11 significant bits; round to nearest gives 2^-11, toward zero, which SPIR-V
 * allows a driver, 2^-10), so
 *  - a cache's contents (KV_CACHE, KV_WRITE outputs) are within NMSE u^2 = 9.5e-7 of f32's: 1e-6;
 *  - an output read from the cache (attention) has each score s = scale q.k off by at most
 *    u scale sum|q_i k_i| = u S (S <= 2 for these inputs: |q|, |k| <= 1 on average 1/2, scale
 *    <= 1/sqrt(dh) ... 2/sqrt(dh)), each weight by a factor e^(2 u S), and the V rows by u: a
 *    relative error within u (1 + 2 S) = 5u, NMSE (5u)^2 = 2.4e-5. The rounding errors of the dh
 *    terms of a dot product and of the keys of a sum are independent, so what is seen is far below
 *    (the printed worst); 3e-5 is the bound held. */
#define TOL_KV_F16_CACHE RLX_VALIDATE_BOUND_KV_F16_CACHE
#define TOL_KV_F16 RLX_VALIDATE_BOUND_KV_F16

extern uint32_t g_kv_dtype;     /* the Vulkan sessions' K/V pools: F32 (the default) or F16 */
extern rlx_backend *g_cpu;      /* owned: the reference */
extern rlx_backend *g_vk;       /* owned, unless a case swaps in a backend of its own for a while */
extern rlx_vk_options g_opts;   /* g_vk's: the environment's (vkt_options), f32-accurate prefill */
extern vkt_rng g_rng;           /* every case's inputs and weights, one fixed seed */
extern double g_worst[RLX_OP_COUNT]; /* the worst NMSE seen per op with F32 pools */
extern int g_cases[RLX_OP_COUNT];    /* outputs compared per op */

/* g_opts from the environment, with prefill matmuls on cooperative matrices in their f32-accurate
 * mode unless the caller chose one; g_vk with them and g_cpu. False when the CPU backend fails;
 * exits as vkt_backend_with does when there is no Vulkan device. */
bool vkt_parity_open(void);
/* Destroys both backends, then checks the validation messages (vkt_check_validation). */
void vkt_parity_close(void);
/* Prints g_worst and g_cases per op. */
void vkt_parity_print_worst(void);

/* ---- running on both backends ---- */

typedef struct vkt_step {
    int32_t n_past, n_tokens;
} vkt_step;

/* One backend's session, program and output buffers for a test graph. */
typedef struct vkt_side {
    rlx_session *s;  /* owned */
    rlx_program *p;  /* owned */
    void *out[8];    /* owned: one buffer per graph output */
} vkt_side;

/* Opens sd on b for t (g_kv_dtype's pools unless b is g_cpu); false, with a failed check, when
 * the session or the compile fails. vkt_side_close releases what was made either way. */
bool vkt_side_open(rlx_backend *b, vkt_graph *t, vkt_side *sd, int32_t n_out);
void vkt_side_close(rlx_backend *b, vkt_side *sd, int32_t n_out);
rlx_status vkt_side_run(rlx_backend *b, vkt_graph *t, vkt_side *sd, vkt_step st);

/* Compiles t on both backends, runs the steps, compares every output after each within tol (I32
 * outputs exactly; with F16 pools at least the F16 bounds above). Outputs whose dim 0 is the
 * graph's row count compare only the first n_tokens rows when token_major. Each output compared
 * counts as a case of op. */
void vkt_compare(rlx_op op, const char *label, vkt_graph *t, const vkt_step *steps, int n_steps, bool token_major,
                 double tol);
/* As vkt_compare (token major, TOL_F32), with every f32 input drawn afresh (uniform in [-1, 1])
 * before each step. */
void vkt_compare_fresh(rlx_op op, const char *label, vkt_graph *t, const vkt_step *steps, int n_steps);
/* One step of n_tokens rows from position 0, token major, TOL_F32. */
void vkt_compare1(rlx_op op, const char *label, vkt_graph *t, int32_t n_tokens);
/* Both backends must refuse the run with the same kind of error. */
void vkt_expect_run_error(vkt_graph *t, vkt_step st, rlx_code code, const char *needle);

/* ---- what t's program on g_vk (with g_kv_dtype's pools) dispatches ---- */

/* How many dispatches of kernel k, or with F16 pools of its F16 twin (shaders/kernels.def). */
size_t vkt_dispatch_count(vkt_graph *t, rlx_vk_kernel k);
/* How many dispatches of kernel k itself, not its twin. */
size_t vkt_dispatch_count_exact(vkt_graph *t, rlx_vk_kernel k);
/* Whether it dispatches kernel k (or its twin). */
bool vkt_dispatches(vkt_graph *t, rlx_vk_kernel k);
/* How many of its matvec dispatches warm a decode attention's caches. */
size_t vkt_warm_count(vkt_graph *t);

#endif
