/* The Vulkan op tests' parity harness (test_vk_parity.h). */
#include "test_vk_parity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dtype.h"
#include "runtime/vk_internal.h" /* white box: the dispatches of a program */
#include "test_util.h"

uint32_t g_kv_dtype = RLX_DTYPE_F32;
rlx_backend *g_cpu, *g_vk;
rlx_vk_options g_opts;
vkt_rng g_rng = {0x243F6A8885A308D3ull};
double g_worst[RLX_OP_COUNT];
int g_cases[RLX_OP_COUNT];

bool vkt_side_open(rlx_backend *b, vkt_graph *t, vkt_side *sd, int32_t n_out) {
    memset(sd, 0, sizeof *sd);
    rlx_state_spec kv = t->kv;
    if (b != g_cpu) kv.kv_dtype = g_kv_dtype;
    if (!T_OK(b->ops->session_create(b, t->w, t->nw, &kv, &sd->s))) return false;
    if (!T_OK(b->ops->compile(sd->s, t->g, &sd->p))) return false;
    for (int32_t o = 0; o < n_out; o++) {
        const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_output_node(t->g, o));
        sd->out[o] = calloc((size_t)rlx_shape_numel(&n->shape), 4);
    }
    return true;
}

void vkt_side_close(rlx_backend *b, vkt_side *sd, int32_t n_out) {
    if (sd->p) b->ops->program_destroy(sd->p);
    if (sd->s) b->ops->session_destroy(sd->s);
    for (int32_t o = 0; o < n_out; o++) free(sd->out[o]);
}

rlx_status vkt_side_run(rlx_backend *b, vkt_graph *t, vkt_side *sd, vkt_step st) {
    rlx_run_args a = {st.n_past, st.n_tokens, (const void *const *)t->in, (void *const *)sd->out, NULL};
    return b->ops->run(sd->p, &a);
}

/* Compares output o over its first `rows` rows of dim 0. */
static void compare_output(rlx_op op, const char *label, vkt_graph *t, int32_t o, const vkt_side *v,
                           const vkt_side *c, int64_t rows, double tol) {
    const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_output_node(t->g, o));
    int64_t numel = rlx_shape_numel(&n->shape), count = numel / n->shape.dim[0] * rows;
    g_cases[op]++;
    if (n->dtype == RLX_DTYPE_I32) {
        rlx_validate_diff d = rlx_validate_diff_i32(v->out[o], c->out[o], count);
        T_CHECK(rlx_validate_diff_within(&d, 0.0), "%s %s output %d: %lld of %lld ids differ", rlx_op_name(op), label,
                o, (long long)d.ids_differ, (long long)count);
        printf("  %-10s %-44s out %d: %lld ids, %lld differ\n", rlx_op_name(op), label, o, (long long)count,
               (long long)d.ids_differ);
        return;
    }
    if (g_kv_dtype == RLX_DTYPE_F16) {
        bool cache = n->op == RLX_OP_KV_CACHE || n->op == RLX_OP_KV_WRITE;
        double f16 = cache ? TOL_KV_F16_CACHE : TOL_KV_F16;
        if (tol < f16) tol = f16;
    }
    rlx_validate_diff d = rlx_validate_diff_f32(v->out[o], c->out[o], count);
    if (g_kv_dtype == RLX_DTYPE_F32 && d.nmse > g_worst[op]) g_worst[op] = d.nmse; /* the f32 bound's summary */
    printf("  %-10s %-44s out %d: nmse %.2e max|d| %.2e (tol %.0e)\n", rlx_op_name(op), label, o, d.nmse, d.max_abs,
           tol);
    T_CHECK(rlx_validate_diff_within(&d, tol), "%s %s output %d: nmse %.3e > %.0e (max |d| %.3e)", rlx_op_name(op),
            label, o, d.nmse, tol, d.max_abs);
}

