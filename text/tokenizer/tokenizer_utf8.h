/* UTF-8 helpers of the text layer (tokenizers and the template lexer): strict decoding (RFC 3629:
 * no overlongs, no surrogates, nothing past U+10FFFF), encoding, the replace-invalid-bytes policy,
 * and detection of a sequence cut off at the end of a buffer (for streaming). */
#ifndef RLX_TEXT_TOKENIZER_UTF8_H
#define RLX_TEXT_TOKENIZER_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

/* Length (1..4) of the well-formed sequence at s[0, n) and its code point in *cp, or 0 when s does
 * not start with one (n == 0, invalid or truncated). */
size_t rlx_utf8_next(const char *s, size_t n, uint32_t *cp);
/* Writes cp as UTF-8 and returns its length; a surrogate (U+D800..U+DFFF) or a value past U+10FFFF
 * is written as U+FFFD, since UTF-8 has no form for it (RFC 3629, section 3). */
size_t rlx_utf8_put(uint32_t cp, char out[4]);
/* Length of the sequence a lead byte announces (1 for ASCII and for bytes that cannot lead). */
size_t rlx_utf8_lead_len(uint8_t b);
/* Copies s[0, n) into *out (owned, NUL-terminated, *out_len bytes) replacing every byte that does
 * not start a well-formed sequence with U+FFFD. */
rlx_status rlx_utf8_sanitize(const char *s, size_t n, char **out, size_t *out_len);
/* How many bytes at the end of s[0, n) are the start of a sequence that could still be completed
 * by more bytes (0..3). */
size_t rlx_utf8_incomplete_tail(const char *s, size_t n);

#endif
