/* UTF-8 per RFC 3629, Table 3-7 of the Unicode standard (well-formed byte sequences). */
#include "text/tokenizer/tokenizer_utf8.h"

#include <stdlib.h>
#include <string.h>

size_t rlx_utf8_lead_len(uint8_t b) {
    if (b >= 0xF0 && b <= 0xF4) return 4;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    return 1;
}

/* The range allowed for the second byte after lead b (Unicode Table 3-7); the other continuation
 * bytes are always 0x80..0xBF. */
static void second_byte_range(uint8_t b, uint8_t *lo, uint8_t *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (b == 0xE0) *lo = 0xA0;      /* no overlong 3-byte forms */
    else if (b == 0xED) *hi = 0x9F; /* no surrogates */
    else if (b == 0xF0) *lo = 0x90; /* no overlong 4-byte forms */
    else if (b == 0xF4) *hi = 0x8F; /* nothing past U+10FFFF */
}

size_t rlx_utf8_next(const char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    const uint8_t *u = (const uint8_t *)s;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t len = rlx_utf8_lead_len(u[0]);
    if (len == 1 || n < len) return 0;
    uint8_t lo, hi;
    second_byte_range(u[0], &lo, &hi);
    if (u[1] < lo || u[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((u[i] & 0xC0) != 0x80) return 0;
    uint32_t c = u[0] & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < len; i++) c = (c << 6) | (u[i] & 0x3F);
    *cp = c;
    return len;
}

size_t rlx_utf8_put(uint32_t cp, char out[4]) {
    /* a surrogate or a value past U+10FFFF has no well-formed UTF-8 form: it becomes U+FFFD */
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

rlx_status rlx_utf8_sanitize(const char *s, size_t n, char **out, size_t *out_len) {
    /* Each replaced byte grows to 3: bound the result by 3n. */
    size_t cap;
    if (__builtin_mul_overflow(n, (size_t)3, &cap) || cap == SIZE_MAX)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "text of %zu bytes is too long to tokenize", n);
    char *buf = malloc(cap + 1);
    if (!buf) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "text of %zu bytes: out of memory", n);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = rlx_utf8_next(s + i, n - i, &cp);
        if (len) {
            memcpy(buf + o, s + i, len);
            o += len;
            i += len;
        } else {
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    buf[o] = '\0';
    *out = buf;
    *out_len = o;
    return NULL;
}

size_t rlx_utf8_incomplete_tail(const char *s, size_t n) {
    const uint8_t *u = (const uint8_t *)s;
    /* A cut-off sequence is a lead byte followed by fewer continuation bytes than it announces. */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        uint8_t b = u[n - back];
        if ((b & 0xC0) == 0x80) continue;
        size_t need = rlx_utf8_lead_len(b);
        if (need <= back) return 0;
        /* It must still be a valid prefix: check the second byte's range when present. */
        if (back >= 2) {
            uint8_t lo, hi;
            second_byte_range(b, &lo, &hi);
            if (u[n - back + 1] < lo || u[n - back + 1] > hi) return 0;
        }
        return back;
    }
    return 0;
}
