/* The backend interface: what the runners call and what each backend (cpu_fallback/, runtime/)
 * implements. A session holds one model's weights and its state (the paged KV pools, recurrent
 * state slots) on the backend; a program is one compiled graph, run many times with different rows
 * (positions, sequences, page tables) and inputs.
 *
 * Runners never look inside a backend; backends never know which model family they run. */
#ifndef RLX_IR_BACKEND_H
#define RLX_IR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"
#include "loader/core/weight.h"
#include "rlx/status.h"

typedef struct rlx_backend rlx_backend;
typedef struct rlx_session rlx_session;
typedef struct rlx_program rlx_program;

/* What state a layer keeps per sequence (rlx_state_spec.layer_kind). */
typedef enum {
    RLX_STATE_KV = 0,    /* attention: K and V rows in pages of the layer's pool */
    RLX_STATE_NONE,      /* nothing (the layer reads no cache) */
    RLX_STATE_RECURRENT, /* a fixed-size state per sequence slot (Gated DeltaNet: conv and delta-rule states) */
} rlx_state_kind;

/* The state a session allocates, per layer. Attention layers own a pool of n_pages pages of
 * page_size rows each, K [n_pages * page_size, n_head_kv, head_dim] and V [.., head_dim_v], of
 * kv_dtype; a sequence's logical KV row (its position) j lives in pool row
 * pages[j / page_size] * page_size + j % page_size of its page table (rlx_run_rows). Recurrent
 * layers own state_floats floats for each of n_state_slots slots (ir/ops.def, recurrent state: a
 * run's table row s uses slot rlx_run_rows.slots[s]) and no KV pool; the CPU backend gives NONE
 * layers none either. n_layer 0 means no state at all (the naive path). */
typedef struct rlx_state_spec {
    int32_t n_layer;
    int32_t n_head_kv;
    int32_t head_dim;
    int32_t head_dim_v;          /* 0: same as head_dim */
    int32_t page_size;           /* KV rows per page: a power of two */
    int32_t n_pages;             /* pages in each attention layer's pool */
    uint32_t kv_dtype;           /* rlx_dtype of K/V: RLX_DTYPE_F32 (0) or RLX_DTYPE_F16 where the backend has it */
    const uint8_t *layer_kind;   /* rlx_state_kind per layer, n_layer entries, borrowed; NULL: every layer KV */
    int32_t n_state_slots;       /* recurrent state slots; 0 when no layer is recurrent */
    int64_t state_floats;        /* floats of one recurrent layer's state per slot */
} rlx_state_spec;

/* Rows of one attention layer's pool (n_pages * page_size). */
static inline int64_t rlx_state_kv_rows(const rlx_state_spec *s) {
    return (int64_t)s->n_pages * (int64_t)s->page_size;
}

/* The checks of a spec both backends make: positive sizes, a power-of-two page size, an F32 or F16
 * KV type, known layer kinds. */
rlx_status rlx_state_spec_check(const rlx_state_spec *s);

/* The rows of a run (ir/ops.def, "the run contract"): row r is position pos[r] of the sequence whose
 * page table is row seq[r] of pages. pages is [n_seqs, page_cols] row-major; entry (s, k) is the
 * pool page holding that sequence's positions [k * page_size, (k + 1) * page_size). Only the
 * entries a row needs are read (k <= pos[r] / page_size); the rest may hold anything. */
typedef struct rlx_run_rows {
    const int32_t *pos;   /* [n_tokens] */
    const int32_t *seq;   /* [n_tokens], each in [0, n_seqs) */
    const int32_t *pages; /* [n_seqs * page_cols] */
    int32_t n_seqs;
    int32_t page_cols;
    /* [n_seqs]: the recurrent state slot of each table row (ir/ops.def, recurrent state); NULL:
     * table row s owns slot s. Read only by programs with a STATE node. */
    const int32_t *slots;
} rlx_run_rows;

