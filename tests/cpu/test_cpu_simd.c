/* The CPU backend's SIMD kernels (cpu_fallback/cpu_simd*.c) and thread pool, on every variant this
 * CPU runs (the portable baseline always; AVX2+FMA+F16C and AVX-512F where present).
 *
 * Truths and where they come from:
 *   - dequant[type] of random blocks equals loader/core/dequant's rlx_dequantize bit for bit (itself
 *     checked against gguf-py in test_dequant); f16/bf16 rows cover every finite bit pattern
 *     class (subnormals, infinities) and block scales any finite f16;
 *   - dot[type](x, w) equals gemv(x, dequant(w)) bit for bit (the fixed summation order the
 *     backend promises, cpu_internal.h), and both are within 1e-5 * sum|x*w| of a double sum;
 *   - a MATMUL gives the same bits for 1, 2, 3 and 8 threads, and the same bits whether a row of x
 *     runs alone (decode: weights decoded in registers) or among 17 (prefill: dequantized tiles);
 *   - the pool runs every item exactly once, on at most the threads a job asks for. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"
#include "loader/core/dequant.h"
#include "loader/core/half.h"
#include "test_util.h"

static const uint32_t types[] = {RLX_DTYPE_F32,  RLX_DTYPE_F16,  RLX_DTYPE_BF16, RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_0,
                                 RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q2_K, RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K,
                                 RLX_DTYPE_Q6_K};
#define N_TYPES (sizeof types / sizeof types[0])

/* ---- random data (splitmix64) ---- */

static uint64_t rng_state = 0x5eed5eedull;

static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_sym(void) { return (float)((double)(rng_next() >> 40) / 8388608.0 - 1.0); } /* [-1, 1) */

static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, sizeof v); }

/* An f16 bit pattern: any non-NaN one when `wild`, else a small positive scale (finite sums). */
static uint16_t rand_f16(bool wild, float lo) {
    if (!wild) return rlx_f32_to_f16(lo + lo * (float)(rng_next() % 1000) / 1000.0f);
    for (;;) {
        uint16_t h = (uint16_t)rng_next();
        if ((h & 0x7c00u) != 0x7c00u || (h & 0x3ffu) == 0) return h;
    }
}

/* n elements of `type`. wild: f16/bf16 values and block scales of any non-NaN pattern (for the
 * dequantization check); else values in [-1, 1) and small scales (for dot products). */
static uint8_t *rand_row_data(uint32_t type, int64_t n, bool wild, size_t *bytes_out) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    size_t bytes = (size_t)(n / info->block_size) * info->type_size;
    uint8_t *d = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) d[i] = (uint8_t)rng_next();
    if (type == RLX_DTYPE_F32) {
        for (int64_t i = 0; i < n; i++) {
            float v = rng_sym();
            memcpy(d + 4 * i, &v, 4);
        }
    } else if (type == RLX_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++) put_u16(d + 2 * i, wild ? rand_f16(true, 0.0f) : rlx_f32_to_f16(rng_sym()));
    } else if (type == RLX_DTYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)rng_next();
            bool nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
            put_u16(d + 2 * i, wild && !nan ? h : rlx_f32_to_bf16(rng_sym()));
        }
    } else {
        /* f16 scale fields (offsets: ggml-common.h block structs) */
        int n_f16 = 1, at = 0;
        float lo = 0.01f;
        if (type == RLX_DTYPE_Q6_K) at = 208, lo = 0.0005f;
        if (type == RLX_DTYPE_Q4_1 || type == RLX_DTYPE_Q4_K || type == RLX_DTYPE_Q5_K) n_f16 = 2;
        if (type == RLX_DTYPE_Q4_K || type == RLX_DTYPE_Q5_K) lo = 0.002f;
        if (type == RLX_DTYPE_Q2_K) at = 80, n_f16 = 2;
        for (size_t b = 0; b < bytes / info->type_size; b++)
            for (int f = 0; f < n_f16; f++) put_u16(d + b * info->type_size + at + 2 * f, rand_f16(wild, lo));
    }
    *bytes_out = bytes;
    return d;
}

static float *rand_x(int64_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = rng_sym();
    return x;
}

/* ---- kernels ---- */

static void check_dequant(const rlx_cpu_simd *s, uint32_t type, int64_t n) {
    size_t bytes;
    uint8_t *w = rand_row_data(type, n, true, &bytes);
    float *got = malloc((size_t)n * sizeof *got), *want = malloc((size_t)n * sizeof *want);
    s->dequant[type](got, w, n);
    rlx_dequantize(type, w, want, (uint64_t)n);
    int64_t first = -1;
    for (int64_t i = 0; i < n && first < 0; i++)
        if (memcmp(&got[i], &want[i], 4) != 0 && !(isnan(got[i]) && isnan(want[i]))) first = i;
    T_CHECK(first < 0, "%s dequant %s n=%ld: element %ld is %a, rlx_dequantize gives %a", s->name,
            rlx_dtype_name(type), (long)n, (long)first, first < 0 ? 0.0 : got[first], first < 0 ? 0.0 : want[first]);
    free(w);
    free(got);
    free(want);
}

