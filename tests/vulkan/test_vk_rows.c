/* Runs of many sequences on the Vulkan backend (ir/ops.def, the run contract): rows with their own
 * positions, sequences and page tables over a paged KV pool. Expected values come from the CPU
 * reference backend running each sequence alone in the single-sequence form (rows NULL, one
 * contiguous cache per sequence, positions n_past + r): the contract's batched == alone, computed
 * by code that knows nothing of pages.
 *
 * A case is a graph (plain: q, k, v inputs -> KV_WRITE -> ATTENTION; or shaped like the runners'
 * layers: x -> projections -> [q/k norm] -> RoPE -> KV_WRITE -> ATTENTION) compiled at one or two
 * static row counts on one Vulkan session, and a schedule of runs, each a list of rows
 * "seq@pos" (or "seq@first-last" for a chunk) in row order. Sequences get pool pages on first
 * need from a shuffled list, their table rows are not in order of use, and columns past what a
 * row reads hold garbage. Every run's valid output rows are compared with the CPU's rows of the same
 * (sequence, position), NMSE <= 1e-7 (test-backend-ops' f32 bound), and with the CPU backend's run of
 * the same rows and page tables on a paged session of its own (the same bound). White box: each program's
 * attention kernel (decode, split, fused step, prefill) is the one the case means to reach.
 * Also: run_chain over a page table, copy_pages (in order, in every layer), and refused rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/backend.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_internal.h"
#include "test_util.h"
#include "test_vk_util.h"

#define TOL 1e-7
#define MAX_SEQ 12
#define MAX_ROWS 64
#define X_COLS 32
#define GARBAGE_PAGE (-7) /* table entries past a sequence's pages: never read */

static rlx_backend *g_vk, *g_cpu;
/* test_vk_rows kv-f16: the Vulkan sessions' pools hold F16 (the CPU's F32), every comparison is held
 * to TOL_KV_F16 (tests/support/test_vk_parity.h derives it from F16's rounding of K and V: outputs read
 * through the cache within NMSE (5 * 2^-10)^2), and each case's attention kernel is its _f16 twin. */
#define TOL_KV_F16 3e-5
static uint32_t g_kv_dtype = RLX_DTYPE_F32;
static double g_tol = TOL;

/* The kernel whose work kernel k does: k, or the F32 kernel of an _f16 twin. */
static rlx_vk_kernel f32_kernel(rlx_vk_kernel k) {
    switch (k) {
    case RLX_VK_KERNEL_attention_f16: return RLX_VK_KERNEL_attention;
    case RLX_VK_KERNEL_attention_step_f16: return RLX_VK_KERNEL_attention_step;
    case RLX_VK_KERNEL_attention_step_fixed_f16: return RLX_VK_KERNEL_attention_step_fixed;
    case RLX_VK_KERNEL_attention_prefill_f16: return RLX_VK_KERNEL_attention_prefill;
    default: return k;
    }
}

typedef enum { GRAPH_PLAIN, GRAPH_RUNNER_NORM, GRAPH_RUNNER } graph_kind;

typedef struct rows_case {
    const char *label;
    graph_kind kind;
    int64_t h, hkv, dh, cap; /* cap: the KV_CACHE capacity T */
    int32_t window, page_size, n_pages;
    int64_t rows[2];         /* static rows of programs 0 and 1 (0: no program 1) */
    rlx_vk_kernel attn[2];   /* the attention kernel each program dispatches */
    const char *const *runs; /* "P: seq@pos seq@a-b ..." with P the program; NULL-terminated */
    bool apart1;             /* program 1 is a decode batch: the ROWS_APART hint, a row per sequence */
} rows_case;

/* ---- graphs ---- */

static rlx_node heads_of(rlx_graph *g, rlx_node x, const char *w, int64_t rows, int64_t heads, int64_t d) {
    rlx_node wn = rlx_weight_node(g, w, RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){heads * d, X_COLS}));
    return rlx_reshape(g, rlx_matmul(g, x, wn), rlx_shape_make(3, (int64_t[]){rows, heads, d}));
}

static rlx_node qk_of(rlx_graph *g, const rows_case *c, rlx_node x, bool is_q, int64_t rows) {
    rlx_node y = heads_of(g, x, is_q ? "wq" : "wk", rows, is_q ? c->h : c->hkv, c->dh);
    if (c->kind == GRAPH_RUNNER_NORM)
        y = rlx_rms_norm(
            g, y, rlx_weight_node(g, is_q ? "qn" : "kn", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){c->dh})), 1e-6f);
    return rlx_rope(g, y, RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, (int32_t)c->dh, 1e4f});
}

