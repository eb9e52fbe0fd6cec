/* Dequantization to f32, checked three ways:
 *  1. Fixtures: ../shared/fixtures/models/qwen3/dequant-<TYPE>.json holds, for every tensor of
 *     qwen3-<TYPE>.gguf, gguf-py's dequantized `sum`, `sum_sq` and 32 `values` sampled at flat
 *     row-major index (i*7919) % n (a 2-D tensor is [ne1][ne0]; the file's `index_rule` says so).
 *  2. Hand-packed blocks of every type, laid out as ggml-common.h and gguf-py's quants.py describe
 *     them, against the documented formula (x = d*q, d*q + m, (d*sc)*q - dmin*m, ...).
 *  3. f16 / bf16 conversions on edge values whose results IEEE 754 fixes. */
#include <dirent.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/core/dequant.h"
#include "loader/format/gguf.h"
#include "loader/core/half.h"
#include "test_util.h"

/* ---- 1. fixtures ---- */

static double rel_err(double got, double want) {
    double diff = fabs(got - want);
    if (diff == 0) return 0;
    return diff / fmax(fabs(want), 1e-30);
}

typedef struct worst {
    double sum, sum_sq, value;
} worst;

/* Compares one tensor against its JSON entry; returns false when it could not be compared. */
static bool check_tensor(const rlx_gguf_tensor *t, json_t *ref, const char *file, worst *w) {
    const char *name = t->name.s;
    const char *want_type = json_string_value(json_object_get(ref, "type"));
    json_t *ne = json_object_get(ref, "ne");
    uint64_t n = (uint64_t)json_integer_value(json_object_get(ref, "n"));
    T_CHECK(want_type && strcmp(want_type, rlx_dtype_name(t->type)) == 0, "%s %s: type %s, fixture says %s", file, name,
            rlx_dtype_name(t->type), want_type ? want_type : "?");
    T_CHECK(n == t->n_elements && json_array_size(ne) == t->n_dims, "%s %s: %" PRIu64 " elements in %u dims, fixture %" PRIu64,
            file, name, t->n_elements, t->n_dims, n);
    for (size_t d = 0; d < json_array_size(ne) && d < RLX_GGUF_MAX_DIMS; d++)
        T_CHECK((uint64_t)json_integer_value(json_array_get(ne, d)) == t->ne[d], "%s %s: ne[%zu]", file, name, d);
    if (n != t->n_elements) return false;

    float *x = malloc(n * sizeof *x);
    if (!x || !T_OK(rlx_dequantize_tensor(t->type, t->data, t->nbytes, x, n, name))) {
        free(x);
        return false;
    }
    double sum = 0, sum_sq = 0; /* double: 131072 f32 terms would lose ~1e-5 relative in float */
    for (uint64_t i = 0; i < n; i++) {
        sum += x[i];
        sum_sq += (double)x[i] * x[i];
    }
    double want_sum = json_number_value(json_object_get(ref, "sum"));
    double want_sq = json_number_value(json_object_get(ref, "sum_sq"));
    /* A sum of random weights can be near 0; the relative scale is then that of the terms. */
    double sum_scale = fmax(fabs(want_sum), sqrt(want_sq));
    double e_sum = fabs(sum - want_sum) / fmax(sum_scale, 1e-30), e_sq = rel_err(sum_sq, want_sq);
    T_CHECK(e_sum <= 1e-6, "%s %s: sum %.17g, gguf-py %.17g (rel %.3g)", file, name, sum, want_sum, e_sum);
    T_CHECK(e_sq <= 1e-6, "%s %s: sum_sq %.17g, gguf-py %.17g (rel %.3g)", file, name, sum_sq, want_sq, e_sq);
    w->sum = fmax(w->sum, e_sum);
    w->sum_sq = fmax(w->sum_sq, e_sq);

    json_t *values = json_object_get(ref, "values");
    T_CHECK(json_array_size(values) == 32, "%s %s: %zu sampled values, expected 32", file, name, json_array_size(values));
    for (size_t i = 0; i < json_array_size(values); i++) {
        uint64_t idx = (uint64_t)i * 7919 % n;
        double want = json_number_value(json_array_get(values, i));
        double e = rel_err(x[idx], want);
        T_CHECK(e <= 1e-6, "%s %s: value[%" PRIu64 "] = %.9g, gguf-py %.9g", file, name, idx, x[idx], want);
        w->value = fmax(w->value, e);
    }
    free(x);
    return true;
}

