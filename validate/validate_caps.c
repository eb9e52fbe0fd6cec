/* The capability section: the device's snapshot (runtime/vk_device.h) against what the kernels
 * need, and the variants the planners will choose on it (runtime/vk_options.c rlx_vk_tuning_make).
 * The required rows are the checks rlx_backend_vulkan_create makes; the others say what a device
 * without them gets instead. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/vk_backend.h"
#include "runtime/vk_pipeline.h"
#include "validate/validate_internal.h"

static void cap(rlx_validate_report *r, const char *name, bool required, bool ok, const char *need, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));

static void cap(rlx_validate_report *r, const char *name, bool required, bool ok, const char *need, const char *fmt,
                ...) {
    if (r->n_caps >= sizeof r->caps / sizeof r->caps[0]) return;
    rlx_validate_cap *c = &r->caps[r->n_caps++];
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->need, sizeof c->need, "%s", need);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->have, sizeof c->have, fmt, ap);
    va_end(ap);
    c->required = required;
    c->ok = ok;
    if (required && !ok) r->runnable = false;
}

static void variant(rlx_validate_report *r, const char *name, const char *chosen) {
    if (r->n_variants >= sizeof r->variants / sizeof r->variants[0]) return;
    rlx_validate_variant *v = &r->variants[r->n_variants++];
    snprintf(v->name, sizeof v->name, "%s", name);
    snprintf(v->chosen, sizeof v->chosen, "%s", chosen);
}

static const char *yes(bool b) { return b ? "yes" : "no"; }

/* The device's identity and capability rows from its snapshot c. */
static void caps_rows(rlx_validate_report *r, const rlx_vk_caps *c) {
    snprintf(r->device, sizeof r->device, "%s", c->name);
    snprintf(r->driver, sizeof r->driver, "%s", c->driver_name);
    snprintf(r->driver_info, sizeof r->driver_info, "%s", c->driver_info);
    r->device_index = c->index;
    r->api_version = c->api_version;
    r->driver_version = c->driver_version;
    r->vendor_id = c->vendor_id;
    r->device_id = c->device_id;
    r->is_cpu = c->is_cpu;
    r->runnable = true;
    cap(r, "Vulkan 1.2, compute queue", true, c->usable, "every kernel (the backend's minimum)", "Vulkan %u.%u.%u",
        VK_API_VERSION_MAJOR(c->api_version), VK_API_VERSION_MINOR(c->api_version), VK_API_VERSION_PATCH(c->api_version));
    cap(r, "subgroup arithmetic, shuffles", true, c->subgroup_arithmetic && c->subgroup_shuffle,
        "every reduction (shaders/reduce.glsl), decode attention's sums over a key's lanes (attention.glsl)",
        "arithmetic %s, shuffles %s", yes(c->subgroup_arithmetic), yes(c->subgroup_shuffle));
    uint32_t nb = rlx_vk_kernels_max_buffers();
    char need[160];
    snprintf(need, sizeof need, "%u storage buffers per compute shader (the widest kernel of shaders/kernels.def)", nb);
    cap(r, "storage buffers per stage", true, c->max_stage_buffers >= nb, need, "%u", c->max_stage_buffers);
    cap(r, "16-bit storage", false, c->storage16, "F16 K/V pools (the default); without: F32 K/V", "%s",
        yes(c->storage16));
    cap(r, "shaderFloat16", false, c->fp16, "f16 arithmetic of the cooperative kernel", "%s", yes(c->fp16));
    cap(r, "subgroup size", false, true, "any size (kernels adapt); the fixed decode-attention plan wants 8 or 32",
        "%u (min %u, max %u, control %s)", c->subgroup_size, c->subgroup_min, c->subgroup_max,
        yes(c->subgroup_size_control));
    cap(r, "cooperative matrices", false, c->coopmat_f16,
        "prefill matmuls on shaders/matmul_coop.comp (VK_NV_cooperative_matrix, 16x16x16 f16, subgroups of 32); "
        "without: matmul_tiled.comp",
        "NV %s, KHR %s, usable %s", yes(c->coopmat_nv), yes(c->coopmat_khr), yes(c->coopmat_f16));
    cap(r, "max storage buffer range", false, c->max_storage_range >= (1u << 27),
        "a binding holds one weight part; weights larger are split in row parts", "%llu bytes",
        (unsigned long long)c->max_storage_range);
    cap(r, "max allocation", false, c->max_alloc >= (1u << 28), "a weight or a K/V pool in one allocation",
        "%llu bytes", (unsigned long long)c->max_alloc);
    cap(r, "shared memory", false, c->max_shared >= 16384, "tiled matmul and prefill attention tiles (16 KiB+)",
        "%u bytes", c->max_shared);
    cap(r, "workgroup invocations", false, c->max_wg_invocations >= 256, "workgroups of 256 (row reductions)", "%u",
        c->max_wg_invocations);
    cap(r, "timestamps", false, c->timestamp_period > 0, "RLX_VK_PROFILE, rlx bench's kernel times",
        "%s", c->timestamp_period > 0 ? "yes" : "no");
}

/* The variants the planners choose on device c with options o. */
static void variant_rows(rlx_validate_report *r, const rlx_vk_caps *c, const rlx_vk_options *o) {
    rlx_vk_options om = *o, oe = *o;
    om.coopmat = RLX_VK_COOPMAT_MIXED;
    oe.coopmat = RLX_VK_COOPMAT_EXACT;
    rlx_vk_tuning tm = rlx_vk_tuning_make(c, &om), te = rlx_vk_tuning_make(c, &oe);
    variant(r, "plans", tm.gpu_plans ? "a GPU's (matvec rows and threads per group, L2 warming, few-row prefill on matvec)"
                                     : "a CPU device's");
    variant(r, "prefill matmul, mixed mode",
            tm.coopmat == RLX_VK_COOPMAT_MIXED ? "matmul_coop.comp, f16 operands, f32 sums"
                                               : "matmul_tiled.comp, f32 (no cooperative matrices)");
    variant(r, "prefill matmul, exact mode",
            te.coopmat == RLX_VK_COOPMAT_EXACT ? "matmul_coop.comp, split f16 operands (f32 accuracy)"
                                               : "matmul_tiled.comp, f32");
    variant(r, "decode matmul", "matvec.comp (matvec_stream.comp for gated FFNs of plain-type rows of 4,096+)");
    variant(r, "K/V pools", c->storage16 ? "F16 (the default; --kv-type f32 for F32)" : "F32 (no 16-bit storage)");
    variant(r, "decode attention", "attention_step.comp with the q/k norm, RoPE and cache writes inside; "
                                    "attention_step_fixed.comp where its plan is the usual one (vk_plan.c)");
    variant(r, "fence wait", c->is_cpu ? "block (a CPU device)" : "poll, sleeping first for long work");
}

void vl_caps_section(rlx_validate_report *r, rlx_backend *vk, const rlx_validate_opts *o) {
    if (vk) {
        const rlx_vk_caps *c = rlx_vk_backend_caps(vk);
        caps_rows(r, c);
        variant_rows(r, c, &o->vk);
        return;
    }
    /* no backend: the device as the registry sees it, to say why */
    rlx_status s = rlx_vk_registry_acquire();
    if (s) {
        rlx_status_free(s);
        return;
    }
    uint32_t idx = 0;
    s = rlx_vk_device_choose(o->vk.device, &idx);
    if (!s) {
        caps_rows(r, rlx_vk_device_caps(idx));
        variant_rows(r, rlx_vk_device_caps(idx), &o->vk);
    }
    rlx_status_free(s);
    rlx_vk_registry_release();
}