/* dot vs gemv over rlx_dequantize (bits) and vs a double sum; returns the worst error ratio. */
static double check_dot(const rlx_cpu_simd *s, uint32_t type, int64_t n, int64_t rows) {
    size_t row_bytes;
    uint8_t *w = rand_row_data(type, n * rows, false, &row_bytes);
    row_bytes /= (size_t)rows;
    float *x = rand_x(n), *deq = malloc((size_t)(n * rows) * sizeof *deq);
    float *got = malloc((size_t)rows * sizeof *got), *via = malloc((size_t)rows * sizeof *via);
    rlx_dequantize(type, w, deq, (uint64_t)(n * rows));
    s->dot[type](got, x, w, row_bytes, rows, n);
    s->gemv(via, x, deq, n, rows, n);
    T_CHECK(memcmp(got, via, (size_t)rows * sizeof *got) == 0, "%s dot %s n=%ld: differs from gemv over the "
            "dequantized rows (row 0: %a vs %a)", s->name, rlx_dtype_name(type), (long)n, got[0], via[0]);
    double worst = 0;
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0, mag = 0;
        for (int64_t c = 0; c < n; c++) {
            double p = (double)x[c] * (double)deq[r * n + c];
            sum += p;
            mag += fabs(p);
        }
        double ratio = fabs((double)got[r] - sum) / (1e-5 * mag + 1e-30);
        worst = ratio > worst ? ratio : worst;
    }
    T_CHECK(worst <= 1.0, "%s dot %s n=%ld: error %.3g x the bound 1e-5 * sum|x*w|", s->name, rlx_dtype_name(type),
            (long)n, worst);
    free(w);
    free(x);
    free(deq);
    free(got);
    free(via);
    return worst;
}

static void test_kernels(const rlx_cpu_simd *s) {
    static const int64_t plain_n[] = {1, 5, 31, 33, 100, 256, 1001};
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = types[t];
        int64_t bs = rlx_dtype_get(type)->block_size;
        bool plain = bs == 1;
        if (s->dequant[type])
            for (int i = 0; i < 7; i++) check_dequant(s, type, plain ? plain_n[i] : bs * (i + 1));
        if (!s->dot[type]) {
            printf("  %-4s %-5s no direct kernel (rows are dequantized by rlx_dequantize)\n", s->name,
                   rlx_dtype_name(type));
            continue;
        }
        double worst = 0;
        for (int i = 0; i < 7; i++) {
            double r = check_dot(s, type, plain ? plain_n[i] : bs * (i + 1), 5);
            worst = r > worst ? r : worst;
        }
        printf("  %-4s %-5s dequant == rlx_dequantize%s, dot == gemv(dequant) bitwise, worst error %.3g of "
               "1e-5 * sum|x*w|\n", s->name, rlx_dtype_name(type), s->dequant[type] ? "" : " (F32: none needed)",
               worst);
    }
}

/* ---- the backend: thread counts and paths ---- */

/* The options the backends under test are created with: the variant each part of main() tests. */
static rlx_cpu_options g_options;

/* y [n_tokens rows of 17, m] = x @ w^T on a backend of `threads` threads. */
static void run_matmul(int threads, const rlx_weight *w, int64_t m, int64_t k, const float *x, int32_t n_tokens,
                       float *y) {
    rlx_backend *b = NULL;
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    rlx_graph *g = NULL;
    if (!T_OK(rlx_backend_cpu_create_with(threads, &g_options, &b)) || !T_OK(rlx_graph_create(&g))) exit(1);
    /* the options, not the environment, chose the variant */
    const char *ran = ((rlx_cpu_backend *)b)->simd->name;
    if (g_options.simd) T_CHECK(strcmp(ran, g_options.simd) == 0, "backend runs %s, options ask for %s", ran, g_options.simd);
    rlx_node xn = rlx_input(g, "x", RLX_DTYPE_F32, rlx_shape_make(2, (int64_t[]){17, k}));
    rlx_node wn = rlx_weight_node(g, w->name, w->type, rlx_shape_make(2, (int64_t[]){m, k}));
    rlx_graph_mark_output(g, rlx_matmul(g, xn, wn), "y");
    rlx_state_spec kv = {0};
    rlx_status st = b->ops->session_create(b, w, 1, &kv, &s);
    if (!st) st = b->ops->compile(s, g, &p);
    if (!st) {
        rlx_run_args a = {.n_tokens = n_tokens, .inputs = (const void *[]){x}, .outputs = (void *[]){y}};
        st = b->ops->run(p, &a);
    }
    T_OK(st);
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
    rlx_graph_destroy(g);
    rlx_backend_destroy(b);
}