static void check_fixture_file(const char *type) {
    char rel_json[256], rel_gguf[256];
    snprintf(rel_json, sizeof rel_json, "models/qwen3/dequant-%s.json", type);
    snprintf(rel_gguf, sizeof rel_gguf, "models/qwen3/qwen3-%s.gguf", type);
    t_require_fixture(rel_gguf);
    json_t *j = t_load_json(t_fixture(rel_json));
    rlx_gguf *g = NULL;
    if (!T_OK(rlx_gguf_open(t_fixture(rel_gguf), &g))) {
        json_decref(j);
        return;
    }
    json_t *tensors = json_object_get(j, "tensors");
    T_CHECK(json_object_size(tensors) == g->n_tensors, "%s: fixture lists %zu tensors, file has %" PRIu64, rel_gguf,
            json_object_size(tensors), g->n_tensors);
    worst w = {0, 0, 0};
    int compared = 0;
    const char *name;
    json_t *ref;
    json_object_foreach(tensors, name, ref) {
        const rlx_gguf_tensor *t = rlx_gguf_find_tensor(g, name);
        T_CHECK(t != NULL, "%s: tensor %s missing", rel_gguf, name);
        if (t && check_tensor(t, ref, rel_gguf, &w)) compared++;
    }
    printf("%-28s %2d tensors: worst rel err sum %.2e, sum_sq %.2e, sampled values %.2e\n", rel_gguf, compared, w.sum,
           w.sum_sq, w.value);
    rlx_gguf_close(g);
    json_decref(j);
}

static void test_fixtures(void) {
    t_require_fixture("models/qwen3/dequant-Q8_0.json");
    DIR *d = opendir(t_fixture("models/qwen3"));
    T_CHECK(d != NULL, "cannot list %s", t_fixture("models/qwen3"));
    if (!d) return;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "dequant-", 8) != 0 || len < 14 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
        char type[64];
        snprintf(type, sizeof type, "%.*s", (int)(len - 13), e->d_name + 8);
        check_fixture_file(type);
        files++;
    }
    closedir(d);
    T_CHECK(files >= 7, "found %d dequant-*.json files, expected the 7 the README lists", files);
}

/* ---- 2. hand-packed blocks ---- */

