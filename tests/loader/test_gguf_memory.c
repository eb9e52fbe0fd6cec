/* Opening a GGUF costs memory in proportion to its size, not to its entry count: a metadata
 * array of millions of empty strings (8 bytes each in the file) once took 56 bytes an element
 * (a 40-byte value and a 16-byte arena string), 7 times the file. The property: the peak resident
 * set (getrusage ru_maxrss) grows by at most 2.5 times the file's size plus 8 MiB, a bound that
 * covers the file's own mapped pages (1x), an 8-byte offset per string (1x) and the copies of the
 * strings, and that the old layout breaks threefold. The strings are then read back, through both
 * accessors, against the values written.
 * Metadata keys cost about 100 bytes each in memory, so their count is capped at 65536 (real models
 * hold about a hundred): that many open, one more is refused before anything is allocated. Tensor
 * infos, about 200 bytes each, are capped at 262144 the same way. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gguf_builder.h"
#include "loader/format/gguf.h"
#include "test_util.h"

#define N_STRINGS ((uint64_t)4 << 20)
#define MARK_EVERY 1000003u /* strings i % MARK_EVERY == 0 are "s<i>"; the rest are empty */

static long peak_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Writes the header with gguf_builder, then the strings straight to the file, so that building
 * the file raises the peak by no more than a stdio buffer. Returns the file's size. */
static uint64_t write_file(const char *path) {
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, 0, 2);
    gb_kv_str(&b, "general.architecture", "llama");
    gb_kv(&b, "test.strings", RLX_GGUF_ARRAY);
    gb_arr(&b, RLX_GGUF_STRING, N_STRINGS);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b.buf, 1, b.len, f) != b.len) exit(1);
    uint64_t size = b.len;
    gb_free(&b);
    for (uint64_t i = 0; i < N_STRINGS; i++) {
        char text[32];
        uint64_t len = i % MARK_EVERY ? 0 : (uint64_t)snprintf(text, sizeof text, "s%" PRIu64, i);
        if (fwrite(&len, 8, 1, f) != 1 || (len && fwrite(text, 1, len, f) != len)) exit(1);
        size += 8 + len;
    }
    if (fclose(f) != 0) exit(1);
    return size;
}

static void check_strings(const rlx_gguf *g) {
    const rlx_gguf_value *arr = NULL;
    rlx_status err = NULL;
    bool found = rlx_gguf_get_arr(g, "test.strings", RLX_GGUF_STRING, &arr, &err);
    T_CHECK(found, "test.strings is an array of strings");
    if (!found) {
        T_OK(err);
        return;
    }
    uint64_t wrong = 0;
    for (uint64_t i = 1; i < arr->arr.n; i += 4099) {
        if (i % MARK_EVERY == 0) continue;
        rlx_gguf_str s = rlx_gguf_arr_str(arr, i);
        wrong += s.len != 0 || s.s[0] != '\0';
    }
    for (uint64_t i = 0; i < N_STRINGS; i += MARK_EVERY) {
        char want[32];
        snprintf(want, sizeof want, "s%" PRIu64, i);
        rlx_gguf_value v;
        bool got = rlx_gguf_arr_get(arr, i, &v);
        wrong += !got || v.type != RLX_GGUF_STRING || v.str.len != strlen(want) || strcmp(v.str.s, want);
        wrong += strcmp(rlx_gguf_arr_str(arr, i).s, want) != 0;
    }
    rlx_gguf_value v;
    T_CHECK(arr->arr.n == N_STRINGS && !rlx_gguf_arr_get(arr, N_STRINGS, &v) &&
                rlx_gguf_arr_str(arr, N_STRINGS).len == 0,
            "%" PRIu64 " strings, out-of-range access refused", arr->arr.n);
    T_CHECK(wrong == 0, "%" PRIu64 " strings read back wrong", wrong);
}

/* A GGUF of n_kv distinct u8 keys ("k0000", ...); the header may claim `claim` keys instead. */
static rlx_status open_keys(uint64_t n_kv, uint64_t claim, uint64_t *got) {
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, 0, claim);
    for (uint64_t i = 0; i < n_kv; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%05" PRIx64, i);
        gb_kv(&b, key, RLX_GGUF_UINT8);
        gb_u8(&b, (uint8_t)i);
    }
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open_memory(b.buf, b.len, &g);
    *got = g ? g->n_kv : 0;
    rlx_gguf_close(g);
    gb_free(&b);
    return s;
}

static void key_count_cases(void) {
    uint64_t got = 0;
    if (T_OK(open_keys(65536, 65536, &got))) T_CHECK(got == 65536, "65536 keys open: %" PRIu64, got);
    T_ERR(open_keys(65536, 65537, &got), RLX_ERR_BAD_FILE, "kv count 65537 is more than the 65536 metadata keys");
    /* 262145 tensor infos of the smallest kind (32 bytes each: a 4-char name, one dim of 0, F32,
     * offset 0) make a file big enough that only the cap can refuse it */
    gguf_builder b;
    gb_init(&b);
    gb_header(&b, 3, 262145, 0);
    for (uint64_t i = 0; i < 262145; i++) {
        char name[16];
        snprintf(name, sizeof name, "%05" PRIx64, i);
        gb_tensor(&b, name, 1, (const uint64_t[]){0}, 0, 0);
    }
    gb_pad(&b, 32);
    rlx_gguf *g = NULL;
    T_ERR(rlx_gguf_open_memory(b.buf, b.len, &g), RLX_ERR_BAD_FILE,
          "tensor count 262145 is more than the 262144 tensors");
    gb_free(&b);
    printf("  65536 metadata keys open; 65537 keys or 262145 tensors are refused\n");
}

int main(void) {
    key_count_cases();
    t_tmp_dir("rlx-gguf-mem");
    const char *path = t_tmp_path("strings.gguf");
    uint64_t size = write_file(path);
    long before = peak_kib();
    rlx_gguf *g = NULL;
    if (T_OK(rlx_gguf_open(path, &g))) {
        long after = peak_kib();
        double grew = (double)(after - before) * 1024.0, bound = 2.5 * (double)size + 8.0 * 1048576.0;
        printf("  %" PRIu64 " strings, file %.1f MiB: peak RSS grew %.1f MiB (bound %.1f MiB, %.2fx the file)\n",
               N_STRINGS, (double)size / 1048576.0, grew / 1048576.0, bound / 1048576.0, grew / (double)size);
        T_CHECK(grew <= bound, "opening grew the peak RSS by %.0f bytes, more than %.0f", grew, bound);
        check_strings(g);
    }
    rlx_gguf_close(g);
    unlink(path);
    t_tmp_dir_remove();
    return t_summary("test_gguf_memory");
}
