/* The Vulkan registry (instance, physical devices, capability snapshots, validation messenger),
 * device choice, and logical device creation. */
#include "runtime/vk_device.h"
#include "runtime/vk_shader_stats.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "runtime/vk_fault.h"
#include "runtime/vk_options.h"
#include "runtime/vk_status.h"

/* A hung or lost GPU must come back as an error, not block forever. */
#define RLX_VK_FENCE_TIMEOUT_NS (120ull * 1000 * 1000 * 1000)
/* How long a submit polls its fence before it sleeps in vkWaitForFences. */
#define RLX_VK_SPIN_MS 5.0
/* Bindings are addressed with 32-bit byte offsets in the shaders (shaders/dequant.glsl). */
#define RLX_VK_BINDING_CAP (1ull << 31)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static struct {
    pthread_mutex_t lock;
    int refs;
    bool volk_ready;
    VkInstance instance;                  /* owned while refs > 0 */
    VkDebugUtilsMessengerEXT messenger;   /* owned; VK_NULL_HANDLE without validation */
    bool validation;
    uint32_t n_devices;
    VkPhysicalDevice *phys;               /* owned array, n_devices */
    rlx_vk_caps *caps;                    /* owned array, n_devices */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Kept outside the registry so that messages emitted while it is torn down (leak reports from
 * vkDestroyDevice / vkDestroyInstance) are still counted after the last release. */
static atomic_uint_fast64_t n_messages;

uint64_t rlx_vk_validation_message_count(void) { return atomic_load(&n_messages); }
void rlx_vk_validation_message_reset(void) { atomic_store(&n_messages, 0); }
bool rlx_vk_validation_enabled(void) { return reg.validation; }

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)types;
    (void)user;
    atomic_fetch_add(&n_messages, 1);
    fprintf(stderr, "rlx vulkan %s: %s\n",
            severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "validation error" : "validation warning",
            data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

static bool has_layer(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

static bool has_instance_extension(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceExtensionProperties(NULL, &n, p) >= 0)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

static const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
    .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
    .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
    .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
    .pfnUserCallback = on_message,
};

static rlx_status create_instance(bool want_validation) {
    const char *layers[1], *exts[2];
    uint32_t n_layers = 0, n_exts = 0;
    reg.validation = false;
    if (want_validation && has_layer("VK_LAYER_KHRONOS_validation") &&
        has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
        layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
        exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        reg.validation = true;
    }
    VkInstanceCreateFlags flags = 0;
    if (has_instance_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[n_exts++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    uint32_t loader_version = volkGetInstanceVersion();
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "rlx",
        .pEngineName = "rlx",
        .apiVersion = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2,
    };
    /* Synchronization validation catches missing barriers between dispatches, the bug class a
     * dispatch-chain compiler is most prone to. */
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .pNext = &messenger_info,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = reg.validation ? &features : NULL,
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = n_layers,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    if (loader_version < VK_API_VERSION_1_2)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "Vulkan loader supports version %u.%u, rlx needs 1.2 or newer",
                          VK_API_VERSION_MAJOR(loader_version), VK_API_VERSION_MINOR(loader_version));
    RLX_VK_TRY(vkCreateInstance(&info, NULL, &reg.instance), "creating the Vulkan instance");
    volkLoadInstanceOnly(reg.instance);
    if (reg.validation)
        RLX_VK_TRY(vkCreateDebugUtilsMessengerEXT(reg.instance, &messenger_info, NULL, &reg.messenger),
                   "creating the validation messenger");
    return NULL;
}

/* ---- capability snapshot ---- */

static bool has_device_extension(const VkExtensionProperties *ext, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(ext[i].extensionName, name) == 0) return true;
    return false;
}

