/* The Vulkan backend's tuning knobs (docs/ARCHITECTURE.md, "Tuning knobs"): environment variables
 * that override the plans runtime/vk_lower.c and vk_fuse.c make from H100 measurements, read when a
 * program is compiled; and RLX_VK_WAIT=poll|block (how a submit waits) and RLX_VK_MAX_BINDING_BYTES
 * (a smaller binding limit, at least 4096), both read when a device is opened (vk_device.c). Each
 * plan knob takes a power of two in a range (RLX_VK_WARM: 0 or 1; RLX_VK_WARM_NEXT: KiB, 0 to
 * 1048576; RLX_VK_PLANS: device or gpu); an unset or empty variable means the default. A set value
 * that is anything else would otherwise measure the default without a word, so rlx_vk_knobs_check
 * refuses it, naming the variable and what it takes: the backend checks when it is created and
 * again before each compile. */
#ifndef RLX_RUNTIME_VK_KNOBS_H
#define RLX_RUNTIME_VK_KNOBS_H

#include "rlx/status.h"

rlx_status rlx_vk_knobs_check(void);
/* Which of its two words a two-word knob (RLX_VK_WAIT: poll, block; RLX_VK_WARM: 0, 1;
 * RLX_VK_PLANS: device, gpu) is set to: 0 or 1, or -1 when unset, empty or not one of them (which
 * rlx_vk_knobs_check refuses). */
int rlx_vk_knob_word(const char *name);

#endif
