/* The report as markdown (for people: one line per case, then a summary line) and as JSON (for a
 * driver's CI: schema rlx-validate/1, docs/VALIDATION.md). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/graph.h"
#include "loader/core/dtype.h"
#include "validate/validate.h"

static const char *type_name(int32_t t) { return t < 0 ? "-" : rlx_dtype_name((uint32_t)t); }
static const char *op_name(int32_t op) { return rlx_op_name((rlx_op)op); }

/* text as one markdown table cell: '|' escaped, line breaks as spaces (error messages may hold
 * several lines). */
static const char *cell(const char *text, char *buf, size_t size) {
    size_t o = 0;
    for (const char *p = text; *p && o + 2 < size; p++) {
        if (*p == '|') buf[o++] = '\\';
        buf[o++] = *p == '\n' || *p == '\r' ? ' ' : *p;
    }
    buf[o] = 0;
    return buf;
}

/* The ops that failed, comma-separated, into buf. */
static void failed_ops(const rlx_validate_report *r, char *buf, size_t size) {
    buf[0] = 0;
    for (size_t i = 0; i < r->n_ops; i++) {
        if (!r->ops[i].failed) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", len ? "," : "", op_name(r->ops[i].op));
    }
}

static void md_caps(const rlx_validate_report *r, FILE *f) {
    fprintf(f, "## Capabilities\n\n| capability | device | needed for | |\n|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_caps; i++) {
        const rlx_validate_cap *c = &r->caps[i];
        fprintf(f, "| %s | %s | %s | %s |\n", c->name, c->have, c->need,
                c->ok ? "ok" : c->required ? "**MISSING: rlx cannot run**" : "absent: fallback");
    }
    if (r->device_error) fprintf(f, "\n**The backend cannot run on this device:** %s\n", r->device_error);
    if (r->n_variants) {
        fprintf(f, "\nVariants this device gets:\n\n");
        for (size_t i = 0; i < r->n_variants; i++) fprintf(f, "- %s: %s\n", r->variants[i].name, r->variants[i].chosen);
    }
    fprintf(f, "\n");
}

static void md_case(const rlx_validate_case *c, FILE *f) {
    char buf[1024];
    fprintf(f, "| %s | %s | %s | %s | ", op_name(c->op), type_name(c->wtype), cell(c->shape, buf, sizeof buf), c->mode);
    if (c->not_yet && c->pass) {
        fprintf(f, " | | | not yet on the device |\n");
    } else if (c->error) {
        fprintf(f, " | | %.0e | **ERROR**: %s |\n", c->bound, cell(c->error, buf, sizeof buf));
    } else if (c->diff.ids && c->diff.ids_differ) {
        fprintf(f, "%.2e | %.2e | %.0e, ids exact | **FAIL** (%lld ids differ) |\n", c->diff.nmse, c->diff.max_abs,
                c->bound, (long long)c->diff.ids_differ);
    } else {
        fprintf(f, "%.2e | %.2e | %.0e%s | %s |\n", c->diff.nmse, c->diff.max_abs, c->bound,
                c->diff.ids ? ", ids exact" : "", c->pass ? "OK" : "**FAIL**");
    }
}

