/* The op sweep's mechanics: building a case, running it on the device and on the CPU reference,
 * comparing every output after every step, and the loop over modes and ops. The cases themselves
 * are in validate_cases.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loader/core/dtype.h"
#include "runtime/vk_backend.h"
#include "validate/validate_internal.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void set_err(vl_case *c, rlx_status s) {
    if (!s) return;
    if (c->err)
        rlx_status_free(s);
    else
        c->err = s;
}

void vl_case_begin(vl_sweep *sw, vl_case *c, int32_t wtype, int32_t n_tokens) {
    memset(c, 0, sizeof *c);
    c->sw = sw;
    c->wtype = wtype;
    c->steps[0][0] = 0;
    c->steps[0][1] = n_tokens;
    c->n_steps = 1;
    c->token_major = true;
    set_err(c, rlx_graph_create(&c->g));
}

rlx_shape vl_shape(int32_t rank, int64_t d0, int64_t d1, int64_t d2) {
    int64_t d[3] = {d0, d1, d2};
    return rlx_shape_make(rank, d);
}

/* Room for one more input (its name in name), or an error recorded on c. */
static bool next_input(vl_case *c, char name[16]) {
    if (c->nin >= VL_MAX_INPUTS) {
        set_err(c, rlx_errorf(RLX_ERR_INTERNAL, "validate: a case with more than %d inputs", VL_MAX_INPUTS));
        return false;
    }
    snprintf(name, 16, "in%d", c->nin);
    return c->g != NULL;
}

