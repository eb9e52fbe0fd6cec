/* Fault injection for the Vulkan runtime's error paths: a test hook that makes one device-memory
 * allocation fail with VK_ERROR_OUT_OF_DEVICE_MEMORY, or one submit report VK_ERROR_DEVICE_LOST, so
 * that tests can walk every failure point of a run (tests/vulkan/test_vk_faults.c). Unarmed, a hook costs
 * one atomic increment.
 *
 * Two kinds of event are counted, process-wide, from the last arm (or from the start):
 *   - memory events: every vkCreateBuffer and every vkAllocateMemory of the memory heaps
 *     (vk_memory.c: the blocks of every heap kind, and the probe that picks a memory type);
 *   - submits: every rlx_vk_submit_wait (vk_device.c): uploads, downloads, program runs.
 * An armed fault fires once, at the Nth event (1-based) of its kind:
 *   RLX_VK_FAULT_OOM        the call returns VK_ERROR_OUT_OF_DEVICE_MEMORY; nothing is created;
 *   RLX_VK_FAULT_LOST       the submit returns VK_ERROR_DEVICE_LOST; nothing is submitted;
 *   RLX_VK_FAULT_LOST_WAIT  the work is submitted and completes, then the fence wait returns
 *                           VK_ERROR_DEVICE_LOST.
 * Either loss marks the device lost, so every later submit on it fails too, as after a real loss;
 * a device opened afterwards is fresh.
 *
 * Environment: RLX_VK_FAULT=oom:N | lost:N | lost-wait:N (parsed into rlx_vk_options, vk_options.h)
 * arms a fault when the process creates its first Vulkan backend that has one (`rlx generate` under
 * RLX_VK_FAULT=oom:3 fails at the third allocation); a malformed value makes every backend creation
 * from the environment fail, naming it. rlx_vk_fault_arm overrides it. */
#ifndef RLX_RUNTIME_VK_FAULT_H
#define RLX_RUNTIME_VK_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include <volk.h>

#include "rlx/status.h"

typedef enum {
    RLX_VK_FAULT_NONE,
    RLX_VK_FAULT_OOM,
    RLX_VK_FAULT_LOST,
    RLX_VK_FAULT_LOST_WAIT,
} rlx_vk_fault_kind;

/* Arms `kind` at the nth event of its kind (n 0 or RLX_VK_FAULT_NONE: disarmed) and restarts both
 * counters at 0. Call while no other thread uses the Vulkan runtime. */
void rlx_vk_fault_arm(rlx_vk_fault_kind kind, uint64_t n);
/* Arms kind at the nth event the first time it is called with a fault in the process, and does
 * nothing after: a backend's options (RLX_VK_FAULT) arm once, so that later backends and
 * rlx_vk_fault_arm do not restart the count. */
void rlx_vk_fault_arm_first(rlx_vk_fault_kind kind, uint64_t n);

/* Events counted since the last arm, and whether the armed fault has fired. */
uint64_t rlx_vk_fault_memory_events(void);
uint64_t rlx_vk_fault_submit_events(void);
bool rlx_vk_fault_fired(void);

/* ---- hooks, for vk_memory.c and vk_device.c ---- */

/* Counts a memory event: VK_ERROR_OUT_OF_DEVICE_MEMORY when it is the armed one, else VK_SUCCESS. */
VkResult rlx_vk_fault_memory(void);
/* Counts a submit: RLX_VK_FAULT_LOST or RLX_VK_FAULT_LOST_WAIT when it is the armed one, else
 * RLX_VK_FAULT_NONE. */
rlx_vk_fault_kind rlx_vk_fault_submit(void);

#endif