static void md_ops(const rlx_validate_report *r, FILE *f) {
    fprintf(f, "## Ops (device against the CPU reference)\n\n");
    for (int m = 0; m < 2; m++) fprintf(f, "- mode %s: %s\n", m ? "mixed" : "exact", r->mode_note[m]);
    fprintf(f, "\n| op | type | shape | mode | NMSE | max abs diff | bound | result |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_cases; i++) md_case(&r->cases[i], f);
    fprintf(f, "\n| op | kind | cases | failed | worst NMSE |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_ops; i++) {
        const rlx_validate_op_summary *s = &r->ops[i];
        if (s->selected && s->not_yet)
            fprintf(f, "| %s | %s | %d | %d | not yet on the device |\n", op_name(s->op),
                    s->leaf ? "leaf" : "computing", s->cases, s->failed);
        else if (s->selected)
            fprintf(f, "| %s | %s | %d | %d | %.2e |\n", op_name(s->op), s->leaf ? "leaf" : "computing", s->cases,
                    s->failed, s->worst_nmse);
        else
            fprintf(f, "| %s | %s | - | - | not selected |\n", op_name(s->op), s->leaf ? "leaf" : "computing");
    }
    fprintf(f, "\n");
}

static void md_model(const rlx_validate_report *r, FILE *f) {
    if (!r->model[0]) return;
    fprintf(f, "## Model: %s (%s)\n\n", r->model, r->family[0] ? r->family : "?");
    if (r->model_error) fprintf(f, "**ERROR**: %s\n\n", r->model_error);
    if (r->n_prompts) {
        fprintf(f, "| prompt | ids | max abs dlogit | NMSE | bound | greedy steps | first divergence | result |\n"
                   "|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < r->n_prompts; i++) {
            const rlx_validate_prompt *p = &r->prompts[i];
            if (p->error) {
                char buf[1024];
                fprintf(f, "| %s | %d | | | | | | **ERROR**: %s |\n", p->name, p->n_ids, cell(p->error, buf, sizeof buf));
                continue;
            }
            char div[96] = "none";
            if (p->diverge_step >= 0)
                snprintf(div, sizeof div, "step %d: CPU %d, device %d%s (top-2 gap %.2e)", p->diverge_step, p->cpu_id,
                         p->dev_id, p->near_tie ? ", near-tie" : "", p->tie_gap);
            fprintf(f, "| %s | %d | %.2e | %.2e | %.0e | %d | %s | %s |\n", p->name, p->n_ids, p->max_logit_delta, p->nmse,
                    p->bound, p->n_steps, div, p->pass ? "OK" : "**FAIL**");
        }
        fprintf(f, "\n");
    }
}

static void md_paths(const rlx_validate_report *r, FILE *f) {
    if (!r->n_paths) return;
    fprintf(f, "## Paths on the device\n\n| path | max abs dlogit | ids differing | bound | result |\n"
               "|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_paths; i++) {
        const rlx_validate_path *p = &r->paths[i];
        char buf[1024];
        if (p->error)
            fprintf(f, "| %s | | | | **ERROR**: %s |\n", p->name, cell(p->error, buf, sizeof buf));
        else
            fprintf(f, "| %s | %.2e | %d | %.0e | %s |\n", p->name, p->max_delta, p->ids_differ, p->bound,
                    p->pass ? "OK" : "**FAIL**");
    }
    fprintf(f, "\n");
}

rlx_status rlx_validate_write_md(const rlx_validate_report *r, FILE *f) {
    fprintf(f, "# rlx validate: %s\n\n", r->device[0] ? r->device : "(no device)");
    fprintf(f, "Device %u: %s, driver %s (%s), %s device. Validation layer: %s.\n", r->device_index, r->device, r->driver,
            r->driver_info, r->is_cpu ? "a CPU" : "a GPU",
            !r->validation_requested ? "off"
            : !r->validation_active  ? "requested, **not installed**"
                                     : "on");
    if (r->perturb_op >= 0) fprintf(f, "\n**Test switch on: %s's device outputs perturbed.**\n", op_name(r->perturb_op));
    if (r->perturb_weight[0]) fprintf(f, "\n**Test switch on: weight %s changed on the device.**\n", r->perturb_weight);
    fprintf(f, "\n");
    md_caps(r, f);
    if (r->n_cases) md_ops(r, f);
    md_model(r, f);
    md_paths(r, f);
    int32_t n_fail = 0;
    for (size_t i = 0; i < r->n_cases; i++) n_fail += !r->cases[i].pass;
    char bad[512];
    failed_ops(r, bad, sizeof bad);
    fprintf(f, "validation messages: %llu\n\n", (unsigned long long)r->validation_messages);
    fprintf(f, "summary: %s: %zu/%zu op cases within bound%s%s; %zu prompts, %zu paths; %d failure(s) in all; %.1f s\n",
            r->failed ? "FAIL" : "PASS", r->n_cases - (size_t)n_fail, r->n_cases, bad[0] ? "; failing ops: " : "", bad,
            r->n_prompts, r->n_paths, r->failed, r->seconds);
    if (ferror(f)) return rlx_errorf(RLX_ERR_IO, "validate: writing the report: %s", strerror(errno));
    return NULL;
}

/* A double as JSON: a number, or null where it is not finite (JSON has no inf or NaN). */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *json_caps(const rlx_validate_report *r) {
    json_t *a = json_array();
    for (size_t i = 0; i < r->n_caps; i++) {
        const rlx_validate_cap *c = &r->caps[i];
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:b, s:b}", "name", c->name, "have", c->have, "need",
                                           c->need, "required", c->required, "ok", c->ok));
    }
    return a;
}

