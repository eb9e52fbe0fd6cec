/* The text of one completion as it is generated: decoded bytes -> stop strings -> valid UTF-8.
 *
 * Stop strings are matched in the decoded bytes across token boundaries: text that might be the
 * start of a stop string is held back until it is known not to be, and a stop string, once seen,
 * ends the text before it (neither it nor anything after it is emitted). The result is then made
 * valid UTF-8, as JSON requires: a character split across tokens is held back until it is
 * complete, and each maximal ill-formed subpart becomes one U+FFFD (Unicode's recommended
 * practice, chapter 3.9, which the WHATWG decoder of browsers and Node follows, so a client that
 * decodes the raw bytes itself reads the same text). What comes out is therefore cut only at character
 * boundaries, and the concatenation of every piece equals the text the same bytes give in one
 * piece: streamed deltas add up to exactly the non-streamed content. */
#ifndef RLX_SERVER_TEXT_OUT_H
#define RLX_SERVER_TEXT_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "rlx/status.h"

/* A growing byte string, NUL-terminated after len bytes (data NULL while empty). */
typedef struct rlx_srv_buf {
    char *data; /* owned */
    size_t len, cap;
} rlx_srv_buf;

rlx_status rlx_srv_buf_append(rlx_srv_buf *b, const char *bytes, size_t n);
rlx_status rlx_srv_buf_printf(rlx_srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rlx_srv_buf_free(rlx_srv_buf *b);

/* ---- UTF-8 ---- */

typedef struct rlx_srv_utf8 {
    unsigned char held[4]; /* the start of a sequence not complete yet */
    int n_held;
} rlx_srv_utf8;

/* Appends to out the valid UTF-8 of held + bytes, keeping back an incomplete sequence at the end. */
rlx_status rlx_srv_utf8_push(rlx_srv_utf8 *u, const char *bytes, size_t n, rlx_srv_buf *out);
/* The end of the text: an incomplete sequence held back becomes one U+FFFD. */
rlx_status rlx_srv_utf8_finish(rlx_srv_utf8 *u, rlx_srv_buf *out);
/* Whether s[0, n) is well-formed UTF-8 (no overlong forms, surrogates, or code points past U+10FFFF). */
bool rlx_srv_utf8_valid(const char *s, size_t n);

/* ---- stop strings ---- */

typedef struct rlx_srv_stop {
    char *const *stops; /* borrowed: n_stops NUL-terminated, non-empty strings */
    int n_stops;
    rlx_srv_buf pending; /* owned: bytes not emitted yet (a possible start of a stop string) */
    bool matched;        /* a stop string was found: the text has ended */
} rlx_srv_stop;

/* Adds bytes; appends to out what is known not to be part of a stop string. Once matched, it
 * appends nothing more. */
rlx_status rlx_srv_stop_push(rlx_srv_stop *s, const char *bytes, size_t n, rlx_srv_buf *out);
/* The end of the text without a match: the held bytes are text after all. */
rlx_status rlx_srv_stop_finish(rlx_srv_stop *s, rlx_srv_buf *out);
void rlx_srv_stop_free(rlx_srv_stop *s);

#endif
