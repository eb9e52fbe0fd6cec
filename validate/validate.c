/* rlx_validate_run: the sections in order (capabilities, ops, model and paths), the validation
 * layer's count, and the verdict. */
#include "validate/validate.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "loader/core/dtype.h"
#include "runtime/vk_backend.h"
#include "validate/validate_internal.h"

rlx_validate_opts rlx_validate_opts_default(void) {
    rlx_validate_opts o;
    memset(&o, 0, sizeof o);
    o.vk = rlx_vk_options_default();
    o.perturb_op = -1;
    return o;
}

/* Whether one comma-free part of a pattern matches op's name (case-insensitive glob). */
static bool part_matches(const char *part, size_t len, int32_t op) {
    char buf[64];
    if (len == 0 || len >= sizeof buf) return false;
    for (size_t i = 0; i < len; i++) buf[i] = (char)toupper((unsigned char)part[i]); /* op names are upper case */
    buf[len] = 0;
    return fnmatch(buf, rlx_op_name((rlx_op)op), 0) == 0;
}

bool rlx_validate_op_selected(const char *pattern, int32_t op) {
    if (!pattern) return true;
    for (const char *p = pattern;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (part_matches(p, len, op)) return true;
        if (!end) return false;
        p = end + 1;
    }
}

rlx_status rlx_validate_ops_check(const char *pattern) {
    if (!pattern) return NULL;
    for (const char *p = pattern;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool any = false;
        for (int op = 0; op < RLX_OP_COUNT && !any; op++) any = part_matches(p, len, op);
        if (!any)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--ops: '%.*s' matches no op of ir/ops.def (e.g. MATMUL, "
                              "ATTENTION, 'MOE_*')", (int)len, p);
        if (!end) return NULL;
        p = end + 1;
    }
}