static json_t *json_cases(const rlx_validate_report *r) {
    json_t *a = json_array();
    for (size_t i = 0; i < r->n_cases; i++) {
        const rlx_validate_case *c = &r->cases[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:b, s:I, s:b, s:f}", "op", op_name(c->op),
                              "type", type_name(c->wtype), "shape", c->shape, "mode", c->mode, "nmse", num(c->diff.nmse),
                              "max_abs", num(c->diff.max_abs), "bound", num(c->bound), "values", (json_int_t)c->diff.n,
                              "ids", c->diff.ids, "ids_differ", (json_int_t)c->diff.ids_differ, "pass", c->pass, "ms",
                              c->ms);
        json_object_set_new(o, "error", c->error ? json_string(c->error) : json_null());
        json_object_set_new(o, "not_yet", json_boolean(c->not_yet));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *json_ops(const rlx_validate_report *r) {
    json_t *a = json_array();
    for (size_t i = 0; i < r->n_ops; i++) {
        const rlx_validate_op_summary *s = &r->ops[i];
        json_array_append_new(a, json_pack("{s:s, s:b, s:b, s:b, s:i, s:i, s:o}", "op", op_name(s->op), "leaf",
                                           s->leaf, "selected", s->selected, "not_yet", s->not_yet, "cases", s->cases,
                                           "failed", s->failed, "worst_nmse", num(s->worst_nmse)));
    }
    return a;
}

static json_t *json_paths(const rlx_validate_report *r) {
    json_t *paths = json_array();
    for (size_t i = 0; i < r->n_paths; i++) {
        const rlx_validate_path *p = &r->paths[i];
        json_t *o = json_pack("{s:s, s:o, s:i, s:o, s:b}", "name", p->name, "max_delta", num(p->max_delta),
                              "ids_differ", p->ids_differ, "bound", num(p->bound), "pass", p->pass);
        json_object_set_new(o, "error", p->error ? json_string(p->error) : json_null());
        json_array_append_new(paths, o);
    }
    return paths;
}

static json_t *json_model(const rlx_validate_report *r) {
    if (!r->model[0]) return json_null();
    json_t *prompts = json_array();
    for (size_t i = 0; i < r->n_prompts; i++) {
        const rlx_validate_prompt *p = &r->prompts[i];
        json_t *o = json_pack("{s:s, s:i, s:o, s:o, s:o, s:i, s:i, s:i, s:i, s:b, s:o, s:b}", "name", p->name, "ids",
                              p->n_ids, "max_logit_delta", num(p->max_logit_delta), "nmse", num(p->nmse), "bound",
                              num(p->bound), "steps", p->n_steps, "diverge_step", p->diverge_step, "cpu_id", p->cpu_id,
                              "device_id", p->dev_id, "near_tie", p->near_tie, "tie_gap", num(p->tie_gap), "pass",
                              p->pass);
        json_object_set_new(o, "error", p->error ? json_string(p->error) : json_null());
        json_array_append_new(prompts, o);
    }
    json_t *m = json_pack("{s:s, s:s, s:o}", "path", r->model, "family", r->family, "prompts", prompts);
    json_object_set_new(m, "error", r->model_error ? json_string(r->model_error) : json_null());
    return m;
}

rlx_status rlx_validate_write_json(const rlx_validate_report *r, FILE *f) {
    json_t *variants = json_array(), *modes = json_array(), *failing = json_array();
    for (size_t i = 0; i < r->n_variants; i++)
        json_array_append_new(variants, json_pack("{s:s, s:s}", "name", r->variants[i].name, "chosen", r->variants[i].chosen));
    for (int m = 0; m < 2; m++)
        json_array_append_new(modes, json_pack("{s:s, s:b, s:s}", "name", m ? "mixed" : "exact", "run", r->mode_run[m],
                                               "note", r->mode_note[m]));
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].failed) json_array_append_new(failing, json_string(op_name(r->ops[i].op)));
    int32_t n_fail = 0;
    for (size_t i = 0; i < r->n_cases; i++) n_fail += !r->cases[i].pass;
    json_t *device = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:b, s:b}", "name", r->device, "driver",
                               r->driver, "driver_info", r->driver_info, "index", (int)r->device_index, "api_version",
                               (json_int_t)r->api_version, "driver_version", (json_int_t)r->driver_version, "vendor_id",
                               (json_int_t)r->vendor_id, "device_id", (json_int_t)r->device_id, "is_cpu", r->is_cpu,
                               "runnable", r->runnable);
    json_object_set_new(device, "error", r->device_error ? json_string(r->device_error) : json_null());
    json_t *root = json_pack(
        "{s:s, s:o, s:{s:b, s:b, s:I}, s:o, s:o, s:o, s:o, s:o, s:o, s:{s:b, s:I, s:I, s:i, s:o, s:f}}", "schema",
        "rlx-validate/1", "device", device, "validation_layer", "requested", r->validation_requested, "active",
        r->validation_active, "messages", (json_int_t)r->validation_messages, "capabilities", json_caps(r), "variants",
        variants, "modes", modes, "ops", json_ops(r), "cases", json_cases(r), "model", json_model(r), "summary",
        "passed", r->failed == 0, "cases", (json_int_t)r->n_cases, "cases_failed", (json_int_t)n_fail, "failures",
        r->failed, "failing_ops", failing, "seconds", r->seconds);
    json_t *t = json_object();
    json_object_set_new(t, "perturb_op", r->perturb_op >= 0 ? json_string(op_name(r->perturb_op)) : json_null());
    json_object_set_new(t, "perturb_weight", r->perturb_weight[0] ? json_string(r->perturb_weight) : json_null());
    json_object_set_new(root, "test_switches", t);
    json_object_set_new(root, "paths", json_paths(r));
    int rc = root ? json_dumpf(root, f, JSON_INDENT(1)) : -1;
    json_decref(root);
    fputc('\n', f);
    if (rc != 0 || ferror(f)) return rlx_errorf(RLX_ERR_IO, "validate: writing the JSON report failed");
    return NULL;
}
