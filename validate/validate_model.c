/* The model and path sections (opts.model): the same file on the CPU reference and on the device.
 *  - Prompts (short, long, random ids): the last position's logits, max |Δlogit| against the
 *    fixtures README's bound for f16 / mixed compute, 3e-2 (the device's defaults: F16 K/V, f16
 *    operands in prefill matmuls where it has cooperative matrices); then a greedy continuation,
 *    whose ids must match up to the first step where the CPU's top two logits are closer than
 *    twice that bound (a near-tie: past it, both answers are right).
 *  - Paths, on the device with F32 K/V: bucketed == exact == naive over teacher-forced decode
 *    steps (tests/runners/test_path_parity.c's property: 1e-5 of the logits' scale where every
 *    path is f32; the mixed bound where prefill takes f16 operands, since the naive path prefills
 *    what the others decode), and chained decode (8 steps ahead) == one step at a time (ids).
 * The test switch opts.perturb_weight gives the device a copy of the file with one weight row
 * changed (validate_perturb.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlx/runner.h"
#include "runtime/vk_backend.h"
#include "validate/validate_internal.h"

#define MODEL_BOUND 3e-2  /* fixtures README: f16 / mixed compute, max |Δlogit| */
#define PATH_BOUND_F32 1e-5 /* of max(1, max|logit|): f32 paths that sum in other orders */
#define N_GREEDY 16
#define N_PATH_STEPS 8

static char *dup_status(rlx_status s) {
    const char *m = rlx_status_message(s);
    char *d = strdup(m ? m : "unknown error");
    rlx_status_free(s);
    return d;
}

static void diff_logits(const float *a, const float *b, int64_t n, double *max_abs, double *nmse) {
    rlx_validate_diff d = rlx_validate_diff_f32(a, b, n);
    *max_abs = d.max_abs;
    *nmse = d.nmse;
    for (int64_t i = 0; i < n; i++) /* a NaN on one side only is as far off as it gets */
        if (isfinite(a[i]) != isfinite(b[i])) *max_abs = INFINITY;
}

/* The top-1 minus top-2 logit of v. */
static double top2_gap(const float *v, int32_t n) {
    double t1 = -INFINITY, t2 = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        if (v[i] > t1) {
            t2 = t1;
            t1 = v[i];
        } else if (v[i] > t2) {
            t2 = v[i];
        }
    }
    return t1 - t2;
}

typedef struct model_pair {
    rlx_runner *cpu, *dev;
    int32_t vocab, n_ctx;
    float *lc, *ld; /* vocab floats each */
} model_pair;

/* One prompt: logits, greedy continuation, the first divergence and whether it is a near-tie. */
static void prompt_check(model_pair *m, rlx_validate_prompt *p, const int32_t *ids, int32_t n) {
    p->n_ids = n;
    p->bound = MODEL_BOUND;
    p->diverge_step = -1;
    p->cpu_id = p->dev_id = -1;
    rlx_status s = rlx_runner_predict_logits(m->cpu, ids, n, m->lc);
    if (!s) s = rlx_runner_predict_logits(m->dev, ids, n, m->ld);
    if (s) {
        p->error = dup_status(s);
        return;
    }
    diff_logits(m->ld, m->lc, m->vocab, &p->max_logit_delta, &p->nmse);
    int32_t n_new = N_GREEDY < m->n_ctx - n ? N_GREEDY : m->n_ctx - n;
    int32_t gc[N_GREEDY], gd[N_GREEDY], nc = 0, nd = 0;
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    s = rlx_runner_generate(m->cpu, ids, n, n_new, &greedy, NULL, NULL, gc, &nc);
    if (!s) s = rlx_runner_generate(m->dev, ids, n, n_new, &greedy, NULL, NULL, gd, &nd);
    if (s) {
        p->error = dup_status(s);
        return;
    }
    p->n_steps = nc < nd ? nc : nd;
    for (int32_t k = 0; k < p->n_steps && p->diverge_step < 0; k++)
        if (gc[k] != gd[k]) p->diverge_step = k;
    if (p->diverge_step < 0 && nc != nd) p->diverge_step = p->n_steps; /* one stopped early */
    if (p->diverge_step >= 0) {
        int32_t k = p->diverge_step, len = n + k;
        p->cpu_id = k < nc ? gc[k] : -1;
        p->dev_id = k < nd ? gd[k] : -1;
        int32_t *seq = malloc((size_t)len * sizeof *seq);
        if (!seq) {
            p->error = strdup("out of memory");
            return;
        }
        memcpy(seq, ids, (size_t)n * sizeof *seq);
        memcpy(seq + n, gc, (size_t)k * sizeof *seq);
        s = rlx_runner_predict_logits(m->cpu, seq, len, m->lc);
        free(seq);
        if (s) {
            p->error = dup_status(s);
            return;
        }
        p->tie_gap = top2_gap(m->lc, m->vocab);
        p->near_tie = p->tie_gap < 2 * MODEL_BOUND;
    }
    p->pass = p->max_logit_delta <= MODEL_BOUND && (p->diverge_step < 0 || p->near_tie);
}

