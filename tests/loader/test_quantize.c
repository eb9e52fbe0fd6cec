/* Quantizers (loader/quant/quantize*.c) checked through loader/core/dequant.c, which test_dequant validates
 * against gguf-py:
 *  - exact recovery: blocks whose values lie exactly on the format's grid (built from the block
 *    layouts of ggml-common.h: x = d*q, d*q + m, (d*sc)*q - dmin*m, ...) must come back bit for bit,
 *    which only happens when every field sits where the format puts it;
 *  - quantization error on normal data within bounds derived from the quantization step: a
 *    uniform quantizer of step D has an RMS error of D/sqrt(12); for 32 normal values the
 *    expected max |x| is 2.35 sigma and the expected max - min 4.14 sigma (2.08 sigma for max |x|
 *    of 16), which gives D for the plain absmax / min-max choice of each type; the stated bound is
 *    1.15 x that estimate (the search must do no worse than the plain choice);
 *  - zeros, constants, NaN and infinities: no crash, no undefined behaviour (UBSan), and
 *    rlx_quantize_find_nonfinite finds the first bad value;
 *  - whole files (rlx_quantize_file on a model written here): llama.cpp's order (blk.2 before
 *    blk.10: layers compare as numbers), 1-D tensors kept, the same bytes for 1 and 3 threads and
 *    for chunked rows, a NaN weight refused with its tensor and row named, quantized input refused,
 *    and no output file left by a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/core/dequant.h"
#include "loader/format/gguf.h"
#include "loader/quant/gguf_writer.h"
#include "loader/core/half.h"
#include "loader/quant/quantize.h"
#include "test_util.h"

/* ---- a small seeded normal generator (xorshift64* + Box-Muller) ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform01(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * 0x1p-53;
}

static float normal(void) {
    double u1 = uniform01(), u2 = uniform01();
    return (float)(sqrt(-2.0 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2));
}

static int rand_int(int lo, int hi) { return lo + (int)(uniform01() * (hi - lo + 1)); }

/* ---- helpers ---- */

static size_t type_bytes(uint32_t type, uint64_t n) {
    const rlx_dtype_info *info = rlx_dtype_get(type);
    return (size_t)(n / info->block_size * info->type_size);
}

/* Quantizes x (rows x cols) and dequantizes into y; returns max |x - y|. */
static float roundtrip(uint32_t type, const float *x, float *y, uint64_t rows, uint64_t cols) {
    size_t nb = type_bytes(type, rows * cols);
    uint8_t *q = malloc(nb);
    size_t wrote = rlx_quantize_rows(type, x, q, rows, cols);
    T_CHECK(wrote == nb, "%s: rlx_quantize_rows wrote %zu bytes, expected %zu", rlx_dtype_name(type), wrote, nb);
    rlx_dequantize(type, q, y, rows * cols);
    free(q);
    float worst = 0;
    for (uint64_t i = 0; i < rows * cols; i++) worst = fmaxf(worst, fabsf(x[i] - y[i]));
    return worst;
}

/* A power of two times a small integer is exact in f16 (and f32). */
static float pow2(int e) { return ldexpf(1.0f, e); }

/* ---- exact recovery ---- */

/* Values on the grid of each block type (32 elements unless noted); the extremes of each range
 * are present so the plain choice of scale already lands on the grid. */
static void grid_q4_0(float *x, int nmax) { /* x = d*q, q in [-nmax, nmax-1], -nmax present */
    float d = pow2(rand_int(-12, -4));
    for (int b = 0; b < 32; b++) x[b] = d * (float)rand_int(-nmax, nmax - 1);
    x[rand_int(0, 31)] = d * (float)-nmax;
}

static void grid_q4_1(float *x, int nmax) { /* x = d*q + m, q in [0, nmax], both ends present */
    float d = pow2(rand_int(-12, -4)), m = (float)rand_int(-64, 64) * pow2(-8);
    for (int b = 0; b < 32; b++) x[b] = d * (float)rand_int(0, nmax) + m;
    x[3] = m;
    x[17] = d * (float)nmax + m;
}

static void grid_q8_0(float *x) { /* x = d*q, q in [-127, 127], |q| = 127 present */
    float d = pow2(rand_int(-14, -6));
    for (int b = 0; b < 32; b++) x[b] = d * (float)rand_int(-127, 127);
    x[rand_int(0, 31)] = d * 127.0f * (rand_int(0, 1) ? 1.0f : -1.0f);
}

/* 256 elements: x = (d*sc_j)*q - dmin*m_j with 6-bit sc_j, m_j (63 present in both), q in
 * [0, nmax] with both ends present in every sub-block of 32. */