static void test_paths_and_threads(const char *variant, uint32_t type, int64_t m, int64_t k) {
    size_t bytes;
    uint8_t *data = rand_row_data(type, m * k, false, &bytes);
    rlx_weight w = {.name = "w", .type = type, .n_dims = 2, .ne = {(uint64_t)k, (uint64_t)m, 1, 1}, .data = data,
                    .nbytes = bytes};
    float *x = rand_x(17 * k);
    size_t out = (size_t)(17 * m) * sizeof(float);
    float *ref = malloc(out), *y = malloc(out);
    run_matmul(1, &w, m, k, x, 17, ref);
    static const int threads[] = {1, 2, 3, 8};
    static const int32_t n_tok[] = {1, 2, 4, 17};
    bool same = true;
    for (int ti = 0; ti < 4; ti++)
        for (int ni = 0; ni < 4; ni++) {
            if (threads[ti] == 1 && n_tok[ni] == 17) continue;
            run_matmul(threads[ti], &w, m, k, x, n_tok[ni], y);
            bool eq = memcmp(y, ref, (size_t)(n_tok[ni] * m) * sizeof(float)) == 0;
            T_CHECK(eq, "%s MATMUL %s [%ld, %ld]: %d threads, %d rows of x differ from 1 thread, 17 rows", variant,
                    rlx_dtype_name(type), (long)m, (long)k, threads[ti], n_tok[ni]);
            same = same && eq;
        }
    printf("  %-4s MATMUL %-5s w [%ld, %ld]: 1/2/4/17 rows of x on 1/2/3/8 threads vs 17 rows on 1 thread: %s\n",
           variant, rlx_dtype_name(type), (long)m, (long)k, same ? "bitwise identical" : "DIFFERENT");
    free(data);
    free(x);
    free(ref);
    free(y);
}

/* ---- the pool ---- */

typedef struct pool_check {
    atomic_int *hits;
    atomic_int max_tid;
} pool_check;

static void pool_task(void *ctx, int64_t begin, int64_t end, int tid) {
    pool_check *c = ctx;
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
    int seen = atomic_load(&c->max_tid);
    while (tid > seen && !atomic_compare_exchange_weak(&c->max_tid, &seen, tid)) {
    }
}

static void test_pool(void) {
    rlx_thread_pool *p = NULL;
    if (!T_OK(rlx_thread_pool_create(6, &p))) return;
    enum { N = 1000 };
    atomic_int hits[N];
    bool ok = true;
    for (int threads = 1; threads <= 8; threads++)
        for (int64_t chunk = 1; chunk <= 300; chunk *= 7)
            for (int rep = 0; rep < 20; rep++) {
                for (int i = 0; i < N; i++) atomic_init(&hits[i], 0);
                pool_check c = {.hits = hits};
                atomic_init(&c.max_tid, 0);
                rlx_thread_pool_run(p, threads, N, chunk, pool_task, &c);
                int bad = -1;
                for (int i = 0; i < N && bad < 0; i++)
                    if (atomic_load(&hits[i]) != 1) bad = i;
                int limit = threads < 6 ? threads : 6;
                bool fine = bad < 0 && atomic_load(&c.max_tid) < limit;
                T_CHECK(fine, "pool of 6, job of %d threads, chunk %ld: item %d ran %d times, highest tid %d", threads,
                        (long)chunk, bad, bad < 0 ? 1 : atomic_load(&hits[bad]), atomic_load(&c.max_tid));
                ok = ok && fine;
            }
    rlx_thread_pool_destroy(p);
    printf("  pool of 6: jobs of 1..8 threads, chunks 1..295, 20 runs each: every item once, tids within the "
           "job's count: %s\n", ok ? "yes" : "NO");
}

int main(void) {
    const rlx_cpu_simd *all[RLX_CPU_SIMD_MAX];
    int n = rlx_cpu_simd_all(all);
    printf("variants this CPU runs: %d (best: %s)\n", n, all[n - 1]->name);
    for (int v = 0; v < n; v++) {
        printf("kernels: %s\n", all[v]->name);
        test_kernels(all[v]);
        /* the backend picks its variant from its options (RLX_CPU_SIMD) when it is created */
        g_options.simd = all[v]->name;
        printf("backend: %s\n", all[v]->name);
        for (size_t t = 0; t < N_TYPES; t++) {
            /* big enough for several threads (cpu_backend.c: WORK_PER_THREAD), K odd in blocks */
            int64_t k = rlx_dtype_get(types[t])->block_size == 256 ? 768 : 480;
            test_paths_and_threads(all[v]->name, types[t], 301, k);
        }
        test_paths_and_threads(all[v]->name, RLX_DTYPE_F16, 1000, 256);
        test_paths_and_threads(all[v]->name, RLX_DTYPE_F16, 600, 200); /* a wide variant's short rows */
    }
    g_options.simd = NULL;
    printf("thread pool\n");
    test_pool();
    return t_summary("test_cpu_simd");
}
