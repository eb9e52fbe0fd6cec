/* The Vulkan backend's options and introspection, for tools and tests (the backend itself is reached
 * through ir/backend.h: rlx_backend_vulkan_create). `b` must come from rlx_backend_vulkan_create or
 * rlx_backend_vulkan_create_with.
 *
 * Environment: rlx_backend_vulkan_create reads these (runtime/vk_options.c, rlx_vk_options_from_env)
 * once, when the backend is created; each is a field of rlx_vk_options, which
 * rlx_backend_vulkan_create_with takes instead. A change afterwards does not reach that backend.
 *   RLX_VK_DEVICE=<index|name|gpu>[,...]  device choice, tried in order (vk_device.h)
 *   RLX_VK_VALIDATION=1                   Khronos validation + synchronization validation; every
 *                                         warning/error is printed and counted
 *   RLX_VK_PIPELINE_CACHE=0               no on-disk pipeline cache ($XDG_CACHE_HOME/rlx/)
 *   RLX_VK_FUSION=0                       compile without fusions (vk_lower.c)
 *   RLX_VK_DEBUG=1                        print each program's plan (dispatches, barriers, peak
 *                                         intermediate memory, compile time) and each run's time
 *   RLX_VK_PROFILE=1                      GPU timestamps around every dispatch, summed per kernel
 *   RLX_VK_PROFILE=2                      ... and every dispatch on its own line (op, shape, weight type)
 *   RLX_VK_SHADER_STATS=1                 the driver's statistics of every pipeline (vk_shader_stats.h)
 *   RLX_VK_MAX_BINDING_BYTES=<n>          a smaller binding limit (n >= 4096; none where n is not
 *                                         below the device's), to exercise weight splitting
 *   RLX_VK_COOPMAT=mixed|exact|0          the prefill matmul on cooperative matrices: f16 operands
 *                                         (default), f32-accurate split operands, or not at all;
 *                                         also emulate|emulate-mixed (vk_plan.c vk_coopmat_mode)
 *   RLX_VK_WARM=0|1                       decode attention's cache rows read into L2 by the V
 *                                         matvec: never, or wherever it can (default: a GPU's
 *                                         plain-type rows of 4,096+; vk_fuse.c)
 *   RLX_VK_WARM_NEXT=<KiB>                how much of the next stage's weights a decode stage's last
 *                                         matvec has read into L2 after it: 0 never, else wherever
 *                                         it can (default: 3,072 on a GPU for plain-type rows of
 *                                         4,096+; vk_warm_next.c)
 *   RLX_VK_MOE_GROUPED=0|1                MOE_FFN's grouped path for many rows (moe_mm.comp):
 *                                         never (moe_mv.comp, for A/B), or wherever it fits, any
 *                                         row count (default: vk_plan.c vk_moe_grouped_plan; never
 *                                         in deterministic mode)
 *   RLX_VK_FAULT=oom:N|lost:N|lost-wait:N an injected fault: the Nth device-memory allocation or
 *                                         submit fails (vk_fault.h; tests and robustness checks)
 *   RLX_VK_MATVEC_*, RLX_VK_ATTN_GW / _SPLIT_KEYS / _KB / _LPK, RLX_VK_COOPMAT_TM / _DEPTH, RLX_VK_MOE_TM
 *                                         tuning knobs, each a power of two in a range
 *                                         (vk_options.c; docs/ARCHITECTURE.md)
 *   RLX_VK_WAIT=poll|block                how a submit waits for its fence: sleep, then poll (the
 *                                         default on a GPU), or block (on a CPU device; vk_device.c)
 *   RLX_VK_DETERMINISTIC=0|1              batch-invariant plans: a row's bits do not depend on the
 *                                         row count, its index or the KV capacity (vk_plan.c; off
 *                                         by default: it gives up matvec.comp, the cooperative
 *                                         and prefill-attention kernels, key splits and the
 *                                         one-row fusions)
 *   RLX_VK_PLANS=device|gpu               the planners' choices for this device (default), or those
 *                                         for a GPU on any device, so that tests on lavapipe check
 *                                         them (tests/vulkan/tests.cmake)
 * An unset or empty variable means the default. A malformed value of RLX_VK_FAULT, _WAIT, _WARM,
 * _WARM_NEXT, _PLANS, _DETERMINISTIC, _MOE_GROUPED, _COOPMAT, _MAX_BINDING_BYTES or a tuning knob is refused when
 * the backend is created, with an error naming the variable. */
#ifndef RLX_RUNTIME_VK_BACKEND_H
#define RLX_RUNTIME_VK_BACKEND_H

#include "ir/backend.h"
#include "runtime/vk_device.h"
#include "runtime/vk_memory.h"
#include "runtime/vk_options.h"
#include "runtime/vk_pipeline.h"

/* A backend with options o (checked: a field outside its variable's range is refused, naming it). */
rlx_status rlx_backend_vulkan_create_with(const rlx_vk_options *o, rlx_backend **out);
/* Replaces what the next compiles on b read of its options: debug, profile, fusion and the tuning
 * (vk_options.h), so that a test can compare plans on one backend. The device's options (device,
 * validation, pipeline cache, wait, binding limit, shader statistics, fault) stay as created. */
rlx_status rlx_vk_backend_set_options(rlx_backend *b, const rlx_vk_options *o);

const rlx_vk_caps *rlx_vk_backend_caps(const rlx_backend *b);
rlx_vk_pipeline_stats rlx_vk_backend_pipeline_stats(const rlx_backend *b);
rlx_vk_heap_stats rlx_vk_backend_device_memory(const rlx_backend *b);
/* Whether its submits poll their fences (a GPU, or RLX_VK_WAIT=poll) rather than block. */
bool rlx_vk_backend_polls(const rlx_backend *b);

#endif
