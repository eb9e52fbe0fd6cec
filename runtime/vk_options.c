/* See vk_options.h. The one file of runtime/ that reads the environment (a test in tests/cli/
 * checks): a set value that is anything but what its variable takes would otherwise measure the
 * default without a word, so it is refused, naming the variable and what it takes. */
#include "runtime/vk_options.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A planner override: a power of two in [lo, hi] in a uint32_t field of rlx_vk_options. */
typedef struct pow2_knob {
    const char *name, *field;
    size_t offset;
    unsigned long long lo, hi;
} pow2_knob;

#define POW2_KNOB(var, field, lo, hi) {var, #field, offsetof(rlx_vk_options, field), lo, hi}
static const pow2_knob pow2_knobs[] = {
    POW2_KNOB("RLX_VK_MATVEC_TRIPS", matvec_trips, 1, 64),
    POW2_KNOB("RLX_VK_MATVEC_WG", matvec_wg, 32, 1024),
    POW2_KNOB("RLX_VK_MATVEC_R", matvec_r, 1, 8),
    POW2_KNOB("RLX_VK_MATVEC_MIN_GROUPS", matvec_min_groups, 1, 65536),
    POW2_KNOB("RLX_VK_MATVEC_NX", matvec_nx, 1, 8),
    POW2_KNOB("RLX_VK_MATVEC_UNR", matvec_unr, 1, 8),
    POW2_KNOB("RLX_VK_ATTN_GW", attn_gw, 1, 4),
    POW2_KNOB("RLX_VK_ATTN_SPLIT_KEYS", attn_split_keys, 16, 4096),
    POW2_KNOB("RLX_VK_ATTN_BATCH_SPLITS", attn_batch_splits, 1, 16),
    POW2_KNOB("RLX_VK_ATTN_KB", attn_kb, 1, 16),
    POW2_KNOB("RLX_VK_ATTN_LPK", attn_lpk, 1, 64),
    POW2_KNOB("RLX_VK_ATTN_WG", attn_wg, 32, 1024),
    POW2_KNOB("RLX_VK_COOPMAT_TM", coopmat_tm, 64, 128),
    POW2_KNOB("RLX_VK_COOPMAT_TN", coopmat_tn, 64, 128),
    POW2_KNOB("RLX_VK_COOPMAT_DEPTH", coopmat_depth, 1, 4),
    POW2_KNOB("RLX_VK_COOPMAT_BK", coopmat_bk, 32, 128),
    POW2_KNOB("RLX_VK_COOPMAT_SPLIT", coopmat_split, 1, 64),
    POW2_KNOB("RLX_VK_COOPMAT_GROUPS", coopmat_groups, 1, 65536),
    POW2_KNOB("RLX_VK_TILED_MIN_ROWS", tiled_min_rows, 1, 512),
    POW2_KNOB("RLX_VK_MOE_TM", moe_tm, 16, 64),
};
#undef POW2_KNOB
#define N_POW2_KNOBS (sizeof pow2_knobs / sizeof pow2_knobs[0])

#define WARM_NEXT_MAX_KIB 1048576ull
#define MIN_BINDING_BYTES 4096ull /* the least binding limit that may be forced (vk_device.c max_binding) */

static const struct {
    const char *name;
    rlx_vk_coopmat mode;
} coopmat_modes[] = {{"mixed", RLX_VK_COOPMAT_MIXED},
                     {"exact", RLX_VK_COOPMAT_EXACT},
                     {"0", RLX_VK_COOPMAT_OFF},
                     {"emulate", RLX_VK_COOPMAT_EMULATE},
                     {"emulate-mixed", RLX_VK_COOPMAT_EMULATE_MIXED}};
#define N_COOPMAT_MODES (sizeof coopmat_modes / sizeof coopmat_modes[0])