static void put_f16(uint8_t *p, uint16_t h) {
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Dequantizes one block and compares with `want` exactly: both sides do the same float ops. */
static void check_block(uint32_t type, const uint8_t *block, size_t bytes, const float *want, uint64_t n) {
    float got[256];
    if (!T_OK(rlx_dequantize_tensor(type, block, bytes, got, n, rlx_dtype_name(type)))) return;
    int bad = 0;
    double worst_diff = 0;
    for (uint64_t i = 0; i < n; i++) {
        worst_diff = fmax(worst_diff, fabs((double)got[i] - want[i]));
        if (got[i] != want[i] && bad++ < 4)
            t_fail(__FILE__, __LINE__, "%s element %" PRIu64 ": got %.9g, expected %.9g", rlx_dtype_name(type), i, got[i],
                   want[i]);
    }
    t_checks++;
    printf("%-5s hand-packed block: %" PRIu64 " elements, worst |diff| %.3g\n", rlx_dtype_name(type), n, worst_diff);
}

/* 32-element types: quant j is the low nibble of qs[j], quant j+16 the high nibble of qs[j]. */
static void pack_nibbles(uint8_t *qs, const int *q) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

static void test_q4_q5_q8_0(void) {
    uint8_t b[64] = {0};
    float want[32];
    int q[32];

    /* block_q4_0: d = 0.5 (f16 0x3800), x = (q - 8) * d */
    put_f16(b, 0x3800);
    for (int j = 0; j < 32; j++) q[j] = (j * 7 + 3) % 16, want[j] = (float)(q[j] - 8) * 0.5f;
    pack_nibbles(b + 2, q);
    check_block(RLX_DTYPE_Q4_0, b, 18, want, 32);

    /* block_q4_1: d = 0.25 (0x3400), m = -1 (0xBC00), x = q * d + m */
    put_f16(b, 0x3400), put_f16(b + 2, 0xbc00);
    for (int j = 0; j < 32; j++) q[j] = (j * 5 + 1) % 16, want[j] = (float)q[j] * 0.25f + -1.0f;
    pack_nibbles(b + 4, q);
    check_block(RLX_DTYPE_Q4_1, b, 20, want, 32);

    /* block_q5_0: d = 0.5, qh bit j = 5th bit of quant j, x = (q - 16) * d */
    memset(b, 0, sizeof b);
    put_f16(b, 0x3800);
    uint32_t qh = 0;
    for (int j = 0; j < 32; j++) {
        q[j] = (j * 11 + 5) % 32;
        qh |= (uint32_t)(q[j] >> 4) << j;
        want[j] = (float)(q[j] - 16) * 0.5f;
    }
    for (int i = 0; i < 4; i++) b[2 + i] = (uint8_t)(qh >> (8 * i));
    pack_nibbles(b + 6, q);
    check_block(RLX_DTYPE_Q5_0, b, 22, want, 32);

    /* block_q5_1: d = 0.25, m = 2 (0x4000), x = q * d + m */
    memset(b, 0, sizeof b);
    put_f16(b, 0x3400), put_f16(b + 2, 0x4000);
    qh = 0;
    for (int j = 0; j < 32; j++) {
        q[j] = (j * 13 + 2) % 32;
        qh |= (uint32_t)(q[j] >> 4) << j;
        want[j] = (float)q[j] * 0.25f + 2.0f;
    }
    for (int i = 0; i < 4; i++) b[4 + i] = (uint8_t)(qh >> (8 * i));
    pack_nibbles(b + 8, q);
    check_block(RLX_DTYPE_Q5_1, b, 24, want, 32);

    /* block_q8_0: d = 2 (0x4000), int8 quants, x = q * d */
    put_f16(b, 0x4000);
    for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)(j * 8 - 128), want[j] = (float)(j * 8 - 128) * 2.0f;
    check_block(RLX_DTYPE_Q8_0, b, 34, want, 32);
}

/* Q4_K/Q5_K scales: 8 six-bit scales sc and mins m in 12 bytes (gguf-py Q4_K.get_scale_min):
 * bytes 0-3 = sc[0..3] | top 2 bits of sc[4..7] << 6; bytes 4-7 = m[0..3] | top bits of m[4..7] << 6;
 * bytes 8-11 = low nibble of sc[4..7] | low nibble of m[4..7] << 4. */
static void pack_k_scales(uint8_t *s, const int *sc, const int *m) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