static rlx_graph *case_graph(const rows_case *c, int64_t rows, bool apart) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) exit(1);
    if (apart) rlx_graph_set_hints(g, RLX_HINT_ROWS_APART);
    rlx_node q, k, v;
    if (c->kind == GRAPH_PLAIN) {
        q = rlx_input(g, "q", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){rows, c->h, c->dh}));
        k = rlx_input(g, "k", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){rows, c->hkv, c->dh}));
        v = rlx_input(g, "v", RLX_DTYPE_F32, rlx_shape_make(3, (int64_t[]){rows, c->hkv, c->dh}));
    } else {
        rlx_node x = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){rows, X_COLS}));
        q = qk_of(g, c, x, true, rows);
        k = qk_of(g, c, x, false, rows);
        v = heads_of(g, x, "wv", rows, c->hkv, c->dh);
    }
    rlx_node kw = rlx_kv_write(g, rlx_kv_cache(g, 0, false, c->cap, c->hkv, c->dh), k);
    rlx_node vw = rlx_kv_write(g, rlx_kv_cache(g, 0, true, c->cap, c->hkv, c->dh), v);
    rlx_graph_mark_output(g, rlx_attention(g, q, kw, vw, 1.0f / sqrtf((float)c->dh), c->window), "o");
    return g;
}

/* Floats of one row of input i, and how many inputs. */
static int n_inputs(const rows_case *c) { return c->kind == GRAPH_PLAIN ? 3 : 1; }
static int64_t input_row(const rows_case *c, int i) {
    if (c->kind != GRAPH_PLAIN) return X_COLS;
    return (i == 0 ? c->h : c->hkv) * c->dh;
}

/* The data of input i's row for (seq, pos): the same on both backends, whichever run holds it. */
static void row_data(const rows_case *c, int i, int32_t seq, int32_t pos, float *out) {
    vkt_rng r = {0x9E3779B97F4A7C15ull ^ ((uint64_t)seq << 40) ^ ((uint64_t)pos << 8) ^ (uint64_t)i};
    for (int k = 0; k < 3; k++) vkt_next(&r);
    for (int64_t e = 0; e < input_row(c, i); e++) out[e] = vkt_uniform(&r, -1.0f, 1.0f);
}

/* ---- schedules ---- */

typedef struct run_rows {
    int prog;
    int32_t n;
    int32_t seq[MAX_ROWS], pos[MAX_ROWS];
} run_rows;

static bool parse_run(const char *s, run_rows *r) {
    char *end;
    r->prog = (int)strtol(s, &end, 10);
    if (*end != ':') return false;
    s = end + 1;
    r->n = 0;
    for (;;) {
        while (*s == ' ') s++;
        if (!*s) return r->n > 0;
        long seq = strtol(s, &end, 10);
        if (*end != '@') return false;
        long a = strtol(end + 1, &end, 10), b = a;
        if (*end == '-') b = strtol(end + 1, &end, 10);
        for (long p = a; p <= b; p++) {
            if (r->n >= MAX_ROWS || seq < 0 || seq >= MAX_SEQ) return false;
            r->seq[r->n] = (int32_t)seq;
            r->pos[r->n++] = (int32_t)p;
        }
        s = end;
    }
}

/* ---- the Vulkan side: one session, its page tables ---- */

typedef struct paged {
    int32_t table_row[MAX_SEQ]; /* sequence -> row of the run's table (not in order of use) */
    int32_t n_table, cols;
    int32_t *pages;      /* [n_table * cols] */
    int32_t *free_pages; /* a shuffled list of the pool's pages, taken from next_free on */
    int32_t next_free, n_pages, page_size;
} paged;

static void paged_init(paged *pg, const rows_case *c, vkt_rng *r) {
    pg->n_table = MAX_SEQ + 1;
    pg->cols = (int32_t)((c->cap + c->page_size - 1) / c->page_size) + 1; /* one column more than needed */
    pg->page_size = c->page_size;
    pg->n_pages = c->n_pages;
    for (int32_t s = 0; s < MAX_SEQ; s++) pg->table_row[s] = (s * 3 + 2) % pg->n_table;
    pg->pages = malloc((size_t)pg->n_table * (size_t)pg->cols * sizeof *pg->pages);
    pg->free_pages = malloc((size_t)c->n_pages * sizeof *pg->free_pages);
    if (!pg->pages || !pg->free_pages) exit(1);
    for (int32_t k = 0; k < pg->n_table * pg->cols; k++) pg->pages[k] = GARBAGE_PAGE;
    for (int32_t k = 0; k < c->n_pages; k++) pg->free_pages[k] = k;
    for (int32_t k = c->n_pages - 1; k > 0; k--) {
        int32_t j = vkt_int(r, 0, k), t = pg->free_pages[k];
        pg->free_pages[k] = pg->free_pages[j];
        pg->free_pages[j] = t;
    }
    pg->next_free = 0;
}

static void paged_free(paged *pg) {
    free(pg->pages);
    free(pg->free_pages);
}

/* Gives seq the pages that position pos needs. */
static bool paged_need(paged *pg, int32_t seq, int32_t pos) {
    int32_t *row = pg->pages + (size_t)pg->table_row[seq] * (size_t)pg->cols;
    for (int32_t k = 0; k <= pos / pg->page_size; k++) {
        if (row[k] != GARBAGE_PAGE) continue;
        if (pg->next_free >= pg->n_pages) return false;
        row[k] = pg->free_pages[pg->next_free++];
    }
    return true;
}

/* ---- the CPU side: each sequence alone ---- */

typedef struct alone {
    rlx_session *s;
    rlx_program *p[2];
    int32_t next; /* positions written so far */
} alone;

typedef struct bench {
    const rows_case *c;
    rlx_weight w[5];
    size_t nw;
    rlx_session *vs, *cs; /* Vulkan, and the CPU with the same pool and rows */
    rlx_program *vp[2], *cp[2];
    alone cpu[MAX_SEQ];
    paged pg;
    float *in[3], *out, *want, *same; /* same: the CPU's output of the same rows */
} bench;

