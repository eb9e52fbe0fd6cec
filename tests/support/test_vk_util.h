/* Shared by the Vulkan tests: backend creation with the skip rule, the validation-message check,
 * a seeded RNG, random weights of every stored type, and the NMSE comparison. The generator, the
 * weights and the comparison are the validation harness's (validate/validate_data.h,
 * validate/validate_compare.h), so `rlx validate` and these tests hold the device to the same code. */
#ifndef RLX_TESTS_TEST_VK_UTIL_H
#define RLX_TESTS_TEST_VK_UTIL_H

#include <stdint.h>

#include "ir/backend.h"
#include "loader/core/weight.h"
#include "runtime/vk_options.h"
#include "validate/validate_compare.h"
#include "validate/validate_data.h"

/* The options of the test's environment (tests/vulkan/tests.cmake sets RLX_VK_DEVICE,
 * RLX_VK_VALIDATION, RLX_VK_PLANS=gpu for the _gpu_plans runs, ...), which a case then overrides
 * field by field. Exits 1 when the environment holds a malformed value. */
rlx_vk_options vkt_options(void);
/* The Vulkan backend for a test, with options o. With no device named and no GPU present, lavapipe
 * is asked for by name ("llvmpipe"). No usable device at all: exits 77 (SKIPPED), or fails under
 * CI=true (CI installs lavapipe, so there it must work). Prints the device chosen. */
rlx_backend *vkt_backend_with(const rlx_vk_options *o);
/* vkt_backend_with(vkt_options()). */
rlx_backend *vkt_backend(void);
/* rlx_vk_backend_set_options(b, o) for the next compiles on b; exits 1 when o is refused. */
void vkt_set_options(rlx_backend *b, const rlx_vk_options *o);

/* Fails the test when the validation layer reported anything (the messages were printed as they
 * arrived); prints whether validation was active. Call after destroying every Vulkan object. */
void vkt_check_validation(void);

typedef rlx_validate_rng vkt_rng;
static inline uint64_t vkt_next(vkt_rng *r) { return rlx_validate_rng_next(r); }
static inline float vkt_uniform(vkt_rng *r, float lo, float hi) { return rlx_validate_rng_uniform(r, lo, hi); }
static inline int32_t vkt_int(vkt_rng *r, int32_t lo, int32_t hi) { return rlx_validate_rng_int(r, lo, hi); } /* [lo, hi] */

/* rlx_validate_weight_random (validate/validate_data.h); exits 1 when it fails. The data is owned
 * by the weight: vkt_weight_free. */
rlx_weight vkt_weight(vkt_rng *r, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                      uint64_t ne2);
void vkt_weight_free(rlx_weight *w);

/* A test graph with the weights and input data it owns, as the op tests build them. */
#define VKT_MAX_WEIGHTS 16
#define VKT_MAX_INPUTS 8

typedef struct vkt_graph {
    rlx_graph *g;                      /* owned */
    rlx_weight w[VKT_MAX_WEIGHTS];     /* owned: vkt_weight */
    char wname[VKT_MAX_WEIGHTS][32];   /* "w<k>", the names the graph's weight nodes refer to */
    size_t nw;
    void *in[VKT_MAX_INPUTS];          /* owned: input k's data, in the order of the graph's inputs */
    int nin;
    rlx_state_spec kv;                    /* the KV cache a session for the graph needs */
} vkt_graph;

void vkt_graph_init(vkt_graph *t); /* exits 1 when the graph cannot be created */
void vkt_graph_free(vkt_graph *t);
/* The status of compiling t's graph on b, in a session of its own (the session's status where that
 * fails); the program and session are gone again when it returns. */
rlx_status vkt_compile_status(rlx_backend *b, const vkt_graph *t);
rlx_shape vkt_shape(int32_t rank, int64_t d0, int64_t d1, int64_t d2);
/* A new F32 input of uniform values in [-a, a]. */
rlx_node vkt_input_f32(vkt_graph *t, vkt_rng *r, rlx_shape s, float a);
/* A new I32 input of n ids in [lo, hi]. */
rlx_node vkt_input_ids(vkt_graph *t, vkt_rng *r, int64_t n, int32_t lo, int32_t hi);
/* A new random weight (vkt_weight) with IR shape [d0, (d1, (d2))] (stored ne reversed). */
rlx_node vkt_graph_weight(vkt_graph *t, vkt_rng *r, uint32_t type, int32_t rank, int64_t d0, int64_t d1, int64_t d2);

/* t's graph: attention straight on activations (the naive path: keys are this run's rows), q
 * [n, h, dh], k [n, hkv, dh], v [n, hkv, dv] (random inputs), scale 2/sqrt(dh), sliding window
 * `window` (0 for none), marked as output "o". */
void vkt_attention_direct(vkt_graph *t, vkt_rng *r, int64_t n, int64_t h, int64_t hkv, int64_t dh, int64_t dv,
                          int32_t window);
/* t's graph: one layer's attention over the session's KV cache of cap positions, as the runners
 * build it: q [rows, h, dh], k and v [rows, hkv, dh] (random inputs) written into the cache, then
 * ATTENTION (scale 0.125, sliding window `window`, 0 for none) marked as output "o". */
void vkt_attention_cached(vkt_graph *t, vkt_rng *r, int64_t rows, int64_t cap, int64_t h, int64_t hkv, int64_t dh,
                          int32_t window);

/* rlx_validate_nmse: sum (got - want)^2 / sum want^2; +inf when only one side is finite. */
static inline double vkt_nmse(const float *got, const float *want, int64_t n) { return rlx_validate_nmse(got, want, n); }

#endif