rlx_vk_options rlx_vk_options_default(void) {
    return (rlx_vk_options){.pipeline_cache = true,
                            .fusion = true,
                            .wait = -1,
                            .coopmat = RLX_VK_COOPMAT_DEFAULT,
                            .warm = -1,
                            .warm_next_kib = -1,
                            .moe_grouped = -1,
                            .matmul_batch = -1};
}

/* The variable's value, or NULL when it is unset or empty (both mean the default). */
static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A switch that is on when set to anything but "0". */
static bool env_on(const char *name) {
    const char *v = env(name);
    return v && strcmp(v, "0") != 0;
}

/* A switch that is on unless set to "0". */
static bool env_not_off(const char *name) {
    const char *v = env(name);
    return !(v && strcmp(v, "0") == 0);
}

const char *rlx_vk_env_device(void) { return env("RLX_VK_DEVICE"); }
bool rlx_vk_env_validation(void) { return env_on("RLX_VK_VALIDATION"); }

/* A whole decimal number with nothing before or after it. */
static bool whole(const char *v, unsigned long long *x) {
    if (*v < '0' || *v > '9') return false;
    char *end;
    errno = 0;
    *x = strtoull(v, &end, 10);
    return !*end && errno == 0;
}

static bool parse_fault(const char *v, rlx_vk_fault_kind *kind, uint64_t *n) {
    static const struct {
        const char *prefix;
        rlx_vk_fault_kind kind;
    } kinds[] = {{"oom:", RLX_VK_FAULT_OOM}, {"lost:", RLX_VK_FAULT_LOST}, {"lost-wait:", RLX_VK_FAULT_LOST_WAIT}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        size_t len = strlen(kinds[i].prefix);
        if (strncmp(v, kinds[i].prefix, len) != 0) continue;
        const char *digits = v + len;
        char *end;
        if (*digits < '0' || *digits > '9') return false;
        unsigned long long x = strtoull(digits, &end, 10);
        if (*end || x == 0) return false;
        *kind = kinds[i].kind;
        *n = x;
        return true;
    }
    return false;
}

static rlx_status fault_from_env(rlx_vk_options *o) {
    const char *v = env("RLX_VK_FAULT");
    if (v && !parse_fault(v, &o->fault, &o->fault_at))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "RLX_VK_FAULT='%.127s': expected oom:N, lost:N or lost-wait:N with N >= 1", v);
    return NULL;
}

/* A knob of two words: *out 0 or 1 for the first or second; unchanged when unset. */
static rlx_status word_from_env(const char *name, const char *w0, const char *w1, int32_t *out) {
    const char *v = env(name);
    if (!v) return NULL;
    if (strcmp(v, w0) == 0 || strcmp(v, w1) == 0) {
        *out = strcmp(v, w1) == 0;
        return NULL;
    }
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s='%s': expected %s or %s, or unset for the default", name, v, w0,
                      w1);
}

static rlx_status words_from_env(rlx_vk_options *o) {
    int32_t plans = 0, det = 0;
    RLX_TRY(word_from_env("RLX_VK_WAIT", "poll", "block", &o->wait));
    RLX_TRY(word_from_env("RLX_VK_WARM", "0", "1", &o->warm));
    /* the grouped MoE path never or wherever it fits, for A/B against shaders/moe_mv.comp */
    RLX_TRY(word_from_env("RLX_VK_MOE_GROUPED", "0", "1", &o->moe_grouped));
    /* decode batches' F16, Q4_K and Q6_K matmuls on matmul_batch.comp never or wherever it runs, for A/B */
    RLX_TRY(word_from_env("RLX_VK_MATMUL_BATCH", "0", "1", &o->matmul_batch));
    /* the GPU's plans on any device, so that a CPU device (lavapipe in CI) checks them too */
    RLX_TRY(word_from_env("RLX_VK_PLANS", "device", "gpu", &plans));
    o->gpu_plans = plans == 1;
    RLX_TRY(word_from_env("RLX_VK_DETERMINISTIC", "0", "1", &det));
    o->deterministic = det == 1;
    return NULL;
}

