#include "server/text_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rlx_status rlx_srv_buf_append(rlx_srv_buf *b, const char *bytes, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "a text of %zu bytes", b->len + n);
        b->data = p;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
    return NULL;
}

rlx_status rlx_srv_buf_printf(rlx_srv_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return rlx_errorf(RLX_ERR_INTERNAL, "printf: bad format '%s'", fmt);
    if ((size_t)n < sizeof small) return rlx_srv_buf_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "a text of %d bytes", n);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rlx_status s = rlx_srv_buf_append(b, big, (size_t)n);
    free(big);
    return s;
}

void rlx_srv_buf_free(rlx_srv_buf *b) {
    free(b->data);
    *b = (rlx_srv_buf){0};
}

/* ---- UTF-8 (RFC 3629, section 4: the well-formed byte sequences) ---- */

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The length a sequence starting with lead has, or 0 when lead cannot start one. */
static int seq_len(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

/* Whether byte c may follow s[0, i) (i >= 1) in a sequence led by s[0]: the second byte's range
 * depends on the lead (no overlongs, surrogates or > U+10FFFF), the rest are 80..BF. */
static bool continues(const unsigned char *s, int i, unsigned char c) {
    if (i == 1) {
        switch (s[0]) {
        case 0xE0: return c >= 0xA0 && c <= 0xBF;
        case 0xED: return c >= 0x80 && c <= 0x9F;
        case 0xF0: return c >= 0x90 && c <= 0xBF;
        case 0xF4: return c >= 0x80 && c <= 0x8F;
        }
    }
    return c >= 0x80 && c <= 0xBF;
}

rlx_status rlx_srv_utf8_push(rlx_srv_utf8 *u, const char *bytes, size_t n, rlx_srv_buf *out) {
    const unsigned char *b = (const unsigned char *)bytes;
    size_t run = 0; /* ASCII and complete sequences are copied in runs */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = b[i];
        if (u->n_held) {
            if (continues(u->held, u->n_held, c)) {
                u->held[u->n_held++] = c;
                if (u->n_held == seq_len(u->held[0])) {
                    RLX_TRY(rlx_srv_buf_append(out, (const char *)u->held, (size_t)u->n_held));
                    u->n_held = 0;
                }
                continue;
            }
            /* a broken sequence (a maximal subpart) is one U+FFFD, and c starts afresh */
            RLX_TRY(rlx_srv_buf_append(out, REPLACEMENT, 3));
            u->n_held = 0;
        }
        int len = seq_len(c);
        if (len == 1) {
            run = 1;
            while (i + run < n && b[i + run] < 0x80) run++;
            RLX_TRY(rlx_srv_buf_append(out, (const char *)b + i, run));
            i += run - 1;
        } else if (len == 0) {
            RLX_TRY(rlx_srv_buf_append(out, REPLACEMENT, 3));
        } else {
            u->held[0] = c;
            u->n_held = 1;
        }
    }
    return NULL;
}

rlx_status rlx_srv_utf8_finish(rlx_srv_utf8 *u, rlx_srv_buf *out) {
    if (u->n_held) RLX_TRY(rlx_srv_buf_append(out, REPLACEMENT, 3));
    u->n_held = 0;
    return NULL;
}

bool rlx_srv_utf8_valid(const char *s, size_t n) {
    const unsigned char *b = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int len = seq_len(b[i]);
        if (len == 0 || (size_t)len > n - i) return false;
        for (int k = 1; k < len; k++)
            if (!continues(b + i, k, b[i + k])) return false;
        i += (size_t)len;
    }
    return true;
}

/* ---- stop strings ---- */

/* Whether p[0, n) is the start of some stop string (and not all of one). */
static bool starts_a_stop(const rlx_srv_stop *s, const char *p, size_t n) {
    for (int k = 0; k < s->n_stops; k++) {
        size_t len = strlen(s->stops[k]);
        if (n < len && !memcmp(s->stops[k], p, n)) return true;
    }
    return false;
}

/* The earliest position in p[0, n) where a whole stop string starts, or n. */
static size_t first_match(const rlx_srv_stop *s, const char *p, size_t n) {
    size_t first = n;
    for (int k = 0; k < s->n_stops; k++) {
        size_t sl = strlen(s->stops[k]);
        for (size_t at = 0; at + sl <= n && at < first; at++)
            if (!memcmp(p + at, s->stops[k], sl)) {
                first = at;
                break;
            }
    }
    return first;
}

/* The earliest position from which p[at, n) may still grow into a stop string, or n. */
static size_t first_partial(const rlx_srv_stop *s, const char *p, size_t n) {
    for (size_t at = 0; at < n; at++)
        if (starts_a_stop(s, p + at, n - at)) return at;
    return n;
}

/* Ends the text before p[first] (a stop string starts there). */
static rlx_status cut(rlx_srv_stop *s, size_t first, rlx_srv_buf *out) {
    s->matched = true;
    RLX_TRY(rlx_srv_buf_append(out, s->pending.data, first));
    s->pending.len = 0;
    return NULL;
}

/* The text ends at the stop string that starts first (as strstr would find it in the whole text):
 * a match is final only once no stop string that would start before it can still complete. */
rlx_status rlx_srv_stop_push(rlx_srv_stop *s, const char *bytes, size_t n, rlx_srv_buf *out) {
    if (s->matched) return NULL;
    if (s->n_stops == 0) return rlx_srv_buf_append(out, bytes, n);
    RLX_TRY(rlx_srv_buf_append(&s->pending, bytes, n));
    const char *p = s->pending.data;
    size_t len = s->pending.len;
    size_t first = first_match(s, p, len), partial = first_partial(s, p, len);
    if (first < len && first <= partial) return cut(s, first, out);
    /* emit what no stop string can start in; hold back the rest */
    size_t keep_from = partial < first ? partial : first;
    RLX_TRY(rlx_srv_buf_append(out, p, keep_from));
    memmove(s->pending.data, p + keep_from, len - keep_from);
    s->pending.len = len - keep_from;
    s->pending.data[s->pending.len] = '\0';
    return NULL;
}

rlx_status rlx_srv_stop_finish(rlx_srv_stop *s, rlx_srv_buf *out) {
    if (s->matched || !s->pending.len) return NULL;
    /* nothing more comes: a match held back behind an earlier partial one is final now */
    size_t first = first_match(s, s->pending.data, s->pending.len);
    if (first < s->pending.len) return cut(s, first, out);
    RLX_TRY(rlx_srv_buf_append(out, s->pending.data, s->pending.len));
    s->pending.len = 0;
    return NULL;
}

void rlx_srv_stop_free(rlx_srv_stop *s) { rlx_srv_buf_free(&s->pending); }