rlx_status rlx_validate_parse_types(const char *list, rlx_validate_opts *o) {
    uint32_t all[RLX_VALIDATE_MAX_TYPES];
    size_t n_all = rlx_validate_all_types(all, RLX_VALIDATE_MAX_TYPES);
    o->n_types = 0;
    for (const char *p = list;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool found = false;
        for (size_t i = 0; i < n_all && !found; i++) {
            const char *name = rlx_dtype_name(all[i]);
            if (strlen(name) == len && strncasecmp(name, p, len) == 0) {
                found = true;
                bool dup = false;
                for (size_t k = 0; k < o->n_types; k++) dup |= o->types[k] == all[i];
                if (!dup) o->types[o->n_types++] = all[i];
            }
        }
        if (!found) {
            char names[256] = "";
            for (size_t i = 0; i < n_all; i++) {
                strncat(names, rlx_dtype_name(all[i]), sizeof names - strlen(names) - 1);
                if (i + 1 < n_all) strncat(names, " ", sizeof names - strlen(names) - 1);
            }
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--types: '%.*s' is no weight type the kernels decode (%s)",
                              (int)len, p, names);
        }
        if (!end) return NULL;
        p = end + 1;
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Per-op summaries, the failure count, from the sections' results. */
static void summarise(rlx_validate_report *r, const rlx_validate_opts *o) {
    r->n_ops = 0;
    for (int op = 0; op < RLX_OP_COUNT && op < 64; op++) {
        rlx_validate_op_summary *s = &r->ops[r->n_ops++];
        memset(s, 0, sizeof *s);
        s->op = op;
        s->leaf = rlx_op_max_inputs((rlx_op)op) == 0;
        s->selected = !o->no_ops && rlx_validate_op_selected(o->ops, op);
    }
    for (size_t i = 0; i < r->n_cases; i++) {
        const rlx_validate_case *c = &r->cases[i];
        rlx_validate_op_summary *s = &r->ops[c->op];
        s->cases++;
        s->not_yet |= c->not_yet;
        s->failed += !c->pass;
        r->failed += !c->pass;
        if (c->diff.nmse > s->worst_nmse || !(c->diff.nmse == c->diff.nmse)) s->worst_nmse = c->diff.nmse;
    }
    /* a selected op that compared nothing is a hole in the sweep, not a pass */
    for (size_t i = 0; i < r->n_ops; i++) r->failed += r->runnable && r->ops[i].selected && r->ops[i].cases == 0;
    for (size_t i = 0; i < r->n_prompts; i++) r->failed += !r->prompts[i].pass;
    for (size_t i = 0; i < r->n_paths; i++) r->failed += !r->paths[i].pass;
    r->failed += r->model_error != NULL;
    r->failed += !r->runnable;
    r->failed += r->validation_requested && (!r->validation_active || r->validation_messages > 0);
}

rlx_status rlx_validate_run(const rlx_validate_opts *o, rlx_validate_report **out) {
    if (!o || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "validate: options and out must not be NULL");
    RLX_TRY(rlx_validate_ops_check(o->ops));
    rlx_validate_report *r = calloc(1, sizeof *r);
    if (!r) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: the report");
    double t0 = now_s();
    r->perturb_op = o->perturb_op;
    if (o->perturb_weight) snprintf(r->perturb_weight, sizeof r->perturb_weight, "%s", o->perturb_weight);
    r->validation_requested = o->vk.validation;
    uint64_t msgs0 = rlx_vk_validation_message_count();
    vl_sweep sw = {.o = o, .r = r, .rng = {0x243F6A8885A308D3ull}, .op = 0};
    rlx_status s = rlx_backend_vulkan_create_with(&o->vk, &sw.vk);
    if (s && rlx_status_code(s) != RLX_ERR_UNSUPPORTED) { /* no such device, no loader: nothing to report on */
        free(r);
        return s;
    }
    vl_caps_section(r, sw.vk, o);
    if (s) { /* the device exists but cannot run rlx: the capability rows say why */
        r->runnable = false;
        r->device_error = strdup(rlx_status_message(s));
        rlx_status_free(s);
    }
    if (sw.vk) r->validation_active = rlx_vk_validation_enabled();
    if (sw.vk && !o->no_ops) {
        r->mode_run[0] = true;
        r->mode_run[1] = rlx_vk_backend_caps(sw.vk)->coopmat_f16;
        snprintf(r->mode_note[0], sizeof r->mode_note[0], "f32-accurate prefill (RLX_VK_COOPMAT=exact)");
        snprintf(r->mode_note[1], sizeof r->mode_note[1], "%s",
                 r->mode_run[1] ? "f16 operands, f32 sums (RLX_VK_COOPMAT=mixed, the default)"
                                : "not run: without cooperative matrices the mixed mode runs exact's f32 kernels");
        s = rlx_backend_cpu_create(o->cpu_threads, &sw.cpu);
        if (s) {
            rlx_backend_destroy(sw.vk);
            free(r);
            return s;
        }
        vl_ops_section(&sw);
        rlx_backend_destroy(sw.cpu);
    }
    if (sw.vk && !o->no_paths) vl_pipeline_cache_path(&sw);
    /* the sweep's backend holds the device registry, and with it the validation layer, through
     * the model section's own backends */
    if (o->model && r->runnable) vl_model_section(r, o);
    rlx_backend_destroy(sw.vk);
    r->validation_messages = rlx_vk_validation_message_count() - msgs0;
    summarise(r, o);
    r->seconds = now_s() - t0;
    *out = r;
    return NULL;
}

bool rlx_validate_passed(const rlx_validate_report *r) { return r && r->failed == 0; }

void rlx_validate_report_free(rlx_validate_report *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_cases; i++) free(r->cases[i].error);
    for (size_t i = 0; i < r->n_prompts; i++) free(r->prompts[i].error);
    for (size_t i = 0; i < r->n_paths; i++) free(r->paths[i].error);
    free(r->model_error);
    free(r->device_error);
    free(r->cases);
    free(r);
}