static rlx_state_spec cpu_spec(const rows_case *c) {
    return (rlx_state_spec){.n_layer = 1,
                            .n_head_kv = (int32_t)c->hkv,
                            .head_dim = (int32_t)c->dh,
                            .page_size = 1,
                            .n_pages = (int32_t)c->cap};
}

static bool bench_open(bench *b, const rows_case *c, vkt_rng *r) {
    memset(b, 0, sizeof *b);
    b->c = c;
    if (c->kind != GRAPH_PLAIN) {
        b->w[b->nw++] = vkt_weight(r, "wq", RLX_DTYPE_F16, 2, X_COLS, (uint64_t)(c->h * c->dh), 1);
        b->w[b->nw++] = vkt_weight(r, "wk", RLX_DTYPE_F16, 2, X_COLS, (uint64_t)(c->hkv * c->dh), 1);
        b->w[b->nw++] = vkt_weight(r, "wv", RLX_DTYPE_F16, 2, X_COLS, (uint64_t)(c->hkv * c->dh), 1);
        if (c->kind == GRAPH_RUNNER_NORM) {
            b->w[b->nw++] = vkt_weight(r, "qn", RLX_DTYPE_F32, 1, (uint64_t)c->dh, 1, 1);
            b->w[b->nw++] = vkt_weight(r, "kn", RLX_DTYPE_F32, 1, (uint64_t)c->dh, 1, 1);
        }
    }
    rlx_state_spec vkv = {.n_layer = 1,
                          .n_head_kv = (int32_t)c->hkv,
                          .head_dim = (int32_t)c->dh,
                          .page_size = c->page_size,
                          .n_pages = c->n_pages};
    if (!T_OK(g_cpu->ops->session_create(g_cpu, b->w, b->nw, &vkv, &b->cs))) return false;
    vkv.kv_dtype = g_kv_dtype;
    if (!T_OK(g_vk->ops->session_create(g_vk, b->w, b->nw, &vkv, &b->vs))) return false;
    rlx_state_spec ckv = cpu_spec(c);
    for (int k = 0; k < 2 && c->rows[k]; k++) {
        rlx_graph *g = case_graph(c, c->rows[k], k == 1 && c->apart1);
        bool ok = T_OK(g_vk->ops->compile(b->vs, g, &b->vp[k])) && T_OK(g_cpu->ops->compile(b->cs, g, &b->cp[k]));
        rlx_graph_destroy(g);
        if (!ok) return false;
    }
    for (int s = 0; s < MAX_SEQ; s++) {
        if (!T_OK(g_cpu->ops->session_create(g_cpu, b->w, b->nw, &ckv, &b->cpu[s].s))) return false;
        for (int k = 0; k < 2 && c->rows[k]; k++) {
            rlx_graph *g = case_graph(c, c->rows[k], false);
            bool ok = T_OK(g_cpu->ops->compile(b->cpu[s].s, g, &b->cpu[s].p[k]));
            rlx_graph_destroy(g);
            if (!ok) return false;
        }
    }
    paged_init(&b->pg, c, r);
    size_t out_row = (size_t)(c->h * c->dh);
    for (int i = 0; i < n_inputs(c); i++) b->in[i] = calloc(MAX_ROWS * (size_t)input_row(c, i), sizeof(float));
    b->out = calloc(MAX_ROWS * out_row, sizeof(float));
    b->want = calloc(MAX_ROWS * out_row, sizeof(float));
    b->same = calloc(MAX_ROWS * out_row, sizeof(float));
    return b->out && b->want && b->same;
}

static void bench_close(bench *b) {
    for (int s = 0; s < MAX_SEQ; s++) {
        for (int k = 0; k < 2; k++)
            if (b->cpu[s].p[k]) g_cpu->ops->program_destroy(b->cpu[s].p[k]);
        if (b->cpu[s].s) g_cpu->ops->session_destroy(b->cpu[s].s);
    }
    for (int k = 0; k < 2; k++) {
        if (b->vp[k]) g_vk->ops->program_destroy(b->vp[k]);
        if (b->cp[k]) g_cpu->ops->program_destroy(b->cp[k]);
    }
    if (b->vs) g_vk->ops->session_destroy(b->vs);
    if (b->cs) g_cpu->ops->session_destroy(b->cs);
    for (size_t i = 0; i < b->nw; i++) vkt_weight_free(&b->w[i]);
    for (int i = 0; i < 3; i++) free(b->in[i]);
    free(b->out);
    free(b->want);
    free(b->same);
    paged_free(&b->pg);
}

