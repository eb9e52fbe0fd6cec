/* What the Vulkan backend's files share: the backend, session and program structs, and the
 * lowering interface between vk_compile.c (planning, recording), vk_fuse.c (fusion planning) and
 * vk_lower.c (one function per IR op, generated from ops.def). */
#ifndef RLX_RUNTIME_VK_INTERNAL_H
#define RLX_RUNTIME_VK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/backend.h"
#include "runtime/vk_device.h"
#include "runtime/vk_memory.h"
#include "runtime/vk_options.h"
#include "runtime/vk_pipeline.h"

/* One bound range of a buffer. */
typedef struct vk_range {
    VkBuffer buffer; /* borrowed */
    VkDeviceSize offset, size;
} vk_range;

/* A weight on the device, in its stored type, split by rows into parts that each fit one
 * binding (maxStorageBufferRange / maxMemoryAllocationSize). */
typedef struct vk_weight_part {
    rlx_vk_alloc alloc; /* owned (session's device heap) */
    uint64_t row0, rows;
} vk_weight_part;

typedef struct vk_weight {
    char *name;                 /* owned */
    uint32_t type;              /* rlx_dtype */
    uint32_t n_dims;
    uint64_t ne[RLX_WEIGHT_MAX_DIMS];
    uint64_t rows, row_bytes;   /* rows = elements / ne[0]; row_bytes = stored bytes of ne[0] elements */
    vk_weight_part *parts;      /* owned, n_parts */
    uint32_t n_parts;
} vk_weight;

typedef struct rlx_vk_backend {
    rlx_backend base;             /* first: rlx_backend * casts to this */
    rlx_vk_device *dev;           /* owned */
    rlx_vk_heap *dev_heap;        /* owned: device-local */
    rlx_vk_heap *up_heap;         /* owned: host-visible, written by the host */
    rlx_vk_heap *rb_heap;         /* owned: host-visible, read by the host */
    rlx_vk_pipelines *pipes;      /* owned */
    uint32_t wg;                  /* default workgroup size (a power of two) */
    uint32_t wg_row;              /* workgroup size of row reductions over long rows */
    bool debug;                   /* RLX_VK_DEBUG: print each program's plan */
    bool fusion;                  /* RLX_VK_FUSION=0 turns fusion off (to compare against) */
    bool profile;                 /* RLX_VK_PROFILE: time every dispatch, print per kernel after runs */
    bool profile_each;            /* RLX_VK_PROFILE=2: also print every dispatch */
    rlx_vk_tuning tuning;         /* what the planners read, from the options and the device */
} rlx_vk_backend;

struct rlx_session {
    rlx_vk_backend *b;            /* borrowed */
    vk_weight *weights;           /* owned, n_weights, sorted by name */
    size_t n_weights;
    rlx_state_spec kv;            /* head_dim_v resolved; layer_kind NULL (borrowed at create only) */
    rlx_vk_alloc *k_cache;        /* owned, kv.n_layer each (device heap); empty for a recurrent layer */
    rlx_vk_alloc *v_cache;
    uint8_t *layer_kind;          /* owned, kv.n_layer: rlx_state_kind per layer; NULL: every layer KV */
    rlx_vk_alloc *state;          /* owned, kv.n_layer: a recurrent layer's n_state_slots x state_floats F32
                                     (runtime/vk_state.c); empty for other layers; NULL without layer_kind */
};

/* ---- vk_state.c: the recurrent state ---- */

/* Whether layer is a recurrent layer of s (it has a state buffer and no KV pool). */
bool vk_layer_recurrent(const rlx_session *s, int32_t layer);
/* Recurrent layers in kv. */
int32_t vk_state_layers(const rlx_state_spec *kv);
/* Bytes of one recurrent layer's state (0 when none is), refused when it exceeds one binding. */
rlx_status vk_state_layer_bytes(const rlx_vk_backend *b, const rlx_state_spec *kv, uint64_t *out);
/* Allocates and zeroes each recurrent layer's state through u; keeps a copy of the layer kinds. */
rlx_status vk_state_alloc(rlx_session *s, rlx_vk_uploader *u, const rlx_state_spec *kv);
void vk_state_free(rlx_session *s);
/* rlx_backend_ops.copy_state. */
rlx_status vk_copy_state(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n);

/* Bytes of one K/V element in the session's pools: F16 or F32 (kv.kv_dtype). */
static inline uint32_t vk_kv_elem_bytes(const rlx_session *s) { return s->kv.kv_dtype == RLX_DTYPE_F16 ? 2u : 4u; }

