/* The model test switch: the device's copy of the file with one weight row changed, so that the
 * model section must fail and name the first divergent step (docs/VALIDATION.md, "Testing the
 * harness"). Only tests reach it: the CLI refuses the switch unless RLX_VALIDATE_TEST=1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/core/dtype.h"
#include "loader/core/half.h"
#include "loader/format/gguf.h"
#include "loader/format/model.h"
#include "validate/validate_internal.h"

/* Adds 1 to each of the n elements of a row of a plain type, in place. */
static void bump_row(uint8_t *row, uint32_t type, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        if (type == RLX_DTYPE_F32) {
            float v;
            memcpy(&v, row + 4 * i, 4);
            v += 1.0f;
            memcpy(row + 4 * i, &v, 4);
        } else {
            uint16_t h;
            memcpy(&h, row + 2 * i, 2);
            h = type == RLX_DTYPE_F16 ? rlx_f32_to_f16(rlx_f16_to_f32(h) + 1.0f)
                                      : rlx_f32_to_bf16(rlx_bf16_to_f32(h) + 1.0f);
            memcpy(row + 2 * i, &h, 2);
        }
    }
}

static rlx_status write_copy(const char *path, const uint8_t *base, uint64_t size, uint64_t off, const uint8_t *row,
                             uint64_t row_bytes) {
    FILE *f = fopen(path, "wb");
    if (!f) return rlx_errorf(RLX_ERR_IO, "validate: cannot create '%s': %s", path, strerror(errno));
    bool ok = fwrite(base, 1, off, f) == off && fwrite(row, 1, row_bytes, f) == row_bytes &&
              fwrite(base + off + row_bytes, 1, size - off - row_bytes, f) == size - off - row_bytes;
    ok = fclose(f) == 0 && ok;
    return ok ? NULL : rlx_errorf(RLX_ERR_IO, "validate: writing '%s' failed", path);
}

rlx_status vl_perturbed_copy(const char *src, const char *name, char **out) {
    rlx_model *m = NULL;
    RLX_TRY(rlx_model_open(src, &m));
    rlx_status s = NULL;
    const rlx_weight *w = rlx_model_weight(m, name);
    if (m->source != RLX_MODEL_GGUF)
        s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--test-perturb-weight: '%s' is not a GGUF file", src);
    else if (!w)
        s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--test-perturb-weight: '%s' has no weight '%s'", src, name);
    else if (w->type != RLX_DTYPE_F32 && w->type != RLX_DTYPE_F16 && w->type != RLX_DTYPE_BF16)
        s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--test-perturb-weight: weight '%s' is %s; the switch changes rows of "
                       "F32, F16 or BF16 weights", name, rlx_dtype_name(w->type));
    char dir[] = "/tmp/rlx-validate-XXXXXX";
    if (!s && !mkdtemp(dir)) s = rlx_errorf(RLX_ERR_IO, "validate: cannot create a directory under /tmp: %s", strerror(errno));
    char *path = NULL;
    if (!s) {
        size_t len = strlen(dir) + 16;
        path = malloc(len);
        if (!path) s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: a path");
        else snprintf(path, len, "%s/model.gguf", dir);
    }
    if (!s) {
        uint64_t row_bytes = w->ne[0] * (w->type == RLX_DTYPE_F32 ? 4 : 2);
        uint64_t off = (uint64_t)((const uint8_t *)w->data - m->gguf->base);
        uint8_t *row = malloc(row_bytes);
        if (!row) {
            s = rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "validate: a row of %llu bytes", (unsigned long long)row_bytes);
        } else {
            memcpy(row, w->data, row_bytes);
            bump_row(row, w->type, w->ne[0]);
            s = write_copy(path, m->gguf->base, m->gguf->size, off, row, row_bytes);
            free(row);
        }
        if (s) {
            vl_perturbed_copy_remove(path);
            path = NULL;
        }
    } else if (path || dir[sizeof dir - 2] != 'X') {
        rmdir(dir);
        free(path);
        path = NULL;
    }
    rlx_model_close(m);
    if (!s) *out = path;
    return s;
}

void vl_perturbed_copy_remove(char *path) {
    if (!path) return;
    unlink(path);
    char *slash = strrchr(path, '/');
    if (slash) {
        *slash = 0;
        rmdir(path);
    }
    free(path);
}