static void test_q4_k_q5_k(void) {
    uint8_t b[176] = {0};
    float want[256];
    int sc[8], m[8], q[256];
    for (int g = 0; g < 8; g++) sc[g] = (g * 9 + 5) % 64, m[g] = (g * 13 + 60) % 64;
    const float d = 0.5f, dmin = 0.25f; /* f16 0x3800, 0x3400 */

    /* block_q4_K: d, dmin, scales[12], qs[128]; group g of 32 takes nibble (g%2) of qs[32*(g/2) + l] */
    put_f16(b, 0x3800), put_f16(b + 2, 0x3400);
    pack_k_scales(b + 4, sc, m);
    for (int e = 0; e < 256; e++) {
        int g = e / 32, l = e % 32;
        q[e] = (e * 7 + 1) % 16;
        b[16 + 32 * (g / 2) + l] |= (uint8_t)(q[e] << (4 * (g % 2)));
        want[e] = (d * (float)sc[g]) * (float)q[e] - dmin * (float)m[g];
    }
    check_block(RLX_DTYPE_Q4_K, b, 144, want, 256);

    /* block_q5_K: d, dmin, scales[12], qh[32], qs[128]; the 5th bit of element l of group g is bit g of qh[l] */
    memset(b, 0, sizeof b);
    put_f16(b, 0x3800), put_f16(b + 2, 0x3400);
    pack_k_scales(b + 4, sc, m);
    for (int e = 0; e < 256; e++) {
        int g = e / 32, l = e % 32;
        q[e] = (e * 11 + 3) % 32;
        b[48 + 32 * (g / 2) + l] |= (uint8_t)((q[e] & 15) << (4 * (g % 2)));
        b[16 + l] |= (uint8_t)((q[e] >> 4) << g);
        want[e] = (d * (float)sc[g]) * (float)q[e] - dmin * (float)m[g];
    }
    check_block(RLX_DTYPE_Q5_K, b, 176, want, 256);
}

static void test_q6_k_q8_k(void) {
    uint8_t b[292] = {0};
    float want[256];
    /* block_q6_K: ql[128], qh[64], int8 scales[16], d. In half h, element l of group g (0..3)
     * takes nibble (g/2) of ql[64h + 32(g%2) + l] and bits 2g of qh[32h + l]; x = (d*sc[e/16])*(q-32). */
    const float d = 0.5f;
    put_f16(b + 208, 0x3800);
    for (int k = 0; k < 16; k++) b[192 + k] = (uint8_t)(int8_t)(k * 9 - 70);
    for (int e = 0; e < 256; e++) {
        int h = e / 128, g = (e % 128) / 32, l = e % 32, q = (e * 5 + 7) % 64;
        b[64 * h + 32 * (g % 2) + l] |= (uint8_t)((q & 15) << (4 * (g / 2)));
        b[128 + 32 * h + l] |= (uint8_t)((q >> 4) << (2 * g));
        want[e] = (d * (float)(e / 16 * 9 - 70)) * (float)(q - 32);
    }
    check_block(RLX_DTYPE_Q6_K, b, 210, want, 256);

    /* block_q8_K: float d, int8 qs[256], int16 bsums[16] (not needed to dequantize); x = d * q */
    memset(b, 0, sizeof b);
    const float d8 = 0.125f;
    memcpy(b, &d8, 4); /* little-endian host, as GGUF */
    for (int e = 0; e < 256; e++) b[4 + e] = (uint8_t)(int8_t)(e - 128), want[e] = d8 * (float)(e - 128);
    check_block(RLX_DTYPE_Q8_K, b, 292, want, 256);
}