static void snapshot_coopmat(VkPhysicalDevice phys, rlx_vk_caps *c) {
    if (!c->coopmat_nv || !vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) return;
    uint32_t n = 0;
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(phys, &n, NULL) != VK_SUCCESS || n == 0) return;
    VkCooperativeMatrixPropertiesNV *p = calloc(n, sizeof *p);
    if (!p) return;
    for (uint32_t i = 0; i < n; i++) p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(phys, &n, p) >= 0) {
        for (uint32_t i = 0; i < n && c->n_coopmat < RLX_VK_MAX_COOPMAT; i++) {
            if (p[i].scope != VK_SCOPE_SUBGROUP_NV) continue;
            c->coopmat[c->n_coopmat++] = (rlx_vk_coopmat_shape){p[i].MSize, p[i].NSize, p[i].KSize, p[i].AType,
                                                                p[i].CType};
        }
    }
    free(p);
}

/* shaders/matmul_coop.comp: a 16x16x16 f16 x f16 -> f32 subgroup shape on subgroups of 32. */
static bool coopmat_kernel_fits(const rlx_vk_caps *c) {
    if (c->subgroup_size != 32) return false;
    for (uint32_t i = 0; i < c->n_coopmat; i++) {
        const rlx_vk_coopmat_shape *m = &c->coopmat[i];
        if (m->m == 16 && m->n == 16 && m->k == 16 && m->a_type == VK_COMPONENT_TYPE_FLOAT16_NV &&
            m->c_type == VK_COMPONENT_TYPE_FLOAT32_NV)
            return true;
    }
    return false;
}

static void snapshot_queue(VkPhysicalDevice phys, rlx_vk_caps *c) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    if (!q) return;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, q);
    for (uint32_t i = 0; i < n; i++) {
        if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && q[i].queueCount > 0) {
            c->queue_family = i;
            c->usable = c->api_version >= VK_API_VERSION_1_2;
            break;
        }
    }
    free(q);
}

static void snapshot_features(VkPhysicalDevice phys, rlx_vk_caps *c, bool size_control_ext) {
    VkPhysicalDeviceSubgroupSizeControlFeatures sc = {.sType =
                                                          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    if (c->api_version >= VK_API_VERSION_1_3 || size_control_ext) f12.pNext = &sc;
    if (c->coopmat_nv) {
        coop.pNext = f.pNext;
        f.pNext = &coop;
    }
    vkGetPhysicalDeviceFeatures2(phys, &f);
    /* the rest of shaders/matmul_coop.comp's needs is checked once the shapes are known */
    c->coopmat_f16 = coop.cooperativeMatrix && f12.vulkanMemoryModel && f12.shaderFloat16;
    c->fp64 = f.features.shaderFloat64;
    c->int64 = f.features.shaderInt64;
    c->int16 = f.features.shaderInt16;
    c->storage16 = f11.storageBuffer16BitAccess;
    c->fp16 = f12.shaderFloat16;
    c->int8 = f12.shaderInt8;
    c->storage8 = f12.storageBuffer8BitAccess;
    c->subgroup_size_control = sc.subgroupSizeControl && sc.computeFullSubgroups;
}

static void snapshot_properties(VkPhysicalDevice phys, rlx_vk_caps *c, bool size_control_ext) {
    VkPhysicalDeviceSubgroupSizeControlProperties scp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, .pNext = &drv};
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                             .pNext = &id};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    if (c->api_version >= VK_API_VERSION_1_3 || size_control_ext) drv.pNext = &scp;
    vkGetPhysicalDeviceProperties2(phys, &p);
    const VkPhysicalDeviceLimits *l = &p.properties.limits;
    snprintf(c->name, sizeof c->name, "%s", p.properties.deviceName);
    snprintf(c->driver_name, sizeof c->driver_name, "%s", drv.driverName);
    snprintf(c->driver_info, sizeof c->driver_info, "%s", drv.driverInfo);
    c->type = p.properties.deviceType;
    c->is_cpu = c->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    c->driver_version = p.properties.driverVersion;
    c->vendor_id = p.properties.vendorID;
    c->device_id = p.properties.deviceID;
    memcpy(c->device_uuid, id.deviceUUID, VK_UUID_SIZE);
    memcpy(c->pipeline_cache_uuid, p.properties.pipelineCacheUUID, VK_UUID_SIZE);
    c->subgroup_size = sg.subgroupSize;
    c->subgroup_min = scp.minSubgroupSize ? scp.minSubgroupSize : sg.subgroupSize;
    c->subgroup_max = scp.maxSubgroupSize ? scp.maxSubgroupSize : sg.subgroupSize;
    c->subgroup_arithmetic = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c->subgroup_shuffle = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    c->max_storage_range = l->maxStorageBufferRange;
    c->storage_align = l->minStorageBufferOffsetAlignment;
    c->atom_size = l->nonCoherentAtomSize;
    for (int i = 0; i < 3; i++) {
        c->max_wg_count[i] = l->maxComputeWorkGroupCount[i];
        c->max_wg_size[i] = l->maxComputeWorkGroupSize[i];
    }
    c->max_wg_invocations = l->maxComputeWorkGroupInvocations;
    c->max_stage_buffers = l->maxPerStageDescriptorStorageBuffers < l->maxDescriptorSetStorageBuffers
                               ? l->maxPerStageDescriptorStorageBuffers
                               : l->maxDescriptorSetStorageBuffers;
    c->max_shared = l->maxComputeSharedMemorySize;
    c->max_push = l->maxPushConstantsSize;
    c->timestamp_period = l->timestampComputeAndGraphics ? l->timestampPeriod : 0.0f;
}

