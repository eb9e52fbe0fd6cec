/* What a caller (the CLI, a test) may set on a Vulkan backend, and the tuning the planners read.
 *
 * rlx_vk_options holds one typed field per RLX_VK_* variable (runtime/vk_backend.h lists them and
 * what each does); rlx_vk_options_from_env is the one place in runtime/ that reads them, so a test
 * sets a field rather than the process environment and two backends in one process can differ.
 * The backend checks the options when it is created (rlx_vk_options_check) and builds from them
 * and the device's capability snapshot one rlx_vk_tuning, which every compile on it reads: the
 * knobs take effect when the backend is created, not at each compile. */
#ifndef RLX_RUNTIME_VK_OPTIONS_H
#define RLX_RUNTIME_VK_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "rlx/status.h"
#include "runtime/vk_device.h"
#include "runtime/vk_fault.h"

/* RLX_VK_COOPMAT: how prefill matmuls use the cooperative-matrix kernel (runtime/vk_plan.c). */
typedef enum {
    RLX_VK_COOPMAT_OFF,           /* "0": never (shaders/matmul_tiled.comp, f32) */
    RLX_VK_COOPMAT_MIXED,         /* "mixed", the default: f16 operands, f32 accumulation */
    RLX_VK_COOPMAT_EXACT,         /* "exact": operands split in f16 pairs, f32 accuracy */
    RLX_VK_COOPMAT_EMULATE,       /* "emulate": exact, its matrix operations done by plain code */
    RLX_VK_COOPMAT_EMULATE_MIXED, /* "emulate-mixed": mixed, likewise */
    RLX_VK_COOPMAT_DEFAULT,       /* unset: MIXED */
} rlx_vk_coopmat;

/* Each field's unset value leaves the choice to the device or the planner, as the variable's
 * absence does. */
typedef struct rlx_vk_options {
    const char *device;       /* RLX_VK_DEVICE: index, name or gpu list (vk_device.h); NULL: the first GPU */
    bool device_from_env;     /* device came from RLX_VK_DEVICE (errors name it as the source) */
    bool validation;          /* RLX_VK_VALIDATION: the Khronos layer, where the registry is made */
    bool pipeline_cache;      /* RLX_VK_PIPELINE_CACHE (true by default): the on-disk pipeline cache */
    bool fusion;              /* RLX_VK_FUSION (true by default): compile with fusions */
    bool debug;               /* RLX_VK_DEBUG: print each program's plan and each run's time */
    int32_t profile;          /* RLX_VK_PROFILE: 0 off, 1 per kernel, 2 also every dispatch */
    rlx_vk_fault_kind fault;  /* RLX_VK_FAULT: a fault armed at the first backend that has one */
    uint64_t fault_at;        /* ... at this event (>= 1) */
    bool shader_stats;        /* RLX_VK_SHADER_STATS (vk_shader_stats.h) */
    int32_t wait;             /* RLX_VK_WAIT: -1 the device's default, 0 poll, 1 block */
    uint64_t max_binding_bytes; /* RLX_VK_MAX_BINDING_BYTES (>= 4096); 0: the device's limit */
    rlx_vk_coopmat coopmat;   /* RLX_VK_COOPMAT */
    /* Planner overrides, each a power of two in its variable's range; 0: the plan's default */
    uint32_t coopmat_tm, coopmat_tn, coopmat_depth, coopmat_bk, coopmat_split, coopmat_groups, tiled_min_rows;
    uint32_t matvec_trips, matvec_wg, matvec_r, matvec_min_groups, matvec_nx, matvec_unr;
    uint32_t attn_gw, attn_split_keys, attn_batch_splits, attn_kb, attn_lpk, attn_wg;
    uint32_t moe_tm;          /* RLX_VK_MOE_TM: pairs per tile of the grouped MoE path */
    int32_t moe_grouped;      /* RLX_VK_MOE_GROUPED: -1 the plan's default, 0 never (moe_mv.comp),
                                 1 wherever it fits (vk_plan.c vk_moe_grouped_plan) */
    int32_t matmul_batch;     /* RLX_VK_MATMUL_BATCH: -1 the plan's default, 0 never (matmul_coop.comp),
                                 1 wherever it runs (vk_plan.c vk_batch_takes) */
    int32_t warm;             /* RLX_VK_WARM: -1 the plan's default, 0 never, 1 wherever it can */
    int32_t warm_next_kib;    /* RLX_VK_WARM_NEXT: -1 the plan's default, 0 never, else KiB */
    bool gpu_plans;           /* RLX_VK_PLANS=gpu: a GPU's plans on any device */
    bool deterministic;       /* RLX_VK_DETERMINISTIC=1: one kernel and plan per op for every row count
                                 and KV capacity, so a row's bits do not depend on its batch (vk_plan.c) */
} rlx_vk_options;

/* Every field unset. */
rlx_vk_options rlx_vk_options_default(void);
/* The defaults, overridden by each RLX_VK_* variable set and not empty. A malformed value is
 * refused (RLX_ERR_INVALID_ARGUMENT), naming the variable, its value and what it takes; *o is
 * then filled up to that variable. The strings point into the environment. */
rlx_status rlx_vk_options_from_env(rlx_vk_options *o);
/* Refuses a field outside what its variable takes, naming both. */
rlx_status rlx_vk_options_check(const rlx_vk_options *o);

/* Process-level reads for what exists before any backend (the device registry, `rlx devices`):
 * $RLX_VK_DEVICE (NULL when unset or empty) and whether RLX_VK_VALIDATION asks for the layer. */
const char *rlx_vk_env_device(void);
bool rlx_vk_env_validation(void);

/* Whether shaders/matmul_batch.comp runs by default (RLX_VK_MATMUL_BATCH unset): not until it is
 * measured faster on a GPU than matmul_coop.comp. */
#define RLX_VK_MATMUL_BATCH_DEFAULT 0

/* The planners' inputs from the options and the device, made once per backend. Planner overrides
 * keep the options' encoding (0 / -1: the plan's default); a plan's own, narrower bound on one
 * falls back to the plan's default there (rlx_vk_tuned_pow2). */
typedef struct rlx_vk_tuning {
    bool gpu_plans;           /* a GPU's plans: on a GPU, or RLX_VK_PLANS=gpu */
    rlx_vk_coopmat coopmat;   /* resolved: MIXED when unset, OFF on a device without the kernel
                                 (the emulated modes run anywhere) */
    uint32_t coopmat_tm, coopmat_tn, coopmat_depth, coopmat_bk, coopmat_split, coopmat_groups, tiled_min_rows;
    uint32_t matvec_trips, matvec_wg, matvec_r, matvec_min_groups, matvec_nx, matvec_unr;
    uint32_t attn_gw, attn_split_keys, attn_batch_splits, attn_kb, attn_lpk, attn_wg;
    uint32_t moe_tm;
    int32_t moe_grouped, matmul_batch;
    int32_t warm, warm_next_kib;
    bool deterministic;       /* batch-invariant plans (vk_plan.c); the cooperative kernel is off */
} rlx_vk_tuning;

rlx_vk_tuning rlx_vk_tuning_make(const rlx_vk_caps *caps, const rlx_vk_options *o);

/* An override x if it is a power of two in [lo, hi], else fallback (0, unset, is never in range). */
static inline uint32_t rlx_vk_tuned_pow2(uint32_t x, uint32_t lo, uint32_t hi, uint32_t fallback) {
    return x >= lo && x <= hi && (x & (x - 1)) == 0 ? x : fallback;
}

#endif