static void test_q2_k_q3_k(void) {
    uint8_t b[110] = {0};
    float want[256];
    /* block_q2_K: scales[16] (low nibble scale, high nibble min, per 16), qs[64], d, dmin.
     * Element e: half h = e/128, shift 2*((e%128)/32), byte 32h + e%32. x = (d*sc)*q - dmin*m. */
    const float d = 0.5f, dmin = 0.25f;
    put_f16(b + 80, 0x3800), put_f16(b + 82, 0x3400);
    for (int k = 0; k < 16; k++) b[k] = (uint8_t)(((k * 5 + 3) % 16) | (((k * 7 + 1) % 16) << 4));
    for (int e = 0; e < 256; e++) {
        int h = e / 128, shift = 2 * ((e % 128) / 32), q = (e * 3 + e / 7) % 4, k = e / 16;
        b[16 + 32 * h + e % 32] |= (uint8_t)(q << shift);
        want[e] = (d * (float)((k * 5 + 3) % 16)) * (float)q - dmin * (float)((k * 7 + 1) % 16);
    }
    check_block(RLX_DTYPE_Q2_K, b, 84, want, 256);

    /* block_q3_K: hmask[32], qs[64], scales[12], d. Low 2 bits as Q2_K; bit e/32 of hmask[e%32]
     * set means no offset, clear means -4. 16 six-bit scales stored as sc+32 (gguf-py Q3_K):
     * low nibbles in bytes 0-7 (scale k in byte k%8, nibble k/8), top 2 bits at bits 2*(k/4)
     * of byte 8 + k%4. x = (d*(stored-32)) * (q - offset). */
    memset(b, 0, sizeof b);
    put_f16(b + 108, 0x3800);
    int stored[16];
    for (int k = 0; k < 16; k++) {
        stored[k] = (k * 23 + 9) % 64;
        b[96 + k % 8] |= (uint8_t)((stored[k] & 15) << (4 * (k / 8)));
        b[96 + 8 + k % 4] |= (uint8_t)((stored[k] >> 4) << (2 * (k / 4)));
    }
    for (int e = 0; e < 256; e++) {
        int h = e / 128, shift = 2 * ((e % 128) / 32), q = (e * 5 + 1) % 4, high = (e / 3) % 2;
        b[32 + 32 * h + e % 32] |= (uint8_t)(q << shift);
        b[e % 32] |= (uint8_t)(high << (e / 32));
        want[e] = (d * (float)(stored[e / 16] - 32)) * (float)(q - (high ? 0 : 4));
    }
    check_block(RLX_DTYPE_Q3_K, b, 110, want, 256);
}

static void test_plain(void) {
    uint8_t b[16];
    float want[4] = {1.5f, -0.0f, 1e30f, -3.25f};
    memcpy(b, want, sizeof want);
    check_block(RLX_DTYPE_F32, b, 16, want, 4);
    static const uint16_t bf[4] = {0x3f80, 0xc040, 0x0001, 0x7f80}; /* 1, -3, 2^-133, inf */
    float bf_want[4] = {1.0f, -3.0f, 0x1p-133f, INFINITY};
    for (int i = 0; i < 4; i++) put_f16(b + 2 * i, bf[i]);
    check_block(RLX_DTYPE_BF16, b, 8, bf_want, 4);
    static const uint16_t h[4] = {0x3c00, 0x0001, 0xfbff, 0x3555}; /* 1, 2^-24, -65504, 0.333251953125 */
    float h_want[4] = {1.0f, 0x1p-24f, -65504.0f, 0.333251953125f};
    for (int i = 0; i < 4; i++) put_f16(b + 2 * i, h[i]);
    check_block(RLX_DTYPE_F16, b, 8, h_want, 4);
}

/* ---- 3. f16 / bf16 conversions ---- */