static void snapshot_max_alloc(VkPhysicalDevice phys, rlx_vk_caps *c) {
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(phys, &p);
    c->max_alloc = m3.maxMemoryAllocationSize;
}

static void snapshot_heaps(VkPhysicalDevice phys, rlx_vk_caps *c) {
    VkPhysicalDeviceMemoryProperties m;
    vkGetPhysicalDeviceMemoryProperties(phys, &m);
    c->n_heaps = m.memoryHeapCount < RLX_VK_MAX_HEAPS ? m.memoryHeapCount : RLX_VK_MAX_HEAPS;
    for (uint32_t i = 0; i < c->n_heaps; i++) {
        c->heap_size[i] = m.memoryHeaps[i].size;
        c->heap_device_local[i] = m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    }
}

static void snapshot(VkPhysicalDevice phys, uint32_t index, rlx_vk_caps *c) {
    memset(c, 0, sizeof *c);
    c->index = index;
    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(phys, &base);
    c->api_version = base.apiVersion;
    uint32_t n_ext = 0;
    VkExtensionProperties *ext = NULL;
    if (vkEnumerateDeviceExtensionProperties(phys, NULL, &n_ext, NULL) == VK_SUCCESS && n_ext > 0) {
        ext = calloc(n_ext, sizeof *ext);
        if (!ext || vkEnumerateDeviceExtensionProperties(phys, NULL, &n_ext, ext) < 0) n_ext = 0;
    }
    bool size_control_ext = has_device_extension(ext, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    c->bf16 = has_device_extension(ext, n_ext, "VK_KHR_shader_bfloat16");
    c->coopmat_khr = has_device_extension(ext, n_ext, "VK_KHR_cooperative_matrix");
    c->coopmat_nv = has_device_extension(ext, n_ext, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    c->memory_budget = has_device_extension(ext, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    c->executable_props = has_device_extension(ext, n_ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    free(ext);
    if (c->api_version >= VK_API_VERSION_1_2) {
        snapshot_properties(phys, c, size_control_ext);
        snapshot_features(phys, c, size_control_ext);
        snapshot_max_alloc(phys, c);
        snapshot_coopmat(phys, c);
        c->coopmat_f16 = c->coopmat_f16 && coopmat_kernel_fits(c);
    } else {
        snprintf(c->name, sizeof c->name, "%s", base.deviceName);
        c->type = base.deviceType;
        c->is_cpu = c->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    }
    snapshot_heaps(phys, c);
    snapshot_queue(phys, c);
}

static rlx_status enumerate(void) {
    uint32_t n = 0;
    RLX_VK_TRY(vkEnumeratePhysicalDevices(reg.instance, &n, NULL), "listing Vulkan devices");
    reg.phys = calloc(n ? n : 1, sizeof *reg.phys);
    reg.caps = calloc(n ? n : 1, sizeof *reg.caps);
    if (!reg.phys || !reg.caps) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "listing %u Vulkan devices", n);
    RLX_VK_TRY(vkEnumeratePhysicalDevices(reg.instance, &n, reg.phys), "listing Vulkan devices");
    reg.n_devices = n;
    for (uint32_t i = 0; i < n; i++) snapshot(reg.phys[i], i, &reg.caps[i]);
    return NULL;
}

static void teardown(void) {
    free(reg.phys);
    free(reg.caps);
    reg.phys = NULL;
    reg.caps = NULL;
    reg.n_devices = 0;
    if (reg.messenger) vkDestroyDebugUtilsMessengerEXT(reg.instance, reg.messenger, NULL);
    reg.messenger = VK_NULL_HANDLE;
    if (reg.instance) vkDestroyInstance(reg.instance, NULL);
    reg.instance = VK_NULL_HANDLE;
    reg.validation = false;
}

/* want_validation counts only where this makes the registry. */
static rlx_status registry_acquire(bool want_validation) {
    pthread_mutex_lock(&reg.lock);
    rlx_status s = NULL;
    if (reg.refs == 0) {
        if (!reg.volk_ready && volkInitialize() != VK_SUCCESS)
            s = rlx_errorf(RLX_ERR_DEVICE, "Vulkan is not available: the loader library (libvulkan.so.1) was not "
                                           "found; install libvulkan1 and a driver (mesa-vulkan-drivers for lavapipe)");
        else
            reg.volk_ready = true;
        if (!s) s = create_instance(want_validation);
        if (!s) s = enumerate();
        if (s) teardown();
    }
    if (!s) reg.refs++;
    pthread_mutex_unlock(&reg.lock);
    return s;
}

rlx_status rlx_vk_registry_acquire(void) { return registry_acquire(rlx_vk_env_validation()); }

void rlx_vk_registry_release(void) {
    pthread_mutex_lock(&reg.lock);
    if (reg.refs > 0 && --reg.refs == 0) teardown();
    pthread_mutex_unlock(&reg.lock);
}

uint32_t rlx_vk_device_count(void) { return reg.n_devices; }

const rlx_vk_caps *rlx_vk_device_caps(uint32_t index) { return index < reg.n_devices ? &reg.caps[index] : NULL; }

uint32_t rlx_vk_caps_wg_pow2(const rlx_vk_caps *c, uint32_t want) {
    uint32_t limit = c->max_wg_invocations < c->max_wg_size[0] ? c->max_wg_invocations : c->max_wg_size[0];
    uint32_t wg = want;
    while (wg > limit && wg > 1) wg /= 2;
    return wg;
}

/* ---- formatting ---- */

static const char *type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

static const char *component_name(VkComponentTypeNV t) {
    switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_SINT8_NV: return "s8";
    case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "s32";
    case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
    default: return "?";
    }
}

/* Appends to buf at *used, never past size. */
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...) RLX_PRINTF(4, 5);
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...) {
    if (*used >= size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n < size - *used ? (size_t)n : size - *used;
}

static double gib(uint64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

void rlx_vk_caps_format(const rlx_vk_caps *c, char *buf, size_t size) {
    size_t u = 0;
    buf[0] = 0;
    put(buf, size, &u, "%u: %s [%s] vulkan %u.%u.%u, %s (%s)%s", c->index, c->name, type_name(c->type),
        VK_API_VERSION_MAJOR(c->api_version), VK_API_VERSION_MINOR(c->api_version),
        VK_API_VERSION_PATCH(c->api_version), c->driver_name[0] ? c->driver_name : "driver ?", c->driver_info,
        c->usable ? "" : " UNUSABLE (needs Vulkan 1.2 and a compute queue)");
    put(buf, size, &u, " | fp16 %s bf16 %s int8 %s fp64 %s storage16 %s storage8 %s", c->fp16 ? "yes" : "no",
        c->bf16 ? "yes" : "no", c->int8 ? "yes" : "no", c->fp64 ? "yes" : "no", c->storage16 ? "yes" : "no",
        c->storage8 ? "yes" : "no");
    put(buf, size, &u, " | subgroup %u (%u..%u, size control %s, arithmetic %s, shuffle %s)", c->subgroup_size,
        c->subgroup_min, c->subgroup_max, c->subgroup_size_control ? "yes" : "no",
        c->subgroup_arithmetic ? "yes" : "no", c->subgroup_shuffle ? "yes" : "no");
    put(buf, size, &u, " | coopmat %s%s", c->coopmat_khr ? "KHR" : c->coopmat_nv ? "NV" : "none",
        c->coopmat_f16 ? " (matmul_coop)" : "");
    for (uint32_t i = 0; i < c->n_coopmat; i++)
        put(buf, size, &u, "%s%ux%ux%u %s->%s", i ? ", " : " ", c->coopmat[i].m, c->coopmat[i].n, c->coopmat[i].k,
            component_name(c->coopmat[i].a_type), component_name(c->coopmat[i].c_type));
    put(buf, size, &u,
        " | max_storage_range %" PRIu64 " max_alloc %" PRIu64 " wg_size %u,%u,%u wg_invocations %u wg_count "
        "%u,%u,%u shared %u push %u",
        c->max_storage_range, c->max_alloc, c->max_wg_size[0], c->max_wg_size[1], c->max_wg_size[2],
        c->max_wg_invocations, c->max_wg_count[0], c->max_wg_count[1], c->max_wg_count[2], c->max_shared,
        c->max_push);
    put(buf, size, &u, " | heaps");
    for (uint32_t i = 0; i < c->n_heaps; i++)
        put(buf, size, &u, "%s%.2f GiB%s", i ? ", " : " ", gib(c->heap_size[i]),
            c->heap_device_local[i] ? " device-local" : "");
}

/* ---- choice ---- */

static void list_devices(char *buf, size_t size) {
    size_t u = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < reg.n_devices; i++)
        put(buf, size, &u, "%s%u: %s (%s)", i ? ", " : "", i, reg.caps[i].name, type_name(reg.caps[i].type));
    if (reg.n_devices == 0) put(buf, size, &u, "none");
}

static bool name_contains(const char *name, const char *want) {
    size_t n = strlen(want);
    for (const char *p = name; *p; p++)
        if (strncasecmp(p, want, n) == 0) return true;
    return false;
}

static bool all_digits(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

static rlx_status choose_named(const char *want, const char *source, uint32_t *index) {
    char list[1024];
    list_devices(list, sizeof list);
    if (all_digits(want)) {
        unsigned long i = strtoul(want, NULL, 10);
        if (i >= reg.n_devices)
            return rlx_errorf(RLX_ERR_NOT_FOUND, "Vulkan device %s (from %s): no such index; devices: %s", want,
                              source, list);
        if (!reg.caps[i].usable)
            return rlx_errorf(RLX_ERR_UNSUPPORTED, "Vulkan device %lu (%s): needs Vulkan 1.2 and a compute queue", i,
                              reg.caps[i].name);
        *index = (uint32_t)i;
        return NULL;
    }
    for (uint32_t i = 0; i < reg.n_devices; i++) {
        if (reg.caps[i].usable && name_contains(reg.caps[i].name, want)) {
            *index = i;
            return NULL;
        }
    }
    return rlx_errorf(RLX_ERR_NOT_FOUND, "Vulkan device '%s' (from %s): no usable device name contains it; devices: %s",
                      want, source, list);
}

static rlx_status choose_gpu(uint32_t *index) {
    for (uint32_t i = 0; i < reg.n_devices; i++) {
        if (reg.caps[i].usable && !reg.caps[i].is_cpu) {
            *index = i;
            return NULL;
        }
    }
    char list[1024];
    list_devices(list, sizeof list);
    return rlx_errorf(RLX_ERR_DEVICE,
                      "no Vulkan GPU found (devices: %s); CPU devices such as llvmpipe are used only when named: "
                      "set RLX_VK_DEVICE=llvmpipe or pass the device",
                      list);
}

/* `want` is a comma-separated preference list: each item an index, a name substring, or "gpu"
 * (the first non-CPU device); the first item that matches wins, else the last item's error. */
static rlx_status choose_list(const char *want, const char *source, uint32_t *index) {
    char item[256];
    rlx_status s = NULL;
    for (const char *p = want; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item - 1 ? n : sizeof item - 1), p);
        rlx_status_free(s);
        s = strcmp(item, "gpu") == 0 ? choose_gpu(index) : choose_named(item, source, index);
        if (!s) return NULL;
        p += n;
        if (*p == ',') p++;
    }
    return s ? s : rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "Vulkan device (from %s): empty choice '%s'", source, want);
}

