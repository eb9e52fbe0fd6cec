/* Test-only safetensors byte builder: an 8-byte little-endian header length, the JSON header as
 * given, then data bytes (the layout of the safetensors README, "Format"). Header-only; the
 * helpers exit(1) on host failures, which are not what the tests test. */
#ifndef RLX_TEST_SAFETENSORS_BUILDER_H
#define RLX_TEST_SAFETENSORS_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h" /* t_write_file */

typedef struct st_image {
    uint8_t *bytes; /* owned */
    size_t size;
} st_image;

/* header JSON + n_data data bytes, byte i of the data = (uint8_t)(i * 7 + 1). `hlen_override`, when
 * not UINT64_MAX, is written as the header length instead of the real one. */
static inline st_image st_build(const char *header, size_t n_data, uint64_t hlen_override) {
    size_t hlen = strlen(header);
    st_image im = {malloc(8 + hlen + n_data + 1), 8 + hlen + n_data};
    if (!im.bytes) {
        fprintf(stderr, "FAIL: out of memory building a safetensors image\n");
        exit(1);
    }
    uint64_t v = hlen_override == UINT64_MAX ? hlen : hlen_override;
    for (int i = 0; i < 8; i++) im.bytes[i] = (uint8_t)(v >> (8 * i));
    memcpy(im.bytes + 8, header, hlen);
    for (size_t i = 0; i < n_data; i++) im.bytes[8 + hlen + i] = (uint8_t)(i * 7 + 1);
    return im;
}

static inline void st_write_image(const char *path, const char *header, size_t n_data) {
    st_image im = st_build(header, n_data, UINT64_MAX);
    t_write_file(path, im.bytes, im.size);
    free(im.bytes);
}

#endif