static void grid_kquant_affine(float *x, int nmax) {
    float d = pow2(rand_int(-14, -8)), dmin = pow2(rand_int(-14, -8));
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = rand_int(1, 63);
        m[j] = rand_int(0, 63);
    }
    sc[rand_int(0, 7)] = 63;
    m[rand_int(0, 7)] = 63;
    for (int j = 0; j < 8; j++) {
        for (int i = 0; i < 32; i++) x[32 * j + i] = d * (float)sc[j] * (float)rand_int(0, nmax) - dmin * (float)m[j];
        x[32 * j + 5] = -dmin * (float)m[j];
        x[32 * j + 20] = d * (float)sc[j] * (float)nmax - dmin * (float)m[j];
    }
}

/* 256 elements: x = (d*sc_j)*q with int8 sc_j (-128 present), q in [-32, 31], -32 present in
 * every sub-block of 16. */
static void grid_q6_k(float *x) {
    float d = pow2(rand_int(-16, -10));
    int sc[16];
    for (int j = 0; j < 16; j++) sc[j] = rand_int(-127, 127) | 1;
    sc[rand_int(0, 15)] = -128;
    for (int j = 0; j < 16; j++) {
        for (int i = 0; i < 16; i++) x[16 * j + i] = d * (float)sc[j] * (float)rand_int(-32, 31);
        x[16 * j + rand_int(0, 15)] = d * (float)sc[j] * -32.0f;
    }
}

static void test_exact_recovery(void) {
    static const uint32_t types[] = {RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1, RLX_DTYPE_Q8_0,
                                     RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K};
    enum { TRIALS = 200 };
    float x[256], y[256];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint32_t type = types[t];
        int n = (int)rlx_dtype_get(type)->block_size, bad = 0;
        float worst = 0;
        for (int k = 0; k < TRIALS; k++) {
            switch (type) {
            case RLX_DTYPE_Q4_0: grid_q4_0(x, 8); break;
            case RLX_DTYPE_Q5_0: grid_q4_0(x, 16); break;
            case RLX_DTYPE_Q4_1: grid_q4_1(x, 15); break;
            case RLX_DTYPE_Q5_1: grid_q4_1(x, 31); break;
            case RLX_DTYPE_Q8_0: grid_q8_0(x); break;
            case RLX_DTYPE_Q4_K: grid_kquant_affine(x, 15); break;
            case RLX_DTYPE_Q5_K: grid_kquant_affine(x, 31); break;
            default: grid_q6_k(x); break;
            }
            float e = roundtrip(type, x, y, 1, (uint64_t)n);
            worst = fmaxf(worst, e);
            bad += e != 0;
        }
        printf("exact recovery %-5s: %d blocks on the grid, %d not recovered bit for bit, worst |dx| %.3g\n",
               rlx_dtype_name(type), TRIALS, bad, worst);
        T_CHECK(bad == 0, "%s: %d of %d on-grid blocks not recovered exactly (worst %g)", rlx_dtype_name(type), bad,
                TRIALS, worst);
    }
}

/* ---- error on normal data ---- */

typedef struct error_bound {
    uint32_t type;
    double bound; /* relative RMS error, stated in the header comment's terms */
} error_bound;

/* D/sqrt(12)/sigma per type, times 1.15 (F16/BF16: the ulp of |x| is at most 2^-10 |x| / 2^-7 |x|,
 * so the bound is that over sqrt(12)):
 *   Q8_0: D = 2.35/127             -> 0.534% -> 0.62%
 *   Q4_0: D = 2.35/8               -> 8.48%  -> 9.8%
 *   Q5_0: D = 2.35/16              -> 4.24%  -> 4.9%
 *   Q4_1: D = 4.14/15              -> 7.97%  -> 9.2%
 *   Q5_1: D = 4.14/31              -> 3.86%  -> 4.4%
 *   Q4_K, Q5_K: as Q4_1, Q5_1 (sub-blocks of 32 with a min)
 *   Q6_K: D = 2.08/32 (blocks of 16) -> 1.88% -> 2.16%
 *   F16: 2^-10/sqrt(12) = 0.028%; BF16: 2^-7/sqrt(12) = 0.23% */
static const error_bound bounds[] = {
    {RLX_DTYPE_Q8_0, 0.0062}, {RLX_DTYPE_Q4_0, 0.098}, {RLX_DTYPE_Q5_0, 0.049}, {RLX_DTYPE_Q4_1, 0.092},
    {RLX_DTYPE_Q5_1, 0.044},  {RLX_DTYPE_Q4_K, 0.092}, {RLX_DTYPE_Q5_K, 0.044}, {RLX_DTYPE_Q6_K, 0.0216},
    {RLX_DTYPE_F16, 0.00028}, {RLX_DTYPE_BF16, 0.0023}, {RLX_DTYPE_F32, 0.0},
};