/* The Vulkan run of r's rows. */
static bool run_paged(bench *b, const run_rows *r) {
    const rows_case *c = b->c;
    int32_t seq[MAX_ROWS];
    for (int32_t i = 0; i < r->n; i++) {
        if (!paged_need(&b->pg, r->seq[i], r->pos[i])) {
            t_fail(__FILE__, __LINE__, "%s: the pool of %d pages is too small for the schedule", c->label, c->n_pages);
            return false;
        }
        seq[i] = b->pg.table_row[r->seq[i]];
        for (int k = 0; k < n_inputs(c); k++)
            row_data(c, k, r->seq[i], r->pos[i], b->in[k] + (size_t)i * (size_t)input_row(c, k));
    }
    rlx_run_rows rows = {r->pos, seq, b->pg.pages, b->pg.n_table, b->pg.cols, NULL};
    const void *in[3] = {b->in[0], b->in[1], b->in[2]};
    void *out[1] = {b->out}, *same[1] = {b->same};
    rlx_run_args a = {0, r->n, in, out, &rows};
    bool ok = T_OK(g_vk->ops->run(b->vp[r->prog], &a));
    a.outputs = same;
    return ok && T_OK(g_cpu->ops->run(b->cp[r->prog], &a));
}

/* The CPU runs of r's rows, one per sequence in it, alone: b->want row i is row i's output. */
static bool run_alone(bench *b, const run_rows *r) {
    const rows_case *c = b->c;
    size_t out_row = (size_t)(c->h * c->dh);
    bool done[MAX_SEQ] = {false};
    float *x[3], *o = malloc(MAX_ROWS * out_row * sizeof *o);
    for (int k = 0; k < 3; k++) x[k] = malloc(MAX_ROWS * (size_t)input_row(c, k < n_inputs(c) ? k : 0) * sizeof(float));
    bool ok = o && x[0] && x[1] && x[2];
    for (int32_t i = 0; ok && i < r->n; i++) {
        int32_t s = r->seq[i], m = 0, at[MAX_ROWS];
        if (done[s]) continue;
        done[s] = true;
        for (int32_t j = i; j < r->n; j++)
            if (r->seq[j] == s) at[m++] = j;
        alone *a = &b->cpu[s];
        for (int32_t j = 0; j < m; j++) /* the schedule itself must be a sequence's next positions */
            if (r->pos[at[j]] != a->next + j) {
                t_fail(__FILE__, __LINE__, "%s: the schedule gives sequence %d position %d, expected %d", c->label, s,
                       r->pos[at[j]], a->next + j);
                ok = false;
            }
        for (int k = 0; ok && k < n_inputs(c); k++)
            for (int32_t j = 0; j < m; j++)
                row_data(c, k, s, r->pos[at[j]], x[k] + (size_t)j * (size_t)input_row(c, k));
        const void *in[3] = {x[0], x[1], x[2]};
        void *out[1] = {o};
        rlx_run_args args = {a->next, m, in, out, NULL};
        ok = ok && T_OK(g_cpu->ops->run(a->p[r->prog], &args));
        for (int32_t j = 0; ok && j < m; j++)
            memcpy(b->want + (size_t)at[j] * out_row, o + (size_t)j * out_row, out_row * sizeof *o);
        a->next += m;
    }
    free(o);
    for (int k = 0; k < 3; k++) free(x[k]);
    return ok;
}

static rlx_vk_kernel attention_kernel_of(const rlx_program *p) {
    for (size_t i = 0; i < p->run.n; i++) {
        rlx_vk_kernel k = p->run.items[i].pipe->kernel, f = f32_kernel(k);
        if (f == RLX_VK_KERNEL_attention || f == RLX_VK_KERNEL_attention_prefill || f == RLX_VK_KERNEL_attention_step ||
            f == RLX_VK_KERNEL_attention_step_fixed)
            return k;
    }
    return RLX_VK_KERNEL_COUNT;
}

static bool splits_of(const rlx_program *p) {
    for (size_t i = 0; i < p->run.n; i++)
        if (p->run.items[i].pipe->kernel == RLX_VK_KERNEL_attn_combine) return true;
    return false;
}

/* Whether a matvec of p reads the decode attention's caches into L2 (shaders/matvec.glsl WARM:
 * rows below row 0's position of its sequence, through its page table). */
static bool warms(const rlx_program *p) {
    for (size_t i = 0; i < p->run.n; i++) {
        const vk_dispatch *d = &p->run.items[i];
        bool mv = d->pipe->kernel == RLX_VK_KERNEL_matvec || d->pipe->kernel == RLX_VK_KERNEL_matvec_stream;
        uint32_t both = RLX_VK_BIT(matvec, WARM_K) | RLX_VK_BIT(matvec, WARM_V);
        if (mv && (d->reads & both) == both) return true;
    }
    return false;
}