/* Where a node's values live. */
typedef enum {
    VK_STORE_NONE,   /* dead: nothing consumes it */
    VK_STORE_ARENA,  /* an intermediate, placed by liveness in one of the arena bins */
    VK_STORE_INPUT,  /* the program's device input region */
    VK_STORE_WEIGHT, /* the session's weight */
    VK_STORE_KV,     /* the session's KV cache of (layer, K|V) */
    VK_STORE_STATE,  /* the session's recurrent state of a layer (every slot; kernels add slot and offset) */
    VK_STORE_ALIAS,  /* the storage of in[0] (RESHAPE, KV_WRITE) */
} vk_store;

typedef struct vk_node {
    rlx_node_info info;       /* copy of the graph's node; name owned */
    vk_store store;
    int64_t numel;
    uint64_t bytes;           /* numel * 4 for computed values */
    uint32_t tok;             /* rows of the last dim per token row (0: not token-major) */
    bool live;                /* reaches an output or has a side effect (KV_WRITE) */
    int32_t last_use;         /* index of the last consumer; INT32_MAX for outputs */
    uint32_t bin;             /* VK_STORE_ARENA: bin and offset */
    VkDeviceSize offset;
    uint64_t scratch_bytes;   /* arena bytes the node's kernels need while it runs (MOE_FFN) */
    uint32_t scratch_bin;
    VkDeviceSize scratch_offset;
    int32_t n_consumers;      /* live consumers (an input used twice counts twice) */
    bool is_output;
    rlx_node fused_into;      /* RLX_NO_NODE, or the node whose dispatch computes this one's value (an
                                 RMS_NORM folded into several matvecs: the one dispatched last) */
    uint8_t fuse;             /* vk_fuse: what this node's own dispatch absorbs */
    rlx_node fuse_a, fuse_b;  /* the nodes that fusion involves (see vk_fuse) */
    rlx_node warm;            /* RLX_NO_NODE, or the decode ATTENTION whose cache rows this matvec reads
                                 into L2 (shaders/matvec.comp WARM, runtime/vk_fuse.c mark_warm) */
    rlx_node post;            /* RLX_NO_NODE, or the node computed from this node's value by its matvec
                                 (shaders/matvec.comp POST): an RMS_NORM it prepares
                                 (VK_FUSE_NORM_BY_PRODUCER) or an ARGMAX (VK_FUSE_ARGMAX_BY_PRODUCER);
                                 the sync block at const_offset */
    const vk_weight *weight;  /* VK_STORE_WEIGHT */
    VkDeviceSize input_offset; /* VK_STORE_INPUT: offset in the input region */
    VkDeviceSize const_offset; /* weights read as f32 operands, ROPE tables, post's sync block: offset in consts */
    bool has_const;
} vk_node;

/* Fusions: a node absorbs its producer(s) into its own dispatch. fuse_a is the absorbed node. */
typedef enum {
    VK_FUSE_NONE,
    VK_FUSE_MATMUL_ADD,  /* ADD = fuse_a (MATMUL) + fuse_b: residual add in the matmul's epilogue */
    VK_FUSE_MATMUL_GATE, /* MUL = act(x of fuse_b) * fuse_a (MATMUL); fuse_b the SILU/GELU_TANH node */
    VK_FUSE_GATE_UP,     /* VK_FUSE_MATMUL_GATE whose gate MATMUL (x of fuse_b) is computed in the same matvec */
    VK_FUSE_ACT_MUL,     /* MUL = act(x of fuse_a) * fuse_b, one elementwise kernel */
    VK_FUSE_NORM_SCALE,  /* SCALE of fuse_a (RMS_NORM): the norm's scale factor */
    VK_FUSE_NORM_ROPE,   /* ROPE of fuse_a (RMS_NORM over heads): q/k norm and RoPE in one kernel */
    VK_FUSE_NORM_ADD,    /* ADD = fuse_b + fuse_a (RMS_NORM): the residual add after a norm (Gemma 3's post-norms) */
    VK_FUSE_KV_ROPE,     /* KV_WRITE of fuse_a (ROPE): the RoPE kernel writes K into the cache; fuse_b, when
                            not RLX_NO_NODE, the V KV_WRITE whose rows that kernel copies too */
    VK_FUSE_MATVEC_NORM, /* MATMUL whose x is fuse_a (RMS_NORM): shaders/matvec.comp normalises the rows itself */
    VK_FUSE_NORM_BY_PRODUCER, /* RMS_NORM prepared by the matvec of fuse_a (a MATMUL_ADD): its storage holds the input
                                 times the weights, and that matvec leaves the rsqrt factor (POST) */
    VK_FUSE_MATVEC_SCALED, /* MATMUL whose x is fuse_a (VK_FUSE_NORM_BY_PRODUCER): the sums are scaled by that factor */
    VK_FUSE_ARGMAX_BY_PRODUCER, /* ARGMAX of one row written by the matvec of fuse_a (its MATMUL): the last
                                   workgroups to finish reduce the workgroups' maxima */
    VK_FUSE_NORM_GATE,   /* MUL = fuse_a (RMS_NORM) * SiLU(x of fuse_b): the norm kernel multiplies by the gate */
    VK_FUSE_L2_SLICE,    /* L2_NORM reading its x through fuse_a (a SLICE, maybe under RESHAPE views) itself */
    VK_FUSE_L2_SCALE,    /* SCALE of fuse_a (L2_NORM): the l2 kernel's scale */
    VK_FUSE_DELTA_INPUTS, /* DELTA_RULE computing its g (a DELTA_GATE), beta (a SIGMOID), reading v through a
                             SLICE, or normalising q and k (their L2_NORMs, q's maybe under a SCALE) itself:
                             each such producer's fused_into is the DELTA_RULE */
    VK_FUSE_ATTN_STEP,   /* ATTENTION of one query row whose q is fuse_a (ROPE, maybe of an RMS_NORM) and whose
                            K write fuse_b (VK_FUSE_KV_ROPE) and V write are done by shaders/attention_step.comp */
    VK_FUSE_MOE_ADD,     /* ADD whose sum includes fuse_a (MOE_FFN): the down pass adds the rest (vk_fuse.c
                            fuse_moe); fuse_b the inner ADD when there are two, else RLX_NO_NODE */
} vk_fuse;