/* One run of a program. inputs[i] is the host data of the graph's i-th INPUT node (its full static
 * shape; rows past n_tokens are ignored). outputs[i] receives the i-th graph output: its full
 * static shape, F32 or I32 as the node says.
 * The graph's static row count is dim[0] of its first INPUT node (1 when it has none): n_tokens
 * must lie in [1, that]. Rows past n_tokens of token-major outputs are unspecified.
 * rows == NULL is the single-sequence form: row r is position n_past + r of one sequence whose
 * logical page k is pool page k (n_past >= 0). With rows, n_past is ignored. */
typedef struct rlx_run_args {
    int32_t n_past;
    int32_t n_tokens;
    const void *const *inputs;
    void *const *outputs;
    const rlx_run_rows *rows;
} rlx_run_args;

/* The checks of rlx_run_args that every backend's run makes first, given what the program has: its
 * static rows, inputs and outputs. RLX_ERR_INVALID_ARGUMENT names the first argument at fault. */
rlx_status rlx_backend_check_run_args(const rlx_run_args *a, int64_t static_rows, int32_t n_inputs,
                                      int32_t n_outputs);

/* What a program's rows may address, for rlx_backend_check_rows: kv_rows is the logical capacity of
 * its KV_CACHE views (0: it has none; then positions are only bounded by INT32_MAX); writes says
 * whether it has a KV_WRITE (its rows' pool rows must then be distinct). */
typedef struct rlx_rows_bounds {
    int64_t kv_rows;
    int32_t page_size;
    int32_t n_pages;
    bool writes;
} rlx_rows_bounds;

/* The checks of args->rows every backend's run makes before it touches the pool: each row's seq is
 * a table row, its position lies in [0, kv_rows), the pages it reads (0 .. pos / page_size of its
 * sequence) exist in the pool, and no two rows write the same pool row. NULL rows pass. */
rlx_status rlx_backend_check_rows(const rlx_run_args *a, const rlx_rows_bounds *b);

/* The checks of a run's rows that a program with recurrent state (a STATE node) makes before any
 * kernel (ir/ops.def, recurrent state): the slot of every table row a valid row uses lies in
 * [0, n_state_slots) and no two such table rows share one; each sequence's rows are consecutive
 * positions in row order. NULL rows (the single-sequence form, slot 0) need one slot. */
rlx_status rlx_backend_check_state_rows(const rlx_run_args *a, int32_t n_state_slots);

/* The check of a STATE node at compile (ir/ops.def): its floats [offset, offset + numel) lie
 * within the state of a layer of kv that the session keeps recurrent (`recurrent`), else
 * RLX_ERR_INVALID_ARGUMENT naming the node. */
rlx_status rlx_backend_check_state_node(const rlx_state_spec *kv, bool recurrent, rlx_node i, int32_t layer,
                                        int64_t offset, int64_t numel);

/* The pool row of position pos of table row seq (after rlx_backend_check_rows passed). */
static inline int64_t rlx_rows_pool_row(const rlx_run_rows *r, int32_t seq, int32_t pos, int32_t page_size) {
    int32_t page = r->pages[(int64_t)seq * r->page_cols + pos / page_size];
    return (int64_t)page * page_size + pos % page_size;
}

/* The most runs one run_chain call makes. */
#define RLX_RUN_CHAIN_MAX 64

/* What a new session could take of a backend's own device memory now (rlx_backend_ops.memory_room). */
typedef struct rlx_backend_room {
    int64_t free_bytes; /* device memory available to this process now, in all */
    int64_t max_buffer; /* the most bytes one buffer (one layer's K or V pool) may have */
} rlx_backend_room;