static void run_case(const rows_case *c, vkt_rng *r) {
    bench b;
    if (!bench_open(&b, c, r)) {
        bench_close(&b);
        return;
    }
    for (int k = 0; k < 2 && c->rows[k]; k++) {
        rlx_vk_kernel got = attention_kernel_of(b.vp[k]);
        bool f16 = got != f32_kernel(got);
        T_CHECK(f16 == (g_kv_dtype == RLX_DTYPE_F16), "%s: program %d's attention kernel reads %s pools", c->label, k,
                f16 ? "F16" : "F32");
        got = f32_kernel(got);
        if (got == RLX_VK_KERNEL_attention_step_fixed) got = RLX_VK_KERNEL_attention_step; /* its fixed plan */
        /* vk_plan.c vk_attention_splits: few rows, or a decode batch of more, from 256 keys */
        bool apart = k == 1 && c->apart1;
        bool want_split = c->attn[k] == RLX_VK_KERNEL_attention && (c->rows[k] <= 8 || apart) && c->cap >= 256;
        T_CHECK(splits_of(b.vp[k]) == want_split, "%s: program %d splits the keys: %s", c->label, k,
                want_split ? "no, expected" : "yes, not expected");
        const char *warm_env = getenv("RLX_VK_WARM");
        if (warm_env && !strcmp(warm_env, "1") && c->rows[k] == 1)
            T_CHECK(warms(b.vp[k]), "%s: RLX_VK_WARM=1, but the decode program's matvecs do not warm the caches",
                    c->label);
        T_CHECK(got == c->attn[k], "%s: program %d (%lld rows) dispatches %s, expected %s", c->label, k,
                (long long)c->rows[k], got < RLX_VK_KERNEL_COUNT ? rlx_vk_kernel_get(got)->name : "no attention",
                rlx_vk_kernel_get(c->attn[k])->name);
        printf("  %-44s program %d: %lld rows, %s%s%s\n", c->label, k, (long long)c->rows[k],
               got < RLX_VK_KERNEL_COUNT ? rlx_vk_kernel_get(got)->name : "?", splits_of(b.vp[k]) ? " (split)" : "",
               warms(b.vp[k]) ? ", caches warmed by a matvec" : "");
    }
    size_t out_row = (size_t)(c->h * c->dh);
    double worst = 0.0, worst_same = 0.0;
    int n_runs = 0;
    for (const char *const *s = c->runs; *s; s++, n_runs++) {
        run_rows rr;
        if (!parse_run(*s, &rr) || rr.prog < 0 || rr.prog > 1 || !c->rows[rr.prog] || rr.n > c->rows[rr.prog]) {
            t_fail(__FILE__, __LINE__, "%s: bad schedule entry '%s'", c->label, *s);
            break;
        }
        if (!run_paged(&b, &rr) || !run_alone(&b, &rr)) break;
        double nmse = vkt_nmse(b.out, b.want, (int64_t)(rr.n * out_row));
        double same = vkt_nmse(b.out, b.same, (int64_t)(rr.n * out_row));
        worst = nmse > worst ? nmse : worst;
        worst_same = same > worst_same ? same : worst_same;
        T_CHECK(nmse <= g_tol, "%s: run %d ('%s'): nmse %.3e against each sequence alone", c->label, n_runs, *s, nmse);
        T_CHECK(same <= g_tol, "%s: run %d ('%s'): nmse %.3e against the CPU's run of the same rows", c->label, n_runs,
                *s, same);
    }
    printf("  %-44s %d runs, %d pages, worst nmse %.2e alone, %.2e same rows (tol %.0e)\n", c->label, n_runs,
           b.pg.next_free, worst, worst_same, g_tol);
    bench_close(&b);
}

/* ---- the cases ---- */

/* Small rows (the decode kernel): a prefill chunk, two sequences' prefill interleaved, then a mixed
 * batch (a chunk at an offset and decode rows of the others, interleaved, one padding row), then
 * a decode step of all; pages of 4 rows. */
static const char *const mixed_small[] = {
    "0: 0@0-5",           "0: 1@0 2@0 1@1 2@1 1@2 1@3",  "0: 1@4 0@6 0@7 2@2 0@8",
    "0: 2@3 0@9 1@5 3@0", "0: 3@1 3@2 3@3 3@4 0@10 3@5", NULL,
};

/* 20 rows (the prefill kernel): one sequence's chunk (one pass), then tiles of several sequences
 * (the general walk), with padding. */
static const char *const mixed_prefill[] = {
    "0: 0@0-19", "0: 1@0-9 2@0-6", "0: 0@20-31 1@10 2@7 3@0 4@0-2", "0: 4@3 1@11 0@32-35 2@8-15 3@1 5@0-3", NULL,
};

/* A prefill program (64 rows) writes long histories; a decode program (3 rows) over T = 320 keys
 * splits them (flash decoding), the rows of several sequences in one run. */
static const char *const split_decode[] = {
    "0: 0@0-63",     "0: 0@64-127",          "0: 1@0-40 2@0-19",   "1: 0@128 1@41 2@20",
    "1: 2@21 0@129", "0: 0@130-160 2@22-50", "1: 1@42 2@51 0@161", NULL,
};

/* Ten sequences' histories of 1 to 130 keys, then decode batches (10 rows, each its own sequence:
 * ROWS_APART) over T = 320 keys, which split each sequence's keys in two (a short one's second
 * range is empty); later batches have padding rows and other sequences in other rows. */
static const char *const batch_decode[] = {
    "0: 0@0-63",
    "0: 1@0-40 2@0-19",
    "0: 3@0-9 4@0-29 5@0-4 6@0-15",
    "0: 7@0-2 8@0-50 9@0 0@64-70",
    "0: 0@71-127 8@51-57",
    "1: 0@128 1@41 2@20 3@10 4@30 5@5 6@16 7@3 8@58 9@1",
    "1: 9@2 8@59 7@4 6@17 5@6 4@31 3@11 2@21 1@42 0@129",
    "1: 5@7 0@130 8@60",
    "1: 8@61 10@0 11@0 0@131 9@3",
    NULL,
};