static bool same_float(float a, float b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

static void test_half_edges(void) {
    static const struct {
        uint16_t h;
        float f;
    } f16[] = {
        {0x3c00, 1.0f},      {0xc000, -2.0f},          {0x7bff, 65504.0f}, {0x0400, 0x1p-14f}, /* smallest normal */
        {0x0001, 0x1p-24f},  {0x03ff, 1023 * 0x1p-24f}, {0x8001, -0x1p-24f}, {0x0000, 0.0f},
        {0x8000, -0.0f},     {0x7c00, INFINITY},       {0xfc00, -INFINITY}, {0x3555, 0.333251953125f},
    };
    for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++) {
        float f = rlx_f16_to_f32(f16[i].h);
        T_CHECK(same_float(f, f16[i].f), "f16 0x%04x -> %.9g, expected %.9g", f16[i].h, f, f16[i].f);
        uint16_t back = rlx_f32_to_f16(f16[i].f);
        T_CHECK(back == f16[i].h, "f32 %.9g -> f16 0x%04x, expected 0x%04x", f16[i].f, back, f16[i].h);
    }
    T_CHECK(isnan(rlx_f16_to_f32(0x7e00)) && isnan(rlx_f16_to_f32(0xfd01)), "f16 NaNs");
    uint16_t nan16 = rlx_f32_to_f16(NAN);
    T_CHECK((nan16 & 0x7c00) == 0x7c00 && (nan16 & 0x03ff) != 0, "f32 NaN -> f16 0x%04x is not a NaN", nan16);
    /* Round to nearest, ties to even (IEEE 754 default rounding). */
    static const struct {
        float f;
        uint16_t h;
    } rounding[] = {
        {65519.996f, 0x7bff}, {65520.0f, 0x7c00},      {1e10f, 0x7c00},         {0x1p-25f, 0x0000}, /* tie -> 0 */
        {0x1.8p-24f, 0x0002}, {0x1.000002p-25f, 0x0001}, {1.0f + 0x1p-11f, 0x3c00}, /* tie -> even 1.0 */
        {1.0f + 0x3p-11f, 0x3c02}, {1.0f + 0x1.8p-11f, 0x3c01}, {0x1.ffcp-15f, 0x0400}, /* subnormal rounds up to normal */
        {-0x1p-26f, 0x8000},
    };
    for (size_t i = 0; i < sizeof rounding / sizeof rounding[0]; i++) {
        uint16_t h = rlx_f32_to_f16(rounding[i].f);
        T_CHECK(h == rounding[i].h, "f32 %a -> f16 0x%04x, expected 0x%04x", rounding[i].f, h, rounding[i].h);
    }
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) { /* every f16 survives f16 -> f32 -> f16 */
        float f = rlx_f16_to_f32((uint16_t)h);
        uint16_t back = rlx_f32_to_f16(f);
        bool ok = isnan(f) ? (back & 0x7c00) == 0x7c00 && (back & 0x3ff) : back == h;
        bad += !ok;
    }
    T_CHECK(bad == 0, "%d of 65536 f16 values do not round-trip through f32", bad);

    static const struct {
        uint16_t b;
        float f;
    } bf16[] = {{0x3f80, 1.0f}, {0xc000, -2.0f}, {0x7f80, INFINITY}, {0xff80, -INFINITY}, {0x0001, 0x1p-133f},
                {0x8000, -0.0f}, {0x7f7f, 0x1.fep127f}};
    for (size_t i = 0; i < sizeof bf16 / sizeof bf16[0]; i++) {
        float f = rlx_bf16_to_f32(bf16[i].b);
        T_CHECK(same_float(f, bf16[i].f), "bf16 0x%04x -> %.9g, expected %.9g", bf16[i].b, f, bf16[i].f);
        T_CHECK(rlx_f32_to_bf16(bf16[i].f) == bf16[i].b, "f32 %.9g -> bf16 0x%04x", bf16[i].f, rlx_f32_to_bf16(bf16[i].f));
    }
    T_CHECK(isnan(rlx_bf16_to_f32(0x7fc0)), "bf16 0x7fc0 is NaN");
    T_CHECK(rlx_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "bf16 tie -> even (down)");
    T_CHECK(rlx_f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82, "bf16 tie -> even (up)");
    T_CHECK(rlx_f32_to_bf16(FLT_MAX) == 0x7f80, "bf16 FLT_MAX rounds to inf");
    uint16_t nb = rlx_f32_to_bf16(rlx_f32_from_bits(0x7f800001u)); /* signalling NaN, payload in low bits */
    T_CHECK((nb & 0x7f80) == 0x7f80 && (nb & 0x7f), "f32 sNaN -> bf16 0x%04x is not a NaN", nb);
    bad = 0;
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = rlx_bf16_to_f32((uint16_t)b);
        uint16_t back = rlx_f32_to_bf16(f);
        bad += isnan(f) ? !((back & 0x7f80) == 0x7f80 && (back & 0x7f)) : back != b;
    }
    T_CHECK(bad == 0, "%d of 65536 bf16 values do not round-trip through f32", bad);
    printf("f16/bf16: edge values and all 65536 round trips checked\n");
}

int main(void) {
    test_half_edges();
    test_plain();
    test_q4_q5_q8_0();
    test_q4_k_q5_k();
    test_q6_k_q8_k();
    test_q2_k_q3_k();
    test_fixtures();
    return t_summary("test_dequant");
}