typedef struct rlx_backend_ops {
    /* weights: the table is borrowed for the call; a backend copies or uploads what it keeps.
     * The CPU backend keeps pointers to the weight data (no copy): the data (the rlx_model) must
     * outlive the session. */
    rlx_status (*session_create)(rlx_backend *b, const rlx_weight *weights, size_t n_weights,
                                 const rlx_state_spec *state, rlx_session **out);
    void (*session_destroy)(rlx_session *s);
    /* Copies pool page src[i] to dst[i] in every attention layer (K and V), i < n, in order: the
     * copy-on-write of a shared page before a write. NULL where the backend cannot (the engine then
     * refuses to share pages). */
    rlx_status (*copy_pages)(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n);
    /* Copies recurrent state slot src[i] to slot dst[i] in every recurrent layer, i < n, in order;
     * src[i] == -1 zeroes slot dst[i] (a new sequence's state). The engine's sequence slots, their
     * checkpoints and restores are these copies, kept on the device. NULL where the backend has no
     * recurrent state (the engine then refuses a model with recurrent layers on it). */
    rlx_status (*copy_state)(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n);
    /* The graph is borrowed for the call; the program keeps what it needs. A program borrows its
     * session: destroy programs before the session. A program is not run concurrently with itself
     * or with another program of the same session (they share the KV cache). */
    rlx_status (*compile)(rlx_session *s, const rlx_graph *g, rlx_program **out);
    rlx_status (*run)(rlx_program *p, const rlx_run_args *args);
    /* Greedy decoding ahead: k runs (1 <= k <= RLX_RUN_CHAIN_MAX) of a program of one I32 token in
     * and one I32 id out, one row, run i at position p + i (p: first's row 0; with rows, the page
     * table must cover p + k - 1) with the previous run's output as its input (the
     * first's from args), without returning to the host in between. outs[i] receives run i's
     * output; args->outputs[0] the last. RLX_ERR_UNSUPPORTED for a program of other inputs or
     * outputs; NULL where the backend has nothing faster than k calls of run, which the caller
     * then makes. */
    rlx_status (*run_chain)(rlx_program *p, const rlx_run_args *first, int32_t k, int32_t *outs);
    void (*program_destroy)(rlx_program *p);
    void (*destroy)(rlx_backend *b);
    /* The device memory a new session could take now, so that a caller can size a KV pool by it.
     * NULL, or RLX_ERR_UNSUPPORTED, where the backend computes in host memory (the CPU backend, a
     * CPU Vulkan device such as lavapipe): host memory is not the caller's to take a share of. */
    rlx_status (*memory_room)(rlx_backend *b, rlx_backend_room *out);
} rlx_backend_ops;

struct rlx_backend {
    const rlx_backend_ops *ops;
    const char *name; /* "cpu", "vulkan" */
};

/* What a caller asks of any backend when creating it, beyond its device. All false: the defaults. */
typedef struct rlx_backend_opts {
    /* A row's results do not depend on the rows run beside it, its index among them, the row count
     * or the KV capacity of the program: bit for bit (one kernel and one reduction order per op).
     * The CPU backend is so in every mode; the Vulkan backend gives up its row-count-specific
     * kernels for it (runtime/vk_plan.c; also RLX_VK_DETERMINISTIC=1). */
    bool deterministic;
} rlx_backend_opts;

/* The CPU reference backend; n_threads 0 = online cores. */
rlx_status rlx_backend_cpu_create(int n_threads, rlx_backend **out);

/* The Vulkan backend (runtime/; present when built with RLX_VULKAN, which defines RLX_HAVE_VULKAN).
 * device: an index or a name substring; NULL or "" means $RLX_VK_DEVICE, else the first GPU (CPU
 * devices such as lavapipe only when named). No loader or no device: RLX_ERR_DEVICE. Its other
 * options come from the environment, read once here (runtime/vk_backend.h lists them); tools and
 * tests pass their own with rlx_backend_vulkan_create_with (runtime/vk_backend.h). */
rlx_status rlx_backend_vulkan_create(const char *device, rlx_backend **out);
/* ... with opts (NULL: the defaults) over the environment's options: deterministic turns
 * RLX_VK_DETERMINISTIC's mode on (false leaves the environment's choice). */
rlx_status rlx_backend_vulkan_create_opts(const char *device, const rlx_backend_opts *opts, rlx_backend **out);

static inline void rlx_backend_destroy(rlx_backend *b) {
    if (b) b->ops->destroy(b);
}

#endif