static void test_normal_error(void) {
    enum { ROWS = 64, COLS = 1024 };
    float *x = malloc(sizeof(float) * ROWS * COLS), *y = malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) x[i] = 0.02f * normal();
    for (size_t t = 0; t < sizeof bounds / sizeof bounds[0]; t++) {
        roundtrip(bounds[t].type, x, y, ROWS, COLS);
        double se = 0, ss = 0;
        for (int i = 0; i < ROWS * COLS; i++) {
            se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            ss += (double)x[i] * x[i];
        }
        double rel = sqrt(se / ss);
        printf("normal data %-5s: relative RMS error %.4f%% (bound %.4f%%)\n", rlx_dtype_name(bounds[t].type), 100 * rel,
               100 * bounds[t].bound);
        T_CHECK(rel <= bounds[t].bound, "%s: relative RMS error %.5f exceeds %.5f", rlx_dtype_name(bounds[t].type), rel,
                bounds[t].bound);
    }
    free(x);
    free(y);
}

/* ---- special values ---- */

static void test_special_values(void) {
    static const uint32_t types[] = {RLX_DTYPE_Q4_0, RLX_DTYPE_Q4_1, RLX_DTYPE_Q5_0, RLX_DTYPE_Q5_1,
                                     RLX_DTYPE_Q8_0, RLX_DTYPE_Q4_K, RLX_DTYPE_Q5_K, RLX_DTYPE_Q6_K};
    float x[256], y[256];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint32_t type = types[t];
        memset(x, 0, sizeof x);
        float e = roundtrip(type, x, y, 1, 256);
        T_CHECK(e == 0, "%s: zeros come back with error %g", rlx_dtype_name(type), e);
        for (int i = 0; i < 256; i++) x[i] = -0.375f; /* a constant block: the offset (or scale) alone */
        e = roundtrip(type, x, y, 1, 256);
        T_CHECK(e <= 0.375f * 0.01f, "%s: a constant block comes back with error %g", rlx_dtype_name(type), e);
        for (int i = 0; i < 256; i++) x[i] = i % 7 == 0 ? NAN : i % 11 == 0 ? INFINITY : (float)i;
        roundtrip(type, x, y, 1, 256); /* must not crash or trip UBSan; values are unspecified */
    }
    printf("special values: zeros exact, constant blocks within 1%%, NaN/inf blocks survive for %zu types\n",
           sizeof types / sizeof types[0]);
    float v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    T_CHECK(rlx_quantize_find_nonfinite(v, 10) == 10, "finite array reported non-finite");
    v[6] = -INFINITY;
    T_CHECK(rlx_quantize_find_nonfinite(v, 10) == 6, "first non-finite at %llu, expected 6",
            (unsigned long long)rlx_quantize_find_nonfinite(v, 10));
    T_CHECK(rlx_quant_nearest_int(2.5f) == 2 && rlx_quant_nearest_int(-3.5f) == -4 && rlx_quant_nearest_int(7.49f) == 7,
            "nearest_int does not round half to even");
    T_CHECK(rlx_quantize_supported(RLX_DTYPE_Q6_K) && !rlx_quantize_supported(RLX_DTYPE_Q2_K) &&
                !rlx_quantize_supported(RLX_DTYPE_IQ4_NL),
            "rlx_quantize_supported disagrees with the documented type list");
}

/* ---- whole files ---- */

/* Per layer (2 and 10) a [1024 x 1100] weight (over 2^20 elements: two chunks of rows in the
 * pipeline) and a 1-D norm, plus token_embd; values from the test's generator. */