rlx_status rlx_vk_device_choose(const char *want, uint32_t *index) {
    if (want && *want) return choose_list(want, "the device argument", index);
    const char *env = rlx_vk_env_device();
    if (env) return choose_list(env, "RLX_VK_DEVICE", index);
    return choose_gpu(index);
}

/* ---- logical device ---- */

/* forced: RLX_VK_MAX_BINDING_BYTES, 0 when unset */
static uint64_t max_binding(const rlx_vk_caps *c, uint64_t forced) {
    uint64_t m = c->max_storage_range;
    if (c->max_alloc && c->max_alloc < m) m = c->max_alloc;
    if (m > RLX_VK_BINDING_CAP) m = RLX_VK_BINDING_CAP;
    /* A smaller limit can be forced to exercise the split paths on small models. */
    if (forced >= 4096 && forced < m) m = forced;
    return m & ~(uint64_t)255;
}

/* What the device is created with beyond Vulkan 1.2's core, where the snapshot found it: the
 * cooperative-matrix kernel (shaders/matmul_coop.comp) needs VK_NV_cooperative_matrix and its
 * feature, shaderFloat16 and the Vulkan memory model; F16 K/V pools (the *_f16 kernels) need
 * storageBuffer16BitAccess; RLX_VK_SHADER_STATS needs VK_KHR_pipeline_executable_properties and
 * its feature. */