/* Compiles t on both backends, runs the steps, compares every output after each. Outputs whose
 * dim 0 is the graph's row count compare only the first n_tokens rows when token_major. With
 * fresh, every f32 input is drawn afresh (uniform in [-1, 1]) before each step, so a program that
 * kept state between runs (matvec.comp's counters) and left the previous run's result in place
 * fails the step after. */
static void compare_runs(rlx_op op, const char *label, vkt_graph *t, const vkt_step *steps, int n_steps,
                         bool token_major, double tol, bool fresh) {
    int32_t n_out = rlx_graph_n_outputs(t->g);
    vkt_side v, c;
    bool ok_vk = vkt_side_open(g_vk, t, &v, n_out), ok_cpu = vkt_side_open(g_cpu, t, &c, n_out); /* both, always */
    bool ok = ok_vk && ok_cpu;
    int64_t static_rows = rlx_graph_n_inputs(t->g) ? rlx_graph_node(t->g, rlx_graph_input_node(t->g, 0))->shape.dim[0]
                                                    : 1;
    for (int k = 0; ok && k < n_steps; k++) {
        for (int32_t i = 0; fresh && i < rlx_graph_n_inputs(t->g); i++) {
            const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_input_node(t->g, i));
            if (n->dtype != RLX_DTYPE_F32) continue;
            float *x = t->in[i];
            for (int64_t e = 0; e < rlx_shape_numel(&n->shape); e++) x[e] = vkt_uniform(&g_rng, -1, 1);
        }
        if (!T_OK(vkt_side_run(g_vk, t, &v, steps[k])) || !T_OK(vkt_side_run(g_cpu, t, &c, steps[k]))) break;
        for (int32_t o = 0; o < n_out; o++) {
            const rlx_node_info *n = rlx_graph_node(t->g, rlx_graph_output_node(t->g, o));
            int64_t rows = token_major && n->shape.dim[0] == static_rows ? steps[k].n_tokens : n->shape.dim[0];
            compare_output(op, label, t, o, &v, &c, rows, tol);
        }
    }
    vkt_side_close(g_vk, &v, n_out);
    vkt_side_close(g_cpu, &c, n_out);
}

void vkt_compare(rlx_op op, const char *label, vkt_graph *t, const vkt_step *steps, int n_steps, bool token_major,
                 double tol) {
    compare_runs(op, label, t, steps, n_steps, token_major, tol, false);
}

void vkt_compare_fresh(rlx_op op, const char *label, vkt_graph *t, const vkt_step *steps, int n_steps) {
    compare_runs(op, label, t, steps, n_steps, true, TOL_F32, true);
}

void vkt_compare1(rlx_op op, const char *label, vkt_graph *t, int32_t n_tokens) {
    vkt_step st = {0, n_tokens};
    vkt_compare(op, label, t, &st, 1, true, TOL_F32);
}

void vkt_expect_run_error(vkt_graph *t, vkt_step st, rlx_code code, const char *needle) {
    int32_t n_out = rlx_graph_n_outputs(t->g);
    vkt_side v, c;
    bool ok_vk = vkt_side_open(g_vk, t, &v, n_out), ok_cpu = vkt_side_open(g_cpu, t, &c, n_out); /* both, always */
    if (ok_vk && ok_cpu) {
        T_ERR(vkt_side_run(g_vk, t, &v, st), code, needle);
        T_ERR(vkt_side_run(g_cpu, t, &c, st), code, needle);
    }
    vkt_side_close(g_vk, &v, n_out);
    vkt_side_close(g_cpu, &c, n_out);
}

