/* The harness's own pieces: the op sweep's cases (validate_ops.c, validate_cases.c), the
 * capability section (validate_caps.c), the model and path sections (validate_model.c). */
#ifndef RLX_VALIDATE_INTERNAL_H
#define RLX_VALIDATE_INTERNAL_H

#include "ir/backend.h"
#include "validate/validate.h"
#include "validate/validate_data.h"

#define VL_MAX_WEIGHTS 12
#define VL_MAX_INPUTS 8
#define VL_MAX_STEPS 4

/* The sweep's state: both backends, the report, the mode being run. */
typedef struct vl_sweep {
    const rlx_validate_opts *o;
    rlx_validate_report *r;
    rlx_backend *cpu, *vk;
    rlx_validate_rng rng;
    int mode;               /* 0 exact, 1 mixed */
    rlx_op op;              /* the op whose cases are being built */
} vl_sweep;

/* One case: a graph with the weights and inputs it owns, and the runs to compare. */
typedef struct vl_case {
    vl_sweep *sw;
    rlx_graph *g;
    rlx_weight w[VL_MAX_WEIGHTS];
    char wname[VL_MAX_WEIGHTS][8];
    size_t nw;
    void *in[VL_MAX_INPUTS];
    int nin;
    rlx_state_spec kv;
    int32_t steps[VL_MAX_STEPS][2]; /* n_past, n_tokens */
    int n_steps;
    bool token_major;       /* outputs of the graph's row count compare only the valid rows */
    int32_t wtype;          /* the weight type the case varies, or -1 */
    char shape[96];
    rlx_status err;         /* the first error building it (sticky) */
} vl_case;

/* Begins a case of sw->op: empty graph, one step of n_tokens rows from position 0. */
void vl_case_begin(vl_sweep *sw, vl_case *c, int32_t wtype, int32_t n_tokens);
rlx_shape vl_shape(int32_t rank, int64_t d0, int64_t d1, int64_t d2);
rlx_node vl_input_f32(vl_case *c, rlx_shape s, float a);          /* uniform in [-a, a] */
rlx_node vl_input_ids(vl_case *c, int64_t n, int32_t lo, int32_t hi);
/* A random weight with IR shape [d0, (d1, (d2))] (validate_data.h) */
rlx_node vl_weight(vl_case *c, uint32_t type, int32_t rank, int64_t d0, int64_t d1, int64_t d2);
void vl_output(vl_case *c, rlx_node n, const char *name);
/* Runs c on both backends, compares, records one report case, and frees c. */
void vl_case_finish(vl_case *c);
/* For an op whose device kernel is a later step: compiles c on the device only, records one
 * not_yet case (validate.h) that passes when the device refuses it with RLX_ERR_UNSUPPORTED naming
 * the op, and frees c. */
void vl_case_not_yet(vl_case *c);
/* Runs c on backends a and b (instead of the sweep's), compares into *d, and frees c. */
rlx_status vl_case_compare(vl_case *c, rlx_backend *a, rlx_backend *b, rlx_validate_diff *d);

/* Whether the sweep takes weight type t (the types filter). */
bool vl_type_selected(const vl_sweep *sw, uint32_t t);
int64_t vl_block_of(uint32_t type);

/* The cases of one op (validate_cases.c), one function per op of ops.def. */
typedef void (*vl_op_cases)(vl_sweep *sw);
extern const vl_op_cases vl_cases_of[RLX_OP_COUNT];

/* A new report case (zeroed), or NULL when out of memory. */
rlx_validate_case *vl_report_case(rlx_validate_report *r);

/* The sections. */
void vl_caps_section(rlx_validate_report *r, rlx_backend *vk, const rlx_validate_opts *o);
void vl_ops_section(vl_sweep *sw);
void vl_model_section(rlx_validate_report *r, const rlx_validate_opts *o);
/* The pipeline cache path (validate_paths.c): a layer-like graph on sw->vk against a second
 * backend of the same device without the pipeline cache, bit for bit. */
void vl_pipeline_cache_path(vl_sweep *sw);

/* The test switch opts.perturb_weight (validate_perturb.c): *out (owned) is the path of a copy of
 * the GGUF file src, in a directory of its own under /tmp, whose weight `name` has 1 added to each
 * element of its first row. vl_perturbed_copy_remove deletes the copy and its directory and frees
 * the path (NULL is fine). */
rlx_status vl_perturbed_copy(const char *src, const char *name, char **out);
void vl_perturbed_copy_remove(char *path);

#endif
