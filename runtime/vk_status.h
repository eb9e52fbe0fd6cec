/* Vulkan result codes turned into rlx_status values. Every VkResult the runtime receives goes
 * through rlx_vk_check, so device loss and device OOM surface as clear errors, never aborts. */
#ifndef RLX_RUNTIME_VK_STATUS_H
#define RLX_RUNTIME_VK_STATUS_H

#include <volk.h>

#include "rlx/status.h"

/* The symbolic name of r ("VK_ERROR_DEVICE_LOST"), or "an unknown VkResult". */
const char *rlx_vk_result_name(VkResult r);

/* NULL for VK_SUCCESS (and the other non-error codes); otherwise a status naming `what` and the
 * result: OUT_OF_{HOST,DEVICE}_MEMORY -> RLX_ERR_OUT_OF_MEMORY, unsupported features/extensions/
 * layers/formats -> RLX_ERR_UNSUPPORTED, everything else (device lost included) -> RLX_ERR_DEVICE. */
rlx_status rlx_vk_check(VkResult r, const char *what);

#define RLX_VK_TRY(call, what) RLX_TRY(rlx_vk_check((call), (what)))

#endif
