/* The recurrent state of a Vulkan session (ir/backend.h rlx_state_spec, ir/ops.def "recurrent
 * state"): per recurrent layer one device-local buffer of n_state_slots x state_floats F32, slot k
 * at float k * state_floats, zeroed at creation; and copy_state, the engine's slot copies, kept on
 * the device (vkCmdCopyBuffer, vkCmdFillBuffer for src -1) in one submission. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vk_internal.h"

bool vk_layer_recurrent(const rlx_session *s, int32_t layer) {
    return s->layer_kind && layer >= 0 && layer < s->kv.n_layer && s->layer_kind[layer] == RLX_STATE_RECURRENT;
}

int32_t vk_state_layers(const rlx_state_spec *kv) {
    int32_t n = 0;
    for (int32_t l = 0; kv->layer_kind && l < kv->n_layer; l++) n += kv->layer_kind[l] == RLX_STATE_RECURRENT;
    return n;
}

rlx_status vk_state_layer_bytes(const rlx_vk_backend *b, const rlx_state_spec *kv, uint64_t *out) {
    *out = 0;
    if (vk_state_layers(kv) == 0) return NULL;
    if (__builtin_mul_overflow((uint64_t)kv->n_state_slots, (uint64_t)kv->state_floats * 4u, out) ||
        *out > b->dev->max_binding)
        return rlx_errorf(RLX_ERR_UNSUPPORTED,
                          "vulkan session: a recurrent layer's state of %d slots x %lld floats x 4 bytes exceeds one "
                          "binding (%" PRIu64 " bytes on %s): use fewer state slots",
                          kv->n_state_slots, (long long)kv->state_floats, b->dev->max_binding, b->dev->caps->name);
    return NULL;
}

rlx_status vk_state_alloc(rlx_session *s, rlx_vk_uploader *u, const rlx_state_spec *kv) {
    if (!kv->layer_kind || kv->n_layer == 0) return NULL;
    s->layer_kind = malloc((size_t)kv->n_layer);
    s->state = calloc((size_t)kv->n_layer, sizeof *s->state);
    if (!s->layer_kind || !s->state) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "session: state table");
    memcpy(s->layer_kind, kv->layer_kind, (size_t)kv->n_layer);
    uint64_t bytes;
    RLX_TRY(vk_state_layer_bytes(s->b, kv, &bytes));
    for (int32_t l = 0; l < kv->n_layer; l++) {
        if (kv->layer_kind[l] != RLX_STATE_RECURRENT) continue;
        RLX_TRY(rlx_vk_heap_alloc(s->b->dev_heap, bytes, "recurrent state", &s->state[l]));
        RLX_TRY(rlx_vk_uploader_fill(u, &s->state[l], 0, (size_t)bytes, 0));
    }
    return NULL;
}

void vk_state_free(rlx_session *s) {
    for (int32_t l = 0; s->state && l < s->kv.n_layer; l++) rlx_vk_heap_free(s->b->dev_heap, &s->state[l]);
    free(s->state);
    free(s->layer_kind);
    s->state = NULL;
    s->layer_kind = NULL;
}

/* ---- copy_state ---- */

typedef struct state_copies {
    const rlx_session *s;
    const int32_t *src, *dst;
    int32_t n;
} state_copies;

static void record_state_copies(void *ctx, VkCommandBuffer cb) {
    const state_copies *sc = ctx;
    const rlx_session *s = sc->s;
    rlx_vk_device *d = s->b->dev;
    VkDeviceSize slot = (VkDeviceSize)s->kv.state_floats * 4u;
    VkAccessFlags rw = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, rw);
    for (int32_t i = 0, from = 0; i < sc->n; i++) {
        if (sc->src[i] == sc->dst[i]) continue;
        if (rlx_vk_copy_hazard(sc->src, sc->dst, from, i)) {
            rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT, rw);
            from = i;
        }
        for (int32_t l = 0; l < s->kv.n_layer; l++) {
            if (!vk_layer_recurrent(s, l)) continue;
            const rlx_vk_alloc *a = &s->state[l];
            VkDeviceSize to = a->offset + (VkDeviceSize)sc->dst[i] * slot;
            if (sc->src[i] < 0) {
                d->vk.vkCmdFillBuffer(cb, a->buffer, to, slot, 0);
                continue;
            }
            VkBufferCopy c = {a->offset + (VkDeviceSize)sc->src[i] * slot, to, slot};
            d->vk.vkCmdCopyBuffer(cb, a->buffer, a->buffer, 1, &c);
        }
    }
    rlx_vk_cmd_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

rlx_status vk_copy_state(rlx_session *s, const int32_t *src, const int32_t *dst, int32_t n) {
    if (!s || n < 0 || (n > 0 && (!src || !dst)))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "copy_state: session %p, src %p, dst %p, n %d", (void *)s,
                          (const void *)src, (const void *)dst, n);
    int32_t slots = s->kv.n_state_slots;
    for (int32_t i = 0; i < n; i++)
        if (src[i] < -1 || src[i] >= slots || dst[i] < 0 || dst[i] >= slots)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "copy_state: copy %d is slot %d -> slot %d, outside the session's %d state slots", i,
                              src[i], dst[i], slots);
    bool any = false;
    for (int32_t l = 0; l < s->kv.n_layer; l++) any |= vk_layer_recurrent(s, l);
    if (n == 0 || !any) return NULL;
    state_copies sc = {.s = s, .src = src, .dst = dst, .n = n};
    return rlx_vk_run_once(s->b->dev, record_state_copies, &sc, "state copy", "copying recurrent state slots");
}