/* How many of t's Vulkan program's dispatches `match` accepts. */
static size_t count_matching(vkt_graph *t, bool (*match)(const vk_dispatch *d, rlx_vk_kernel k), rlx_vk_kernel k) {
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    size_t n = 0;
    rlx_state_spec kv = t->kv;
    kv.kv_dtype = g_kv_dtype;
    if (T_OK(g_vk->ops->session_create(g_vk, t->w, t->nw, &kv, &s)) && T_OK(g_vk->ops->compile(s, t->g, &p)))
        for (size_t i = 0; i < p->run.n; i++) n += match(&p->run.items[i], k);
    if (p) g_vk->ops->program_destroy(p);
    if (s) g_vk->ops->session_destroy(s);
    return n;
}

/* The kernel that does k's work on F16 pools (shaders/kernels.def), or k. */
static rlx_vk_kernel f16_twin(rlx_vk_kernel k) {
    switch (k) {
    case RLX_VK_KERNEL_kv_write: return RLX_VK_KERNEL_kv_write_f16;
    case RLX_VK_KERNEL_rope: return RLX_VK_KERNEL_rope_f16;
    case RLX_VK_KERNEL_rms_norm: return RLX_VK_KERNEL_rms_norm_f16;
    case RLX_VK_KERNEL_attention: return RLX_VK_KERNEL_attention_f16;
    case RLX_VK_KERNEL_attention_step: return RLX_VK_KERNEL_attention_step_f16;
    case RLX_VK_KERNEL_attention_step_fixed: return RLX_VK_KERNEL_attention_step_fixed_f16;
    case RLX_VK_KERNEL_attention_prefill: return RLX_VK_KERNEL_attention_prefill_f16;
    default: return k;
    }
}

/* Kernel k or, with F16 pools, its twin. */
static bool of_kernel(const vk_dispatch *d, rlx_vk_kernel k) {
    return d->pipe->kernel == k || (g_kv_dtype == RLX_DTYPE_F16 && d->pipe->kernel == f16_twin(k));
}

/* Kernel k itself, not its twin. */
static bool of_kernel_only(const vk_dispatch *d, rlx_vk_kernel k) { return d->pipe->kernel == k; }

/* A matvec that reads a decode attention's caches into L2 (matvec.comp WARM: bindings 9 and 10 read). */
static bool warming(const vk_dispatch *d, rlx_vk_kernel k) {
    (void)k;
    bool mv = d->pipe->kernel == RLX_VK_KERNEL_matvec || d->pipe->kernel == RLX_VK_KERNEL_matvec_stream;
    return mv && (d->reads & 0x600u) == 0x600u;
}

size_t vkt_dispatch_count(vkt_graph *t, rlx_vk_kernel k) { return count_matching(t, of_kernel, k); }

size_t vkt_dispatch_count_exact(vkt_graph *t, rlx_vk_kernel k) { return count_matching(t, of_kernel_only, k); }

bool vkt_dispatches(vkt_graph *t, rlx_vk_kernel k) { return vkt_dispatch_count(t, k) > 0; }

size_t vkt_warm_count(vkt_graph *t) { return count_matching(t, warming, RLX_VK_KERNEL_matvec); }

bool vkt_parity_open(void) {
    /* f32 everywhere (test_vk_ops.c's header): prefill matmuls on cooperative matrices in their
     * f32-accurate mode, unless the caller chose one */
    g_opts = vkt_options();
    if (g_opts.coopmat == RLX_VK_COOPMAT_DEFAULT) g_opts.coopmat = RLX_VK_COOPMAT_EXACT;
    g_vk = vkt_backend_with(&g_opts);
    return T_OK(rlx_backend_cpu_create(2, &g_cpu));
}

void vkt_parity_close(void) {
    rlx_backend_destroy(g_vk);
    rlx_backend_destroy(g_cpu);
    vkt_check_validation();
}

void vkt_parity_print_worst(void) {
    printf("worst NMSE per op (bound %.0e):\n", TOL_F32);
    for (int op = 0; op < RLX_OP_COUNT; op++)
        printf("  %-10s %.2e over %d outputs\n", rlx_op_name((rlx_op)op), g_worst[op], g_cases[op]);
}