/* One compute dispatch, recorded once into the program's command buffer. */
typedef struct vk_dispatch {
    const rlx_vk_pipeline *pipe;  /* borrowed from the pipeline set */
    vk_range bind[RLX_VK_MAX_BINDINGS];
    uint32_t n_bind;
    uint32_t reads, writes;       /* binding masks, for barrier placement */
    uint32_t push[RLX_VK_PUSH_BYTES / 4];
    uint32_t push_bytes;
    uint64_t groups;              /* 1-D group count; folded into x * y when recorded */
    rlx_node node;
    VkDescriptorSet set;          /* owned by the program's pool */
} vk_dispatch;

typedef struct vk_dispatch_list {
    vk_dispatch *items;           /* owned */
    size_t n, cap;
} vk_dispatch_list;

/* Run-time checks the host makes before submitting (ops whose bounds depend on n_past/n_tokens). */
typedef struct vk_check {
    rlx_node node;
    int64_t cap;                  /* KV_WRITE: n_past + n_tokens <= cap; LAST_ROW: n_tokens <= cap */
    int64_t rows;                 /* KV_WRITE: n_tokens <= rows of x */
} vk_check;

#define VK_MAX_BINS 16

struct rlx_program {
    rlx_session *s;               /* borrowed: programs are destroyed before their session */
    rlx_vk_backend *b;            /* borrowed */
    bool gpu_plans;               /* plan as for a GPU: the device is one, or RLX_VK_PLANS=gpu (tests) */
    vk_node *nodes;               /* owned, n_nodes */
    int32_t n_nodes;
    rlx_node *inputs, *outputs;   /* owned */
    int32_t n_inputs, n_outputs;
    VkDeviceSize *output_offset;  /* owned: each output's place in the readback region */
    int64_t static_rows;
    bool rows_apart;              /* RLX_HINT_ROWS_APART: each row its own sequence (a decode batch) */
    vk_check *checks;             /* owned, n_checks */
    size_t n_checks;
    /* the run's rows (shaders/common.glsl RlxScalars; vk_compile.c load_rows) */
    int64_t kv_rows;              /* the largest KV_CACHE capacity T (0: the program reads no pool) */
    bool writes_kv;               /* it has a KV_WRITE */
    uint32_t page_shift;          /* log2 of the session's page size */
    uint32_t page_cols;           /* page table columns: ceil(kv_rows / page_size) */
    VkDeviceSize scalars_bytes;   /* the header, pos[R], seq[R] and R rows of the page table */
    bool has_state;               /* it has a STATE node: the rows' buffer ends with the state table */
    int32_t *seq_map;             /* owned, seq_map_cap: a run's table row -> its row in the device table */
    int32_t seq_map_cap;

    /* memory: the input region is mirrored host -> device at the start of every run; it holds the
     * scalars (n_past, n_tokens, the rows' positions, sequences and page tables), the status words
     * and every INPUT */
    VkDeviceSize in_size, status_offset, rb_size;
    rlx_vk_alloc in_host, in_dev, rb;
    rlx_vk_alloc arena[VK_MAX_BINS];
    VkDeviceSize bin_peak[VK_MAX_BINS];
    uint32_t n_bins;
    rlx_vk_alloc consts;          /* ROPE tables, f32 copies of weights used as operands */
    VkDeviceSize consts_size;
    uint8_t *consts_host;         /* owned until uploaded at the end of compile */