static rlx_status pow2_from_env(rlx_vk_options *o) {
    for (size_t i = 0; i < N_POW2_KNOBS; i++) {
        const pow2_knob *k = &pow2_knobs[i];
        const char *v = env(k->name);
        unsigned long long x;
        if (!v) continue;
        if (!whole(v, &x) || x < k->lo || x > k->hi || (x & (x - 1)) != 0)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "%s='%s': expected a power of two from %llu to %llu, or unset for the default", k->name,
                              v, k->lo, k->hi);
        *(uint32_t *)((char *)o + k->offset) = (uint32_t)x;
    }
    return NULL;
}

static rlx_status numbers_from_env(rlx_vk_options *o) {
    RLX_TRY(pow2_from_env(o));
    const char *v = env("RLX_VK_WARM_NEXT");
    unsigned long long x;
    if (v && (!whole(v, &x) || x > WARM_NEXT_MAX_KIB))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "RLX_VK_WARM_NEXT='%s': expected a whole number of KiB from 0 to %llu, or unset for the "
                          "default", v, WARM_NEXT_MAX_KIB);
    if (v) o->warm_next_kib = (int32_t)x;
    /* a smaller binding limit than the device's, to exercise weight splitting (vk_device.c) */
    v = env("RLX_VK_MAX_BINDING_BYTES");
    if (v && (!whole(v, &x) || x < MIN_BINDING_BYTES))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "RLX_VK_MAX_BINDING_BYTES='%s': expected a whole number of bytes from %llu, or unset", v,
                          MIN_BINDING_BYTES);
    if (v) o->max_binding_bytes = x;
    return NULL;
}

static rlx_status coopmat_from_env(rlx_vk_options *o) {
    const char *v = env("RLX_VK_COOPMAT");
    if (!v) return NULL;
    for (size_t i = 0; i < N_COOPMAT_MODES; i++)
        if (strcmp(v, coopmat_modes[i].name) == 0) {
            o->coopmat = coopmat_modes[i].mode;
            return NULL;
        }
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                      "RLX_VK_COOPMAT='%s': expected mixed, exact, 0, emulate or emulate-mixed", v);
}

rlx_status rlx_vk_options_from_env(rlx_vk_options *o) {
    *o = rlx_vk_options_default();
    o->device = rlx_vk_env_device();
    o->device_from_env = o->device != NULL;
    o->validation = rlx_vk_env_validation();
    o->pipeline_cache = env_not_off("RLX_VK_PIPELINE_CACHE");
    o->fusion = env_not_off("RLX_VK_FUSION");
    o->debug = env_on("RLX_VK_DEBUG");
    o->profile = env_on("RLX_VK_PROFILE") ? 1 + (strcmp(env("RLX_VK_PROFILE"), "2") == 0) : 0;
    o->shader_stats = env_on("RLX_VK_SHADER_STATS");
    RLX_TRY(fault_from_env(o));
    RLX_TRY(words_from_env(o));
    RLX_TRY(numbers_from_env(o));
    return coopmat_from_env(o);
}

static rlx_status check_range(const char *field, const char *var, long long x, long long lo, long long hi,
                              const char *unset) {
    if (x >= lo && x <= hi) return NULL;
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan options: %s %lld (%s): expected %lld to %lld, %s", field, x,
                      var, lo, hi, unset);
}