rlx_node vl_input_f32(vl_case *c, rlx_shape s, float a) {
    char name[16];
    if (!next_input(c, name)) return RLX_NO_NODE;
    int64_t n = rlx_shape_numel(&s);
    float *x = n > 0 ? malloc((size_t)n * sizeof *x) : NULL;
    if (!x) {
        set_err(c, rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: an input of %lld floats", (long long)n));
        return RLX_NO_NODE;
    }
    for (int64_t i = 0; i < n; i++) x[i] = rlx_validate_rng_uniform(&c->sw->rng, -a, a);
    c->in[c->nin++] = x;
    return rlx_input(c->g, name, RLX_DTYPE_F32, s);
}

rlx_node vl_input_ids(vl_case *c, int64_t n, int32_t lo, int32_t hi) {
    char name[16];
    if (!next_input(c, name)) return RLX_NO_NODE;
    int32_t *x = n > 0 ? malloc((size_t)n * sizeof *x) : NULL;
    if (!x) {
        set_err(c, rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: %lld ids", (long long)n));
        return RLX_NO_NODE;
    }
    for (int64_t i = 0; i < n; i++) x[i] = rlx_validate_rng_int(&c->sw->rng, lo, hi);
    c->in[c->nin++] = x;
    return rlx_input(c->g, name, RLX_DTYPE_I32, vl_shape(1, n, 0, 0));
}

rlx_node vl_weight(vl_case *c, uint32_t type, int32_t rank, int64_t d0, int64_t d1, int64_t d2) {
    if (c->nw >= VL_MAX_WEIGHTS || !c->g) {
        set_err(c, rlx_errorf(RLX_ERR_INTERNAL, "validate: a case with more than %d weights", VL_MAX_WEIGHTS));
        return RLX_NO_NODE;
    }
    size_t k = c->nw;
    snprintf(c->wname[k], sizeof c->wname[k], "w%zu", k);
    /* stored ne is the IR shape reversed (ggml order) */
    uint64_t ne0 = (uint64_t)(rank == 1 ? d0 : rank == 2 ? d1 : d2);
    uint64_t ne1 = (uint64_t)(rank == 1 ? 1 : rank == 2 ? d0 : d1), ne2 = (uint64_t)(rank == 3 ? d0 : 1);
    rlx_status s = rlx_validate_weight_random(&c->sw->rng, c->wname[k], type, (uint32_t)rank, ne0, ne1, ne2, &c->w[k]);
    if (s) {
        set_err(c, s);
        return RLX_NO_NODE;
    }
    c->nw++;
    return rlx_weight_node(c->g, c->wname[k], type, vl_shape(rank, d0, d1, d2));
}

void vl_output(vl_case *c, rlx_node n, const char *name) {
    if (c->g) rlx_graph_mark_output(c->g, n, name);
}

static void case_free(vl_case *c) {
    rlx_graph_destroy(c->g);
    for (size_t i = 0; i < c->nw; i++) rlx_validate_weight_free(&c->w[i]);
    for (int i = 0; i < c->nin; i++) free(c->in[i]);
    rlx_status_free(c->err);
}

/* One backend's session, program and output buffers for a case. */
typedef struct side {
    rlx_backend *b;
    rlx_session *s;
    rlx_program *p;
    void *out[8];
    int32_t n_out;
} side;

static rlx_status side_open(side *sd, rlx_backend *b, const vl_case *c) {
    memset(sd, 0, sizeof *sd);
    sd->b = b;
    sd->n_out = rlx_graph_n_outputs(c->g);
    if (sd->n_out > 8) return rlx_errorf(RLX_ERR_INTERNAL, "validate: a case with %d outputs (at most 8)", sd->n_out);
    RLX_TRY(b->ops->session_create(b, c->w, c->nw, &c->kv, &sd->s));
    RLX_TRY(b->ops->compile(sd->s, c->g, &sd->p));
    for (int32_t o = 0; o < sd->n_out; o++) {
        const rlx_node_info *n = rlx_graph_node(c->g, rlx_graph_output_node(c->g, o));
        int64_t numel = rlx_shape_numel(&n->shape);
        sd->out[o] = calloc(numel > 0 ? (size_t)numel : 1, 4);
        if (!sd->out[o]) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: output %d of %lld values", o, (long long)numel);
    }
    return NULL;
}

static void side_close(side *sd) {
    if (sd->p) sd->b->ops->program_destroy(sd->p);
    if (sd->s) sd->b->ops->session_destroy(sd->s);
    for (int32_t o = 0; o < sd->n_out && o < 8; o++) free(sd->out[o]);
}

static rlx_status side_run(side *sd, const vl_case *c, int k) {
    rlx_run_args a = {c->steps[k][0], c->steps[k][1], (const void *const *)c->in, (void *const *)sd->out, NULL};
    return sd->b->ops->run(sd->p, &a);
}

/* The test switch (rlx_validate_opts.perturb_op): a small error on every compared value, 1% of
 * its size plus 1% of the output's RMS (NMSE about 1e-4, above every bound), or one id off by one. */
static void perturb(void *out, bool ids, int64_t count) {
    if (count <= 0) return;
    if (ids) {
        ((int32_t *)out)[0] += 1;
        return;
    }
    float *v = out;
    double ss = 0.0;
    for (int64_t i = 0; i < count; i++) ss += (double)v[i] * v[i];
    float rms = (float)sqrt(ss / (double)count);
    for (int64_t i = 0; i < count; i++) v[i] += 0.01f * (fabsf(v[i]) + rms + 1e-3f);
}

/* Runs every step on backends a (the device: the test switch applies) and b, and compares each
 * output's valid rows after each. */
static rlx_status run_both(vl_case *c, rlx_backend *a, rlx_backend *b, rlx_validate_diff *worst) {
    side v, cpu;
    rlx_status s = side_open(&v, a, c);
    if (!s) s = side_open(&cpu, b, c);
    else memset(&cpu, 0, sizeof cpu);
    int64_t static_rows = rlx_graph_n_inputs(c->g) ? rlx_graph_node(c->g, rlx_graph_input_node(c->g, 0))->shape.dim[0] : 1;
    bool first = true;
    for (int k = 0; !s && k < c->n_steps; k++) {
        s = side_run(&v, c, k);
        if (!s) s = side_run(&cpu, c, k);
        for (int32_t o = 0; !s && o < v.n_out; o++) {
            const rlx_node_info *n = rlx_graph_node(c->g, rlx_graph_output_node(c->g, o));
            int64_t rows = c->token_major && n->shape.dim[0] == static_rows ? c->steps[k][1] : n->shape.dim[0];
            int64_t count = rlx_shape_numel(&n->shape) / n->shape.dim[0] * rows;
            bool ids = n->dtype == RLX_DTYPE_I32;
            if (c->sw->o->perturb_op == (int32_t)c->sw->op) perturb(v.out[o], ids, count);
            rlx_validate_diff d = ids ? rlx_validate_diff_i32(v.out[o], cpu.out[o], count)
                                      : rlx_validate_diff_f32(v.out[o], cpu.out[o], count);
            *worst = first ? d : rlx_validate_diff_merge(*worst, d);
            first = false;
        }
    }
    side_close(&v);
    if (cpu.b) side_close(&cpu);
    return s;
}

/* The bound of the sweep's op in its mode (validate_compare.h). */
static double bound_of(const vl_sweep *sw) {
    return sw->mode == 1 && sw->op == RLX_OP_MATMUL ? RLX_VALIDATE_BOUND_MIXED : RLX_VALIDATE_BOUND_F32;
}

void vl_case_finish(vl_case *c) {
    vl_sweep *sw = c->sw;
    rlx_validate_case *rc = vl_report_case(sw->r);
    if (!rc) {
        case_free(c);
        sw->r->failed++; /* a case that could not be recorded still fails the run */
        return;
    }
    rc->op = (int32_t)sw->op;
    rc->wtype = c->wtype;
    snprintf(rc->mode, sizeof rc->mode, "%s", sw->mode ? "mixed" : "exact");
    snprintf(rc->shape, sizeof rc->shape, "%s", c->shape);
    rc->bound = bound_of(sw);
    double t0 = now_ms();
    rlx_status s = c->err;
    c->err = NULL;
    if (!s) s = run_both(c, sw->vk, sw->cpu, &rc->diff);
    rc->ms = now_ms() - t0;
    if (s) {
        const char *m = rlx_status_message(s);
        rc->error = strdup(m ? m : "unknown error");
        rlx_status_free(s);
    }
    rc->pass = !rc->error && rc->diff.n > 0 && rlx_validate_diff_within(&rc->diff, rc->bound);
    case_free(c);
}

void vl_case_not_yet(vl_case *c) {
    vl_sweep *sw = c->sw;
    rlx_validate_case *rc = vl_report_case(sw->r);
    if (!rc) {
        case_free(c);
        sw->r->failed++;
        return;
    }
    rc->op = (int32_t)sw->op;
    rc->wtype = c->wtype;
    rc->not_yet = true;
    snprintf(rc->mode, sizeof rc->mode, "%s", sw->mode ? "mixed" : "exact");
    rlx_status s = c->err;
    c->err = NULL;
    side v;
    memset(&v, 0, sizeof v);
    if (!s) {
        s = side_open(&v, sw->vk, c);
        side_close(&v);
    }
    const char *m = s ? rlx_status_message(s) : NULL;
    bool refused = s && rlx_status_code(s) == RLX_ERR_UNSUPPORTED && m && strstr(m, rlx_op_name(sw->op));
    snprintf(rc->shape, sizeof rc->shape, "%s", c->shape);
    if (!refused)
        rc->error = strdup(s ? (m ? m : "unknown error")
                             : "compiles on the device, but the sweep marks it not yet: give it parity cases");
    rc->pass = refused;
    rlx_status_free(s);
    case_free(c);
}

rlx_status vl_case_compare(vl_case *c, rlx_backend *a, rlx_backend *b, rlx_validate_diff *d) {
    rlx_status s = c->err;
    c->err = NULL;
    memset(d, 0, sizeof *d);
    if (!s) s = run_both(c, a, b, d);
    case_free(c);
    return s;
}

bool vl_type_selected(const vl_sweep *sw, uint32_t t) {
    if (sw->o->n_types == 0) return true;
    for (size_t i = 0; i < sw->o->n_types; i++)
        if (sw->o->types[i] == t) return true;
    return false;
}

int64_t vl_block_of(uint32_t type) { return rlx_dtype_get(type)->block_size; }

rlx_validate_case *vl_report_case(rlx_validate_report *r) {
    if (r->n_cases == r->cap_cases) {
        size_t cap = r->cap_cases ? 2 * r->cap_cases : 256;
        rlx_validate_case *p = realloc(r->cases, cap * sizeof *p);
        if (!p) return NULL;
        r->cases = p;
        r->cap_cases = cap;
    }
    rlx_validate_case *c = &r->cases[r->n_cases++];
    memset(c, 0, sizeof *c);
    return c;
}

void vl_ops_section(vl_sweep *sw) {
    rlx_vk_options vo = sw->o->vk;
    for (int mode = 0; mode < 2; mode++) {
        if (!sw->r->mode_run[mode]) continue;
        sw->mode = mode;
        vo.coopmat = mode ? RLX_VK_COOPMAT_MIXED : RLX_VK_COOPMAT_EXACT;
        rlx_status s = rlx_vk_backend_set_options(sw->vk, &vo);
        for (int op = 0; op < RLX_OP_COUNT; op++) {
            if (!rlx_validate_op_selected(sw->o->ops, op)) continue;
            sw->op = (rlx_op)op;
            if (s) { /* every case of the mode fails with the reason */
                rlx_validate_case *rc = vl_report_case(sw->r);
                if (!rc) continue;
                rc->op = op;
                rc->wtype = -1;
                snprintf(rc->mode, sizeof rc->mode, "%s", mode ? "mixed" : "exact");
                snprintf(rc->shape, sizeof rc->shape, "(mode not set)");
                rc->error = strdup(rlx_status_message(s));
                continue;
            }
            vl_cases_of[op](sw);
        }
        rlx_status_free(s);
    }
}