typedef struct device_extras {
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    const char *ext[2];
    uint32_t n_ext;
} device_extras;

static void device_extras_chain(const rlx_vk_caps *c, bool stats, device_extras *x, VkDeviceCreateInfo *info) {
    memset(x, 0, sizeof *x);
    void *chain = NULL;
    if (stats) {
        x->stats = (VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
            .pipelineExecutableInfo = VK_TRUE};
        chain = &x->stats;
        x->ext[x->n_ext++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    }
    if (c->coopmat_f16) {
        x->coop = (VkPhysicalDeviceCooperativeMatrixFeaturesNV){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
            .pNext = chain,
            .cooperativeMatrix = VK_TRUE};
        x->f12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                    .pNext = &x->coop,
                                                    .shaderFloat16 = VK_TRUE,
                                                    .vulkanMemoryModel = VK_TRUE};
        chain = &x->f12;
        x->ext[x->n_ext++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (c->storage16) {
        x->f11 = (VkPhysicalDeviceVulkan11Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                    .pNext = chain,
                                                    .storageBuffer16BitAccess = VK_TRUE};
        chain = &x->f11;
    }
    info->pNext = chain;
    info->enabledExtensionCount = x->n_ext;
    info->ppEnabledExtensionNames = x->n_ext ? x->ext : NULL;
}

/* RLX_VK_SHADER_STATS on a device that has the extension; said once where it has not. */
static bool shader_stats_on(const rlx_vk_caps *c, bool wanted) {
    if (!wanted) return false;
    if (!c->executable_props)
        fprintf(stderr, "rlx vulkan shader stats: %s lacks VK_KHR_pipeline_executable_properties: none to print\n",
                c->name);
    return c->executable_props;
}

/* A decode step is often well under a millisecond of GPU time, and sleeping in the driver adds
 * wake-up latency of ~0.1 ms (more in virtual machines), so a GPU's fences are polled. Not a CPU
 * device's: there the polling thread would take a core from the device. RLX_VK_WAIT=poll|block
 * (rlx_vk_options wait) overrides that, so that the polled path also runs on
 * lavapipe in CI (tests/vulkan/tests.cmake). */
static bool polls_fences(const rlx_vk_caps *c, int32_t wait) {
    return wait >= 0 ? wait == 0 : !c->is_cpu; /* wait 0: poll, 1: block */
}

static rlx_status create_device(rlx_vk_device *d, const rlx_vk_options *o) {
    float prio = 1.0f;
    VkDeviceQueueCreateInfo q = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = d->caps->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &q,
    };
    device_extras extras;
    d->shader_stats = shader_stats_on(d->caps, o->shader_stats);
    d->polls = polls_fences(d->caps, o->wait);
    d->pipeline_cache = o->pipeline_cache;
    device_extras_chain(d->caps, d->shader_stats, &extras, &info);
    RLX_VK_TRY(vkCreateDevice(d->phys, &info, NULL, &d->dev), "creating the Vulkan device");
    volkLoadDeviceTable(&d->vk, d->dev);
    d->vk.vkGetDeviceQueue(d->dev, d->caps->queue_family, 0, &d->queue);
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = d->caps->queue_family,
    };
    RLX_VK_TRY(d->vk.vkCreateCommandPool(d->dev, &pool, NULL, &d->pool), "creating the upload command pool");
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
    d->max_binding = max_binding(d->caps, o->max_binding_bytes);
    return NULL;
}