rlx_status rlx_vk_options_check(const rlx_vk_options *o) {
    for (size_t i = 0; i < N_POW2_KNOBS; i++) {
        const pow2_knob *k = &pow2_knobs[i];
        uint32_t x = *(const uint32_t *)((const char *)o + k->offset);
        if (x && (x < k->lo || x > k->hi || (x & (x - 1)) != 0))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "vulkan options: %s %u (%s): expected a power of two from %llu to %llu, or 0 for the "
                              "default", k->field, x, k->name, k->lo, k->hi);
    }
    if (o->max_binding_bytes && o->max_binding_bytes < MIN_BINDING_BYTES)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "vulkan options: max_binding_bytes %llu (RLX_VK_MAX_BINDING_BYTES): expected %llu or more, "
                          "or 0 for the device's limit", (unsigned long long)o->max_binding_bytes, MIN_BINDING_BYTES);
    if (o->fault != RLX_VK_FAULT_NONE && o->fault_at == 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "vulkan options: fault_at 0 (RLX_VK_FAULT): expected 1 or more");
    RLX_TRY(check_range("wait", "RLX_VK_WAIT", o->wait, -1, 1, "-1 for the default"));
    RLX_TRY(check_range("warm", "RLX_VK_WARM", o->warm, -1, 1, "-1 for the default"));
    RLX_TRY(check_range("moe_grouped", "RLX_VK_MOE_GROUPED", o->moe_grouped, -1, 1, "-1 for the default"));
    RLX_TRY(check_range("matmul_batch", "RLX_VK_MATMUL_BATCH", o->matmul_batch, -1, 1, "-1 for the default"));
    RLX_TRY(check_range("warm_next_kib", "RLX_VK_WARM_NEXT", o->warm_next_kib, -1, (long long)WARM_NEXT_MAX_KIB,
                        "-1 for the default"));
    RLX_TRY(check_range("profile", "RLX_VK_PROFILE", o->profile, 0, 2, "0 for none"));
    RLX_TRY(check_range("fault", "RLX_VK_FAULT", o->fault, RLX_VK_FAULT_NONE, RLX_VK_FAULT_LOST_WAIT, "NONE for none"));
    return check_range("coopmat", "RLX_VK_COOPMAT", o->coopmat, RLX_VK_COOPMAT_OFF, RLX_VK_COOPMAT_DEFAULT,
                       "DEFAULT for the default");
}

rlx_vk_tuning rlx_vk_tuning_make(const rlx_vk_caps *caps, const rlx_vk_options *o) {
    rlx_vk_coopmat coop = o->coopmat == RLX_VK_COOPMAT_DEFAULT ? RLX_VK_COOPMAT_MIXED : o->coopmat;
    /* the emulated modes run on any device; the others need the kernel (vk_device.h coopmat_f16) */
    if (coop < RLX_VK_COOPMAT_EMULATE && !caps->coopmat_f16) coop = RLX_VK_COOPMAT_OFF;
    /* deterministic: every matmul on shaders/matmul_tiled.comp in f32, whatever its rows (vk_plan.c) */
    if (o->deterministic) coop = RLX_VK_COOPMAT_OFF;
    return (rlx_vk_tuning){.gpu_plans = !caps->is_cpu || o->gpu_plans,
                           .coopmat = coop,
                           .coopmat_tm = o->coopmat_tm,
                           .coopmat_tn = o->coopmat_tn,
                           .coopmat_depth = o->coopmat_depth,
                           .coopmat_bk = o->coopmat_bk,
                           .coopmat_split = o->coopmat_split,
                           .coopmat_groups = o->coopmat_groups,
                           .tiled_min_rows = o->tiled_min_rows,
                           .matvec_trips = o->matvec_trips,
                           .matvec_wg = o->matvec_wg,
                           .matvec_r = o->matvec_r,
                           .matvec_min_groups = o->matvec_min_groups,
                           .matvec_nx = o->matvec_nx,
                           .matvec_unr = o->matvec_unr,
                           .attn_gw = o->attn_gw,
                           .attn_split_keys = o->attn_split_keys,
                           .attn_batch_splits = o->attn_batch_splits,
                           .attn_kb = o->attn_kb,
                           .attn_lpk = o->attn_lpk,
                           .attn_wg = o->attn_wg,
                           .moe_tm = o->moe_tm,
                           .moe_grouped = o->moe_grouped,
                           .matmul_batch = o->matmul_batch,
                           .warm = o->warm,
                           .warm_next_kib = o->warm_next_kib,
                           .deterministic = o->deterministic};
}