static void write_model(const char *path, bool with_nan, uint32_t weight_type) {
    rlx_gguf_writer *w = NULL;
    if (!T_OK(rlx_gguf_writer_create(&w))) return;
    T_OK(rlx_gguf_writer_set_str(w, "general.architecture", "qwen3"));
    T_OK(rlx_gguf_writer_set_u32(w, "qwen3.block_count", 11));
    const char *names[] = {"token_embd.weight", "blk.10.attn_q.weight", "blk.10.attn_norm.weight",
                           "blk.2.attn_q.weight", "blk.2.attn_norm.weight"};
    for (int i = 0; i < 5; i++) {
        bool norm = strstr(names[i], "norm") != NULL;
        uint32_t type = norm ? RLX_DTYPE_F32 : i == 0 ? RLX_DTYPE_F32 : weight_type;
        T_OK(rlx_gguf_writer_add_tensor(w, names[i], type, norm ? 1 : 2, (const uint64_t[]){1024, 1100}));
    }
    T_OK(rlx_gguf_writer_begin(w, path));
    float *row = malloc(1024 * sizeof *row);
    uint8_t *packed = malloc(1024 * 2);
    for (int i = 0; i < 5; i++) {
        bool norm = strstr(names[i], "norm") != NULL;
        for (int r = 0; r < (norm ? 1 : 1100); r++) {
            for (int c = 0; c < 1024; c++) row[c] = norm ? 1.0f : 0.02f * normal();
            if (with_nan && i == 3 && r == 7) row[5] = NAN;
            if (!norm && i != 0 && weight_type != RLX_DTYPE_F32) {
                rlx_quantize_rows(weight_type, row, packed, 1, 1024);
                T_OK(rlx_gguf_writer_write(w, packed, rlx_dtype_get(weight_type)->type_size * 1024 /
                                                          rlx_dtype_get(weight_type)->block_size));
            } else {
                T_OK(rlx_gguf_writer_write(w, row, 1024 * sizeof *row));
            }
        }
    }
    T_OK(rlx_gguf_writer_finish(w));
    rlx_gguf_writer_destroy(w);
    free(row);
    free(packed);
}

static uint8_t *file_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void test_files(void) {
    char in[128], out1[128], out3[128], tmp[140];
    int pid = (int)getpid();
    snprintf(in, sizeof in, "/tmp/rlx_test_quantize_%d_in.gguf", pid);
    snprintf(out1, sizeof out1, "/tmp/rlx_test_quantize_%d_t1.gguf", pid);
    snprintf(out3, sizeof out3, "/tmp/rlx_test_quantize_%d_t3.gguf", pid);
    write_model(in, false, RLX_DTYPE_F16);
    const rlx_quant_recipe *r = rlx_quant_recipe_find("Q4_K_M");
    T_OK(rlx_quantize_file(in, out1, r, 1, NULL, NULL));
    T_OK(rlx_quantize_file(in, out3, r, 3, NULL, NULL));
    size_t n1 = 0, n3 = 0;
    uint8_t *b1 = file_bytes(out1, &n1), *b3 = file_bytes(out3, &n3);
    T_CHECK(b1 && b3 && n1 == n3 && n1 > 0 && !memcmp(b1, b3, n1), "1 and 3 threads wrote different files");
    free(b1);
    free(b3);
    rlx_gguf *g = NULL;
    if (T_OK(rlx_gguf_open(out1, &g))) {
        static const char *order[] = {"token_embd.weight", "blk.2.attn_norm.weight", "blk.2.attn_q.weight",
                                      "blk.10.attn_norm.weight", "blk.10.attn_q.weight"};
        static const uint32_t types[] = {RLX_DTYPE_Q6_K, RLX_DTYPE_F32, RLX_DTYPE_Q4_K, RLX_DTYPE_F32, RLX_DTYPE_Q4_K};
        for (int i = 0; i < 5 && (uint64_t)i < g->n_tensors; i++)
            T_CHECK(!strcmp(g->tensors[i].name.s, order[i]) && g->tensors[i].type == types[i],
                    "tensor %d is '%s' %s, expected '%s' %s", i, g->tensors[i].name.s, rlx_dtype_name(g->tensors[i].type),
                    order[i], rlx_dtype_name(types[i]));
        uint32_t ft = 0;
        rlx_status e = NULL;
        T_CHECK(rlx_gguf_get_u32(g, "general.file_type", &ft, &e) && ft == 15 && !strcmp(g->kv[g->n_kv - 1].key.s,
                                                                                         "general.file_type"),
                "general.file_type should be 15 and the last key");
        rlx_status_free(e);
        rlx_gguf_close(g);
    }
    printf("files: 5 tensors in llama.cpp's order, 1 and 3 threads byte-identical (%zu bytes)\n", n1);

    write_model(in, true, RLX_DTYPE_F32);
    T_ERR(rlx_quantize_file(in, out1, r, 2, NULL, NULL), RLX_ERR_BAD_FILE, "tensor 'blk.2.attn_q.weight': row 7 column 5");
    write_model(in, false, RLX_DTYPE_Q8_0);
    T_ERR(rlx_quantize_file(in, out3, r, 2, NULL, NULL), RLX_ERR_UNSUPPORTED, "'blk.10.attn_q.weight' is already quantized");
    snprintf(tmp, sizeof tmp, "%s.tmp", out1);
    T_CHECK(access(tmp, F_OK) != 0, "a failed quantization left %s", tmp);
    remove(in);
    remove(out1);
    remove(out3);
}

int main(void) {
    test_exact_recovery();
    test_normal_error();
    test_special_values();
    test_files();
    return t_summary("test_quantize");
}