rlx_status rlx_vk_device_open(const char *want, rlx_vk_device **out) {
    rlx_vk_options o;
    RLX_TRY(rlx_vk_options_from_env(&o));
    if (want && *want) {
        o.device = want;
        o.device_from_env = false;
    }
    return rlx_vk_device_open_with(&o, out);
}

rlx_status rlx_vk_device_open_with(const rlx_vk_options *o, rlx_vk_device **out) {
    RLX_TRY(registry_acquire(o->validation));
    uint32_t index = 0;
    rlx_status s = o->device && *o->device
                       ? choose_list(o->device, o->device_from_env ? "RLX_VK_DEVICE" : "the device argument", &index)
                       : choose_gpu(&index);
    if (s) {
        rlx_vk_registry_release();
        return s;
    }
    rlx_vk_device *d = calloc(1, sizeof *d);
    if (!d) {
        rlx_vk_registry_release();
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "opening Vulkan device %u", index);
    }
    d->caps = &reg.caps[index];
    d->phys = reg.phys[index];
    pthread_mutex_init(&d->queue_lock, NULL);
    s = create_device(d, o);
    if (s) {
        rlx_vk_device_close(d);
        return rlx_status_annotate(s, "Vulkan device %u (%s)", index, reg.caps[index].name);
    }
    *out = d;
    return NULL;
}