/* Shaped like the runners' layers: a chunked prefill program (5 rows: q/k norm, RoPE and the K and V
 * writes in one kernel) and a decode program (1 row: all of it in the attention step). */
static const char *const runner_runs[] = {
    "0: 0@0-4",         "0: 1@0 0@5 1@1 0@6 1@2",
    "1: 0@7",           "1: 1@3",
    "0: 2@0-2 0@8 1@4", "1: 2@3",
    "1: 0@9",           "0: 0@10-14",
    "1: 1@5",           NULL,
};

static const rows_case cases[] = {
    {"plain GQA 4/2 pages of 4", GRAPH_PLAIN, 4, 2, 32, 64, 0, 4, 40, {6, 0}, {RLX_VK_KERNEL_attention}, mixed_small, false},
    {"plain GQA 4/2 pages of 4, window 5",
     GRAPH_PLAIN,
     4,
     2,
     32,
     64,
     5,
     4,
     40,
     {6, 0},
     {RLX_VK_KERNEL_attention},
     mixed_small,
     false},
    {"plain 2/1 pages of 16, 20 rows",
     GRAPH_PLAIN,
     2,
     1,
     64,
     96,
     0,
     16,
     20,
     {20, 0},
     {RLX_VK_KERNEL_attention_prefill},
     mixed_prefill,
     false},
    {"plain 4/2 pages of 4, 20 rows, window 7",
     GRAPH_PLAIN,
     4,
     2,
     32,
     96,
     7,
     4,
     70,
     {20, 0},
     {RLX_VK_KERNEL_attention_prefill},
     mixed_prefill,
     false},
    {"plain 4/2 pages of 16, split decode",
     GRAPH_PLAIN,
     4,
     2,
     32,
     320,
     0,
     16,
     40,
     {64, 3},
     {RLX_VK_KERNEL_attention_prefill, RLX_VK_KERNEL_attention},
     split_decode,
     false},
    {"plain 4/2 pages of 16, decode batch of 10",
     GRAPH_PLAIN,
     4,
     2,
     32,
     320,
     0,
     16,
     40,
     {64, 10},
     {RLX_VK_KERNEL_attention_prefill, RLX_VK_KERNEL_attention},
     batch_decode,
     true},
    {"runner norm+rope 4/2 pages of 4",
     GRAPH_RUNNER_NORM,
     4,
     2,
     32,
     64,
     0,
     4,
     16,
     {5, 1},
     {RLX_VK_KERNEL_attention, RLX_VK_KERNEL_attention_step},
     runner_runs,
     false},
    {"runner rope 8/2 Dh 16 pages of 4 (pool < T)",
     GRAPH_RUNNER,
     8,
     2,
     16,
     64,
     0,
     4,
     12,
     {5, 1},
     {RLX_VK_KERNEL_attention, RLX_VK_KERNEL_attention_step},
     runner_runs,
     false},
};

/* ---- refused rows ---- */

static void test_refused(vkt_rng *r) {
    const rows_case *c = &cases[0];
    bench b;
    if (!bench_open(&b, c, r)) {
        bench_close(&b);
        return;
    }
    int32_t pages[4] = {3, 1, 0, 2}, pos[2] = {0, 1}, seq[2] = {0, 0};
    rlx_run_rows rows = {pos, seq, pages, 1, 4, NULL};
    const void *in[3] = {b.in[0], b.in[1], b.in[2]};
    void *out[1] = {b.out};
    rlx_run_args a = {0, 2, in, out, &rows};
    seq[1] = 1;
    T_ERR(g_vk->ops->run(b.vp[0], &a), RLX_ERR_INVALID_ARGUMENT, "sequence 1 is outside");
    seq[1] = 0;
    pos[1] = 64;
    T_ERR(g_vk->ops->run(b.vp[0], &a), RLX_ERR_INVALID_ARGUMENT, "position 64 is outside [0, 64)");
    pos[1] = 0;
    T_ERR(g_vk->ops->run(b.vp[0], &a), RLX_ERR_INVALID_ARGUMENT, "two rows write");
    pos[1] = 5;
    pages[1] = c->n_pages;
    T_ERR(g_vk->ops->run(b.vp[0], &a), RLX_ERR_INVALID_ARGUMENT, "outside the pool");
    pages[1] = 1;
    rows.page_cols = 1;
    T_ERR(g_vk->ops->run(b.vp[0], &a), RLX_ERR_INVALID_ARGUMENT, "page column");
    int32_t src[1] = {0}, dst[1] = {c->n_pages};
    T_ERR(g_vk->ops->copy_pages(b.vs, src, dst, 1), RLX_ERR_INVALID_ARGUMENT, "outside");
    printf("  refused: a sequence outside the table, a position past T, two rows writing one place, a page\n"
           "  outside the pool, a table too narrow, a page copy outside the pool\n");
    bench_close(&b);
}

/* ---- copy_pages ---- */

/* Sequence 0 writes 12 positions (pages of 4); its pages are copied, in order, along a chain
 * (A -> B, then B -> C: C must hold A's rows, as the copies are made in order); sequence 1 then
 * overwrites A. A decode row of "the copy" (table: C, B1, B2 and a fresh page) must see what
 * sequence 0 alone sees at position 12. */