static rlx_status open_runner(const char *path, const char *backend, const rlx_validate_opts *o, rlx_kv_type kv,
                              rlx_runner **out) {
    rlx_runner_opts ro = rlx_runner_opts_default();
    ro.backend = backend;
    ro.device = strcmp(backend, "vulkan") == 0 ? o->vk.device : NULL;
    ro.n_threads = o->cpu_threads;
    ro.kv_type = kv;
    return rlx_runner_open(path, &ro, out);
}

/* The prompts: a short one, a long one (half the context, at most 200), random ids. */
static void prompts_section(rlx_validate_report *r, model_pair *m) {
    rlx_validate_rng rng = {0x6A09E667F3BCC909ull};
    int32_t n_long = m->n_ctx / 2 < 200 ? m->n_ctx / 2 : 200;
    const struct {
        const char *name;
        int32_t n;
        int kind;
    } ps[3] = {{"short", 5, 0}, {"long", n_long, 1}, {"random ids", 48 < m->n_ctx / 2 ? 48 : m->n_ctx / 2, 2}};
    for (int i = 0; i < 3; i++) {
        rlx_validate_prompt *p = &r->prompts[r->n_prompts++];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", ps[i].name);
        int32_t n = ps[i].n < 1 ? 1 : ps[i].n;
        int32_t *ids = malloc((size_t)n * sizeof *ids);
        if (!ids) {
            p->error = strdup("out of memory");
            continue;
        }
        for (int32_t k = 0; k < n; k++) /* deterministic spreads over the vocabulary, then random ids */
            ids[k] = ps[i].kind == 2 ? rlx_validate_rng_int(&rng, 0, m->vocab - 1)
                     : ps[i].kind == 1 ? (int32_t)(((int64_t)k * k * 31 + 7) % m->vocab)
                                       : (int32_t)(((int64_t)k * 7919 + 1) % m->vocab);
        prompt_check(m, p, ids, n);
        free(ids);
    }
}

