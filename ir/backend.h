/* The backend interface: what the runners call and what each backend (cpu_fallback/, runtime/)
 * implements. A session holds one model's weights and KV cache on the backend; a program is one
 * compiled graph, run many times with different run-time scalars and inputs.
 *
 * Runners never look inside a backend; backends never know which model family they run. */
#ifndef RLX_IR_BACKEND_H
#define RLX_IR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"
#include "loader/core/weight.h"
#include "rlx/status.h"

typedef struct rlx_backend rlx_backend;
typedef struct rlx_session rlx_session;
typedef struct rlx_program rlx_program;

/* Shape of the KV cache a session allocates: per layer, K [n_ctx, n_head_kv, head_dim] and
 * V [n_ctx, n_head_kv, head_dim_v], F32. Layers without attention (linear attention) still get
 * an entry; n_layer 0 means no cache at all (the naive path). */
typedef struct rlx_kv_spec {
    int32_t n_layer;
    int32_t n_ctx;
    int32_t n_head_kv;
    int32_t head_dim;
    int32_t head_dim_v; /* 0: same as head_dim */
} rlx_kv_spec;

/* One run of a program. inputs[i] is the host data of the graph's i-th INPUT node (its full static
 * shape; rows past n_tokens are ignored). outputs[i] receives the i-th graph output: its full
 * static shape, F32 or I32 as the node says.
 * The graph's static row count is dim[0] of its first INPUT node (1 when it has none): n_tokens
 * must lie in [1, that], n_past >= 0. Rows past n_tokens of token-major outputs are unspecified. */
typedef struct rlx_run_args {
    int32_t n_past;
    int32_t n_tokens;
    const void *const *inputs;
    void *const *outputs;
} rlx_run_args;

/* The checks of rlx_run_args that every backend's run makes first, given what the program has: its
 * static rows, inputs and outputs. RLX_ERR_INVALID_ARGUMENT names the first argument at fault. */
rlx_status rlx_backend_check_run_args(const rlx_run_args *a, int64_t static_rows, int32_t n_inputs,
                                      int32_t n_outputs);

/* The most runs one run_chain call makes. */
#define RLX_RUN_CHAIN_MAX 64

typedef struct rlx_backend_ops {
    /* weights: the table is borrowed for the call; a backend copies or uploads what it keeps.
     * The CPU backend keeps pointers to the weight data (no copy): the data (the rlx_model) must
     * outlive the session. */
    rlx_status (*session_create)(rlx_backend *b, const rlx_weight *weights, size_t n_weights,
                                 const rlx_kv_spec *kv, rlx_session **out);
    void (*session_destroy)(rlx_session *s);
    /* The graph is borrowed for the call; the program keeps what it needs. A program borrows its
     * session: destroy programs before the session. A program is not run concurrently with itself
     * or with another program of the same session (they share the KV cache). */
    rlx_status (*compile)(rlx_session *s, const rlx_graph *g, rlx_program **out);
    rlx_status (*run)(rlx_program *p, const rlx_run_args *args);
    /* Greedy decoding ahead: k runs (1 <= k <= RLX_RUN_CHAIN_MAX) of a program of one I32 token in
     * and one I32 id out, run i at n_past + i with the previous run's output as its input (the
     * first's from args), without returning to the host in between. outs[i] receives run i's
     * output; args->outputs[0] the last. RLX_ERR_UNSUPPORTED for a program of other inputs or
     * outputs; NULL where the backend has nothing faster than k calls of run, which the caller
     * then makes. */
    rlx_status (*run_chain)(rlx_program *p, const rlx_run_args *first, int32_t k, int32_t *outs);
    void (*program_destroy)(rlx_program *p);
    void (*destroy)(rlx_backend *b);
} rlx_backend_ops;

struct rlx_backend {
    const rlx_backend_ops *ops;
    const char *name; /* "cpu", "vulkan" */
};

/* The CPU reference backend; n_threads 0 = online cores. */
rlx_status rlx_backend_cpu_create(int n_threads, rlx_backend **out);

/* The Vulkan backend (runtime/; present when built with RLX_VULKAN, which defines RLX_HAVE_VULKAN).
 * device: an index or a name substring; NULL or "" means $RLX_VK_DEVICE, else the first GPU (CPU
 * devices such as lavapipe only when named). No loader or no device: RLX_ERR_DEVICE. Its other
 * options come from the environment, read once here (runtime/vk_backend.h lists them); tools and
 * tests pass their own with rlx_backend_vulkan_create_with (runtime/vk_backend.h). */
rlx_status rlx_backend_vulkan_create(const char *device, rlx_backend **out);

static inline void rlx_backend_destroy(rlx_backend *b) {
    if (b) b->ops->destroy(b);
}

#endif