static void test_copy_pages(vkt_rng *r) {
    static const char *const none[] = {NULL};
    rows_case c = {"copy_pages", GRAPH_PLAIN, 4, 2, 32, 64, 0, 4, 24, {6, 0}, {RLX_VK_KERNEL_attention}, none, false};
    bench b;
    if (!bench_open(&b, &c, r)) {
        bench_close(&b);
        return;
    }
    run_rows rr;
    bool ok = parse_run("0: 0@0-5", &rr) && run_paged(&b, &rr) && run_alone(&b, &rr) && parse_run("0: 0@6-11", &rr) &&
              run_paged(&b, &rr) && run_alone(&b, &rr);
    int32_t *a = b.pg.pages + (size_t)b.pg.table_row[0] * (size_t)b.pg.cols; /* A0 A1 A2 */
    int32_t B[3], C0, fresh;
    if (ok && b.pg.next_free + 5 <= c.n_pages) {
        for (int k = 0; k < 3; k++) B[k] = b.pg.free_pages[b.pg.next_free++];
        C0 = b.pg.free_pages[b.pg.next_free++];
        fresh = b.pg.free_pages[b.pg.next_free++];
        int32_t src[4] = {a[0], a[1], a[2], B[0]}, dst[4] = {B[0], B[1], B[2], C0};
        ok = T_OK(g_vk->ops->copy_pages(b.vs, src, dst, 4));
        /* sequence 1 takes A's pages and overwrites them */
        int32_t *s1 = b.pg.pages + (size_t)b.pg.table_row[1] * (size_t)b.pg.cols;
        for (int k = 0; k < 3; k++) s1[k] = a[k];
        ok = ok && parse_run("0: 1@0-5", &rr) && run_paged(&b, &rr) && run_alone(&b, &rr) &&
             parse_run("0: 1@6-11", &rr) && run_paged(&b, &rr) && run_alone(&b, &rr);
        /* sequence 0 now reads the copy */
        a[0] = C0;
        a[1] = B[1];
        a[2] = B[2];
        a[3] = fresh;
        ok = ok && parse_run("0: 0@12 1@12", &rr) && run_paged(&b, &rr) && run_alone(&b, &rr);
        double nmse = ok ? vkt_nmse(b.out, b.want, (int64_t)(2 * c.h * c.dh)) : INFINITY;
        printf("  copy_pages: A -> B -> C in order, A overwritten; the copy's decode row nmse %.2e\n", nmse);
        T_CHECK(nmse <= g_tol, "copy_pages: the copy's decode row has nmse %.3e against sequence 0 alone", nmse);
    } else {
        T_CHECK(ok, "copy_pages: setting up failed");
    }
    bench_close(&b);
}

/* ---- run_chain ---- */

#define CH_D 64
#define CH_VOCAB 96
#define CH_CTX 32
#define CH_PAST 6
#define CH_STEPS 9

/* embed -> rms_norm -> q -> rope -> kv_write (as K and V) / attention -> lm head -> argmax: the
 * decode graph of tests/vulkan/test_vk_chain.c. */
static rlx_graph *chain_graph(void) {
    rlx_graph *g = NULL;
    if (!T_OK(rlx_graph_create(&g))) exit(1);
    rlx_shape heads = rlx_shape_make(3, (int64_t[]){1, 2, 32});
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){1}));
    rlx_node x =
        rlx_embed(g, rlx_weight_node(g, "emb", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){CH_VOCAB, CH_D})), ids);
    x = rlx_rms_norm(g, x, rlx_weight_node(g, "norm", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){CH_D})), 1e-6f);
    rlx_node q = rlx_matmul(g, x, rlx_weight_node(g, "wq", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){CH_D, CH_D})));
    q = rlx_rope(g, rlx_reshape(g, q, heads), RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 32, 1e4f});
    rlx_node k = rlx_kv_write(g, rlx_kv_cache(g, 0, false, CH_CTX, 2, 32), q);
    rlx_node v = rlx_kv_write(g, rlx_kv_cache(g, 0, true, CH_CTX, 2, 32), q);
    rlx_node a = rlx_reshape(g, rlx_attention(g, q, k, v, 0.01f, 0), rlx_shape_make(2, (int64_t[]){1, CH_D}));
    rlx_node wo = rlx_weight_node(g, "wo", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){CH_VOCAB, CH_D}));
    rlx_graph_mark_output(g, rlx_argmax(g, rlx_matmul(g, a, wo)), "argmax");
    return g;
}

/* Sequence 1 of a table of 3 (pages of 4, shuffled): CH_PAST single runs, then sequence 0 writes
 * 10 positions in its own pages, then sequence 1's chain of CH_STEPS; the ids must be those of
 * the CPU's single runs of sequence 1 alone. A table that does not cover the chain's last position
 * is refused. */
