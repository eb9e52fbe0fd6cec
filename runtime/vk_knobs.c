/* Validation of the tuning knobs (vk_knobs.h). The planners read them with their own, sometimes
 * narrower, bounds that depend on the device or the matmul (RLX_VK_MATVEC_WG up to the device's
 * workgroup, RLX_VK_MATVEC_R up to 8 / x rows): a value valid here but outside those falls back to
 * the plan's default there. */
#include "runtime/vk_knobs.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct knob {
    const char *name;
    unsigned long long lo, hi; /* a whole number in [lo, hi] ... */
    bool pow2;                 /* ... and a power of two */
    const char *unit;          /* what the number counts, for the message (NULL for powers of two) */
} knob;

static const knob knobs[] = {
    {"RLX_VK_MATVEC_TRIPS", 1, 64, true, NULL},     {"RLX_VK_MATVEC_WG", 32, 1024, true, NULL},
    {"RLX_VK_MATVEC_R", 1, 8, true, NULL},          {"RLX_VK_MATVEC_MIN_GROUPS", 1, 65536, true, NULL},
    {"RLX_VK_MATVEC_NX", 1, 8, true, NULL},         {"RLX_VK_MATVEC_UNR", 1, 8, true, NULL},
    {"RLX_VK_ATTN_GW", 1, 4, true, NULL},           {"RLX_VK_COOPMAT_TM", 64, 128, true, NULL},
    {"RLX_VK_COOPMAT_DEPTH", 1, 2, true, NULL},     {"RLX_VK_WARM_NEXT", 0, 1048576, false, "KiB"},
    /* a smaller binding limit than the device's, to exercise weight splitting (vk_device.c) */
    {"RLX_VK_MAX_BINDING_BYTES", 4096, ULLONG_MAX, false, "bytes"},
};

/* Knobs that take one of two words (rlx_vk_knob_word). */
typedef struct word_knob {
    const char *name, *words[2];
} word_knob;

static const word_knob word_knobs[] = {
    {"RLX_VK_WAIT", {"poll", "block"}},
    {"RLX_VK_WARM", {"0", "1"}},
    /* the GPU's plans on any device, so that a CPU device (lavapipe in CI) checks them too */
    {"RLX_VK_PLANS", {"device", "gpu"}},
};

/* Index of v among k's words, or -1. */
static int word_of(const word_knob *k, const char *v) {
    for (int w = 0; w < 2; w++)
        if (strcmp(v, k->words[w]) == 0) return w;
    return -1;
}

int rlx_vk_knob_word(const char *name) {
    const char *v = getenv(name);
    for (size_t i = 0; v && i < sizeof word_knobs / sizeof word_knobs[0]; i++)
        if (strcmp(word_knobs[i].name, name) == 0) return word_of(&word_knobs[i], v);
    return -1;
}

static bool valid(const knob *k, const char *v) {
    if (*v < '0' || *v > '9') return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    return !*end && errno == 0 && x >= k->lo && x <= k->hi && (!k->pow2 || (x & (x - 1)) == 0);
}

rlx_status rlx_vk_knobs_check(void) {
    for (size_t i = 0; i < sizeof word_knobs / sizeof word_knobs[0]; i++) {
        const word_knob *k = &word_knobs[i];
        const char *v = getenv(k->name);
        if (v && *v && word_of(k, v) < 0)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s='%s': expected %s or %s, or unset for the default", k->name,
                              v, k->words[0], k->words[1]);
    }
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const knob *k = &knobs[i];
        const char *v = getenv(k->name);
        if (!v || !*v || valid(k, v)) continue;
        if (!k->pow2 && k->hi == ULLONG_MAX)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s='%s': expected a whole number of %s from %llu, or unset",
                              k->name, v, k->unit, k->lo);
        if (!k->pow2)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                              "%s='%s': expected a whole number of %s from %llu to %llu, or unset for the default",
                              k->name, v, k->unit, k->lo, k->hi);
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT,
                          "%s='%s': expected a power of two from %llu to %llu, or unset for the default", k->name,
                          v, k->lo, k->hi);
    }
    return NULL;
}