static rlx_validate_path *new_path(rlx_validate_report *r, const char *name, double bound) {
    rlx_validate_path *p = &r->paths[r->n_paths++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->bound = bound;
    return p;
}

/* Bucketed == exact == naive: teacher-forced steps over the CPU's greedy ids of the short prompt;
 * the logits at each step of the bucketed and exact runners (prefill, then decode steps) against
 * the naive runner's no-cache forward of the growing sequence (a recurrent model: its one-shot
 * prefill). */
static void paths_cached(rlx_validate_report *r, const rlx_validate_opts *o, const char *path, model_pair *m,
                         double bound) {
    rlx_validate_path *pe = new_path(r, "bucketed == exact (decode steps)", bound);
    rlx_validate_path *pn = new_path(r, "bucketed == naive (no-cache forward)", bound);
    rlx_runner *rb = NULL, *rx = NULL, *rn = NULL;
    rlx_runner_opts ro = rlx_runner_opts_default();
    rlx_status s = open_runner(path, "vulkan", o, RLX_KV_TYPE_F32, &rb);
    if (!s) {
        ro.backend = "vulkan";
        ro.device = o->vk.device;
        ro.kv_type = RLX_KV_TYPE_F32;
        ro.no_buckets = true;
        s = rlx_runner_open(path, &ro, &rx);
    }
    /* A recurrent model (Qwen3.5) has no no-cache forward: its reference is then a one-shot prefill
     * of the growing sequence from the zero state, which the decode steps must equal. */
    bool recurrent = !s && rlx_runner_state_bytes(rb) > 0;
    if (recurrent) snprintf(pn->name, sizeof pn->name, "bucketed == one-shot prefill (recurrent: no naive path)");
    if (!s) {
        ro.no_buckets = false;
        ro.no_kv_cache = ro.no_prefill_cache = !recurrent;
        s = rlx_runner_open(path, &ro, &rn);
    }
    int32_t seq[5 + N_PATH_STEPS];
    int32_t n = 5;
    for (int32_t k = 0; k < n; k++) seq[k] = (int32_t)(((int64_t)k * 7919 + 1) % m->vocab);
    float *lx = malloc((size_t)m->vocab * sizeof *lx);
    if (!s && !lx) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: logits");
    if (!s) s = rlx_runner_prefill_get_last_logits(rb, seq, n, m->ld);
    if (!s) s = rlx_runner_prefill_get_last_logits(rx, seq, n, lx);
    for (int32_t step = 0; !s && step < N_PATH_STEPS && n < m->n_ctx; step++) {
        s = recurrent ? rlx_runner_prefill_get_last_logits(rn, seq, n, m->lc) : rlx_runner_predict_logits(rn, seq, n, m->lc);
        if (s) break;
        double scale = 1.0, de = 0, dn = 0, unused;
        for (int32_t i = 0; i < m->vocab; i++) scale = fmax(scale, fabs(m->ld[i]));
        diff_logits(lx, m->ld, m->vocab, &de, &unused);
        diff_logits(m->lc, m->ld, m->vocab, &dn, &unused);
        pe->max_delta = fmax(pe->max_delta, de / scale);
        pn->max_delta = fmax(pn->max_delta, dn / scale);
        int32_t ib = 0, ix = 0, in = 0; /* the argmax ids of the three */
        for (int32_t i = 1; i < m->vocab; i++) {
            if (m->ld[i] > m->ld[ib]) ib = i;
            if (lx[i] > lx[ix]) ix = i;
            if (m->lc[i] > m->lc[in]) in = i;
        }
        pe->ids_differ += ib != ix;
        pn->ids_differ += ib != in;
        seq[n++] = ib;
        if (step + 1 < N_PATH_STEPS) {
            s = rlx_runner_decode_get_logits(rb, ib, m->ld);
            if (!s) s = rlx_runner_decode_get_logits(rx, ib, lx);
        }
    }
    if (s) {
        pe->error = dup_status(s);
        pn->error = strdup(pe->error);
    }
    pe->pass = !pe->error && pe->max_delta <= bound && pe->ids_differ == 0;
    pn->pass = !pn->error && pn->max_delta <= bound && pn->ids_differ == 0;
    free(lx);
    rlx_runner_close(rb);
    rlx_runner_close(rx);
    rlx_runner_close(rn);
}

/* Chained decode == single steps: greedy ids with 8 steps decoded ahead on the device and with one
 * at a time. */
static void paths_chain(rlx_validate_report *r, const rlx_validate_opts *o, const char *path, model_pair *m) {
    rlx_validate_path *p = new_path(r, "chained decode (8 ahead) == single steps", 0);
    rlx_runner *ra = NULL, *r1 = NULL;
    rlx_runner_opts ro = rlx_runner_opts_default();
    ro.backend = "vulkan";
    ro.device = o->vk.device;
    ro.decode_ahead = 8;
    rlx_status s = rlx_runner_open(path, &ro, &ra);
    ro.decode_ahead = 1;
    if (!s) s = rlx_runner_open(path, &ro, &r1);
    int32_t ids[5], ga[N_GREEDY], g1[N_GREEDY], na = 0, n1 = 0;
    for (int32_t k = 0; k < 5; k++) ids[k] = (int32_t)(((int64_t)k * 7919 + 1) % m->vocab);
    int32_t n_new = N_GREEDY < m->n_ctx - 5 ? N_GREEDY : m->n_ctx - 5;
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    if (!s) s = rlx_runner_generate(ra, ids, 5, n_new, &greedy, NULL, NULL, ga, &na);
    if (!s) s = rlx_runner_generate(r1, ids, 5, n_new, &greedy, NULL, NULL, g1, &n1);
    if (s) p->error = dup_status(s);
    for (int32_t k = 0; !s && k < na && k < n1; k++) p->ids_differ += ga[k] != g1[k];
    if (!s) p->ids_differ += abs(na - n1);
    p->pass = !p->error && p->ids_differ == 0;
    rlx_runner_close(ra);
    rlx_runner_close(r1);
}

void vl_model_section(rlx_validate_report *r, const rlx_validate_opts *o) {
    snprintf(r->model, sizeof r->model, "%s", o->model);
    char *dev_path = NULL; /* the device's file when the test switch changed a row: a temporary copy */
    rlx_status s = NULL;
    if (o->perturb_weight) s = vl_perturbed_copy(o->model, o->perturb_weight, &dev_path);
    model_pair m = {0};
    if (!s) s = open_runner(o->model, "cpu", o, RLX_KV_TYPE_DEFAULT, &m.cpu);
    if (!s) s = open_runner(dev_path ? dev_path : o->model, "vulkan", o, RLX_KV_TYPE_DEFAULT, &m.dev);
    if (!s) {
        snprintf(r->family, sizeof r->family, "%s", rlx_runner_family(m.cpu));
        m.vocab = rlx_runner_vocab_size(m.cpu);
        m.n_ctx = rlx_runner_n_ctx(m.cpu) < rlx_runner_n_ctx(m.dev) ? rlx_runner_n_ctx(m.cpu) : rlx_runner_n_ctx(m.dev);
        m.lc = malloc((size_t)m.vocab * sizeof *m.lc);
        m.ld = malloc((size_t)m.vocab * sizeof *m.ld);
        if (!m.lc || !m.ld) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: logits of %d", m.vocab);
    }
    bool ok = s == NULL;
    if (!ok) {
        r->model_error = dup_status(s);
    } else {
        prompts_section(r, &m);
        rlx_runner_close(m.dev);
        m.dev = NULL;
    }
    if (ok && !o->no_paths) {
        /* the f32 bound holds where every path runs f32 kernels: no cooperative matrices, or exact */
        rlx_backend *vk = NULL;
        double bound = PATH_BOUND_F32;
        rlx_status sv = rlx_backend_vulkan_create_with(&o->vk, &vk);
        if (!sv && rlx_vk_backend_caps(vk)->coopmat_f16 && o->vk.coopmat != RLX_VK_COOPMAT_EXACT &&
            o->vk.coopmat != RLX_VK_COOPMAT_OFF)
            bound = MODEL_BOUND;
        rlx_status_free(sv);
        rlx_backend_destroy(vk);
        const char *p = dev_path ? dev_path : o->model;
        paths_cached(r, o, p, &m, bound);
        paths_chain(r, o, p, &m);
    }
    rlx_runner_close(m.cpu);
    rlx_runner_close(m.dev);
    free(m.lc);
    free(m.ld);
    vl_perturbed_copy_remove(dev_path);
}