void rlx_vk_device_close(rlx_vk_device *d) {
    if (!d) return;
    if (d->dev) {
        d->vk.vkDeviceWaitIdle(d->dev);
        if (d->pool) d->vk.vkDestroyCommandPool(d->dev, d->pool, NULL);
        d->vk.vkDestroyDevice(d->dev, NULL);
    }
    pthread_mutex_destroy(&d->queue_lock);
    free(d);
    rlx_vk_registry_release();
}

/* Polls the fence until it is signalled or until `until_ms`; VK_NOT_READY when the time ran out. */
static VkResult poll_fence(rlx_vk_device *d, VkFence fence, double until_ms) {
    VkResult r;
    while ((r = d->vk.vkGetFenceStatus(d->dev, fence)) == VK_NOT_READY && now_ms() < until_ms) {
    }
    return r;
}

/* The submit and the wait; VK_TIMEOUT when the device did not finish in time. */
static VkResult submit_wait(rlx_vk_device *d, const VkCommandBuffer *cbs, uint32_t n, VkFence fence,
                            double expect_ms) {
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = n, .pCommandBuffers = cbs};
    pthread_mutex_lock(&d->queue_lock);
    VkResult r = d->vk.vkQueueSubmit(d->queue, 1, &si, fence);
    pthread_mutex_unlock(&d->queue_lock);
    if (r < 0) return r;
    double start = now_ms();
    if (d->polls) {
        if (expect_ms > RLX_VK_SPIN_MS) {
            double margin = expect_ms / 8.0 > 0.5 ? expect_ms / 8.0 : 0.5;
            r = d->vk.vkWaitForFences(d->dev, 1, &fence, VK_TRUE, (uint64_t)((expect_ms - margin) * 1e6));
            if (r != VK_TIMEOUT && r != VK_SUCCESS) return r;
        }
        double spin = expect_ms > RLX_VK_SPIN_MS ? 2.0 * expect_ms : RLX_VK_SPIN_MS;
        r = poll_fence(d, fence, start + spin);
        if (r < 0) return r;
    }
    r = d->vk.vkWaitForFences(d->dev, 1, &fence, VK_TRUE, RLX_VK_FENCE_TIMEOUT_NS);
    if (r != VK_SUCCESS) return r;
    return d->vk.vkResetFences(d->dev, 1, &fence);
}