    vk_dispatch_list init;        /* run once at compile (decoding weights used as f32 operands) */
    vk_dispatch_list run;         /* the program */
    uint32_t n_barriers;

    VkDescriptorPool pool;        /* owned */
    VkDescriptorSet common;       /* set 0, from pool */
    VkCommandPool cmd_pool;       /* owned: this program's command buffers */
    VkCommandBuffer cb;           /* one run: the input copy, the dispatches, the output copy */
    /* A chain (vk_program_run_chain): cb_in, then cb_step k times (the dispatches, then the step),
     * then cb_out; all VK_NULL_HANDLE where step is empty. */
    vk_dispatch_list step;        /* CHAIN_STEP where the program can decode ahead, else empty */
    VkCommandBuffer cb_in, cb_step, cb_out;
    VkDeviceSize ring_offset;     /* where the chain's outputs gather, in the input region ... */
    VkDeviceSize rb_ring_offset;  /* ... and in the readback */
    VkFence fence;                /* owned */
    double last_run_ms;           /* submit to completion, last run: how long the host sleeps next time */
    VkQueryPool timestamps;       /* owned when profiling: two per dispatch */
};

/* ---- vk_compile.c, for the lowering ---- */

/* Whether node n's values are a session pool (a KV_CACHE or a KV_WRITE of one): its rows are
 * addressed through the run's page tables (shaders/common.glsl rlx_kv_row). */
bool vk_reads_pool(const rlx_program *p, rlx_node n);
/* Whether node n is a pool of F16 elements: its kernels are the *_f16 variants (shaders/kv_type.glsl). */
bool vk_pool_f16(const rlx_program *p, rlx_node n);

/* The range holding node n's values (its storage root's). */
vk_range vk_node_range(const rlx_program *p, rlx_node n);
/* The range of node n read as f32 values: itself, or the f32 copy of a non-F32 WEIGHT. Errors when
 * an F32 weight is split into parts (too large for one binding), or n is an F16 pool (only the
 * kernels that take pools read those: vk_kv_range). */
rlx_status vk_f32_range(const rlx_program *p, rlx_node n, vk_range *out);
/* The range of an attention's K or V operand: a pool as it is (F32 or F16), else vk_f32_range. */
rlx_status vk_kv_range(const rlx_program *p, rlx_node n, vk_range *out);
/* Appends a dispatch; spec[0] (the workgroup size) must be set. */
rlx_status vk_emit(rlx_program *p, vk_dispatch_list *list, rlx_node node, rlx_vk_kernel k, const uint32_t *spec,
                   const vk_range *bind, uint32_t n_bind, uint32_t reads, uint32_t writes, const void *push,
                   uint32_t push_bytes, uint64_t groups);
/* Reserves bytes in the consts region (16-aligned); *offset receives where. */
rlx_status vk_const_reserve(rlx_program *p, VkDeviceSize bytes, VkDeviceSize *offset);
/* The range of [offset, offset + bytes) in the consts region (valid once compile has allocated it). */
vk_range vk_const_range(const rlx_program *p, VkDeviceSize offset, VkDeviceSize bytes);

/* ---- vk_fuse.c ---- */

/* Chooses fusions (sets fuse / fused_into); needs live and n_consumers. */
void vk_plan_fusion(rlx_program *p);

/* ---- vk_lower.c ---- */

/* Per-node preparation before planning: consts it needs (ROPE tables), arena scratch (MOE_FFN),
 * run-time checks; errors for what the backend cannot run (an unsupported weight type, names it). */
rlx_status vk_prepare_node(rlx_program *p, rlx_node i);
/* Appends node i's dispatches (none for leaves and views). */
rlx_status vk_lower_node(rlx_program *p, rlx_node i);
/* Whether the backend has a lowering for op; vk_check_ops refuses, naming it, a graph with an op
 * it has not (RLX_ERR_UNSUPPORTED). */
bool vk_op_supported(rlx_op op);
rlx_status vk_check_ops(const rlx_graph *g);
/* Whether kernels can decode weights of this type (rlx_dtype). */
bool vk_weight_type_supported(uint32_t type);

/* ---- vk_warm_next.c ---- */

/* After lowering: inserts, after each decode stage's last matvec dispatch, the dispatches that read
 * the next stage's first weights into L2 (RLX_VK_WARM_NEXT). */
rlx_status vk_warm_next_pass(rlx_program *p);

/* ---- vk_compile.c, for the backend ---- */

rlx_status vk_program_compile(rlx_session *s, const rlx_graph *g, rlx_program **out);
void vk_program_destroy(rlx_program *p);
rlx_status vk_program_run(rlx_program *p, const rlx_run_args *args);
rlx_status vk_program_run_chain(rlx_program *p, const rlx_run_args *first, int32_t k, int32_t *outs);

#endif