static void test_chain(vkt_rng *r) {
    rlx_weight w[4] = {
        vkt_weight(r, "emb", RLX_DTYPE_F16, 2, CH_D, CH_VOCAB, 1), vkt_weight(r, "norm", RLX_DTYPE_F32, 1, CH_D, 1, 1),
        vkt_weight(r, "wq", RLX_DTYPE_F16, 2, CH_D, CH_D, 1), vkt_weight(r, "wo", RLX_DTYPE_F16, 2, CH_D, CH_VOCAB, 1)};
    rlx_state_spec vkv = {.n_layer = 1, .n_head_kv = 2, .head_dim = 32, .page_size = 4, .n_pages = 20};
    rlx_state_spec ckv = {.n_layer = 1, .n_head_kv = 2, .head_dim = 32, .page_size = 1, .n_pages = CH_CTX};
    rlx_session *vs = NULL, *cs = NULL;
    rlx_program *vp = NULL, *cp = NULL;
    rlx_graph *g = chain_graph();
    bool ok = T_OK(g_vk->ops->session_create(g_vk, w, 4, &vkv, &vs)) && T_OK(g_vk->ops->compile(vs, g, &vp)) &&
              T_OK(g_cpu->ops->session_create(g_cpu, w, 4, &ckv, &cs)) && T_OK(g_cpu->ops->compile(cs, g, &cp));
    rlx_graph_destroy(g);
    enum { COLS = CH_CTX / 4 };
    int32_t pages[3 * COLS];
    for (int k = 0; k < 3 * COLS; k++) pages[k] = GARBAGE_PAGE;
    int32_t s0[COLS] = {5, 0, 12, 9, 3, 17, 1, 8}, s1[4] = {14, 2, 19, 6}; /* s1: positions < 16 */
    memcpy(pages, s0, sizeof s0);
    memcpy(pages + COLS, s1, sizeof s1);
    int32_t want[CH_PAST + CH_STEPS], tok = 11, id = -1, pos = 0, seq = 0;
    rlx_run_rows rows = {&pos, &seq, pages, 3, COLS, NULL};
    const void *in[1] = {&tok};
    void *out[1] = {&id};
    /* the CPU: sequence 1 alone, CH_PAST + CH_STEPS single runs */
    tok = 11;
    for (int32_t i = 0; ok && i < CH_PAST + CH_STEPS; i++) {
        rlx_run_args a = {i, 1, in, out, NULL};
        ok = T_OK(g_cpu->ops->run(cp, &a));
        want[i] = id;
        tok = id;
    }
    /* Vulkan: sequence 1 (table row 1), CH_PAST single runs, then the chain */
    seq = 1;
    tok = 11;
    for (int32_t i = 0; ok && i < CH_PAST; i++) {
        pos = i;
        rlx_run_args a = {0, 1, in, out, &rows};
        ok = T_OK(g_vk->ops->run(vp, &a));
        T_CHECK(!ok || id == want[i], "run_chain case: single run %d gives id %d, the CPU %d", i, id, want[i]);
        tok = id;
    }
    /* sequence 0: rows of other tokens in its own pages, between sequence 1's runs and its chain */
    seq = 0;
    for (int32_t i = 0; ok && i < 10; i++) {
        pos = i;
        tok = (i * 37 + 5) % CH_VOCAB;
        rlx_run_args a = {0, 1, in, out, &rows};
        ok = T_OK(g_vk->ops->run(vp, &a));
    }
    seq = 1;
    tok = want[CH_PAST - 1];
    int32_t got[CH_STEPS];
    pos = CH_PAST;
    rlx_run_args a = {0, 1, in, out, &rows};
    ok = ok && T_OK(g_vk->ops->run_chain(vp, &a, CH_STEPS, got));
    int32_t diff = -1;
    for (int32_t i = 0; ok && i < CH_STEPS && diff < 0; i++)
        if (got[i] != want[CH_PAST + i]) diff = i;
    printf("  run_chain over a page table: %d steps from position %d %s the CPU's single runs\n", CH_STEPS, CH_PAST,
           ok && diff < 0 ? "equal" : "DIFFER from");
    T_CHECK(ok && diff < 0, "run_chain over pages differs from the CPU alone at step %d", diff);
    /* a chain past the pages given: sequence 1's table covers positions < 16 */
    pos = 12;
    T_ERR(g_vk->ops->run_chain(vp, &a, 5, got), RLX_ERR_INVALID_ARGUMENT, "outside the pool");
    if (vp) g_vk->ops->program_destroy(vp);
    if (vs) g_vk->ops->session_destroy(vs);
    if (cp) g_cpu->ops->program_destroy(cp);
    if (cs) g_cpu->ops->session_destroy(cs);
    for (int i = 0; i < 4; i++) vkt_weight_free(&w[i]);
}

/* test_vk_rows [kv-f16]: kv-f16 runs the cases and copy_pages over F16 pools (the chain's greedy
 * ids and the refusals are the F32 run's: they do not depend on the pool's type). */
int main(int argc, char **argv) {
    bool f16 = argc > 1 && !strcmp(argv[1], "kv-f16");
    if (f16) {
        g_kv_dtype = RLX_DTYPE_F16;
        g_tol = TOL_KV_F16;
    }
    g_vk = vkt_backend();
    if (!T_OK(rlx_backend_cpu_create(1, &g_cpu))) return 1;
    vkt_rng r = {4242};
    printf("paged runs against each sequence alone on the CPU%s\n", f16 ? ", F16 pools on Vulkan" : "");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], &r);
    test_copy_pages(&r);
    if (!f16) {
        test_chain(&r);
        test_refused(&r);
    }
    rlx_backend_destroy(g_cpu);
    rlx_backend_destroy(g_vk);
    vkt_check_validation();
    return t_summary("test_vk_rows");
}