rlx_status rlx_vk_submit_batch(rlx_vk_device *d, const VkCommandBuffer *cbs, uint32_t n, VkFence fence,
                               rlx_vk_wait wait, const char *what) {
    VkResult r = VK_ERROR_DEVICE_LOST;
    double start = now_ms();
    if (!atomic_load(&d->lost)) {
        rlx_vk_fault_kind fault = rlx_vk_fault_submit();
        if (fault != RLX_VK_FAULT_LOST) r = submit_wait(d, cbs, n, fence, wait.expect_ms);
        if (fault == RLX_VK_FAULT_LOST_WAIT && r == VK_SUCCESS) r = VK_ERROR_DEVICE_LOST;
    }
    if (wait.took_ms) *wait.took_ms = now_ms() - start;
    if (r == VK_ERROR_DEVICE_LOST) atomic_store(&d->lost, true);
    if (r == VK_TIMEOUT)
        return rlx_errorf(RLX_ERR_DEVICE, "%s: the device did not finish within %llu s (hang?)", what,
                          RLX_VK_FENCE_TIMEOUT_NS / 1000000000ull);
    return rlx_vk_check(r, what);
}

rlx_status rlx_vk_submit_wait(rlx_vk_device *d, VkCommandBuffer cb, VkFence fence, const char *what) {
    return rlx_vk_submit_batch(d, &cb, 1, fence, (rlx_vk_wait){0}, what);
}

void rlx_vk_cmd_barrier(const rlx_vk_device *d, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                        VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
    };
    d->vk.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

bool rlx_vk_copy_hazard(const int32_t *src, const int32_t *dst, int32_t from, int32_t i) {
    for (int32_t j = from; j < i; j++)
        if (dst[j] == dst[i] || (src[i] >= 0 && dst[j] == src[i]) || (src[j] >= 0 && src[j] == dst[i])) return true;
    return false;
}

rlx_status rlx_vk_run_once(rlx_vk_device *d, rlx_vk_record_fn record, void *ctx, const char *noun, const char *doing) {
    char what[96];
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    snprintf(what, sizeof what, "allocating a %s", noun);
    pthread_mutex_lock(&d->queue_lock);
    rlx_status st = rlx_vk_check(d->vk.vkAllocateCommandBuffers(d->dev, &ai, &cb), what);
    pthread_mutex_unlock(&d->queue_lock);
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    snprintf(what, sizeof what, "creating a %s fence", noun);
    if (!st) st = rlx_vk_check(d->vk.vkCreateFence(d->dev, &fi, NULL, &fence), what);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    snprintf(what, sizeof what, "beginning a %s", noun);
    if (!st) st = rlx_vk_check(d->vk.vkBeginCommandBuffer(cb, &bi), what);
    if (!st) {
        record(ctx, cb);
        snprintf(what, sizeof what, "ending a %s", noun);
        st = rlx_vk_check(d->vk.vkEndCommandBuffer(cb), what);
    }
    if (!st) st = rlx_vk_submit_wait(d, cb, fence, doing);
    if (fence) d->vk.vkDestroyFence(d->dev, fence, NULL);
    if (cb) {
        pthread_mutex_lock(&d->queue_lock);
        d->vk.vkFreeCommandBuffers(d->dev, d->pool, 1, &cb);
        pthread_mutex_unlock(&d->queue_lock);
    }
    return st;
}
