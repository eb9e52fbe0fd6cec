/* Fault injection: process-wide counters and the armed fault (see vk_fault.h). This is test
 * machinery, and the one mutable global besides the device registry: every event takes a unique
 * number from an atomic counter, so the armed fault fires exactly once even when several threads
 * allocate at the same time. */
#include "runtime/vk_fault.h"

#include <stdatomic.h>

static atomic_int armed_kind;          /* rlx_vk_fault_kind */
static atomic_uint_fast64_t armed_at;  /* 1-based event number; 0: disarmed */
static atomic_bool fired;
static atomic_uint_fast64_t memory_events, submit_events;

/* Whether a backend has armed its options' fault (rlx_vk_fault_arm_first). */
static atomic_bool first_armed;

void rlx_vk_fault_arm(rlx_vk_fault_kind kind, uint64_t n) {
    atomic_store(&armed_at, 0);
    atomic_store(&memory_events, 0);
    atomic_store(&submit_events, 0);
    atomic_store(&fired, false);
    atomic_store(&armed_kind, (int)(n ? kind : RLX_VK_FAULT_NONE));
    atomic_store(&armed_at, kind == RLX_VK_FAULT_NONE ? 0 : n);
}

void rlx_vk_fault_arm_first(rlx_vk_fault_kind kind, uint64_t n) {
    if (kind != RLX_VK_FAULT_NONE && !atomic_exchange(&first_armed, true)) rlx_vk_fault_arm(kind, n);
}

uint64_t rlx_vk_fault_memory_events(void) { return atomic_load(&memory_events); }
uint64_t rlx_vk_fault_submit_events(void) { return atomic_load(&submit_events); }
bool rlx_vk_fault_fired(void) { return atomic_load(&fired); }

/* Whether event number `k` of a kind-`kind` counter is the armed one. */
static bool hits(uint64_t k, bool submit) {
    uint64_t at = atomic_load(&armed_at);
    if (at == 0 || k != at) return false;
    int kind = atomic_load(&armed_kind);
    bool is_submit = kind == RLX_VK_FAULT_LOST || kind == RLX_VK_FAULT_LOST_WAIT;
    if (kind == RLX_VK_FAULT_NONE || is_submit != submit) return false;
    atomic_store(&fired, true);
    return true;
}

VkResult rlx_vk_fault_memory(void) {
    uint64_t k = atomic_fetch_add(&memory_events, 1) + 1;
    return hits(k, false) ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

rlx_vk_fault_kind rlx_vk_fault_submit(void) {
    uint64_t k = atomic_fetch_add(&submit_events, 1) + 1;
    return hits(k, true) ? (rlx_vk_fault_kind)atomic_load(&armed_kind) : RLX_VK_FAULT_NONE;
}
