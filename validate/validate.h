/* The backend validation harness behind `rlx validate` (docs/VALIDATION.md): on one Vulkan device,
 *  - capabilities: the device's snapshot against what the kernels need, and the variants it gets;
 *  - ops: every op of ir/ops.def (the list is generated from it), every weight type it takes, on
 *    several shapes, in both prefill precision modes, against the CPU reference backend;
 *  - model (opts.model): logits of a few prompts and a greedy continuation, device against CPU;
 *  - paths (with a model): bucketed == exact == naive, chained decode == single steps, pipeline
 *    cache cold == warm, on the device.
 * Everything lands in one report, which the caller writes as markdown or JSON. A case outside its
 * bound is a result, not an error: rlx_validate_run fails only when it cannot run at all (no such
 * device, an unreadable model). */
#ifndef RLX_VALIDATE_H
#define RLX_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rlx/status.h"
#include "runtime/vk_options.h"
#include "validate/validate_compare.h"

#define RLX_VALIDATE_MAX_TYPES 40

typedef struct rlx_validate_opts {
    rlx_vk_options vk;       /* the device and its options; coopmat is set per mode by the sweep */
    const char *ops;         /* comma-separated op names or globs (fnmatch); NULL: every op */
    uint32_t types[RLX_VALIDATE_MAX_TYPES]; /* weight types of the ops that take any; n_types 0: all */
    size_t n_types;
    bool quick;              /* one shape per op and type: a smoke sweep (the mutation test's) */
    bool no_ops;             /* skip the op sweep (a model or capability check alone) */
    bool no_paths;           /* skip the paths (the pipeline cache's, and the model's) */
    const char *model;       /* a model path (GGUF or HF directory): the model and path sections */
    int cpu_threads;         /* CPU reference threads; 0: online cores */
    /* Test-only (docs/VALIDATION.md, "Testing the harness"): the harness itself must be able to
     * fail. perturb_op >= 0 adds a small error to every device output of that op's cases after
     * read-back; perturb_weight names a weight whose first row the device's copy of the model has
     * changed. The CLI sets them only under RLX_VALIDATE_TEST=1. */
    int32_t perturb_op;      /* an rlx_op, or -1 */
    const char *perturb_weight;
} rlx_validate_opts;

/* Every section on, every op and type, no perturbation; vk from the caller. */
rlx_validate_opts rlx_validate_opts_default(void);

/* Whether op (an rlx_op) matches pattern (NULL matches every op). */
bool rlx_validate_op_selected(const char *pattern, int32_t op);
/* Checks a pattern: RLX_ERR_INVALID_ARGUMENT naming the first part that matches no op. */
rlx_status rlx_validate_ops_check(const char *pattern);
/* The weight types the kernels decode, in the sweep's order. */
size_t rlx_validate_all_types(uint32_t *types, size_t cap);
/* Parses a comma-separated list of type names (F16, q4_k, ...) into o->types, refusing a name that
 * is no type the kernels decode. */
rlx_status rlx_validate_parse_types(const char *list, rlx_validate_opts *o);

/* One capability the device has or lacks. */
typedef struct rlx_validate_cap {
    char name[48];           /* "16-bit storage" */
    char have[96];           /* what the device has */
    char need[160];          /* who needs it and what happens without it */
    bool required;           /* without it rlx cannot run on the device */
    bool ok;
} rlx_validate_cap;

/* One variant choice: which kernel or plan the device gets. */
typedef struct rlx_validate_variant {
    char name[48];
    char chosen[160];
} rlx_validate_variant;

/* One op case: the worst over its outputs and steps. */
typedef struct rlx_validate_case {
    int32_t op;              /* rlx_op */
    int32_t wtype;           /* the weight type it varies, or -1 */
    char mode[8];            /* "exact" or "mixed" */
    char shape[96];
    rlx_validate_diff diff;
    double bound;            /* on NMSE; I32 outputs must match exactly */
    bool pass;
    char *error;             /* owned: why it could not run (compile or run error), or NULL */
    double ms;
    bool not_yet;            /* the op's device kernel is a later step: pass (not a failure) when the device
                                refuses it by name (RLX_ERR_UNSUPPORTED), a failure when it compiles */
} rlx_validate_case;

typedef struct rlx_validate_op_summary {
    int32_t op;
    bool leaf;               /* a leaf of ops.def (INPUT, WEIGHT, KV_CACHE): validated as what it holds */
    bool selected;
    bool not_yet;            /* the CPU reference has it, the device not yet (its cases are not_yet ones) */
    int32_t cases, failed;
    double worst_nmse;
} rlx_validate_op_summary;

/* The model section: one prompt's logits and greedy continuation, device against CPU. */
typedef struct rlx_validate_prompt {
    char name[32];           /* "short", "long", "random ids" */
    int32_t n_ids;
    double max_logit_delta;  /* max |Δlogit| over the prompt's last position */
    double nmse;
    double bound;            /* on max |Δlogit| (the fixtures README's f16 / mixed bound) */
    int32_t n_steps;         /* greedy steps compared */
    int32_t diverge_step;    /* the first step whose ids differ, -1 when none */
    int32_t cpu_id, dev_id;  /* the ids at that step */
    bool near_tie;           /* the CPU's top two logits there are closer than twice the bound */
    double tie_gap;          /* the CPU's top-1 minus top-2 logit at that step */
    bool pass;
    char *error;             /* owned */
} rlx_validate_prompt;

/* One path equality on the device. */
typedef struct rlx_validate_path {
    char name[64];           /* "bucketed == exact", ... */
    double max_delta;        /* max |Δ| between the two (of the logits' scale for the cached paths) */
    int32_t ids_differ;      /* generated ids that differ */
    double bound;
    bool pass;
    char *error;             /* owned */
} rlx_validate_path;

typedef struct rlx_validate_report {
    /* the device */
    char device[256], driver[256], driver_info[256];
    uint32_t device_index, api_version, driver_version, vendor_id, device_id;
    bool is_cpu;
    bool runnable;           /* every required capability present and the backend created */
    char *device_error;      /* owned: why the backend could not be created on the device, or NULL */
    rlx_validate_cap caps[32];
    size_t n_caps;
    rlx_validate_variant variants[16];
    size_t n_variants;
    /* the modes: [0] exact, [1] mixed; run false with a note when the mode is the other's kernels */
    bool mode_run[2];
    char mode_note[2][160];
    /* the op sweep */
    rlx_validate_op_summary ops[64];
    size_t n_ops;
    rlx_validate_case *cases; /* owned */
    size_t n_cases, cap_cases;
    /* the model and paths */
    char model[512];         /* empty: no model section */
    char family[32];
    rlx_validate_prompt prompts[4];
    size_t n_prompts;
    rlx_validate_path paths[8];
    size_t n_paths;
    char *model_error;       /* owned: the model could not be run at all */
    /* the validation layer */
    bool validation_requested, validation_active;
    uint64_t validation_messages;
    /* test switches in effect (printed so no report hides them) */
    int32_t perturb_op;
    char perturb_weight[128];
    double seconds;
    int32_t failed;          /* failed cases + prompts + paths + capability and layer failures */
} rlx_validate_report;

/* Runs every section o asks for. *out is set on success (the report, pass or fail); an error means
 * the harness could not run (no device, a model that does not open). */
rlx_status rlx_validate_run(const rlx_validate_opts *o, rlx_validate_report **out);
bool rlx_validate_passed(const rlx_validate_report *r);
void rlx_validate_report_free(rlx_validate_report *r); /* NULL is fine */

/* Writers: markdown (one line per case, then a summary line) and JSON (schema rlx-validate/1,
 * docs/VALIDATION.md). RLX_ERR_IO when f cannot be written. */
rlx_status rlx_validate_write_md(const rlx_validate_report *r, FILE *f);
rlx_status rlx_validate_write_json(const rlx_validate_report *r, FILE *f);

#endif
